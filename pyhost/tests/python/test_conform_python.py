"""`distmetrics conform --python` end to end, through the real CLI and its rank workers: the
correct examples in the three styles pass, each broken example is flagged with the right
property or outcome and the rank to blame, bad sources are exit 2 before any variant runs, and
a Python metric's exceptions, endless loops and missing backends are reported as such.
DISTMETRICS_BIN is the CLI under test (ctest sets it)."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = ROOT / "examples" / "python"
SCENARIOS = EXAMPLES / "scenarios"
MAE = SCENARIOS / "mean_absolute_error.toml"
MAX = SCENARIOS / "maximum_absolute_error.toml"
SOURCES = Path(__file__).resolve().parent / "sources"
BACKENDS = Path(__file__).resolve().parents[1] / "scenarios" / "python_backends.toml"


def conform(tmp_path, source, *args, timeout=150):
    report = tmp_path / "report.json"
    cmd = [os.environ["DISTMETRICS_BIN"], "conform", "--python", str(source), *map(str, args), "--json", str(report)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=timeout)
    data = json.loads(report.read_text()) if report.exists() else None
    return run, data


def outcomes(data):
    return {v["id"]: v["outcome"] for v in data["variants"]}


def prop(variant, name):
    return next(p for p in variant["properties"] if p["name"] == name)


def test_correct_torchmetrics_style_passes_every_variant_at_world_sizes_1_2_4(tmp_path):
    run, data = conform(tmp_path, EXAMPLES / "correct_torchmetrics.py", SCENARIOS)
    assert run.returncode == 0, run.stdout + run.stderr
    assert data["summary"]["pass"] == data["summary"]["total"] == 16
    assert {v["world_size"] for v in data["variants"]} == {1, 2, 4}
    for v in data["variants"]:
        assert prop(v, "agrees_with_reference")["outcome"] == "pass", v["id"]
        assert prop(v, "idempotent")["outcome"] == "pass", v["id"]  # with a state digest from metric_state


@pytest.mark.parametrize("example", ["correct_ignite.py", "correct_torcheval.py"])
def test_correct_ignite_and_torcheval_styles_pass(tmp_path, example):
    run, data = conform(tmp_path, EXAMPLES / example, MAE, "--world-sizes", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    assert data["summary"]["pass"] == data["summary"]["total"] == 3


def test_no_sync_fails_equal_to_single_and_the_reference(tmp_path):
    run, data = conform(tmp_path, EXAMPLES / "broken" / "no_sync.py", MAE, "--world-sizes", "1,2", "--shard", "even")
    assert run.returncode == 1, run.stdout + run.stderr
    ws1, ws2 = sorted(data["variants"], key=lambda v: v["world_size"])
    assert ws1["outcome"] == "pass"  # one process: nothing to sync
    assert ws2["outcome"] == "fail"
    for name in ("equal_to_single", "agrees_with_reference"):
        assert prop(ws2, name)["outcome"] == "fail"
    assert "--python" in ws2["reproduce"] and "no_sync.py" in ws2["reproduce"]


def test_sync_overwriting_local_state_fails_idempotence_and_update_after_compute(tmp_path):
    run, data = conform(tmp_path, EXAMPLES / "broken" / "sync_overwrites_state.py", MAE, "--world-sizes", "2",
                        "--shard", "even")
    assert run.returncode == 1, run.stdout + run.stderr
    (v,) = data["variants"]
    assert prop(v, "idempotent")["outcome"] == "fail"
    assert prop(v, "update_after_compute")["outcome"] == "fail"


def test_sum_for_max_fails_equal_to_single(tmp_path):
    run, data = conform(tmp_path, EXAMPLES / "broken" / "sum_for_max.py", MAX, "--world-sizes", "2", "--shard", "even")
    assert run.returncode == 1, run.stdout + run.stderr
    (v,) = data["variants"]
    single = prop(v, "equal_to_single")
    assert single["outcome"] == "fail"
    assert single["ranks"][0] > single["single"]  # the sum of the two ranks' maxima


def test_a_rank_raising_alone_on_empty_data_is_a_hang_blamed_on_it(tmp_path):
    run, data = conform(tmp_path, EXAMPLES / "broken" / "raises_alone_on_empty.py", MAE, "--world-sizes", "2",
                        "--shard", "empty_rank", "--deadline", "4")
    assert run.returncode == 3, run.stdout + run.stderr
    (v,) = data["variants"]
    assert v["outcome"] == "hang"
    assert v["reason"].startswith(
        "rank 1 to blame: rank 1 raised NotComputableError at compute (script step 2): MeanAbsoluteError must have "
        "at least one example before it can be computed. (Python traceback, innermost last: "), v["reason"]
    assert "raises_alone_on_empty.py:33 in compute" in v["reason"]
    # Its sequence number: #0, or #2 where PyTorch-Ignite is installed (the ignite adapter's setup
    # makes idist's group state on every rank: an all_gather and an all_reduce).
    assert re.search(r"rank 0 waited in dist\.all_reduce\(sum\) #[02] \(float64 \[2\]\)", v["diagnosis"]), v["diagnosis"]


def test_one_collective_per_list_element_is_a_hang_naming_both_ranks_and_who_did_more(tmp_path):
    # Computes 1 and 2 agree (3 elements on each rank); in compute 3 rank 0 has more elements than
    # rank 1, so more gathers: one rank on each side, and no other compute tells which sequence is
    # the metric's, so neither is blamed (issue 26).
    run, data = conform(tmp_path, EXAMPLES / "broken" / "collective_per_element.py", MAE, "--world-sizes", "2",
                        "--shard", "uneven", "--deadline", "4")
    assert run.returncode == 3, run.stdout + run.stderr
    (v,) = data["variants"]
    assert v["outcome"] == "hang"
    assert v["reason"].startswith("ranks split evenly over compute 3 (script step 7): rank 0 issued dist.all_gather #"), v["reason"]
    assert "(rank 0 did more: " in v["diagnosis"] and "neither side is blamed" in v["diagnosis"], v["diagnosis"]
    assert "rank 1 finished its task" in v["diagnosis"], v["diagnosis"]


def test_python_exceptions_endless_loops_and_missing_backends(tmp_path):
    source = SOURCES / "misbehaving.py"
    run, data = conform(tmp_path, source, BACKENDS, "--world-sizes", "2", "--shard", "even", "--deadline", "4")
    assert run.returncode == 1, run.stdout + run.stderr
    by_backend = {v["backend"]: v for v in data["variants"]}
    assert by_backend["mpi"]["outcome"] == "skip"
    assert "torch.distributed in this Python has no mpi process group" in by_backend["mpi"]["reason"]
    # ValueError on every rank (and in the single-process run): type, message and the last frames
    messages = " ".join(p["message"] for p in by_backend["gloo"]["properties"])
    assert ("raised ValueError: shape mismatch [3] vs [4] (Python traceback, innermost last: "
            f"{source}:18 in compute; misbehaving.py:22 in _check_shapes)") in messages, messages

    run, data = conform(tmp_path, source, MAX, "--world-sizes", "2", "--shard", "even", "--deadline", "3")
    assert run.returncode == 3, run.stdout + run.stderr
    (v,) = data["variants"]
    assert v["outcome"] == "hang"
    assert v["reason"].startswith(
        "rank 1 to blame: rank 1 never entered dist.all_reduce(sum) #0 (float64 []) that rank 0 was waiting in; rank 1 "
        "was still running its task outside any collective after 0 collectives"), v["reason"]


def test_mismatched_contributions_to_one_collective_name_the_odd_rank_out(tmp_path):
    run, data = conform(tmp_path, SOURCES / "mismatched_contribution.py", MAE, "--world-sizes", "2",
                        "--shard", "empty_rank", "--deadline", "3")
    assert run.returncode == 3, run.stdout + run.stderr
    (v,) = data["variants"]
    assert v["outcome"] == "hang"
    # Gloo may let the smaller contribution return (rank 1 then moves on: "ranks disagree") or
    # keep both ranks inside #0 ("mismatched collective"); either way both contributions and the
    # odd rank are named.
    assert v["reason"].startswith(("rank 1 to blame: ranks disagree at #0: rank 0 issued dist.all_reduce(sum) "
                                   "(float64 [5]), rank 1 issued dist.all_reduce(sum) (int64 []). Rank 1 is blamed.",
                                   "rank 1 to blame: mismatched collective #0: every rank entered it and none is "
                                   "missing, but rank 1 issued dist.all_reduce(sum) (int64 []) where rank 0 issued "
                                   "dist.all_reduce(sum) (float64 [5]). Rank 1 is the odd one out")), v["reason"]


def test_world_sizes_2_and_3_on_gloo_and_mpi_skipped(tmp_path):
    run, data = conform(tmp_path, EXAMPLES / "correct_torchmetrics.py", BACKENDS, "--world-sizes", "2,3")
    assert run.returncode == 0, run.stdout + run.stderr
    got = sorted((v["backend"], v["world_size"], v["shard"], v["outcome"]) for v in data["variants"])
    assert got == [("gloo", 2, "empty_rank", "pass"), ("gloo", 2, "even", "pass"),
                   ("gloo", 3, "empty_rank", "pass"), ("gloo", 3, "even", "pass"),
                   ("mpi", 2, "empty_rank", "skip"), ("mpi", 2, "even", "skip"),
                   ("mpi", 3, "empty_rank", "skip"), ("mpi", 3, "even", "skip")]


@pytest.mark.parametrize("source, message", [
    ("no_such_file.py", "no such file"),
    (str(SOURCES / "misbehaving.py") + ":nothing_here", "has no factory 'nothing_here'"),
    ("json:loads", "name the metric the factory makes with --metric NAME"),
])
def test_a_source_that_cannot_be_used_is_exit_2_before_any_variant(tmp_path, source, message):
    run, data = conform(tmp_path, source, MAE, timeout=60)
    assert run.returncode == 2, run.stdout + run.stderr
    assert message in run.stderr, run.stderr
    assert data is None and "PASS" not in run.stdout


def test_an_import_error_and_a_wrong_update_signature_are_exit_2(tmp_path):
    bad_import = tmp_path / "bad_import.py"
    bad_import.write_text("import not_a_module_anywhere\n")
    run, _ = conform(tmp_path, bad_import, MAE, timeout=60)
    assert run.returncode == 2 and "ModuleNotFoundError: No module named 'not_a_module_anywhere'" in run.stderr, run.stderr
    wrong = tmp_path / "wrong_update.py"
    wrong.write_text("import distmetrics\n"
                     "class M:\n"
                     "    def update(self, output): pass\n"
                     "    def compute(self): return 0.0\n"
                     "    def reset(self): pass\n"
                     "distmetrics.register('MeanAbsoluteError', lambda p: M(), adapter='torchmetrics')\n")
    run, _ = conform(tmp_path, wrong, MAE, timeout=60)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "the torchmetrics adapter calls update(preds, target); M.update(output) does not" in run.stderr, run.stderr


def test_the_pytest_option_runs_a_python_metric_on_the_scenarios(tmp_path):
    """`pytest --distmetrics-python SOURCE`: each variant through `conform --python`; scenarios of
    metrics the source lacks are skipped."""
    import sys
    # The repository's conftest.py loads the plugin (pytest runs from the root).
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rs",
           "--scenario-dir", str(SCENARIOS), "--distmetrics-bin", os.environ["DISTMETRICS_BIN"],
           "--distmetrics-python", str(EXAMPLES / "broken" / "sum_for_max.py"), "--world-sizes", "2",
           "-k", "even and not uneven", f"--basetemp={tmp_path / 'inner'}", str(SCENARIOS)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=150)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 skipped" in done.stdout, done.stdout
    assert "provides no metric for this scenario" in done.stdout
    assert "equal_to_single" in done.stdout


STATE_SCENARIO = Path(__file__).resolve().parents[1] / "scenarios" / "python_state_roundtrip.toml"


@pytest.mark.parametrize("forget_total", [False, True])
def test_state_roundtrip_through_state_dict_and_load_state_dict(tmp_path, monkeypatch, forget_total):
    monkeypatch.setenv("DISTMETRICS_TEST_FORGET_TOTAL", "1" if forget_total else "0")
    run, data = conform(tmp_path, SOURCES / "state_dict_mae.py", STATE_SCENARIO)
    (v,) = data["variants"]
    trip, merge = prop(v, "state_roundtrip"), prop(v, "merge_state")
    # Without merge_state(metrics) a Python metric's merge is skipped, with the reason.
    assert merge["outcome"] == "skip"
    assert "cannot merge saved states" in merge["message"]
    assert prop(v, "equal_to_single")["outcome"] == "pass"
    if not forget_total:
        assert run.returncode == 0, run.stdout + run.stderr
        assert trip["outcome"] == "pass", trip["message"]
        assert "held at compute 1, 2, 3, 4 on all 2 rank(s)" in trip["message"]
    else:
        assert run.returncode == 1, run.stdout + run.stderr
        assert trip["outcome"] == "fail", trip["message"]
        # The restored count starts from zero: at compute 1 nothing was fed since the save, so
        # the restored instance divides by zero (inf) where the original gives the MAE.
        assert "state_roundtrip failed at compute 1 of 4" in trip["message"]
        for rank in (0, 1):
            assert f"rank {rank}: inf   (the original: " in trip["message"], trip["message"]


@pytest.mark.parametrize("forgets_own", [False, True])
def test_merge_state_of_a_torcheval_style_metric_merges_fresh_instances_and_computes_alone(tmp_path, monkeypatch,
                                                                                         forgets_own):
    monkeypatch.setenv("DISTMETRICS_TEST_MERGE_FORGETS_OWN", "1" if forgets_own else "0")
    scenario = tmp_path / "totals.toml"  # sums and counts: a merge that synced again would double them
    scenario.write_text(STATE_SCENARIO.read_text().replace('"MeanAbsoluteError"', '"AbsoluteErrorTotals"'))
    run, data = conform(tmp_path, SOURCES / "merge_state_mae.py", scenario)
    (v,) = data["variants"]
    merge = prop(v, "merge_state")
    assert prop(v, "state_roundtrip")["outcome"] == "pass", prop(v, "state_roundtrip")["message"]
    if not forgets_own:
        # The merging instance's compute() did not sync with the ranks' (that would double the sum
        # and the count): it equals the distributed result at every compute.
        assert run.returncode == 0, run.stdout + run.stderr
        assert merge["outcome"] == "pass", merge["message"]
        assert "held at compute 1, 2, 3, 4 on all 2 rank(s)" in merge["message"]
    else:
        assert run.returncode == 1, run.stdout + run.stderr
        assert merge["outcome"] == "fail", merge["message"]
        assert prop(v, "equal_to_single")["outcome"] == "pass"
        # Rank 0's state is lost: the merged value is the other rank's alone.
        assert "merge_state failed at compute 1 of 4" in merge["message"], merge["message"]


def test_a_rank_slow_to_make_its_group_meets_peers_that_made_it_and_went_on(tmp_path, monkeypatch):
    """docs/peers.md, "Harness limitations seen": rank 0 sleeps right after publishing its Gloo
    address, its peers finish making the group without it and go on to their first compute, where
    state_roundtrip makes its restored instance. That instance used to make a second group, which
    destroyed the first on the fast ranks while rank 0 was still connecting to it: rank 0 raised
    "Gloo connectFullMesh failed ... Connection closed by peer" and its peers, their second group
    never formed, computed with no group at all (0 collectives). The instance joins the variant's
    group instead: one group per rank and variant, every compute on a group of 3. The source makes
    the group of Python's own (the fallback route: a handed-over C++ group has no rendezvous to be
    slow in)."""
    log = tmp_path / "groups.log"
    monkeypatch.setenv("DISTMETRICS_TEST_GROUP_LOG", str(log))
    monkeypatch.setenv("DISTMETRICS_TEST_SLOW_RANK", "0")
    monkeypatch.setenv("DISTMETRICS_TEST_SLOW_SECONDS", "0.5")
    scenario = tmp_path / "slow_group.toml"
    scenario.write_text(STATE_SCENARIO.read_text().replace("world_sizes = [2]", "world_sizes = [3]")
                        .replace('shards = ["uneven"]', 'shards = ["uneven", "empty_rank", "even"]')
                        .replace('"merge_state"]', '"ranks_agree"]'))
    run, data = conform(tmp_path, SOURCES / "slow_group_rank.py", scenario)
    assert outcomes(data) == {f"slow_group:gloo-ws3-{shard}-cpu": "pass" for shard in ("uneven", "empty_rank", "even")}, \
        run.stdout
    assert run.returncode == 0, run.stdout + run.stderr
    for v in data["variants"]:
        assert prop(v, "state_roundtrip")["outcome"] == "pass", prop(v, "state_roundtrip")["message"]
    lines = [line.split() for line in log.read_text().splitlines()]
    # One group per rank and variant, under the variant's first prefix (3 variants of 3 ranks),
    # whichever ranks happen to be listeners in gloo's pairs (what the outcomes above depend on).
    begun = [(int(rank), prefix, route) for kind, rank, prefix, route in (line for line in lines if line[0] == "begin")]
    assert sorted(begun) == [(rank, "python/0/", "own") for rank in range(3) for _ in range(3)], begun
    # Every rank's every compute (the original's and the restored instance's) saw the group of 3.
    seen = [(int(rank), int(world)) for kind, rank, world in (line for line in lines if line[0] == "compute") if int(rank) >= 0]
    assert seen and all(world == 3 for _, world in seen), seen


def test_a_python_metrics_variant_runs_on_the_variants_own_gloo_group(tmp_path, monkeypatch):
    """One group per variant (docs/performance.md): the variant's C++ Gloo group is handed to
    torch.distributed as its default group ("shared"), not a second one made beside it ("own").
    A library's sync on it (all_reduce, all_gather of per-rank sizes and of what they size, an
    all_gather_object, a barrier) agrees on every rank, in variant after variant of one worker
    pool, including a rank fed nothing."""
    log = tmp_path / "groups.log"
    monkeypatch.setenv("DISTMETRICS_TEST_GROUP_LOG", str(log))
    scenario = tmp_path / "group_route.toml"
    scenario.write_text(STATE_SCENARIO.read_text().replace("world_sizes = [2]", "world_sizes = [2, 3]")
                        .replace('shards = ["uneven"]', 'shards = ["uneven", "empty_rank"]')
                        .replace('"state_roundtrip", "merge_state"]', '"ranks_agree"]'))
    run, data = conform(tmp_path, SOURCES / "group_route_mae.py", scenario)
    ids = {f"group_route:gloo-ws{ws}-{shard}-cpu" for ws in (2, 3) for shard in ("uneven", "empty_rank")}
    assert outcomes(data) == {i: "pass" for i in ids}, run.stdout
    assert run.returncode == 0, run.stdout + run.stderr
    lines = [line.split() for line in log.read_text().splitlines()]
    assert lines and all(kind == "compute" for kind, *_ in lines), lines
    for _, rank, world, backend, route, routes in lines:
        assert backend == "gloo" and route == "shared" and routes == ",".join(["shared"] * int(world)), lines
    # Every rank of every variant computed (a compute per property run), on a group of its world size.
    assert {(int(world), int(rank)) for _, rank, world, *_ in lines} == {(ws, r) for ws in (2, 3) for r in range(ws)}


def test_a_python_metric_without_load_state_dict_skips_state_roundtrip_with_the_reason(tmp_path):
    run, data = conform(tmp_path, EXAMPLES / "correct_torcheval.py", STATE_SCENARIO)
    assert run.returncode == 0, run.stdout + run.stderr
    (v,) = data["variants"]
    trip = prop(v, "state_roundtrip")
    assert trip["outcome"] == "skip"
    assert trip["message"] == "state_roundtrip: not applicable: MeanAbsoluteError cannot save its state (Metric::save_state gives nothing)"


def test_the_html_header_names_the_torch_the_python_metric_ran_on(tmp_path):
    import torch  # the interpreter ctest runs this with is the one distmetrics embeds (DISTMETRICS_PYTHON)
    html = tmp_path / "report.html"
    run, data = conform(tmp_path, EXAMPLES / "correct_ignite.py", MAE, "--world-sizes", "1", "--html", html)
    assert run.returncode == 0, run.stdout + run.stderr
    page = html.read_text()
    assert f"<dt>Python torch</dt><dd>{torch.__version__}</dd>" in page, page[:3000]
    assert "<dd></dd>" not in page, "an empty header row"
    assert "plugin LibTorch" not in page  # a Python source is no shared library built against one
    assert data["plugin"]["torch_version"] == torch.__version__


def test_workers_are_forked_with_the_sources_imported_whatever_thread_pools_the_environment_asks_for(tmp_path):
    # A many-core machine's environment: numpy's OpenBLAS would start threads as it loads, and a
    # process with threads cannot fork its rank workers from the zygote.
    log = tmp_path / "imports.log"
    env = dict(os.environ, OPENBLAS_NUM_THREADS="4", OMP_NUM_THREADS="4", MKL_NUM_THREADS="4",
               DISTMETRICS_TEST_IMPORT_LOG=str(log))
    report = tmp_path / "report.json"
    cmd = [os.environ["DISTMETRICS_BIN"], "conform", "--python", str(SOURCES / "blas_at_import.py"), str(MAE),
           "--world-sizes", "2,4", "--shard", "even", "--json", str(report)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=150, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "cannot be forked" not in run.stdout + run.stderr
    data = json.loads(report.read_text())
    assert data["summary"]["pass"] == data["summary"]["total"] == 2
    # Imported once, by the supervisor: every rank worker (2 + 4) and the single-process helper
    # was forked with the module in it. A worker that imported it itself would add its pid.
    assert len(log.read_text().split()) == 1, log.read_text()


def test_workers_are_forked_with_the_sources_imported_after_a_tokenizer_encoded_a_batch(tmp_path):
    # Hugging Face tokenizers start a rayon pool (a thread per core) at a batch encode unless
    # TOKENIZERS_PARALLELISM says false, which the supervisor holds whatever the environment says.
    pytest.importorskip("tokenizers")
    log = tmp_path / "imports.log"
    env = dict(os.environ, TOKENIZERS_PARALLELISM="true", DISTMETRICS_TEST_IMPORT_LOG=str(log))
    report = tmp_path / "report.json"
    cmd = [os.environ["DISTMETRICS_BIN"], "conform", "--python", str(SOURCES / "tokenizer_at_import.py"), str(MAE),
           "--world-sizes", "2", "--shard", "even", "--json", str(report)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=150, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "cannot be forked" not in run.stdout + run.stderr
    assert json.loads(report.read_text())["summary"]["pass"] == 1
    assert len(log.read_text().split()) == 1, log.read_text()  # imported once, by the supervisor


def test_no_rank_worker_looks_the_backends_up_in_the_entry_points_again(tmp_path):
    # torch.distributed's first init_process_group in a process reads every installed
    # distribution's entry points (50-70 ms in a freshly forked rank, each time the pool restarts);
    # the supervisor does it once before the workers are forked from it.
    log = tmp_path / "entry_points.log"
    env = dict(os.environ, DISTMETRICS_TEST_ENTRY_POINTS_LOG=str(log))
    report = tmp_path / "report.json"
    cmd = [os.environ["DISTMETRICS_BIN"], "conform", "--python", str(SOURCES / "entry_points_watch.py"), str(MAE),
           "--world-sizes", "2,4", "--shard", "even", "--json", str(report)]
    run = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=150, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    data = json.loads(report.read_text())
    assert data["summary"]["pass"] == data["summary"]["total"] == 2
    lines = [line.split() for line in log.read_text().splitlines()]
    (supervisor,) = {pid for kind, pid in lines if kind == "import"}  # imported once, by the supervisor
    scans = {pid for kind, pid in lines if kind == "scan"}
    assert scans <= {supervisor}, lines  # a rank worker that scanned adds its own pid
    import torch.distributed as dist  # the interpreter ctest runs this with is the one distmetrics embeds
    if hasattr(dist.Backend, "_ensure_backend_registered"):
        assert scans == {supervisor}, lines  # this torch looks them up: the supervisor did
    assert "cannot be forked" not in run.stdout + run.stderr


def test_a_metric_with_no_reference_counterpart_runs_under_its_own_name(tmp_path):
    """docs/python.md's example: MeanBias is no reference metric; registered under its own name it
    runs the scenario that names it, judged against its own single-process run by every property
    that needs no independent value (agrees_with_reference: skipped, there is nothing to agree with)."""
    own = EXAMPLES / "own_name"
    run, data = conform(tmp_path, own / "mean_bias.py", own / "mean_bias.toml")
    assert run.returncode == 0, run.stdout + run.stderr
    assert {v["metric"] for v in data["variants"]} == {"MeanBias"}
    assert sorted((v["world_size"], v["shard"]) for v in data["variants"]) == [(2, "empty_rank"), (2, "uneven")]
    for v in data["variants"]:
        for name in ("equal_to_single", "ranks_agree", "idempotent", "update_after_compute", "reset_replay",
                     "batch_invariant", "state_roundtrip", "accepts_empty_batch"):
            assert prop(v, name)["outcome"] == "pass", (v["id"], name, prop(v, name)["message"])
        assert prop(v, "agrees_with_reference")["outcome"] == "skip"
