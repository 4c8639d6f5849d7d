"""PyTorch-Ignite 0.5.3: Precision(average=False) (per class; also Recall and Fbeta built on them)
on a rank without data: its state is still the int 0 of reset(), the others' a per-class tensor,
so the ranks all_reduce different things (an int64 scalar against float64 [C]): a hang or a
crash.

Mechanism: ignite/metrics/precision.py:119-121, reset() sets `_numerator`, `_denominator`,
`_weight` to 0 and the first update() makes them tensors of the classes' shape; compute()'s
@sync_all_reduce("_numerator", "_denominator") (line 126) reduces whatever each rank holds.
PyTorch-Ignite #1242 (open), where this case is discussed.

    /usr/bin/python3 peers/repro/ignite_lazy_state_empty_rank.py     # exit 0: the bug shows
"""

import common


def body(rank, world_size):
    import torch
    from ignite.metrics import Precision

    metric = Precision(average=False, is_multilabel=True)
    if rank == 0:  # rank 1 has no data
        metric.update((torch.tensor([[1, 0, 1], [0, 1, 1]]), torch.tensor([[1, 0, 0], [0, 1, 1]])))
    return metric.compute().tolist()


if __name__ == "__main__":
    results = common.run(body, world_size=2, timeout_s=10, preload=["ignite.metrics"])
    print(results)
    common.verdict(any(kind != "ok" for kind, _ in results.values()),
                   "Precision(average=False, is_multilabel=True) with an empty rank 1: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
