#!/usr/bin/env python3
"""Turns one run of distmetrics_bench (Google Benchmark JSON) into the table of ratios.

Usage: report.py RAW.json [--json OUT.json] [--quick] [--python-json FILE] [--python-json-torch2 FILE] [--pytest-json FILE]
(the last three: from bench/python_overhead.py --json, on this build and on the torch 2.x build, and
tools/bench_pytest_vs_cli.py --json)
Every ratio compares two things measured side by side in the same run. Exit 1 when a benchmark
failed to run (never because of a speed: bars are printed, not enforced).
"""
import json
import re
import sys

UNIT_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}
# PyTorch-Ignite 0.4.13's collectives per compute() (one all_reduce per state, two states).
IGNITE_COLLECTIVES = {"Accuracy": 2, "Precision_macro": 2, "ConfusionMatrix_C100": 2, "MeanAbsoluteError": 2}


def load(path):
    with open(path) as f:
        raw = json.load(f)
    runs, errors = {}, []
    for b in raw.get("benchmarks", []):
        name = re.sub(r"/(iterations:\d+|manual_time|real_time)", "", b["name"])
        if b.get("error_occurred"):
            errors.append(f"{name}: {b.get('error_message', 'failed')}")
            continue
        # A median of the repetitions where the benchmark gives one, else Google Benchmark's mean.
        b["ms"] = b["median_ms"] if "median_ms" in b else b["real_time"] * UNIT_MS[b.get("time_unit", "ns")]
        runs[name] = b
    return raw.get("context", {}), runs, errors


def fmt_ms(ms):
    return f"{ms / 1e3:.2f} s" if ms >= 1000 else f"{ms:.3g} ms"


def main(argv):
    path, out_json, quick = argv[1], None, "--quick" in argv
    if "--json" in argv:
        out_json = argv[argv.index("--json") + 1]
    context, runs, errors = load(path)
    rows = []

    def row(measure, value, baseline, ratio, ratio_text, bar, meets):
        rows.append({"measure": measure, "value": value, "baseline": baseline, "ratio": ratio,
                     "ratio_text": ratio_text, "bar": bar, "meets": meets})

    def get(name):
        return runs.get(name)

    for ws in (2, 4):
        steady, floor = get(f"variant/steady/ws:{ws}"), get(f"variant/floor/ws:{ws}")
        py, cxx = get(f"variant/spawn_python/ws:{ws}"), get(f"variant/spawn_cxx/ws:{ws}")
        if steady and py:
            r = py["ms"] / steady["ms"]
            row(f"per-variant cost, trivial, gloo ws{ws} vs spawn-per-test (Python torch, FileStore)",
                fmt_ms(steady["ms"]), fmt_ms(py["ms"]), r, f"{r:.0f}x faster", ">= 60x faster", r >= 60)
        if steady and cxx:
            r = cxx["ms"] / steady["ms"]
            row(f"per-variant cost, trivial, gloo ws{ws} vs spawn-per-test (C++ LibTorch, FileStore)",
                fmt_ms(steady["ms"]), fmt_ms(cxx["ms"]), r, f"{r:.1f}x faster", "(no bar)", None)
        if steady and floor:
            r = steady["ms"] / floor["ms"]
            row(f"per-variant cost, trivial, gloo ws{ws} vs floor (fresh Gloo group + 1 all_reduce)",
                fmt_ms(steady["ms"]), fmt_ms(floor["ms"]), r, f"{r:.2f}x the floor", "<= 1.2x", r <= 1.2)

    startup, steady2 = get("cli/startup_one_variant"), get("variant/steady/ws:2")
    if startup and steady2:
        s = (startup["ms"] - steady2["ms"]) / 1e3
        row("start-up: `distmetrics run`, one trivial ws2 variant, exec to exit, minus the variant",
            f"{s:.2f} s", f"(whole run {fmt_ms(startup['ms'])})", s, f"{s:.2f} s", "<= 0.8 s", s <= 0.8)
        if "cpu_ms" in startup:
            c = startup["cpu_ms"] / 1e3
            row("  the same run's CPU time, all its processes (load-independent)", f"{c:.2f} s CPU", "-", c,
                f"{c:.2f} s", "(printed)", None)
    loading = get("cli/load_help")
    if loading:
        row("  of which: loading the command (`distmetrics list --help`, exec to exit)", fmt_ms(loading["ms"]), "-",
            loading["ms"] / 1e3, f"{loading['ms'] / 1e3:.2f} s", "(printed)", None)
    suite, py2 = get("cli/suite_per_variant"), get("variant/spawn_python/ws:2")
    if suite and py2:
        n = int(suite.get("variants", 0))
        r = py2["ms"] / suite["ms"]
        row(f"wall time per variant, {n} trivial ws2 variants, start-up included, vs spawn-per-test (Python)",
            fmt_ms(suite["ms"]), fmt_ms(py2["ms"]), r, f"{r:.0f}x faster", ">= 40x faster", r >= 40)

    for name in sorted(n for n in runs if n.startswith("sync/")):
        b = runs[name]
        label = name.split("/")[1]
        r = b["metric_ms"] / b["raw_ms"]
        row(f"compute() sync, {label}, gloo ws2 vs raw c10d of the same bytes",
            fmt_ms(b["metric_ms"]), fmt_ms(b["raw_ms"]), r, f"{r:.2f}x", "<= 1.2x", r <= 1.2)
        coll, groups = int(b["collectives"]), int(b["groups"])
        ignite = IGNITE_COLLECTIVES.get(label)
        row(f"collectives per compute(), {label}", str(coll),
            f"{groups} (reduction, dtype) groups" + (f"; Ignite 0.4.13: {ignite}" if ignite else ""),
            coll / groups, f"{coll} vs {groups}", "<= group count", coll <= groups)

    for name in sorted(n for n in runs if n.startswith("update/")):
        b = runs[name]
        r = b["metric_ms"] / b["raw_ms"]
        row(f"update throughput, {name.split('/')[1]}, {int(b['samples']):,} samples, batch 16384 vs raw ATen",
            fmt_ms(b["metric_ms"]), fmt_ms(b["raw_ms"]), r, f"{r:.2f}x", "<= 1.5x", r <= 1.5)

    desync, stall = get("hang/desync"), get("hang/stall")
    if desync:
        d = desync["deadline_ms"]
        r = desync["ms"] / d
        row("hang verdict, one rank of 2 skips a collective (desync) vs the deadline",
            fmt_ms(desync["ms"]), fmt_ms(d), r, f"{r:.2f}x the deadline", "<= 0.5x the deadline", r <= 0.5)
    if stall:
        d = stall["deadline_ms"]
        late = (stall["ms"] - d) / 1e3
        row("hang verdict, one rank of 2 stalls silently vs the deadline",
            fmt_ms(stall["ms"]), fmt_ms(d), late, f"deadline {late:+.2f} s", "<= deadline + 1 s", late <= 1.0)

    python_json = argv[argv.index("--python-json") + 1] if "--python-json" in argv else None
    if python_json:
        with open(python_json) as f:
            p = json.load(f)
        r = p["python_ms"] / p["cpp_ms"]
        row("Python metric per-variant cost at steady state (conform --python, torchmetrics-style MAE) vs a C++ plugin, same scenario",
            fmt_ms(p["python_ms"]), fmt_ms(p["cpp_ms"]), r, f"{r:.2f}x", "<= 1.5x", r <= 1.5)
        first = p["python_first_ms"] / p["cpp_first_ms"]
        row("  the first variant on each new pool (each worker starts its interpreter and imports torch, once per pool)",
            fmt_ms(p["python_first_ms"]), fmt_ms(p["cpp_first_ms"]), first, f"{first:.2f}x", "(printed)", None)
        if "threads4_ms" in p:
            r = p["threads4_ms"] / p["threads1_ms"]
            row("Python metric per variant, whole run (start-up, pool starts), OPENBLAS/OMP/MKL_NUM_THREADS=4 vs 1 "
                "(a many-core machine: workers still forked with the sources imported)",
                fmt_ms(p["threads4_ms"]), fmt_ms(p["threads1_ms"]), r, f"{r:.2f}x", "<= 1.3x", r <= 1.3)
        if "sources_together_s" in p:
            r = p["sources_together_s"] / p["sources_separate_s"]
            row("3 Python sources (torchmetrics, Ignite, torcheval styles) in one conform run vs one run per source",
                f"{p['sources_together_s']:.1f} s", f"{p['sources_separate_s']:.1f} s", r, f"{r:.2f}x", "(printed)", None)
    # The same Python metric on the torch 2.x (pip) build beside this build's (ci/bench.sh --torch2-build-dir).
    torch2_json = argv[argv.index("--python-json-torch2") + 1] if "--python-json-torch2" in argv else None
    if torch2_json and python_json:
        with open(torch2_json) as f:
            t2 = json.load(f)
        here = p.get("torch_version", "this build")
        there = t2.get("torch_version", "2.x")
        r = t2["python_ms"] / p["python_ms"]
        row(f"Python metric per-variant cost at steady state on LibTorch {there} (pip build) vs {here}, same scenario",
            fmt_ms(t2["python_ms"]), fmt_ms(p["python_ms"]), r, f"{r:.2f}x", "(printed)", None)
        r = t2["python_first_ms"] / p["python_first_ms"]
        row(f"  the first variant on each new pool, LibTorch {there} vs {here}",
            fmt_ms(t2["python_first_ms"]), fmt_ms(p["python_first_ms"]), r, f"{r:.2f}x", "(printed)", None)
        r = t2["python_ms"] / t2["cpp_ms"]
        row(f"  on LibTorch {there}: the Python metric vs the C++ plugin (gloo through torch's Python binding, no kept transport)",
            fmt_ms(t2["python_ms"]), fmt_ms(t2["cpp_ms"]), r, f"{r:.2f}x", "(printed)", None)
    pytest_json = argv[argv.index("--pytest-json") + 1] if "--pytest-json" in argv else None
    if pytest_json:
        with open(pytest_json) as f:
            p = json.load(f)
        t, where = p["seconds"], f"{' '.join(p['paths'])}, {p['variants']} variants ({' '.join(p['selection'])})"
        for name in ("pytest -n 0", "pytest -n 2"):
            if name in t:
                r = t[name] / t["cli"]
                row(f"{name} on {where} vs the CLI (`distmetrics run`), exec to exit",
                    f"{t[name]:.1f} s", f"{t['cli']:.1f} s", r, f"{r:.2f}x", "<= 1.3x", r <= 1.3)
        bad = {k: c for k, c in p.get("exit_codes", {}).items() if c not in (0, 1)}
        if bad:
            errors.append(f"pytest vs CLI: runs that did not finish normally: {bad}")

    library = get("cli/library")
    if library:
        n = int(library.get("variants", 0))
        row("whole scenario library, gloo, ws 1,2,4 (CLI, exec to exit)",
            f"{library['ms'] / 1e3:.1f} s for {n} variants ({int(library.get('passed', 0))} passed)", "-",
            library.get("variants_per_s", 0), f"{library.get('variants_per_s', 0):.1f} variants/s", "(printed)", None)

    header = ("measure", "this run", "compared with", "ratio", "bar", "meets")
    table = [header] + [(r["measure"], r["value"], r["baseline"], r["ratio_text"], r["bar"],
                         "-" if r["meets"] is None else ("yes" if r["meets"] else "NO")) for r in rows]
    widths = [max(len(str(line[i])) for line in table) for i in range(len(header))]
    if quick:
        print("QUICK MODE: tiny sizes and one repetition; these numbers check that the benchmarks run, "
              "they measure nothing.")
    print(f"host: {context.get('host_name', '?')}, {context.get('num_cpus', '?')} CPUs, "
          f"load avg {', '.join(f'{x:.1f}' for x in context.get('load_avg', []))}, {context.get('date', '')}")
    for i, line in enumerate(table):
        print("  ".join(str(c).ljust(widths[j]) for j, c in enumerate(line)).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    for e in errors:
        print(f"FAILED: {e}", file=sys.stderr)
    if out_json:
        with open(out_json, "w") as f:
            json.dump({"quick": quick, "context": context, "rows": rows, "errors": errors}, f, indent=1)
    return 1 if errors or not rows else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
