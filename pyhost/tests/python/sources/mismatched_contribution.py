"""Test source: on a rank without data the state is still the int64 [] placeholder, and
compute() all_reduces it where the peers send float64 [5] (what PyTorch-Ignite 0.4.13's
Precision does on an empty rank). distmetrics must name the mismatch and the odd rank out."""

import torch
import torch.distributed as dist

import distmetrics


class PerClassSums:
    def __init__(self):
        self.reset()

    def reset(self):
        self.sums = torch.tensor(0)  # a placeholder until the first update, like Ignite's

    def update(self, preds, target):
        errors = (preds - target).abs().reshape(-1)[:5].to(torch.float64)
        self.sums = errors if self.sums.dim() == 0 else self.sums + errors[: self.sums.numel()]

    def compute(self):
        sums = self.sums.clone()
        if dist.is_initialized():
            dist.all_reduce(sums)
        return float(sums.sum())


distmetrics.register("MeanAbsoluteError", lambda params: PerClassSums(), adapter="torchmetrics")
