"""Independent references for classes checked against themselves (peers' `Own` rows with a
``reference``): scikit-learn's functions, applied as the library's documentation defines the
metric, never the library's own functional API (which shares the code under test). Each is a
scenario's ``[reference] python`` callable: ``fn(y_true, y_pred, **kwargs)`` on NumPy arrays of
the whole data in global order. Retrieval, clustering, divergences and regression below (the
rows that name them: peers/torchmetrics/metrics.py, ``reference=REF + ...``).

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


# Clustering (two label vectors: ``y_pred`` the predicted clustering, ``y_true`` the true one, the
# `multiclass` generator's labels; or features with labels: ``y_pred`` the [N, D] points,
# ``y_true`` their cluster), scikit-learn's functions of the same names.
def _labels(y_true, y_pred):
    return np.asarray(y_true).astype(np.int64).ravel(), np.asarray(y_pred).astype(np.int64).ravel()


def _sklearn(name, convert):
    """scikit-learn's ``sklearn.metrics.<name>`` on the two arrays as ``convert`` gives them."""
    def score(y_true, y_pred, **kwargs):
        import sklearn.metrics as m

        return float(getattr(m, name)(*convert(y_true, y_pred), **kwargs))
    score.__name__ = name
    score.__doc__ = f"sklearn.metrics.{name}(y_true, y_pred)."
    return score


def _clustering(name):
    return _sklearn(name, _labels)


adjusted_mutual_info_score = _clustering("adjusted_mutual_info_score")
adjusted_rand_score = _clustering("adjusted_rand_score")
fowlkes_mallows_score = _clustering("fowlkes_mallows_score")
completeness_score = _clustering("completeness_score")
homogeneity_score = _clustering("homogeneity_score")
v_measure_score = _clustering("v_measure_score")
mutual_info_score = _clustering("mutual_info_score")
normalized_mutual_info_score = _clustering("normalized_mutual_info_score")
rand_score = _clustering("rand_score")


def cluster_accuracy(y_true, y_pred):
    """The accuracy of the best one-to-one map from predicted clusters to true labels: the
    confusion matrix (scikit-learn) and SciPy's linear_sum_assignment maximising the matched count."""
    from scipy.optimize import linear_sum_assignment
    from sklearn.metrics import confusion_matrix

    y_true, y_pred = _labels(y_true, y_pred)
    table = confusion_matrix(y_true, y_pred)
    rows, cols = linear_sum_assignment(table, maximize=True)
    return float(table[rows, cols].sum() / len(y_true))


def calinski_harabasz_score(y_true, y_pred):
    """sklearn.metrics.calinski_harabasz_score(points, labels)."""
    from sklearn.metrics import calinski_harabasz_score as score

    return float(score(np.asarray(y_pred, dtype=np.float64), np.asarray(y_true).astype(np.int64).ravel()))


def davies_bouldin_score(y_true, y_pred):
    """sklearn.metrics.davies_bouldin_score(points, labels)."""
    from sklearn.metrics import davies_bouldin_score as score

    return float(score(np.asarray(y_pred, dtype=np.float64), np.asarray(y_true).astype(np.int64).ravel()))


# Divergences between distributions (the `distributions` generator: ``y_pred`` p, ``y_true`` q,
# [N, D] probability rows), SciPy's, averaged over the rows (the libraries' reduction "mean").
def kl_divergence(y_true, y_pred):
    """Mean over rows of KL(p || q) = sum p log(p / q): scipy.stats.entropy(p, q) per row."""
    from scipy.stats import entropy

    p, q = np.asarray(y_pred, dtype=np.float64), np.asarray(y_true, dtype=np.float64)
    return float(np.mean(entropy(p, q, axis=1))) if len(p) else 0.0


def js_divergence(y_true, y_pred):
    """Mean over rows of JS(p, q) in nats: scipy.spatial.distance.jensenshannon (its square root) squared."""
    from scipy.spatial.distance import jensenshannon

    p, q = np.asarray(y_pred, dtype=np.float64), np.asarray(y_true, dtype=np.float64)
    return float(np.mean(jensenshannon(p, q, axis=1) ** 2)) if len(p) else 0.0


# Binary classification (``y_true`` the 0/1 labels, ``y_pred`` the scores, or the predicted labels
# for Cohen's kappa), scikit-learn's functions of the same names.
def _scores(y_true, y_pred):
    return np.asarray(y_true).astype(np.int64).ravel(), np.asarray(y_pred, dtype=np.float64).ravel()


average_precision_score = _sklearn("average_precision_score", _scores)
roc_auc_score = _sklearn("roc_auc_score", _scores)
cohen_kappa_score = _sklearn("cohen_kappa_score", _labels)


# Regression (``y_pred`` the predictions, ``y_true`` the targets, [N]).
def _regression(name):
    return _sklearn(name, lambda y_true, y_pred: (np.asarray(y_true, dtype=np.float64),
                                                  np.asarray(y_pred, dtype=np.float64)))


explained_variance_score = _regression("explained_variance_score")
mean_absolute_percentage_error = _regression("mean_absolute_percentage_error")
mean_squared_log_error = _regression("mean_squared_log_error")
mean_tweedie_deviance = _regression("mean_tweedie_deviance")


def spearman_correlation(y_true, y_pred):
    """scipy.stats.spearmanr(y_pred, y_true).statistic."""
    from scipy.stats import spearmanr

    return float(spearmanr(np.asarray(y_pred, dtype=np.float64), np.asarray(y_true, dtype=np.float64))[0])


# Nominal association between two label vectors (``y_pred`` the first series X, ``y_true`` the
# second Y), from their contingency table over the categories that occur (SciPy's chi-squared
# test: Yates' correction on a 2 x 2 table when bias_correction is asked, as the textbook test
# does), with Bergsma's (2013) bias correction of phi squared and of the table's dimensions.
def _table(y_true, y_pred):
    x, y = _labels(y_pred, y_true)
    _, xi = np.unique(x, return_inverse=True)
    _, yi = np.unique(y, return_inverse=True)
    table = np.zeros((xi.max() + 1, yi.max() + 1))
    np.add.at(table, (xi, yi), 1)
    return table


def _phi_squared(table, bias_correction):
    """(phi^2, rows, cols): corrected when bias_correction (Bergsma 2013), else as observed; None
    where the correction leaves no dimension to divide by."""
    from scipy.stats import chi2_contingency

    n, (r, k) = table.sum(), table.shape
    chi2 = chi2_contingency(table, correction=bias_correction)[0] if min(r, k) > 1 else 0.0
    phi2 = chi2 / n
    if not bias_correction:
        return phi2, r, k
    phi2 = max(0.0, phi2 - (k - 1) * (r - 1) / (n - 1))
    return phi2, r - (r - 1) ** 2 / (n - 1), k - (k - 1) ** 2 / (n - 1)


def cramers_v(y_true, y_pred, bias_correction=True):
    """Cramér's V: sqrt(phi^2 / min(rows - 1, cols - 1))."""
    phi2, r, k = _phi_squared(_table(y_true, y_pred), bias_correction)
    return float(min(1.0, np.sqrt(phi2 / min(r - 1, k - 1))))


def tschuprows_t(y_true, y_pred, bias_correction=True):
    """Tschuprow's T: sqrt(phi^2 / sqrt((rows - 1)(cols - 1)))."""
    phi2, r, k = _phi_squared(_table(y_true, y_pred), bias_correction)
    return float(min(1.0, np.sqrt(phi2 / np.sqrt((r - 1) * (k - 1)))))


def pearsons_contingency_coefficient(y_true, y_pred):
    """Pearson's C: sqrt(chi^2 / (n + chi^2)), scipy.stats.contingency.association(method="pearson")."""
    from scipy.stats.contingency import association

    return float(association(_table(y_true, y_pred).astype(np.int64), method="pearson"))


def theils_u(y_true, y_pred):
    """Theil's U(X|Y) = (H(X) - H(X|Y)) / H(X) = I(X; Y) / H(X), X the first series (y_pred): scikit-learn's
    mutual information over SciPy's entropy; 0 where X is constant."""
    from scipy.stats import entropy
    from sklearn.metrics import mutual_info_score

    y, x = _labels(y_true, y_pred)
    h_x = entropy(np.unique(x, return_counts=True)[1])
    return float(mutual_info_score(x, y) / h_x) if h_x > 0 else 0.0
