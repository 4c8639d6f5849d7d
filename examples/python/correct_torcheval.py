"""A correct metric in the torcheval style: update(input, target), compute(), reset(), states
added with _add_state and read through state_dict(); the distributed value comes from merging
every rank's state (torcheval's merge_state), gathered here with all_gather_object. Written after
the public shape of torcheval.metrics.Metric (torcheval is not installed here)."""

import torch
import torch.distributed as dist

import distmetrics


class MeanAbsoluteError:
    def __init__(self, device="cpu"):
        self._state_name_to_default = {}
        self.device = torch.device(device)
        self._add_state("sum_abs_error", torch.tensor(0.0, dtype=torch.float64))
        self._add_state("num_total", torch.tensor(0, dtype=torch.int64))

    def _add_state(self, name, default):
        self._state_name_to_default[name] = default.clone()
        setattr(self, name, default.clone())

    def reset(self):
        for name, default in self._state_name_to_default.items():
            setattr(self, name, default.clone())
        return self

    def state_dict(self):
        return {name: getattr(self, name).clone() for name in self._state_name_to_default}

    def update(self, input, target):
        self.sum_abs_error += (input - target).abs().sum().to(torch.float64)
        self.num_total += target.numel()
        return self

    def merge_state(self, metrics):
        for m in metrics:
            self.sum_abs_error += m["sum_abs_error"]
            self.num_total += m["num_total"]
        return self

    def compute(self):
        if dist.is_initialized() and dist.get_world_size() > 1:
            states = [None] * dist.get_world_size()
            dist.all_gather_object(states, self.state_dict())
            merged = MeanAbsoluteError().merge_state(states)  # a fresh metric: local state untouched
        else:
            merged = self
        if merged.num_total.item() == 0:
            return torch.tensor(float("nan"), dtype=torch.float64)
        return merged.sum_abs_error / merged.num_total


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torcheval")
