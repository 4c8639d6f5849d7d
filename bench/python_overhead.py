#!/usr/bin/env python3
"""Per-variant overhead of a Python metric against a C++ plugin on the same scenario: runs
`distmetrics conform` on examples/python/scenarios/mean_absolute_error.toml with the example C++
plugin (libexample_regression_metrics.so) and with examples/python/correct_torchmetrics.py, a
few times each, and prints the median seconds per variant (the engine's own timing of each
variant, from the JSON report) and their ratio. A benchmark, not a test: it asserts nothing.

    bench/python_overhead.py --bin build/bin/distmetrics --plugin build/plugin/tests/libexample_regression_metrics.so
"""

import argparse
import json
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "examples" / "python" / "scenarios" / "mean_absolute_error.toml"
PYTHON_SOURCE = ROOT / "examples" / "python" / "correct_torchmetrics.py"


def run(binary, source_flag, source, repeat):
    per_variant, walls = [], []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "r.json"
            start = time.monotonic()
            done = subprocess.run([binary, "conform", source_flag, str(source), "--metric", "MeanAbsoluteError",
                                   str(SCENARIO), "--quiet", "--json", str(report)], cwd=ROOT,
                                  capture_output=True, text=True)
            walls.append(time.monotonic() - start)
            if done.returncode != 0:
                raise SystemExit(f"{source_flag} {source}: exit {done.returncode}\n{done.stdout}{done.stderr}")
            per_variant += [v["seconds"] for v in json.loads(report.read_text())["variants"]]
    return statistics.median(per_variant), statistics.median(walls)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=str(ROOT / "build" / "bin" / "distmetrics"))
    parser.add_argument("--plugin", default=str(ROOT / "build" / "plugin" / "tests" / "libexample_regression_metrics.so"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the medians and the ratio to this file (ci/bench.sh's table)")
    args = parser.parse_args()
    cpp_variant, cpp_wall = run(args.bin, "--plugin", args.plugin, args.repeat)
    py_variant, py_wall = run(args.bin, "--python", PYTHON_SOURCE, args.repeat)
    print(f"C++ plugin : {cpp_variant * 1000:8.1f} ms per variant (median), {cpp_wall:6.2f} s per conform run")
    print(f"Python     : {py_variant * 1000:8.1f} ms per variant (median), {py_wall:6.2f} s per conform run")
    print(f"ratio Python / C++: {py_variant / cpp_variant:.2f} per variant, {py_wall / cpp_wall:.2f} per run "
          f"(the run includes starting each pool's interpreters once)")
    if args.json:
        Path(args.json).write_text(json.dumps({"cpp_ms": cpp_variant * 1000, "python_ms": py_variant * 1000,
                                               "cpp_run_s": cpp_wall, "python_run_s": py_wall,
                                               "variants": "examples/python/scenarios/mean_absolute_error.toml",
                                               "repeat": args.repeat}))


if __name__ == "__main__":
    main()
