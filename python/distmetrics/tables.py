"""The runner's tables, read from the C++ side instead of copied: exit codes, outcomes,
properties (and the default list), backends, shard policies, placements, the fields of a scenario
file, the reference metrics' parameters and how a metric source is spelled.

They come from `distmetrics tables --json` (docs/cli-contract.md, "tables"), run once per
binary and cached; inside the runner's own interpreter (a Python metric's rank, `conform
--python`) from the embedded module instead, with no process started. No Python file of this
package or of peers/ spells these lists (python/tests/test_tables.py fails when one does).

    from distmetrics.tables import tables
    t = tables()                      # $DISTMETRICS_BIN, else build/bin/distmetrics, else PATH
    t.passed("skip"), t.not_passed, t.exit_codes["bad_input"], t.backend_names
"""

import functools
import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

TIMEOUT = 60.0  # seconds: the command loads the runner's library (about 0.3 s) and prints
FORMAT = 1      # harness/tables.h's kTablesFormat this module reads
_REPO = Path(__file__).resolve().parents[2]  # a source checkout: <repo>/python/distmetrics/tables.py


class TablesError(RuntimeError):
    """The tables could not be read: the message names the binary and what to do."""


class Tables:
    """One reading of the tables (the JSON object, as `raw`), with the questions callers ask."""

    def __init__(self, raw: Dict[str, Any], origin: str):
        self.raw = raw
        self.origin = origin  # the command that printed them, or the embedded module
        if raw.get("format") != FORMAT:
            raise TablesError(f"{origin} printed tables of format {raw.get('format')!r}; this distmetrics "
                              f"package reads format {FORMAT}: use the distmetrics binary of the same build "
                              f"(DISTMETRICS_BIN) or reinstall the package beside it")
        self.exit_codes: Dict[str, int] = dict(raw["exit_codes"])
        self.outcomes: Dict[str, Dict[str, Any]] = {o["name"]: o for o in raw["outcomes"]}
        self.properties: Dict[str, Dict[str, Any]] = {p["name"]: p for p in raw["properties"]}
        self.default_properties: List[str] = list(raw["default_properties"])
        self.default_script: List[str] = list(raw["default_script"])  # what a scenario without one runs
        self.backends: Dict[str, Dict[str, Any]] = {b["name"]: b for b in raw["backends"]}
        # The launcher table (runtime/launchers.h): {"name", "peers", "through_mpi", "pool_launch",
        # "pool_through_mpirun", ...}; a variant's "launch" is one's pool_launch. Absent from an
        # older build's tables, as is property_skips: a skipped property result's "why".
        self.launchers: Dict[str, Dict[str, Any]] = {launcher["name"]: launcher for launcher in raw.get("launchers", [])}
        self.property_skips: Dict[str, Dict[str, Any]] = {s["name"]: s for s in raw.get("property_skips", [])}
        self.shard_policies: Dict[str, Dict[str, Any]] = {s["name"]: s for s in raw["shard_policies"]}
        self.placements: Dict[str, Dict[str, Any]] = {p["name"]: p for p in raw["placements"]}
        # Data generators: {"name", "structured"} (structured samples have no label to order by).
        self.generators: Dict[str, Dict[str, Any]] = {g["name"]: g for g in raw["generators"]}
        # The error types an [expect] error may name (the peers' plan for a compute that raises).
        self.expected_errors: List[str] = list(raw["expected_errors"])
        # The fields a scenario file may hold ({"name": "data.seed", "section", "key", "type",
        # "default", "required", "choices", "docs"}): what distmetrics.scenario_toml checks a file
        # against. Absent from an older build's tables (a field added keeps the format).
        self.scenario_fields: List[Dict[str, Any]] = list(raw.get("scenario_fields", []))
        self.reference_metrics: Dict[str, List[Dict[str, Any]]] = {
            m["name"]: m["params"] for m in raw["reference_metrics"]}
        self.python_prefix: str = raw["metric_sources"]["python"]
        # What `conform` says when the source it checks has nothing to check there (exit bad_input).
        self.conform_nothing_to_check: List[str] = list(raw["conform_nothing_to_check"])

    # --- outcomes ---------------------------------------------------------------------------------
    @property
    def outcome_names(self) -> List[str]:
        """Every outcome, in report order (pass first, skip last)."""
        return list(self.outcomes)

    def outcome(self, name: str) -> str:
        """`name`, checked to be an outcome of the table (a TablesError names the ones there are):
        for code that gives a verdict of its own (the pytest plugin's hard timeout is a hang)."""
        if name not in self.outcomes:
            raise TablesError(f"{self.origin} has no outcome {name!r} (its outcomes: {', '.join(self.outcomes)})")
        return name

    def passed(self, outcome: Any) -> bool:
        """Whether a variant with this outcome passed (pass and skip); an outcome the table does not
        know did not (docs/cli-contract.md: treat any other outcome as not passed)."""
        return bool(self.outcomes.get(outcome, {}).get("passed", False))

    @property
    def not_passed(self) -> Tuple[str, ...]:
        """The outcomes that did not pass (the findings: fail, hang, crash, ...), in report order."""
        return tuple(name for name, o in self.outcomes.items() if not o["passed"])

    @property
    def passed_outcomes(self) -> Tuple[str, ...]:
        return tuple(name for name, o in self.outcomes.items() if o["passed"])

    def outcomes_counted_when_zero(self) -> List[str]:
        """The outcomes the runner's last line counts even at 0, in report order."""
        return [name for name, o in self.outcomes.items() if o["counted_when_zero"]]

    # --- exit codes ---------------------------------------------------------------------------------
    def exit_code(self, name: str) -> int:
        """The exit code named `name` ("bad_input", or an outcome's)."""
        if name not in self.exit_codes:
            raise TablesError(f"{self.origin} has no exit code {name!r} (its exit codes: {', '.join(self.exit_codes)})")
        return self.exit_codes[name]

    # --- launchers, property skips -------------------------------------------------------------
    def launcher_of_pool_launch(self, launch: str) -> Dict[str, Any]:
        """The launcher whose way of starting a local pool's workers is `launch` (a variant's
        "launch" in `distmetrics list --json`): its "name" is what --launcher says to a process it
        started, its "pool_through_mpirun" whether mpirun starts them."""
        for launcher in self.launchers.values():
            if launcher.get("pool_launch") == launch:
                return launcher
        known = [launcher["pool_launch"] for launcher in self.launchers.values() if launcher.get("pool_launch")]
        raise TablesError(f"{self.origin} has no launcher whose pool launch is {launch!r} (its pool launches: "
                          f"{', '.join(known)})")

    def property_skip(self, name: str) -> str:
        """`name`, checked to be a "why" of a skipped property result (not_judged, not_applicable)."""
        if name not in self.property_skips:
            raise TablesError(f"{self.origin} has no property skip {name!r} (its property skips: "
                              f"{', '.join(self.property_skips)})")
        return name

    # --- properties, backends, shard policies ---------------------------------------------------
    def property_name(self, name: str) -> str:
        """`name`, checked to be a property of the table."""
        if name not in self.properties:
            raise TablesError(f"{self.origin} has no property {name!r} (its properties: {', '.join(self.properties)})")
        return name

    @property
    def backend_names(self) -> List[str]:
        return list(self.backends)

    @property
    def shard_policy_names(self) -> List[str]:
        return list(self.shard_policies)

    # --- reference metrics --------------------------------------------------------------------------
    def reference_defaults(self, metric: str) -> Dict[str, Any]:
        """{parameter: default} of a reference metric, its required parameters left out; {} for a
        name that is no reference metric."""
        return {p["name"]: p["default"] for p in self.reference_metrics.get(metric, []) if not p["required"]}

    def reference_param_names(self) -> set:
        """Every parameter name a reference metric takes, with its aliases ("num_labels")."""
        return {name for params in self.reference_metrics.values() for p in params
                for name in (p["name"], *p.get("aliases", []))}

    # --- metric sources ------------------------------------------------------------------------------
    def python_source(self, source: Optional[str]) -> Optional[str]:
        """The spec of a Python source as a report's "source" (or a metric's identity) spells it
        ("python:<spec>" today), else None (a plugin's path, a registered metric)."""
        if source and source.startswith(self.python_prefix):
            return source[len(self.python_prefix):]
        return None

    def source_path(self, source: Optional[str]) -> str:
        """What a report's "source" names: a Python source's spec (its prefix taken off), a
        plugin's library path as it is; "" for none."""
        return self.python_source(source) or source or ""

    def python_source_text(self, spec: str) -> str:
        """How a report spells the Python source `spec`: the inverse of python_source()."""
        return self.python_prefix + spec


def find_binary(binary: Union[None, str, Sequence[str]] = None) -> List[str]:
    """The command that prints the tables: `binary` (a path, or a command line such as
    "python3 fake.py"), else $DISTMETRICS_BIN, else build/bin/distmetrics of this source
    checkout, else `distmetrics` on PATH."""
    given: Union[None, str, Sequence[str]] = binary or os.environ.get("DISTMETRICS_BIN")
    if given:
        if isinstance(given, str):
            return [given] if Path(given).is_file() else shlex.split(given)
        return list(given)
    built = _REPO / "build" / "bin" / "distmetrics"
    if built.is_file() and os.access(built, os.X_OK):
        return [str(built)]
    on_path = shutil.which("distmetrics")
    if on_path:
        return [on_path]
    raise TablesError("the distmetrics binary was not found (not in $DISTMETRICS_BIN, not at "
                      f"{built}, not on PATH): build it (cmake --build build --target distmetrics) "
                      "or set DISTMETRICS_BIN to it; its tables (`distmetrics tables --json`) are "
                      "what this code reads instead of copies")


@functools.lru_cache(maxsize=None)
def _read(command: Tuple[str, ...]) -> Tables:
    shown = " ".join(shlex.quote(c) for c in command) + " tables --json"
    try:
        done = subprocess.run([*command, "tables", "--json"], capture_output=True, text=True, timeout=TIMEOUT)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise TablesError(f"`{shown}` could not run ({e}): set DISTMETRICS_BIN to a built distmetrics "
                          f"binary (build/bin/distmetrics)") from None
    if done.returncode != 0:
        raise TablesError(f"`{shown}` exited {done.returncode}: {(done.stderr or done.stdout).strip()[:500]} "
                          f"(a binary older than the `tables` command? rebuild it, or set DISTMETRICS_BIN "
                          f"to one of this checkout)")
    try:
        raw = json.loads(done.stdout)
    except ValueError as e:
        raise TablesError(f"`{shown}` printed no JSON ({e}): {done.stdout[:200]!r}") from None
    return Tables(raw, f"`{shown}`")


@functools.lru_cache(maxsize=None)
def _embedded() -> Optional[Tables]:
    """The tables of the runner this interpreter runs in, or None outside it."""
    try:
        import _distmetrics_host  # the embedded C++ module (pyhost/src/interpreter.cpp)
    except ImportError:
        return None
    tables_json = getattr(_distmetrics_host, "tables_json", None)
    return Tables(json.loads(tables_json()), "the embedded distmetrics runner") if tables_json else None


def tables(binary: Union[None, str, Sequence[str]] = None) -> Tables:
    """The tables of `binary` (see find_binary); with none given, inside the runner's interpreter,
    the runner's own. Read once per binary; TablesError says what went wrong and what to do."""
    if binary is None:
        embedded = _embedded()
        if embedded is not None:
            return embedded
    return _read(tuple(find_binary(binary)))
