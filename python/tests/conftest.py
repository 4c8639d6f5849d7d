"""Fixtures for the plugin's own tests: a throwaway project with scenario files for the fake
runner (fake_distmetrics.py), and pytest runs of it in a subprocess."""

import json
import os
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
FAKE_RUNNER = HERE / "fake_distmetrics.py"
PYTHON_DIR = HERE.parent
REPO_ROOT = PYTHON_DIR.parent


@pytest.fixture(autouse=True)
def runner_folders_in_tmp_path(tmp_path, monkeypatch):
    """The runner folders the plugin keeps for a failed item (`distmetrics-serve-*`) land in the
    test's own tmp_path, not in /tmp: these tests fail items on purpose. The pytest runs they
    start in a subprocess inherit TMPDIR."""
    monkeypatch.setenv("TMPDIR", str(tmp_path))


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"
    raise TypeError(value)


def pid_alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return False
    return data[data.rindex(b")") + 2:].split()[0] not in (b"Z", b"X")


class Project:
    """A folder with scenarios/ for the fake runner, and a way to run pytest on it."""

    def __init__(self, pytester, log: Path):
        self.pytester = pytester
        self.log = log
        self.path = Path(pytester.path)

    def scenario(self, name: str, **fake) -> Path:
        path = self.path / "scenarios" / f"{name}.toml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("[fake]\n" + "".join(f"{k} = {toml_value(v)}\n" for k, v in fake.items()))
        return path

    def runner_option(self) -> str:
        return f"--distmetrics-bin={sys.executable} {FAKE_RUNNER}"

    def run(self, *args, timeout: float = 120):
        return self.pytester.runpytest_subprocess(
            "-p", "distmetrics.pytest_plugin", self.runner_option(), *args, timeout=timeout)

    def processes(self):
        """Every process the fake runner started, as it logged them."""
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def assert_nothing_left(self):
        entries = self.processes()
        assert entries, "the fake runner logged no process"
        alive = [e for e in entries if pid_alive(e["pid"])]
        assert not alive, f"processes outlived the run: {alive}"


@pytest.fixture
def project(pytester, monkeypatch, tmp_path):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(
        p for p in (str(PYTHON_DIR), os.environ.get("PYTHONPATH", "")) if p))
    log = tmp_path / "processes.jsonl"
    monkeypatch.setenv("FAKE_DISTMETRICS_LOG", str(log))
    for name in ("DISTMETRICS_BIN", "PYTEST_XDIST_WORKER", "PYTEST_ADDOPTS"):
        monkeypatch.delenv(name, raising=False)
    pytester.makeini("[pytest]\n")
    return Project(pytester, log)
