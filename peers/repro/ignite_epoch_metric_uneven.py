"""PyTorch-Ignite 0.5.3: EpochMetric (ROC_AUC, AveragePrecision, CohenKappa...) with a different
number of samples on each rank (uneven shards): compute() all_gathers tensors of different
lengths, which torch.distributed cannot: a crash (Gloo aborts) or a hang.

Mechanism: ignite/metrics/epoch_metric.py:157-158, `idist.all_gather(_prediction_tensor)` on each
rank's own concatenated predictions; all_gather needs one shape on every rank, and nothing pads
to the longest first. PyTorch-Ignite #1569 (open, "How to all_gather Tensor if not the same
length"); MONAI #1531 met it through Ignite.

    /usr/bin/python3 peers/repro/ignite_epoch_metric_uneven.py     # exit 0: the bug shows

Shown on: Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from ignite.metrics import ROC_AUC

    metric = ROC_AUC()
    n = 4 if rank == 0 else 6  # uneven shards: 4 and 6 samples
    g = torch.Generator().manual_seed(rank)
    metric.update((torch.rand(n, generator=g), torch.tensor([0, 1] * (n // 2))))
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(ignite=">=0.5.3")  # shown on Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["ignite.metrics"])
    print(results)
    common.verdict(any(kind != "ok" for kind, _ in results.values()),
                   "ROC_AUC.compute() with 4 samples on rank 0 and 6 on rank 1: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
