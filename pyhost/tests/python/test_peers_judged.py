"""peers/judged.py: a class counts as checked only from what its variants judged in the run (a
pass or a fail, at world size 2 and at 3 or more), never from its row; a property a variant never
reached, or skipped, is never counted as judged; "not applicable" keeps its reason. The report is
written by hand in the JSON report's shape; the census statuses are a stand-in."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
spec = importlib.util.spec_from_file_location("judged", ROOT / "peers" / "judged.py")
judged = importlib.util.module_from_spec(spec)
spec.loader.exec_module(judged)

SOURCE = "python:/x/peers/torchmetrics/metrics.py"


def variant(cls, ws, shard, outcome, props, reason=""):
    return {"id": f"s/{cls}:gloo-ws{ws}-{shard}-cpu", "class": f"lib.mod:{cls}", "source": SOURCE, "world_size": ws,
            "shard": shard, "outcome": outcome, "reason": reason, "seconds": 0.5, "file": "/nonexistent.toml",
            "properties": [dict(zip(("name", "outcome", "message", "why"), p)) for p in props]}


def records(*variants):
    return judged.judge({"variants": list(variants)}, ["torchmetrics"])["torchmetrics"]


def test_a_class_judged_at_two_and_three_ranks_is_checked():
    props = [("equal_to_single", "pass", ""), ("idempotent", "fail", "idempotent failed")]
    r = records(variant("A", 2, "even", "fail", props), variant("A", 3, "uneven", "fail", props))["lib.mod:A"]
    assert r.status() == "checked" and r.missing() == []
    assert sorted(r.judged) == ["equal_to_single", "idempotent", "no_hang"]  # a failure is judged too


def test_a_variant_that_hung_judges_nothing_past_it():
    r = records(variant("A", 2, "even", "pass", [("equal_to_single", "pass", "")]),
                variant("A", 3, "empty_rank", "hang", [], reason="rank 2 to blame: never entered all_gather"))["lib.mod:A"]
    assert r.status() == "partly checked"
    assert r.missing() == [("equal_to_single", "ws3+: no variant reached it (hang at gloo-ws3-empty_rank-cpu: "
                                               "rank 2 to blame: never entered all_gather)")]
    assert r.judged["no_hang"]["ws3+"] == [("empty_rank", "fail")]  # the hang is no_hang's finding


def test_only_one_world_size_is_partly_checked_with_the_reason():
    r = records(variant("A", 3, "uneven", "pass", [("equal_to_single", "pass", "")]))["lib.mod:A"]
    assert r.missing() == [("equal_to_single, no_hang", "no variant at world size 2")]


def test_a_skip_is_never_judged_not_applicable_keeps_its_reason():
    # A skip says why in the report ("why"): judged.py reads that, not the message.
    na = ("accepts_empty_batch", "skip", "accepts_empty_batch: not applicable: X declares that it rejects a batch",
          "not_applicable")
    unreached = ("state_roundtrip", "skip", "state_roundtrip: not judged: no rank computed after restoring its state",
                 "not_judged")
    r = records(variant("A", 2, "even", "pass", [("equal_to_single", "pass", ""), na, unreached]),
                variant("A", 3, "uneven", "pass", [("equal_to_single", "pass", ""), na, unreached]))["lib.mod:A"]
    assert "accepts_empty_batch" not in r.judged and "state_roundtrip" not in r.judged
    assert r.not_applicable == {"accepts_empty_batch": na[2]}
    assert r.status() == "partly checked"  # state_roundtrip applies and was never judged
    assert r.missing() == [("state_roundtrip", "ws2: no rank computed after restoring its state"),
                           ("state_roundtrip", "ws3+: no rank computed after restoring its state")]


def test_rows_count_a_row_that_ran_no_variant_as_not_run():
    statuses = {"lib.mod:A": ("has a row", "`torchmetrics.A` (itself)"), "lib.mod:B": ("has a row", "Precision"),
                "lib.mod:C": ("not runnable here", "needs a hub download")}
    props = [("equal_to_single", "pass", "")]
    table = judged.rows("torchmetrics", records(variant("A", 2, "even", "pass", props),
                                                variant("A", 3, "uneven", "pass", props)), statuses)
    assert [(q, s) for q, s, _, _ in table] == [("lib.mod:A", "checked"), ("lib.mod:B", "not run"),
                                                ("lib.mod:C", "not runnable here")]
    line = judged.summary_line("torchmetrics", "1.0", table)
    assert "3 public classes, judged from this run: 1 checked (33%" in line and "1 not run" in line
    md = "\n".join(judged.markdown("torchmetrics", "1.0", table))
    assert "| `lib.mod:B` | not run | — | — | — | its row (Precision) ran in no variant of this run | — |" in md


def test_collections_are_counted_apart_from_the_public_classes():
    statuses = {"lib.mod:A": ("has a row", "`torchmetrics.A` (itself)")}
    props = [("equal_to_single", "pass", "")]
    recs = records(variant("A", 2, "even", "pass", props), variant("A", 3, "uneven", "pass", props),
                   variant("Coll", 2, "even", "pass", props), variant("Coll", 3, "uneven", "pass", props))
    collections = ["lib.mod:Coll", "lib.mod:Other"]
    table = judged.rows("torchmetrics", recs, statuses, collections)
    apart = judged.collection_rows(recs, collections)
    assert [(q, s) for q, s, _, _ in table] == [("lib.mod:A", "checked")]
    assert [(q, s) for q, s, _, _ in apart] == [("lib.mod:Coll", "checked"), ("lib.mod:Other", "not mapped")]
    line = judged.summary_line("torchmetrics", "1.0", table, apart)
    assert "1 public classes, judged from this run: 1 checked (100%" in line
    assert line.endswith("; collections: 1 of 2 checked (Coll, Other)")
    md = "\n".join(judged.markdown("torchmetrics", "1.0", table, apart))
    assert "not in the census" not in md and "| `lib.mod:Coll` | checked |" in md


def test_name_classes_names_them_in_the_same_interpreter_and_writes_the_report_back(tmp_path, monkeypatch, capsys):
    """--name-classes (what ci/run_peers.sh passes on torch 2): the classes are named first, by
    peers/classes.py's annotate in this interpreter, and the report is written back with them; a
    report without classes and without the option is bad input (exit 2)."""
    props = [("equal_to_single", "pass", "")]
    unnamed = [variant("A", 2, "even", "pass", props), variant("A", 3, "uneven", "pass", props)]
    for v in unnamed:
        del v["class"]
    report = tmp_path / "peers.json"
    report.write_text(json.dumps({"variants": unnamed}))
    assert judged.main(["--report", str(report), "--library", "torchmetrics"]) == 2

    class Census:
        version, collections = "1.0", []

    class Classes:  # peers/classes.py's interface
        @staticmethod
        def annotate(rep, binary, modules=None):
            assert binary == "/bin/distmetrics-stand-in"
            assert modules == {"torchmetrics": "the loaded mapping"}  # loaded once, shared with the census
            for v in rep["variants"]:
                v["class"] = "lib.mod:A"
            return len(rep["variants"])

        @staticmethod
        def library_of(v, binary):
            return "torchmetrics"

    class Coverage:  # peers/coverage.py's interface
        @staticmethod
        def load(library):
            loads.append(library)
            return "the loaded mapping"

        @staticmethod
        def status(library, module):
            assert module == "the loaded mapping"
            return Census(), {"lib.mod:A": ("has a row", "`torchmetrics.A` (itself)")}

    loads = []
    monkeypatch.setattr(judged, "_peers_module", lambda name: {"classes": Classes, "coverage": Coverage}[name])
    out_json = tmp_path / "judged.json"
    assert judged.main(["--report", str(report), "--library", "torchmetrics", "--name-classes",
                        "/bin/distmetrics-stand-in", "--json", str(out_json)]) == 0
    assert [v["class"] for v in json.loads(report.read_text())["variants"]] == ["lib.mod:A", "lib.mod:A"]
    classes = json.loads(out_json.read_text())["torchmetrics"]["classes"]
    assert {q: c["status"] for q, c in classes.items()} == {"lib.mod:A": "checked"}
    captured = capsys.readouterr()
    assert "2 of 2 variants of the mapped libraries name their class" in captured.err
    assert "1 checked (100%" in captured.out
    assert loads == ["torchmetrics"]
