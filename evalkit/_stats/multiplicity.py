"""Multiplicity adjustments of a family of p-values (Holm, Bonferroni, Benjamini-Hochberg, Benjamini-Yekutieli)."""

from __future__ import annotations

import numpy as np

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
