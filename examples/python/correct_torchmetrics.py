"""Correct metrics in the torchmetrics style: states registered with their reduction
(add_state), update(preds, target) local, compute() syncing *copies* of the states through
torch.distributed, reset() back to the defaults. Written for distmetrics' examples after the
public shape of torchmetrics.Metric (torchmetrics itself is not installed here)."""

import torch
import torch.distributed as dist

import distmetrics


def distributed():
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


class Metric:
    """A minimal torchmetrics-like base: add_state(name, default, dist_reduce_fx)."""

    def __init__(self):
        self._defaults, self._reductions = {}, {}

    def add_state(self, name, default, dist_reduce_fx):
        self._defaults[name] = default.clone()
        self._reductions[name] = dist_reduce_fx
        setattr(self, name, default.clone())

    @property
    def metric_state(self):
        return {name: getattr(self, name) for name in self._defaults}

    def reset(self):
        for name, default in self._defaults.items():
            setattr(self, name, default.clone())

    def synced_states(self):
        """Copies of the states, reduced across ranks (one all_reduce per reduction and dtype)."""
        states = {name: getattr(self, name).clone() for name in self._defaults}
        if distributed():
            ops = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}
            for fx in sorted(set(self._reductions.values())):
                names = [n for n in states if self._reductions[n] == fx]
                flat = torch.cat([states[n].reshape(-1).to(torch.float64) for n in names])
                dist.all_reduce(flat, op=ops[fx])
                offset = 0
                for n in names:
                    k = states[n].numel()
                    states[n] = flat[offset:offset + k].reshape(states[n].shape).to(states[n].dtype)
                    offset += k
        return states


class NotComputableError(RuntimeError):
    pass


class MeanAbsoluteError(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("sum_abs_error", torch.tensor(0.0, dtype=torch.float64), "sum")
        self.add_state("total", torch.tensor(0, dtype=torch.int64), "sum")

    def update(self, preds, target):
        self.sum_abs_error += (preds - target).abs().sum().to(torch.float64)
        self.total += target.numel()

    def compute(self):
        s = self.synced_states()
        if s["total"].item() == 0:  # decided from the synced count: every rank raises together
            raise NotComputableError("MeanAbsoluteError needs at least one sample on some rank")
        return s["sum_abs_error"] / s["total"]


class MaximumAbsoluteError(Metric):
    def __init__(self):
        super().__init__()
        self.add_state("max_abs_error", torch.tensor(float("-inf"), dtype=torch.float64), "max")
        self.add_state("total", torch.tensor(0, dtype=torch.int64), "sum")

    def update(self, preds, target):
        if target.numel():
            self.max_abs_error = torch.maximum(self.max_abs_error, (preds - target).abs().max().to(torch.float64))
        self.total += target.numel()

    def compute(self):
        s = self.synced_states()
        if s["total"].item() == 0:
            raise NotComputableError("MaximumAbsoluteError needs at least one sample on some rank")
        return s["max_abs_error"]


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
distmetrics.register("MaximumAbsoluteError", lambda params: MaximumAbsoluteError(), adapter="torchmetrics")
