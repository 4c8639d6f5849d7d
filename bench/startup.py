#!/usr/bin/env python3
"""Start-up of the distmetrics command on several builds side by side (ci/bench.sh gives it the
torch 1.13 build and the torch 2.x build): what a user pays before and around the variants.

For each build, interleaved round by round so that both see the same load, from exec to exit:
  --version            wall, CPU (user + system) and peak memory
  list                 of one trivial scenario file (what the pytest plugin runs at collection)
  run, 1 variant       one trivial variant at world size 2 (one update, one compute of
                       MeanAbsoluteError on 8 samples, gloo, CPU), and the same with 40 such files
                       in one run; a variant's own cost is (T40 - T1) / 39 and start-up is T1 minus it
  spawn-per-test       bench/'s anchor with the build's own torch: 2 fresh python processes that
                       import torch, init_process_group("gloo", FileStore), all_reduce, exit
The 40-variant run's wall per variant against spawn-per-test is the ratio issue 16 asks >= 40x of.
Medians of the rounds. A benchmark, not a test: it asserts nothing; the bars are printed.

    bench/startup.py --build "torch 1.13=build-torch1.13" --build "torch 2.x=build" --rounds 5 --json out.json
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TRIVIAL = """description = "Trivial: one update and one compute of MAE on 8 samples (benchmark)."
script = ["update", "compute"]
properties = ["equal_to_single", "ranks_agree"]
[metric]
name = "MeanAbsoluteError"
[data]
generator = "regression"
seed = {seed}
num_samples = 8
batch_size = 4
[variants]
world_sizes = [2]
backends = ["gloo"]
shards = ["even"]
placements = ["cpu"]
"""

# One test as users run it without a pool (bench/variant_bench.cpp's Python spawn-per-test).
SPAWN_CHILD = """
import sys, datetime, torch, torch.distributed as dist
rank, path = int(sys.argv[1]), sys.argv[2]
dist.init_process_group("gloo", init_method="file://" + path, rank=rank, world_size=2,
                        timeout=datetime.timedelta(seconds=60))
t = torch.ones(1)
dist.all_reduce(t)
assert t.item() == 2.0
dist.destroy_process_group()
"""


def timed(argv, env=None, cwd=None):
    """(wall seconds, CPU seconds of the process and what it reaped, peak KiB); raises on failure."""
    start = time.monotonic()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, cwd=cwd)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.monotonic() - start
    err = process.stderr.read().decode(errors="replace")
    process.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(map(str, argv))}: exit {os.waitstatus_to_exitcode(status)}\n{err[-2000:]}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss


def spawn_per_test(python, tmp):
    """Wall seconds of one spawn-per-test (2 ranks), as users run a distributed test without a pool."""
    store = Path(tmp) / f"filestore-{time.monotonic_ns()}"
    start = time.monotonic()
    ranks = [subprocess.Popen([python, "-c", SPAWN_CHILD, str(r), str(store)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE) for r in range(2)]
    for r in ranks:
        _, err = r.communicate(timeout=600)
        if r.returncode != 0:
            raise SystemExit(f"spawn-per-test with {python}: exit {r.returncode}\n{err.decode(errors='replace')[-2000:]}")
    return time.monotonic() - start


def cache_value(build_dir, name):
    for line in (Path(build_dir) / "CMakeCache.txt").read_text().splitlines():
        if line.startswith(name + ":"):
            return line.split("=", 1)[1]
    return ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", action="append", required=True, metavar="LABEL=DIR",
                        help="a build folder with bin/distmetrics (its CMakeCache names the python of its torch)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    builds = []
    for spec in args.build:
        label, _, folder = spec.partition("=")
        binary = Path(folder) / "bin" / "distmetrics"
        python = cache_value(folder, "DISTMETRICS_PYTHON") or "/usr/bin/python3"
        if not binary.exists():
            raise SystemExit(f"{binary} is not built")
        builds.append({"label": label, "bin": str(binary), "python": python})
    names = ["version", "list", "run1", "run40", "spawn"]
    samples = {b["label"]: {n: [] for n in names} for b in builds}
    cpu = {b["label"]: {n: [] for n in names} for b in builds}
    peak = {b["label"]: {n: [] for n in names} for b in builds}
    with tempfile.TemporaryDirectory() as tmp:
        one, forty = Path(tmp) / "one", Path(tmp) / "forty"
        one.mkdir()
        forty.mkdir()
        (one / "trivial.toml").write_text(TRIVIAL.format(seed=1))
        for i in range(40):
            (forty / f"trivial_{100 + i}.toml").write_text(TRIVIAL.format(seed=i + 1))
        commands = {
            "version": lambda b: [b["bin"], "--version"],
            "list": lambda b: [b["bin"], "list", str(one)],
            "run1": lambda b: [b["bin"], "run", str(one), "--quiet", "--deadline", "120"],
            "run40": lambda b: [b["bin"], "run", str(forty), "--quiet", "--deadline", "120"],
        }
        for b in builds:  # a first round of each, not counted: the page cache, the .pyc files
            timed(commands["run1"](b))
        for _ in range(args.rounds):
            for name in names:
                for b in builds:
                    if name == "spawn":
                        samples[b["label"]][name].append(spawn_per_test(b["python"], tmp))
                        continue
                    wall, seconds, kib = timed(commands[name](b))
                    samples[b["label"]][name].append(wall)
                    cpu[b["label"]][name].append(seconds)
                    peak[b["label"]][name].append(kib)
    load = os.getloadavg()
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    rows = []
    for b in builds:
        s, c, p = samples[b["label"]], cpu[b["label"]], peak[b["label"]]
        run1, run40 = med(s["run1"]), med(s["run40"])
        variant = (run40 - run1) / 39
        per_variant_40 = run40 / 40
        rows.append({
            "build": b["label"],
            "version_s": med(s["version"]), "version_cpu_s": med(c["version"]), "version_mib": med(p["version"]) / 1024,
            "list_s": med(s["list"]), "list_cpu_s": med(c["list"]), "list_mib": med(p["list"]) / 1024,
            "run1_s": run1, "run1_cpu_s": med(c["run1"]), "run40_s": run40,
            "variant_s": variant, "startup_s": run1 - variant,
            "per_variant_40_s": per_variant_40, "spawn_s": med(s["spawn"]),
            "ratio_40_vs_spawn": med(s["spawn"]) / per_variant_40,
        })
    print(f"start-up, exec to exit, medians of {args.rounds} interleaved rounds; load average "
          f"{load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f} on {os.cpu_count()} CPUs")
    width = max(len(r["build"]) for r in rows) + 2
    header = ["build", "--version", "(CPU, memory)", "list", "(CPU, memory)", "run 1 variant", "its variant",
              "start-up over it", "40 variants / 40", "spawn-per-test", "ratio"]
    print("  ".join([header[0].ljust(width)] + [h.rjust(16) for h in header[1:]]))
    for r in rows:
        cells = [f"{r['version_s'] * 1e3:.0f} ms", f"{r['version_cpu_s'] * 1e3:.0f} ms, {r['version_mib']:.0f} MiB",
                 f"{r['list_s'] * 1e3:.0f} ms", f"{r['list_cpu_s'] * 1e3:.0f} ms, {r['list_mib']:.0f} MiB",
                 f"{r['run1_s'] * 1e3:.0f} ms", f"{r['variant_s'] * 1e3:.1f} ms", f"{r['startup_s'] * 1e3:.0f} ms",
                 f"{r['per_variant_40_s'] * 1e3:.1f} ms", f"{r['spawn_s'] * 1e3:.0f} ms",
                 f"{r['ratio_40_vs_spawn']:.0f}x faster"]
        print("  ".join([r["build"].ljust(width)] + [c.rjust(16) for c in cells]))
    print("bars (issue 36): --version <= 100 ms; run start-up over its variant <= 500 ms; 40 variants >= 40x faster "
          "than spawn-per-test")
    for r in rows:
        meets = [r["version_s"] <= 0.1, r["startup_s"] <= 0.5, r["ratio_40_vs_spawn"] >= 40]
        print(f"  {r['build']}: " + ", ".join(f"{what} {'yes' if ok else 'no'}" for what, ok in
                                                zip(["--version", "run start-up", "40 variants"], meets)))
    if args.json:
        Path(args.json).write_text(json.dumps({"load": load, "rounds": args.rounds, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
