"""A torchmetrics-style MeanAbsoluteError with state_dict()/load_state_dict() for the
state_roundtrip property. DISTMETRICS_TEST_FORGET_TOTAL=1 makes state_dict() leave the sample
count out, as torchmetrics does for a state not declared persistent: the restored count starts
from zero, which state_roundtrip must catch."""

import os

import torch
import torch.distributed as dist

import distmetrics

FORGET_TOTAL = os.environ.get("DISTMETRICS_TEST_FORGET_TOTAL") == "1"


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

    def state_dict(self):
        state = {"sum_abs_error": self.sum_abs_error.clone()}
        if not FORGET_TOTAL:
            state["total"] = self.total.clone()
        return state

    def load_state_dict(self, state):
        self.sum_abs_error = state["sum_abs_error"].clone()
        if "total" in state:
            self.total = state["total"].clone()


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
