"""The runner's tables as Python reads them (distmetrics.tables, `distmetrics tables --json`), and
no copy of them in the Python code: a list of outcome, backend, property or shard policy names (or
a dict of three reference metric parameters: their defaults), a metric source spelled with its
prefix ("python:" + path), or a literal exit code compared with a process's, anywhere in
python/distmetrics/ or peers/, fails here unless ALLOWED says why it must stay. (Tests, and python/tests/fake_distmetrics.py, a stand-in for the C++ side, are not scanned:
the fake's copy is checked against the runner's below.)

Needs the runner: $DISTMETRICS_BIN (ctest sets it), else build/bin/distmetrics."""

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO / "python"))

from distmetrics.tables import Tables, TablesError, find_binary, tables  # noqa: E402

SCANNED = [REPO / "python" / "distmetrics", REPO / "peers"]

# Literals that must stay, each with why: (file relative to the repo, what the scan says) -> why.
ALLOWED = {
    ("python/distmetrics/peers.py", "a list of shard policy names ('uneven', 'empty_rank', 'skewed', 'round_robin')"):
        "OWN_SHARDS: the peer run's choice of policies for the classes checked against themselves, "
        "not the table (test_the_peer_plan_names_shard_policies_of_the_table checks each is one)",
    ("python/distmetrics/peers.py", "a list of shard policy names ('even', 'padded')"):
        "OWN_PLAN's 4-rank entry: the peer run's choice, not the table (checked as OWN_SHARDS is)",
    ("peers/bisect_release.py", "an exit code compared: code in (2, 5)"):
        "peers/release.py's own exit codes (2 bad input, 5 a set-up that failed: ci/lib.sh's), not the runner's",
}


@pytest.fixture(scope="module")
def table() -> Tables:
    try:
        return tables()
    except TablesError as error:
        pytest.skip(f"no distmetrics runner to read the tables from: {error}")


# --- the scan ---------------------------------------------------------------------------------------
def _strings(nodes):
    return [n.value for n in nodes if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _docstrings(tree):
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def _named_code(node) -> bool:
    """A name that holds a process's exit status: returncode, exit_code, exitcode, code, status."""
    name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else ""
    name = name.lower()
    return name in ("code", "status", "rc") or any(w in name for w in ("returncode", "exit_code", "exitcode"))


def copies(source: str, table: Tables):
    """What in `source` copies the tables: [(line, what)]."""
    # (names, how many of them one literal may hold, whether a list or only a dict copies them): a
    # mapping row lists the reference parameters it maps (`takes`), a dict of three of them with
    # values copies their defaults.
    categories = {"outcome": (set(table.outcomes), 1, False), "backend": (set(table.backends), 1, False),
                  "property": (set(table.properties), 1, False),
                  "shard policy": (set(table.shard_policies), 1, False),
                  "launcher": (set(table.launchers) | {l["pool_launch"] for l in table.launchers.values() if l["pool_launch"]},
                               1, False),
                  "reference parameter": (table.reference_param_names(), 2, True)}
    tree = ast.parse(source)
    docstrings = _docstrings(tree)
    found = []
    for node in ast.walk(tree):
        elements = None
        if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
            elements = node.elts
        elif isinstance(node, ast.Dict):
            elements = [k for k in node.keys if k is not None]
        if elements is not None:
            strings = _strings(elements)
            for category, (names, most, dict_only) in categories.items():
                if dict_only and not isinstance(node, ast.Dict):
                    continue
                named = [s for s in strings if s in names]
                if len(set(named)) > most:
                    found.append((node.lineno, f"a list of {category} names ({', '.join(repr(s) for s in named)})"))
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            if node.value.startswith(table.python_prefix) and len(node.value) >= len(table.python_prefix):
                found.append((node.lineno, f"a metric source spelled with its prefix: {node.value!r}"))
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(_named_code(s) for s in sides):
                literals = []
                for s in sides:
                    for n in (s.elts if isinstance(s, (ast.Tuple, ast.List, ast.Set)) else [s]):
                        if isinstance(n, ast.Constant) and isinstance(n.value, int) and not isinstance(n.value, bool):
                            literals.append(n.value)
                if any(v != 0 for v in literals):  # 0 is success to every process, not a table's
                    found.append((node.lineno, f"an exit code compared: {ast.unparse(node)}"))
    return found


def scanned_files():
    for folder in SCANNED:
        for path in sorted(folder.rglob("*.py")):
            if "__pycache__" not in path.parts:
                yield path


def test_no_python_file_copies_a_table(table):
    found, used = [], set()
    for path in scanned_files():
        rel = path.relative_to(REPO).as_posix()
        for line, what in copies(path.read_text(), table):
            if (rel, what) in ALLOWED:
                used.add((rel, what))
                continue
            found.append(f"{rel}:{line}: {what}")
    assert not found, ("read these from distmetrics.tables (`distmetrics tables --json`) instead of copying "
                       "them, or add each to ALLOWED with why it must stay:\n" + "\n".join(found))
    assert used == set(ALLOWED), f"ALLOWED entries that no longer match anything: {set(ALLOWED) - used}"


@pytest.mark.parametrize("copy", [
    'NOT_PASSED = ("fail", "hang", "crash", "error", "memory_exceeded")',
    'if outcome in ("pass", "skip"): pass',
    'MARKERS = {"gloo": "a", "mpi": "b"}',
    'DEFAULTS = ["equal_to_single", "ranks_agree"]',
    'REFERENCE_DEFAULTS = {"threshold": 0.5, "top_k": 1, "average": "macro"}',
    'SHARDS = ["even", "uneven"]',
    'LAUNCHERS = ("local", "mpi")',
    'ok = source == f"python:{library}/metrics.py"',
    'path = source[len("python:"):]',
    'if done.returncode == 2: pass',
    'if proc.returncode not in (0, 1): pass',
])
def test_the_scan_finds_each_kind_of_copy(table, copy):
    assert copies(copy, table), copy


def test_the_scan_leaves_single_names_and_docstrings(table):
    source = ('"""A report\'s source: python:<spec>."""\n'
              'if v["outcome"] == t.outcome("hang") and done.returncode != 0: pass\n'
              'STATES = ("pass", "expected", "new")\n')
    assert copies(source, table) == []


# --- the accessor -----------------------------------------------------------------------------------
def test_the_tables_are_the_runners(table):
    raw = json.loads(subprocess.run([*find_binary(), "tables", "--json"], capture_output=True, text=True,
                                    check=True, timeout=60).stdout)
    assert table.raw == raw
    assert table.outcome_names[0] == table.outcome("pass") and table.outcome_names[-1] == table.outcome("skip")
    # Passed is "sets no exit code": what the runner's exit code and the plugin agree on.
    assert set(table.passed_outcomes) == {o for o in table.outcomes if table.exit_code(o) == 0}
    assert set(table.not_passed) == set(table.outcomes) - set(table.passed_outcomes)
    assert not table.passed("an outcome added later")
    assert table.exit_code("bad_input") not in {o["exit_code"] for o in table.outcomes.values()}
    assert set(table.default_properties) <= set(table.properties)
    assert [b for b in table.backends.values() if b["default"]], "no backend scenarios run by default"
    assert table.python_source(table.python_source_text("x/metrics.py")) == "x/metrics.py"
    assert table.source_path("/abs/libx.so") == "/abs/libx.so"
    with pytest.raises(TablesError, match="no outcome 'passed'"):
        table.outcome("passed")
    # A variant's launch names the launcher whose pool launch it is (runtime/launchers.h).
    mpirun = table.launcher_of_pool_launch("mpirun")
    assert mpirun["name"] == "mpi" and mpirun["pool_through_mpirun"] and mpirun["peers"]
    assert table.launcher_of_pool_launch("direct")["name"] == "local"
    assert not table.launcher_of_pool_launch("direct")["pool_through_mpirun"]
    with pytest.raises(TablesError, match="no launcher whose pool launch is 'ssh'"):
        table.launcher_of_pool_launch("ssh")
    assert table.property_skip("not_judged") == "not_judged"
    with pytest.raises(TablesError, match="no property skip 'skipped'"):
        table.property_skip("skipped")


def test_the_reference_defaults_are_the_metrics_commands(table):
    listed = json.loads(subprocess.run([*find_binary(), "metrics", "--json"], capture_output=True, text=True,
                                       check=True, timeout=60).stdout)
    assert {m["name"]: {p["name"]: p["default"] for p in m["params"] if not p["required"]} for m in listed} == \
        {name: table.reference_defaults(name) for name in table.reference_metrics}
    assert "num_labels" in table.reference_param_names()  # an alias counts


def test_a_binary_that_cannot_answer_is_named_with_what_to_do(tmp_path):
    missing = tmp_path / "no-such-distmetrics"
    with pytest.raises(TablesError) as error:
        tables(str(missing))
    assert str(missing) in str(error.value) and "DISTMETRICS_BIN" in str(error.value)
    old = tmp_path / "old-distmetrics"
    old.write_text("#!/bin/sh\necho \"unknown subcommand '$1'\" >&2\nexit 2\n")
    old.chmod(0o755)
    with pytest.raises(TablesError, match="exited 2: unknown subcommand 'tables'.*rebuild it"):
        tables(str(old))


def test_the_fake_runner_agrees_with_the_runner(table):
    """python/tests/fake_distmetrics.py spells the tables (a stand-in for the C++ side must): what it
    spells is the runner's."""
    fake = json.loads(subprocess.run([sys.executable, str(HERE / "fake_distmetrics.py"), "tables", "--json"],
                                     capture_output=True, text=True, check=True, timeout=60).stdout)
    assert fake["format"] == table.raw["format"]
    assert fake["exit_codes"] == table.exit_codes
    assert fake["metric_sources"] == table.raw["metric_sources"]
    assert fake["conform_nothing_to_check"] == table.conform_nothing_to_check
    assert [o["name"] for o in fake["outcomes"]] == table.outcome_names
    for o in fake["outcomes"]:
        assert {k: table.outcomes[o["name"]][k] for k in o} == o
    assert [{k: b[k] for k in ("name", "description")} for b in table.raw["backends"]] == fake["backends"]
    for key in ("properties", "shard_policies", "placements", "generators", "reference_metrics"):
        assert {e["name"] for e in fake[key]} <= {e["name"] for e in table.raw[key]}, key
    assert set(fake["default_properties"]) <= set(table.default_properties)
    assert fake["launchers"] == [{k: launcher[k] for k in ("name", "peers", "through_mpi", "pool_launch", "pool_through_mpirun")}
                                 for launcher in table.raw["launchers"]]
    assert [s["name"] for s in fake["property_skips"]] == list(table.property_skips)


def test_the_peer_plan_names_shard_policies_of_the_table(table):
    from distmetrics import peers

    assert set(peers.OWN_SHARDS) <= set(table.shard_policies)
    for _, _, shards, *_ in (*peers.OWN_PLAN, peers.OWN_PLAN_LOGITS, peers.OWN_PLAN_EQUAL_UPDATES):
        assert set(shards or ()) <= set(table.shard_policies)
    # The generators the peer shapes name are the runner's, and text and detection are its structured ones.
    assert {shape["generator"] for shape in peers.SHAPES.values()} <= set(table.generators)
    assert {name for name, g in table.generators.items() if g["structured"]} == {"text", "detection"}


def test_inside_the_runner_the_tables_come_from_the_embedded_module(tmp_path, table):
    """A Python source that `conform --python` imports reads the tables of the runner it runs in,
    from the embedded module (no process started), the same as `tables --json` prints."""
    seen = tmp_path / "seen.json"
    source = tmp_path / "reads_tables.py"
    source.write_text("import json, os\n"
                      "from distmetrics.tables import tables\n"
                      "t = tables()\n"
                      "open(os.environ['SEEN'], 'w').write(json.dumps({'origin': t.origin, 'raw': t.raw}))\n")
    run = subprocess.run([*find_binary(), "conform", "--python", str(source), "--metric", "MeanAbsoluteError",
                          str(REPO / "examples" / "python" / "scenarios" / "mean_absolute_error.toml")],
                         cwd=tmp_path, env=dict(os.environ, SEEN=str(seen)), capture_output=True, text=True,
                         timeout=120)
    if not seen.exists() and "without Python" in run.stderr:
        pytest.skip("this distmetrics was built without Python metrics")
    assert seen.exists(), run.stderr
    got = json.loads(seen.read_text())
    assert got["origin"] == "the embedded distmetrics runner"
    assert got["raw"] == table.raw


def test_the_peer_census_classes_a_skip_by_its_why_not_its_message(table):
    """peers/judged.py tells a property never reached from one that does not apply by the report's
    "why" (harness SkipWhy), whatever the message says; the reason it lists is the message's."""
    import importlib.util
    spec = importlib.util.spec_from_file_location("peers_judged", REPO / "peers" / "judged.py")
    judged = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(judged)
    record = judged.ClassRecord()
    record.add({"id": "s:gloo-ws2-even-cpu", "world_size": 2, "shard": "even", "outcome": table.outcome("skip"),
                "properties": [
                    {"name": "merge_state", "outcome": table.outcome("skip"), "why": table.property_skip("not_judged"),
                     "message": "merge_state: not judged: no rank reached compute 2\n  variant: ..."},
                    {"name": "state_roundtrip", "outcome": table.outcome("skip"),
                     "why": table.property_skip("not_applicable"),
                     "message": "state_roundtrip: not applicable: x: not judged: words that decide nothing"}]})
    assert dict(record.unreached["merge_state"]) == {"ws2": ["no rank reached compute 2"]}
    assert record.not_applicable == {"state_roundtrip": "state_roundtrip: not applicable: x: not judged: words that "
                                                        "decide nothing"}
    assert "state_roundtrip" not in record.unreached
