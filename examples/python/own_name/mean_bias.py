"""A metric distmetrics has no reference for, registered under its own name: the mean signed
error (prediction - target), torchmetrics style. Its scenario (mean_bias.toml) names it; the
properties that need no independent value judge it against its own single-process run.

    distmetrics conform --python examples/python/own_name/mean_bias.py examples/python/own_name/mean_bias.toml
"""

import torch
import torch.distributed as dist

import distmetrics


class MeanBias:
    def __init__(self):
        self.reset()

    def reset(self):
        self.sum = torch.tensor(0.0, dtype=torch.float64)
        self.count = torch.tensor(0, dtype=torch.int64)

    @property
    def metric_state(self):  # the state digest (idempotent) reads it
        return {"sum": self.sum, "count": self.count}

    def state_dict(self):  # state_roundtrip saves and loads it
        return {"sum": self.sum.clone(), "count": self.count.clone()}

    def load_state_dict(self, state):
        self.sum, self.count = state["sum"].clone(), state["count"].clone()

    def update(self, preds, target):
        self.sum += (preds.double() - target.double()).sum()
        self.count += target.numel()

    def compute(self):
        total = torch.stack([self.sum, self.count.double()])  # a copy: the local state stays as it is
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(total)
        return total[0] / total[1]


distmetrics.register("MeanBias", lambda params: MeanBias(), adapter="torchmetrics")
