"""Broken on purpose (PyTorch-Ignite #1813): MaximumAbsoluteError reduced with SUM instead of
MAX, so on N ranks it returns the sum of the ranks' maxima (equal_to_single fails at ws > 1)."""

import torch
import torch.distributed as dist

import distmetrics


class MaximumAbsoluteError:
    def __init__(self):
        self.reset()

    def reset(self):
        self._max_of_absolute_errors = torch.tensor(float("-inf"), dtype=torch.float64)

    def state_dict(self):
        return {"_max_of_absolute_errors": self._max_of_absolute_errors}

    def update(self, output):
        y_pred, y = output
        if y.numel():
            self._max_of_absolute_errors = torch.maximum(self._max_of_absolute_errors,
                                                         (y_pred - y).abs().max().to(torch.float64))

    def compute(self):
        value = self._max_of_absolute_errors.clone()
        if dist.is_initialized():
            dist.all_reduce(value, op=dist.ReduceOp.SUM)  # the bug: MAX is needed
        return value.item()


distmetrics.register("MaximumAbsoluteError", lambda params: MaximumAbsoluteError(), adapter="ignite")
