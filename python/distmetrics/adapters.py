"""Adapters: how a distmetrics Batch (input, target, weight) becomes a call on a metric object,
how its value and its local state are read, and what set-up it needs once a variant's
torch.distributed group exists. One class per convention; ADAPTERS names them."""

import hashlib
import inspect

import torch


class Adapter:
    """The plain-callable convention, and the base of the others.

    The object may be a callable ``fn(input, target) -> value`` (a stateless metric, computed on
    the data fed so far), or any object with ``update``/``compute``/``reset`` methods; subclasses
    say how those are called."""

    style = "callable"
    # Names of the methods the metric object must have (checked before any variant runs).
    required = ()

    def __init__(self, metric):
        self.metric = metric
        self._seen = []  # the plain callable's batches

    @classmethod
    def check(cls, metric):
        """Raises TypeError when `metric` does not fit this convention."""
        missing = [m for m in cls.required if not callable(getattr(metric, m, None))]
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
        self._seen.append((input, target))

    def compute(self):
        if not self._seen:
            return self.metric(None, None)
        return self.metric(_joined([i for i, _ in self._seen]), _joined([t for _, t in self._seen]))

    def reset(self):
        self._seen = []

    def state_tensors(self):
        """The metric's local state as named tensors, or None when it cannot be read."""
        if not self.required:
            out = {}
            for i, (x, y) in enumerate(self._seen):
                _tensors_in([x, y], f"batch{i}", out)
            return out
        return named_state(self.metric)

    def to(self, device):
        mover = getattr(self.metric, "to", None)
        if callable(mover) and str(device) != "cpu":
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


class TorchmetricsAdapter(Adapter):
    """torchmetrics: ``update(preds, target)``, ``compute()``, ``reset()``; state in
    ``metric_state`` (registered with ``add_state``)."""

    style = "torchmetrics"
    required = ("update", "compute", "reset")

    @classmethod
    def check_update(cls, metric):
        _check_positional(metric.update, 2, cls.style, "update(preds, target)")

    def update(self, input, target, weight):
        self.metric.update(input, target)

    def compute(self):
        return self.metric.compute()

    def reset(self):
        self.metric.reset()


class IgniteAdapter(Adapter):
    """PyTorch-Ignite: ``update((y_pred, y))``, ``compute()``, ``reset()``; state from
    ``state_dict()`` when the metric has one (Ignite >= 0.4.11 with ``_state_dict_all_req_keys``).

    Ignite's ``idist`` creates its own group state on the first distributed call; a rank that
    reaches that alone would block outside any deadline, so ``setup`` makes it on every rank
    right after the variant's group is made (``ignite.distributed.sync()``)."""

    style = "ignite"
    required = ("update", "compute", "reset")

    @classmethod
    def check_update(cls, metric):
        _check_positional(metric.update, 1, cls.style, "update((y_pred, y))")

    def setup(self):
        try:
            import ignite.distributed as idist
        except ImportError:
            return
        idist.sync()

    def update(self, input, target, weight):
        self.metric.update((input, target))

    def compute(self):
        return self.metric.compute()

    def reset(self):
        self.metric.reset()


class TorchevalAdapter(TorchmetricsAdapter):
    """torcheval: ``update(input, target)``, ``compute()``, ``reset()``; state from
    ``state_dict()`` (the states added with ``_add_state``)."""

    style = "torcheval"

    @classmethod
    def check_update(cls, metric):
        _check_positional(metric.update, 2, cls.style, "update(input, target)")


ADAPTERS = {cls.style: cls for cls in (TorchmetricsAdapter, IgniteAdapter, TorchevalAdapter, Adapter)}


def detect_style(metric):
    """The convention a metric object follows, from its shape: one update argument is Ignite's,
    two are torchmetrics' (torcheval's calls are the same), no update at all is a callable."""
    update = getattr(metric, "update", None)
    if not callable(update):
        return "callable"
    if hasattr(metric, "_state_name_to_default"):
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
        for i, v in enumerate(value):
            _tensors_in(v, f"{prefix}[{i}]", out)


def named_state(metric):
    """A metric's local state: torchmetrics' ``metric_state``, else ``state_dict()``, else the
    tensors the metric names in ``distmetrics_state`` (a list of attribute names); None when
    there is none of these."""
    out = {}
    state = getattr(metric, "metric_state", None)
    if isinstance(state, dict) and state:
        _tensors_in(state, "", out)
        return out
    state_dict = getattr(metric, "state_dict", None)
    if callable(state_dict):
        try:
            _tensors_in(state_dict(), "", out)
        except Exception:  # noqa: BLE001 - e.g. Ignite's state_dict on a metric without required keys
            out = {}
        if out:
            return out
    names = getattr(metric, "distmetrics_state", None)
    if names:
        for name in names:
            _tensors_in(getattr(metric, name), name, out)
        return out
    return None


def digest(named):
    """A digest of named tensors: equal iff names, dtypes, shapes and bytes are equal."""
    h = hashlib.blake2b(digest_size=8)
    for name in sorted(named):
        t = named[name].detach().to("cpu").contiguous()
        h.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        h.update(t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.float().numpy().tobytes())
    return h.hexdigest()
