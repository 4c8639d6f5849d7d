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

Expectations per release. A library's findings depend on its version and on the torch it runs
on (torchmetrics' #2463 fix runs on torch >= 2.1 only), so expected.toml names the releases it
was triaged on, "<library version> on torch <major.minor>", and an entry that holds for some of
them only says which:

    releases = ["1.5.2 on torch 1.13", "1.9.0 on torch 2.15"]   # top level: the releases triaged
    [[finding]]
    ...
    releases = ["1.5.2 on torch 1.13"]                          # optional: default, every one

The release that ran comes from the report: the library's version is its mapping's
`__version__` (peers/<library>/metrics.py sets it to the library's own), the torch version the
source's interpreter's (--version overrides the library's). A release the file does not list is
bad input (exit 2) naming the release and the file to extend: a new release is triaged, never
passed silently. A file without `releases` applies to any release.

The run passes when every finding matches an entry and every entry whose variants ran matches a
finding (a subset run checks the entries it covers); otherwise
it names the differences: a new finding (the library or the harness changed) or an entry that no
longer appears (the library fixed it, or the harness stopped seeing it). Exit 0 / 1; 2 for bad
input (a malformed expected.toml names its file, entry and field).

    /usr/bin/python3 peers/expected.py --library torchmetrics --report R.json [--expected F] [--version V] [--markdown OUT]
"""

import argparse
import fnmatch
import json
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
# The outcomes that are findings: every outcome of the runner's table (harness/outcome.h) but pass and
# skip, as a report's "summary" names them; until a report is read, the contract's
# (docs/cli-contract.md).
NOT_PASSED = ("fail", "hang", "crash", "error", "memory_exceeded")


def outcomes_of(report):
    """The not-passed outcomes a report's runner knows: its summary's keys but pass, skip and total."""
    return tuple(k for k in report.get("summary", {}) if k not in ("pass", "skip", "total")) or NOT_PASSED
FIELDS = {"variant": str, "outcome": (str, list), "property": str, "blamed_rank": int, "kind": str, "why": str, "metric": str,
          "releases": list}
KINDS = ("library bug", "convention")
# "<library version> on torch <major.minor>": what a library's findings depend on.
RELEASE = re.compile(r"^[0-9][0-9A-Za-z.+-]* on torch [0-9]+\.[0-9]+$")


class BadInput(Exception):
    pass


def release(version, torch_version):
    """The release key of a library version run on a torch version ("1.9.0", "2.15.0+cu132")."""
    m = re.match(r"(\d+)\.(\d+)", torch_version or "")
    return f"{version} on torch {m.group(1)}.{m.group(2)}" if version and m else None


def load_expected(path):
    """(entries, the releases the file lists or None); a missing file is bad input."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise BadInput(f"{path}: no such file: write the library's expected findings there (the format: "
                       f"peers/expected.py's docstring)") from None
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{path}: {e}") from None
    entries = data.get("finding", [])
    unknown = sorted(set(data) - {"finding", "releases"})
    if unknown:
        raise BadInput(f"{path}: unknown table(s) {', '.join(unknown)} (only releases and [[finding]])")
    releases = data.get("releases")
    if releases is not None and (not isinstance(releases, list) or not releases
                                 or not all(isinstance(r, str) and RELEASE.match(r) for r in releases)):
        raise BadInput(f"{path}: releases must be a list of \"<library version> on torch <major.minor>\", "
                       f"got {releases!r}")
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
        if "releases" in entry:
            if releases is None:
                raise BadInput(f"{where}: field 'releases' needs the file's own top-level releases list")
            strange = [r for r in entry["releases"] if r not in releases]
            if not entry["releases"] or strange:
                raise BadInput(f"{where}: field 'releases' must list some of the file's releases "
                               f"({', '.join(releases)}), got {entry['releases']!r}")
        entry["_where"] = where
    return entries, releases


def for_release(entries, releases, ran, path, library):
    """The entries that hold for the release `ran`; bad input when the file does not list it."""
    if releases is None:
        return entries
    if ran is None:
        raise BadInput(f"{path} lists expectations per release, and the report does not say which release of "
                       f"{library} ran (no __version__ in its mapping peers/{library}/metrics.py): pass --version")
    if ran not in releases:
        raise BadInput(f"{path} has no expected findings for {library} {ran} (it has them for "
                       f"{', '.join(releases)}): run the peer run on it, triage every difference (docs/peers.md), "
                       f"then add \"{ran}\" to the releases of {path} and mark the entries that hold for some "
                       f"releases only with releases = [...]")
    return [e for e in entries if ran in e.get("releases", releases)]


def ran_release(report, library, version=None):
    """The release of `library` the report ran: its source's version (the mapping's __version__)
    and the torch of its source's interpreter (else the report's own torch)."""
    # A run of several sources lists them in `plugins`; a run of one has it in `plugin` alone.
    sources = report.get("plugins") or [report.get("plugin") or {}]
    plugins = [p for p in sources if p.get("path", "").endswith(f"/{library}/metrics.py")
               or p.get("path", "") == f"python:{library}/metrics.py"]
    plugin = plugins[0] if plugins else {}
    return release(version or plugin.get("version"), plugin.get("torch_version") or report.get("torch_version"))


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


def census(library):
    """The library's census line of docs/peers.md (generated by peers/coverage.py from the installed
    release, checked up to date by ctest; this script runs without the libraries): "C of P public
    classes checked, D not runnable here, N not mapped", or None."""
    try:
        text = (HERE.parent / "docs" / "peers.md").read_text()
    except OSError:
        return None
    m = re.search(r"\(`peers/" + re.escape(library) + r"/metrics\.py`\).*?\nCensus of [^\n]*?: (\d+) public metric classes: "
                  r"(\d+) checked [^\n]*?, (\d+) declared not runnable here, (\d+) not mapped", text, re.S)
    if not m:
        return None
    public, checked, declared, unmapped = m.groups()
    return f"{checked} of {public} public classes checked, {declared} not runnable here, {unmapped} not mapped"


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


def disagreeing(variants, unexpected, missing):
    """The variants behind the differences, each once: those of the unexpected findings, and those
    that ran under each entry no finding matched (its variant glob and metric)."""
    ids = {(f["variant"], f["metric"]) for f in unexpected}
    out, seen = [], set()
    for v in variants:
        behind = (v["id"], metric_name(v)) in ids or any(
            fnmatch.fnmatchcase(v["id"], e["variant"]) and (not e.get("metric") or e["metric"] == metric_name(v))
            for e in missing)
        k = (v["id"], v.get("metric"), v.get("source"))
        if behind and k not in seen:
            seen.add(k)
            out.append({"id": v["id"], "metric": v.get("metric"), "source": v.get("source")})
    return out


def describe(finding):
    blame = f", rank {finding['blamed_rank']} blamed" if finding["blamed_rank"] is not None else ""
    props = f" ({', '.join(finding['failed'])})" if finding["failed"] else ""
    return f"{finding['outcome'].upper()} {finding['variant']}{props}{blame}: {finding['headline']}"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", required=True)
    ap.add_argument("--report", required=True, help="the conform JSON report")
    ap.add_argument("--expected", help="default: peers/<library>/expected.toml")
    ap.add_argument("--version", help="the library's version that ran (default: the report's, from the mapping)")
    ap.add_argument("--markdown", help="append the comparison to this Markdown file")
    ap.add_argument("--disagreeing", help="write the variants behind the differences to this JSON file "
                                          "([{id, metric, source}]: what peers/rerun.py --disagreeing reruns)")
    args = ap.parse_args(argv)
    expected_path = args.expected or str(HERE / args.library / "expected.toml")
    try:
        report = json.loads(Path(args.report).read_text())
        global NOT_PASSED
        NOT_PASSED = outcomes_of(report)  # the runner's own table, as its report writes it
    except (OSError, json.JSONDecodeError) as e:
        print(f"peers/expected.py: cannot read the report {args.report}: {e}", file=sys.stderr)
        return 2
    try:
        entries, releases = load_expected(expected_path)
        entries = for_release(entries, releases, ran_release(report, args.library, args.version), expected_path,
                              args.library)
    except BadInput as e:
        print(f"peers/expected.py: {e}", file=sys.stderr)
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
    if args.disagreeing:
        Path(args.disagreeing).write_text(json.dumps(disagreeing(variants, unexpected, missing), indent=1))
    seconds = sum(v.get("seconds", 0) for v in variants)
    classes = census(args.library)
    summary = (f"{args.library}: {'' if classes is None else classes + ', '}{len(metrics)} metric(s), "
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
