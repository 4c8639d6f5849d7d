"""The release that brought a finding: a binary search over a library's releases, between one
that does not show it (good) and one that does (bad), running only the variants of the finding.

A finding is a variant glob and its outcome (and optionally the exact failed properties), or an
entry of peers/<library>/expected.toml (its globs, outcomes, failed set and metric). Each step
installs the release (peers/release.py: a layer in front of the torch venv, reused), writes the
scenarios of its rows (peers/scenarios.py), and runs `distmetrics conform --filter GLOB` on that
library alone: a few seconds a release. A release whose class is not there (the row is "not in
this release") or whose variants pass does not show it. The releases are those of `pip index
versions` between good and bad (final releases only), or the list given.

    $PY peers/bisect_release.py --library torchmetrics --good 1.4.0 --bad 1.9.0 \\
        --variant 'torchmetrics/BinaryFairness.ws2:*' --outcome fail [--failed batch_invariant]
    $PY peers/bisect_release.py --library torchmetrics --entry 12 --good 1.0.0 --bad 1.9.0 --distmetrics build/bin/distmetrics
    $PY peers/bisect_release.py ... --versions 1.4.0,1.5.2,1.9.0     # only these (ascending), no index

Prints one line per release tried, then "first release that shows it: X (the last before it
that does not: Y)". Exit 0 found; 1 the good release shows it or the bad one does not (nothing
to bisect: says which); 2 bad input; 5 a step could not run (install, conform).
"""

import argparse
import fnmatch
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STEP_TIMEOUT = int(os.environ.get("DISTMETRICS_BISECT_STEP_TIMEOUT", "600"))


def _load(name, path):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


release = _load("peers_release_b", ROOT / "peers" / "release.py")
expected = _load("peers_expected_b", ROOT / "peers" / "expected.py")


def finding_of(args):
    """{globs, outcomes, failed (or None), metric (or None), what}: from --entry or --variant/--outcome."""
    if args.entry:
        path = args.expected or ROOT / "peers" / args.library / "expected.toml"
        entries, _ = expected.load_expected(path)
        if not 1 <= args.entry <= len(entries):
            raise release.Failure(f"--entry {args.entry}: {path} has entries 1 to {len(entries)}")
        e = entries[args.entry - 1]
        return {"entry": e, "globs": e["_globs"], "outcomes": e["_outcomes"], "failed": None,
                "metric": e.get("metric"), "what": f"{e['_where']}: {e['why']}"}
    if not args.variant or not args.outcome:
        raise release.Failure("give a finding: --entry N (of expected.toml), or --variant GLOB and --outcome OUTCOME")
    failed = sorted(p for p in args.failed.split(",") if p) if args.failed else None
    return {"globs": args.variant, "outcomes": args.outcome.split(","), "failed": failed, "metric": None,
            "what": f"{' '.join(args.variant)}: {args.outcome}" + (f" ({', '.join(failed)})" if failed else "")}


def candidates(args, python):
    """The releases from good to bad, ascending."""
    _, Version = release._packaging()
    if args.versions:
        listed = [v.strip() for v in args.versions.split(",") if v.strip()]
    else:
        listed = [v for v in release.versions(python, args.library) if not Version(v).is_prerelease]
    listed = sorted(set(listed) | {args.good, args.bad}, key=Version)
    lo, hi = sorted((Version(args.good), Version(args.bad)))
    if lo == hi:
        raise release.Failure(f"--good and --bad are the same release, {args.good}")
    return [v for v in listed if lo <= Version(v) <= hi]


def shows(args, python, finding, version, work):
    """Whether `version` shows the finding: (True/False, what ran), from one conform of its variants."""
    started = time.time()
    code, out = release.run([python, str(ROOT / "peers" / "release.py"), "prepare", "--library", args.library,
                             "--release", version, "--python", python], STEP_TIMEOUT)
    if code != 0:
        raise release.Failure(f"{args.library} {version} could not be set up: {out.strip()[-500:]}",
                              code if code in (2, 5) else 5)
    front = out.strip().splitlines()[-1]
    env = dict(os.environ, PYTHONPATH=front + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else ""),
               DISTMETRICS_PYTHONPATH=os.environ.get("DISTMETRICS_PYTHONPATH", str(ROOT / "python")),
               PYTHONWARNINGS="ignore")
    out_dir = Path(work) / version
    out_dir.mkdir(parents=True, exist_ok=True)
    done = subprocess.run([python, str(ROOT / "peers" / "scenarios.py"), "--out", str(out_dir), "--library", args.library],
                          capture_output=True, text=True, timeout=STEP_TIMEOUT, env=env, cwd=ROOT)
    if done.returncode != 0:
        raise release.Failure(f"peers/scenarios.py on {args.library} {version}: {done.stderr.strip()[-400:]}", 5)
    # Only the generated files the finding's variants come from (each file is validated, a metric
    # built and fed, before anything runs: the others cost time, and a class this release cannot
    # build would stop the run); the scenario library only when a glob is outside the generated ones.
    generated = out_dir / "scenarios"
    heads = [g.split(":", 1)[0] for g in finding["globs"]]
    for path in generated.rglob("*.toml"):
        stem = f"{path.parent.name}/{path.stem}"
        if not any(fnmatch.fnmatchcase(stem, h) for h in heads):
            path.unlink()
    library_too = any(not h.startswith(f"{args.library}/") for h in heads)
    report = out_dir / "peers.json"
    cmd = [args.distmetrics, "conform", "--allow-python", "--python", f"peers/{args.library}/metrics.py",
           *(["scenarios"] if library_too else []), str(generated), "--backend", "gloo", "--world-sizes", args.world_sizes, "--deadline",
           str(args.deadline), "--quiet", "--json", str(report)]
    for glob in finding["globs"]:
        cmd += ["--filter", glob]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=STEP_TIMEOUT, env=env, cwd=ROOT)
    except subprocess.TimeoutExpired:
        raise release.Failure(f"conform on {args.library} {version} did not finish in {STEP_TIMEOUT} s", 5) from None
    if not report.is_file():
        raise release.Failure(f"conform on {args.library} {version} wrote no report (exit {done.returncode}): "
                              f"{(done.stderr or done.stdout).strip()[-400:]}", 5)
    variants = json.loads(report.read_text()).get("variants", [])
    ran = [v for v in variants if any(fnmatch.fnmatchcase(v["id"], g) for g in finding["globs"])
           and (not finding["metric"] or expected.metric_name(v) == finding["metric"])]
    if finding.get("entry"):  # the entry's own matching (its failed set and blamed ranks per outcome)
        hit = [f for f in expected.findings(ran) if expected.matches(finding["entry"], f)]
    else:
        hit = [v for v in ran if v["outcome"] in finding["outcomes"]
               and (finding["failed"] is None or expected.failed_properties(v) == finding["failed"])]
    counts = {}
    for v in ran:
        counts[v["outcome"]] = counts.get(v["outcome"], 0) + 1
    seen = ", ".join(f"{n} {o}" for o, n in sorted(counts.items())) or "no variant ran (not in this release?)"
    return bool(hit), f"{len(ran)} variant(s): {seen} ({time.time() - started:.0f} s)"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", required=True, choices=list(release.LIBRARIES))
    ap.add_argument("--good", required=True, help="a release that does not show the finding")
    ap.add_argument("--bad", required=True, help="a release that shows it")
    ap.add_argument("--entry", type=int, help="the finding: entry N (1-based) of peers/<library>/expected.toml")
    ap.add_argument("--expected", help="another expected.toml for --entry")
    ap.add_argument("--variant", action="append", help="the finding: a variant glob (repeat to OR several)")
    ap.add_argument("--outcome", help="its outcome (fail, hang, crash, error; comma-separated: any of them)")
    ap.add_argument("--failed", help="the exact failed properties, comma-separated (default: any)")
    ap.add_argument("--versions", help="the releases to search, comma-separated (default: pip index versions)")
    ap.add_argument("--distmetrics", default=str(ROOT / "build" / "bin" / "distmetrics"))
    ap.add_argument("--python", help="the torch venv's python (default: this one)")
    ap.add_argument("--world-sizes", default="1,2,3,4")
    ap.add_argument("--deadline", type=float, default=15)
    ap.add_argument("--work", help="keep each release's scenarios and report here (default: a temporary folder)")
    args = ap.parse_args(argv)
    python = args.python or sys.executable
    try:
        if not os.access(args.distmetrics, os.X_OK):
            raise release.Failure(f"--distmetrics {args.distmetrics}: not an executable (build it, or point at a build)")
        finding = finding_of(args)
        versions = candidates(args, python)
        # good older than bad: the release that brought it; good newer: the release that fixed it.
        _, Version = release._packaging()
        brought = Version(args.good) < Version(args.bad)
        print(f"peers/bisect_release.py: {args.library}: {finding['what']}; {len(versions)} releases from {versions[0]} to "
              f"{versions[-1]}, looking for the one that {'brought' if brought else 'fixed'} it", flush=True)
        with tempfile.TemporaryDirectory(prefix="distmetrics-bisect-") as tmp:
            work = args.work or tmp
            known = {}

            def test(v):
                if v not in known:
                    known[v] = shows(args, python, finding, v, work)
                    print(f"  {args.library} {v}: {'shows it' if known[v][0] else 'does not show it'}: {known[v][1]}",
                          flush=True)
                return known[v][0]

            def changed(v):  # whether v is on the bad release's side
                return test(v) if brought else not test(v)

            for end, side in ((versions[0], False), (versions[-1], True)):
                if changed(end) != side:
                    which = "good" if (end == versions[0]) == brought else "bad"
                    print(f"peers/bisect_release.py: the {which} release {end} {'shows' if test(end) else 'does not show'} "
                          f"it: nothing to bisect (give another --{which})")
                    return 1
            lo, hi = 0, len(versions) - 1  # versions[lo] on the old side, versions[hi] on the new
            while hi - lo > 1:
                mid = (lo + hi) // 2
                if changed(versions[mid]):
                    hi = mid
                else:
                    lo = mid
        print(f"peers/bisect_release.py: first release that {'shows it' if brought else 'no longer shows it'}: {versions[hi]} "
              f"(the last before it: {versions[lo]}; {len(known)} releases run)")
        return 0
    except release.Failure as e:
        print(f"peers/bisect_release.py: {e}", file=sys.stderr)
        return e.code


if __name__ == "__main__":
    sys.exit(main())
