"""torcheval 0.0.7: RetrievalPrecision with float64 scores, on ranks where a query has no
document yet (a rank's first batches, uneven shards): its state for that query is still the
float32 default while the other ranks' is float64, so the ranks all_gather tensors of different
dtypes: a crash (gloo aborts) or garbage.

Mechanism: torcheval/metrics/ranking/retrieval_precision.py:116, the `topk` states default to
`torch.empty(0)` (float32), and :150 `torch.cat([self.topk[i], input])` gives them the input's
dtype only once this rank has seen query i; synclib.py:80-111 (all_gather_tensors) gathers them
rank by rank with no agreement on the dtype. With float32 scores every rank agrees. The same
family as torcheval Max/Min's float32 defaults (aggregation/max.py:47). Not found upstream
(searched).

    python peers/repro/torcheval_retrieval_precision_dtype.py     # exit 0: the bug shows

Shown on: torcheval 0.0.7 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from torcheval.metrics import RetrievalPrecision
    from torcheval.metrics.toolkit import sync_and_compute

    metric = RetrievalPrecision(k=2, num_queries=2, avg="macro")
    queries = torch.tensor([0, 1, 0, 1]) if rank == 0 else torch.tensor([0, 0, 0, 0])  # rank 1: no query 1 yet
    metric.update(torch.tensor([0.9, 0.8, 0.3, 0.1], dtype=torch.float64), torch.tensor([1, 0, 0, 1]), indexes=queries)
    return sync_and_compute(metric).tolist()


if __name__ == "__main__":
    common.requires(torcheval="==0.0.7")
    results = common.run(body, world_size=2, timeout_s=10, preload=["torcheval"])
    print(results)
    common.verdict(any(kind != "ok" for kind, _ in results.values()),
                   "RetrievalPrecision with float64 scores, query 1 only on rank 0: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
