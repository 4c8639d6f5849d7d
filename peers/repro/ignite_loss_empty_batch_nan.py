"""PyTorch-Ignite 0.5.3: Loss(torch.nn.CrossEntropyLoss()) fed an empty batch (a rank whose shard
ran out while the others still step, a filtered batch) becomes NaN for good, on that rank and,
after the sync, on every rank.

Mechanism: ignite/metrics/loss.py:99 computes the batch's mean loss, NaN for no rows (0/0), and
line 105 adds `average_loss * n` with n = 0: NaN * 0 = NaN enters `_sum`; compute() all_reduces
`_sum` (line 108), so the NaN reaches every rank. Not reported upstream (searched the Ignite
tracker for an empty batch making Loss NaN).

    /usr/bin/python3 peers/repro/ignite_loss_empty_batch_nan.py     # exit 0: the bug shows

Shown on: Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from ignite.metrics import Loss

    metric = Loss(torch.nn.CrossEntropyLoss())
    g = torch.Generator().manual_seed(rank)
    metric.update((torch.randn(4, 3, generator=g), torch.tensor([0, 1, 2, 1])))
    if rank == 1:
        metric.update((torch.randn(0, 3), torch.zeros(0, dtype=torch.long)))  # an empty batch
    return metric.compute()


if __name__ == "__main__":
    common.requires(ignite=">=0.5.3")  # shown on Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["ignite.metrics"])
    print(results)
    common.verdict(all(kind == "ok" and value != value for kind, value in results.values()),
                   "Loss after one empty batch on rank 1 (every sample finite): " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
