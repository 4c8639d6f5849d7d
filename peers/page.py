"""The page a maintainer opens: the peer run as one small HTML page that leads with what is new.

Reads what the peer run already writes (nothing of conform's own HTML):
- the JSON report of `distmetrics conform` (each variant named by its class: peers/classes.py),
- peers/judged.py's per-class data (--judged judged.json; without it, the classes that ran, from
  the report alone, with no census),
- each library's expected.toml compared with its findings (peers/expected.py, imported), and
  peers/<library>/mechanisms.toml when there is one ([[mechanism]] id, title, kind, where,
  upstream, since, repro; an expected.toml entry names its mechanism with `mechanism = "id"`).

Writes OUT/index.html, which opens with what is new (findings no entry expects, entries whose
variants ran without their finding, flakes; or "nothing new"), then per library and domain (the
class's module path: torchmetrics.classification, ignite.metrics.regression, ...) a class x
property matrix whose cells give the proportions over the class's variants of

    passed | expected finding | new finding | not judged | not applicable

(not judged: the variant hung, crashed or raised before the property's step, or skipped it as
"not judged"; not applicable: a skip that says why it does not apply, or no reference). A property
not judged is never drawn as passed. The per-variant detail (outcome, each property, reason,
finding and its mechanism or `why`, reproduce command) is in OUT/<library>-<domain>.html, linked
from each row, so the first page stays small. Self-contained: no external fetch, a few lines of JS.

    python3 peers/page.py --report build/reports/peers/peers.json [--judged judged.json] --out DIR

Prints one line (the page and its size). Exit 0; 2 for bad input."""

import argparse
import html
import importlib.util
import json
import re
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _module(name):
    spec = importlib.util.spec_from_file_location(f"peers_{name}", HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


expected = _module("expected")
judged = _module("judged")
# An expected.toml entry names its mechanism (mechanism = "id", issue 44 item 1); this page's own
# copy of peers/expected.py accepts the field whether or not that copy knows it yet.
expected.FIELDS.setdefault("mechanism", str)

LIBRARIES = judged.LIBRARIES
# The states of a property in one variant, in the order a cell draws them.
STATES = ("pass", "expected", "new", "notjudged", "na")
STATE_TEXT = {"pass": "passed", "expected": "expected finding", "new": "new finding", "notjudged": "not judged",
              "na": "not applicable"}


def died():
    """The outcomes of a variant that did not run to its end: every one that did not pass but a
    failed property's (the runner's table, through peers/expected.py)."""
    t = expected.tables()
    return tuple(o for o in t.not_passed if o != t.outcome("fail"))


def esc(text):
    return html.escape(str(text), quote=True)


def slug(text):
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def domain_of(library, qualified):
    """The domain of a class from its module path: torchmetrics.<domain>..., ignite.metrics.<domain>.<module>
    (a module right under ignite.metrics is the top level), torcheval.metrics.<domain>..."""
    module = qualified.split(":", 1)[0]
    parts = module.split(".")
    if library == "torchmetrics":
        return parts[1] if len(parts) >= 3 or (len(parts) == 2 and parts[1] != "metric") else "core"
    if len(parts) >= 4:
        return parts[2]
    return "metrics (top level)" if library == "ignite" else (parts[2] if len(parts) == 3 else "core")


# --- the data ---------------------------------------------------------------------------------


def load_mechanisms(path):
    """{id: mechanism} from a mechanisms.toml; {} when there is none (or it does not parse: said once)."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as e:
        print(f"peers/page.py: {path}: {e} (mechanisms left out)", file=sys.stderr)
        return {}
    return {m["id"]: m for m in data.get("mechanism", []) if isinstance(m, dict) and m.get("id")}


def key(v):
    return (v.get("source"), v["id"], v.get("metric"))


class Library:
    """One library's run: its variants, each finding's entry (or none: new), what no longer shows, flakes."""

    def __init__(self, name, report, expected_dir, errors, baseline=None):
        self.name = name
        self.variants = expected.of_library(report, name)
        self.release = expected.ran_release(report, name)
        # Another release (ci/run_peers.sh --release, --from): its findings against the entries of
        # a triaged one, as peers/expected.py --baseline compares them (new / not seen).
        self.baseline = baseline
        path = Path(expected_dir) / name / "expected.toml"
        self.mechanisms = load_mechanisms(Path(expected_dir) / name / "mechanisms.toml")
        self.entries, self.compared = [], False
        try:
            entries, releases = expected.load_expected(path)
            self.entries = expected.for_release(entries, releases, baseline or self.release, path, name)
            self.compared = True
        except expected.BadInput as e:
            errors.append(f"{name}: not compared with its expected findings: {e}")
        self.found = expected.findings(self.variants)
        ran = [(v["id"], expected.metric_name(v)) for v in self.variants if v["outcome"] != "skip"]
        if self.compared:
            self.unexpected, self.missing = expected.compare(self.entries, self.found, ran)
        else:
            self.unexpected, self.missing = list(self.found), []
        self.flakes = expected.flakes(self.variants, self.entries)
        self.entry_of = {}  # (variant id, metric) -> the entry its finding matches
        for f in self.found:
            entry = next((e for e in self.entries if expected.matches(e, f)), None)
            if entry is not None:
                self.entry_of[(f["variant"], f["metric"])] = entry
        self.flaky_ids = {(f["variant"], f["metric"]) for f in self.flakes}

    def entry(self, v):
        return self.entry_of.get((v["id"], expected.metric_name(v)))

    def mechanism(self, entry):
        """The entry's mechanism (a dict), or None (no mechanism named, or not in mechanisms.toml)."""
        mid = entry.get("mechanism") if entry else None
        if not mid:
            return None
        return self.mechanisms.get(mid) or {"id": mid, "title": "(not in mechanisms.toml)"}

    def explanation_key(self, entry):
        mech = self.mechanism(entry)
        return f"m:{mech['id']}" if mech else f"w:{entry['why']}"


def variant_states(v, finding_state, listed, applies, not_applicable=None):
    """{property: (state, text)} of one variant; finding_state: "expected" or "new" for a variant
    that did not pass. A property the variant did not report counts as not judged when the
    variant died before it (its scenario lists it, or lists none and it applies to the class);
    otherwise it is not judged when its scenario lists it, and left out when not (its scenario does
    not check it)."""
    out = {}
    not_judged = expected.tables().property_skip("not_judged")  # a skip's "why" (the report says it)
    for p in v.get("properties", []):
        outcome, message = p.get("outcome"), (p.get("message") or "").splitlines()[0] if p.get("message") else ""
        if outcome == "pass":
            out[p["name"]] = ("pass", message)
        elif outcome == "skip":
            if p.get("why") == not_judged:
                out[p["name"]] = ("notjudged", message)
            else:
                out[p["name"]] = ("na", message)
        elif outcome in expected.not_passed():
            out[p["name"]] = (finding_state or "new", message)
        else:  # an outcome this page does not know: never a pass
            out[p["name"]] = ("notjudged", f"{outcome}: {message}")
    if v["outcome"] == "hang" and "no_hang" not in out:
        out["no_hang"] = (finding_state or "new", "the variant hung")
    if v["outcome"] not in died():  # ran to its end: what its scenario lists and it did not report was not judged
        for name in listed or ():
            out.setdefault(name, ("notjudged", "listed by its scenario, not reported by the variant"))
    else:
        wanted = listed if listed is not None else applies
        for name in wanted:
            if name in out:
                continue
            if name in (not_applicable or {}):  # skipped as not applicable wherever the class reached it
                out[name] = ("na", not_applicable[name])
            else:
                out[name] = ("notjudged", f"not reached: the variant ended in {v['outcome']} before this step")
    return out


class ClassView:
    def __init__(self, qualified, library, domain):
        self.qualified, self.library, self.domain = qualified, library, domain
        self.variants = []        # (variant, finding_state or None, {property: (state, text)})
        self.skipped = []         # whole-variant skips
        self.status, self.detail, self.missing, self.not_applicable = None, "", [], {}
        self.applies = set()

    @property
    def short(self):
        return self.qualified.split(":", 1)[-1]

    def cell(self, prop):
        counts = Counter()
        for v, _, states in self.variants:
            if prop in states:
                counts[states[prop][0]] += 1
        return counts

    def outcome_cell(self):
        counts = Counter()
        for v, fstate, _ in self.variants:
            counts["pass" if v["outcome"] == "pass" else (fstate or "new")] += 1
        counts["na"] += len(self.skipped)
        return counts


def build(report, judged_data, expected_dir, baseline=None):
    """({library: Library}, {library: {domain: [ClassView]}}, errors). `baseline`: the triaged release
    ("0.5.5 on torch 2.15") whose entries the run's findings are compared with (a run of another release)."""
    errors = []
    present = [lib for lib in LIBRARIES if any(judged.library_of(v) == lib for v in report.get("variants", []))]
    libs = {name: Library(name, report, expected_dir, errors, baseline) for name in present}
    views = {}
    for name, lib in libs.items():
        classes = {}
        jd = (judged_data or {}).get(name, {}).get("classes")
        records = None if jd is not None else judged.judge(report, [name])[name]
        for v in lib.variants:
            q = v.get("class") or f"(no class):{expected.metric_name(v) or v['id']}"
            view = classes.setdefault(q, ClassView(q, name, domain_of(name, q) if v.get("class") else "(no class)"))
            if v["outcome"] == "skip":
                view.skipped.append(v)
                continue
            if v["outcome"] == "pass":
                fstate = None
            else:
                fstate = "expected" if lib.entry(v) is not None else "new"
            view.variants.append([v, fstate, None])
        for q, view in classes.items():
            info = jd.get(q) if jd is not None else None
            if info is None and records is not None and q in records:
                record = records[q]
                info = {"status": record.status(), "applies": sorted(record.applies),
                        "missing": [list(m) for m in record.missing()],
                        "not_applicable": {p: r for p, r in record.not_applicable.items() if not record.judged.get(p)}}
            if info is None:
                info = {"status": "no class (skipped whole)" if not view.variants else "partly checked", "applies": [],
                        "missing": [], "not_applicable": {}}
            view.status, view.detail = info["status"], info.get("detail", "")
            view.missing, view.not_applicable = info.get("missing", []), info.get("not_applicable", {})
            view.applies = set(info.get("applies") or [])
            for item in view.variants:
                v = item[0]
                view.applies |= {p["name"] for p in v.get("properties", [])}
            for item in view.variants:
                v, fstate, _ = item
                listed = judged.scenario_properties(v.get("file", "")) if v.get("file") else None
                item[2] = variant_states(v, fstate, listed, view.applies, view.not_applicable)
        for q, info in (jd or {}).items():  # classes of the census that ran no variant
            if q not in classes:
                view = ClassView(q, name, domain_of(name, q))
                view.status, view.detail = info["status"], info.get("detail", "")
                classes[q] = view
        by_domain = defaultdict(list)
        for q in sorted(classes, key=lambda q: (q.split(":", 1)[-1].lower(), q)):
            by_domain[classes[q].domain].append(classes[q])
        views[name] = dict(sorted(by_domain.items(), key=lambda kv: (kv[0].startswith("("), kv[0])))
    return libs, views, errors


# --- the HTML ---------------------------------------------------------------------------------

CSS = """
body{font:13px/1.35 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 18px 40px;color:#1f2328}
h1{font-size:20px;margin:14px 0 4px}h2{font-size:17px;margin:22px 0 6px;border-bottom:1px solid #d0d7de}
h3{font-size:14px;margin:14px 0 4px}a{color:#0969da;text-decoration:none}a:hover{text-decoration:underline}
.lede{font-size:15px;padding:8px 12px;border-radius:6px;margin:8px 0}
.ok{background:#dafbe1;border:1px solid #4ac26b}.bad{background:#ffebe9;border:1px solid #cf222e}
ul.wn{margin:4px 0 10px;padding-left:20px}ul.wn li{margin:3px 0}
.tag{display:inline-block;font-size:11px;padding:0 5px;border-radius:8px;color:#fff;margin-right:4px}
.t-new{background:#cf222e}.t-gone{background:#8250df}.t-flake{background:#bf8700}
table.m{border-collapse:collapse;margin:4px 0 10px}table.m th,table.m td{border:1px solid #d0d7de;padding:1px 3px}
table.m th.p{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;font-size:11px;height:118px;
vertical-align:bottom}
table.m td.c{width:54px;min-width:54px;font-size:10px;text-align:right;position:relative;padding:0}
td.c div{display:flex;height:16px}td.c i{display:block;height:16px}td.c span{position:absolute;right:1px;top:1px;background:rgba(255,255,255,.6);padding:0 1px;line-height:13px}
td.k{white-space:nowrap;max-width:260px;overflow:hidden;text-overflow:ellipsis}
.pass,.s-pass{background:#6fdd8b}.expected,.s-expected{background:#e8c468}.new,.s-new{background:#ff6b6b}
.notjudged,.s-notjudged{background:repeating-linear-gradient(135deg,#afb8c1 0 3px,#eaeef2 3px 6px)}
.na,.s-na{background:#f0f2f4}
td.none{color:#8c959f;text-align:center;font-size:10px}
td.st{color:#57606a;font-size:11px;max-width:600px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
.st-checked{color:#1a7f37}.st-partly{color:#9a6700}.st-other{color:#57606a}
.legend i{display:inline-block;width:14px;height:10px;margin:0 3px 0 10px;border:1px solid #d0d7de}
details>summary{cursor:pointer}code{font-size:12px;background:#f6f8fa;padding:0 3px}
table.d{border-collapse:collapse;font-size:12px;margin:4px 0 14px}table.d td,table.d th{border:1px solid #d0d7de;
padding:2px 4px;vertical-align:top}table.d td.s{font-size:10px;text-align:center;white-space:nowrap;width:34px}
table.d th.p{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;font-size:11px;vertical-align:bottom}
table.d td.w{min-width:520px;max-width:900px}table.d td.v{white-space:nowrap}
.muted{color:#57606a}.small{font-size:11px}
"""

# Builds each cell's tooltip from its counts on hover (keeps the page small).
JS = """
document.addEventListener('mouseover',function(e){var t=e.target.closest&&e.target.closest('td.c');
if(!t||t.title)return;var c=t.dataset.c.split(','),n=['passed','expected finding','new finding','not judged',
'not applicable'],s=[];for(var i=0;i<5;i++)if(+c[i])s.push(c[i]+' '+n[i]);
t.title=(t.dataset.h||'')+': '+s.join(', ')+(t.dataset.x?'\\n'+t.dataset.x:'');});
"""


def legend():
    return ('<p class="legend small">cells: the share of the class\'s variants'
            + "".join(f'<i class="{s}"></i>{STATE_TEXT[s]}' for s in STATES)
            + ' &nbsp;· the number: passed / variants that check the property; · the property is not checked '
              'for that class. A property not judged is never counted as passed.</p>')


def cell_html(counts, header, extra=""):
    total = sum(counts[s] for s in STATES)
    if total == 0:
        return '<td class="none">·</td>'
    bars = "".join(f'<i class="{s}" style="width:{100.0 * counts[s] / total:.4g}%"></i>' for s in STATES if counts[s])
    counted = total - counts["na"]
    label = f"{counts['pass']}/{counted}" if counted else "n/a"
    if counts["new"]:
        label = "! " + label
    data = ",".join(str(counts[s]) for s in STATES)
    x = f' data-x="{esc(extra)}"' if extra else ""
    return f'<td class="c" data-c="{data}" data-h="{esc(header)}"{x}><div>{bars}</div><span>{label}</span></td>'


def status_class(status):
    return "st-checked" if status == "checked" else ("st-partly" if status == "partly checked" else "st-other")


def page(title, body, script=False):
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8><title>" + esc(title) + "</title><style>" + CSS
            + "</style></head><body>" + body + ("<script>" + JS + "</script>" if script else "") + "</body></html>\n")


def detail_name(library, domain):
    return f"{slug(library)}-{slug(domain)}.html"


def anchor(qualified):
    return "c-" + slug(qualified.replace(":", "."))


def finding_text(lib, v, states):
    failed = [p for p, (s, _) in states.items() if s in ("expected", "new")]
    unreached = [p for p, (s, _) in states.items() if s == "notjudged"]
    out = v["outcome"].upper()
    if failed:
        out += " (failed: " + ", ".join(sorted(failed)) + ")"
    if unreached:
        out += "; not judged: " + ", ".join(sorted(unreached))
    blamed = expected.blamed_ranks(v)
    if blamed:
        out += f"; rank{'s' if len(blamed) > 1 else ''} {', '.join(map(str, blamed))} blamed"
    return out


def explanation_html(lib, entry):
    """An expected finding's explanation: its mechanism (id, where, upstream, since, repro), else the entry's why."""
    mech = lib.mechanism(entry)
    if mech:
        parts = [f"<b>{esc(mech['id'])}</b>"]
        if mech.get("title"):
            parts.append(esc(mech["title"]))
        for field in ("where", "upstream", "since", "repro"):
            if mech.get(field):
                # since: the release that brought each finding (a list, peers/bisect_release.py)
                value = esc("; ".join(mech[field]) if isinstance(mech[field], list) else mech[field])
                if field == "upstream" and str(mech[field]).startswith("http"):
                    value = f'<a href="{value}">{value}</a>'
                parts.append(f'<span class="muted">{field}:</span> {value}')
        return " · ".join(parts)
    return (f'<span class="muted">expected.toml {esc(entry.get("kind", ""))}:</span> {esc(entry["why"])} '
            f'<span class="muted small">({esc(entry["_where"].rsplit(": ", 1)[-1])})</span>')


def whats_new(libs, views):
    """The opening: what is new (each item tagged), else one line saying nothing is."""
    items = []
    class_of = {}
    for name, domains in views.items():
        for domain, classes in domains.items():
            for view in classes:
                for v, fstate, states in view.variants:
                    class_of[(name,) + key(v)] = (view, states)
    for name, lib in libs.items():
        for f in lib.unexpected:
            v = next(x for x in lib.variants if x["id"] == f["variant"] and expected.metric_name(x) == f["metric"])
            view, states = class_of.get((name,) + key(v), (None, {}))
            where = (f'<a href="{detail_name(name, view.domain)}#{anchor(view.qualified)}">{esc(view.short)}</a>'
                     if view else esc(f["metric"]))
            items.append(f'<li data-kind="new"><span class="tag t-new">new finding</span>{esc(LIBRARIES[name])} '
                         f'{where} <code>{esc(v["id"])}</code>: {esc(finding_text(lib, v, states))} — '
                         f'{esc(f["headline"][:200])}</li>')
        for e in lib.missing:
            items.append(f'<li data-kind="gone"><span class="tag t-gone">expected, no longer seen</span>'
                         f'{esc(LIBRARIES[name])} {esc(" or ".join(e["_outcomes"]))} <code>{esc(" ".join(e["_globs"]))}'
                         f'</code>{" (" + esc(", ".join(e["failed"])) + ")" if isinstance(e.get("failed"), list) and e["failed"] else ""}: '
                         f'{explanation_html(lib, e)} — the library fixed it, or the harness stopped seeing it</li>')
        for f in lib.flakes:
            items.append(f'<li data-kind="flake"><span class="tag t-flake">flake</span>{esc(LIBRARIES[name])} '
                         f'{esc(expected.describe_flake(f))}</li>')
    if items:
        n_new = sum(len(lib.unexpected) for lib in libs.values())
        n_gone = sum(len(lib.missing) for lib in libs.values())
        n_flake = sum(len(lib.flakes) for lib in libs.values())
        head = (f'<div class="lede bad" id="whatsnew-head">What is new: {n_new} new finding(s), {n_gone} expected '
                f'finding(s) no longer seen, {n_flake} flake(s)</div>')
        return head + '<ul class="wn" id="whatsnew">' + "".join(items) + "</ul>"
    found = sum(len(lib.found) for lib in libs.values())
    mechs = {(name, lib.mechanism(lib.entry_of[k])["id"]) for name, lib in libs.items() for k in lib.entry_of
             if lib.mechanism(lib.entry_of[k])}
    whys = {(name, lib.explanation_key(e)) for name, lib in libs.items() for e in lib.entry_of.values()}
    by = (f"by {len(mechs)} mechanisms" if mechs and len(mechs) == len(whys)
          else f"by {len(whys)} distinct explanations ({len(mechs)} with a mechanism id)")
    return (f'<div class="lede ok" id="whatsnew-head">Nothing new: {found} findings, all expected, {by}; '
            f'no expected finding missing, no flake.</div><ul class="wn" id="whatsnew"></ul>')


def library_summary(lib, domains):
    counts = Counter(v["outcome"] for v in lib.variants)
    statuses = Counter(view.status for classes in domains.values() for view in classes)
    expected_n = len(lib.found) - len(lib.unexpected)
    return (f'{len(lib.variants)} variants ({counts["pass"]} pass, {counts["skip"]} skipped, {len(lib.found)} findings: '
            f'{expected_n} expected, {len(lib.unexpected)} new; {len(lib.missing)} expected no longer seen; '
            f'{len(lib.flakes)} flakes). Classes: '
            + ", ".join(f"{n} {s}" for s, n in sorted(statuses.items(), key=lambda kv: -kv[1])))


def known_list(name, lib):
    """The expected findings of the run grouped by mechanism (else by the entries' why)."""
    groups = defaultdict(lambda: {"entry": None, "variants": 0, "classes": set()})
    for v in lib.variants:
        entry = lib.entry(v)
        if entry is None:
            continue
        g = groups[lib.explanation_key(entry)]
        g["entry"] = g["entry"] or entry
        g["variants"] += 1
        g["classes"].add((v.get("class") or "").split(":", 1)[-1])
    rows = sorted(groups.values(), key=lambda g: -g["variants"])
    with_mech = sum(1 for g in rows if lib.mechanism(g["entry"]))
    what = "mechanisms" if rows and with_mech == len(rows) else "explanations"
    body = "".join(f'<li>{g["variants"]} variant(s) of {len(g["classes"])} class(es) '
                   f'<span class="muted small">({esc(", ".join(sorted(g["classes"]))[:160])})</span>: '
                   f'{explanation_html(lib, g["entry"])}</li>' for g in rows)
    note = "" if lib.mechanisms else ' <span class="muted small">(no mechanisms.toml yet: grouped by the entries\' why)</span>'
    return (f'<details><summary>The {len(lib.found) - len(lib.unexpected)} expected findings by {len(rows)} '
            f'{what}{note}</summary><ul class="small">{body}</ul></details>')


def matrix(name, lib, domain, classes, properties):
    props = [p for p in properties if any(p in view.applies for view in classes)]
    head = ('<tr><th>class</th><th class="p">status</th><th class="p">variants (outcome)</th>'
            + "".join(f'<th class="p">{esc(p)}</th>' for p in props) + "</tr>")
    rows = []
    link = detail_name(name, domain)
    for view in classes:
        name_cell = (f'<td class="k" title="{esc(view.qualified)}">'
                     + (f'<a href="{link}#{anchor(view.qualified)}">{esc(view.short)}</a>' if view.variants or view.skipped
                        else esc(view.short)) + "</td>")
        status = view.status or ""
        why = "; ".join(f"{p}: {r}" for p, r in view.missing)
        st = (f'<td class="{status_class(status)} small" title="{esc(why or status)}">'
              f'{esc({"checked": "checked", "partly checked": "partly"}.get(status, "—"))}</td>')
        if not view.variants and not view.skipped:
            rows.append(f'<tr data-class="{esc(view.qualified)}">{name_cell}{st}<td class="st" colspan="{len(props) + 1}" '
                        f'title="{esc(view.detail)}">{esc(status)}{": " + esc(view.detail) if view.detail else ""}</td></tr>')
            continue
        cells = [cell_html(view.outcome_cell(), f"{view.short} · variants")]
        for p in props:
            counts = view.cell(p)
            extra = ""
            if counts["expected"] or counts["new"]:
                ex = Counter()
                for v, fstate, states in view.variants:
                    if p in states and states[p][0] == "expected":
                        mech = lib.mechanism(lib.entry(v))
                        ex[mech["id"] if mech else lib.entry(v)["why"][:90]] += 1
                extra = "; ".join(f"{n}× {k}" for k, n in ex.most_common(3))
            if counts["notjudged"]:
                reasons = [r for props_, r in view.missing if p in props_.split(", ")]
                if reasons:
                    extra = (extra + "; " if extra else "") + "not judged: " + reasons[0][:160]
            cells.append(cell_html(counts, f"{view.short} · {p}", extra))
        rows.append(f'<tr data-class="{esc(view.qualified)}">{name_cell}{st}{"".join(cells)}</tr>')
    return f'<table class="m" data-library="{esc(name)}" data-domain="{esc(domain)}">{head}{"".join(rows)}</table>'


def index_html(report, libs, views, errors, judged_given):
    properties = list(report.get("properties") or [])
    for domains in views.values():
        for classes in domains.values():
            for view in classes:
                properties += [p for p in sorted(view.applies) if p not in properties]
    s = report.get("summary", {})
    body = [f"<h1>Peer run: {', '.join(esc(LIBRARIES[n]) + ' ' + esc((lib.release or '?')) for n, lib in libs.items())}</h1>",
            f'<p class="muted small">{s.get("total", len(report.get("variants", [])))} variants, started '
            f'{esc(report.get("started", "?"))}, {report.get("seconds", 0):.0f} s; distmetrics '
            f'{esc(report.get("distmetrics_version", "?"))}. The whole report: <a href="../peers.html">peers.html</a>, '
            f'<a href="../peers.json">peers.json</a>, <a href="../judged.md">judged.md</a>. '
            + ("" if judged_given else "No judged.json given: classes from the report alone (no census). ")
            + "</p>"]
    body += [f'<p class="bad lede">{esc(e)}</p>' for e in errors]
    body.append(whats_new(libs, views))
    body.append(legend())
    toc = []
    for name, lib in libs.items():
        toc.append(f'<a href="#lib-{slug(name)}">{esc(LIBRARIES[name])}</a>: '
                   + ", ".join(f'<a href="#d-{slug(name)}-{slug(d)}">{esc(d)}</a>' for d in views[name]))
    body.append('<p class="small">' + "<br>".join(toc) + "</p>")
    for name, lib in libs.items():
        body.append(f'<h2 id="lib-{slug(name)}">{esc(LIBRARIES[name])} {esc(lib.release or "")}</h2>')
        if lib.baseline:
            body.append(f'<p class="small">Findings compared with the entries of {esc(lib.baseline)} (the baseline: '
                        f'"new" is a finding none of them expects; "no longer seen" an entry of it this release '
                        f'does not show, fixed or not yet born).</p>')
        body.append(f'<p class="small">{esc(library_summary(lib, views[name]))}</p>')
        body.append(known_list(name, lib))
        for domain, classes in views[name].items():
            body.append(f'<h3 id="d-{slug(name)}-{slug(domain)}">{esc(domain)} <span class="muted small">'
                        f'({len(classes)} classes; <a href="{detail_name(name, domain)}">per-variant detail</a>)</span></h3>')
            body.append(matrix(name, lib, domain, classes, properties))
    return page("Peer run: what is new", "".join(body), script=True)


def detail_html(name, lib, domain, classes, properties):
    body = [f'<p class="small"><a href="index.html#d-{slug(name)}-{slug(domain)}">← the page</a></p>',
            f"<h1>{esc(LIBRARIES[name])} {esc(lib.release or '')} · {esc(domain)}: every variant</h1>", legend()]
    for view in classes:
        body.append(f'<h2 id="{anchor(view.qualified)}">{esc(view.short)} <span class="muted small">'
                    f'{esc(view.qualified)} · {esc(view.status or "")}</span></h2>')
        if view.detail:
            body.append(f'<p class="small">{esc(view.detail)}</p>')
        if view.missing:
            body.append('<p class="small">not judged: ' + "; ".join(f"<b>{esc(p)}</b>: {esc(r)}" for p, r in view.missing)
                        + "</p>")
        if view.not_applicable:
            body.append('<p class="small">not applicable: ' + "; ".join(
                f"<b>{esc(p)}</b>: {esc(r)}" for p, r in sorted(view.not_applicable.items())) + "</p>")
        if not view.variants and not view.skipped:
            continue
        props = [p for p in properties if p in view.applies]
        rows = ['<tr><th>variant</th><th>outcome</th>' + "".join(f'<th class="p">{esc(p)}</th>' for p in props)
                + "<th>finding · reason · reproduce</th></tr>"]
        for v, fstate, states in view.variants:
            tds = []
            for p in props:
                state, text = states.get(p, (None, "not checked by this variant's scenario"))
                if state is None:
                    tds.append(f'<td class="s" title="{esc(text)}">·</td>')
                else:
                    label = {"pass": "pass", "expected": "exp.", "new": "NEW", "notjudged": "not judged",
                             "na": "n/a"}[state]
                    tds.append(f'<td class="s s-{state}" data-property="{esc(p)}" data-state="{state}" '
                               f'title="{esc(text[:300])}">{label}</td>')
            entry = lib.entry(v)
            if v["outcome"] == "pass":
                what = ""
            elif entry is not None:
                what = f'<b>expected</b>: {explanation_html(lib, entry)}<br>'
            else:
                what = '<b style="color:#cf222e">NEW finding</b> (no expected.toml entry matches)<br>'
            if (v["id"], expected.metric_name(v)) in lib.flaky_ids:
                what += "<b>flake</b>: a rerun showed something else<br>"
            if v["outcome"] != "pass":
                what += f'{esc(finding_text(lib, v, states))}<br>'
                what += f'<span class="small">{esc((v.get("reason") or "")[:700])}</span><br>'
            what += f'<code class="small">{esc(v.get("reproduce") or "")}</code>'
            rows.append(f'<tr id="v-{slug(v["id"])}" data-variant="{esc(v["id"])}"><td class="small v">{esc(v["id"].split(":", 1)[0])}<br>'
                        f'{esc(v["id"].split(":", 1)[-1])}</td><td>{esc(v["outcome"])}</td>{"".join(tds)}'
                        f'<td class="small w">{what}</td></tr>')
        body.append('<table class="d">' + "".join(rows) + "</table>")
        if view.skipped:
            body.append(f'<details class="small"><summary>{len(view.skipped)} variant(s) skipped whole</summary><ul>'
                        + "".join(f'<li><code>{esc(v["id"])}</code>: {esc((v.get("reason") or "")[:300])}</li>'
                                  for v in view.skipped) + "</ul></details>")
    return page(f"{LIBRARIES[name]} · {domain}: every variant", "".join(body))


def write(report, judged_data, expected_dir, out, baseline=None):
    libs, views, errors = build(report, judged_data, expected_dir, baseline)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    properties = list(report.get("properties") or [])
    for domains in views.values():
        for classes in domains.values():
            for view in classes:
                properties += [p for p in sorted(view.applies) if p not in properties]
    index = out / "index.html"
    index.write_text(index_html(report, libs, views, errors, judged_data is not None))
    sizes = {}
    for name, lib in libs.items():
        for domain, classes in views[name].items():
            path = out / detail_name(name, domain)
            path.write_text(detail_html(name, lib, domain, classes, properties))
            sizes[path.name] = path.stat().st_size
    return index, sizes, libs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--report", required=True, help="the conform JSON report (classes named: peers/classes.py)")
    ap.add_argument("--judged", help="peers/judged.py --json output (default: the classes that ran, from the report)")
    ap.add_argument("--expected-dir", default=str(HERE), help="where <library>/expected.toml (and mechanisms.toml) are")
    ap.add_argument("--out", required=True, help="folder for index.html and the per-domain detail pages")
    ap.add_argument("--baseline", help="another release's run: compare its findings with this triaged release's "
                                       "entries (\"0.5.5 on torch 2.15\"; ci/run_peers.sh --release, --from)")
    args = ap.parse_args(argv)
    try:
        report = expected.load_report(args.report)
        judged_data = json.loads(Path(args.judged).read_text()) if args.judged else None
    except (OSError, json.JSONDecodeError) as e:
        print(f"peers/page.py: cannot read its input: {e}", file=sys.stderr)
        return 2
    if not any(judged.library_of(v) for v in report.get("variants", [])):
        print(f"peers/page.py: {args.report} has no variant of {', '.join(LIBRARIES)}", file=sys.stderr)
        return 2
    index, sizes, libs = write(report, judged_data, args.expected_dir, args.out, args.baseline)
    new = sum(len(lib.unexpected) + len(lib.missing) + len(lib.flakes) for lib in libs.values())
    print(f"page: {index} ({index.stat().st_size / 1e6:.2f} MB; {len(sizes)} detail pages, the largest "
          f"{max(sizes.values(), default=0) / 1e6:.2f} MB): "
          + (f"{new} new item(s) at its top" if new else "nothing new"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
