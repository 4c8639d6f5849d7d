"""Broken on purpose (PyTorch-Ignite #1242): compute() raises NotComputableError from the
*local* count before syncing, so a rank without data raises alone while its peers wait in the
all_reduce forever (a hang; distmetrics blames the rank that raised)."""

import torch
import torch.distributed as dist

import distmetrics


class NotComputableError(RuntimeError):
    pass


class MeanAbsoluteError:
    def __init__(self):
        self.reset()

    def reset(self):
        self._sum_of_absolute_errors = torch.tensor(0.0, dtype=torch.float64)
        self._num_examples = 0

    def state_dict(self):
        return {"_sum_of_absolute_errors": self._sum_of_absolute_errors, "_num_examples": self._num_examples}

    def update(self, output):
        y_pred, y = output
        self._sum_of_absolute_errors += (y_pred - y).abs().sum().to(torch.float64)
        self._num_examples += y.numel()

    def compute(self):
        if self._num_examples == 0:  # the bug: a local decision, before the collective
            raise NotComputableError("MeanAbsoluteError must have at least one example before it can be computed.")
        totals = torch.stack([self._sum_of_absolute_errors.clone(),
                              torch.tensor(float(self._num_examples), dtype=torch.float64)])
        if dist.is_initialized():
            dist.all_reduce(totals)
        return (totals[0] / totals[1]).item()


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="ignite")
