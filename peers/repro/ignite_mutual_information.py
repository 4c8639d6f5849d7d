"""PyTorch-Ignite 0.5.5 MutualInformation: its state_dict() leaves out two of its three states,
and a rank with no data makes the ranks all_reduce tensors of different shapes.

Mechanisms: ignite/metrics/mutual_information.py:77 sets _state_dict_all_req_keys to
("_sum_of_probabilities",), replacing Entropy's ("_sum_of_entropies", "_num_examples"), so
state_dict() saves neither the entropies nor the count, and an instance loaded from it computes
as if it had seen nothing. reset() makes _sum_of_probabilities a 0-d tensor (:82) that the first
update replaces with the [C] sum of the batch's probabilities (:87): compute()'s
sync_all_reduce (:89) then all_reduces [] on a rank without data against [C] on the others.

    python peers/repro/ignite_mutual_information.py      # exit 0: both bugs show

Shown on: pytorch-ignite 0.5.5 on torch 2.15.
"""

import common


def roundtrip():
    import torch
    from ignite.metrics import MutualInformation

    torch.manual_seed(0)
    logits = torch.randn(8, 4)
    metric = MutualInformation()
    metric.update((logits, torch.zeros(8, dtype=torch.long)))
    saved = metric.state_dict()
    fresh = MutualInformation()
    fresh.load_state_dict(saved)
    fresh.update((logits, torch.zeros(8, dtype=torch.long)))
    metric.update((logits, torch.zeros(8, dtype=torch.long)))
    # 0.5.5's state_dict(): {"__metric_state_per_rank": [this rank's {state name: value}]}
    names = sorted(name for per_rank in saved["__metric_state_per_rank"] for name in per_rank)
    return names, float(metric.compute()), float(fresh.compute())


def empty_rank(rank, world_size):
    import torch
    from ignite.metrics import MutualInformation

    metric = MutualInformation()
    if rank == 0:  # rank 1 has no data
        metric.update((torch.randn(8, 4), torch.zeros(8, dtype=torch.long)))
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(ignite=">=0.5.5")  # shown on 0.5.5; earlier releases were not checked
    keys, original, loaded = roundtrip()
    print("state_dict keys:", keys, "original:", original, "loaded and updated alike:", loaded)
    results = common.run(empty_rank, world_size=2, timeout_s=10, preload=["ignite.metrics"])
    print(results)
    shown = abs(original - loaded) > 1e-6 and any(kind != "ok" for kind, _ in results.values())
    common.verdict(shown, f"MutualInformation: state_dict() saves {keys}, so a loaded instance gives {loaded} "
                          f"instead of {original}; with an empty rank: " +
                          "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
