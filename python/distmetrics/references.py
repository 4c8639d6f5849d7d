"""Independent references for classes checked against themselves (peers' `Own` rows with a
``reference``): scikit-learn's functions, applied as the library's documentation defines the
metric, never the library's own functional API (which shares the code under test). Each is a
scenario's ``[reference] python`` callable: ``fn(y_true, y_pred, **kwargs)`` on NumPy arrays of
the whole data in global order.

Retrieval (the ``retrieval`` generator): ``y_true`` is [N, 2], column 0 the relevance and column
1 the query id, ``y_pred`` the [N] scores. The metric is the mean over queries of the
per-query score; a query with no relevant document scores 0 (torchmetrics' default
``empty_target_action="neg"``)."""

import numpy as np


def _per_query(y_true, y_pred, score):
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred, dtype=np.float64)
    relevance, queries = y_true[:, 0], y_true[:, 1]
    values = []
    for q in np.unique(queries):
        rows = queries == q
        rel = relevance[rows]
        values.append(0.0 if not (rel > 0).any() else float(score(rel, y_pred[rows])))
    return float(np.mean(values)) if values else 0.0


def retrieval_map(y_true, y_pred):
    """Mean average precision over queries: sklearn.metrics.average_precision_score per query."""
    from sklearn.metrics import average_precision_score

    return _per_query(y_true, y_pred, lambda rel, s: average_precision_score(rel > 0, s))


def retrieval_ndcg(y_true, y_pred):
    """Mean normalized DCG over queries (linear gain of the graded relevance, log2 discount, over
    all of a query's documents): sklearn.metrics.ndcg_score per query."""
    from sklearn.metrics import ndcg_score

    return _per_query(y_true, y_pred, lambda rel, s: ndcg_score(rel[None, :], s[None, :]))
