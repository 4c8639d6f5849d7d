"""torchmetrics 1.9.0: BinaryGroupStatRates (and BinaryFairness) count a batch's rows per group by
the group ids present in that batch, numbered from 0: a batch without group 1 adds group 2's
counts to group 1's slot. So the value depends on the batching, hence on the sharding: two ranks,
one of which holds no row of group 1, give other rates than one process over the same rows.

Mechanism: torchmetrics/functional/classification/group_fairness.py:75 (`_flexible_bincount`,
utilities/data.py:233-234: the counts of the ids present only), classification/group_fairness.py:52-57
(the k-th present group's counts added to group k). Upstream: Lightning-AI/torchmetrics#3489, fixed by
PR #3491 (after 1.9.0).

    VENV/bin/python peers/repro/torchmetrics_fairness_group_ids.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common

# (prediction, label, group) rows: rank 0 holds groups 0, 1 and 2; rank 1 groups 0 and 2 only.
SHARDS = [[(1, 1, 0), (0, 0, 0), (1, 0, 1), (1, 1, 1), (0, 1, 2), (0, 0, 2)],
          [(1, 1, 0), (0, 1, 0), (1, 1, 2), (1, 1, 2)]]


def rates(result):
    return {k: [round(float(x), 4) for x in v] for k, v in sorted(result.items())}


def body(rank, world_size):
    import torch
    from torchmetrics.classification import BinaryGroupStatRates

    def tensors(rows):
        t = torch.tensor(rows)
        return t[:, 0].float(), t[:, 1], t[:, 2]

    synced = BinaryGroupStatRates(num_groups=3)
    synced.update(*tensors(SHARDS[rank]))
    union = BinaryGroupStatRates(num_groups=3, sync_on_compute=False)  # one process, one batch of every row
    union.update(*tensors(SHARDS[0] + SHARDS[1]))
    return {"2 ranks": rates(synced.compute()), "1 process": rates(union.compute())}


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0,<1.9.1")  # fixed by PR #3491 after 1.9.0
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    ok = all(kind == "ok" for kind, _ in results.values())
    common.verdict(ok and all(v["2 ranks"] != v["1 process"] for _, v in results.values()),
                   "BinaryGroupStatRates(num_groups=3) [tp, fp, tn, fn rates per group], rank 1 without group 1: " +
                   "; ".join(f"rank {r}: {value}" for r, (kind, value) in results.items()))
