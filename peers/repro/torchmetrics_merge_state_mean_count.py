"""torchmetrics (shown on 1.9.0, torch 2.15): merge_state() combines a state declared with
dist_reduce_fx="mean" by the receiving metric's own update count, ((n - 1) * incoming + own) / n,
the running-mean step forward() uses for one batch, not a merge of two accumulated states. An
instance restored from a checkpoint (load_state_dict() does not restore `_update_count`, so n is 0)
divides by zero: PeakSignalNoiseRatioWithBlockedEffect(data_range=1.0), whose `data_range` is such
a state, restored from one process's state and merged with another's, computes nan, where the two
merged the same way without the restore, and one process over both batches, give the score.
Any class with a "mean" state (PeakSignalNoiseRatio and PeakSignalNoiseRatioWithBlockedEffect
with a data_range) merged this way is affected; no process group is needed.

Mechanism: torchmetrics/metric.py:480-481 (_reduce_states: the "mean" branch), :404-463
(merge_state), and load_state_dict leaving `_update_count` at 0. Not reported upstream (searched:
merge_state, dist_reduce_fx mean, _update_count).

    VENV/bin/python peers/repro/torchmetrics_merge_state_mean_count.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common


def merged_scores():
    import torch
    from torchmetrics.image import PeakSignalNoiseRatioWithBlockedEffect as PSNRB

    g = torch.Generator().manual_seed(0)
    batches = [(torch.rand(2, 1, 16, 16, generator=g), torch.rand(2, 1, 16, 16, generator=g)) for _ in range(2)]

    def fresh():
        metric = PSNRB(data_range=1.0)
        metric.persistent(True)
        return metric

    first, second, whole = fresh(), fresh(), fresh()
    first.update(*batches[0])
    second.update(*batches[1])
    for batch in batches:
        whole.update(*batch)
    restored = fresh()
    restored.load_state_dict(first.state_dict())
    restored.merge_state(second.metric_state)
    first.merge_state(second.metric_state)  # the contrast: the receiving instance has one update
    return {"one process": round(float(whole.compute()), 6), "merged": round(float(first.compute()), 6),
            "restored, then merged": float(restored.compute())}


if __name__ == "__main__":
    common.requires(torch=">=2.1", torchmetrics=">=1.2")
    scores = merged_scores()
    print(scores)
    import math
    common.verdict(scores["merged"] == scores["one process"] and math.isnan(scores["restored, then merged"]),
                   f"PeakSignalNoiseRatioWithBlockedEffect(data_range=1.0) over two batches: {scores}")
