"""Test sources for pyhost's error paths: a metric that raises a Python exception on every rank
in compute(), and one whose compute() never returns on rank 1 while rank 0 waits in all_reduce."""

import torch
import torch.distributed as dist

import distmetrics


class RaisesInCompute:
    def reset(self):
        pass

    def update(self, preds, target):
        pass

    def compute(self):
        return self._check_shapes(torch.zeros(3), torch.zeros(4))

    def _check_shapes(self, a, b):
        if a.shape != b.shape:
            raise ValueError(f"shape mismatch {list(a.shape)} vs {list(b.shape)}")
        return 0.0


class LoopsOnRankOne:
    def __init__(self):
        self.reset()

    def reset(self):
        self.n = torch.tensor(0.0, dtype=torch.float64)

    def update(self, preds, target):
        self.n += target.numel()

    def compute(self):
        while dist.is_initialized() and dist.get_rank() == 1:
            pass  # an endless loop on one rank, outside any collective
        total = self.n.clone()
        if dist.is_initialized():
            dist.all_reduce(total)
        return total.item()


distmetrics.register("MeanAbsoluteError", lambda params: RaisesInCompute(), adapter="torchmetrics")
distmetrics.register("MaximumAbsoluteError", lambda params: LoopsOnRankOne(), adapter="torchmetrics")
