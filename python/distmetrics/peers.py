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

# The reference parameters a mapping may leave out when the scenario leaves them at their
# default (`distmetrics metrics --json`); a non-default value the class cannot take is a skip.
REFERENCE_DEFAULTS = {
    "threshold": 0.5, "top_k": 1, "average": "macro", "zero_division": 0.0, "beta": 1.0,
    "normalize": "none", "weights": "none", "sum_dtype": "float64", "p": 2.0, "eps": 1e-6, "k": 5,
    "alpha": 0.98, "num_classes": 0,
}


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

    def __post_init__(self):
        frame = sys._getframe(2)  # the table's line (1 is the dataclass __init__); cheap, unlike inspect.stack()
        self.where = f"{frame.f_code.co_filename}:{frame.f_lineno}"


@dataclass
class NoCounterpart:
    reference: str
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
    module_name, _, name = peer.cls.partition(":")
    if not name:
        raise PeerSetupError(f"{peer.where}: cls: {peer.cls!r} must be 'module:Class'")
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        raise PeerSetupError(f"{peer.where}: cls: cannot import {module_name} ({e})") from None
    cls = getattr(module, name, None)
    if cls is None:
        import difflib

        near = difflib.get_close_matches(name, [n for n in dir(module) if not n.startswith("_")], n=3)
        raise PeerSetupError(f"{peer.where}: cls: {module_name} has no class {name}"
                             + (f" (did you mean {', '.join(near)}?)" if near else ""))
    return cls


def _check_takes(peer, params):
    for key, value in params.items():
        if key in peer.takes or key not in REFERENCE_DEFAULTS:
            continue
        default = REFERENCE_DEFAULTS[key]
        if value == default or (isinstance(default, float) and isinstance(value, (int, float)) and float(value) == default):
            continue
        raise Unsupported(f"{peer.cls.split(':')[1]} has no counterpart for {key} = {value!r} "
                          f"(the mapping at {os.path.basename(peer.where)} maps {', '.join(peer.takes) or 'no parameter'})")


def register_table(table, library, conventions=None):
    """Registers every Peer of `table` with distmetrics, one factory per registered name (the
    reference's, or a Peer's own ``name``, "Average[SumMetric]"). Returns {name: [Peer, ...]}."""
    from . import registry

    caller = sys._getframe(1)
    caller_where = f"{caller.f_code.co_filename}:{caller.f_lineno}"
    require(library, caller_where)
    by_name: Dict[str, list] = {}
    for peer in table:
        if not isinstance(peer, Peer):
            raise PeerSetupError(f"{caller_where}: table: {peer!r} is not a Peer")
        if peer.inputs not in CONVERSIONS:
            raise PeerSetupError(f"{peer.where}: inputs: unknown conversion {peer.inputs!r}; known: "
                                 f"{', '.join(CONVERSIONS)}")
        unknown = [t for t in peer.takes if t not in REFERENCE_DEFAULTS and t not in (
            "task", "num_classes", "num_labels", "data_range", "loss", "expression", "operands")]
        if unknown:
            raise PeerSetupError(f"{peer.where}: takes: {', '.join(unknown)} is no reference parameter")
        name = peer.name or peer.reference
        if name != peer.reference and not (name.startswith(peer.reference + "[") and name.endswith("]")
                                           and len(name) > len(peer.reference) + 2):
            raise PeerSetupError(f"{peer.where}: name: {name!r} must be the reference's name {peer.reference!r} or "
                                 f"'{peer.reference}[VARIANT]' (a second registration of it)")
        _resolve(peer)  # a missing class is bad input now, not a skip later
        by_name.setdefault(name, []).append(peer)

    for name, peers in by_name.items():
        def factory(params, peers=peers, name=name):
            fitting = [p for p in peers if p.when is None or p.when(params)]
            if not fitting:
                classes = ", ".join(p.cls.split(":")[1] for p in peers)
                raise Unsupported(f"{library} has no class for {name} with these parameters "
                                  f"({', '.join(f'{k}={v!r}' for k, v in sorted(params.items()))}); mapped: {classes}")
            peer = fitting[0]
            _check_takes(peer, params)
            cls = _resolve(peer)
            kwargs = peer.kwargs(params)
            return peer.build(cls, kwargs) if peer.build else cls(**kwargs)

        registry.register(name, factory, adapter=peers[0].adapter,
                          description=f"{library}: " + ", ".join(p.cls.split(":")[1] for p in peers),
                          transform=_Transform(peers),
                          compute=_value_of(peers),
                          conventions=_conventions(conventions, peers))
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
