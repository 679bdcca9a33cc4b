"""Two runs on the same cases: pass/fail (the 2 x 2 table of verdict pairs, summarised by its discordant counts) and
numeric scores (the per-case differences). ``n10`` counts the cases that pass in run a and fail in run b, ``n01`` the
reverse; differences are always b - a."""

from __future__ import annotations

import math

import numpy as np

from evalkit._stats.binomial import wilson
from evalkit._stats.normal import z_value


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


def newcombe_paired_interval(n11: int, n10: int, n01: int, n00: int, confidence_level: float) -> tuple[float, float]:
    """Newcombe's (1998, method 10) hybrid score interval for the paired difference ``p_b - p_a``.

    The Wilson intervals of the two marginal pass rates are combined with the square-and-add rule, corrected
    for their correlation (the phi coefficient of the 2 x 2 table, its numerator reduced by n/2 when positive).
    """

    n = n11 + n10 + n01 + n00
    if n == 0:
        return np.nan, np.nan
    pb, pa = (n11 + n01) / n, (n11 + n10) / n
    lb, ub = (float(v) for v in wilson(n11 + n01, n, confidence_level))
    la, ua = (float(v) for v in wilson(n11 + n10, n, confidence_level))
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


def integer_sign_flip_p(totals) -> float:
    """Exact two-sided sign-flip test of whole-number totals (each cluster's count of fail-to-pass minus pass-to-fail
    changes): under the null that the two runs are exchangeable within every cluster, each total's sign is a fair
    coin, so ``P(|sum of +-t_g| >= |sum of t_g|)`` is the p-value, computed exactly at any number of clusters by
    convolving, for each distinct size ``v`` of total held by ``c`` clusters, the law of ``v (2 B - c)``,
    ``B ~ Binomial(c, 1/2)``. With one case per cluster (totals of -1, 0, 1) it is the exact McNemar test (tested).
    """
    from scipy import signal, stats

    totals = np.asarray(totals, dtype=np.int64)
    observed = abs(int(totals.sum()))
    sizes, counts = np.unique(np.abs(totals[totals != 0]), return_counts=True)
    law, offset = np.ones(1), 0  # the law of the sum, from -offset up
    for value, count in zip(sizes.tolist(), counts.tolist(), strict=True):
        part = np.zeros(2 * value * count + 1)
        part[::2 * value] = stats.binom.pmf(np.arange(count + 1), count, 0.5)
        law = np.convolve(law, part) if len(law) * len(part) < 4_000_000 else np.clip(signal.fftconvolve(law, part), 0, 1)
        offset += value * count
    sums = np.abs(np.arange(len(law)) - offset)
    return float(min(1.0, law[sums >= observed].sum()))


def cluster_difference_interval(d, groups, *, lo: float, hi: float, confidence_level: float) -> tuple[float, float, int]:
    """The betting interval over whole clusters of the mean paired difference ``d`` (each in [lo, hi]; b - a), for
    the per-case mean (a cluster weighs by its size), and the number of clusters: clusters taken in a fixed seeded
    order of their sorted codes, the bound on a cluster the largest one given."""
    from evalkit._stats.betting import cluster_betting_interval

    inverse = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
    totals = np.bincount(inverse, weights=np.asarray(d, dtype=float))
    sizes = np.bincount(inverse).astype(float)
    order = np.random.default_rng(len(totals)).permutation(len(totals))  # a fixed order of the clusters
    low, high = cluster_betting_interval(totals[order], sizes[order], lo, hi, bound=float(sizes.max()),
                                         confidence_level=confidence_level)
    return float(low), float(high), len(totals)


def first_slot_rate_interval(b: int, c: int, n: int, confidence_level: float) -> tuple[float, float]:
    """Interval for 1/2 + (p_b - p_c) / 2 from n paired instances: Bonett & Price's (2012) adjusted Wald
    interval for a difference of paired proportions, mapped to the first-slot rate (written out: statsmodels
    has no paired-difference interval)."""
    if n == 0:
        return np.nan, np.nan
    pb, pc = (b + 1) / (n + 2), (c + 1) / (n + 2)
    diff = pb - pc
    half = z_value(confidence_level) * np.sqrt(max(pb + pc - diff**2, 0.0) / (n + 2))
    low, high = max(diff - half, -1.0), min(diff + half, 1.0)
    return 0.5 + low / 2, 0.5 + high / 2
