"""Structured scenario data (data.python = "transcripts:make"): predicted and reference
transcripts as lists of strings, one sample per element."""

import random

WORDS = ["turn", "left", "right", "at", "the", "next", "light", "stop", "here", "please"]


def make(seed, params):
    rng = random.Random(seed)
    refs = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(2, 6))) for _ in range(int(params["n"]))]
    # About half are transcribed exactly; the others lose their last word.
    preds = [r if rng.random() < 0.5 else r.rsplit(" ", 1)[0] for r in refs]
    return {"input": preds, "target": refs}
