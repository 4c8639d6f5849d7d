"""Writes the scenario files of the classes checked against themselves (the `OWN` rows of
peers/<library>/metrics.py, python/distmetrics/peers.py `Own`): one file per class and entry of
its variant plan (`OWN_PLAN`), OUT/scenarios/<library>/<Class>.toml (3 ranks),
<Class>.ws2.toml (2 ranks, an even split), <Class>.ws4.toml (4 ranks, even and the sampler's
deal), <Class>.logits.toml (Binary and Multilabel classes fed logits), where the even splits
die on a known mechanism, <Class>.equal.toml (every rank the same updates), and where the class's
compute() before any update raises, <Class>.raises.toml (what comes after the raise; a class whose
compute there kills its process is named on the output instead), read by `distmetrics conform` like any scenario file
(ci/run_peers.sh passes OUT/scenarios beside scenarios/). Run with the libraries importable (the
torch 2.x venv's python, or Debian's with the peers venv).

    python peers/scenarios.py --out DIR [--library NAME]...

Which classes raise is asked of each class, not declared: `--probe LIBRARY` builds every row's
class in this process, calls its compute() before any update and prints what happened; the writer
runs it in a process of its own (a compute that crashes takes only that process: it is restarted
after the class) and keeps the answers in ~/.cache/distmetrics/probes/ (keyed by the library's and
torch's versions and the mapping's and peers.py's text), so a second run asks nothing.
"""

import argparse
import hashlib
import importlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# peers/ holds folders named after the libraries (peers/torchmetrics/...): never import from it.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "peers"]
sys.path.insert(0, str(ROOT / "python"))
LIBRARIES = ("torchmetrics", "ignite", "torcheval")


def load(library):
    """The library's mapping module, imported afresh (its registrations alone in the registry)."""
    from distmetrics import registry

    registry._REGISTRY.clear()
    spec = importlib.util.spec_from_file_location(f"peers_{library}", ROOT / "peers" / library / "metrics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def write(out, libraries=LIBRARIES):
    """Writes every library's files under OUT/scenarios/<library>/ (each folder made afresh);
    returns the number of files."""
    from distmetrics.peers import (OWN_PLAN, OWN_PLAN_EQUAL_UPDATES, OWN_PLAN_LOGITS, OWN_PLAN_RAISES, own_scenario,
                                   takes_logits)

    count = 0
    for library in libraries:
        module = load(library)
        computes = probe(library)
        dying = known_deaths(library)
        folder = Path(out) / "scenarios" / library
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        # OWNED: the rows registered for the installed release (none on a release older than the
        # one they were triaged on: register_own's `since`).
        for row in getattr(module, "OWNED", {}).values():
            stem = row.name.split(".", 1)[1].replace("[", "_").replace("]", "")
            plan = list(OWN_PLAN)
            if takes_logits(row):
                plan.append(OWN_PLAN_LOGITS)
            scenario = f"{library}/{stem}"
            # Where the 2-rank and the 4-rank even splits both die on a known mechanism (expected.toml),
            # the plan where every rank makes the same updates.
            if dying(scenario + ".ws2", [f"{scenario}.ws2:gloo-ws2-even-cpu"], row.name) and \
                    dying(scenario + ".ws4", [f"{scenario}.ws4:gloo-ws4-even-cpu"], row.name):
                plan.append(OWN_PLAN_EQUAL_UPDATES)
            for suffix, world_sizes, shards, *rest in plan:
                (folder / f"{stem}{suffix}.toml").write_text(own_scenario(row, library, world_sizes, shards, *rest))
                count += 1
            before_update = computes.get(row.name, {})
            if before_update.get("outcome") == "raises" and not row.only:
                suffix, world_sizes, shards, data_sizes = OWN_PLAN_RAISES
                (folder / f"{stem}{suffix}.toml").write_text(
                    own_scenario(row, library, world_sizes, shards, data_sizes, raises=before_update["error"]))
                count += 1
            elif before_update.get("outcome") == "crash":
                # No scenario: what kills the process here is undefined behaviour below the class
                # (FrechetAudioDistance: NaN into MKL's eigvals), which in a rank worker sometimes
                # raises instead: an outcome that moves from run to run. The probe's answer is the
                # finding, and its repro (peers/repro/) shows it every time.
                print(f"peers/scenarios.py: {row.name}: compute() before any update killed its process "
                      f"({before_update['error']}); no .raises scenario (see its mechanism's repro)")
    return count


PROBE_MARK = "distmetrics-probe\t"
PROBE_TIMEOUT = 600  # seconds for one probing process (all of a library's classes built once)


def probe_rows(library, after=None):
    """In this process: builds each Own row's metric of `library` (its registration's factory)
    and calls its compute (the registration's, else the class's) before any update; prints
    "start NAME" before and "done NAME OUTCOME ERROR" after each, on stdout, each line flushed.
    Rows up to and including `after` are passed over (a restart after a crash)."""
    import warnings

    from distmetrics import registry

    warnings.filterwarnings("ignore")
    module = load(library)
    names = list(getattr(module, "OWNED", {}))
    if after in names:
        names = names[names.index(after) + 1:]
    for name in names:
        reg = registry._REGISTRY[name]
        print(f"{PROBE_MARK}start\t{name}", flush=True)
        try:
            metric = reg.factory({})
            reg.compute(metric) if reg.compute else metric.compute()
            outcome, error = "value", ""
        except Exception as e:  # noqa: BLE001 (the type is the answer)
            outcome, error = "raises", type(e).__name__
        print(f"{PROBE_MARK}done\t{name}\t{outcome}\t{error}", flush=True)


def _probe_key(library):
    """The cache key of a library's answers: its version (the module write() loaded has imported
    it), torch's, and the text of what builds the rows."""
    import torch

    digest = hashlib.sha256()
    for part in (library, importlib.import_module(library).__version__, torch.__version__):
        digest.update(part.encode() + b"\0")
    for path in (ROOT / "peers" / library / "metrics.py", ROOT / "python" / "distmetrics" / "peers.py", Path(__file__)):
        digest.update(path.read_bytes())
    return digest.hexdigest()[:20]


def probe(library):
    """{row name: {"outcome": "value" | "raises" | "crash", "error": type name or how it died}} for
    every Own row of `library`: probe_rows run in processes of their own (restarted after a row
    whose compute killed its process), kept in the cache."""
    cache = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "distmetrics" / "probes"
    kept = cache / f"{library}-{_probe_key(library)}.json"
    if kept.is_file():
        return json.loads(kept.read_text())
    results, after = {}, None
    while True:
        command = [sys.executable, str(Path(__file__).resolve()), "--probe", library] + (["--after", after] if after else [])
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=PROBE_TIMEOUT)
        except subprocess.TimeoutExpired as e:
            raise SystemExit(f"peers/scenarios.py: probing {library}'s computes took over {PROBE_TIMEOUT} s "
                             f"(last lines: {(e.stdout or '')[-500:]!r})")
        started = None
        for line in done.stdout.splitlines():
            if not line.startswith(PROBE_MARK):
                continue
            fields = line[len(PROBE_MARK):].split("\t")
            if fields[0] == "start":
                started = fields[1]
            elif fields[0] == "done":
                results[fields[1]] = {"outcome": fields[2], "error": fields[3]}
                started = None
        if done.returncode == 0 and started is None:
            break
        if started is None:  # died outside a compute: the mapping or an import, not a class's answer
            raise SystemExit(f"peers/scenarios.py: probing {library}'s computes failed (exit {done.returncode}): "
                             f"{done.stderr.strip()[-800:]}")
        how = f"signal {-done.returncode}" if done.returncode < 0 else f"exit {done.returncode}"
        results[started] = {"outcome": "crash", "error": how}
        after = started
    cache.mkdir(parents=True, exist_ok=True)
    kept.write_text(json.dumps(results, indent=1, sort_keys=True))
    return results


def known_deaths(library):
    """A predicate (scenario, variant ids, metric name) -> whether expected.toml, for the installed
    release, expects every one of those variants to end without a verdict on its properties (a
    hang, crash, error or memory_exceeded). No expected.toml, or a release it does not list: never."""
    import importlib.metadata

    spec = importlib.util.spec_from_file_location("peers_expected", ROOT / "peers" / "expected.py")
    expected = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(expected)
    path = ROOT / "peers" / library / "expected.toml"
    try:
        import torch

        entries, releases = expected.load_expected(path)
        version = importlib.import_module(library).__version__
        entries = expected.for_release(entries, releases, expected.release(version, torch.__version__), path, library)
    except (expected.BadInput, ImportError, AttributeError, importlib.metadata.PackageNotFoundError):
        return lambda scenario, ids, metric: False
    deadly = [e for e in entries if any(o != "fail" for o in e["_outcomes"])]

    def dies(scenario, ids, metric):
        return all(any(expected.covers(e, vid, metric) or expected.covers(e, vid, "") for e in deadly) for vid in ids)
    return dies


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out")
    ap.add_argument("--library", action="append", choices=LIBRARIES)
    ap.add_argument("--probe", choices=LIBRARIES, help="print what each class's compute() before any update does")
    ap.add_argument("--after", help="with --probe: start after this row (a restart after a crash)")
    args = ap.parse_args(argv)
    if args.probe:
        probe_rows(args.probe, args.after)
        return 0
    if not args.out:
        ap.error("--out is required")
    count = write(args.out, args.library or LIBRARIES)
    print(f"peers/scenarios.py: {count} scenario file(s) under {Path(args.out) / 'scenarios'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
