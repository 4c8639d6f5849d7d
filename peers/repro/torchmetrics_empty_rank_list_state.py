"""torchmetrics 1.5.2 on torch 1.13: a metric with a list ("cat") state, e.g. BinaryAUROC, on a rank
that got no data: that rank raises alone in compute() while the others wait in all_gather (hang).

Mechanism: torchmetrics/metric.py:443-450, the fix of torchmetrics #2463 (PR #2468: an empty
list state is sent as an empty tensor so every rank gathers) runs only when
`_TORCH_GREATER_EQUAL_2_1`. On torch 1.13 (which torchmetrics 1.5.2 accepts: torch>=1.10) the
empty rank's state stays `[]`: apply_to_collection finds no tensor and issues no all_gather, and
the reduction dim_zero_cat([]) raises "No samples to concatenate" (utilities/data.py:33-34) on
that rank alone.

    /usr/bin/python3 peers/repro/torchmetrics_empty_rank_list_state.py     # exit 0: the bug shows

Shown on: torchmetrics 1.5.2 on torch 1.13; on torch >= 2.1 the #2468 placeholder runs and this
hang is gone (torchmetrics_empty_rank_placeholder_dtype.py: a crash instead).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.classification import BinaryAUROC

    metric = BinaryAUROC()
    if rank == 0:  # rank 1 has no data
        metric.update(torch.tensor([0.1, 0.8, 0.4, 0.9]), torch.tensor([0, 1, 0, 1]))
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(torch="<2.1")  # shown on torchmetrics 1.5.2 on torch 1.13
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    kind1, text1 = results[1]
    common.verdict(kind1 == "raised" and "No samples to concatenate" in text1 and results[0][0] != "ok",
                   "BinaryAUROC.compute() with an empty rank on torch 1.13: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
