#!/usr/bin/env python3
"""Golden values for scenario files, from an independent source.

Re-implements distmetrics' data generators (harness/src/data/generators/: a counter-based
splitmix64 generator, Box-Muller normals) in plain Python, regenerates a scenario's data, and
computes the metric on all of it with scikit-learn / numpy. This checks the C++ pipeline end to
end: the generator's bytes and the metric's value.

    golden_values.py print FILE...   print each file's value (to write into its [golden] table)
    golden_values.py check FILE...   exit 1 unless every file's [golden] value matches

Supported: the generators multiclass, regression and scores; the metrics Accuracy (multiclass),
MeanSquaredError and RocAuc.
"""
import math
import sys
import tomllib

import numpy as np
from sklearn.metrics import accuracy_score, mean_squared_error, roc_auc_score

MASK = (1 << 64) - 1
TARGET, NOISE, WEIGHT, OUTLIER = 1, 2, 3, 4


def splitmix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


class CounterRng:
    def __init__(self, seed, stream):
        self.key = splitmix64(seed ^ splitmix64((stream * 0x632BE59BD9B4E019 + 0x9E3779B97F4A7C15) & MASK))

    def bits(self, counter):
        return splitmix64((self.key + (counter + 1) * 0x9E3779B97F4A7C15) & MASK)

    def uniform(self, counter):
        return (float(self.bits(counter) >> 11) + 0.5) * 2.0 ** -53

    def normal(self, counter):
        u1, u2 = self.uniform(2 * counter), self.uniform(2 * counter + 1)
        return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)


def cpp_round(x):  # std::round: halves away from zero
    return math.copysign(math.floor(abs(x) + 0.5), x)


def as_dtype(values, dtype):
    return np.asarray(values, dtype=np.float64).astype(np.float32 if dtype == "float32" else np.float64)


def multiclass(data, p):
    n, c, sep = data["num_samples"], p["num_classes"], p.get("separation", 1.5)
    weights = p.get("class_weights") or [1.0] * c
    cdf, total = [], 0.0
    for w in weights:
        total += float(w)
        cdf.append(total)
    cdf = [x / total for x in cdf]
    target, noise = CounterRng(data["seed"], TARGET), CounterRng(data["seed"], NOISE)
    labels, logits = [], []
    for i in range(n):
        u = target.uniform(i)
        t = next((k for k, x in enumerate(cdf) if u < x), c - 1)
        labels.append(t)
        logits.append([noise.normal(i * c + j) + (sep if j == t else 0.0) for j in range(c)])
    if p.get("output", "logits") != "logits":
        raise SystemExit("golden_values.py: only output = logits is supported for multiclass")
    return as_dtype(logits, data.get("dtype", "float32")), np.array(labels)


def regression(data, p):
    if p.get("dims", 0) != 0:
        raise SystemExit("golden_values.py: only dims = 0 is supported for regression")
    n = data["num_samples"]
    target, noise, outlier = (CounterRng(data["seed"], s) for s in (TARGET, NOISE, OUTLIER))
    offset, scale, err, outliers = p.get("offset", 0.0), p.get("scale", 1.0), p.get("noise", 0.5), p.get("outliers", 0.0)
    y, yhat = [], []
    for i in range(n):
        factor = 10.0 if outlier.uniform(i) < outliers else 1.0
        yi = offset + scale * target.normal(i)
        y.append(yi)
        yhat.append(yi + factor * err * noise.normal(i))
    dtype = data.get("dtype", "float32")
    return as_dtype(yhat, dtype), as_dtype(y, dtype)


def scores(data, p):
    n = data["num_samples"]
    target, noise = CounterRng(data["seed"], TARGET), CounterRng(data["seed"], NOISE)
    rate, sep = p.get("positive_rate", 0.3), p.get("separation", 1.0)
    probabilities, ties = p.get("output", "scores") == "probabilities", p.get("ties", False)
    t, s = [], []
    for i in range(n):
        ti = 1 if target.uniform(i) < rate else 0
        si = sep * ti + noise.normal(i)
        if probabilities:
            si = 1.0 / (1.0 + math.exp(-si))
        if ties:
            grid = 10.0 if probabilities else 2.0
            si = cpp_round(si * grid) / grid
        t.append(ti)
        s.append(si)
    return as_dtype(s, data.get("dtype", "float32")), np.array(t)


GENERATORS = {"multiclass": multiclass, "regression": regression, "scores": scores}


def golden(path):
    with open(path, "rb") as f:
        scenario = tomllib.load(f)
    data, metric = scenario["data"], scenario["metric"]
    x, y = GENERATORS[data["generator"]](data, data.get("params", {}))
    name = metric["name"]
    if name == "Accuracy" and metric.get("params", {}).get("task") == "multiclass":
        return float(accuracy_score(y, np.argmax(x, axis=1)))
    if name == "MeanSquaredError":
        return float(mean_squared_error(y.astype(np.float64), x.astype(np.float64)))
    if name == "RocAuc":
        return float(roc_auc_score(y, x.astype(np.float64)))
    raise SystemExit(f"golden_values.py: {path}: metric {name} is not supported")


def main(argv):
    if len(argv) < 3 or argv[1] not in ("print", "check"):
        raise SystemExit(__doc__)
    failed = False
    for path in argv[2:]:
        value = golden(path)
        if argv[1] == "print":
            print(f"{path}: {value!r}")
            continue
        with open(path, "rb") as f:
            written = tomllib.load(f).get("golden", {})
        if "value" not in written:
            print(f"{path}: no [golden] value (computed: {value!r})")
            failed = True
            continue
        rtol = written.get("rtol", 1e-6)
        ok = abs(written["value"] - value) <= written.get("atol", 1e-9) + rtol * abs(value)
        print(f"{path}: golden {written['value']!r}, computed {value!r}: {'ok' if ok else 'MISMATCH'}")
        failed = failed or not ok
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
