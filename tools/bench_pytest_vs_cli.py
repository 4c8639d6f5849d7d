#!/usr/bin/env python3
"""pytest against the CLI on the same variants: wall time of `distmetrics run` and of the pytest
plugin (without xdist, with -n 2, and with a runner per item), and their ratios. A benchmark, not
a test: it prints numbers and asserts nothing.

    /usr/bin/python3 tools/bench_pytest_vs_cli.py [--bin build/bin/distmetrics]
        [--world-sizes 1,2] [--backend gloo] [--filter GLOB] [PATHS...]

Run it from the repository root (its conftest.py loads the plugin). The target of issue 14:
pytest <= 1.3 x the CLI, and -n 2 no slower than without."""

import argparse
import json
import statistics
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def timed(command):
    start = time.monotonic()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True)
    return time.monotonic() - start, done


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", default=["scenarios"])
    parser.add_argument("--bin", default=str(ROOT / "build" / "bin" / "distmetrics"))
    parser.add_argument("--world-sizes", default="1,2")
    parser.add_argument("--backend", default="gloo")
    parser.add_argument("--filter", help="a glob on variant ids (the CLI's --filter); pytest "
                                         "runs the same ids")
    parser.add_argument("--isolate", action="store_true",
                        help="also time --distmetrics-isolate (a runner per item)")
    parser.add_argument("--json", help="also write the times and ratios to this file (ci/bench.sh's table)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="rounds of every command, interleaved (cli, pytest -n 0, pytest -n 2, ...); "
                             "each time is the median over the rounds, so that one disturbed run does "
                             "not decide a ratio (default 3)")
    args = parser.parse_args()

    selection = ["--backend", args.backend, "--world-sizes", args.world_sizes]
    ids = subprocess.run([args.bin, "list", *args.paths, *selection,
                          *(["--filter", args.filter] if args.filter else [])],
                         cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    print(f"{len(ids)} variants of {' '.join(args.paths)} ({' '.join(selection)})")

    cli_command = [args.bin, "run", *args.paths, *selection, "--quiet"]
    if args.filter:
        cli_command += ["--filter", args.filter]
    pytest_command = [sys.executable, "-m", "pytest", *args.paths, "-q", "-p", "no:cacheprovider",
                      f"--distmetrics-bin={args.bin}", f"--backend={args.backend}",
                      f"--world-sizes={args.world_sizes}"]
    if args.filter:
        # The same variants: select the listed ids by their node names.
        names = [i.split(":", 1)[1] for i in ids]
        pytest_command += ["-k", " or ".join(sorted(set(names)))]

    runs = [("cli", cli_command),
            ("pytest -n 0", [*pytest_command, "-p", "no:xdist"]),
            ("pytest -n 2", [*pytest_command, "-n", "2"])]
    if args.isolate:
        runs.append(("pytest isolate", [*pytest_command, "-p", "no:xdist",
                                        "--distmetrics-isolate"]))
    samples, codes = {name: [] for name, _ in runs}, {}
    for _ in range(max(1, args.repeat)):
        for name, command in runs:
            seconds, done = timed(command)
            last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
            samples[name].append(seconds)
            if not codes.get(name):  # the first failure is kept
                codes[name] = done.returncode
            print(f"{name:15s} {seconds:7.1f} s  exit {done.returncode}  {last}")
            if name.startswith("pytest"):
                counted = re.search(r"(\d+) passed", done.stdout)
                if not counted or int(counted.group(1)) + len(re.findall(r"\d+ skipped", done.stdout)) == 0:
                    print(f"    (pytest output: {done.stdout[-400:]})")
    times = {name: statistics.median(values) for name, values in samples.items()}
    for name, seconds in times.items():
        print(f"median {name:15s} {seconds:7.2f} s over {len(samples[name])} run(s)")
    cli = times["cli"]
    for name, seconds in times.items():
        if name != "cli":
            print(f"ratio {name} / cli: {seconds / cli:.2f}")
    print(f"ratio pytest -n 2 / pytest -n 0: {times['pytest -n 2'] / times['pytest -n 0']:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps({"variants": len(ids), "paths": args.paths, "selection": selection,
                                               "seconds": times, "samples": samples,
                                               "exit_codes": codes}))


if __name__ == "__main__":
    main()
