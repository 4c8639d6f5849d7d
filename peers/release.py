"""Any release, or a local checkout or wheel, of torchmetrics, PyTorch-Ignite or torcheval, for
the peer run (ci/run_peers.sh --release X.Y.Z / --from PATH): installs it as a layer in front of
the pinned torch venv, checks that it imports, and says what the mapping's rows make of it.

Why a layer and not a venv of its own: distmetrics' embedded interpreter is the python its build
was configured with (the torch venv's, ci/torch2-venv.sh; DISTMETRICS_EMBEDDED_PYTHON), whatever
venv is active, so a release reaches it only through PYTHONPATH (which it honours, in front of
the venv's site-packages). A layer is the release's files alone (`pip install --no-deps --target
LAYER`, 4 MB and about a second for torchmetrics 1.4.0), under
${DISTMETRICS_RELEASES_DIR:-~/.cache/distmetrics/releases}/<library>-<version>, made once and
reused; the same PYTHONPATH serves the scripts around the run (the census, the scenarios, the
repros), run with the torch venv's python. A venv made with --system-site-packages over the
torch venv cannot chain (a venv's base is the interpreter, never another venv), and one with a
.pth to the torch venv's site-packages would still not be the interpreter conform starts.

--no-deps always: the library's own requirements are those of the pinned releases (torch,
numpy, packaging, lightning-utilities...), present in the torch venv; a requirement that is not
met is printed (never installed: pip would pull another torch), and the import check decides.
A release whose metadata requires a torch the run's torch is not (pytorch-ignite 0.4.2:
torch<2) says which torch it needs, and runs with --torch 1.13 where that one fits.

    $PY peers/release.py prepare --library torchmetrics --release 1.4.0     # last line: the PYTHONPATH front
    $PY peers/release.py prepare --library torchmetrics --from ~/src/torchmetrics   # a checkout (or a .whl)
    $PY peers/release.py versions --library ignite                          # the releases on PyPI
    $PY peers/release.py pinned --library torcheval [--torch 1.13]          # the pinned release
    $PY peers/release.py summary --library torchmetrics --report R.json     # with the layer on PYTHONPATH

Exit 0; 2 bad input (an unknown release, one with no wheel for this Python, a release that needs
another torch, a checkout that does not import), each naming what to do; 5 PyPI or pip failed.
Every subprocess runs under a timeout.
"""

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# library -> (the distribution on PyPI, the import name, a submodule the mapping needs)
LIBRARIES = {
    "torchmetrics": ("torchmetrics", "torchmetrics", "torchmetrics.classification"),
    "ignite": ("pytorch-ignite", "ignite", "ignite.metrics"),
    "torcheval": ("torcheval", "torcheval", "torcheval.metrics"),
}
REQUIREMENTS = {"2": ROOT / "ci" / "requirements-torch2.txt", "1.13": ROOT / "peers" / "requirements-torch1.13.txt"}
EXIT_BAD_INPUT, EXIT_SETUP = 2, 5
PIP_TIMEOUT = int(os.environ.get("DISTMETRICS_RELEASE_PIP_TIMEOUT", "300"))
IMPORT_TIMEOUT = int(os.environ.get("DISTMETRICS_RELEASE_IMPORT_TIMEOUT", "300"))


class Failure(Exception):
    def __init__(self, message, code=EXIT_BAD_INPUT):
        super().__init__(message)
        self.code = code


def say(message):
    print(f"peers/release.py: {message}", flush=True)


def releases_dir():
    return Path(os.environ.get("DISTMETRICS_RELEASES_DIR") or Path(
        os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "distmetrics" / "releases")


def run(cmd, timeout, env=None):
    """(exit code, stdout + stderr); a command past its timeout is a Failure naming it."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        raise Failure(f"`{' '.join(map(str, cmd))}` did not finish in {timeout} s (PyPI unreachable? set "
                      f"DISTMETRICS_RELEASE_PIP_TIMEOUT to wait longer)", EXIT_SETUP) from None
    return done.returncode, done.stdout + done.stderr


def pip(python, *args, timeout=PIP_TIMEOUT):
    return run([python, "-m", "pip", "--disable-pip-version-check", "--no-input", *args], timeout)


def pinned(library, torch="2"):
    """The release of `library` the peer run pins for that torch (its requirements file)."""
    dist = LIBRARIES[library][0]
    for line in REQUIREMENTS[torch].read_text().splitlines():
        m = re.match(rf"^{re.escape(dist)}==(\S+)\s*$", line.strip())
        if m:
            return m.group(1)
    raise Failure(f"{REQUIREMENTS[torch]} pins no {dist}")


def versions(python, library):
    """Every release of the library on the index, newest first (any Python, pre-releases too)."""
    dist = LIBRARIES[library][0]
    code, out = pip(python, "index", "versions", dist, "--pre", "--ignore-requires-python", timeout=120)
    m = re.search(r"Available versions: (.*)", out)
    if code != 0 or not m:
        raise Failure(f"`pip index versions {dist}` failed (exit {code}): {out.strip()[-400:]}", EXIT_SETUP)
    return [v.strip() for v in m.group(1).split(",")]


def _python_tag():
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def target_torch(python):
    """The torch version the target python imports, from its metadata (no import of torch)."""
    code, out = run([python, "-c", "from importlib.metadata import version; print(version('torch'))"], 60)
    if code == 0 and out.strip():
        return out.strip().splitlines()[-1]
    code, out = run([python, "-c", "import torch; print(torch.__version__)"], IMPORT_TIMEOUT)
    if code != 0:
        raise Failure(f"{python} imports no torch: {out.strip()[-300:]}", EXIT_SETUP)
    return out.strip().splitlines()[-1]


def wheel_metadata(wheel):
    """(Requires-Python or "", [Requires-Dist lines]) of a wheel file."""
    with zipfile.ZipFile(wheel) as z:
        name = next((n for n in z.namelist() if re.match(r"^[^/]+\.dist-info/METADATA$", n)), None)
        if name is None:
            raise Failure(f"{wheel} is no wheel (no *.dist-info/METADATA in it)")
        text = z.read(name).decode("utf-8", "replace")
    headers = text.split("\n\n", 1)[0]
    requires_python = next((line.split(":", 1)[1].strip() for line in headers.splitlines()
                            if line.startswith("Requires-Python:")), "")
    requires = [line.split(":", 1)[1].strip() for line in headers.splitlines() if line.startswith("Requires-Dist:")]
    return requires_python, requires


def _packaging():
    try:
        from packaging.requirements import Requirement
        from packaging.version import Version
    except ImportError:  # pip's own copy
        from pip._vendor.packaging.requirements import Requirement
        from pip._vendor.packaging.version import Version
    return Requirement, Version


def torch_requirement(requires):
    """The wheel's torch requirement (a packaging Requirement), or None."""
    Requirement, _ = _packaging()
    for line in requires:
        try:
            req = Requirement(line)
        except Exception:
            continue
        if req.name.lower() == "torch" and (req.marker is None or req.marker.evaluate({"extra": ""})):
            return req
    return None


def check_torch(library, version, requires, torch_version, torch):
    """A Failure naming the torch this release needs when its metadata excludes the run's torch."""
    _, Version = _packaging()
    req = torch_requirement(requires)
    if req is None or not str(req.specifier):
        return
    ran = Version(torch_version.split("+")[0])
    if req.specifier.contains(ran, prereleases=True):
        return
    debian = Version("1.13.1")
    hint = (f"rerun with --torch 1.13 (Debian's LibTorch 1.13 build, build-torch1.13: ci/run_peers.sh --torch 1.13 "
            f"--library {library} --release {version})" if torch != "1.13" and req.specifier.contains(debian)
            else f"neither this torch nor Debian's 1.13.1 is in that range: no build of distmetrics runs it")
    raise Failure(f"{library} {version} requires torch{req.specifier} (its wheel's metadata), and this run's torch is "
                  f"{torch_version}: {hint}")


def unmet(python, front, requires):
    """The wheel's requirements (but torch, and those of extras) that the target python with the
    layer in front does not meet: [("name spec", the version found or None)]."""
    script = r"""
import json, sys
from importlib import metadata
try:
    from packaging.requirements import Requirement
except ImportError:
    from pip._vendor.packaging.requirements import Requirement
out = []
for line in json.loads(sys.argv[1]):
    try:
        req = Requirement(line)
    except Exception:
        continue
    if req.name.lower() == "torch" or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
        continue
    try:
        found = metadata.version(req.name)
    except metadata.PackageNotFoundError:
        found = None
    if found is None or not req.specifier.contains(found, prereleases=True):
        out.append([f"{req.name}{req.specifier}", found])
print(json.dumps(out))
"""
    env = dict(os.environ, PYTHONPATH=front)
    try:
        done = subprocess.run([python, "-c", script, json.dumps(requires)], capture_output=True, text=True,
                              timeout=60, env=env)
        return [tuple(m) for m in json.loads(done.stdout.strip().splitlines()[-1])] if done.returncode == 0 else []
    except (subprocess.TimeoutExpired, ValueError, IndexError):
        return []


def import_check(python, library, front, expect_under, what):
    """Imports the library (and the submodule its mapping needs) with `front` on PYTHONPATH; a
    Failure with the error's last lines when it does not import, or imports from elsewhere."""
    _, module, sub = LIBRARIES[library]
    script = (f"import torch, {sub}, {module}; import sys; "
              f"print({module}.__version__); print({module}.__file__)")
    env = dict(os.environ, PYTHONPATH=front, PYTHONWARNINGS="ignore")
    code, out = run([python, "-c", script], IMPORT_TIMEOUT, env=env)
    if code != 0:
        tail = "\n    ".join(out.strip().splitlines()[-6:])
        raise Failure(f"{what} does not import (with PYTHONPATH={front}, {python}):\n    {tail}\n"
                      f"  fix the checkout or release (or the missing package it names: pip install it into the "
                      f"torch venv, or pick another release), then rerun")
    lines = out.strip().splitlines()
    version, where = lines[-2], lines[-1]
    if not os.path.realpath(where).startswith(os.path.realpath(expect_under)):
        raise Failure(f"{what}: `import {module}` took {where}, not the one under {expect_under} (a {module} on "
                      f"PYTHONPATH before it? unset PYTHONPATH and rerun)")
    return version, where


def download(python, library, version, dest):
    """The release's wheel for this Python; Failures that say which kind of bad input it is."""
    dist = LIBRARIES[library][0]
    code, out = pip(python, "download", "--no-deps", "--only-binary=:all:", "--dest", str(dest), f"{dist}=={version}")
    wheels = sorted(Path(dest).glob("*.whl"))
    if code == 0 and wheels:
        return wheels[0]
    known = versions(python, library)
    if version not in known:
        near = [v for v in known if v.split(".")[:2] == version.split(".")[:2]] or known[:8]
        raise Failure(f"{dist} has no release {version} on the index (`pip index versions {dist}`): "
                      f"{'releases of that series' if near != known[:8] else 'the newest'}: {', '.join(near)}; "
                      f"pass one of them to --release")
    raise Failure(f"{dist} {version} exists but has no wheel for Python {_python_tag()} on this platform (an sdist "
                  f"only, or Requires-Python excludes {_python_tag()}): build one where it installs "
                  f"(pip wheel --no-deps {dist}=={version}) and pass it with --from WHEEL, or pick another release "
                  f"(`pip index versions {dist}`)\n  pip said: {out.strip().splitlines()[-1] if out.strip() else ''}")


def install_layer(python, wheel, layer):
    """The wheel's files in `layer` (made afresh beside it, then moved in place)."""
    layer = Path(layer)
    layer.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=layer.name + ".", dir=layer.parent))
    try:
        code, out = pip(python, "install", "--no-deps", "--no-compile", "--target", str(tmp), str(wheel))
        if code != 0:
            raise Failure(f"pip could not install {wheel} into {tmp}: {out.strip()[-400:]}", EXIT_SETUP)
        shutil.rmtree(layer, ignore_errors=True)
        os.rename(tmp, layer)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _requires_in(folder):
    """The Requires-Dist lines of every distribution installed in `folder` (a --target folder)."""
    out = []
    for meta in Path(folder).glob("*.dist-info/METADATA"):
        text = meta.read_text(errors="replace")
        out += [line.split(":", 1)[1].strip() for line in text.split("\n\n", 1)[0].splitlines()
                if line.startswith("Requires-Dist:")]
    return out


def stamp_of(layer):
    try:
        return json.loads((Path(layer) / ".distmetrics-release.json").read_text())
    except (OSError, ValueError):
        return None


def prepare_wheel(python, library, wheel, layer, torch, torch_version, label):
    requires_python, requires = wheel_metadata(wheel)
    version = re.match(r"^[^-]+-([^-]+)-", Path(wheel).name)
    version = version.group(1) if version else "?"
    check_torch(library, version, requires, torch_version, torch)
    stamp = stamp_of(layer)
    digest = hashlib.sha256(Path(wheel).read_bytes()).hexdigest()
    if stamp and stamp.get("sha256") == digest:
        say(f"{label}: reusing {layer} (made from {stamp.get('wheel')})")
    else:
        install_layer(python, wheel, layer)
        (Path(layer) / ".distmetrics-release.json").write_text(json.dumps(
            {"library": library, "version": version, "wheel": Path(wheel).name, "sha256": digest,
             "requires": requires, "requires_python": requires_python}, indent=1))
        say(f"{label}: installed {Path(wheel).name} into {layer} (--no-deps)")
    return requires


def prepare(args):
    python = args.python or sys.executable
    library = args.library
    torch = args.torch
    torch_version = target_torch(python)
    extra = [p for p in (args.extra_path or []) if p]
    _, module, _ = LIBRARIES[library]
    if args.release:
        version = args.release
        layer = releases_dir() / f"{library}-{version}"
        stamp = stamp_of(layer)
        if stamp and stamp.get("version") == version:
            check_torch(library, version, stamp.get("requires", []), torch_version, torch)
            requires = stamp.get("requires", [])
            say(f"{library} {version}: reusing {layer}")
        else:
            with tempfile.TemporaryDirectory(prefix="distmetrics-release-") as tmp:
                wheel = download(python, library, version, tmp)
                requires = prepare_wheel(python, library, wheel, layer, torch, torch_version, f"{library} {version}")
        front, under, what = layer, layer, f"{library} {version} ({layer})"
    else:
        source = Path(args.from_).expanduser().resolve()
        if source.is_file() and source.suffix == ".whl":
            digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12]
            layer = releases_dir() / f"{library}-wheel-{digest}"
            requires = prepare_wheel(python, library, source, layer, torch, torch_version, f"{library} from {source}")
            front, under, what = layer, layer, f"{library} from the wheel {source}"
        elif source.is_dir():
            # A checkout: its package folder (src/<module> or <module>) in front, as it is: an edit
            # shows at the next run, nothing is built or installed.
            holder = next((d for d in (source / "src", source) if (d / module / "__init__.py").is_file()), None)
            if holder is None:
                raise Failure(f"--from {source}: no {module} package in it (looked for {source}/src/{module}/__init__.py "
                              f"and {source}/{module}/__init__.py): give the root of a {library} checkout, or a wheel")
            requires = []
            front, under, what = holder, holder / module, f"the {library} checkout {source}"
        elif not source.exists():
            raise Failure(f"--from {source}: no such file or folder")
        else:
            raise Failure(f"--from {source}: neither a checkout (a folder) nor a wheel (*.whl)")
    path = os.pathsep.join([str(front), *extra])
    version, where = import_check(python, library, path, under, what)
    say(f"{library} {version} imports from {where} on torch {torch_version}")
    missing = unmet(python, path, requires)
    absent = [spec for spec, found in missing if found is None]
    if absent and args.release:
        # A requirement the torch venv lacks altogether (torcheval 0.0.6's torchtnt, imported at
        # the first compute(), which the import check cannot see): layered too, --no-deps as the
        # release itself, beside it. A requirement the venv has in another version stays the
        # venv's (another version in front could break the pinned ones), and is printed.
        deps = Path(f"{layer}.deps")
        path = os.pathsep.join([str(front), str(deps), *extra])
        if not deps.is_dir() or stamp_of(deps) != {"absent": absent}:
            shutil.rmtree(deps, ignore_errors=True)
            wanted, layered = list(absent), []
            for _ in range(6):  # their own requirements in turn (torchtnt's pyre-extensions...), bounded
                code, out = pip(python, "install", "--no-deps", "--no-compile", "--target", str(deps), *wanted)
                if code != 0:
                    raise Failure(f"{library} {version}: pip could not install its requirements the torch venv "
                                  f"lacks ({', '.join(wanted)}) into {deps}: {out.strip()[-300:]}", EXIT_SETUP)
                layered += wanted
                wanted = [spec for spec, found in unmet(python, path, _requires_in(deps)) if found is None]
                wanted = [w for w in wanted if w not in layered]
                if not wanted:
                    break
            (deps / ".distmetrics-release.json").write_text(json.dumps({"absent": absent}))
        say(f"{library} {version}: its requirements the torch venv lacks, layered beside it (--no-deps): "
            f"{', '.join(absent)}")
        missing = [(spec, found) for spec, found in missing if found is not None]
    if missing:
        say(f"{library} {version}: requirements the torch venv does not meet (installed --no-deps; it "
            f"imports without them): {', '.join(f'{spec} (found {found})' for spec, found in missing)}")
    # The last line: what goes in front on PYTHONPATH.
    print(path)
    return 0


def summary(args):
    """One line: the installed release's classes (census), and the rows not in this release (the
    mapping's, and the variants that skipped for a constructor argument)."""
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != ROOT / "peers"]
    sys.path.insert(0, str(ROOT / "python"))
    import importlib.util

    from distmetrics import peers, registry

    registry._REGISTRY.clear()
    spec = importlib.util.spec_from_file_location(f"peers_{args.library}", ROOT / "peers" / args.library / "metrics.py")
    mapping = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mapping)
    census_spec = importlib.util.spec_from_file_location("peers_census", ROOT / "peers" / "census.py")
    census = importlib.util.module_from_spec(census_spec)
    census_spec.loader.exec_module(census)
    taken = census.take(args.library)
    absent = peers.not_in_release(args.library)
    rows = len(mapping.TABLE) + len(getattr(mapping, "OWNED", {}))
    skipped = {}
    if args.report:
        report = json.loads(Path(args.report).read_text())
        for v in report.get("variants", []):
            reason = v.get("reason") or ""
            if v.get("outcome") == "skip" and peers.NOT_IN_RELEASE_TEXT in reason and \
                    (v.get("source") or "").endswith(f"/{args.library}/metrics.py"):
                skipped.setdefault(reason.split(peers.NOT_IN_RELEASE_TEXT + ": ", 1)[-1][:160], 0)
                skipped[reason.split(peers.NOT_IN_RELEASE_TEXT + ": ", 1)[-1][:160]] += 1
    classes = sorted({cls.partition(":")[2] for cls, _, _ in absent})
    shown = ", ".join(classes[:6]) + (f", and {len(classes) - 6} more" if len(classes) > 6 else "")
    # Rows whose class this release has in another module, by a move the mapping declares (peers.moved).
    moves = sorted({(now.partition(":")[0], then.partition(":")[0]) for now, then in peers.MOVED_USED.items()
                    if now.startswith(LIBRARIES[args.library][1] + ".")})
    moved_rows = sum(1 for now in peers.MOVED_USED if now.startswith(LIBRARIES[args.library][1] + "."))
    line = (f"{args.library} {taken.version}: {len(taken.metrics)} public metric classes in this release (census); "
            f"{rows} rows registered, {len(absent)} rows not in this release"
            + (f" ({shown})" if classes else "")
            + (f"; {moved_rows} class(es) run from where this release has them (declared moves: "
               f"{', '.join(f'{a} -> {b}' for a, b in moves)})" if moved_rows else "")
            + (f"; {sum(skipped.values())} variant(s) skipped, not in this release: {'; '.join(sorted(skipped))}"
               if skipped else ""))
    if args.details:
        for cls, where, why in absent:
            print(f"  not in this release: {why} ({os.path.relpath(where, ROOT)})")
    print(line)
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare", help="install a release (or a checkout, a wheel) as a layer; last line: its PYTHONPATH")
    p.add_argument("--library", required=True, choices=list(LIBRARIES))
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument("--release", help="a release on PyPI, exact (X.Y.Z)")
    which.add_argument("--from", dest="from_", metavar="PATH", help="a local checkout (folder) or a wheel (*.whl)")
    p.add_argument("--python", help="the python the run uses (the torch venv's; default: this one)")
    p.add_argument("--torch", default="2", choices=list(REQUIREMENTS), help="the run's torch (2, or 1.13)")
    p.add_argument("--extra-path", action="append", help="put behind the layer on PYTHONPATH (the 1.13 peers venv)")
    v = sub.add_parser("versions", help="the releases on the index, newest first")
    v.add_argument("--library", required=True, choices=list(LIBRARIES))
    v.add_argument("--python")
    q = sub.add_parser("pinned", help="the pinned release")
    q.add_argument("--library", required=True, choices=list(LIBRARIES))
    q.add_argument("--torch", default="2", choices=list(REQUIREMENTS))
    s = sub.add_parser("summary", help="the classes of the installed release and the rows not in it (one line)")
    s.add_argument("--library", required=True, choices=list(LIBRARIES))
    s.add_argument("--report", help="the run's JSON report (the variants skipped as not in this release)")
    s.add_argument("--details", action="store_true", help="one line per row not in this release first")
    args = ap.parse_args(argv)
    try:
        if args.command == "prepare":
            if args.release and not re.fullmatch(r"[0-9][0-9A-Za-z.+!-]*", args.release):
                raise Failure(f"--release {args.release!r}: give an exact version, X.Y.Z (`pip index versions "
                              f"{LIBRARIES[args.library][0]}` lists them)")
            return prepare(args)
        if args.command == "versions":
            print(" ".join(versions(args.python or sys.executable, args.library)))
            return 0
        if args.command == "pinned":
            print(pinned(args.library, args.torch))
            return 0
        return summary(args)
    except Failure as e:
        print(f"peers/release.py: {e}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
