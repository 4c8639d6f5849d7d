"""torcheval 0.0.7 mapped onto distmetrics' reference metrics: one descriptor per class
(python/distmetrics/peers.py), registered under the reference's name. The adapter reads the
global value with torcheval.metrics.toolkit.sync_and_compute(metric, recipient_rank="all")
(torcheval's compute() is the rank's own: its declared convention).

    distmetrics conform --python peers/torcheval/metrics.py scenarios
"""

from distmetrics.errors import Unsupported
from distmetrics.peers import NoCounterpart, NotRunnable, Own, Peer, channel_statistics, param_in, register_own, register_table, require, retrieval_update, task

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

# Classes with no reference counterpart, each checked against its own single-process run on
# generated scenarios (python/distmetrics/peers.py `Own`, peers/scenarios.py); merge_state too.
BIN, MC, ML = "binary_probabilities", "multiclass_logits", "multilabel_probabilities"
NC, NL = dict(num_classes=4), dict(num_labels=3)
# Max and Min take torch.max/min of the whole batch (max.py:52, min.py:52 of 0.0.7), AUC checks
# for at least one element (auc.py:55), BinaryNormalizedEntropy checks the input's range with
# max() (binary_normalized_entropy.py:145): a batch of no rows raises, by design; not fed.
REJECTS_EMPTY = {"empty_batch": "rejected"}
def _clicks_and_weights(metric, input, target, weight):
    """ClickThroughRate.update(input, weights) (ranking/click_through_rate.py:78-82): `input` is
    the clicks (1) and skips (0), `weights` each event's weight. The true labels are the clicks;
    each event weighs 1 or 2 (1 + its predicted label), so the rate is a weighted one that moves
    when an event's weight is lost or counted twice (the adapter's positional call would make the
    labels the weights and drop every event of weight 0)."""
    metric.update(target, weights=1.0 + input.float())  # float32: the class's own state dtype


OWN = [
    Own(M + "Sum", "values"),
    Own(M + "Max", "values", conventions=REJECTS_EMPTY),
    Own(M + "Min", "values", conventions=REJECTS_EMPTY),
    Own(M + "Cat", "values"),
    Own(M + "AUC", "regression", conventions=REJECTS_EMPTY),
    Own(M + "MulticlassAUPRC", MC, NC, inputs="long_target"),
    Own(M + "MultilabelAUPRC", ML, NL, inputs="long_target"),
    Own(M + "MulticlassAUROC", MC, NC, inputs="long_target"),
    Own(M + "BinaryNormalizedEntropy", BIN, inputs="float_labels", conventions=REJECTS_EMPTY),
    Own(M + "BinaryBinnedAUPRC", BIN, dict(threshold=5), inputs="long_target"),
    Own(M + "MulticlassBinnedAUPRC", MC, dict(num_classes=4, threshold=5), inputs="long_target"),
    Own(M + "MultilabelBinnedAUPRC", ML, dict(num_labels=3, threshold=5), inputs="long_target"),
    Own(M + "BinaryBinnedAUROC", BIN, dict(threshold=5), inputs="long_target"),
    Own(M + "MulticlassBinnedAUROC", MC, dict(num_classes=4, threshold=5), inputs="long_target"),
    Own(M + "BinaryBinnedPrecisionRecallCurve", BIN, dict(threshold=5), inputs="long_target"),
    Own(M + "MulticlassBinnedPrecisionRecallCurve", MC, dict(num_classes=4, threshold=5), inputs="long_target"),
    Own(M + "MultilabelBinnedPrecisionRecallCurve", ML, dict(num_labels=3, threshold=5), inputs="long_target"),
    Own(M + "BinaryConfusionMatrix", BIN, inputs="long_target"),
    Own(M + "BinaryPrecisionRecallCurve", BIN, inputs="long_target"),
    Own(M + "MulticlassPrecisionRecallCurve", MC, NC, inputs="long_target"),
    Own(M + "MultilabelPrecisionRecallCurve", ML, NL, inputs="long_target"),
    Own(M + "BinaryRecallAtFixedPrecision", BIN, dict(min_precision=0.5), inputs="long_target"),
    Own(M + "MultilabelRecallAtFixedPrecision", ML, dict(num_labels=3, min_precision=0.5), inputs="long_target"),
    Own(M + "TopKMultilabelAccuracy", ML, dict(k=2), inputs="long_target"),
    Own(M + "HitRate", MC, dict(k=2), inputs="long_target"),
    Own(M + "ReciprocalRank", MC, dict(k=2), inputs="long_target"),
    Own(M + "WeightedCalibration", BIN, inputs="float_labels"),
    Own(M + "ClickThroughRate", "binary_labels", update=_clicks_and_weights,
        note="update(clicks, weights): the true 0/1 labels as clicks, 1 + the predicted label as each event's weight"),
    Own(M + "PeakSignalNoiseRatio", "images", dict(data_range=1.0)),
    # Windows over each rank's last updates (and lifetime values beside them).
    Own(M + "WindowedMeanSquaredError", "regression", dict(max_num_updates=3)),
    Own(M + "WindowedBinaryAUROC", BIN, dict(max_num_samples=10), inputs="long_target"),
    Own(M + "WindowedClickThroughRate", "binary_labels", dict(max_num_updates=3), update=_clicks_and_weights,
        note="update(clicks, weights) as ClickThroughRate's"),
    Own(M + "WindowedBinaryNormalizedEntropy", BIN, dict(max_num_updates=3), inputs="float_labels",
        conventions=REJECTS_EMPTY),
    Own(M + "WindowedWeightedCalibration", BIN, dict(max_num_updates=3), inputs="float_labels"),
]
# Retrieval: 5 queries interleaved across the sample order (every query spans every rank), query 0
# with no relevant document; update(input, target, indexes) from the target's two columns.
OWN += [
    Own(M + "RetrievalPrecision", "retrieval", dict(k=3, num_queries=5, avg="macro"), update=retrieval_update,
        note="k=3 per query, macro over the 5 queries"),
]
# Text: hypothesis and reference strings (the `text` generator, structured samples).
OWN += [Own(M + name, "text") for name in ("WordErrorRate", "WordInformationLost", "WordInformationPreserved")]
# functional/text/bleu.py:108 (0.0.7): a batch with fewer than n_gram words raises ValueError.
OWN += [Own(M + "BLEUScore", "text_multi", dict(n_gram=4), inputs="text_references",
            conventions=REJECTS_EMPTY),
        # The same class on input it accepts batch by batch (unigrams, no empty hypothesis: every
        # batch, even of one sentence, has a word), so its sync of the n-gram counts and lengths is
        # judged where the row above dies on the short batch.
        Own(M + "BLEUScore", "text_multi", dict(n_gram=1), inputs="text_references", conventions=REJECTS_EMPTY,
            data=dict(params=dict(empty_rate=0.0)), name="torcheval.BLEUScore_UNIGRAM",
            note="n_gram=1 on hypotheses of 1 to 8 words, none empty")]


def _timed_update(metric, input, target, weight):
    """Throughput.update(num_processed, elapsed_time_sec): the batch's sample count, and the seconds
    since this metric's previous update (or since it was first updated: a time reading)."""
    import time

    if weight is not None:
        raise Unsupported("Throughput.update takes no per-sample weight: weighted variants are skipped")
    now = time.perf_counter()
    last = getattr(metric, "_distmetrics_last_update", None)
    metric._distmetrics_last_update = now
    metric.update(len(input), max(now - last, 1e-6) if last is not None else 1e-6)


# Items per second (a time reading): no other run gives its value, so the ranks are checked to agree
# on it and nothing to hang, nothing else.
OWN += [Own(M + "Throughput", "values", update=_timed_update, only=("ranks_agree",),
            note="update(batch size, seconds since the previous update); a time reading: ranks_agree and no_hang only")]


def _sequences(metric, input, target, weight):
    """Perplexity.update(input [B, S, V], target [B, S]) of the `token_logits` rows."""
    if weight is not None:
        raise Unsupported("Perplexity.update takes no per-sample weight: weighted variants are skipped")
    metric.update(input, target)


# functional/text/perplexity.py:153 (0.0.7): torch.max of the batch's targets, which no rows cannot give.
# Sequences of 4 tokens over a vocabulary of 5, padding at ignore_index -100 (token_logits).
OWN += [Own(M + "Perplexity", "token_logits", dict(ignore_index=-100), update=_sequences, conventions=REJECTS_EMPTY,
            note="sequences of 4 tokens over a vocabulary of 5; padding (ignore_index -100) in places and throughout"),
        # The same class without a sequence padded throughout (and fewer padded tokens), so no batch is
        # padding only: its sync of the summed log-probabilities and counts judged past the row above's raise.
        Own(M + "Perplexity", "token_logits", dict(ignore_index=-100), update=_sequences, conventions=REJECTS_EMPTY,
            data=dict(params=dict(padded_rate=0.0, ignore_rate=0.1)), name="torcheval.Perplexity_NO_PADDED_SEQUENCE",
            note="sequences of 4 tokens over a vocabulary of 5; padding in places (10%), never a whole sequence")]



def _fid_real_and_fake(metric, input, target, weight):
    """FrechetInceptionDistance.update(images, is_real): the target images as the real ones, the
    predictions as the fake."""
    if weight is not None:
        raise Unsupported("FrechetInceptionDistance.update takes no per-sample weight: weighted variants are skipped")
    metric.update(target, is_real=True)
    metric.update(input, is_real=False)


# FID with the small fixed feature extractor (channel means and stds, 6: distmetrics.peers.
# channel_statistics), never the downloaded InceptionV3; it asks for torchvision even so
# (image/fid.py:80, :28-31), pinned in ci/requirements-torch2.txt.
OWN += [Own("torcheval.metrics.image.fid:FrechetInceptionDistance", "images",
            build=lambda cls, kw: cls(model=channel_statistics(), feature_dim=6, **kw), update=_fid_real_and_fake,
            # Its sums and covariance sums are float32 (image/fid.py:95-102): the value here (about 2e-4)
            # is a difference of traces about 1e3 times larger (about 0.2), so the rounding of those
            # sums (float32: 6e-8 of 0.2 an addition) moves it by 3e-5 of itself in an even split and
            # by 2.5e-8 absolute (1.3e-4 of itself) when the samples are dealt round robin or by the
            # sampler (measured 6 December): rtol 1e-4 and atol 1e-7, the traces' float32 rounding.
            tolerance=dict(rtol=1e-4, atol=1e-7),
            note="features: channel means and stds (6); targets real, predictions fake; rtol 1e-4, atol 1e-7 (float32 sums of traces about 0.2)")]



def _frame_statistics():
    """FrechetAudioDistance's model here: a mono waveform of 64 samples ([1, 64]) as 8 frames of 8 (the preproc),
    each frame's mean and standard deviation its embedding (2), never downloaded VGGish weights."""
    import torch

    class FrameStatistics(torch.nn.Module):
        def forward(self, frames):
            return torch.stack([frames.mean(dim=1), frames.std(dim=1)], dim=1)

    return FrameStatistics()


OWN += [Own("torcheval.metrics.audio.fad:FrechetAudioDistance", "audio",
            build=lambda cls, kw: cls(preproc=lambda w: w.reshape(8, 8), model=_frame_statistics(), embedding_dim=2, **kw),
            # Its partial sums are float32 (audio/fad.py:61-65): the value here (about 2e-3) moves by
            # 1.3e-5 of itself with the order of the additions (measured), as FID's; rtol 1e-4.
            tolerance=dict(rtol=1e-4, atol=1e-9),
            note="model: 8 frames of 8 samples, each frame's mean and std (2); preds against targets; rtol 1e-4 (float32 sums)")]

# Classes that cannot run here, and why (docs/peers.md's coverage lists them).
NOT_RUNNABLE = []
# torcheval's collections are its toolkit's functions over a dict of metrics, not a class
# (peers/census.py, COLLECTIONS): one object drives Sum, Mean and Max as a training loop would,
# update() to each, compute() through toolkit.sync_and_compute_collection (one sync for the
# dict: get_synced_metric_collection), state_dict() and merge_state() per metric.
class ToolkitCollection:
    def __init__(self, sync_and_compute_collection):
        from torcheval.metrics import Max, Mean, Sum

        self._compute = sync_and_compute_collection
        self.metrics = {"sum": Sum(), "mean": Mean(), "max": Max()}

    def update(self, input, target=None):
        for metric in self.metrics.values():
            metric.update(input)
        return self

    def compute(self):
        return self._compute(self.metrics)

    def reset(self):
        for metric in self.metrics.values():
            metric.reset()
        return self

    def state_dict(self):
        return {key: metric.state_dict() for key, metric in self.metrics.items()}

    def load_state_dict(self, state):
        for key, metric in self.metrics.items():
            metric.load_state_dict(state[key])

    def merge_state(self, other):
        """Each metric's own merge_state (torcheval's: a list of metrics) with the other collection's."""
        for key, metric in self.metrics.items():
            metric.merge_state([other.metrics[key]])
        return self


OWN += [Own("torcheval.metrics.toolkit:sync_and_compute_collection", "values", adapter="torchmetrics",
            build=lambda fn, kwargs: ToolkitCollection(fn, **kwargs), conventions=REJECTS_EMPTY,
            name="torcheval.sync_and_compute_collection",
            note="Sum, Mean and Max in one dict: update() to each, compute() through the toolkit's "
                 "sync_and_compute_collection (Max rejects an empty batch)")]

OWNED = register_own(OWN, "torcheval", since="0.0.7")  # triaged on 0.0.7: older releases run none
# The release the report names (its source's version): peers/expected.py picks the expected
# findings by it and by the torch version.
__version__ = require("torcheval", __file__).__version__
