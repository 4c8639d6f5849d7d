"""PyTorch-Ignite 0.5.5 MaximumMeanDiscrepancy: one batch of no rows (a rank's last, a filtered
one) makes the result NaN for good.

Mechanism: ignite/metrics/maximum_mean_discrepancy.py:132-135, update() divides the batch's
kernel sums by n * (n - 1) and n * n: for n = 0 that is 0 / 0 = NaN, added to _xx_sum, _yy_sum
and _xy_sum (:137-139); compute() then averages NaN.

    python peers/repro/ignite_mmd_empty_batch_nan.py      # exit 0: the bug shows

Shown on: pytorch-ignite 0.5.5 on torch 2.15 (single process; a distributed run sums the NaN
into every rank's result).
"""

import math

import common

if __name__ == "__main__":
    common.requires(ignite=">=0.5.5")  # shown on 0.5.5; earlier releases were not checked
    import torch
    from ignite.metrics import MaximumMeanDiscrepancy

    torch.manual_seed(0)
    x, y = torch.randn(8, 3), torch.randn(8, 3)
    metric = MaximumMeanDiscrepancy()
    metric.update((x, y))
    before = float(metric.compute())
    metric.update((x[:0], y[:0]))
    after = float(metric.compute())
    print("before the empty batch:", before, "after:", after)
    common.verdict(math.isfinite(before) and math.isnan(after),
                   f"MaximumMeanDiscrepancy: {before} before an empty batch, {after} after it")
