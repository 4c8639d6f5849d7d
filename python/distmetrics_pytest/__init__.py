"""Runs distmetrics scenario files as pytest items, one item per variant.

Load it with ``-p distmetrics_pytest.plugin`` (with this folder's parent on ``PYTHONPATH``), or
run ``pytest scenarios/`` from the repository root, whose ``conftest.py`` loads it. See
``docs/pytest.md``.
"""
