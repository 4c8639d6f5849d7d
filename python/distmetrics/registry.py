"""Registering Python metrics by the reference's name.

    import distmetrics

    @distmetrics.metric("MeanAbsoluteError", adapter="torchmetrics")
    def make_mae(params):          # the scenario's parameters (a dict), defaults filled in
        return MyMeanAbsoluteError()

or ``distmetrics.register("MeanAbsoluteError", make_mae, adapter="ignite")``. A registration may
give its own call mapping instead of (or on top of) an adapter's:

- ``transform(input, target, weight) -> (input, target, weight)``: the batch as the class takes
  it (scores to labels at a threshold, labels to one-hot, rows to elements);
- ``update(metric, input, target, weight)``, ``compute(metric) -> value``,
  ``state(metric) -> dict of tensors`` (the local state, read without communicating);
- ``conventions``: single keys of the adapter's conventions overridden (adapters.CONVENTION_KEYS),
  a dict or a function of the scenario's parameters returning one.

A factory or any of these may raise ``distmetrics.Unsupported(reason)``: that variant is skipped
with the reason."""

import inspect
from dataclasses import dataclass, field
from typing import Callable, Dict, Optional

from .adapters import ADAPTERS, CONVENTION_KEYS


@dataclass
class Registration:
    name: str                 # the reference metric's name (the scenarios that name it run this)
    factory: Callable         # factory(params: dict) -> metric object
    adapter: str = "auto"     # a key of ADAPTERS, or "auto" (from the object's class)
    description: str = ""
    module: str = ""
    transform: Optional[Callable] = None   # transform(input, target, weight) -> (input, target, weight)
    update: Optional[Callable] = None      # update(metric, input, target, weight)
    compute: Optional[Callable] = None     # compute(metric) -> value
    state: Optional[Callable] = None       # state(metric) -> {name: tensor}, never a collective
    conventions: object = field(default_factory=dict)  # a dict, or params -> dict


_REGISTRY: Dict[str, Registration] = {}


def check_factory(factory, where):
    if not callable(factory):
        raise TypeError(f"{where}: the factory must be callable, got {type(factory).__name__}")
    try:
        inspect.signature(factory).bind({})
    except TypeError as e:
        raise TypeError(f"{where}: the factory must take one argument (the scenario's parameters as a "
                        f"dict): {getattr(factory, '__qualname__', factory)}{inspect.signature(factory)} "
                        f"does not ({e})") from None
    except ValueError:
        pass


def _check_call(fn, count, where, what):
    if fn is None:
        return
    if not callable(fn):
        raise TypeError(f"{where}: {what} must be callable, got {type(fn).__name__}")
    try:
        inspect.signature(fn).bind(*([None] * count))
    except TypeError as e:
        raise TypeError(f"{where}: {what} is called with {count} argument(s); "
                        f"{getattr(fn, '__qualname__', fn)}{inspect.signature(fn)} does not take them ({e})") from None
    except ValueError:
        pass


def check_conventions(conventions, where):
    unknown = sorted(set(conventions or {}) - set(CONVENTION_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown convention(s) {', '.join(unknown)}; known: {', '.join(CONVENTION_KEYS)}")


def conventions_for(reg, params):
    """A registration's conventions for a variant's parameters (``conventions`` may be a dict or
    a function of the parameters, e.g. one class of a mapping rejects empty batches, another not)."""
    conventions = reg.conventions(params) if callable(reg.conventions) else reg.conventions
    check_conventions(conventions, f"metric {reg.name}")
    return conventions


def register(name: str, factory: Callable, adapter: str = "auto", description: str = "", *,
             transform: Optional[Callable] = None, update: Optional[Callable] = None,
             compute: Optional[Callable] = None, state: Optional[Callable] = None,
             conventions: Optional[Dict[str, object]] = None) -> Registration:
    """Registers `factory` as the implementation of metric `name`."""
    if not isinstance(name, str) or not name or "@" in name:
        raise ValueError(f"a metric name must be a non-empty string without '@', got {name!r}")
    if adapter != "auto" and adapter not in ADAPTERS:
        raise ValueError(f"metric {name}: unknown adapter {adapter!r}; known: auto, {', '.join(ADAPTERS)}")
    where = f"metric {name}"
    check_factory(factory, where)
    _check_call(transform, 3, where, "transform(input, target, weight)")
    _check_call(update, 4, where, "update(metric, input, target, weight)")
    _check_call(compute, 1, where, "compute(metric)")
    _check_call(state, 1, where, "state(metric)")
    if not callable(conventions):
        check_conventions(conventions, where)
    reg = Registration(name, factory, adapter, description or (inspect.getdoc(factory) or "").split("\n")[0],
                       getattr(factory, "__module__", "") or "", transform, update, compute, state,
                       conventions if callable(conventions) else dict(conventions or {}))
    _REGISTRY[name] = reg
    return reg


def metric(name: str, adapter: str = "auto", description: str = "", **calls):
    """Decorator form of register() (same keywords); returns the factory unchanged."""
    def wrap(factory):
        register(name, factory, adapter, description, **calls)
        factory.__distmetrics_name__ = name
        return factory
    return wrap


def registered(name: Optional[str] = None):
    """All registrations (a dict by name), or the one named."""
    return dict(_REGISTRY) if name is None else _REGISTRY.get(name)
