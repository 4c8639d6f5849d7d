"""torcheval 0.0.7: BLEUScore(n_gram=4).update() raises for a batch whose hypotheses hold fewer
than n_gram words, though BLEU's counts are summed over every batch (a short sentence counts for
the n-gram orders it has): the rank that draws such a batch raises alone in update(), and its
peers go on into sync_and_compute and wait for it (a hang, or an error once it leaves).

Mechanism: torcheval/metrics/functional/text/bleu.py:106-109 (the input check of every update:
"the input is too short to find all n-gram matches with n_gram=4"). Not reported upstream.

    VENV/bin/python peers/repro/torcheval_bleu_short_hypotheses.py   # exit 0: the bug shows

Shown on: torcheval 0.0.7 on torch 1.13 and on torch 2.15.
"""

import common


def body(rank, world_size):
    from torcheval.metrics import BLEUScore
    from torcheval.metrics.toolkit import sync_and_compute

    metric = BLEUScore(n_gram=4)
    metric.update(["the cat sat on the mat"], [["the cat sat on the mat today"]])
    if rank == 1:  # a batch of one short sentence
        metric.update(["a cat"], [["a cat sat"]])
    return float(sync_and_compute(metric))


if __name__ == "__main__":
    common.requires(torcheval="==0.0.7")
    results = common.run(body, world_size=2, timeout_s=10, preload=["torcheval.metrics"])
    print(results)
    kind1, value1 = results[1]
    common.verdict(kind1 == "raised" and "n_gram" in str(value1),
                   "BLEUScore(n_gram=4), rank 1 fed a 2-word hypothesis: " +
                   "; ".join(f"rank {r}: {kind} {str(value)[:200]}" for r, (kind, value) in results.items()))
