"""torchmetrics 1.5.2 mapped onto distmetrics' reference metrics: one descriptor per class
(python/distmetrics/peers.py), registered under the reference's name.

    distmetrics conform --python peers/torchmetrics/metrics.py scenarios
"""

from distmetrics.peers import NoCounterpart, Peer, param_in, register_table, require, task

C = "torchmetrics.classification:"
# The stat-scores classes (Accuracy, Precision, Recall, F1, FBeta, ExactMatch) reject a batch of
# no rows: torchmetrics/functional/classification/stat_scores.py:113 (binary), :339 (multiclass),
# :665 (multilabel) reshape it to (0, -1), which torch cannot ("cannot reshape tensor of 0
# elements"). Declared, so that the empty batch is not fed and the rest runs (docs/peers.md).
REJECTS_EMPTY = {"empty_batch": "rejected"}
# PearsonCorrCoef rejects one too from the release that keeps each batch's max |x - mean|
# (#3150, PR #3152): torch.max(..., dim=0) of no rows raises, functional/regression/pearson.py:86
# (1.9.0). 1.5.2 takes an empty batch; the releases between were not checked.
_RELEASE = tuple(int(part) for part in require("torchmetrics", __file__).__version__.split(".")[:2])
PEARSON_CONVENTIONS = REJECTS_EMPTY if _RELEASE >= (1, 9) else {}



def average(p):
    return {"none": "none"}.get(p["average"], p["average"])


def multiclass(p, **extra):
    return dict(num_classes=p["num_classes"], **extra)


def multilabel(p, **extra):
    return dict(num_labels=p["num_classes"], threshold=0.5, **extra)  # scores became labels (inputs)


TABLE = [
    Peer("Accuracy", C + "BinaryAccuracy", when=task("binary"), takes=("task", "threshold"), inputs="labels_at_threshold",
         conventions=REJECTS_EMPTY),
    Peer("Accuracy", C + "MulticlassAccuracy", when=task("multiclass"), takes=("task", "num_classes", "top_k"),
         kwargs=lambda p: multiclass(p, top_k=p["top_k"], average="micro"), conventions=REJECTS_EMPTY,
         note="average='micro': the reference's multiclass accuracy is the fraction of samples right"),
    Peer("Accuracy", C + "MultilabelExactMatch", when=task("multilabel"), takes=("task", "num_classes", "threshold"),
         kwargs=lambda p: dict(num_labels=p["num_classes"]), inputs="labels_at_threshold", conventions=REJECTS_EMPTY,
         note="the reference's multilabel accuracy is subset accuracy (all labels right): ExactMatch"),
    Peer("TopKCategoricalAccuracy", C + "MulticlassAccuracy", takes=("k", "num_classes"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], top_k=p["k"], average="micro"), conventions=REJECTS_EMPTY),
]
for ref, kind in (("Precision", "Precision"), ("Recall", "Recall"), ("F1", "F1Score"), ("Fbeta", "FBetaScore")):
    beta = (lambda p: {"beta": p["beta"]}) if ref == "Fbeta" else (lambda p: {})
    zero = ("zero_division",) if kind in ("F1Score", "FBetaScore") else ()
    zkw = (lambda p: {"zero_division": p["zero_division"]}) if zero else (lambda p: {})
    b = ("beta",) if ref == "Fbeta" else ()
    TABLE += [
        Peer(ref, C + "Binary" + kind, when=task("binary"), takes=("task", "threshold", "average") + zero + b,
             kwargs=lambda p, beta=beta, zkw=zkw: dict(**beta(p), **zkw(p)), inputs="labels_at_threshold",
             conventions=REJECTS_EMPTY,
             note="binary: the positive class, whatever average"),
        Peer(ref, C + "Multiclass" + kind, when=task("multiclass"), takes=("task", "num_classes", "average") + zero + b,
             kwargs=lambda p, beta=beta, zkw=zkw: dict(num_classes=p["num_classes"], average=average(p), **beta(p), **zkw(p)),
             conventions=REJECTS_EMPTY),
        Peer(ref, C + "Multilabel" + kind, when=task("multilabel"),
             takes=("task", "num_classes", "average", "threshold") + zero + b,
             kwargs=lambda p, beta=beta, zkw=zkw: dict(num_labels=p["num_classes"], average=average(p), **beta(p), **zkw(p)),
             inputs="labels_at_threshold", conventions=REJECTS_EMPTY),
    ]
TABLE += [
    Peer("ConfusionMatrix", C + "MulticlassConfusionMatrix", takes=("num_classes", "normalize"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], normalize=None if p["normalize"] == "none" else p["normalize"])),
    Peer("IoU", C + "MulticlassJaccardIndex", takes=("num_classes", "average", "zero_division"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], average=average(p), zero_division=p["zero_division"])),
    Peer("MeanIoU", C + "MulticlassJaccardIndex", takes=("num_classes", "zero_division"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], average="macro", zero_division=p["zero_division"]),
         note="macro JaccardIndex: the mean over classes of IoU"),
    Peer("Dice", C + "MulticlassF1Score", takes=("num_classes", "average", "zero_division"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], average=average(p), zero_division=p["zero_division"]),
         conventions=REJECTS_EMPTY, note="per-class Dice = per-class F1 (2tp / (2tp + fp + fn)); torchmetrics' own Dice is deprecated"),
    Peer("CohenKappa", C + "MulticlassCohenKappa", takes=("num_classes", "weights"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], weights=None if p["weights"] == "none" else p["weights"])),
    Peer("MeanAbsoluteError", "torchmetrics.regression:MeanAbsoluteError"),
    Peer("MeanSquaredError", "torchmetrics.regression:MeanSquaredError"),
    Peer("RootMeanSquaredError", "torchmetrics.regression:MeanSquaredError", kwargs=lambda p: dict(squared=False)),
    Peer("R2Score", "torchmetrics.regression:R2Score"),
    Peer("PearsonCorrelation", "torchmetrics.regression:PearsonCorrCoef", conventions=PEARSON_CONVENTIONS),
    Peer("Average", "torchmetrics.aggregation:MeanMetric", note="update(value, weight=w)"),
    Peer("Loss", "torchmetrics.aggregation:MeanMetric", when=param_in("loss", "per_sample"), takes=("loss",),
         note="a per-sample loss averaged: MeanMetric"),
    Peer("RocAuc", C + "BinaryAUROC", inputs="long_target"),
    Peer("AveragePrecision", C + "BinaryAveragePrecision", inputs="long_target"),
    Peer("PSNR", "torchmetrics.image:PeakSignalNoiseRatio", takes=("data_range",),
         kwargs=lambda p: dict(data_range=p["data_range"], dim=(1, 2, 3), reduction="elementwise_mean"),
         note="dim=(1, 2, 3): the mean of per-image PSNR, as the reference (and Ignite)"),
]

NO_COUNTERPART = [
    NoCounterpart("MaximumAbsoluteError", "torchmetrics 1.5.2 has no maximum-absolute-error class"),
    NoCounterpart("MeanPairwiseDistance", "torchmetrics has pairwise distances as functions only (no metric class)"),
    NoCounterpart("GeometricAverage", "no geometric-mean aggregation class"),
    NoCounterpart("RunningAverage", "RunningMean is a window mean over the last `window` updates, not an EMA"),
    NoCounterpart("Composite", "CompositionalMetric needs two metric objects, not a reference expression string"),
]

MAPPED = register_table(TABLE, "torchmetrics")
# The release the report names (its source's version): peers/expected.py picks the expected
# findings by it and by the torch version.
__version__ = require("torchmetrics", __file__).__version__
