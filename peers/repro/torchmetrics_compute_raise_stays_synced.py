"""torchmetrics (shown on 1.9.0, torch 2.15): under torch.distributed, a compute() that raises
leaves the metric synced. Metric._wrap_compute runs compute inside sync_context, a
@contextmanager whose unsync() follows its `yield` without a try/finally: when the body raises,
the gathered states stay in place of the local ones, `_is_synced` stays True and the local states
stay in `_cache`. The next update() appends to a gathered tensor (list states: "'Tensor' object
has no attribute 'append'") or adds to the global sums, and the next compute() refuses: "The
Metric has already been synced". In one process nothing is synced, so the same calls work: the
raise is recoverable there and not under DDP.

Shown with RetrievalMAP, whose compute() before any update raises ValueError ("no samples") in
one process and on every rank; then every rank updates with its queries and computes again.

Mechanism: torchmetrics/metric.py:639-674 (sync_context: sync, yield, unsync with no finally),
:694-701 (_wrap_compute: compute inside it), :597 (sync() refuses a synced metric). Upstream:
Lightning-AI/torchmetrics#3486 (open), fix proposed in PR #3496 (open).

    VENV/bin/python peers/repro/torchmetrics_compute_raise_stays_synced.py   # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common


def raise_then_update(rank, world_size):
    """compute() before any update (raises), then update() with this rank's queries, then
    compute(): what each step did, as text. Run on every rank, or in one process (world_size 1,
    no group: torchmetrics does not sync there)."""
    import torch
    from torchmetrics.retrieval import RetrievalMAP

    metric = RetrievalMAP()
    steps = []
    for step in ("compute", "update", "compute"):
        try:
            if step == "update":
                queries = [(0, [0.9, 0.2, 0.4], [1, 0, 0]), (1, [0.3, 0.8, 0.1], [0, 1, 1])]
                mine = [q for i, q in enumerate(queries) if i % world_size == rank]
                for query, preds, target in mine:
                    metric.update(torch.tensor(preds), torch.tensor(target), indexes=torch.full((3,), query))
                steps.append("update ok")
            else:
                steps.append(f"compute ok {float(metric.compute()):.6f}")
        except Exception as e:  # noqa: BLE001 (what each step raised is the evidence)
            steps.append(f"{step} raised {type(e).__name__}: {str(e)[:80]}")
    return steps


def text(results):
    return "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items())


if __name__ == "__main__":
    common.requires(torch=">=2.1", torchmetrics=">=1.0")
    alone = raise_then_update(0, 1)
    shown = common.run(raise_then_update, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print("one process:", alone)
    print(shown)
    alone_recovers = alone[0].startswith("compute raised ValueError") and alone[2].startswith("compute ok")
    ranks_stuck = all(kind == "ok" and value[0].startswith("compute raised ValueError") and
                      "raised" in value[2] for kind, value in shown.values())
    common.verdict(alone_recovers and ranks_stuck,
                   f"RetrievalMAP: compute() before any update raises, then update() and compute(): one process "
                   f"{alone}; 2 ranks: {text(shown)}")
