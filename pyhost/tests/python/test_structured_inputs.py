"""Inputs of any structure for Python metrics, through the real CLI and its rank workers: a
Python generator returns lists of strings or lists of dicts of boxes; each element is a sample,
sharded and batched like rows of tensors, passed as lists to the metric's update() and, whole,
to the scenario's [reference]. compute() returns nested dicts and lists, compared leaf by leaf;
a difference names its path, a leaf that cannot be compared says so. The expected values come
from scikit-learn and from plain Python here, apart from the metrics and the references.
DISTMETRICS_BIN is the CLI under test (ctest sets it)."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sklearn.metrics import accuracy_score

ROOT = Path(__file__).resolve().parents[3]
SOURCES = Path(__file__).resolve().parent / "sources"
EXAMPLE = ROOT / "examples" / "python" / "structured"
sys.path.insert(0, str(SOURCES))

import structured_data  # noqa: E402 - the generators the scenarios name, called here for the expected values

SENTENCES = """\
    description = "SentenceErrors on lists of strings"
    deadline = 30
    [metric]
    name = "SentenceErrors"
    [data]
    python = "structured_data:sentences"
    seed = 7
    batch_size = 4
    params = {{ n = 30 }}
    [reference]
    python = "structured_data:sentence_errors_reference"
    [variants]
    world_sizes = [1, 2]
    backends = ["gloo"]
    shards = {shards}
    """

DETECTIONS = """\
    description = "DetectionPrecision on lists of dicts of boxes"
    deadline = 30
    [metric]
    name = "DetectionPrecision"
    [data]
    python = "structured_data:detections"
    seed = 3
    batch_size = 3
    params = {{ n = 24 }}
    [reference]
    python = "structured_data:detection_precision_reference"
    [variants]
    world_sizes = [1, 2]
    backends = ["gloo"]
    shards = {shards}
    [tolerance]
    rtol = 1e-12
    """


def run_cli(tmp_path, *args, env=None, timeout=240):
    report = tmp_path / "report.json"
    wants_report = args[0] in ("run", "conform")
    cmd = [os.environ["DISTMETRICS_BIN"], *map(str, args), *(["--json", str(report)] if wants_report else [])]
    env = {**os.environ, "PYTHONPATH": str(SOURCES), **(env or {})}
    run = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=timeout)
    data = json.loads(report.read_text()) if wants_report and report.exists() else None
    return run, data


def scenario(path, body):
    path.write_text(textwrap.dedent(body))
    return path


def prop(variant, name):
    return next(p for p in variant["properties"] if p["name"] == name)


def word_errors(hyp, ref):
    """Word edit distance by the textbook table (the metric and the reference each have their own)."""
    d = [[i + j if i == 0 or j == 0 else 0 for j in range(len(ref) + 1)] for i in range(len(hyp) + 1)]
    for i in range(1, len(hyp) + 1):
        for j in range(1, len(ref) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (hyp[i - 1] != ref[j - 1]))
    return d[-1][-1]


def test_a_text_metric_on_lists_of_strings_passes_and_gives_the_independent_values(tmp_path):
    path = scenario(tmp_path / "sentences.toml", SENTENCES.format(shards='["even", "uneven", "empty_rank", "scattered"]'))
    run, data = run_cli(tmp_path, "conform", "--python", SOURCES / "sentence_errors.py", "--allow-python", path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert data["summary"]["pass"] == data["summary"]["total"] == 7  # ws1: even, uneven, scattered; ws2: + empty_rank
    made = structured_data.sentences(7, {"n": 30})
    hyps, refs = made["input"], made["target"]
    errors = sum(word_errors(h.split(), r.split()) for h, r in zip(hyps, refs))
    words = sum(len(r.split()) for r in refs)
    for v in data["variants"]:
        assert prop(v, "agrees_with_reference")["outcome"] == "pass", v["id"]
        assert prop(v, "equal_to_single")["outcome"] == "pass", v["id"]
        single = prop(v, "agrees_with_reference")["single"]
        assert single["exact_match"] == pytest.approx(accuracy_score(refs, hyps), rel=1e-12)
        assert single["word_error_rate"] == pytest.approx(errors / words, rel=1e-12)
        assert single["counts"] == {"sentences": 30.0, "exact": float(sum(h == r for h, r in zip(hyps, refs))),
                                    "word_errors": float(errors), "words": float(words)}
    shards = {v["id"]: v["shards"] for v in data["variants"]}
    assert any(s and len(s) == 2 for s in shards.values())


def test_a_text_metric_that_does_not_sync_its_list_state_fails_naming_the_leaf(tmp_path):
    path = scenario(tmp_path / "sentences.toml", SENTENCES.format(shards='["even"]'))
    run, data = run_cli(tmp_path, "conform", "--python", SOURCES / "sentence_errors.py", "--allow-python", path,
                        env={"DISTMETRICS_TEST_UNSYNCED_LIST": "1"})
    assert run.returncode == 1, run.stdout + run.stderr
    ws1, ws2 = sorted(data["variants"], key=lambda v: v["world_size"])
    assert ws1["outcome"] == "pass"  # one process: nothing to sync
    assert ws2["outcome"] == "fail"
    equal = prop(ws2, "equal_to_single")
    assert equal["outcome"] == "fail"
    # The first differing leaf, by its path in the nested dict: each rank counted its own sentences.
    assert "counts.exact: " in equal["message"], equal["message"]
    assert prop(ws2, "agrees_with_reference")["outcome"] == "fail"
    # The first compute saw half of each rank's sentences: together, what the single process saw.
    sentences = [rank["counts"]["sentences"] for rank in equal["ranks"]]
    assert sum(sentences) == equal["single"]["counts"]["sentences"] == 16 and min(sentences) > 0
    print(equal["message"])


def test_a_leaf_no_comparison_understands_is_a_clean_verdict_naming_its_path(tmp_path):
    path = scenario(tmp_path / "sentences.toml", SENTENCES.format(shards='["even"]').replace("[1, 2]", "[2]"))
    run, data = run_cli(tmp_path, "conform", "--python", SOURCES / "sentence_errors.py", "--allow-python", path,
                        env={"DISTMETRICS_TEST_STRING_LEAF": "1"})
    assert run.returncode == 1, run.stdout + run.stderr
    (v,) = data["variants"]
    equal = prop(v, "equal_to_single")
    assert equal["outcome"] == "fail"
    assert "cannot compare a str at counts.summary" in equal["message"], equal["message"]


def test_a_detection_metric_on_lists_of_dicts_of_boxes_passes_and_agrees_with_numpy(tmp_path):
    path = scenario(tmp_path / "detections.toml", DETECTIONS.format(shards='["even", "uneven", "round_robin"]'))
    run, data = run_cli(tmp_path, "conform", "--python", SOURCES / "detection_precision.py", "--allow-python", path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert data["summary"]["pass"] == data["summary"]["total"] == 6
    made = structured_data.detections(3, {"n": 24})
    expected = structured_data.detection_precision_reference(made["target"], made["input"])
    assert sum(c["tp"] for c in expected["per_class"]) > 5 and sum(c["fp"] for c in expected["per_class"]) > 5
    for v in data["variants"]:
        assert prop(v, "agrees_with_reference")["outcome"] == "pass", v["id"]
        single = prop(v, "agrees_with_reference")["single"]
        assert single["total_images"] == 24
        assert [(c["tp"], c["fp"]) for c in single["per_class"]] == [(c["tp"], c["fp"]) for c in expected["per_class"]]
        assert single["precision"] == pytest.approx(expected["precision"], rel=1e-12)


def test_a_detection_metric_that_does_not_sync_its_list_state_fails_naming_the_class(tmp_path):
    path = scenario(tmp_path / "detections.toml", DETECTIONS.format(shards='["even"]'))
    run, data = run_cli(tmp_path, "conform", "--python", SOURCES / "detection_precision.py", "--allow-python", path,
                        env={"DISTMETRICS_TEST_UNSYNCED_LIST": "1"})
    assert run.returncode == 1, run.stdout + run.stderr
    ws1, ws2 = sorted(data["variants"], key=lambda v: v["world_size"])
    assert ws1["outcome"] == "pass"
    equal = prop(ws2, "equal_to_single")
    assert equal["outcome"] == "fail"
    assert "per_class[0].fp: " in equal["message"] or "per_class[0].precision: " in equal["message"], equal["message"]


def validate(tmp_path, body):
    path = scenario(tmp_path / "s.toml", body)
    run = run_cli(tmp_path, "validate", "--allow-python", path)[0]
    return run.returncode, run.stdout + run.stderr


def test_structured_data_for_a_cpp_metric_and_bad_structures_are_validate_errors(tmp_path):
    cpp = validate(tmp_path, """\
        description = "a C++ metric cannot take strings"
        [metric]
        name = "MeanAbsoluteError"
        [data]
        python = "structured_data:sentences"
        batch_size = 4
        """)
    code, out = cpp
    assert code == 2, out
    assert ("s.toml:5: data.python: Python generator 'structured_data:sentences' gives structured samples (sequences "
            "of objects, not tensors), which only a Python metric takes, and metric 'MeanAbsoluteError' is a C++ "
            "metric that takes tensors") in out, out
    for generator, message in [("with_weights", "structured data take no separate weights"),
                               ("mismatched", "the generator returned 30 input samples and 28 target samples")]:
        bad = validate(tmp_path, f"""\
            description = "bad structured data"
            [metric]
            name = "MeanAbsoluteError"
            [data]
            python = "structured_data:{generator}"
            batch_size = 4
            """)
        code, out = bad
        assert code == 2, out
        assert "s.toml:5: data.python: " in out and message in out, out


def test_shard_and_dtype_axes_that_need_tensors_are_refused_for_structured_data(tmp_path):
    body = SENTENCES.format(shards='["even", "skewed"]') + 'dtypes = ["float16"]\n'
    path = scenario(tmp_path / "sentences.toml", body)
    run, _ = run_cli(tmp_path, "conform", "--python", SOURCES / "sentence_errors.py", "--allow-python", path)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "variants.shards: shard 'skewed' orders samples by their label" in run.stderr, run.stderr
    assert "variants.dtypes: input dtypes cast the tensors of the data" in run.stderr, run.stderr


def test_the_structured_example_passes(tmp_path):
    run, data = run_cli(tmp_path, "conform", "--python", EXAMPLE / "exact_match.py", "--allow-python",
                        EXAMPLE / "exact_match.toml", env={"PYTHONPATH": str(EXAMPLE)})
    assert run.returncode == 0, run.stdout + run.stderr
    assert data["summary"]["pass"] == data["summary"]["total"] == 5
    for v in data["variants"]:
        assert prop(v, "agrees_with_reference")["outcome"] == "pass", v["id"]


def test_structured_samples_from_a_file_need_data_structured_and_allow_python(tmp_path):
    import torch

    made = structured_data.detections(3, {"n": 24})
    torch.save({"input": made["input"], "target": made["target"]}, tmp_path / "detections.pt")
    body = DETECTIONS.format(shards='["even", "uneven"]').replace(
        'python = "structured_data:detections"', 'file = "detections.pt"\n    structured = true').replace(
        "    params = { n = 24 }\n", "")
    path = scenario(tmp_path / "detections.toml", body)
    run, data = run_cli(tmp_path, "conform", "--python", SOURCES / "detection_precision.py", "--allow-python", path)
    assert run.returncode == 0, run.stdout + run.stderr
    assert data["summary"]["pass"] == data["summary"]["total"] == 4
    expected = structured_data.detection_precision_reference(made["target"], made["input"])
    for v in data["variants"]:
        single = prop(v, "agrees_with_reference")["single"]
        assert [(c["tp"], c["fp"]) for c in single["per_class"]] == [(c["tp"], c["fp"]) for c in expected["per_class"]]

    # torch.load can run code: without --allow-python the file is not read.
    run, _ = run_cli(tmp_path, "conform", "--python", SOURCES / "detection_precision.py", path)
    assert run.returncode == 2, run.stdout + run.stderr
    assert "detections.toml:6: data.file: a scenario file cannot make distmetrics run code" in run.stderr, run.stderr

    torch.save({"input": made["input"], "weight": torch.ones(24)}, tmp_path / "weighted.pt")
    run, _ = run_cli(tmp_path, "conform", "--python", SOURCES / "detection_precision.py", "--allow-python",
                     scenario(tmp_path / "weighted.toml", body.replace("detections.pt", "weighted.pt")))
    assert run.returncode == 2, run.stdout + run.stderr
    assert "data.file: " in run.stderr and "has 'weight', which is not a key of structured data" in run.stderr, run.stderr

    code, out = validate(tmp_path, """\
        description = "structured says how to read a file"
        [metric]
        name = "MeanAbsoluteError"
        [data]
        python = "structured_data:sentences"
        structured = true
        batch_size = 4
        """)
    assert code == 2 and "s.toml:6:14: data.structured: 'data.structured' says how to read data.file" in out, out
