"""torchmetrics 1.5.2: BinaryAUROC (and AveragePrecision, ROC, PR curves) decide per update()
whether the scores are logits: a batch with a value outside [0, 1] is passed through a sigmoid,
a batch of logits that all happen to lie in [0, 1] is not. So the scores of one run mix two
scales, and which ones depends on the batching, hence on the world size and the sharding: the
same logits give AUROC 1.0 in one process and 0.5 on two ranks.

Mechanism: torchmetrics/functional/classification/precision_recall_curve.py:184-185
(`_binary_precision_recall_curve_format`, called by every update()): `if not
torch.all((preds >= 0) * (preds <= 1)): preds = preds.sigmoid()`, on the batch at hand.
torchmetrics #2195, #2329, #1604, #3179 (open).

    /usr/bin/python3 peers/repro/torchmetrics_per_batch_sigmoid.py     # exit 0: the bug shows

Shown on: torchmetrics 1.5.2 (torch 1.13) and 1.9.0 (torch 2.15).
"""

import common

LOGITS = [0.9, -2.0, 0.8]  # rank 0 gets the first two, rank 1 the last
LABELS = [1, 0, 0]


def body(rank, world_size):
    import torch
    from torchmetrics.classification import BinaryAUROC

    metric = BinaryAUROC()
    part = slice(0, 2) if rank == 0 else slice(2, 3)
    metric.update(torch.tensor(LOGITS[part]), torch.tensor(LABELS[part]))  # rank 1's batch lies in [0, 1]
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.5.2")  # shown on torchmetrics 1.5.2 (torch 1.13) and 1.9.0 (torch 2.15)
    import torch
    from torchmetrics.classification import BinaryAUROC

    single = BinaryAUROC()
    single.update(torch.tensor(LOGITS), torch.tensor(LABELS))
    one_process = float(single.compute())
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print("one process:", one_process, "two ranks:", results)
    common.verdict(all(kind == "ok" and abs(value - one_process) > 1e-6 for kind, value in results.values()),
                   f"BinaryAUROC of the same logits: one process {one_process}, two ranks " +
                   ", ".join(f"rank {r}: {value}" for r, (_, value) in results.items()))
