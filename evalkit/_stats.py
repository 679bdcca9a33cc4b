"""Interval helpers shared by every lane (judge, calibration, retrieval, inference).

Private floor: imports nothing from evalkit above ``_validation``.
"""

from __future__ import annotations

import numpy as np
from scipy import stats


def z_value(confidence_level: float) -> float:
    """The two-sided standard-normal quantile for ``confidence_level`` (1.96 at 0.95)."""
    return float(stats.norm.ppf(0.5 + confidence_level / 2))


def wilson_interval(k: int, n: int, confidence_level: float) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials (NaN, NaN when ``n`` is 0)."""
    if n == 0:
        return np.nan, np.nan
    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence_level, method="wilson")
    return float(ci.low), float(ci.high)


def normal_interval(estimate: float, se: float, confidence_level: float) -> tuple[float, float]:
    """``estimate -/+ z * se``: the Wald interval."""
    half = z_value(confidence_level) * se
    return float(estimate - half), float(estimate + half)


ADJUSTMENTS = ("holm", "bonferroni", "bh", "by")


def adjust_p_values(p_values, method: str) -> np.ndarray:
    """Multiplicity-adjusted p-values for a family of tests (NaN entries stay NaN and do not count).

    ``"bonferroni"`` and ``"holm"`` control the family-wise error rate; ``"bh"`` (Benjamini-Hochberg) and
    ``"by"`` (Benjamini-Yekutieli, valid under any dependence) control the false discovery rate. The values
    equal statsmodels' ``multipletests(p, method=...)`` (``fdr_bh`` and ``fdr_by`` for the last two); they
    are written out here because statsmodels is an optional dependency and these are a sort and a
    cumulative extreme each.
    """
    if method not in ADJUSTMENTS:
        raise ValueError(f"`adjust` must be one of {list(ADJUSTMENTS)}; got {method!r}.")
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    values = p[ok]
    m = values.size
    if m == 0:
        return out
    order = np.argsort(values, kind="mergesort")
    ranked = values[order]
    rank = np.arange(1, m + 1)
    if method == "bonferroni":
        adjusted = ranked * m
    elif method == "holm":
        adjusted = np.maximum.accumulate((m - rank + 1) * ranked)
    else:
        factor = 1.0 if method == "bh" else float(np.sum(1.0 / rank))
        adjusted = np.minimum.accumulate((ranked * m * factor / rank)[::-1])[::-1]
    result = np.empty(m)
    result[order] = np.minimum(adjusted, 1.0)
    out[ok] = result
    return out
