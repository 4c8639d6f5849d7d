"""PyTorch-Ignite 0.5.5: CharacterErrorRate on a rank with no data raises NotComputableError
alone (its peers return the global value and go on to their next collective: a hang), and its
state_dict() saves nothing.

Mechanism: ignite/metrics/nlp/character_error_rate.py:113, `@sync_all_reduce("_num_errors",
"_num_refs")` leaves `_num_examples` local, and :115 raises when it is 0 on that rank after the
sum; the class declares no `_state_dict_all_req_keys` (:30), so Metric.state_dict() holds none of
its three accumulators. Upstream: #3828, fixed by PR #3829 (after 0.5.5).

    python peers/repro/ignite_character_error_rate.py     # exit 0: the bug shows

Shown on: pytorch-ignite 0.5.5 (torch 2.15).
"""

import common


def body(rank, world_size):
    from ignite.metrics.nlp import CharacterErrorRate

    metric = CharacterErrorRate()
    if rank == 0:
        metric.update((["helo world"], ["hello world"]))
    value = metric.compute()
    restored = CharacterErrorRate()
    restored.load_state_dict(metric.state_dict())
    return value, restored._num_refs.item()


if __name__ == "__main__":
    common.requires(ignite="==0.5.5")
    results = common.run(body, world_size=2, timeout_s=10, preload=["ignite"])
    print(results)
    common.verdict(results[1][0] != "ok" or results[0][0] != "ok" or results[0][1][1] == 0,
                   "CharacterErrorRate with data on rank 0 only: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
