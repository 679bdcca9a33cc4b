"""Interval helpers shared by every lane (judge, calibration, retrieval, inference).

Private floor: imports nothing from evalkit above ``_validation``.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import optimize, special, stats


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


# ------------------------------------------------------------------------------ paired comparisons
# Kernels for two runs on the same cases: pass/fail (the 2 x 2 table of verdict pairs, summarised by its
# discordant counts) and numeric scores (the per-case differences). ``n10`` counts the cases that pass in
# run a and fail in run b, ``n01`` the reverse; differences are always b - a.


def mcnemar_exact_p(n10: int, n01: int) -> float:
    """Exact McNemar test: two-sided binomial test of ``n10`` against ``n10 + n01`` at 1/2 (1.0 with no flips).

    At p = 1/2 the binomial is symmetric, so the two-sided p-value is ``min(1, 2 F(min(n10, n01)))``; equal to
    ``scipy.stats.binomtest(n10, n10 + n01).pvalue`` (tested), without its per-call cost.
    """
    total = int(n10) + int(n01)
    if total == 0:
        return 1.0
    return float(min(1.0, 2.0 * special.bdtr(min(int(n10), int(n01)), total, 0.5)))


def _tango_z(theta: float, n10: int, n01: int, n: int) -> float:
    """Tango's score statistic at ``theta`` for ``p_b - p_a`` (Tango 1998, in the notation of his 1999 letter).

    The score ``S = (n01 - n10) - n * theta`` is divided by its standard error under the constrained maximum
    likelihood estimate of the cell probability of ``n10`` given ``theta`` (the positive root of a quadratic).
    """
    a = 2.0 * n
    b = -n01 - n10 + (2.0 * n - n01 + n10) * theta
    c = -n10 * theta * (1.0 - theta)
    root = (-b + math.sqrt(max(b * b - 4.0 * a * c, 0.0))) / (2.0 * a)
    score = (n01 - n10) - n * theta
    if score == 0:
        return 0.0
    var = n * (2.0 * root + theta * (1.0 - theta))
    return score / math.sqrt(var) if var > 0 else math.copysign(math.inf, score)


def tango_interval(n10: int, n01: int, n: int, confidence_level: float) -> tuple[float, float]:
    """Tango's (1998) asymptotic score interval for the paired difference ``p_b - p_a``.

    Inverts the score test of ``p_b - p_a = theta`` over theta in [-1, 1]; it stays informative with no
    discordant pair at all (where Wald-type intervals collapse to a point). Written out because neither
    scipy nor statsmodels has it; checked against Tango's and later published worked examples.
    """
    if n == 0:
        return np.nan, np.nan
    z = float(special.ndtri(0.5 + confidence_level / 2))  # z_value, as a ufunc: this runs once per interval
    estimate = (n01 - n10) / n
    eps = 1e-13

    def limit(target, lo, hi):
        return float(optimize.brentq(lambda t: _tango_z(t, n10, n01, n) - target, lo, hi, xtol=1e-12))

    low = -1.0 if estimate <= -1 + eps or _tango_z(-1 + eps, n10, n01, n) <= z else limit(z, -1 + eps, estimate)
    high = 1.0 if estimate >= 1 - eps or _tango_z(1 - eps, n10, n01, n) >= -z else limit(-z, estimate, 1 - eps)
    return low, high


def _wilson_limits(p: float, n: int, z: float) -> tuple[float, float]:
    """The Wilson score limits in closed form: equal to :func:`wilson_interval` (tested), without the cost of
    scipy's ``binomtest`` behind it, since a paired interval needs two of them per call."""
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(max(p * (1 - p) / n + z * z / (4 * n * n), 0.0))
    return centre - half, centre + half


def newcombe_paired_interval(n11: int, n10: int, n01: int, n00: int, confidence_level: float) -> tuple[float, float]:
    """Newcombe's (1998, method 10) hybrid score interval for the paired difference ``p_b - p_a``.

    The Wilson intervals of the two marginal pass rates are combined with the square-and-add rule, corrected
    for their correlation (the phi coefficient of the 2 x 2 table, its numerator reduced by n/2 when positive).
    """
    n = n11 + n10 + n01 + n00
    if n == 0:
        return np.nan, np.nan
    pb, pa = (n11 + n01) / n, (n11 + n10) / n
    z = float(special.ndtri(0.5 + confidence_level / 2))
    lb, ub = _wilson_limits(pb, n, z)
    la, ua = _wilson_limits(pa, n, z)
    margins = float(n11 + n01) * (n10 + n00) * (n11 + n10) * (n01 + n00)
    cross = float(n11 * n00 - n01 * n10)
    numerator = max(cross - n / 2, 0.0) if cross > 0 else cross
    phi = 0.0 if margins == 0 else numerator / np.sqrt(margins)
    d = pb - pa
    low = d - np.sqrt(max((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2, 0.0))
    high = d + np.sqrt(max((pa - la) ** 2 - 2 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2, 0.0))
    return float(max(low, -1.0)), float(min(high, 1.0))


def mcnemar_rejection_bounds(m_max: int, alpha: float) -> np.ndarray:
    """For m = 0..m_max discordant pairs, the largest k such that the exact McNemar test rejects at ``alpha``
    when the smaller discordant count is at most k (-1: no outcome rejects).

    With p = 1/2 the binomial is symmetric and the two-sided exact p-value of k <= m/2 is ``min(1, 2 F(k))``,
    so the rejection region is ``{x <= k} | {x >= m - k}``; equal to ``scipy.stats.binomtest`` (tested).
    """
    m = np.arange(m_max + 1)
    k = stats.binom.ppf(alpha / 2, m, 0.5).astype(int)  # smallest k with F(k) >= alpha / 2
    k = np.where(2 * stats.binom.cdf(k, m, 0.5) <= alpha * (1 + 1e-9), k, k - 1)
    return np.minimum(k, (m - 1) // 2)  # for alpha < 1 the region never reaches the centre


def mcnemar_power(n: int, difference: float, discordant: float, alpha: float) -> float:
    """Exact power of the two-sided exact McNemar test on ``n`` paired cases.

    Each case flips with probability ``discordant`` (the expected share of discordant pairs) and a flip goes
    b's way with probability ``(1 + difference / discordant) / 2``, so ``p_b - p_a = difference``. The power
    sums, over the binomial number of flips m, the conditional probability that the test rejects.
    """
    n = int(n)
    if discordant <= 0 or n <= 0:
        return 0.0
    share = min(max(0.5 * (1.0 + abs(difference) / discordant), 0.0), 1.0)
    m = np.arange(n + 1)
    k = mcnemar_rejection_bounds(n, alpha)
    conditional = np.where(k >= 0, stats.binom.cdf(k, m, share) + stats.binom.sf(m - k - 1, m, share), 0.0)
    conditional = np.where((k >= 0) & (m - k <= k), stats.binom.cdf(k, m, share), conditional)  # no double count
    return float(np.clip(np.sum(stats.binom.pmf(m, n, discordant) * conditional), 0.0, 1.0))


MEAN_METHODS = ("betting", "t", "bootstrap")


def _predictable_bets(x: np.ndarray, alpha_side: float) -> np.ndarray:
    """Predictable plug-in empirical-Bernstein bets tuned for a fixed n (Waudby-Smith & Ramdas 2024, eq. 26-27)."""
    n = x.size
    t = np.arange(1, n + 1)
    mu = np.minimum((0.5 + np.cumsum(x)) / (t + 1), 1.0)
    var = (0.25 + np.cumsum((x - mu) ** 2)) / (t + 1)
    var_before = np.concatenate([[0.25], var[:-1]])
    return np.sqrt(2 * np.log(1 / alpha_side) / (n * var_before))


def betting_interval(x, confidence_level: float, *, low: float, high: float, breaks: int = 1000
                     ) -> tuple[float, float]:
    """Betting confidence interval for the mean of data bounded in ``[low, high]`` (Waudby-Smith & Ramdas,
    JRSS-B 2024: the hedged capital process with predictable plug-in bets).

    Valid in finite samples for any distribution on ``[low, high]`` (no normal approximation): a candidate
    mean m is kept while neither bet against it (that the mean is above m, or below) has multiplied its
    capital by 1 / alpha. The data are used in the order given. The limits are grid points widened by one
    grid step (``breaks`` steps over the range), and the running intersection over time is taken, as in the
    authors' ``confseq.betting.betting_ci``, whose values these equal (tested).
    """
    x = np.asarray(x, dtype=float)
    if x.size == 0 or not high > low:
        return np.nan, np.nan
    u = np.clip((x - low) / (high - low), 0.0, 1.0)
    alpha = 1 - confidence_level
    grid = np.arange(0, 1 + 1 / breaks, 1 / breaks)[:, None]
    lam_pos = np.minimum(_predictable_bets(u, alpha / 2), 1.0)  # the authors' default truncation at 1
    lam_neg = lam_pos  # the same bets for both sides (both tuned at alpha / 2)
    with np.errstate(divide="ignore"):
        log_pos = np.cumsum(np.log(np.maximum(1 + lam_pos * (u - grid), 0.0)), axis=1)
        log_neg = np.cumsum(np.log(np.maximum(1 - lam_neg * (u - grid), 0.0)), axis=1)
    capital = np.maximum(log_pos, log_neg) + np.log(0.5)
    kept = capital <= np.log(1 / alpha)  # grid x time
    step = 1 / breaks
    any_kept = kept.any(axis=0)
    first = np.where(any_kept, np.argmax(kept, axis=0), 0)
    last = np.where(any_kept, grid.size - 1 - np.argmax(kept[::-1], axis=0), grid.size - 1)
    lows = np.where(any_kept, np.maximum(grid[first, 0] - step, 0.0), 0.0)
    highs = np.where(any_kept, np.minimum(grid[last, 0] + step, 1.0), 1.0)
    lo_u, hi_u = float(np.max(lows)), float(np.min(highs))
    if lo_u > hi_u:  # the running intersection emptied (possible only when the bound is wrong): keep the last
        lo_u, hi_u = float(lows[-1]), float(highs[-1])
    return low + lo_u * (high - low), low + hi_u * (high - low)


def mean_interval(x, method: str, confidence_level: float, *, bounds=None, rng=None, n_resamples: int = 9999
                  ) -> tuple[float, float]:
    """An interval for the mean of ``x``: ``"t"`` (Student), ``"bootstrap"`` (BCa, scipy) or ``"betting"``
    (finite-sample, needs ``bounds``). NaN, NaN when the method cannot give one (one value; no spread)."""
    x = np.asarray(x, dtype=float)
    if x.size < 2:
        return np.nan, np.nan
    if method == "betting":
        return betting_interval(x, confidence_level, low=bounds[0], high=bounds[1])
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


def sign_flip_p(d, *, rng=None, n_resamples: int = 9999) -> float:
    """Two-sided sign-flip permutation test that the paired differences ``d`` are symmetric about 0 (the two
    runs exchangeable within each case), on their mean; exact when the cases with a nonzero difference are
    few enough to enumerate (2**k <= n_resamples), else Monte Carlo with the ``(B + 1)`` correction."""
    d = np.asarray(d, dtype=float)
    d = d[d != 0]  # a zero difference is the same under either sign
    if d.size == 0:
        return 1.0
    observed = abs(d.sum())
    k = d.size
    if 2 ** k <= n_resamples:
        signs = 1 - 2 * ((np.arange(2 ** k)[:, None] >> np.arange(k)) & 1)
        sums = np.abs(signs @ d)
        return float(np.mean(sums >= observed - 1e-9 * max(observed, 1.0)))
    generator = np.random.default_rng(rng)
    signs = generator.choice((-1.0, 1.0), size=(n_resamples, k))
    sums = np.abs(signs @ d)
    return float((1 + np.sum(sums >= observed - 1e-9 * max(observed, 1.0))) / (n_resamples + 1))
