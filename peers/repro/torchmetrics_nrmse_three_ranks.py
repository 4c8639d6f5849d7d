"""torchmetrics 1.9.0 NormalizedRootMeanSquaredError raises IndexError in compute() on every
rank at world size 3 or more (and merges the ranks' statistics wrongly from the third on).

Mechanism: torchmetrics/regression/nrmse.py:211-222 (compute): with several ranks the states
min_val, max_val, mean_val, var_val, target_squared and total arrive gathered (dist_reduce_fx=None:
one row per rank) and _final_aggregation (nrmse.py:33-89) folds them rank by rank. The loop
(:61-84) computes the merged total, mean, variance, min and max but never carries them into the
*_1 variables for the next rank, and at :82 rebinds `min_val`, the gathered per-rank list it
indexes at :63, to the merged value: the second pass (the third rank) indexes a 1-element tensor.

    python peers/repro/torchmetrics_nrmse_three_ranks.py      # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 on torch 2.15 (world size 2 merges correctly).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.regression import NormalizedRootMeanSquaredError

    torch.manual_seed(rank)
    target = torch.randn(10, dtype=torch.float64)
    metric = NormalizedRootMeanSquaredError()
    metric.update(target + 0.1 * torch.randn(10, dtype=torch.float64), target)
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9")  # shown on 1.9.0; the releases before it were not checked
    results = common.run(body, world_size=3, timeout_s=10, preload=["torchmetrics.regression"])
    print(results)
    common.verdict(all(kind == "raised" and "IndexError" in value for kind, value in results.values()),
                   "NormalizedRootMeanSquaredError at 3 ranks: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
