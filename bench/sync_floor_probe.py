"""A --python source for `distmetrics conform` that measures, inside the rank workers, what
bench/sync_floor.py measures without distmetrics: it loads the peer source named by
SYNC_FLOOR_SOURCE (its registrations, unchanged) and times each compute() of a hosted metric
and each torch.distributed collective the metric issues. The timer sits outside distmetrics' own
tracing wrapper (python/distmetrics/_host.py), so what distmetrics adds per collective (the
trace record, the phase clock, the progress line) is inside what it measures. One line per
compute, appended to SYNC_FLOOR_LOG/<pid>.jsonl:

    {"pid": p, "variant": n, "rank": r, "world_size": w, "class": "module:Name", "alone": false,
     "seconds": s, "collectives": k, "in_collectives": c, "ops": [[op, ms], ...]}

With SYNC_FLOOR_RAW=N, each syncing compute() is followed by N all_reduces of one float32
(through torch.distributed, traced by distmetrics as any collective of the metric's), each timed,
each followed by one through torch's own all_reduce under the tracing (not traced): the floor's
raw loop inside a rank, with and without distmetrics' trace. One line per compute:
{"pid": p, "world_size": w, "raw": [ms, ...], "untraced": [ms, ...]}.

Used by bench/sync_floor.py --distmetrics; not a metric source of its own.
"""

import functools
import importlib.util
import json
import os
import sys
import time

import torch
import torch.distributed as dist

from distmetrics import _host

_source = os.environ["SYNC_FLOOR_SOURCE"]
_spec = importlib.util.spec_from_file_location("sync_floor_peer_source", _source)
_module = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = _module
_spec.loader.exec_module(_module)  # registers the peer source's metrics, as --python SOURCE would

_LOG = os.environ["SYNC_FLOOR_LOG"]
_RAW = int(os.environ.get("SYNC_FLOOR_RAW", "0"))
_state = {"variant": 0, "count": 0, "seconds": 0.0, "depth": 0, "ops": []}


def _timed_collective(fn, name):
    @functools.wraps(fn)  # keeps __distmetrics_traced__: _host never wraps this twice
    def timed(*args, **kwargs):
        if _state["depth"]:
            return fn(*args, **kwargs)
        _state["depth"] = 1
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            seconds = time.perf_counter() - start
            _state["seconds"] += seconds
            _state["count"] += 1
            _state["ops"].append((name, round(seconds * 1000, 3)))
            _state["depth"] = 0
    return timed


_c10d = dist.distributed_c10d
for _name in ("all_reduce", "reduce", "broadcast", "all_gather", "gather", "scatter", "reduce_scatter", "all_to_all",
              "all_gather_into_tensor", "barrier", "all_gather_object", "gather_object", "broadcast_object_list"):
    _original = getattr(_c10d, _name, None) or getattr(dist, _name, None)
    if _original is None:
        continue
    _wrapped = _timed_collective(_original, _name)
    for _mod in (dist, _c10d):
        if getattr(_mod, _name, None) is _original:
            setattr(_mod, _name, _wrapped)

_begin_group = _host.begin_group


def _counted_begin_group(*args, **kwargs):
    _state["variant"] += 1
    return _begin_group(*args, **kwargs)


_host.begin_group = _counted_begin_group
_compute = _host.HostedMetric.compute


def _timed_compute(self, alone=False):
    _state["count"], _state["seconds"], _state["ops"] = 0, 0.0, []
    start = time.perf_counter()
    try:
        return _compute(self, alone)
    finally:
        seconds = time.perf_counter() - start
        metric = self.adapter.metric
        line = {"pid": os.getpid(), "variant": _state["variant"], "rank": dist.get_rank() if dist.is_initialized() else -1,
                "world_size": dist.get_world_size() if dist.is_initialized() else 1,
                "class": f"{type(metric).__module__}:{type(metric).__name__}", "alone": bool(alone),
                "seconds": seconds, "collectives": _state["count"], "in_collectives": _state["seconds"],
                "ops": _state["ops"]}
        raw, untraced = [], []
        if _RAW and not alone and _state["count"] and dist.is_initialized():
            t = torch.ones(1)
            bare = dist.all_reduce.__wrapped__.__wrapped__  # torch's own, under _host's tracing and this timer
            for _ in range(_RAW):
                begin = time.perf_counter()
                dist.all_reduce(t)
                raw.append(round((time.perf_counter() - begin) * 1000, 4))
                begin = time.perf_counter()
                bare(t)
                untraced.append(round((time.perf_counter() - begin) * 1000, 4))
        with open(os.path.join(_LOG, f"{os.getpid()}.jsonl"), "a") as f:
            f.write(json.dumps(line) + "\n")
            if raw:
                f.write(json.dumps({"pid": os.getpid(), "world_size": line["world_size"], "raw": raw,
                                    "untraced": untraced}) + "\n")


_host.HostedMetric.compute = _timed_compute
