"""Test source: a MeanAbsoluteError whose last rank issues a dist.barrier() after the all_reduce
of its second compute, which its peers never issue. They go on to their next compute and wait
in its all_reduce; distmetrics must blame the rank that issued the extra barrier, not the ranks
that moved on (issue 26)."""

import torch
import torch.distributed as dist

import distmetrics


class MeanAbsoluteError:
    def __init__(self):
        self.computes = 0
        self.reset()

    @property
    def metric_state(self):
        return {"sums": self.sums}

    def reset(self):
        self.sums = torch.zeros(2, dtype=torch.float64)  # sum of |error|, count

    def update(self, preds, target):
        errors = (preds - target).abs().reshape(-1).to(torch.float64)
        self.sums = self.sums + torch.stack([errors.sum(), torch.tensor(float(errors.numel()), dtype=torch.float64)])

    def compute(self):
        self.computes += 1
        sums = self.sums.clone()
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(sums)
            if self.computes == 2 and dist.get_rank() == dist.get_world_size() - 1:
                dist.barrier()  # the bug: one rank synchronises once more than its peers
        return float(sums[0] / sums[1]) if sums[1] > 0 else 0.0


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
