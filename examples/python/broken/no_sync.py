"""Broken on purpose: a torchmetrics-style MeanAbsoluteError whose compute() never syncs, so
every rank returns the error of its own shard (the commonest distributed-metric bug: the
metric works on one process and silently disagrees on N)."""

import torch

import distmetrics


class MeanAbsoluteError:
    def __init__(self):
        self.reset()

    @property
    def metric_state(self):
        return {"sum_abs_error": self.sum_abs_error, "total": self.total}

    def reset(self):
        self.sum_abs_error = torch.tensor(0.0, dtype=torch.float64)
        self.total = torch.tensor(0, dtype=torch.int64)

    def update(self, preds, target):
        self.sum_abs_error += (preds - target).abs().sum().to(torch.float64)
        self.total += target.numel()

    def compute(self):
        return self.sum_abs_error / self.total  # local only: no all_reduce


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
