"""torcheval 0.0.7 on torch 1.13: MeanSquaredError keeps its states in the input's dtype, and
torch 1.13's Gloo cannot all_gather bfloat16: sync_and_compute of a metric fed bfloat16 data
raises "Invalid scalar type" on every rank. Gone on torch 2.15 (Gloo gathers bfloat16 since
pytorch/pytorch PR #113557, issue #111131).

Mechanism: torcheval/metrics/regression/mean_squared_error.py:111 (the batch's bfloat16 sums added
into a state the first update made bfloat16), metrics/synclib.py:39 (all_gather). Not reported to
torcheval.

    /usr/bin/python3 peers/repro/torcheval_bfloat16_old_gloo.py   # exit 0: the bug shows

Shown on: torcheval 0.0.7 on torch 1.13.
"""

import common


def body(rank, world_size):
    import torch
    from torcheval.metrics import MeanSquaredError
    from torcheval.metrics.toolkit import sync_and_compute

    metric = MeanSquaredError()
    g = torch.Generator().manual_seed(rank)
    # 2-D data ([N, D]): the first update replaces the 0-d float32 default with the batch's bfloat16 sums.
    metric.update(torch.randn(8, 2, generator=g).bfloat16(), torch.randn(8, 2, generator=g).bfloat16())
    return sync_and_compute(metric).tolist()


if __name__ == "__main__":
    common.requires(torch="<2.1", torcheval=">=0.0.7")  # torch's Gloo takes bfloat16 since 2.2
    results = common.run(body, world_size=2, timeout_s=10, preload=["torcheval.metrics"])
    print(results)
    common.verdict(all(kind == "raised" and "Invalid scalar type" in str(value) for kind, value in results.values()),
                   "MeanSquaredError fed bfloat16 [N, 2] data on 2 ranks: " +
                   "; ".join(f"rank {r}: {kind} {str(value)[:200]}" for r, (kind, value) in results.items()))
