"""What a peer run judged, class by class, read from its JSON report (not from the rows): for each
public class of each library, the properties judged (passed, or failed with a finding) on a
variant that ran to its end on every rank, by world size and shard policy.

A property is judged in a variant when the variant's report gives it a pass or a fail; a property
a variant skipped is not applicable there (its reason is the skip's message); one a variant never
reached (the variant hung, crashed or raised before the step that judges it) is not judged there.
The properties that apply to a class are those its scenarios check (their `properties`, no_hang
always). A class is

- **checked** when every property that applies to it was judged at world size 2 and at a world
  size of 3 or more (or is not applicable to it, with its reason);
- **partly checked** otherwise: the (property, reason) pairs not judged are listed;
- **not run**: it has a row, but no variant of this run ran it (no scenario selects it);
- **not runnable here** (declared in its mapping, with what it would need) or **not mapped**.

Run with the libraries importable (the census and the mappings' declarations: the torch 2.x venv's
python of ci/run_peers.sh), after peers/classes.py named each variant's class, or with
--name-classes, which names them first in this same interpreter (the libraries imported once, not
once for each script: ci/run_peers.sh does so) and writes the report back:

    python peers/judged.py --report build/reports/peers/peers.json [--library NAME] [--markdown OUT] [--json OUT] \
        [--name-classes build/bin/distmetrics]

Prints one summary line per library (the last lines: ci/run_peers.sh repeats them); --markdown
writes the per-class table, --json the same as data (what the HTML page and docs read).
Exit 0; 2 for bad input (no report, a report without classes)."""

import argparse
import importlib.util
import json
import sys
import tomllib
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "python"))
from distmetrics.tables import tables  # noqa: E402  (the runner's tables: `distmetrics tables --json`)

LIBRARIES = {"torchmetrics": "torchmetrics", "ignite": "PyTorch-Ignite", "torcheval": "torcheval"}


def judged_outcomes():
    """The outcomes of a property that judged it: it held, or it failed (each checked against the table)."""
    t = tables()
    return (t.outcome("pass"), t.outcome("fail"))


def _peers_module(name):
    """peers/NAME.py as a module (peers/ holds folders named after the libraries: never on sys.path)."""
    spec = importlib.util.spec_from_file_location(f"peers_{name}", ROOT / "peers" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def library_of(variant):
    """The library whose peers/<library>/metrics.py the variant's source is, else None."""
    parts = Path(tables().source_path(variant.get("source"))).parts[-2:]
    return next((library for library in LIBRARIES if parts == (library, "metrics.py")), None)


_SCENARIO_PROPERTIES = {}


def scenario_properties(path):
    """The properties a scenario file checks (its top-level `properties`), or None when it leaves
    them to the defaults (then what its variants reported decides)."""
    if path not in _SCENARIO_PROPERTIES:
        try:
            data = tomllib.loads(Path(path).read_text())
            listed = data.get("properties")
        except (OSError, tomllib.TOMLDecodeError):
            listed = None
        _SCENARIO_PROPERTIES[path] = None if listed is None else set(listed) | {"no_hang"}
    return _SCENARIO_PROPERTIES[path]


def size_band(world_size):
    return "ws2" if world_size == 2 else ("ws3+" if world_size >= 3 else "ws1")


def unreached_reason(name, message):
    """Why a property was not judged, as its message ("<name>: not judged: <why>") says it."""
    head = f"{name}: not judged:"
    return (message[len(head):] if message.startswith(head) else message).strip()[:160]


def not_reached(variant):
    """Why a variant judged nothing past its failure: its outcome and reason, in one line."""
    return f"{variant['outcome']} at {variant['id'].split(':', 1)[-1]}: {(variant.get('reason') or '')[:120]}"


class ClassRecord:
    """Everything the run showed of one class."""

    def __init__(self):
        self.applies = set()
        self.judged = defaultdict(lambda: defaultdict(list))   # property -> band -> [(shard, outcome)]
        self.not_applicable = {}                                # property -> reason (skipped everywhere)
        self.unreached = defaultdict(lambda: defaultdict(list))  # property -> band -> why not judged
        self.blocked = defaultdict(list)                        # band -> [why a variant judged nothing]
        self.variants = 0
        self.seconds = 0.0
        self.outcomes = defaultdict(int)
        self.plan = defaultdict(set)                            # band -> shard policies run

    def add(self, variant):
        band = size_band(variant.get("world_size", 0))
        self.variants += 1
        self.seconds += variant.get("seconds", 0) or 0
        self.outcomes[variant["outcome"]] += 1
        self.plan[band].add(variant.get("shard", ""))
        listed = scenario_properties(variant.get("file", ""))
        props = variant.get("properties", [])
        # What its scenario lists, and what any of its variants reported (accepts_empty_batch is
        # judged whenever the script feeds an empty batch, listed or not).
        self.applies |= (listed or set()) | {p["name"] for p in props} | {"no_hang"}
        seen = set()
        t = tables()
        passed, failed = judged_outcomes()
        skipped = t.outcome("skip")
        not_judged = t.property_skip("not_judged")
        for p in props:
            seen.add(p["name"])
            if p.get("outcome") in (passed, failed):
                self.judged[p["name"]][band].append((variant.get("shard", ""), p["outcome"]))
            elif p.get("outcome") == skipped:
                message = (p.get("message") or "skipped").splitlines()[0]
                if p.get("why") == not_judged:  # the step it judges was never reached (checking.cpp, skipped())
                    self.unreached[p["name"]][band].append(unreached_reason(p["name"], message))
                else:  # it does not apply to this class (a declared convention, no reference implementation)
                    self.not_applicable.setdefault(p["name"], message[:160])
        if variant["outcome"] == t.outcome("hang"):
            self.judged["no_hang"][band].append((variant.get("shard", ""), failed))
        elif variant["outcome"] != skipped and "no_hang" not in seen:
            self.judged["no_hang"][band].append((variant.get("shard", ""), passed))
        if variant["outcome"] not in (passed, failed, skipped):  # hung, crashed, raised: its script did not end
            self.blocked[band].append(not_reached(variant))

    def missing(self):
        """[(properties, reason)]: the applicable properties not judged at ws2 or at ws3+, those
        with one reason together."""
        by_reason = defaultdict(list)
        for prop in sorted(self.applies):
            judged = self.judged.get(prop, {})
            if prop in self.not_applicable and not judged:
                continue  # not applicable to this class: its reason is listed apart
            for band in ("ws2", "ws3+"):
                if judged.get(band):
                    continue
                if band not in self.plan:
                    why = f"no variant at {'world size 2' if band == 'ws2' else 'world size 3 or more'}"
                elif self.blocked.get(band):
                    why = f"{band}: no variant reached it ({self.blocked[band][0]})"
                elif self.unreached.get(prop, {}).get(band):
                    why = f"{band}: {self.unreached[prop][band][0]}"
                else:
                    why = f"{band}: not reported by any variant"
                by_reason[why].append(prop)
        return [(", ".join(props), why) for why, props in by_reason.items()]

    def status(self):
        return "checked" if not self.missing() else "partly checked"


def judge(report, libraries):
    """{library: {"module:Class": ClassRecord}} from the report's variants of each library."""
    records = {library: defaultdict(ClassRecord) for library in libraries}
    for v in report.get("variants", []):
        library = library_of(v)
        if library in records and v.get("class") and v.get("outcome") != "skip":
            records[library][v["class"]].add(v)
    return records


COLLECTION_TEXT = "a collection of metrics (not a Metric subclass: peers/census.py, COLLECTIONS)"


def rows(library, records, statuses, collections=()):
    """[(class, status, detail, record or None)] for every public class of the census; a row's
    class that is one of its `collections` ("module:Class") is left to collection_rows()."""
    out = []
    for q, (state, text) in statuses.items():
        record = records.get(q)
        if record is not None and record.variants:
            out.append((q, record.status(), "", record))
        elif state == "has a row":
            out.append((q, "not run", f"its row ({text}) ran in no variant of this run", None))
        else:
            out.append((q, state, text, None))
    for q, record in records.items():  # a class a row names that the census does not list
        if q not in statuses and q not in collections:
            out.append((q, record.status(), "not in the census (a private or renamed class?)", record))
    return out


def collection_rows(records, collections):
    """The same rows for the census's collections, counted apart from its metric classes."""
    out = []
    for q in collections:
        record = records.get(q)
        if record is not None and record.variants:
            out.append((q, record.status(), COLLECTION_TEXT, record))
        else:
            out.append((q, "not mapped", COLLECTION_TEXT + "; no row", None))
    return out


STATES = ("checked", "partly checked", "not run", "not runnable here", "not mapped")


def summary_line(library, version, classes, collections=()):
    counts = {s: sum(1 for _, st, _, _ in classes if st == s) for s in STATES}
    public = len(classes)
    share = 100.0 * counts["checked"] / public if public else 0.0
    line = (f"{library} {version}: {public} public classes, judged from this run: {counts['checked']} checked "
            f"({share:.0f}%: every property that applies judged at world size 2 and at 3 or more), "
            f"{counts['partly checked']} partly checked, {counts['not run']} not run (a row no variant ran), "
            f"{counts['not runnable here']} not runnable here, {counts['not mapped']} not mapped")
    if collections:
        line += (f"; collections: {sum(1 for t in collections if t[1] == 'checked')} of {len(collections)} checked "
                 f"({', '.join(q.partition(':')[2] for q, _, _, _ in collections)})")
    return line


def markdown(library, version, classes, collections=()):
    table = [*classes, *collections]
    lines = [f"### {LIBRARIES[library]} {version}", "", summary_line(library, version, classes, collections), "",
             "| class | status | variants (seconds) | judged at ws2 | judged at ws3+ | not judged (property: reason) | not applicable |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for q, state, detail, record in table:
        if record is None:
            lines.append(f"| `{q}` | {state} | — | — | — | {detail} | — |")
            continue
        judged = {band: sorted(p for p, bands in record.judged.items() if bands.get(band)) for band in ("ws2", "ws3+")}
        missing = "; ".join(f"{p}: {why}" for p, why in record.missing()) or "—"
        na = "; ".join(f"{p}: {why}" for p, why in sorted(record.not_applicable.items()) if not record.judged.get(p)) or "—"
        lines.append(f"| `{q}` | {state} | {record.variants} ({record.seconds:.1f} s) | "
                     f"{', '.join(judged['ws2']) or '—'} | {', '.join(judged['ws3+']) or '—'} | "
                     f"{missing.replace('|', '/')} | {na.replace('|', '/')} |")
    return lines


def as_json(table):
    out = {}
    for q, state, detail, record in table:
        item = {"status": state, "detail": detail}
        if record is not None:
            item.update(variants=record.variants, seconds=round(record.seconds, 3), outcomes=dict(record.outcomes),
                        applies=sorted(record.applies),
                        judged={p: {b: v for b, v in bands.items()} for p, bands in record.judged.items()},
                        missing=[list(m) for m in record.missing()],
                        not_applicable={p: r for p, r in record.not_applicable.items() if not record.judged.get(p)},
                        plan={b: sorted(s) for b, s in record.plan.items()})
        out[q] = item
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", required=True)
    ap.add_argument("--library", action="append", choices=list(LIBRARIES))
    ap.add_argument("--markdown", help="write the per-class tables to this Markdown file")
    ap.add_argument("--json", help="write the per-class results to this JSON file")
    ap.add_argument("--name-classes", metavar="DISTMETRICS",
                    help="first name each variant's class as peers/classes.py does (DISTMETRICS: the command, for "
                         "the reference's parameter defaults) and write the report back")
    args = ap.parse_args(argv)
    try:
        report = json.loads(Path(args.report).read_text())
    except (OSError, json.JSONDecodeError) as e:
        print(f"peers/judged.py: cannot read the report {args.report}: {e}", file=sys.stderr)
        return 2
    coverage = _peers_module("coverage")
    mappings = {}  # library -> its peers/<library>/metrics.py, loaded once for the classes and the census

    def mapping(library):
        if library not in mappings:
            mappings[library] = coverage.load(library)
        return mappings[library]

    libraries = args.library or [lib for lib in LIBRARIES if any(library_of(v) == lib for v in report.get("variants", []))]
    if not libraries:
        print(f"peers/judged.py: {args.report} has no variant of {', '.join(LIBRARIES)}", file=sys.stderr)
        return 2
    if args.name_classes:
        classes = _peers_module("classes")
        named = classes.annotate(report, args.name_classes, {lib: mapping(lib) for lib in libraries})
        Path(args.report).write_text(json.dumps(report, indent=1))
        total = sum(1 for v in report.get("variants", []) if classes.library_of(v, args.name_classes))
        print(f"peers/classes.py: {named} of {total} variants of the mapped libraries name their class", file=sys.stderr)
    if not any(v.get("class") for v in report.get("variants", [])):
        print(f"peers/judged.py: {args.report}: no variant names its class (run peers/classes.py on it first)",
              file=sys.stderr)
        return 2
    records = judge(report, libraries)
    md, data, summaries = [], {}, []
    for library in libraries:
        census, statuses = coverage.status(library, mapping(library))
        collections = [c.qualified for c in census.collections]
        table = rows(library, records[library], statuses, collections)
        apart = collection_rows(records[library], collections)
        summaries.append(summary_line(library, census.version, table, apart))
        md += markdown(library, census.version, table, apart) + [""]
        data[library] = {"version": census.version, "classes": as_json(table + apart)}
    if args.markdown:
        Path(args.markdown).write_text("\n".join(md) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(data, indent=1))
    for line in summaries:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
