"""peers/phases.py: a report's phases as tables, per library (the source's folder) and world size and
per outcome, with the share of the time in hangs; the supervisor's and the engine's phases add up to
a variant's seconds ("other" is what they leave), the rank phases are shown apart. A report without
phases (an older distmetrics) is bad input."""

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
spec = importlib.util.spec_from_file_location("phases", ROOT / "peers" / "phases.py")
phases = importlib.util.module_from_spec(spec)
spec.loader.exec_module(phases)


def variant(library, ws, outcome, seconds, **measured):
    return {"id": f"s/{library}:gloo-ws{ws}-even-cpu", "world_size": ws, "outcome": outcome, "seconds": seconds,
            "source": f"python:/repo/peers/{library}/metrics.py", "phases": measured}


def report(tmp_path, variants, **more):
    path = tmp_path / "peers.json"
    path.write_text(json.dumps({"seconds": 9.0, "variants": variants, **more}))
    return path


def test_the_tables_per_library_world_size_and_outcome_and_the_hangs_share(tmp_path, capsys):
    path = report(tmp_path, [
        variant("torchmetrics", 2, "pass", 1.0, ranks=0.6, pool_start=0.3, group=0.2, sync=0.1),
        variant("torchmetrics", 2, "hang", 2.0, ranks=0.5, hang_wait=1.0, end_workers=0.25, group=0.25),
        variant("ignite", 3, "pass", 0.5, ranks=0.5, update=0.25),
    ], phases={"setup": 1.5, "report": 0.25})
    out_json = tmp_path / "numbers.json"
    assert phases.main(["--report", str(path), "--json", str(out_json)]) == 0
    out = capsys.readouterr().out
    assert "phases of 3 variants: 3.5 s of variant time in a run of 9.0 s; setup 1.5 s, report 0.2 s" in out
    assert "torchmetrics: seconds per phase" in out and "ignite: seconds per phase" in out
    assert "hangs: 1 of 3 variants (33%), 2.0 s of 3.5 s (57%)" in out
    numbers = json.loads(out_json.read_text())
    ws2 = numbers["groups"]["torchmetrics ws2"]
    assert ws2["variants"] == 2 and ws2["seconds"] == 3.0
    assert abs(ws2["phases"]["other"] - (0.1 + 0.25)) < 1e-9  # what the supervisor's phases leave of each one's seconds
    assert numbers["groups"]["outcome hang"]["phases"]["hang_wait"] == 1.0
    assert numbers["hangs"]["hangs"] == 1 and numbers["hangs"]["verdict_median"] == 1.5


def test_a_report_without_phases_is_bad_input(tmp_path, capsys):
    path = report(tmp_path, [{"id": "s/a:gloo-ws1-even-cpu", "world_size": 1, "outcome": "pass", "seconds": 0.1}])
    assert phases.main(["--report", str(path)]) == 2
    assert "has no phases" in capsys.readouterr().err
