"""The `detection` data generator's samples (harness/src/data/generators/detection.cpp names this
maker): one image's object detections per sample, structured samples (docs/scenarios.md,
"Structured data for Python metrics"). Sample i comes from (seed, i) only, so the first n samples
do not change when num_samples grows.

input:  {"boxes": [D, 4] float32 (x1, y1, x2, y2), "scores": [D] float32, "labels": [D] int64}
target: {"boxes": [T, 4] float32, "labels": [T] int64}
Each true box is found (a jittered copy, its label changed with `label_noise`) with probability
`recall`; `false_positives` spurious boxes at most are added; an image holds no true box with
probability `empty_rate` (and then may still hold spurious detections, or none)."""

import numpy as np
import torch

SIZE = 64.0  # the images' width and height, in pixels


def _box(rng):
    x1, y1 = rng.uniform(0, SIZE * 0.7, size=2)
    w, h = rng.uniform(SIZE * 0.1, SIZE * 0.3, size=2)
    return [x1, y1, min(x1 + w, SIZE), min(y1 + h, SIZE)]


def sample(seed, i, params):
    """(prediction dict, target dict) of image i."""
    rng = np.random.default_rng([int(seed), int(i)])
    classes = int(params.get("classes", 3))
    most = int(params.get("boxes", 3))
    count = 0 if rng.random() < float(params.get("empty_rate", 0.2)) else int(rng.integers(1, most + 1))
    true_boxes = [_box(rng) for _ in range(count)]
    true_labels = [int(rng.integers(classes)) for _ in range(count)]
    boxes, scores, labels = [], [], []
    for b, label in zip(true_boxes, true_labels):
        if rng.random() >= float(params.get("recall", 0.8)):
            continue
        jitter = rng.normal(0.0, float(params.get("jitter", 2.0)), size=4)
        x1, y1, x2, y2 = (np.asarray(b) + jitter).tolist()
        boxes.append([min(x1, x2 - 1), min(y1, y2 - 1), max(x2, x1 + 1), max(y2, y1 + 1)])
        scores.append(float(rng.uniform(0.5, 1.0)))
        labels.append(int(rng.integers(classes)) if rng.random() < float(params.get("label_noise", 0.1)) else label)
    for _ in range(int(rng.integers(0, int(params.get("false_positives", 1)) + 1))):
        boxes.append(_box(rng))
        scores.append(float(rng.uniform(0.0, 0.7)))
        labels.append(int(rng.integers(classes)))

    def as_boxes(rows):
        return torch.tensor(rows, dtype=torch.float32).reshape(-1, 4)

    return ({"boxes": as_boxes(boxes), "scores": torch.tensor(scores, dtype=torch.float32),
             "labels": torch.tensor(labels, dtype=torch.int64)},
            {"boxes": as_boxes(true_boxes), "labels": torch.tensor(true_labels, dtype=torch.int64)})


def make(seed, params):
    """{"input": predictions, "target": targets}: params["num_samples"] images (the harness passes
    the scenario's num_samples with the resolved parameters)."""
    n = int(params.get("num_samples", 0))
    pairs = [sample(seed, i, params) for i in range(n)]
    return {"input": [p for p, _ in pairs], "target": [t for _, t in pairs]}
