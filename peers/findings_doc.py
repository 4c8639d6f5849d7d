"""Rewrites the per-library findings of docs/peers.md from a peer run's JSON report: for each library,
the count line under its heading, the variants column of its Mechanisms table (a row appended, from
mechanisms.toml, for a mechanism the table lacks) and the whole "Findings by domain and class" part
(each class with a finding, by domain, with the mechanism of each and the variants it explains).
The rest (a mechanism's where, upstream, classes in words, its section in detail) is written by hand.

Run after a triaged peer run (every finding expected), with the libraries importable (the torch 2.x
venv's python), so that the numbers in the docs are the run's:

    python peers/findings_doc.py --report build/reports/peers/peers.json [--doc docs/peers.md] [--date "6 December"]
"""

import argparse
import importlib.util
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HEADINGS = {"torchmetrics": "### torchmetrics ", "ignite": "### PyTorch-Ignite ", "torcheval": "### torcheval "}
OTHER = "Wrappers and aggregation"
# The domain of a class: a name in its module path (torchmetrics.<domain>..., torcheval.metrics.<domain>...,
# ignite.metrics.<module>); Ignite's flat modules are named one by one, the rest of its classes classify.
MODULE_DOMAINS = {
    "classification": "Classification", "regression": "Regression", "retrieval": "Retrieval", "ranking": "Retrieval",
    "text": "Text", "nlp": "Text", "audio": "Audio", "image": "Image", "gan": "Image", "video": "Video",
    "detection": "Detection", "vision": "Detection", "segmentation": "Segmentation", "clustering": "Clustering",
    "nominal": "Nominal", "multimodal": "Multimodal", "fairness": "Fairness", "statistical": "Statistics and information",
    "hsic": "Statistics and information", "maximum_mean_discrepancy": "Statistics and information",
    "mutual_information": "Statistics and information", "entropy": "Statistics and information",
    "js_divergence": "Statistics and information", "kl_divergence": "Statistics and information",
}
IGNITE_OTHER = {"epoch_metric", "metrics_lambda", "running_average", "loss", "accumulation", "metric_group",
                "frequency", "metric"}
ORDER = ["Classification", "Regression", "Retrieval", "Text", "Audio", "Image", "Video", "Detection", "Segmentation",
         "Clustering", "Nominal", "Multimodal", "Fairness", "Statistics and information", "Windowed", OTHER]


def _expected():
    spec = importlib.util.spec_from_file_location("peers_expected", ROOT / "peers" / "expected.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def domain(library, qualified):
    """The domain heading of a class ("torchmetrics.classification.auroc:BinaryAUROC" -> Classification)."""
    parts = qualified.partition(":")[0].split(".")
    if library == "torcheval" and len(parts) > 2 and parts[2] == "window":
        return "Windowed"
    names = parts[1:] if library == "torchmetrics" else parts[2:]
    for name in names:
        if name in MODULE_DOMAINS:
            return MODULE_DOMAINS[name]
    if library == "ignite":
        return OTHER if any(n in IGNITE_OTHER for n in names) else "Classification"
    return OTHER


def short(variant_id):
    """"torchmetrics/BinaryAUROC.ws4:gloo-ws4-even-cpu" -> "ws4-even" for an own row's file,
    "core/roc_auc ws1-even" for a core scenario's."""
    scenario, _, rest = variant_id.partition(":")
    shard = rest.removeprefix("gloo-").removesuffix("-cpu")
    return shard if scenario.split("/")[0] in HEADINGS else f"{scenario} {shard}"


def counts_text(variants_by_outcome):
    total = sum(len(v) for v in variants_by_outcome.values())
    return f"{total} (" + ", ".join(f"{o} {len(v)}" for o, v in sorted(variants_by_outcome.items())) + ")"


def library_findings(ex, report, library):
    """(release key, mechanisms table, {mechanism: {outcome: [variant ids]}}, {class: {mechanism: {outcome: [ids]}}},
    other releases' entry counts per mechanism, the number of findings, unexpected findings)."""
    import importlib
    import torch

    path = ROOT / "peers" / library / "expected.toml"
    all_entries, releases = ex.load_expected(path)
    ran = ex.release(importlib.import_module(library).__version__, torch.__version__)
    entries = ex.for_release(all_entries, releases, ran, path, library)
    mechanisms = ex.load_mechanisms(ex.mechanisms_path(path), releases)
    variants = ex.of_library(report, library)
    found = ex.findings(variants)
    unexpected, _ = ex.compare(entries, found, [(v["id"], ex.metric_name(v)) for v in variants if v["outcome"] != "skip"])
    classes = {v["id"] + "\0" + ex.metric_name(v): v.get("class", "") for v in variants}
    by_mechanism = defaultdict(lambda: defaultdict(list))
    by_class = defaultdict(lambda: defaultdict(lambda: defaultdict(list)))
    for f in found:
        if f in unexpected:
            continue
        for m in sorted({m for e in entries if ex.matches(e, f) for m in e.get("_mechanisms", [])}):
            by_mechanism[m][f["outcome"]].append(f["variant"])
            by_class[classes.get(f["variant"] + "\0" + f["metric"], "")][m][f["outcome"]].append(f["variant"])
    others = defaultdict(Counter)
    for e in all_entries:
        for r in e.get("releases", []):
            if r != ran:
                for m in e.get("_mechanisms", []):
                    others[m][r] += 1
    return ran, mechanisms, by_mechanism, by_class, others, len(found), unexpected


def mechanisms_rows(lines, mechanisms, by_mechanism, others):
    """The Mechanisms table with its variants column recomputed; rows for mechanisms it lacks appended."""
    seen = set()
    out = []
    for line in lines:
        m = re.match(r"\| `([a-z0-9-]+)` \|", line)
        if not m:
            out.append(line)
            continue
        mid = m.group(1)
        seen.add(mid)
        cells = line.rstrip().rstrip("|").split(" | ")
        cells[-1] = variants_cell(mid, by_mechanism, others)
        out.append(" | ".join(cells) + " |")
    header = next((l for l in lines if l.startswith("| id |")), "")
    with_since = "since" in header
    for mid, t in mechanisms.items():
        if mid in seen:
            continue
        cells = [f"`{mid}`", t["kind"], t["title"], f"`{t['where']}`", t["upstream"]]
        if with_since:
            cells.append("; ".join(t.get("since") or []) or "—")
        cells += [f"`{t['repro']}`" if t["repro"] else f"none ({t.get('why_no_repro', '')})",
                  ", ".join(t.get("classes") or []) or "—", variants_cell(mid, by_mechanism, others)]
        last = max(i for i, l in enumerate(out) if l.startswith("| `"))
        out.insert(last + 1, "| " + " | ".join(cells) + " |")
    return out


def variants_cell(mid, by_mechanism, others):
    text = counts_text(by_mechanism[mid]) if by_mechanism.get(mid) else "0"
    for release, n in sorted(others.get(mid, {}).items()):
        text += f"; {n} entr{'y' if n == 1 else 'ies'} of {release}"
    return text


def class_tables(library, by_class, ran):
    lines = ["#### Findings by domain and class", "",
             f"Each class with a finding in the run of {ran} (the findings of the other release are the "
             "mechanisms' \"variants\" above), by domain (the class's module), with the mechanism of each "
             "(written by `peers/findings_doc.py` from the run's report).", ""]
    domains = defaultdict(list)
    for qualified in by_class:
        domains[domain(library, qualified) if qualified else OTHER].append(qualified)
    for name in sorted(domains, key=ORDER.index):
        lines += [f"##### {name}", "", "| class | mechanism | variants |", "| --- | --- | --- |"]
        for qualified in sorted(domains[name], key=lambda q: q.partition(":")[2] or q):
            cls = qualified.partition(":")[2] or "(no class)"
            for mid, outcomes in sorted(by_class[qualified].items(), key=lambda kv: -sum(map(len, kv[1].values()))):
                cell = "; ".join(f"**{o}** {len(ids)}: " + ", ".join(sorted(short(i) for i in ids)[:3])
                                 + (", ..." if len(ids) > 3 else "") for o, ids in sorted(outcomes.items()))
                lines.append(f"| `{cls}` | [`{mid}`](#{mid}) | {cell} |")
        lines.append("")
    return lines


def rewrite(doc, library, ran, mechanisms, by_mechanism, by_class, others, findings, date):
    lines = doc.split("\n")
    start = next(i for i, l in enumerate(lines) if l.startswith(HEADINGS[library]) and "(`peers/" not in l)
    table = next(i for i in range(start, len(lines)) if lines[i] == "#### Mechanisms")
    classes = next(i for i in range(table, len(lines)) if lines[i] == "#### Findings by domain and class")
    detail = next(i for i in range(classes, len(lines)) if lines[i] == "#### Mechanisms in detail")
    kinds = Counter(t["kind"] for t in mechanisms.values())
    count = (f"{len(mechanisms)} mechanisms ({kinds['library bug']} library bugs, {kinds['convention']} conventions) "
             f"explain the {findings} findings of the run of {ran} ({date}) (`peers/{library}/mechanisms.toml`; each "
             f"entry of `peers/{library}/expected.toml` names one). Variants: the findings of that run each mechanism "
             f"explains (a finding whose failed properties come from two counts under both).")
    intro = [l if not re.match(r"\d+ mechanisms \(", l) else count for l in lines[start + 1:table]]
    return "\n".join(lines[:start + 1] + intro + mechanisms_rows(lines[table:classes], mechanisms, by_mechanism, others)
                     + class_tables(library, by_class, ran) + lines[detail:])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", required=True)
    ap.add_argument("--doc", default=str(ROOT / "docs" / "peers.md"))
    ap.add_argument("--date", default="")
    ap.add_argument("--library", action="append", choices=list(HEADINGS))
    args = ap.parse_args(argv)
    ex = _expected()
    report = ex.load_report(args.report)
    doc = Path(args.doc).read_text()
    for library in args.library or HEADINGS:
        ran, mechanisms, by_mechanism, by_class, others, findings, unexpected = library_findings(ex, report, library)
        if unexpected:
            print(f"peers/findings_doc.py: {library}: {len(unexpected)} finding(s) no entry expects: triage them "
                  f"first (peers/expected.py)", file=sys.stderr)
            return 1
        doc = rewrite(doc, library, ran, mechanisms, by_mechanism, by_class, others, findings,
                      args.date or "this run")
    Path(args.doc).write_text(doc)
    print(f"peers/findings_doc.py: {args.doc}: the findings of {', '.join(args.library or HEADINGS)} rewritten")
    return 0


if __name__ == "__main__":
    sys.exit(main())
