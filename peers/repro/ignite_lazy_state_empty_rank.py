"""PyTorch-Ignite 0.5.3: Precision(average=False) (per class; also Recall and Fbeta built on them)
on a rank without data: its state is still the int 0 of reset(), the others' a per-class tensor,
so the ranks all_reduce different things (an int64 scalar against float64 [C]): a hang or a
crash.

Mechanism: ignite/metrics/precision.py:119-121, reset() sets `_numerator`, `_denominator`,
`_weight` to 0 and the first update() makes them tensors of the classes' shape; compute()'s
@sync_all_reduce("_numerator", "_denominator") (line 126) reduces whatever each rank holds.
PyTorch-Ignite #1242 (open), where this case is discussed.

The same with MaximumAbsoluteError, silently: reset() sets `_max_of_absolute_errors = -1` (an
int, ignite/metrics/regression/maximum_absolute_error.py:67), update() a float (`.item()`, :71);
`@sync_all_reduce("_max_of_absolute_errors:MAX")` (:75) all_reduces an int64 on the empty rank
against float64 on the others, and the empty rank reads a float's bytes as an integer: ~4.6e18.

    /usr/bin/python3 peers/repro/ignite_lazy_state_empty_rank.py     # exit 0: the bug shows

Shown on: Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15).
"""

import common


def body(rank, world_size):
    import torch
    from ignite.metrics import Precision

    metric = Precision(average=False, is_multilabel=True)
    if rank == 0:  # rank 1 has no data
        metric.update((torch.tensor([[1, 0, 1], [0, 1, 1]]), torch.tensor([[1, 0, 0], [0, 1, 1]])))
    return metric.compute().tolist()


def max_abs(rank, world_size):
    import torch
    from ignite.metrics.regression import MaximumAbsoluteError

    metric = MaximumAbsoluteError()
    if rank == 0:
        metric.update((torch.tensor([1.0, 2.0], dtype=torch.float64), torch.tensor([0.0, 0.5], dtype=torch.float64)))
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(ignite=">=0.5.3")  # shown on Ignite 0.5.3 (torch 1.13) and 0.5.5 (torch 2.15)
    results = common.run(body, world_size=2, timeout_s=10, preload=["ignite.metrics"])
    print(results)
    precision = any(kind != "ok" for kind, _ in results.values())
    print("  Precision(average=False, is_multilabel=True) with an empty rank 1: " +
          "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
    mae = common.run(max_abs, world_size=2, timeout_s=10, preload=["ignite.metrics.regression"])
    print(mae)
    wrong = any(kind != "ok" or abs(value - 1.5) > 1e-9 for kind, value in mae.values())  # max |x - y| = 1.5
    common.verdict(precision and wrong, "Precision hangs or crashes; MaximumAbsoluteError (single process 1.5): " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in mae.items()))
