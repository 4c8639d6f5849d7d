"""The adapters on the real libraries (torchmetrics 1.5.2, PyTorch-Ignite 0.5.3, torcheval 0.0.7
from peers/requirements-torch1.13.txt, in the venv peers/venv.sh makes): each test is a misfit
of issue 22 that made a real class fail. Multi-rank cases run two processes on gloo over a
FileStore with the host's per-variant group (fake_host stands for the C++ module). Values are
checked against numpy. Skipped, with the reason, only where the venv is absent."""

import json
import multiprocessing
import queue
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / "python"))

import fake_host  # noqa: E402

FAKE = fake_host.install()

from distmetrics import _host, adapters, peers, registry  # noqa: E402
from distmetrics.errors import NotApplicable, PeerSetupError, Unsupported  # noqa: E402

try:
    for _library in ("torchmetrics", "ignite", "torcheval"):
        peers.require(_library, __file__)
    MISSING = ""
except PeerSetupError as e:
    MISSING = str(e)

pytestmark = [pytest.mark.skipif(bool(MISSING), reason=f"the peers venv is absent: {MISSING}"),
              pytest.mark.filterwarnings("ignore")]
ROWS = torch.Generator().manual_seed(22)
X = torch.randn(10, generator=ROWS, dtype=torch.float64)
W = torch.rand(10, generator=ROWS, dtype=torch.float64) + 0.5


@pytest.fixture(autouse=True)
def fresh():
    registry._REGISTRY.clear()
    _host._sources.clear()
    FAKE.trace.clear()
    yield
    _host.end_group()


def hosted(name, factory, params=None, **calls):
    registry.register(name, factory, **calls)
    return _host.HostedMetric(name, json.dumps(params or {}), "cpu")


# -- weights, and metrics without a target -------------------------------------------------------

def test_weights_go_in_the_way_each_library_takes_them():
    import ignite.metrics
    import torcheval.metrics
    import torchmetrics.aggregation

    want = float(np.average(X.numpy(), weights=W.numpy()))
    tm = hosted("A1", lambda p: torchmetrics.aggregation.MeanMetric())     # update(value, weight=w)
    tm.update(X, None, W)
    assert tm.compute() == pytest.approx(want, rel=1e-6)
    te = hosted("A2", lambda p: torcheval.metrics.Mean())                  # update(input, *, weight=w)
    te.update(X, None, W)
    assert te.compute() == pytest.approx(want, rel=1e-12)
    mse = hosted("A3", lambda p: torcheval.metrics.MeanSquaredError())     # update(..., sample_weight=w)
    mse.update(X, torch.zeros_like(X), W)
    assert mse.compute() == pytest.approx(float(np.average(X.numpy() ** 2, weights=W.numpy())), rel=1e-6)
    # A class that takes no weight: the variant is skipped with the reason, never run unweighted.
    ig = hosted("A4", lambda p: ignite.metrics.Average())
    with pytest.raises(Unsupported, match="no per-sample weight"):
        ig.update(X, None, W)
    sm = hosted("A5", lambda p: torchmetrics.aggregation.SumMetric())
    with pytest.raises(Unsupported, match="SumMetric.update.*takes no per-sample weight"):
        sm.update(X, None, W)


def test_metrics_without_a_target_are_called_with_the_input_alone():
    import ignite.metrics
    import torcheval.metrics
    import torchmetrics.aggregation

    for name, factory, want in [("S1", torchmetrics.aggregation.SumMetric, X.sum()),
                                ("S2", torchmetrics.aggregation.MaxMetric, X.max()),
                                ("S3", torcheval.metrics.Sum, X.sum()),
                                ("S4", torcheval.metrics.Max, X.max())]:
        m = hosted(name, lambda p, f=factory: f())
        m.update(X, None, None)
        assert m.compute() == pytest.approx(float(want), rel=1e-6), name
    avg = hosted("S5", lambda p: ignite.metrics.Average())
    avg.update(X.reshape(-1, 1), None, None)  # Ignite's Average: rows (peers/ignite maps [N] to [N, 1])
    assert float(torch.as_tensor(avg.compute()).squeeze()) == pytest.approx(float(X.mean()))


# -- which library, and what that means ---------------------------------------------------------

def test_the_library_is_told_by_its_classes_so_ignite_has_no_merge_state():
    import ignite.metrics
    import torcheval.metrics
    import torchmetrics.regression

    ig = ignite.metrics.MeanSquaredError()
    assert hasattr(ig, "merge_state") and hasattr(ig, "_state_name_to_default")  # Ignite's __getattr__ fakes both
    assert adapters.detect_style(ig) == "ignite"
    assert adapters.detect_style(torcheval.metrics.MeanSquaredError()) == "torcheval"
    assert adapters.detect_style(torchmetrics.regression.MeanSquaredError()) == "torchmetrics"
    m = hosted("D1", lambda p: ignite.metrics.MeanSquaredError())
    assert m.adapter.style == "ignite" and not m.can_merge()                      # merge_state is not run
    assert hosted("D2", lambda p: torcheval.metrics.MeanSquaredError()).can_merge()


def test_torchmetrics_merges_only_where_its_merge_state_allows():
    """torchmetrics' merge_state raises for a class with full_state_update=True (BLEUScore) unless
    the class overrides it: merging is then not applicable, never a finding; MeanSquaredError
    (full_state_update=False) merges, and the merge gives what one instance on all the data gives."""
    import torch
    import torchmetrics.regression
    import torchmetrics.text

    assert not hosted("D3", lambda p: torchmetrics.text.BLEUScore()).can_merge()
    mse = hosted("D4", lambda p: torchmetrics.regression.MeanSquaredError())
    assert mse.can_merge()
    a, b, whole = (torchmetrics.regression.MeanSquaredError() for _ in range(3))
    a.update(torch.tensor([1.0, 2.0]), torch.tensor([0.0, 0.0]))
    b.update(torch.tensor([3.0]), torch.tensor([1.0]))
    whole.update(torch.tensor([1.0, 2.0, 3.0]), torch.tensor([0.0, 0.0, 1.0]))
    mse.adapter.metric = a
    assert float(mse.adapter.merge([b]).compute()) == pytest.approx(float(whole.compute())) == pytest.approx(3.0)


def test_the_state_digest_compares_values_not_the_list_layout():
    import torcheval.metrics

    auroc = hosted("L1", lambda p: torcheval.metrics.BinaryAUROC())
    for lo, hi in ((0, 4), (4, 10)):
        auroc.update(torch.sigmoid(X[lo:hi]).float(), (X[lo:hi] > 0).float(), None)
    metric = auroc.adapter.metric
    assert len(metric.inputs) == 2
    before = auroc.digest()
    metric._prepare_for_merge_state()            # what sync_and_compute does to each rank's metric first
    assert len(metric.inputs) == 1               # the list state concatenated in place
    value = auroc.compute()
    assert auroc.digest() == before              # same rows, same digest
    from sklearn.metrics import roc_auc_score
    assert value == pytest.approx(roc_auc_score((X > 0).numpy(), torch.sigmoid(X).numpy()), rel=1e-6)
    auroc.update(torch.tensor([0.5]), torch.tensor([1.0]), None)
    assert auroc.digest() != before              # a new row is a new state


def test_a_registration_gives_its_own_calls_and_conventions():
    import torchmetrics.regression

    calls = []
    m = hosted("C1", lambda p: torchmetrics.regression.MeanSquaredError(),
               transform=lambda i, t, w: (i * 2, t, w),
               update=lambda metric, i, t, w: (calls.append("update"), metric.update(i, t)),
               compute=lambda metric: {"mse": metric.compute()},
               state=lambda metric: {"sum": metric.sum_squared_error},
               conventions={"no_data": "nan"})
    m.update(X, torch.zeros_like(X), None)
    assert m.compute()["mse"] == pytest.approx(float((4 * X ** 2).mean()), rel=1e-6)
    assert calls == ["update"] and m.digest() == adapters.digest({"sum": m.adapter.metric.sum_squared_error})
    assert m.adapter.conventions["no_data"] == "nan" and m.adapter.conventions["compute"] == "synced"
    with pytest.raises(ValueError, match="unknown convention"):
        registry.register("C2", lambda p: None, conventions={"nodata": "nan"})


def test_torchmetrics_states_are_saved_by_its_persistent_convention():
    import torchmetrics.regression

    m = hosted("P1", lambda p: torchmetrics.regression.MeanSquaredError())
    assert torchmetrics.regression.MeanSquaredError().state_dict() == {}  # non-persistent by default
    m.update(X, torch.zeros_like(X), None)
    saved = m.save_state()
    fresh = hosted("P1", lambda p: torchmetrics.regression.MeanSquaredError())
    fresh.load_state(saved)
    assert fresh.compute() == pytest.approx(float((X ** 2).mean()), rel=1e-6)


# -- the peer mappings ----------------------------------------------------------------------------

@pytest.mark.parametrize("library", ["torchmetrics", "ignite", "torcheval"])
def test_every_mapped_class_is_built_and_agrees_with_numpy_on_a_binary_accuracy(library):
    _host.load(str(ROOT / "peers" / library / "metrics.py"), [])
    scores = torch.tensor([0.1, 0.7, 0.5, 0.2, 0.9])
    target = torch.tensor([0, 1, 0, 1, 1])
    m = _host.HostedMetric("Accuracy", json.dumps({"task": "binary", "threshold": 0.5, "num_classes": 0, "top_k": 1}), "cpu")
    m.update(scores, target, None)
    assert m.compute() == pytest.approx(float(np.mean((scores.numpy() >= 0.5) == target.numpy())))  # 3/5, 0.5 counts


def test_a_parameter_a_class_cannot_take_is_a_per_variant_skip():
    _host.load(str(ROOT / "peers" / "ignite" / "metrics.py"), [])
    with pytest.raises(Unsupported, match="Ignite gives 0 for a zero denominator"):
        _host.check("Precision", json.dumps({"task": "multiclass", "num_classes": 3, "average": "macro",
                                             "zero_division": 1.0, "threshold": 0.5}))


def test_bad_mappings_name_the_file_line_and_field(tmp_path):
    bad = tmp_path / "bad_mapping.py"
    bad.write_text("from distmetrics.peers import Peer, register_table\n"
                   "TABLE = [\n"
                   "    Peer('Accuracy', 'torchmetrics.classification:BinaryAccuracyy'),\n"
                   "]\n"
                   "register_table(TABLE, 'torchmetrics')\n")
    with pytest.raises(_host.SourceError, match=r"bad_mapping.py:3: cls: torchmetrics.classification has no class "
                                                r"BinaryAccuracyy \(did you mean BinaryAccuracy"):
        _host.load(str(bad), [])
    bad.write_text("from distmetrics.peers import Peer, register_table\n"
                   "register_table([Peer('Accuracy', 'torchmetrics.classification:BinaryAccuracy',\n"
                   "                     inputs='one_hot')], 'torchmetrics')\n")
    _host._sources.clear()
    with pytest.raises(_host.SourceError, match=r"bad_mapping.py:2: inputs: unknown conversion 'one_hot'"):
        _host.load(str(bad), [])
    with pytest.raises(PeerSetupError, match=r"here.py:7: library: no_such_library is not importable .* peers/venv.sh"):
        peers.require("no_such_library", "here.py:7")


def test_a_second_registration_of_one_reference_name_has_its_own_name(tmp_path):
    """Two torchmetrics classes for Average in one table: MeanMetric under the reference's name,
    MeanMetric in float64 as "Average[float64]" (conform --metric selects it); each builds its
    own class. A name that is not the reference's is bad input naming the line and field."""
    two = tmp_path / "two_averages.py"
    two.write_text("import torch\n"
                   "from distmetrics.peers import Peer, register_table\n"
                   "TABLE = [\n"
                   "    Peer('Average', 'torchmetrics.aggregation:MeanMetric'),\n"
                   "    Peer('Average', 'torchmetrics.aggregation:MeanMetric', name='Average[float64]',\n"
                   "         build=lambda cls, kw: cls(**kw).set_dtype(torch.float64)),\n"
                   "]\n"
                   "register_table(TABLE, 'torchmetrics')\n")
    described = json.loads(_host.load(str(two), []))
    assert sorted(m["name"] for m in described["metrics"]) == ["Average", "Average[float64]"]
    plain, wide = (_host._build(name, {}).metric for name in ("Average", "Average[float64]"))
    assert plain.mean_value.dtype == torch.float32 and wide.mean_value.dtype == torch.float64
    bad = tmp_path / "bad_name.py"
    bad.write_text("from distmetrics.peers import Peer, register_table\n"
                   "register_table([Peer('Average', 'torchmetrics.aggregation:MeanMetric', name='Mean[x]')],\n"
                   "               'torchmetrics')\n")
    with pytest.raises(_host.SourceError, match=r"bad_name.py:2: name: 'Mean\[x\]' must be the reference's name "
                                                r"'Average' or 'Average\[VARIANT\]'"):
        _host.load(str(bad), [])


# -- two ranks ----------------------------------------------------------------------------------

def _rank(rank, world_size, store_path, case, results):
    import faulthandler
    faulthandler.dump_traceback_later(50, exit=True)  # a rank that hangs says where, and ends
    warnings.simplefilter("ignore")
    sys.path.insert(0, str(HERE))
    sys.path.insert(0, str(ROOT / "python"))
    import fake_host as fh
    fake = sys.modules.get("_distmetrics_host") or fh.install()  # the one distmetrics._host reads
    import datetime

    import torch.distributed as dist
    from distmetrics import _host as host, peers as p
    for library in ("torchmetrics", "ignite", "torcheval"):
        p.require(library, __file__)
    # The group as the host makes it on gloo (a ProcessGroupGloo as torch.distributed's default
    # group), here from a FileStore; the host's collective tracing on top.
    dist.init_process_group("gloo", store=dist.FileStore(store_path, world_size), rank=rank, world_size=world_size,
                            timeout=datetime.timedelta(seconds=20))
    host.install_tracing()
    try:
        results.put((rank, CASES[case](rank, fake)))
    except Exception as e:  # noqa: BLE001
        results.put((rank, f"raised {type(e).__name__}: {e}"))
    finally:
        dist.destroy_process_group()


def _torcheval_global_value(rank, fake):
    import torcheval.metrics
    from distmetrics import _host as host, registry as reg

    reg.register("Mean", lambda p: torcheval.metrics.Mean())
    m = host.HostedMetric("Mean", "{}", "cpu")
    m.update(torch.arange(rank * 3, rank * 3 + 3, dtype=torch.float64), None, None)  # rank 0: 0 1 2, rank 1: 3 4 5
    return m.compute(), m.adapter.metric.compute().item()


def _ignite_digest_issues_no_collective(rank, fake):
    import ignite.metrics
    from distmetrics import _host as host, registry as reg

    reg.register("MSE", lambda p: ignite.metrics.MeanSquaredError())
    m = host.HostedMetric("MSE", "{}", "cpu")
    m.setup()
    m.update(torch.full((2 + rank,), 1.0), torch.zeros(2 + rank), None)
    del fake.trace[:]
    digest = m.digest()
    collectives = len(fake.trace)
    state = m.adapter.metric.state_dict()  # what the digest used to read: Ignite all-gathers it
    return digest != "", collectives, len(fake.trace) - collectives, len(state["_metric_state_dict_per_rank"] if "_metric_state_dict_per_rank" in state else next(iter(state.values())))


CASES = {"torcheval_global_value": _torcheval_global_value,
         "ignite_digest_issues_no_collective": _ignite_digest_issues_no_collective}


def two_ranks(case, tmp_path):
    ctx = multiprocessing.get_context("spawn")
    results = ctx.Queue()
    procs = [ctx.Process(target=_rank, args=(r, 2, str(tmp_path / "store"), case, results)) for r in range(2)]
    for p in procs:
        p.start()
    out = {}
    try:
        for _ in procs:
            rank, value = results.get(timeout=60)
            out[rank] = value
    except queue.Empty:
        pass
    for p in procs:
        p.join(timeout=10)
        if p.is_alive():
            p.kill()
    assert len(out) == 2, f"a rank did not report: {out}"
    return out


def test_torcheval_is_read_through_its_synced_path(tmp_path):
    out = two_ranks("torcheval_global_value", tmp_path)
    assert out[0] == (2.5, 1.0) and out[1] == (2.5, 4.0)  # global mean of 0..5 on both; compute() alone is local


def test_reading_ignite_state_for_the_digest_never_communicates(tmp_path):
    out = two_ranks("ignite_digest_issues_no_collective", tmp_path)
    for rank in (0, 1):
        has_digest, digest_collectives, state_dict_collectives, ranks_in_state = out[rank]
        assert has_digest and digest_collectives == 0, out
        assert state_dict_collectives >= 1 and ranks_in_state == 2, out  # state_dict() all-gathers both ranks


def test_the_docs_examples_register_a_class_of_each_library_in_a_line():
    import ignite.metrics
    import torchmetrics.classification
    import torcheval.metrics

    # docs/python.md, "Real library classes, conventions and your own calls"
    registry.register("ConfusionMatrix", lambda p: torchmetrics.classification.MulticlassConfusionMatrix(p["num_classes"]))
    registry.register("MeanAbsoluteError", lambda p: ignite.metrics.MeanAbsoluteError(),
                      transform=lambda x, y, w: (x.reshape(-1), y.reshape(-1), w))
    registry.register("Average", lambda p: torcheval.metrics.Mean())
    cm = _host.HostedMetric("ConfusionMatrix", json.dumps({"num_classes": 3}), "cpu")
    cm.update(torch.tensor([0, 1, 2]), torch.tensor([0, 2, 2]), None)
    assert cm.compute().tolist() == [[1, 0, 0], [0, 0, 0], [0, 1, 1]]  # rows true, columns predicted
    mae = _host.HostedMetric("MeanAbsoluteError", "{}", "cpu")
    mae.update(torch.tensor([[1.0, 2.0]]), torch.tensor([[0.0, 0.0]]), None)
    assert mae.compute() == pytest.approx(1.5)  # over elements; Ignite alone divides by rows (3.0)
    avg = _host.HostedMetric("Average", "{}", "cpu")
    avg.update(torch.tensor([1.0, 3.0]), None, torch.tensor([1.0, 3.0]))
    assert avg.compute() == pytest.approx(2.5)  # (1*1 + 3*3) / (1 + 3)


def test_a_declared_empty_batch_rejection_is_not_fed_so_the_rest_runs():
    import torchmetrics.classification

    plain = hosted("E1", lambda p: torchmetrics.classification.BinaryAccuracy())
    with pytest.raises(RuntimeError, match="cannot reshape tensor of 0 elements"):  # the library's own rejection
        plain.update(torch.zeros(0), torch.zeros(0, dtype=torch.long), None)
    declared = hosted("E2", lambda p: torchmetrics.classification.BinaryAccuracy(), conventions={"empty_batch": "rejected"})
    declared.update(torch.tensor([1, 0, 1]), torch.tensor([1, 1, 1]), None)
    # Not fed: the host says so (NotApplicable, which the C++ host turns into accepts_empty_batch
    # "not applicable"), and the state is untouched.
    with pytest.raises(NotApplicable, match="declares that it rejects a batch of no rows"):
        declared.update(torch.zeros(0), torch.zeros(0, dtype=torch.long), None)
    assert declared.compute() == pytest.approx(2 / 3)
    # A mapping's convention follows the class the parameters pick: Ignite's Precision rejects a
    # multiclass empty batch (precision.py:65, y.max()), not a binary one.
    _host.load(str(ROOT / "peers" / "ignite" / "metrics.py"), [])
    params = {"num_classes": 3, "average": "macro", "zero_division": 0.0, "threshold": 0.5}
    multiclass = _host.HostedMetric("Precision", json.dumps(dict(params, task="multiclass")), "cpu")
    binary = _host.HostedMetric("Precision", json.dumps(dict(params, task="binary")), "cpu")
    assert multiclass.adapter.conventions["empty_batch"] == "rejected"
    assert binary.adapter.conventions["empty_batch"] == "accepted"


def test_an_ignite_class_that_names_no_state_is_read_from_what_reset_assigns():
    # CharacterErrorRate has no _state_dict_all_req_keys of its own (an empty tuple): before, the
    # adapter read an empty state, so the idempotent digest compared nothing and always held.
    from ignite.metrics import CharacterErrorRate

    assert type(CharacterErrorRate())._state_dict_all_req_keys == ()
    adapter = adapters.IgniteAdapter(CharacterErrorRate())
    empty = adapter.state_tensors()
    assert sorted(empty) == ["_num_errors", "_num_examples", "_num_refs"]
    before = adapters.digest(empty)  # (the tensors are updated in place)
    adapter.update(["kitten"], ["sitting"], None)
    after = adapter.state_tensors()
    assert float(after["_num_errors"]) == 3.0 and float(after["_num_refs"]) == 7.0  # Levenshtein: 3 edits, 7 chars
    assert before != adapters.digest(after)  # the digest now sees an update
    assert type(adapter.metric) is CharacterErrorRate  # the recording subclass is gone again


def test_merge_state_is_called_as_each_library_takes_it():
    # torchmetrics' merge_state takes one state at a time and refuses a list; torcheval's takes the
    # list of metrics. The sums 1+2, 3 and 4 worked out by hand.
    import torcheval.metrics
    import torchmetrics.aggregation

    mine = adapters.TorchmetricsAdapter(torchmetrics.aggregation.SumMetric())
    mine.update(torch.tensor([1.0, 2.0]), None, None)
    others = [torchmetrics.aggregation.SumMetric(), torchmetrics.aggregation.SumMetric()]
    others[0].update(torch.tensor([3.0]))
    others[1].update(torch.tensor([4.0]))
    with pytest.raises(ValueError, match="Expected incoming state to be a dict or an instance of Metric"):
        torchmetrics.aggregation.SumMetric().merge_state(others)  # why the adapter does not hand it the list
    assert float(mine.merge(others).compute()) == 10.0
    te = adapters.TorchevalAdapter(torcheval.metrics.Sum())
    te.update(torch.tensor([1.0, 2.0]), None, None)
    other = torcheval.metrics.Sum()
    other.update(torch.tensor([3.0]))
    assert float(te.merge([other]).compute()) == 6.0
