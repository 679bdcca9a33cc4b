"""Betting confidence intervals and sequences for bounded means (Waudby-Smith & Ramdas, JRSS-B 2024), over single
cases or whole clusters, and the closed-form empirical Bernstein interval."""

from __future__ import annotations

import numpy as np

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


def betting_p_value(test, *, tol: float = 1e-6) -> float:
    """The smallest error rate at which ``test(alpha)`` (True: the null value is excluded) rejects, by bisection."""
    if not test(1 - 1e-9):
        return 1.0
    low, high = 0.0, 1.0
    while high - low > tol:
        mid = (low + high) / 2
        low, high = (low, mid) if test(mid) else (mid, high)
    return float(high)
