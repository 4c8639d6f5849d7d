"""Any release of a library (issue 45): rows over a range of releases ("not in this release" for a
class or a constructor argument the installed release lacks, per-release overrides of a row),
the census's answer to "does this release define that class", peers/release.py's errors (an
unknown release, no wheel for this Python, a release that needs another torch, a checkout that
does not import), peers/expected.py --baseline (new / not seen / not run / unchanged), and
ci/run_peers.sh's options for it (dry run). Nothing here reaches PyPI: the index is a stand-in;
the checkouts are folders written here."""

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT / "python"))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


release = _load("peers_release", ROOT / "peers" / "release.py")
expected = _load("peers_expected", ROOT / "peers" / "expected.py")


# -- Rows over a range of releases ----------------------------------------------------------------

def test_rows_the_installed_release_lacks_are_not_in_this_release():
    pytest.importorskip("torcheval")
    from distmetrics import registry
    from distmetrics.peers import NOT_IN_RELEASE_TEXT, Own, Peer, not_in_release, register_own, register_table

    registry._REGISTRY.clear()
    rows = [Own("torcheval.metrics:Sum", "values"),
            Own("torcheval.metrics:NotInAnyRelease", "values"),
            Own("torcheval.metrics:Mean", "values", dict(no_such_parameter=1)),
            # A row that needs another constructor on the installed release says so in the row.
            Own("torcheval.metrics:Max", "values", dict(no_such_parameter=1), releases={"<99": dict(kwargs={})})]
    # since: triaged on a release that is not the installed one (no expected.toml beside this file).
    owned = register_own(rows, "torcheval", since="99.0.0")
    assert sorted(owned) == ["torcheval.Max", "torcheval.Sum"]
    assert owned["torcheval.Max"].kwargs == {} and owned["torcheval.Max"].release_note.startswith("<99")
    absent = {cls: why for cls, _, why in not_in_release("torcheval")}
    assert set(absent) == {"torcheval.metrics:NotInAnyRelease", "torcheval.metrics:Mean"}
    assert "has no NotInAnyRelease" in absent["torcheval.metrics:NotInAnyRelease"]
    assert "not in the census" in absent["torcheval.metrics:NotInAnyRelease"]
    assert "Mean takes no no_such_parameter" in absent["torcheval.metrics:Mean"]

    # A reference metric's row: out of the table (what reads it sees the classes that exist), its
    # variants skip with the reason; a constructor argument the class does not take, the same.
    table = [Peer("MeanSquaredError", "torcheval.metrics:NotInAnyRelease"),
             Peer("MeanAbsoluteError", "torcheval.metrics:Sum", kwargs=lambda p: dict(no_such_parameter=1))]
    register_table(table, "torcheval", since="99.0.0")
    assert [p.cls for p in table] == ["torcheval.metrics:Sum"]
    from distmetrics.errors import Unsupported
    for name in ("MeanSquaredError", "MeanAbsoluteError"):
        with pytest.raises(Unsupported, match=NOT_IN_RELEASE_TEXT):
            registry.registered(name).factory({})
    assert len(not_in_release("torcheval")) == 3
    registry._REGISTRY.clear()


def test_on_the_triaged_release_a_missing_class_stays_bad_input():
    pytest.importorskip("torcheval")
    import torcheval

    from distmetrics import registry
    from distmetrics.errors import PeerSetupError
    from distmetrics.peers import Own, register_own

    registry._REGISTRY.clear()
    with pytest.raises(PeerSetupError, match=r"has no class Summ"):
        register_own([Own("torcheval.metrics:Summ", "values")], "torcheval", since=torcheval.__version__)
    bad_range = Own("torcheval.metrics:Sum", "values", releases={"about 1.4": {}})
    with pytest.raises(PeerSetupError, match=r"releases: not a version range: 'about 1.4'"):
        register_own([bad_range], "torcheval", since="99.0.0")
    registry._REGISTRY.clear()


def test_a_mapping_reads_its_expected_toml_once_per_version_of_the_file(tmp_path, monkeypatch):
    """register_table asks, row by row, whether the installed release is one the rows were triaged
    on: the `releases` of the expected.toml beside the mapping. The file (300 KB of findings for
    torchmetrics) is parsed once, and again only when it changes, not once per row."""
    pytest.importorskip("torcheval")
    import runpy
    import tomllib

    import torcheval

    from distmetrics import registry

    reads = []
    real_load = tomllib.load
    monkeypatch.setattr(tomllib, "load", lambda f: reads.append(f.name) or real_load(f))
    expected = tmp_path / "expected.toml"
    expected.write_text(f'releases = ["{torcheval.__version__} on torch 9.9"]\n')
    mapping = tmp_path / "metrics.py"
    mapping.write_text(textwrap.dedent("""
        from distmetrics.peers import Peer, register_table
        register_table([Peer("MeanSquaredError", "torcheval.metrics:MeanSquaredError"),
                        Peer("MeanAbsoluteError", "torcheval.metrics:Sum"),
                        Peer("MeanAbsoluteError", "torcheval.metrics:Max")], "torcheval")
    """))
    try:
        registry._REGISTRY.clear()
        runpy.run_path(str(mapping))
        assert reads == [str(expected)]
        registry._REGISTRY.clear()
        runpy.run_path(str(mapping))
        assert reads == [str(expected)]
        expected.write_text(f'releases = ["{torcheval.__version__} on torch 9.9", "0.0.1 on torch 9.9"]\n')
        registry._REGISTRY.clear()
        runpy.run_path(str(mapping))
        assert reads == [str(expected)] * 2
    finally:
        registry._REGISTRY.clear()


def test_the_census_says_which_classes_a_release_defines(tmp_path, monkeypatch):
    census = _load("peers_census_t", ROOT / "peers" / "census.py")
    package = tmp_path / "torcheval"
    (package / "metrics").mkdir(parents=True)
    (package / "__init__.py").write_text('__version__ = "0.0.1"\n')
    (package / "metrics" / "__init__.py").write_text("from .sum import Sum\n")
    (package / "metrics" / "sum.py").write_text("class Sum:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n == "torcheval" or n.startswith("torcheval.")]:
        monkeypatch.delitem(sys.modules, name)
    defined = census.defined("torcheval")
    assert defined("torcheval.metrics:Sum") and defined("torcheval.metrics.sum:Sum")
    assert not defined("torcheval.metrics:Mean") and not defined("torcheval.nothing:Sum")


def test_a_declared_move_runs_the_class_where_an_older_release_has_it(tmp_path, monkeypatch):
    # Ignite before 0.5.0 had ROC_AUC and the regression classes in ignite.contrib.metrics: the rows
    # name ignite.metrics (0.5.5's), and a declared move finds them where the release has them,
    # instead of "not in this release" (ignite 0.4.13: 20 classes). A stand-in package, "movedlib".
    from distmetrics import peers
    from distmetrics.errors import PeerSetupError

    package = tmp_path / "movedlib"
    (package / "contrib" / "metrics" / "regression").mkdir(parents=True)
    (package / "metrics").mkdir()
    (package / "__init__.py").write_text('__version__ = "0.4.13"\n')
    (package / "metrics" / "__init__.py").write_text("class Accuracy:\n    pass\n")
    (package / "contrib" / "__init__.py").write_text("")
    (package / "contrib" / "metrics" / "__init__.py").write_text("class ROC_AUC:\n    pass\n")
    (package / "contrib" / "metrics" / "regression" / "__init__.py").write_text("class R2Score:\n    pass\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(peers, "MOVED", {})
    monkeypatch.setattr(peers, "MOVED_USED", {})
    import movedlib
    import movedlib.contrib.metrics
    import movedlib.contrib.metrics.regression

    row = peers.Peer("RocAuc", "movedlib.metrics:ROC_AUC")
    with pytest.raises(PeerSetupError, match="has no class ROC_AUC"):
        peers._resolve(row)  # no move declared: as before
    peers.moved("movedlib", "<0.5", "movedlib.metrics", "movedlib.contrib.metrics")
    assert peers._resolve(row) is movedlib.contrib.metrics.ROC_AUC
    assert peers._resolve(peers.Peer("R2Score", "movedlib.metrics.regression:R2Score")) is \
        movedlib.contrib.metrics.regression.R2Score
    assert peers._resolve(peers.Peer("Accuracy", "movedlib.metrics:Accuracy")).__module__ == "movedlib.metrics"
    assert peers.MOVED_USED == {"movedlib.metrics:ROC_AUC": "movedlib.contrib.metrics:ROC_AUC",
                                "movedlib.metrics.regression:R2Score": "movedlib.contrib.metrics.regression:R2Score"}
    assert peers.absent_from_release(row, "movedlib", strict=False) == ""
    # A class in neither module is still missing, with the first module's error.
    with pytest.raises(PeerSetupError, match="movedlib.metrics has no class Nothing"):
        peers._resolve(peers.Peer("RocAuc", "movedlib.metrics:Nothing"))
    # On a release outside the range the move does not apply.
    monkeypatch.setattr(movedlib, "__version__", "0.5.0")
    with pytest.raises(PeerSetupError, match="has no class ROC_AUC"):
        peers._resolve(row)
    with pytest.raises(ValueError, match="not a version range"):
        peers.moved("movedlib", "before 0.5", "movedlib.metrics", "movedlib.contrib.metrics")
    for name in [n for n in sys.modules if n == "movedlib" or n.startswith("movedlib.")]:
        sys.modules.pop(name)


# -- peers/release.py: what it refuses, and why ------------------------------------------------------

def test_a_release_that_needs_another_torch_says_which():
    needs = ["torch (<2,>=1.3)"]
    with pytest.raises(release.Failure, match=r"ignite 0.4.2 requires torch<2,>=1.3 .* rerun with --torch 1.13"):
        release.check_torch("ignite", "0.4.2", needs, "2.15.0+cu132", "2")
    with pytest.raises(release.Failure, match=r"neither this torch nor Debian's 1.13.1"):
        release.check_torch("ignite", "0.1.0", ["torch (<1.5)"], "2.15.0", "2")
    release.check_torch("torchmetrics", "1.4.0", ["torch >=1.10.0", "numpy >1.20.0"], "2.15.0", "2")  # fits


def test_an_unknown_release_and_one_without_a_wheel_are_told_apart(monkeypatch, tmp_path):
    monkeypatch.setattr(release, "pip", lambda *a, **k: (1, "ERROR: No matching distribution found"))
    monkeypatch.setattr(release, "versions", lambda python, library: ["1.9.0", "1.4.0", "0.2.0"])
    with pytest.raises(release.Failure, match=r"torchmetrics has no release 9.9.9 .* 1.9.0, 1.4.0"):
        release.download(sys.executable, "torchmetrics", "9.9.9", tmp_path)
    with pytest.raises(release.Failure, match=r"torchmetrics 0.2.0 exists but has no wheel for Python .* --from WHEEL"):
        release.download(sys.executable, "torchmetrics", "0.2.0", tmp_path)


def _prepare(*args, timeout=240):
    return subprocess.run([sys.executable, str(ROOT / "peers" / "release.py"), "prepare", *args],
                          capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, DISTMETRICS_RELEASES_DIR=os.environ.get("TMPDIR", "/tmp")))


def test_a_checkout_runs_as_it_is_or_says_why_not(tmp_path):
    pytest.importorskip("torch")
    good = tmp_path / "good"
    (good / "src" / "torcheval" / "metrics").mkdir(parents=True)
    (good / "src" / "torcheval" / "__init__.py").write_text('__version__ = "0.0.99.dev0"\n')
    (good / "src" / "torcheval" / "metrics" / "__init__.py").write_text("")
    done = _prepare("--library", "torcheval", "--from", str(good))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == str(good / "src")
    assert "torcheval 0.0.99.dev0 imports from" in done.stdout

    broken = tmp_path / "broken"
    (broken / "torcheval").mkdir(parents=True)
    (broken / "torcheval" / "__init__.py").write_text("import a_module_no_one_has\n")
    done = _prepare("--library", "torcheval", "--from", str(broken))
    assert done.returncode == 2
    assert "does not import" in done.stderr and "a_module_no_one_has" in done.stderr

    done = _prepare("--library", "torcheval", "--from", str(tmp_path / "empty"))
    assert done.returncode == 2 and "no such file or folder" in done.stderr
    (tmp_path / "empty").mkdir()
    done = _prepare("--library", "torcheval", "--from", str(tmp_path / "empty"))
    assert done.returncode == 2 and "no torcheval package in it" in done.stderr


# -- peers/expected.py --baseline ---------------------------------------------------------------------

SOURCE = "python:/x/peers/lib/metrics.py"
ALL = ["equal_to_single", "ranks_agree", "idempotent", "no_hang"]


def variant(vid, outcome, failed=(), metric="A"):
    props = [{"name": p, "outcome": "fail" if p in failed else "pass"} for p in ALL]
    return {"id": vid, "metric": f"{metric} (lib/metrics)", "source": SOURCE, "outcome": outcome,
            "reason": "root cause: x", "properties": props, "seconds": 0.1}


BASELINE = """\
releases = ["2.0.0 on torch 2.15"]

[[finding]]
variant = "s/A:gloo-ws*-empty_rank-cpu"
outcome = "fail"
failed = ["equal_to_single"]
blamed = []
kind = "library bug"
why = "the empty rank's default"

[[finding]]
variant = "s/B:gloo-ws*-uneven-cpu"
outcome = "fail"
failed = ["ranks_agree"]
blamed = []
kind = "library bug"
why = "B's cache"

[[finding]]
variant = "s/Gone:gloo-ws*"
outcome = "fail"
failed = ["ranks_agree"]
blamed = []
kind = "library bug"
why = "a class this release does not have"
"""


def test_another_release_against_the_baseline(tmp_path, capsys):
    variants = [variant("s/A:gloo-ws3-empty_rank-cpu", "fail", ["equal_to_single"]),   # unchanged
                variant("s/B:gloo-ws3-uneven-cpu", "pass", metric="B"),                 # not seen (fixed)
                variant("s/C:gloo-ws3-uneven-cpu", "fail", ["idempotent"], metric="C")]  # new
    report = tmp_path / "peers.json"
    report.write_text(json.dumps({"summary": {"pass": 1, "fail": 2, "hang": 0, "crash": 0, "error": 0,
                                              "memory_exceeded": 0, "skip": 0, "total": 3},
                                  "plugins": [{"path": SOURCE, "version": "1.0.0", "torch_version": "2.15.0"}],
                                  "variants": variants}))
    toml = tmp_path / "expected.toml"
    toml.write_text(textwrap.dedent(BASELINE))
    args = ["--library", "lib", "--report", str(report), "--expected", str(toml)]
    # Without a baseline, a release the file does not list is bad input that names --baseline.
    assert expected.main(args) == 2
    assert '--baseline "2.0.0 on torch 2.15"' in capsys.readouterr().err
    md = tmp_path / "release.md"
    assert expected.main(args + ["--baseline", "2.0.0 on torch 2.15", "--pr-markdown", str(md)]) == 1
    out = capsys.readouterr().out
    assert ("lib 1.0.0 on torch 2.15 against 2.0.0 on torch 2.15 (peers/lib/expected.toml): 1 new finding(s) in "
            "1 group(s), 1 of the baseline's entries not seen (fixed, or not yet born), 1 unchanged, 1 whose "
            "variants did not run here") in out
    assert "new: C: FAIL (idempotent) in 1 variant(s)" in out
    assert "not seen (fixed, or not yet born): fail s/B:gloo-ws*-uneven-cpu: B's cache" in out
    assert "not run here: s/Gone:gloo-ws*" in out
    text = md.read_text()
    assert text.startswith("### distmetrics: lib 1.0.0 on torch 2.15 against 2.0.0 on torch 2.15: **new findings**")
    assert "| new | `C` | FAIL (idempotent) | 1 | `s/C:gloo-ws3-uneven-cpu` |" in text
    # Without the new finding the run passes: a finding gone is news, not a failure.
    variants.pop()
    report.write_text(json.dumps({**json.loads(report.read_text()), "variants": variants}))
    assert expected.main(args + ["--baseline", "2.0.0 on torch 2.15"]) == 0
    assert expected.main(args + ["--baseline", "3.0.0 on torch 2.15"]) == 2
    assert "has entries for 2.0.0 on torch 2.15 only" in capsys.readouterr().err


# -- ci/run_peers.sh's options ------------------------------------------------------------------------

def _run_peers(*args):
    return subprocess.run(["bash", str(ROOT / "ci" / "run_peers.sh"), "--skip-deps", *args], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)


def test_run_peers_release_options():
    done = _run_peers("--release", "1.4.0")
    assert done.returncode == 2 and "--release and --from take one library: add --library NAME" in done.stderr
    done = _run_peers("--library", "torchmetrics", "--release", "1.4.0", "--from", "/tmp")
    assert done.returncode == 2 and "exclude each other" in done.stderr
    done = _run_peers("--dry-run", "--no-build", "--library", "torchmetrics", "--release", "1.4.0")
    if "the torch 2.x venv could not be made" in done.stderr:
        pytest.skip("no torch 2.x venv here (ci/torch2-venv.sh)")
    assert done.returncode == 0, done.stderr
    assert "peers/release.py prepare --library torchmetrics" in done.stdout and "--release 1.4.0" in done.stdout
    assert 'findings against "' in done.stdout


# -- peers/bisect_release.py ---------------------------------------------------------------------------

def test_bisect_finds_the_release_that_brought_a_finding_on_two_releases():
    """torchmetrics' KLDivergence with an empty rank at 3 ranks crashes on 1.9.0 (float64 states
    against the empty rank's float32 defaults: expected.toml) and passes on 1.4.0. Two releases,
    one variant each: within a minute."""
    binary = os.environ.get("DISTMETRICS_BIN")
    if not binary or not os.access(binary, os.X_OK):
        pytest.skip("DISTMETRICS_BIN: no distmetrics command (ctest sets it)")
    pytest.importorskip("torchmetrics")
    cmd = [sys.executable, str(ROOT / "peers" / "bisect_release.py"), "--library", "torchmetrics", "--good", "1.4.0",
           "--bad", "1.9.0", "--versions", "1.4.0,1.9.0", "--variant", "torchmetrics/KLDivergence:gloo-ws3-empty_rank-cpu",
           "--outcome", "crash", "--world-sizes", "3", "--distmetrics", binary]
    started = time.time()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=ROOT)
    if done.returncode == 5 and ("pip" in done.stderr or "index" in done.stderr):
        pytest.skip(f"PyPI not reachable from here: {done.stderr.strip()[-200:]}")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "torchmetrics 1.4.0: does not show it" in done.stdout and "torchmetrics 1.9.0: shows it" in done.stdout
    assert "first release that shows it: 1.9.0 (the last before it: 1.4.0; 2 releases run)" in done.stdout
    print(f"bisect of two releases: {time.time() - started:.0f} s")


def test_takes_parameter_reads_a_factory_function_too():
    # Ignite's DiceCoefficient is a function that builds a MetricsLambda: no __mro__ to walk (the
    # peer run stopped at its check when takes_parameter assumed a class).
    from distmetrics.peers import takes_parameter

    def dice(cm, ignore_index=None):
        return cm

    assert takes_parameter(dice, "ignore_index") and not takes_parameter(dice, "num_classes")

    class Base:
        def __init__(self, threshold=0.5):
            pass

    class Child(Base):
        pass

    assert takes_parameter(Child, "threshold") and not takes_parameter(Child, "average")


def test_the_requirements_of_a_layered_folder_are_read_from_its_dist_info(tmp_path):
    # What release.py layers beside a release (torcheval 0.0.6's torchtnt, then torchtnt's own
    # pyre-extensions...) is found from the Requires-Dist lines of what is already there.
    meta = tmp_path / "torchtnt-0.2.4.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: torchtnt\nVersion: 0.2.4\n"
                                   "Requires-Dist: torch\nRequires-Dist: pyre-extensions\n"
                                   "Requires-Dist: tqdm ; extra == 'dev'\n\nRequires-Dist: not a header\n")
    assert release._requires_in(tmp_path) == ["torch", "pyre-extensions", "tqdm ; extra == 'dev'"]


def test_pearson_rejects_an_empty_batch_from_1_7_4_on():
    # PearsonCorrCoef's update takes torch.max of each batch's |x - mean| from PR #3152 on (1.7.4's
    # CHANGELOG; functional/regression/pearson.py:86 of 1.7.4 and 1.9.0): the row declares that it
    # rejects an empty batch from that release on. Gated at 1.9, the run of 1.7.4 fed it one: 22
    # accepts_empty_batch "new findings" that were the row's range, not the release.
    pytest.importorskip("torchmetrics")
    from distmetrics import registry

    registry._REGISTRY.clear()
    mapping = _load("peers_torchmetrics_t", ROOT / "peers" / "torchmetrics" / "metrics.py")
    registry._REGISTRY.clear()
    rejects = {"empty_batch": "rejected"}
    assert mapping.pearson_conventions("1.9.0") == rejects and mapping.pearson_conventions("1.7.4") == rejects
    assert mapping.pearson_conventions("1.7.3") == {} and mapping.pearson_conventions("1.4.0.post0") == {}
