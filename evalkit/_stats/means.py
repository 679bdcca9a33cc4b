"""One-sample intervals for a mean: betting (finite-sample, on a known scale), Student's t and scipy's BCa bootstrap."""

from __future__ import annotations

import numpy as np

from evalkit._stats.betting import betting_interval

MEAN_METHODS = ("betting", "t", "bootstrap")


def mean_interval(x, method: str, confidence_level: float, *, bounds=None, rng=None, n_resamples: int = 9999
                  ) -> tuple[float, float]:
    """An interval for the mean of ``x``: ``"t"`` (Student), ``"bootstrap"`` (BCa, scipy) or ``"betting"``
    (finite-sample, needs ``bounds``). NaN, NaN when the method cannot give one (one value; no spread)."""
    from scipy import stats

    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return np.nan, np.nan
    if method == "betting":
        low, high = betting_interval(x, float(bounds[0]), float(bounds[1]), confidence_level=confidence_level,
                                     theta_range=(float(bounds[0]), float(bounds[1])))
        return float(low), float(high)
    if np.all(x == x[0]):
        return np.nan, np.nan  # no spread: neither t nor the bootstrap can say anything
    if method == "t":
        ci = stats.ttest_1samp(x, 0.0).confidence_interval(confidence_level)
        return float(ci.low), float(ci.high)
    if method == "bootstrap":
        res = stats.bootstrap((x,), np.mean, confidence_level=confidence_level, method="BCa",
                              n_resamples=n_resamples, rng=rng)
        return float(res.confidence_interval.low), float(res.confidence_interval.high)
    raise ValueError(f"`method` must be one of {list(MEAN_METHODS)}; got {method!r}.")
