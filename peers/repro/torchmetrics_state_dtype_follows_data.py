"""torchmetrics 1.5.2: a metric whose states take the dtype of the data (R2Score with float64 data)
and a rank that got no data: the ranks gather states of different dtypes (float64 where data
came, the float32 default where none did), a mismatched collective: a crash or garbage.

Mechanism: torchmetrics/regression/r2.py:146-149 rebinds each state (`self.sum_error =
self.sum_error + sum_error`), so the float32 default (add_state) becomes float64 on a rank that
updated with float64 data; a rank without data keeps float32. utilities/distributed.py:121-122
then all_gathers each rank's 0-d state as it is: 8-byte and 4-byte buffers in one collective.

    /usr/bin/python3 peers/repro/torchmetrics_state_dtype_follows_data.py     # exit 0: the bug shows

Shown on: torchmetrics 1.5.2 (torch 1.13) and 1.9.0 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from torchmetrics.regression import R2Score

    metric = R2Score()
    if rank == 0:  # rank 1 has no data
        x = torch.linspace(0, 1, 8, dtype=torch.float64)
        metric.update(x, 2 * x + 0.1)
    return str(metric.sum_error.dtype), float(metric.compute())


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.5.2")  # shown on torchmetrics 1.5.2 (torch 1.13) and 1.9.0 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    # Single process on rank 0's data the value is 1 - SS_res/SS_tot of those 8 samples; any crash,
    # hang or a different value on a rank shows the bug.
    import torch
    x = torch.linspace(0, 1, 8, dtype=torch.float64)
    y, p = 2 * x + 0.1, x
    want = float(1 - ((y - p) ** 2).sum() / ((y - y.mean()) ** 2).sum())
    shown = any(kind != "ok" or abs(value[1] - want) > 1e-6 for kind, value in results.values())
    common.verdict(shown, f"R2Score with float64 data on rank 0 and none on rank 1 (single process: {want:.6f}): " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
