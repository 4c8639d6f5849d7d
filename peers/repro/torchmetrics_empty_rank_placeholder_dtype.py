"""torchmetrics on torch >= 2.1 (shown on torchmetrics 1.9.0, torch 2.15): a metric with an integer
list ("cat") state, e.g. BinaryAUROC's `target`, on a rank that got no data: that rank sends a
float32 placeholder where its peers send int64 labels, and the ranks' all_gather do not match:
gloo aborts the process (crash) or the bytes are read as the wrong type.

Mechanism: torchmetrics/metric.py:509-516 (1.9.0), the fix of #2463 (PR #2468): on torch >= 2.1
an empty list state is replaced by `torch.tensor([], device=self.device, dtype=self.dtype)`
before the gather, so every rank gathers. `self.dtype` is the metric's floating dtype (float32
by default, `set_dtype`), not the state's: BinaryAUROC's `preds` are float32 and match, its
`target` holds the labels as int64 (`_binary_precision_recall_curve_format`). gather_all_tensors
(utilities/distributed.py:118-148) then gathers the sizes (equal dtype: fine), pads the empty
rank's float32 [0] to [n] and all_gathers it against the others' int64 [n]: 4 against 8 bytes per
element, "Received data size doesn't match expected size" (gloo's pair.cc), and the process is
terminated. A metric whose list states are all floating (SpearmanCorrCoef) gathers fine with
an empty rank: the dtype is the cause. On torch < 2.1 the same metric hangs instead (no
placeholder: torchmetrics_empty_rank_list_state.py).

    VENV/bin/python peers/repro/torchmetrics_empty_rank_placeholder_dtype.py   # exit 0: the bug shows
"""

import common


def floating_states(rank, world_size):
    """The contrast: every list state floating, so the empty rank's float32 placeholder matches."""
    import torch
    from torchmetrics.regression import SpearmanCorrCoef

    metric = SpearmanCorrCoef()
    if rank == 0:  # rank 1 has no data
        metric.update(torch.tensor([0.1, 0.8, 0.4, 0.9]), torch.tensor([0.0, 1.0, 0.5, 2.0]))
    return round(float(metric.compute()), 6)


def integer_state(rank, world_size):
    import torch
    from torchmetrics.classification import BinaryAUROC

    metric = BinaryAUROC()
    if rank == 0:  # rank 1 has no data
        metric.update(torch.tensor([0.1, 0.8, 0.4, 0.9]), torch.tensor([0, 1, 0, 1]))
    return float(metric.compute())


def text(results):
    return "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items())


if __name__ == "__main__":
    common.requires(torch=">=2.1", torchmetrics=">=1.3.2")
    contrast = common.run(floating_states, world_size=2, timeout_s=10, preload=["torchmetrics"])
    shown = common.run(integer_state, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(contrast)
    print(shown)
    contrast_ok = all(kind == "ok" for kind, _ in contrast.values()) and len({v for _, v in contrast.values()}) == 1
    common.verdict(contrast_ok and any(kind == "crashed" for kind, _ in shown.values()),
                   f"SpearmanCorrCoef (float list states) with an empty rank: {text(contrast)}; "
                   f"BinaryAUROC (int64 target list state) with an empty rank: {text(shown)}")
