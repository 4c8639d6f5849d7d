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


# --- main ----------------------------------------------------------------------------------

def all_cases():
    DATASETS.clear()
    rng = np.random.default_rng(20240611)
    cases = []
    cases += accuracy_cases(rng)
    cases += precision_recall_cases(rng)
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
