"""Where a peer run's time went: the phases of its JSON report (each variant's "phases", the run's
"phases"; docs/cli-contract.md's phase table), per library and world size, per outcome, and the
share of the time spent in hangs. Standard library only; the outcomes and how a report spells a
source come from the runner's tables (distmetrics.tables: $DISTMETRICS_BIN, else build/bin/distmetrics).

    python3 peers/phases.py --report build/reports/peers/peers.json [--json OUT]

The supervisor's and the engine's phases add up to a variant's seconds (what they leave is
"other"); the rank phases (mean of the ranks that reported theirs) break down its "ranks" phase.
A pool's restart after a hang or a crash is paid by the variant that follows it (its
pool_start and imports): the hang summary counts the restarts apart.
"""

import argparse
import json
import os
import statistics
import sys
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "python"))
from distmetrics.tables import tables  # noqa: E402  (the runner's tables; standard library only)

# docs/cli-contract.md's phase table, in its order: (name, measured by).
SUPERVISOR = ["pool_start", "imports", "ranks", "hang_wait", "end_workers", "plan", "single_process", "reference",
              "judging"]
RANK = ["interpreter", "group", "data", "build", "update", "compute", "sync", "digest", "probes", "rank_other"]
RUN = ["setup", "report"]


def library_of(variant, report):
    """The library a variant checked: its source's folder (python:.../peers/<library>/metrics.py), else
    the plugin's name."""
    path = tables().source_path(variant.get("source") or (report.get("plugin") or {}).get("path", ""))
    folder = os.path.basename(os.path.dirname(path))
    return folder or os.path.basename(path) or (report.get("plugin") or {}).get("name", "?")


class Group:
    """The phases of some variants: totals per phase, and each variant's seconds."""

    def __init__(self):
        self.seconds = []
        self.phases = defaultdict(float)

    def add(self, variant):
        self.seconds.append(float(variant.get("seconds", 0)))
        phases = variant.get("phases") or {}
        for name, value in phases.items():
            self.phases[name] += float(value)
        accounted = sum(float(phases.get(name, 0)) for name in SUPERVISOR)
        self.phases["other"] += max(0.0, float(variant.get("seconds", 0)) - accounted)

    @property
    def total(self):
        return sum(self.seconds)


def cell(seconds, total):
    if seconds < 0.005:
        return "-"
    return (f"{seconds:.2f}" if seconds < 10 else f"{seconds:.1f}") + (f" {100 * seconds / total:.0f}%" if total > 0 else "")


def print_table(title, groups, out):
    """Rows: the phases; columns: the groups (seconds and share of the group's seconds)."""
    names = list(groups)
    width = max([12] + [len(n) + 1 for n in names])
    print(f"\n{title}", file=out)
    print("phase".ljust(16) + "".join(n.rjust(width) for n in names), file=out)
    print("variants".ljust(16) + "".join(str(len(groups[n].seconds)).rjust(width) for n in names), file=out)
    print("seconds".ljust(16) + "".join(f"{groups[n].total:.1f}".rjust(width) for n in names), file=out)
    for name in SUPERVISOR + ["other"]:
        print(name.ljust(16) + "".join(cell(groups[n].phases.get(name, 0), groups[n].total).rjust(width) for n in names),
              file=out)
    print("of ranks, per rank (the mean of the ranks that reported):", file=out)
    for name in RANK:
        print(("  " + name).ljust(16) + "".join(cell(groups[n].phases.get(name, 0), groups[n].total).rjust(width)
                                               for n in names), file=out)


def quantiles(values):
    if not values:
        return "none"
    return (f"median {statistics.median(values):.2f} s, mean {statistics.mean(values):.2f} s, "
            f"max {max(values):.2f} s")


def hang_summary(variants, out):
    """The hangs' share of the time, and their time to a verdict."""
    total = sum(float(v.get("seconds", 0)) for v in variants)
    hangs = [v for v in variants if v.get("outcome") == tables().outcome("hang")]
    hang_seconds = sum(float(v.get("seconds", 0)) for v in hangs)
    # A verdict: from sending the job to deciding (the ranks' part and the wait after their last move).
    to_verdict = [float((v.get("phases") or {}).get("ranks", 0)) + float((v.get("phases") or {}).get("hang_wait", 0))
                  for v in hangs]
    waits = [float((v.get("phases") or {}).get("hang_wait", 0)) for v in hangs]
    starts = [v for v in variants if float((v.get("phases") or {}).get("pool_start", 0)) > 0]
    start_seconds = sum(float(v["phases"].get("pool_start", 0)) + float(v["phases"].get("imports", 0)) for v in starts)
    share = 100 * hang_seconds / total if total > 0 else 0
    print(f"\nhangs: {len(hangs)} of {len(variants)} variants ({100 * len(hangs) / max(len(variants), 1):.0f}%), "
          f"{hang_seconds:.1f} s of {total:.1f} s ({share:.0f}%); per hang variant {quantiles([float(v['seconds']) for v in hangs])}",
          file=out)
    print(f"  time to the hang verdict (ranks + hang_wait): {quantiles(to_verdict)}; of which waiting after the ranks' "
          f"last move (hang_wait): {quantiles(waits)}; {sum(1 for w in waits if w >= 5)} waited 5 s or more", file=out)
    print(f"  pool starts and restarts (paid by the variant after a hang or a crash): {len(starts)}, "
          f"{start_seconds:.1f} s (pool_start + imports)", file=out)
    return {"variants": len(variants), "seconds": total, "hangs": len(hangs), "hang_seconds": hang_seconds,
            "hang_median": statistics.median([float(v["seconds"]) for v in hangs]) if hangs else None,
            "hang_mean": statistics.mean([float(v["seconds"]) for v in hangs]) if hangs else None,
            "verdict_median": statistics.median(to_verdict) if to_verdict else None,
            "verdict_mean": statistics.mean(to_verdict) if to_verdict else None,
            "pool_starts": len(starts), "pool_start_seconds": start_seconds}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--report", required=True, help="the JSON report of `distmetrics conform` (or `run`)")
    parser.add_argument("--json", help="also write the tables' numbers here")
    args = parser.parse_args(argv)
    try:
        with open(args.report) as f:
            report = json.load(f)
    except (OSError, ValueError) as e:
        print(f"peers/phases.py: cannot read {args.report}: {e}", file=sys.stderr)
        return 2
    variants = report.get("variants", [])
    if variants and not any("phases" in v for v in variants):
        print(f"peers/phases.py: {args.report} has no phases (a report of a distmetrics before them)", file=sys.stderr)
        return 2
    out = sys.stdout
    by_group, by_library, by_outcome = defaultdict(Group), defaultdict(Group), {}
    for v in variants:
        library = library_of(v, report)
        by_group[f"{library} ws{v.get('world_size', '?')}"].add(v)
        by_library[library].add(v)
        by_outcome.setdefault(v.get("outcome", "?"), Group()).add(v)
    run = report.get("phases") or {}
    print(f"phases of {len(variants)} variants: {sum(float(v.get('seconds', 0)) for v in variants):.1f} s of variant "
          f"time in a run of {float(report.get('seconds', 0)):.1f} s; "
          + ", ".join(f"{name} {float(run.get(name, 0)):.1f} s" for name in RUN), file=out)
    libraries = sorted(by_library)
    ordered = {k: by_group[k] for k in sorted(by_group, key=lambda k: (k.rsplit(" ws", 1)[0], k.rsplit(" ws", 1)[1]))}
    for library in libraries:
        print_table(f"{library}: seconds per phase (share of the column's seconds), by world size",
                    {k.rsplit(" ", 1)[1]: g for k, g in ordered.items() if k.rsplit(" ", 1)[0] == library}
                    | {"all": by_library[library]}, out)
    print_table("every library: seconds per phase, by outcome",
                {o: by_outcome[o] for o in tables().outcome_names if o in by_outcome}, out)
    summary = hang_summary(variants, out)
    if args.json:
        numbers = {"groups": {k: {"variants": len(g.seconds), "seconds": g.total, "phases": dict(g.phases)}
                              for k, g in {**by_group, **{f"outcome {o}": g for o, g in by_outcome.items()}}.items()},
                   "run": run, "hangs": summary}
        with open(args.json, "w") as f:
            json.dump(numbers, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
