"""A jury of judges: the least-squares line of the labels on several judges' scores, cross-fitted, and the
cross-prediction-powered mean it gives (Zrnic & Candès, "Cross-prediction-powered inference", 2024).

The labelled cases are split into ``folds``; the line fitted without fold k predicts fold k's labelled cases, and the
unlabelled cases get the mean of the ``folds`` lines' predictions. The estimate is the mean of those predictions over
the unlabelled cases plus the labelled cases' mean residual, unbiased up to the folds' dependence whatever the line
is, and its variance ``Var(prediction over the unlabelled) / N + Var(residual) / n`` is ``ppi_py``'s
``crossppi_mean_ci``'s (equal to 1e-10 in the tests). Private floor.
"""

from __future__ import annotations

import numpy as np

#: Folds of the cross-fitted line (fewer when fewer labels: at least 4 labels per fold).
FOLDS = 5


def line(X, y):
    """Intercept and slopes of the least-squares line of ``y`` on the columns of ``X`` (min-norm where they are
    collinear)."""
    design = np.column_stack([np.ones(len(X)), np.asarray(X, dtype=float).reshape(len(X), -1)])
    return np.linalg.lstsq(design, np.asarray(y, dtype=float), rcond=None)[0]


def predict(beta, X, bounds=None) -> np.ndarray:
    X = np.asarray(X, dtype=float).reshape(len(X), len(beta) - 1)
    values = beta[0] + X @ beta[1:]
    return values if bounds is None else np.clip(values, *bounds)


def fold_codes(n: int, folds: int, seed: int = 0) -> np.ndarray:
    """Fold of each of n labelled cases (fixed pseudo-random, balanced), at most n // 4 folds, at least 2."""
    k = int(max(2, min(folds, n // 4)))
    codes = np.arange(n) % k
    return np.random.default_rng(seed + n).permutation(codes)


def cross_fitted(X_labelled, y, X_unlabelled, *, bounds=None, folds: int = FOLDS):
    """Out-of-fold predictions of the labelled cases (n,), every fold's predictions of the unlabelled cases (N, K),
    and the folds' codes."""
    X_labelled = np.asarray(X_labelled, dtype=float).reshape(len(y), -1)
    X_unlabelled = np.asarray(X_unlabelled, dtype=float).reshape(len(X_unlabelled), X_labelled.shape[1])
    codes = fold_codes(len(y), folds)
    out_of_fold = np.empty(len(y))
    per_fold = np.empty((len(X_unlabelled), codes.max() + 1))
    for k in range(codes.max() + 1):
        train = codes != k
        beta = line(X_labelled[train], y[train])
        out_of_fold[~train] = predict(beta, X_labelled[~train], bounds)
        per_fold[:, k] = predict(beta, X_unlabelled, bounds)
    return out_of_fold, per_fold, codes


def cross_ppi(y, out_of_fold, per_fold, *, finite_population: bool = False):
    """Estimate, standard error and degrees of freedom of the cross-prediction-powered mean.

    Population estimand: ``mean(unlabelled predictions) + mean(y - out-of-fold)``, standard error
    ``sqrt(Var(unlabelled predictions) / N + Var(residuals) / n)`` (population variances, as ``ppi_py``).
    ``finite_population``: the mean over exactly these cases, ``(sum y + sum(unlabelled predictions) + N mean
    residual) / (n + N)`` (the difference estimator), standard error ``sqrt((1 - n / (n + N)) S^2(residuals) / n)``
    (``ddof=1``; the predictions are known on every case). Degrees of freedom: n - 1.
    """
    y, out_of_fold = np.asarray(y, dtype=float), np.asarray(out_of_fold, dtype=float)
    imputed = np.asarray(per_fold, dtype=float).mean(axis=1)
    n, big_n = len(y), len(imputed)
    residual = y - out_of_fold
    if finite_population:
        total = n + big_n
        estimate = (y.sum() + imputed.sum() + big_n * residual.mean()) / total
        var = (1 - n / total) * residual.var(ddof=1) / n  # the difference estimator's, without replacement
        return float(estimate), float(np.sqrt(var)), float(n - 1)
    estimate = imputed.mean() + residual.mean() if big_n else y.mean()
    var = (imputed.var() / big_n if big_n else 0.0) + residual.var() / n
    return float(estimate), float(np.sqrt(var)), float(n - 1)
