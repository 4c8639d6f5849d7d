#!/usr/bin/env python3
"""Before/after equivalence of the CLI's results (issue 21): the same commands, run by two
builds, must give the same results, timings aside.

    equivalence.py capture --bin BIN --plugins DIR --out DIR   # e.g. the branch point's build
    equivalence.py compare --bin BIN --plugins DIR --ref DIR   # this build, against that capture

The commands: `run --json` on the whole scenario library at world sizes 1, 2 and 4 (gloo),
`list --json`, `validate` of the bad corpus, `conform` of every example plugin (DIR holds the
example plugins as examples/plugins builds them: plugin/tests/build_examples.sh) and of the
Python examples, and `run --allow-python` of the Python scenario examples. Each command's exit
code, its JSON report, its JUnit, Markdown and HTML reports and its console output are kept, with what
changes from run to run taken out: seconds, start times, process ids, temporary paths and the
durations written into messages. `explore` runs with a fixed seed and `--max-cases` (a count, not
the clock, ends the search) on a reference metric, two broken example plugins (a failure, a hang)
and a broken Python example, each finding shrunk within a few candidates; its throughput is taken
out with the timings. Run from the repository root with /usr/bin/python3:

    cmake --build build --target installable
    bash plugin/tests/build_examples.sh $PWD/build $PWD/examples/plugins $PWD/build/equiv-examples Ninja c++
    /usr/bin/python3 tools/equivalence/equivalence.py capture --bin OLD/bin/distmetrics \
        --plugins build/equiv-examples/build --out build/equiv-capture.json
    /usr/bin/python3 tools/equivalence/equivalence.py compare --bin build/bin/distmetrics \
        --plugins build/equiv-examples/build --ref build/equiv-capture.json

The example plugins are built once: their ABI does not change with the harness, so both builds
load the same ones. An older build kept as a copy of its bin/distmetrics and its five
libdistmetrics_*.so.0 runs with LD_LIBRARY_PATH naming that copy (it takes precedence over the
build's RUNPATH). `--only NAME,...` runs some commands (a capture adds them to --out's);
`--new-list-fields F,...` leaves fields that `list --json` gained on purpose out of the compare;
`--changed 'OLD=>NEW'` replaces a text changed on purpose in the reference first; `--results FILE`
compares a kept capture instead of running the binary (a command rerun with --only, e.g. after
a hang of a loaded machine, merged into it). The compare takes about 5 minutes on 2 cores; it exits 1 and prints a diff
of each command whose results differ.
"""
import argparse
import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PY = Path("examples/python")
PY_MAE = PY / "scenarios" / "mean_absolute_error.toml"
PY_MAX = PY / "scenarios" / "maximum_absolute_error.toml"
# A Python rank imports torch in its first variant: on a busy machine that can pass a scenario's
# deadline, and a hang that depends on load is not a result to compare.
PY_DEADLINE = ["--deadline", "40"]


def commands(plugins):
    """(name, argv after the binary, report files it writes) for every command compared."""
    out = [
        ("run_library", ["run", "scenarios", "--backend", "gloo", "--world-sizes", "1,2,4", "--quiet"], True),
        ("list", ["list", "--json"], False),
        ("list_library_124", ["list", "scenarios", "--json", "--world-sizes", "1,2,4"], False),
        ("validate_bad", ["validate", "harness/tests/scenarios/bad"], False),
        # own_data: a .pt file and a scikit-learn reference (structured/ needs its Python metric:
        # conform, below, runs those).
        ("run_python_own_data", ["run", "--allow-python", str(PY / "own_data"), "--world-sizes", "1,2"], True),
        ("conform_python_correct", ["conform", "--python", str(PY / "correct_ignite.py"), "--python",
                                    str(PY / "correct_torcheval.py"), "--python", str(PY / "correct_torchmetrics.py"),
                                    str(PY / "scenarios"), "--world-sizes", "1,2", *PY_DEADLINE], True),
    ]
    for broken, scenario in [("no_sync", PY_MAE), ("sync_overwrites_state", PY_MAE), ("sum_for_max", PY_MAX),
                             ("raises_alone_on_empty", PY_MAE), ("collective_per_element", PY_MAE)]:
        out.append((f"conform_python_{broken}", ["conform", "--python", str(PY / "broken" / f"{broken}.py"),
                                                 str(scenario), "--world-sizes", "1,2", *PY_DEADLINE], True))
    for lib in sorted(Path(plugins).glob("lib*.so")):
        out.append((f"conform_plugin_{lib.stem[3:]}", ["conform", "--plugin", str(lib), "examples/plugins/scenarios",
                                                       "--world-sizes", "1,2,4"], True))
    # explore with a fixed seed: --max-cases ends the search, a budget far past it never does.
    search = ["--budget", "900", "--quiet", "--shrink-attempts", "12"]
    out += [
        ("explore_reference", ["explore", "--metric", "MeanAbsoluteError", "--seed", "5", "--max-cases", "24",
                               "--world-sizes", "1,2,3", *search], "explore"),
        ("explore_reference_precision", ["explore", "--metric", "Precision", "--seed", "3", "--max-cases", "16",
                                         "--world-sizes", "1,2", *search], "explore"),
        ("explore_python_no_sync", ["explore", "--python", str(PY / "broken" / "no_sync.py"), "--metric",
                                    "MeanAbsoluteError", "--seed", "1", "--max-cases", "6", "--world-sizes", "1,2",
                                    "--deadline", "40", *search], "explore"),
    ]
    for lib in ("no_sync", "raises_alone"):
        path = Path(plugins) / f"libexample_{lib}.so"
        if path.exists():
            out.append((f"explore_plugin_{lib}", ["explore", "--plugin", str(path), "--metric", "MeanAbsoluteError",
                                                  "--seed", "2", "--max-cases", "10", "--world-sizes", "1,2",
                                                  "--deadline", "4", *search], "explore"))
    return out


TIME = re.compile(r"\b\d+(\.\d+)?(e[-+]?\d+)? ?(s|ms|us)\b")
ISO = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


def scrub_text(text, tmp):
    text = text.replace(tmp, "<tmp>")
    text = re.sub(r"\b\d+(\.\d+)? variants/s", "<n> variants/s", text)
    text = re.sub(r"/tmp/distmetrics-explore-\w+", "<explore-tmp>", text)
    text = ISO.sub("<when>", text)
    text = TIME.sub("<t>", text)
    text = re.sub(r"\b(pid|process) \d+", r"\1 <pid>", text)
    text = re.sub(r'time="[^"]*"', 'time="<t>"', text)
    text = re.sub(r'timestamp="[^"]*"', 'timestamp="<when>"', text)
    return html_seconds(text)


def html_seconds(text):
    """The HTML's variant tables: a cell of seconds after the outcome's badge (applied again to a
    capture when comparing, so that one made before this rule compares too)."""
    return re.sub(r'(</span></td><td>)\d+\.\d\d(</td>)', r'\1<t>\2', text)


DROP = {"seconds", "started", "timings", "pid", "elapsed_seconds", "duration_seconds",
        # explore's summary: its throughput and when things happened
        "variants_per_second", "helper_ready_seconds", "first_case_seconds", "found_after_seconds",
        "seconds_since_start",
        # where a variant's time went (runtime/phases.h): timings only, one object per variant
        "phases"}


def _without_dropped(value):
    if isinstance(value, dict):
        return {k: _without_dropped(v) for k, v in value.items() if k not in DROP}
    if isinstance(value, list):
        return [_without_dropped(v) for v in value]
    return value


def scrub_json(value, tmp):
    if isinstance(value, dict):
        return {k: scrub_json(v, tmp) for k, v in value.items() if k not in DROP}
    if isinstance(value, list):
        return [scrub_json(v, tmp) for v in value]
    if isinstance(value, str):
        return scrub_text(value, tmp)
    return value


def run_all(binary, plugins, only=None):
    results = {}
    for name, args, reports in commands(plugins):
        if only and name not in only:
            continue
        with tempfile.TemporaryDirectory(prefix="equiv-") as tmp:
            argv = [binary, *args]
            if reports:
                argv += ["--json", f"{tmp}/r.json", "--junit", f"{tmp}/r.xml", "--markdown", f"{tmp}/r.md",
                         "--html", f"{tmp}/r.html"]
            if reports == "explore":  # and its saved findings, and the log of every case
                argv += ["--save", f"{tmp}/found", "--log", f"{tmp}/log.jsonl"]
            env = dict(os.environ, NO_COLOR="1")
            env.pop("DISTMETRICS_SCENARIOS", None)
            proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=900, env=env,
                                  stdin=subprocess.DEVNULL)
            entry = {"rc": proc.returncode, "stdout": scrub_text(proc.stdout, tmp).splitlines(),
                     "stderr": scrub_text(proc.stderr, tmp).splitlines()}
            if name.startswith("list"):
                entry["stdout"] = scrub_json(json.loads(proc.stdout), tmp)
            if reports:
                for suffix in ("json", "xml", "md", "html"):
                    path = Path(tmp) / f"r.{suffix}"
                    if not path.exists():
                        entry[suffix] = None
                    elif suffix == "json":
                        entry[suffix] = scrub_json(json.loads(path.read_text()), tmp)
                    else:
                        entry[suffix] = scrub_text(path.read_text(), tmp).splitlines()
            if reports == "explore":
                entry["saved"] = {f.name: scrub_text(f.read_text(), tmp).splitlines()
                                  for f in sorted(Path(tmp, "found").glob("*.toml"))}
                log = Path(tmp, "log.jsonl")
                entry["log"] = [scrub_json(json.loads(line), tmp) for line in log.read_text().splitlines()] \
                    if log.exists() else None
            results[name] = entry
            print(f"equivalence: {name}: exit {proc.returncode}", file=sys.stderr)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("mode", choices=["capture", "compare"])
    parser.add_argument("--bin", required=True)
    parser.add_argument("--plugins", required=True, help="folder of the built example plugins (lib*.so)")
    parser.add_argument("--out", help="capture: the file to write")
    parser.add_argument("--ref", help="compare: the capture to compare with")
    parser.add_argument("--keep", help="compare: also write this run's capture here")
    parser.add_argument("--new-list-fields", help="compare: fields this build adds to every `list --json` entry "
                                                  "on purpose (comma-separated): each must be there, and is left "
                                                  "out of the comparison")
    parser.add_argument("--changed", action="append", default=[], metavar="OLD=>NEW",
                        help="compare: a text this build changed on purpose; replaced in the reference capture "
                             "before comparing (repeatable)")
    parser.add_argument("--results", help="compare: this capture instead of running --bin (e.g. one kept with "
                                          "--keep, with commands rerun by --only merged in)")
    parser.add_argument("--only", help="these commands only (comma-separated names); capture: added to "
                                       "--out's commands when it exists")
    a = parser.parse_args()
    only = set(a.only.split(",")) if a.only else None
    if a.results:
        results = json.loads(Path(a.results).read_text())
        if only:
            results = {name: entry for name, entry in results.items() if name in only}
    else:
        results = run_all(str(Path(a.bin).resolve()), Path(a.plugins).resolve(), only)
    if a.mode == "capture":
        kept = json.loads(Path(a.out).read_text()) if only and Path(a.out).exists() else {}
        kept.update(results)
        Path(a.out).write_text(json.dumps(kept, indent=1, sort_keys=True) + "\n")
        return 0
    if a.keep:
        Path(a.keep).write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    ref_text = Path(a.ref).read_text()
    for change in a.changed:
        before, after = change.split("=>", 1)
        ref_text = ref_text.replace(json.dumps(before)[1:-1], json.dumps(after)[1:-1])
    # A capture kept before a key joined DROP still holds it: both sides are compared without it.
    ref = _without_dropped(json.loads(ref_text))
    added = a.new_list_fields.split(",") if a.new_list_fields else []
    missing = 0
    for name, entry in results.items():
        if not name.startswith("list") or not added:
            continue
        for variant in entry["stdout"]:
            missing += sum(field not in variant for field in added)
            for field in added:
                variant.pop(field, None)
    if missing:
        print(f"equivalence: {missing} `list --json` entries lack one of the new fields {added}")
    if only:
        ref = {name: entry for name, entry in ref.items() if name in only}
    for entry in list(ref.values()) + list(results.values()):
        if entry.get("html"):
            entry["html"] = [html_seconds(line) for line in entry["html"]]
    differ = 0
    for name in sorted(set(ref) | set(results)):
        if ref.get(name) == results.get(name):
            continue
        differ += 1
        before = json.dumps(ref.get(name), indent=1, sort_keys=True).splitlines()
        after = json.dumps(results.get(name), indent=1, sort_keys=True).splitlines()
        print(f"equivalence: {name} differs:")
        for line in list(difflib.unified_diff(before, after, "before", "after", lineterm="", n=2))[:80]:
            print("  " + line)
    print(f"equivalence: {len(results) - differ} of {len(results)} command(s) give the same results"
          + ("" if not differ else f"; {differ} differ"))
    return 1 if differ or missing else 0


if __name__ == "__main__":
    sys.exit(main())
