"""A MeanAbsoluteError whose compute() says which torch.distributed group it ran on: each
compute appends "compute <rank> <world size> <backend> <route>" to DISTMETRICS_TEST_GROUP_LOG
(route: distmetrics._host.group_route(), "shared" where the variant's C++ Gloo group is the
default group, "own" where Python made a group of its own). Its compute runs the collectives a
library's sync does: an all_reduce, an all_gather of per-rank sizes then of tensors of those
sizes (each rank holds as many values as it was fed), an all_gather_object and a barrier."""

import os

import torch
import torch.distributed as dist

import distmetrics
from distmetrics import _host

LOG = os.environ.get("DISTMETRICS_TEST_GROUP_LOG", "")


class MeanAbsoluteError:
    def __init__(self):
        self.reset()

    def reset(self):
        self.errors = []

    def update(self, preds, target):
        self.errors.append((preds - target).abs().reshape(-1).to(torch.float64))

    def compute(self):
        mine = torch.cat(self.errors) if self.errors else torch.zeros(0, dtype=torch.float64)
        if not dist.is_initialized():
            return mine.sum() / mine.numel()
        world = dist.get_world_size()
        total = torch.tensor([mine.sum().item(), float(mine.numel())], dtype=torch.float64)
        dist.all_reduce(total)
        sizes = [torch.zeros(1, dtype=torch.int64) for _ in range(world)]
        dist.all_gather(sizes, torch.tensor([mine.numel()]))
        longest = max(int(s.item()) for s in sizes)
        padded = torch.zeros(longest, dtype=torch.float64)
        padded[: mine.numel()] = mine
        gathered = [torch.zeros(longest, dtype=torch.float64) for _ in range(world)]
        dist.all_gather(gathered, padded)
        values = torch.cat([g[: int(s.item())] for g, s in zip(gathered, sizes)])
        routes = [None] * world
        dist.all_gather_object(routes, _host.group_route())
        dist.barrier()
        if values.numel() != int(total[1].item()) or not torch.isclose(values.sum(), total[0]):
            raise RuntimeError(f"all_gather and all_reduce disagree: {values.numel()} values, {total.tolist()}")
        if LOG:
            with open(LOG, "a") as f:
                f.write(f"compute {dist.get_rank()} {world} {dist.get_backend()} {_host.group_route()} {','.join(routes)}\n")
        return total[0] / total[1]


distmetrics.register("MeanAbsoluteError", lambda params: MeanAbsoluteError(), adapter="torchmetrics")
