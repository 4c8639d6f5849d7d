"""Adapters: how a distmetrics Batch (input, target, weight) becomes a call on a metric object,
how its value and its local state are read, what set-up it needs once a variant's
torch.distributed group exists, and which conventions of its library the properties judge it by.
One class per library (and the plain callable); ADAPTERS names them. A registration may replace
any of the calls (``update=``, ``compute=``, ``state=``, ``transform=``) and override conventions
without a new adapter (registry.register)."""

import hashlib
import inspect
import sys

import torch

from .errors import Unsupported

# What a library does where libraries legitimately differ (docs/python.md, "Conventions"). An
# adapter declares its library's; a registration may override single keys.
#   compute      "synced": compute() is the global value (torchmetrics, Ignite);
#                "local": compute() is this rank's, the adapter reads the library's synced path
#   no_data      what compute() does when no rank has a sample: "raise" (an exception),
#                "zero" or "nan" (a value, often with a warning)
#   state_dict   "saves_state": state_dict() holds the state; "persistent_off": the library keeps
#                states out of state_dict() unless asked (torchmetrics' persistent(True), which
#                the adapter calls before saving, as a user checkpointing a metric must)
#   empty_batch  "accepted" or "rejected" (update() raises on a batch of no rows: the host then
#                does not feed such a batch, as a training loop would not, so the distributed
#                checks still run; docs/peers.md lists the rejection as the library's finding)
#   merge_state  whether merge_state(metrics) is the library's API: True (torcheval), False
#                (Ignite, whose __getattr__ makes one up), None: where the class has the method
#   precision    "float32": the metric computes in float32 where its value cannot show it (a
#                float32 sum divided as a Python float, Ignite's MeanSquaredError): golden and
#                the reference are then judged within float32 rounding, as a float32 result is
CONVENTION_KEYS = ("compute", "no_data", "state_dict", "empty_batch", "merge_state", "precision")


def _method(metric, name):
    """`metric`'s method `name`, looked up on its class: an instance __getattr__ that makes every
    attribute look present (Ignite's Metric.__getattr__ builds a MetricsLambda for any name) must
    not make a missing method look callable."""
    if not callable(getattr(type(metric), name, None)):
        return None
    return getattr(metric, name)


def _accepts(method, keyword):
    """Whether `method` takes the keyword argument `keyword` (by name, or through **kwargs when it
    names no parameter of that kind)."""
    try:
        params = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return False
    return keyword in params and params[keyword].kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                          inspect.Parameter.KEYWORD_ONLY)


class Adapter:
    """The plain-callable convention, and the base of the others.

    The object may be a callable ``fn(input, target) -> value`` (a stateless metric, computed on
    the data fed so far), or any object with ``update``/``compute``/``reset`` methods; subclasses
    say how those are called."""

    style = "callable"
    library = None            # the top-level module of the library whose classes this adapter takes
    base_class = None         # "module:Class" of the library's metric base (auto detection)
    # Names of the methods the metric object must have (checked before any variant runs).
    required = ()
    conventions = {"compute": "synced", "no_data": "raise", "state_dict": "saves_state",
                   "empty_batch": "accepted", "merge_state": None}

    def __init__(self, metric, conventions=None):
        self.metric = metric
        self.conventions = dict(type(self).conventions, **(conventions or {}))
        self._seen = []  # the plain callable's batches

    @classmethod
    def check(cls, metric):
        """Raises TypeError when `metric` does not fit this convention."""
        missing = [m for m in cls.required if _method(metric, m) is None]
        if missing:
            raise TypeError(f"a {cls.style}-style metric needs the method(s) {', '.join(missing)}; "
                            f"{type(metric).__name__} has no {', '.join(missing)}")
        if not cls.required and not callable(metric):
            raise TypeError(f"a plain-callable metric must be callable; {type(metric).__name__} is not")
        cls.check_update(metric)

    @classmethod
    def check_update(cls, metric):
        pass

    def setup(self):
        """Runs on every rank right after the variant's process group is made."""

    def update(self, input, target, weight):
        if weight is not None:
            raise Unsupported("a plain-callable metric takes (input, target): it has no weight argument")
        self._seen.append((input, target))

    def compute(self):
        if not self._seen:
            return self.metric(None, None)
        return self.metric(_joined([i for i, _ in self._seen]), _joined([t for _, t in self._seen]))

    def reset(self):
        self.metric.reset() if self.required else self._seen.clear()

    def state_tensors(self):
        """The metric's local state as named tensors, or None when it cannot be read. Never a
        collective: it runs between a rank's computes, on that rank alone."""
        if not self.required:
            out = {}
            for i, (x, y) in enumerate(self._seen):
                _tensors_in([x, y], f"batch{i}", out)
            return out
        return named_state(self.metric)

    # -- saving and merging state (state_roundtrip, merge_state) --
    def state_dict(self):
        """What state_roundtrip saves; None when the metric has no state_dict/load_state_dict."""
        if not self.required or _method(self.metric, "state_dict") is None or _method(self.metric, "load_state_dict") is None:
            return None
        if self.conventions["state_dict"] == "persistent_off" and _method(self.metric, "persistent") is not None:
            self.metric.persistent(True)
        return self.metric.state_dict()

    def load_state_dict(self, state):
        if self.conventions["state_dict"] == "persistent_off" and _method(self.metric, "persistent") is not None:
            self.metric.persistent(True)
        self.metric.load_state_dict(state)

    def can_merge(self):
        return bool(self.required) and self.conventions["merge_state"] is not False and all(
            _method(self.metric, m) is not None for m in ("merge_state", "state_dict", "load_state_dict"))

    def merge(self, others):
        """The library's merge_state of the other ranks' instances, called as it takes them: a
        list of metrics (torcheval's merge_state(metrics)); returns what it returns."""
        return self.metric.merge_state(others)

    def to(self, device):
        mover = _method(self.metric, "to")
        if mover is not None and str(device) != "cpu":
            result = mover(device)
            if result is not None:
                self.metric = result


def _joined(batches):
    """The batches fed so far as one: tensors concatenated, lists of structured samples joined."""
    if batches[0] is None:
        return None
    if isinstance(batches[0], list):
        return [sample for batch in batches for sample in batch]
    return torch.cat(batches)


def _check_positional(method, count, style, call):
    try:
        inspect.signature(method).bind(*([None] * count))
    except TypeError as e:
        raise TypeError(f"the {style} adapter calls {call}; "
                        f"{getattr(method, '__qualname__', method)}{inspect.signature(method)} does not ({e})") from None
    except ValueError:  # no signature (a builtin): trust it
        pass


def _weight_keyword(method, target, names):
    """The keyword by which `method` takes a per-sample weight: the first of `names` it accepts."""
    for name in names:
        if _accepts(method, name):
            return name
    return None


class TorchmetricsAdapter(Adapter):
    """torchmetrics: ``update(preds, target)`` (``update(value)`` for a metric without target:
    MeanMetric, SumMetric, MaxMetric...), ``compute()`` (synced), ``reset()``; state from
    ``metric_state`` (the states registered with ``add_state``, this rank's). A weight goes in as
    ``update(value, weight=w)`` (MeanMetric) or ``sample_weight=w`` where the class takes one;
    a class with neither skips a weighted variant."""

    style = "torchmetrics"
    library = "torchmetrics"
    base_class = "torchmetrics:Metric"
    required = ("update", "compute", "reset")
    conventions = dict(Adapter.conventions, no_data="zero", state_dict="persistent_off")
    weight_keywords = ("weight", "sample_weight")
    update_call = "update(preds, target)"

    @classmethod
    def check_update(cls, metric):
        base = _library_class(cls.base_class)
        if isinstance(base, type) and isinstance(metric, base):
            return  # the library's own class: update(value) for a metric without target (SumMetric) is right too
        # A class of one's own in this style takes (preds, target); one without a target needs a
        # registration's update= (docs/python.md).
        _check_positional(metric.update, 2, cls.style, cls.update_call)

    def can_merge(self):
        """torchmetrics' own merge_state refuses a metric that declares full_state_update (True, or
        None: not declared) or dist_sync_on_step ("not supported ... Please overwrite the merge_state
        method", metric.py:447-451 in 1.9.0): for such a class, unless it overrides merge_state,
        merging is not applicable (a documented limit, not a finding)."""
        if not super().can_merge():
            return False
        base = _library_class(self.base_class)
        own = getattr(base, "merge_state", None)
        if own is None or getattr(type(self.metric), "merge_state", None) is not own:
            return True  # the class's own merge_state (or no Metric base to compare with): judged
        return not (getattr(self.metric, "full_state_update", False) in (True, None)
                    or getattr(self.metric, "dist_sync_on_step", False))

    def merge(self, others):
        """torchmetrics' merge_state takes one state at a time (a dict, or a Metric; a list is
        refused: "Expected incoming state to be a dict or an instance of Metric"): each in turn."""
        for other in others:
            self.metric.merge_state(other)
        return self.metric

    def update(self, input, target, weight):
        args = (input,) if target is None else (input, target)
        kwargs = {}
        if weight is not None:
            keyword = _weight_keyword(self.metric.update, target, self.weight_keywords)
            if keyword is None:
                raise Unsupported(f"{type(self.metric).__name__}.update{_signature(self.metric.update)} takes no "
                                  f"per-sample weight ({' or '.join(self.weight_keywords)}): weighted variants are "
                                  f"skipped")
            kwargs[keyword] = weight
        self.metric.update(*args, **kwargs)

    def compute(self):
        return self.metric.compute()


def _signature(method):
    try:
        return str(inspect.signature(method))
    except (TypeError, ValueError):
        return "(...)"


class IgniteAdapter(Adapter):
    """PyTorch-Ignite: ``update((y_pred, y))`` (``update(value)`` for a metric without target:
    Average), ``compute()`` (synced), ``reset()``; state from the attributes the class names in
    ``_state_dict_all_req_keys``, read directly: Ignite's ``state_dict()`` all-gathers every
    rank's state, a collective the idempotent digest must never issue.

    Ignite's ``idist`` creates its own group state on the first distributed call; a rank that
    reaches that alone would block outside any deadline, so ``setup`` makes it on every rank
    right after the variant's group is made (``ignite.distributed.sync()``)."""

    style = "ignite"
    library = "ignite"
    base_class = "ignite.metrics:Metric"
    required = ("update", "compute", "reset")
    conventions = dict(Adapter.conventions, no_data="raise")

    # Set by Ignite's sync_all_reduce on every compute(): bookkeeping, not the metric's state.
    _NOT_STATE = ("_is_reduced",)

    def __init__(self, metric, conventions=None):
        super().__init__(metric, conventions)
        self._reset_names = None
        if self._state_keys() == ():
            self._reset_names = _names_reset_sets(metric)

    @classmethod
    def check_update(cls, metric):
        _check_positional(metric.update, 1, cls.style, "update((y_pred, y))")

    def _state_keys(self):
        keys = getattr(type(self.metric), "_state_dict_all_req_keys", None)
        own = vars(self.metric)
        if keys is None and "_state_dict_all_req_keys" in own:
            keys = own["_state_dict_all_req_keys"]
        return None if keys is None else tuple(keys)

    def setup(self):
        try:
            import ignite.distributed as idist
        except ImportError:
            return
        idist.sync()

    def update(self, input, target, weight):
        if weight is not None:
            raise Unsupported(f"Ignite's {type(self.metric).__name__}.update(output) takes (y_pred, y): no per-sample "
                              f"weight, so weighted variants are skipped")
        self.metric.update(input if target is None else (input, target))

    def compute(self):
        return self.metric.compute()

    def state_tensors(self):
        keys = self._state_keys()
        own = vars(self.metric)
        if keys == ():
            # A class that names no state (ObjectDetectionAvgPrecisionRecall, CharacterErrorRate,
            # the Subgroup classes...): its state is what reset() assigns, recorded when the
            # adapter was made; none recorded (a container whose reset() resets its members) is
            # no state digest, which the idempotent check then says ("only the values compared").
            keys = tuple(n for n in (self._reset_names or ()) if n not in self._NOT_STATE)
            if not keys:
                return None
        if keys is None:
            base = _library_class(self.base_class)
            if isinstance(base, type) and isinstance(self.metric, base):
                return None  # a real Ignite metric that names no state: its state_dict() would all-gather
            return named_state(self.metric)  # an Ignite-style class of one's own
        out = {}
        for key in keys:
            if key in own:
                _tensors_in(own[key], key, out)
        return out

    def can_merge(self):
        return False  # Ignite has no merge_state (its __getattr__ would make one up)


def _names_reset_sets(metric):
    """The attributes `metric.reset()` assigns, in order: reset() run once more on the fresh metric
    (Ignite's Metric.__init__ has already run it) with its assignments recorded."""
    seen = []
    cls = type(metric)

    class Recording(cls):
        def __setattr__(self, name, value):
            if name not in seen and not name.startswith("__"):  # not the class swapped back
                seen.append(name)
            super().__setattr__(name, value)

    Recording.__name__ = Recording.__qualname__ = cls.__name__
    try:
        metric.__class__ = Recording
        metric.reset()
    except Exception:  # noqa: BLE001 - a class whose reset() cannot run again: no state read
        return []
    finally:
        metric.__class__ = cls
    return seen


class TorchevalAdapter(TorchmetricsAdapter):
    """torcheval: ``update(input, target)`` (``update(input, weight=w)`` for Mean, Sum...),
    ``compute()``, ``reset()``, ``merge_state(metrics)``. Its ``compute()`` is this rank's value:
    the global one is ``torcheval.metrics.toolkit.sync_and_compute(metric)`` (0.0.7: on every
    rank; 0.0.6 needs ``recipient_rank="all"``, which the adapter passes where the function takes
    it): every rank gathers the states and merges them. That is what this adapter reads. State: the states added with ``_add_state``
    (``_state_name_to_default``), read from the object."""

    style = "torcheval"
    library = "torcheval"

    def merge(self, others):
        return self.metric.merge_state(others)  # a list: torcheval's merge_state(metrics)
    base_class = "torcheval.metrics:Metric"
    conventions = dict(Adapter.conventions, compute="local", no_data="zero", merge_state=True)
    weight_keywords = ("weight", "sample_weight")
    update_call = "update(input, target)"

    def compute(self):
        base = _library_class(self.base_class)
        if self.conventions["compute"] != "local" or not (isinstance(base, type) and isinstance(self.metric, base)):
            return self.metric.compute()  # a torcheval-style class of one's own syncs in its compute()
        import torch.distributed as dist

        if not (dist.is_available() and dist.is_initialized()) or dist.get_world_size() == 1:
            return self.metric.compute()
        from torcheval.metrics.toolkit import sync_and_compute

        if _accepts(sync_and_compute, "recipient_rank"):  # torcheval 0.0.6: rank 0 only by default
            return sync_and_compute(self.metric, recipient_rank="all")
        return sync_and_compute(self.metric)  # torcheval 0.0.7: every rank gets the value

    def state_tensors(self):
        names = getattr(self.metric, "_state_name_to_default", None)
        if not isinstance(names, dict):
            return named_state(self.metric)
        out = {}
        for name in names:
            _tensors_in(getattr(self.metric, name), name, out)
        return out


ADAPTERS = {cls.style: cls for cls in (TorchmetricsAdapter, IgniteAdapter, TorchevalAdapter, Adapter)}


def _library_class(path):
    """The class "module:Name" if its module is already imported, else None: a metric object of
    that library can only exist once its module was imported, so nothing is imported here."""
    module_name, _, name = path.partition(":")
    module = sys.modules.get(module_name)
    return getattr(module, name, None) if module is not None else None


def detect_style(metric):
    """The adapter for a metric object: the library whose metric base class it derives from
    (torchmetrics.Metric, ignite.metrics.Metric, torcheval.metrics.Metric); else, for a class of
    no known library, from its shape: one update argument is Ignite's, two are torchmetrics'
    (torcheval's calls are the same), no update at all is a callable."""
    for cls in (TorchmetricsAdapter, IgniteAdapter, TorchevalAdapter):
        base = _library_class(cls.base_class)
        if isinstance(base, type) and isinstance(metric, base):
            return cls.style
    update = _method(metric, "update")
    if update is None:
        return "callable"
    if "_state_name_to_default" in vars(metric) or getattr(type(metric), "_state_name_to_default", None) is not None:
        return "torcheval"
    try:
        params = [p for p in inspect.signature(update).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        return "torchmetrics"
    return "ignite" if len(params) == 1 else "torchmetrics"


def _tensors_in(value, prefix, out):
    if isinstance(value, torch.Tensor):
        out[prefix] = value
    elif isinstance(value, (int, float, bool)):
        out[prefix] = torch.tensor(value)
    elif isinstance(value, str):  # a text metric's state: its bytes
        out[prefix] = torch.tensor(list(value.encode()), dtype=torch.uint8)
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            _tensors_in(value[k], f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(value, (list, tuple)):
        if isinstance(value, list) and all(isinstance(v, torch.Tensor) for v in value):
            out[prefix] = _ListState(value)  # a list of tensors is its rows, however they are split
            return
        for i, v in enumerate(value):
            _tensors_in(v, f"{prefix}[{i}]", out)


class _ListState:
    """A list state (torchmetrics' and torcheval's lists of tensors): its value is its elements'
    rows in order, whatever the list's layout: torcheval's compute() concatenates such a list in
    place ([a, b] becomes [cat(a, b)]), which changes no value."""

    def __init__(self, tensors):
        self.tensors = list(tensors)

    def flat(self):
        parts = [t.detach().reshape(-1) for t in self.tensors if t.numel() > 0]
        if not parts:
            return None
        dtypes = {p.dtype for p in parts}
        if len(dtypes) > 1:
            parts = [p.to(torch.float64) for p in parts]
        return torch.cat([p.to("cpu") for p in parts])


def named_state(metric, use_state_dict=True):
    """A metric's local state: torchmetrics' ``metric_state``, else ``state_dict()`` (when
    `use_state_dict`), else the tensors the metric names in ``distmetrics_state`` (a list of
    attribute names); None when there is none of these."""
    out = {}
    state = getattr(metric, "metric_state", None) if _method(metric, "update") is not None else None
    if isinstance(state, dict) and state:
        _tensors_in(state, "", out)
        return out
    state_dict = _method(metric, "state_dict")
    if use_state_dict and state_dict is not None:
        try:
            _tensors_in(state_dict(), "", out)
        except Exception:  # noqa: BLE001 - a state_dict that cannot be read gives no digest
            out = {}
        if out:
            return out
    names = vars(metric).get("distmetrics_state", None) or getattr(type(metric), "distmetrics_state", None)
    if names:
        for name in names:
            _tensors_in(getattr(metric, name), name, out)
        return out
    return None


def digest(named):
    """A digest of named state values: equal iff names, dtypes, shapes and bytes are equal, a
    list of tensors taken as its rows in order (its split into list elements does not count) and
    an empty tensor as empty whatever its dtype and shape."""
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(named):
        value = named[name]
        t = value.flat() if isinstance(value, _ListState) else value.detach().to("cpu").contiguous()
        if t is None or t.numel() == 0:
            h.update(f"{name}|empty|".encode())
            continue
        if isinstance(value, _ListState):
            h.update(f"{name}|rows|{t.dtype}|".encode())
        else:
            h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.float().numpy().tobytes())
    return h.hexdigest()
