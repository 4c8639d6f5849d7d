"""Reruns, once, the variants of a peer report that never reached the metric because a rank could
not make the variant's torch.distributed group ("making the torch.distributed gloo group for the
Python metric failed": torch's Gloo connectFullMesh closed by a peer, seen under heavy load; see
docs/peers.md, "Harness limitations seen"). Such a variant says nothing about the library, and
the comparison with expected.toml must not depend on it. Each is rerun alone with its own
`reproduce` command line; its entry in the JSON report is replaced by the rerun's, which keeps
the first attempt's reason under "rerun_after". Every rerun is printed. More than --max such
variants is not a flake: none is rerun, and the script exits 1 naming them.

    python peers/rerun_setup_failures.py --report REPORT.json --distmetrics build/bin/distmetrics

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


def setup_failures(report):
    return [v for v in report.get("variants", [])
            if v.get("outcome") == "error" and SETUP_FAILED in (v.get("reason") or "")]


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
    ap.add_argument("--max", type=int, default=10, help="more set-up failures than this are not rerun (default 10)")
    ap.add_argument("--timeout", type=float, default=300, help="seconds each rerun may take (default 300)")
    args = ap.parse_args(argv)
    path = Path(args.report)
    try:
        report = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as e:
        print(f"rerun_setup_failures: {path}: cannot read the report: {e}", file=sys.stderr)
        return 2
    failed = setup_failures(report)
    if not failed:
        return 0
    if len(failed) > args.max:
        print(f"rerun_setup_failures: {len(failed)} variants could not make their torch.distributed group (more than "
              f"{args.max}: not a flake, none rerun): " + ", ".join(v["id"] for v in failed), file=sys.stderr)
        return 1
    status = 0
    by_id = {v["id"]: i for i, v in enumerate(report["variants"])}
    for first in failed:
        with tempfile.TemporaryDirectory() as tmp:
            out = str(Path(tmp) / "rerun.json")
            try:
                cmd = rerun_argv(first, args.distmetrics, out)
            except ValueError as e:
                print(f"rerun_setup_failures: {path}: {e}", file=sys.stderr)
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
            print(f"rerun_setup_failures: {first['id']}: the rerun gave no report ({shlex.join(cmd)})", file=sys.stderr)
            status = 1
            continue
        rerun = dict(again[0])
        for key in ("class",):  # added to the report after conform (peers/classes.py)
            if key in first and key not in rerun:
                rerun[key] = first[key]
        rerun["rerun_after"] = first["reason"]
        report["variants"][by_id[first["id"]]] = rerun
        print(f"rerun_setup_failures: {first['id']}: its group could not be made ({first['reason'][:160]}...); "
              f"rerun alone: {rerun.get('outcome')}")
    path.write_text(json.dumps(report, indent=1))
    return status


if __name__ == "__main__":
    sys.exit(main())
