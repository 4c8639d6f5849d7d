# Loads the distmetrics pytest plugin (python/distmetrics/pytest_plugin) for every pytest run in this
# repository, so that `pytest scenarios/` works with only Debian's pytest installed; pytester
# serves the plugin's own tests (python/tests).
import os
import sys

_python_dir = os.path.join(os.path.dirname(os.path.abspath(__file__)), "python")
if _python_dir not in sys.path:
    sys.path.insert(0, _python_dir)

pytest_plugins = ["distmetrics.pytest_plugin", "pytester"]
