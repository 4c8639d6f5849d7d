"""Test-only structured data (data.python) and references (reference.python) for the structured
input tests: sentences as lists of strings, detections as lists of dicts of tensors, and
references written apart from the metrics (NumPy IoU, a recursive word edit distance)."""

import functools
import math
import random

import numpy as np
import torch

WORDS = ["the", "cat", "sat", "on", "a", "mat", "dog", "ran", "far", "away"]


def sentences(seed, params):
    """{"input": hypotheses, "target": references}: lists of strings; about a third identical."""
    rng = random.Random(seed)
    n = int(params.get("n", 30))
    refs, hyps = [], []
    for _ in range(n):
        ref = [rng.choice(WORDS) for _ in range(rng.randint(2, 7))]
        hyp = list(ref)
        if rng.random() > 0.35:
            for _ in range(rng.randint(1, 3)):
                edit = rng.choice(["sub", "del", "ins"])
                at = rng.randrange(len(hyp) + (edit == "ins")) if hyp or edit == "ins" else 0
                if edit == "sub" and hyp:
                    hyp[at] = rng.choice(WORDS)
                elif edit == "del" and hyp:
                    del hyp[at]
                else:
                    hyp.insert(at, rng.choice(WORDS))
        refs.append(" ".join(ref))
        hyps.append(" ".join(hyp))
    return {"input": hyps, "target": refs}


def detections(seed, params):
    """{"input": [{"boxes", "scores", "labels"}], "target": [{"boxes", "labels"}]}, one dict per
    image, with 0 to 4 target boxes and predictions that are shifted copies of them (some far
    enough to miss, some with the wrong label) plus false alarms."""
    g = torch.Generator().manual_seed(seed)
    n = int(params.get("n", 24))
    preds, targets = [], []
    for _ in range(n):
        m = int(torch.randint(0, 5, (1,), generator=g))
        xy = torch.rand(m, 2, generator=g, dtype=torch.float64) * 80
        wh = 10 + torch.rand(m, 2, generator=g, dtype=torch.float64) * 20
        boxes = torch.cat([xy, xy + wh], dim=1)
        labels = torch.randint(0, 3, (m,), generator=g)
        shift = (torch.rand(m, 1, generator=g, dtype=torch.float64) - 0.5) * 16
        p_labels = torch.where(torch.rand(m, generator=g) < 0.15, (labels + 1) % 3, labels)
        k = int(torch.randint(0, 3, (1,), generator=g))
        fxy = torch.rand(k, 2, generator=g, dtype=torch.float64) * 80
        false_alarms = torch.cat([fxy, fxy + 15], dim=1)
        preds.append({"boxes": torch.cat([boxes + shift, false_alarms]),
                      "scores": torch.rand(m + k, generator=g, dtype=torch.float64),
                      "labels": torch.cat([p_labels, torch.randint(0, 3, (k,), generator=g)])})
        targets.append({"boxes": boxes, "labels": labels})
    return {"input": preds, "target": targets}


def with_weights(seed, params):
    out = sentences(seed, params)
    out["weight"] = [1.0] * len(out["input"])
    return out


def mismatched(seed, params):
    out = sentences(seed, params)
    out["target"] = out["target"][:-2]
    return out


@functools.lru_cache(maxsize=None)
def _edit(hyp, ref):
    if not hyp or not ref:
        return len(hyp) + len(ref)
    return min(_edit(hyp[1:], ref) + 1, _edit(hyp, ref[1:]) + 1, _edit(hyp[1:], ref[1:]) + (hyp[0] != ref[0]))


def sentence_errors_reference(targets, preds):
    """The SentenceErrors result on all the data, computed apart from the metric."""
    errors = sum(_edit(tuple(p.split()), tuple(t.split())) for p, t in zip(preds, targets))
    words = sum(len(t.split()) for t in targets)
    exact = sum(p == t for p, t in zip(preds, targets))
    return {"exact_match": exact / len(targets), "word_error_rate": errors / words,
            "counts": {"sentences": len(targets), "exact": exact, "word_errors": errors, "words": words}}


def _iou(a, b):
    x1, y1 = np.maximum(a[0], b[:, 0]), np.maximum(a[1], b[:, 1])
    x2, y2 = np.minimum(a[2], b[:, 2]), np.minimum(a[3], b[:, 3])
    inter = np.clip(x2 - x1, 0, None) * np.clip(y2 - y1, 0, None)
    area = lambda r: (r[..., 2] - r[..., 0]) * (r[..., 3] - r[..., 1])  # noqa: E731
    return inter / (area(a) + area(b) - inter)


def detection_precision_reference(targets, preds, num_classes=3, iou_threshold=0.5):
    """The DetectionPrecision result on all the data, with NumPy, apart from the metric."""
    tp = [0] * num_classes
    fp = [0] * num_classes
    for p, t in zip(preds, targets):
        boxes, scores, labels = p["boxes"].numpy(), p["scores"].numpy(), p["labels"].numpy()
        t_boxes, t_labels = t["boxes"].numpy(), t["labels"].numpy()
        free = np.ones(len(t_boxes), dtype=bool)
        for i in np.argsort(-scores, kind="stable"):
            iou = _iou(boxes[i], t_boxes) if len(t_boxes) else np.zeros(0)
            ok = free & (t_labels == labels[i]) & (iou >= iou_threshold)
            if ok.any():
                free[np.flatnonzero(ok)[np.argmax(iou[ok])]] = False
                tp[labels[i]] += 1
            else:
                fp[labels[i]] += 1
    per_class = [{"tp": tp[c], "fp": fp[c], "precision": tp[c] / (tp[c] + fp[c]) if tp[c] + fp[c] else math.nan}
                 for c in range(num_classes)]
    total = sum(tp) + sum(fp)
    return {"precision": sum(tp) / total if total else math.nan, "total_images": len(targets), "per_class": per_class}
