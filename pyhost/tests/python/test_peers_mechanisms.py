"""peers/<library>/mechanisms.toml and the expected.toml entries that name them (peers/expected.py):
every entry names a known mechanism, every library-bug mechanism has a repro under peers/repro/
that exists (run by peers/run_repros.py in ci/run_peers.sh), every mechanism has its row in
docs/peers.md, and an unknown id is bad input naming the file, the entry and the field."""

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("expected", ROOT / "peers" / "expected.py")
expected = importlib.util.module_from_spec(spec)
spec.loader.exec_module(expected)

LIBRARIES = ("torchmetrics", "ignite", "torcheval")


@pytest.mark.parametrize("library", LIBRARIES)
def test_every_entry_names_a_known_mechanism(library):
    path = ROOT / "peers" / library / "expected.toml"
    mechanisms = expected.load_mechanisms(expected.mechanisms_path(path))
    assert mechanisms, f"peers/{library}/mechanisms.toml is missing or empty"
    entries, _ = expected.load_expected(path)  # bad input (an unknown id) raises
    for entry in entries:
        assert entry["mechanism"] in mechanisms, entry["_where"]
        assert all(m in mechanisms for m in entry.get("also_mechanism", [])), entry["_where"]


@pytest.mark.parametrize("library", LIBRARIES)
def test_every_library_bug_has_a_repro_that_exists(library):
    mechanisms = expected.load_mechanisms(ROOT / "peers" / library / "mechanisms.toml")
    for mid, m in mechanisms.items():
        if m["kind"] == "library bug":
            assert m["repro"], mid
        if m["repro"]:
            assert (ROOT / "peers" / "repro" / m["repro"]).is_file(), f"{mid}: {m['repro']}"
            assert m["repro"] != "common.py", mid
        else:
            assert m.get("why_no_repro"), mid


def test_every_mechanism_has_its_row_in_docs_peers_md():
    doc = (ROOT / "docs" / "peers.md").read_text()
    for library in LIBRARIES:
        for mid in expected.load_mechanisms(ROOT / "peers" / library / "mechanisms.toml"):
            assert f"`{mid}`" in doc, f"{mid} has no row in docs/peers.md"


def test_mechanism_ids_are_unique_across_libraries():
    ids = [mid for library in LIBRARIES for mid in expected.load_mechanisms(ROOT / "peers" / library / "mechanisms.toml")]
    assert len(ids) == len(set(ids))


MECHANISMS = """\
    [[mechanism]]
    id = "lib-empty-rank-default"
    title = "the empty rank's default state"
    kind = "library bug"
    where = "lib/metric.py:1"
    upstream = "not reported"
    repro = "REPRO"
    """

ENTRY = """\
    [[finding]]
    variant = "s/A:gloo-ws*-empty_rank-cpu"
    outcome = "fail"
    failed = ["equal_to_single"]
    blamed = []
    kind = "library bug"
    why = "the empty rank's default"
    mechanism = "MECHANISM"
    """


def write(tmp_path, mechanism="lib-empty-rank-default", repro=None, also=None):
    repro = repro or sorted(p.name for p in (ROOT / "peers" / "repro").glob("*.py") if p.name != "common.py")[0]
    (tmp_path / "mechanisms.toml").write_text(textwrap.dedent(MECHANISMS).replace("REPRO", repro))
    entry = textwrap.dedent(ENTRY).replace("MECHANISM", mechanism) + (f"also_mechanism = {json.dumps(also)}\n" if also else "")
    (tmp_path / "expected.toml").write_text(entry)
    report = tmp_path / "peers.json"
    report.write_text(json.dumps({"summary": {"pass": 0, "fail": 1, "skip": 0, "total": 1}, "variants": [
        {"id": "s/A:gloo-ws3-empty_rank-cpu", "metric": "A (lib/metrics)", "source": "python:/x/peers/lib/metrics.py",
         "outcome": "fail", "reason": "root cause: x", "seconds": 0.1,
         "properties": [{"name": "equal_to_single", "outcome": "fail"}, {"name": "ranks_agree", "outcome": "pass"}]}]}))
    return report, tmp_path / "expected.toml"


def run(report, path, *more):
    return expected.main(["--library", "lib", "--report", str(report), "--expected", str(path), *more])


def test_a_known_mechanism_is_counted_in_the_summary(tmp_path, capsys):
    report, path = write(tmp_path)
    assert run(report, path, "--by-mechanism") == 0
    out = capsys.readouterr().out
    assert "mechanism lib-empty-rank-default (library bug): 1 variant(s) of A" in out
    assert out.splitlines()[-1].endswith("1 mechanism(s) (1 library bug(s), 0 convention(s)) of 1 in mechanisms.toml")


@pytest.mark.parametrize("mechanism, also", [("lib-no-such-mechanism", None), ("lib-empty-rank-default", ["lib-other"])])
def test_an_unknown_id_is_bad_input_naming_file_entry_and_field(tmp_path, capsys, mechanism, also):
    report, path = write(tmp_path, mechanism, also=also)
    assert run(report, path) == 2
    err = capsys.readouterr().err
    field = "also_mechanism" if also else "mechanism"
    assert f"{path}: finding #1: field '{field}' names unknown mechanism(s)" in err


def test_an_entry_without_its_mechanism_is_bad_input(tmp_path, capsys):
    report, path = write(tmp_path)
    path.write_text("".join(line for line in path.read_text().splitlines(keepends=True) if not line.startswith("mechanism")))
    assert run(report, path) == 2
    assert "field 'mechanism' is required" in capsys.readouterr().err


def test_a_library_bug_whose_repro_does_not_exist_is_bad_input(tmp_path, capsys):
    report, path = write(tmp_path, repro="no_such_repro.py")
    assert run(report, path) == 2
    assert "field 'repro': no file 'no_such_repro.py'" in capsys.readouterr().err


def test_pin_keeps_the_mechanism_line(tmp_path, capsys):
    report, path = write(tmp_path)
    path.write_text(path.read_text().replace('failed = ["equal_to_single"]\nblamed = []\n', ""))
    assert run(report, path, "--pin") == 0
    text = path.read_text()
    assert 'mechanism = "lib-empty-rank-default"' in text and 'failed = ["equal_to_single"]' in text


def test_since_names_a_release_and_is_shown(tmp_path, capsys):
    # `since`: the release that brought each finding of a mechanism (peers/bisect_release.py),
    # printed with the mechanism's line; an item that names no release is bad input.
    report, path = write(tmp_path)
    mechanisms = tmp_path / "mechanisms.toml"
    mechanisms.write_text(mechanisms.read_text() + 'since = ["A, an empty rank: 1.6.2 (bisected: 1.6.1 does not show it)"]\n')
    assert run(report, path, "--by-mechanism") == 0
    assert "since: A, an empty rank: 1.6.2 (bisected: 1.6.1 does not show it); repro:" in capsys.readouterr().out
    mechanisms.write_text(mechanisms.read_text().replace("1.6.2 (bisected: 1.6.1 does not show it)", "lately"))
    assert run(report, path) == 2
    assert "field 'since' must name the release that brought each finding" in capsys.readouterr().err


def test_every_since_is_in_docs_peers_md():
    # The bisected releases (docs/peers.md, "The release that brought a finding") are in the
    # mechanisms' rows: each `since` item is in docs/peers.md as written.
    doc = (ROOT / "docs" / "peers.md").read_text()
    found = 0
    for library in LIBRARIES:
        for mid, m in expected.load_mechanisms(ROOT / "peers" / library / "mechanisms.toml").items():
            for item in m.get("since", []):
                assert item in doc, f"{mid}: since {item!r} is not in docs/peers.md"
                found += 1
    assert found >= 3  # KLDivergence 1.6.2, R2Score's constant target 1.5.0, VisualInformationFidelity 1.8.1


def test_a_baseline_entry_not_seen_says_since_when_its_mechanism_does(tmp_path, capsys):
    # Another release (--baseline): an entry whose variants ran without its finding is "not seen";
    # where its mechanism's `since` names its class, the line says which release brought it (the
    # run of torchmetrics 1.7.4: VisualInformationFidelity's hangs, since 1.8.1).
    report, path = write(tmp_path)
    mechanisms = tmp_path / "mechanisms.toml"
    mechanisms.write_text(mechanisms.read_text() + 'since = ["A, an empty rank: 1.6.2 (bisected: 1.6.1 does not show it)", '
                                                   '"B on a constant target: 1.5.0 (bisected: 1.4.3 does not show it)"]\n')
    data = json.loads(report.read_text())
    data["variants"][0].update(outcome="pass", properties=[{"name": "equal_to_single", "outcome": "pass"}])
    report.write_text(json.dumps(data))
    md = tmp_path / "release.md"
    assert run(report, path, "--baseline", "1.9.0 on torch 2.15", "--pr-markdown", str(md)) == 0
    out = capsys.readouterr().out
    assert "not seen (fixed, or not yet born): fail s/A:gloo-ws*-empty_rank-cpu: the empty rank's default " \
           "(since: A, an empty rank: 1.6.2 (bisected: 1.6.1 does not show it))" in out
    assert "B on a constant target" not in out  # another class's release
    assert "(since: A, an empty rank: 1.6.2" in md.read_text()
