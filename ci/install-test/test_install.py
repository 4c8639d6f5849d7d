"""The installed tree as a user gets it: `cmake --install` to a prefix (the plugin_examples
fixture, which also builds examples/plugins against it), the prefix MOVED elsewhere, then the
installed CLI (list, run, conform, metrics, --version) with no argument naming the scenario
folder, and the Python package installed offline into a fresh virtual environment (or put on
PYTHONPATH from the prefix) running the pytest plugin from a folder outside the checkout.

Environment (set by ctest, ci/CMakeLists.txt): DISTMETRICS_EXAMPLES_OUT (the fixture's folder:
prefix/ and build/), DISTMETRICS_SOURCE_DIR (this checkout)."""

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

EXAMPLES_OUT = Path(os.environ.get("DISTMETRICS_EXAMPLES_OUT", "/nonexistent"))
SOURCE = Path(os.environ.get("DISTMETRICS_SOURCE_DIR", Path(__file__).resolve().parents[2]))
PLUGIN = EXAMPLES_OUT / "build" / "libexample_regression_metrics.so"
MAE_VARIANT = "core/mean_absolute_error:gloo-ws2-even-cpu"

if not (EXAMPLES_OUT / "prefix" / "bin" / "distmetrics").is_file():
    pytest.fail(f"no installed tree in {EXAMPLES_OUT}/prefix: run the ctest fixture "
                f"plugin_examples_install_and_build first", pytrace=False)


def clean_env(**extra):
    """The environment of a user's shell: nothing pointing into this checkout or its build."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "DISTMETRICS_SCENARIOS", "DISTMETRICS_BIN", "PYTEST_ADDOPTS",
                        "PYTEST_XDIST_WORKER", "PYTEST_PLUGINS")}
    env.update(extra)
    return env


def run(command, cwd, env=None, timeout=300):
    return subprocess.run([str(c) for c in command], cwd=cwd, env=env or clean_env(),
                          capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    """A copy of the installed prefix, then moved: the binary never saw where it now lives."""
    base = tmp_path_factory.mktemp("relocated")
    first = base / "installed-here"
    shutil.copytree(EXAMPLES_OUT / "prefix", first, symlinks=True)
    moved = base / "moved" / "somewhere" / "else"
    moved.parent.mkdir(parents=True)
    first.rename(moved)
    return moved


@pytest.fixture
def outside(tmp_path):
    """A working folder with no scenarios/ in it, outside the checkout."""
    folder = tmp_path / "work"
    folder.mkdir()
    return folder


def test_list_finds_the_installed_scenarios_beside_the_executable(prefix, outside):
    done = run([prefix / "bin/distmetrics", "list", "--json", "--backend", "gloo",
                "--world-sizes", "2"], outside)
    assert done.returncode == 0, done.stderr
    listed = json.loads(done.stdout)
    installed = prefix / "share" / "distmetrics" / "scenarios"
    assert {Path(v["file"]).parent.parent for v in listed} == {installed}  # core/, regression/, ...
    # The same variants as the checkout's scenario folder gives (the installed copy of it).
    source = run([prefix / "bin/distmetrics", "list", SOURCE / "scenarios", "--backend", "gloo",
                  "--world-sizes", "2"], outside)
    assert source.returncode == 0, source.stderr
    assert [v["id"] for v in listed] == source.stdout.split()
    assert MAE_VARIANT in source.stdout.split()


def test_run_from_the_moved_prefix(prefix, outside):
    done = run([prefix / "bin/distmetrics", "run", "--filter", MAE_VARIANT, "--json", "r.json"],
               outside)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((outside / "r.json").read_text())
    (variant,) = report["variants"]
    assert variant["id"] == MAE_VARIANT and variant["outcome"] == "pass"
    assert Path(variant["file"]).is_relative_to(prefix)


def test_conform_from_the_moved_prefix(prefix, outside):
    done = run([prefix / "bin/distmetrics", "conform", "--plugin", PLUGIN,
                "--metric", "MeanAbsoluteError", "--world-sizes", "2", "--shard", "even",
                "--json", "c.json"], outside)
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((outside / "c.json").read_text())
    ids = [v["id"] for v in report["variants"]]
    # Every installed scenario of MeanAbsoluteError, at world size 2 with even shards, passed.
    scenarios = sorted(p.relative_to(SOURCE / "scenarios").with_suffix("").as_posix()
                       for p in (SOURCE / "scenarios").rglob("*.toml")
                       if 'name = "MeanAbsoluteError"' in p.read_text())
    assert scenarios and sorted({i.split(":")[0] for i in ids}) == scenarios
    assert all(v["outcome"] in ("pass", "skip") for v in report["variants"]), done.stdout
    assert MAE_VARIANT in ids


def test_the_environment_overrides_and_a_miss_says_where_it_looked(prefix, outside):
    examples = SOURCE / "examples" / "plugins" / "scenarios"
    done = run([prefix / "bin/distmetrics", "list", "--world-sizes", "1", "--shard", "even"], outside,
               env=clean_env(DISTMETRICS_SCENARIOS=str(examples)))
    assert done.returncode == 0, done.stderr
    assert sorted(done.stdout.split()) == ["maximum_absolute_error:gloo-ws1-even-cpu",
                                           "mean_absolute_error:gloo-ws1-even-cpu"]
    missing = outside / "no-such-folder"
    for command in (["list"], ["run"], ["validate"], ["conform", "--plugin", PLUGIN]):
        done = run([prefix / "bin/distmetrics", *command], outside,
                   env=clean_env(DISTMETRICS_SCENARIOS=str(missing)))
        assert done.returncode == 2, (command, done.stderr)
        assert "no scenario path given and no scenario folder found; looked in:" in done.stderr
        assert f"{missing} ($DISTMETRICS_SCENARIOS)" in done.stderr
        assert "error(s) in the scenario files" not in done.stderr


def test_version_and_metrics(prefix, outside):
    done = run([prefix / "bin/distmetrics", "--version"], outside)
    assert done.returncode == 0
    assert done.stdout.startswith("distmetrics 0.1.0 (LibTorch ")
    done = run([prefix / "bin/distmetrics", "metrics", "--json"], outside)
    assert done.returncode == 0, done.stderr
    metrics = {m["name"]: m for m in json.loads(done.stdout)}
    params = {p["name"]: p for p in metrics["Accuracy"]["params"]}
    assert params["task"]["required"] and params["task"]["choices"] == [
        "binary", "multiclass", "multilabel"]
    assert params["num_classes"]["type"] == "int" and params["num_classes"]["aliases"] == [
        "num_labels"]
    assert params["threshold"]["default"] == 0.5
    done = run([prefix / "bin/distmetrics", "metrics", "--json", "--plugin", PLUGIN], outside)
    assert done.returncode == 0, done.stderr
    assert [m["name"] for m in json.loads(done.stdout)] == [
        "MaximumAbsoluteError", "MeanAbsoluteError"]
    done = run([prefix / "bin/distmetrics", "conform"], outside)
    assert done.returncode == 2 and "distmetrics conform --help" in done.stderr


@pytest.fixture
def project():
    """A project outside the checkout (and its build folder, whose pytest.ini and conftest.py
    pytest would otherwise find) with a pytest.ini of its own and one scenario, tagged."""
    folder = Path(tempfile.mkdtemp(prefix="distmetrics-project-"))
    (folder / "pytest.ini").write_text("[pytest]\n")
    scenarios = folder / "scenarios"
    scenarios.mkdir()
    text = (SOURCE / "scenarios" / "core" / "mean_absolute_error.toml").read_text()
    (scenarios / "mine.toml").write_text('tags = ["mytag"]\n' + text)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_pytest_plugin_installed_into_a_fresh_venv(prefix, project, tmp_path):
    # pip builds in the folder it is given: a copy, so the checkout stays clean.
    package = tmp_path / "package"
    shutil.copytree(SOURCE / "python", package, ignore=shutil.ignore_patterns(
        "tests", "build", "*.egg-info", "__pycache__"))
    env_dir = tmp_path / "venv"
    done = run([sys.executable, "-m", "venv", "--system-site-packages", env_dir], tmp_path)
    assert done.returncode == 0, done.stderr
    python = env_dir / "bin" / "python"
    done = run([python, "-m", "pip", "install", "--no-build-isolation", "--no-index", package],
               tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    done = run([python, "-c", "import distmetrics.pytest_plugin as m; print(m.__file__)"], project)
    assert Path(done.stdout.strip()).is_relative_to(env_dir), done.stdout + done.stderr
    # No -p: the pytest11 entry point loads the plugin.
    done = run([python, "-m", "pytest", "-p", "no:cacheprovider", "-v", "--strict-markers",
                "-m", "mytag", f"--distmetrics-bin={prefix}/bin/distmetrics",
                "--backend=gloo", "--world-sizes=2", "-k", "even and not uneven"], project)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "scenarios/mine.toml::gloo-ws2-even-cpu PASSED" in done.stdout
    assert "distmetrics variants: 1 pass, 0 fail" in done.stdout


def test_pytest_plugin_from_the_prefix_on_pythonpath(prefix, project):
    (site,) = prefix.glob("lib/python3*/site-packages")
    done = run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q",
                f"--distmetrics-bin={prefix}/bin/distmetrics", "--backend=gloo", "--world-sizes=1",
                "-k", "even and not uneven"], project,
               env=clean_env(PYTHONPATH=str(site)))
    assert done.returncode == 0, done.stdout + done.stderr
    assert [line for line in done.stdout.splitlines() if "::" in line] == [
        "scenarios/mine.toml::gloo-ws1-even-cpu"]
