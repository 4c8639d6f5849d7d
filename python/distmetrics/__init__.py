"""distmetrics from Python.

The pytest plugin lives in ``distmetrics.pytest_plugin`` (registered under the ``pytest11``
entry point, so an installed package loads it by itself; see docs/pytest.md). Keep this module
small: importing ``distmetrics`` must not import pytest or torch.
"""

__version__ = "0.1.0"
