"""Interval helpers shared by every lane (judge, calibration, retrieval, inference, agreement, density).

Private floor: imports nothing from evalkit above ``_validation``. scipy.stats (about a second to import) is
imported when an interval is computed, not when a module that may compute one is imported.
"""

from __future__ import annotations

import math
import warnings

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


# ------------------------------------------------------------------------------------ exact binomial
def clopper_pearson(k, n, confidence_level: float):
    """Clopper-Pearson ("exact") interval for ``k`` successes in ``n`` trials, vectorised (NaN where ``n`` is 0).

    Equal to ``scipy.stats.binomtest(k, n).proportion_ci(method="exact")``; written with the beta quantiles so
    that thousands of counts take one call. Its coverage is at least ``confidence_level`` at every n and p.
    """
    from scipy import stats

    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    alpha = 1 - np.asarray(confidence_level, dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, stats.beta.ppf(alpha / 2, k, n - k + 1), 0.0)
        high = np.where(k < n, stats.beta.isf(alpha / 2, k + 1, n - k), 1.0)
    empty = n <= 0
    return np.where(empty, np.nan, low), np.where(empty, np.nan, high)


def binomial_interval(k, n, confidence_level: float, method: str = "clopper-pearson"):
    """A 0/1 rate's interval by name: ``"clopper-pearson"`` (exact, the default everywhere) or ``"wilson"``."""
    if method == "clopper-pearson":
        low, high = clopper_pearson(k, n, confidence_level)
        return float(low), float(high)
    if method == "wilson":
        return wilson_interval(k, n, confidence_level)
    raise ValueError(f"`interval` must be one of ['clopper-pearson', 'wilson']; got {method!r}.")


def cp_fiducial_interval(f, counts, directions, confidence_level: float, *, n_draws: int = 4095, rng=None):
    """An interval for ``f(p_1, ..., p_d)`` of independent binomial rates from their Clopper-Pearson confidence
    distributions, and the share of draws where ``f`` is undefined at each end.

    Rate i has ``counts[i] = (k, n)``. For the lower end, a rate ``f`` increases in (``directions[i] = +1``) is
    drawn from ``Beta(k, n - k + 1)`` (0 when k = 0), whose quantiles are the lower Clopper-Pearson limits, one it
    decreases in (-1) from ``Beta(k + 1, n - k)`` (1 when k = n), and one it is not monotone in (0) from Jeffreys'
    ``Beta(k + 1/2, n - k + 1/2)``; the upper end swaps the first two. The ends are the ``alpha / 2`` and
    ``1 - alpha / 2`` quantiles of ``f`` over the draws (a fiducial interval: with one rate it is Clopper-Pearson's
    exactly; for several, its coverage is measured, not guaranteed). ``f`` returns NaN where it is undefined (a
    judge no better than chance): such draws count as -inf (lower end) and +inf (upper end), so an end is infinite
    when more than ``alpha / 2`` of its draws are undefined. The draws are quasi-random (a Sobol sequence, its
    first point dropped), so the ends are reproducible; ``rng`` scrambles the sequence instead.
    """
    from scipy import stats
    from scipy.stats import qmc

    d = len(counts)
    if rng is None:
        points = qmc.Sobol(d, scramble=False).random_base2(int(np.ceil(np.log2(n_draws + 1))))[1:n_draws + 1]
    else:
        points = qmc.Sobol(d, scramble=True, seed=rng).random_base2(int(np.ceil(np.log2(n_draws))))[:n_draws]
    alpha = 1 - confidence_level
    ends, undefined = [], []
    for end in (-1, +1):
        draws = []
        for (k, n), direction, u in zip(counts, directions, points.T, strict=True):
            k, n = float(k), float(n)
            side = direction * (1 if end > 0 else -1)  # +1: the upper confidence distribution
            with np.errstate(invalid="ignore", divide="ignore"):
                if side > 0:
                    draws.append(np.full(u.shape, 1.0) if k >= n else stats.beta.ppf(u, k + 1, n - k))
                elif side < 0:
                    draws.append(np.zeros(u.shape) if k <= 0 else stats.beta.ppf(u, k, n - k + 1))
                else:
                    draws.append(stats.beta.ppf(u, k + 0.5, n - k + 0.5))
        values = np.asarray(f(*draws), dtype=float)
        bad = np.isnan(values)
        undefined.append(float(bad.mean()))
        values = np.where(bad, np.inf * end, values)
        ends.append(float(np.quantile(values, alpha / 2 if end < 0 else 1 - alpha / 2, method="inverted_cdf")))
    return ends[0], ends[1], undefined[0], undefined[1]


# ------------------------------------------------------------------------------------ cluster-robust
def cluster_variance(contributions, groups) -> tuple[float, int]:
    """Cluster-robust variance of an estimate that is a sum of per-case contributions, and the number of clusters.

    ``contributions[i]`` is case i's term of the estimate's linearisation (for a mean, ``(y_i - mean) / n``);
    the variance is ``G / (G - 1) * sum over clusters of (sum of the cluster's terms) ** 2``: the sandwich with
    statsmodels' small-sample factor, so that for a mean it equals ``sm.OLS(y, 1).fit(cov_type="cluster")``.
    """
    codes = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
    sums = np.bincount(codes, weights=np.asarray(contributions, dtype=float))
    g = len(sums)
    if g < 2:
        return np.nan, g
    return float(g / (g - 1) * np.dot(sums, sums)), g


# ------------------------------------------------------------------------------------ betting
#: Bets are truncated at this share of the largest bet that keeps the capital non-negative (WSR 2024, their c;
#: they suggest 1/2 or 3/4: 0.9 gave the narrowest intervals on 1-5 ratings piled at the top, where the lower
#: bettor is the one truncated, at the same guaranteed coverage).
BET_TRUNCATION = 0.9


def _bets(u, alpha: float, horizon, weight=None):
    """Predictable plug-in bets (Waudby-Smith & Ramdas 2024, eqs. 26-27): from the first t-1 values of ``u`` in [0, 1].

    ``horizon`` is the planned number of observations for a fixed-n interval (bets sized for n), or None for a
    confidence sequence (bets shrinking like 1 / sqrt(t log t)). ``weight`` (clusters, :func:`cluster_betting_interval`):
    the share ``m_t / M`` of the largest cluster that step t's total ``u_t`` is over; the running mean is then the
    ratio ``sum u / sum weight`` and the variance that of ``u_t - mean * weight_t`` (with weight 1, the plain form).
    """
    t = np.arange(1, u.shape[-1] + 1, dtype=float)
    if weight is None:
        mu = (0.5 + np.cumsum(u, axis=-1)) / (t + 1)
        centred = u - mu
    else:
        mu = (0.5 + np.cumsum(u, axis=-1)) / (1 + np.cumsum(weight, axis=-1))
        centred = u - mu * weight
    var = (0.25 + np.cumsum(centred ** 2, axis=-1)) / (t + 1)
    prev = np.concatenate([np.full(u.shape[:-1] + (1,), 0.25), var[..., :-1]], axis=-1)
    scale = horizon if horizon is not None else t * np.log1p(t)
    return np.sqrt(2 * np.log(2 / alpha) / (scale * prev))


def _log_capital(theta, z, lo, hi, slope, offset, bets, side: int):
    """Log capital after each step of betting against "the mean of z_t is slope_t * theta + offset_t".

    ``side = +1`` bets that the mean is larger (it grows when theta is too small), ``-1`` smaller. A hypothesis
    the bounds make impossible (the mean outside [lo_t, hi_t]) gets infinite capital. ``theta`` broadcasts
    against the leading axes of ``z``.
    """
    width = hi - lo
    with np.errstate(divide="ignore", invalid="ignore"):
        centre = (slope * theta[..., None] + offset - lo) / width  # the null mean on the [0, 1] scale
        u = (z - lo) / width
        if side > 0:
            bet = np.minimum(bets, BET_TRUNCATION / centre)
            factor = 1 + bet * (u - centre)
            impossible = centre < 0
        else:
            bet = np.minimum(bets, BET_TRUNCATION / (1 - centre))
            factor = 1 - bet * (u - centre)
            impossible = centre > 1
        steps = np.log(np.maximum(factor, 0.0))
    steps = np.where(impossible, np.inf, steps)
    return np.cumsum(steps, axis=-1)


def betting_interval(z, lo, hi, *, slope=1.0, offset=0.0, offset_upper=None, confidence_level: float, theta_range,
                     tol: float = 1e-10, null=None):
    """Betting confidence interval for theta, where the conditional mean of z_t given the past is ``slope_t * theta + offset_t``.

    The hedged capital process of Waudby-Smith & Ramdas (JRSS-B 2024, section 4, Theorem 3): two bettors, one
    on each side, each with half the error rate, with predictable plug-in bets sized for n and truncated at
    ``BET_TRUNCATION``; theta is excluded when either bettor's capital reaches ``2 / alpha`` at some step (the
    running intersection). By Ville's inequality the interval holds with probability at least
    ``confidence_level`` whatever the distribution within the bounds, at every sample size. Each z_t must lie
    in [lo_t, hi_t] (fixed before z_t is seen) and ``slope_t > 0``: a plain bounded mean has slope 1 and offset
    0; sampling without replacement and prediction-powered rectifiers are other slopes and offsets.

    ``offset_upper`` (default ``offset``) is the upper bettor's offset: with an offset known only to lie in a
    range, each bettor takes the end that is least favourable to it. ``z, lo, hi, slope, offset`` broadcast to
    shape (..., n); the ends have shape (...), found by bisection to ``tol`` (each bettor's capital is monotone
    in theta).

    With ``null`` (a value of theta) the answer is where the interval leaves it, ``(below, above)`` (booleans of
    shape (...): ``null`` lies below the lower end, above the upper end): one pass of each bettor at ``null``
    instead of a search, for p-values by bisection over the level.
    """
    z, lo, hi, slope, offset, offset_upper = _broadcast(z, lo, hi, slope, offset, offset if offset_upper is None else offset_upper)
    alpha = 1 - confidence_level
    bets = _bets(_unit(z, lo, hi), alpha, z.shape[-1])
    threshold = np.log(2 / alpha)

    def rejects(theta, side):
        shift = offset if side > 0 else offset_upper
        return _log_capital(theta, z, lo, hi, slope, shift, bets, side).max(axis=-1) >= threshold

    return _invert(rejects, z.shape[:-1], theta_range, tol, null)


def _invert(rejects, shape, theta_range, tol: float, null):
    """The interval of the thetas neither bettor rejects (``rejects(theta, side)``, monotone in theta), by bisection
    to ``tol``; with ``null``, ``(below, above)``: whether the interval leaves that value on each side."""
    if null is not None:
        at = np.full(shape, float(null))
        return (at < theta_range[0]) | rejects(at, +1), (at > theta_range[1]) | rejects(at, -1)
    ends = []
    for side in (+1, -1):
        a, b = np.full(shape, float(theta_range[0])), np.full(shape, float(theta_range[1]))
        edge = a if side > 0 else b
        keep = ~rejects(edge, side)  # the range's own end is not excluded
        while np.max(np.where(keep, 0.0, b - a), initial=0.0) > tol:
            mid = (a + b) / 2
            r = rejects(mid, side)
            a, b = (np.where(r, mid, a), np.where(r, b, mid)) if side > 0 else (np.where(r, a, mid), np.where(r, mid, b))
        ends.append(np.where(keep, edge, b if side > 0 else a))
    return ends[0], ends[1]


def cluster_betting_interval(totals, sizes, lo: float, hi: float, *, bound: float, confidence_level: float,
                             theta_range=None, tol: float = 1e-10, null=None):
    """Betting confidence interval for the per-case mean theta when whole clusters of cases are drawn at random.

    Cluster t holds ``sizes[t]`` cases (of the rate or mean in question; 0 is allowed) whose values, each in
    [lo, hi], sum to ``totals[t]``; clusters are independent draws, so ``E[T_t - theta m_t] = 0`` for the
    per-case mean ``theta = E[T] / E[m]`` (the ratio the pooled mean estimates), whatever the dependence within
    a cluster. On the [0, 1] scale (``u = (value - lo) / (hi - lo)``) each step bets on
    ``d_t = (U_t - theta' m_t) / M`` with ``M = bound``, the largest cluster size possible (fixed before any value
    is seen, e.g. the largest cluster among every case given), so that ``d_t`` lies in ``[-theta', 1 - theta']``:
    the hedged capital of :func:`betting_interval` (two bettors at half the error rate each, Waudby-Smith &
    Ramdas, JRSS-B 2024), with predictable bets truncated at ``BET_TRUNCATION / theta'`` (upper bettor) and
    ``BET_TRUNCATION / (1 - theta')`` (lower), which keeps every factor ``1 +- bet * d_t`` positive whatever
    ``m_t`` turns out to be. The product is then a test martingale and by Ville's inequality the interval holds
    with probability at least ``confidence_level`` at every number of clusters. The bets are the plug-in ones of
    :func:`_bets` on the ratio's running residuals. With every size 1 (and ``bound`` 1) this is
    :func:`betting_interval` of the values, operation for operation.

    The clusters are taken in the order given (the caller fixes one, e.g. a seeded shuffle). ``totals`` and
    ``sizes`` have shape (..., G); returns ``(low, high)`` of shape (...), or with ``null``, ``(below, above)``.
    """
    totals, sizes = _broadcast(totals, sizes)
    lo, hi, bound = float(lo), float(hi), float(bound)
    if np.any(sizes > bound):
        raise ValueError(f"a cluster holds {int(sizes.max())} cases, more than the bound {bound:g}.")
    theta_range = (lo, hi) if theta_range is None else theta_range
    width = hi - lo
    alpha = 1 - confidence_level
    unit_totals = ((totals - lo * sizes) / width if width > 0 else np.zeros(totals.shape))
    share = sizes / bound
    u = np.clip(unit_totals / bound, 0.0, share)
    bets = _bets(u, alpha, totals.shape[-1], weight=share)
    threshold = np.log(2 / alpha)

    def rejects(theta, side):
        with np.errstate(divide="ignore", invalid="ignore"):
            centre = (theta[..., None] - lo) / width if width > 0 else np.full(theta.shape + (1,), 0.5)
            d = (unit_totals - centre * sizes) / bound
            if side > 0:
                factor = 1 + np.minimum(bets, BET_TRUNCATION / centre) * d
                impossible = centre < 0
            else:
                factor = 1 - np.minimum(bets, BET_TRUNCATION / (1 - centre)) * d
                impossible = centre > 1
            steps = np.log(np.maximum(factor, 0.0))
        steps = np.where(impossible, np.inf, steps)
        return np.cumsum(steps, axis=-1).max(axis=-1) >= threshold

    return _invert(rejects, totals.shape[:-1], theta_range, tol, null)



def cluster_rate_interval(hits, groups, *, bound: float, confidence_level: float) -> tuple[float, float, int]:
    """The betting interval over whole clusters (:func:`cluster_betting_interval`) of a 0/1 rate, and the number of
    clusters: ``hits[i]`` is case i's 0/1 value, ``groups[i]`` its cluster code. The clusters are taken in a fixed
    seeded order of their sorted codes, so the interval does not depend on the order of the cases."""
    inverse = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
    totals = np.bincount(inverse, weights=np.asarray(hits, dtype=float))
    sizes = np.bincount(inverse).astype(float)
    order = np.random.default_rng(len(totals)).permutation(len(totals))  # a fixed order of the clusters
    low, high = cluster_betting_interval(totals[order], sizes[order], 0.0, 1.0, bound=bound,
                                         confidence_level=confidence_level)
    return float(low), float(high), len(totals)

def betting_sequence(z, lo, hi, *, slope=1.0, offset=0.0, offset_upper=None, confidence_level: float, theta_range,
                     grid: int = 2000):
    """Betting confidence sequence: the interval for theta after every step, valid at all steps at once.

    As :func:`betting_interval`, with bets that shrink like ``1 / sqrt(t log t)`` instead of being sized for a
    fixed n (WSR 2024, eq. 26), so that the probability that theta ever leaves the sequence is at most
    ``1 - confidence_level``: the interval at a stopping time of the user's choosing (stop when it looks
    narrow enough) keeps its level. Ends are read off a grid of ``grid + 1`` values of theta over
    ``theta_range`` and rounded outwards by one grid step; shape (..., n).
    """
    z, lo, hi, slope, offset, offset_upper = _broadcast(z, lo, hi, slope, offset, offset if offset_upper is None else offset_upper)
    alpha = 1 - confidence_level
    bets = _bets(_unit(z, lo, hi), alpha, None)
    threshold = np.log(2 / alpha)
    thetas = np.linspace(float(theta_range[0]), float(theta_range[1]), grid + 1)
    step = thetas[1] - thetas[0]
    # kept[g, ..., t]: theta_g not excluded by either bettor at any step up to t
    theta = thetas.reshape((-1,) + (1,) * (z.ndim - 1))
    kept = np.ones((len(thetas),) + z.shape, dtype=bool)
    for side, shift in ((+1, offset), (-1, offset_upper)):
        capital = _log_capital(theta, z[None], lo[None], hi[None], slope[None], shift[None], bets[None], side)
        kept &= np.maximum.accumulate(capital, axis=-1) < threshold
    any_kept = kept.any(axis=0)
    first = np.argmax(kept, axis=0)
    last = len(thetas) - 1 - np.argmax(kept[::-1], axis=0)
    low = np.where(any_kept, np.maximum(thetas[first] - step, thetas[0]), np.nan)
    high = np.where(any_kept, np.minimum(thetas[last] + step, thetas[-1]), np.nan)
    return low, high


class BettingStream:
    """:func:`betting_sequence` of a bounded mean (slope 1, offset 0), one value at a time.

    ``update(z)`` takes the next value in [lo, hi] and returns the sequence's ``(low, high)`` after it: equal,
    value for value, to ``betting_sequence(z_so_far, lo, hi, ...)[-1]`` (the same grid and the same floating-point
    operations, step by step), at O(grid) per value instead of O(grid x n): a labeller showing the live interval
    after every label pays the same at 5,000 labels as at 50, where recomputing the sequence grows with the labels
    (``python benchmarks/bench_widgets.py`` times both). :meth:`snapshot` and :meth:`restore` take values back.
    """

    def __init__(self, lo: float, hi: float, *, confidence_level: float, theta_range, grid: int = 2000):
        self.lo, self.width = float(lo), float(hi) - float(lo)
        alpha = 1 - confidence_level
        self._scale = 2 * np.log(2 / alpha)
        self._threshold = np.log(2 / alpha)
        self.thetas = np.linspace(float(theta_range[0]), float(theta_range[1]), grid + 1)
        self._step = self.thetas[1] - self.thetas[0]
        with np.errstate(divide="ignore", invalid="ignore"):
            self._centre = (1.0 * self.thetas + 0.0 - self.lo) / self.width  # as _log_capital computes it
            self._caps = (BET_TRUNCATION / self._centre, BET_TRUNCATION / (1 - self._centre))  # the bets' truncation
        self._capital = np.zeros((2, len(self.thetas)))
        self._kept = np.ones(len(self.thetas), dtype=bool)
        self._t, self._sum_u, self._sum_v, self._prev = 0, 0.0, 0.0, 0.25

    def snapshot(self):
        """The state after the values so far, for :meth:`restore` (taking values back without a replay)."""
        return self._capital.copy(), self._kept.copy(), self._t, self._sum_u, self._sum_v, self._prev

    def restore(self, state) -> None:
        capital, kept, self._t, self._sum_u, self._sum_v, self._prev = state
        self._capital, self._kept = capital.copy(), kept.copy()

    def update(self, z: float) -> tuple[float, float]:
        """Take the next value; the sequence's ``(low, high)`` after it (NaN, NaN when every theta is excluded)."""
        z = float(z)
        self._t += 1
        t = float(self._t)
        bet = np.sqrt(self._scale / (t * np.log1p(t) * self._prev))
        u = (z - self.lo) / self.width
        with np.errstate(divide="ignore", invalid="ignore"):
            for row, side in ((0, 1), (1, -1)):
                b = np.minimum(bet, self._caps[row])
                factor = 1 + b * (u - self._centre) if side > 0 else 1 - b * (u - self._centre)
                steps = np.log(np.maximum(factor, 0.0))
                steps = np.where(self._centre < 0 if side > 0 else self._centre > 1, np.inf, steps)
                self._capital[row] += steps
                self._kept &= self._capital[row] < self._threshold
        unit = min(max(u, 0.0), 1.0) if self.width > 0 else 0.5  # the bets' running moments, as _bets takes them
        self._sum_u += unit
        mu = (0.5 + self._sum_u) / (t + 1)
        self._sum_v += (unit - mu) ** 2
        self._prev = (0.25 + self._sum_v) / (t + 1)
        if not self._kept.any():
            return np.nan, np.nan
        first = int(np.argmax(self._kept))
        last = len(self.thetas) - 1 - int(np.argmax(self._kept[::-1]))
        return (float(max(self.thetas[first] - self._step, self.thetas[0])),
                float(min(self.thetas[last] + self._step, self.thetas[-1])))


def _broadcast(z, *others):
    z = np.asarray(z, dtype=float)
    return (z, *(np.broadcast_to(np.asarray(v, dtype=float), z.shape) for v in others))


def _unit(z, lo, hi):
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.clip(np.where(hi > lo, (z - lo) / (hi - lo), 0.5), 0.0, 1.0)


def empirical_bernstein_interval(x, lo: float, hi: float, confidence_level: float) -> tuple[float, float]:
    """Maurer & Pontil's (2009, Theorem 4) empirical Bernstein interval for the mean of values in [lo, hi].

    Finite-sample valid and closed-form (each side at half the error rate); used where a betting interval
    over millions of values would cost too much and is no tighter.
    """
    x = np.asarray(x, dtype=float)
    n, width = len(x), hi - lo
    if n < 2:
        return float(lo), float(hi)
    log_term = np.log(4 / (1 - confidence_level))
    half = np.sqrt(2 * x.var(ddof=1) * log_term / n) + 7 * width * log_term / (3 * (n - 1))
    return float(max(lo, x.mean() - half)), float(min(hi, x.mean() + half))


#: Above this many unlabelled cases the judge-only row's interval is empirical Bernstein instead of betting.
BETTING_MAX_UNLABELLED = 20_000
#: PPI++'s betting rectifier clips a judge with more than two distinct scores to these quantiles of its scores
#: (and 1 - this): a rare extreme score widens the range every bet must survive far more than it helps the variance.
JUDGE_CLIP_QUANTILE = 0.05
#: The share of the unlabelled cases set aside to choose that clipping range (population estimand), so that the
#: clipped scores of the other cases stay independent draws.
CLIP_HOLDOUT = 0.1


def _tuned_weights(y, yhat, judge_var, inflate):
    """Predictable PPI++ weights: lam_t from the first t-1 labelled pairs, ``Cov(y, yhat) / (inflate * Var(judge))``."""
    n = y.shape[-1]
    lam = np.zeros(y.shape)
    if n < 3:
        return lam
    t = np.arange(1, n + 1, dtype=float)
    sy, sh, syh = np.cumsum(y, axis=-1), np.cumsum(yhat, axis=-1), np.cumsum(y * yhat, axis=-1)
    cov = syh / t - (sy / t) * (sh / t)  # population covariance of the first t pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        tuned = np.clip(cov[..., 1:-1] / (np.asarray(inflate)[..., None] * np.asarray(judge_var)[..., None]), 0.0, 1.0)
    lam[..., 2:] = np.nan_to_num(tuned)  # lam_t uses pairs 1..t-1 (t >= 3)
    return lam


#: Above this many (candidate weight, step) pairs :func:`_width_weights` loops over the candidates.
WEIGHT_GRID_AT_ONCE = 2_000_000


def _width_weights(y, g, *, judge_var, horizon: int, alpha: float, bounds, spread, grid: int = 21, start: int = 3):
    """Predictable weights lam_t in [0, 1] that minimise the predicted width of the betting interval for the mean of
    ``y_t - lam * g_t + (a term with mean lam * E[g])``, from the pairs before t (lam_t = 0 for the first ``start``).

    The prediction follows the plug-in bets of :func:`_bets` in the scale of the labels: a bettor whose null mean lies
    a distance D from the bound it must survive bets ``b = min(sqrt(2 L / (n s2)), c / D)`` (L = log(2 / alpha),
    c = ``BET_TRUNCATION``) and excludes a mean about ``L / (n b) + b s2 / 2`` away from the truth. The judge lowers the
    variance ``s2(lam) = Var(y) - 2 lam Cov(y, g) + lam^2 judge_var`` but widens the range by ``lam * spread`` on each
    side, which at few labels costs more than it gains: there lam_t stays near 0, the human-only interval.
    ``judge_var`` and ``spread`` broadcast against the leading axes of ``y``.
    """
    a, b = map(float, bounds)
    n = y.shape[-1]
    lam = np.zeros(y.shape)
    if n <= start:
        return lam
    scale = b - a
    t = np.arange(1, n + 1, dtype=float)
    yc, gc = y - a, g - np.mean(g, axis=-1, keepdims=True)  # centred sums stay well conditioned
    my, mg = np.cumsum(yc, axis=-1) / t, np.cumsum(gc, axis=-1) / t
    vy = np.maximum(np.cumsum(yc * yc, axis=-1) / t - my**2, 0.0)
    cov = np.cumsum(yc * gc, axis=-1) / t - my * mg
    # step t (0-based index t) uses the pairs before it: the running values at index t - 1
    my, vy, cov = (v[..., start - 1:-1] for v in (my, vy, cov))
    theta = np.clip(my, 0.0, scale)
    level = np.log(2 / alpha)
    jv = np.asarray(judge_var, dtype=float)[..., None]
    extra = np.asarray(spread, dtype=float)[..., None]
    floor = 1e-12 * scale**2

    def predicted(weight):  # the predicted width at each candidate weight (leading axis), each step
        s2 = np.maximum(vy - 2 * weight * cov + weight**2 * jv, floor)
        width = 0.0
        for distance in (theta + weight * extra, scale - theta + weight * extra):
            bet = np.minimum(np.sqrt(2 * level / (horizon * s2)), BET_TRUNCATION / np.maximum(distance, 1e-9 * scale))
            width = width + level / (horizon * bet) + bet * s2 / 2
        return width

    weights = np.linspace(0.0, 1.0, grid)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if vy.size * grid <= WEIGHT_GRID_AT_ONCE:  # all candidates at once; in a loop where that would take much memory
            best = weights[np.argmin(predicted(weights.reshape((-1,) + (1,) * vy.ndim)), axis=0)]
        else:
            best, best_width = np.zeros(vy.shape), np.full(vy.shape, np.inf)
            for weight in weights:
                width = predicted(weight)
                better = width < best_width
                best, best_width = np.where(better, weight, best), np.where(better, width, best_width)
    lam[..., start:] = best
    return lam


def _block_means(values, k: int):
    """Means of k consecutive blocks of the last axis whose sizes differ by at most one (k <= its length)."""
    m = values.shape[-1]
    edges = np.linspace(0, m, k + 1).round().astype(int)
    sums = np.concatenate([np.zeros(values.shape[:-1] + (1,)), np.cumsum(values, axis=-1)], axis=-1)
    return (sums[..., edges[1:]] - sums[..., edges[:-1]]) / np.diff(edges)


def _clip_range(scores, judge_bounds):
    """The judge's clipping range for PPI++'s rectifier: quantiles of ``scores`` (last axis), or the judge's bounds
    for a judge with at most two distinct scores (verdicts), which clipping would only blind."""
    ja, jb = map(float, judge_bounds)
    if scores.shape[-1] == 0 or np.unique(scores).size <= 2:
        shape = scores.shape[:-1]
        return np.full(shape, ja), np.full(shape, jb)
    low, high = np.quantile(scores, [JUDGE_CLIP_QUANTILE, 1 - JUDGE_CLIP_QUANTILE], axis=-1)
    return low, high


def ppi_betting(y, yhat, yhat_rest, *, weight, bounds, judge_bounds, confidence_level: float,
                finite_population: bool = False, sequence: bool = False, tol: float = 1e-10, null=None):
    """Finite-sample (or anytime-valid) interval for the humans' mean from labelled pairs and unlabelled judge scores.

    The labelled pairs are taken in the order given, with a weight ``lam_t`` on the judge fixed (``weight`` a number:
    0 is the humans alone, 1 is PPI) or chosen from the pairs before t (``weight="tuned"``, PPI++), so every bet is
    predictable.

    ``finite_population=False`` (the population the cases were drawn from): the unlabelled scores, in a fixed
    pseudo-random order, are cut into one block per label, and step t bets on
    ``w_t = y_t - lam_t * g(yhat_t) + lam_t * mean(g over block t)``, whose mean is the humans' mean whatever the judge
    does (the labelled pairs and the blocks are independent draws), so a single betting interval at the full level
    carries the judge's own uncertainty (no union bound), and each w_t lies in
    ``[a - lam_t * r, b + lam_t * r]`` (r: the range of g). For ``"tuned"``, g clips the judge to its
    ``JUDGE_CLIP_QUANTILE`` quantiles, read off ``CLIP_HOLDOUT`` of the unlabelled cases set aside for it, and lam_t
    minimises the predicted width (:func:`_width_weights`), so the judge is used only where it narrows the interval;
    a fixed ``weight`` uses the raw scores. With fewer unlabelled cases than labels, the steps without a block have
    lam_t = 0.

    ``finite_population=True`` (the mean over exactly these cases, labels a random sample without replacement): the
    mean of every judge score is known, step t bets on ``y_t - lam_t * g(yhat_t)`` against the mean of the cases not
    yet labelled (Waudby-Smith & Ramdas 2020), and the interval is intersected with what the labels already fix, so
    it has width 0 once every case is labelled. ``sequence=True`` (confidence sequences, finite populations only)
    keeps the raw scores and PPI++'s covariance weights, tuned on the pairs before each step.

    ``bounds`` are the labels' (and theta's) ends; ``judge_bounds`` the judge scores'. Arrays may carry leading
    batch axes (labelled pairs (..., n), unlabelled scores (..., N)). Returns (low, high), or for
    ``sequence=True`` arrays with the confidence sequence after every label; with ``null`` (fixed-n only), where
    the interval leaves that value, ``(below, above)`` (as :func:`betting_interval`).
    """
    y, yhat, rest = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_rest))
    a, b = map(float, bounds)
    ja, jb = map(float, judge_bounds)
    n, n_rest = y.shape[-1], rest.shape[-1]
    alpha = 1 - confidence_level
    total = n + n_rest
    if sequence and not finite_population:
        raise ValueError("a prediction-powered confidence sequence is made for a finite population of cases.")
    uses_judge = not (isinstance(weight, (int, float)) and weight == 0) and n_rest > 0
    if not uses_judge and not finite_population:
        return betting_interval(y, a, b, confidence_level=confidence_level, theta_range=(a, b), tol=tol, null=null)
    tuned = uses_judge and weight == "tuned"
    if finite_population:
        everything = np.concatenate([yhat, rest], axis=-1)
        if sequence or not tuned:
            g, g_all, g_low, g_high = yhat, everything, np.full(y.shape[:-1], ja), np.full(y.shape[:-1], jb)
        else:
            g_low, g_high = _clip_range(everything, judge_bounds)
            clip = lambda v: np.clip(v, g_low[..., None], g_high[..., None])  # noqa: E731
            g, g_all = clip(yhat), clip(everything)
        if not uses_judge:
            lam = np.zeros(y.shape)
        elif not tuned:
            lam = np.full(y.shape, float(weight))
        elif sequence:
            lam = _tuned_weights(y, g, everything.var(axis=-1), 1.0)
        else:
            lam = _width_weights(y, g, judge_var=g_all.var(axis=-1), horizon=n, alpha=alpha, bounds=(a, b),
                                 spread=g_high - g_low)
        z = y - lam * g
        lo, hi = a - lam * g_high[..., None], b - lam * g_low[..., None]
        remaining = total - np.arange(n, dtype=float)
        before = lambda v: np.concatenate([np.zeros(v.shape[:-1] + (1,)), np.cumsum(v, axis=-1)[..., :-1]], axis=-1)  # noqa: E731
        offset = (-before(y) - lam * (g_all.sum(axis=-1)[..., None] - before(g))) / remaining
        kwargs = dict(slope=total / remaining, offset=offset, confidence_level=confidence_level, theta_range=(a, b))
        if null is not None:
            known, left = y.sum(axis=-1), total - n
            below, above = betting_interval(z, lo, hi, tol=tol, null=null, **kwargs)
            return below | (null < (known + left * a) / total), above | (null > (known + left * b) / total)
        low, high = betting_sequence(z, lo, hi, **kwargs) if sequence else betting_interval(z, lo, hi, tol=tol, **kwargs)
        return _known_part(low, high, y, total, a, b, sequence)
    # the population estimand: one block of unlabelled scores per label
    order = np.random.default_rng(n_rest).permutation(n_rest)
    rest = rest[..., order]
    hold = min(n_rest - 1, int(round(CLIP_HOLDOUT * n_rest))) if tuned and np.unique(rest).size > 2 else 0
    if hold > 0:
        g_low, g_high = _clip_range(rest[..., :hold], judge_bounds)
        rest = np.clip(rest[..., hold:], g_low[..., None], g_high[..., None])
        g = np.clip(yhat, g_low[..., None], g_high[..., None])
    else:
        g_low, g_high, g = np.full(y.shape[:-1], ja), np.full(y.shape[:-1], jb), yhat
    k = min(n, rest.shape[-1])
    blocks = np.zeros(y.shape)
    blocks[..., :k] = _block_means(rest, k)
    size = rest.shape[-1] / k
    if tuned:
        lam = _width_weights(y, g, judge_var=rest.var(axis=-1) * (1 + 1 / size), horizon=n, alpha=alpha,
                             bounds=(a, b), spread=2 * (g_high - g_low))
    else:
        lam = np.full(y.shape, float(weight))
    lam[..., k:] = 0.0
    spread = (g_high - g_low)[..., None]
    w = y - lam * g + lam * blocks
    return betting_interval(w, a - lam * spread, b + lam * spread, confidence_level=confidence_level,
                            theta_range=(a, b), tol=tol, null=null)


def _known_part(low, high, y, total: int, a: float, b: float, sequence: bool):
    """Intersect a finite-population interval with what the labels fix: the unlabelled labels lie within [a, b]."""
    n = y.shape[-1]
    known = np.cumsum(y, axis=-1) if sequence else y.sum(axis=-1)
    left = total - (np.arange(1, n + 1) if sequence else n)
    return np.maximum(low, (known + left * a) / total), np.minimum(high, (known + left * b) / total)


def betting_p_value(test, *, tol: float = 1e-6) -> float:
    """The smallest error rate at which ``test(alpha)`` (True: the null value is excluded) rejects, by bisection."""
    if not test(1 - 1e-9):
        return 1.0
    low, high = 0.0, 1.0
    while high - low > tol:
        mid = (low + high) / 2
        low, high = (low, mid) if test(mid) else (mid, high)
    return float(high)


# ------------------------------------------------------------------------------ paired comparisons
# Kernels for two runs on the same cases: pass/fail (the 2 x 2 table of verdict pairs, summarised by its
# discordant counts) and numeric scores (the per-case differences). ``n10`` counts the cases that pass in
# run a and fail in run b, ``n01`` the reverse; differences are always b - a.


def mcnemar_exact_p(n10: int, n01: int) -> float:
    """Exact McNemar test: two-sided binomial test of ``n10`` against ``n10 + n01`` at 1/2 (1.0 with no flips).

    At p = 1/2 the binomial is symmetric, so the two-sided p-value is ``min(1, 2 F(min(n10, n01)))``; equal to
    ``scipy.stats.binomtest(n10, n10 + n01).pvalue`` (tested), without its per-call cost.
    """
    from scipy import special

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
    from scipy import optimize, special

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
    from scipy import special

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
    from scipy import stats

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
    from scipy import stats

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
# ------------------------------------------------------------------ bootstrap over items (weights of resamples)
def resample_weights(n: int, n_resamples: int, rng):
    """Batches of (resamples x items) counts of how often each item occurs in each resample.

    Resample r takes the items at ``rng.integers(0, n, n, dtype=np.int32)``. Drawn here rather than through
    scipy.stats.bootstrap: 32-bit indices turned into per-item counts directly are several times faster
    at 100,000 items, and every sum over items becomes one matrix product with the counts.
    """
    batch = max(1, 5_000_000 // n)
    for start in range(0, n_resamples, batch):
        b = min(batch, n_resamples - start)
        idx = rng.integers(0, n, (b, n), dtype=np.int32).astype(np.intp) + n * np.arange(b)[:, None]
        yield np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(float)


def percentile_over_items(statistic, n: int, n_resamples: int, confidence_level: float, rng) -> tuple[float, float]:
    """Percentile interval of ``statistic(weights)`` over resamples of n items (see :func:`resample_weights`)."""
    dist = np.concatenate([statistic(w) for w in resample_weights(n, n_resamples, rng)])
    tail = 100 * (1 - confidence_level) / 2
    low, high = np.percentile(dist, [tail, 100 - tail], axis=0)
    return (float(low), float(high)) if dist.ndim == 1 else (low, high)


def studentized_over_items(of_sums, per_item: np.ndarray, n_resamples: int, confidence_level: float, rng):
    """Studentized (bootstrap-t) interval over items, each standard error by the jackknife over items.

    The statistic is a function of sums over items: ``of_sums(S)`` for a stack ``S`` (rows, m) of
    ``weights @ per_item``, giving (rows,) or (rows, q) for q statistics at once. For the data and for
    every resample (drawn as in :func:`resample_weights`) the jackknife leaves out one draw at a time,
    which only subtracts that item's row from the sums, so the n leave-one-out values of a resample cost
    one vectorized call. The interval is ``(theta - q_hi * se, theta - q_lo * se)`` with ``q`` the
    quantiles of ``(theta* - theta) / se*`` (Efron & Tibshirani 1993, ch. 12). Written out here because
    scipy.stats.bootstrap has no studentized method. Returns ``(low, high)``, floats or (q,) arrays; NaN
    where some resample's statistic is undefined.
    """
    n, m = per_item.shape
    total = per_item.sum(axis=0)
    theta = np.asarray(of_sums(total[None, :]), dtype=float)[0]
    loo = np.asarray(of_sums(total[None, :] - per_item), dtype=float)  # (n,) or (n, q)
    se = np.sqrt((n - 1) / n * ((loo - loo.mean(axis=0)) ** 2).sum(axis=0))
    ts = []
    q = 1 if theta.ndim == 0 else theta.shape[0]
    for weights in resample_weights(n, n_resamples, rng):
        for w in np.array_split(weights, max(1, len(weights) * n * m * q // 4_000_000)):
            sums = w @ per_item
            star = np.asarray(of_sums(sums), dtype=float).reshape(len(w), -1)
            with np.errstate(invalid="ignore", divide="ignore"):
                left = np.asarray(of_sums((sums[:, None, :] - per_item[None, :, :]).reshape(-1, m)), dtype=float)
                left = np.where((w > 0)[:, :, None], left.reshape(len(w), n, -1), 0.0)
                mean = (w[:, :, None] * left).sum(axis=1) / n
                se_star = np.sqrt((n - 1) / n * (w[:, :, None] * (left - mean[:, None, :]) ** 2).sum(axis=1))
                centred = star - np.atleast_1d(theta)
                t = np.where(centred == 0, 0.0, centred / se_star)
            ts.append(np.where(np.isnan(star), np.nan, t))
    t = np.concatenate(ts)
    tail = (1 - confidence_level) / 2
    q_low, q_high = np.quantile(t, [tail, 1 - tail], axis=0)
    undefined = np.isnan(t).any(axis=0)
    low = np.where(undefined, np.nan, np.atleast_1d(theta) - q_high * np.atleast_1d(se))
    high = np.where(undefined, np.nan, np.atleast_1d(theta) - q_low * np.atleast_1d(se))
    if theta.ndim == 0:
        return float(low[0]), float(high[0])
    return low, high


def bca_over_items(of_sums, per_item: np.ndarray, n_resamples: int, confidence_level: float, rng) -> tuple[float, float]:
    """BCa interval over items: scipy.stats.bootstrap (method="BCa") of ``of_sums(weights @ per_item)``."""
    from scipy import stats

    n = len(per_item)

    def statistic(idx, axis=-1):
        idx = np.asarray(idx, dtype=np.intp)
        flat = idx.reshape(-1, idx.shape[-1])
        rows = flat + n * np.arange(len(flat))[:, None]
        weights = np.bincount(rows.ravel(), minlength=len(flat) * n).reshape(len(flat), n).astype(float)
        values = np.asarray(of_sums(weights @ per_item))
        return values.reshape(idx.shape[:-1]) if values.ndim == 1 else values.T.reshape(-1, *idx.shape[:-1])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.bootstrap((np.arange(n),), statistic, vectorized=True, n_resamples=n_resamples, method="BCa",
                              confidence_level=confidence_level, rng=rng, batch=max(1, 2_000_000 // n))
    low, high = res.confidence_interval
    return (float(low), float(high)) if np.ndim(low) == 0 else (np.asarray(low), np.asarray(high))


def z_variance_factor(method: str, r: float, n: int) -> float:
    """How much larger than Pearson's ``1 / (n - 3)`` the variance of a coefficient's Fisher z is.

    Spearman: ``1 + r**2 / 2`` (Bonett & Wright 2000); Kendall: ``0.437 (n - 3) / (n - 4)`` (Fieller, Hartley
    & Pearson 1957); Pearson: 1. Williams' test and Zou's interval assume Pearson's variance; applied to
    Spearman's coefficient unchanged they reject up to 7.6% of the time at 0.05 and cover 0.92 where 0.95
    is claimed (the coverage harness, ``correlate.compare_metrics``).
    """
    if method == "spearman":
        return 1.0 + r**2 / 2
    if method == "kendall":
        return 0.437 * (n - 3) / (n - 4)
    return 1.0
