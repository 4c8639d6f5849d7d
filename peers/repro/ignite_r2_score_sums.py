"""PyTorch-Ignite 0.5.3 and 0.5.5: R2Score and PearsonCorrelation take the target's variance from
sums, sum(y^2) - (sum y)^2 / n, and R2Score keeps those sums in float32 tensors whatever the
data's dtype. Two consequences, both shown on 2 ranks (idist syncs through torch.distributed):

- a constant target's variance is rounding noise, not 0: R2Score returns a finite value (scikit-
  learn gives 0 for a perfect prediction, -inf or NaN otherwise) and PearsonCorrelation a finite
  correlation instead of NaN, and both move with the batching;
- float64 data summed in float32: R2Score's value moves with the batch size by ~1e-6 relative,
  past float32's unit roundoff, where float64 sums would agree to 1e-15.

Mechanism: ignite/metrics/regression/r2_score.py:64-66 of 0.5.5 (torch.tensor(0.0): float32
states), :80 (1 - SS_err / (sum(y^2) - (sum y)^2 / n)); regression/pearson_correlation.py:119
(y_var = sum(y^2)/n - mean^2, clamped at 0). Not reported upstream.

    VENV/bin/python peers/repro/ignite_r2_score_sums.py   # exit 0: the bug shows

Shown on: Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from ignite.metrics.regression import PearsonCorrelation, R2Score

    def computed(cls, y_pred, y, batch):
        metric = cls()
        for i in range(0, len(y), batch):
            metric.update((y_pred[i:i + batch], y[i:i + batch]))
        return float(metric.compute())

    g = torch.Generator().manual_seed(rank)
    # A constant target (0.1, not a binary fraction) and a noisy prediction of it, float64.
    y = torch.full((60,), 0.1, dtype=torch.float64)
    y_pred = y + 0.01 * torch.randn(60, generator=g, dtype=torch.float64)
    constant = {f"{cls.__name__} batch {b}": computed(cls, y_pred, y, b)
                for cls in (R2Score, PearsonCorrelation) for b in (1, 60)}
    # Float64 data of a varying target: batch size 1 against 6.
    y = 10 + torch.randn(600, generator=g, dtype=torch.float64)
    y_pred = y + 0.3 * torch.randn(600, generator=g, dtype=torch.float64)
    batching = {f"R2Score batch {b}": computed(R2Score, y_pred, y, b) for b in (1, 6)}
    return {"constant target": constant, "float64 data": batching}


if __name__ == "__main__":
    common.requires(ignite=">=0.5.3")  # shown on Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["ignite.metrics"])
    print(results)
    ok = all(kind == "ok" for kind, _ in results.values())
    if ok:
        c, f = results[0][1]["constant target"], results[0][1]["float64 data"]
        finite = all(v == v and abs(v) != float("inf") for v in c.values())
        moves = c["R2Score batch 1"] != c["R2Score batch 60"] or c["PearsonCorrelation batch 1"] != c["PearsonCorrelation batch 60"]
        r2_1, r2_6 = f["R2Score batch 1"], f["R2Score batch 6"]
        float32 = abs(r2_1 - r2_6) > 1e-7 * abs(r2_6)
    common.verdict(ok and finite and moves and float32,
                   "R2Score and PearsonCorrelation on 2 ranks, rank 0's values: " + repr(results[0][1]) +
                   " (a constant target: finite values that move with the batching; float64 data: R2Score "
                   "moves with the batch size past float32's roundoff)")
