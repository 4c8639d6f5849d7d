"""The Python halves of the `retrieval`, `text` and `detection` data generators' use by the peers: the
detection maker gives boxes inside the image, images with no true box and a prediction per found
box (Ignite's rows get them under its keys); the text
maker (python/distmetrics/text_data.py) is deterministic per sample index and gives empty
hypotheses and several references when asked; the scikit-learn references
(python/distmetrics/references.py) give the values worked out by hand below; the input
conversions of the text and retrieval rows give what the libraries take."""

import math
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "python"))

from distmetrics import detection_data, references, text_data  # noqa: E402
from distmetrics.peers import CONVERSIONS, ignite_detection_update, retrieval_update  # noqa: E402


def test_text_samples_depend_on_their_index_only():
    few = text_data.make(7, {"num_samples": 5})
    many = text_data.make(7, {"num_samples": 50})
    assert few["input"] == many["input"][:5] and few["target"] == many["target"][:5]
    assert text_data.make(8, {"num_samples": 5}) != few
    words = set(" ".join(many["input"] + many["target"]).split())
    assert words <= set(text_data.WORDS[:12])
    assert all(isinstance(r, str) and r for r in many["target"])


def test_text_gives_empty_hypotheses_and_several_references():
    none = text_data.make(1, {"num_samples": 40, "empty_rate": 1.0})
    assert none["input"] == [""] * 40
    multi = text_data.make(1, {"num_samples": 10, "references": 3})
    assert all(isinstance(r, list) and len(r) == 3 and all(isinstance(x, str) and x for x in r) for r in multi["target"])
    exact = text_data.make(1, {"num_samples": 10, "error_rate": 0.0, "empty_rate": 0.0})
    assert exact["input"] == exact["target"]


def test_retrieval_references_are_the_values_worked_out_by_hand():
    # Query 0: relevance [1, 0, 1] ranked by score [0.9, 0.8, 0.1]: precision 1/1 at the first
    # relevant, 2/3 at the second, AP = (1 + 2/3) / 2. Query 1 has no relevant document: 0.
    y_true = np.array([[1, 0], [0, 0], [1, 0], [0, 1], [0, 1]])
    y_pred = np.array([0.9, 0.8, 0.1, 0.3, 0.7])
    assert references.retrieval_map(y_true, y_pred) == pytest.approx(((1 + 2 / 3) / 2 + 0) / 2)
    # Graded relevance [2, 0, 1] ranked by score [0.1, 0.9, 0.5]: DCG = 0 + 1/log2(3) + 2/log2(4),
    # ideal = 2 + 1/log2(3).
    y_true = np.array([[2, 4], [0, 4], [1, 4]])
    y_pred = np.array([0.1, 0.9, 0.5])
    dcg, ideal = 1 / math.log2(3) + 2 / 2, 2 + 1 / math.log2(3)
    assert references.retrieval_ndcg(y_true, y_pred) == pytest.approx(dcg / ideal)


def test_divergence_references_are_the_values_worked_out_by_hand():
    p, q = np.array([[0.5, 0.5]]), np.array([[0.25, 0.75]])  # y_pred is p, y_true is q
    kl = 0.5 * math.log(0.5 / 0.25) + 0.5 * math.log(0.5 / 0.75)
    assert references.kl_divergence(q, p) == pytest.approx(kl)
    m = (p + q) / 2
    js = 0.5 * sum(p[0] * np.log(p[0] / m[0])) + 0.5 * sum(q[0] * np.log(q[0] / m[0]))
    assert references.js_divergence(q, p) == pytest.approx(js)
    assert references.js_divergence(q, p) == pytest.approx(0.0338226, abs=1e-6)
    # Two rows: the mean of the rows' divergences.
    assert references.kl_divergence(np.vstack([q, p]), np.vstack([p, p])) == pytest.approx(kl / 2)


def test_clustering_references_ignore_the_labels_names():
    truth, renamed = np.array([0, 0, 1, 1, 2, 2]), np.array([2, 2, 0, 0, 1, 1])
    for name in ("adjusted_rand_score", "adjusted_mutual_info_score", "fowlkes_mallows_score", "completeness_score",
                 "homogeneity_score", "v_measure_score", "normalized_mutual_info_score", "rand_score"):
        assert getattr(references, name)(truth, renamed) == pytest.approx(1.0), name
    # Rand index by hand: of the 15 pairs, pairs together in one and apart in the other disagree.
    pred = np.array([0, 0, 0, 1, 1, 1])
    together = lambda x: {(i, j) for i in range(6) for j in range(i + 1, 6) if x[i] == x[j]}  # noqa: E731
    agree = 15 - len(together(truth) ^ together(pred))
    assert references.rand_score(truth, pred) == pytest.approx(agree / 15)
    # Mutual information of a labelling with itself is its entropy (nats): three equal clusters, ln 3.
    assert references.mutual_info_score(truth, truth) == pytest.approx(math.log(3))


def test_binary_references_are_the_values_worked_out_by_hand():
    y = [0, 1, 1, 0]
    scores = [0.1, 0.8, 0.4, 0.6]
    # Pairs (positive, negative) ranked right: (0.8 > 0.1), (0.8 > 0.6), (0.4 > 0.1); wrong: (0.4 < 0.6).
    assert references.roc_auc_score(y, scores) == pytest.approx(3 / 4)
    # Ranked 0.8 (+), 0.6 (-), 0.4 (+), 0.1 (-): precision 1 at recall 1/2, 2/3 at recall 1.
    assert references.average_precision_score(y, scores) == pytest.approx(0.5 * 1 + 0.5 * 2 / 3)
    # Agreement 3 of 4 (p_o 3/4); chance p_e = 1/2 * 1/4 + 1/2 * 3/4 = 1/2: (3/4 - 1/2) / (1 - 1/2).
    assert references.cohen_kappa_score(y, [0, 1, 0, 0]) == pytest.approx(0.5)


def test_regression_references_are_the_values_worked_out_by_hand():
    y, yhat = np.array([1.0, 2.0, 4.0]), np.array([2.0, 2.0, 3.0])
    assert references.mean_absolute_percentage_error(y, yhat) == pytest.approx((1 / 1 + 0 + 1 / 4) / 3)
    assert references.mean_squared_log_error(y, yhat) == pytest.approx(
        ((math.log(2) - math.log(3)) ** 2 + 0 + (math.log(5) - math.log(4)) ** 2) / 3)
    assert references.mean_tweedie_deviance(y, y, power=1.5) == pytest.approx(0.0, abs=1e-12)
    # Explained variance: 1 - var(y - yhat) / var(y).
    assert references.explained_variance_score(y, yhat) == pytest.approx(1 - np.var(y - yhat) / np.var(y))
    assert references.spearman_correlation(y, np.array([10.0, 20.0, 30.0])) == pytest.approx(1.0)


def test_nominal_references_are_the_values_worked_out_by_hand():
    # Perfect association, 3 categories twice each (n 6): chi^2 = n (min(r, k) - 1) = 12, phi^2 2.
    x = np.array([0, 0, 1, 1, 2, 2])
    y = np.array([5, 5, 7, 7, 9, 9])
    assert references.cramers_v(y, x, bias_correction=False) == pytest.approx(1.0)
    # Bias-corrected: phi^2 2 - 4/5 = 1.2, rows and cols 3 - 4/5 = 2.2: sqrt(1.2 / 1.2).
    assert references.cramers_v(y, x) == pytest.approx(1.0)
    assert references.tschuprows_t(y, x) == pytest.approx(1.0)
    assert references.pearsons_contingency_coefficient(y, x) == pytest.approx(math.sqrt(12 / 18))
    assert references.theils_u(y, x) == pytest.approx(1.0)
    # Independent series: no association.
    a, b = np.array([0, 0, 1, 1]), np.array([0, 1, 0, 1])
    assert references.cramers_v(b, a, bias_correction=False) == pytest.approx(0.0)
    assert references.theils_u(b, a) == pytest.approx(0.0, abs=1e-12)
    # A 2 x 3 table by hand, no correction: rows [[2, 1, 0], [0, 1, 2]], n 6, expected 1 | 1 | 1 per cell:
    # chi^2 = (1 + 0 + 1) * 2 = 4, phi^2 2/3, V = sqrt((2/3) / 1).
    x2, y2 = np.array([0, 0, 0, 1, 1, 1]), np.array([0, 0, 1, 1, 2, 2])
    assert references.cramers_v(y2, x2, bias_correction=False) == pytest.approx(math.sqrt(2 / 3))
    # Theil's U(X|Y), X the first series (y_pred): H(X) ln 2; given Y, X is certain but for Y = 1.
    h_x = math.log(2)  # X: 3 and 3
    h_x_given_y = (2 / 6) * math.log(2)  # only Y = 1 (one of each X) leaves X uncertain
    assert references.theils_u(y2, x2) == pytest.approx((h_x - h_x_given_y) / h_x)


def test_text_conversions_give_what_the_libraries_take():
    hyp, refs = ["a b", ""], ["a c", ["b", "a b"]]
    assert CONVERSIONS["text_references"]({})(hyp, refs, None) == (hyp, [["a c"], ["b", "a b"]], None)
    assert CONVERSIONS["text_tokens"]({})(hyp, refs, None) == ([["a", "b"], []], [[["a", "c"]], [["b"], ["a", "b"]]], None)
    preds, targets, _ = CONVERSIONS["squad"]({})(hyp, refs, None)
    assert preds == [{"prediction_text": "a b", "id": "0"}, {"prediction_text": "", "id": "1"}]
    assert targets[1] == {"answers": {"text": ["b", "a b"], "answer_start": [0, 0]}, "id": "1"}


def test_retrieval_update_splits_the_target_columns():
    import torch

    seen = {}

    class Metric:
        def update(self, preds, target, indexes=None):
            seen.update(preds=preds, target=target, indexes=indexes)

    retrieval_update(Metric(), torch.tensor([0.5, 0.2]), torch.tensor([[1, 3], [0, 4]]), None)
    assert seen["target"].tolist() == [1, 0] and seen["indexes"].tolist() == [3, 4]
    assert seen["preds"].tolist() == pytest.approx([0.5, 0.2])


def test_detection_samples_depend_on_their_index_only_and_hold_empty_images():
    import torch

    few = detection_data.make(7, {"num_samples": 5})
    many = detection_data.make(7, {"num_samples": 60})
    for a, b in zip(few["input"] + few["target"], many["input"][:5] + many["target"][:5]):
        assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert any(len(t["labels"]) == 0 for t in many["target"])
    assert any(len(t["labels"]) > 0 for t in many["target"])
    for p, t in zip(many["input"], many["target"]):
        assert p["boxes"].shape == (len(p["scores"]), 4) and p["boxes"].dtype == torch.float32
        assert p["labels"].dtype == torch.int64 and t["labels"].dtype == torch.int64
        assert t["boxes"].shape == (len(t["labels"]), 4) and len(t["labels"]) <= 3
        for boxes in (p["boxes"], t["boxes"]):
            assert bool((boxes[:, 2] > boxes[:, 0]).all()) and bool((boxes[:, 3] > boxes[:, 1]).all())
        assert bool(((p["labels"] >= 0) & (p["labels"] < 3)).all())
    none = detection_data.make(1, {"num_samples": 20, "empty_rate": 1.0, "false_positives": 0})
    assert all(len(t["labels"]) == 0 and len(p["labels"]) == 0 for p, t in zip(none["input"], none["target"]))
    # Every true box found, unjittered, unrelabelled, no spurious box: predictions equal targets.
    exact = detection_data.make(1, {"num_samples": 20, "recall": 1.0, "jitter": 0.0, "label_noise": 0.0,
                                    "false_positives": 0})
    for p, t in zip(exact["input"], exact["target"]):
        assert torch.allclose(p["boxes"], t["boxes"]) and torch.equal(p["labels"], t["labels"])


def test_ignite_detection_update_renames_the_keys():
    import torch

    seen = []

    class Metric:
        def update(self, output):
            seen.append(output)

    data = detection_data.make(3, {"num_samples": 2})
    ignite_detection_update(Metric(), data["input"], data["target"], None)
    y_pred, y = seen[0]
    assert [set(d) for d in y_pred] == [{"bbox", "scores", "labels"}] * 2 and [set(d) for d in y] == [{"bbox", "labels"}] * 2
    assert torch.equal(y_pred[1]["bbox"], data["input"][1]["boxes"]) and torch.equal(y[0]["bbox"], data["target"][0]["boxes"])
