"""Broken on purpose (torchmetrics #3336): a list ("cat") state synced with one collective per
list element. Ranks that saw different numbers of batches issue different numbers of
collectives: the rank with fewer batches finishes while its peers wait in a gather it never
enters (a hang; distmetrics names that rank and the collective)."""

import torch
import torch.distributed as dist

import distmetrics


class MeanAbsoluteError:
    def __init__(self):
        self.reset()

    @property
    def metric_state(self):
        return {"abs_errors": list(self.abs_errors)}

    def reset(self):
        self.abs_errors = []  # one tensor per update, like a torchmetrics "cat" state

    def update(self, preds, target):
        self.abs_errors.append((preds - target).abs().reshape(-1).to(torch.float64))

    def compute(self):
        values = list(self.abs_errors)
        if dist.is_initialized() and dist.get_world_size() > 1:
            gathered = []
            for element in values:  # the bug: one collective per list element
                size = torch.tensor([element.numel()], dtype=torch.int64)
                sizes = [torch.zeros_like(size) for _ in range(dist.get_world_size())]
                dist.all_gather(sizes, size)
                padded = torch.zeros(int(max(s.item() for s in sizes)), dtype=torch.float64)
                padded[:element.numel()] = element
                parts = [torch.zeros_like(padded) for _ in sizes]
                dist.all_gather(parts, padded)
                gathered += [p[:int(s.item())] for p, s in zip(parts, sizes)]
            values = gathered
        values = torch.cat(values) if values else torch.zeros(0, dtype=torch.float64)
        return (values.sum() / values.numel()).item()


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
