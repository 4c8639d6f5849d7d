"""torcheval 0.0.7: sync_and_compute gives each rank a different result for a metric whose
value keeps the samples' order (Cat, HitRate, ReciprocalRank: one value per sample), and Max and
Min crash the sync when a rank has no data and the data are float64.

Mechanisms: torcheval/metrics/toolkit.py:271-276 (get_synced_metric) merges a clone of the
rank's own metric with the *other* ranks' gathered metrics, so rank r's result starts with its
own samples: rank 0 gives [rank 0's, rank 1's], rank 1 gives [rank 1's, rank 0's], and neither
equals the other. Max (aggregation/max.py:47) starts from a float32 -inf that the first float64
batch turns float64 (max.py:52: torch.max promotes); a rank without data keeps the float32
default, and the sync's all_gather of the state meets float32 against float64.

    python peers/repro/torcheval_sync_order.py      # exit 0: both bugs show

Shown on: torcheval 0.0.7 on torch 2.15.
"""

import common


def order(rank, world_size):
    import torch
    from torcheval.metrics import Cat
    from torcheval.metrics.toolkit import sync_and_compute

    metric = Cat()
    metric.update(torch.tensor([float(rank), float(rank)]))
    return sync_and_compute(metric).tolist()


def empty_rank_max(rank, world_size):
    import torch
    from torcheval.metrics import Max
    from torcheval.metrics.toolkit import sync_and_compute

    metric = Max()
    if rank == 0:  # rank 1 has no data
        metric.update(torch.tensor([1.0, 2.0], dtype=torch.float64))
    return float(sync_and_compute(metric))


if __name__ == "__main__":
    common.requires(torcheval=">=0.0.7")
    cat = common.run(order, world_size=2, timeout_s=10, preload=["torcheval.metrics"])
    print(cat)
    mx = common.run(empty_rank_max, world_size=2, timeout_s=10, preload=["torcheval.metrics"])
    print(mx)
    values = [value for kind, value in cat.values() if kind == "ok"]
    shown = len(values) == 2 and values[0] != values[1] and any(kind != "ok" for kind, _ in mx.values())
    common.verdict(shown, f"sync_and_compute(Cat): rank 0 {cat[0][1]}, rank 1 {cat[1][1]}; "
                          f"sync_and_compute(Max) with an empty rank: " +
                          "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in mx.items()))
