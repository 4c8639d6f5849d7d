"""How the plugin talks to the distmetrics CLI: finding the binary, listing variants
(`distmetrics list --json`), and the command that runs one variant (`distmetrics run`)."""

import json
import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..tables import Tables, TablesError, tables

LIST_TIMEOUT = 120.0  # seconds; listing parses scenario files and starts no ranks


class RunnerError(Exception):
    """The runner could not be found, or answered in a way that breaks the contract."""


def find_runner(option: Optional[str], rootdir: Path, invocation_dir: Path) -> List[str]:
    """The command that starts the runner: --distmetrics-bin (a path, or a command line such as
    "python3 fake.py"), else $DISTMETRICS_BIN, else build/bin/distmetrics under the rootdir or
    the current directory, else `distmetrics` on PATH."""
    given = option or os.environ.get("DISTMETRICS_BIN")
    if given:
        if Path(given).is_file():
            command = [given]
        else:
            command = shlex.split(given)
        if not command:
            raise RunnerError("--distmetrics-bin is empty")
        exe = command[0]
        found = exe if os.sep in exe else shutil.which(exe)
        if not found or not os.access(found, os.X_OK):
            raise RunnerError(f"the distmetrics runner {exe!r} (from --distmetrics-bin or "
                              f"DISTMETRICS_BIN) is not an executable file")
        return [os.path.abspath(found)] + command[1:]
    for base in (rootdir, invocation_dir):
        candidate = base / "build" / "bin" / "distmetrics"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return [str(candidate.resolve())]
    on_path = shutil.which("distmetrics")
    if on_path:
        return [on_path]
    raise RunnerError(
        "the distmetrics runner was not found in build/bin/distmetrics or on PATH: build it "
        "(cmake --build build --target distmetrics) or pass --distmetrics-bin PATH")


@dataclass
class Selection:
    """Which variants to list and run; passed to the CLI as its SELECTION flags."""
    backends: Optional[str] = None      # "gloo,mpi"
    world_sizes: Optional[str] = None   # "1,2,4"

    def flags(self) -> List[str]:
        flags = []
        if self.backends:
            flags += ["--backend", self.backends]
        if self.world_sizes:
            flags += ["--world-sizes", self.world_sizes]
        return flags


@dataclass
class Variant:
    """One entry of `distmetrics list --json` (docs/cli-contract.md): everything the plugin knows
    of a variant comes from there, not from the scenario file."""
    id: str
    scenario: str
    file: Path                      # absolute
    backend: str
    world_size: int
    shard: str
    placement: str
    launch: str                     # how the runner's local pool starts its ranks: a pool launch of the launcher table
    # Whether only mpirun can start its ranks (its launch's pool_through_mpirun): --mpirun starts
    # it, one MPI job per item, each process told the launcher whose pool launch it is.
    started_by_mpirun: bool = False
    mpirun_launcher: str = ""       # that launcher's name (--launcher), when started_by_mpirun
    metric: Optional[str] = None    # the scenario's metric, as its file names it
    markers: List[str] = field(default_factory=list)
    skip: Optional[str] = None
    deadline: Optional[float] = None  # seconds per variant, the scenario's
    listed_from: Optional[str] = None  # the path given to `list` that found it

    @property
    def short_name(self) -> str:
        """The id without its scenario part (the pytest node of the file already names it)."""
        prefix = self.scenario + ":"
        return self.id[len(prefix):] if self.id.startswith(prefix) else self.id


def _variant_from_json(entry: Dict, cwd: Path, table: Tables) -> Variant:
    try:
        file = Path(entry["file"])
        deadline = entry.get("deadline")
        metric = entry.get("metric")
        try:
            launcher = table.launcher_of_pool_launch(str(entry["launch"]))
        except TablesError as error:
            raise RunnerError(f"`distmetrics list --json` gave an entry whose launch the runner's tables do not "
                              f"know: {error}") from None
        through_mpirun = bool(launcher.get("pool_through_mpirun"))
        return Variant(
            id=str(entry["id"]), scenario=str(entry["scenario"]),
            file=(file if file.is_absolute() else cwd / file).resolve(),
            backend=str(entry["backend"]), world_size=int(entry["world_size"]),
            shard=str(entry["shard"]), placement=str(entry["placement"]),
            launch=str(entry["launch"]),
            started_by_mpirun=through_mpirun,
            mpirun_launcher=str(launcher["name"]) if through_mpirun else "",
            metric=str(metric) if metric is not None else None,
            markers=[str(m) for m in entry.get("markers") or []],
            skip=entry.get("skip") or None,
            deadline=float(deadline) if deadline is not None else None)
    except (KeyError, TypeError, ValueError) as error:
        raise RunnerError(f"`distmetrics list --json` gave an entry without a valid {error}: "
                          f"{json.dumps(entry)[:300]}") from None


def list_variants(runner: Sequence[str], paths: Sequence[str], selection: Selection,
                  cwd: Path, allow_python: bool = False) -> List[Variant]:
    """Runs `distmetrics list PATHS --json` and parses its answer (with --allow-python, scenario
    files may call the Python they name)."""
    command = [*runner, "list", *paths, *selection.flags(), "--json", *(["--allow-python"] if allow_python else [])]
    try:
        done = subprocess.run(command, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                              text=True, timeout=LIST_TIMEOUT, start_new_session=True)
    except subprocess.TimeoutExpired:
        raise RunnerError(f"`{shlex.join(command)}` did not answer within {LIST_TIMEOUT:.0f} s")
    except OSError as error:
        raise RunnerError(f"could not start `{shlex.join(command)}`: {error}")
    if done.returncode != 0:
        raise RunnerError(f"`{shlex.join(command)}` (in {cwd}) exited with status "
                          f"{done.returncode}:\n{done.stderr.strip() or done.stdout.strip()}")
    try:
        entries = json.loads(done.stdout)
    except json.JSONDecodeError as error:
        raise RunnerError(f"`{shlex.join(command)}` printed no JSON array ({error}); it printed:\n"
                          f"{done.stdout[:500]}")
    if not isinstance(entries, list):
        raise RunnerError(f"`{shlex.join(command)}` printed JSON that is not an array")
    try:
        table = tables(runner)
    except TablesError as error:
        raise RunnerError(str(error)) from None
    return [_variant_from_json(entry, cwd, table) for entry in entries]


def run_command(runner: Sequence[str], variant: Variant, file_arg: str, report: Optional[Path],
                deadline: Optional[float], mpirun: Optional[Sequence[str]],
                python: Optional[str] = None, allow_python: bool = False) -> List[str]:
    """The command that runs exactly one variant and writes its JSON report (none when report
    is None: the command a person types). The runner starts the ranks itself (those whose
    launch is "mpirun" through its own mpirun); given an mpirun command, those are started by it
    instead, one process per rank (`--launcher mpi`). With `python`, the variant runs that
    Python source's metric of the scenario's name through `distmetrics conform --python`."""
    command = [*runner, "run", file_arg, "--filter", variant.id]
    if python:  # a Python metric instead of the reference one (docs/python.md)
        command[len(runner)] = "conform"
        command[len(runner) + 1:len(runner) + 1] = ["--python", python] + (
            ["--metric", variant.metric] if variant.metric else [])
    if report is not None:
        command += ["--json", str(report)]
    if deadline is not None:
        command += ["--deadline", f"{deadline:g}"]
    if allow_python:  # the scenario's data.python / reference.python (docs/scenarios.md)
        command += ["--allow-python"]
    if variant.started_by_mpirun and mpirun is not None:
        command = [*mpirun, "-np", str(variant.world_size), "--oversubscribe", *command,
                   "--launcher", variant.mpirun_launcher]
    return command


def serve_command(runner: Sequence[str], deadline: Optional[float], allow_python: bool = False) -> List[str]:
    """The long-lived runner of one pytest process: `distmetrics serve` answers one JSON line
    per variant requested on its stdin, keeping its rank pools between them."""
    command = [*runner, "serve"]
    if deadline is not None:
        command += ["--deadline", f"{deadline:g}"]
    if allow_python:
        command += ["--allow-python"]
    return command


def reproduce_command(command: Sequence[str], cwd: Path) -> str:
    """The command a person runs to see the same thing (without the temporary report file)."""
    shown = list(command)
    if "--json" in shown:
        at = shown.index("--json")
        del shown[at:at + 2]
    return f"cd {shlex.quote(str(cwd))} && {shlex.join(shown)}"
