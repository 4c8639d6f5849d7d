"""torchmetrics on torch >= 2.1 (shown on torchmetrics 1.9.0, torch 2.15): a metric whose list
("cat") states have more than one dimension, e.g. CosineSimilarity's [N, D] `preds` and `target`
(float32, so the dtypes agree), on a rank that got no data: that rank's placeholder is 1-d, its
peers' states 2-d, and gather_all_tensors all_gathers each state's shape first, 1 number against
2: a mismatched collective, a crash (gloo aborts) or garbage sizes.

Mechanism: torchmetrics/metric.py:516 of 1.9.0 (the #2463 fix: an empty list state sent as
`torch.tensor([], dtype=self.dtype)`, always 1-d), utilities/distributed.py:128-130 (the shape
all_gather sized by the local tensor's ndim). The dtype half of the same placeholder is
torchmetrics_empty_rank_placeholder_dtype.py. Not reported upstream (searched: #2463, #3336).

    VENV/bin/python peers/repro/torchmetrics_empty_rank_placeholder_ndim.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common


def one_dimensional(rank, world_size):
    """The contrast: 1-d float list states (SpearmanCorrCoef): the placeholder matches."""
    import torch
    from torchmetrics.regression import SpearmanCorrCoef

    metric = SpearmanCorrCoef()
    if rank == 0:  # rank 1 has no data
        metric.update(torch.tensor([0.1, 0.8, 0.4, 0.9]), torch.tensor([0.0, 1.0, 0.5, 2.0]))
    return round(float(metric.compute()), 6)


def two_dimensional(rank, world_size):
    import torch
    from torchmetrics.regression import CosineSimilarity

    metric = CosineSimilarity(reduction="mean")
    if rank == 0:  # rank 1 has no data
        g = torch.Generator().manual_seed(0)
        metric.update(torch.randn(8, 4, generator=g), torch.randn(8, 4, generator=g))
    return round(float(metric.compute()), 6)


def text(results):
    return "; ".join(f"rank {r}: {kind} {str(value)[:160]}" for r, (kind, value) in results.items())


if __name__ == "__main__":
    common.requires(torch=">=2.1", torchmetrics=">=1.3.2")
    contrast = common.run(one_dimensional, world_size=2, timeout_s=10, preload=["torchmetrics"])
    shown = common.run(two_dimensional, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(contrast)
    print(shown)
    contrast_ok = all(kind == "ok" for kind, _ in contrast.values()) and len({v for _, v in contrast.values()}) == 1
    common.verdict(contrast_ok and not all(kind == "ok" for kind, _ in shown.values()),
                   f"SpearmanCorrCoef (1-d list states) with an empty rank: {text(contrast)}; "
                   f"CosineSimilarity ([N, D] list states) with an empty rank: {text(shown)}")
