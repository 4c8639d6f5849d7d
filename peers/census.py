"""The census of a library's metric classes, read from its installed source with `ast` (nothing
is imported, so a class whose module needs an optional package is counted too): every public
subclass of the library's `Metric`, counted once, in the module that defines it. torchmetrics'
task dispatchers (`Accuracy`, whose `__new__` returns `BinaryAccuracy`, `MulticlassAccuracy` or
`MultilabelAccuracy`) are listed apart with the classes they return: they count through those.

Public: neither the class's name nor any part of its module's path starts with `_`, and the
module is not a test helper. peers/coverage.py builds docs/peers.md's coverage from it, and
pyhost/tests/python/test_peers_census.py fails when the installed release has a class the table
does not list.

    python peers/census.py [--library NAME] [--json]
"""

import argparse
import ast
import importlib.util
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Tuple

# library -> (package, "module:Class" of its Metric base, the base of its task dispatchers)
LIBRARIES = {
    "torchmetrics": ("torchmetrics", "torchmetrics.metric:Metric", "torchmetrics.classification.base:_ClassificationTaskWrapper"),
    "ignite": ("ignite", "ignite.metrics.metric:Metric", None),
    "torcheval": ("torcheval", "torcheval.metrics.metric:Metric", None),
}
# Collections: classes that hold and drive several metrics but are not themselves a subclass of
# the library's Metric (torchmetrics' MetricCollection is a torch ModuleDict), so the scan above
# cannot find them by their base. Declared here; the census lists the ones the installed release
# defines (and their public subclasses) apart from the metric classes. Ignite's MetricsLambda and
# MetricGroup are Metric subclasses (counted as metrics); torcheval's collections are functions of
# its toolkit (sync_and_compute_collection over a dict of metrics), not classes.
COLLECTIONS = {"torchmetrics": ("torchmetrics.collections:MetricCollection",), "ignite": (),
               "torcheval": ("torcheval.metrics.toolkit:sync_and_compute_collection",)}
# Module paths that hold no metric a user builds (a library's own tests and test helpers).
SKIPPED_PARTS = ("tests", "test_utils", "testing")


@dataclass
class ClassInfo:
    module: str
    name: str
    file: str
    line: int
    bases: List[str]                         # resolved "module:Name" where the import says, else the name
    returns: List[str] = field(default_factory=list)  # a dispatcher's __new__: the names it returns

    @property
    def qualified(self):
        return f"{self.module}:{self.name}"

    @property
    def public(self):
        return not self.name.startswith("_") and not any(
            part.startswith("_") and part != "__init__" for part in self.module.split("."))


@dataclass
class Census:
    library: str
    package: str
    version: str
    where: str                               # the package's folder
    metrics: List[ClassInfo]                 # public metric classes, not dispatchers, sorted
    dispatchers: Dict[str, List[str]]        # "module:Class" -> the "module:Class"es it returns
    collections: List[ClassInfo] = field(default_factory=list)  # COLLECTIONS the release defines, and their public subclasses


def _module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve_relative(module: str, is_package: bool, level: int, target: Optional[str]) -> str:
    base = module.split(".") if is_package else module.split(".")[:-1]
    if level > 1:
        base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _imports(tree, module: str, is_package: bool) -> Dict[str, str]:
    """Local name -> "module:Name" (or "module" for a module import), from the module's imports."""
    names = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _resolve_relative(module, is_package, node.level, node.module) if node.level else node.module
            for alias in node.names:
                names[alias.asname or alias.name] = f"{source}:{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                # `import a.b as c` binds c to a.b; `import a.b` binds a.
                if alias.asname:
                    names[alias.asname] = alias.name
                else:
                    names[alias.name.split(".")[0]] = alias.name.split(".")[0]
    return names


def _dotted(node) -> Optional[str]:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = _dotted(node.value)
        return f"{inner}.{node.attr}" if inner else None
    if isinstance(node, ast.Subscript):  # Generic[...] and the like
        return _dotted(node.value)
    return None


def _returned_names(fn) -> List[str]:
    """The class names a dispatcher's __new__ returns (`return BinaryAccuracy(...)`), in source order."""
    found = sorted((node.lineno, _dotted(node.value.func)) for node in ast.walk(fn)
                   if isinstance(node, ast.Return) and isinstance(node.value, ast.Call) and _dotted(node.value.func))
    out = []
    for _, name in found:
        if name not in out:
            out.append(name)
    return out


def _scan(package_dir: Path, root: Path) -> Dict[str, ClassInfo]:
    classes: Dict[str, ClassInfo] = {}
    for path in sorted(package_dir.rglob("*.py")):
        if any(part in SKIPPED_PARTS for part in path.relative_to(root).parts):
            continue
        module = _module_name(path, root)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except (SyntaxError, UnicodeDecodeError):
            continue
        imports = _imports(tree, module, path.name == "__init__.py")
        for node in tree.body:
            if not isinstance(node, ast.ClassDef):
                continue
            bases = []
            for base in node.bases:
                name = _dotted(base)
                if not name:
                    continue
                head, _, rest = name.partition(".")
                if head in imports:
                    target = imports[head]
                    if rest:  # module.Class
                        target = (target.replace(":", ".") if ":" in target else target) + ":" + rest
                    bases.append(target)
                else:
                    bases.append(f"{module}:{name}")  # defined in this module (or a builtin)
            info = ClassInfo(module, node.name, str(path), node.lineno, bases)
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__new__":
                    info.returns = [imports.get(n, f"{module}:{n}") for n in _returned_names(item)]
            classes[info.qualified] = info
    return classes


def _canonical(qualified: str, classes: Dict[str, ClassInfo], seen=None) -> Optional[str]:
    """The "module:Class" where a name is defined, following re-exports (`from .x import Y` in an
    __init__), or None when it is not a class of the package."""
    if qualified in classes:
        return qualified
    seen = seen or set()
    if qualified in seen:
        return None
    seen.add(qualified)
    module, _, name = qualified.partition(":")
    init = _REEXPORTS.get(module, {})
    if name in init:
        return _canonical(init[name], classes, seen)
    return None


_REEXPORTS: Dict[str, Dict[str, str]] = {}


def _collect_reexports(package_dir: Path, root: Path):
    _REEXPORTS.clear()
    for path in sorted(package_dir.rglob("*.py")):
        module = _module_name(path, root)
        try:
            tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        except (SyntaxError, UnicodeDecodeError):
            continue
        _REEXPORTS[module] = {k: v for k, v in _imports(tree, module, path.name == "__init__.py").items() if ":" in v}


def take(library: str) -> Census:
    """The census of the installed release of `library` (a key of LIBRARIES)."""
    package, metric_base, dispatcher_base = LIBRARIES[library]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit(f"peers/census.py: {package} is not installed in this Python ({sys.executable})")
    package_dir = Path(list(spec.submodule_search_locations)[0])
    return of_package(library, package_dir, metric_base, dispatcher_base)


def of_package(library: str, package_dir: Path, metric_base: str, dispatcher_base: Optional[str] = None) -> Census:
    """The census of the package in `package_dir`: its public subclasses of `metric_base`
    ("module:Class"), those of `dispatcher_base` listed apart with the classes they return."""
    package_dir = Path(package_dir)
    root = package_dir.parent
    package = package_dir.name
    version = _version(package_dir)
    _collect_reexports(package_dir, root)
    classes = _scan(package_dir, root)

    def ancestors(q, seen=None) -> set:
        seen = set() if seen is None else seen
        info = classes.get(q)
        if info is None:
            return seen
        for base in info.bases:
            c = _canonical(base, classes) or base
            if c not in seen:
                seen.add(c)
                ancestors(c, seen)
        return seen

    metrics, dispatchers, collections = [], {}, []
    declared = set(COLLECTIONS.get(library, ()))
    for q, info in classes.items():
        up = ancestors(q)
        if info.public and (q in declared or declared & up):
            collections.append(info)
            continue
        if metric_base not in up or not info.public:
            continue
        if dispatcher_base and dispatcher_base in up:
            dispatchers[q] = [_canonical(r, classes) or r for r in info.returns]
            continue
        metrics.append(info)
    metrics.sort(key=lambda i: (i.module, i.name))
    for q in sorted(declared - {c.qualified for c in collections}):  # a declared function (torcheval's toolkit)
        function = _function(package_dir, root, q)
        if function is not None:
            collections.append(function)
    collections.sort(key=lambda i: (i.module, i.name))
    return Census(library, package, version, str(package_dir), metrics, dict(sorted(dispatchers.items())), collections)


def _function(package_dir: Path, root: Path, qualified: str) -> Optional[ClassInfo]:
    """A public top-level function "module:name" of the package's source (a collection that is a
    function), as a ClassInfo without bases; None where the module or the function is not there."""
    module, _, name = qualified.partition(":")
    relative = Path(*module.split("."))
    for path in (root / relative.with_suffix(".py"), root / relative / "__init__.py"):
        if not path.exists() or not path.is_relative_to(package_dir):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name and not name.startswith("_"):
                return ClassInfo(module, name, str(path), node.lineno, [])
    return None


def defined(library: str):
    """A predicate over "module:Class": whether the installed release of `library` defines that
    class (in that module, or re-exported there by an __init__), whatever its base. What the
    mappings' rows consult on a release they were not triaged on (python/distmetrics/peers.py):
    a row whose class this says is not defined is "not in this release"."""
    package, _, _ = LIBRARIES[library]
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return lambda qualified: False
    package_dir = Path(list(spec.submodule_search_locations)[0])
    _collect_reexports(package_dir, package_dir.parent)
    classes = _scan(package_dir, package_dir.parent)
    reexports = dict(_REEXPORTS)

    def holds(qualified: str) -> bool:
        seen = set()
        while qualified not in classes:
            if qualified in seen:
                return False
            seen.add(qualified)
            module, _, name = qualified.partition(":")
            target = reexports.get(module, {}).get(name)
            if target is None:
                return False
            qualified = target
        return True
    return holds


def _version(package_dir: Path) -> str:
    for candidate in ("__about__.py", "__init__.py", "version.py"):
        path = package_dir / candidate
        if not path.exists():
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__version__" for t in node.targets):
                if isinstance(node.value, ast.Constant):
                    return str(node.value.value)
    from importlib import metadata

    names = {"ignite": "pytorch-ignite"}
    try:
        return metadata.version(names.get(package_dir.name, package_dir.name))
    except metadata.PackageNotFoundError:
        return "unknown"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", choices=list(LIBRARIES), action="append")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    out = {}
    for library in args.library or LIBRARIES:
        c = take(library)
        if args.json:
            out[library] = {"version": c.version, "metrics": [m.qualified for m in c.metrics],
                            "dispatchers": c.dispatchers, "collections": [m.qualified for m in c.collections]}
        else:
            print(f"{library} {c.version}: {len(c.metrics)} public metric classes, {len(c.dispatchers)} task dispatchers")
            for m in c.metrics:
                print(f"  {m.qualified}")
            for d, r in c.dispatchers.items():
                print(f"  {d} -> {', '.join(r)}")
            for m in c.collections:
                print(f"  {m.qualified} (a collection)")
    if args.json:
        print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
