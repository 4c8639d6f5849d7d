"""Real scenarios through the plugin and the real runner (ctest `pytest_scenarios`, registered
when the `distmetrics` target is built; it passes the binary in DISTMETRICS_BIN)."""

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import REPO_ROOT

RUNNER = os.environ.get("DISTMETRICS_BIN", "")
pytestmark = pytest.mark.skipif(
    not (RUNNER and os.access(RUNNER, os.X_OK)),
    reason="set DISTMETRICS_BIN to the built runner (ctest does: pytest_scenarios)")

ACCURACY = """\
description = "Multiclass accuracy, for the plugin's integration test."
{extra}
[metric]
name = "Accuracy"
params = {{ task = "multiclass", num_classes = 3 }}

[data]
generator = "multiclass"
params = {{ num_classes = 3 }}
seed = 11
num_samples = 29
batch_size = 4

[variants]
world_sizes = [1, 2]
backends = {backends}
shards = ["even", "uneven"]
placements = {placements}
"""


def listed(path):
    """What the runner lists for a scenario file or folder."""
    done = subprocess.run([RUNNER, "list", str(path), "--json"], capture_output=True, text=True,
                          check=True)
    return json.loads(done.stdout)


@pytest.fixture
def real(project):
    project.runner_option = lambda: f"--distmetrics-bin={RUNNER}"
    return project


def write(project, name, **fields):
    fields.setdefault("extra", "")
    fields.setdefault("backends", '["gloo"]')
    fields.setdefault("placements", '["cpu"]')
    path = project.path / "scenarios" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(ACCURACY.format(**fields))
    return path


def test_real_variants_pass_in_parallel_with_ids_from_the_runner(real):
    write(real, "core/accuracy")
    result = real.run("-v", "-n", "2", "-p", "xdist", "--junitxml=report.xml")
    names = [f"gloo-ws{n}-{s}-cpu" for n in (1, 2) for s in ("even", "uneven")]
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines_random([f"*PASSED scenarios/core/accuracy.toml::{name}*"
                                        for name in names])
    cases = ET.parse(real.path / "report.xml").getroot().iter("testcase")
    assert sorted(c.get("name") for c in cases) == sorted(names)


def test_a_real_failing_property_and_its_reproduce_command(real):
    write(real, "core/wrong_golden", extra='properties = ["equal_to_single", "golden"]\n'
                                          "[golden]\nvalue = 0.125\n")
    result = real.run("-k", "ws2-even")
    result.assert_outcomes(failed=1, deselected=3)
    out = result.stdout.str()
    assert "core/wrong_golden:gloo-ws2-even-cpu: FAIL" in out
    assert "property golden: fail" in out
    assert "property equal_to_single" not in out  # it held
    single = float(re.search(r"single-process value: (\S+)", out).group(1))
    ranks = [float(v) for v in re.findall(r"rank \d value: +(\S+)", out)]
    assert len(ranks) == 2 and 0 < single <= 1
    assert re.search(r"difference: \S+", out)
    command = re.search(r"^reproduce: (.*)$", out, re.M).group(1)
    again = subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=120)
    assert again.returncode == 1, again.stdout + again.stderr
    assert "FAIL  core/wrong_golden:gloo-ws2-even-cpu" in again.stdout


def test_gpu_variants_skip_with_the_runners_reason_on_a_cpu_machine(real):
    path = write(real, "gpu/accuracy", placements='["cuda"]')
    reasons = {v["skip"] for v in listed(path) if v["world_size"] == 2}
    if None in reasons:
        pytest.skip("this machine can run CUDA variants")
    (reason,) = reasons
    result = real.run("-rs", "--world-sizes=2")
    result.assert_outcomes(skipped=2)
    result.stdout.fnmatch_lines([f"SKIPPED [[]2[]] scenarios/gpu/accuracy.toml: {reason}"])


def test_mpi_variants_through_the_runner(real):
    path = write(real, "core/accuracy", backends='["mpi"]')
    skips = {v["skip"] for v in listed(path)}
    if skips != {None}:
        pytest.skip(f"the runner cannot run mpi here: {skips}")
    result = real.run("--world-sizes=2", "-k", "ws2-even")
    result.assert_outcomes(passed=1, deselected=1)


def test_the_listing_says_what_the_plugin_needs_of_a_variant(real):
    """The plugin reads no scenario file: the real listing gives each variant its deadline, its
    metric (for --distmetrics-python) and how its ranks start (for --mpirun: the backend table's
    launch, mpirun for mpi only)."""
    path = write(real, "core/accuracy", backends='["gloo", "mpi"]', extra="deadline = 45")
    entries = {(v["backend"], v["world_size"], v["shard"]): v for v in listed(path)}
    gloo, mpi = entries[("gloo", 2, "even")], entries[("mpi", 2, "even")]
    assert (gloo["launch"], gloo["metric"], gloo["deadline"]) == ("direct", "Accuracy", 45.0)
    assert (mpi["launch"], mpi["metric"], mpi["deadline"]) == ("mpirun", "Accuracy", 45.0)
    from distmetrics.pytest_plugin.runner import Selection, list_variants
    variants = list_variants([RUNNER], [str(path)], Selection(), real.path)
    assert {(v.backend, v.started_by_mpirun) for v in variants} == {("gloo", False), ("mpi", True)}


def test_the_repository_suite_collects_every_listed_variant():
    ids = subprocess.run([RUNNER, "list", "scenarios"], cwd=REPO_ROOT, capture_output=True,
                         text=True, check=True).stdout.split()
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q",
         "-p", "no:cacheprovider", f"--distmetrics-bin={RUNNER}", "scenarios"],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    items = [line for line in collected.stdout.splitlines() if "::" in line]
    assert ids and len(items) == len(ids), collected.stdout[-2000:]


def test_run_2gpu_covers_every_cuda_placement_the_scenarios_use():
    script = (REPO_ROOT / "ci" / "run_2gpu.sh").read_text()
    cuda_placements = set(re.search(r"GLOO_CUDA_PLACEMENTS:-([\w,]+)\}", script).group(1)
                          .split(","))
    used = {v["placement"] for v in listed(REPO_ROOT / "scenarios") if v["backend"] == "gloo"}
    used -= {"cpu"}
    assert used <= cuda_placements, f"add {used - cuda_placements} to ci/run_2gpu.sh"


def processes_with_tmpdir(folder):
    """Pids of live processes whose environment has TMPDIR=folder (the plugin gives each runner
    its own, and the ranks inherit it)."""
    wanted = f"TMPDIR={folder}".encode()
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                if wanted in Path(f"/proc/{name}/environ").read_bytes().split(b"\0"):
                    found.append(int(name))
            except OSError:
                pass
    return found


def test_the_hard_timeout_ends_a_real_runner_and_its_ranks(real):
    # Far more than 6 s of work at world size 4 (one sample per batch); the item may take 6 s.
    path = write(real, "core/long")
    path.write_text(path.read_text().replace("num_samples = 29", "num_samples = 800000")
                    .replace("batch_size = 4", "batch_size = 1")
                    .replace("world_sizes = [1, 2]", "world_sizes = [4]")
                    .replace('shards = ["even", "uneven"]', 'shards = ["even"]'))
    result = real.run("--distmetrics-timeout=6", timeout=120)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "core/long:gloo-ws4-even-cpu: HANG: no result within the item's hard timeout of 6 s" \
        in out
    assert "still alive after KILL" not in out
    ended = re.search(r"ended the runner and its ranks \(pids \[([\d, ]*)\]\)", out).group(1)
    assert ended
    # The runner's TMPDIR is its log's folder; none of the processes that had it is left.
    workdir = os.path.dirname(re.search(r"its log: (\S+)", out).group(1))
    assert processes_with_tmpdir(workdir) == []


# --- the CLI commands the plugin and users rely on, on the real runner -------------------------
def cli(*args, cwd=REPO_ROOT, env=None, input=None):
    return subprocess.run([RUNNER, *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=300, env=env, input=input)


def test_serve_answers_one_json_line_per_request_and_keeps_going(tmp_path):
    scenario = REPO_ROOT / "scenarios" / "core" / "mean_absolute_error.toml"
    ids = [v["id"] for v in listed(scenario) if v["world_size"] == 2]
    assert "core/mean_absolute_error:gloo-ws2-even-cpu" in ids
    requests = [json.dumps({"path": str(scenario), "id": ids[0]}),
                "core/no_such:gloo-ws2-even-cpu",
                json.dumps({"path": str(scenario), "id": ids[1]}),
                "not json {"]
    done = cli("serve", REPO_ROOT / "scenarios", input="\n".join(requests) + "\n")
    assert done.returncode == 0, done.stderr
    answers = [json.loads(line) for line in done.stdout.splitlines()]
    assert [a["id"] for a in answers] == [ids[0], "core/no_such:gloo-ws2-even-cpu", ids[1],
                                          "not json {"]
    assert [a["outcome"] for a in answers] == ["pass", "error", "pass", "error"]
    assert "no variant 'core/no_such:gloo-ws2-even-cpu'" in answers[1]["reason"]
    # The same report object as `run --json` gives for that variant.
    report = tmp_path / "r.json"
    assert cli("run", scenario, "--filter", ids[0], "--json", report).returncode == 0
    (entry,) = json.loads(report.read_text())["variants"]
    assert [p["name"] for p in answers[0]["properties"]] == [p["name"] for p in entry["properties"]]
    assert answers[0]["properties"][1]["single"] == entry["properties"][1]["single"]


def test_version_metrics_and_the_commands_help(tmp_path):
    done = cli("--version")
    assert done.returncode == 0 and re.fullmatch(r"distmetrics \S+ \(LibTorch \S+\)\n", done.stdout)
    metrics = {m["name"]: m for m in json.loads(cli("metrics", "--json").stdout)}
    precision = {p["name"]: p for p in metrics["Precision"]["params"]}
    assert precision["average"]["choices"] == ["none", "micro", "macro", "weighted"]
    assert precision["average"]["default"] == "macro" and not precision["average"]["required"]
    assert precision["num_classes"]["aliases"] == ["num_labels"]
    text = cli("metrics").stdout
    assert "num_classes      int        default 0; also num_labels" in text
    done = cli("conform")
    assert done.returncode == 2 and "`distmetrics conform --help`" in done.stderr
    done = cli("run", "--world-sizes", "x")
    assert done.returncode == 2 and "Run 'distmetrics run --help' for usage." in done.stderr


def test_a_missing_default_scenario_folder_says_where_it_looked(tmp_path):
    env = dict(os.environ, DISTMETRICS_SCENARIOS=str(tmp_path / "nowhere"))
    for command in (["list"], ["validate"], ["run"]):
        done = cli(*command, cwd=tmp_path, env=env)
        assert done.returncode == 2
        assert done.stderr == (
            "distmetrics: no scenario path given and no scenario folder found; looked in:\n"
            f"  {tmp_path / 'nowhere'} ($DISTMETRICS_SCENARIOS)\n"
            "give scenario files or folders as arguments, or set DISTMETRICS_SCENARIOS to a "
            "scenario folder\n")
    env["DISTMETRICS_SCENARIOS"] = str(REPO_ROOT / "scenarios" / "core")
    done = cli("list", "--filter", "*mean_absolute_error:gloo-ws1-even-cpu", cwd=tmp_path, env=env)
    assert done.stdout.split() == ["core/mean_absolute_error:gloo-ws1-even-cpu"]


def test_every_tag_is_a_marker(real):
    write(real, "core/tagged", extra='tags = ["multilabel", "slow"]')
    result = real.run("--collect-only", "-q", "--strict-markers", "-m", "multilabel and slow",
                      "--world-sizes=1")
    assert [line for line in result.outlines if "::" in line] == [
        "scenarios/core/tagged.toml::gloo-ws1-even-cpu",
        "scenarios/core/tagged.toml::gloo-ws1-uneven-cpu"]
