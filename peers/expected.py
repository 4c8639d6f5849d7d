"""Compares a library's peer run (the JSON report of `distmetrics conform`) with its expected
findings (peers/<library>/expected.toml) and prints one summary line.

A finding is a variant that did not pass (fail, hang, crash, error, memory_exceeded), with the
properties that failed and the rank blamed. expected.toml lists them:

    [[finding]]
    variant = "accuracy_binary:gloo-ws*-empty_rank-cpu"   # fnmatch glob on the variant id
    outcome = "fail"                                      # the variant's outcome; a list where the
                                                          # mechanism gives one of several (why says which)
    property = "equal_to_single"                          # a property that failed ("" for hang/crash/error)
    blamed_rank = 1                                       # optional: the rank the diagnosis blames
    kind = "library bug"                                  # library bug | convention (docs/peers.md)
    why = "one line: the mechanism (docs/peers.md has the file, line and repro)"

The run passes when every finding matches an entry and every entry whose variants ran matches a
finding (a subset run checks the entries it covers); otherwise
it names the differences: a new finding (the library or the harness changed) or an entry that no
longer appears (the library fixed it, or the harness stopped seeing it). Exit 0 / 1; 2 for bad
input (a malformed expected.toml names its file, entry and field).

    /usr/bin/python3 peers/expected.py --library torchmetrics --report R.json [--expected F] [--markdown OUT]
"""

import argparse
import fnmatch
import json
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOT_PASSED = ("fail", "hang", "crash", "error", "memory_exceeded")
FIELDS = {"variant": str, "outcome": (str, list), "property": str, "blamed_rank": int, "kind": str, "why": str, "metric": str}
KINDS = ("library bug", "convention")


class BadInput(Exception):
    pass


def load_expected(path):
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        return []
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{path}: {e}") from None
    entries = data.get("finding", [])
    unknown = sorted(set(data) - {"finding"})
    if unknown:
        raise BadInput(f"{path}: unknown table(s) {', '.join(unknown)} (only [[finding]])")
    for i, entry in enumerate(entries, 1):
        where = f"{path}: finding #{i}"
        for key, value in entry.items():
            if key not in FIELDS:
                raise BadInput(f"{where}: unknown field '{key}' (known: {', '.join(FIELDS)})")
            if not isinstance(value, FIELDS[key]):
                kind = " or a list" if key == "outcome" else ""
                raise BadInput(f"{where}: field '{key}' must be a {str.__name__ if kind else FIELDS[key].__name__}"
                               f"{kind}, got {value!r}")
        for key in ("variant", "outcome", "kind", "why"):
            if key not in entry:
                raise BadInput(f"{where}: field '{key}' is required")
        outcomes = entry["outcome"] if isinstance(entry["outcome"], list) else [entry["outcome"]]
        if not outcomes or any(o not in NOT_PASSED for o in outcomes):
            raise BadInput(f"{where}: field 'outcome' must be one of {', '.join(NOT_PASSED)} (or a list of them), "
                           f"got {entry['outcome']!r}")
        entry["_outcomes"] = outcomes
        if entry["kind"] not in KINDS:
            raise BadInput(f"{where}: field 'kind' must be one of {', '.join(KINDS)} (a harness limitation is "
                           f"fixed in the harness, never expected), got {entry['kind']!r}")
        entry["_where"] = where
    return entries


def blamed_rank(variant):
    m = re.search(r"rank (\d+) to blame", (variant.get("diagnosis") or "") + " " + (variant.get("reason") or ""))
    return int(m.group(1)) if m else None


def of_library(report, library):
    """The report's variants of `library`: all of them, or in a run of several sources (one
    `conform` with a --python per library, ci/run_peers.sh) those of peers/<library>/metrics.py."""
    variants = report.get("variants", [])
    if not any("source" in v for v in variants):
        return variants
    return [v for v in variants if v.get("source", "").endswith(f"/{library}/metrics.py")
            or v.get("source", "") == f"python:{library}/metrics.py"]


def metric_name(variant):
    """The metric's name without the source label a run of several sources adds ("Accuracy (ignite/metrics)")."""
    return re.sub(r" \([^()]*\)$", "", variant.get("metric", ""))


def mapped_classes(library):
    """How many library classes peers/<library>/metrics.py maps (its Peer(...) entries, read with
    ast: this script runs without the libraries)."""
    import ast

    path = HERE / library / "metrics.py"
    try:
        tree = ast.parse(path.read_text())
    except (OSError, SyntaxError):
        return None
    return sum(isinstance(n, ast.Call) and getattr(n.func, "id", None) == "Peer" for n in ast.walk(tree))


def findings(variants):
    out = []
    for v in variants:
        if v["outcome"] not in NOT_PASSED:
            continue
        failed = [p["name"] for p in v.get("properties", []) if p.get("outcome") in NOT_PASSED]
        out.append({"variant": v["id"], "metric": metric_name(v), "outcome": v["outcome"], "failed": failed,
                    "blamed_rank": blamed_rank(v), "headline": ((v.get("root_cause") or {}).get("headline")
                                                                or v.get("reason") or "")[:300]})
    return out


def matches(entry, finding):
    if not fnmatch.fnmatchcase(finding["variant"], entry["variant"]):
        return False
    if entry.get("metric") and entry["metric"] != finding["metric"]:
        return False
    if finding["outcome"] not in entry["_outcomes"]:
        return False
    if entry.get("property") and entry["property"] not in finding["failed"]:
        return False
    if "blamed_rank" in entry and entry["blamed_rank"] != finding["blamed_rank"]:
        return False
    return True


def compare(entries, found, ran):
    """(findings no entry expects, entries whose variants ran without their finding); an entry
    whose variants did not run (a subset: --world-sizes, --filter) is not missing."""
    unexpected = [f for f in found if not any(matches(e, f) for e in entries)]
    missing = [e for e in entries if not any(matches(e, f) for f in found)
               and any(fnmatch.fnmatchcase(v, e["variant"]) for v in ran)]
    return unexpected, missing


def describe(finding):
    blame = f", rank {finding['blamed_rank']} blamed" if finding["blamed_rank"] is not None else ""
    props = f" ({', '.join(finding['failed'])})" if finding["failed"] else ""
    return f"{finding['outcome'].upper()} {finding['variant']}{props}{blame}: {finding['headline']}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", required=True)
    ap.add_argument("--report", required=True, help="the conform JSON report")
    ap.add_argument("--expected", help="default: peers/<library>/expected.toml")
    ap.add_argument("--markdown", help="append the comparison to this Markdown file")
    args = ap.parse_args(argv)
    expected_path = args.expected or str(HERE / args.library / "expected.toml")
    try:
        entries = load_expected(expected_path)
        report = json.loads(Path(args.report).read_text())
    except BadInput as e:
        print(f"peers/expected.py: {e}", file=sys.stderr)
        return 2
    except (OSError, json.JSONDecodeError) as e:
        print(f"peers/expected.py: cannot read the report {args.report}: {e}", file=sys.stderr)
        return 2
    variants = of_library(report, args.library)
    if not variants:
        print(f"peers/expected.py: the report {args.report} has no variant of {args.library} "
              f"(no source peers/{args.library}/metrics.py in it)", file=sys.stderr)
        return 2
    found = findings(variants)
    unexpected, missing = compare(entries, found, [v["id"] for v in variants if v["outcome"] != "skip"])
    metrics = sorted({metric_name(v) for v in variants} - {""})
    counts = {o: sum(v["outcome"] == o for v in variants) for o in ("pass", "skip", *NOT_PASSED)}
    lines = []
    for f in unexpected:
        lines.append(f"  unexpected: {describe(f)}")
    for e in missing:
        lines.append(f"  expected but not seen: {e['_where']}: {' or '.join(e['_outcomes'])} {e['variant']}"
                     f"{' (' + e['property'] + ')' if e.get('property') else ''}: {e['why']} "
                     f"(the library fixed it, or the harness stopped seeing it: update {expected_path})")
    seconds = sum(v.get("seconds", 0) for v in variants)
    classes = mapped_classes(args.library)
    summary = (f"{args.library}: {'' if classes is None else f'{classes} mapped classes, '}{len(metrics)} metric(s), "
               f"{len(variants)} variant(s) ({counts['pass']} pass, {counts['skip']} skip, {len(found)} finding(s), "
               f"{seconds:.0f} s of variant time): "
               f"{len(found) - len(unexpected)} expected, {len(unexpected)} unexpected, "
               f"{len(missing)} expected but not seen")
    for line in lines:
        print(line)
    print(summary)
    if args.markdown:
        with open(args.markdown, "a") as out:
            out.write(f"\n## Expected findings ({expected_path})\n\n{summary}\n\n")
            out.writelines(f"-{line[1:]}\n" for line in lines)
    return 0 if not unexpected and not missing else 1


if __name__ == "__main__":
    sys.exit(main())
