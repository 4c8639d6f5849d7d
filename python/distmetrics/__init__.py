"""distmetrics from Python.

- Register a metric under the reference's name, with a factory and an adapter, and check it with
  `distmetrics conform --python` (docs/python.md): ``distmetrics.register``, ``distmetrics.metric``.
- The pytest plugin lives in ``distmetrics.pytest_plugin`` (registered under the ``pytest11``
  entry point, so an installed package loads it by itself; see docs/pytest.md).

Importing ``distmetrics`` imports neither pytest nor torch: the registration API (which needs
torch) loads on first use.
"""

# The one place the version is written: CMake (project VERSION) and pyproject.toml read this line.
__version__ = "0.1.0"
__all__ = ["ADAPTERS", "Registration", "metric", "register", "registered", "Unsupported", "PeerSetupError"]

from .errors import PeerSetupError, Unsupported  # noqa: E402  (no torch import)


def __getattr__(name):
    if name in __all__:
        from . import registry

        return getattr(registry, name)
    raise AttributeError(f"module 'distmetrics' has no attribute {name!r}")
