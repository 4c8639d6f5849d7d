"""The plugin against the fake runner: collection, outcomes, hard timeouts, process cleanup,
pytest's own options (-k, -m, -x, --lf, --junitxml, -n)."""

import json
import re
import sys
import xml.etree.ElementTree as ET

import pytest

from conftest import pid_alive


def test_one_item_per_variant_with_readable_ids(project):
    project.scenario("core/accuracy", world_sizes=[1, 2, 4], shards=["even", "uneven"])
    project.scenario("regression/ignite_2803", world_sizes=[2], markers=["regression"])
    result = project.run("--collect-only", "-q")
    ids = [line for line in result.outlines if "::" in line]
    assert ids == [f"scenarios/core/accuracy.toml::gloo-ws{n}-{s}-cpu"
                   for n in (1, 2, 4) for s in ("even", "uneven")] + [
        "scenarios/regression/ignite_2803.toml::gloo-ws2-even-cpu"]


def test_selection_options_and_keywords(project):
    project.scenario("core/accuracy", backends=["gloo", "mpi"], world_sizes=[1, 2, 4])
    result = project.run("--collect-only", "-q", "--backend", "gloo", "--world-sizes", "2,4")
    assert [line for line in result.outlines if "::" in line] == [
        "scenarios/core/accuracy.toml::gloo-ws2-even-cpu",
        "scenarios/core/accuracy.toml::gloo-ws4-even-cpu"]
    result = project.run("--collect-only", "-q", "-k", "accuracy and ws4 and not mpi")
    assert [line for line in result.outlines if "::" in line] == [
        "scenarios/core/accuracy.toml::gloo-ws4-even-cpu"]


def test_markers_come_from_the_listing_and_are_registered(project):
    project.scenario("core/accuracy", backends=["gloo", "nccl"], world_sizes=[2])
    project.scenario("regression/ignite_2803", world_sizes=[2], markers=["regression", "slow"])
    result = project.run("--collect-only", "-q", "--strict-markers", "-m", "regression and slow")
    assert [line for line in result.outlines if "::" in line] == [
        "scenarios/regression/ignite_2803.toml::gloo-ws2-even-cpu"]
    result = project.run("--collect-only", "-q", "-m", "gpu")
    assert [line for line in result.outlines if "::" in line] == [
        "scenarios/core/accuracy.toml::nccl-ws2-even-cpu"]
    # Any tag of a scenario is a marker in the listing, registered too.
    project.scenario("core/multilabel", world_sizes=[2], markers=["multilabel"])
    result = project.run("--collect-only", "-q", "--strict-markers", "-m", "multilabel")
    assert [line for line in result.outlines if "::" in line] == [
        "scenarios/core/multilabel.toml::gloo-ws2-even-cpu"]
    markers = project.run("--markers").stdout.str()
    for name in ("gloo", "mpi", "nccl", "gpu", "slow", "regression"):
        assert f"@pytest.mark.{name}:" in markers


def test_collect_only_starts_no_runner_to_serve_items(project):
    project.scenario("core/accuracy", world_sizes=[1, 4])
    result = project.run("--collect-only", "-q")
    assert len([line for line in result.outlines if "::" in line]) == 2
    assert [p["argv"][0] for p in project.processes() if p["role"] == "runner"] == ["list"]


def test_passing_items_leave_no_process_behind(project):
    project.scenario("core/accuracy", world_sizes=[1, 4])
    result = project.run("-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*distmetrics variants: 2 pass, 0 fail, 0 hang, 0 crash, 0 error, 0 skip"])
    runs = [p for p in project.processes() if p["role"] == "runner"]
    ranks = [p for p in project.processes() if p["role"] == "rank"]
    # One runner serves every item; it starts while collection lists, so the two may log in either order.
    assert sorted(r["argv"][0] for r in runs) == ["list", "serve"]
    assert len(ranks) == 1 + 4
    requests = [(p["path"], p["id"]) for p in project.processes() if p["role"] == "request"]
    assert requests == [("scenarios/core/accuracy.toml", f"core/accuracy:gloo-ws{n}-even-cpu")
                        for n in (1, 4)]
    project.assert_nothing_left()


def test_isolated_items_get_a_runner_each(project):
    project.scenario("core/accuracy", world_sizes=[1, 4])
    project.run("--distmetrics-isolate").assert_outcomes(passed=2)
    runs = [p["argv"] for p in project.processes() if p["role"] == "runner"]
    assert [argv[0] for argv in runs] == ["list", "run", "run"]
    for argv in runs[1:]:
        assert argv[:3] == ["run", "scenarios/core/accuracy.toml", "--filter"]
    project.assert_nothing_left()


def test_failing_property_shows_values_difference_and_reproduce_command(project):
    project.scenario("core/accuracy", world_sizes=[2], mode="fail")
    result = project.run()
    result.assert_outcomes(failed=1)
    assert result.ret == 1
    out = result.stdout.str()
    assert "core/accuracy:gloo-ws2-even-cpu: FAIL: equal_to_single failed" in out
    assert "property equal_to_single: fail" in out
    assert "rank 1 differs from the single-process value" in out
    assert "single-process value: float64[3] [0.5, 0.25, 0.75]" in out
    assert "rank 0 value:        float64[3] [0.5, 0.25, 0.75]" in out
    assert "rank 1 value:        float64[3] [0.5, 0.375, 0.75]" in out
    assert "difference: 0.125" in out
    assert "property idempotent" not in out  # passing properties stay quiet
    reproduce = re.search(r"reproduce: cd (\S+) && (.*)", out)
    assert reproduce.group(2).endswith(
        "fake_distmetrics.py run scenarios/core/accuracy.toml --filter "
        "core/accuracy:gloo-ws2-even-cpu")
    assert "--json" not in reproduce.group(2)


def test_hang_becomes_a_failure_and_every_rank_is_ended(project):
    # Rank 0 ignores SIGTERM, rank 1 has left the runner's session: both must still end.
    project.scenario("core/stuck", world_sizes=[3], mode="hang", rank_ignores_term=True,
                     rank_escapes_session=True)
    project.scenario("core/fine", world_sizes=[1])
    project.scenario("core/then", world_sizes=[2])
    result = project.run("--distmetrics-timeout=2", "--junitxml=report.xml", timeout=90)
    result.assert_outcomes(failed=1, passed=2)
    out = result.stdout.str()
    assert "core/stuck:gloo-ws3-even-cpu: HANG: no result within the item's hard timeout of 2 s" \
        in out
    ended = [int(p) for p in re.search(r"ended the runner and its ranks \(pids \[([\d, ]+)\]\)",
                                       out).group(1).split(",")]
    # The runner that hung was ended with its ranks; the item after it got a fresh runner.
    serves = [p["pid"] for p in project.processes()
              if p["role"] == "runner" and p["argv"][0] == "serve"]
    assert len(serves) == 2
    stuck = [p["pid"] for p in project.processes()
             if p["role"] == "rank" and p["id"].startswith("core/stuck")]
    assert len(stuck) == 3
    assert set(stuck) | {serves[0]} <= set(ended)
    assert serves[1] not in ended
    project.assert_nothing_left()
    case = ET.parse(project.path / "report.xml").find(".//testcase[@name='gloo-ws3-even-cpu']")
    assert float(case.get("time")) < 30  # ended at its 2 s limit, not after the 3600 s sleep


def test_a_crashed_rank_shows_the_diagnosis(project):
    project.scenario("core/crashy", world_sizes=[2], mode="crash")
    result = project.run()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "core/crashy:gloo-ws2-even-cpu: CRASH: rank 0 died: killed by signal 11" in out
    assert "rank 0 was killed by signal 11 (SIGSEGV) in all_reduce #2" in out
    assert re.search(r"runner: `distmetrics serve` \(pid \d+\) answered after", out)
    project.assert_nothing_left()


def test_a_rank_past_its_memory_limit_fails_the_item_naming_the_rank(project):
    # An outcome the plugin has no name for of its own: it did not pass, and it is counted.
    project.scenario("core/greedy", world_sizes=[2], mode="memory")
    project.scenario("core/accuracy", world_sizes=[2])
    result = project.run()
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert ("core/greedy:gloo-ws2-even-cpu: MEMORY_EXCEEDED: rank 1 to blame: rank 1 went past "
            "its memory limit of 6.0 GiB") in out
    result.stdout.fnmatch_lines(["*distmetrics variants: 1 pass, 0 fail, 0 hang, 0 crash, 1 memory_exceeded, 0 error, 0 skip"])
    project.assert_nothing_left()


def test_a_runner_that_dies_without_a_report_is_a_failure(project):
    project.scenario("core/aborts", world_sizes=[1, 2], mode="runner-crash")
    result = project.run()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*the runner (killed by signal 6 (SIGABRT)) wrote no report*"])
    # Each item had a fresh runner: the first one's death failed only its own item.
    serves = [p for p in project.processes() if p["role"] == "runner" and p["argv"][0] == "serve"]
    assert len(serves) == 2
    project.assert_nothing_left()


def test_processes_left_after_a_normal_exit_fail_the_item_and_are_ended(project):
    project.scenario("core/leaky", world_sizes=[2], mode="leak")
    result = project.run("--distmetrics-isolate")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*LEFT PROCESSES BEHIND: the runner exited but left processes "
                                 "running (pids *); they were ended*"])
    leaked = [p["pid"] for p in project.processes() if p["role"] == "leaked"]
    assert len(leaked) == 2
    project.assert_nothing_left()


def test_skips_from_the_runner_become_pytest_skips_with_the_reason(project):
    project.scenario("gpu/listed", world_sizes=[2], list_skip="needs 2 GPUs, found 0")
    project.scenario("gpu/at_run_time", world_sizes=[2], mode="skip")
    result = project.run("-rs")
    result.assert_outcomes(skipped=2)
    assert result.ret == 0
    result.stdout.fnmatch_lines_random([
        "SKIPPED [[]1[]] scenarios/gpu/listed.toml: needs 2 GPUs, found 0",
        "SKIPPED [[]1[]] scenarios/gpu/at_run_time.toml:1: needs 2 GPUs, found 0"])
    # A variant skipped in the listing is never sent to the runner.
    requests = [p["id"] for p in project.processes() if p["role"] == "request"]
    assert requests == ["gpu/at_run_time:gloo-ws2-even-cpu"]


def test_exitfirst_lastfailed_and_junitxml(project):
    project.scenario("core/accuracy", world_sizes=[1, 2, 4], modes={"gloo-ws2-*": "fail"})
    result = project.run("-x", "-p", "cacheprovider")
    result.assert_outcomes(passed=1, failed=1)  # -x: ws4 never ran
    result = project.run("--lf", "-p", "cacheprovider", "--junitxml=lf.xml")
    result.assert_outcomes(failed=1, deselected=2)
    suite = ET.parse(project.path / "lf.xml").getroot()
    (case,) = suite.iter("testcase")
    assert case.get("name") == "gloo-ws2-even-cpu"
    assert "property equal_to_single: fail" in case.find("failure").text
    properties = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert properties["variant"] == "core/accuracy:gloo-ws2-even-cpu"
    assert properties["distmetrics_outcome"] == "fail"
    assert "--filter core/accuracy:gloo-ws2-even-cpu" in properties["reproduce"]


def test_two_items_run_in_parallel_with_xdist_in_separate_folders(project, tmp_path):
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    # Each variant passes only when the other one runs at the same time.
    project.scenario("core/pair", world_sizes=[1, 2], mode="rendezvous",
                     rendezvous_dir=str(meeting), rendezvous_count=2, rendezvous_seconds=30)
    result = project.run("-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=2)
    runs = [p for p in project.processes() if p["role"] == "runner" and p["argv"][0] == "serve"]
    assert len(runs) == 2  # one runner per worker
    assert {r["worker"] for r in runs} == {"gw0", "gw1"}
    assert len({r["tmpdir"] for r in runs}) == 2  # each has its own TMPDIR
    project.assert_nothing_left()


def test_the_rendezvous_fails_when_items_run_one_after_another(project, tmp_path):
    # The check above means something: without -n the first variant waits alone and fails.
    meeting = tmp_path / "meeting"
    meeting.mkdir()
    project.scenario("core/pair", world_sizes=[1, 2], mode="rendezvous",
                     rendezvous_dir=str(meeting), rendezvous_count=2, rendezvous_seconds=0.5)
    result = project.run()
    result.assert_outcomes(failed=1, passed=1)


def test_mpi_variants_are_left_to_the_runner_by_default(project):
    project.scenario("core/accuracy", backends=["mpi"], world_sizes=[2])
    project.run("-m", "mpi").assert_outcomes(passed=1)
    (run,) = [p["argv"] for p in project.processes() if p["role"] == "runner"
              and p["argv"][0] == "serve"]
    assert "--launcher" not in run
    assert [p["id"] for p in project.processes() if p["role"] == "request"] == [
        "core/accuracy:mpi-ws2-even-cpu"]


def test_mpi_variants_start_under_the_given_mpirun(project, tmp_path):
    mpirun = tmp_path / "fake-mpirun"
    # Checks the flags it is given, then runs the command once (the fake is not an MPI program).
    mpirun.write_text('#!/bin/sh\n[ "$1 $3" = "-np --oversubscribe" ] || exit 9\n'
                      'echo "$2" > "$(dirname "$0")/np"\nshift 3\nexec "$@"\n')
    mpirun.chmod(0o755)
    project.scenario("core/accuracy", backends=["mpi"], world_sizes=[2])
    result = project.run(f"--mpirun={mpirun}", "-m", "mpi")
    result.assert_outcomes(passed=1)
    assert (tmp_path / "np").read_text().strip() == "2"
    (run,) = [p["argv"] for p in project.processes() if p["role"] == "runner"
              and p["argv"][0] == "run"]
    assert run[-2:] == ["--launcher", "mpi"]


def test_a_broken_scenario_file_fails_its_collection_only(project):
    project.scenario("core/accuracy", world_sizes=[2])
    broken = project.path / "scenarios" / "core" / "broken.toml"
    broken.write_text("[metric\nname = 1\n")
    result = project.run("--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*scenarios/core/broken.toml: `*list scenarios/core/broken.toml "
                                 "--json` (in *) exited with status 2:",
                                 "*distmetrics: scenarios/core/broken.toml: not a fake scenario*"])


def test_a_missing_runner_is_a_clear_collection_error(project):
    project.scenario("core/accuracy", world_sizes=[2])
    result = project.pytester.runpytest_subprocess(
        "-p", "distmetrics.pytest_plugin", "--distmetrics-bin=/nonexistent/distmetrics")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*the distmetrics runner '/nonexistent/distmetrics' (from "
                                 "--distmetrics-bin or DISTMETRICS_BIN) is not an executable file*"])


def test_other_toml_files_are_not_collected(project):
    project.scenario("core/accuracy", world_sizes=[2])
    (project.path / "pyproject.toml").write_text("[tool.x]\n")
    result = project.run("--collect-only", "-q", ".")
    assert [line for line in result.outlines if "::" in line] == [
        "scenarios/core/accuracy.toml::gloo-ws2-even-cpu"]


def test_an_explicit_scenario_dir_with_nested_files(project):
    # Not called "scenarios": the runner names nested/extra relative to the folder it was given,
    # so the item runs the folder (with --filter), which names it the same way.
    nested = project.path / "more" / "nested"
    nested.mkdir(parents=True)
    (nested / "extra.toml").write_text('[fake]\nworld_sizes = [2]\n')
    (project.path / "more" / "flat.toml").write_text('[fake]\nworld_sizes = [1]\n')
    result = project.run("-v", "--scenario-dir=more", "more")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(["more/flat.toml::gloo-ws1-even-cpu PASSED*",
                                        "more/nested/extra.toml::gloo-ws2-even-cpu PASSED*"])
    requests = sorted((p["path"], p["id"]) for p in project.processes()
                      if p["role"] == "request")
    assert requests == [("more", "nested/extra:gloo-ws2-even-cpu"),
                        ("more/flat.toml", "flat:gloo-ws1-even-cpu")]


def test_the_deadline_option_reaches_the_runner(project):
    project.scenario("core/accuracy", world_sizes=[2])
    project.run("--distmetrics-deadline=7").assert_outcomes(passed=1)
    project.run("--distmetrics-deadline=8", "--distmetrics-isolate").assert_outcomes(passed=1)
    serve, run = [p["argv"] for p in project.processes() if p["role"] == "runner"
                  and p["argv"][0] in ("serve", "run")]
    assert serve[0] == "serve" and serve[serve.index("--deadline") + 1] == "7"
    assert run[0] == "run" and run[run.index("--deadline") + 1] == "8"


def test_the_hard_timeout_comes_from_the_options_then_the_listing():
    from distmetrics.pytest_plugin.plugin import DEFAULT_DEADLINE, GRACE, item_timeout
    assert item_timeout(5.0, 100.0, 100.0) == 5.0
    assert item_timeout(None, 7.0, 100.0) == 7.0 + GRACE
    assert item_timeout(None, None, 9.0) == 9.0 + GRACE
    assert item_timeout(None, None, None) == DEFAULT_DEADLINE + GRACE


def test_items_are_made_from_the_listing_alone(project):
    """What an item knows of its variant (its deadline, its metric, how its ranks start) is what
    `list --json` says; an entry without its launch breaks the contract."""
    from conftest import FAKE_RUNNER
    from distmetrics.pytest_plugin.runner import RunnerError, Selection, _variant_from_json, list_variants
    from distmetrics.tables import tables
    project.scenario("core/mae", backends=["gloo", "mpi"], world_sizes=[2], metric="MeanAbsoluteError",
                     deadline=45)
    listed = list_variants([sys.executable, str(FAKE_RUNNER)], ["scenarios"], Selection(), project.path)
    assert [(v.id, v.launch, v.started_by_mpirun, v.metric, v.deadline) for v in listed] == [
        ("core/mae:gloo-ws2-even-cpu", "direct", False, "MeanAbsoluteError", 45.0),
        ("core/mae:mpi-ws2-even-cpu", "mpirun", True, "MeanAbsoluteError", 45.0)]
    entry = {"id": "core/mae:gloo-ws2-even-cpu", "scenario": "core/mae", "file": "scenarios/core/mae.toml",
             "backend": "gloo", "world_size": 2, "shard": "even", "placement": "cpu"}
    with pytest.raises(RunnerError, match="without a valid 'launch'"):
        _variant_from_json(entry, project.path, tables([sys.executable, str(FAKE_RUNNER)]))
    # A launch the launcher table does not know breaks it too.
    with pytest.raises(RunnerError, match="whose launch the runner's tables do not know"):
        _variant_from_json({**entry, "launch": "ssh"}, project.path, tables([sys.executable, str(FAKE_RUNNER)]))


def test_mpirun_starts_the_variants_the_listing_says_mpirun_starts(project, tmp_path):
    """--mpirun goes by each variant's launch, whatever its backend is called: a gloo variant
    listed with launch "mpirun" is started under it, one listed "direct" goes to the runner."""
    mpirun = tmp_path / "fake-mpirun"
    mpirun.write_text('#!/bin/sh\n[ "$1 $3" = "-np --oversubscribe" ] || exit 9\n'
                      'echo "$2" >> "$(dirname "$0")/np"\nshift 3\nexec "$@"\n')
    mpirun.chmod(0o755)
    project.scenario("core/by_mpirun", world_sizes=[3], launch="mpirun")
    project.scenario("core/direct", world_sizes=[2])
    project.run(f"--mpirun={mpirun}").assert_outcomes(passed=2)
    assert (tmp_path / "np").read_text().split() == ["3"]
    runs = [p["argv"] for p in project.processes() if p["role"] == "runner" and p["argv"][0] == "run"]
    assert len(runs) == 1 and runs[0][1:4] == ["scenarios/core/by_mpirun.toml", "--filter",
                                               "core/by_mpirun:gloo-ws3-even-cpu"]
    assert runs[0][-2:] == ["--launcher", "mpi"]
    assert [p["id"] for p in project.processes() if p["role"] == "request"] == [
        "core/direct:gloo-ws2-even-cpu"]


def test_a_variant_that_died_lists_its_kept_verdicts_and_never_shows_not_judged_as_passed():
    from distmetrics.pytest_plugin.report import describe_variant
    kept = "judged on script steps 1-2 ('update 50%' .. 'compute'), which every rank completed"
    entry = {"id": "core/a:gloo-ws2-even-cpu", "outcome": "crash", "reason": "rank 1 to blame: rank 1 crashed",
             "properties": [
                 {"name": "no_hang", "outcome": "pass", "message": "no_hang held"},
                 {"name": "equal_to_single", "outcome": "fail", "message": "equal_to_single failed at compute 1",
                  "judged_before_death": kept},
                 {"name": "ranks_agree", "outcome": "pass", "message": "ranks_agree held at compute 1",
                  "judged_before_death": kept},
                 {"name": "idempotent", "outcome": "skip", "message": "idempotent: not judged: its evidence lies later",
                  "judged_before_death": "not judged"}]}
    text = describe_variant(entry)
    assert text.splitlines()[0] == "core/a:gloo-ws2-even-cpu: CRASH: rank 1 to blame: rank 1 crashed"
    assert f"property equal_to_single: fail ({kept})" in text
    assert f"property ranks_agree: pass ({kept})" in text
    assert "property idempotent: not judged\n    idempotent: not judged: its evidence lies later" in text
    assert "no_hang" not in text
    assert "idempotent: pass" not in text
