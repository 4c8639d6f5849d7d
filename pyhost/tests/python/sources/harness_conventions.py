"""Test source for what the harness does with a library's conventions (test_conform_harness.py):

- MeanAbsoluteError: its factory cannot build sum_dtype="float32" and says so with an exception
  class named Unsupported (the protocol distmetrics.Unsupported follows: the type's name is what
  the C++ host reads), so only those variants are skips, with its reason;
- RootMeanSquaredError: its factory raises a plain ValueError for sum_dtype="float32": those
  variants are errors naming the parameters, the float64 ones still run;
- MeanSquaredError: update() rejects a batch with no rows (as torcheval's input checks do),
  and compute() never syncs: the missing sync must still be found, the empty batch reported
  once for the metric as a finding of its own.

Written for distmetrics' tests; torchmetrics and torcheval are not imported."""

import torch
import torch.distributed as dist

import distmetrics


class Unsupported(Exception):
    """Named as distmetrics.Unsupported is: the host reads the type's name."""


class MeanAbsoluteError:
    def __init__(self):
        self.reset()

    def reset(self):
        self.total = torch.tensor(0.0, dtype=torch.float64)
        self.count = torch.tensor(0, dtype=torch.int64)

    def update(self, preds, target):
        self.total += (preds - target).abs().sum().to(torch.float64)
        self.count += target.numel()

    def compute(self):
        state = torch.stack([self.total, self.count.to(torch.float64)])
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(state)
        return state[0] / state[1]


def make_mae(params):
    if params.get("sum_dtype") == "float32":
        raise Unsupported("this MeanAbsoluteError keeps float64 sums only (sum_dtype='float32' asked)")
    return MeanAbsoluteError()


class NoSyncRejectsEmptyMSE:
    def __init__(self):
        self.reset()

    def reset(self):
        self.total = torch.tensor(0.0, dtype=torch.float64)
        self.count = torch.tensor(0, dtype=torch.int64)

    def update(self, preds, target):
        if target.numel() == 0:
            raise ValueError("The `input` and `target` should be non-empty tensors")
        self.total += ((preds - target) ** 2).sum().to(torch.float64)
        self.count += target.numel()

    def compute(self):
        return self.total / self.count  # never synced


class RootMeanSquaredError(MeanAbsoluteError):
    def update(self, preds, target):
        self.total += ((preds - target) ** 2).sum().to(torch.float64)
        self.count += target.numel()

    def compute(self):
        return super().compute().sqrt()


def make_rmse(params):
    if params.get("sum_dtype") == "float32":
        raise ValueError("this factory refuses float32 sums (a planted factory error)")
    return RootMeanSquaredError()


distmetrics.register("MeanAbsoluteError", make_mae, adapter="torchmetrics")
distmetrics.register("RootMeanSquaredError", make_rmse, adapter="torchmetrics")
distmetrics.register("MeanSquaredError", lambda params: NoSyncRejectsEmptyMSE(), adapter="torchmetrics")
