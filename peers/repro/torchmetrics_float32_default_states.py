"""torchmetrics 1.5.2 and 1.9.0: MeanMetric (every aggregator) keeps its sums in the default dtype,
float32, whatever the data's: float64 values and weights are summed in float32, so a total past
2^24 no longer counts a unit (2^24 + 1 is 2^24 in float32) and the synced mean differs from the
float64 mean of the same data by far more than float64's rounding. The peer run sees it with
weights ~2^22 (`regression/ignite_pr2959_large_counts`); 1.5.2's PearsonCorrCoef showed the same
float32 sums as the cancellation of a constant target's variance (fixed by PR #2975).

Mechanism: torchmetrics/aggregation.py:72 (the value state, torch.get_default_dtype()) and :544
(MeanMetric's `weight`), until the user calls set_dtype(torch.float64). Not reported upstream as
a bug (set_dtype is documented).

    VENV/bin/python peers/repro/torchmetrics_float32_default_states.py   # exit 0: the bug shows

Shown on: torchmetrics 1.5.2 (torch 1.13) and 1.9.0 (torch 2.15).
"""

import common

BIG = 2.0 ** 24


def body(rank, world_size):
    import torch
    from torchmetrics.aggregation import MeanMetric

    metric = MeanMetric()
    # Each rank: one value 0 of weight 2^24, then sixteen values 3 of weight 1 (float64 data).
    metric.update(torch.tensor(0.0, dtype=torch.float64), weight=torch.tensor(BIG, dtype=torch.float64))
    for _ in range(16):
        metric.update(torch.tensor(3.0, dtype=torch.float64), weight=torch.tensor(1.0, dtype=torch.float64))
    mean = float(metric.compute())
    metric.sync()  # the synced total weight, as compute() sees it
    total = float(metric.weight)
    metric.unsync()
    return mean, total, str(metric.weight.dtype)


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.5.2")
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    total = 2 * (BIG + 16)  # the float64 total weight and mean of the same data
    exact = (2 * 16 * 3.0) / total
    values = [v for kind, v in results.values() if kind == "ok"]
    common.verdict(len(values) == 2 and all(v[1] != total and abs(v[0] - exact) > 1e-9 * exact for v in values),
                   f"MeanMetric of float64 data (weights 2^24 and 1) on 2 ranks (mean, synced total weight, its "
                   f"dtype): " + "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items())
                   + f"; in float64 the total weight is {total:.0f} and the mean {exact!r}")
