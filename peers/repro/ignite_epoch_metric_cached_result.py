"""PyTorch-Ignite 0.5.3: EpochMetric (ROC_AUC, AveragePrecision...) computed after each step, with
a rank that got no new batch since its last compute(): that rank returns its cached result and
skips the all_gather its peers enter: a hang.

Mechanism: ignite/metrics/epoch_metric.py:150, `if self._result is None:` guards the gathers of
lines 157-158 and the broadcast of line 167; `_result` is cleared by this rank's own update() or
reset() only, so whether a rank syncs depends on its local updates. Not reported upstream (the
same pattern as torchmetrics' compute cache, peers/repro/torchmetrics_compute_cache_uneven.py).

    /usr/bin/python3 peers/repro/ignite_epoch_metric_cached_result.py     # exit 0: the bug shows

Shown on: Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from ignite.metrics import ROC_AUC

    metric = ROC_AUC()
    metric.update((torch.tensor([0.2, 0.9]), torch.tensor([0, 1])))  # step 1: both ranks
    first = metric.compute()
    if rank == 0:
        metric.update((torch.tensor([0.4, 0.6]), torch.tensor([1, 0])))  # step 2: rank 0 only
    return first, metric.compute()  # rank 1: cached, no gather; rank 0: gathers


if __name__ == "__main__":
    common.requires(ignite=">=0.5.3")  # shown on Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["ignite.metrics"])
    print(results)
    common.verdict(results[0][0] != "ok",
                   "ROC_AUC.compute() after a step only rank 0 had data for: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
