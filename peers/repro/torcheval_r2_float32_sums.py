"""torcheval 0.0.7: R2Score keeps its sums in float32 whatever the data's dtype, so float64 data
are summed in float32: a constant target's SS_tot = sum(y^2) - (sum y)^2 / n is rounding noise, not
0 (a finite R2 where scikit-learn gives 0 or -inf), and the value moves with the batch size by
~1e-6 relative, past float32's unit roundoff, where float64 sums would agree to 1e-15. Shown on 2
ranks through sync_and_compute.

Mechanism: torcheval/metrics/regression/r2_score.py:95-101 (the states made float32), :128 (the
batch sums added in place into them). Not reported upstream.

    VENV/bin/python peers/repro/torcheval_r2_float32_sums.py   # exit 0: the bug shows

Shown on: torcheval 0.0.7 on torch 1.13 and on torch 2.15.
"""

import common


def body(rank, world_size):
    import torch
    from torcheval.metrics import R2Score
    from torcheval.metrics.toolkit import sync_and_compute

    def computed(y_pred, y, batch):
        metric = R2Score()
        for i in range(0, len(y), batch):
            metric.update(y_pred[i:i + batch], y[i:i + batch])
        return float(sync_and_compute(metric))

    g = torch.Generator().manual_seed(rank)
    y = torch.full((60,), 0.1, dtype=torch.float64)  # a constant target
    y_pred = y + 0.01 * torch.randn(60, generator=g, dtype=torch.float64)
    constant = {f"batch {b}": computed(y_pred, y, b) for b in (1, 60)}
    y = 10 + torch.randn(600, generator=g, dtype=torch.float64)
    y_pred = y + 0.3 * torch.randn(600, generator=g, dtype=torch.float64)
    batching = {f"batch {b}": computed(y_pred, y, b) for b in (1, 6)}
    return {"constant target": constant, "float64 data": batching}


if __name__ == "__main__":
    common.requires(torcheval=">=0.0.7")  # shown on torcheval 0.0.7 on torch 1.13 and on torch 2.15
    results = common.run(body, world_size=2, timeout_s=10, preload=["torcheval.metrics"])
    print(results)
    ok = all(kind == "ok" for kind, _ in results.values())
    if ok:
        c, f = results[0][1]["constant target"], results[0][1]["float64 data"]
        noise = c["batch 1"] != c["batch 60"] and any(v == v and abs(v) != float("inf") for v in c.values())
        float32 = abs(f["batch 1"] - f["batch 6"]) > 1e-7 * abs(f["batch 6"])
    common.verdict(ok and noise and float32,
                   "torcheval R2Score on 2 ranks, rank 0's values: " + repr(results[0][1]) +
                   " (a constant target: rounding noise that moves with the batching; float64 data: the value moves with the batch "
                   "size past float32's roundoff)")
