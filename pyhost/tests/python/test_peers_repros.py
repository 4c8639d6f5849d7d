"""peers/run_repros.py and peers/repro/common.py, on stand-in repro scripts (torch.distributed only,
none of the libraries): the runner runs each script as __main__ in a fork of its preloaded
interpreter and reports its exit code (0 shown, 77 about other releases, 124 past the deadline,
others not shown) and its output, its ranks' included; a hang is decided by common.run's grace
(the ranks blocked in their group without using CPU), not by torch.distributed's timeout, under
the runner (ranks forked) and alone (ranks spawned)."""

import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("torch.distributed")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
RUNNER = ROOT / "peers" / "run_repros.py"
# The message of a hang decided by the grace; one past torch's timeout would read "Timed out".
GRACE = "decided before torch.distributed's 60 s timeout"

SCRIPTS = {
    # Shows its "bug": each rank prints (the runner must capture the ranks' output too).
    "shows.py": """
        import common

        def body(rank, world_size):
            import torch
            import torch.distributed as dist
            t = torch.tensor([rank + 1])
            dist.all_reduce(t)
            print(f"rank {rank} reduced {int(t)}", flush=True)
            return int(t)

        if __name__ == "__main__":
            results = common.run(body, world_size=2, timeout_s=60)
            print(results)
            common.verdict(all(r == ("ok", 3) for r in results.values()), "both ranks reduced 1 + 2")
        """,
    # Rank 0 finishes; ranks 1 and 2 each wait to receive from the other, alive, forever.
    "hangs.py": """
        import common

        def body(rank, world_size):
            import torch
            import torch.distributed as dist
            if rank > 0:
                dist.recv(torch.zeros(1), src=3 - rank)
            return rank

        if __name__ == "__main__":
            results = common.run(body, world_size=3, timeout_s=60)
            print(results)
            common.verdict(results[0] == ("ok", 0) and results[1][0] == results[2][0] == "hang",
                           "; ".join(f"rank {r}: {kind} {value}" for r, (kind, value) in results.items()))
        """,
    "other_release.py": """
        import common

        if __name__ == "__main__":
            common.requires(torch="<1.0")
            common.verdict(True, "not reached")
        """,
    "broken.py": """
        if __name__ == "__main__":
            raise ValueError("a script's own error")
        """,
    "slow.py": """
        import time

        if __name__ == "__main__":
            print("started", flush=True)
            time.sleep(600)
        """,
}


def write_scripts(folder, names):
    folder.mkdir(exist_ok=True)
    for name in names:
        (folder / name).write_text(textwrap.dedent(SCRIPTS[name]).lstrip())
    return [folder / name for name in names]


def run_runner(tmp_path, scripts, *args):
    reports, summary = tmp_path / "reports", tmp_path / "summary.tsv"
    proc = subprocess.run([sys.executable, str(RUNNER), "--reports", str(reports), "--summary", str(summary),
                           "--jobs", "2", *args, *map(str, scripts)],
                          capture_output=True, text=True, timeout=240, cwd=ROOT)
    rows = [line.split("\t") for line in summary.read_text().splitlines()] if summary.exists() else []
    return proc.returncode, proc.stdout + proc.stderr, [(name, int(code)) for name, code, _ in rows], reports


def test_the_runner_reports_each_scripts_exit_code_and_output(tmp_path):
    scripts = write_scripts(tmp_path / "repros", ["shows.py", "hangs.py", "other_release.py", "broken.py"])
    code, out, rows, reports = run_runner(tmp_path, scripts)
    assert code == 1, out  # broken.py does not show a bug
    assert rows == [("shows.py", 0), ("hangs.py", 0), ("other_release.py", 77), ("broken.py", 1)], out

    shows = (reports / "shows.txt").read_text()
    assert "rank 0 reduced 3" in shows and "rank 1 reduced 3" in shows, shows  # the forked ranks' prints
    assert shows.rstrip().endswith("BUG SHOWN: both ranks reduced 1 + 2"), shows
    hangs = (reports / "hangs.txt").read_text()
    assert "BUG SHOWN: rank 0: ok 0; rank 1: hang " in hangs and hangs.count(GRACE) >= 2, hangs
    assert "NOT FOR THIS RELEASE: needs torch <1.0" in (reports / "other_release.txt").read_text()
    assert "ValueError: a script's own error" in (reports / "broken.txt").read_text()

    assert "shows.py: shown in " in out and "other_release.py: other release in " in out, out
    assert "broken.py: not shown (exit 1) in " in out, out
    assert "run_repros.py: 4 scripts in " in out and "1 not shown, 1 other release, 2 shown" in out, out


def test_the_runner_ends_a_script_past_its_deadline(tmp_path):
    scripts = write_scripts(tmp_path / "repros", ["slow.py", "other_release.py"])
    code, out, rows, reports = run_runner(tmp_path, scripts, "--deadline", "2")
    assert code == 1 and rows == [("slow.py", 124), ("other_release.py", 77)], out
    slow = (reports / "slow.txt").read_text()
    assert slow.startswith("started") and "ended past the deadline of 2 s" in slow, slow
    assert "slow.py: past the deadline after " in out, out


def test_a_repro_alone_spawns_its_ranks_and_decides_its_hang_by_the_grace(tmp_path):
    (script,) = write_scripts(tmp_path / "repros", ["hangs.py"])
    env = dict(os.environ, PYTHONPATH=str(ROOT / "peers" / "repro"))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "BUG SHOWN: rank 0: ok 0; rank 1: hang " in proc.stdout and proc.stdout.count(GRACE) >= 2, proc.stdout


def test_the_runner_preloads_what_the_real_repros_import():
    spec = importlib.util.spec_from_file_location("run_repros", RUNNER)
    run_repros = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(run_repros)
    scripts = run_repros.scripts_in(run_repros.REPRO_DIR)
    assert scripts and not any(path.endswith("common.py") for path in scripts)
    modules = run_repros.imported_modules(scripts)
    for module in ("torch", "torch.distributed", "torchmetrics", "ignite.metrics", "torcheval.metrics"):
        assert module in modules, modules
    assert "common" not in modules
