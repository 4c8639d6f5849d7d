"""PyTorch-Ignite 0.5.3 mapped onto distmetrics' reference metrics: one descriptor per class
(python/distmetrics/peers.py), registered under the reference's name. Ignite's metrics take
``update((y_pred, y))``; the conversions of `inputs` replace an ``output_transform``.

    distmetrics conform --python peers/ignite/metrics.py scenarios
"""

import torch

from distmetrics.errors import Unsupported
from distmetrics.peers import require

# ROC_AUC, AveragePrecision and CohenKappa compute with scikit-learn, which EpochMetric imports at
# its first update (epoch_metric.py:140-142 calls compute_fn once to check it): imported here, as a
# training script has it at start, so that a variant's deadline is not charged for the import.
require("sklearn.metrics", __file__)
from distmetrics.peers import NoCounterpart, Peer, param_in, register_table

M = "ignite.metrics:"
R = "ignite.metrics.regression:"



def ignite_average(p):
    """The reference's average as Ignite's Precision/Recall take it."""
    if p.get("task") == "binary":
        return False  # the positive class
    return {"none": False, "macro": True, "micro": "micro", "weighted": "weighted"}[p["average"]]


def fbeta_average(p):
    if p.get("task") == "binary":
        return False
    if p["average"] not in ("none", "macro"):
        raise Unsupported(f"Ignite's Fbeta averages 'macro' (average=True) or not at all, not {p['average']!r}")
    return p["average"] == "macro"


def zero_division_zero(p):
    if float(p.get("zero_division", 0)) != 0:
        raise Unsupported("Ignite gives 0 for a zero denominator (no zero_division parameter)")


def precision_kwargs(p):
    zero_division_zero(p)
    return dict(average=ignite_average(p), is_multilabel=p["task"] == "multilabel")


def fbeta_build(beta_of):
    def build(cls, kwargs):
        return cls(beta=beta_of(kwargs["params"]), average=fbeta_average(kwargs["params"]),
                   precision=None, recall=None) if kwargs["params"]["task"] != "multilabel" else multilabel_fbeta(cls, kwargs["params"], beta_of)
    return build


def multilabel_fbeta(cls, p, beta_of):
    """Ignite's Fbeta builds its own Precision/Recall for single-label data; multilabel needs them given."""
    from ignite.metrics import Precision, Recall

    average = fbeta_average(p)
    return cls(beta=beta_of(p), average=average, precision=Precision(average=False, is_multilabel=True),
               recall=Recall(average=False, is_multilabel=True))


def cm(p):
    from ignite.metrics import ConfusionMatrix

    return ConfusionMatrix(num_classes=p["num_classes"])


# Precision and Recall (and F1/Fbeta built on them) reject a multiclass batch of no rows:
# ignite/metrics/precision.py:65 takes y.max() of the batch (declared: not fed, the rest runs).
MULTICLASS_REJECTS_EMPTY = lambda p: {"empty_batch": "rejected"} if p.get("task") == "multiclass" else {}  # noqa: E731

CM_AVERAGE = {"none": None, "true": "recall", "pred": "precision", "all": "samples"}

LOSSES = {"cross_entropy": lambda: torch.nn.CrossEntropyLoss(), "nll": lambda: torch.nn.NLLLoss(),
          "binary_cross_entropy": lambda: torch.nn.BCELoss(),
          "binary_cross_entropy_with_logits": lambda: torch.nn.BCEWithLogitsLoss(),
          "mse": lambda: torch.nn.MSELoss(), "l1": lambda: torch.nn.L1Loss()}

TABLE = [
    Peer("Accuracy", M + "Accuracy", when=param_in("task", "binary", "multiclass", "multilabel"),
         takes=("task", "num_classes", "threshold"), kwargs=lambda p: dict(is_multilabel=p["task"] == "multilabel"),
         inputs="scores_for_classes", note="binary and multilabel scores become 0/1 labels (Ignite takes labels)"),
    Peer("TopKCategoricalAccuracy", M + "TopKCategoricalAccuracy", takes=("k", "num_classes"), kwargs=lambda p: dict(k=p["k"]),
         inputs="long_target"),
    Peer("Precision", M + "Precision", takes=("task", "num_classes", "average", "threshold", "zero_division"),
         kwargs=precision_kwargs, inputs="scores_for_classes", conventions=MULTICLASS_REJECTS_EMPTY),
    Peer("Recall", M + "Recall", takes=("task", "num_classes", "average", "threshold", "zero_division"),
         kwargs=precision_kwargs, inputs="scores_for_classes", conventions=MULTICLASS_REJECTS_EMPTY),
    Peer("F1", M + "Fbeta", takes=("task", "num_classes", "average", "threshold", "zero_division"),
         kwargs=lambda p: (zero_division_zero(p), {"params": p})[1], build=fbeta_build(lambda p: 1.0),
         inputs="scores_for_classes", conventions=MULTICLASS_REJECTS_EMPTY, note="Fbeta(beta=1), a MetricsLambda over Precision and Recall"),
    Peer("Fbeta", M + "Fbeta", takes=("task", "num_classes", "average", "threshold", "zero_division", "beta"),
         kwargs=lambda p: (zero_division_zero(p), {"params": p})[1], build=fbeta_build(lambda p: p["beta"]),
         inputs="scores_for_classes", conventions=MULTICLASS_REJECTS_EMPTY),
    Peer("ConfusionMatrix", M + "ConfusionMatrix", takes=("num_classes", "normalize"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], average=CM_AVERAGE[p["normalize"]]),
         inputs="scores_for_classes"),
    Peer("IoU", M + "IoU", takes=("num_classes", "average", "zero_division"),
         kwargs=lambda p: (zero_division_zero(p), {"params": p})[1],
         build=lambda cls, k: cls(cm(k["params"])) if k["params"]["average"] == "none" else __import__("ignite.metrics", fromlist=["mIoU"]).mIoU(cm(k["params"])),
         inputs="scores_for_classes", note="IoU(cm) per class, mIoU(cm) for macro: MetricsLambdas over a ConfusionMatrix"),
    Peer("MeanIoU", M + "mIoU", takes=("num_classes", "zero_division"),
         kwargs=lambda p: (zero_division_zero(p), {"params": p})[1], build=lambda cls, k: cls(cm(k["params"])),
         inputs="scores_for_classes"),
    Peer("Dice", M + "DiceCoefficient", takes=("num_classes", "average", "zero_division"),
         kwargs=lambda p: (zero_division_zero(p), {"params": p})[1],
         build=lambda cls, k: cls(cm(k["params"])) if k["params"]["average"] == "none" else cls(cm(k["params"])).mean(),
         inputs="scores_for_classes", note="DiceCoefficient(cm) per class; .mean() of it for macro"),
    Peer("CohenKappa", M + "CohenKappa", takes=("num_classes", "weights"),
         kwargs=lambda p: dict(weights=None if p["weights"] == "none" else p["weights"]), inputs="long_target",
         note="an EpochMetric over scikit-learn's cohen_kappa_score"),
    # mean_absolute_error.py:72, mean_squared_error.py:72: the sum is a float32 tensor (torch.tensor(0.0)),
    # divided as a Python float in compute(): a float32 result that its value cannot show (declared).
    Peer("MeanAbsoluteError", M + "MeanAbsoluteError", inputs="rows_to_elements", conventions={"precision": "float32"},
         note="every element a sample, as the reference (Ignite divides by rows: [N, D] becomes [N * D]); float32 sums"),
    Peer("MeanSquaredError", M + "MeanSquaredError", inputs="rows_to_elements", conventions={"precision": "float32"},
         note="every element a sample, as the reference (Ignite divides by rows: [N, D] becomes [N * D]); float32 sums"),
    Peer("RootMeanSquaredError", M + "RootMeanSquaredError", inputs="rows_to_elements", conventions={"precision": "float32"},
         note="every element a sample, as the reference (Ignite divides by rows: [N, D] becomes [N * D]); float32 sums"),
    # ignite/metrics/regression/maximum_absolute_error.py:71 takes torch.max of the batch's errors: a
    # batch of no rows raises (declared: not fed, the rest runs; docs/peers.md).
    Peer("MaximumAbsoluteError", R + "MaximumAbsoluteError", conventions={"empty_batch": "rejected"}),
    Peer("MeanPairwiseDistance", M + "MeanPairwiseDistance", takes=("p", "eps"), kwargs=lambda p: dict(p=p["p"], eps=p["eps"])),
    Peer("R2Score", R + "R2Score"),
    Peer("PearsonCorrelation", R + "PearsonCorrelation"),
    Peer("Average", M + "Average", inputs="elements_as_rows", value=lambda m: torch.as_tensor(m.compute()).squeeze(),
         note="no weight: weighted variants are skipped; values as [N, 1] rows"),
    Peer("GeometricAverage", M + "GeometricAverage", inputs="elements_as_rows", value=lambda m: torch.as_tensor(m.compute()).squeeze(),
         note="values as [N, 1] rows"),
    Peer("Loss", M + "Loss", when=param_in("loss", *LOSSES), takes=("loss",),
         kwargs=lambda p: dict(loss_fn=LOSSES[p["loss"]]()), inputs="long_target",
         note="Loss(loss_fn) with the torch.nn loss of the same name"),
    Peer("Loss", M + "Average", when=param_in("loss", "per_sample"), takes=("loss",), inputs="elements_as_rows",
         value=lambda m: torch.as_tensor(m.compute()).squeeze(), note="per-sample losses averaged: Average"),
    Peer("RunningAverage", M + "RunningAverage", takes=("alpha",), kwargs=lambda p: dict(alpha=p["alpha"], output_transform=lambda x: x),
         inputs="batch_mean", note="src=None: one value per step, the batch's mean (a training loop's loss)"),
    Peer("RocAuc", M + "ROC_AUC", inputs="long_target", note="an EpochMetric over scikit-learn's roc_auc_score"),
    Peer("AveragePrecision", M + "AveragePrecision", inputs="long_target",
         note="an EpochMetric over scikit-learn's average_precision_score"),
    Peer("PSNR", M + "PSNR", takes=("data_range",), kwargs=lambda p: dict(data_range=p["data_range"])),
]

NO_COUNTERPART = [
    NoCounterpart("Composite", "MetricsLambda arithmetic combines metric objects, not a reference expression string"),
]

MAPPED = register_table(TABLE, "ignite")
# The release the report names (its source's version): peers/expected.py picks the expected
# findings by it and by the torch version.
__version__ = require("ignite", __file__).__version__
