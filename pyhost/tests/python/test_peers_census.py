"""The census of the real libraries' metric classes (peers/census.py) and the coverage table it
feeds (peers/coverage.py, docs/peers.md): the census counts what it says it counts (a package
written here, the expected classes listed by hand), every public class of the installed releases
is in the table (a new class in a new release fails here, never silently), and a class registered
under its own identity runs on a scenario generated for it.

The installed-release checks need the current releases (the torch 2.x venv's python, as ctest
runs this file in the 2.x build); with older ones (the torch 1.13 peers venv) they skip, naming
the releases."""

import importlib.util
import re
import json
import subprocess
import sys
import textwrap
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


census = _load("peers_census", ROOT / "peers" / "census.py")
coverage = _load("peers_coverage", ROOT / "peers" / "coverage.py")
DOC = (ROOT / "docs" / "peers.md").read_text()


def _write(root, files):
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


def test_the_census_counts_public_subclasses_once_where_defined(tmp_path):
    _write(tmp_path, {
        "lib/__init__.py": "from .metric import Metric\nfrom .a import Alpha\n__version__ = '9.1.0'\n",
        "lib/metric.py": "class Metric:\n    pass\nclass Helper:\n    pass\n",
        # Alpha and Beta count; _Private is private; Gamma is in a private module; NotAMetric is no Metric.
        "lib/a.py": "from lib.metric import Metric\nclass Alpha(Metric):\n    pass\nclass _Private(Metric):\n    pass\n"
                    "class NotAMetric:\n    pass\n",
        "lib/b/__init__.py": "from ..a import Alpha as Renamed\n",  # a re-export: not counted again
        "lib/b/beta.py": "from lib import a\nclass Beta(a.Alpha):\n    pass\n",  # through a module attribute
        "lib/_hidden.py": "from lib.metric import Metric\nclass Gamma(Metric):\n    pass\n",
        # A dispatcher (torchmetrics' task wrappers): listed apart, with the classes its __new__ returns.
        "lib/task.py": "from lib.metric import Metric\nfrom lib.a import Alpha\nfrom lib.b.beta import Beta\n"
                       "class _Wrapper(Metric):\n    pass\n"
                       "class Either(_Wrapper):\n    def __new__(cls, task):\n        if task == 'a':\n"
                       "            return Alpha()\n        return Beta()\n",
        "lib/tests/test_x.py": "from lib.metric import Metric\nclass InATest(Metric):\n    pass\n",
    })
    c = census.of_package("lib", tmp_path / "lib", "lib.metric:Metric", "lib.task:_Wrapper")
    assert c.version == "9.1.0"
    assert [m.qualified for m in c.metrics] == ["lib.a:Alpha", "lib.b.beta:Beta"]
    assert c.dispatchers == {"lib.task:Either": ["lib.a:Alpha", "lib.b.beta:Beta"]}


def test_a_declared_collection_and_its_subclasses_are_listed_apart(tmp_path, monkeypatch):
    _write(tmp_path, {
        "lib/__init__.py": "__version__ = '1.0.0'\n",
        "lib/metric.py": "class Metric:\n    pass\n",
        "lib/a.py": "from lib.metric import Metric\nclass Alpha(Metric):\n    pass\n",
        # A collection is no Metric (a ModuleDict in torchmetrics): found only because it is declared.
        "lib/collections.py": "import torch\nclass Collection(torch.nn.ModuleDict):\n    pass\n",
        "lib/share.py": "from lib.collections import Collection\nclass Shared(Collection):\n    pass\n"
                        "class _Hidden(Collection):\n    pass\n",
        # A collection that is a function (torcheval's toolkit), and one the release lacks.
        "lib/toolkit.py": "def collect(metrics):\n    return metrics\n",
    })
    monkeypatch.setitem(census.COLLECTIONS, "lib", ("lib.collections:Collection", "lib.toolkit:collect",
                                                    "lib.toolkit:gone"))
    c = census.of_package("lib", tmp_path / "lib", "lib.metric:Metric")
    assert [m.qualified for m in c.metrics] == ["lib.a:Alpha"]
    assert [m.qualified for m in c.collections] == ["lib.collections:Collection", "lib.share:Shared", "lib.toolkit:collect"]
    assert c.collections[-1].line == 1
    monkeypatch.setitem(census.COLLECTIONS, "lib", ())
    assert census.of_package("lib", tmp_path / "lib", "lib.metric:Metric").collections == []


def _installed_or_skip():
    older = []
    for library in coverage.LIBRARIES:
        documented = coverage.table_release(DOC, library)
        installed = census.take(library).version
        if documented and coverage.census_release(installed) < coverage.census_release(documented):
            older.append(f"{library} {installed} (the table is of {documented})")
    if older:
        pytest.skip(f"docs/peers.md's coverage is of the current releases; this Python has older ones: {', '.join(older)}")


@pytest.mark.parametrize("library", list(coverage.LIBRARIES))
def test_every_public_class_of_the_installed_release_is_in_the_table(library):
    _installed_or_skip()
    missing, version = coverage.unlisted(library, DOC)
    assert not missing, (f"{library} {version} has public metric classes that docs/peers.md does not list: "
                         f"{missing}; run peers/coverage.py, then map or declare them")
    # ... with the count the summary line gives.
    c = census.take(library)
    line = re.search(r"^Census of \S+(?: \S+)? " + re.escape(c.version) + r" .*?: (\d+) public metric classes", DOC, re.M)
    assert line and int(line.group(1)) == len(c.metrics)


def test_a_class_missing_from_the_table_is_named():
    _installed_or_skip()
    c = census.take("torcheval")
    victim = c.metrics[0].qualified
    text = DOC.replace(f"| `{victim}` |", "| (removed) |")
    missing, _ = coverage.unlisted("torcheval", text)
    assert missing == [victim]


def test_the_coverage_section_is_up_to_date():
    _installed_or_skip()
    done = subprocess.run([sys.executable, str(ROOT / "peers" / "coverage.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr + done.stdout


def test_a_class_checked_against_itself_gets_a_scenario_of_its_own(tmp_path):
    _installed_or_skip()
    scenarios = _load("peers_scenarios", ROOT / "peers" / "scenarios.py")
    count = scenarios.write(tmp_path, ["torcheval"])
    files = sorted((tmp_path / "scenarios" / "torcheval").glob("*.toml"))
    assert count == len(files) > 0
    import tomllib

    sum_file = tomllib.loads((tmp_path / "scenarios" / "torcheval" / "Sum.toml").read_text())
    assert sum_file["metric"]["name"] == "torcheval.Sum"
    assert sum_file["data"]["generator"] == "values"
    # Tensors with a label to order by: every 3-rank policy of the plan, skewed and round_robin included.
    assert sum_file["variants"]["shards"] == ["uneven", "empty_rank", "skewed", "round_robin"]
    assert sum_file["variants"]["world_sizes"] == [3]
    # Its variant plan's other files: an even split at 2 ranks; at 4 ranks even and the sampler's
    # deal (40 samples: no padding); the same data and properties.
    even = tomllib.loads((tmp_path / "scenarios" / "torcheval" / "Sum.ws2.toml").read_text())
    assert (even["variants"]["world_sizes"], even["variants"]["shards"]) == ([2], ["even"])
    assert (even["data"], even["properties"], even["metric"]) == (sum_file["data"], sum_file["properties"], sum_file["metric"])
    four = tomllib.loads((tmp_path / "scenarios" / "torcheval" / "Sum.ws4.toml").read_text())
    assert (four["variants"]["world_sizes"], four["variants"]["shards"], four["data"]) == ([4], ["even", "padded"], sum_file["data"])
    # Text samples have no label to order by: no skewed split for BLEU.
    bleu = tomllib.loads((tmp_path / "scenarios" / "torcheval" / "BLEUScore.toml").read_text())
    assert bleu["variants"]["shards"] == ["uneven", "empty_rank", "round_robin"]
    # A Binary class fed probabilities is fed logits too (3 ranks, uneven); a class fed labels is not.
    logits = tomllib.loads((tmp_path / "scenarios" / "torcheval" / "BinaryBinnedAUROC.logits.toml").read_text())
    assert (logits["data"]["params"]["output"], logits["variants"]["shards"]) == ("logits", ["uneven"])
    assert not (tmp_path / "scenarios" / "torcheval" / "Sum.logits.toml").exists()
    ws2 = len(list((tmp_path / "scenarios" / "torcheval").glob("*.ws2.toml")))
    ws4 = sorted(p.name for p in (tmp_path / "scenarios" / "torcheval").glob("*.ws4.toml"))
    equal = sorted(p.name for p in (tmp_path / "scenarios" / "torcheval").glob("*.equal.toml"))
    with_logits = list((tmp_path / "scenarios" / "torcheval").glob("*.logits.toml"))
    raises = sorted(p.name for p in (tmp_path / "scenarios" / "torcheval").glob("*.raises.toml"))
    assert ws2 == len(ws4) and ws2 * 3 + len(with_logits) + len(equal) + len(raises) == count
    # A class whose compute() before any update raises (found by asking it, not declared) is checked
    # for what comes after: compute first, then every update, then compute twice; [expect] names
    # the error at compute 1 (expected_error, recovers_after_error), every rank the same updates.
    assert "MulticlassAUPRC.raises.toml" in raises and "Sum.raises.toml" not in raises
    auprc = tomllib.loads((tmp_path / "scenarios" / "torcheval" / "MulticlassAUPRC.raises.toml").read_text())
    assert auprc["script"] == ["compute", "update rest", "compute", "compute"]
    assert auprc["expect"] == {"error": "ValueError", "compute": 1}
    # Every default property the script's computes can judge (no reset in it: not reset_replay).
    assert auprc["properties"] == ["equal_to_single", "ranks_agree", "idempotent", "update_after_compute",
                                   "batch_invariant"]
    assert (auprc["variants"]["world_sizes"], auprc["variants"]["shards"], auprc["data"]["num_samples"]) == ([2, 3], ["even"], 48)
    # A compute before any update that kills its process (FrechetAudioDistance: torch.linalg.eigvals
    # of a NaN matrix, a SIGSEGV in MKL, undefined behaviour that in a rank worker sometimes raises
    # instead) gets no file: the probe names it and its repro shows it.
    assert "FrechetAudioDistance.raises.toml" not in raises
    # Every rank the same updates only where the 2- and 4-rank even variants die on a known
    # mechanism (Perplexity's padding batch): 48 samples at 2, 3 and 4 ranks, even, the default
    # script without its one-rank empty update.
    assert "Perplexity.equal.toml" in equal and "Sum.equal.toml" not in equal
    same = tomllib.loads((tmp_path / "scenarios" / "torcheval" / "Perplexity.equal.toml").read_text())
    assert (same["variants"]["world_sizes"], same["variants"]["shards"], same["data"]["num_samples"]) == ([2, 3, 4], ["even"], 48)
    assert "update empty ranks=0" not in same["script"] and "update empty" in same["script"]
    # torcheval has merge_state: it is judged too, beside every property that needs no reference.
    assert {"equal_to_single", "ranks_agree", "idempotent", "update_after_compute", "reset_replay",
            "batch_invariant", "state_roundtrip", "merge_state"} == set(sum_file["properties"])
    # A time reading (Own(only=...)) is judged on the properties its row names, merge_state not added.
    throughput = tomllib.loads((tmp_path / "scenarios" / "torcheval" / "Throughput.toml").read_text())
    assert throughput["properties"] == ["ranks_agree"]


def test_the_probe_survives_a_compute_that_kills_its_process(tmp_path, monkeypatch):
    """peers/scenarios.py asks each class's compute() before any update in a process of its own; a
    class whose compute kills that process is recorded as a crash and the classes after it are
    still asked (the probe restarts after it); the answers are kept for the next run."""
    _installed_or_skip()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    scenarios = _load("peers_scenarios", ROOT / "peers" / "scenarios.py")
    answers = scenarios.probe("torcheval")
    # MKL on a NaN matrix is undefined behaviour: a SIGSEGV mostly, a SIGABRT at times (measured).
    assert answers["torcheval.FrechetAudioDistance"]["outcome"] == "crash"
    assert answers["torcheval.FrechetAudioDistance"]["error"] in ("signal 11", "signal 6")
    assert answers["torcheval.MulticlassAUPRC"] == {"outcome": "raises", "error": "ValueError"}
    assert answers["torcheval.Sum"]["outcome"] == "value"
    module = scenarios.load("torcheval")
    assert set(answers) == set(module.OWNED)  # rows after the crash were asked too
    kept = list((tmp_path / "distmetrics" / "probes").glob("torcheval-*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text()) == answers


def test_a_bad_own_row_names_its_file_line_and_field():
    pytest.importorskip("torcheval")
    from distmetrics import registry
    from distmetrics.errors import PeerSetupError
    from distmetrics.peers import Own, register_own

    registry._REGISTRY.clear()
    line = sys._getframe().f_lineno + 1
    bad_shape = Own("torcheval.metrics:Sum", "vlaues")
    with pytest.raises(PeerSetupError, match=rf"test_peers_census.py:{line}: shape: unknown input shape 'vlaues'"):
        register_own([bad_shape], "torcheval")
    with pytest.raises(PeerSetupError, match=r"cls: torcheval.metrics has no class Summ"):
        register_own([Own("torcheval.metrics:Summ", "values")], "torcheval")
    with pytest.raises(PeerSetupError, match=r"inputs: unknown conversion 'as_it_is'"):
        register_own([Own("torcheval.metrics:Sum", "values", inputs="as_it_is")], "torcheval")
    with pytest.raises(PeerSetupError, match=r"torcheval.Sum is registered twice"):
        register_own([Own("torcheval.metrics:Sum", "values"), Own("torcheval.metrics:Sum", "values")], "torcheval")
    registry._REGISTRY.clear()
