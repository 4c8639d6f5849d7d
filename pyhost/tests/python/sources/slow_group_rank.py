"""A MeanAbsoluteError with state_dict()/load_state_dict() (so state_roundtrip makes its restored
instance before the first compute), in workers where one rank is slow to make the variant's
torch.distributed group: rank DISTMETRICS_TEST_SLOW_RANK sleeps DISTMETRICS_TEST_SLOW_SECONDS
right after it has published its Gloo address, as a rank that the machine's load deschedules
there would. Its peers are then done with the group first (gloo's connect returns on a rank once
its own side of each pair is up) and run ahead into their script.

The group is torch.distributed's own, made on the variant's store (the route taken where the
variant's C++ group cannot be handed over: begin_group is given no `shared` group here), since a
handed-over group has no rendezvous of Python's to be slow in.

Each group a rank begins ("begin <rank> <prefix> <route>") and each compute() with the world size
it saw ("compute <rank> <world size, 0 without a group>") is appended to
DISTMETRICS_TEST_GROUP_LOG."""

import os
import time

import torch
import torch.distributed as dist

import distmetrics
from distmetrics import _host

SLOW_RANK = int(os.environ.get("DISTMETRICS_TEST_SLOW_RANK", "0"))
SLOW_SECONDS = float(os.environ.get("DISTMETRICS_TEST_SLOW_SECONDS", "0.5"))
LOG = os.environ.get("DISTMETRICS_TEST_GROUP_LOG", "")

_making = {"rank": -1, "slept": True}


def _log(line):
    if LOG:
        with open(LOG, "a") as f:
            f.write(line + "\n")


_begin_group = _host.begin_group


def begin_group(backend, rank, world_size, timeout_ms, prefix, shared=None):
    _making.update(rank=rank, slept=False)
    try:
        _begin_group(backend, rank, world_size, timeout_ms, prefix)  # a group of Python's own
    finally:
        _making["slept"] = True
        _log(f"begin {rank} {prefix} {_host.group_route()}")


_host.begin_group = begin_group  # the C++ host looks it up on each call

_set = _host._VariantStore.set


def _slow_set(self, key, value):
    _set(self, key, value)
    if _making["rank"] == SLOW_RANK and not _making["slept"]:
        _making["slept"] = True
        time.sleep(SLOW_SECONDS)


_host._VariantStore.set = _slow_set


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
        world = dist.get_world_size() if dist.is_initialized() else 0
        _log(f"compute {_making['rank']} {world}")
        s = torch.stack([self.sum_abs_error, self.total.to(torch.float64)])
        if world > 1:
            dist.all_reduce(s)
        return s[0] / s[1]

    def state_dict(self):
        return {"sum_abs_error": self.sum_abs_error.clone(), "total": self.total.clone()}

    def load_state_dict(self, state):
        self.sum_abs_error = state["sum_abs_error"].clone()
        self.total = state["total"].clone()


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
