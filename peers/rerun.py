"""Reruns, once and alone, variants of a peer report whose first outcome disagreed with what was
expected, and replaces each one's entry in the JSON report by the rerun's, keeping what the first
attempt showed under "first_run" (its outcome, reason, diagnosis, deviation and each property's
outcome: what peers/expected.py compares to name a flake) and, in one line, under "rerun_after".
A rerun decides nothing by itself: a rerun that shows something else than the first run is a
flake, which peers/expected.py names and fails unless expected.toml declares it. Two kinds:

- set-up failures (the default): a rank could not make the variant's torch.distributed group
  ("making the torch.distributed gloo group for the Python metric failed": torch's Gloo
  connectFullMesh closed by a peer), so the variant never reached the metric;
- with --disagreeing FILE: the variants whose outcome disagreed with expected.toml (the list
  peers/expected.py --disagreeing writes). A finding that comes and goes with the machine's load
  is a flake: both runs are printed and kept, and expected.py names it.

Each variant is rerun with its own `reproduce` command line. A variant is one (id, metric,
source): one scenario's id is run by every library's metric. More than --max variants to rerun is
not a flake: none is rerun, and the script exits 1 naming them.

    python peers/rerun.py --report REPORT.json --distmetrics build/bin/distmetrics [--disagreeing IDS.json]

Exit 0: nothing to rerun, or every rerun done (whatever its outcome: expected.py judges it);
1: too many, or a rerun gave no report; 2: bad input.
"""

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

SETUP_FAILED = "group for the Python metric failed"


def key(variant):
    return (variant.get("id"), variant.get("metric"), variant.get("source"))


def is_setup_failure(variant):
    return variant.get("outcome") == "error" and SETUP_FAILED in (variant.get("reason") or "")


def setup_failures(report):
    return [v for v in report.get("variants", []) if is_setup_failure(v)]


def first_run(variant):
    """What the first run of a variant showed, kept beside its rerun: enough to tell whether the
    rerun showed the same (outcome, failed properties, blamed ranks)."""
    kept = {k: variant.get(k) for k in ("outcome", "reason", "diagnosis", "deviation", "seconds") if k in variant}
    kept["properties"] = [{"name": p.get("name"), "outcome": p.get("outcome")} for p in variant.get("properties", [])]
    # Decided here, once: a first run that never reached the metric is the harness's own failure
    # (peers/expected.py names it so, and no expected.toml entry can declare it).
    kept["setup_failure"] = is_setup_failure(variant)
    return kept


def listed(report, wanted):
    """The report's variants named in `wanted` ([{"id", "metric", "source"}...])."""
    keys = {key(w) for w in wanted}
    return [v for v in report.get("variants", []) if key(v) in keys]


def rerun_argv(variant, distmetrics, json_out):
    argv = shlex.split(variant.get("reproduce") or "")
    if not argv or argv[0] != "distmetrics" or "--filter" not in argv:
        raise ValueError(f"variant {variant.get('id')!r}: its 'reproduce' is not a distmetrics command with "
                         f"--filter: {variant.get('reproduce')!r}")
    return [distmetrics, *argv[1:], "--json", json_out, "--quiet"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", required=True, help="conform's JSON report (rewritten in place)")
    ap.add_argument("--distmetrics", required=True, help="the distmetrics binary that made it")
    ap.add_argument("--disagreeing", help="rerun the variants this JSON file lists (peers/expected.py --disagreeing) "
                                          "instead of the set-up failures")
    ap.add_argument("--max", type=int, default=10, help="more variants to rerun than this: none is (default 10)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds each rerun may take (default 300)")
    args = ap.parse_args(argv)
    path = Path(args.report)
    try:
        report = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        print(f"peers/rerun.py: {path}: cannot read the report: {e}", file=sys.stderr)
        return 2
    if args.disagreeing:
        try:
            wanted = json.loads(Path(args.disagreeing).read_text())
        except (OSError, json.JSONDecodeError) as e:
            print(f"peers/rerun.py: {args.disagreeing}: cannot read the variants to rerun: {e}", file=sys.stderr)
            return 2
        chosen, what = listed(report, wanted), "disagreed with expected.toml"
    else:
        chosen, what = setup_failures(report), "could not make their torch.distributed group"
    if not chosen:
        return 0
    names = ", ".join(f"{v['id']} [{v.get('metric')}]" for v in chosen)
    if len(chosen) > args.max:
        print(f"peers/rerun.py: {len(chosen)} variants {what} (more than {args.max}: not a flake, none rerun): {names}",
              file=sys.stderr)
        return 1
    status = 0
    where = {key(v): i for i, v in enumerate(report["variants"])}
    for first in chosen:
        with tempfile.TemporaryDirectory() as tmp:
            out = str(Path(tmp) / "rerun.json")
            try:
                cmd = rerun_argv(first, args.distmetrics, out)
            except ValueError as e:
                print(f"peers/rerun.py: {path}: {e}", file=sys.stderr)
                return 2
            try:
                subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=args.timeout)
            except subprocess.TimeoutExpired:
                pass
            try:
                again = [v for v in json.loads(Path(out).read_text())["variants"] if v.get("id") == first["id"]]
            except (OSError, json.JSONDecodeError, KeyError):
                again = []
        if len(again) != 1:
            print(f"peers/rerun.py: {first['id']} [{first.get('metric')}]: the rerun gave no report ({shlex.join(cmd)})",
                  file=sys.stderr)
            status = 1
            continue
        rerun = dict(again[0])
        for field in ("class", "metric", "source"):  # the first run's labels (peers/classes.py, the several sources)
            if field in first:
                rerun[field] = first[field]
        rerun["rerun_after"] = f"{first.get('outcome')}: {first.get('reason') or ''}"
        rerun["first_run"] = first_run(first)
        report["variants"][where[key(first)]] = rerun
        print(f"peers/rerun.py: {first['id']} [{first.get('metric')}] {what.replace('their', 'its')}: first "
              f"{first.get('outcome')} ({(first.get('reason') or '')[:160]}); rerun alone: {rerun.get('outcome')}")
    path.write_text(json.dumps(report, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
