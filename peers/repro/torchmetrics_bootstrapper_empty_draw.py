"""torchmetrics 1.9.0: BootStrapper resamples each update's rows for each of its copies of the base
metric (poisson by default) and skips a copy whose draw took no row. That copy gets no update(),
so its compute() returns its cached value without syncing, while the same copy on another rank
(whose draw took rows) enters the sync: a hang. A draw of no row is frequent for small batches
(probability e^-n for n rows: 37% for one row), and a batch of no rows skips every copy.

Mechanism: torchmetrics/wrappers/bootstrapping.py:140-143 (1.9.0), `if sample_idx.numel() == 0:
continue` before `self.metrics[idx].update(...)`; the compute cache, metric.py:688-689 (`if
self._computed is not None: return self._computed` before the sync), cleared only by update() or
reset(). Which copies sync on a rank depends on its own random draws.

    VENV/bin/python peers/repro/torchmetrics_bootstrapper_empty_draw.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.regression import MeanSquaredError
    from torchmetrics.wrappers import BootStrapper

    torch.manual_seed(0)
    metric = BootStrapper(MeanSquaredError(), num_bootstraps=10)
    rows = 64 if rank == 0 else 1                        # rank 0: every copy draws rows; rank 1: some draw none
    metric.update(torch.ones(64), torch.zeros(64))       # step 1: both ranks, 64 rows
    first = float(metric.compute()["mean"])
    metric.update(torch.ones(rows), torch.zeros(rows) + 3)  # step 2: rank 1's copies draw from one row
    cached = [i for i, m in enumerate(metric.metrics) if m._computed is not None]
    return first, cached, float(metric.compute()["mean"])  # rank 1's skipped copies: cached, no sync


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0")  # shown on torchmetrics 1.9.0 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    common.verdict(results[0][0] != "ok" or results[1][0] != "ok",
                   "BootStrapper.compute() after an update whose draw skipped a copy on rank 1: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
