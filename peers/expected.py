"""Compares a library's peer run (the JSON report of `distmetrics conform`) with its expected
findings (peers/<library>/expected.toml) and prints one summary line.

A finding is a variant that did not pass (fail, hang, crash, error, memory_exceeded), with the
properties that failed and the ranks blamed. expected.toml lists them, each exactly:

    [[finding]]
    variant = "accuracy_binary:gloo-ws*-empty_rank-cpu"   # fnmatch glob on the variant id (or a list of globs)
    outcome = "fail"                                      # the variant's outcome; a list where the
                                                          # mechanism gives one of several (why says which)
    failed = ["equal_to_single", "ranks_agree"]           # the whole set of properties that failed
    blamed = [1]                                          # the whole set of ranks blamed ([]: none)
    kind = "library bug"                                  # library bug | convention (docs/peers.md)
    why = "one line: the mechanism (docs/peers.md has the file, line and repro)"
    mechanism = "tm-compute-cache"                        # the id of its mechanism in mechanisms.toml
    also_mechanism = ["tm-minmax-tracks-compute"]         # optional: more ids, where the failed
                                                          # properties come from several mechanisms
    flaky = "2 in 20 runs: why the outcome moves"         # optional: the variant's outcome may change on
                                                          # a rerun (measured rate, and cause)

A variant matches an entry only with exactly those failed properties and blamed ranks: a second
failure under an expected one, or another rank blamed, is unexpected. (`failed` and `blamed` are
written from a triaged run by `--pin`; an entry without them, `property = "..."` and
`blamed_rank = N` of older files, matches as a subset and the summary counts it as not pinned.)

Flakes. peers/rerun.py reruns, once and alone, each variant whose outcome disagreed with the
entries (and each variant that could not make its group), keeping the first run under
"first_run". A rerun that changes what the variant showed (its outcome, failed properties or
blamed ranks) is a flake: named, counted in the summary, and the comparison fails unless an entry
covering that variant declares it with `flaky` (its measured rate and cause). A set-up failure of
the harness (its group could not be made) is the harness's own bug and can never be declared.

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

Mechanisms. peers/<library>/mechanisms.toml, beside expected.toml, lists the causes behind the
entries, one table each; many entries (variants) share one mechanism:

    [[mechanism]]
    id = "tm-compute-cache"           # short and stable: "<tm|ignite|te>-<what>", what entries name
    title = "one line: what goes wrong"
    kind = "library bug"              # library bug | convention
    where = "torchmetrics/metric.py:688-689"   # the library's file:line in the pinned release
    upstream = "Lightning-AI/torchmetrics#3336 (open)"   # an issue/PR reference, or "not reported"
    repro = "torchmetrics_compute_cache_uneven.py"        # a file of peers/repro/ (CI runs it), or ""
    why_no_repro = "a convention, documented"  # required where repro is "": a library bug needs a repro
    classes = ["BinaryAUROC", "..."]  # optional: the classes it explains (free text per item)
    releases = ["1.9.0 on torch 2.15"]         # optional: the releases it shows on (default: all)
    since = ["KLDivergence, an empty rank at 3 ranks: 1.6.2 (bisected: 1.6.1 does not show it)"]
                                      # optional: the release that brought it, per finding where its
                                      # findings came at different releases (peers/bisect_release.py);
                                      # each item names a release (X.Y.Z); --baseline's "not seen"
                                      # lines quote the items whose class the entry names

Where a library has a mechanisms table every entry of its expected.toml names a mechanism of it,
and an unknown id is bad input (the file, entry and field). The tables are plain TOML (arrays of
tables, strings and lists of strings only), read by `load_mechanisms` here and by the maintainer
page. The summary line counts the mechanisms the run's findings show; --by-mechanism prints one
line per mechanism first (the variants it explains, its classes, upstream and repro; "not seen"
where none of its entries' variants showed it, "new" for the findings no entry explains).

The run passes when every finding matches an entry, every entry whose variants ran matches a
finding (a subset run checks the entries it covers), and no flake is undeclared; otherwise it
names the differences: a new finding (the library or the harness changed), an entry that no
longer appears (the library fixed it, or the harness stopped seeing it), or a flake. Exit 0 / 1;
2 for bad input (a malformed expected.toml names its file, entry and field).

    /usr/bin/python3 peers/expected.py --library torchmetrics --report R.json [--expected F] [--mechanisms M]
        [--version V] [--markdown OUT] [--by-mechanism]
    /usr/bin/python3 peers/expected.py --library torchmetrics --report R.json --baseline "1.9.0 on torch 2.15" \
        [--pr-markdown OUT]
        # another release (ci/run_peers.sh --release, --from) against the entries of a triaged one:
        # the findings new in it, the baseline's entries not seen (fixed, or not yet born), those
        # whose variants did not run (a class not in this release), the unchanged ones, by
        # mechanism; exit 1 only for a new finding (or an undeclared flake); --pr-markdown writes
        # the short report a pull request can quote
    /usr/bin/python3 peers/expected.py --library torchmetrics --report R.json --pin
        # writes each matched entry's failed/blamed from the run (splitting an entry whose
        # variants differ), after the run has been triaged
"""

import argparse
import fnmatch
import json
import re
import sys
import tomllib
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "python"))
from distmetrics.tables import tables  # noqa: E402  (the runner's tables: `distmetrics tables --json`)


def not_passed():
    """The outcomes that are findings: every outcome of the runner's table (harness/outcome.h) that
    did not pass (fail, hang, crash, ...)."""
    return tables().not_passed
FIELDS = {"variant": (str, list), "outcome": (str, list), "property": str, "blamed_rank": int, "failed": (list, dict),
          "blamed": (list, dict), "flaky": str, "kind": str, "why": str, "metric": str, "releases": list,
          "mechanism": str, "also_mechanism": list}
# The fields of a [[mechanism]] table of mechanisms.toml: (type, required).
MECHANISM_FIELDS = {"id": (str, True), "title": (str, True), "kind": (str, True), "where": (str, True),
                    "upstream": (str, True), "repro": (str, True), "why_no_repro": (str, False),
                    "classes": (list, False), "releases": (list, False), "since": (list, False)}
MECHANISM_ID = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9.]+)+$")
SINCE = re.compile(r"\b\d+\.\d+\.\d+\b")  # a mechanism's `since` items each name a release
REPRO_DIR = HERE / "repro"
KINDS = ("library bug", "convention")
# "<library version> on torch <major.minor>": what a library's findings depend on.
RELEASE = re.compile(r"^[0-9][0-9A-Za-z.+-]* on torch [0-9]+\.[0-9]+$")


class BadInput(Exception):
    pass


def release(version, torch_version):
    """The release key of a library version run on a torch version ("1.9.0", "2.15.0+cu132")."""
    m = re.match(r"(\d+)\.(\d+)", torch_version or "")
    return f"{version} on torch {m.group(1)}.{m.group(2)}" if version and m else None


FLAKY = re.compile(r"^\d+ in \d+ runs?: \S.*$")  # "2 in 20 runs: why the outcome moves"


def _check_entry(entry, where, releases):
    """Validates one [[finding]] table in place (BadInput naming `where` and the field)."""
    for key, value in entry.items():
        if key not in FIELDS:
            raise BadInput(f"{where}: unknown field '{key}' (known: {', '.join(FIELDS)})")
        if not isinstance(value, FIELDS[key]):
            kind = " or a list" if key in ("outcome", "variant") else ""
            raise BadInput(f"{where}: field '{key}' must be a {str.__name__ if kind else FIELDS[key].__name__}"
                           f"{kind}, got {value!r}")
    for key in ("variant", "outcome", "kind", "why"):
        if key not in entry:
            raise BadInput(f"{where}: field '{key}' is required")
    globs = entry["variant"] if isinstance(entry["variant"], list) else [entry["variant"]]
    if not globs or not all(isinstance(g, str) and g for g in globs):
        raise BadInput(f"{where}: field 'variant' must be a glob or a list of globs, got {entry['variant']!r}")
    entry["_globs"] = globs
    outcomes = entry["outcome"] if isinstance(entry["outcome"], list) else [entry["outcome"]]
    if not outcomes or any(o not in not_passed() for o in outcomes):
        raise BadInput(f"{where}: field 'outcome' must be one of {', '.join(not_passed())} (or a list of them), "
                       f"got {entry['outcome']!r}")
    entry["_outcomes"] = outcomes
    # `failed` and `blamed` are lists, or (for an entry with several outcomes) tables keyed by
    # outcome: {hang = [...], crash = [...]}, an outcome not in the table not yet pinned.
    for key, ok, what in (("failed", lambda p: isinstance(p, str) and p, "property names"),
                          ("blamed", lambda r: isinstance(r, int) and r >= 0, "rank numbers")):
        if key not in entry:
            continue
        tables = entry[key] if isinstance(entry[key], dict) else {o: entry[key] for o in outcomes}
        strange = [o for o in tables if o not in outcomes]
        if strange or not all(isinstance(v, list) and all(ok(x) for x in v) for v in tables.values()):
            raise BadInput(f"{where}: field '{key}' must list {what} (or, per outcome of the entry, a table of such "
                           f"lists), got {entry[key]!r}")
        entry[f"_{key}"] = tables
    if "failed" in entry and "property" in entry:
        raise BadInput(f"{where}: 'property' (one of the failed, a subset) and 'failed' (all of them) exclude "
                       f"each other: keep 'failed'")
    if "blamed" in entry and "blamed_rank" in entry:
        raise BadInput(f"{where}: 'blamed_rank' and 'blamed' exclude each other: keep 'blamed'")
    if "flaky" in entry and not FLAKY.match(entry["flaky"]):
        raise BadInput(f"{where}: field 'flaky' must give the measured rate and the cause, \"N in M runs: why\", "
                       f"got {entry['flaky']!r}")
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


def _check_mechanism(entry, where, mechanisms):
    """The entry's mechanism ids (entry["_mechanisms"]): required and known where the library has a
    mechanisms table (`mechanisms`, {id: table}), bad input otherwise naming `where` and the field."""
    if mechanisms is None:
        if "mechanism" in entry or "also_mechanism" in entry:
            raise BadInput(f"{where}: field 'mechanism' names a mechanism, and there is no mechanisms.toml beside "
                           f"the expected file (pass --mechanisms)")
        entry["_mechanisms"] = []
        return
    if "mechanism" not in entry:
        raise BadInput(f"{where}: field 'mechanism' is required (the id of its [[mechanism]] in the mechanisms table)")
    also = entry.get("also_mechanism", [])
    if not all(isinstance(i, str) for i in also):
        raise BadInput(f"{where}: field 'also_mechanism' must list mechanism ids, got {also!r}")
    for field, ids in (("mechanism", [entry["mechanism"]]), ("also_mechanism", also)):
        unknown = [i for i in ids if i not in mechanisms]
        if unknown:
            raise BadInput(f"{where}: field '{field}' names unknown mechanism(s) {', '.join(unknown)} (known: "
                           f"{', '.join(mechanisms)})")
    ids = [entry["mechanism"], *also]
    entry["_mechanisms"] = ids


def load_mechanisms(path, releases=None, check_files=True):
    """{id: table} of a mechanisms.toml (in file order); None when there is no such file. Every table
    is checked: its fields, a known kind, a repro that exists under peers/repro/ (or why there is
    none; a library bug needs one; check_files=False leaves the file's existence unchecked),
    releases among the expected file's `releases`."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        return None
    except tomllib.TOMLDecodeError as e:
        raise BadInput(f"{path}: {e}") from None
    unknown = sorted(set(data) - {"mechanism"})
    if unknown:
        raise BadInput(f"{path}: unknown table(s) {', '.join(unknown)} (only [[mechanism]])")
    out = {}
    for i, table in enumerate(data.get("mechanism", []), 1):
        where = f"{path}: mechanism #{i}" + (f" ({table['id']})" if isinstance(table.get("id"), str) else "")
        for key, value in table.items():
            if key not in MECHANISM_FIELDS:
                raise BadInput(f"{where}: unknown field '{key}' (known: {', '.join(MECHANISM_FIELDS)})")
            want = MECHANISM_FIELDS[key][0]
            if not isinstance(value, want) or (want is list and not all(isinstance(x, str) and x for x in value)):
                raise BadInput(f"{where}: field '{key}' must be a {'list of strings' if want is list else 'string'}, "
                               f"got {value!r}")
        for key, (_, required) in MECHANISM_FIELDS.items():
            if required and key not in table:
                raise BadInput(f"{where}: field '{key}' is required")
        if not MECHANISM_ID.match(table["id"]):
            raise BadInput(f"{where}: field 'id' must be short lower-case words joined by '-' (tm-compute-cache), "
                           f"got {table['id']!r}")
        if table["id"] in out:
            raise BadInput(f"{where}: field 'id': {table['id']} is already mechanism #{list(out).index(table['id']) + 1}")
        if table["kind"] not in KINDS:
            raise BadInput(f"{where}: field 'kind' must be one of {', '.join(KINDS)}, got {table['kind']!r}")
        if table["repro"]:
            name = table["repro"].removeprefix("peers/repro/")
            if "/" in name or (check_files and not (REPRO_DIR / name).is_file()):
                raise BadInput(f"{where}: field 'repro': no file {table['repro']!r} under {REPRO_DIR}")
        elif table["kind"] == "library bug":
            raise BadInput(f"{where}: field 'repro' is required for a library bug (a script under peers/repro/)")
        elif not table.get("why_no_repro"):
            raise BadInput(f"{where}: field 'why_no_repro' must say why there is no repro (repro is \"\")")
        strange = [s for s in table.get("since", []) if not SINCE.search(s)]
        if strange:
            raise BadInput(f"{where}: field 'since' must name the release that brought each finding (X.Y.Z, "
                           f"peers/bisect_release.py), got {strange[0]!r}")
        if "releases" in table and releases is not None:
            strange = [r for r in table["releases"] if r not in releases]
            if strange:
                raise BadInput(f"{where}: field 'releases' must list some of the expected file's releases "
                               f"({', '.join(releases)}), got {table['releases']!r}")
        out[table["id"]] = table
    return out


def mechanisms_path(expected_path):
    return Path(expected_path).with_name("mechanisms.toml")


def load_expected(path, mechanisms=None):
    """(entries, the releases the file lists or None); a missing file is bad input. `mechanisms`:
    the path of the library's mechanisms table (default: mechanisms.toml beside `path`, if any)."""
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
    table = load_mechanisms(mechanisms or mechanisms_path(path), releases, check_files=False)
    if mechanisms and table is None:
        raise BadInput(f"{mechanisms}: no such file")
    for i, entry in enumerate(entries, 1):
        _check_entry(entry, f"{path}: finding #{i}", releases)
        _check_mechanism(entry, f"{path}: finding #{i}", table)
        entry["_index"] = i - 1
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
                       f"releases only with releases = [...]; or compare it with a triaged release's: --baseline "
                       f"\"{releases[-1]}\" (ci/run_peers.sh --release does)")
    return [e for e in entries if ran in e.get("releases", releases)]


def ran_release(report, library, version=None):
    """The release of `library` the report ran: its source's version (the mapping's __version__)
    and the torch of its source's interpreter (else the report's own torch)."""
    # A run of several sources lists them in `plugins`; a run of one has it in `plugin` alone.
    sources = report.get("plugins") or [report.get("plugin") or {}]
    plugins = [p for p in sources if is_library_source(p.get("path"), library)]
    plugin = plugins[0] if plugins else {}
    return release(version or plugin.get("version"), plugin.get("torch_version") or report.get("torch_version"))


def is_library_source(source, library):
    """Whether a report's source (a Python source's spelling, or a plugin's path) is peers/<library>/metrics.py."""
    return Path(tables().source_path(source)).parts[-2:] == (library, "metrics.py")


def blamed_ranks(variant):
    """Every rank the verdict blames: the step deviation's blamed side, and "rank N to blame" of its
    reason and diagnosis."""
    ranks = set((variant.get("deviation") or {}).get("blamed") or [])
    for text in (variant.get("reason") or "", variant.get("diagnosis") or ""):
        ranks |= {int(r) for r in re.findall(r"rank (\d+) to blame", text)}
    return sorted(ranks)


def blamed_rank(variant):
    ranks = blamed_ranks(variant)
    return ranks[0] if ranks else None


def of_library(report, library):
    """The report's variants of `library`: all of them, or in a run of several sources (one
    `conform` with a --python per library, ci/run_peers.sh) those of peers/<library>/metrics.py."""
    variants = report.get("variants", [])
    if not any("source" in v for v in variants):
        return variants
    return [v for v in variants if is_library_source(v.get("source"), library)]


def metric_name(variant):
    """The metric's name without the source label a run of several sources adds ("Accuracy (ignite/metrics)")."""
    return re.sub(r" \([^()]*\)$", "", variant.get("metric", ""))


def failed_properties(variant):
    """The properties that did not pass, no_hang left out: a hang is the variant's outcome already
    (so a hang and a crash of one mechanism state the same failed set)."""
    return sorted(p["name"] for p in variant.get("properties", [])
                  if p.get("outcome") in not_passed() and p["name"] != "no_hang")


def signature(run):
    """What a run of a variant showed: (outcome, failed properties, blamed ranks)."""
    if run.get("outcome") not in not_passed():
        return (run.get("outcome"), (), ())
    return (run["outcome"], tuple(failed_properties(run)), tuple(blamed_ranks(run)))


def findings(variants):
    out = []
    for v in variants:
        if v["outcome"] not in not_passed():
            continue
        out.append({"variant": v["id"], "metric": metric_name(v), "outcome": v["outcome"], "failed": failed_properties(v),
                    "blamed": blamed_ranks(v), "blamed_rank": blamed_rank(v),
                    "headline": ((v.get("root_cause") or {}).get("headline") or v.get("reason") or "")[:300]})
    return out


def covers(entry, variant_id, metric):
    """Whether the entry's globs (and metric) name this variant, whatever it showed."""
    if entry.get("metric") and entry["metric"] != metric:
        return False
    return any(fnmatch.fnmatchcase(variant_id, g) for g in entry["_globs"])


def pinned(entry, outcome=None):
    """Whether the entry states exactly what its variants show (for `outcome`: every outcome of its own)."""
    wanted = [outcome] if outcome else entry["_outcomes"]
    return all(o in entry.get("_failed", {}) and o in entry.get("_blamed", {}) for o in wanted)


def matches(entry, finding):
    if not covers(entry, finding["variant"], finding["metric"]):
        return False
    if finding["outcome"] not in entry["_outcomes"]:
        return False
    failed = entry.get("_failed", {}).get(finding["outcome"])
    if failed is not None:
        if sorted(set(failed)) != sorted(set(finding["failed"])):
            return False
    elif entry.get("property") and entry["property"] not in finding["failed"]:
        return False
    blamed = entry.get("_blamed", {}).get(finding["outcome"])
    if blamed is not None:
        if sorted(set(blamed)) != finding["blamed"]:
            return False
    elif "blamed_rank" in entry and entry["blamed_rank"] != finding["blamed_rank"]:
        return False
    return True


def compare(entries, found, ran):
    """(findings no entry expects, entries whose variants ran without their finding); an entry
    whose variants did not run (a subset: --world-sizes, --filter) is not missing. `ran`: the ids
    that ran (or (id, metric) pairs)."""
    unexpected = [f for f in found if not any(matches(e, f) for e in entries)]
    pairs = [r if isinstance(r, tuple) else (r, None) for r in ran]
    missing = [e for e in entries if not any(matches(e, f) for f in found)
               and any(any(fnmatch.fnmatchcase(v, g) for g in e["_globs"])
                       and (m is None or not e.get("metric") or e["metric"] == m) for v, m in pairs)]
    return unexpected, missing


def flakes(variants, entries):
    """The variants a rerun showed something else than their first run: [{variant, metric, first,
    then, declared (the entry's flaky text, or None), setup (the first run could not make its group)}]."""
    out = []
    for v in variants:
        first = v.get("first_run")
        if not first or signature(first) == signature(v):
            continue
        setup = bool(first.get("setup_failure"))  # peers/rerun.py decides it, where it reruns
        declared = None if setup else next(
            (e["flaky"] for e in entries if "flaky" in e and covers(e, v["id"], metric_name(v))), None)
        out.append({"variant": v["id"], "metric": metric_name(v), "first": signature(first), "then": signature(v),
                    "first_reason": (first.get("reason") or "")[:200], "declared": declared, "setup": setup})
    return out



def disagreeing(variants, unexpected, missing):
    """The variants behind the differences, each once: those of the unexpected findings, and those
    that ran under each entry no finding matched (its variant glob and metric)."""
    ids = {(f["variant"], f["metric"]) for f in unexpected}
    out, seen = [], set()
    for v in variants:
        behind = (v["id"], metric_name(v)) in ids or any(covers(e, v["id"], metric_name(v)) for e in missing)
        k = (v["id"], v.get("metric"), v.get("source"))
        if behind and k not in seen:
            seen.add(k)
            out.append({"id": v["id"], "metric": v.get("metric"), "source": v.get("source")})
    return out


def shown(sig):
    outcome, failed, blamed = sig
    return (outcome.upper() + (f" ({', '.join(failed)})" if failed else "")
            + (f", rank{'s' if len(blamed) > 1 else ''} {', '.join(map(str, blamed))} blamed" if blamed else ""))


def describe(finding):
    return (f"{shown((finding['outcome'], finding['failed'], finding['blamed']))} {finding['variant']}"
            f"{' [' + finding['metric'] + ']' if finding['metric'] else ''}: {finding['headline']}")


def describe_flake(flake):
    what = "harness set-up failure, never declarable" if flake["setup"] else (
        f"declared: {flake['declared']}" if flake["declared"] else "not declared flaky in any entry")
    return (f"{flake['variant']} [{flake['metric']}]: first {shown(flake['first'])}"
            f"{' (' + flake['first_reason'] + ')' if flake['setup'] else ''}, rerun alone {shown(flake['then'])} ({what})")


def load_report(path):
    return json.loads(Path(path).read_text())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--library", required=True)
    ap.add_argument("--report", required=True, help="the conform JSON report")
    ap.add_argument("--expected", help="default: peers/<library>/expected.toml")
    ap.add_argument("--version", help="the library's version that ran (default: the report's, from the mapping)")
    ap.add_argument("--mechanisms", help="default: mechanisms.toml beside the expected file (if there is one)")
    ap.add_argument("--by-mechanism", action="store_true",
                    help="print a line per mechanism (the variants it explains) before the summary")
    ap.add_argument("--markdown", help="append the comparison to this Markdown file")
    ap.add_argument("--disagreeing", help="write the variants behind the differences to this JSON file "
                                          "([{id, metric, source}]: what peers/rerun.py --disagreeing reruns)")
    ap.add_argument("--baseline", metavar="RELEASE",
                    help='compare with the entries of this triaged release ("1.9.0 on torch 2.15") instead of the '
                         "release that ran: new, fixed (or not yet born), not run and unchanged findings")
    ap.add_argument("--pr-markdown", help="with --baseline: write the short report for a pull request to this file")
    ap.add_argument("--pin", action="store_true",
                    help="write failed/blamed of every entry the run matched into the expected file (after triage)")
    args = ap.parse_args(argv)
    expected_path = args.expected or str(HERE / args.library / "expected.toml")
    try:
        report = load_report(args.report)
    except (OSError, json.JSONDecodeError) as e:
        print(f"peers/expected.py: cannot read the report {args.report}: {e}", file=sys.stderr)
        return 2
    try:
        entries, releases = load_expected(expected_path, args.mechanisms)
        mechanisms = load_mechanisms(args.mechanisms or mechanisms_path(expected_path), releases) or {}
        ran = ran_release(report, args.library, args.version)
        if args.baseline and args.pin:
            raise BadInput("--pin writes the entries of the release that ran: it takes no --baseline")
        if args.baseline and releases is not None and args.baseline not in releases:
            raise BadInput(f"--baseline {args.baseline!r}: {expected_path} has entries for {', '.join(releases)} only")
        entries = for_release(entries, releases, args.baseline or ran, expected_path, args.library)
    except BadInput as e:
        print(f"peers/expected.py: {e}", file=sys.stderr)
        return 2
    variants = of_library(report, args.library)
    if not variants:
        print(f"peers/expected.py: the report {args.report} has no variant of {args.library} "
              f"(no source peers/{args.library}/metrics.py in it)", file=sys.stderr)
        return 2
    found = findings(variants)
    if args.pin:
        return pin(expected_path, entries, releases, ran, found,
                   [(v["id"], metric_name(v)) for v in variants if v["outcome"] != "skip"])
    unexpected, missing = compare(entries, found, [(v["id"], metric_name(v)) for v in variants if v["outcome"] != "skip"])
    flaky = flakes(variants, entries)
    undeclared = [f for f in flaky if not f["declared"]]
    metrics = sorted({metric_name(v) for v in variants} - {""})
    counts = {o: sum(v["outcome"] == o for v in variants) for o in tables().outcome_names}
    lines = [f"  unexpected: {describe(f)}" for f in unexpected]
    for e in missing:
        lines.append(f"  expected but not seen: {e['_where']}: {' or '.join(e['_outcomes'])} {' '.join(e['_globs'])}"
                     f"{' (' + ', '.join(e['failed']) + ')' if e.get('failed') else ''}"
                     f"{' (' + e['property'] + ')' if e.get('property') else ''}: {e['why']} "
                     f"(the library fixed it, or the harness stopped seeing it: update {expected_path})")
    lines += [f"  flake: {describe_flake(f)}" for f in flaky]
    if args.disagreeing:
        Path(args.disagreeing).write_text(json.dumps(disagreeing(variants, unexpected, missing), indent=1))
    explained = explained_by_mechanism(entries, found, unexpected, missing)
    seen = [m for m in mechanisms if explained.get(m, {}).get("variants")]
    if args.by_mechanism:
        lines = [*mechanism_lines(mechanisms, explained), *lines]
    seconds = sum(v.get("seconds", 0) for v in variants)
    loose = sum(1 for e in entries if not pinned(e))
    # How many classes were checked is peers/judged.py's, from the same report (ci/run_peers.sh).
    summary = (f"{args.library}: {len(metrics)} metric(s), "
               f"{len(variants)} variant(s) ({counts['pass']} pass, {counts['skip']} skip, {len(found)} finding(s), "
               f"{seconds:.0f} s of variant time): "
               f"{len(found) - len(unexpected)} expected, {len(unexpected)} unexpected, "
               f"{len(missing)} expected but not seen, {len(flaky)} flake(s) ({len(flaky) - len(undeclared)} declared)"
               + (f"; {len(seen)} mechanism(s) ({sum(mechanisms[m]['kind'] == 'library bug' for m in seen)} library "
                  f"bug(s), {sum(mechanisms[m]['kind'] == 'convention' for m in seen)} convention(s)) of "
                  f"{len(mechanisms)} in {Path(args.mechanisms or mechanisms_path(expected_path)).name}"
                  if mechanisms else "")
               + (f"; {loose} of {len(entries)} entries not pinned (matched as a subset: --pin)" if loose else ""))
    if args.baseline:
        return against_baseline(args, entries, variants, found, unexpected, missing, flaky, undeclared, ran, summary,
                                mechanisms)
    for line in lines:
        print(line)
    print(summary)
    if args.markdown:
        with open(args.markdown, "a") as out:
            out.write(f"\n## Expected findings ({expected_path})\n\n{summary}\n\n")
            out.writelines(f"-{line[1:]}\n" for line in lines)
    return 0 if not unexpected and not missing and not undeclared else 1


# --- Another release against a triaged one (--baseline) -----------------------------------------


def _grouped(findings_list):
    """New findings grouped by class and by what they showed: [(metric, signature, [variant ids])]."""
    groups = {}
    for f in findings_list:
        groups.setdefault((f["metric"], (f["outcome"], tuple(f["failed"]), tuple(f["blamed"]))), []).append(f)
    return [(metric, sig, sorted(x["variant"] for x in fs), fs[0]["headline"])
            for (metric, sig), fs in sorted(groups.items())]


def since_of(entry, mechanisms):
    """The release that brought the entry's finding, as its mechanisms' `since` say (bisected), or "":
    the items whose class (their first word) the entry's variant globs name ("KLDivergence, ..." for
    torchmetrics/KLDivergence:..., "R2Score on a constant target: ..." for core/r2_score_constant_target:...)."""
    def squash(text):
        return re.sub(r"[^a-z0-9]", "", text.lower())

    globs = squash(" ".join(entry.get("_globs", [])))
    items = [item for m in entry.get("_mechanisms", []) for item in (mechanisms or {}).get(m, {}).get("since", [])]
    return "; ".join(item for item in items if squash(re.split(r"[ ,:]", item, 1)[0]) in globs)


def against_baseline(args, entries, variants, found, unexpected, missing, flaky, undeclared, ran, summary,
                     mechanisms=None):
    """Prints (and with --pr-markdown writes) the run of `ran` against the baseline's entries: new
    findings (a new mechanism, or a known variant showing something else: "changed"), the entries
    not seen where their variants ran (fixed, or not yet born), the entries whose variants did not
    run (their class not in this release, or left out by --filter), the unchanged ones. Exit 1 for
    a new finding or an undeclared flake, else 0."""
    ran_ids = [(v["id"], metric_name(v)) for v in variants if v["outcome"] != "skip"]
    unchanged = [e for e in entries if any(matches(e, f) for f in found)]
    not_run = [e for e in entries if e not in unchanged and e not in missing]
    # A new finding on a variant a baseline entry covers: that mechanism's variant shows something else.
    changed = {}
    for f in unexpected:
        covering = [e for e in missing if covers(e, f["variant"], f["metric"])] or [
            e for e in entries if covers(e, f["variant"], f["metric"])]
        if covering:
            changed[id(f)] = covering[0]
    new_groups = _grouped(unexpected)
    by_mechanism = {}
    for e in unchanged:
        by_mechanism.setdefault(e["why"], 0)
        by_mechanism[e["why"]] += sum(1 for f in found if matches(e, f))
    head = (f"{args.library} {ran or '?'} against {args.baseline} (peers/{args.library}/expected.toml): "
            f"{len(unexpected)} new finding(s) in {len(new_groups)} group(s), {len(missing)} of the baseline's "
            f"entries not seen (fixed, or not yet born), {len(unchanged)} unchanged, {len(not_run)} whose variants "
            f"did not run here, {len(flaky)} flake(s) ({len(flaky) - len(undeclared)} declared); "
            f"{len(ran_ids)} variant(s) ran")
    out = []
    for metric, sig, ids, headline in new_groups:
        was = next((changed[id(f)] for f in unexpected if f["variant"] in ids and id(f) in changed), None)
        out.append(f"  new: {metric}: {shown(sig)} in {len(ids)} variant(s) ({ids[0]}"
                   f"{', ...' if len(ids) > 1 else ''})" + (f"; changed from the baseline's {was['_where']}: {was['why']}"
                                                           if was else f": {headline[:160]}"))
    for e in missing:
        since = since_of(e, mechanisms)
        out.append(f"  not seen (fixed, or not yet born): {' or '.join(e['_outcomes'])} {' '.join(e['_globs'])}: {e['why']}"
                   + (f" (since: {since})" if since else ""))
    for e in not_run[:20]:
        out.append(f"  not run here: {' '.join(e['_globs'])}: {e['why']}")
    if len(not_run) > 20:
        out.append(f"  not run here: {len(not_run) - 20} more entries (their class not in this release, or left out "
                   f"by --filter / --world-sizes)")
    out += [f"  flake: {describe_flake(f)}" for f in flaky]
    for line in out:
        print(line)
    print(summary)
    print(head)
    if args.pr_markdown:
        Path(args.pr_markdown).write_text(pr_markdown(args, ran, new_groups, changed, unexpected, missing, not_run,
                                                      by_mechanism, flaky, head, mechanisms=mechanisms))
    return 1 if unexpected or undeclared else 0


def pr_markdown(args, ran, new_groups, changed, unexpected, missing, not_run, by_mechanism, flaky, head, limit=15,
                mechanisms=None):
    """The short report a pull request can quote: what is new first, then what went, then the rest folded."""
    verdict = "**new findings**" if new_groups else "no new finding"
    lines = [f"### distmetrics: {args.library} {ran or '?'} against {args.baseline}: {verdict}", "", head, ""]
    if new_groups:
        lines += ["| new | class | outcome | variants | e.g. |", "| --- | --- | --- | --- | --- |"]
        for metric, sig, ids, headline in new_groups[:limit]:
            was = next((changed[id(f)] for f in unexpected if f["variant"] in ids and id(f) in changed), None)
            kind = "changed" if was else "new"
            lines.append(f"| {kind} | `{metric}` | {shown(sig)} | {len(ids)} | `{ids[0]}` |")
        if len(new_groups) > limit:
            lines.append(f"| ... | {len(new_groups) - limit} more group(s) in the run's report | | | |")
        lines.append("")
    if missing:
        lines += ["Not seen here (fixed in this release, or not yet born in it):", ""]
        lines += [f"- `{' '.join(e['_globs'])}`: {e['why']}"
                  + (f" (since: {since_of(e, mechanisms)})" if since_of(e, mechanisms) else "") for e in missing[:limit]]
        if len(missing) > limit:
            lines.append(f"- and {len(missing) - limit} more")
        lines.append("")
    if flaky:
        lines += [f"- flake: {describe_flake(f)}" for f in flaky[:limit]] + [""]
    lines += ["<details><summary>Unchanged (" + str(sum(by_mechanism.values())) + " findings, "
              + str(len(by_mechanism)) + " mechanisms) and not run here (" + str(len(not_run)) + " entries)</summary>", ""]
    lines += [f"- {n} x {why}" for why, n in sorted(by_mechanism.items(), key=lambda kv: -kv[1])]
    lines += [f"- not run here: `{' '.join(e['_globs'])}`" for e in not_run[:40]]
    if len(not_run) > 40:
        lines.append(f"- not run here: {len(not_run) - 40} more entries")
    lines += ["", "</details>", ""]
    return "\n".join(lines)
# --- Mechanisms: the causes behind the entries, and the variants each explains in a run ---------------


def explained_by_mechanism(entries, found, unexpected, missing):
    """{mechanism id: {"variants": [(variant id, metric)], "metrics": set, "not_seen": [entry where]}}
    from this run: a finding an entry matches is explained by the entry's mechanisms; an entry that
    no finding matched although its variants ran is "not seen". The findings no entry explains are
    under the key None ("new")."""
    out = {}
    for f in found:
        if f in unexpected:
            out.setdefault(None, {"variants": [], "metrics": set(), "not_seen": []})
            out[None]["variants"].append((f["variant"], f["metric"]))
            out[None]["metrics"].add(f["metric"])
            continue
        ids = {m for e in entries if matches(e, f) for m in e.get("_mechanisms", [])}
        for m in ids:
            slot = out.setdefault(m, {"variants": [], "metrics": set(), "not_seen": []})
            slot["variants"].append((f["variant"], f["metric"]))
            slot["metrics"].add(f["metric"])
    for e in missing:
        for m in e.get("_mechanisms", []):
            out.setdefault(m, {"variants": [], "metrics": set(), "not_seen": []})["not_seen"].append(e["_where"])
    return out


def mechanism_lines(mechanisms, explained):
    """One line per mechanism, new findings first, then those no longer seen, then the known ones."""
    lines = []
    new = explained.get(None)
    if new:
        lines.append(f"  mechanism NEW (no entry explains them): {len(new['variants'])} variant(s) of "
                     f"{', '.join(sorted(new['metrics'] - {''}))}")
    order = sorted(mechanisms, key=lambda m: (not explained.get(m, {}).get("not_seen"),
                                              not explained.get(m, {}).get("variants")))
    for m in order:
        t, e = mechanisms[m], explained.get(m, {"variants": [], "metrics": set(), "not_seen": []})
        state = ("no longer seen in " + str(len(e["not_seen"])) + " entr" + ("y" if len(e["not_seen"]) == 1 else "ies")
                 + ("; " if e["variants"] else "")) if e["not_seen"] else ""
        lines.append(f"  mechanism {m} ({t['kind']}): {state}{len(e['variants'])} variant(s)"
                     + (f" of {', '.join(sorted(e['metrics'] - {''}))}" if e["metrics"] - {""} else "")
                     + f"; {t['where']}; upstream: {t['upstream']}"
                     + (f"; since: {'; '.join(t['since'])}" if t.get("since") else "")
                     + f"; repro: {t['repro'] or 'none (' + t.get('why_no_repro', '') + ')'}")
    return lines


# --- Pinning: the exact failed properties and blamed ranks of a triaged run, written into the file --


def pin_groups(entry, found, ran):
    """The entry's findings in this run grouped by what they showed: {(outcome, failed, blamed):
    [variant ids]} (the variants it covers that passed, or showed another entry's finding, are
    left out: the pinned entries name the variants that showed this one); None when none did."""
    groups = {}
    for f in found:
        if covers(entry, f["variant"], f["metric"]) and f["outcome"] in entry["_outcomes"] and (
                "failed" in entry or not entry.get("property") or entry["property"] in f["failed"]):
            groups.setdefault((f["outcome"], tuple(f["failed"]), tuple(f["blamed"])), []).append(f["variant"])
    return groups or None


def narrowed(entry, ids, ran):
    """Globs for `ids` alone: the entry's own when they cover nothing else, its world-size wildcard
    made the world size the ids share when that does, else the ids themselves."""
    covered = sorted({v for v, m in ran if covers(entry, v, m) and (not entry.get("metric") or m == entry["metric"])})
    if covered == sorted(set(ids)):
        return entry["variant"]
    sizes = {m.group(1) for m in (re.search(r"-ws(\d+)-", v) for v in ids) if m}
    if len(sizes) == 1 and all("-ws*-" in g for g in entry["_globs"]):
        globs = [g.replace("-ws*-", f"-ws{sizes.pop()}-") for g in entry["_globs"]]
        if sorted(v for v in covered if any(fnmatch.fnmatchcase(v, g) for g in globs)) == sorted(set(ids)):
            return globs[0] if len(globs) == 1 else globs
    return sorted(set(ids)) if len(set(ids)) > 1 else ids[0]


def _toml_value(value):
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    return str(value)


def _blocks(text):
    """The file's text cut at each [[finding]] line: (head, [block text])."""
    parts = re.split(r"(?m)^(?=\[\[finding\]\]\s*$)", text)
    return parts[0], parts[1:]


def _entry_lines(block):
    """A block's own key lines and what follows them (the next entry's comments)."""
    lines = block.splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if re.match(r"^\[\[finding\]\]|^\w+ = ", line))
    return lines[:last + 1], lines[last + 1:]


def _pinned_block(own, entry, key, ids, ran, split_release):
    outcome, failed, blamed = key
    out = []
    for line in own:
        name = (re.match(r"^(\w+) = ", line) or [None, None])[1]
        if name in ("failed", "blamed", "property", "blamed_rank"):
            continue
        if name == "variant":
            line = f"variant = {_toml_value(narrowed(entry, ids, ran))}\n"
        if name == "releases" and split_release:
            line = f"releases = {_toml_value([split_release])}\n"
        out.append(line)
        if name == "outcome":
            if len(entry["_outcomes"]) == 1:
                out.append(f"failed = {_toml_value(list(failed))}\nblamed = {_toml_value(list(blamed))}\n")
            else:  # per outcome: what an earlier run pinned for its other outcomes is kept
                tables = [dict(entry.get("_failed", {}), **{outcome: list(failed)}),
                          dict(entry.get("_blamed", {}), **{outcome: list(blamed)})]
                out.append("".join(f"{k} = {{" + ", ".join(f"{o} = {_toml_value(v)}" for o, v in t.items()) + "}\n"
                                   for k, t in zip(("failed", "blamed"), tables)))
    if split_release and not any(line.startswith("releases = ") for line in out):
        out.append(f"releases = {_toml_value([split_release])}\n")
    return out


def pin(path, entries, releases, ran_key, found, ran):
    """Rewrites `path` with each entry's failed/blamed as this run showed them (one entry per
    different result); an entry that also holds for other releases keeps its unpinned copy for
    them. Prints what it did; exit 0, or 1 when findings no entry covers remain (triage first)."""
    text = Path(path).read_text()
    head, blocks = _blocks(text)
    by_index = {e["_index"]: e for e in entries}
    new_blocks, pinned_count, left = [], 0, []
    for i, block in enumerate(blocks):
        entry = by_index.get(i)
        groups = pin_groups(entry, found, ran) if entry else None
        if not groups:
            new_blocks.append(block)
            if entry and not pinned(entry):
                left.append(entry["_where"])
            continue
        own, rest = _entry_lines(block)
        others = [r for r in entry.get("releases", releases or []) if r != ran_key] if releases else []
        copies = []
        for key, ids in sorted(groups.items()):
            copies += _pinned_block(own, entry, key, ids, ran, ran_key if others else None) + ["\n"]
        if others:
            keep = [line if not line.startswith("releases = ") else f"releases = {_toml_value(others)}\n" for line in own]
            if not any(line.startswith("releases = ") for line in keep):
                keep.append(f"releases = {_toml_value(others)}\n")
            copies += keep + ["\n"]
        new_blocks.append("".join(copies[:-1]) + ("".join(rest) if rest else "\n"))
        pinned_count += 1
    Path(path).write_text(head + "".join(new_blocks))
    try:
        load_expected(path)
    except BadInput as e:
        print(f"peers/expected.py --pin: the rewritten file does not load: {e}", file=sys.stderr)
        return 2
    unexpected = [f for f in found if not any(covers(e, f["variant"], f["metric"]) for e in entries)]
    print(f"peers/expected.py --pin: {path}: {pinned_count} entries pinned from the run; {len(left)} left as they "
          f"were (none of their variants ran)" + "".join(f"\n  left: {w}" for w in left[:20]))
    for f in unexpected:
        print(f"  not covered by any entry (triage it first): {describe(f)}")
    return 1 if unexpected else 0


if __name__ == "__main__":
    sys.exit(main())
