"""torchmetrics on torch >= 2.1 (shown on 1.9.0, torch 2.15): when no rank has any data, the
sync hands compute() the empty-rank placeholder instead of an empty list state. Metric._sync_dist
replaces each empty list ("cat") state by `torch.tensor([], dtype=self.dtype)` before gathering
(metric.py:509-516, the #2463 fix for a rank without data); with every rank empty, what comes
back is a 1-d float tensor of no elements, which compute() cannot tell from data. One process
raises ValueError ("No samples to concatenate") for the same calls; under DDP the same metric
returns nan (SpearmanCorrCoef) or raises another error (BinaryAUROC: IndexError): a caller that
catches the documented error to skip an empty evaluation gets nan logged, or a crash.

Mechanism: torchmetrics/metric.py:509-516 (the placeholder), :528-531 (only an empty *list* after
the gather restores []); utilities/data.py dim_zero_cat (raises on an empty list only). Not
reported upstream (searched: #2463, #3486).

    VENV/bin/python peers/repro/torchmetrics_empty_placeholder_compute.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common


def compute_without_data(rank, world_size):
    """compute() on SpearmanCorrCoef and BinaryAUROC that no rank updated: what each gave."""
    from torchmetrics.classification import BinaryAUROC
    from torchmetrics.regression import SpearmanCorrCoef

    out = {}
    for name, metric in (("SpearmanCorrCoef", SpearmanCorrCoef()), ("BinaryAUROC", BinaryAUROC())):
        try:
            out[name] = f"ok {float(metric.compute())}"
        except Exception as e:  # noqa: BLE001 (the error's type is the evidence)
            out[name] = f"raised {type(e).__name__}"
    return out


if __name__ == "__main__":
    common.requires(torch=">=2.1", torchmetrics=">=1.3.2")
    alone = compute_without_data(0, 1)
    shown = common.run(compute_without_data, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print("one process:", alone)
    print(shown)
    alone_raises = all(v == "raised ValueError" for v in alone.values())
    ranks_differ = all(kind == "ok" and all(v != "raised ValueError" for v in value.values())
                       for kind, value in shown.values())
    common.verdict(alone_raises and ranks_differ,
                   f"compute() with no data on any rank: one process {alone}; 2 ranks: "
                   + "; ".join(f"rank {r}: {value}" for r, (kind, value) in shown.items()))
