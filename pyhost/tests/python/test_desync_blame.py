"""Desync blame through Python metrics (issue 26), `distmetrics conform --python` end to end on
gloo: a rank that issues one dist.barrier() too many is blamed, not the ranks that moved on; the
ranks whose compute cache returned without its all_reduce are blamed, not the rank that synced,
however many they are. Each asserts the blamed rank and the words of the verdict. The blame
comes from each rank's collectives per script step (every torch.distributed call is traced with
the step and compute that issued it). DISTMETRICS_BIN is the CLI under test (ctest sets it)."""

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCES = Path(__file__).resolve().parent / "sources"
MAE = ROOT / "examples" / "python" / "scenarios" / "mean_absolute_error.toml"


def conform(tmp_path, source, scenario, *args, timeout=150):
    report = tmp_path / "report.json"
    cmd = [os.environ["DISTMETRICS_BIN"], "conform", "--python", str(source), str(scenario), *map(str, args),
           "--json", str(report)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    assert report.exists(), run.stdout + run.stderr
    return run, json.loads(report.read_text())


def scenario(tmp_path, name, script=None):
    """The examples' MeanAbsoluteError scenario at world sizes 2 and 3 (with another script)."""
    text = MAE.read_text().replace("world_sizes = [1, 2, 4]", "world_sizes = [2, 3]")
    assert "world_sizes = [2, 3]" in text
    if script:
        text = text.replace("[metric]", f"script = {json.dumps(script)}\n\n[metric]")
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return path


def test_an_extra_dist_barrier_is_blamed_on_the_rank_that_issued_it_at_world_sizes_2_and_3(tmp_path):
    # The default script computes at steps 2, 3, 7 and 10: the last rank adds a barrier to its
    # second compute (script step 3); its peers wait in the all_reduce of the third (step 7).
    run, data = conform(tmp_path, SOURCES / "desync_extra_barrier.py", scenario(tmp_path, "extra_barrier"),
                        "--shard", "even", "--deadline", "8")
    assert run.returncode == 3, run.stdout + run.stderr
    by_size = {v["world_size"]: v for v in data["variants"]}
    assert sorted(by_size) == [2, 3]
    for world_size, v in by_size.items():
        last = world_size - 1
        peers = "rank 0" if world_size == 2 else "ranks 0, 1"
        assert v["outcome"] == "hang", v
        assert v["reason"].startswith(
            f"rank {last} to blame: rank {last} issued dist.barrier #2 in compute 2 (script step 3), which {peers} "
            f"never issued. Rank {last} is blamed: in the other computes where the ranks agree (compute 1 (script "
            f"step 2)), every rank issued what {peers} issued here (dist.all_reduce(sum) (float64 [2])), not what "
            f"rank {last} did."), v["reason"]


def test_a_cached_compute_skipped_by_two_of_three_ranks_is_blamed_on_the_two(tmp_path):
    # Only rank 1 is fed between computes 1 and 2: ranks 0 and 2 return compute 2's cached value
    # without its all_reduce, their compute 3 all_reduce pairs with rank 1's compute 2 one, they
    # finish, and rank 1 waits alone in compute 3's.
    cached = scenario(tmp_path, "cached_compute", ["update 1", "compute", "update 1 ranks=1", "compute", "update rest", "compute"])
    run, data = conform(tmp_path, SOURCES / "desync_cached_compute.py", cached, "--world-sizes", "3",
                        "--shard", "even", "--deadline", "8")
    assert run.returncode == 3, run.stdout + run.stderr
    (v,) = data["variants"]
    assert v["outcome"] == "hang", v
    assert v["reason"].startswith(
        "rank 0 to blame: ranks 0, 2 returned from compute 2 (script step 4) without its dist.all_reduce(sum) #1 "
        "(float64 [2]), which rank 1 issued. Ranks 0, 2 are blamed: in the other computes where the ranks agree "
        "(compute 1 (script step 2), compute 3 (script step 6)), every rank issued what rank 1 issued here "
        "(dist.all_reduce(sum) (float64 [2])), not what ranks 0, 2 did."), v["reason"]
    assert ("Then ranks 0, 2 issued their collectives of compute 3 (script step 6) while rank 1 waited in those of "
            "compute 2 (script step 4): from #1 on") in v["diagnosis"], v["diagnosis"]
    states = {r["rank"]: r["state"] for r in v["ranks"]}
    assert states[0] == states[2] == "finished" and states[1] != "finished", states
