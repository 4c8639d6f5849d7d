"""Broken on purpose (PyTorch-Ignite #2803): compute() all_reduces the accumulators *in place*,
so the local state becomes the global one. A second compute() then counts every sample again,
and so does every compute after more updates (update_after_compute, idempotent fail)."""

import torch
import torch.distributed as dist

import distmetrics


class MeanAbsoluteError:
    def __init__(self):
        self.reset()

    def reset(self):
        self._sum_of_absolute_errors = torch.tensor(0.0, dtype=torch.float64)
        self._num_examples = torch.tensor(0.0, dtype=torch.float64)

    def state_dict(self):
        return {"_sum_of_absolute_errors": self._sum_of_absolute_errors, "_num_examples": self._num_examples}

    def update(self, output):
        y_pred, y = output
        self._sum_of_absolute_errors += (y_pred - y).abs().sum().to(torch.float64)
        self._num_examples += y.numel()

    def compute(self):
        if dist.is_initialized():
            dist.all_reduce(self._sum_of_absolute_errors)  # in place: the bug
            dist.all_reduce(self._num_examples)
        return (self._sum_of_absolute_errors / self._num_examples).item()


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="ignite")
