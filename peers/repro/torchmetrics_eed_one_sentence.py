"""torchmetrics 1.9.0: ExtendedEditDistance on a rank that holds exactly one sentence while
another holds several: the one-sentence rank all_gathers a 0-d tensor, the others a shape first:
a mismatched collective (crash) or a hang.

Mechanism: text/eed.py:97 keeps one 0-d score per sentence in the list state `sentence_eed`
("cat"); metric.py:506 concatenates a list only when it holds more than one tensor, so a rank
with one sentence keeps its 0-d tensor, and utilities/distributed.py:124 gathers a 0-d tensor
with a plain all_gather (no shape exchange), while a rank with a 1-d concatenation gathers its
shape (int64) first. Not found upstream (searched).

    python peers/repro/torchmetrics_eed_one_sentence.py     # exit 0: the bug shows

Shown on: torchmetrics 1.9.0 (torch 2.15).
"""

import common


def body(rank, world_size):
    from torchmetrics.text import ExtendedEditDistance

    metric = ExtendedEditDistance()
    if rank == 0:
        metric.update(["the cat sat"], [["the cat sat on"]])  # one sentence
    else:
        metric.update(["a dog", "red house"], [["a dog ran"], ["the red house"]])  # two
    return float(metric.compute())


if __name__ == "__main__":
    common.requires(torchmetrics=">=1.9.0")
    results = common.run(body, world_size=2, timeout_s=10, preload=["torchmetrics"])
    print(results)
    common.verdict(any(kind != "ok" for kind, _ in results.values()),
                   "ExtendedEditDistance with one sentence on rank 0, two on rank 1: " +
                   "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
