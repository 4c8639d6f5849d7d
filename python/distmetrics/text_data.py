"""The `text` data generator's samples (harness/src/data/generators/text.cpp names this maker):
hypothesis and reference strings for text metrics (WER, BLEU, chrF...), structured samples
(docs/scenarios.md, "Structured data for Python metrics"). Sample i comes from (seed, i) only,
so the first n samples do not change when num_samples grows."""

import numpy as np

# The fixed vocabulary; `vocabulary` takes its first words.
WORDS = ("the", "cat", "sat", "on", "a", "mat", "dog", "ran", "to", "red", "house", "and", "blue", "tree", "under",
         "big", "small", "green", "car", "sky")


def _edit(rng, words, vocab, rate):
    """A noisy copy: each word kept, substituted, dropped or doubled."""
    out = []
    for w in words:
        if rng.random() >= rate:
            out.append(w)
            continue
        kind = rng.integers(3)
        if kind == 0:
            out.append(vocab[rng.integers(len(vocab))])
        elif kind == 2:
            out += [w, vocab[rng.integers(len(vocab))]]
    return out


def sample(seed, i, params):
    """(hypothesis, reference or list of references) of sample i."""
    rng = np.random.default_rng([int(seed), int(i)])
    vocab = WORDS[:int(params.get("vocabulary", 12))]
    count = int(params.get("references", 1))
    first = [vocab[k] for k in rng.integers(len(vocab), size=int(rng.integers(1, int(params.get("max_words", 8)) + 1)))]
    refs = [first] + [_edit(rng, first, vocab, float(params.get("error_rate", 0.3))) or first for _ in range(count - 1)]
    hyp = _edit(rng, first, vocab, float(params.get("error_rate", 0.3)))
    if rng.random() < float(params.get("empty_rate", 0.1)):
        hyp = []
    refs = [" ".join(r) for r in refs]
    return " ".join(hyp), (refs[0] if count == 1 else refs)


def make(seed, params):
    """{"input": hypotheses, "target": references}: params["num_samples"] samples (the harness
    passes the scenario's num_samples with the resolved parameters)."""
    n = int(params.get("num_samples", 0))
    pairs = [sample(seed, i, params) for i in range(n)]
    return {"input": [h for h, _ in pairs], "target": [r for _, r in pairs]}
