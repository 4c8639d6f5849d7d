"""peers/page.py, the page a maintainer opens: on a report written by hand in the JSON report's
shape, each view (the "what is new" list, the matrix cells, the per-variant detail page) never
shows a property that was not judged as passed; a new finding, an expected one no longer seen and
a flake are at the top; with nothing new the page says so, with the mechanisms."""

import importlib.util
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("page", ROOT / "peers" / "page.py")
page = importlib.util.module_from_spec(spec)
spec.loader.exec_module(page)

SOURCE = "python:/x/peers/torchmetrics/metrics.py"
PROPS = ["no_hang", "equal_to_single", "ranks_agree", "state_roundtrip"]


def variant(cls, ws, shard, outcome, props, reason="", module="lib.classification.acc"):
    return {"id": f"s/{cls}:gloo-ws{ws}-{shard}-cpu", "class": f"{module}:{cls}", "source": SOURCE,
            "metric": f"{cls} (torchmetrics/metrics)", "world_size": ws, "shard": shard, "outcome": outcome,
            "reason": reason, "seconds": 0.5, "file": "/nonexistent.toml", "root_cause": None,
            "reproduce": f"distmetrics conform --filter 's/{cls}:gloo-ws{ws}-{shard}-cpu'",
            "properties": [dict(zip(("name", "outcome", "message", "why"), p)) for p in props]}


ALL_PASS = [(p, "pass", f"{p} held") for p in PROPS]
# A skip says why in the report ("why": not_judged or not_applicable); the page reads that.
NOT_JUDGED = ("state_roundtrip", "skip", "state_roundtrip: not judged: no rank computed after restoring its state",
              "not_judged")


def report(*extra):
    variants = [
        variant("A", 2, "even", "pass", ALL_PASS),
        # Hung: only no_hang reported, its finding expected (entry 1).
        variant("A", 2, "empty_rank", "hang", [("no_hang", "fail", "no_hang failed: rank 1 left")],
                reason="rank 1 to blame: rank 1 returned from compute 3 without its dist.barrier"),
        # Crashed after no_hang: nothing else reached; no entry expects it.
        variant("A", 3, "uneven", "crash", [("no_hang", "pass", "no_hang held")],
                reason="rank 2 to blame: mismatched collective #5"),
        # Failed equal_to_single, state_roundtrip skipped as not judged; no entry expects it.
        variant("A", 3, "even", "fail", [("no_hang", "pass", ""), ("equal_to_single", "fail", "equal_to_single failed"),
                                         ("ranks_agree", "pass", ""), NOT_JUDGED]),
        # B passes everywhere: its expected finding (entry 2) is no longer seen.
        variant("B", 2, "even", "pass", ALL_PASS, module="lib.regression.b"),
        variant("B", 3, "even", "pass", ALL_PASS, module="lib.regression.b"),
    ] + list(extra)
    return {"properties": PROPS, "variants": variants, "summary": {}, "started": "today", "seconds": 3.0}


EXPECTED = """
[[finding]]
variant = "s/A:gloo-ws2-empty_rank-cpu"
outcome = "hang"
failed = []
blamed = [1]
kind = "library bug"
why = "a rank whose batches are empty skips the sync"
{mechanism}
[[finding]]
variant = "s/B:gloo-ws2-*"
outcome = "fail"
failed = ["equal_to_single"]
blamed = []
kind = "library bug"
why = "B forgets its count"
"""


def write_expected(tmp_path, text=EXPECTED, mechanism="", mechanisms=None):
    folder = tmp_path / "peers"
    (folder / "torchmetrics").mkdir(parents=True)
    (folder / "torchmetrics" / "expected.toml").write_text(text.format(mechanism=mechanism))
    if mechanisms is not None:
        (folder / "torchmetrics" / "mechanisms.toml").write_text(mechanisms)
    return folder


class Tables(HTMLParser):
    """The page's matrices and detail tables: each row's attributes and its cells' (attributes, text);
    the "what is new" items; the position of each in the page."""

    def __init__(self):
        super().__init__()
        self.tables, self.items, self.order = [], [], []
        self._cell = self._item = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"class": a.get("class"), "head": [], "rows": []})
            self.order.append(("table", a.get("class")))
        elif tag == "tr" and self.tables:
            self.tables[-1]["rows"].append({"attrs": a, "cells": []})
        elif tag in ("td", "th") and self.tables:
            self._cell = [tag, a, ""]
        elif tag == "li" and "data-kind" in a:
            self._item = [a["data-kind"], ""]
            self.order.append(("item", a["data-kind"]))
        elif tag == "i" and self._cell is not None:
            self._cell[1].setdefault("bars", []).append((a.get("class"), a.get("style", "")))
        elif tag == "div" and a.get("id") == "whatsnew-head":
            self.order.append(("head", a.get("class")))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            kind, a, text = self._cell
            row = self.tables[-1]["rows"][-1]
            row["cells"].append((kind, a, text.strip()))
            self._cell = None
        elif tag == "li" and self._item is not None:
            self.items.append(tuple(self._item))
            self._item = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell[2] += data
        if self._item is not None:
            self._item[1] += data


def parse(path):
    p = Tables()
    p.feed(Path(path).read_text())
    return p


def matrix_cells(parsed):
    """{(class, column): (data-c counts, bars, text)} of every matrix."""
    out = {}
    for table in parsed.tables:
        if table["class"] != "m":
            continue
        head = [text for _, _, text in table["rows"][0]["cells"]]
        for row in table["rows"][1:]:
            for column, (kind, a, text) in zip(head, row["cells"]):
                if "data-c" in a:
                    out[(row["attrs"]["data-class"], column)] = ([int(n) for n in a["data-c"].split(",")],
                                                                a.get("bars", []), text)
    return out


def passes_in_report(rep):
    """{(class, property): how many variants report the property as passed}: the only passes a view may draw."""
    out = {}
    for v in rep["variants"]:
        for p in v["properties"]:
            key = (v["class"], p["name"])
            out[key] = out.get(key, 0) + (p["outcome"] == "pass")
    return out


@pytest.fixture
def written(tmp_path):
    rep = report()
    out = tmp_path / "page"
    page.write(rep, None, write_expected(tmp_path), out)
    return rep, out


def test_the_matrix_never_draws_a_property_not_judged_as_passed(written):
    rep, out = written
    cells = matrix_cells(parse(out / "index.html"))
    passes = passes_in_report(rep)
    for (cls, column), (counts, bars, text) in cells.items():
        if column in PROPS:
            assert counts[0] == passes.get((cls, column), 0), (cls, column, counts)
        total = sum(counts)
        pass_bar = [style for name, style in bars if name == "pass"]
        if counts[0] == 0:
            assert not pass_bar, (cls, column)
        else:
            assert pass_bar == [f"width:{100.0 * counts[0] / total:.4g}%"]
    # A: pass, hang (expected), crash (new), fail (new) with state_roundtrip skipped as not judged.
    #                                                      passed, expected, new, not judged, n/a
    assert cells[("lib.classification.acc:A", "equal_to_single")][0] == [1, 0, 1, 2, 0]
    assert cells[("lib.classification.acc:A", "state_roundtrip")][0] == [1, 0, 0, 3, 0]
    assert cells[("lib.classification.acc:A", "state_roundtrip")][2] == "1/4"
    assert cells[("lib.classification.acc:A", "no_hang")][0] == [3, 1, 0, 0, 0]
    assert cells[("lib.classification.acc:A", "variants (outcome)")][0] == [1, 1, 2, 0, 0]
    assert cells[("lib.classification.acc:A", "variants (outcome)")][2] == "! 1/4"
    assert cells[("lib.regression.b:B", "equal_to_single")][0] == [2, 0, 0, 0, 0]


def test_the_matrix_is_per_library_and_domain(written):
    _, out = written
    html = (out / "index.html").read_text()
    assert re.findall(r'<table class="m" data-library="(\w+)" data-domain="(\w+)"', html) == [
        ("torchmetrics", "classification"), ("torchmetrics", "regression")]
    assert "<link" not in html and 'src="' not in html and "http" not in html


def test_whats_new_is_at_the_top_and_never_says_a_property_not_judged_passed(written):
    rep, out = written
    parsed = parse(out / "index.html")
    assert parsed.order[0] == ("head", "lede bad")
    first_table = parsed.order.index(("table", "m"))
    kinds = [kind for what, kind in parsed.order[:first_table] if what == "item"]
    assert sorted(kinds) == ["gone", "new", "new"]
    crash = next(text for kind, text in parsed.items if "gloo-ws3-uneven" in text)
    assert "CRASH; not judged: equal_to_single, ranks_agree, state_roundtrip; rank 2 blamed" in crash
    fail = next(text for kind, text in parsed.items if "gloo-ws3-even" in text)
    assert "FAIL (failed: equal_to_single); not judged: state_roundtrip" in fail
    for kind, text in parsed.items:
        assert "pass" not in text.lower().replace("passes", ""), text
    gone = next(text for kind, text in parsed.items if kind == "gone")
    assert "s/B:gloo-ws2-*" in gone and "B forgets its count" in gone


def test_the_detail_page_never_shows_a_property_not_judged_as_passed(written):
    rep, out = written
    parsed = parse(out / "torchmetrics-classification.html")
    by_id = {v["id"]: {p["name"]: p["outcome"] for p in v["properties"]} for v in rep["variants"]}
    states = {}
    for table in parsed.tables:
        for row in table["rows"]:
            vid = row["attrs"].get("data-variant")
            for _, a, text in row["cells"]:
                if vid and "data-property" in a:
                    states[(vid, a["data-property"])] = (a["data-state"], text)
                    assert (a["data-state"] == "pass") == (by_id[vid].get(a["data-property"]) == "pass")
                    assert (text == "pass") == (a["data-state"] == "pass")
    assert states[("s/A:gloo-ws2-empty_rank-cpu", "no_hang")] == ("expected", "exp.")
    assert states[("s/A:gloo-ws2-empty_rank-cpu", "equal_to_single")] == ("notjudged", "not judged")
    assert states[("s/A:gloo-ws3-uneven-cpu", "ranks_agree")] == ("notjudged", "not judged")
    assert states[("s/A:gloo-ws3-even-cpu", "state_roundtrip")] == ("notjudged", "not judged")
    assert states[("s/A:gloo-ws3-even-cpu", "equal_to_single")] == ("new", "NEW")
    html = (out / "torchmetrics-classification.html").read_text()
    assert "distmetrics conform --filter &#x27;s/A:gloo-ws3-even-cpu&#x27;" in html  # the reproduce command
    assert "a rank whose batches are empty skips the sync" in html  # the expected finding's why


def test_a_flake_is_at_the_top(tmp_path):
    flaky = variant("A", 4, "even", "pass", ALL_PASS)
    flaky["first_run"] = {"outcome": "fail", "reason": "timing",
                          "properties": [{"name": "equal_to_single", "outcome": "fail", "message": ""}]}
    out = tmp_path / "page"
    page.write(report(flaky), None, write_expected(tmp_path), out)
    parsed = parse(out / "index.html")
    first_table = parsed.order.index(("table", "m"))
    assert ("item", "flake") in parsed.order[:first_table]


MECHANISMS = """
[[mechanism]]
id = "tm-empty-rank-sync"
title = "an empty rank skips the sync"
kind = "library bug"
where = "torchmetrics/metric.py:123"
upstream = "not reported"
repro = "peers/repro/tm_empty_rank.py"
since = ["A at 2 ranks: 1.6.2 (bisected: 1.6.1 does not show it)"]
"""


def test_nothing_new_says_so_with_its_mechanisms(tmp_path):
    rep = report()
    rep["variants"] = [v for v in rep["variants"] if v["outcome"] in ("pass", "hang")]
    only_a = EXPECTED.split("[[finding]]\nvariant = \"s/B")[0]
    out = tmp_path / "page"
    page.write(rep, None, write_expected(tmp_path, only_a, 'mechanism = "tm-empty-rank-sync"', MECHANISMS), out)
    parsed = parse(out / "index.html")
    html = (out / "index.html").read_text()
    assert parsed.order[0] == ("head", "lede ok") and parsed.items == []
    assert "Nothing new: 1 findings, all expected, by 1 mechanisms" in html
    detail = (out / "torchmetrics-classification.html").read_text()
    for text in ("tm-empty-rank-sync", "torchmetrics/metric.py:123", "not reported", "peers/repro/tm_empty_rank.py",
                 "since:</span> A at 2 ranks: 1.6.2 (bisected: 1.6.1 does not show it)"):
        assert text in detail
    cells = matrix_cells(parsed)
    assert cells[("lib.classification.acc:A", "equal_to_single")][0] == [1, 0, 0, 1, 0]


def test_a_property_its_scenario_lists_and_the_variant_did_not_report_is_not_judged(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text('properties = ["equal_to_single", "golden"]\n')
    silent = variant("C", 2, "even", "pass", [("no_hang", "pass", ""), ("equal_to_single", "pass", "")])
    silent["file"] = str(scenario)
    out = tmp_path / "page"
    page.write(report(silent), None, write_expected(tmp_path), out)
    cells = matrix_cells(parse(out / "index.html"))
    assert cells[("lib.classification.acc:C", "golden")][0] == [0, 0, 0, 1, 0]
    assert cells[("lib.classification.acc:C", "equal_to_single")][0] == [1, 0, 0, 0, 0]


def test_another_release_is_compared_with_the_baseline_entries(tmp_path):
    # ci/run_peers.sh --release: a release expected.toml does not list. Without the baseline the
    # page compares nothing and puts every finding at its top as new (ignite 0.4.13's page said
    # "149 new" where expected.py --baseline found none); with it, as expected.py --baseline.
    rep = report()
    rep["plugin"] = {"path": "/x/peers/torchmetrics/metrics.py", "version": "1.4.0", "torch_version": "2.15.0"}
    folder = write_expected(tmp_path, 'releases = ["1.9.0 on torch 2.15"]\n' + EXPECTED)
    out = tmp_path / "alone"
    page.write(rep, None, folder, out)
    assert "not compared with its expected findings" in (out / "index.html").read_text()
    assert sorted(k for k, _ in parse(out / "index.html").items) == ["new"] * 3
    out = tmp_path / "against"
    _, _, libs = page.write(rep, None, folder, out, baseline="1.9.0 on torch 2.15")
    html = (out / "index.html").read_text()
    assert "not compared" not in html and "compared with the entries of 1.9.0 on torch 2.15" in html
    # The hang is the baseline's entry 1; the crash and the fail are new; B's entry is not seen.
    assert sorted(k for k, _ in parse(out / "index.html").items) == ["gone", "new", "new"]
    assert [f["variant"] for f in libs["torchmetrics"].unexpected] == ["s/A:gloo-ws3-uneven-cpu", "s/A:gloo-ws3-even-cpu"]
