"""The rank side of Python metrics, called by the C++ host (pyhost/) inside each distmetrics
process: loading a source, building adapted metrics, the per-variant torch.distributed group
over the variant's store, and the tracing of torch.distributed collectives into the rank's
collective trace. Not a public API."""

import copy
import datetime
import functools
import importlib
import importlib.util
import inspect
import io
import json
import os
import sys
import threading
import traceback

import torch
import torch.distributed as dist

import _distmetrics_host as _c  # the embedded C++ module (pyhost/src/interpreter.cpp)

from . import adapters
from .errors import NotApplicable, Unsupported
from .registry import check_factory, conventions_for, register, registered


class SourceError(Exception):
    """A Python source that cannot be used (import, factory, signature): exit 2 before any variant."""


# --- Sources -------------------------------------------------------------------------------------

_sources = {}  # canonical spec -> {"module": ..., "names": [...]}


def canonical(value):
    """'metrics.py' -> '/abs/metrics.py'; 'pkg.mod:factory' and 'pkg.mod' unchanged."""
    path, _, factory = value.partition(":") if not value.endswith(".py") else (value, "", "")
    if path.endswith(".py"):
        if not os.path.isfile(path):
            raise SourceError(f"--python {value}: no such file {path}")
        path = os.path.abspath(path)
    return path + (":" + factory if factory else "")


def _import(path):
    if path.endswith(".py"):
        name = "distmetrics_user_" + os.path.splitext(os.path.basename(path))[0]
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
        return module
    return importlib.import_module(path)


def load(value, wanted):
    """Imports a source and says what it provides: {"spec", "name", "version", "metrics": [...]}."""
    try:
        spec = canonical(value)
        if spec not in _sources:
            path, _, factory_name = spec.partition(":") if not spec.endswith(".py") else (spec, "", "")
            before = set(registered())
            module = _import(path)
            names = sorted(set(registered()) - before) or [
                n for n, r in registered().items() if r.module == module.__name__]
            if factory_name:
                factory = getattr(module, factory_name, None)
                if factory is None:
                    raise SourceError(f"module {module.__name__} ({getattr(module, '__file__', '?')}) has no "
                                      f"factory '{factory_name}'")
                check_factory(factory, f"{module.__name__}:{factory_name}")
                own = getattr(factory, "__distmetrics_name__", None)
                if own:
                    names = [own]
                elif not wanted:
                    raise SourceError(f"{value}: name the metric the factory makes with --metric NAME "
                                      f"(or decorate it with @distmetrics.metric(NAME))")
                else:
                    for name in wanted:
                        register(name, factory)
                    names = list(wanted)
            if not names:
                raise SourceError(f"{value} registers no metric: call distmetrics.register(NAME, factory, adapter=...) "
                                  f"or decorate a factory with @distmetrics.metric(NAME) (docs/python.md)")
            _sources[spec] = {"module": module, "names": names}
        entry = _sources[spec]
        module = entry["module"]
        metrics = []
        for name in entry["names"]:
            reg = registered(name)
            metrics.append({"name": name, "adapter": reg.adapter, "description": reg.description,
                            "conventions": {} if callable(reg.conventions) else reg.conventions})
        shown = os.path.splitext(os.path.basename(spec))[0] if spec.endswith(".py") else module.__name__
        return json.dumps({"spec": spec, "name": shown,
                           "version": str(getattr(module, "__version__", "")), "metrics": metrics})
    except SourceError:
        raise
    except BaseException as e:  # ImportError, SyntaxError, TypeError from a registration ...
        raise SourceError(f"--python {value}: {describe(type(e), e, e.__traceback__)[1]}") from None


class _Mapped:
    """An adapter with a registration's own calls put in front of it: its transform, update,
    compute and state read-out, and its conventions over the adapter's."""

    def __init__(self, adapter, reg, params):
        self._adapter = adapter
        self._reg = reg
        for_params = getattr(reg.transform, "for_params", None)  # a transform that depends on the parameters
        self._transform = for_params(params) if callable(for_params) else reg.transform
        for_params = getattr(reg.compute, "for_params", None)
        self._compute = for_params(params) if callable(for_params) else reg.compute

    def __getattr__(self, name):
        return getattr(self._adapter, name)

    @property
    def metric(self):
        return self._adapter.metric

    @metric.setter
    def metric(self, value):
        self._adapter.metric = value

    def update(self, input, target, weight):
        if self._transform is not None:
            input, target, weight = self._transform(input, target, weight)
        if self._reg.update is not None:
            return self._reg.update(self._adapter.metric, input, target, weight)
        return self._adapter.update(input, target, weight)

    def compute(self):
        if self._compute is not None:
            return self._compute(self._adapter.metric)
        return self._adapter.compute()

    def state_tensors(self):
        if self._reg.state is not None:
            out = {}
            adapters._tensors_in(self._reg.state(self._adapter.metric), "", out)
            return out
        return self._adapter.state_tensors()


def _build(name, params):
    reg = registered(name)
    if reg is None:
        raise SourceError(f"no Python metric '{name}' is registered in this process")
    metric = reg.factory(params)
    style = reg.adapter if reg.adapter != "auto" else adapters.detect_style(metric)
    cls = adapters.ADAPTERS[style]
    if reg.update is None:
        cls.check(metric)
    adapter = cls(metric, conventions_for(reg, params))
    if reg.transform or reg.update or reg.compute or reg.state:
        return _Mapped(adapter, reg, params)
    return adapter


def check(name, params_json):
    """Builds the metric once with a scenario's parameters and checks it fits its adapter: its
    adapter style and its conventions for those parameters (JSON), which the harness judges by."""
    try:
        adapter = _build(name, json.loads(params_json))
        return json.dumps({"style": adapter.style, "conventions": dict(adapter.conventions)})
    except (SourceError, Unsupported):
        raise  # Unsupported: this variant is skipped with its reason
    except BaseException as e:
        raise SourceError(f"metric {name}: {describe(type(e), e, e.__traceback__)[1]}") from None


class HostedMetric:
    """What the C++ PythonMetric holds: an adapter, with values and state in the host's forms."""

    _state_read_communicates = False  # set once a state read issued a collective (digest)

    def __init__(self, name, params_json, device):
        self.name = name
        self.params = json.loads(params_json)
        self.adapter = _build(name, self.params)
        self.device = torch.device(device)
        self.adapter.to(self.device)

    def setup(self):
        self.adapter.setup()

    def update(self, input, target, weight, structured_file=""):
        if structured_file:  # `input` holds the indices of this batch's structured samples
            input, target = structured_batch(structured_file, input)
            weight = None
        if self.adapter.conventions.get("empty_batch") == "rejected" and _rows(input) == 0:
            # The library rejects a batch of no rows (its declared convention): a loop would not
            # feed it, and accepts_empty_batch is then not applicable (never "held").
            raise NotApplicable(f"{type(self.adapter.metric).__name__} declares that it rejects a batch of no rows "
                                f"(convention empty_batch = \"rejected\"): not fed one, as a training loop would not")
        self.adapter.update(input, target, weight)

    def compute(self, alone=False):
        """alone: this instance has no communicator (a merging instance in a rank): it computes as a
        single process would, whatever group the process holds."""
        if alone and dist.is_initialized():
            with detached():
                return result(self.adapter.compute())
        return result(self.adapter.compute())

    def reset(self):
        self.adapter.reset()

    def digest(self):
        """The local state's digest ("" when there is none). Reading it must not communicate: a
        read that issued a collective is not used again for this metric (its digest is then
        none, and the reason is on stderr)."""
        if self._state_read_communicates:
            return ""
        before = _collectives_issued[0]
        named = self.adapter.state_tensors()
        if _collectives_issued[0] != before:
            self._state_read_communicates = True
            print(f"distmetrics: {self.name}: reading {type(self.adapter.metric).__name__}'s state issued a "
                  f"torch.distributed collective; the idempotent digest no longer reads it (give the "
                  f"registration a state= that reads attributes)", file=sys.stderr)
            return ""
        return "" if named is None else adapters.digest(named)

    def save_state(self):
        """The metric's state_dict(), torch.save'd, for the state_roundtrip property; None when the
        metric has no state_dict and load_state_dict (a plain callable has neither). A library
        that keeps states out of state_dict() by default (torchmetrics) is asked to keep them in
        first (its declared convention)."""
        state = self.adapter.state_dict()
        if state is None:
            return None
        buffer = io.BytesIO()
        torch.save(state, buffer)
        return buffer.getvalue()

    def load_state(self, saved):
        self.adapter.load_state_dict(torch.load(io.BytesIO(saved), map_location=self.device))

    def can_merge(self):
        """torcheval's merge_state(metrics), with a state to save and load (each rank's state
        reaches the merging instance as its state_dict())."""
        return self.adapter.can_merge()

    def merge_saved(self, saved_states):
        """merge_state() of fresh instances that loaded the other ranks' saved states."""
        others = []
        for saved in saved_states:
            other = _build(self.name, self.params)
            other.to(self.device)
            other.load_state_dict(torch.load(io.BytesIO(saved), map_location=self.device))
            others.append(other.metric)
        merged = self.adapter.merge(others)
        if merged is not None and merged is not self.adapter.metric and hasattr(merged, "compute"):
            self.adapter.metric = merged  # torcheval returns self; one that returns a new metric is read as it


def _rows(input):
    if isinstance(input, torch.Tensor):
        return input.shape[0] if input.dim() > 0 else 1
    return len(input) if isinstance(input, list) else 1


class detached:
    """torch.distributed as a single process sees it, for a metric that has no communicator in a
    process whose variant group exists (the merge_state property's merging instance): its
    compute() must not sync with the ranks' instances."""

    def __enter__(self):
        c10d = dist.distributed_c10d
        self._saved = (c10d.GroupMember.WORLD, getattr(c10d.group, "WORLD", None))
        c10d.GroupMember.WORLD = None
        c10d.group.WORLD = None

    def __exit__(self, *exc):
        c10d = dist.distributed_c10d
        c10d.GroupMember.WORLD, c10d.group.WORLD = self._saved
        return False


def result(value):
    """A compute()'s value as the host reads it; None at the top is an error (a compute() that
    forgot its return would otherwise equal every other), None inside a result is a value."""
    if value is None:
        raise TypeError("compute() returned None: a metric's value must be a number, a tensor, or dicts and lists "
                        "of these")
    return normalize(value)


def normalize(value):
    """A metric's value as the host reads it: float, a CPU tensor (not 0-d), None, or a dict or list
    of these (a list or tuple of numbers becomes a float64 tensor, one of tensors of one shape and
    dtype their stack); a leaf of any other kind
    becomes ("uncomparable", type name, short text), which a property reports as "cannot compare
    a <type> at <path>"."""
    if isinstance(value, torch.Tensor):
        value = value.detach().to("cpu")
        return float(value.item()) if value.dim() == 0 else value.contiguous()
    if value is None:
        return None
    if isinstance(value, bool) or isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, dict):
        return {str(k): normalize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        items = [normalize(v) for v in value]
        if all(isinstance(v, float) for v in items):
            return torch.tensor(items, dtype=torch.float64)
        if (all(isinstance(v, torch.Tensor) for v in items) and len({(tuple(v.shape), v.dtype) for v in items}) == 1):
            return torch.stack(items)  # a list of rows is a tensor, as a reference's array is
        return items
    if type(value).__module__ == "numpy":
        if getattr(value, "ndim", 0) == 0 and callable(getattr(value, "item", None)):  # numpy scalars
            item = value.item()
            if isinstance(item, (bool, int, float)):
                return float(item)
        elif getattr(value, "dtype", None) is not None and value.dtype.kind in "fiub":
            return normalize(torch.from_numpy(value.copy()))
    text = repr(value)
    return ("uncomparable", type(value).__name__, text if len(text) <= 80 else text[:77] + "...")


# --- Structured samples (docs/scenarios.md, "Structured data") ---------------------------------------

_structured = {}  # path -> ((size, mtime), {"input": [...], "target": [...] or None})


def structured_samples(path):
    """The samples a Python generator gave, as distmetrics._scenario_code saved them; read once per
    process (again when the file changes)."""
    st = os.stat(path)
    stamp = (st.st_size, st.st_mtime_ns)
    cached = _structured.get(path)
    if cached is None or cached[0] != stamp:
        cached = (stamp, torch.load(path))
        _structured[path] = cached
    return cached[1]


def on_device(sample, device):
    """A sample with every tensor inside it on `device` (containers are new, so that a metric that
    changes what it is given cannot change the data of later variants)."""
    if isinstance(sample, torch.Tensor):
        return sample if sample.device == device else sample.to(device)
    if isinstance(sample, dict):
        return {k: on_device(v, device) for k, v in sample.items()}
    if isinstance(sample, list):
        return [on_device(v, device) for v in sample]
    if isinstance(sample, tuple):
        moved = [on_device(v, device) for v in sample]
        return type(sample)(*moved) if hasattr(sample, "_fields") else tuple(moved)
    return sample


def structured_batch(path, indices):
    """(inputs, targets) of a batch of structured samples: lists of the samples at `indices` (a
    tensor of sample numbers, on the batch's device), their tensors moved to that device;
    targets is None when the data have none."""
    data = structured_samples(path)
    rows = indices.tolist()
    device = indices.device

    def pick(key):
        samples = data.get(key)
        return None if samples is None else [on_device(samples[i], device) for i in rows]

    return pick("input"), pick("target")


def describe(etype, value, tb, frames=4, with_type=True):
    """(type name, message and the last frames) of a Python exception. Frames inside this package
    (the adapters) are left out: the user's code is what the report must show."""
    name = getattr(etype, "__name__", str(etype))
    message = str(value) if value is not None else ""
    head = f"{name}: {message}" if with_type and message else (message or name)
    lines = [head]
    here = os.path.dirname(os.path.abspath(__file__))
    stack = traceback.extract_tb(tb) if tb is not None else []
    stack = [f for f in stack if not os.path.abspath(f.filename).startswith(here + os.sep)] or stack
    stack = stack[-frames:]
    if stack:
        lines.append("Python traceback (last frames):")
        for f in stack:
            lines.append(f'  File "{f.filename}", line {f.lineno}, in {f.name}')
            if f.line:
                lines.append(f"    {f.line}")
    return name, "\n".join(lines)


def describe_raised(etype, value, tb, frames=3):
    """A metric's exception on one line (it goes into values, diagnoses and report tables): the
    message, then where it was raised, innermost last. The type travels apart."""
    name = getattr(etype, "__name__", str(etype))
    message = " ".join(str(value).split()) if value is not None else ""
    here = os.path.dirname(os.path.abspath(__file__))
    stack = traceback.extract_tb(tb) if tb is not None else []
    stack = [f for f in stack if not os.path.abspath(f.filename).startswith(here + os.sep)] or stack
    where = "; ".join(f"{f.filename if i == 0 else os.path.basename(f.filename)}:{f.lineno} in {f.name}"
                      for i, f in enumerate(stack[-frames:]))
    return name, (message or name) + (f" (Python traceback, innermost last: {where})" if where else "")


# --- The per-variant torch.distributed group ------------------------------------------------------

# torch.distributed's private state changed across 2.x minors: the records of a group are written
# by hand only on 1.13; on 2.x init_process_group writes them, and only the private names it is
# steered by (Backend._plugins, _world.group_count) are touched, each where it is what it was read
# as (torch 2.15), else the public route is taken.
_TORCH_VERSION = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
_TORCH_1_13 = _TORCH_VERSION == (1, 13)

class _VariantStore(dist.Store):
    """torch.distributed's view of the variant's C++ store (the one its C++ group met on)."""

    def set(self, key, value):
        _c.store_set(key, value if isinstance(value, bytes) else str(value).encode())

    def get(self, key):
        return _c.store_get(key)

    def add(self, key, amount):
        return _c.store_add(key, int(amount))

    def compare_set(self, key, expected, desired):
        return _c.store_compare_set(key, expected, desired)

    def wait(self, keys, timeout=None):
        ms = -1 if timeout is None else int(timeout.total_seconds() * 1000)
        _c.store_wait(list(keys), ms)

    def check(self, keys):
        return _c.store_check(list(keys))

    def delete_key(self, key):
        return _c.store_delete(key)

    def num_keys(self):
        return _c.store_num_keys()

    def set_timeout(self, timeout):
        pass

    def clone(self):
        # c10d::Store::clone() (pure virtual from torch 2.8): the same keys, usable from another
        # thread; every call goes to the C++ store anyway.
        return _VariantStore()


_group_refs = None  # the stores behind the current group (the C++ side holds no Python reference)
_group_is_shared = False  # the default group is the variant's C++ group (see begin_group)
_group_route = None  # how the current variant's group came about: "shared" or "own" (group_route)


def group_route():
    """"shared": the variant's default group is its C++ Gloo group, handed over (one group per
    variant); "own": torch.distributed made a group of its own on the variant's store; None: no
    group. What the tests read to see which route ran."""
    return _group_route


def begin_group(backend, rank, world_size, timeout_ms, prefix, shared=None):
    """A fresh default process group for this variant. `shared`: the variant's own C++ Gloo group
    (fresh per variant, already connected), which becomes the default group as it is; otherwise,
    or where this torch cannot take it, a new group is made under `prefix` on the variant's store.
    Either way the default group's store (the one new_group() uses) is the variant's, under
    `prefix`."""
    end_group()
    global _group_refs, _group_is_shared, _group_route
    variant_store = _VariantStore()
    store = dist.PrefixStore(prefix, variant_store)
    _group_refs = (variant_store, store)
    c10d = dist.distributed_c10d
    timeout = datetime.timedelta(milliseconds=timeout_ms)
    if shared is not None and _TORCH_1_13:
        # What init_process_group records for a group it made, without making one (no second
        # rendezvous, no barrier, no teardown of a second group at the variant's end).
        c10d._pg_map[shared] = (dist.Backend.GLOO, store)
        c10d._pg_names[shared] = str(c10d._group_count)  # the name init_process_group gives it
        c10d._group_count += 1
        c10d._pg_group_ranks[shared] = {i: i for i in range(world_size)}
        c10d._backend = dist.Backend.GLOO
        c10d._default_pg_init_method = None
        c10d._update_default_pg(shared)
        _group_is_shared = True
        _group_route = "shared"
        return
    _name_groups_alike()
    if shared is not None and _adopt_backend(shared, backend, store, rank, world_size, timeout):
        _group_is_shared = True
        _group_route = "shared"
        return
    # torch 1.13 polls every 10 ms after making a group: wait on a key instead. (2.x makes no
    # such barrier unless TORCH_DIST_INIT_BARRIER=1, and its signature differs: left alone.)
    polling = getattr(c10d, "_store_based_barrier", None) if _TORCH_1_13 else None
    if polling is not None:
        c10d._store_based_barrier = _waiting_barrier
    try:
        dist.init_process_group(backend, store=store, rank=rank, world_size=world_size, timeout=timeout)
    finally:
        if polling is not None:
            c10d._store_based_barrier = polling
    _group_route = "own"


def _adopt_backend(shared, backend, store, rank, world_size, timeout):
    """torch 2.x: the variant's C++ Gloo group (a c10d Backend, connected) as the default group.
    init_process_group itself wraps it, so that every record it keeps (pg_map, pg_names,
    pg_group_ranks, pg_backend_config, tags, the default group) is what it keeps for a group it
    made: for that one call the gloo backend's creator (Backend._plugins, filled from torch's
    entry point) returns this group instead of connecting a new one. False, having changed
    nothing, where this torch's private state is not what it was read as (torch 2.15), or the
    group is not a Gloo group of these ranks: the caller makes a group of its own."""
    backend_type = getattr(dist.distributed_c10d, "C10DBackend", None)  # torch._C._distributed_c10d.Backend
    plugins = getattr(dist.Backend, "_plugins", None)
    plugin_type = getattr(dist.Backend, "_BackendPlugin", None)
    ensure_registered = getattr(dist.Backend, "_ensure_backend_registered", None)
    if backend != "gloo" or backend_type is None or not isinstance(shared, backend_type) \
            or not isinstance(plugins, dict) or plugin_type is None or not callable(ensure_registered):
        return False
    # A Gloo group of these ranks. Its Python type is ProcessGroupGloo where torch made it, the
    # base Backend where it is the runtime's subclass of it (gloo.cpp), which torch did not register.
    if shared.name() != "gloo" or shared.rank() != rank or shared.size() != world_size:
        return False
    ensure_registered(dist.Backend.GLOO)
    own = plugins.get("GLOO")
    if own is None or not getattr(own, "extended_api", False):
        return False
    handed = []

    def hand_over(opts, _options):
        if opts.group_rank != rank or opts.group_size != world_size or handed:
            raise RuntimeError("the variant's C++ group is handed over once, as the default group of "
                               f"{world_size} ranks (asked for rank {opts.group_rank} of {opts.group_size})")
        handed.append(shared)
        return shared

    plugins["GLOO"] = plugin_type(hand_over, True)
    try:
        dist.init_process_group(dist.Backend.GLOO, store=store, rank=rank, world_size=world_size, timeout=timeout)
    finally:
        plugins["GLOO"] = own
    return True


def _name_groups_alike():
    """torch names a new group after a per-process count of the groups it has made
    (distributed_c10d: `_world.group_count` on 2.x, which ignores a group_name given to
    init_process_group; `_group_count` on 1.13), and the group's rendezvous keys carry the name.
    A rank whose count differs from its peers' (a library made a group on some ranks only, or an
    earlier variant's group went without torch resetting the count) waits for keys its peers never
    write, until the store gives up: every variant then cost half its deadline (the 7.5 s waits of
    the torch 2.x peer run). Each variant's group meets under a store prefix of its own, so every
    rank may start the count from 0. Private state, touched only where it is what it was read as."""
    c10d = dist.distributed_c10d
    world = getattr(c10d, "_world", None)
    if world is not None and isinstance(getattr(world, "group_count", None), int):
        world.group_count = 0
    elif isinstance(getattr(c10d, "_group_count", None), int):
        c10d._group_count = 0


def _waiting_barrier(rank, store, timeout):
    """torch's store-based barrier after init_process_group, as one counter and one awaited key."""
    c10d = dist.distributed_c10d
    key = f"{c10d.STORE_BASED_BARRIER_PREFIX}:{c10d._group_count}"
    if store.add(key, 1) == dist.get_world_size():
        store.set(key + ":all", b"1")
    store.wait([key + ":all"], timeout)


def end_group():
    """Lets go of the default group. A handed-over C++ group is not torn down by it (gloo's
    shutdown does nothing): the communicator keeps it until the variant's end."""
    global _group_refs, _group_is_shared, _group_route
    if dist.is_initialized():
        dist.destroy_process_group()
    _group_refs = None
    _group_is_shared = False
    _group_route = None


def end_shared_group():
    """At the end of a variant's metric: lets go of the variant's C++ group (which lives on in the
    communicator until every rank is done). A group of its own (other backends) stays until the
    next variant begins, so that a rank that finished early cannot break its peers' collectives."""
    if _group_is_shared:
        end_group()


def prepare_for_forked_ranks(backends):
    """In the supervisor, just before the worker zygote is taken from it (pyhost's
    fork_workers_with_python_loaded): what every rank did once, in its first variant, each time
    the pool restarted after a hang or a crash, done here once for all the ranks forked from it.
    torch.distributed's first group in a process looks the backend up in every installed
    distribution's entry points (about 150 files: 50-70 ms in a freshly forked rank,
    docs/performance.md); the first torch.save/torch.load (the state round trip's probes) and
    copy.deepcopy of a tensor (torchmetrics copies each state's default) set themselves up.
    `backends`: the runner's backend table's names. Nothing here starts a thread (the zygote is
    only taken from a process that runs none) or keeps a tensor; what fails is left to the ranks,
    which then do it themselves as before."""
    ensure_registered = getattr(dist.Backend, "_ensure_backend_registered", None)
    if callable(ensure_registered):
        for backend in backends:  # the runner's backend table's names
            if backend_available(backend):
                try:
                    ensure_registered(backend)
                except Exception:
                    pass
    try:
        buffer = io.BytesIO()
        torch.save({"state": torch.zeros(2), "count": torch.tensor(0)}, buffer)
        buffer.seek(0)
        torch.load(buffer, weights_only=True)
        copy.deepcopy(torch.zeros(2))
    except Exception:
        pass


def backend_available(backend):
    """Whether this torch has the backend: torch.distributed's own is_<backend>_available (the
    runner's backend table names the backends; no list of them here)."""
    available = getattr(dist, f"is_{backend}_available", None)
    return bool(available()) if callable(available) else False


# --- Tracing torch.distributed collectives ----------------------------------------------------------

_TRACED = ("all_reduce", "reduce", "broadcast", "all_gather", "gather", "scatter", "reduce_scatter",
           "all_to_all", "all_to_all_single", "all_gather_into_tensor", "_all_gather_base",
           "reduce_scatter_tensor", "_reduce_scatter_base", "barrier", "monitored_barrier",
           "all_gather_object", "gather_object", "broadcast_object_list", "scatter_object_list")
_inside = threading.local()
_collectives_issued = [0]  # traced collectives this process issued (the state read's check)


def _dtype(t):
    return str(t.dtype).replace("torch.", "")


def _first_tensor(args):
    for a in args:
        if isinstance(a, torch.Tensor):
            return a
        if isinstance(a, (list, tuple)) and a and isinstance(a[0], torch.Tensor):
            return a[0]
    return None


def _reduce_op_name(op):
    for name in ("SUM", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "AVG", "PREMUL_SUM"):
        known = getattr(dist.ReduceOp, name, None)
        try:
            if known is not None and op == known:
                return {"PRODUCT": "prod"}.get(name, name.lower())
        except TypeError:
            continue
    return str(op)


class _Binder:
    """A collective's arguments by name, as signature.bind() and apply_defaults() give them, without
    their cost on every call (5-7 us, about half of what tracing added to a 2-rank all_reduce:
    docs/performance.md, "Where a Python variant's sync goes"): the positional names and the
    defaults are read once; a call they cannot bind plainly (more positionals than names, an
    unknown keyword, a signature with *args or **kwargs) goes through bind()."""

    _EMPTY = inspect.Parameter.empty

    def __init__(self, signature):
        self.signature = signature
        params = list(signature.parameters.values())
        self.plain = all(p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in params)
        self.positional = sum(p.kind == p.POSITIONAL_OR_KEYWORD for p in params)
        self.params = [(p.name, p.default) for p in params]  # in the signature's order, as bind() keeps them

    def arguments(self, args, kwargs):
        if self.plain and len(args) <= self.positional:
            bound, keywords = {}, 0
            for i, (name, default) in enumerate(self.params):
                if i < len(args):
                    if name in kwargs:
                        break  # given twice: bind() says what
                    bound[name] = args[i]
                elif name in kwargs:
                    bound[name] = kwargs[name]
                    keywords += 1
                elif default is not self._EMPTY:
                    bound[name] = default
                else:
                    break  # a required argument missing: bind() says what
            else:
                if keywords == len(kwargs):  # no keyword the signature lacks
                    return bound
        try:
            bound = self.signature.bind(*args, **kwargs)
            bound.apply_defaults()
            return bound.arguments
        except TypeError:
            return {}


def _describe_call(name, binder, args, kwargs):
    a = binder.arguments(args, kwargs)
    op = "dist." + name
    if "op" in a and a["op"] is not None:
        op += "(" + _reduce_op_name(a["op"]) + ")"
    for key in ("src", "dst"):
        if key in a and a[key] is not None and name not in ("all_reduce",):
            op += f"({key}={a[key]})"
    if name.endswith("_object") or name.endswith("_object_list"):
        return op, "object", []
    if name in ("barrier", "monitored_barrier"):
        return op, "", []
    tensor = a.get("tensor", a.get("input_tensor", a.get("input")))
    if not isinstance(tensor, torch.Tensor):
        tensor = _first_tensor(list(a.values()) or list(args))
    if tensor is None:
        return op, "", []
    return op, _dtype(tensor), list(tensor.shape)


def _traced(name, fn):
    binder = _Binder(inspect.signature(fn))

    @functools.wraps(fn)
    def traced(*args, **kwargs):
        if getattr(_inside, "depth", 0) or not _c.tracing():
            return fn(*args, **kwargs)  # inside another traced call (all_gather_object), or no variant
        op, dtype, shape = _describe_call(name, binder, args, kwargs)
        _collectives_issued[0] += 1
        seq = _c.enter(op, dtype, shape)
        _inside.depth = 1
        ok = False
        try:
            result = fn(*args, **kwargs)
            ok = True
            return result
        finally:
            _inside.depth = 0
            _c.exit(seq, ok)

    traced.__distmetrics_traced__ = True
    return traced


def install_tracing():
    """Wraps torch.distributed's collectives (the package's names and distributed_c10d's, which
    torch's own helpers such as all_gather_object call) so each enters the rank's trace."""
    c10d = dist.distributed_c10d
    for name in _TRACED:
        original = getattr(c10d, name, None) or getattr(dist, name, None)
        if original is None or getattr(original, "__distmetrics_traced__", False):
            continue
        wrapped = _traced(name, original)
        for module in (dist, c10d):
            if getattr(module, name, None) is original:
                setattr(module, name, wrapped)
