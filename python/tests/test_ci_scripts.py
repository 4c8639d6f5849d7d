"""ci/run_2gpu.sh (and the other CI entry points) without GPUs: argument handling, the GPU check
and its skip path, LibTorch discovery, and the commands they would run. nvidia-smi, the python
probe and the runner are fakes on a PATH that holds nothing else of the machine's."""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO_ROOT

SCRIPT = REPO_ROOT / "ci" / "run_2gpu.sh"
TOOLS = ["bash", "sh", "grep", "tr", "nproc", "dirname", "cat", "mkdir", "timeout", "env"]

FAKE_NVIDIA_SMI = """#!/bin/sh
[ "$FAKE_GPUS" = fail ] && { echo "NVIDIA-SMI has failed: no driver" >&2; exit 9; }
i=0; while [ "$i" -lt "$FAKE_GPUS" ]; do echo "$i"; i=$((i+1)); done
"""
# Answers the two probes of run_2gpu.sh: the GPU count and the LibTorch CMake prefix.
FAKE_PYTHON = """#!/bin/sh
case "$*" in
  *device_count*) [ -n "$FAKE_TORCH_GPUS" ] && echo "$FAKE_TORCH_GPUS" && exit 0 ;;
  *cmake_prefix_path*)
    [ -n "$FAKE_TORCH_PREFIX" ] && printf '%s\\n%s\\n%s\\n' "$FAKE_TORCH_PREFIX" \\
      "$FAKE_TORCH_CUDA" 2.5.1 && exit 0 ;;
esac
echo "ModuleNotFoundError: No module named 'torch'" >&2
exit 1
"""
# A stand-in runner: records its arguments; exits with $FAKE_EXIT_<backend>.
FAKE_RUNNER = """#!/bin/sh
echo "$*" >> "$FAKE_RUNNER_LOG"
case "$*" in *"--backend nccl"*) exit "${FAKE_EXIT_nccl:-0}" ;; esac
exit "${FAKE_EXIT_gloo:-0}"
"""


def executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)
    return path


class Machine:
    """A PATH with the few tools the scripts need, optional fake nvidia-smi, a fake python."""

    def __init__(self, tmp_path: Path):
        self.tmp = tmp_path
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        for tool in TOOLS:
            found = shutil.which(tool)
            assert found, f"{tool} is needed by the test"
            (self.bin / tool).symlink_to(found)
        self.python = executable(tmp_path / "python", FAKE_PYTHON)
        self.env = {"PATH": str(self.bin), "PYTHON": str(self.python), "HOME": str(tmp_path),
                    "FAKE_TORCH_PREFIX": "/opt/torch/share/cmake", "FAKE_TORCH_CUDA": "12.4",
                    "FAKE_RUNNER_LOG": str(tmp_path / "runner.log")}

    def gpus(self, count):
        executable(self.bin / "nvidia-smi", FAKE_NVIDIA_SMI)
        self.env["FAKE_GPUS"] = str(count)

    def run(self, *args, script=SCRIPT, **env):
        done = subprocess.run(["bash", str(script), *args], cwd=self.tmp, capture_output=True,
                              text=True, timeout=60, env={**self.env, **env})
        return done.returncode, done.stdout + done.stderr

    def commands(self, output):
        return [line[2:] for line in output.splitlines() if line.startswith("+ ")]


@pytest.fixture
def machine(tmp_path):
    return Machine(tmp_path)


def test_help(machine):
    code, out = machine.run("--help")
    assert code == 0
    assert out.startswith("Usage: ci/run_2gpu.sh")
    assert "77 skipped: fewer GPUs than --min-gpus" in out


@pytest.mark.parametrize("args, message", [
    (["--frobnicate"], "unknown argument '--frobnicate' (see --help)"),
    (["--build-dir"], "--build-dir needs a value"),
    (["--min-gpus", "two"], "--min-gpus wants a positive whole number, got 'two'"),
    (["--min-gpus", "0"], "--min-gpus wants a positive whole number, got '0'"),
])
def test_bad_arguments_exit_2_with_a_message(machine, args, message):
    machine.gpus(2)
    code, out = machine.run(*args)
    assert code == 2
    assert f"[run_2gpu] error: {message}" in out
    assert "+ " not in out


@pytest.mark.parametrize("setup, found", [
    ({"gpus": 1}, "found 1 GPU(s) (nvidia-smi)"),
    ({"gpus": "fail"}, "found 0 GPU(s) (nvidia-smi, which found no GPU or no driver)"),
    ({"FAKE_TORCH_GPUS": "1"}, "found 1 GPU(s) (torch.cuda.device_count() of "),
    ({}, "found 0 GPU(s) (no nvidia-smi, and "),
    ({"gpus": 2, "CUDA_VISIBLE_DEVICES": "1"},
     "found 1 GPU(s) (nvidia-smi; CUDA_VISIBLE_DEVICES='1')"),
    ({"gpus": 2, "CUDA_VISIBLE_DEVICES": ""}, "found 0 GPU(s) (nvidia-smi; CUDA_VISIBLE_DEVICES='')"),
])
def test_fewer_than_two_gpus_is_a_skip_with_exit_77(machine, setup, found):
    setup = dict(setup)
    if "gpus" in setup:
        machine.gpus(setup.pop("gpus"))
    code, out = machine.run(**setup)
    assert code == 77, out
    assert f"[run_2gpu] SKIP: {found}" in out
    assert "this job needs at least 2." in out
    assert "'ci/run_2gpu.sh --min-gpus 1'" in out
    assert "Nothing was run: exit code 77 (skipped)." in out
    assert machine.commands(out) == []
    # A dry run prints what it would run there, then says it would skip.
    code, out = machine.run("--dry-run", **setup)
    assert code == 77, out
    assert [c.split(" run scenarios ")[-1].split(" --json")[0]
            for c in machine.commands(out) if " run scenarios " in c] == [
        "--backend nccl --world-sizes 1,2",
        "--backend gloo --world-sizes 2 --placement cuda,cuda0,cpu_state_cuda_input,mixed"]
    assert out.rstrip().endswith("[run_2gpu] dry run: on this machine the commands above would "
                                 "not run: exit code 77 (skipped).")
    assert f"[run_2gpu] SKIP: {found}" in out


def test_two_gpus_dry_run_prints_the_build_and_both_runs(machine):
    machine.gpus(2)
    code, out = machine.run("--dry-run")
    assert code == 0, out
    assert "[run_2gpu] found 2 GPU(s) (nvidia-smi)" in out
    assert "LibTorch: torch 2.5.1 (CUDA 12.4) of" in out
    root = str(REPO_ROOT)
    assert machine.commands(out) == [
        f"cmake -S {root} -B build-2gpu -G Ninja -DCMAKE_BUILD_TYPE=Release "
        f"-DDISTMETRICS_WITH_NCCL=ON -DDISTMETRICS_TORCH=pip -DDISTMETRICS_PYTHON={machine.python} "
        "-DDISTMETRICS_BUILD_TESTS=OFF",
        "cmake --build build-2gpu -j " + str(os.cpu_count()) + " --target distmetrics",
        "timeout --kill-after=30 3000 build-2gpu/bin/distmetrics run scenarios --backend nccl "
        "--world-sizes 2 --json build-2gpu/reports/2gpu-nccl.json "
        "--junit build-2gpu/reports/2gpu-nccl.xml",
        "timeout --kill-after=30 3000 build-2gpu/bin/distmetrics run scenarios --backend gloo "
        "--world-sizes 2 --placement cuda,cuda0,cpu_state_cuda_input,mixed "
        "--json build-2gpu/reports/2gpu-gloo-cuda.json "
        "--junit build-2gpu/reports/2gpu-gloo-cuda.xml"]
    assert "dry run: nothing was built or run" in out
    assert not (machine.tmp / "build-2gpu").exists()


def test_torch_dir_deps_dir_folders_tests_and_extra_run_arguments(machine):
    machine.gpus(2)
    torch_dir = machine.tmp / "libtorch" / "share" / "cmake" / "Torch"
    torch_dir.mkdir(parents=True)
    (torch_dir / "TorchConfig.cmake").write_text("# a LibTorch\n")
    code, out = machine.run("--dry-run", "--deps-dir", "/deps", "--build-dir", "b2",
                            "--reports-dir", "/r", "--with-tests", "--", "--deadline", "5",
                            Torch_DIR=str(torch_dir), JOBS="3")
    assert code == 0, out
    commands = machine.commands(out)
    assert commands[0].endswith(" -B b2 -G Ninja -DCMAKE_BUILD_TYPE=Release "
                                f"-DDISTMETRICS_WITH_NCCL=ON -DTorch_DIR={torch_dir} "
                                "-DDISTMETRICS_DEPS_DIR=/deps -DDISTMETRICS_BUILD_TESTS=ON")
    assert commands[1] == "cmake --build b2 -j 3"
    assert commands[2] == "ctest --test-dir b2 --output-on-failure -j 3"
    assert commands[3].endswith("b2/bin/distmetrics run scenarios --backend nccl "
                                "--world-sizes 2 --deadline 5 --json /r/2gpu-nccl.json "
                                "--junit /r/2gpu-nccl.xml")
    assert "--deadline 5 --json /r/2gpu-gloo-cuda.json" in commands[4]


@pytest.mark.parametrize("make, message", [
    (None, "no such folder"),
    ("empty", "holds no TorchConfig.cmake"),
])
def test_a_torch_dir_that_is_no_libtorch_is_a_setup_failure(machine, make, message):
    machine.gpus(2)
    torch_dir = machine.tmp / "torch"
    if make:
        torch_dir.mkdir()
    code, out = machine.run("--dry-run", "--torch-dir", str(torch_dir))
    assert code == 5, out
    assert f"--torch-dir/Torch_DIR {torch_dir}" in out and message in out
    assert "LibTorch: " not in out  # never reported as found
    assert machine.commands(out) == []


def test_plugin_runs_conform_on_the_gpus(machine):
    machine.gpus(2)
    plugin = machine.tmp / "libmine.so"
    code, out = machine.run("--dry-run", "--plugin", str(plugin))
    assert code == 2 and f"--plugin {plugin}: no such file" in out
    plugin.write_bytes(b"\x7fELF")
    code, out = machine.run("--dry-run", "--plugin", str(plugin), "--skip-build")
    assert code == 0, out
    conform = [c for c in machine.commands(out) if " conform " in c]
    assert conform == [
        f"timeout --kill-after=30 3000 build-2gpu/bin/distmetrics conform --plugin {plugin} "
        "scenarios --backend nccl --world-sizes 2 --json build-2gpu/reports/2gpu-conform-nccl.json "
        "--junit build-2gpu/reports/2gpu-conform-nccl.xml",
        f"timeout --kill-after=30 3000 build-2gpu/bin/distmetrics conform --plugin {plugin} "
        "scenarios --backend gloo --world-sizes 2 --placement cuda,cuda0,cpu_state_cuda_input,mixed "
        "--json build-2gpu/reports/2gpu-conform-gloo-cuda.json "
        "--junit build-2gpu/reports/2gpu-conform-gloo-cuda.xml"]


def test_python_source_runs_conform_on_the_gpus(machine):
    machine.gpus(2)
    source = machine.tmp / "my_metrics.py"
    code, out = machine.run("--dry-run", "--python", f"{source}:make", "--skip-build")
    assert code == 2 and f"--python {source}:make: no such file" in out
    source.write_text("")
    code, out = machine.run("--dry-run", "--python", f"{source}:make", "--skip-build")
    assert code == 0, out
    conform = [c for c in machine.commands(out) if " conform " in c]
    assert len(conform) == 2
    assert conform[0].startswith(f"timeout --kill-after=30 3000 build-2gpu/bin/distmetrics conform "
                                 f"--python {source}:make scenarios --backend nccl ")
    code, out = machine.run("--dry-run", "--python", "pkg.metrics", "--plugin", str(source))
    assert code == 2 and "give --plugin or --python, not both" in out


def test_several_python_sources_conform_on_the_scenarios_asked_for(machine):
    # The three peer libraries at once, on the device placements' scenarios only.
    machine.gpus(1)
    sources = [REPO_ROOT / "peers" / lib / "metrics.py" for lib in ("torchmetrics", "ignite", "torcheval")]
    args = [a for s in sources for a in ("--python", str(s))]
    code, out = machine.run("--dry-run", "--min-gpus", "1", *args, "--conform-scenarios", "scenarios/missing",
                            "--skip-build")
    assert code == 2 and "--conform-scenarios scenarios/missing: no such file or folder" in out
    (machine.tmp / "scenarios" / "devices").mkdir(parents=True)
    code, out = machine.run("--dry-run", "--min-gpus", "1", *args, "--conform-scenarios", "scenarios/devices",
                            "--skip-build")
    assert code == 0, out
    conform = [c for c in machine.commands(out) if " conform " in c]
    assert len(conform) == 2
    every_source = " ".join(f"--python {s}" for s in sources)
    devices = machine.tmp / "scenarios" / "devices"  # given relative to where the script was started
    assert conform[0].startswith(f"timeout --kill-after=30 3000 build-2gpu/bin/distmetrics conform {every_source} "
                                 f"{devices} --backend nccl --world-sizes 1,2 "), conform[0]
    assert f"conform {every_source} {devices} --backend gloo --world-sizes 2 " in conform[1], conform[1]


@pytest.mark.parametrize("script", ["run_cpu.sh", "run_mpi.sh", "run_2gpu.sh"])
def test_every_job_has_help_and_dry_run_before_installing_anything(machine, script):
    code, out = machine.run("--help", script=REPO_ROOT / "ci" / script)
    assert code == 0, out
    assert out.startswith(f"Usage: ci/{script} [options]")
    assert "--dry-run" in out and "-h, --help" in out and "Exit codes:" in out
    assert machine.commands(out) == []  # nothing installed or built before the help
    machine.gpus(2)
    code, out = machine.run("--dry-run", script=REPO_ROOT / "ci" / script)
    assert code in (0, 77), out  # 77: this machine's PATH has no mpirun
    commands = machine.commands(out)
    assert any(" --build " in c for c in commands)
    assert any(" run scenarios " in c for c in commands)
    assert not (machine.tmp / "build").exists() and not (machine.tmp / "build-2gpu").exists()


def test_one_gpu_runs_what_fits_when_asked(machine):
    machine.gpus(1)
    code, out = machine.run("--dry-run", "--min-gpus", "1", "--skip-build")
    assert code == 0, out
    commands = machine.commands(out)
    assert len(commands) == 2  # no build
    assert "--backend nccl --world-sizes 1,2 " in commands[0]
    assert "--backend gloo --world-sizes 2 " in commands[1]


@pytest.mark.parametrize("env, message", [
    ({"FAKE_TORCH_PREFIX": ""}, "no CUDA LibTorch: set Torch_DIR (or --torch-dir)"),
    ({"FAKE_TORCH_CUDA": ""}, "torch 2.5.1 of"),
])
def test_no_cuda_libtorch_is_a_setup_failure(machine, env, message):
    machine.gpus(2)
    code, out = machine.run("--dry-run", **env)
    assert code == 5, out
    assert message in out
    assert machine.commands(out) == []


def test_runs_fold_exit_codes_and_write_reports(machine):
    machine.gpus(2)
    executable(machine.tmp / "b" / "bin" / "distmetrics", FAKE_RUNNER)
    code, out = machine.run("--skip-build", "--build-dir", str(machine.tmp / "b"),
                            FAKE_EXIT_nccl="1", FAKE_EXIT_gloo="3")
    assert code == 3, out  # a hang outranks a failed property
    assert "exit code 3 (per run: 1 3)" in out
    assert (machine.tmp / "b" / "reports").is_dir()
    runs = (machine.tmp / "runner.log").read_text().splitlines()
    assert len(runs) == 2 and runs[0].startswith("run scenarios --backend nccl")
    code, out = machine.run("--skip-build", "--build-dir", str(machine.tmp / "b"),
                            FAKE_EXIT_gloo="139")  # the runner itself died (SIGSEGV)
    assert code == 4, out


def test_skip_build_without_a_runner_is_a_setup_failure(machine):
    machine.gpus(2)
    code, out = machine.run("--skip-build", "--build-dir", "nowhere")
    assert code == 5
    assert "nowhere/bin/distmetrics is missing" in out


@pytest.mark.parametrize("codes, worst", [
    ("0 0", 0), ("1 0", 1), ("1 3", 3), ("3 4 1", 4), ("4 2 3", 2), ("", 0), ("1 6 3", 6),
    ("6 4", 4)])
def test_exit_codes_fold_by_priority(codes, worst):
    done = subprocess.run(["bash", "-c", f"source {REPO_ROOT}/ci/lib.sh; dm_worst_code {codes}"],
                          capture_output=True, text=True, check=True)
    assert int(done.stdout) == worst


def test_cpu_and_mpi_jobs_dry_run(machine):
    executable(machine.bin / "mpirun", "#!/bin/sh\nexit 0\n")
    cpu = machine.run(script=REPO_ROOT / "ci" / "run_cpu.sh", DM_DRY_RUN="1", SKIP_DEPS="1")
    assert cpu[0] == 0, cpu[1]
    # torch 2.x from pip by default: its venv, then a build configured against it.
    commands = machine.commands(cpu[1])
    assert commands[0] == "bash ci/torch2-venv.sh"
    assert commands[1].startswith("cmake -S ") and " -B build " in commands[1] and "-DDISTMETRICS_TORCH=pip" in commands[1]
    old = machine.run("--torch", "1.13", script=REPO_ROOT / "ci" / "run_cpu.sh", DM_DRY_RUN="1", SKIP_DEPS="1")
    assert old[0] == 0, old[1]
    assert machine.commands(old[1])[0].startswith("cmake -S ") and " -B build-torch1.13 " in machine.commands(old[1])[0]
    assert "torch2-venv" not in old[1] and "DISTMETRICS_TORCH" not in old[1]
    assert machine.commands(old[1])[-1].startswith("timeout --kill-after=30 3000 build-torch1.13/bin/distmetrics run ")
    bad = machine.run("--torch", "2.1", script=REPO_ROOT / "ci" / "run_cpu.sh", DM_DRY_RUN="1", SKIP_DEPS="1")
    assert bad[0] == 2 and "--torch must be 2 (PyTorch 2.x from pip, ci/requirements-torch2.txt) or 1.13" in bad[1]
    assert machine.commands(cpu[1])[-1] == (
        "timeout --kill-after=30 3000 build/bin/distmetrics run scenarios --backend gloo "
        "--world-sizes 1,2,4 --json build/reports/cpu.json --junit build/reports/cpu.xml")
    mpi = machine.run(script=REPO_ROOT / "ci" / "run_mpi.sh", DM_DRY_RUN="1", SKIP_DEPS="1", MPI_SIZES="2 4")
    assert mpi[0] == 0, mpi[1]
    assert machine.commands(mpi[1])[-2:] == [
        f"timeout --kill-after=30 3000 mpirun -np {n} --oversubscribe build/bin/distmetrics "
        f"run scenarios --launcher mpi --backend mpi --world-sizes {n} "
        f"--json build/reports/mpi-np{n}.json --junit build/reports/mpi-np{n}.xml"
        for n in (2, 4)]
    executable(machine.bin / "mpiexec", "#!/bin/sh\nexit 0\n")
    mpi = machine.run(script=REPO_ROOT / "ci" / "run_mpi.sh", DM_DRY_RUN="1", SKIP_DEPS="1",
                      MPI_LAUNCH="local", MPI_SIZES="3")
    assert mpi[0] == 0, mpi[1]
    assert machine.commands(mpi[1])[-1] == (
        "timeout --kill-after=30 3000 build/bin/distmetrics run scenarios --backend mpi "
        "--world-sizes 3 --json build/reports/mpi-np3.json --junit build/reports/mpi-np3.xml")
    bad = machine.run(script=REPO_ROOT / "ci" / "run_mpi.sh", DM_DRY_RUN="1", SKIP_DEPS="1",
                      MPI_LAUNCH="srun")
    assert bad[0] == 2 and "MPI_LAUNCH must be local or mpirun, got 'srun'" in bad[1]


def test_each_job_installs_only_the_package_sets_it_needs(machine):
    """The main job installs the command's sets only (issue 36: Chromium, Slurm and Debian's
    LibTorch made a fresh machine's run_cpu.sh take 15 minutes); ci/test.sh installs them all."""
    executable(machine.bin / "mpirun", "#!/bin/sh\nexit 0\n")
    jobs = {("run_cpu.sh",): "build headers python", ("run_cpu.sh", "--torch", "1.13"): "build headers python torch1.13",
            ("run_mpi.sh",): "build headers python mpi", ("run_peers.sh",): "build headers python",
            ("run_peers.sh", "--torch", "1.13"): "build headers python torch1.13"}
    for (script, *args), sets in jobs.items():
        code, out = machine.run("--dry-run", *args, script=REPO_ROOT / "ci" / script)
        assert code == 0, out
        assert machine.commands(out)[0] == f"bash ci/install-deps.sh {sets}", (script, args)
    assert "bash ci/install-deps.sh\n" in (REPO_ROOT / "ci" / "test.sh").read_text()  # every set
    deps = REPO_ROOT / "ci" / "install-deps.sh"

    def packages(*sets):
        done = subprocess.run(["bash", str(deps), "--print", *sets], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        return done.stdout.split()

    main = packages("build", "headers", "python")
    for heavy in ("chromium", "slurmd", "libtorch-dev", "python3-torch", "python3-sklearn", "libopenmpi-dev"):
        assert heavy not in main and heavy in packages(), heavy
    assert {"cmake", "ninja-build", "libtomlplusplus-dev", "python3-dev"} <= set(main)
    done = subprocess.run(["bash", str(deps), "browsers"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2 and "no package set 'browsers' (sets: build headers python" in done.stderr
    listed = subprocess.run(["bash", str(deps), "--list"], capture_output=True, text=True, timeout=30).stdout
    assert "chromium chromium-driver python3-selenium" in listed and "recommends: yes" in listed


def test_the_main_job_prints_each_steps_time(tmp_path):
    script = (f"source {REPO_ROOT / 'ci' / 'lib.sh'}; DM_JOB=run_cpu; dm_timed install true; dm_timed build sleep 1; "
              "dm_timed run false || echo run-failed $?; dm_say_times")
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=30, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "run-failed 1"  # a step's status comes back
    assert re.fullmatch(r"\[run_cpu\] time per step: install 0 s, build [12] s, run 0 s; in all [12] s", lines[1]), lines
    quiet = subprocess.run(["bash", "-c", f"source {REPO_ROOT / 'ci' / 'lib.sh'}; DM_DRY_RUN=1; dm_timed build true; dm_say_times"],
                           capture_output=True, text=True, timeout=30)
    assert quiet.returncode == 0 and quiet.stdout == ""  # a dry run took no time


def test_mpi_job_without_mpirun_prints_its_commands_then_skips(machine):
    code, out = machine.run("--dry-run", "--skip-deps", script=REPO_ROOT / "ci" / "run_mpi.sh")
    assert code == 77, out
    assert len([c for c in machine.commands(out) if " run scenarios " in c]) == 2
    assert "[run_mpi] SKIP: no mpirun on this machine" in out
    assert "would not run: exit code 77 (skipped)." in out


# -- ci/run_peers.sh and peers/expected.py (the real libraries, issue 22) --------------------------

PEERS = REPO_ROOT / "ci" / "run_peers.sh"


def test_peer_job_has_help_and_a_dry_run_over_every_library_at_world_sizes_1_to_4(machine):
    code, out = machine.run("--help", script=PEERS)
    assert code == 0 and out.startswith("Usage: ci/run_peers.sh [options]") and "--library NAME" in out
    assert machine.commands(out) == []
    code, out = machine.run("--dry-run", "--skip-deps", script=PEERS)
    assert code == 0, out
    commands = machine.commands(out)
    assert commands[0] == "bash ci/torch2-venv.sh"  # torch 2.x and the pinned libraries before anything runs
    # One conform for the three libraries: each rank worker imports torch and them once.
    (conform,) = [c for c in commands if " conform " in c]
    assert [part.split()[0] for part in conform.split("--python ")[1:]] == [
        "peers/torchmetrics/metrics.py", "peers/ignite/metrics.py", "peers/torcheval/metrics.py"]
    # The scenario library, and the scenarios written for the classes with no reference
    # counterpart (peers/scenarios.py, before the conform), then each variant's class named.
    assert "scenarios build/reports/peers/scenarios --backend gloo --world-sizes 1,2,3,4" in conform
    (written,) = [c for c in commands if "peers/scenarios.py" in c]
    assert commands.index(written) < commands.index(conform) and "--out build/reports/peers" in written
    for ext in ("json", "xml", "md", "html"):
        assert f"build/reports/peers/peers.{ext}" in conform
    assert not (machine.tmp / "build").exists()


def test_peer_job_runs_one_library_and_refuses_an_unknown_one(machine):
    code, out = machine.run("--dry-run", "--skip-deps", "--library", "ignite", "--world-sizes", "2", script=PEERS)
    conform = [c for c in machine.commands(out) if " conform " in c]
    assert code == 0 and len(conform) == 1 and "peers/ignite/metrics.py" in conform[0] and "--world-sizes 2" in conform[0]
    code, out = machine.run("--library", "keras", script=PEERS)
    assert code == 2 and "unknown library 'keras' (known: torchmetrics ignite torcheval)" in out
    assert machine.commands(out) == []


def _report(path, variants, source=None):
    import json
    path.write_text(json.dumps({"variants": [
        {"id": vid, "metric": "M", "outcome": outcome, "reason": reason, "diagnosis": reason, "root_cause": None,
         "properties": [{"name": p, "outcome": outcome if outcome != "pass" else "pass"} for p in props],
         **({"source": source(vid)} if source else {})}
        for vid, outcome, props, reason in variants]}))
    return path


def _expected(path, text):
    path.write_text(text)
    return path


def run_expected(*args):
    import sys
    done = subprocess.run([sys.executable, str(REPO_ROOT / "peers" / "expected.py"), *map(str, args)],
                          capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout + done.stderr


ENTRY = """
[[finding]]
variant = "s:gloo-ws2-empty_rank-*"
outcome = "hang"
blamed_rank = 1
kind = "library bug"
why = "raises alone"
"""


def test_the_peer_run_passes_on_exactly_the_expected_findings(tmp_path):
    expected = _expected(tmp_path / "e.toml", ENTRY)
    hang = ("s:gloo-ws2-empty_rank-cpu", "hang", ["no_hang"], "rank 1 to blame: rank 1 raised X")
    ok = ("s:gloo-ws1-even-cpu", "pass", ["equal_to_single"], "")
    code, out = run_expected("--library", "lib", "--report", _report(tmp_path / "r.json", [ok, hang]), "--expected", expected)
    assert code == 0, out
    assert ("lib: 1 metric(s), 2 variant(s) (1 pass, 0 skip, 1 finding(s), 0 s of variant time): 1 expected, "
            "0 unexpected, 0 expected but not seen, 0 flake(s)") in out.strip().splitlines()[-1], out
    # A new finding is named; so is an expected one that no longer shows (fixed upstream?).
    new = ("s:gloo-ws2-even-cpu", "fail", ["equal_to_single"], "the sync reduces wrongly")
    code, out = run_expected("--library", "lib", "--report", _report(tmp_path / "r.json", [ok, hang, new]), "--expected", expected)
    assert code == 1 and "unexpected: FAIL (equal_to_single) s:gloo-ws2-even-cpu [M]: the sync reduces wrongly" in out
    fixed = ("s:gloo-ws2-empty_rank-cpu", "pass", ["no_hang"], "")
    code, out = run_expected("--library", "lib", "--report", _report(tmp_path / "r.json", [ok, fixed]), "--expected", expected)
    assert code == 1 and "expected but not seen: " in out and "finding #1: hang s:gloo-ws2-empty_rank-*" in out
    # Blamed on another rank: not the expected finding.
    other = ("s:gloo-ws2-empty_rank-cpu", "hang", ["no_hang"], "rank 0 to blame: rank 0 ...")
    code, out = run_expected("--library", "lib", "--report", _report(tmp_path / "r.json", [other]), "--expected", expected)
    assert code == 1 and "rank 0 blamed" in out
    # A subset that did not run the expected variant is not "expected but not seen".
    code, out = run_expected("--library", "lib", "--report", _report(tmp_path / "r.json", [ok]), "--expected", expected)
    assert code == 0, out


@pytest.mark.parametrize("text, message", [
    ('[[finding]]\nvariant = "x"\noutcome = "fail"\nkind = "harness limitation"\nwhy = "w"\n',
     "finding #1: field 'kind' must be one of library bug, convention (a harness limitation is fixed in the harness"),
    ('[[finding]]\nvariant = "x"\noutcome = "fail"\nkind = "convention"\nwhy = "w"\nrank = 1\n', "finding #1: unknown field 'rank'"),
    ('[[finding]]\noutcome = "fail"\nkind = "convention"\nwhy = "w"\n', "finding #1: field 'variant' is required"),
    ('[[finding]]\nvariant = "x"\noutcome = "broken"\nkind = "convention"\nwhy = "w"\n', "field 'outcome' must be one of"),
])
def test_a_bad_expected_file_names_its_entry_and_field(tmp_path, text, message):
    code, out = run_expected("--library", "lib", "--report", _report(tmp_path / "r.json", []),
                             "--expected", _expected(tmp_path / "e.toml", text))
    assert code == 2 and message in out, out


def test_one_report_of_several_libraries_is_judged_per_library(tmp_path):
    """ci/run_peers.sh runs every library in one conform: each library's findings are those of
    its own source (peers/<library>/metrics.py), and its expected.toml judges only those."""
    expected = _expected(tmp_path / "e.toml", ENTRY)
    hang = ("s:gloo-ws2-empty_rank-cpu", "hang", ["no_hang"], "rank 1 to blame: rank 1 raised X")
    other = ("t:gloo-ws2-even-cpu", "fail", ["equal_to_single"], "another library's finding")
    report = _report(tmp_path / "r.json", [hang, other], source=lambda vid: (
        "python:peers/lib/metrics.py" if vid.startswith("s:") else "python:/abs/peers/other/metrics.py"))
    code, out = run_expected("--library", "lib", "--report", report, "--expected", expected)
    assert code == 0 and "lib: 1 metric(s), 1 variant(s)" in out, out
    code, out = run_expected("--library", "other", "--report", report, "--expected", expected)
    assert code == 1 and "unexpected: FAIL (equal_to_single) t:gloo-ws2-even-cpu" in out and "1 variant(s)" in out, out
    code, out = run_expected("--library", "absent", "--report", report, "--expected", expected)
    assert code == 2 and "has no variant of absent" in out, out


def test_an_entry_may_accept_several_outcomes_of_one_mechanism(tmp_path):
    expected = _expected(tmp_path / "e.toml", ENTRY.replace('outcome = "hang"', 'outcome = ["crash", "memory_exceeded"]')
                         .replace("blamed_rank = 1\n", ""))
    for outcome in ("crash", "memory_exceeded"):
        found = ("s:gloo-ws2-empty_rank-cpu", outcome, [], "garbage sizes")
        code, out = run_expected("--library", "lib", "--report", _report(tmp_path / "r.json", [found]), "--expected", expected)
        assert code == 0, out
    found = ("s:gloo-ws2-empty_rank-cpu", "hang", [], "a hang instead")
    code, out = run_expected("--library", "lib", "--report", _report(tmp_path / "r.json", [found]), "--expected", expected)
    assert code == 1 and "unexpected: HANG" in out and "crash or memory_exceeded s:gloo-ws2-empty_rank-*" in out, out


# -- expectations per release (issue 23: the current releases on torch 2.x) ------------------------

RELEASES = """releases = ["1.5.2 on torch 1.13", "1.9.0 on torch 2.15"]

[[finding]]
variant = "s:gloo-ws2-empty_rank-*"
outcome = "hang"
kind = "library bug"
why = "no placeholder before torch 2.1: raises alone"
releases = ["1.5.2 on torch 1.13"]

[[finding]]
variant = "s:gloo-ws2-empty_rank-*"
outcome = "crash"
kind = "library bug"
why = "the placeholder's float32 against int64 labels"
releases = ["1.9.0 on torch 2.15"]

[[finding]]
variant = "s:gloo-ws2-uneven-*"
outcome = "fail"
kind = "library bug"
why = "in both releases"
"""


def _release_report(path, variants, version, torch_version):
    """A report of one library's source as conform writes it: the source's version (the mapping's
    __version__) and its interpreter's torch in `plugins`."""
    import json
    _report(path, variants, source=lambda vid: "python:/abs/peers/lib/metrics.py")
    report = json.loads(path.read_text())
    report["torch_version"] = torch_version.split("+")[0]
    report["plugins"] = [{"path": "python:/abs/peers/lib/metrics.py", "version": version, "torch_version": torch_version}]
    path.write_text(json.dumps(report))
    return path


def test_the_entries_of_the_release_that_ran_judge_it(tmp_path):
    expected = _expected(tmp_path / "e.toml", RELEASES)
    hang = ("s:gloo-ws2-empty_rank-cpu", "hang", ["no_hang"], "rank 1 to blame: raised alone")
    crash = ("s:gloo-ws2-empty_rank-cpu", "crash", [], "rank 1 died: Received data size doesn't match")
    uneven = ("s:gloo-ws2-uneven-cpu", "fail", ["equal_to_single"], "off")
    old = _release_report(tmp_path / "old.json", [hang, uneven], "1.5.2", "1.13.0a0")
    new = _release_report(tmp_path / "new.json", [crash, uneven], "1.9.0", "2.15.0+cu132")
    assert run_expected("--library", "lib", "--report", old, "--expected", expected)[0] == 0
    assert run_expected("--library", "lib", "--report", new, "--expected", expected)[0] == 0
    # The old release's hang on the new release is unexpected, and the new crash is missing.
    code, out = run_expected("--library", "lib", "--report", _release_report(
        tmp_path / "r.json", [hang, uneven], "1.9.0", "2.15.0+cu132"), "--expected", expected)
    assert code == 1 and "unexpected: HANG, rank 1 blamed s:gloo-ws2-empty_rank-cpu" in out, out
    assert "expected but not seen: " in out and "finding #2: crash" in out, out
    # A run of one source names it in `plugin`, not `plugins`.
    import json
    one = json.loads(new.read_text())
    one["plugin"] = one.pop("plugins")[0]
    (tmp_path / "one.json").write_text(json.dumps(one))
    assert run_expected("--library", "lib", "--report", tmp_path / "one.json", "--expected", expected)[0] == 0
    # --version names the library's version where the report has none (a mapping without __version__).
    code, out = run_expected("--library", "lib", "--report", _release_report(
        tmp_path / "r.json", [hang, uneven], "", "1.13.0a0"), "--expected", expected, "--version", "1.5.2")
    assert code == 0, out


def test_a_release_without_expectations_is_bad_input_naming_it_and_the_file(tmp_path):
    expected = _expected(tmp_path / "e.toml", RELEASES)
    report = _release_report(tmp_path / "r.json", [], "1.9.1", "2.16.0+cu132")
    code, out = run_expected("--library", "lib", "--report", report, "--expected", expected)
    assert code == 2 and f"{expected} has no expected findings for lib 1.9.1 on torch 2.16 (it has them for " \
        "1.5.2 on torch 1.13, 1.9.0 on torch 2.15)" in out and 'add "1.9.1 on torch 2.16" to the releases' in out, out
    code, out = run_expected("--library", "lib", "--report", _release_report(tmp_path / "r.json", [], "", "2.15.0"),
                             "--expected", expected)
    assert code == 2 and "does not say which release of lib ran" in out and "pass --version" in out, out
    code, out = run_expected("--library", "lib", "--report", report, "--expected", tmp_path / "absent.toml")
    assert code == 2 and f"{tmp_path / 'absent.toml'}: no such file: write the library's expected findings there" in out, out


@pytest.mark.parametrize("text, message", [
    (RELEASES.replace('releases = ["1.5.2 on torch 1.13"]', 'releases = ["1.5.3 on torch 1.13"]'),
     "finding #1: field 'releases' must list some of the file's releases (1.5.2 on torch 1.13, 1.9.0 on torch 2.15), "
     "got ['1.5.3 on torch 1.13']"),
    (RELEASES.replace('releases = ["1.5.2 on torch 1.13", "1.9.0 on torch 2.15"]', ""),
     "finding #1: field 'releases' needs the file's own top-level releases list"),
    (RELEASES.replace('"1.9.0 on torch 2.15"]', '"1.9.0 with torch 2"]', 1), "releases must be a list of"),
])
def test_bad_releases_name_the_file_entry_and_field(tmp_path, text, message):
    report = _release_report(tmp_path / "r.json", [], "1.5.2", "1.13.0a0")
    code, out = run_expected("--library", "lib", "--report", report, "--expected", _expected(tmp_path / "e.toml", text))
    assert code == 2 and message in out, out


def test_every_library_lists_the_releases_of_both_venvs():
    """The pinned releases (peers/requirements-torch1.13.txt on Debian's torch 1.13,
    ci/requirements-torch2.txt) each have expectations in peers/<library>/expected.toml."""
    import importlib.util
    import re
    spec = importlib.util.spec_from_file_location("peers_expected", REPO_ROOT / "peers" / "expected.py")
    expected = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(expected)

    def pins(path):
        return dict(re.findall(r"^([a-z-]+)==([0-9.]+)$", path.read_text(), re.M))
    old, new = pins(REPO_ROOT / "peers" / "requirements-torch1.13.txt"), pins(REPO_ROOT / "ci" / "requirements-torch2.txt")
    for library, dist in (("torchmetrics", "torchmetrics"), ("ignite", "pytorch-ignite"), ("torcheval", "torcheval")):
        _, releases = expected.load_expected(REPO_ROOT / "peers" / library / "expected.toml")
        assert releases == [expected.release(pins[dist], "1.13.0" if pins is old else pins["torch"])
                            for pins in (old, new)], library
    assert expected.release("1.9.0", "2.15.0+cu132") == "1.9.0 on torch 2.15"


def test_peer_job_runs_the_current_releases_on_torch_2_and_the_last_ones_for_1_13_when_asked(machine):
    for args in ([], ["--torch2"], ["--torch", "2"]):  # --torch2: the default, as earlier docs say it
        code, out = machine.run("--dry-run", "--skip-deps", *args, script=PEERS)
        assert code == 0, out
        commands = machine.commands(out)
        assert commands[0] == "bash ci/torch2-venv.sh" and "bash peers/venv.sh" not in commands
        assert any(c.startswith("cmake -S ") and " -B build " in c and "-DDISTMETRICS_TORCH=pip" in c for c in commands)
        (conform,) = [c for c in commands if " conform " in c]
        assert conform.startswith("timeout --kill-after=30 1800 build/bin/distmetrics conform"), conform
        assert "--json build/reports/peers/peers.json" in conform
        repros = [c for c in commands if "peers/run_repros.py" in c]
        assert repros and all("/usr/bin/python3" not in c for c in repros), repros
    code, out = machine.run("--dry-run", "--skip-deps", "--torch", "1.13", script=PEERS)
    assert code == 0, out
    commands = machine.commands(out)
    assert commands[0] == "bash peers/venv.sh" and "bash ci/torch2-venv.sh" not in commands
    assert any(c.startswith("cmake -S ") and " -B build-torch1.13 " in c and "DISTMETRICS_TORCH" not in c for c in commands)
    (conform,) = [c for c in commands if " conform " in c]
    assert conform.startswith("timeout --kill-after=30 1800 build-torch1.13/bin/distmetrics conform"), conform
    repros = [c for c in commands if "peers/run_repros.py" in c]
    assert repros and all(" /usr/bin/python3 " in c for c in repros), repros
    code, out = machine.run("--dry-run", "--torch", "3", script=PEERS)
    assert code == 2 and "--torch must be 2 (PyTorch 2.x from pip" in out and machine.commands(out) == []
    # --no-build: the build folder as it is (the lead's, read-only).
    code, out = machine.run("--dry-run", "--skip-deps", "--no-build", "--build-dir", "/b", script=PEERS)
    assert code == 0 and not any(c.startswith("cmake") for c in machine.commands(out)), out


def test_a_repro_says_which_releases_it_is_about():
    import importlib.util
    spec = importlib.util.spec_from_file_location("repro_common", REPO_ROOT / "peers" / "repro" / "common.py")
    common = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(common)
    assert common._holds("2.15.0+cu132", ">=2.1") and not common._holds("1.13.0a0", ">=2.1")
    assert common._holds("1.13.0a0", "<2.1") and common._holds("0.5.5", ">=0.5.3,<0.6")
    assert not common._holds("1.9.0", "==1.5.2")
    with pytest.raises(ValueError, match="bad version spec"):
        common._holds("1.0", "~=1.0")


# -- ci/torch_range.sh (the declared torch 2.x range, measured; not run by CI) --------------------

RANGE = REPO_ROOT / "ci" / "torch_range.sh"


def declared_range():
    import re
    text = (REPO_ROOT / "cmake" / "DistmetricsTorchVersion.cmake").read_text()
    return [re.search(rf"^set\(DISTMETRICS_TORCH_2X_{end} ([0-9.]+)\)", text, re.M).group(1) for end in ("OLDEST", "NEWEST")]


def test_torch_range_builds_each_declared_end_in_a_venv_and_folder_of_its_own(machine):
    for tool in ("sed", "cut", "sort", "head", "tail", "sha256sum"):
        (machine.bin / tool).symlink_to(shutil.which(tool))
    code, out = machine.run("--help", script=RANGE)
    assert code == 0 and out.startswith("Usage: ci/torch_range.sh [options] [VERSION...]") and machine.commands(out) == []
    oldest, newest = declared_range()
    code, out = machine.run("--dry-run", script=RANGE)
    assert code == 0, out
    assert f"declared 2.x range: {oldest} to {newest}" in out
    commands = machine.commands(out)
    venv = machine.tmp / ".cache" / "distmetrics" / f"torch-range-{oldest}"
    assert f"/usr/bin/python3 -m venv --system-site-packages {venv}" in commands
    configures = [c for c in commands if c.startswith("cmake -S . -B ")]
    assert [c.split()[4] for c in configures] == [f"build-torch{oldest}", f"build-torch{newest}"]
    assert f"-DDISTMETRICS_PYTHON={venv}/bin/python" in configures[0]
    assert not any("ALLOW_UNTESTED" in c for c in configures)  # both ends are inside the range
    assert "bash ci/torch2-venv.sh" in commands  # the pinned end reuses the 2.x venv
    assert sum(" run scenarios --backend gloo --world-sizes 1,2 " in c for c in commands) == 2
    assert sum(" conform --python peers/torchmetrics/metrics.py " in c and " scenarios/devices " in c
               for c in commands) == 2
    assert not (machine.tmp / ".cache").exists()  # a dry run installs nothing
    # A candidate below the range is configured as untested; a version that is no 2.x is bad input.
    code, out = machine.run("--dry-run", "--skip-peers", "2.1", script=RANGE)
    assert code == 0 and "outside the declared range: a candidate" in out, out
    (configure,) = [c for c in machine.commands(out) if c.startswith("cmake -S . -B build-torch2.1 ")]
    assert "-DDISTMETRICS_ALLOW_UNTESTED_TORCH=ON" in configure
    assert not any(" conform --python peers/" in c for c in machine.commands(out))
    for bad in ("1.13", "2.x", "--frobnicate"):
        code, out = machine.run(bad, script=RANGE)
        assert code == 2 and "[torch_range] error: " in out and machine.commands(out) == [], out
