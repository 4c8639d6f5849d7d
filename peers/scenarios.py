"""Writes the scenario files of the classes checked against themselves (the `OWN` rows of
peers/<library>/metrics.py, python/distmetrics/peers.py `Own`): one file per class and entry of
its variant plan (`OWN_PLAN`), OUT/scenarios/<library>/<Class>.toml (3 ranks),
<Class>.ws2.toml (2 ranks, an even split), <Class>.ws4.toml (4 ranks, even and the sampler's
deal), <Class>.logits.toml (Binary and Multilabel classes fed logits) and, where the even splits
die on a known mechanism, <Class>.equal.toml (every rank the same updates), read by `distmetrics conform` like any scenario file
(ci/run_peers.sh passes OUT/scenarios beside scenarios/). Run with the libraries importable (the
torch 2.x venv's python, or Debian's with the peers venv).

    python peers/scenarios.py --out DIR [--library NAME]...
"""

import argparse
import importlib.util
import shutil
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
    from distmetrics.peers import OWN_PLAN, OWN_PLAN_EQUAL_UPDATES, OWN_PLAN_LOGITS, own_scenario, takes_logits

    count = 0
    for library in libraries:
        module = load(library)
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
    return count


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
    ap.add_argument("--out", required=True)
    ap.add_argument("--library", action="append", choices=LIBRARIES)
    args = ap.parse_args(argv)
    count = write(args.out, args.library or LIBRARIES)
    print(f"peers/scenarios.py: {count} scenario file(s) under {Path(args.out) / 'scenarios'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
