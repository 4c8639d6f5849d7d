"""Runs distmetrics scenario files as pytest items, one item per variant (docs/pytest.md).

This module is the plugin: pytest loads it through the ``pytest11`` entry point of the installed
``distmetrics`` package, or by name with ``-p distmetrics.pytest_plugin`` (with ``python/`` of a
checkout on ``PYTHONPATH``); the repository's ``conftest.py`` loads it for runs in the checkout.
The hooks are written in ``plugin.py``.
"""

from .plugin import (pytest_addoption, pytest_collect_file, pytest_collection_modifyitems,  # noqa: F401
                     pytest_configure)
