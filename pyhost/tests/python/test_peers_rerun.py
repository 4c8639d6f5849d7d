"""peers/rerun_setup_failures.py: a variant whose rank could not make its torch.distributed group is
rerun once, alone, with its own `reproduce` line, and its entry replaced by the rerun's (the first
reason kept); a metric's own error is never rerun; more set-up failures than --max are none rerun.
The distmetrics it runs here is a stand-in script that writes the report a rerun would."""

import importlib.util
import json
import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
spec = importlib.util.spec_from_file_location("rerun_setup_failures", ROOT / "peers" / "rerun_setup_failures.py")
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
    assert variants[0]["rerun_after"] == SETUP
    assert variants[0]["class"] == "lib.a:A"
    assert "lib/A:gloo-ws3-uneven-cpu: its group could not be made" in capsys.readouterr().out


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
