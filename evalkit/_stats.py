"""Interval helpers shared by every lane (judge, calibration, retrieval, inference).

Private floor: imports nothing from evalkit above ``_validation``. scipy.stats (about a second to import) is
imported when an interval is computed, not when a module that may compute one is imported.
"""

from __future__ import annotations

import numpy as np


def z_value(confidence_level: float) -> float:
    """The two-sided standard-normal quantile for ``confidence_level`` (1.96 at 0.95)."""
    from scipy import stats

    return float(stats.norm.ppf(0.5 + confidence_level / 2))


def wilson_interval(k: int, n: int, confidence_level: float) -> tuple[float, float]:
    """Wilson score interval for ``k`` successes in ``n`` trials (NaN, NaN when ``n`` is 0)."""
    if n == 0:
        return np.nan, np.nan
    from scipy import stats

    ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=confidence_level, method="wilson")
    return float(ci.low), float(ci.high)


def normal_interval(estimate: float, se: float, confidence_level: float) -> tuple[float, float]:
    """``estimate -/+ z * se``: the Wald interval."""
    half = z_value(confidence_level) * se
    return float(estimate - half), float(estimate + half)
