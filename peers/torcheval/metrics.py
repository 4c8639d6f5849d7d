"""torcheval 0.0.7 mapped onto distmetrics' reference metrics: one descriptor per class
(python/distmetrics/peers.py), registered under the reference's name. The adapter reads the
global value with torcheval.metrics.toolkit.sync_and_compute(metric, recipient_rank="all")
(torcheval's compute() is the rank's own: its declared convention).

    distmetrics conform --python peers/torcheval/metrics.py scenarios
"""

from distmetrics.errors import Unsupported
from distmetrics.peers import NoCounterpart, Peer, param_in, register_table, require, task

M = "torcheval.metrics:"



def average(p):
    if float(p.get("zero_division", 0)) != 0:
        raise Unsupported("torcheval gives 0 for a zero denominator (no zero_division parameter)")
    return {"none": None}.get(p["average"], p["average"])


TABLE = [
    Peer("Accuracy", M + "BinaryAccuracy", when=task("binary"), takes=("task", "threshold"),
         kwargs=lambda p: dict(threshold=p["threshold"]), inputs="long_target"),
    Peer("Accuracy", M + "MulticlassAccuracy", when=task("multiclass"), takes=("task", "num_classes", "top_k"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], k=p["top_k"], average="micro"), inputs="long_target"),
    Peer("Accuracy", M + "MultilabelAccuracy", when=task("multilabel"), takes=("task", "num_classes", "threshold"),
         kwargs=lambda p: dict(threshold=p["threshold"], criteria="exact_match"), inputs="long_target",
         note="criteria='exact_match': subset accuracy, as the reference"),
    Peer("TopKCategoricalAccuracy", M + "MulticlassAccuracy", takes=("k", "num_classes"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], k=p["k"], average="micro"), inputs="long_target"),
    Peer("Precision", M + "BinaryPrecision", when=task("binary"), takes=("task", "threshold", "average", "zero_division"),
         kwargs=lambda p: (average(p), dict(threshold=p["threshold"]))[1], inputs="long_target"),
    Peer("Precision", M + "MulticlassPrecision", when=task("multiclass"), takes=("task", "num_classes", "average", "zero_division"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], average=average(p)), inputs="long_target"),
    Peer("Recall", M + "BinaryRecall", when=task("binary"), takes=("task", "threshold", "average", "zero_division"),
         kwargs=lambda p: (average(p), dict(threshold=p["threshold"]))[1], inputs="long_target"),
    Peer("Recall", M + "MulticlassRecall", when=task("multiclass"), takes=("task", "num_classes", "average", "zero_division"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], average=average(p)), inputs="long_target"),
    Peer("F1", M + "BinaryF1Score", when=task("binary"), takes=("task", "threshold", "average", "zero_division"),
         kwargs=lambda p: (average(p), dict(threshold=p["threshold"]))[1], inputs="long_target"),
    Peer("F1", M + "MulticlassF1Score", when=task("multiclass"), takes=("task", "num_classes", "average", "zero_division"),
         kwargs=lambda p: dict(num_classes=p["num_classes"], average=average(p)), inputs="long_target"),
    # torcheval/metrics/functional/classification/confusion_matrix.py:278 takes torch.max(target) of
    # the batch: a batch of no rows raises (declared: not fed, the rest runs; docs/peers.md).
    Peer("ConfusionMatrix", M + "MulticlassConfusionMatrix", takes=("num_classes", "normalize"),
         conventions={"empty_batch": "rejected"},
         kwargs=lambda p: dict(num_classes=p["num_classes"], normalize=None if p["normalize"] == "none" else p["normalize"]),
         inputs="long_target"),
    Peer("MeanSquaredError", M + "MeanSquaredError"),
    Peer("R2Score", M + "R2Score"),
    Peer("Average", M + "Mean", note="update(input, weight=w)"),
    Peer("Loss", M + "Mean", when=param_in("loss", "per_sample"), takes=("loss",),
         note="per-sample losses averaged: Mean"),
    Peer("RocAuc", M + "BinaryAUROC", inputs="float_labels"),
    Peer("AveragePrecision", M + "BinaryAUPRC", inputs="float_labels", note="BinaryAUPRC is average precision"),
]

NO_COUNTERPART = [
    NoCounterpart("IoU", "no Jaccard/IoU class in torcheval 0.0.7"),
    NoCounterpart("MeanIoU", "no Jaccard/IoU class in torcheval 0.0.7"),
    NoCounterpart("Dice", "no Dice class in torcheval 0.0.7"),
    NoCounterpart("CohenKappa", "no Cohen's kappa class in torcheval 0.0.7"),
    NoCounterpart("Fbeta", "F1 only (no beta)"),
    NoCounterpart("MeanAbsoluteError", "no mean-absolute-error class in torcheval 0.0.7"),
    NoCounterpart("RootMeanSquaredError", "MeanSquaredError has no squared=False"),
    NoCounterpart("MaximumAbsoluteError", "no such class"),
    NoCounterpart("MeanPairwiseDistance", "no such class"),
    NoCounterpart("PearsonCorrelation", "no such class"),
    NoCounterpart("GeometricAverage", "no such class"),
    NoCounterpart("RunningAverage", "the Windowed* metrics keep a window of the last updates, not an EMA"),
    NoCounterpart("PSNR", "PeakSignalNoiseRatio is the PSNR of the pooled MSE; the reference's (and Ignite's) is the "
                          "mean of per-image PSNR"),
    NoCounterpart("Composite", "no compositional metric"),
]

MAPPED = register_table(TABLE, "torcheval")
# The release the report names (its source's version): peers/expected.py picks the expected
# findings by it and by the torch version.
__version__ = require("torcheval", __file__).__version__
