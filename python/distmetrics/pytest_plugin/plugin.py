"""pytest hooks: scenario files (*.toml under the scenario folder) become one item per variant,
each run by the distmetrics runner in a session of its own under a hard timeout."""

import os
import re
import shutil
import sys
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

import pytest

from . import explore
from ..tables import Tables, TablesError, tables
from .processes import describe_returncode, run_with_timeout
from .report import describe_variant, read_variant
from .runner import (RunnerError, Selection, Variant, find_runner, list_variants,
                     reproduce_command, run_command, serve_command)
from .stream import StreamRunner

# The markers the plugin gives; each backend of the runner's table is one too (backend_markers).
MARKERS = {
    "distmetrics": "a distmetrics scenario variant",
    "gpu": "a variant that needs GPUs",
    "slow": "a slow variant",
    "regression": "a variant that encodes a known historical bug",
}

DEFAULT_DEADLINE = 60.0   # seconds for one variant when neither the listing nor an option says
GRACE = 30.0              # seconds on top of the deadline: starting ranks, writing the report
OUTCOME_PROPERTY = "distmetrics_outcome"
_REGISTERED_MARKERS = pytest.StashKey[set]()


def pytest_addoption(parser):
    group = parser.getgroup("distmetrics", "distmetrics scenarios as pytest items")
    group.addoption("--distmetrics-bin", metavar="PATH",
                    help="the distmetrics runner (a path or a command line). Default: "
                         "$DISTMETRICS_BIN, build/bin/distmetrics, `distmetrics` on PATH")
    group.addoption("--scenario-dir", action="append", metavar="DIR",
                    help="folder of scenario files (*.toml) to collect; repeatable. "
                         "Default: scenarios/ under the rootdir")
    group.addoption("--backend", metavar="B[,B..]",
                    help="only variants on these backends (the runner's: `distmetrics tables`)")
    group.addoption("--world-sizes", metavar="N[,N..]",
                    help="only variants at these world sizes, e.g. 1,2,4")
    group.addoption("--distmetrics-deadline", type=float, metavar="SECONDS",
                    help="deadline the runner enforces on each variant (its --deadline); "
                         "default: the scenario's")
    group.addoption("--distmetrics-timeout", type=float, metavar="SECONDS",
                    help="hard limit for one item, after which the runner and all its ranks are "
                         f"killed; default: the variant's deadline + {GRACE:g} s")
    group.addoption("--distmetrics-python", metavar="SOURCE",
                    help="check a Python metric instead of the reference one: each variant runs "
                         "`distmetrics conform --python SOURCE --metric <the scenario's metric>` "
                         "with a runner of its own (SOURCE: pkg.module:factory, pkg.module or "
                         "file.py; docs/python.md). Variants of metrics the source does not "
                         "provide are skipped")
    group.addoption("--distmetrics-allow-python", action="store_true", default=False,
                    help="let scenario files call the Python they name (data.python, "
                         "data.structured, reference.python): the runner gets --allow-python (docs/scenarios.md)")
    group.addoption("--distmetrics-isolate", action="store_true", default=False,
                    help="run every item with a runner of its own (`distmetrics run`), which also "
                         "checks that it leaves no process behind; default: one long-lived "
                         "runner (`distmetrics serve`) per pytest process, its rank pools kept")
    group.addoption("--mpirun", metavar="COMMAND",
                    help="start the variants whose ranks only mpirun can start (the listing's "
                         "launch \"mpirun\": the mpi backend's) as `COMMAND -np N --oversubscribe "
                         "distmetrics run ... --launcher mpi` (default: the runner starts its "
                         "own mpirun)")
    explore.add_options(group)  # --distmetrics-explore (explore.py)


def backend_markers(table: Tables) -> Dict[str, str]:
    """{backend: its marker's line}, from the runner's backend table."""
    return {name: f"a variant on the {name} backend: {b['description']}" for name, b in table.backends.items()}


def pytest_configure(config):
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
    session = DistmetricsSession(config)
    config.pluginmanager.register(session, DistmetricsSession.NAME)
    if config.option.markers:  # `pytest --markers` lists the backends' too; other runs register them as items are made
        try:
            session.register_markers(backend_markers(session.tables()))
        except (RunnerError, TablesError):
            pass


def pytest_collect_file(file_path: Path, parent):
    if file_path.suffix != ".toml":
        return None
    session = parent.config.pluginmanager.get_plugin(DistmetricsSession.NAME)
    if session is None or not session.collects(file_path):
        return None
    return ScenarioFile.from_parent(parent, path=file_path)


def item_timeout(timeout: Optional[float], deadline_option: Optional[float],
                 listed_deadline: Optional[float]) -> float:
    """An item's hard timeout: --distmetrics-timeout, else the variant's deadline plus GRACE,
    the deadline being --distmetrics-deadline, else the listing's, else DEFAULT_DEADLINE."""
    if timeout is not None:
        return timeout
    deadline = deadline_option or listed_deadline or DEFAULT_DEADLINE
    return deadline + GRACE


class DistmetricsSession:
    """What every item of one pytest run shares: the runner, the selection, the listings."""
    NAME = "distmetrics-session"

    def __init__(self, config):
        self.config = config
        self.rootdir = Path(config.rootpath)
        invocation = Path(config.invocation_params.dir)
        dirs = config.getoption("scenario_dir") or [str(self.rootdir / "scenarios")]
        self.scenario_dirs = [(invocation / d).resolve() for d in dirs]
        self.explicit_files = {(invocation / a.split("::")[0]).resolve()
                               for a in config.args if a.split("::")[0].endswith(".toml")}
        self.selection = Selection(config.getoption("backend"), config.getoption("world_sizes"))
        self.deadline: Optional[float] = config.getoption("distmetrics_deadline")
        self.timeout: Optional[float] = config.getoption("distmetrics_timeout")
        mpirun = config.getoption("mpirun")
        self.mpirun: Optional[List[str]] = mpirun.split() if mpirun else None
        self._runner: Optional[List[str]] = None
        self._runner_error: Optional[RunnerError] = None
        self._listings: Dict[Tuple[str, ...], object] = {}
        self.outcomes: Counter = Counter()
        self.isolate: bool = config.getoption("distmetrics_isolate")
        self.allow_python: bool = config.getoption("distmetrics_allow_python")
        self.python: Optional[str] = config.getoption("distmetrics_python")
        if self.python and self.python.split(":")[0].endswith(".py"):  # a file: from where pytest started
            self.python = str((Path(config.invocation_params.dir) / self.python).resolve())
        self._stream: Optional[StreamRunner] = None
        self._stream_dir: Optional[Path] = None
        self.leftovers: List[int] = []  # pids the last runner left behind at the end
        self.kept_log = False  # an item failed: keep the runner's folder for its log

    def tables(self) -> Tables:
        """The runner's tables (outcomes, exit codes, backends: `distmetrics tables --json`), read once."""
        try:
            return tables(self.runner())
        except TablesError as error:
            raise RunnerError(str(error)) from None

    def outcome(self, name: str) -> str:
        """An outcome the plugin gives itself (a hard timeout is a hang), checked against the table."""
        try:
            return self.tables().outcome(name)
        except TablesError as error:
            raise RunnerError(str(error)) from None

    def register_markers(self, markers: Dict[str, str]) -> set:
        """Registers each marker not registered yet (so that -m and --strict-markers work); returns
        the names registered."""
        registered = self.config.stash.setdefault(_REGISTERED_MARKERS, set(MARKERS))
        for name, text in markers.items():
            if name not in registered:
                registered.add(name)
                self.config.addinivalue_line("markers", f"{name}: {text}")
        return registered

    # --- the long-lived runner ----------------------------------------------------------------
    def isolates(self, variant: Variant) -> bool:
        """Whether the item gets a runner of its own: with --distmetrics-isolate, and for the
        variants --mpirun starts (each is its own MPI job)."""
        return (self.isolate or self.python is not None
                or (variant.started_by_mpirun and self.mpirun is not None))

    def stream_runner(self) -> StreamRunner:
        """This process's `distmetrics serve` (one per xdist worker), started on first use."""
        if self._stream is not None and not self._stream.alive():
            self.drop_stream_runner()
        if self._stream is None:
            if self._stream_dir is None:
                # In the system's temporary folder, not under pytest's basetemp: the rank pool's
                # Unix socket lives in TMPDIR, and a socket path may hold 107 bytes only.
                self._stream_dir = Path(tempfile.mkdtemp(prefix="distmetrics-serve-"))
            env = dict(os.environ, TMPDIR=str(self._stream_dir))
            if os.geteuid() == 0:  # the runner starts mpirun itself for variants whose launch is mpirun
                env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
            self._stream = StreamRunner(serve_command(self.runner(), self.deadline, self.allow_python),
                                        cwd=str(self.rootdir), env=env,
                                        log_path=str(self._stream_dir / "runner.log"))
        return self._stream

    def _start_stream_runner_early(self) -> None:
        """Starts the long-lived runner as collection begins listing, so that loading its binary
        (about 0.3 s, as long as the listing itself) happens beside the listing and pytest's
        collection rather than before the first item. Only where items will use it; a runner
        that cannot start is reported by the listing or the first item, as before."""
        if (self._stream is not None or self.isolate or self.python is not None
                or self.config.option.collectonly):
            return
        try:
            self.stream_runner()
        except (RunnerError, OSError):
            pass

    def drop_stream_runner(self) -> None:
        """Ends the runner (after a hang or when it died); the next item starts a fresh one."""
        if self._stream is not None:
            self._stream.kill()
            self._stream = None

    def pytest_sessionfinish(self, session):
        if self._stream is not None:
            self.leftovers = self._stream.close()
            self._stream = None
        # The runner's folder (its TMPDIR and log) is kept when an item did not pass: the
        # failure message names its log.
        if self._stream_dir is not None and not self.kept_log:
            shutil.rmtree(self._stream_dir, ignore_errors=True)

    # --- collection --------------------------------------------------------------------------
    def collects(self, path: Path) -> bool:
        path = path.resolve()
        return path in self.explicit_files or self.scenario_dir_of(path) is not None

    def scenario_dir_of(self, path: Path) -> Optional[Path]:
        for folder in self.scenario_dirs:
            if folder == path or folder in path.parents:
                return folder
        return None

    def runner(self) -> List[str]:
        if self._runner is None and self._runner_error is None:
            try:
                self._runner = find_runner(self.config.getoption("distmetrics_bin"), self.rootdir,
                                           Path(self.config.invocation_params.dir))
            except RunnerError as error:
                self._runner_error = error
        if self._runner_error is not None:
            raise self._runner_error
        return self._runner

    def cli_path(self, path: Path) -> str:
        """A path as given to the CLI (which runs in the rootdir): relative when inside it, so
        that the CLI's reproduce commands read as a person would type them."""
        try:
            return str(path.resolve().relative_to(self.rootdir))
        except ValueError:
            return str(path.resolve())

    def _listing(self, paths: Tuple[str, ...]) -> List[Variant]:
        """One `list --json` per folder (not per file: starting the runner costs time)."""
        if paths not in self._listings:
            self._start_stream_runner_early()
            try:
                self._listings[paths] = list_variants(self.runner(), paths, self.selection,
                                                      self.rootdir, self.allow_python)
                for variant in self._listings[paths]:
                    variant.listed_from = paths[0]
                self.register_markers(backend_markers(self.tables()))
            except RunnerError as error:
                self._listings[paths] = error
        found = self._listings[paths]
        if isinstance(found, RunnerError):
            raise found
        return found

    def variants_for(self, path: Path) -> List[Variant]:
        path = path.resolve()
        folder = self.scenario_dir_of(path)
        if folder is not None:
            try:
                return [v for v in self._listing((self.cli_path(folder),)) if v.file == path]
            except RunnerError:
                pass  # e.g. another file of the folder is broken: list this file on its own
        return [v for v in self._listing((self.cli_path(path),)) if v.file == path]

    def run_path(self, variant: Variant) -> str:
        """What to give `distmetrics run` for one variant: its file, as a person would (and the
        runner's own reproduce command does), when the runner names the scenario the same way
        from the file alone, i.e. relative to its nearest enclosing folder called "scenarios",
        else its file's folder; otherwise the path it was listed from, which always agrees."""
        file = variant.file
        root = next((p for p in file.parents if p.name == "scenarios"), file.parent)
        if str(file.relative_to(root).with_suffix("")) == variant.scenario:
            return self.cli_path(file)
        return variant.listed_from or self.cli_path(file)

    def hard_timeout(self, variant: Variant) -> float:
        return item_timeout(self.timeout, self.deadline, variant.deadline)

    # --- reporting ---------------------------------------------------------------------------
    def pytest_report_header(self, config):
        try:
            runner = " ".join(self.runner())
        except RunnerError:
            runner = "not found (see --distmetrics-bin)"
        flags = " ".join(self.selection.flags()) or "all backends and world sizes"
        return [f"distmetrics: runner {runner}; selection: {flags}"]

    def pytest_runtest_logreport(self, report):
        for name, value in report.user_properties:
            if name == OUTCOME_PROPERTY and report.when == "call":
                self.outcomes[value] += 1
        if report.when == "setup" and report.skipped and "distmetrics" in report.keywords:
            self.outcomes[self.outcome("skip")] += 1  # skipped by the listing

    def pytest_terminal_summary(self, terminalreporter):
        if self.leftovers:
            terminalreporter.write_line(
                f"distmetrics: the runner left processes behind at the end (pids "
                f"{self.leftovers}); they were ended", red=True)
        if not self.outcomes:
            return
        # As the runner's last line: in the outcome table's order, those it counts even at 0, any
        # other when it occurred (and one the table does not know last).
        try:
            table = self.tables()
        except RunnerError as error:
            terminalreporter.write_line(f"distmetrics variants: {dict(self.outcomes)} ({error})")
            return
        always = table.outcomes_counted_when_zero()
        shown = [o for o in table.outcome_names if o in always or self.outcomes[o]]
        shown += sorted(o for o in self.outcomes if o not in table.outcomes and self.outcomes[o])
        counts = ", ".join(f"{self.outcomes[o]} {o}" for o in shown)
        terminalreporter.write_line(f"distmetrics variants: {counts}")


class ScenarioFile(pytest.File):
    """One scenario file; its items are the variants the runner lists for it."""

    def collect(self):
        session: DistmetricsSession = self.config.pluginmanager.get_plugin(DistmetricsSession.NAME)
        for variant in session.variants_for(self.path):
            yield VariantItem.from_parent(self, name=variant.short_name, variant=variant)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, RunnerError):
            return f"{self.path}: {excinfo.value}"
        return super().repr_failure(excinfo)  # pytest.Collector.repr_failure takes the excinfo alone


class VariantProblem(Exception):
    """A variant that did not pass; the message says everything the report says."""


@dataclass
class ItemRun:
    """How one item's run went, whichever runner ran it."""
    entry: Optional[dict] = None          # the variant's report object
    timed_out: bool = False               # the hard timeout ended the runner
    returncode: Optional[int] = None      # the runner's exit status, when it exited
    seconds: float = 0.0
    ended_pids: List[int] = field(default_factory=list)
    survivors: List[int] = field(default_factory=list)
    leftover_pids: List[int] = field(default_factory=list)
    unreadable: Optional[str] = None      # why the runner's answer could not be read
    runner_line: str = ""                 # "runner: ..." for the failure message
    log_tail: Callable[..., str] = lambda lines=40: ""


class VariantItem(pytest.Item):
    def __init__(self, *, variant: Variant, **kwargs):
        super().__init__(**kwargs)
        self.variant = variant
        markers = ["distmetrics", variant.backend, *variant.markers]
        session = self._session()
        for name in dict.fromkeys(markers):
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                continue
            # A backend the listing registered already (session._listing); any other is a scenario tag.
            session.register_markers({name: "a distmetrics scenario tag"})
            self.add_marker(name)
        if variant.skip:
            self.add_marker(pytest.mark.skip(reason=variant.skip))

    def _session(self) -> DistmetricsSession:
        return self.config.pluginmanager.get_plugin(DistmetricsSession.NAME)

    def _workdir(self) -> Path:
        """A fresh folder for this item's report, log and the runner's TMPDIR."""
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", self.variant.id)[-60:]
        factory = getattr(self.config, "_tmp_path_factory", None)
        if factory is not None:
            return factory.mktemp(name, numbered=True)
        return Path(tempfile.mkdtemp(prefix=name + "-"))

    def runtest(self):
        session = self._session()
        variant = self.variant
        command = run_command(session.runner(), variant, session.run_path(variant), None,
                              session.deadline, session.mpirun, allow_python=session.allow_python)
        reproduce = reproduce_command(command, session.rootdir)
        self.user_properties.append(("variant", variant.id))
        self.user_properties.append(("reproduce", reproduce))
        timeout = session.hard_timeout(variant)
        if session.isolates(variant):
            run = self._run_isolated(session, timeout)
        else:
            run = self._run_streamed(session, timeout)

        def problem(headline: str, entry=None, tail: bool = True) -> VariantProblem:
            lines = [describe_variant(entry)] if entry else [f"{variant.id}: {headline}"]
            if entry and headline:
                lines.append(headline)
            lines.append(run.runner_line)
            lines.append(f"reproduce: {reproduce}")
            if tail and run.log_tail().strip():
                lines.append("runner output (last lines):")
                lines += ["    " + line for line in run.log_tail(30).rstrip().splitlines()]
            return VariantProblem("\n".join(lines))

        survivors = (f"; still alive after KILL: {run.survivors}" if run.survivors else "")
        table = session.tables()
        if run.timed_out:
            self.user_properties.append((OUTCOME_PROPERTY, table.outcome("hang")))
            raise problem(f"HANG: no result within the item's hard timeout of {timeout:g} s; ended "
                          f"the runner and its ranks (pids {run.ended_pids}){survivors}")
        if run.unreadable:
            self.user_properties.append((OUTCOME_PROPERTY, table.outcome("error")))
            raise problem(f"ERROR: the runner's report is unreadable: {run.unreadable}")
        entry = run.entry
        leftovers = ""
        if run.leftover_pids:
            leftovers = (f"the runner exited but left processes running (pids "
                         f"{run.leftover_pids}); they were ended{survivors}")
        if entry is None:
            self.user_properties.append((OUTCOME_PROPERTY, table.outcome("error")))
            raise problem(f"ERROR: the runner ({describe_returncode(run.returncode)}) wrote no "
                          f"report for this variant. {leftovers}".strip())
        outcome = str(entry.get("outcome"))
        self.user_properties.append((OUTCOME_PROPERTY, outcome))
        if leftovers:
            raise problem(f"LEFT PROCESSES BEHIND: {leftovers}", entry)
        if not entry.get("outcome"):
            raise problem("the runner's report gives this variant no outcome", entry)
        if outcome == table.outcome("pass"):
            if run.returncode not in (table.exit_code(outcome), None):
                raise problem(f"the report says pass but the runner ended with "
                              f"{describe_returncode(run.returncode)}", entry)
            return
        if outcome == table.outcome("skip"):
            # Placed at the scenario file (as a skip from the listing is), not at this line.
            raise pytest.skip.Exception(entry.get("reason") or "skipped by distmetrics",
                                        _use_item_location=True)
        # Any other outcome did not pass; all but a failed property show the runner's output.
        raise problem("", entry, tail=outcome != table.outcome("fail"))

    def _run_streamed(self, session: "DistmetricsSession", timeout: float) -> "ItemRun":
        """Asks this process's long-lived runner (`distmetrics serve`) for the variant."""
        variant = self.variant
        runner = session.stream_runner()
        answer = runner.ask({"path": session.run_path(variant), "id": variant.id}, timeout)
        run = ItemRun(entry=answer.entry, timed_out=answer.timed_out, seconds=answer.seconds,
                      ended_pids=answer.ended_pids, survivors=answer.survivors,
                      log_tail=answer.log_tail)
        if answer.timed_out or answer.entry is None:
            session.drop_stream_runner()  # the next item starts a fresh one
            run.returncode = answer.returncode
        if answer.bad_line is not None:
            run.unreadable = f"it answered a line that is no JSON object: {answer.bad_line!r}"
        elif answer.entry is not None and answer.entry.get("id") != variant.id:
            run.unreadable = f"it answered for {answer.entry.get('id')!r}"
            run.entry = None
        if answer.entry is None or not session.tables().passed(answer.entry.get("outcome")):
            session.kept_log = True
        state = ("ended" if answer.timed_out or answer.entry is None else "answered")
        run.runner_line = (f"runner: `distmetrics serve` (pid {runner.pid}) {state} after "
                           f"{answer.seconds:.1f} s"
                           + (f", {describe_returncode(answer.returncode)}"
                              if answer.entry is None and not answer.timed_out else "")
                           + f"; its log: {runner.log_path}")
        return run

    def _run_isolated(self, session: "DistmetricsSession", timeout: float) -> "ItemRun":
        """Runs the variant with a runner of its own (`distmetrics run ... --json`)."""
        variant = self.variant
        workdir = self._workdir()
        report = workdir / "report.json"
        command = run_command(session.runner(), variant, session.run_path(variant), report,
                              session.deadline, session.mpirun,
                              python=session.python, allow_python=session.allow_python)
        # A short TMPDIR of its own: the rank pool's Unix socket path may hold 107 bytes only.
        short_tmp = tempfile.mkdtemp(prefix="distmetrics-item-")
        env = dict(os.environ, TMPDIR=short_tmp)
        if variant.started_by_mpirun and os.geteuid() == 0:
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        try:
            done = run_with_timeout(command, timeout, str(workdir / "runner.log"),
                                    cwd=str(session.rootdir), env=env)
        finally:
            shutil.rmtree(short_tmp, ignore_errors=True)
        run = ItemRun(timed_out=done.timed_out, returncode=done.returncode, seconds=done.seconds,
                      ended_pids=done.ended_pids, survivors=done.survivors,
                      leftover_pids=done.leftover_pids, log_tail=done.log_tail,
                      runner_line=(f"runner: {describe_returncode(done.returncode)} after "
                                   f"{done.seconds:.1f} s; log and report in {workdir}"))
        table = session.tables()  # conform's "nothing to check here" (harness/tables.h) is a skip
        if session.python and done.returncode == table.exit_code("bad_input") and any(
                text in done.log_tail(60) for text in table.conform_nothing_to_check):
            raise pytest.skip.Exception(f"the Python source {session.python} provides no metric for "
                                        f"this scenario", _use_item_location=True)
        if not done.timed_out:
            try:
                run.entry = read_variant(report, variant.id)
            except ValueError as error:
                run.unreadable = str(error)
        return run

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, (VariantProblem, RunnerError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        # A line number is needed for pytest to place a skip raised at run time.
        return self.path, 0, f"distmetrics {self.variant.id}"


def pytest_collection_modifyitems(session, config, items):
    """--distmetrics-explore: one `distmetrics explore` item per metric (explore.py)."""
    explore.add_items(session, config, items)
