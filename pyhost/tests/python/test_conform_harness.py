"""`distmetrics conform --python` on what real libraries do that the harness must not misread
(sources/harness_conventions.py), through the real CLI and its rank workers:

- a factory that raises Unsupported for one parameter combination skips only those variants,
  with its reason; one that raises anything else makes only those variants errors naming the
  parameters;
- an update() that rejects an empty batch is reported once for the metric, and the rest of the
  script still runs, so a missing sync is still found and leads the verdict.

DISTMETRICS_BIN is the CLI under test (ctest sets it)."""

import json
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
SOURCE = Path(__file__).resolve().parent / "sources" / "harness_conventions.py"

SCENARIO = """description = "{metric} with sum_dtype {dtype} (test_conform_harness.py)"
deadline = 20

[metric]
name = "{metric}"

[metric.params]
sum_dtype = "{dtype}"

[data]
generator = "regression"
params = {{ dims = 2, noise = 0.5 }}
seed = 6001
num_samples = 40
batch_size = 4
dtype = "float64"

[variants]
world_sizes = [1, 2]
backends = ["gloo"]
shards = ["even"]
"""


def write_scenarios(folder):
    folder.mkdir()
    for metric, dtype in [("MeanAbsoluteError", "float64"), ("MeanAbsoluteError", "float32"),
                          ("RootMeanSquaredError", "float64"), ("RootMeanSquaredError", "float32"),
                          ("MeanSquaredError", "float64")]:
        (folder / f"{metric}_{dtype}.toml").write_text(SCENARIO.format(metric=metric, dtype=dtype))
    return folder


def test_per_variant_skips_errors_and_an_empty_batch_finding_in_one_run(tmp_path):
    scenarios = write_scenarios(tmp_path / "scenarios")
    report = tmp_path / "report.json"
    cmd = [os.environ["DISTMETRICS_BIN"], "conform", "--python", str(SOURCE), str(scenarios), "--json", str(report)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert run.returncode == 1, run.stdout + run.stderr
    data = json.loads(report.read_text())
    by = {(v["metric"], v["scenario"].rsplit("_", 1)[-1], v["world_size"]): v for v in data["variants"]}
    assert len(by) == 10, sorted(by)

    # Unsupported: a skip with the factory's reason, for those parameters only.
    for ws in (1, 2):
        assert by[("MeanAbsoluteError", "float64", ws)]["outcome"] == "pass", by[("MeanAbsoluteError", "float64", ws)]
        skipped = by[("MeanAbsoluteError", "float32", ws)]
        assert skipped["outcome"] == "skip", skipped
        assert skipped["reason"] == ('MeanAbsoluteError does not support the parameters {"sum_dtype":"float32"}: '
                                     "this MeanAbsoluteError keeps float64 sums only (sum_dtype='float32' asked)"), skipped

    # Any other factory error: an error naming the parameters, the other parameters still run.
    for ws in (1, 2):
        assert by[("RootMeanSquaredError", "float64", ws)]["outcome"] == "pass"
        failed = by[("RootMeanSquaredError", "float32", ws)]
        assert failed["outcome"] == "error", failed
        assert failed["reason"].startswith('RootMeanSquaredError\'s factory cannot build it with the parameters '
                                           '{"sum_dtype":"float32"}: '), failed["reason"]
        assert "ValueError: this factory refuses float32 sums (a planted factory error)" in failed["reason"], failed["reason"]

    # The empty batch: its own property on every variant, the missing sync still found and first.
    ws1, ws2 = by[("MeanSquaredError", "float64", 1)], by[("MeanSquaredError", "float64", 2)]
    failing = lambda v: sorted(p["name"] for p in v["properties"] if p["outcome"] == "fail")
    assert failing(ws1) == ["accepts_empty_batch"], ws1
    assert ws1["reason"].startswith("root cause: the metric rejects an empty batch: ValueError: The `input` and "
                                    "`target` should be non-empty tensors"), ws1["reason"]
    assert ws2["outcome"] == "fail"
    assert ws2["reason"].startswith("root cause: no sync"), ws2["reason"]
    assert {"equal_to_single", "ranks_agree", "accepts_empty_batch"} <= set(failing(ws2)), ws2
    empty = next(p for p in ws2["properties"] if p["name"] == "accepts_empty_batch")
    assert empty["consequence_of"] is None, empty
    assert "rank 0: script step 4 ('update empty ranks=0') raised ValueError" in empty["message"], empty["message"]

    # Once per metric in the report and on the console.
    assert [(f["metric"], f["finding"], len(f["variants"])) for f in data["findings"]] == [
        ("MeanSquaredError", "rejects an empty batch", 2)], data["findings"]
    assert data["findings"][0]["error"].startswith("ValueError: The `input` and `target` should be non-empty tensors")
    assert run.stdout.count("MeanSquaredError rejects an empty batch (ValueError: ") == 1, run.stdout


EXAMPLES = ROOT / "examples" / "python"


SHARED = """import torch
import torch.distributed as dist


class MeanAbsoluteError:
    def __init__(self, sync):
        self.sync = sync
        self.reset()

    def reset(self):
        self.total = torch.tensor(0.0, dtype=torch.float64)
        self.count = torch.tensor(0, dtype=torch.int64)

    def update(self, preds, target):
        self.total += (preds - target).abs().sum().to(torch.float64)
        self.count += target.numel()

    def compute(self):
        state = torch.stack([self.total, self.count.to(torch.float64)])
        if self.sync and dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(state)
        return state[0] / state[1]


def factory(sync):
    return lambda params: MeanAbsoluteError(sync)
"""

SOURCE_OF = """import importlib.util
import pathlib
import sys

import distmetrics

if "shared_factories" not in sys.modules:  # one helper module for every source, as distmetrics.peers is
    spec = importlib.util.spec_from_file_location("shared_factories", pathlib.Path(__file__).parents[1] / "shared.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["shared_factories"] = module
    spec.loader.exec_module(module)
distmetrics.register("MeanAbsoluteError", sys.modules["shared_factories"].factory(sync={sync}), adapter="torchmetrics")
{more}"""


def test_several_sources_registering_one_name_each_run_their_own_in_one_run(tmp_path):
    """Two --python sources in one run (one pool per world size for both), each registering
    MeanAbsoluteError from factories of one shared module (as the peer mappings do): the one that
    syncs passes, the one that never syncs fails, so each variant ran its own source's metric
    although both live in one interpreter per worker. Both are metrics.py in their own folder
    (as peers/<library>/metrics.py): rows name the folder."""
    report = tmp_path / "report.json"
    (tmp_path / "shared.py").write_text(SHARED)
    correct, no_sync = tmp_path / "correct" / "metrics.py", tmp_path / "no_sync" / "metrics.py"
    # The first source has a name the second lacks: it must stay registered after the second's import.
    more = 'distmetrics.register("MaximumAbsoluteError", sys.modules["shared_factories"].factory(sync=True))\n'
    for source, sync, extra in [(correct, True, more), (no_sync, False, "")]:
        source.parent.mkdir()
        source.write_text(SOURCE_OF.format(sync=sync, more=extra))
    # The first one given relative to the working directory, as ci/run_peers.sh gives its sources.
    cmd = [os.environ["DISTMETRICS_BIN"], "conform", "--python", os.path.relpath(correct, ROOT), "--python", str(no_sync),
           "--metric", "MeanAbsoluteError", str(EXAMPLES / "scenarios" / "mean_absolute_error.toml"),
           "--world-sizes", "2", "--shard", "even", "--deadline", "30", "--json", str(report)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180)
    assert run.returncode == 1, run.stdout + run.stderr
    data = json.loads(report.read_text())
    got = sorted((v["metric"], v["outcome"]) for v in data["variants"])
    assert got == [("MeanAbsoluteError (correct/metrics)", "pass"), ("MeanAbsoluteError (no_sync/metrics)", "fail")], got
    failed = next(v for v in data["variants"] if v["outcome"] == "fail")
    assert failed["source"] == "python:" + str(no_sync)
    assert failed["reason"].startswith("root cause: no sync"), failed["reason"]
    assert f"--python {no_sync}" in failed["reproduce"], failed["reproduce"]
    assert [p["path"] for p in data["plugins"]] == ["python:" + str(correct), "python:" + str(no_sync)]
    assert "distmetrics conform: correct/metrics, no_sync/metrics: 1 passed, 1 failed" in run.stdout, run.stdout


TWO_OF_ONE_NAME = '''
import torch
import torch.distributed as dist
import distmetrics


class MAE:
    """Sums on every rank; all_reduced in compute() unless sync=False. With no data anywhere it
    returns 0 (torchmetrics' convention) instead of raising."""

    def __init__(self, sync):
        self.sync = sync
        self.reset()

    def reset(self):
        self.total = torch.tensor(0.0, dtype=torch.float64)
        self.count = torch.tensor(0.0, dtype=torch.float64)

    def update(self, preds, target):
        self.total += (preds - target).abs().sum().to(torch.float64)
        self.count += target.numel()

    def compute(self):
        state = torch.stack([self.total, self.count])
        if self.sync and dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(state)
        return state[0] / state[1] if state[1] > 0 else torch.tensor(0.0, dtype=torch.float64)


distmetrics.register("MeanAbsoluteError", lambda p: MAE(sync=True), adapter="torchmetrics")
distmetrics.register("MeanAbsoluteError[no_sync]", lambda p: MAE(sync=False), adapter="torchmetrics")
distmetrics.register("MeanAbsoluteError[raises]", lambda p: MAE(sync=True), adapter="torchmetrics",
                     conventions={"no_data": "raise"})
'''

NO_DATA_SCENARIO = """description = "no sample anywhere: NotComputableError expected (test_conform_harness.py)"
deadline = 30
script = ["update rest", "compute"]

[metric]
name = "MeanAbsoluteError"

[data]
generator = "regression"
seed = 1242
num_samples = 0
batch_size = 4
dtype = "float64"

[variants]
world_sizes = [2]
backends = ["gloo"]
shards = ["even"]

[expect]
error = "NotComputableError"
compute = 1
"""


def run_conform(tmp_path, source, *args):
    report = tmp_path / "report.json"
    report.unlink(missing_ok=True)
    cmd = [os.environ["DISTMETRICS_BIN"], "conform", "--python", str(source), *map(str, args), "--deadline", "30",
           "--json", str(report)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=180)
    return run, json.loads(report.read_text()) if report.exists() else None


def test_several_registrations_of_one_reference_name_run_side_by_side_and_metric_selects_one(tmp_path):
    """One source registers MeanAbsoluteError twice more as MeanAbsoluteError[VARIANT]: every one
    runs the reference's scenarios, judged by the reference, each as its own row; --metric picks one."""
    source = tmp_path / "two_of_one_name.py"
    source.write_text(TWO_OF_ONE_NAME)
    scenario = ROOT / "examples" / "python" / "scenarios" / "mean_absolute_error.toml"
    run, data = run_conform(tmp_path, source, "--metric", "MeanAbsoluteError", "--metric", "MeanAbsoluteError[no_sync]",
                            scenario, "--world-sizes", "2", "--shard", "even")
    assert run.returncode == 1, run.stdout + run.stderr
    got = sorted((v["metric"], v["outcome"]) for v in data["variants"])
    assert got == [("MeanAbsoluteError", "pass"), ("MeanAbsoluteError[no_sync]", "fail")], got
    failed = next(v for v in data["variants"] if v["outcome"] == "fail")
    assert failed["reason"].startswith("root cause: no sync"), failed["reason"]
    assert "agrees_with_reference" in [p["name"] for p in failed["properties"] if p["outcome"] == "fail"]
    assert "--metric 'MeanAbsoluteError[no_sync]'" in failed["reproduce"], failed["reproduce"]
    # --metric selects one registration alone.
    run, data = run_conform(tmp_path, source, "--metric", "MeanAbsoluteError[no_sync]", scenario, "--world-sizes", "2",
                            "--shard", "even")
    assert run.returncode == 1, run.stdout + run.stderr
    assert [(v["metric"], v["outcome"]) for v in data["variants"]] == [("MeanAbsoluteError[no_sync]", "fail")]


def test_a_declared_no_data_value_meets_an_expected_not_computable_error(tmp_path):
    """No sample anywhere, NotComputableError expected: a metric that declares no_data = "zero" (the
    torchmetrics adapter's convention) and returns 0 on every rank and in the single process
    passes; the same metric declaring no_data = "raise" fails expected_error."""
    source = tmp_path / "two_of_one_name.py"
    source.write_text(TWO_OF_ONE_NAME)
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "no_data_anywhere.toml").write_text(NO_DATA_SCENARIO)
    run, data = run_conform(tmp_path, source, "--metric", "MeanAbsoluteError", "--metric", "MeanAbsoluteError[raises]",
                            scenarios)
    assert run.returncode == 1, run.stdout + run.stderr
    by = {v["metric"]: v for v in data["variants"]}
    assert by["MeanAbsoluteError"]["outcome"] == "pass", by["MeanAbsoluteError"]
    held = next(p for p in by["MeanAbsoluteError"]["properties"] if p["name"] == "expected_error")
    assert "declared convention (no data anywhere: compute() returns zero" in held["message"], held["message"]
    against = next(p for p in by["MeanAbsoluteError"]["properties"] if p["name"] == "agrees_with_reference")
    assert against["outcome"] == "skip" and "the reference raises NotComputableError where the metric declares" \
        in against["message"], against["message"]
    assert by["MeanAbsoluteError[raises]"]["outcome"] == "fail"
    failed = next(p for p in by["MeanAbsoluteError[raises]"]["properties"] if p["name"] == "expected_error")
    assert failed["outcome"] == "fail" and "<- expected NotComputableError" in failed["message"], failed["message"]


FLOAT32_SUMS = '''
import torch
import torch.distributed as dist
import distmetrics


class Float32MAE:
    """Sums in float32 tensors (as Ignite's MeanAbsoluteError does) and divides them as Python
    floats, so its value is a double that cannot show it was computed in float32."""

    def __init__(self):
        self.reset()

    def reset(self):
        self.total = torch.tensor(0.0, dtype=torch.float32)
        self.count = torch.tensor(0.0, dtype=torch.float32)

    def update(self, preds, target):
        self.total += (preds - target).abs().sum().to(torch.float32)
        self.count += target.numel()

    def compute(self):
        state = torch.stack([self.total, self.count])
        if dist.is_initialized() and dist.get_world_size() > 1:
            dist.all_reduce(state)
        return float(state[0].item()) / float(state[1].item())


distmetrics.register("MeanAbsoluteError[undeclared]", lambda p: Float32MAE(), adapter="torchmetrics")
distmetrics.register("MeanAbsoluteError[float32]", lambda p: Float32MAE(), adapter="torchmetrics",
                     conventions={"precision": "float32"})
'''

TIGHT_SCENARIO = """description = "float64 data, float64 tolerance (test_conform_harness.py)"
deadline = 30

[metric]
name = "MeanAbsoluteError"

[data]
generator = "regression"
params = { dims = 3, noise = 0.7 }
seed = 3202
num_samples = 400
batch_size = 7
dtype = "float64"

[tolerance]
rtol = 1e-12
atol = 0.0

[variants]
world_sizes = [1, 2]
backends = ["gloo"]
shards = ["uneven"]
"""


def test_a_declared_float32_precision_is_judged_within_float32_rounding(tmp_path):
    """The same float32-summing metric twice: undeclared, its float32 rounding (~1e-7 relative)
    fails the scenario's float64 tolerance against the float64 reference (agrees_with_reference);
    declaring precision = "float32" (as the Ignite mapping does for MeanAbsoluteError) judges it
    within float32 rounding, and every variant passes."""
    source = tmp_path / "float32_sums.py"
    source.write_text(FLOAT32_SUMS)
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "tight.toml").write_text(TIGHT_SCENARIO)
    run, data = run_conform(tmp_path, source, scenarios)
    assert run.returncode == 1, run.stdout + run.stderr
    by = {}
    for v in data["variants"]:
        by.setdefault(v["metric"], []).append(v)
    assert sorted(by) == ["MeanAbsoluteError[float32]", "MeanAbsoluteError[undeclared]"], sorted(by)
    assert [v["outcome"] for v in by["MeanAbsoluteError[float32]"]] == ["pass", "pass"], by["MeanAbsoluteError[float32]"]
    for v in by["MeanAbsoluteError[undeclared]"]:
        assert v["outcome"] == "fail", v
        failed = [p["name"] for p in v["properties"] if p["outcome"] == "fail"]
        assert "agrees_with_reference" in failed, failed
        assert v["tolerance"]["rtol"] == 1e-12, v["tolerance"]
    for v in by["MeanAbsoluteError[float32]"]:
        assert v["tolerance"]["rtol"] > 1e-8, v["tolerance"]  # widened to float32 rounding
