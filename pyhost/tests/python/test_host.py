"""The Python half of pyhost in a plain interpreter: adapters (torchmetrics-, Ignite-,
torcheval-style and plain callables), value forms (dict, tensor, float, 0-d tensor), state
digests (and none), the per-variant group at world size 1 on gloo, collective tracing, and the
errors a source can have. The multi-rank behaviour runs through the C++ host (ctest pyhost_*)."""

import inspect
import os
import sys
import textwrap
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[2] / "python"))

import fake_host  # noqa: E402

FAKE = fake_host.install()

import torch.distributed as dist  # noqa: E402

from distmetrics import _host, adapters, registry  # noqa: E402


@pytest.fixture(autouse=True)
def fresh():
    registry._REGISTRY.clear()
    _host._sources.clear()
    FAKE.trace.clear()
    yield
    _host.end_group()


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return str(path)


SOURCE = """
    import torch, distmetrics

    class TM:                                   # torchmetrics-style
        def __init__(self): self.reset()
        @property
        def metric_state(self): return {"s": self.s, "n": self.n}
        def reset(self): self.s, self.n = torch.tensor(0.0, dtype=torch.float64), torch.tensor(0)
        def update(self, preds, target):
            self.s += (preds - target).abs().sum(); self.n += target.numel()
        def compute(self): return self.s / self.n          # a 0-d tensor

    class IG:                                   # Ignite-style, value a dict
        def __init__(self): self.reset()
        def reset(self): self.total = 0.0
        def state_dict(self): return {"total": self.total}
        def update(self, output): self.total += float((output[0] - output[1]).abs().sum())
        def compute(self): return {"total": self.total, "per_class": torch.tensor([1.0, 2.0])}

    class TE:                                   # torcheval-style, no state to read, a Python float
        def __init__(self): self.reset()
        def reset(self): self.k = 0
        def update(self, input, target): self.k += 1
        def compute(self): return 2.5

    distmetrics.register("MeanAbsoluteError", lambda p: TM(), adapter="torchmetrics")
    distmetrics.register("SumAbs", lambda p: IG())
    distmetrics.register("Count", lambda p: TE(), adapter="torcheval")
    distmetrics.register("Plain", lambda p: (lambda x, y: torch.tensor(float(x.numel()))), adapter="callable")
"""


def test_a_file_registers_its_metrics_and_each_adapter_reads_its_metric(tmp_path):
    import json
    described = json.loads(_host.load(write(tmp_path, "m.py", SOURCE), []))
    assert [m["name"] for m in described["metrics"]] == ["Count", "MeanAbsoluteError", "Plain", "SumAbs"]
    x, y = torch.tensor([[1.0, 2.0]], dtype=torch.float64), torch.tensor([[0.0, 4.0]], dtype=torch.float64)

    tm = _host.HostedMetric("MeanAbsoluteError", "{}", "cpu")
    tm.update(x, y, None)
    assert tm.compute() == pytest.approx(1.5)            # 0-d tensor -> float
    assert isinstance(tm.compute(), float)
    before = tm.digest()
    assert before and before == tm.digest()
    tm.update(x, y, None)
    assert tm.digest() != before

    ig = _host.HostedMetric("SumAbs", "{}", "cpu")
    assert ig.adapter.style == "ignite"                  # detected: update takes one argument
    ig.update(x, y, None)
    value = ig.compute()
    assert value["total"] == pytest.approx(3.0)
    assert torch.equal(value["per_class"], torch.tensor([1.0, 2.0]))
    assert ig.digest() != ""                             # from state_dict()

    te = _host.HostedMetric("Count", "{}", "cpu")
    te.update(x, y, None)
    assert te.compute() == 2.5 and te.digest() == ""     # no state_dict / metric_state: no digest

    plain = _host.HostedMetric("Plain", "{}", "cpu")
    plain.update(x, y, None)
    plain.update(x, y, None)
    assert plain.compute() == 4.0                        # the callable sees every batch fed so far


def test_values_are_numbers_tensors_or_dicts():
    assert _host.normalize(torch.tensor(3, dtype=torch.int64)) == 3.0
    assert _host.normalize(True) == 1.0
    t = _host.normalize(torch.arange(4.0).reshape(2, 2).t())
    assert t.is_contiguous() and t.tolist() == [[0.0, 2.0], [1.0, 3.0]]
    assert _host.normalize({1: 2}) == {"1": 2.0}
    # Nested dicts and lists; a list of numbers (or of tensors of one shape) is a tensor; a leaf of
    # any other kind is kept as its type and text for the "cannot compare" verdict.
    nested = _host.normalize({"per_class": [{"tp": 3, "p": torch.tensor(0.5)}, {"tp": 1, "p": None}], "t": (1, 2.5)})
    assert nested["per_class"] == [{"tp": 3.0, "p": 0.5}, {"tp": 1.0, "p": None}]
    assert nested["t"].dtype == torch.float64 and nested["t"].tolist() == [1.0, 2.5]
    assert _host.normalize([torch.ones(2), torch.zeros(2)]).tolist() == [[1.0, 1.0], [0.0, 0.0]]
    assert _host.normalize({"note": "x"}) == {"note": ("uncomparable", "str", "'x'")}
    with pytest.raises(TypeError, match="compute\\(\\) returned None"):  # a forgotten return is not a value
        _host.result(None)


def test_a_reference_value_is_read_by_the_metric_value_rules():
    import numpy as np

    from distmetrics import _scenario_code

    value = {"per_class": [{"tp": np.int64(3)}, {"tp": 1}], "rows": np.array([[1, 2], [3, 4]]), "note": "x"}
    assert _scenario_code._value_json("ref", value) == {
        "per_class": [{"tp": 3.0}, {"tp": 1.0}],
        "rows": {"dtype": "int64", "shape": [2, 2], "values": [1, 2, 3, 4]},
        "note": {"uncomparable": "str", "text": "'x'"}}
    assert _scenario_code._value_json("ref", [[1, 2], [3, 4]]) == {
        "dtype": "float64", "shape": [2, 2], "values": [1.0, 2.0, 3.0, 4.0]}


def test_structured_batches_pick_their_samples_in_order(tmp_path):
    samples = {"input": [{"boxes": torch.ones(1, 4)}, {"boxes": torch.zeros(2, 4)}, {"boxes": torch.ones(0, 4)}],
               "target": ["a", "b", "c"]}
    torch.save(samples, tmp_path / "s.pt")
    inputs, targets = _host.structured_batch(str(tmp_path / "s.pt"), torch.tensor([2, 0]))
    assert targets == ["c", "a"]
    assert [tuple(x["boxes"].shape) for x in inputs] == [(0, 4), (1, 4)]
    inputs[1]["boxes"] = None  # a metric that changes what it is given leaves the data as they were
    assert _host.structured_batch(str(tmp_path / "s.pt"), torch.tensor([0]))[0][0]["boxes"].shape == (1, 4)


def test_a_plain_callable_sees_the_structured_samples_fed_so_far_as_one_list(tmp_path):
    torch.save({"input": ["a b", "c", "d e f"], "target": ["a b", "x", "d e f"]}, tmp_path / "s.pt")
    matches = adapters.Adapter(lambda preds, target: float(sum(p == t for p, t in zip(preds, target))) / len(target))
    hosted = object.__new__(_host.HostedMetric)
    hosted.adapter = matches
    hosted.update(torch.tensor([0, 1]), None, None, str(tmp_path / "s.pt"))
    hosted.update(torch.tensor([], dtype=torch.int64), None, None, str(tmp_path / "s.pt"))  # an empty batch
    hosted.update(torch.tensor([2]), None, None, str(tmp_path / "s.pt"))
    assert hosted.compute() == 2 / 3
    # The samples fed are its state; strings enter the digest by their bytes.
    assert matches.state_tensors()["batch2[0][0]"].tolist() == list(b"d e f")
    before = hosted.digest()
    hosted.update(torch.tensor([1]), None, None, str(tmp_path / "s.pt"))
    assert hosted.digest() != before


def test_the_variant_group_is_fresh_and_its_collectives_are_traced():
    _host.install_tracing()
    _host.begin_group("gloo", 0, 1, 5000, "python/0/")
    assert dist.get_rank() == 0 and dist.get_world_size() == 1
    t = torch.ones(3, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    out = [None]
    dist.all_gather_object(out, {"a": 1})                # its inner all_gathers are not traced again
    dist.barrier()
    assert FAKE.trace == [["dist.all_reduce(max)", "float64", [3], True],
                          ["dist.all_gather_object", "object", [], True],
                          ["dist.barrier", "", [], True]]
    _host.begin_group("gloo", 0, 1, 5000, "python/1/")  # the next variant: a new group
    assert dist.is_initialized()
    _host.end_group()
    assert not dist.is_initialized()


def test_the_trace_names_a_collectives_arguments_as_signature_bind_does():
    """The tracing's own binding (read once per collective, not bound per call) gives what
    signature.bind() with apply_defaults() gives, in its order, for every traced collective and
    every way of passing its arguments; a call bind() refuses is bound to nothing."""
    t, out = torch.ones(2), [torch.zeros(2)]
    calls = [((t,), {}), ((t,), {"op": dist.ReduceOp.MAX}), ((), {"tensor": t}), ((out, t), {}),
             ((out,), {"tensor": t}), ((t, 0), {}), ((t,), {"src": 1}), ((t,), {"dst": 2, "async_op": False}),
             ((), {}), ((t,), {"tensor": t}), ((t,), {"no_such_argument": 1}), ((t,) * 9, {}),
             ((out, {"a": 1}), {}), ((), {"group": None})]
    checked = 0
    for name in _host._TRACED:
        fn = getattr(dist.distributed_c10d, name, None) or getattr(dist, name, None)
        if fn is None:
            continue
        fn = getattr(fn, "__wrapped__", fn)  # torch's own, where install_tracing wrapped it
        signature = inspect.signature(fn)
        binder = _host._Binder(signature)
        for args, kwargs in calls:
            try:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                expected = list(bound.arguments.items())
            except TypeError:
                expected = []
            got = list(binder.arguments(args, kwargs).items())
            assert got == expected, (name, args, kwargs)
            checked += 1
    assert checked >= 14 * 15  # every call against at least 15 of the 19 collectives


def _default_gloo():
    """The Gloo group behind torch.distributed's default group."""
    default = dist.distributed_c10d._get_default_group()
    return default if _host._TORCH_1_13 else default._get_backend(torch.device("cpu"))


def _gloo_group_of_one():
    """What the C++ host hands over: a connected Gloo group on a store of its own."""
    return dist.ProcessGroupGloo(dist.HashStore(), 0, 1)


def test_a_handed_over_gloo_group_becomes_the_default_group_and_outlives_it():
    """The variant's C++ Gloo group (here one made in Python, as the pip build's runtime makes it)
    is torch.distributed's default group as it is: no group of Python's own, the records
    init_process_group keeps, collectives on it traced; after end_group the group still works
    (it is the communicator's until the variant ends), and the next variant gets another."""
    _host.install_tracing()
    shared = _gloo_group_of_one()
    _host.begin_group("gloo", 0, 1, 5000, "python/0/", shared)
    assert _default_gloo() is shared  # no group of Python's own
    assert _host.group_route() == "shared"
    assert dist.get_backend() == "gloo" and dist.get_rank() == 0 and dist.get_world_size() == 1
    _, _, names = _group_count_and_names()
    assert list(names.values()) == ["0"]
    t = torch.tensor([2.0, 5.0])
    dist.all_reduce(t, op=dist.ReduceOp.SUM)
    out = [None]
    dist.all_gather_object(out, [1, 2, 3])
    dist.barrier()
    assert t.tolist() == [2.0, 5.0] and out == [[1, 2, 3]]
    assert [op for op, *_ in FAKE.trace] == ["dist.all_reduce(sum)", "dist.all_gather_object", "dist.barrier"]
    _host.end_shared_group()
    assert not dist.is_initialized() and _host.group_route() is None
    after = torch.tensor([3.0])
    shared.allreduce([after]).wait()  # not torn down with the default group
    assert after.tolist() == [3.0]
    _host.begin_group("gloo", 0, 1, 5000, "python/1/", _gloo_group_of_one())
    assert _host.group_route() == "shared" and dist.is_initialized()


def test_without_a_handed_over_group_python_makes_its_own():
    _host.begin_group("gloo", 0, 1, 5000, "python/0/")
    assert _host.group_route() == "own" and dist.get_world_size() == 1
    _host.end_shared_group()  # a group of its own stays until the next variant begins
    assert dist.is_initialized() and _host.group_route() == "own"


def test_a_group_torch_cannot_take_as_its_default_is_refused_with_nothing_changed():
    """Another backend's group, a group of other ranks, or another backend name: _adopt_backend
    says no before touching torch's state, and begin_group makes a group of its own."""
    store = dist.PrefixStore("python/0/", dist.HashStore())
    timeout = __import__("datetime").timedelta(seconds=5)
    assert not _host._adopt_backend(object(), "gloo", store, 0, 1, timeout)
    assert not _host._adopt_backend(_gloo_group_of_one(), "gloo", store, 1, 2, timeout)
    assert not _host._adopt_backend(_gloo_group_of_one(), "nccl", store, 0, 1, timeout)
    assert not dist.is_initialized()
    if "GLOO" in getattr(dist.Backend, "_plugins", {}):
        assert dist.Backend._plugins["GLOO"].creator_fn.__name__ != "hand_over"
    if _host._TORCH_1_13:
        return  # 1.13 takes a ProcessGroupGloo as its default group as it is (begin_group)
    _host.begin_group("gloo", 0, 1, 5000, "python/0/", object())
    assert _host.group_route() == "own" and dist.get_world_size() == 1


def _group_count_and_names():
    c10d = dist.distributed_c10d
    world = getattr(c10d, "_world", None)
    if world is not None and hasattr(world, "group_count"):  # torch 2.x
        return world, "group_count", world.pg_names
    return c10d, "_group_count", c10d._pg_names  # torch 1.13


def test_every_variants_group_gets_the_same_name_whatever_groups_came_before():
    """torch names a group after its process's count of groups made, and the rendezvous keys carry
    the name: after an earlier group went without torch resetting the count (or a library made a
    group on this rank alone), this rank would wait for keys its peers never write. The variant's
    group is named from 0 on every rank, whatever came before."""
    holder, counter, names = _group_count_and_names()
    _host.end_group()
    setattr(holder, counter, getattr(holder, counter) + 5)  # no group, and a count its peers lack
    _host.begin_group("gloo", 0, 1, 5000, "python/0/")
    _, _, names = _group_count_and_names()
    assert list(names.values()) == ["0"]
    _host.end_group()


def test_source_errors_say_what_is_wrong(tmp_path):
    with pytest.raises(_host.SourceError, match="ModuleNotFoundError: No module named 'no_such_module_xyz'"):
        _host.load(write(tmp_path, "imp.py", "import no_such_module_xyz\n"), [])
    with pytest.raises(_host.SourceError, match="has no factory 'make_it'"):
        _host.load("json:make_it", [])
    with pytest.raises(_host.SourceError, match="factory must take one argument"):
        _host.load(write(tmp_path, "sig.py", """
            import distmetrics
            distmetrics.register("MeanAbsoluteError", lambda: None)
        """), [])
    with pytest.raises(_host.SourceError, match="registers no metric"):
        _host.load(write(tmp_path, "empty.py", "x = 1\n"), [])
    _host.load(write(tmp_path, "wrong_update.py", """
        import distmetrics
        class M:
            def update(self, a, b, c): pass
            def compute(self): return 0.0
            def reset(self): pass
        distmetrics.register("MeanAbsoluteError", lambda p: M(), adapter="ignite")
    """), [])
    with pytest.raises(_host.SourceError, match=r"the ignite adapter calls update\(\(y_pred, y\)\); M.update\(a, b, c\) does not"):
        _host.check("MeanAbsoluteError", "{}")


def test_a_bare_factory_is_registered_under_the_metric_name_given(tmp_path):
    import json
    write(tmp_path, "bare_factory_mod.py", """
        import torch
        class M:
            def __init__(self, scale): self.scale = scale; self.reset()
            def reset(self): self.n = 0
            def update(self, preds, target): self.n += target.numel()
            def compute(self): return self.n * self.scale
        def make(params): return M(params.get("scale", 1.0))
    """)
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(_host.SourceError, match="name the metric the factory makes with --metric NAME"):
            _host.load("bare_factory_mod:make", [])
        described = json.loads(_host.load("bare_factory_mod:make", ["Accuracy"]))
    finally:
        sys.path.remove(str(tmp_path))
    assert described["metrics"][0]["name"] == "Accuracy"
    m = _host.HostedMetric("Accuracy", '{"scale": 2.0}', "cpu")
    assert m.adapter.style == "torchmetrics"
    m.update(torch.zeros(3), torch.zeros(3), None)
    assert m.compute() == 6.0


def test_python_errors_give_type_message_and_last_frames():
    def inner():
        raise ValueError("bad shape [3] vs [4]")
    try:
        inner()
    except ValueError as e:
        name, text = _host.describe(type(e), e, e.__traceback__)
    assert name == "ValueError"
    assert text.startswith("ValueError: bad shape [3] vs [4]\nPython traceback (last frames):")
    assert "in inner" in text and 'raise ValueError("bad shape [3] vs [4]")' in text


def test_a_metric_exception_is_one_line_with_its_last_frames():
    def inner():
        raise ValueError("bad\nshape")
    try:
        inner()
    except ValueError as e:
        name, text = _host.describe_raised(type(e), e, e.__traceback__)
    assert name == "ValueError"
    assert text == (f"bad shape (Python traceback, innermost last: {__file__}:"
                    f"{test_a_metric_exception_is_one_line_with_its_last_frames.__code__.co_firstlineno + 4} in "
                    f"test_a_metric_exception_is_one_line_with_its_last_frames; test_host.py:"
                    f"{inner.__code__.co_firstlineno + 1} in inner)")
