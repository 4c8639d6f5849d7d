"""A MeanAbsoluteError whose module watches importlib.metadata.entry_points: each call appends
"scan <pid>" to the file DISTMETRICS_TEST_ENTRY_POINTS_LOG, and the import appends "import <pid>".
torch.distributed looks its backends up there (every installed distribution's entry_points.txt)
once per process, in the process's first init_process_group. The supervisor does that once
before its rank workers are forked (_host.prepare_for_forked_ranks), so no rank should scan."""

import importlib.metadata
import os

import torch
import torch.distributed as dist

import distmetrics

_LOG = os.environ["DISTMETRICS_TEST_ENTRY_POINTS_LOG"]
_entry_points = importlib.metadata.entry_points


def _write(line):
    with open(_LOG, "a") as log:
        log.write(line + "\n")


def _watched_entry_points(*args, **kwargs):
    _write("scan %d" % os.getpid())
    return _entry_points(*args, **kwargs)


importlib.metadata.entry_points = _watched_entry_points
_write("import %d" % os.getpid())


class MeanAbsoluteError:
    def __init__(self):
        self.reset()

    def reset(self):
        self.sum_abs_error = torch.tensor(0.0, dtype=torch.float64)
        self.total = torch.tensor(0, dtype=torch.int64)

    def update(self, preds, target):
        self.sum_abs_error += (preds - target).abs().sum().to(torch.float64)
        self.total += target.numel()

    def compute(self):
        s = torch.stack([self.sum_abs_error, self.total.to(torch.float64)])
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(s)
        return s[0] / s[1]


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
