"""Test source: a MeanAbsoluteError that caches its computed value and returns it, without
syncing, while no update came since the last compute (as real metrics' compute caches do). A
rank that was fed between two computes syncs; a rank that was not returns early, and its next
compute's all_reduce pairs with the fed rank's. distmetrics must blame the ranks that returned
from the compute without its all_reduce, however many they are (issues 22 and 26)."""

import torch
import torch.distributed as dist

import distmetrics


class MeanAbsoluteError:
    def __init__(self):
        self.reset()

    @property
    def metric_state(self):
        return {"sums": self.sums}

    def reset(self):
        self.sums = torch.zeros(2, dtype=torch.float64)  # sum of |error|, count
        self.cached = None

    def update(self, preds, target):
        errors = (preds - target).abs().reshape(-1).to(torch.float64)
        self.sums = self.sums + torch.stack([errors.sum(), torch.tensor(float(errors.numel()), dtype=torch.float64)])
        self.cached = None

    def compute(self):
        if self.cached is not None:
            return self.cached  # the bug: a rank-local decision to skip the sync
        sums = self.sums.clone()
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(sums)
        self.cached = float(sums[0] / sums[1]) if sums[1] > 0 else 0.0
        return self.cached


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
