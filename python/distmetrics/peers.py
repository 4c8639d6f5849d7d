"""Mapping a real library's metric classes onto distmetrics' reference metrics (peers/<library>/).

A mapping is one table of `Peer` descriptors, one per class: the reference name it is
registered under, the class ("module:Class"), which scenarios it takes (``when``), how the
scenario's parameters become constructor arguments (``kwargs``), and the input conversion it
needs (``inputs``, one of CONVERSIONS). ``register_table`` registers them: one factory per
reference name, which picks the class whose ``when`` fits the scenario's parameters, and raises
``Unsupported`` (a per-variant skip with the reason) for a parameter the class cannot take.

Bad input is a PeerSetupError naming the mapping's file, line and field: a library missing from
the interpreter, a class the library does not have, a conversion or a parameter that does not
exist."""

import importlib
import os
import sys
import sysconfig
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional, Tuple

from .errors import PeerSetupError, Unsupported
from .scenario_toml import Multiline, ScenarioTomlError, scenario_toml
from .tables import tables

# The reference parameters a mapping may leave out when the scenario leaves them at their
# default come from the runner's tables (`distmetrics tables --json`: each reference metric's
# parameters and defaults); a non-default value the class cannot take is a skip.


def _labels_at_threshold(params):
    """Binary and multilabel scores become 0/1 labels by the reference's rule (score >= threshold),
    so that the class counts the predictions the reference counts: Ignite takes labels only, and
    torchmetrics' own rule (sigmoid when a batch has a value outside [0, 1], then > threshold)
    decides per batch, which would make a logit batch and a probability batch differ."""
    threshold = float(params.get("threshold", 0.5))
    if params.get("task") not in ("binary", "multilabel"):
        return None  # multiclass scores keep their argmax

    def convert(input, target, weight):
        if input.is_floating_point():
            input = (input >= threshold).to(target.dtype if target is not None else "long")
        return input, target, weight
    return convert


def _scores_for_classes(params):
    """What Ignite's classification metrics take: binary and multilabel scores as 0/1 labels (as
    labels_at_threshold), multiclass labels [N, *] as one-hot scores [N, C, *] (Ignite reads a
    1-d y_pred as binary), integer targets as int64."""
    at_threshold = _labels_at_threshold(params)
    classes = int(params.get("num_classes", 0))

    def convert(input, target, weight):
        if at_threshold is not None:
            input, target, weight = at_threshold(input, target, weight)
        elif classes and not input.is_floating_point() and target is not None and input.dim() == target.dim():
            import torch.nn.functional as F
            input = F.one_hot(input.long(), classes).movedim(-1, 1).float()
        if target is not None and not target.is_floating_point():
            target = target.long()
        return input, target, weight
    return convert


def _elements_as_rows(params):
    """[N] values as [N, 1] (Ignite's Average and GeometricAverage take a 1-d tensor as one sample)."""
    return lambda input, target, weight: (input.reshape(-1, 1), target, weight)


def _as_is(params):
    return None


def _rows(params):
    """[N] values and targets as [N, 1] (Ignite's regression metrics that want rows)."""
    return lambda input, target, weight: (input.reshape(-1), None if target is None else target.reshape(-1), weight)


def _long_target(params):
    """Integer targets as int64, 0/1 labels too (Ignite's Accuracy and torcheval's checks want int64)."""
    def convert(input, target, weight):
        if target is not None and not target.is_floating_point():
            target = target.long()
        return input, target, weight
    return convert


def _batch_mean(params):
    """One value per update, the batch's mean (what a training loop hands Ignite's
    RunningAverage: the loss of the step); NaN for an empty batch."""
    import torch

    def convert(input, target, weight):
        return (input.double().mean() if input.numel() else torch.tensor(float("nan"), dtype=torch.float64)), None, weight
    return convert


def _float_labels(params):
    """0/1 integer labels as floats (BCE-type losses and AUROC implementations that want floats)."""
    def convert(input, target, weight):
        if target is not None and not target.is_floating_point():
            target = target.to(input.dtype if input.is_floating_point() else "float")
        return input, target, weight
    return convert


def _input_only(params):
    """The input alone (classes whose update takes one tensor: a total variation, a sequence's
    own statistic); the target is dropped."""
    return lambda input, target, weight: (input, None, weight)


def _text_references(params):
    """Text targets as lists of references (one string becomes a list of one): what BLEU, chrF,
    TER and EED take, from the `text` generator's strings or lists of strings."""
    def convert(input, target, weight):
        return input, [[r] if isinstance(r, str) else list(r) for r in target], weight
    return convert


def _text_tokens(params):
    """Text as token lists (Ignite's Bleu and Rouge): each hypothesis split into words, each
    target a list of references, each split into words."""
    def convert(input, target, weight):
        refs = [[r] if isinstance(r, str) else list(r) for r in target]
        return [h.split() for h in input], [[r.split() for r in rs] for rs in refs], weight
    return convert


def _squad(params):
    """Hypothesis and reference strings as SQuAD's dicts: {"prediction_text", "id"} and
    {"answers": {"text", "answer_start"}, "id"}, the id the sample's place in its batch (SQuAD
    pairs them within one update)."""
    def convert(input, target, weight):
        refs = [[r] if isinstance(r, str) else list(r) for r in target]
        preds = [{"prediction_text": h, "id": str(k)} for k, h in enumerate(input)]
        targets = [{"answers": {"text": rs, "answer_start": [0] * len(rs)}, "id": str(k)} for k, rs in enumerate(refs)]
        return preds, targets, weight
    return convert


# The input conversions, in one place (docs/peers.md lists which class uses which).
CONVERSIONS: Dict[str, Callable] = {
    "as_is": _as_is,
    "labels_at_threshold": _labels_at_threshold,
    "long_target": _long_target,
    "rows_to_elements": _rows,
    "scores_for_classes": _scores_for_classes,
    "elements_as_rows": _elements_as_rows,
    "batch_mean": _batch_mean,
    "float_labels": _float_labels,
    "input_only": _input_only,
    "text_references": _text_references,
    "text_tokens": _text_tokens,
    "squad": _squad,
}


def param_in(key, *values):
    """A ``when`` that holds for scenarios whose parameter `key` is one of `values` (docs/peers.md
    shows its text)."""
    def holds(params):
        return params.get(key) in values
    holds.text = f"{key} = {', '.join(map(str, values))}"
    return holds


def task(name):
    return param_in("task", name)


@dataclass
class Peer:
    reference: str                          # the distmetrics reference metric's name
    cls: str                                # "module:Class" in the library
    kwargs: Callable = lambda p: {}         # params -> constructor keyword arguments (may raise Unsupported)
    takes: Tuple[str, ...] = ()             # the reference parameters kwargs maps (others must be at their default)
    when: Optional[Callable] = None         # params -> bool: this class serves these scenarios
    inputs: str = "as_is"                   # a key of CONVERSIONS
    adapter: str = "auto"
    note: str = ""                          # what the mapping assumes, for docs/peers.md
    conventions: object = field(default_factory=dict)  # a dict, or params -> dict
    build: Optional[Callable] = None        # (cls, kwargs) -> metric, when a class is not built as cls(**kwargs)
    value: Optional[Callable] = None        # value read-out: (metric) -> value, instead of the adapter's compute
    name: str = ""                          # registered as: the reference's name, or "Reference[Variant]" for a
                                            # second registration of one reference (`conform --metric` selects it)
    where: str = ""                         # file:line of this descriptor (filled in)
    absent: str = ""                        # filled in: why the installed release has no such class, or ""

    def __post_init__(self):
        frame = sys._getframe(2)  # the table's line (1 is the dataclass __init__); cheap, unlike inspect.stack()
        self.where = f"{frame.f_code.co_filename}:{frame.f_lineno}"


@dataclass
class NoCounterpart:
    reference: str
    why: str


@dataclass
class NotRunnable:
    """A library class that cannot run here, and why (weights fetched from a hub, a package that
    is not installed or needs hardware): docs/peers.md's coverage lists it with the reason."""
    cls: str                                # "module:Class"
    why: str


def _venv_site_packages():
    """The site-packages of peers/venv.sh's venv, where it would be (DISTMETRICS_PEERS_VENV or the
    default under the cache folder)."""
    venv = os.environ.get("DISTMETRICS_PEERS_VENV") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "distmetrics", "peers-torch1.13")
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    return os.path.join(venv, "lib", version, "site-packages")


def require(module_name, where):
    """Imports the library `module_name`, from the interpreter's path or else from the peers
    venv (peers/venv.sh); a PeerSetupError naming `where` when it is in neither."""
    try:
        return importlib.import_module(module_name)
    except ImportError:
        pass
    site = _venv_site_packages()
    if os.path.isdir(site) and site not in sys.path:
        sys.path.append(site)
        try:
            return importlib.import_module(module_name)
        except ImportError:
            pass
    raise PeerSetupError(f"{where}: library: {module_name} is not importable in this Python ({sys.executable}, "
                         f"purelib {sysconfig.get_paths()['purelib']}) nor from the peers venv {site}: run "
                         f"`bash peers/venv.sh` (it installs peers/requirements-torch1.13.txt)")


def _resolve(peer):
    """The class of a row (a Peer, an Own): its `cls`, or, on a release a declared move covers
    (`moved`), the module the class lived in then, when its own module lacks it there."""
    try:
        return _import_class(peer.cls, peer.where)
    except PeerSetupError as first:
        then = moved_from(peer.cls)
        if then is None:
            raise
        try:
            cls = _import_class(then, peer.where)
        except PeerSetupError:
            raise first from None
        MOVED_USED[peer.cls] = then
        return cls


def _import_class(qualified, where):
    module_name, _, name = qualified.partition(":")
    if not name:
        raise PeerSetupError(f"{where}: cls: {qualified!r} must be 'module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise PeerSetupError(f"{where}: cls: cannot import {module_name} ({e})") from None
    cls = getattr(module, name, None)
    if cls is None:
        import difflib

        near = difflib.get_close_matches(name, [n for n in dir(module) if not n.startswith("_")], n=3)
        raise PeerSetupError(f"{where}: cls: {module_name} has no class {name}"
                             + (f" (did you mean {', '.join(near)}?)" if near else ""))
    return cls


def _check_takes(peer, params):
    defaults = tables().reference_defaults(peer.reference)
    for key, value in params.items():
        if key in peer.takes or key not in defaults:
            continue
        default = defaults[key]
        if value == default or (isinstance(default, float) and isinstance(value, (int, float)) and float(value) == default):
            continue
        raise Unsupported(f"{peer.cls.split(':')[1]} has no counterpart for {key} = {value!r} "
                          f"(the mapping at {os.path.basename(peer.where)} maps {', '.join(peer.takes) or 'no parameter'})")


def register_table(table, library, conventions=None, since=None):
    """Registers every Peer of `table` with distmetrics, one factory per registered name (the
    reference's, or a Peer's own ``name``, "Average[SumMetric]"). Returns {name: [Peer, ...]}.
    A Peer whose class the installed release does not have is "not in this release": it leaves
    `table` (removed in place, so that what reads the table sees the classes that exist), is listed
    in NOT_IN_RELEASE, and the variants that would pick it skip with that reason; so does a
    variant whose constructor arguments the installed class does not take. `since`: the release
    the rows were triaged on, where a missing class is bad input instead."""
    from . import registry

    caller = sys._getframe(1)
    caller_where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
    require(library, caller_where)
    NOT_IN_RELEASE[(library, "table")] = []
    strict = _triaged(library, since, caller.f_code.co_filename)  # the same for every row
    by_name: Dict[str, list] = {}
    for peer in table:
        if not isinstance(peer, Peer):
            raise PeerSetupError(f"{caller_where}: table: {peer!r} is not a Peer")
        if peer.inputs not in CONVERSIONS:
            raise PeerSetupError(f"{peer.where}: inputs: unknown conversion {peer.inputs!r}; known: "
                                 f"{', '.join(CONVERSIONS)}")
        unknown = [t for t in peer.takes if t not in tables().reference_param_names()]
        if unknown:
            raise PeerSetupError(f"{peer.where}: takes: {', '.join(unknown)} is no reference parameter")
        name = peer.name or peer.reference
        if name != peer.reference and not (name.startswith(peer.reference + "[") and name.endswith("]")
                                           and len(name) > len(peer.reference) + 2):
            raise PeerSetupError(f"{peer.where}: name: {name!r} must be the reference's name {peer.reference!r} or "
                                 f"'{peer.reference}[VARIANT]' (a second registration of it)")
        # A class the census of the installed release does not define is "not in this release"
        # (its variants skip with that reason; the row stays for the releases that have it);
        # a missing class of the release the rows were triaged on is bad input now, not a skip later.
        peer.absent = absent_from_release(peer, library, strict=strict)
        if peer.absent:
            NOT_IN_RELEASE[(library, "table")].append((peer.cls, peer.where, peer.absent))
        by_name.setdefault(name, []).append(peer)

    for name, peers in by_name.items():
        def factory(params, peers=peers, name=name):
            fitting = [p for p in peers if p.when is None or p.when(params)]
            if not fitting:
                classes = ", ".join(p.cls.split(":")[1] for p in peers)
                raise Unsupported(f"{library} has no class for {name} with these parameters "
                                  f"({', '.join(f'{k}={v!r}' for k, v in sorted(params.items()))}); mapped: {classes}")
            peer = fitting[0]
            if peer.absent:
                raise Unsupported(f"{NOT_IN_RELEASE_TEXT}: {peer.absent}")
            _check_takes(peer, params)
            cls = _resolve(peer)
            kwargs = peer.kwargs(params)
            # A row's own `build` takes the keyword arguments (Ignite's DiceCoefficient(cm) gets
            # {"params": ...}): only a class built as cls(**kwargs) is checked against its signature.
            untaken = [] if peer.build else [k for k in kwargs if not takes_parameter(cls, k)]
            if untaken:
                raise Unsupported(f"{NOT_IN_RELEASE_TEXT}: {library} {installed_version(library)}: "
                                  f"{peer.cls.split(':')[1]} takes no {', '.join(untaken)}")
            return peer.build(cls, kwargs) if peer.build else cls(**kwargs)

        registry.register(name, factory, adapter=peers[0].adapter,
                          description=f"{library}: " + ", ".join(p.cls.split(":")[1] for p in peers),
                          transform=_Transform(peers),
                          compute=_value_of(peers),
                          conventions=_conventions(conventions, peers))
    table[:] = [p for p in table if not p.absent]
    return by_name


def _conventions(library_wide, peers):
    """A name's conventions for a variant: the library's, then those of the class its parameters
    pick (a Peer's ``conventions`` is a dict or a function of the parameters)."""
    base = dict(library_wide or {})
    if all(not p.conventions for p in peers):
        return base

    def for_params(params):
        fitting = [p for p in peers if p.when is None or p.when(params)] or peers
        own = fitting[0].conventions
        return dict(base, **(own(params) if callable(own) else own))
    return for_params


class _Value:
    """The value read-out of the class a variant's parameters pick; the adapter's where it has none."""

    def __init__(self, peers):
        self.peers = peers

    def for_params(self, params):
        fitting = [p for p in self.peers if p.when is None or p.when(params)] or self.peers
        return fitting[0].value

    def __call__(self, metric):  # without parameters: the first class's read-out
        read = self.for_params({}) if all(p.when is None for p in self.peers) else None
        return read(metric) if read else metric.compute()


def _value_of(peers):
    return _Value(peers) if any(p.value for p in peers) else None


class _Transform:
    """The input conversion of the class a variant's parameters pick (``for_params``: the host
    asks once per metric built)."""

    def __init__(self, peers):
        self.peers = peers

    def for_params(self, params):
        fitting = [p for p in self.peers if p.when is None or p.when(params)] or self.peers
        convert = CONVERSIONS[fitting[0].inputs](params)
        return convert or (lambda input, target, weight: (input, target, weight))

    def __call__(self, input, target, weight):  # without parameters: the first class's conversion
        return self.for_params({})(input, target, weight)


# -- Classes checked against themselves ----------------------------------------------------------
#
# A class with no reference counterpart (torchmetrics' Specificity, Ignite's regression family,
# torcheval's Sum...) is registered under its own identity, "<library>.<Class>", and runs on
# scenarios generated for it (peers/scenarios.py writes them; the ordinary scenario loader reads
# them): data of its input shape from an existing generator, the default script, and every
# property that needs no independent value (equal_to_single against its own single-process run,
# ranks_agree, idempotent, update_after_compute, reset_replay, batch_invariant,
# accepts_empty_batch, no_hang, state_roundtrip; merge_state where the library has it).

# The input shapes the existing generators make (docs/scenarios.md, "Data generators"): the
# scenario's [data] table for each. Sizes are small on purpose: a class is checked for how it
# syncs, not for its formula, and the peer run holds a few hundred classes.
SHAPES: Dict[str, dict] = {
    "binary_probabilities": dict(generator="binary", params={"output": "probabilities"}),
    "binary_logits": dict(generator="binary", params={"output": "logits"}),
    "binary_labels": dict(generator="binary", params={"output": "labels"}),
    "multiclass_logits": dict(generator="multiclass", params={"num_classes": 4, "output": "logits"}),
    "multiclass_probabilities": dict(generator="multiclass", params={"num_classes": 4, "output": "probabilities"}),
    "multiclass_labels": dict(generator="multiclass", params={"num_classes": 4, "output": "labels"}),
    "multilabel_probabilities": dict(generator="multilabel", params={"num_labels": 3, "output": "probabilities"}),
    "multilabel_labels": dict(generator="multilabel", params={"num_labels": 3, "output": "labels"}),
    "regression": dict(generator="regression", params={"scale": 2.0, "noise": 0.5}, dtype="float64"),
    "regression_positive": dict(generator="regression", params={"offset": 10.0, "scale": 1.0, "noise": 0.5},
                                dtype="float64"),
    "regression_2d": dict(generator="regression", params={"dims": 3, "scale": 2.0, "noise": 0.5}, dtype="float64"),
    "values": dict(generator="values", params={"distribution": "normal", "mean": 1.0, "scale": 2.0}, dtype="float64"),
    "values_positive": dict(generator="values", params={"distribution": "uniform", "low": 0.5, "high": 2.0},
                            dtype="float64"),
    "images": dict(generator="images", params={"channels": 3, "height": 16, "width": 16}),
    "images_gray": dict(generator="images", params={"channels": 1, "height": 16, "width": 16}),
    # Audio (the `waveforms` generator): [N, 1, 64] mono signals (each a sum of three sinusoids) and
    # a noisy estimate; two speakers of 32 samples, [N, 2, 32], the estimate's speakers in the
    # target's order or (permuted) swapped in every sample, so the best permutation is not the identity.
    "audio": dict(generator="waveforms", params={"sources": 1, "length": 64, "noise": 0.3}, dtype="float64"),
    "audio_speakers": dict(generator="waveforms", params={"sources": 2, "length": 32, "noise": 0.3}, dtype="float64"),
    "audio_speakers_permuted": dict(generator="waveforms", params={"sources": 2, "length": 32, "noise": 0.3,
                                                                   "permuted": True}, dtype="float64"),
    # Distributions over 3 outcomes (the `distributions` generator): p and q as probabilities, or as
    # logits (Ignite's divergences take logits).
    "distributions": dict(generator="distributions", params={"dims": 3}, dtype="float64"),
    "distributions_logits": dict(generator="distributions", params={"dims": 3, "output": "logits",
                                                                    "target_output": "logits"}, dtype="float64"),
    # Speech-length signals for STOI and SRMR: mono signals of 4800 samples ([N, 1, 4800]: 0.48 s at
    # 10 kHz, more than STOI's 30 frames of 256; 0.6 s at 8 kHz for SRMR's modulation windows), the
    # estimate the target plus noise (the `waveforms` generator).
    "speech": dict(generator="waveforms", params={"sources": 1, "length": 4800, "noise": 0.3}, dtype="float64"),
    # Videos for VMAF: 12 channels of 32 x 32 as 3 colour channels of 4 frames ([N, 3, 4, 32, 32]
    # once the row reshapes them), the prediction the target plus noise.
    "video": dict(generator="images", params={"channels": 12, "height": 32, "width": 32, "noise": 0.05}),
    # Documents of 5 queries interleaved (document i to query i mod 5: every query spans every
    # rank's shard, no rank holds a whole one), query 0 with no relevant document; the target's
    # two columns are the relevance and the query id (retrieval_update splits them).
    "retrieval": dict(generator="retrieval", params={"queries": 5, "empty_queries": 1}, dtype="float64"),
    "retrieval_probabilities": dict(generator="retrieval", params={"queries": 5, "empty_queries": 1,
                                                                   "output": "probabilities"}, dtype="float64"),
    "retrieval_graded": dict(generator="retrieval", params={"queries": 5, "empty_queries": 1, "relevance": "graded",
                                                            "max_relevance": 3, "positive_rate": 0.5}, dtype="float64"),
    # Binary predictions of 3 groups, the third rare (a rank may hold none of it), group g's
    # positive rate 0.3 + 0.15 g; target's two columns are the label and the group id.
    "fairness": dict(generator="fairness", params={"groups": 3, "group_weights": [4.0, 4.0, 1.0]}, dtype="float64"),
    "fairness_labels": dict(generator="fairness", params={"groups": 3, "group_weights": [4.0, 4.0, 1.0],
                                                          "output": "labels"}),
    # Hypothesis and reference strings (structured samples: python/distmetrics/text_data.py), one
    # reference a sample or two; some hypotheses empty.
    "text": dict(generator="text", params={}),
    "text_multi": dict(generator="text", params={"references": 2}),
    # Language-model outputs: sequences of 4 tokens over a vocabulary of 5, [N, 4, 5] logits and
    # [N, 4] next tokens; a fifth of the positions padding (ignore_index -100), a tenth of the
    # sequences padding throughout (a batch, or a rank, may count no token).
    "token_logits": dict(generator="token_logits", params={"vocab": 5, "seq_len": 4, "ignore_index": -100}),
    # Masks of 8 x 8 pixels, 3 classes: the predicted class and the true class per pixel, both
    # [N, H, W] int64 (torchmetrics' segmentation classes take them as input_format="index").
    # Gray images of 41 x 41 pixels: the smallest VisualInformationFidelity's four scales take.
    "images_41": dict(generator="images", params={"channels": 1, "height": 41, "width": 41}),
    # Object detections of 64 x 64 images (structured samples: python/distmetrics/detection_data.py):
    # per image a dict of predicted boxes, scores and labels and one of true boxes and labels, 3
    # classes, at most 3 true boxes, a fifth of the images with none.
    "detection": dict(generator="detection", params={}),
    "segmentation_labels": dict(generator="segmentation", params={"num_classes": 3, "height": 8, "width": 8,
                                                                  "output": "labels"}),
}


def fairness_update(metric, input, target, weight):
    """update(preds, target, groups) of a torchmetrics fairness class from the `fairness`
    generator's batch: target [N, 2] int64, its column 0 the label, column 1 the group id."""
    if weight is not None:
        raise Unsupported(f"{type(metric).__name__}.update takes no per-sample weight: weighted variants are skipped")
    metric.update(input, target[:, 0], target[:, 1])


def ignite_fairness_update(metric, input, target, weight):
    """Ignite's subgroup classes: update((y_pred, y, group_labels)) from the same batch."""
    if weight is not None:
        raise Unsupported(f"Ignite's {type(metric).__name__}.update takes no per-sample weight: weighted variants are skipped")
    metric.update((input, target[:, 0], target[:, 1]))


def ignite_detection_update(metric, input, target, weight):
    """Ignite's object-detection classes: update((y_pred, y)) of lists of dicts keyed "bbox",
    "scores", "labels", from the `detection` generator's dicts (keyed "boxes", as torchmetrics)."""
    if weight is not None:
        raise Unsupported(f"Ignite's {type(metric).__name__}.update takes no per-sample weight: weighted variants are skipped")
    y_pred = [{"bbox": p["boxes"], "scores": p["scores"], "labels": p["labels"]} for p in input]
    y = [{"bbox": t["boxes"], "labels": t["labels"]} for t in target]
    metric.update((y_pred, y))


def retrieval_update(metric, input, target, weight):
    """update(preds, target, indexes=...) of a retrieval class from the `retrieval` generator's
    batch: input the scores, target [N, 2] int64, its column 0 the relevance and column 1 the
    query id (the batch carries no third tensor: docs/scenarios.md, "Data generators")."""
    if weight is not None:
        raise Unsupported(f"{type(metric).__name__}.update takes no per-sample weight: weighted variants are skipped")
    metric.update(input, target[:, 0], indexes=target[:, 1])
SHAPE_DEFAULTS = dict(num_samples=40, batch_size=4)
# The shard policies every class runs at 3 ranks (a first, a middle and a last rank; an odd
# split): a random split (unequal shards), a rank with no data (the sync of empty and default
# states), a label-skewed split (each rank sees a few labels only: per-rank statistics, a class
# count a rank never sees) and whole batches dealt in turn (every rank's samples out of global
# order). `skewed` is left out for structured samples (text, detection: no label to order by, so
# it would split as `even`; `distmetrics tables --json`'s generators say which).
OWN_SHARDS = ("uneven", "empty_rank", "skewed", "round_robin")
OWN_WORLD_SIZES = (3,)
# The variant plan of a class checked against itself: one scenario file per entry, (the file's
# suffix, world sizes, shard policies; None: the row's own `shards`, else OWN_SHARDS). Beside the
# 3-rank variants, an even split at 2 ranks (every rank has data, so a class whose 3-rank variants
# die on a mechanism of the empty or short rank still has every property judged at a world size
# of its own) and at 4 ranks an even split and the sampler's deal (`padded`: sample i to rank
# i % 4, as torch's DistributedSampler deals; 40 samples at 4 ranks need no padding, so no sample
# counts twice: the double count of PyTorch #25162 is the core scenario
# regression/pytorch_25162_padded_sampler's, not a class's). A class counts as checked when each
# property was judged at 2 and at 3 or more ranks (peers/judged.py).
OWN_PLAN = (("", OWN_WORLD_SIZES, None), (".ws2", (2,), ("even",)), (".ws4", (4,), ("even", "padded")))
# Classes fed probabilities (the Binary and Multilabel rows) are fed logits too, at 3 ranks on an
# uneven split: a class that decides per batch whether its input needs a sigmoid (the per-batch
# normalisation found on RocAuc) shows it only there. The entry's last field: the data parameters
# it changes; it applies to the rows whose shape's generator makes probabilities with an `output`
# parameter that takes logits.
OWN_PLAN_LOGITS = (".logits", (3,), ("uneven",), dict(params=dict(output="logits")))
OWN_PLAN_EQUAL_UPDATES = (".equal", (2, 3, 4), ("even",), dict(num_samples=48, batch_size=4), ("update empty ranks=0",))
# A class whose compute() raises before any update (found by peers/scenarios.py, which asks each
# class once in a process of its own: ValueError on an empty list state, Ignite's
# NotComputableError) is checked for what comes after the raise: at 2 and 3 ranks (a class counts
# as checked with each property judged at both), every rank computes
# before its first update and must raise that error as the single process does, then updates with
# all its data and computes twice: the value the single process gives, on every rank
# (recovers_after_error), twice alike (idempotent). The split is OWN_PLAN_EQUAL_UPDATES' (every rank
# the same number of whole batches), so that what fails there is the raise's consequence, not a
# mechanism of an uneven split the other files already show. A class whose compute before any
# update kills its process gets no file (peers/scenarios.py names it; its repro shows it).
OWN_PLAN_RAISES = (".raises", (2, 3), ("even",), dict(num_samples=48, batch_size=4))
RAISES_SCRIPT = ("compute", "update rest", "compute", "compute")
# The computes of that script by the role the property table's `needs_compute` names (a fresh
# compute, one after an update, a repeat): the file lists every default property those can judge
# (`distmetrics tables --json`); expected_error and recovers_after_error are judged wherever
# [expect] names an error.
RAISES_COMPUTE_ROLES = ("fresh", "after_update", "repeat")


def channel_statistics(probabilities=False):
    """A small fixed feature extractor for the classes that take one (FID, KID, InceptionScore,
    MIFID), never downloaded weights: an image [N, 3, H, W] (float, or uint8 as torchmetrics passes
    it) becomes its channels' means and standard deviations, 6 features; with `probabilities`, their
    softmax (a distribution over 6 classes: what Ignite's InceptionScore takes)."""
    import torch

    class ChannelStatistics(torch.nn.Module):
        num_features = 6

        def forward(self, x):
            x = x.float()
            features = torch.cat([x.mean(dim=(2, 3)), x.std(dim=(2, 3))], dim=1)
            return features.softmax(dim=1) if probabilities else features

    return ChannelStatistics()


def own_name(library, cls):
    """The name a class checked against itself is registered under: "torchmetrics.BinarySpecificity"."""
    return f"{library}.{cls.partition(':')[2]}"


@dataclass
class Own:
    cls: str                                # "module:Class" in the library
    shape: str                              # a key of SHAPES: the data the generated scenarios use
    kwargs: dict = field(default_factory=dict)  # constructor keyword arguments
    inputs: str = "as_is"                   # a key of CONVERSIONS
    adapter: str = "auto"
    conventions: dict = field(default_factory=dict)
    build: Optional[Callable] = None        # (cls, kwargs) -> metric, when a class is not built as cls(**kwargs)
    value: Optional[Callable] = None        # (metric) -> value, instead of the adapter's compute
    update: Optional[Callable] = None       # (metric, input, target, weight), instead of the adapter's update
    reference: str = ""                     # "module:attr" of an independent reference (scikit-learn), or ""
    reference_kwargs: dict = field(default_factory=dict)
    data: dict = field(default_factory=dict)    # overrides of the shape's [data] table (params merge)
    properties: Tuple[str, ...] = ()        # more than the defaults (state_roundtrip is always listed)
    tolerance: dict = field(default_factory=dict)   # the scenario's [tolerance] (rtol, atol)
    shards: Tuple[str, ...] = ()            # instead of OWN_SHARDS: a class whose finding costs a deadline per variant
    # Instead of every property: the only ones this class can be judged on (a time or hardware
    # reading, whose value no other run repeats: ("ranks_agree",); no_hang is always checked).
    only: Tuple[str, ...] = ()
    note: str = ""
    # Per-release overrides, where a release needs another constructor or conversion than the one
    # the row was triaged on: {"<1.6": dict(kwargs=..., inputs=...)}, the first range that holds
    # for the installed release applies (python/distmetrics/peers.py, for_release).
    releases: dict = field(default_factory=dict)
    name: str = ""                          # filled in: own_name(library, cls), or a given "<library>.<Class>[...]"
    where: str = ""
    release_note: str = ""                  # filled in: which of `releases` applied, or ""

    def __post_init__(self):
        frame = sys._getframe(2)
        self.where = f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _release(version):
    return tuple(int(part) for part in version.split("+")[0].split(".")[:3] if part.isdigit())


# -- Rows over a range of releases ----------------------------------------------------------------
#
# A mapping's rows were triaged on one release (`since`), and hold over the others: on another
# release (ci/run_peers.sh --release X, --from CHECKOUT) a row whose class the installed release
# does not define (peers/census.py, read from its source), or whose constructor does not take a
# keyword argument the row passes (inspect.signature over the class's __init__s), is "not in this
# release": listed here and in the run's summary (peers/release.py), never an error and never
# silent; the other rows run. An Own row that needs other arguments or another conversion on some
# releases says so in its `releases` field.

NOT_IN_RELEASE_TEXT = "not in this release"
# (library, "table" | "own") -> [("module:Class", "file:line" of the row, why)]
NOT_IN_RELEASE: Dict[Tuple[str, str], list] = {}


# Classes that moved between releases, declared by a mapping (`moved`): {library: [(version range,
# the module now, the module then)]}. A row names where the triaged release has its class; on a
# release the range holds for, a class its module lacks is looked up in the module it had then
# (Ignite's ROC_AUC, AveragePrecision, CohenKappa and the regression classes were in
# ignite.contrib.metrics before 0.5.0): the row runs that class instead of being "not in this
# release". MOVED_USED: {row's "module:Class": the "module:Class" it ran}, as _resolve found them.
MOVED: Dict[str, list] = {}
MOVED_USED: Dict[str, str] = {}


def moved(library, spec, now, then):
    """Declares that the classes of module `now` (and its submodules) were in `then` on the
    releases of `library` in the range `spec` ("<0.5")."""
    _spec_holds(spec, "0")  # a malformed range is bad input here, not at the first row
    MOVED.setdefault(library, [])
    if (spec, now, then) not in MOVED[library]:
        MOVED[library].append((spec, now, then))


def moved_from(qualified):
    """Where the installed release had "module:Class" by a declared move (the module then, with
    the same submodule path and class name), or None where no move covers it."""
    module, _, name = qualified.partition(":")
    library = module.split(".")[0]
    version = installed_version(library)
    if version == "?":
        return None
    for spec, now, then in MOVED.get(library, []):
        if (module == now or module.startswith(now + ".")) and _spec_holds(spec, version):
            return f"{then}{module[len(now):]}:{name}"
    return None


def located(library, qualified):
    """"module:Class" as the installed release's census names it: `qualified`, or its declared
    older module where the census finds the class there and not where the row says."""
    then = moved_from(qualified)
    if then and census_defines(library, qualified) is False and census_defines(library, then):
        return then
    return qualified


def not_in_release(library):
    """The rows of `library` the installed release has no class (or constructor argument) for, as
    the last registration found them: [("module:Class", where, why)]."""
    return NOT_IN_RELEASE.get((library, "table"), []) + NOT_IN_RELEASE.get((library, "own"), [])


def installed_version(library):
    module = sys.modules.get(library)
    return getattr(module, "__version__", "?") if module else "?"


_LISTED_RELEASES: Dict[tuple, object] = {}


def _listed_releases(expected):
    """The top-level `releases` of an expected.toml, or None (no file, no key, or a malformed file:
    peers/expected.py reports those). Read once per version of the file: register_table asks for
    every row, and parsing the whole file (300 KB of findings) each time cost seconds a run."""
    try:
        st = os.stat(expected)
    except OSError:
        return None
    key = (expected, st.st_mtime_ns, st.st_size)
    if key not in _LISTED_RELEASES:
        try:
            import tomllib

            with open(expected, "rb") as f:
                _LISTED_RELEASES[key] = tomllib.load(f).get("releases")
        except Exception:  # a malformed file is peers/expected.py's to report
            _LISTED_RELEASES[key] = None
    return _LISTED_RELEASES[key]


def _triaged(library, since, mapping_file):
    """Whether the installed release is one the rows were triaged on: `since`, or a release the
    mapping's expected.toml lists ("1.9.0 on torch 2.15", beside peers/<library>/metrics.py), on
    this torch; also where neither says (no expected.toml, no `since`). There a class that is
    missing is bad input (a typo), not a row out of its range."""
    import re

    version = installed_version(library)
    torch = sys.modules.get("torch")
    m = re.match(r"(\d+)\.(\d+)", getattr(torch, "__version__", "") or "")
    key = f"{version} on torch {m.group(1)}.{m.group(2)}" if m else None
    expected = os.path.join(os.path.dirname(os.path.abspath(mapping_file)), "expected.toml")
    listed = _listed_releases(expected)
    if since and _release(version) == _release(since):
        return True
    if listed:
        return key in listed
    return not since


_CENSUS: Dict[str, object] = {}


def census_defines(library, qualified):
    """Whether the installed release of `library` defines "module:Class" (directly, or re-exported
    by a package's __init__), by peers/census.py's reading of its source (nothing imported); None
    where the census is not at hand (an install without the source tree's peers/)."""
    census_py = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                             "peers", "census.py")
    if library not in _CENSUS:
        if not os.path.isfile(census_py):
            return None
        import importlib.util

        spec = importlib.util.spec_from_file_location("peers_census_for_rows", census_py)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        _CENSUS[library] = module.defined(library)
    return _CENSUS[library](qualified)


def takes_parameter(cls, key):
    """Whether `cls(key=...)` names a parameter of its own __init__ or of a base's (a catch-all
    **kwargs is no evidence: torchmetrics' Metric raises on a keyword it does not know)."""
    import inspect

    if not inspect.isclass(cls):
        # A factory function (Ignite's DiceCoefficient builds a MetricsLambda): its own signature.
        try:
            parameter = inspect.signature(cls).parameters.get(key)
        except (TypeError, ValueError):
            return True  # nothing to read: no evidence that it does not take it
        return parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY)
    for klass in inspect.getmro(cls):
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        try:
            parameter = inspect.signature(init).parameters.get(key)
        except (TypeError, ValueError):
            continue
        if parameter is not None and parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
            return True
    return False


def absent_from_release(row, library, strict, kwargs=None):
    """Why the installed release cannot build `row` (a Peer or an Own), or "": its class is not
    defined there, or its constructor takes no `kwargs` key. `strict` (the triaged release): a
    class that does not resolve is a PeerSetupError, as before."""
    version = installed_version(library)
    name = row.cls.partition(":")[2]
    try:
        cls = _resolve(row)
    except PeerSetupError as e:
        if strict:
            raise
        then = moved_from(row.cls)
        if census_defines(library, row.cls) is False and (then is None or census_defines(library, then) is False):
            return (f"{library} {version} has no {name} ({row.cls}: not in the census of its source"
                    + (f", nor {then}" if then else "") + ")")
        # The release defines it and it does not import here (an optional package this release
        # needs, an API of torch it uses): reported with the row's, not the run's, failure.
        return f"{library} {version} defines {name} but it does not import here: {e}"
    untaken = [k for k in (kwargs or {}) if not takes_parameter(cls, k)]
    if untaken:
        return f"{library} {version}: {name} takes no {', '.join(untaken)} (the row passes it)"
    return ""


def _spec_holds(spec, version):
    """A version range of a row's `releases` ("<1.6", ">=1.4,<1.6", "==1.5.2") holds for `version`."""
    import operator
    import re

    ops = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge, "==": operator.eq,
           "!=": operator.ne}
    for clause in spec.split(","):
        m = re.fullmatch(r"\s*(<=|>=|==|!=|<|>)\s*([0-9][0-9.]*)\s*", clause)
        if not m:
            raise ValueError(f"not a version range: {spec!r} (clauses like '<1.6' or '>=1.4,<1.6')")
        if not ops[m.group(1)](_release(version), _release(m.group(2))):
            return False
    return True


def for_release(row, version):
    """`row` with the overrides of the first of its `releases` ranges that holds for `version`
    (a copy; the row itself where none holds)."""
    import dataclasses

    for spec, overrides in row.releases.items():
        try:
            holds = _spec_holds(spec, version)
        except ValueError as e:
            raise PeerSetupError(f"{row.where}: releases: {e}") from None
        if holds:
            unknown = [k for k in overrides if k not in {f.name for f in dataclasses.fields(row)} or k in ("cls", "where")]
            if unknown:
                raise PeerSetupError(f"{row.where}: releases: {spec}: {', '.join(unknown)} cannot be overridden")
            out = dataclasses.replace(row, **overrides)
            out.where, out.release_note = row.where, f"{spec}: {', '.join(overrides)} of its own"
            return out
    return row


def register_own(rows, library, since=None):
    """Registers every Own row of `rows` under its own identity (own_name). Returns {name: Own}.
    `since` ("1.9.0"): the release the rows were triaged on. On another release a row's
    `releases` overrides apply, and a row whose class (or constructor argument) the installed
    release lacks is not registered: listed in NOT_IN_RELEASE, "not in this release" (the other
    rows run). On the torch 1.13 peer run (an older release, Debian's torch, no generated
    scenarios: ci/run_peers.sh) none is registered, as before. Bad input (an unknown shape,
    conversion or class of the triaged release, a duplicate name) is a PeerSetupError naming the
    row's file and line."""
    from . import registry

    caller = sys._getframe(1)
    caller_where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
    installed = require(library, caller_where).__version__
    out: Dict[str, Own] = {}
    NOT_IN_RELEASE[(library, "own")] = []
    torch = sys.modules.get("torch")
    if since and _release(installed) < _release(since) and torch is not None and _release(torch.__version__) < (2,):
        return out
    strict = _triaged(library, since, caller.f_code.co_filename)
    for row in rows:
        if not isinstance(row, Own):
            raise PeerSetupError(f"{caller_where}: rows: {row!r} is not an Own row")
        row = for_release(row, installed)
        if row.shape not in SHAPES:
            raise PeerSetupError(f"{row.where}: shape: unknown input shape {row.shape!r}; known: {', '.join(SHAPES)}")
        if row.inputs not in CONVERSIONS:
            raise PeerSetupError(f"{row.where}: inputs: unknown conversion {row.inputs!r}; known: {', '.join(CONVERSIONS)}")
        row.name = row.name or own_name(library, row.cls)
        if row.name in out:
            raise PeerSetupError(f"{row.where}: cls: {row.name} is registered twice (first at {out[row.name].where}); "
                                 f"give the second a name of its own, '{row.name}_VARIANT' (brackets are a mapped row's reference variant)")
        absent = absent_from_release(row, library, strict, row.kwargs)

        def factory(params, row=row):
            cls = _resolve(row)
            return row.build(cls, dict(row.kwargs)) if row.build else cls(**row.kwargs)

        if not absent and not strict:
            # On a release the rows were not triaged on, a class may exist and refuse to be built
            # (torchmetrics 1.4.1's CHRFScore: "temporarily removed ... licensing"): one build here
            # says so, instead of a scenario file that stops the whole conform at its validation.
            try:
                factory({})
            except Exception as e:  # noqa: BLE001 (whatever the release raises is the reason)
                absent = (f"{library} {installed_version(library)}: {row.cls.partition(':')[2]} cannot be built: "
                          f"{type(e).__name__}: {' '.join(str(e).split())[:200]}")
        if absent:
            NOT_IN_RELEASE[(library, "own")].append((row.cls, row.where, absent))
            continue
        out[row.name] = row

        convert = CONVERSIONS[row.inputs]({})
        registry.register(row.name, factory, adapter=row.adapter, description=f"{library}: {row.cls.split(':')[1]}",
                          transform=convert, update=row.update, compute=row.value, conventions=row.conventions)
    return out


# The libraries whose rows judge merge_state: torcheval's (its merge_state(metrics) is how its
# toolkit syncs). torchmetrics' merge_state (one state at a time through its adapter, where the
# class allows it: TorchmetricsAdapter.can_merge) is judged by explore and not yet by the peer run:
# listed, 26 classes failed it in a run of 6 December, untriaged (docs/peers.md, "Left to do").
# Ignite has none.
MERGE_STATE_LIBRARIES = ("torcheval", "torchmetrics")


def own_data(row, data_sizes=None):
    """The [data] table of `row`'s scenarios: its shape's, the row's overrides, then a plan entry's
    (`data_sizes`: num_samples, batch_size, and `params` merged into the generator's)."""
    data = dict(SHAPE_DEFAULTS, **SHAPES[row.shape])
    data["params"] = dict(data.get("params", {}), **row.data.get("params", {}))
    data.update({k: v for k, v in row.data.items() if k != "params"})
    entry = dict(data_sizes or {})
    data["params"].update(entry.pop("params", {}))
    data.update(entry)
    return data


def own_shards(row, shards=None):
    """The shard policies of one of `row`'s scenario files: `shards` (a plan entry's), else the row's
    own, else OWN_SHARDS without `skewed` where the samples are structured (no label to order by:
    it would split as `even`)."""
    if shards or row.shards:
        return tuple(shards or row.shards)
    generator = SHAPES[row.shape]["generator"]
    structured = tables().generators.get(generator, {}).get("structured", False)
    return tuple(s for s in OWN_SHARDS if not (structured and s == "skewed"))


# The conversions that hand the class its input as generated (the target may change type), so logits
# reach it as logits; the others (labels at a threshold, scores per class) make something else of it.
LOGITS_CONVERSIONS = ("as_is", "long_target")


def takes_logits(row):
    """Whether `row` is fed probabilities by a generator that makes logits too (OWN_PLAN_LOGITS): the
    Binary and Multilabel rows, unless the row chose its data itself."""
    data = own_data(row)
    return data["params"].get("output") == "probabilities" and data["generator"] in ("binary", "multilabel") \
        and row.inputs in LOGITS_CONVERSIONS


def own_scenario(row, library, world_sizes=OWN_WORLD_SIZES, shards=None, data_sizes=None, left_out=(),
                 raises=None):
    """The scenario file (TOML text) that checks `row` against itself: its shape's data, the
    default script, every property that needs no independent value; at `world_sizes` with
    `own_shards(row, shards)`. `data_sizes` (num_samples, batch_size, params) replace the defaults,
    and the steps `left_out` of the runner's default script are left out of it (a plan entry's:
    OWN_PLAN_EQUAL_UPDATES). `raises` (OWN_PLAN_RAISES): the script RAISES_SCRIPT instead, with
    `[expect] error = raises` at its first compute."""
    import zlib

    data = own_data(row, data_sizes)
    shards = own_shards(row, shards)
    for policy in shards:  # the sampler's padding would count samples twice (PyTorch #25162)
        if policy == "padded" and any(data["num_samples"] % w for w in world_sizes):
            raise PeerSetupError(f"{row.where}: `padded` at world sizes {list(world_sizes)} would pad "
                                 f"{data['num_samples']} samples and count some twice; give it a sample count "
                                 f"every world size divides")
    data["seed"] = zlib.crc32(row.name.encode()) % 100000
    properties = ["state_roundtrip", *row.properties]
    if row.reference and "agrees_with_reference" not in properties:
        properties.append("agrees_with_reference")
    if library in MERGE_STATE_LIBRARIES and "merge_state" not in properties:
        properties.append("merge_state")
    where = "/".join(row.where.replace(os.sep, "/").split("/")[-3:])  # peers/<library>/metrics.py:LINE
    description = Multiline(f"{row.cls.replace(':', '.')} checked against itself (its own single-process run), "
                            f"on data of shape {row.shape}: generated by peers/scenarios.py from {where}.")
    # The defaults (the runner's default list for the default script: every property the script
    # can judge, batch_invariant) plus the listed ones: written out, so the file says what it checks.
    defaults = list(tables().default_properties)
    if row.only:
        defaults, properties = [], list(row.only)
    what = [("properties", defaults + properties)]
    if raises is not None:
        if raises not in tables().expected_errors:
            raise PeerSetupError(f"{row.where}: the compute before any update raised {raises}, which is not an "
                                 f"error type a scenario can expect ({', '.join(tables().expected_errors)})")
        judged = [name for name in tables().default_properties
                  if tables().properties[name]["needs_compute"] in (None, *RAISES_COMPUTE_ROLES)]
        what = [("script", list(RAISES_SCRIPT)),
                ("properties", judged + (["agrees_with_reference"] if row.reference else []))]
    if left_out:
        missing = [step for step in left_out if step not in tables().default_script]
        if missing:
            raise PeerSetupError(f"{row.where}: the plan leaves out {missing} of the default script, which the "
                                 f"runner's default script ({tables().default_script}) does not have")
        what.append(("script", [step for step in tables().default_script if step not in left_out]))
    groups = [("", [("description", description)]), ("", what), ("metric", [("name", row.name)]),
              ("data", [(key, data[key]) for key in ("generator", "seed", "num_samples", "batch_size", "dtype")
                        if key in data] + [("params", data["params"])]),
              ("variants", [("world_sizes", list(world_sizes)), ("backends", ["gloo"]), ("shards", list(shards))])]
    if row.reference:
        groups.append(("reference", [("python", row.reference)] +
                       ([("kwargs", row.reference_kwargs)] if row.reference_kwargs else [])))
    if row.tolerance:
        groups.append(("tolerance", list(row.tolerance.items())))
    if raises is not None:
        groups.append(("expect", [("error", raises), ("compute", 1)]))
    try:
        return scenario_toml(groups)
    except ScenarioTomlError as error:
        raise PeerSetupError(f"{row.where}: {error}") from None
