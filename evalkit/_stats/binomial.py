"""Every interval for a 0/1 rate, behind one dispatcher, :func:`rate_interval`: Clopper-Pearson and Wilson from counts,
and, for cases in clusters (epochs of one case, claims of one item), the betting interval over whole clusters, the
cluster-robust t and Clopper-Pearson on the clusters' means; and fiducial intervals of functions of several rates.

statsmodels' ``proportion_confint(count, nobs, alpha, method=...)`` is the model: callers name the method, never
re-derive it. Written here rather than calling statsmodels, an optional dependency; the count methods are checked
against scipy's ``binomtest(...).proportion_ci`` and statsmodels in the tests.
"""

from __future__ import annotations

import numpy as np

from evalkit._stats.betting import betting_interval, cluster_betting_interval
from evalkit._stats.normal import cluster_variance

#: Cluster-robust (large-sample) intervals are not given with fewer clusters: at 30 clusters of 4 PASS/FAIL claims
#: (pass rate 0.85, intraclass correlation 0.3) the coverage harness measures the cluster-robust t at 0.914 of 1,000
#: draws, and even at 100 clusters of pass rate 0.95 at 0.92. The finite-sample methods need no minimum.
MIN_CLUSTERS = 50
#: Rate intervals from counts (independent cases).
COUNT_METHODS = ("clopper-pearson", "wilson")
#: Rate intervals for cases in clusters: of the pooled rate (a cluster weighs by its size), or of the mean over
#: clusters of each cluster's rate (``-means``: a case's epochs, averaged, are one observation).
CLUSTER_METHODS = ("cluster-betting", "cluster-t", "cluster-means", "cluster-means-betting")


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


def wilson(k, n, confidence_level: float):
    """Wilson's score interval for ``k`` successes in ``n`` trials, vectorised (NaN where ``n`` is 0).

    ``k`` need not be a whole number (a sum of per-case means is a proportion of n too). Equal to
    ``scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`` (tested) in closed form, without its per-call cost.
    """
    from scipy import special

    k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
    z = special.ndtri(0.5 + np.asarray(confidence_level, dtype=float) / 2)
    with np.errstate(divide="ignore", invalid="ignore"):
        p = k / n
        denominator = 1 + z * z / n
        centre = (p + z * z / (2 * n)) / denominator
        half = z * np.sqrt(np.maximum(p * (1 - p) / n + z * z / (4 * n * n), 0.0)) / denominator
    empty = n <= 0
    return (np.where(empty, np.nan, np.clip(centre - half, 0.0, 1.0)),
            np.where(empty, np.nan, np.clip(centre + half, 0.0, 1.0)))


#: ``interval=`` of the rates in a results table: "auto" is Clopper-Pearson for independent cases and the betting
#: interval over whole clusters for cases in clusters.
RATE_INTERVALS = ("auto", "clopper-pearson", "wilson", "betting", "t")


def rate_method(interval: str, clustered: bool, *, means: bool = False) -> str:
    """The method of :func:`rate_interval` that a public function's ``interval=`` names, with or without clusters
    (the value of its tables' ``interval`` column); a name that does not apply is refused, saying what does.
    ``means``: the clusters are epochs of one case, whose rate is the mean of the cases' means (the betting
    interval then bets on each case's mean)."""
    if interval not in RATE_INTERVALS:
        raise ValueError(f"`interval` must be one of {list(RATE_INTERVALS)}; got {interval!r}.")
    if not clustered:
        if interval in ("betting", "t"):
            raise ValueError(f"`interval={interval!r}` is an interval over whole clusters and needs clusters (`cluster=`, "
                             "or a table whose cases are graded in several epochs); for independent cases use "
                             "'clopper-pearson' (the default) or 'wilson'.")
        return "clopper-pearson" if interval == "auto" else interval
    if interval == "wilson":
        raise ValueError("`interval='wilson'` treats the cases as independent; with clusters use the default (the betting "
                         "interval over whole clusters), 'clopper-pearson' (on the clusters' means) or 't' (the "
                         "cluster-robust t).")
    betting = "cluster-means-betting" if means else "cluster-betting"
    return {"auto": betting, "betting": betting, "t": "cluster-t", "clopper-pearson": "cluster-means"}[interval]


def rate_interval(k, n=None, *, method: str = "clopper-pearson", confidence_level: float, groups=None,
                  bound: float | None = None) -> dict:
    """A 0/1 rate's interval by name, as one fixed row: ``{"ci_low", "ci_high", "interval", "n_clusters", "note"}``.

    Without ``groups``, ``k`` successes of ``n`` trials (numbers or arrays: the ends are then arrays), by
    ``"clopper-pearson"`` (exact: at least ``confidence_level`` at every n and rate) or ``"wilson"``.

    With ``groups`` (each case's cluster code), ``k`` holds each case's value in [0, 1] (``n`` is not given):

    - ``"cluster-betting"``: the betting interval over whole clusters (:func:`cluster_rate_interval`; ``bound`` is the
      largest cluster possible, by default the largest among the cases given), finite-sample valid at any number of
      clusters, for the per-case rate ``sum(k) / len(k)``;
    - ``"cluster-t"``: the cluster-robust t (the sandwich with G / (G - 1), t on G - 1 degrees of freedom, clipped to
      [0, 1]), not given below ``MIN_CLUSTERS`` clusters (NaN and a note);
    - ``"cluster-means"``: Clopper-Pearson on the clusters' means, n = the number of clusters, for the mean of the
      per-cluster means (inspect_ai's accuracy over epochs). A mean of values in [0, 1] varies no more than one
      value with the same mean (Hoeffding 1956), so it holds, conservatively when the cases of a cluster disagree;
    - ``"cluster-means-betting"``: the betting interval on the clusters' means (each a value in [0, 1], the clusters
      in a fixed seeded order), for the same quantity: finite-sample valid, and narrower than Clopper-Pearson on the
      means where a cluster's cases vary (with every cluster of one size, it is ``"cluster-betting"``).

    ``n_clusters`` is None without ``groups``; ``note`` says why an interval was not given.
    """
    row = {"ci_low": np.nan, "ci_high": np.nan, "interval": method, "n_clusters": None, "note": ""}
    if groups is None:
        if method not in COUNT_METHODS:
            raise ValueError(f"`interval` must be one of {list(COUNT_METHODS)} for independent cases; got {method!r}"
                             + (" (a cluster method needs `cluster=`)." if method in CLUSTER_METHODS else "."))
        low, high = (clopper_pearson if method == "clopper-pearson" else wilson)(k, n, confidence_level)
        row["ci_low"], row["ci_high"] = (float(low), float(high)) if np.ndim(low) == 0 else (low, high)
        return row
    if method not in CLUSTER_METHODS:
        raise ValueError(f"`interval` must be one of {list(CLUSTER_METHODS)} for cases in clusters; got {method!r}.")
    values = np.asarray(k, dtype=float)
    codes = np.unique(np.asarray(groups), return_inverse=True)[1].ravel()
    g = int(codes.max()) + 1 if codes.size else 0
    row["n_clusters"] = g
    if values.size == 0:
        return row
    if method == "cluster-betting":
        sizes = np.bincount(codes)
        row["ci_low"], row["ci_high"], _ = cluster_rate_interval(values, codes, confidence_level=confidence_level,
                                                                 bound=float(sizes.max() if bound is None else bound))
    elif method == "cluster-means":
        means = np.bincount(codes, weights=values) / np.bincount(codes)
        low, high = clopper_pearson(means.sum(), g, confidence_level)  # the beta quantiles take a non-integer count
        row["ci_low"], row["ci_high"] = float(low), float(high)
    elif method == "cluster-means-betting":
        means = np.bincount(codes, weights=values) / np.bincount(codes)
        order = np.random.default_rng(g).permutation(g)  # a fixed order of the clusters, as cluster_rate_interval's
        low, high = betting_interval(means[order], 0.0, 1.0, confidence_level=confidence_level, theta_range=(0.0, 1.0))
        row["ci_low"], row["ci_high"] = float(low), float(high)
    else:
        from scipy import stats

        rate = float(values.mean())
        var, _ = cluster_variance((values - rate) / len(values), codes)
        if g < MIN_CLUSTERS:
            row["note"] = f"{g} clusters < {MIN_CLUSTERS}: a cluster-robust interval is not backed here"
            return row
        half = float(stats.t.ppf(0.5 + confidence_level / 2, g - 1) * np.sqrt(var))
        row["ci_low"], row["ci_high"] = max(0.0, rate - half), min(1.0, rate + half)
    return row


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
