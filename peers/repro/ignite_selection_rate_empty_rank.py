"""PyTorch-Ignite 0.5.5: SelectionRate (and DemographicParityDifference, one SelectionRate per
group) on a rank with no data (or no sample of a group): compute() all_reduces that rank's 0-d
`_num_positives` against the others' per-class counts: the collective never completes (a hang).

Mechanism: ignite/metrics/fairness/demographic_parity.py:55 and :61 make `_num_positives` a 0-d
tensor, :89-90 replace it by the first batch's per-class counts, and :94
(`@sync_all_reduce("_num_examples", "_num_positives")`) all_reduces it on every rank: a 0-d
tensor against [2]. The same family as MutualInformation's 0-d state. Not found upstream
(searched).

    python peers/repro/ignite_selection_rate_empty_rank.py     # exit 0: the bug shows

Shown on: pytorch-ignite 0.5.5 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from ignite.metrics.fairness import SelectionRate

    metric = SelectionRate()
    if rank == 0:
        metric.update((torch.tensor([1, 0, 1, 1]), torch.tensor([1, 0, 0, 1])))
    return metric.compute().tolist()


if __name__ == "__main__":
    common.requires(ignite="==0.5.5")
    results = common.run(body, world_size=2, timeout_s=10, preload=["ignite"])
    print(results)
    common.verdict(any(kind != "ok" for kind, _ in results.values()),
                   "SelectionRate with data on rank 0 only: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
