"""Estimates from few human labels and many judge labels: prediction-powered inference (PPI, PPI++).

A judge (an LLM verdict, a TCVA score, any automatic metric) scores every case; humans label a random
subset. Prediction-powered inference (Angelopoulos et al., Science 2023) estimates the humans' mean over
all cases as::

    theta(lam) = lam * mean(judge on the unlabelled cases) + mean(human - lam * judge on the labelled cases)

The second term rectifies the judge's bias with the labels, so the estimate is unbiased whatever the judge
does; the judge only changes the width. ``lam = 1`` is PPI, ``lam = 0`` the classical human-only mean, and
PPI++ (Angelopoulos, Duchi, Zrnic 2023) chooses ``lam`` from the data to minimise the variance, clipped
to [0, 1], so that its interval is, up to estimation noise, never wider than the classical one. The point
estimates are ``ppi_py``'s (``ppi_mean_pointestimate``). The default intervals are betting intervals
(Waudby-Smith & Ramdas 2024), whose coverage holds at every number of labels for bounded scores; the normal
(CLT) intervals with population (``ddof=0``) variances, exactly as ``ppi_py`` (``ppi_mean_ci``) computes them,
are ``interval="clt"``, with the classical interval on the same convention so that widths compare like with
like.

evalkit computes these from a handful of per-group moments (counts, means, variances, one covariance) rather
than calling ``ppi_py``: that keeps the library out of the runtime dependencies and lets segments, paired
differences and thousands of simulated label draws share one vectorised kernel. The tests check every
method against ``ppi_py`` to 1e-10.

Labels must be a random sample of the cases (as :func:`choose_cases` draws them); labels chosen because
the judge looked wrong do not give valid intervals.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy import stats

from evalkit import _stats
from evalkit._coerce import as_pass
from evalkit._validation import (
    EvalkitWarning,
    as_clusters,
    check_columns,
    check_dataframe,
    check_level,
    check_number,
    check_option,
    check_rng,
    check_unique_index,
    show,
)

__all__ = ["mean", "difference", "pass_rate", "confidence_sequence", "stopping_point", "expected_half_width", "labels_needed",
           "choose_cases", "simulate"]

METHODS = ("ppi++", "ppi", "classical", "judge")
COLUMNS = ["estimate", "ci_low", "ci_high", "n_labelled", "n_unlabelled", "lam", "method", "interval", "note"]


# ----------------------------------------------------------------------------------------------- input
def _as_scores(values, name: str, *, levels=("PASS", "FAIL"), pass_levels=("PASS",)) -> pd.Series:
    """A Series of numbers (floats), verdicts or booleans as float scores (pass = 1); NaN stays, +-inf is refused.

    Verdicts are read by ``as_pass``: PASS/FAIL in any case, booleans, and the given rubric levels.
    """
    if not isinstance(values, pd.Series):
        raise TypeError(f"`{name}` must be a pandas Series indexed by case id; got {type(values).__name__}.")
    if pd.api.types.is_bool_dtype(values) or pd.api.types.is_numeric_dtype(values):
        scores = values.astype(float)
        infinite = np.isinf(scores.to_numpy())
        if infinite.any():
            raise ValueError(f"`{name}` has {int(infinite.sum())} infinite value(s), e.g. "
                             f"{show(scores[infinite].iloc[0])} for case {show(values.index[infinite][0])}; scores and labels must "
                             "be finite numbers (mark a missing one with NaN).")
        return scores
    try:
        passed = as_pass(values, name, levels=levels, pass_levels=pass_levels)  # anything else is refused
    except ValueError as exc:
        raise ValueError(str(exc).replace("expected one of ['PASS', 'FAIL'], PASS/FAIL", "expected a number, PASS/FAIL")) from None
    return pd.Series(passed.to_numpy(dtype=float, na_value=np.nan), index=values.index, name=values.name)


def _methods(method) -> list[str]:
    try:
        methods = [method] if isinstance(method, str) else list(method) if method is not None else []
    except TypeError:  # neither a name nor a list of names
        methods = []
    if not methods:
        raise ValueError(f"`method` must be one of {list(METHODS)} or a list of them; got {method!r}.")
    for m in methods:
        check_option(m, METHODS, "method")
    return list(dict.fromkeys(methods))


def _align(judge: pd.Series, human: pd.Series, nan_policy: str, name: str = "human"):
    """The labels and their cases' positions in ``judge``; the unlabelled cases (None: every other case).
    ``name``: the labels' argument, for messages (the planners' ``human_pilot`` has no ``nan_policy``)."""
    omit = " or pass nan_policy='omit'" if name != "human_pilot" else ""
    check_unique_index(human.index, name)
    check_unique_index(judge.index, "judge")  # pandas keeps the hash table it builds here for get_indexer below
    values = judge.to_numpy(dtype=float)
    positions = judge.index.get_indexer(human.index)
    if (positions < 0).any():
        missing = human.index[positions < 0]
        raise ValueError(f"`{name}` has {len(missing)} case id(s) that `judge` does not score, e.g. "
                         f"{missing[:3].tolist()}; every labelled case needs a judge score ({name}'s index must be a "
                         "subset of judge's).")
    y = human.to_numpy(dtype=float)
    no_score = np.isnan(values)
    if no_score.any() and nan_policy == "raise":
        raise ValueError(f"`judge` has {int(no_score.sum())} missing score(s), e.g. for case "
                         f"{judge.index[no_score][0]!r}; drop them{omit}.")
    no_label = np.isnan(y)
    if no_label.any() and nan_policy == "raise":
        raise ValueError(f"`{name}` has {int(no_label.sum())} missing label(s), e.g. for case "
                         f"{human.index[no_label][0]!r}; drop them" + (f"{omit} (the case then counts as unlabelled)"
                                                                          if omit else "") + ".")
    if not (no_score.any() or no_label.any()):
        return y, positions, None, values
    # omit: a case without a judge score is dropped; a case without a label is unlabelled
    ok = ~no_score[positions] & ~no_label
    positions = positions[ok]
    unlabelled = ~no_score
    unlabelled[positions] = False
    return y[ok], positions, unlabelled, values


def _codes(by, judge: pd.Series, name: str = "by"):
    """Segment codes aligned with ``judge`` (-1 never occurs) and the segment names."""
    if isinstance(by, pd.Series):
        aligned = by.reindex(judge.index) if not by.index.equals(judge.index) else by
        if aligned.isna().any():
            raise ValueError(f"`{name}` has no segment for {int(aligned.isna().sum())} case(s), e.g. "
                             f"{judge.index[aligned.isna().to_numpy()][0]!r}; give every judged case a segment.")
        values = aligned.to_numpy()
        label = by.name if by.name is not None else "segment"
    else:
        values = np.asarray(by)
        if values.ndim != 1 or len(values) != len(judge):
            raise ValueError(f"`{name}` must be a Series indexed by case id or a sequence as long as `judge` "
                             f"({len(judge)}); got {type(by).__name__} of length {len(values)}.")
        label = "segment"
    codes, names = pd.factorize(values, sort=True)
    return codes, pd.Index(names, name=label)


# ---------------------------------------------------------------------------------------------- kernel
def _moments(y, values, positions, unlabelled, codes=None, k: int = 1) -> dict:
    """Per-segment counts, means and population (co)variances of the labelled pairs and the unlabelled scores.

    ``positions`` locate the labelled cases in ``values``; ``unlabelled`` is a mask of the unlabelled cases, or
    None when they are all the other cases (then no copy of ``values`` is made). ``codes`` give each case's
    segment (None: one segment). Variances are two-pass (centred), so large offsets lose no precision.
    """
    yhat = values[positions]
    with np.errstate(invalid="ignore", divide="ignore"):
        if codes is None:
            n = float(len(y))
            my, mh = y.mean() if n else np.nan, yhat.mean() if n else np.nan
            dy, dh = y - my, yhat - mh
            if unlabelled is None:
                big_n = float(len(values) - n)
                mu = (values.sum() - yhat.sum()) / big_n
                du_all, du_lab = values - mu, yhat - mu
                vu = max(np.dot(du_all, du_all) - np.dot(du_lab, du_lab), 0.0) / big_n
            else:
                rest = values[unlabelled]
                big_n = float(len(rest))
                mu, vu = (rest.mean(), rest.var()) if big_n else (np.nan, np.nan)
            one = lambda v: np.array([v], dtype=float)  # noqa: E731
            return {"n": one(n), "N": one(big_n), "my": one(my), "mh": one(mh), "mu": one(mu),
                    "vy": one(np.dot(dy, dy) / n), "vh": one(np.dot(dh, dh) / n), "cyh": one(np.dot(dy, dh) / n),
                    "vu": one(vu)}
        if unlabelled is None:
            unlabelled = np.ones(len(values), dtype=bool)
            unlabelled[positions] = False
        codes_l, codes_u, rest = codes[positions], codes[unlabelled], values[unlabelled]
        n = np.bincount(codes_l, minlength=k).astype(float)
        big_n = np.bincount(codes_u, minlength=k).astype(float)
        my = np.bincount(codes_l, y, minlength=k) / n
        mh = np.bincount(codes_l, yhat, minlength=k) / n
        mu = np.bincount(codes_u, rest, minlength=k) / big_n
        dy, dh, du = y - my[codes_l], yhat - mh[codes_l], rest - mu[codes_u]
        return {"n": n, "N": big_n, "my": my, "mh": mh, "mu": mu,
                "vy": np.bincount(codes_l, dy * dy, minlength=k) / n,
                "vh": np.bincount(codes_l, dh * dh, minlength=k) / n,
                "cyh": np.bincount(codes_l, dy * dh, minlength=k) / n,
                "vu": np.bincount(codes_u, du * du, minlength=k) / big_n}


def _spread(m: dict):
    """Mean and sum of squared deviations of every judge score (labelled and unlabelled) per segment."""
    n, big_n = m["n"], m["N"]
    total = n + big_n
    mu = np.nan_to_num(m["mu"])
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_all = (n * m["mh"] + big_n * mu) / total
        ss_all = n * m["vh"] + big_n * np.nan_to_num(m["vu"]) + n * (m["mh"] - mean_all) ** 2 + big_n * (mu - mean_all) ** 2
    return mean_all, ss_all


def _constant(m: dict):
    """Segments whose judge gives every case the same score (up to rounding in the sums)."""
    mean_all, ss_all = _spread(m)
    return ss_all <= (m["n"] + m["N"]) * (1e-12 * np.abs(mean_all)) ** 2


def _estimate(m: dict, method: str):
    """Estimate, standard error and lam per segment, from :func:`_moments` (ppi_py's formulas for the mean)."""
    n, big_n = m["n"], m["N"]
    total = n + big_n
    mean_all, ss_all = _spread(m)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "judge":
            return mean_all, np.sqrt(ss_all / total / total), np.full_like(n, np.nan)
        if method == "ppi++":
            # lam = Cov(Y, Yhat) / ((1 + n/N) Var(all judge scores, ddof=1)), as ppi_py's _calc_lam_glm for a mean
            lam = np.clip(m["cyh"] / ((1 + n / big_n) * ss_all / (total - 1)), 0.0, 1.0)
        else:
            lam = np.full_like(n, 1.0 if method == "ppi" else 0.0)
        lam = np.where((big_n == 0) | _constant(m) | np.isnan(lam), 0.0, lam)  # no unlabelled case / constant judge
        active = lam > 0
        estimate = m["my"] + np.where(active, lam * (m["mu"] - m["mh"]), 0.0)
        rect_var = np.maximum(m["vy"] + lam**2 * m["vh"] - 2 * lam * m["cyh"], 0.0)
        var = np.where(active, lam**2 * m["vu"] / big_n, 0.0) + rect_var / n
    return estimate, np.sqrt(var), lam


def _finite_estimate(m: dict, method: str):
    """Estimate, standard error and lam for the mean over exactly the given cases (labels drawn without replacement).

    The difference estimator of survey sampling: ``lam * mean(every judge score) + mean(labels - lam * judge)``
    over the labelled cases, with variance ``(1 - n / T) * S^2(labels - lam * judge) / n`` (``S^2`` with ``ddof=1``,
    T the number of cases); lam for PPI++ is ``Cov(labels, judge) / Var(judge)`` clipped to [0, 1].
    """
    n, big_n = m["n"], m["N"]
    total = n + big_n
    mean_all, ss_all = _spread(m)
    with np.errstate(invalid="ignore", divide="ignore"):
        if method == "judge":
            return mean_all, np.zeros_like(n), np.full_like(n, np.nan)
        if method == "ppi++":
            lam = np.clip(m["cyh"] / (ss_all / total), 0.0, 1.0)
        else:
            lam = np.full_like(n, 1.0 if method == "ppi" else 0.0)
        lam = np.where((big_n == 0) | _constant(m) | np.isnan(lam), 0.0, lam)
        estimate = m["my"] + lam * (mean_all - m["mh"])
        rect_var = np.maximum(m["vy"] + lam**2 * m["vh"] - 2 * lam * m["cyh"], 0.0) * n / (n - 1)
        var = (1 - n / total) * rect_var / n
    return estimate, np.sqrt(var), lam


def _quantile(kind: str, level, df=None, alternative: str = "two-sided"):
    q = 0.5 + np.asarray(level) / 2 if alternative == "two-sided" else np.asarray(level)
    return stats.norm.ppf(q) if kind == "clt" else stats.t.ppf(q, df)


def _interval(estimate, se, confidence_level, alternative="two-sided", kind="clt", df=None):
    q = _quantile(kind, confidence_level, df, alternative)
    if alternative == "two-sided":
        return estimate - q * se, estimate + q * se
    if alternative == "greater":
        return estimate - q * se, np.full_like(estimate, np.inf)
    return np.full_like(estimate, -np.inf), estimate + q * se


ADJUST = (None, "bonferroni", "holm", "bh", "by")


def _level(confidence_level, adjust, k: int) -> float:
    """Per-interval confidence level for a family of k segment intervals.

    ``"bonferroni"`` and ``"holm"`` make the k intervals simultaneous (all hold together with probability at least
    ``confidence_level``; Holm's step-down gains nothing for intervals, so its intervals are Bonferroni's).
    ``"bh"`` and ``"by"`` control the false coverage-statement rate (Benjamini & Yekutieli 2005) of the reported
    intervals, whose level is ``1 - R alpha / k`` (BY: divided by H_k = 1 + 1/2 + ... + 1/k) for R selected of k;
    this is the level when every segment is reported (R = k): the marginal one for BH, ``1 - alpha / H_k`` for BY.
    With a ``null`` to select by, :func:`_inference` sets the level of the selected intervals itself.
    """
    check_option(adjust, list(ADJUST), "adjust")
    alpha = 1 - confidence_level
    if adjust is None or k <= 1:
        return confidence_level
    if adjust in ("bonferroni", "holm"):
        return 1 - alpha / k
    if adjust == "bh":
        return confidence_level
    return 1 - alpha / float(np.sum(1.0 / np.arange(1, k + 1)))


def _warn_degenerate(m: dict, methods: list[str], names) -> None:
    few = m["n"] < 2
    if few.any():
        where = "" if names is None else f" in segment(s) {names[few].tolist()[:5]}"
        warnings.warn(f"fewer than 2 human labels{where}: no interval can be estimated there (NaN row).",
                      EvalkitWarning, stacklevel=3)
    if any(x in methods for x in ("ppi", "ppi++")):
        if ((m["N"] == 0) & ~few).any():
            warnings.warn("every case is labelled: there is no unlabelled case for the judge to add, so PPI and "
                          "PPI++ equal the classical estimate (lam = 0).", EvalkitWarning, stacklevel=3)
        constant = _constant(m)
        if (constant & ~few).any():
            warnings.warn("the judge gives every case the same score: it carries no information, so PPI and PPI++ "
                          "equal the classical estimate.", EvalkitWarning, stacklevel=3)


INTERVALS = ("auto", "betting", "clt", "t")
#: Large-sample intervals (``"clt"``, ``"t"``, cluster-robust) are not given below this many labels (or clusters):
#: the coverage harness measures them below nominal there on bounded, skewed data; betting intervals hold at any n.
MIN_LARGE_SAMPLE = 30
#: The cluster-robust intervals (``interval="t"`` or ``"clt"`` with ``cluster``) are not given below this many
#: clusters (see :data:`evalkit._stats.MIN_CLUSTERS`); the default with clusters, the betting interval over whole
#: clusters, needs no minimum (few clusters give a wide interval).
MIN_CLUSTERS = _stats.MIN_CLUSTERS
_WEIGHT = {"ppi++": "tuned", "ppi": 1.0, "classical": 0.0}


def _resolve_interval(interval, cluster, finite_population) -> str:
    check_option(interval, list(INTERVALS), "interval")
    if interval == "auto":
        return "betting"
    return interval


def _bounds(bounds, y, values):
    """The labels' scale ends: given, (0, 1) for 0/1 data, else the smallest and largest value seen."""
    seen = np.concatenate([y[~np.isnan(y)], values[~np.isnan(values)]])
    if bounds is None:
        if seen.size and np.isin(seen, (0.0, 1.0)).all():
            return 0.0, 1.0
        return float(seen.min()), float(seen.max())
    try:
        low, high = (float(v) for v in bounds)
    except (TypeError, ValueError):
        raise ValueError(f"`bounds` must be a pair (low, high) of the scale's ends, e.g. (1, 5); got {bounds!r}.") from None
    if not low < high:
        raise ValueError(f"`bounds` must have low < high; got {bounds!r}.")
    labels = y[~np.isnan(y)]
    if labels.size and (labels.min() < low or labels.max() > high):
        raise ValueError(f"`human` has labels outside `bounds` {bounds!r} (from {labels.min():g} to {labels.max():g}).")
    return low, high


def _betting_order(n: int) -> np.ndarray:
    """A fixed pseudo-random order of n labels (taken in the judge's case order first): the betting interval is
    a function of the labelled set, not of the order the labels were handed over in."""
    return np.random.default_rng(n).permutation(n)


def _segment_arrays(y, values, positions, unlabelled, codes, segment):
    """Labels, their judge scores (in the judge's case order) and the unlabelled scores of one segment."""
    rest_mask = np.ones(len(values), dtype=bool) if unlabelled is None else unlabelled.copy()
    if unlabelled is None:
        rest_mask[positions] = False
    in_segment = np.ones(len(positions), dtype=bool) if codes is None else codes[positions] == segment
    order = np.argsort(positions[in_segment], kind="stable")
    pos = positions[in_segment][order]
    ys = y[in_segment][order]
    rest = rest_mask if codes is None else rest_mask & (codes == segment)
    return ys, values[pos], pos, np.flatnonzero(rest)


def _betting_rows(arrays, methods, level, bounds, judge_bounds, finite_population, alternative="two-sided",
                  degenerate=False, null=None):
    """Betting interval ends per method for one segment (``degenerate``: a constant judge or no unlabelled case,
    where PPI and PPI++ are the classical estimate); with ``null``, whether each interval excludes it."""
    if null is not None:
        return {method: _betting_excludes(arrays, method, level, bounds, judge_bounds, finite_population, alternative,
                                          degenerate, null) for method in methods}
    y, yhat, _, rest_idx, values = arrays
    out = {}
    if alternative != "two-sided":
        level = 1 - 2 * (1 - level)  # each bettor spends half the error rate: one end of a 1 - 2 alpha interval
    order = _betting_order(len(y))
    for method in methods:
        if method == "judge":
            every = values[np.concatenate([arrays[2], rest_idx])]
            if finite_population:
                low = high = float(every.mean())
            elif len(every) <= _stats.BETTING_MAX_UNLABELLED:
                low, high = _stats.betting_interval(every, *judge_bounds, confidence_level=level, theta_range=judge_bounds)
            else:
                low, high = _stats.empirical_bernstein_interval(every, *judge_bounds, level)
        elif len(y) < 1:
            low = high = np.nan
        else:
            weight = 0.0 if degenerate else _WEIGHT[method]
            low, high = _stats.ppi_betting(y[order], yhat[order], values[rest_idx], weight=weight, bounds=bounds,
                                           judge_bounds=judge_bounds, confidence_level=level,
                                           finite_population=finite_population)
        if alternative == "greater":
            high = np.inf
        elif alternative == "less":
            low = -np.inf
        out[method] = (float(low), float(high))
    return out


def _betting_excludes(arrays, method, level, bounds, judge_bounds, finite_population, alternative, degenerate, null):
    """Whether one segment's betting interval (as :func:`_betting_rows`) excludes ``null``, without finding its ends."""
    y, yhat, _, rest_idx, values = arrays
    if alternative != "two-sided":
        level = 1 - 2 * (1 - level)
    if method == "judge":
        every = values[np.concatenate([arrays[2], rest_idx])]
        if finite_population or len(every) > _stats.BETTING_MAX_UNLABELLED:
            low, high = _betting_rows(arrays, [method], level, bounds, judge_bounds, finite_population)[method]
            below, above = null < low, null > high
        else:
            below, above = _stats.betting_interval(every, *judge_bounds, confidence_level=level,
                                                   theta_range=judge_bounds, null=null)
    else:
        order = _betting_order(len(y))
        below, above = _stats.ppi_betting(y[order], yhat[order], values[rest_idx], weight=0.0 if degenerate else
                                          _WEIGHT[method], bounds=bounds, judge_bounds=judge_bounds,
                                          confidence_level=level, finite_population=finite_population, null=null)
    below, above = bool(below), bool(above)
    return {"two-sided": below or above, "greater": below, "less": above}[alternative]


def _exact_rows(y, level, alternative="two-sided"):
    """Clopper-Pearson ends for 0/1 labels (one-sided: one end of the 1 - 2 alpha interval, as for betting)."""
    if alternative != "two-sided":
        level = 1 - 2 * (1 - level)
    low, high = (float(v) for v in _stats.clopper_pearson(float(np.sum(y)), float(len(y)), level))
    if alternative == "greater":
        high = np.inf
    elif alternative == "less":
        low = -np.inf
    return low, high


#: Why PPI and PPI++ get no default interval with clusters (the note of their rows).
CLUSTER_PPI_NOTE = ("no finite-sample interval for PPI with clusters; interval='t' gives the large-sample "
                    "cluster-robust one (50+ clusters), method='classical' the betting one")


def _cluster_betting(arrays, groups, method, level, bounds, judge_bounds, alternative, bound, null=None):
    """The betting interval over whole clusters (:func:`evalkit._stats.cluster_betting_interval`) of one segment's
    labels (``"judge"``: of its judge scores on every case), clusters in a fixed pseudo-random order of their codes;
    with ``null``, whether the interval excludes it (as :func:`_betting_excludes`)."""
    y, _, pos, rest_idx, values = arrays
    if method == "judge":
        every = np.concatenate([pos, rest_idx])
        x, ids, (lo, hi) = values[every], groups[every], judge_bounds
    else:
        x, ids, (lo, hi) = y, groups[pos], bounds
    if alternative != "two-sided":
        level = 1 - 2 * (1 - level)
    inverse = np.unique(ids, return_inverse=True)[1].ravel()
    totals, sizes = np.bincount(inverse, weights=x), np.bincount(inverse).astype(float)
    order = _betting_order(len(totals))
    found = _stats.cluster_betting_interval(totals[order], sizes[order], lo, hi, bound=bound, confidence_level=level,
                                            theta_range=(lo, hi), null=null)
    if null is not None:
        below, above = bool(found[0]), bool(found[1])
        return {"two-sided": below or above, "greater": below, "less": above}[alternative]
    low, high = float(found[0]), float(found[1])
    return (low, np.inf) if alternative == "greater" else (-np.inf, high) if alternative == "less" else (low, high)


def _cluster_se(arrays, groups, method, lam):
    """Cluster-robust standard error of one segment's estimate and the number of clusters (sandwich, G/(G-1))."""
    y, yhat, pos, rest_idx, values = arrays
    if method == "judge":
        every = np.concatenate([pos, rest_idx])
        h = values[every]
        contributions, g = (h - h.mean()) / len(h), groups[every]
    else:
        r = y - lam * yhat
        parts, ids = [(r - r.mean()) / len(r)], [groups[pos]]
        if lam > 0 and len(rest_idx):
            u = values[rest_idx]
            parts.append(lam * (u - u.mean()) / len(u))
            ids.append(groups[rest_idx])
        contributions, g = np.concatenate(parts), np.concatenate(ids)
    var, n_clusters = _stats.cluster_variance(contributions, g)
    return np.sqrt(var), n_clusters


def _inference(judge: pd.Series, human: pd.Series, *, methods, interval, confidence_level, by, adjust, cluster, bounds,
               finite_population, nan_policy, alternative="two-sided", keep_se=False, null=None):
    """The table of :func:`mean` (``keep_se``: with each row's standard error and degrees of freedom, for p-values)."""
    auto = interval == "auto"
    interval = _resolve_interval(interval, cluster, finite_population)
    if null is not None:
        null = check_number(null, "null")
        if adjust not in ("bh", "by"):
            raise ValueError(f"`null` selects segments for adjust='bh' or 'by' (false coverage-statement rate); got "
                             f"adjust={adjust!r}.")
    if cluster is not None and finite_population:
        raise ValueError("`cluster=` with `finite_population=True` is not supported: the finite-population correction "
                         "here assumes cases drawn one by one, not clusters.")
    y, positions, unlabelled, values = _align(judge, human, nan_policy)
    if len(y) < 2 and by is None:
        raise ValueError(f"`human` must hold at least 2 labels (with a score and a label); got {len(y)}.")
    codes, names = (None, None) if by is None else _codes(by, judge)
    groups = None if cluster is None else as_clusters(cluster, judge.index)[0]
    # the largest cluster among every case given, labelled or not: fixed before any label is seen
    bound = None if groups is None else float(np.bincount(groups).max())
    k = 1 if names is None else len(names)
    m = _moments(y, values, positions, unlabelled, codes, k) if codes is not None else _moments(y, values, positions, unlabelled)
    _warn_degenerate(m, methods, names)
    scale = _bounds(bounds, y, values)
    judge_bounds = (float(np.nanmin(values)), float(np.nanmax(values)))
    level = _level(confidence_level, adjust, 1 if names is None else int((m["n"] >= 2).sum()))
    # the human-only interval of 0/1 labels by default: Clopper-Pearson, exact and narrower than betting there
    exact = auto and groups is None and not finite_population and scale == (0.0, 1.0) and bool(np.isin(y, (0.0, 1.0)).all())
    rows, refused, refused_ppi = [], [], []

    def ends(method, s, arrays, est, se, lam, level_):
        """One segment's interval at ``level_``: (low, high) and the row's extra fields."""
        extra = {}
        n_lab = int(m["n"][s])
        if interval == "betting" and exact and method == "classical":  # 0/1 labels: the exact interval
            return (*_exact_rows(arrays[0], level_, alternative), extra)
        if interval == "betting" and groups is not None:
            extra["n_clusters"] = int(np.unique(groups[arrays[2] if method != "judge" else
                                                       np.concatenate([arrays[2], arrays[3]])]).size)
            degenerate = bool(m["N"][s] == 0 or _constant(m)[s])
            if method in ("ppi", "ppi++") and not degenerate:
                extra["note"], extra["_refused"] = CLUSTER_PPI_NOTE, "ppi"
                return np.nan, np.nan, extra
            return (*_cluster_betting(arrays, groups, method, level_, scale, judge_bounds, alternative, bound), extra)
        if interval == "betting":
            degenerate = bool(m["N"][s] == 0 or _constant(m)[s])
            return (*_betting_rows(arrays, [method], level_, scale, judge_bounds, finite_population, alternative,
                                   degenerate)[method], extra)
        size, df, s_e = n_lab, n_lab - 1, se[s]
        if method == "judge":
            size, df = n_lab + int(m["N"][s]), n_lab + int(m["N"][s]) - 1
        if groups is not None:
            s_e, size = _cluster_se(arrays, groups, method, lam[s] if method != "judge" else 0.0)
            df = size - 1
            extra["n_clusters"] = size
        extra["_se"], extra["_df"] = s_e, df
        least = MIN_CLUSTERS if groups is not None else MIN_LARGE_SAMPLE
        if size < least and not (finite_population and s_e == 0):
            what = "clusters" if groups is not None else "labels"
            extra["note"] = (f"{size} {what} < {least}: a large-sample interval is not backed here"
                             + ("" if groups is not None else "; use interval='betting'"))
            extra["_refused"] = True
            return np.nan, np.nan, extra
        low, high = _interval(np.array([est[s]]), np.array([s_e]), level_, alternative, interval, df)
        return float(low[0]), float(high[0]), extra

    selective = null is not None
    alpha = 1 - confidence_level
    selected_levels = {}
    for method in methods:
        est, se, lam = (_finite_estimate if finite_population else _estimate)(m, method)
        method_rows = []
        for s in range(k):
            arrays = (*_segment_arrays(y, values, positions, unlabelled, codes, s), values)
            n_lab = int(m["n"][s])
            row = {"estimate": est[s] if (n_lab >= 2 or method == "judge") else np.nan, "ci_low": np.nan,
                   "ci_high": np.nan, "n_labelled": n_lab, "n_unlabelled": int(m["N"][s]), "lam": lam[s],
                   "method": method, "interval": "cluster-t" if (groups is not None and interval == "t") else
                   "cluster-betting" if (groups is not None and interval == "betting") else
                   "cluster-clt" if groups is not None else
                   "clopper-pearson" if (interval == "betting" and exact and method == "classical") else interval,
                   "note": ""}
            if names is not None:
                row = {names.name: names[s], **row}
            has = n_lab >= 2 or method == "judge"
            if has and selective:  # the test of "this segment's mean is `null`": where its interval stops holding it
                def excludes(a, method=method, s=s, arrays=arrays, est=est, se=se, lam=lam):
                    if interval == "betting" and groups is not None:
                        return _cluster_betting(arrays, groups, method, 1 - a, scale, judge_bounds, alternative,
                                                bound, null=null)
                    if interval == "betting" and not (exact and method == "classical"):
                        return _betting_rows(arrays, [method], 1 - a, scale, judge_bounds, finite_population,
                                             alternative, bool(m["N"][s] == 0 or _constant(m)[s]), null=null)[method]
                    low_, high_, _ = ends(method, s, arrays, est, se, lam, 1 - a)
                    return not (low_ <= null <= high_)

                check = (ends(method, s, arrays, est, se, lam, level)[2]
                         if interval != "betting" or groups is not None else {})
                if check.get("_refused"):  # no interval here, so no test from it either
                    row["note"], row["p_val"] = check["note"], np.nan
                    (refused_ppi if check["_refused"] == "ppi" else refused).append(names[s] if names is not None else method)
                else:
                    row["p_val"] = _stats.betting_p_value(excludes, tol=1e-5)
            elif selective:
                row["p_val"] = np.nan
            if has and not selective:
                row["ci_low"], row["ci_high"], extra = ends(method, s, arrays, est, se, lam, level)
                why = extra.pop("_refused", False)
                if why:
                    (refused_ppi if why == "ppi" else refused).append(names[s] if names is not None else method)
                row.update(extra)
            method_rows.append((row, s, arrays))
        if selective:  # Benjamini & Yekutieli (2005): select by BH (BY), then intervals at 1 - R alpha / m (/ H_m)
            p = np.array([r["p_val"] for r, _, _ in method_rows], dtype=float)
            chosen = (_stats.adjust_p_values(p, adjust) <= alpha) & ~np.isnan(p)
            m_tests, selected = int((~np.isnan(p)).sum()), int(chosen.sum())
            harmonic = 1.0 if adjust == "bh" else float(np.sum(1.0 / np.arange(1, max(m_tests, 1) + 1)))
            fcr_level = 1 - selected * alpha / (max(m_tests, 1) * harmonic)
            for (row, s, arrays), pick in zip(method_rows, chosen, strict=True):
                row["selected"] = bool(pick)
                if pick:
                    row["ci_low"], row["ci_high"], extra = ends(method, s, arrays, est, se, lam, fcr_level)
                    extra.pop("_refused", None)
                    row.update(extra)
                elif not np.isnan(row["p_val"]):
                    row["note"] = f"not selected ({adjust.upper()} at {alpha:g} against {null:g})"
            selected_levels[method] = fcr_level
        rows.extend(row for row, _, _ in method_rows)
    if refused:
        warnings.warn(f"{interval} intervals need at least {MIN_LARGE_SAMPLE} labels ({MIN_CLUSTERS} clusters); not given for "
                      f"{sorted(set(map(str, refused)))[:6]}: the estimate stands, the interval is NaN with a note. "
                      "interval='betting' holds at any number of labels.", EvalkitWarning, stacklevel=3)
    if refused_ppi:
        warnings.warn(f"{sorted(set(methods) & {'ppi', 'ppi++'})} with `cluster=`: no finite-sample interval (NaN with a "
                      "note; the estimate stands). interval='t' gives the large-sample cluster-robust interval (50 or "
                      "more clusters); method='classical' the betting interval over whole clusters, valid at any number "
                      "of clusters.", EvalkitWarning, stacklevel=3)
    out = pd.DataFrame(rows)
    if not keep_se:
        out = out.drop(columns=[c for c in ("_se", "_df") if c in out.columns])
    if groups is not None and "n_clusters" not in out.columns:
        out["n_clusters"] = pd.NA
    if selective:
        out.attrs.update(null=null, selected_confidence_level=selected_levels)
    out.attrs.update(confidence_level=level, joint_confidence_level=confidence_level if adjust else None, adjust=adjust,
                     interval=interval, cluster=None if cluster is None else getattr(cluster, "name", "cluster"),
                     population="finite" if finite_population else "superpopulation", bounds=scale)
    return out


# ---------------------------------------------------------------------------------------------- public
def mean(judge: pd.Series, human: pd.Series, *, method="ppi++", interval: str = "auto", confidence_level: float = 0.95,
         by=None, adjust: str | None = None, null=None, cluster=None, bounds=None, finite_population: bool = False,
         nan_policy: str = "raise") -> pd.DataFrame:
    """The humans' mean over all cases, from judge scores on every case and human labels on a random subset.

    Parameters
    ----------
    judge : Series
        One score per case, indexed by case id (unique): numbers (e.g. TCVA scores), PASS/FAIL verdicts or
        booleans (PASS = 1, FAIL = 0).
    human : Series
        The human labels of the labelled cases, on the same scale; its index must be a subset of ``judge``'s.
        The cases of ``judge`` it does not name are the unlabelled ones.
    method : str or list of str, default "ppi++"
        The estimator: ``"ppi++"`` (power-tuned lam, clipped to [0, 1]), ``"ppi"`` (lam = 1), ``"classical"``
        (human labels only, lam = 0) or ``"judge"`` (the judge's mean over all cases with its sampling interval:
        what a judge-only report claims; it ignores the labels and is biased whenever the judge is).
    interval : {"auto", "betting", "clt", "t"}, default "auto"
        How the interval is made. ``"betting"`` (the default without ``cluster``): the betting confidence
        interval of Waudby-Smith & Ramdas (2024) on the labels, whose coverage is at least ``confidence_level``
        at every number of labels for scores within ``bounds``. For PPI and PPI++ each label bets on its
        rectified value plus the judge's mean over its own block of unlabelled cases (so the judge's uncertainty
        is carried without spending part of the error rate on it); PPI++ clips a judge with many distinct scores
        to its 5% and 95% quantiles and weighs it, label by label from the earlier labels only, as much as
        narrows the interval: with few labels or a weak judge that is little, and the interval is close to the
        humans-only one. With ``"auto"``, ``"classical"`` on 0/1 labels gets the exact Clopper-Pearson interval
        (narrower there; the interval column says ``clopper-pearson``).
        ``"clt"``: the normal interval of ``ppi_py`` (population variances); ``"t"``: the same standard error
        with Student's t on n - 1 degrees of freedom. Both are large-sample intervals that run short on bounded,
        skewed labels at 20-100 labels (see the coverage harness), and are not given (NaN, a note and a
        warning) below ``MIN_LARGE_SAMPLE`` labels. With ``cluster``, ``"auto"`` and ``"betting"`` are the
        betting interval over whole clusters, and ``"t"`` and ``"clt"`` the cluster-robust intervals (see ``cluster``).
    confidence_level : float, default 0.95
    by : Series or sequence, optional
        Segment names (e.g. the system), a Series indexed by case id or a sequence as long as ``judge``: one
        estimate per segment, with lam tuned within each.
    adjust : {None, "bonferroni", "holm", "bh", "by"}, default None
        The family of segment intervals. ``"bonferroni"`` and ``"holm"``: simultaneous intervals, each at
        ``1 - (1 - confidence_level) / k`` for k segments, so that all k hold together with probability at
        least ``confidence_level`` (Holm's step-down improves tests, not intervals: its intervals are
        Bonferroni's). ``"bh"`` and ``"by"``: the false coverage-statement rate (FCR) of Benjamini & Yekutieli
        (2005), the expected share of the reported intervals that miss, is kept below alpha = 1 -
        ``confidence_level``. Their FCR-adjusted intervals are for the R segments *selected* out of m: with
        ``null``, the segments whose mean the BH (BY) procedure at alpha finds different from ``null``, each
        interval at ``1 - R alpha / m`` (BY: ``1 - R alpha / (m (1 + 1/2 + ... + 1/m))``, valid under any
        dependence), the others without one. Without ``null`` every segment is reported (R = m): BH's level is
        the marginal one and BY's ``1 - alpha / (1 + ... + 1/m)``; that bounds the share of misses among all of
        them, not among a few picked out afterwards by eye (for those, use ``"bonferroni"``). None of these make
        the intervals hold together.
    null : float, optional
        With ``adjust="bh"`` or ``"by"``: the value each segment's mean is tested against (e.g. a pass-rate target).
        Each segment's p-value (column ``p_val``) is the smallest error rate at which its interval excludes
        ``null``; ``selected`` says which segments the procedure picked, and only those get an interval.
    cluster : Series or sequence, optional
        Cluster ids (claims of one item, runs of one case, turns of one conversation), a Series indexed by case
        id or a sequence as long as ``judge``, covering every case, labelled or not; the labelled clusters are a
        random sample of clusters. The default (``"auto"`` or ``"betting"``) is the betting interval over whole
        clusters: cluster g's label total T_g and label count m_g satisfy E[T_g - theta m_g] = 0 for the per-case
        mean theta, and each cluster, in a fixed pseudo-random order, bets on ``(T_g - theta m_g) / M`` (M the
        largest cluster among all the cases given, so fixed before any label is seen), with the hedged bets of
        ``"betting"`` truncated so that the capital stays non-negative whatever m_g is: at least
        ``confidence_level`` coverage at every number of clusters (few clusters give a wide interval; with every
        cluster of size 1 it is the ``"betting"`` interval). It is given for ``"classical"`` and ``"judge"``; PPI
        and PPI++ get none with clusters (NaN, a note and a warning), since their rectifier over whole clusters
        is not built here. ``"t"``: the cluster-robust t (the sandwich with statsmodels' G / (G - 1) factor; for
        ``"classical"`` equal to ``sm.OLS(y, 1).fit(cov_type="cluster")``; for PPI the cluster-robust form of its
        variance, labelled and unlabelled cases of one cluster together) on G - 1 degrees of freedom, not given
        below ``MIN_CLUSTERS`` (50) clusters; it runs short on skewed 0/1 labels even at 100 clusters (the
        coverage harness measures 0.92 at a pass rate of 0.95); ``"clt"`` likewise with the normal.
    bounds : (float, float), optional
        The ends of the labels' scale, e.g. ``(1, 5)``, which the betting interval relies on. Default: (0, 1)
        for 0/1 labels and scores, else the smallest and largest value among the labels and judge scores; give
        the scale when some of its values may be absent from the data.
    finite_population : bool, default False
        The estimand. False: the mean of the population the cases were drawn from (the judge's mean itself is
        then uncertain). True: the mean over exactly the cases given, the labels a random sample of them drawn
        without replacement: the judge's mean over them is known, the interval carries the finite-population
        correction and has width 0 once every case is labelled.
    nan_policy : {"raise", "omit"}, default "raise"
        ``"omit"`` drops cases without a judge score and treats cases whose label is missing as unlabelled.

    Returns
    -------
    DataFrame
        One row per method (and segment, first column named after ``by``): ``estimate, ci_low, ci_high,
        n_labelled, n_unlabelled, lam, method, interval, note`` (and ``n_clusters`` with ``cluster``; ``p_val``
        and ``selected`` with ``null``);
        ``interval`` names the interval method, ``note`` says why an interval was not given; ``lam`` is the
        weight the judge got (1 for PPI, 0 for classical, NaN for the judge-only row). ``attrs`` hold
        ``confidence_level`` (each interval's, after any adjustment; k counts the segments with an estimate),
        ``joint_confidence_level``, ``adjust``, ``interval``, ``cluster``, ``population`` and ``bounds`` (with
        ``null``, also ``null`` and ``selected_confidence_level``: each method's level of its selected intervals). A
        segment with fewer than 2 labels gets a NaN row and a warning; with a constant judge, or no unlabelled
        case, PPI and PPI++ get lam = 0 (the classical estimate) and a warning.

    Raises
    ------
    ValueError
        Labels for cases the judge did not score, missing values under ``nan_policy="raise"``, fewer than 2
        labels in all, labels outside ``bounds``, or ``cluster`` with ``finite_population=True``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.integers(1, 6, 2000).astype(float)
    >>> judge = pd.Series(np.clip(truth + rng.normal(0.5, 0.5, 2000), 1, 5), index=[f"c{i}" for i in range(2000)])
    >>> human = pd.Series(truth[:150], index=judge.index[:150])
    >>> table = infer.mean(judge, human, method=["ppi++", "classical", "judge"], bounds=(1, 5))
    >>> table[["method", "estimate", "ci_low", "ci_high", "lam", "interval"]].round(3)
          method  estimate  ci_low  ci_high    lam interval
    0      ppi++     3.007   2.848    3.231  0.937  betting
    1  classical     3.100   2.781    3.380  0.000  betting
    2      judge     3.424   3.349    3.497    NaN  betting

    The same labels as 30 whole items of 5 claims each (``cluster``): the interval is over items.

    >>> items = pd.Series(np.arange(2000) // 5, index=judge.index)
    >>> by_item = infer.mean(judge, human, method="classical", cluster=items, bounds=(1, 5))
    >>> by_item[["method", "estimate", "ci_low", "ci_high", "n_clusters", "interval"]].round(3)
          method  estimate  ci_low  ci_high  n_clusters         interval
    0  classical       3.1   2.733    3.388          30  cluster-betting
    """
    methods = _methods(method)
    confidence_level = check_level(confidence_level)
    check_option(nan_policy, ["raise", "omit"], "nan_policy")
    judge, human = _as_scores(judge, "judge"), _as_scores(human, "human")
    return _inference(judge, human, methods=methods, interval=interval, confidence_level=confidence_level, by=by,
                      adjust=adjust, cluster=cluster, bounds=bounds, finite_population=bool(finite_population),
                      nan_policy=nan_policy, null=null)


def difference(judge_a: pd.Series, judge_b: pd.Series, human_a: pd.Series, human_b: pd.Series, *, method="ppi++",
               interval: str = "auto", confidence_level: float = 0.95, alternative: str = "two-sided", cluster=None,
               bounds=None, finite_population: bool = False, nan_policy: str = "raise") -> pd.DataFrame:
    """Paired difference of two systems' human means (A - B), both judged on the same cases.

    The per-case differences ``human_a - human_b`` and ``judge_a - judge_b`` go through the estimator of
    :func:`mean`, with one lam for the difference: pairing removes the case-to-case variation both systems
    share.

    Parameters
    ----------
    judge_a, judge_b : Series
        Scores of system A and B on the same cases (same case ids).
    human_a, human_b : Series
        Human labels of A's and B's outputs. Only cases labelled for both count as labelled (a warning says
        how many labels were set aside).
    method, interval, confidence_level, cluster, finite_population, nan_policy
        As in :func:`mean`.
    alternative : {"two-sided", "greater", "less"}, default "two-sided"
        The alternative to "no difference": ``"greater"`` means A > B. One-sided alternatives give one-sided
        intervals, as in scipy.
    bounds : (float, float), optional
        The ends of the labels' scale (e.g. ``(1, 5)``; the differences then lie in [-4, 4]). Default: (0, 1)
        for 0/1 labels, else the smallest and largest label or judge score seen.

    Returns
    -------
    DataFrame
        One row per method: ``estimate, ci_low, ci_high, p_val, n_labelled, n_unlabelled, lam, method,
        interval, note``. ``p_val`` is the test of "no difference" that matches the interval: for ``"clt"`` the
        z statistic ``estimate / se`` (as ``ppi_py.ppi_mean_pval``), for ``"t"`` Student's t, for
        ``"betting"`` the smallest error rate at which the betting interval excludes 0.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(1)
    >>> ids = [f"c{i}" for i in range(1000)]
    >>> quality = rng.normal(0, 1, 1000)
    >>> ha, hb = quality + 0.2 + rng.normal(0, 0.3, 1000), quality + rng.normal(0, 0.3, 1000)
    >>> ja = pd.Series(ha + rng.normal(0, 0.3, 1000), index=ids)
    >>> jb = pd.Series(hb + rng.normal(0, 0.3, 1000), index=ids)
    >>> labelled = ids[:100]
    >>> res = infer.difference(ja, jb, pd.Series(ha[:100], index=labelled), pd.Series(hb[:100], index=labelled),
    ...                        interval="clt")
    >>> res[["estimate", "ci_low", "ci_high", "p_val"]].round(3)
       estimate  ci_low  ci_high  p_val
    0     0.204   0.144    0.264    0.0
    """
    methods = _methods(method)
    confidence_level = check_level(confidence_level)
    check_option(alternative, ["two-sided", "greater", "less"], "alternative")
    check_option(nan_policy, ["raise", "omit"], "nan_policy")
    ja, jb = _as_scores(judge_a, "judge_a"), _as_scores(judge_b, "judge_b")
    ha, hb = _as_scores(human_a, "human_a"), _as_scores(human_b, "human_b")
    check_unique_index(ha.index, "human_a")
    check_unique_index(hb.index, "human_b")
    check_unique_index(ja.index, "judge_a")
    check_unique_index(jb.index, "judge_b")
    if len(ja) != len(jb) or not ja.index.isin(jb.index).all():
        raise ValueError("`judge_a` and `judge_b` must score the same cases (a paired comparison); they differ, e.g. "
                         f"{ja.index.symmetric_difference(jb.index)[:3].tolist()}.")
    both = ha.index.intersection(hb.index, sort=False)
    set_aside = len(ha) + len(hb) - 2 * len(both)
    if set_aside:
        warnings.warn(f"{set_aside} label(s) belong to cases labelled for only one system; a paired difference "
                      f"uses the {len(both)} cases labelled for both.", EvalkitWarning, stacklevel=2)
    judge = ja - jb.reindex(ja.index)
    human = ha.loc[both] - hb.loc[both]
    if len(both) < 2:
        raise ValueError(f"`human_a` and `human_b`: a paired difference needs at least 2 cases labelled for both "
                         f"systems; got {len(both)}.")
    # checked here, by the names given: the differences below reach the shared alignment as `judge` and `human`
    unscored = both[~both.isin(ja.index)]
    if len(unscored):
        raise ValueError(f"`human_a` and `human_b` label {len(unscored)} case(s) that `judge_a` and `judge_b` do not "
                         f"score, e.g. {unscored[:3].tolist()}; every labelled case needs both judges' scores.")
    for values, name in ((ja, "judge_a"), (jb, "judge_b"), (ha.loc[both], "human_a"), (hb.loc[both], "human_b")):
        if nan_policy == "raise" and values.isna().any():
            raise ValueError(f"`{name}` has {int(values.isna().sum())} missing value(s), e.g. for case "
                             f"{show(values.index[values.isna().to_numpy()][0])}; drop them or pass nan_policy='omit'.")
    if bounds is None:
        seen = np.concatenate([v.to_numpy(dtype=float) for v in (ja, jb, ha, hb)])
        seen = seen[~np.isnan(seen)]
        low, high = (0.0, 1.0) if np.isin(seen, (0.0, 1.0)).all() else (float(seen.min()), float(seen.max()))
    else:
        low, high = _bounds(bounds, np.concatenate([ha.to_numpy(float), hb.to_numpy(float)]), np.array([]))
    scale = (low - high, high - low)
    resolved = _resolve_interval(interval, cluster, finite_population)
    out = _inference(judge, human, methods=methods, interval=interval, confidence_level=confidence_level, by=None,
                     adjust=None, cluster=cluster, bounds=scale, finite_population=bool(finite_population),
                     nan_policy=nan_policy, alternative=alternative, keep_se=True)
    p_values = []
    groups = None if cluster is None else as_clusters(cluster, judge.index)[0]
    for row in out.to_dict("records"):
        if resolved == "betting" and groups is not None:
            y, positions, unlabelled, values = _align(judge, human, nan_policy)
            arrays = (*_segment_arrays(y, values, positions, unlabelled, None, 0), values)
            judge_bounds = (float(np.nanmin(values)), float(np.nanmax(values)))
            bound = float(np.bincount(groups).max())

            def excludes(alpha, method=row["method"], arrays=arrays, judge_bounds=judge_bounds, bound=bound):
                return _cluster_betting(arrays, groups, method, 1 - alpha, scale, judge_bounds, alternative, bound,
                                        null=0.0)

            p_values.append(np.nan if np.isnan(row["ci_low"]) and np.isnan(row["ci_high"]) else
                            _stats.betting_p_value(excludes))
        elif resolved == "betting":
            y, positions, unlabelled, values = _align(judge, human, nan_policy)
            arrays = (*_segment_arrays(y, values, positions, unlabelled, None, 0), values)
            judge_bounds = (float(np.nanmin(values)), float(np.nanmax(values)))

            degenerate = bool(row["n_unlabelled"] == 0 or np.nanmax(values) == np.nanmin(values))

            def excludes(alpha, method=row["method"], arrays=arrays, judge_bounds=judge_bounds, degenerate=degenerate):
                return _betting_rows(arrays, [method], 1 - alpha, scale, judge_bounds, bool(finite_population),
                                     alternative, degenerate, null=0.0)[method]

            p_values.append(_stats.betting_p_value(excludes))
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                z = row["estimate"] / row["_se"]
            dist = stats.norm if resolved == "clt" else stats.t(row["_df"])
            p_values.append({"two-sided": 2 * dist.sf(np.abs(z)), "greater": dist.sf(z), "less": dist.cdf(z)}[alternative])
    out.insert(3, "p_val", np.asarray(p_values, dtype=float))
    return out.drop(columns=["_se", "_df"], errors="ignore")


def pass_rate(results: pd.DataFrame, human: pd.Series, *, checks: pd.DataFrame | None = None, method="ppi++",
              interval: str = "auto", confidence_level: float = 0.95, by=None, adjust: str | None = None, null=None,
              cluster=None, finite_population: bool = False) -> pd.DataFrame:
    """The human pass rate over all judged cases, from a judge results table and a few human labels.

    Verdicts count as in :func:`evalkit.judge.pass_rate`: the rubric's pass levels pass (from
    ``results.attrs["rubric"]``, as :func:`evalkit.judge.run_judge` and :func:`evalkit.judge.load_results` give
    it; ``PASS`` for a PASS/FAIL rubric), every other level (including an unparseable answer) fails, an output
    that fails a code check fails, and error rows (no verdict) are left out, with their human labels, and
    counted in ``n_error``. Intervals are clipped to [0, 1].

    Parameters
    ----------
    results : DataFrame
        A results table (:func:`evalkit.judge.run_judge`); one estimate per ``(rubric, rubric_version, model)``.
    human : Series
        Labels indexed by case id, for a random subset of the cases: PASS/FAIL strings, the rubric's levels
        or booleans (True = pass).
    checks : DataFrame, optional
        :func:`evalkit.checks.run_checks` output (``all_passed`` by case id).
    method, interval, confidence_level, adjust, null, finite_population
        As in :func:`mean` (the scale is 0/1: the betting interval needs no ``bounds``; ``null`` is a pass rate).
    by : str or Series, optional
        A column of ``results`` or a Series of segment names by case id.
    cluster : str or Series, optional
        A column of ``results`` or a Series of cluster ids by case id (as in :func:`mean`).

    Returns
    -------
    DataFrame
        ``rubric, rubric_version, model`` (and the segment), then ``estimate, ci_low, ci_high, n_labelled,
        n_unlabelled, lam, method, interval, note`` (``n_clusters`` with ``cluster``), ``n_error``; ``attrs`` as
        in :func:`mean`, which warns (an :class:`~evalkit.EvalkitWarning`) where it does for each rubric.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import infer
    >>> ids = [f"c{i}" for i in range(12)]
    >>> results = pd.DataFrame({"case_id": ids, "rubric": "support", "rubric_version": "v1", "model": "m",
    ...                         "verdict": ["PASS"] * 8 + ["FAIL"] * 4, "parsed": True, "error": None})
    >>> human = pd.Series(["PASS", "PASS", "FAIL", "FAIL", "FAIL"], index=["c0", "c1", "c2", "c8", "c9"])
    >>> table = infer.pass_rate(results, human, method=["ppi++", "classical", "judge"])
    >>> table[["method", "estimate", "n_labelled", "n_unlabelled", "lam"]].round(3)
          method  estimate  n_labelled  n_unlabelled    lam
    0      ppi++     0.444           5             7  0.385
    1  classical     0.400           5             7  0.000
    2      judge     0.667           5             7    NaN
    """
    from evalkit._coerce import verdict_levels

    levels, passing = verdict_levels(check_dataframe(results, "results"))  # the rubric's, as judge.pass_rate reads them
    results = results.reset_index(drop=True)  # concatenated runs repeat labels
    results.attrs = {}  # a new frame: the rubric is read above, and pandas would copy the metadata at every step
    check_columns(results, ["case_id", "rubric", "rubric_version", "model", "verdict", "error"], "results")
    methods = _methods(method)
    human = _as_scores(human, "human", levels=levels, pass_levels=passing)
    check_unique_index(human.index, "human")
    unknown = human.index[~human.index.isin(results["case_id"])]
    if len(unknown):
        raise ValueError(f"`human` has {len(unknown)} case id(s) that `results` does not hold, e.g. "
                         f"{unknown[:3].tolist()}.")
    failed = np.zeros(len(results), dtype=bool)
    if checks is not None:
        check_columns(check_dataframe(checks, "checks"), ["all_passed"], "checks")
        status = checks["all_passed"].reindex(results["case_id"].to_numpy())
        if status.isna().any():
            raise ValueError(f"`checks` has no row for case(s) {results['case_id'][status.isna().to_numpy()][:3].tolist()}; "
                             "run the checks on every judged output.")
        failed = ~status.to_numpy(dtype=bool)
    if isinstance(by, str):
        check_columns(results, [by], "results")
    if isinstance(cluster, str):
        check_columns(results, [cluster], "results")
    if results.empty:
        raise ValueError("`results` holds no row: there is no judged case to estimate a pass rate over.")
    parts = []
    for key, group in results.groupby(["rubric", "rubric_version", "model"], sort=False, observed=True, dropna=False):
        ok = group["error"].isna().to_numpy()
        judged = group[ok]
        twice = judged["case_id"].duplicated().to_numpy()
        if twice.any():  # the judge's scores are indexed by case: one verdict per case and rubric
            raise ValueError(f"`results` has case_id {show(judged['case_id'][twice].iloc[0])} more than once for rubric "
                             f"{show(key[0])} ({key[1]}, {key[2]}); each case is judged once per rubric, version and model.")
        passed = as_pass(judged["verdict"], "results", levels=levels, pass_levels=passing).fillna(False).to_numpy(dtype=bool)
        score = pd.Series((passed & ~failed[judged.index]).astype(float), index=judged["case_id"].to_numpy())
        segments = None
        if isinstance(by, str):
            segments = pd.Series(judged[by].to_numpy(), index=score.index, name=by)
        elif by is not None:
            segments = by
        clusters = cluster
        if isinstance(cluster, str):
            clusters = pd.Series(judged[cluster].to_numpy(), index=score.index, name=cluster)
        labels = human[human.index.isin(score.index)]
        table = mean(score, labels, method=methods, interval=interval, confidence_level=confidence_level, by=segments,
                     adjust=adjust, null=null, cluster=clusters, bounds=(0, 1), finite_population=finite_population)
        for column in ("ci_low", "ci_high"):
            table[column] = np.clip(table[column].to_numpy(), 0.0, 1.0)
        table.insert(0, "model", key[2])
        table.insert(0, "rubric_version", key[1])
        table.insert(0, "rubric", key[0])
        table["n_error"] = int((~ok).sum())
        parts.append(table)
    out = pd.concat(parts, ignore_index=True)
    out.attrs = {k: v for k, v in parts[0].attrs.items()}
    return out


def _planning_inputs(judge, human_pilot):
    judge, human = _as_scores(judge, "judge"), _as_scores(human_pilot, "human_pilot")
    y, positions, _, values = _align(judge, human, "raise", name="human_pilot")
    if len(y) < 2:
        raise ValueError(f"`human_pilot` must hold at least 2 labels; got {len(y)}.")
    return y, positions, values


def _planning_moments(y, positions, values):
    yhat = values[positions]
    vy = float(np.var(y))
    cyh = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    vj = float(np.var(values))  # every case's judge score: the planned labelled set is a random subset of them
    return vy, cyh, vj, len(values), len(y)


def _half_width(n, vy, cyh, vj, total, z, finite_population=False):
    """Expected PPI++ and classical half-widths with n labels and total - n unlabelled cases (ppi_py's formulas).

    With ``finite_population`` the estimand is the mean over the ``total`` cases: the variances carry the
    finite-population correction ``1 - n / total`` (half-width 0 at n = total) and lam is the regression
    coefficient ``Cov / Var(judge)`` of the difference estimator (as :func:`mean` with ``finite_population=True``).
    ``z`` is a number or an array of quantiles, one per n.
    """
    n = np.asarray(n, dtype=float)
    big_n = total - n
    with np.errstate(divide="ignore", invalid="ignore"):
        if finite_population:
            fpc = 1 - n / total
            lam = np.where(vj > 0, np.clip(cyh / vj, 0.0, 1.0), 0.0) * np.ones_like(n)
            var = fpc * np.maximum(vy + lam**2 * vj - 2 * lam * cyh, 0.0) / n
            return z * np.sqrt(var), z * np.sqrt(fpc * vy / n), lam
        lam = np.clip(cyh / ((1 + n / big_n) * vj * total / (total - 1)), 0.0, 1.0)
        lam = np.where((big_n <= 0) | (vj == 0) | np.isnan(lam), 0.0, lam)
        var = np.where(lam > 0, lam**2 * vj / big_n, 0.0) + np.maximum(vy + lam**2 * vj - 2 * lam * cyh, 0.0) / n
    return z * np.sqrt(var), z * np.sqrt(vy / n), lam


#: Pilot cases whose judge scores are nearest a case's give its planned label (at least 3, about sqrt(pilot)).
def _donors(size: int) -> int:
    return int(min(size, max(3, round(np.sqrt(size)))))


class _Planner:
    """The half-widths :func:`mean`'s betting (or exact) interval will have at planned numbers of labels, by simulation.

    The pilot stands in for the labels not yet made: every other case gets the label of a pilot case among the
    ``_donors`` whose judge scores are nearest its own (ties all count; one draw, seeded), so the planned population
    keeps every case's real judge score and the pilot's relation between judge and label. Each of ``n_draws``
    draws then labels the pilot and, for n labels in all, the first n - pilot cases of its own random order of the
    others (nested draws, so the half-width falls smoothly with n; below the pilot's size, a random n of the
    pilot), and computes the interval :func:`mean` would
    print: PPI++ and classical betting intervals (Clopper-Pearson for classical on 0/1 labels). The plan is the
    median half-width over the draws.
    """

    def __init__(self, y, positions, values, *, bounds, confidence_level, finite_population, n_draws, rng, exact):
        gen = check_rng(rng)
        self.total, self.pilot = len(values), len(y)
        self.values, self.level, self.finite = values, confidence_level, finite_population
        self.scale = _bounds(bounds, y, values)
        self.judge_bounds = (float(values.min()), float(values.max()))
        self.exact = exact and self.scale == (0.0, 1.0) and bool(np.isin(y, (0.0, 1.0)).all()) and not finite_population
        labels = np.empty(self.total)
        labels[positions] = y
        others = np.setdiff1d(np.arange(self.total), positions)
        pilot_scores, k = values[positions], _donors(len(y))
        for chunk in np.array_split(others, max(1, len(others) // 5000 + 1)):
            distance = np.abs(values[chunk][:, None] - pilot_scores[None, :])
            kth = np.partition(distance, k - 1, axis=1)[:, k - 1: k]
            keys = np.where(distance <= kth, gen.random(distance.shape), -1.0)
            labels[chunk] = y[np.argmax(keys, axis=1)]
        self.labels, self.positions, self.others = labels, positions, others
        self.order = np.argsort(gen.random((n_draws, len(others))), axis=1)  # each draw's order of the other cases
        self.pilot_order = np.argsort(gen.random((n_draws, len(positions))), axis=1)  # for plans below the pilot
        self.keys = gen.random((n_draws, self.total))  # each draw's order of its labels (random, nested in n)

    def draws(self, n: int):
        """Labelled case positions (n_draws, n), in a random order of each draw, and unlabelled ones
        (n_draws, total - n) by case, of every draw at n labels. (The betting interval depends on the order of the
        labels, which :func:`mean` fixes by case; a plan averages over it.)"""
        if n >= self.pilot:
            extra = self.others[self.order[:, : n - self.pilot]]
            labelled = np.concatenate([np.broadcast_to(self.positions, (len(extra), self.pilot)), extra], axis=1)
            rest = self.others[self.order[:, n - self.pilot:]]
        else:  # fewer than the pilot: a random n of the pilot cases
            chosen = self.positions[self.pilot_order]
            labelled = chosen[:, :n]
            rest = np.concatenate([chosen[:, n:], np.broadcast_to(self.others, (len(chosen), len(self.others)))], axis=1)
        keys = np.take_along_axis(self.keys, labelled, axis=1)
        return np.take_along_axis(labelled, np.argsort(keys, axis=1), axis=1), np.sort(rest, axis=1)

    def half_widths(self, n: int) -> dict:
        labelled, rest = self.draws(n)
        y, yhat = self.labels[labelled], self.values[labelled]
        out = {}
        for method, weight in (("ppi++", "tuned"), ("classical", 0.0)):
            if method == "classical" and self.exact:
                low, high = _stats.clopper_pearson(y.sum(axis=1), float(n), self.level)
            elif rest.shape[1] == 0 and not self.finite:  # every case labelled: nothing for the judge to add
                low, high = _stats.betting_interval(y, *self.scale, confidence_level=self.level,
                                                    theta_range=self.scale, tol=1e-5 * (self.scale[1] - self.scale[0]))
            else:
                low, high = _stats.ppi_betting(y, yhat, self.values[rest], weight=weight, bounds=self.scale,
                                               judge_bounds=self.judge_bounds, confidence_level=self.level,
                                               finite_population=self.finite,
                                               tol=1e-5 * (self.scale[1] - self.scale[0]))
            out[method] = float(np.median((np.asarray(high) - np.asarray(low)) / 2))
        out["interval"] = "betting"
        out["classical interval"] = "clopper-pearson" if self.exact else "betting"
        return out


PLAN_INTERVALS = ("auto", "betting", "clt", "t")


def _plan(judge, human_pilot, *, interval, confidence_level, finite_population, bounds, n_draws, rng):
    """A function n -> {"ppi++": half-width, "classical": half-width, "lam": ..., intervals} and the number of cases."""
    check_option(interval, list(PLAN_INTERVALS), "interval")
    confidence_level = check_level(confidence_level)
    n_draws = check_number(n_draws, "n_draws", low=1, integer=True)
    y, positions, values = _planning_inputs(judge, human_pilot)
    vy, cyh, vj, total, _ = _planning_moments(y, positions, values)
    finite_population = bool(finite_population)
    planner = None
    if interval in ("auto", "betting"):
        planner = _Planner(y, positions, values, bounds=bounds, confidence_level=confidence_level,
                           finite_population=finite_population, n_draws=n_draws, rng=rng, exact=interval == "auto")

    def at(n: int) -> dict:
        if planner is not None:
            out = planner.half_widths(int(n))
        else:
            z = stats.norm.ppf(0.5 + confidence_level / 2) if interval == "clt" else \
                stats.t.ppf(0.5 + confidence_level / 2, max(int(n) - 1, 1))
            ppi, classical, _ = _half_width(n, vy, cyh, vj, total, z, finite_population)
            out = {"ppi++": float(ppi), "classical": float(classical), "interval": interval, "classical interval": interval}
        out["lam"] = float(_half_width(n, vy, cyh, vj, total, 1.0, finite_population)[2])
        return out

    return at, total


def expected_half_width(judge: pd.Series, human_pilot: pd.Series, *, n_labelled, interval: str = "auto",
                        confidence_level: float = 0.95, finite_population: bool = False, bounds=None,
                        n_draws: int = 200, rng=0) -> pd.DataFrame:
    """The half-width of PPI++'s and the classical interval at planned numbers of labels, from a pilot.

    By default the plan is for the interval :func:`mean` prints by default (``interval="auto"``: betting; the
    exact Clopper-Pearson interval for classical on 0/1 labels), found by simulation from the pilot: every
    unlabelled case gets the label of a pilot case whose judge score is among the nearest to its own, and
    ``n_draws`` random labelled sets of each planned size (the pilot and random other cases) give the
    intervals; the plan is their median half-width (half the width: betting intervals need not be
    symmetric). ``interval="clt"`` or ``"t"`` plans the large-sample interval by its formula: the pilot's
    labels estimate the humans' variance and their covariance with the judge, every case the judge's
    variance, and with n labels and N unlabelled cases PPI++'s variance is ``lam^2 Var(judge) / N +
    Var(human - lam judge) / n`` at the lam PPI++ would choose. Either way the pilot's estimates carry its
    own sampling error: a pilot of 50 labels can be off by a fifth in the number of labels (label a little
    more).

    Parameters
    ----------
    judge : Series
        Scores of every case (as in :func:`mean`).
    human_pilot : Series
        Labels of a random pilot subset.
    n_labelled : int or sequence of int
        Planned total numbers of labels (the pilot's included), each in [2, number of cases].
    interval : {"auto", "betting", "clt", "t"}, default "auto"
        The interval of :func:`mean` to plan for (as its ``interval``).
    confidence_level : float, default 0.95
    finite_population : bool, default False
        False plans for the mean of the population the cases were drawn from; True for the mean over exactly
        these cases (labels drawn without replacement): the half-width is 0 at n = N, where the truth is known.
    bounds : (float, float), optional
        The labels' scale, as in :func:`mean` (the betting interval relies on it).
    n_draws : int, default 200
        Simulated label sets per planned number (betting plans).
    rng : None, int or numpy.random.Generator, default 0
        The simulation's randomness (seeded by default, so a plan is reproducible).

    Returns
    -------
    DataFrame
        One row per planned number and method: ``n_labelled, method, half_width, lam, interval``; ``lam`` is
        the weight PPI++'s estimate would give the judge (its large-sample formula), ``interval`` the interval
        planned.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.normal(3.0, 1.0, 2000).clip(0, 6)
    >>> judge = pd.Series(truth + rng.normal(0, 0.5, 2000))
    >>> infer.expected_half_width(judge, pd.Series(truth[:50]), n_labelled=[50, 200], bounds=(0, 6)).round(3)
       n_labelled     method  half_width    lam interval
    0          50      ppi++       0.348  0.658  betting
    1          50  classical       0.347  0.000  betting
    2         200      ppi++       0.127  0.607  betting
    3         200  classical       0.151  0.000  betting
    >>> infer.expected_half_width(judge, pd.Series(truth[:50]), n_labelled=[50, 200], interval="clt").round(3)
       n_labelled     method  half_width    lam interval
    0          50      ppi++       0.148  0.658      clt
    1          50  classical       0.253  0.000      clt
    2         200      ppi++       0.079  0.607      clt
    3         200  classical       0.126  0.000      clt
    """
    at, total = _plan(judge, human_pilot, interval=interval, confidence_level=confidence_level,
                      finite_population=finite_population, bounds=bounds, n_draws=n_draws, rng=rng)
    planned = np.atleast_1d(np.asarray(n_labelled))
    if planned.ndim != 1 or not np.issubdtype(planned.dtype, np.integer) or (planned < 2).any() or (planned > total).any():
        raise ValueError(f"`n_labelled` must be integers in [2, {total}] (the number of cases); got {n_labelled!r}.")
    rows = []
    for n in planned.tolist():
        plan = at(n)
        rows.append({"n_labelled": n, "method": "ppi++", "half_width": plan["ppi++"], "lam": plan["lam"],
                     "interval": plan["interval"]})
        rows.append({"n_labelled": n, "method": "classical", "half_width": plan["classical"], "lam": 0.0,
                     "interval": plan["classical interval"]})
    return pd.DataFrame(rows)


def labels_needed(judge: pd.Series, human_pilot: pd.Series, *, half_width: float, interval: str = "auto",
                  confidence_level: float = 0.95, finite_population: bool = False, bounds=None, n_draws: int = 200,
                  rng=0) -> pd.DataFrame:
    """How many human labels PPI++ and classical need for an interval of a given half-width, from a pilot.

    The smallest number of labels (the pilot's included) at which :func:`expected_half_width`'s plan reaches
    the target: by default the median half-width of :func:`mean`'s default interval, by simulation from the
    pilot. The pilot's estimates carry its own error, so the count is an estimate too: label a little more.

    Parameters
    ----------
    judge : Series
        Scores of every case.
    human_pilot : Series
        Labels of a random pilot subset (at least 2).
    half_width : float
        The target half-width, on the scale of the labels.
    interval, confidence_level, finite_population, bounds, n_draws, rng
        As in :func:`expected_half_width`: ``finite_population=True`` when the estimand is the mean over exactly
        these cases, which every target reaches at the latest when every case is labelled.

    Returns
    -------
    DataFrame
        Two rows (``ppi++``, ``classical``): ``method, labels_needed, half_width, n_cases, interval``;
        ``labels_needed`` is missing (with a warning) when even labelling every case would not reach the target.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.normal(3.0, 1.0, 2000).clip(0, 6)
    >>> judge = pd.Series(truth + rng.normal(0, 0.5, 2000))
    >>> infer.labels_needed(judge, pd.Series(truth[:50]), half_width=0.15, bounds=(0, 6)).round(3)
          method  labels_needed  half_width  n_cases interval
    0      ppi++            161        0.15     2000  betting
    1  classical            202        0.15     2000  betting
    """
    half_width = check_number(half_width, "half_width", low=0.0)
    if half_width == 0:
        raise ValueError("`half_width` must be positive; got 0.")
    at, total = _plan(judge, human_pilot, interval=interval, confidence_level=confidence_level,
                      finite_population=finite_population, bounds=bounds, n_draws=n_draws, rng=rng)
    cache = {}

    def plan(n):
        if n not in cache:
            cache[n] = at(n)
        return cache[n]

    rows = []
    for method in ("ppi++", "classical"):
        name = plan(total)["interval" if method == "ppi++" else "classical interval"]
        if plan(total)[method] > half_width:
            warnings.warn(f"{method}: even {total} labels (every case) give a half-width of {plan(total)[method]:.3g}, "
                          f"above the target {half_width:.3g}.", EvalkitWarning, stacklevel=2)
            rows.append({"method": method, "labels_needed": pd.NA, "half_width": np.nan, "n_cases": total,
                         "interval": name})
            continue
        low, high = 2, total  # the half-width falls with n: bisect for the smallest n that reaches the target
        while low < high:
            mid = (low + high) // 2
            low, high = (mid + 1, high) if plan(mid)[method] > half_width else (low, mid)
        rows.append({"method": method, "labels_needed": low, "half_width": plan(low)[method], "n_cases": total,
                     "interval": name})
    out = pd.DataFrame(rows)
    out["labels_needed"] = out["labels_needed"].astype("Int64")
    return out


STATISTICS = ("mean", "agreement", "fail_recall")


def confidence_sequence(judge: pd.Series | None = None, human: pd.Series | None = None, *, statistic: str = "mean",
                        method="ppi++", confidence_level: float = 0.95, bounds=None) -> pd.DataFrame:
    """A live interval for what a labeller watches, valid however they decide when to stop: one row per label so far.

    A fixed-n interval read after every label, and acted on ("stop when it looks settled"), holds far less often
    than its level; a confidence sequence holds at every number of labels at once, so the interval at the
    moment the labeller stops, whenever and however that moment is chosen, keeps ``confidence_level``. These
    are betting confidence sequences (Waudby-Smith & Ramdas 2024, with bets shrinking like 1 / sqrt(t log t)),
    computed in the order the labels were given (the order they were made), which must be a random order of
    the cases, as :func:`choose_cases` with ``strategy="random"`` gives it.

    Parameters
    ----------
    judge : Series or None
        The judge on every case of the pool (scores or verdicts by case id); needed for ``"agreement"``,
        ``"fail_recall"`` and for ``"mean"`` with PPI. None: the humans alone.
    human : Series
        The labels so far, in the order they were made, indexed by case id (numbers, PASS/FAIL or booleans). The
        order is ``(judge, human)``, as in :func:`mean` and :func:`evalkit.calibrate.calibrate`; the labels given
        alone in the first place (the order before) still work for one release, with a FutureWarning.
    statistic : {"mean", "agreement", "fail_recall"}, default "mean"
        ``"mean"``: the humans' mean (their pass rate, for PASS/FAIL labels). With ``judge``, it is the mean over
        the judge's cases (the pool the labels are drawn from without replacement), estimated with ``method``;
        without, the mean of the population the labels come from. ``"agreement"``: the share of cases where
        judge and human give the same verdict; ``"fail_recall"``: the share of human FAILs the judge also fails
        (its rows count every label; the sequence moves at each human FAIL). Both are rates of the population
        the cases come from.
    method : {"ppi++", "ppi", "classical"}, default "ppi++"
        For ``"mean"`` with ``judge``: the estimator, as in :func:`mean` (lam tuned only on earlier labels).
    confidence_level : float, default 0.95
    bounds : (float, float), optional
        The labels' scale (as in :func:`mean`); rates are on [0, 1].

    Returns
    -------
    DataFrame
        One row per label so far: ``n_labelled, n_used, estimate, cs_low, cs_high, half_width, statistic, method,
        interval`` (``"betting-cs"``); ``n_used`` counts the labels the statistic rests on (the human FAILs for
        ``"fail_recall"``). :func:`stopping_point` applies a stop rule to it. Without ``bounds``, when every
        label (and judge score) is the same number, the scale's ends are unknown: the sequence is NaN, with an
        :class:`~evalkit.EvalkitWarning`.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> labels = pd.Series(rng.random(400) < 0.8, index=[f"c{i}" for i in range(400)])
    >>> cs = infer.confidence_sequence(human=labels)
    >>> cs.iloc[[49, 199, 399]][["n_labelled", "estimate", "cs_low", "cs_high"]].round(3)
         n_labelled  estimate  cs_low  cs_high
    49           50     0.760   0.491    0.918
    199         200     0.725   0.585    0.862
    399         400     0.752   0.631    0.846
    >>> infer.stopping_point(cs, half_width=0.15)
    148
    """
    if human is None:
        if judge is None:
            raise TypeError("confidence_sequence() needs `human`, the labels so far.")
        warnings.warn("confidence_sequence(labels): the order is (judge, human), as in mean and calibrate; pass the "
                      "labels as human=labels (the judge, if any, first). The labels alone in the first place will not "
                      "be read as labels in the next release.", FutureWarning, stacklevel=2)
        judge, human = None, judge
    check_option(statistic, list(STATISTICS), "statistic")
    confidence_level = check_level(confidence_level)
    check_option(method, ["ppi++", "ppi", "classical"], "method")
    labels = _as_scores(human, "human")
    check_unique_index(labels.index, "human")
    if labels.isna().any():
        raise ValueError(f"`human` has {int(labels.isna().sum())} missing label(s); drop them first.")
    if len(labels) == 0:
        raise ValueError("`human` holds no label yet.")
    scores = None
    if judge is not None:
        scores = _as_scores(judge, "judge")
        check_unique_index(scores.index, "judge")
        missing = labels.index[~labels.index.isin(scores.index)]
        if len(missing):
            raise ValueError(f"`human` has {len(missing)} case id(s) that `judge` does not score, e.g. {missing[:3].tolist()} "
                             "(the order is confidence_sequence(judge, human)).")
    elif statistic != "mean":
        raise ValueError(f"statistic={statistic!r} compares judge and human: pass `judge`.")
    y = labels.to_numpy(dtype=float)
    n = len(y)
    used_method = "classical" if (statistic != "mean" or scores is None) else method
    if statistic == "mean":
        a, b = _bounds(bounds, y, scores.to_numpy(dtype=float) if scores is not None else np.array([]))
        if not a < b:  # bounds read from the data, and every value is the same: the scale's ends are unknown
            warnings.warn(f"confidence_sequence: every label{' and judge score' if scores is not None else ''} is {a:g} "
                          "and `bounds` is not given, so the scale's ends are unknown: the sequence is NaN. Pass "
                          "bounds=(low, high), the labels' scale.", EvalkitWarning, stacklevel=2)
            x, n_used = y, np.arange(1, n + 1)
            low = high = np.full(n, np.nan)
        elif scores is None:
            x, n_used = y, np.arange(1, n + 1)
            low, high = _stats.betting_sequence(x, a, b, confidence_level=confidence_level, theta_range=(a, b))
        else:
            values = scores.to_numpy(dtype=float)
            if np.isnan(values).any():
                raise ValueError("`judge` has missing scores; a confidence sequence over its cases needs every score.")
            labelled = scores.index.get_indexer(labels.index)
            rest = np.ones(len(values), dtype=bool)
            rest[labelled] = False
            low, high = _stats.ppi_betting(y, values[labelled], values[rest], weight=_WEIGHT[used_method], bounds=(a, b),
                                           judge_bounds=(float(values.min()), float(values.max())),
                                           confidence_level=confidence_level, finite_population=True, sequence=True)
            x, n_used = y, np.arange(1, n + 1)
        estimate = np.cumsum(x) / n_used
        if scores is not None and used_method != "classical":  # the running PPI++ estimate on the pool
            with warnings.catch_warnings():  # only the estimate is used: the clt interval's notes do not apply
                warnings.simplefilter("ignore", EvalkitWarning)
                estimate = np.array([mean(scores, labels.iloc[: t + 1], method=used_method, finite_population=True,
                                          interval="clt").iloc[0]["estimate"] if t >= 1 else y[0] for t in range(n)])
    else:
        if not (np.isin(y, (0.0, 1.0)).all() and np.isin(scores.to_numpy(dtype=float)[~scores.isna().to_numpy()], (0.0, 1.0)).all()):
            raise ValueError(f"statistic={statistic!r} needs PASS/FAIL (or boolean) labels and verdicts.")
        j = scores.loc[labels.index].to_numpy(dtype=float)
        if np.isnan(j).any():
            raise ValueError("`judge` has no verdict for some labelled case; drop those labels first.")
        if statistic == "agreement":
            hits, counts = (j == y).astype(float), np.ones(n)
        else:
            counts = (y == 0).astype(float)
            hits = ((j == 0) & (y == 0)).astype(float)
        used = counts > 0
        n_used = np.cumsum(counts).astype(int)
        low, high = np.full(n, 0.0), np.full(n, 1.0)
        if used.any():
            seq_low, seq_high = _stats.betting_sequence(hits[used], 0.0, 1.0, confidence_level=confidence_level,
                                                        theta_range=(0.0, 1.0))
            step = np.maximum(n_used - 1, 0)
            seen = n_used > 0
            low[seen], high[seen] = seq_low[step[seen]], seq_high[step[seen]]
        with np.errstate(invalid="ignore", divide="ignore"):
            estimate = np.cumsum(hits) / n_used
    out = pd.DataFrame({"n_labelled": np.arange(1, n + 1), "n_used": np.asarray(n_used, dtype=int), "estimate": estimate,
                        "cs_low": low, "cs_high": high})
    out["half_width"] = (out["cs_high"] - out["cs_low"]) / 2
    out["statistic"], out["method"], out["interval"] = statistic, used_method, "betting-cs"
    out.attrs.update(confidence_level=confidence_level, population="finite" if (statistic == "mean" and scores is not None)
                     else "superpopulation")
    return out


def stopping_point(sequence: pd.DataFrame, *, half_width: float) -> int | None:
    """The stop rule "stop when the half-width is below h": the first number of labels at which it holds (None: not yet).

    On a :func:`confidence_sequence` this rule keeps the sequence's level at the stopping point; on intervals
    made for a fixed number of labels it does not (the coverage harness measures both).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import infer
    >>> cs = pd.DataFrame({"n_labelled": [1, 2, 3], "half_width": [0.5, 0.2, 0.05]})
    >>> infer.stopping_point(cs, half_width=0.1)
    3
    """
    sequence = check_dataframe(sequence, "sequence")
    check_columns(sequence, ["n_labelled", "half_width"], "sequence")
    half_width = check_number(half_width, "half_width", low=0.0)
    for column in ("n_labelled", "half_width"):
        if pd.api.types.is_bool_dtype(sequence[column]) or not pd.api.types.is_numeric_dtype(sequence[column]):
            raise TypeError(f"`sequence` column {column!r} must hold numbers, as confidence_sequence gives them; got "
                            f"dtype {sequence[column].dtype}.")
    below = np.flatnonzero(sequence["half_width"].to_numpy(dtype=float) <= half_width)  # NaN: not yet known
    if not len(below):
        return None
    n = float(sequence["n_labelled"].iloc[below[0]])
    if not (n >= 1 and n.is_integer()):
        raise ValueError(f"`sequence` column 'n_labelled' must hold whole numbers of labels; got {n!r} at row {below[0]}.")
    return int(n)


def _strata(values: np.ndarray, n_strata: int) -> np.ndarray:
    distinct = np.unique(values)
    if len(distinct) <= n_strata:
        return np.searchsorted(distinct, values)
    ranks = stats.rankdata(values, method="average")
    return np.minimum(((ranks - 1) * n_strata // len(values)).astype(int), n_strata - 1)


def choose_cases(judge: pd.Series, n: int, *, strategy: str = "stratified", n_strata: int = 5, exclude=None,
                 rng=None) -> pd.Index:
    """Which cases to send to a human next: a random order, optionally balanced over the judge's verdicts.

    ``"stratified"`` splits the cases by judge verdict (or, for scores with more than ``n_strata`` distinct
    values, into ``n_strata`` equal-count score bins) and interleaves a random order of each stratum so that
    every prefix of the list holds the strata in proportion: stopping early still leaves a balanced sample,
    and every case has the same chance of being chosen, so :func:`mean` stays valid. ``"random"`` is a plain
    random order.

    Parameters
    ----------
    judge : Series
        Judge scores or verdicts indexed by case id.
    n : int
        How many cases to choose.
    strategy : {"stratified", "random"}, default "stratified"
    n_strata : int, default 5
    exclude : sequence of case ids, optional
        Cases already labelled (chosen from the rest).
    rng : None, int or numpy.random.Generator

    Returns
    -------
    Index
        ``n`` case ids (named ``case_id``) in the order to label them. Hand them to
        :class:`evalkit.widgets.Labeller` by ordering its cases table:
        ``cases.set_index("case_id").loc[ids].reset_index()``.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import infer
    >>> judge = pd.Series(["PASS"] * 80 + ["FAIL"] * 20, index=[f"c{i}" for i in range(100)])
    >>> ids = infer.choose_cases(judge, 10, rng=0)
    >>> len(ids), judge[ids].value_counts().to_dict()
    (10, {'PASS': 8, 'FAIL': 2})
    """
    check_option(strategy, ["stratified", "random"], "strategy")
    scores = _as_scores(judge, "judge")
    check_unique_index(scores.index, "judge")
    if exclude is not None:
        scores = scores[~scores.index.isin(pd.Index(exclude))]
    scores = scores.dropna()
    n = check_number(n, "n", low=1, high=len(scores), integer=True)
    n_strata = check_number(n_strata, "n_strata", low=1, integer=True)
    gen = check_rng(rng)
    if strategy == "random":
        chosen = gen.permutation(len(scores))[:n]
    else:
        strata = _strata(scores.to_numpy(), n_strata)
        key = np.empty(len(scores))
        for s in np.unique(strata):
            members = np.flatnonzero(strata == s)
            # the k-th case of a stratum of size m sits at (k + u) / m: each stratum spread evenly over the order
            key[gen.permutation(members)] = (np.arange(len(members)) + gen.random()) / len(members)
        chosen = np.lexsort((gen.random(len(scores)), key))[:n]
    return pd.Index(scores.index[chosen], name="case_id")


def simulate(judge: pd.Series, human: pd.Series, *, n_labelled, n_draws: int = 1000, method=METHODS,
             interval: str = "clt", confidence_level: float = 0.95, bounds=None, finite_population: bool = False,
             rng=None) -> pd.DataFrame:
    """How the estimators would have done: repeat :func:`mean` on random labelled subsets of a fully labelled set.

    With a human label on every case, the truth is the human mean over all cases. Each draw labels a random
    subset of ``n`` cases (without replacement) and leaves the rest unlabelled; the estimates and intervals
    are those of :func:`mean` (equal up to rounding), computed for all draws at once from sums over a
    draws x cases matrix. Use it to see how PPI would have done on a fully labelled pilot before trusting
    it with fewer labels.

    Parameters
    ----------
    judge, human : Series
        Judge scores and human labels of the same cases (same case ids, no missing values).
    n_labelled : int or sequence of int
        Numbers of labels to draw (each at least 2 and below the number of cases).
    n_draws : int, default 1000
    method : str or list of str, default all four
    interval : {"clt", "betting"}, default "clt"
        The interval of :func:`mean` to measure (``"betting"`` is :func:`mean`'s default; ``"clt"`` is
        faster: one pass over the draws).
    confidence_level : float, default 0.95
    bounds : (float, float), optional
        The labels' scale, for the betting interval (as in :func:`mean`).
    finite_population : bool, default False
        Measure the intervals for the mean over exactly these cases (the truth here), with the
        finite-population correction, instead of the population they were drawn from.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DataFrame
        One row per number of labels and method: ``n_labelled, method, interval, n_draws, coverage`` (share of
        intervals holding the truth), ``width`` (mean interval width), ``median_width`` (what
        :func:`expected_half_width` plans, doubled), ``bias`` (mean estimate - truth), ``rmse`` and ``truth``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> human = pd.Series(rng.normal(3.0, 1.0, 1000))
    >>> judge = human + 0.3 + rng.normal(0, 0.5, 1000)
    >>> sim = infer.simulate(judge, human, n_labelled=100, n_draws=500, method=["ppi++", "judge"], rng=0)
    >>> sim[["n_labelled", "method", "coverage"]]
       n_labelled method  coverage
    0         100  ppi++     0.974
    1         100  judge     0.000
    """
    methods = _methods(method)
    check_option(interval, ["clt", "betting"], "interval")
    confidence_level = check_level(confidence_level)
    n_draws = check_number(n_draws, "n_draws", low=1, integer=True)
    judge, human = _as_scores(judge, "judge"), _as_scores(human, "human")
    check_unique_index(judge.index, "judge")
    check_unique_index(human.index, "human")
    if len(judge) != len(human) or not human.index.isin(judge.index).all():
        raise ValueError("`simulate` needs a human label for every judged case: `judge` and `human` must have the same "
                         f"case ids; they differ, e.g. {judge.index.symmetric_difference(human.index)[:3].tolist()}.")
    human = human.reindex(judge.index)
    yhat_all, y_all = judge.to_numpy(float), human.to_numpy(float)
    if np.isnan(yhat_all).any() or np.isnan(y_all).any():
        raise ValueError("`simulate` needs complete data: `judge` or `human` has missing values.")
    total = len(y_all)
    planned = np.atleast_1d(np.asarray(n_labelled))
    if planned.ndim != 1 or not np.issubdtype(planned.dtype, np.integer) or (planned < 2).any() or (planned >= total).any():
        raise ValueError(f"`n_labelled` must be integers in [2, {total - 1}]; got {n_labelled!r}.")
    gen = check_rng(rng)
    truth = float(y_all.mean())
    level = confidence_level
    # centre both variables: (co)variances are shift-invariant and the sums of squares below stay well conditioned
    cy, ch = y_all.mean(), yhat_all.mean()
    y, h = y_all - cy, yhat_all - ch
    tot = {"y": y.sum(), "h": h.sum(), "hh": (h * h).sum()}
    rows = []
    for size in planned.tolist():
        mask = np.zeros((n_draws, total))
        picks = np.argsort(gen.random((n_draws, total)), axis=1)[:, :size]
        np.put_along_axis(mask, picks, 1.0, axis=1)
        n, big_n = np.full(n_draws, float(size)), np.full(n_draws, float(total - size))
        sy, sh, syy, shh, syh = mask @ y, mask @ h, mask @ (y * y), mask @ (h * h), mask @ (y * h)
        my, mh, mu = sy / n, sh / n, (tot["h"] - sh) / big_n
        # one-pass variances: rounding can take them a hair below 0 when one score dwarfs the rest; they are >= 0
        m = {"n": n, "N": big_n, "my": my + cy, "mh": mh + ch, "mu": mu + ch, "vy": np.maximum(syy / n - my**2, 0.0),
             "vh": np.maximum(shh / n - mh**2, 0.0), "cyh": syh / n - my * mh,
             "vu": np.maximum((tot["hh"] - shh) / big_n - mu**2, 0.0)}
        if interval == "betting":  # the labels of each draw in mean()'s order: by case, then the fixed permutation
            ordered = np.sort(picks, axis=1)[:, _betting_order(size)]
            keep = np.ones((n_draws, total), dtype=bool)
            np.put_along_axis(keep, picks, False, axis=1)
            rest = np.nonzero(keep)[1].reshape(n_draws, total - size)
            scale = _bounds(bounds, y_all, yhat_all)
            judge_bounds = (float(yhat_all.min()), float(yhat_all.max()))
        for name in methods:
            est, se, _ = (_finite_estimate if finite_population else _estimate)(m, name)
            if interval == "clt":
                low, high = _interval(est, se, level)
            elif name == "judge":
                low, high = _interval(est, se, level)  # the judge-only row: as in mean(), from every score
                if not finite_population:
                    low, high = (np.full(n_draws, v) for v in _stats.betting_interval(
                        yhat_all, *judge_bounds, confidence_level=level, theta_range=judge_bounds))
            else:
                low, high = _stats.ppi_betting(y_all[ordered], yhat_all[ordered], yhat_all[rest], weight=_WEIGHT[name],
                                               bounds=scale, judge_bounds=judge_bounds, confidence_level=level,
                                               finite_population=finite_population)
            rows.append({"n_labelled": size, "method": name, "interval": interval, "n_draws": n_draws,
                         "coverage": float(np.mean((low <= truth) & (truth <= high))),
                         "width": float(np.mean(high - low)), "median_width": float(np.median(high - low)),
                         "bias": float(np.mean(est) - truth),
                         "rmse": float(np.sqrt(np.mean((est - truth) ** 2))), "truth": truth})
    return pd.DataFrame(rows)
