"""A torcheval-style metric of absolute errors (their sum, count and mean) with merge_state(metrics) (other instances, as torcheval
passes them), state_dict() and load_state_dict(), for the merge_state property: a fresh instance
loads rank 0's saved state, merges the others' and must give the distributed result; its
compute() syncs through torch.distributed when a group exists, as a rank's instance does (so a
merging instance that synced with the ranks' would count every state twice).
DISTMETRICS_TEST_MERGE_FORGETS_OWN=1 makes merge_state() replace its own state by the others'
(the merge must keep its own), which merge_state must catch."""

import os

import torch
import torch.distributed as dist

import distmetrics

FORGETS_OWN = os.environ.get("DISTMETRICS_TEST_MERGE_FORGETS_OWN") == "1"


class AbsoluteErrorTotals:
    def __init__(self):
        self._state_name_to_default = {"sum_abs_error": torch.tensor(0.0, dtype=torch.float64),
                                       "num_total": torch.tensor(0.0, dtype=torch.float64)}
        self.reset()

    def reset(self):
        for name, default in self._state_name_to_default.items():
            setattr(self, name, default.clone())
        return self

    def update(self, input, target):
        self.sum_abs_error += (input - target).abs().sum().to(torch.float64)
        self.num_total += target.numel()
        return self

    def state_dict(self):
        return {name: getattr(self, name).clone() for name in self._state_name_to_default}

    def load_state_dict(self, state):
        for name in self._state_name_to_default:
            setattr(self, name, state[name].clone())

    def merge_state(self, metrics):
        if FORGETS_OWN:
            self.reset()
        for m in metrics:
            self.sum_abs_error += m.sum_abs_error
            self.num_total += m.num_total
        return self

    def compute(self):
        s = torch.stack([self.sum_abs_error, self.num_total])
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(s)
        return {"sum": s[0], "count": s[1], "mean": s[0] / s[1]}


distmetrics.register("AbsoluteErrorTotals", lambda params: AbsoluteErrorTotals(), adapter="torcheval")
