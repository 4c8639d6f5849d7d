"""state_dict_mae.py's MeanAbsoluteError, in a module that watches importlib.metadata.entry_points:
each call appends "scan <pid>" to the file DISTMETRICS_TEST_ENTRY_POINTS_LOG, and the import appends
"import <pid>". torch.distributed looks its backends up there (every installed distribution's
entry_points.txt) once per process, in the process's first init_process_group. The supervisor does
that once before its rank workers are forked (_host.prepare_for_forked_ranks), so no rank should."""

import importlib.metadata
import os
import runpy

_LOG = os.environ["DISTMETRICS_TEST_ENTRY_POINTS_LOG"]
_entry_points = importlib.metadata.entry_points


def _write(line):
    with open(_LOG, "a") as log:
        log.write(line + "\n")


def _watched_entry_points(*args, **kwargs):
    _write("scan %d" % os.getpid())
    return _entry_points(*args, **kwargs)


importlib.metadata.entry_points = _watched_entry_points
_write("import %d" % os.getpid())
# The metric itself, registered as that source registers it.
runpy.run_path(os.path.join(os.path.dirname(os.path.abspath(__file__)), "state_dict_mae.py"), run_name=__name__)
