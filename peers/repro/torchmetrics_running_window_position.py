"""torchmetrics 1.9.0: Running (a window over the last `window` updates) keeps its position in the
window, `_num_vals_seen`, in a plain attribute, not a state: a metric restored from a checkpoint
(state_dict() with persistent(True), then load_state_dict()) starts again at slot 0, so its next
update overwrites another slot than the original's would and the synced value differs from the
uninterrupted run's.

Mechanism: torchmetrics/wrappers/running.py:99 (`self._num_vals_seen = 0` in __init__), :109
(`val = self._num_vals_seen % self.window` picks the slot update() writes), :114; the window's
slots are states (`<name>_<i>`, :103-106) and are saved, the position is not.

    VENV/bin/python peers/repro/torchmetrics_running_window_position.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.aggregation import SumMetric
    from torchmetrics.wrappers import Running

    original = Running(SumMetric(), window=3)
    original.persistent(True)
    for value in (1.0, 2.0):                      # slots 0 and 1 filled; the next update goes to slot 2
        original.update(torch.tensor(value + rank))
    restored = Running(SumMetric(), window=3)
    restored.persistent(True)
    restored.load_state_dict(original.state_dict())  # the checkpoint of a resumed job
    for metric in (original, restored):
        metric.update(torch.tensor(10.0))
    return float(original.compute()), float(restored.compute())  # synced over both ranks


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0")  # shown on torchmetrics 1.9.0 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    common.verdict(all(kind == "ok" and value[0] != value[1] for kind, value in results.values()),
                   "Running(SumMetric(), window=3) after a restore, uninterrupted vs restored: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
