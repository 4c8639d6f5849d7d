"""PyTorch-Ignite 0.5.3: a rank without data raises NotComputableError alone, while its peers go
on into the next collective: a hang. Two places:

- EpochMetric (ROC_AUC, AveragePrecision...): ignite/metrics/epoch_metric.py:147-148 raises on
  `len(self._predictions) < 1` (this rank's list) *before* the all_gather of lines 157-158 that
  the other ranks enter.
- Precision / Recall: ignite/metrics/precision.py:143-144 raises on `not self._updated` (this
  rank's flag) *after* the sync (line 126): alone, Precision gives rank 0 a value and rank 1 an
  exception; inside Fbeta (a MetricsLambda of Precision and Recall) rank 0 goes on into
  Recall's all_reduce and waits there for ever.

PyTorch-Ignite #1242 (open): "Handling empty datasets in distributed metric computation".

    /usr/bin/python3 peers/repro/ignite_raises_alone_on_empty_rank.py     # exit 0: the bug shows

Shown on: Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15).
"""

import common


def epoch_metric(rank, world_size):
    import torch
    from ignite.metrics import ROC_AUC

    metric = ROC_AUC()
    if rank == 0:  # rank 1 has no data
        metric.update((torch.tensor([0.2, 0.9, 0.4, 0.7]), torch.tensor([0, 1, 0, 1])))
    return float(metric.compute())


def fbeta(rank, world_size):
    import torch
    from ignite.metrics import Fbeta

    metric = Fbeta(beta=1.0)
    if rank == 0:
        metric.update((torch.tensor([1, 0, 1, 1]), torch.tensor([1, 0, 0, 1])))
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(ignite=">=0.5.3")  # shown on Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15)
    shown = []
    for name, body in (("ROC_AUC", epoch_metric), ("Fbeta", fbeta)):
        results = common.run(body, world_size=2, timeout_s=10, preload=["ignite.metrics"])
        print(name, results)
        rank1 = results[1]
        shown.append(rank1[0] == "raised" and "NotComputableError" in rank1[1] and results[0][0] != "ok")
        print(f"  {name}: " + "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
    common.verdict(all(shown), "rank 1 (no data) raised NotComputableError alone and rank 0 did not get a value, "
                               "for ROC_AUC and Fbeta")
