"""peers/expected.py: findings matched exactly (the whole set of failed properties and the blamed
ranks, not one property among them), flakes named and failed unless declared, and --pin writing a
triaged run's failed/blamed into expected.toml. The reports here are written by hand in the JSON
report's shape (harness/src/judging/verdict.cpp, Verdict::to_json); the library is a stand-in."""

import importlib.util
import json
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("expected", ROOT / "peers" / "expected.py")
expected = importlib.util.module_from_spec(spec)
spec.loader.exec_module(expected)

SOURCE = "python:/x/peers/lib/metrics.py"
ALL = ["equal_to_single", "ranks_agree", "idempotent", "update_after_compute", "reset_replay", "no_hang"]


def variant(vid, outcome, failed=(), blamed=None, metric="A", **more):
    props = [{"name": p, "outcome": ("hang" if outcome == "hang" and p == "no_hang" else "fail") if p in failed
              else "pass"} for p in ALL]
    reason = f"rank {blamed} to blame: x" if blamed is not None else "root cause: x"
    return {"id": vid, "metric": f"{metric} (lib/metrics)", "source": SOURCE, "outcome": outcome, "reason": reason,
            "properties": props, "seconds": 0.1, **more}


def write(tmp_path, variants, toml):
    report = tmp_path / "peers.json"
    report.write_text(json.dumps({"summary": {"pass": 0, "fail": 0, "hang": 0, "crash": 0, "error": 0,
                                              "memory_exceeded": 0, "skip": 0, "total": 0}, "variants": variants}))
    path = tmp_path / "expected.toml"
    path.write_text(textwrap.dedent(toml))
    return report, path


def run(report, path, *more):
    return expected.main(["--library", "lib", "--report", str(report), "--expected", str(path), *more])


ENTRY = """\
    [[finding]]
    variant = "s/A:gloo-ws*-empty_rank-cpu"
    outcome = "fail"
    failed = ["equal_to_single", "ranks_agree"]
    blamed = []
    kind = "library bug"
    why = "the empty rank's default"
    """


def test_the_exact_finding_matches(tmp_path, capsys):
    report, path = write(tmp_path, [variant("s/A:gloo-ws3-empty_rank-cpu", "fail", ["equal_to_single", "ranks_agree"])],
                         ENTRY)
    assert run(report, path) == 0
    assert "1 expected, 0 unexpected, 0 expected but not seen, 0 flake(s)" in capsys.readouterr().out


def test_a_second_failure_under_an_expected_entry_fails_the_comparison(tmp_path, capsys):
    # The same variant, its expected properties failed, and one more: idempotent as well.
    report, path = write(tmp_path, [variant("s/A:gloo-ws3-empty_rank-cpu", "fail",
                                            ["equal_to_single", "ranks_agree", "idempotent"])], ENTRY)
    assert run(report, path) == 1
    out = capsys.readouterr().out
    assert "unexpected: FAIL (equal_to_single, idempotent, ranks_agree) s/A:gloo-ws3-empty_rank-cpu" in out
    assert "expected but not seen" in out  # the entry's exact finding is gone as well


def test_one_failure_fewer_is_not_the_expected_finding(tmp_path, capsys):
    report, path = write(tmp_path, [variant("s/A:gloo-ws3-empty_rank-cpu", "fail", ["equal_to_single"])], ENTRY)
    assert run(report, path) == 1
    assert "unexpected: FAIL (equal_to_single) s/A" in capsys.readouterr().out


def test_another_rank_blamed_is_unexpected(tmp_path, capsys):
    toml = ENTRY.replace('outcome = "fail"', 'outcome = "hang"').replace(
        'failed = ["equal_to_single", "ranks_agree"]', 'failed = []').replace("blamed = []", "blamed = [2]")
    # (failed = []: no_hang is the hang itself, not listed)
    report, path = write(tmp_path, [variant("s/A:gloo-ws3-empty_rank-cpu", "hang", ["no_hang"], blamed=1)], toml)
    assert run(report, path) == 1
    assert "unexpected: HANG, rank 1 blamed s/A:gloo-ws3-empty_rank-cpu" in capsys.readouterr().out
    report, path = write(tmp_path, [variant("s/A:gloo-ws3-empty_rank-cpu", "hang", ["no_hang"], blamed=2)], toml)
    assert run(report, path) == 0


def test_an_outcome_that_changes_on_rerun_is_a_flake(tmp_path, capsys):
    # The first run passed (the entry's finding was missing: rerun alone), the rerun showed it.
    first = variant("s/A:gloo-ws3-empty_rank-cpu", "pass")
    rerun = variant("s/A:gloo-ws3-empty_rank-cpu", "fail", ["equal_to_single", "ranks_agree"],
                    first_run={k: first[k] for k in ("outcome", "reason", "properties")})
    report, path = write(tmp_path, [rerun], ENTRY)
    assert run(report, path) == 1
    out = capsys.readouterr().out
    assert ("flake: s/A:gloo-ws3-empty_rank-cpu [A]: first PASS, rerun alone FAIL (equal_to_single, ranks_agree) "
            "(not declared flaky in any entry)") in out
    assert "1 flake(s) (0 declared)" in out
    # Declared with its measured rate and cause, it is counted and named, and passes.
    report, path = write(tmp_path, [rerun], ENTRY + '    flaky = "3 in 20 runs: the empty rank wins the race"\n')
    assert run(report, path) == 0
    out = capsys.readouterr().out
    assert "1 flake(s) (1 declared)" in out and "declared: 3 in 20 runs" in out


def test_a_setup_failure_is_a_flake_no_entry_can_declare(tmp_path, capsys):
    first = {"outcome": "error", "properties": [], "setup_failure": True,  # as peers/rerun.py keeps it
             "reason": "rank 2 raised at setup: making the torch.distributed gloo group for the Python metric failed"}
    report, path = write(tmp_path, [variant("s/A:gloo-ws3-empty_rank-cpu", "fail", ["equal_to_single", "ranks_agree"],
                                            first_run=first)],
                         ENTRY + '    flaky = "1 in 20 runs: anything"\n')
    assert run(report, path) == 1
    assert "harness set-up failure, never declarable" in capsys.readouterr().out


def test_a_rerun_that_shows_the_same_is_no_flake(tmp_path, capsys):
    v = variant("s/A:gloo-ws3-empty_rank-cpu", "fail", ["equal_to_single", "ranks_agree"])
    v["first_run"] = {k: v[k] for k in ("outcome", "reason", "properties")}
    report, path = write(tmp_path, [v], ENTRY)
    assert run(report, path) == 0
    assert "0 flake(s)" in capsys.readouterr().out


@pytest.mark.parametrize("field, value, says", [
    ("flaky", '"sometimes"', "the measured rate and the cause"),
    ("blamed", '["one"]', "must list rank numbers"),
    ("property", '"idempotent"', "exclude each other"),
])
def test_bad_entries_name_the_file_entry_and_field(tmp_path, capsys, field, value, says):
    entry = "".join(line for line in ENTRY.splitlines(keepends=True) if not line.strip().startswith(field + " ="))
    report, path = write(tmp_path, [], entry + f"    {field} = {value}\n")
    assert run(report, path) == 2
    err = capsys.readouterr().err
    assert f"{path}: finding #1" in err and says in err


def test_pin_writes_each_entrys_exact_finding_and_splits_by_world_size(tmp_path, capsys):
    toml = """\
        releases = ["1.0 on torch 2.15", "0.9 on torch 1.13"]

        # The empty rank's default: a comment kept above its entry.
        [[finding]]
        variant = "s/A:gloo-ws*-empty_rank-cpu"
        outcome = "hang"
        kind = "library bug"
        why = "the empty rank"

        [[finding]]
        variant = "s/B:gloo-ws2-uneven-cpu"
        outcome = "fail"
        property = "equal_to_single"
        kind = "library bug"
        why = "b"
        releases = ["1.0 on torch 2.15"]
        """
    variants = [variant("s/A:gloo-ws2-empty_rank-cpu", "hang", ["no_hang"], blamed=1),
                variant("s/A:gloo-ws3-empty_rank-cpu", "hang", ["no_hang"], blamed=2),
                variant("s/B:gloo-ws2-uneven-cpu", "fail", ["equal_to_single", "idempotent"], metric="B")]
    report, path = write(tmp_path, variants, toml)
    data = json.loads(report.read_text())
    data["plugins"] = [{"path": "/x/peers/lib/metrics.py", "version": "1.0", "torch_version": "2.15.0"}]
    report.write_text(json.dumps(data))
    assert run(report, path, "--pin") == 0
    text = path.read_text()
    assert "# The empty rank's default: a comment kept above its entry." in text
    entries, _ = expected.load_expected(path)
    pinned = [(e["variant"], e["failed"], e["blamed"], e.get("releases")) for e in entries if "failed" in e]
    assert pinned == [("s/A:gloo-ws2-empty_rank-cpu", [], [1], ["1.0 on torch 2.15"]),  # no_hang: the hang itself
                      ("s/A:gloo-ws3-empty_rank-cpu", [], [2], ["1.0 on torch 2.15"]),
                      ("s/B:gloo-ws2-uneven-cpu", ["equal_to_single", "idempotent"], [], ["1.0 on torch 2.15"])]
    # The release the run did not cover keeps the entry as it was, unpinned.
    assert [(e["variant"], e.get("releases")) for e in entries if "failed" not in e] == [
        ("s/A:gloo-ws*-empty_rank-cpu", ["0.9 on torch 1.13"])]
    # And the pinned file passes the exact comparison of the same run.
    capsys.readouterr()
    assert run(report, path) == 0


def test_an_entry_of_several_outcomes_is_pinned_per_outcome(tmp_path, capsys):
    # One mechanism that gives a crash or a hang (which one is the machine's timing): the run
    # showed the crash, so only the crash is pinned; a hang later still matches, as a subset,
    # and the summary says the entry is not pinned for it.
    toml = """\
        [[finding]]
        variant = "s/A:gloo-ws3-uneven-cpu"
        outcome = ["crash", "hang"]
        kind = "library bug"
        why = "a"
        """
    crash = variant("s/A:gloo-ws3-uneven-cpu", "crash", blamed=2)
    report, path = write(tmp_path, [crash], toml)
    assert run(report, path, "--pin") == 0
    assert "failed = {crash = []}\nblamed = {crash = [2]}\n" in path.read_text()
    capsys.readouterr()
    # The crash with another rank blamed no longer matches; the hang, not pinned, does.
    report, path = write(tmp_path, [variant("s/A:gloo-ws3-uneven-cpu", "crash", blamed=1)], path.read_text())
    assert run(report, path) == 1
    report, path = write(tmp_path, [variant("s/A:gloo-ws3-uneven-cpu", "hang", ["no_hang"], blamed=0)], path.read_text())
    assert run(report, path) == 0
    assert "1 of 1 entries not pinned" in capsys.readouterr().out
