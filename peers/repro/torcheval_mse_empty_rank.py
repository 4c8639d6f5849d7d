"""torcheval 0.0.7 MeanSquaredError on 2-D data ([N, D], multioutput) with a rank that has no
data: sync_and_compute crashes (or hangs) because the ranks hold states of different shapes.

Mechanism: torcheval/metrics/regression/mean_squared_error.py:108-109, the first update()
*replaces* the 0-d float32 default `sum_squared_error` with the batch's per-output sums ([D]); a
rank that never updated keeps the 0-d default. torcheval/metrics/synclib.py then gathers a 0-d
state with one all_gather and a [D] state after a shape exchange, so the ranks issue different
collectives (rank 0: all_gather of int64 sizes, rank 1: all_gather of a float32 scalar).

    /usr/bin/python3 peers/repro/torcheval_mse_empty_rank.py     # exit 0: the bug shows

Shown on: torcheval 0.0.7 on torch 1.13 and on torch 2.15.
"""

import common


def body(rank, world_size):
    import torch
    from torcheval.metrics import MeanSquaredError
    from torcheval.metrics.toolkit import sync_and_compute

    metric = MeanSquaredError()
    if rank == 0:  # rank 1 has no data (an empty shard)
        torch.manual_seed(0)
        metric.update(torch.randn(8, 2), torch.randn(8, 2))
    return float(sync_and_compute(metric))


if __name__ == "__main__":
    common.requires(torcheval=">=0.0.7")  # shown on torcheval 0.0.7 on torch 1.13 and on torch 2.15
    results = common.run(body, world_size=2, timeout_s=10, preload=["torcheval.metrics"])
    print(results)
    common.verdict(any(kind != "ok" for kind, _ in results.values()),
                   "sync_and_compute(MeanSquaredError) with an empty rank: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
