"""torchmetrics 1.5.2: compute() after each step, with ranks whose data ends at different steps
(uneven shards): a rank that got no update since its last compute() returns its cached value
without syncing, while a rank that did update enters the sync: a hang.

Mechanism: torchmetrics/metric.py:620-622, `if self._computed is not None: return
self._computed` comes before the sync (metric.py:627, sync_context), and `_computed` is cleared
only by update() or reset() (metric.py:479, 696) on that rank. So whether a rank syncs depends on
its local updates; gather_all_tensors starts with a barrier (utilities/distributed.py:118) that
the caching rank never enters.

    /usr/bin/python3 peers/repro/torchmetrics_compute_cache_uneven.py     # exit 0: the bug shows

Shown on: torchmetrics 1.5.2 (torch 1.13) and 1.9.0 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.regression import MeanSquaredError

    metric = MeanSquaredError()
    metric.update(torch.ones(4), torch.zeros(4))          # step 1: both ranks have a batch
    first = float(metric.compute())
    if rank == 0:
        metric.update(torch.ones(4), torch.zeros(4) + 3)  # step 2: only rank 0 has one left
    return first, float(metric.compute())                 # rank 1: cached, no sync; rank 0: syncs


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.5.2")  # shown on torchmetrics 1.5.2 (torch 1.13) and 1.9.0 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    common.verdict(results[0][0] != "ok",
                   "MeanSquaredError.compute() after a step only rank 0 had data for: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
