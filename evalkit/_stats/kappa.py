"""Cohen's kappa: the statistic of two label sequences, and its intervals for a judge against human PASS/FAIL labels."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalkit._stats.binomial import MIN_CLUSTERS, cp_fiducial_interval
from evalkit._stats.normal import cluster_variance


def cohen_kappa(a, b, *, weights: str | None = None) -> float:
    """Cohen's kappa between two label sequences of equal length (any hashable labels).

    ``kappa = (p_o - p_e) / (1 - p_e)`` with the chance agreement ``p_e`` from each side's label
    frequencies; 1.0 when both sides use one identical label (no disagreement is possible). With
    ``weights`` ("linear" or "quadratic"; numeric labels) disagreements count by their distance
    ``|i - j|`` or ``(i - j) ** 2`` between the positions of the two labels in the sorted label set:
    ``kappa = 1 - sum(w * observed) / sum(w * expected)``.

    Examples
    --------
    >>> round(cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"]), 4)
    0.5
    >>> round(cohen_kappa([1, 2, 3, 3], [1, 2, 2, 3], weights="quadratic"), 4)
    0.8
    """
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"`weights` must be one of [None, 'linear', 'quadratic']; got {weights!r}.")
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError("`a` and `b` must be non-empty sequences of the same length.")
    if weights is None:
        labels = pd.unique(np.concatenate([a, b]))
        po = float(np.mean(a == b))
        pe = float(sum(np.mean(a == lab) * np.mean(b == lab) for lab in labels))
        return 1.0 if pe == 1.0 else (po - pe) / (1 - pe)
    for name, values in (("a", a), ("b", b)):
        numeric = pd.to_numeric(pd.Series(values), errors="coerce")
        if (numeric.isna() & pd.notna(values)).any() or pd.isna(values).any():
            bad = values[numeric.isna().to_numpy()][0]
            raise TypeError(f"`{name}` must hold numbers for weights={weights!r} (weighted kappa needs ordered "
                            f"numeric labels); got {bad!r}.")
    labels, codes = np.unique(np.concatenate([a, b]).astype(float), return_inverse=True)
    k, n = len(labels), len(a)
    observed = np.zeros((k, k))
    np.add.at(observed, (codes[:n], codes[n:]), 1.0 / n)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    distance = np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]).astype(float)
    w = distance if weights == "linear" else distance**2
    denominator = float((w * expected).sum())
    return 1.0 if denominator == 0 else 1.0 - float((w * observed).sum()) / denominator


#: Quasi-random draws behind kappa's interval (a Sobol sequence: its ends move by about 0.002 between 2,047 and
#: 16,383 draws).
KAPPA_DRAWS = 2047


def kappa_from_rates(pi, se, sp):
    """Cohen's kappa of a judge with rates ``se`` (PASS on human PASS) and ``sp`` (FAIL on human FAIL) at a human
    pass rate ``pi``: 2 pi (1 - pi) (se + sp - 1) / (pi (1 - j) + (1 - pi) j), j the judge's pass rate."""
    j = pi * se + (1 - pi) * (1 - sp)
    denominator = pi * (1 - j) + (1 - pi) * j
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, 2 * pi * (1 - pi) * (se + sp - 1) / denominator, 0.0)


def kappa_interval(tp: int, fn: int, fp: int, tn: int, confidence_level: float) -> dict:
    """Kappa's Clopper-Pearson fiducial interval (see :func:`evalkit.calibrate.calibrate`), FAIL = positive: tp = both FAIL."""
    human_pass, human_fail = fp + tn, tp + fn
    row = {"ci_low": np.nan, "ci_high": np.nan, "interval": "cp-fiducial", "note": ""}
    if min(human_pass, human_fail) < 2:
        row["note"] = "fewer than 2 human PASS or FAIL labels: kappa's interval needs both"
        return row
    low, high, _, _ = cp_fiducial_interval(kappa_from_rates, [(human_pass, tp + fn + fp + tn), (tn, human_pass),
                                                                (tp, human_fail)], [0, +1, +1], confidence_level,
                                                n_draws=KAPPA_DRAWS)
    row["ci_low"], row["ci_high"] = max(-1.0, low), min(1.0, high)
    return row


def kappa_cluster_interval(h_fail, j_fail, groups, kappa: float, confidence_level: float) -> dict:
    """Cluster-robust delta-method interval for kappa: the sandwich of its influence values, t on G - 1 df."""
    n = len(h_fail)
    h, j, o = (~h_fail).astype(float), (~j_fail).astype(float), (h_fail == j_fail).astype(float)
    h1, j1, po = h.mean(), j.mean(), o.mean()
    pe = h1 * j1 + (1 - h1) * (1 - j1)
    row = {"ci_low": np.nan, "ci_high": np.nan, "interval": "cluster-t", "note": "", "n_clusters": len(np.unique(groups))}
    if pe >= 1:
        row["note"] = "every label and verdict the same: kappa has no interval"
        return row
    influence = ((o - po) + (po - 1) / (1 - pe) * ((2 * j1 - 1) * (h - h1) + (2 * h1 - 1) * (j - j1))) / (1 - pe)
    var, g = cluster_variance(influence / n, groups)
    row["n_clusters"] = g
    if g < MIN_CLUSTERS:
        row["note"] = f"{g} clusters < {MIN_CLUSTERS}: a cluster-robust interval is not backed here"
        return row
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence_level / 2, g - 1) * np.sqrt(var))
    row["ci_low"], row["ci_high"] = max(-1.0, kappa - half), min(1.0, kappa + half)
    return row
