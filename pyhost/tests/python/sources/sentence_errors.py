"""A test-only text metric over lists of strings (torchmetrics style: update(preds, target) with
one hypothesis and one reference sentence per sample): exact matches and word errors (the word
edit distance, as for a word error rate), kept per sentence in a list state gathered with
all_gather_object at compute. compute() returns a nested dict.

DISTMETRICS_TEST_UNSYNCED_LIST=1 leaves the list state out of the sync (each rank computes on its
own sentences); DISTMETRICS_TEST_STRING_LEAF=1 adds a string to the result (a leaf no comparison
understands)."""

import math
import os

import torch.distributed as dist

import distmetrics

UNSYNCED = os.environ.get("DISTMETRICS_TEST_UNSYNCED_LIST") == "1"
STRING_LEAF = os.environ.get("DISTMETRICS_TEST_STRING_LEAF") == "1"


def word_errors(hypothesis, reference):
    """Substitutions, insertions and deletions turning hypothesis words into reference words."""
    previous = list(range(len(reference) + 1))
    for i, h in enumerate(hypothesis, 1):
        current = [i]
        for j, r in enumerate(reference, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (h != r)))
        previous = current
    return previous[-1]


class SentenceErrors:
    distmetrics_state = ["per_sentence"]  # the state digest reads it

    def __init__(self):
        self.reset()

    def reset(self):
        self.per_sentence = []  # (exact match 0/1, word errors, reference words), one per sentence

    def update(self, preds, target):
        if not isinstance(preds, list) or not all(isinstance(p, str) for p in preds):
            raise TypeError(f"SentenceErrors takes a list of strings, got {type(preds).__name__}")
        for p, t in zip(preds, target):
            self.per_sentence.append((int(p == t), word_errors(p.split(), t.split()), len(t.split())))

    def compute(self):
        rows = list(self.per_sentence)  # a copy: the local state stays as it is
        if not UNSYNCED and dist.is_initialized() and dist.get_world_size() > 1:
            gathered = [None] * dist.get_world_size()
            dist.all_gather_object(gathered, rows)
            rows = [row for rank_rows in gathered for row in rank_rows]
        sentences = len(rows)
        exact = sum(r[0] for r in rows)
        errors = sum(r[1] for r in rows)
        words = sum(r[2] for r in rows)
        value = {
            "exact_match": exact / sentences if sentences else math.nan,
            "word_error_rate": errors / words if words else math.nan,
            "counts": {"sentences": sentences, "exact": exact, "word_errors": errors, "words": words},
        }
        if STRING_LEAF:
            value["counts"]["summary"] = f"{errors} errors in {words} words"
        return value


distmetrics.register("SentenceErrors", lambda params: SentenceErrors(), adapter="torchmetrics")
