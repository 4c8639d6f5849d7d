"""peers/rerun.py: a variant whose rank could not make its torch.distributed group is rerun once,
alone, with its own `reproduce` line, and its entry replaced by the rerun's (the first outcome and
reason kept); a metric's own error is never rerun; more than --max are none rerun. With
--disagreeing, the variants peers/expected.py names (its --disagreeing file, made here from a real
comparison) are rerun, each one (id, metric, source): the same scenario id of another metric is
left alone; the first run is kept under first_run and a rerun that shows something else is named
as a flake by the comparison that follows. The distmetrics it runs here is a stand-in script that writes the report a rerun would."""

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
spec = importlib.util.spec_from_file_location("rerun", ROOT / "peers" / "rerun.py")
rerun = importlib.util.module_from_spec(spec)
spec.loader.exec_module(rerun)

SETUP = ("rank 2 raised std::runtime_error at setup: rank 2: making the torch.distributed gloo group for the Python "
         "metric failed: RuntimeError: Gloo connectFullMesh failed with [pair.cc:561] Connection closed by peer")


def variant(vid, outcome, reason, **more):
    return {"id": vid, "outcome": outcome, "reason": reason,
            "reproduce": f"distmetrics conform --python lib.py --metric M s.toml --filter '{vid}' --deadline 15", **more}


def fake_distmetrics(tmp_path, outcome):
    """A 'distmetrics' that writes, to its --json, the variant named by --filter with `outcome`, and
    logs its arguments."""
    script = tmp_path / "fake_distmetrics"
    script.write_text(textwrap.dedent(f"""\
        #!{sys.executable}
        import json, sys
        a = sys.argv[1:]
        open({str(tmp_path / 'calls')!r}, 'a').write(json.dumps(a) + '\\n')
        vid = a[a.index('--filter') + 1]
        json.dump({{'variants': [{{'id': vid, 'outcome': {outcome!r}, 'reason': 'rerun reason'}}]}},
                  open(a[a.index('--json') + 1], 'w'))
        """))
    script.chmod(0o755)
    return script


def test_a_setup_failure_is_rerun_alone_and_replaced(tmp_path, capsys):
    report = tmp_path / "peers.json"
    report.write_text(json.dumps({"variants": [
        variant("lib/A:gloo-ws3-uneven-cpu", "error", SETUP, **{"class": "lib.a:A"}),
        variant("lib/B:gloo-ws2-even-cpu", "error", "rank 0 raised ValueError at update: the metric's own error"),
        variant("lib/C:gloo-ws1-even-cpu", "pass", ""),
    ]}))
    fake = fake_distmetrics(tmp_path, "crash")
    assert rerun.main(["--report", str(report), "--distmetrics", str(fake)]) == 0
    calls = [json.loads(line) for line in (tmp_path / "calls").read_text().splitlines()]
    assert len(calls) == 1  # B's error is the metric's, not the set-up's: never rerun
    assert calls[0][:6] == ["conform", "--python", "lib.py", "--metric", "M", "s.toml"]
    assert calls[0][calls[0].index("--filter") + 1] == "lib/A:gloo-ws3-uneven-cpu"
    variants = json.loads(report.read_text())["variants"]
    assert [v["outcome"] for v in variants] == ["crash", "error", "pass"]
    assert variants[0]["rerun_after"] == "error: " + SETUP
    assert variants[0]["first_run"]["setup_failure"] is True  # what expected.py names a harness flake by
    assert variants[0]["class"] == "lib.a:A"
    assert ("lib/A:gloo-ws3-uneven-cpu [None] could not make its torch.distributed group: first error"
            in capsys.readouterr().out)


def test_more_setup_failures_than_the_limit_are_not_a_flake(tmp_path, capsys):
    report = tmp_path / "peers.json"
    original = {"variants": [variant(f"lib/A:gloo-ws3-v{i}-cpu", "error", SETUP) for i in range(3)]}
    report.write_text(json.dumps(original))
    fake = fake_distmetrics(tmp_path, "pass")
    assert rerun.main(["--report", str(report), "--distmetrics", str(fake), "--max", "2"]) == 1
    assert not (tmp_path / "calls").exists()
    assert json.loads(report.read_text()) == original
    assert "3 variants could not make their torch.distributed group (more than 2: not a flake" in capsys.readouterr().err


def test_nothing_to_rerun_leaves_the_report_alone(tmp_path):
    report = tmp_path / "peers.json"
    text = json.dumps({"variants": [variant("lib/C:gloo-ws1-even-cpu", "pass", "")]})
    report.write_text(text)
    assert rerun.main(["--report", str(report), "--distmetrics", "/nonexistent"]) == 0
    assert report.read_text() == text


def test_variants_that_disagree_with_expected_toml_are_rerun_by_id_metric_and_source(tmp_path, capsys):
    spec_e = importlib.util.spec_from_file_location("expected", ROOT / "peers" / "expected.py")
    expected = importlib.util.module_from_spec(spec_e)
    spec_e.loader.exec_module(expected)
    source = "python:/x/peers/lib/metrics.py"
    report = tmp_path / "peers.json"
    report.write_text(json.dumps({"variants": [
        # expected.toml expects A's hang at ws2; under load it crashed: rerun.
        variant("s/A:gloo-ws2-even-cpu", "crash", "rank 1 died", metric="A (lib/metrics)", source=source),
        # the same scenario id run by another metric, passing: left alone.
        variant("s/A:gloo-ws2-even-cpu", "pass", "", metric="B (lib/metrics)", source=source),
        # expected and seen: left alone.
        variant("s/C:gloo-ws2-even-cpu", "fail", "root cause: x", metric="C (lib/metrics)", source=source),
        # unexpected: rerun.
        variant("s/D:gloo-ws1-even-cpu", "fail", "root cause: y", metric="D (lib/metrics)", source=source),
    ]}))
    toml = tmp_path / "expected.toml"
    toml.write_text(textwrap.dedent("""\
        [[finding]]
        variant = "s/A:gloo-ws*-even-cpu"
        metric = "A"
        outcome = "hang"
        kind = "library bug"
        why = "a"
        [[finding]]
        variant = "s/C:gloo-ws2-even-cpu"
        outcome = "fail"
        kind = "library bug"
        why = "c"
        """))
    ids = tmp_path / "disagreeing.json"
    assert expected.main(["--library", "lib", "--report", str(report), "--expected", str(toml),
                          "--disagreeing", str(ids)]) == 1
    assert json.loads(ids.read_text()) == [
        {"id": "s/A:gloo-ws2-even-cpu", "metric": "A (lib/metrics)", "source": source},
        {"id": "s/D:gloo-ws1-even-cpu", "metric": "D (lib/metrics)", "source": source}]
    fake = fake_distmetrics(tmp_path, "hang")
    assert rerun.main(["--report", str(report), "--distmetrics", str(fake), "--disagreeing", str(ids)]) == 0
    variants = json.loads(report.read_text())["variants"]
    assert [v["outcome"] for v in variants] == ["hang", "pass", "fail", "hang"]
    assert variants[0]["rerun_after"] == "crash: rank 1 died"
    assert variants[0]["metric"] == "A (lib/metrics)" and variants[0]["source"] == source
    assert "rerun_after" not in variants[1]
    out = capsys.readouterr().out
    assert "s/A:gloo-ws2-even-cpu [A (lib/metrics)] disagreed with expected.toml: first crash" in out
    assert variants[0]["first_run"]["outcome"] == "crash" and "first_run" not in variants[1]
    assert variants[0]["first_run"]["setup_failure"] is False  # a crash of the metric's own
    # After the reruns the comparison is made again: A's hang is the expected finding now, but its
    # first run crashed: a flake, named and failed (no entry declares it); D's hang is unexpected.
    assert expected.main(["--library", "lib", "--report", str(report), "--expected", str(toml)]) == 1
    out = capsys.readouterr().out
    assert "unexpected: HANG s/D:gloo-ws1-even-cpu" in out
    assert "flake: s/A:gloo-ws2-even-cpu [A]: first CRASH, rerun alone HANG (not declared flaky in any entry)" in out
