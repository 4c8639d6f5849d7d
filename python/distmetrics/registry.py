"""Registering Python metrics by the reference's name.

    import distmetrics

    @distmetrics.metric("MeanAbsoluteError", adapter="torchmetrics")
    def make_mae(params):          # the scenario's parameters (a dict), defaults filled in
        return MyMeanAbsoluteError()

or ``distmetrics.register("MeanAbsoluteError", make_mae, adapter="ignite")``."""

import inspect
from dataclasses import dataclass
from typing import Callable, Dict, Optional

from .adapters import ADAPTERS


@dataclass
class Registration:
    name: str                 # the reference metric's name (the scenarios that name it run this)
    factory: Callable         # factory(params: dict) -> metric object
    adapter: str = "auto"     # a key of ADAPTERS, or "auto" (from the object's shape)
    description: str = ""
    module: str = ""


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


def register(name: str, factory: Callable, adapter: str = "auto", description: str = "") -> Registration:
    """Registers `factory` as the implementation of metric `name`."""
    if not isinstance(name, str) or not name or "@" in name:
        raise ValueError(f"a metric name must be a non-empty string without '@', got {name!r}")
    if adapter != "auto" and adapter not in ADAPTERS:
        raise ValueError(f"metric {name}: unknown adapter {adapter!r}; known: auto, {', '.join(ADAPTERS)}")
    check_factory(factory, f"metric {name}")
    reg = Registration(name, factory, adapter, description or (inspect.getdoc(factory) or "").split("\n")[0],
                       getattr(factory, "__module__", "") or "")
    _REGISTRY[name] = reg
    return reg


def metric(name: str, adapter: str = "auto", description: str = ""):
    """Decorator form of register(); returns the factory unchanged."""
    def wrap(factory):
        register(name, factory, adapter, description)
        factory.__distmetrics_name__ = name
        return factory
    return wrap


def registered(name: Optional[str] = None):
    """All registrations (a dict by name), or the one named."""
    return dict(_REGISTRY) if name is None else _REGISTRY.get(name)
