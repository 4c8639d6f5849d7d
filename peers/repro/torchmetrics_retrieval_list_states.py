"""torchmetrics 1.9.0: the retrieval classes (RetrievalMAP here; every Retrieval* class, and
ROUGEScore's per-sentence states) on ranks that called update() a different number of times
(uneven shards): compute() gathers each list element separately, so the ranks issue different
numbers of all_gather calls, of different dtypes in turn: a crash (mismatched collective) or a
hang.

Mechanism: torchmetrics/retrieval/base.py:131-133 declares `indexes`, `preds` and `target` as
list states with `dist_reduce_fx=None`; metric.py:506 pre-concatenates only the `dim_zero_cat`
lists, so `_sync_dist` (metric.py:518-523, apply_to_collection) all_gathers one tensor per
update() call and state: rank 0's second `indexes` gather meets rank 1's first `preds` gather.
(text/rouge.py:144: the same for ROUGEScore.) Upstream: #3336 (open; PRs #3390 closed, #3421
and #3503 open).

    python peers/repro/torchmetrics_retrieval_list_states.py     # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.retrieval import RetrievalMAP

    metric = RetrievalMAP()
    for _ in range(2 if rank == 0 else 1):  # rank 0 has two batches, rank 1 one
        metric.update(torch.tensor([0.9, 0.2, 0.6]), torch.tensor([1, 0, 1]), indexes=torch.tensor([0, 0, 1]))
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0")  # triaged on 1.9.0 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    common.verdict(any(kind != "ok" for kind, _ in results.values()),
                   "RetrievalMAP.compute() with 2 updates on rank 0 and 1 on rank 1: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
