"""torchmetrics 1.9.0: RootMeanSquaredErrorUsingSlidingWindow keeps `rmse_map` (the per-pixel map
compute() returns beside the value) in a plain attribute, not a state: it is never synced nor
saved. compute() asserts it is set, so a rank that got no data syncs with its peers, then raises
AssertionError alone (its peers go on to their next collective: a hang in a training loop), and an
instance loaded from a state_dict() raises the same way until it is updated again.

Mechanism: torchmetrics/image/rmse_sw.py:84-86 (`self.rmse_map` set by the first update()), :94
(`assert self.rmse_map is not None` in compute()). Not reported upstream (searched).

    VENV/bin/python peers/repro/torchmetrics_rmse_sw_map.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.image import RootMeanSquaredErrorUsingSlidingWindow

    g = torch.Generator().manual_seed(0)
    preds, target = torch.rand(2, 3, 16, 16, generator=g), torch.rand(2, 3, 16, 16, generator=g)
    # A checkpoint restored into a fresh instance (no sync: this rank alone).
    saved = RootMeanSquaredErrorUsingSlidingWindow(sync_on_compute=False)
    saved.persistent(True)
    saved.update(preds, target)
    loaded = RootMeanSquaredErrorUsingSlidingWindow(sync_on_compute=False)
    loaded.persistent(True)
    loaded.load_state_dict(saved.state_dict())
    try:
        restored = f"ok {float(loaded.compute()):.6f}"
    except AssertionError as e:
        restored = f"raised AssertionError {e}"
    # The synced metric, rank 1 without data.
    metric = RootMeanSquaredErrorUsingSlidingWindow()
    if rank == 0:
        metric.update(preds, target)
    try:
        synced = f"ok {float(metric.compute()):.6f}"
    except AssertionError as e:
        synced = f"raised AssertionError {e}"
    return {"restored": restored, "synced": synced}


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0")  # shown on torchmetrics 1.9.0 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    ok = all(kind == "ok" for kind, _ in results.values())
    common.verdict(ok and results[0][1]["synced"].startswith("ok") and results[1][1]["synced"].startswith("raised")
                   and all(v["restored"].startswith("raised") for _, v in results.values()),
                   "RootMeanSquaredErrorUsingSlidingWindow: compute() on a rank with no data, and on an instance "
                   "loaded from state_dict(): " +
                   "; ".join(f"rank {r}: {value}" for r, (kind, value) in results.items()))
