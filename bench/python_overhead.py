#!/usr/bin/env python3
"""Per-variant overhead of a Python metric against a C++ plugin on the same scenario: runs
`distmetrics conform` on examples/python/scenarios/mean_absolute_error.toml with the example C++
plugin (libexample_regression_metrics.so) and with examples/python/correct_torchmetrics.py, a
few times each, and prints the median seconds per variant at steady state (the engine's own
timing of each variant, from the JSON report, leaving out the first variant on each new pool)
and their ratio. The first variant on a pool is printed apart: with a Python metric it is where
each worker starts its interpreter and imports torch, once per pool (a per-run cost, like
start-up). A benchmark, not a test: it asserts nothing.

Also three Python sources (the torchmetrics, Ignite and torcheval styles, each registering
MeanAbsoluteError) conformed in ONE run (`--python A --python B --python C`: one pool per world
size, each worker starting its interpreter once) against one run per source, as a peer run of
three libraries would do it otherwise: the walls' ratio.

And the Python source's cost per variant, start-up and pool starts included (the run's wall over
its variants), with the library thread-pool variables (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS,
MKL_NUM_THREADS) at 1 and at 4, as on a many-core machine: workers must still be forked with the
sources imported (docs/runtime.md), so the two should cost about the same.

    bench/python_overhead.py --bin build/bin/distmetrics --plugin build/plugin/tests/libexample_regression_metrics.so
"""

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCENARIO = ROOT / "examples" / "python" / "scenarios" / "mean_absolute_error.toml"
PYTHON_SOURCE = ROOT / "examples" / "python" / "correct_torchmetrics.py"


STYLES = [ROOT / "examples" / "python" / name for name in ("correct_torchmetrics.py", "correct_ignite.py",
                                                              "correct_torcheval.py")]


def run(binary, source_flag, source, repeat, env=None):
    """Medians of the warm variants' seconds, of each pool's first variant, and of the runs' walls;
    the number of variants a run has."""
    warm, first, walls = [], [], []
    env = dict(os.environ, **(env or {}))
    sources = source if isinstance(source, list) else [source]
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as tmp:
            report = Path(tmp) / "r.json"
            start = time.monotonic()
            flags = [arg for s in sources for arg in (source_flag, str(s))]
            # A long deadline: a loaded machine must not turn a slow pool start into a hang.
            done = subprocess.run([binary, "conform", *flags, "--metric", "MeanAbsoluteError",
                                   str(SCENARIO), "--deadline", "60", "--quiet", "--json", str(report)], cwd=ROOT,
                                  capture_output=True, text=True, env=env)
            walls.append(time.monotonic() - start)
            if done.returncode != 0:
                raise SystemExit(f"{source_flag} {source}: exit {done.returncode}\n{done.stdout}{done.stderr}")
            pools_seen = set()  # one pool per (backend, world size), in the order the variants ran
            ran = json.loads(report.read_text())["variants"]
            for v in ran:
                pool = (v.get("backend"), v.get("world_size"))
                (warm if pool in pools_seen else first).append(v["seconds"])
                pools_seen.add(pool)
    return statistics.median(warm), statistics.median(first), statistics.median(walls), len(ran)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--bin", default=str(ROOT / "build" / "bin" / "distmetrics"))
    parser.add_argument("--plugin", default=str(ROOT / "build" / "plugin" / "tests" / "libexample_regression_metrics.so"))
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", help="also write the medians and the ratio to this file (ci/bench.sh's table)")
    parser.add_argument("--no-sources", action="store_true",
                        help="leave out the three-sources comparison (ci/bench.sh's torch 2.x row needs only the per-variant costs)")
    args = parser.parse_args()
    cpp_variant, cpp_first, cpp_wall, _ = run(args.bin, "--plugin", args.plugin, args.repeat)
    py_variant, py_first, py_wall, _ = run(args.bin, "--python", PYTHON_SOURCE, args.repeat)
    print(f"C++ plugin : {cpp_variant * 1000:8.1f} ms per variant at steady state (median), "
          f"{cpp_first * 1000:8.1f} ms the first on a pool, {cpp_wall:6.2f} s per conform run")
    print(f"Python     : {py_variant * 1000:8.1f} ms per variant at steady state (median), "
          f"{py_first * 1000:8.1f} ms the first on a pool, {py_wall:6.2f} s per conform run")
    print(f"ratio Python / C++: {py_variant / cpp_variant:.2f} per variant at steady state, {py_first / cpp_first:.2f} "
          f"for the first on a pool (each worker starts its interpreter and imports torch), {py_wall / cpp_wall:.2f} per run")
    # Three sources: one run for all of them against a run per source (each paying every
    # worker's interpreter start and torch import again).
    # Which LibTorch the CLI was built against ("distmetrics X (LibTorch 2.15.0)"): the rows of two builds
    # side by side say which is which.
    version = subprocess.run([args.bin, "--version"], capture_output=True, text=True).stdout.strip()
    torch_version = version.rsplit("LibTorch ", 1)[-1].rstrip(")") if "LibTorch " in version else "?"
    result = {"cpp_ms": cpp_variant * 1000, "python_ms": py_variant * 1000,
              "cpp_first_ms": cpp_first * 1000, "python_first_ms": py_first * 1000,
              "cpp_run_s": cpp_wall, "python_run_s": py_wall, "torch_version": torch_version,
              "variants": "examples/python/scenarios/mean_absolute_error.toml", "repeat": args.repeat}
    if not args.no_sources:
        separate = sum(run(args.bin, "--python", source, args.repeat)[2] for source in STYLES)
        together = run(args.bin, "--python", STYLES, args.repeat)[2]
        print(f"3 sources in one conform run: {together:6.2f} s; one run per source: {separate:6.2f} s in all; "
              f"ratio {together / separate:.2f}")
        result.update(sources_together_s=together, sources_separate_s=separate)
    # Thread pools: the same source's whole run over its variants, the variables at 1 and at 4.
    per_variant = {}
    for threads in ("1", "4"):
        env = {name: threads for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
        _, _, wall, variants = run(args.bin, "--python", PYTHON_SOURCE, args.repeat, env)
        per_variant[threads] = wall / variants
    print(f"Python, whole run per variant: {per_variant['1'] * 1000:8.1f} ms with the thread-pool variables at 1, "
          f"{per_variant['4'] * 1000:8.1f} ms at 4; ratio {per_variant['4'] / per_variant['1']:.2f}")
    result.update(threads1_ms=per_variant["1"] * 1000, threads4_ms=per_variant["4"] * 1000)
    if args.json:
        Path(args.json).write_text(json.dumps(result))

if __name__ == "__main__":
    main()
