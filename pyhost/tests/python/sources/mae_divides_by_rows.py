"""Broken on purpose (test only): a torchmetrics-style MeanAbsoluteError that syncs correctly but
averages per-element errors over the number of *rows* instead of elements. On [N] data it is
right; on [N, d] data it is d times too large, the same on every rank and world size, so every
property that compares the metric with itself holds: only a reference (scikit-learn) catches it."""

import torch
import torch.distributed as dist

import distmetrics


class MeanAbsoluteError:
    def __init__(self):
        self.reset()

    @property
    def metric_state(self):
        return {"sum_abs_error": self.sum_abs_error, "rows": self.rows}

    def reset(self):
        self.sum_abs_error = torch.tensor(0.0, dtype=torch.float64)
        self.rows = torch.tensor(0, dtype=torch.int64)

    def update(self, preds, target):
        self.sum_abs_error += (preds - target).abs().sum().to(torch.float64)
        self.rows += target.shape[0]  # the bug: rows, not elements

    def compute(self):
        both = torch.stack([self.sum_abs_error, self.rows.to(torch.float64)])
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(both)  # a copy: the local state stays as it was
        return both[0] / both[1]


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
