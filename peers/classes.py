"""Names the library class each variant of a peer report ran: adds "class": "module:Class" (where
the class is defined) to every variant of a source peers/<library>/metrics.py in the JSON report.
A class checked against itself is its row's; a reference metric's is the mapping row whose `when`
fits the scenario's parameters (its [metric.params] with the reference's defaults, from
`distmetrics tables --json`), as the factory picks it. Run with the libraries importable (the
torch's python of ci/run_peers.sh).

    python peers/classes.py --report REPORT.json --distmetrics build/bin/distmetrics
"""

import argparse
import importlib.util
import inspect
import json
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "peers"]
sys.path.insert(0, str(ROOT / "python"))
from distmetrics.tables import tables  # noqa: E402  (the runner's tables: `distmetrics tables --json`)

LIBRARIES = ("torchmetrics", "ignite", "torcheval")


def qualified(obj):
    """"module:Class" where a class (or a function's declared return class) is defined."""
    if not inspect.isclass(obj):
        returned = inspect.signature(obj).return_annotation
        if isinstance(returned, str):
            returned = getattr(sys.modules[obj.__module__], returned, None)
        obj = returned if inspect.isclass(returned) else obj
    return f"{obj.__module__}:{obj.__qualname__}"


def classes_of(library, module=None):
    """(own: {registered name: "module:Class"}, peers: {registered name: [(when, "module:Class")]}).
    `module`: the library's peers/<library>/metrics.py already loaded (peers/coverage.py's load), else
    it is loaded here."""
    from distmetrics import registry
    from distmetrics.peers import _resolve

    if module is None:
        registry._REGISTRY.clear()
        spec = importlib.util.spec_from_file_location(f"peers_{library}", ROOT / "peers" / library / "metrics.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    own = {name: qualified(_resolve(row)) for name, row in getattr(module, "OWNED", {}).items()}
    peers = {}
    for peer in module.TABLE:
        peers.setdefault(peer.name or peer.reference, []).append((peer.when, qualified(_resolve(peer))))
    return own, peers


def defaults(binary):
    """{reference metric: {parameter: default}} from `distmetrics tables --json`."""
    t = tables(binary)
    return {name: t.reference_defaults(name) for name in t.reference_metrics}


def library_of(variant, binary=None):
    """The library whose peers/<library>/metrics.py the variant's source is, else None."""
    parts = Path(tables(binary).source_path(variant.get("source"))).parts[-2:]
    return next((lib for lib in LIBRARIES if parts == (lib, "metrics.py")), None)


def annotate(report, binary, modules=None):
    """Adds "class" to each variant of a mapped library; returns how many it named. `modules`:
    {library: its mapping module, loaded} where the caller has them (classes_of)."""
    named, params_of, table = 0, {}, {}
    reference_defaults = None
    for v in report.get("variants", []):
        library = library_of(v, binary)
        if library is None:
            continue
        if library not in table:
            table[library] = classes_of(library, (modules or {}).get(library))
        own, peers = table[library]
        name = v.get("metric", "").rsplit(" (", 1)[0]
        if name in own:
            v["class"] = own[name]
            named += 1
            continue
        rows = peers.get(name)
        if not rows:
            continue
        if reference_defaults is None:
            reference_defaults = defaults(binary)
        path = ROOT / v["file"] if not Path(v["file"]).is_absolute() else Path(v["file"])
        if path not in params_of:
            scenario = tomllib.loads(path.read_text())
            params_of[path] = scenario.get("metric", {}).get("params", {})
        params = dict(reference_defaults.get(name.split("[")[0], {}), **params_of[path])
        fitting = [cls for when, cls in rows if when is None or when(params)]
        if fitting:
            v["class"] = fitting[0]
            named += 1
    return named


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", required=True)
    ap.add_argument("--distmetrics", required=True, help="the distmetrics command (for the reference's parameter defaults)")
    args = ap.parse_args(argv)
    report = json.loads(Path(args.report).read_text())
    named = annotate(report, args.distmetrics)
    Path(args.report).write_text(json.dumps(report, indent=1))
    total = sum(1 for v in report.get("variants", []) if library_of(v, args.distmetrics))
    print(f"peers/classes.py: {named} of {total} variants of the mapped libraries name their class")
    return 0


if __name__ == "__main__":
    sys.exit(main())
