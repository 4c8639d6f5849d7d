"""A Python metric over lists of strings (torchmetrics style): the fraction of predicted
transcripts that equal their reference exactly. update(preds, target) takes one list of strings
each; the counts are tensors, synced as copies with one all_reduce."""

import torch
import torch.distributed as dist

import distmetrics


class ExactMatch:
    def __init__(self):
        self.reset()

    def reset(self):
        self.correct = torch.tensor(0, dtype=torch.int64)
        self.total = torch.tensor(0, dtype=torch.int64)

    @property
    def metric_state(self):  # the state digest reads it, as torchmetrics' own
        return {"correct": self.correct, "total": self.total}

    def update(self, preds, target):
        self.correct += sum(p == t for p, t in zip(preds, target))
        self.total += len(target)

    def compute(self):
        counts = torch.stack([self.correct, self.total])  # a copy: the local state stays as it is
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(counts)
        return counts[0].double() / counts[1].double()


distmetrics.register("ExactMatch", lambda params: ExactMatch(), adapter="torchmetrics")
