#!/usr/bin/python3
"""Reference values for the distmetrics reference metrics, computed independently with
scikit-learn and numpy (Debian's python3-sklearn / python3-numpy; run with /usr/bin/python3).

Every case holds its inputs (so the C++ tests read exactly the same numbers), the metric's
registry name and parameters, and the expected value (or the error compute() must raise).

    /usr/bin/python3 tools/reference/generate_reference.py            # rewrite the committed JSON
    /usr/bin/python3 tools/reference/generate_reference.py --check    # exit 1 if it is out of date

Format (metrics/tests/data/reference_values.json):
    {"generator": ..., "versions": {...}, "cases": [
       {"id": "Accuracy/binary/scores", "metric": "Accuracy", "params": {...},
        "data": "accuracy/binary/scores",   # a key of "datasets"
        "expected": V | "error": "NotComputableError",
        "rtol": r, "atol": a}, ...],
     "datasets": {"accuracy/binary/scores": [{"input": T, "target": T, "weight": T}, ...], ...}}
                                            # batch fields are absent when unused
    T = {"dtype": "float64"|"float32"|"int64"|"bool", "shape": [...], "values": [...flat...]}
    V = a number, or T (float64/int64), as distmetrics::metrics::Value::to_json writes it.
"""

import argparse
import json
import math
import os
import sys

import numpy as np
import sklearn
from sklearn import metrics as skm

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "..", "metrics", "tests", "data", "reference_values.json"))

RTOL = 1e-9
ATOL = 1e-12


# --- encoding ------------------------------------------------------------------------------

def number(v):
    v = float(v)
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return v


def tensor(array, dtype):
    a = np.asarray(array)
    if dtype == "float32":
        values = [number(x) for x in a.astype(np.float32).reshape(-1)]
    elif dtype == "float64":
        values = [number(x) for x in a.astype(np.float64).reshape(-1)]
    elif dtype in ("int64", "int32", "uint8"):
        values = [int(x) for x in a.reshape(-1)]
    elif dtype == "bool":
        values = [bool(x) for x in a.reshape(-1)]
    else:
        raise ValueError(dtype)
    return {"dtype": dtype, "shape": list(a.shape), "values": values}


def value(v):
    """A Value's JSON form: a scalar number, or a float64/int64 tensor."""
    a = np.asarray(v)
    if a.ndim == 0:
        return number(a)
    if np.issubdtype(a.dtype, np.integer):
        return tensor(a, "int64")
    return tensor(a, "float64")


def batches_of(sizes, **fields):
    """Splits arrays (sample axis 0) into consecutive batches of the given sizes.
    fields: name -> (array, dtype)."""
    out = []
    start = 0
    for n in sizes:
        batch = {}
        for name, (array, dtype) in fields.items():
            batch[name] = tensor(np.asarray(array)[start:start + n], dtype)
        out.append(batch)
        start += n
    total = len(next(iter(fields.values()))[0])
    assert start == total, (start, total)
    return out


DATASETS = {}  # name -> batches; cases name their data, so many cases share one copy


def data(name, batches):
    """Registers a dataset (a list of batches) under a unique name and returns the name."""
    if name in DATASETS:
        assert DATASETS[name] == batches, f"dataset {name} registered twice with different data"
    DATASETS[name] = batches
    return name


def case(case_id, metric, params, data_name, expected=None, error=None, rtol=RTOL, atol=ATOL):
    assert data_name in DATASETS, data_name
    c = {"id": case_id, "metric": metric, "params": params, "data": data_name}
    if error is not None:
        c["error"] = error
    else:
        c["expected"] = value(expected)
    c["rtol"] = rtol
    c["atol"] = atol
    return c


SIZES = [7, 0, 12, 9, 5]  # uneven batches, one of them empty


# --- classification ------------------------------------------------------------------------

def classification_data(rng, task, n, classes, never_seen=False):
    """(scores, predicted labels, true labels) for a task; `never_seen` leaves the last class out
    of both the targets and the predictions."""
    if task == "binary":
        scores = rng.random(n)
        target = (rng.random(n) < 0.4).astype(np.int64)
        return scores, (scores >= 0.5).astype(np.int64), target
    if task == "multiclass":
        used = classes - 1 if never_seen else classes
        scores = rng.normal(size=(n, classes))
        if never_seen:
            scores[:, classes - 1] = -10.0
        target = rng.integers(0, used, size=n)
        return scores, scores.argmax(axis=1), target
    scores = rng.random((n, classes))
    target = (rng.random((n, classes)) < 0.45).astype(np.int64)
    if never_seen:
        scores[:, classes - 1] = 0.0
        target[:, classes - 1] = 0
    return scores, (scores >= 0.5).astype(np.int64), target


def accuracy_cases(rng):
    cases = []
    n = sum(SIZES)
    # binary: scores (float64 and float32), labels, another threshold, samples shaped [N, 3, 2]
    scores, pred, target = classification_data(rng, "binary", n, 2)
    d_scores = data("binary/scores", batches_of(SIZES, input=(scores, "float64"), target=(target, "int64")))
    d_scores32 = data("binary/scores-float32", batches_of(SIZES, input=(scores, "float32"), target=(target, "int64")))
    d_labels = data("binary/labels", batches_of(SIZES, input=(pred, "int64"), target=(target, "int64")))
    d_bool = data("binary/scores-bool-target", batches_of(SIZES, input=(scores, "float64"), target=(target, "bool")))
    p = {"task": "binary"}
    cases.append(case("Accuracy/binary/scores", "Accuracy", p, d_scores, skm.accuracy_score(target, pred)))
    cases.append(case("Accuracy/binary/scores-float32", "Accuracy", p, d_scores32,
                      skm.accuracy_score(target, scores.astype(np.float32) >= np.float32(0.5))))
    cases.append(case("Accuracy/binary/labels", "Accuracy", p, d_labels, skm.accuracy_score(target, pred)))
    cases.append(case("Accuracy/binary/threshold-0.3", "Accuracy", {"task": "binary", "threshold": 0.3}, d_bool,
                      skm.accuracy_score(target, scores >= 0.3)))
    img_scores = rng.random((n, 3, 2))
    img_target = (rng.random((n, 3, 2)) < 0.5).astype(np.int64)
    cases.append(case("Accuracy/binary/elements", "Accuracy", p,
                      data("binary/elements", batches_of(SIZES, input=(img_scores, "float64"),
                                                         target=(img_target, "int64"))),
                      skm.accuracy_score(img_target.reshape(-1), img_scores.reshape(-1) >= 0.5)))
    # multiclass: scores, labels, top-k, segmentation-shaped
    c = 5
    scores, pred, target = classification_data(rng, "multiclass", n, c)
    d_scores = data("multiclass/scores", batches_of(SIZES, input=(scores, "float64"), target=(target, "int64")))
    d_labels = data("multiclass/labels", batches_of(SIZES, input=(pred, "int64"), target=(target, "int32")))
    p = {"task": "multiclass", "num_classes": c}
    cases.append(case("Accuracy/multiclass/scores", "Accuracy", p, d_scores, skm.accuracy_score(target, pred)))
    cases.append(case("Accuracy/multiclass/labels", "Accuracy", p, d_labels, skm.accuracy_score(target, pred)))
    for k in (2, 3):
        cases.append(case(f"Accuracy/multiclass/top_k-{k}", "Accuracy", dict(p, top_k=k), d_scores,
                          skm.top_k_accuracy_score(target, scores, k=k, labels=list(range(c)))))
    for k in (1, 2, 4):
        cases.append(case(f"TopKCategoricalAccuracy/k-{k}", "TopKCategoricalAccuracy", {"k": k, "num_classes": c},
                          d_scores, skm.top_k_accuracy_score(target, scores, k=k, labels=list(range(c)))))
    seg_scores = rng.normal(size=(n, c, 2, 3))
    seg_target = rng.integers(0, c, size=(n, 2, 3))
    cases.append(case("Accuracy/multiclass/segmentation", "Accuracy", p,
                      data("multiclass/segmentation", batches_of(SIZES, input=(seg_scores, "float32"),
                                                                 target=(seg_target, "int64"))),
                      skm.accuracy_score(seg_target.reshape(-1),
                                         seg_scores.astype(np.float32).argmax(axis=1).reshape(-1))))
    # multilabel: subset accuracy. Few random rows get every label right: make a third exactly right.
    L = 4
    scores, pred, target = classification_data(rng, "multilabel", n, L)
    pred[::3] = target[::3]
    scores[::3] = np.where(target[::3] == 1, 0.75, 0.25)
    p = {"task": "multilabel", "num_classes": L}
    cases.append(case("Accuracy/multilabel/scores", "Accuracy", p,
                      data("multilabel/scores", batches_of(SIZES, input=(scores, "float64"), target=(target, "int64"))),
                      skm.accuracy_score(target, pred)))
    cases.append(case("Accuracy/multilabel/labels", "Accuracy", p,
                      data("multilabel/labels", batches_of(SIZES, input=(pred, "uint8"), target=(target, "int64"))),
                      skm.accuracy_score(target, pred)))
    return cases


def prf_reference(kind, target, pred, task, classes, average, zero_division, beta):
    kwargs = {"zero_division": zero_division}
    if task == "binary":
        kwargs["average"] = "binary"
    else:
        kwargs["average"] = None if average == "none" else average
        kwargs["labels"] = list(range(classes))
    if kind == "Precision":
        return skm.precision_score(target, pred, **kwargs)
    if kind == "Recall":
        return skm.recall_score(target, pred, **kwargs)
    return skm.fbeta_score(target, pred, beta=beta, **kwargs)


PRF_KINDS = [("Precision", {}, None), ("Recall", {}, None), ("Fbeta", {"beta": 0.5}, 0.5),
             ("Fbeta", {"beta": 2.0}, 2.0), ("F1", {}, 1.0)]


def precision_recall_cases(rng):
    """Every task x average x metric, with and without a class that is never seen."""
    cases = []
    n = sum(SIZES)
    for task, classes in (("binary", 2), ("multiclass", 5), ("multilabel", 4)):
        for never_seen in (False, True):
            if task == "binary" and never_seen:
                continue
            scores, pred, target = classification_data(rng, task, n, classes, never_seen)
            label = "never-seen" if never_seen else "scores"
            d_scores = data(f"prf/{task}/{label}", batches_of(SIZES, input=(scores, "float64"), target=(target, "int64")))
            d_labels = data(f"prf/{task}/{label}/labels", batches_of(SIZES, input=(pred, "int64"), target=(target, "int64")))
            for kind, extra, beta in PRF_KINDS:
                name = kind + (f"-beta-{beta}" if kind == "Fbeta" else "")
                averages = ["macro", "none"] if task == "binary" else ["none", "micro", "macro", "weighted"]
                for average in averages:
                    for zd in ((0.0, 1.0) if never_seen else (0.0,)):
                        params = dict(extra, task=task, average=average, zero_division=zd)
                        if task != "binary":
                            params["num_classes"] = classes
                        expected = prf_reference(kind, target, pred, task, classes, average, int(zd), beta)
                        cases.append(case(f"{name}/{task}/{label}/{average}/zero_division-{int(zd)}", kind, params,
                                          d_scores, expected))
            params = {"task": task, "average": "macro"}
            if task != "binary":
                params["num_classes"] = classes
            cases.append(case(f"Precision/{task}/{label}/labels", "Precision", params, d_labels,
                              prf_reference("Precision", target, pred, task, classes, "macro", 0, None)))
    # Multilabel with no positive target anywhere: scikit-learn's weighted-average convention.
    scores = rng.random((n, 3))
    target = np.zeros((n, 3), dtype=np.int64)
    pred = (scores >= 0.5).astype(np.int64)
    d = data("prf/multilabel/no-positives", batches_of(SIZES, input=(scores, "float64"), target=(target, "int64")))
    for kind, extra, beta in PRF_KINDS[:3]:
        for zd in (0.0, 1.0):
            params = dict(extra, task="multilabel", num_classes=3, average="weighted", zero_division=zd)
            cases.append(case(f"{kind}/multilabel/no-positives/weighted/zero_division-{int(zd)}", kind, params, d,
                              prf_reference(kind, target, pred, "multilabel", 3, "weighted", int(zd), beta)))
    return cases


# --- confusion matrix family ---------------------------------------------------------------

def confusion_cases(rng):
    cases = []
    n = sum(SIZES)
    c = 4
    labels = list(range(c))
    for label in ("scores", "never-seen"):
        scores, pred, target = classification_data(rng, "multiclass", n, c, never_seen=(label == "never-seen"))
        d = data(f"confusion/{label}", batches_of(SIZES, input=(scores, "float64"), target=(target, "int64")))
        for normalize in ("none", "true", "pred", "all"):
            cm = skm.confusion_matrix(target, pred, labels=labels, normalize=None if normalize == "none" else normalize)
            cases.append(case(f"ConfusionMatrix/{label}/normalize-{normalize}", "ConfusionMatrix",
                              {"num_classes": c, "normalize": normalize}, d, cm))
        for zd in (0.0, 1.0):
            for average in ("none", "macro"):
                avg = None if average == "none" else "macro"
                cases.append(case(f"IoU/{label}/{average}/zero_division-{int(zd)}", "IoU",
                                  {"num_classes": c, "average": average, "zero_division": zd}, d,
                                  skm.jaccard_score(target, pred, labels=labels, average=avg, zero_division=int(zd))))
                cases.append(case(f"Dice/{label}/{average}/zero_division-{int(zd)}", "Dice",
                                  {"num_classes": c, "average": average, "zero_division": zd}, d,
                                  skm.f1_score(target, pred, labels=labels, average=avg, zero_division=int(zd))))
            cases.append(case(f"MeanIoU/{label}/zero_division-{int(zd)}", "MeanIoU", {"num_classes": c, "zero_division": zd}, d,
                              skm.jaccard_score(target, pred, labels=labels, average="macro", zero_division=int(zd))))
        for weights in ("none", "linear", "quadratic"):
            cases.append(case(f"CohenKappa/{label}/weights-{weights}", "CohenKappa", {"num_classes": c, "weights": weights}, d,
                              skm.cohen_kappa_score(target, pred, labels=labels,
                                                    weights=None if weights == "none" else weights)))
    # Segmentation-shaped input, label input; predictions that agree with the target more often.
    seg_scores = rng.normal(size=(n, c, 3, 2))
    seg_target = seg_scores.argmax(axis=1)
    flip = rng.random(seg_target.shape) < 0.3
    seg_target = np.where(flip, rng.integers(0, c, size=seg_target.shape), seg_target)
    seg_pred = seg_scores.argmax(axis=1)
    d_seg = data("confusion/segmentation", batches_of(SIZES, input=(seg_scores, "float64"), target=(seg_target, "int64")))
    d_lab = data("confusion/segmentation-labels", batches_of(SIZES, input=(seg_pred, "int64"), target=(seg_target, "int64")))
    t, p = seg_target.reshape(-1), seg_pred.reshape(-1)
    cases.append(case("ConfusionMatrix/segmentation", "ConfusionMatrix", {"num_classes": c}, d_seg,
                      skm.confusion_matrix(t, p, labels=labels)))
    cases.append(case("MeanIoU/segmentation", "MeanIoU", {"num_classes": c}, d_seg,
                      skm.jaccard_score(t, p, labels=labels, average="macro")))
    cases.append(case("IoU/segmentation-labels", "IoU", {"num_classes": c}, d_lab,
                      skm.jaccard_score(t, p, labels=labels, average=None)))
    cases.append(case("Dice/segmentation-labels", "Dice", {"num_classes": c, "average": "none"}, d_lab,
                      skm.f1_score(t, p, labels=labels, average=None)))
    cases.append(case("CohenKappa/segmentation-labels/quadratic", "CohenKappa", {"num_classes": c, "weights": "quadratic"},
                      d_lab, skm.cohen_kappa_score(t, p, labels=labels, weights="quadratic")))
    # Binary as two classes, with labels.
    target = (rng.random(n) < 0.5).astype(np.int64)
    pred = np.where(rng.random(n) < 0.75, target, 1 - target)
    d_bin = data("confusion/binary-labels", batches_of(SIZES, input=(pred, "int64"), target=(target, "int64")))
    cases.append(case("ConfusionMatrix/binary-labels", "ConfusionMatrix", {"num_classes": 2}, d_bin,
                      skm.confusion_matrix(target, pred, labels=[0, 1])))
    cases.append(case("CohenKappa/binary-labels", "CohenKappa", {"num_classes": 2}, d_bin,
                      skm.cohen_kappa_score(target, pred, labels=[0, 1])))
    return cases


# --- regression ----------------------------------------------------------------------------

def regression_cases(rng):
    cases = []
    n = sum(SIZES)
    # [N, 3] (every element a sample) and [N], float64 and float32.
    y = rng.normal(loc=2.0, scale=1.5, size=(n, 3))
    x = y + rng.normal(scale=0.7, size=(n, 3))
    d2 = data("regression/n-by-3", batches_of(SIZES, input=(x, "float64"), target=(y, "float64")))
    x32, y32 = x.astype(np.float32).astype(np.float64), y.astype(np.float32).astype(np.float64)
    d32 = data("regression/n-by-3-float32", batches_of(SIZES, input=(x, "float32"), target=(y, "float32")))
    for d, xs, ys, tag in ((d2, x, y, "float64"), (d32, x32, y32, "float32")):
        cases.append(case(f"MeanAbsoluteError/{tag}", "MeanAbsoluteError", {}, d, skm.mean_absolute_error(ys, xs)))
        cases.append(case(f"MeanSquaredError/{tag}", "MeanSquaredError", {}, d, skm.mean_squared_error(ys, xs)))
        cases.append(case(f"RootMeanSquaredError/{tag}", "RootMeanSquaredError", {}, d,
                          math.sqrt(skm.mean_squared_error(ys, xs))))
        cases.append(case(f"MaximumAbsoluteError/{tag}", "MaximumAbsoluteError", {}, d, np.max(np.abs(xs - ys))))
        cases.append(case(f"MeanPairwiseDistance/{tag}", "MeanPairwiseDistance", {}, d,
                          np.mean(np.linalg.norm(xs - ys + 1e-6, ord=2, axis=1))))
    # Float32 sums: close to the float64 value, not equal.
    cases.append(case("MeanSquaredError/sum_dtype-float32", "MeanSquaredError", {"sum_dtype": "float32"}, d2,
                      skm.mean_squared_error(y, x), rtol=1e-5, atol=1e-6))
    for p in (1.0, 3.0, 0.5):
        cases.append(case(f"MeanPairwiseDistance/p-{p}", "MeanPairwiseDistance", {"p": p, "eps": 0.0}, d2,
                          np.mean(np.sum(np.abs(x - y) ** p, axis=1) ** (1.0 / p))))
    # 1-D: R2 and Pearson (and the others on the same data).
    y1 = rng.normal(loc=3.0, size=n)
    x1 = 0.8 * y1 + rng.normal(scale=0.5, size=n)
    d1 = data("regression/n", batches_of(SIZES, input=(x1, "float64"), target=(y1, "float64")))
    cases.append(case("R2Score/random", "R2Score", {}, d1, skm.r2_score(y1, x1)))
    cases.append(case("PearsonCorrelation/random", "PearsonCorrelation", {}, d1, np.corrcoef(x1, y1)[0, 1]))
    cases.append(case("MeanAbsoluteError/1d", "MeanAbsoluteError", {}, d1, skm.mean_absolute_error(y1, x1)))
    cases.append(case("R2Score/sum_dtype-float32", "R2Score", {"sum_dtype": "float32"}, d1, skm.r2_score(y1, x1), rtol=1e-4, atol=1e-5))
    # A constant target: R2 is 1 for exact predictions, else 0; Pearson is NaN.
    const = np.full(n, 0.1)
    d_exact = data("regression/constant-exact", batches_of(SIZES, input=(const, "float64"), target=(const, "float64")))
    d_off = data("regression/constant-target", batches_of(SIZES, input=(x1, "float64"), target=(const, "float64")))
    cases.append(case("R2Score/constant-target-exact", "R2Score", {}, d_exact, skm.r2_score(const, const)))
    cases.append(case("R2Score/constant-target", "R2Score", {}, d_off, skm.r2_score(const, x1)))
    with np.errstate(divide="ignore", invalid="ignore"):
        pearson_const = np.corrcoef(x1, const)[0, 1]
    cases.append(case("PearsonCorrelation/constant-target", "PearsonCorrelation", {}, d_off, pearson_const))
    # One sample: R2 and Pearson need two.
    d_one = data("regression/one-sample", batches_of([0, 1], input=(x1[:1], "float64"), target=(y1[:1], "float64")))
    cases.append(case("R2Score/one-sample", "R2Score", {}, d_one, error="NotComputableError"))
    cases.append(case("PearsonCorrelation/one-sample", "PearsonCorrelation", {}, d_one, error="NotComputableError"))
    cases.append(case("MeanSquaredError/one-sample", "MeanSquaredError", {}, d_one, (x1[0] - y1[0]) ** 2))
    # NaN propagates.
    x_nan = x.copy()
    x_nan[9, 1] = np.nan
    d_nan = data("regression/nan", batches_of(SIZES, input=(x_nan, "float64"), target=(y, "float64")))
    cases.append(case("MeanAbsoluteError/nan", "MeanAbsoluteError", {}, d_nan, np.mean(np.abs(x_nan - y))))
    cases.append(case("MaximumAbsoluteError/nan", "MaximumAbsoluteError", {}, d_nan, np.max(np.abs(x_nan - y))))
    x1_nan = x1.copy()
    x1_nan[3] = np.nan
    d1_nan = data("regression/n-nan", batches_of(SIZES, input=(x1_nan, "float64"), target=(y1, "float64")))
    cases.append(case("R2Score/nan", "R2Score", {}, d1_nan, float("nan")))
    cases.append(case("PearsonCorrelation/nan", "PearsonCorrelation", {}, d1_nan, np.corrcoef(x1_nan, y1)[0, 1]))
    # No samples.
    d_none = data("regression/empty", batches_of([0, 0], input=(np.zeros((0, 3)), "float64"), target=(np.zeros((0, 3)), "float64")))
    for name in ("MeanAbsoluteError", "MeanSquaredError", "RootMeanSquaredError", "MaximumAbsoluteError",
                 "MeanPairwiseDistance"):
        cases.append(case(f"{name}/no-samples", name, {}, d_none, error="NotComputableError"))
    return cases


# --- aggregation ---------------------------------------------------------------------------

def softmax(z):
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def aggregation_cases(rng):
    cases = []
    n = sum(SIZES)
    v = rng.normal(loc=1.0, scale=2.0, size=n)
    w = rng.random(n) * 2.0
    d = data("aggregation/values", batches_of(SIZES, input=(v, "float64")))
    dw = data("aggregation/values-weighted", batches_of(SIZES, input=(v, "float64"), weight=(w, "float64")))
    d_int = data("aggregation/int-values", batches_of(SIZES, input=(np.round(v * 10).astype(np.int64), "int64")))
    cases.append(case("Average/plain", "Average", {}, d, np.mean(v)))
    cases.append(case("Average/weighted", "Average", {}, dw, np.average(v, weights=w)))
    cases.append(case("Average/int64", "Average", {}, d_int, np.mean(np.round(v * 10))))
    cases.append(case("Average/sum_dtype-float32", "Average", {"sum_dtype": "float32"}, d, np.mean(v), rtol=1e-5, atol=1e-6))
    cases.append(case("Loss/per_sample", "Loss", {"loss": "per_sample"}, dw, np.average(v, weights=w)))
    # Computed losses, with an independent formula (scikit-learn's log_loss for the entropies).
    c = 4
    logits = rng.normal(scale=1.5, size=(n, c))
    labels = rng.integers(0, c, size=n)
    d_ce = data("loss/logits", batches_of(SIZES, input=(logits, "float64"), target=(labels, "int64")))
    d_ce_w = data("loss/logits-weighted", batches_of(SIZES, input=(logits, "float64"), target=(labels, "int64"),
                                                     weight=(w, "float64")))
    probs = softmax(logits)
    cases.append(case("Loss/cross_entropy", "Loss", {"loss": "cross_entropy"}, d_ce,
                      skm.log_loss(labels, probs, labels=list(range(c)))))
    cases.append(case("Loss/cross_entropy-weighted", "Loss", {"loss": "cross_entropy"}, d_ce_w,
                      skm.log_loss(labels, probs, labels=list(range(c)), sample_weight=w)))
    log_probs = np.log(probs)
    d_nll = data("loss/log-probabilities", batches_of(SIZES, input=(log_probs, "float64"), target=(labels, "int64")))
    cases.append(case("Loss/nll", "Loss", {"loss": "nll"}, d_nll, -np.mean(log_probs[np.arange(n), labels])))
    p = rng.uniform(0.02, 0.98, size=n)
    t = (rng.random(n) < 0.5).astype(np.int64)
    d_bce = data("loss/probabilities", batches_of(SIZES, input=(p, "float64"), target=(t, "int64")))
    cases.append(case("Loss/binary_cross_entropy", "Loss", {"loss": "binary_cross_entropy"}, d_bce,
                      skm.log_loss(t, p, labels=[0, 1])))
    z = rng.normal(scale=2.0, size=n)
    soft = rng.random(n)  # soft targets in [0, 1]
    d_bcel = data("loss/logits-soft-targets", batches_of(SIZES, input=(z, "float64"), target=(soft, "float64")))
    sig = 1.0 / (1.0 + np.exp(-z))
    cases.append(case("Loss/binary_cross_entropy_with_logits", "Loss", {"loss": "binary_cross_entropy_with_logits"},
                      d_bcel, np.mean(-(soft * np.log(sig) + (1 - soft) * np.log(1 - sig)))))
    xs = rng.normal(size=(n, 2, 3))
    ys = rng.normal(size=(n, 2, 3))
    d_img = data("loss/n-by-2-by-3", batches_of(SIZES, input=(xs, "float64"), target=(ys, "float64")))
    cases.append(case("Loss/mse", "Loss", {"loss": "mse"}, d_img, np.mean(((xs - ys) ** 2).reshape(n, -1).mean(axis=1))))
    cases.append(case("Loss/l1", "Loss", {"loss": "l1"}, d_img, np.mean(np.abs(xs - ys).reshape(n, -1).mean(axis=1))))
    # Geometric average.
    pos = rng.uniform(0.1, 5.0, size=n)
    d_pos = data("aggregation/positive", batches_of(SIZES, input=(pos, "float64")))
    cases.append(case("GeometricAverage/positive", "GeometricAverage", {}, d_pos, np.exp(np.mean(np.log(pos)))))
    with_zero = pos.copy()
    with_zero[4] = 0.0
    d_zero = data("aggregation/with-zero", batches_of(SIZES, input=(with_zero, "float64")))
    cases.append(case("GeometricAverage/with-zero", "GeometricAverage", {}, d_zero, 0.0))
    # NaN propagates; no samples is not computable.
    v_nan = v.copy()
    v_nan[11] = np.nan
    d_nan = data("aggregation/nan", batches_of(SIZES, input=(v_nan, "float64")))
    cases.append(case("Average/nan", "Average", {}, d_nan, np.mean(v_nan)))
    d_empty = data("aggregation/empty", batches_of([0], input=(np.zeros(0), "float64")))
    for name, params in (("Average", {}), ("GeometricAverage", {}), ("Loss", {"loss": "per_sample"}),
                         ("RunningAverage", {})):
        cases.append(case(f"{name}/no-samples", name, params, d_empty, error="NotComputableError"))
    # RunningAverage: EMA over steps of the step means; the empty step is skipped.
    for alpha in (0.98, 0.5, 1.0):
        ema = None
        start = 0
        for size in SIZES:
            if size:
                m = np.mean(v[start:start + size])
                ema = m if ema is None else alpha * ema + (1 - alpha) * m
            start += size
        cases.append(case(f"RunningAverage/alpha-{alpha}", "RunningAverage", {"alpha": alpha}, d, ema))
    return cases


# --- epoch ---------------------------------------------------------------------------------

def epoch_cases(rng):
    cases = []
    n = sum(SIZES)
    scores = rng.random(n)
    target = (rng.random(n) < 0.4).astype(np.int64)
    tied = np.round(scores * 4) / 4  # five distinct values: many ties across both classes
    d = data("epoch/scores", batches_of(SIZES, input=(scores, "float64"), target=(target, "int64")))
    d_tied = data("epoch/tied-scores", batches_of(SIZES, input=(tied, "float32"), target=(target, "bool")))
    for name, fn in (("RocAuc", skm.roc_auc_score), ("AveragePrecision", skm.average_precision_score)):
        cases.append(case(f"{name}/random", name, {}, d, fn(target, scores)))
        cases.append(case(f"{name}/ties", name, {}, d_tied, fn(target, tied)))
    perfect = data("epoch/perfect", batches_of(SIZES, input=(target + 0.1 * scores, "float64"), target=(target, "int64")))
    cases.append(case("RocAuc/perfect", "RocAuc", {}, perfect, skm.roc_auc_score(target, target + 0.1 * scores)))
    cases.append(case("AveragePrecision/perfect", "AveragePrecision", {}, perfect,
                      skm.average_precision_score(target, target + 0.1 * scores)))
    ones = np.ones(n, dtype=np.int64)
    d_one_class = data("epoch/one-class", batches_of(SIZES, input=(scores, "float64"), target=(ones, "int64")))
    cases.append(case("RocAuc/one-class", "RocAuc", {}, d_one_class, error="NotComputableError"))
    cases.append(case("AveragePrecision/all-positive", "AveragePrecision", {}, d_one_class,
                      skm.average_precision_score(ones, scores)))
    d_neg = data("epoch/no-positive", batches_of(SIZES, input=(scores, "float64"), target=(0 * ones, "int64")))
    cases.append(case("AveragePrecision/no-positive", "AveragePrecision", {}, d_neg, error="NotComputableError"))
    d_empty = data("epoch/empty", batches_of([0], input=(np.zeros(0), "float64"), target=(np.zeros(0), "int64")))
    cases.append(case("RocAuc/no-samples", "RocAuc", {}, d_empty, error="NotComputableError"))
    return cases


# --- image ---------------------------------------------------------------------------------

def psnr(x, y, data_range):
    n = x.shape[0]
    mse = ((x - y) ** 2).reshape(n, -1).mean(axis=1)
    with np.errstate(divide="ignore"):
        return np.mean(10 * np.log10(data_range ** 2 / mse))


def image_cases(rng):
    cases = []
    n = sum(SIZES)
    y = rng.random((n, 3, 4, 4))
    x = np.clip(y + rng.normal(scale=0.05, size=y.shape), 0, 1)
    d = data("image/unit", batches_of(SIZES, input=(x, "float64"), target=(y, "float64")))
    d32 = data("image/unit-float32", batches_of(SIZES, input=(x, "float32"), target=(y, "float32")))
    cases.append(case("PSNR/unit", "PSNR", {"data_range": 1.0}, d, psnr(x, y, 1.0)))
    cases.append(case("PSNR/unit-float32", "PSNR", {"data_range": 1.0}, d32,
                      psnr(x.astype(np.float32).astype(np.float64), y.astype(np.float32).astype(np.float64), 1.0)))
    y8 = rng.integers(0, 256, size=(n, 1, 5, 5)).astype(np.float64)
    x8 = np.clip(y8 + rng.integers(-6, 7, size=y8.shape), 0, 255)
    d8 = data("image/8-bit", batches_of(SIZES, input=(x8, "float64"), target=(y8, "float64")))
    cases.append(case("PSNR/8-bit", "PSNR", {"data_range": 255.0}, d8, psnr(x8, y8, 255.0)))
    x_same = x.copy()
    x_same[5] = y[5]  # one image exactly right: PSNR inf, and so the mean
    d_same = data("image/one-exact", batches_of(SIZES, input=(x_same, "float64"), target=(y, "float64")))
    cases.append(case("PSNR/one-exact-image", "PSNR", {"data_range": 1.0}, d_same, psnr(x_same, y, 1.0)))
    return cases


# --- composite -----------------------------------------------------------------------------

def composite_cases(rng):
    cases = []
    n = sum(SIZES)
    scores, pred, target = classification_data(rng, "multiclass", n, 4)
    d = data("composite/multiclass", batches_of(SIZES, input=(scores, "float64"), target=(target, "int64")))
    mc = {"task": "multiclass", "num_classes": 4}
    for average in ("micro", "macro"):
        prec = skm.precision_score(target, pred, labels=list(range(4)), average=average)
        rec = skm.recall_score(target, pred, labels=list(range(4)), average=average)
        operands = {"p": {"name": "Precision", "params": dict(mc, average=average)},
                    "r": {"name": "Recall", "params": dict(mc, average=average)}}
        cases.append(case(f"Composite/f1-from-{average}-precision-recall", "Composite",
                          {"expression": "2 * p * r / (p + r)", "operands": operands}, d, 2 * prec * rec / (prec + rec)))
    prec = skm.precision_score(target, pred, labels=list(range(4)), average=None)
    operands = {"p": {"name": "Precision", "params": dict(mc, average="none")},
                "a": {"name": "Accuracy", "params": mc}}
    cases.append(case("Composite/tensor-and-scalar", "Composite",
                      {"expression": "-(p - a) ^ 2 / 2 + 1", "operands": operands}, d,
                      -((prec - skm.accuracy_score(target, pred)) ** 2) / 2 + 1))
    y = rng.normal(size=n)
    x = y + rng.normal(scale=0.3, size=n)
    dr = data("composite/regression", batches_of(SIZES, input=(x, "float64"), target=(y, "float64")))
    cases.append(case("Composite/rmse-from-mse", "Composite",
                      {"expression": "sqrt(m)", "operands": {"m": {"name": "MeanSquaredError"}}}, dr,
                      math.sqrt(skm.mean_squared_error(y, x))))
    cases.append(case("Composite/functions", "Composite",
                      {"expression": "exp(log(abs(m - 2.5))) * 1e1",
                       "operands": {"m": {"name": "MeanAbsoluteError", "params": {}}}}, dr,
                      abs(skm.mean_absolute_error(y, x) - 2.5) * 10, rtol=1e-12))
    return cases


# --- main ----------------------------------------------------------------------------------

def all_cases():
    DATASETS.clear()
    rng = np.random.default_rng(20240611)
    cases = []
    cases += accuracy_cases(rng)
    cases += precision_recall_cases(rng)
    cases += confusion_cases(rng)
    cases += regression_cases(rng)
    cases += aggregation_cases(rng)
    cases += epoch_cases(rng)
    cases += image_cases(rng)
    cases += composite_cases(rng)
    ids = [c["id"] for c in cases]
    dupes = {i for i in ids if ids.count(i) > 1}
    assert not dupes, dupes
    return cases


def document():
    return {
        "generator": "tools/reference/generate_reference.py",
        "versions": {"sklearn": sklearn.__version__, "numpy": np.__version__},
        "cases": all_cases(),
        "datasets": dict(DATASETS),
    }


def dumps(doc):
    """One case per line: readable diffs, stable text."""
    lines = ["{"]
    lines.append(f' "generator": {json.dumps(doc["generator"])},')
    lines.append(f' "versions": {json.dumps(doc["versions"], sort_keys=True)},')
    lines.append(' "cases": [')
    lines.append(",\n".join("  " + json.dumps(c, sort_keys=True) for c in doc["cases"]))
    lines.append(" ],")
    lines.append(' "datasets": {')
    lines.append(",\n".join(f"  {json.dumps(k)}: {json.dumps(v, sort_keys=True)}" for k, v in doc["datasets"].items()))
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def close(a, b, path="$"):
    """Structural equality with a tolerance on numbers; returns the first difference or None."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{path}: keys {sorted(a.keys())} != {sorted(b.keys())}"
        for k in a:
            d = close(a[k], b[k], f"{path}.{k}")
            if d:
                return d
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return f"{path}: length {len(a)} != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = close(x, y, f"{path}[{i}]")
            if d:
                return d
        return None
    if isinstance(a, float) and isinstance(b, (int, float)) and not isinstance(b, bool):
        return None if math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-15) else f"{path}: {a!r} != {b!r}"
    return None if a == b else f"{path}: {a!r} != {b!r}"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT, help="the JSON file (default: %(default)s)")
    parser.add_argument("--check", action="store_true",
                        help="do not write: exit 1 when the file differs from what this script produces")
    args = parser.parse_args()
    doc = document()
    if args.check:
        with open(args.out) as f:
            committed = json.load(f)
        committed.pop("versions", None)
        fresh = json.loads(dumps(doc))
        fresh.pop("versions", None)
        diff = close(committed, fresh)
        if diff:
            print(f"{args.out} is out of date ({diff}); regenerate it with:\n"
                  f"  /usr/bin/python3 tools/reference/generate_reference.py", file=sys.stderr)
            return 1
        print(f"{args.out}: up to date ({len(doc['cases'])} cases)")
        return 0
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        f.write(dumps(doc))
    print(f"wrote {len(doc['cases'])} cases to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
