"""The PPI and PPI++ estimates of one judge's cases: inputs, moments, intervals, and mean, difference, pass_rate."""

from __future__ import annotations

import warnings
from dataclasses import dataclass

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
    check_unique_index,
    show,
)

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


INTERVALS = ("auto", "betting", "clt", "t", "t-pseudo")
#: Large-sample intervals (``"clt"``, ``"t"``, cluster-robust) are not given below this many labels (or clusters):
#: the coverage harness measures them below nominal there on bounded, skewed data; betting intervals hold at any n.
MIN_LARGE_SAMPLE = 30
#: The cluster-robust intervals (``interval="t"`` or ``"clt"`` with ``cluster``) are not given below this many
#: clusters (see :data:`evalkit._stats.MIN_CLUSTERS`); the default with clusters, the betting interval over whole
#: clusters, needs no minimum (few clusters give a wide interval).
MIN_CLUSTERS = _stats.MIN_CLUSTERS
#: ``interval="t-pseudo"`` is not given where fewer than this many labels' worth lie toward the far end of the scale
#: (``n * min(m, 1 - m)``, m the labels' mean on [0, 1] of the scale): there it is known not to hold (0.87 at a 98%
#: pass rate of 100 labels, 0.88 at Bernoulli(0.9) with 20).
PSEUDO_MIN_FAR = 5
_WEIGHT = {"ppi++": "tuned", "ppi": 1.0, "classical": 0.0}


def _resolve_interval(interval, scale) -> tuple[str, str]:
    """The interval method ``interval=`` names, given the labels' scale (None: not known), and why, if it differs."""
    check_option(interval, list(INTERVALS), "interval")
    if interval == "auto":
        if scale is None:
            return "t", ("the labels' scale is not known (give bounds=(low, high) for the finite-sample betting "
                         "interval): the large-sample t interval")
        return "betting", ""
    if interval in ("betting", "t-pseudo") and scale is None:
        raise ValueError(f"`interval={interval!r}` rests on the labels' scale, which is not known: pass "
                         "bounds=(low, high), e.g. (1, 5) for 1-5 ratings (a bound seen in the data is not one).")
    return interval, ""


def _bounds(bounds, y, values):
    """The labels' scale ends: given, (0, 1) for 0/1 labels and judge scores, else None (not known: the smallest and
    largest value seen are not bounds)."""
    seen = np.concatenate([y[~np.isnan(y)], values[~np.isnan(values)]])
    if bounds is None:
        return (0.0, 1.0) if seen.size and np.isin(seen, (0.0, 1.0)).all() else None
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


def _judge_scale(values, finite_population: bool):
    """The judge scores' known range: 0/1 verdicts, or the pool's own range when the pool is the population; else
    None (the betting intervals then clip the scores to a holdout's range)."""
    seen = values[~np.isnan(values)]
    if seen.size and np.isin(seen, (0.0, 1.0)).all():
        return 0.0, 1.0
    if finite_population and seen.size:
        return float(seen.min()), float(seen.max())
    return None


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
            elif judge_bounds is None:  # the judge's scale is not known: its mean over very many cases by Student's t
                ci = stats.ttest_1samp(every, 0.0).confidence_interval(level) if np.ptp(every) > 0 else None
                low, high = (float(ci.low), float(ci.high)) if ci is not None else (float(every[0]),) * 2
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
        if finite_population or judge_bounds is None or len(every) > _stats.BETTING_MAX_UNLABELLED:
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


@dataclass
class _Call:
    """What one call of :func:`mean` fixes before its rows: the aligned labels and scores, the segments and clusters,
    the moments, the scale, the interval method and the level."""

    y: np.ndarray
    positions: np.ndarray
    unlabelled: np.ndarray | None
    values: np.ndarray
    codes: np.ndarray | None
    names: pd.Index | None
    groups: np.ndarray | None
    bound: float | None
    m: dict
    scale: tuple | None
    judge_scale: tuple | None
    interval: str
    why: str
    exact: bool
    level: float
    finite_population: bool
    alternative: str

    @property
    def k(self) -> int:
        return 1 if self.names is None else len(self.names)

    def arrays(self, s: int):
        return (*_segment_arrays(self.y, self.values, self.positions, self.unlabelled, self.codes, s), self.values)

    def degenerate(self, s: int) -> bool:
        return bool(self.m["N"][s] == 0 or _constant(self.m)[s])

    def name(self, method: str) -> str:
        """The row's interval column."""
        if method == "judge" and self.judge_scale is None and self.interval == "betting":
            return "cluster-t" if self.groups is not None else "t"  # the judge's own mean, its scale not known
        if self.groups is not None:
            return {"t": "cluster-t", "betting": "cluster-betting"}.get(self.interval, "cluster-clt")
        return "clopper-pearson" if (self.interval == "betting" and self.exact and method == "classical") else self.interval


def _setup(judge, human, *, interval, confidence_level, by, adjust, cluster, bounds, finite_population, nan_policy,
           alternative, null, methods) -> _Call:
    """The checks and the fixed parts of :func:`mean`'s table."""
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
    resolved, why = _resolve_interval(interval, scale)
    level = _level(confidence_level, adjust, 1 if names is None else int((m["n"] >= 2).sum()))
    # the human-only interval of 0/1 labels by default: Clopper-Pearson, exact and narrower than betting there
    exact = (interval == "auto" and groups is None and not finite_population and scale == (0.0, 1.0)
             and bool(np.isin(y, (0.0, 1.0)).all()))
    return _Call(y, positions, unlabelled, values, codes, names, groups, bound, m, scale,
                 _judge_scale(values, finite_population), resolved, why, exact, level, finite_population, alternative)


def _segment_interval(call: _Call, method: str, s: int, arrays, est, se, lam, level: float):
    """One segment's interval at ``level``: (low, high) and the row's extra fields (``_refused`` where none is given)."""
    extra = {}
    interval, groups, alternative = call.interval, call.groups, call.alternative
    judge_known = method != "judge" or call.judge_scale is not None
    if interval == "betting" and call.exact and method == "classical":  # 0/1 labels: the exact interval
        return (*_exact_rows(arrays[0], level, alternative), extra)
    if interval == "betting" and groups is not None and judge_known:
        extra["n_clusters"] = int(np.unique(groups[arrays[2] if method != "judge" else
                                                   np.concatenate([arrays[2], arrays[3]])]).size)
        if method in ("ppi", "ppi++") and not call.degenerate(s):
            extra["note"], extra["_refused"] = CLUSTER_PPI_NOTE, "ppi"
            return np.nan, np.nan, extra
        return (*_cluster_betting(arrays, groups, method, level, call.scale, call.judge_scale, alternative, call.bound),
                extra)
    if interval == "betting" and groups is None:
        return (*_betting_rows(arrays, [method], level, call.scale, call.judge_scale, call.finite_population,
                               alternative, call.degenerate(s))[method], extra)
    if interval == "t-pseudo":
        return _pseudo_interval(call, method, s, arrays, lam, level, extra)
    return _large_sample_interval(call, method, s, arrays, est, se, lam, level, extra)


def _large_sample_interval(call: _Call, method, s, arrays, est, se, lam, level, extra):
    """The clt or t interval (cluster-robust with clusters), not given below its minimum of labels or clusters."""
    n_lab = int(call.m["n"][s])
    kind = "t" if call.interval in ("t", "betting") else call.interval  # betting without a judge scale: its t
    size, df, s_e = n_lab, n_lab - 1, se[s]
    if method == "judge":
        size, df = n_lab + int(call.m["N"][s]), n_lab + int(call.m["N"][s]) - 1
    if call.groups is not None:
        s_e, size = _cluster_se(arrays, call.groups, method, lam[s] if method != "judge" else 0.0)
        df = size - 1
        extra["n_clusters"] = size
    extra["_se"], extra["_df"] = s_e, df
    least = MIN_CLUSTERS if call.groups is not None else MIN_LARGE_SAMPLE
    if size < least and not (call.finite_population and s_e == 0):
        what = "clusters" if call.groups is not None else "labels"
        extra["note"] = (f"{size} {what} < {least}: a large-sample interval is not backed here"
                         + ("" if call.groups is not None else "; use interval='betting'"
                            + (" with bounds=(low, high)" if call.scale is None else "")))
        extra["_refused"] = True
        return np.nan, np.nan, extra
    low, high = _interval(np.array([est[s]]), np.array([s_e]), level, call.alternative, kind, df)
    return float(low[0]), float(high[0]), extra


def _pseudo_interval(call: _Call, method, s, arrays, lam, level, extra):
    """``interval="t-pseudo"``: Student's t on the labels' rectified values with half a pseudo-value at each end of the
    scale (a label at the end, less the judge's mean share), refused where the labels hold fewer than
    ``PSEUDO_MIN_FAR`` labels' worth toward the far end of the scale."""
    y, yhat, _, rest_idx, values = arrays
    n = len(y)
    a, b = call.scale
    far = n * min((y.mean() - a) / (b - a), (b - y.mean()) / (b - a)) if n else 0.0
    if n < 2 or far < PSEUDO_MIN_FAR or call.groups is not None or method == "judge":
        extra["note"] = ("no interval: " + (f"{far:.1f} labels' worth toward the far end of the scale < {PSEUDO_MIN_FAR}, "
                                            "where it is known not to hold; interval='betting' holds at any n"
                                            if method != "judge" and call.groups is None else
                                            "interval='t-pseudo' is for the labels' mean, without clusters"))
        extra["_refused"] = "pseudo"
        return np.nan, np.nan, extra
    weight = 0.0 if method == "classical" else float(lam[s])
    rest = values[rest_idx]
    centre = weight * (rest.mean() if len(rest) else 0.0)
    z = y - weight * yhat
    pseudo = np.array([a, b]) - weight * (yhat.mean() if n else 0.0)
    mean_z = (z.sum() + 0.5 * pseudo.sum()) / (n + 1)
    var_z = (np.sum((z - mean_z) ** 2) + 0.5 * np.sum((pseudo - mean_z) ** 2)) / n
    variance = var_z / (n + 1) + (weight**2 * rest.var(ddof=1) / len(rest) if len(rest) > 1 and weight else 0.0)
    if call.finite_population:
        variance *= 1 - n / (n + len(rest))
    low, high = _interval(np.array([centre + mean_z]), np.array([np.sqrt(variance)]), level, call.alternative, "t", n)
    low, high = max(float(low[0]), a), min(float(high[0]), b)
    return low, high, extra


def _row(call: _Call, method: str, s: int, est, lam) -> dict:
    n_lab = int(call.m["n"][s])
    row = {"estimate": est[s] if (n_lab >= 2 or method == "judge") else np.nan, "ci_low": np.nan, "ci_high": np.nan,
           "n_labelled": n_lab, "n_unlabelled": int(call.m["N"][s]), "lam": lam[s], "method": method,
           "interval": call.name(method), "note": call.why if method != "judge" or call.interval == "t" else ""}
    return {call.names.name: call.names[s], **row} if call.names is not None else row


def _p_value(call: _Call, method, s, arrays, est, se, lam, null) -> float:
    """The test of "this segment's mean is ``null``": the smallest error rate at which its interval excludes it."""
    def excludes(a):
        if call.interval == "betting" and call.groups is not None:
            return _cluster_betting(arrays, call.groups, method, 1 - a, call.scale, call.judge_scale, call.alternative,
                                    call.bound, null=null)
        if call.interval == "betting" and not (call.exact and method == "classical"):
            return _betting_rows(arrays, [method], 1 - a, call.scale, call.judge_scale, call.finite_population,
                                 call.alternative, call.degenerate(s), null=null)[method]
        low_, high_, _ = _segment_interval(call, method, s, arrays, est, se, lam, 1 - a)
        return not (low_ <= null <= high_)

    return _stats.betting_p_value(excludes, tol=1e-5)


def _select(call: _Call, method, method_rows, est, se, lam, adjust, alpha, null) -> float:
    """Benjamini & Yekutieli (2005): select the segments by BH (BY) at alpha, then their intervals at 1 - R alpha / m
    (over H_m for BY); returns that level."""
    p = np.array([r["p_val"] for r, _, _ in method_rows], dtype=float)
    chosen = (_stats.adjust_p_values(p, adjust) <= alpha) & ~np.isnan(p)
    m_tests, selected = int((~np.isnan(p)).sum()), int(chosen.sum())
    harmonic = 1.0 if adjust == "bh" else float(np.sum(1.0 / np.arange(1, max(m_tests, 1) + 1)))
    fcr_level = 1 - selected * alpha / (max(m_tests, 1) * harmonic)
    for (row, s, arrays), pick in zip(method_rows, chosen, strict=True):
        row["selected"] = bool(pick)
        if pick:
            row["ci_low"], row["ci_high"], extra = _segment_interval(call, method, s, arrays, est, se, lam, fcr_level)
            extra.pop("_refused", None)
            row.update(extra)
        elif not np.isnan(row["p_val"]):
            row["note"] = f"not selected ({adjust.upper()} at {alpha:g} against {null:g})"
    return fcr_level


def _method_rows(call: _Call, method: str, *, null, refused: dict) -> tuple[list, tuple]:
    """Every segment's row of one method (before selection)."""
    est, se, lam = (_finite_estimate if call.finite_population else _estimate)(call.m, method)
    method_rows = []
    for s in range(call.k):
        arrays = call.arrays(s)
        row = _row(call, method, s, est, lam)
        has = int(call.m["n"][s]) >= 2 or method == "judge"
        if has and null is not None:
            check = (_segment_interval(call, method, s, arrays, est, se, lam, call.level)[2]
                     if call.interval != "betting" or call.groups is not None else {})
            if check.get("_refused"):  # no interval here, so no test from it either
                row["note"], row["p_val"] = check["note"], np.nan
                refused.setdefault(check["_refused"], []).append(call.names[s] if call.names is not None else method)
            else:
                row["p_val"] = _p_value(call, method, s, arrays, est, se, lam, null)
        elif null is not None:
            row["p_val"] = np.nan
        if has and null is None:
            row["ci_low"], row["ci_high"], extra = _segment_interval(call, method, s, arrays, est, se, lam, call.level)
            why = extra.pop("_refused", False)
            if why:
                refused.setdefault(why, []).append(call.names[s] if call.names is not None else method)
            row.update(extra)
        method_rows.append((row, s, arrays))
    return method_rows, (est, se, lam)


FALLBACK_NOTE = "the judge did not narrow the interval here: the humans-only interval (lam = 0)"


def _fall_back(call: _Call, rows: list) -> None:
    """PPI++ is never wider than the humans-only interval in the same table: where its interval is wider (or not
    given) and the humans-only one is, the PPI++ row takes the humans-only estimate and interval, with lam = 0 and a
    note. (The reported interval is then the narrower of two; the coverage harness measures the default so.)"""
    classical = _stats_rows(call, "classical")
    for row, s, _ in rows:
        if row["method"] != "ppi++" or "selected" in row:
            continue
        low, high, est, name = classical[s]
        if np.isnan(low) or np.isnan(high):
            continue
        width = row["ci_high"] - row["ci_low"]
        if np.isnan(width) or width > high - low:
            row.update(estimate=est, ci_low=low, ci_high=high, lam=0.0, interval=name, note=FALLBACK_NOTE)


def _stats_rows(call: _Call, method: str) -> dict:
    """Each segment's interval, estimate and interval name of one method, for :func:`_fall_back`."""
    est, se, lam = (_finite_estimate if call.finite_population else _estimate)(call.m, method)
    out = {}
    for s in range(call.k):
        if int(call.m["n"][s]) < 2:
            out[s] = (np.nan, np.nan, np.nan, "")
            continue
        low, high, extra = _segment_interval(call, method, s, call.arrays(s), est, se, lam, call.level)
        out[s] = (low, high, est[s], call.name(method))
    return out


def _inference(judge: pd.Series, human: pd.Series, *, methods, interval, confidence_level, by, adjust, cluster, bounds,
               finite_population, nan_policy, alternative="two-sided", keep_se=False, null=None, judge_bounds=None):
    """The table of :func:`mean` (``keep_se``: with each row's standard error and degrees of freedom, for p-values;
    ``judge_bounds``: the judge scores' known scale, where the caller knows it)."""
    call = _setup(judge, human, interval=interval, confidence_level=confidence_level, by=by, adjust=adjust,
                  cluster=cluster, bounds=bounds, finite_population=finite_population, nan_policy=nan_policy,
                  alternative=alternative, null=null, methods=methods)
    if judge_bounds is not None:
        call.judge_scale = judge_bounds
    rows, refused, selected_levels = [], {}, {}
    for method in methods:
        method_rows, (est, se, lam) = _method_rows(call, method, null=null, refused=refused)
        if null is not None:
            selected_levels[method] = _select(call, method, method_rows, est, se, lam, adjust, 1 - confidence_level, null)
        elif method == "ppi++" and alternative == "two-sided" and call.groups is None and call.interval != "clt":
            _fall_back(call, method_rows)
        rows.extend(row for row, _, _ in method_rows)
    _warn_refused(refused, call, methods)
    out = pd.DataFrame(rows)
    if not keep_se:
        out = out.drop(columns=[c for c in ("_se", "_df") if c in out.columns])
    if call.groups is not None and "n_clusters" not in out.columns:
        out["n_clusters"] = pd.NA
    if null is not None:
        out.attrs.update(null=null, selected_confidence_level=selected_levels)
    out.attrs.update(confidence_level=call.level, joint_confidence_level=confidence_level if adjust else None,
                     adjust=adjust, interval=call.interval, population="finite" if finite_population else "superpopulation",
                     cluster=None if cluster is None else getattr(cluster, "name", "cluster"), bounds=call.scale)
    return out


def _warn_refused(refused: dict, call: _Call, methods) -> None:
    if refused.get(True):
        warnings.warn(f"{call.interval} intervals need at least {MIN_LARGE_SAMPLE} labels ({MIN_CLUSTERS} clusters); not "
                      f"given for {sorted(set(map(str, refused[True])))[:6]}: the estimate stands, the interval is NaN "
                      "with a note. interval='betting' holds at any number of labels"
                      + (" (it needs bounds=(low, high): the labels' scale)." if call.scale is None else "."),
                      EvalkitWarning, stacklevel=4)
    if refused.get("ppi"):
        warnings.warn(f"{sorted(set(methods) & {'ppi', 'ppi++'})} with `cluster=`: no finite-sample interval (NaN with a "
                      "note; the estimate stands). interval='t' gives the large-sample cluster-robust interval (50 or "
                      "more clusters); method='classical' the betting interval over whole clusters, valid at any number "
                      "of clusters.", EvalkitWarning, stacklevel=4)
    if refused.get("pseudo"):
        warnings.warn(f"interval='t-pseudo' is not given for {sorted(set(map(str, refused['pseudo'])))[:6]}: too few labels "
                      f"toward the far end of the scale (fewer than {PSEUDO_MIN_FAR} labels' worth), where it is known not "
                      "to hold (NaN with a note); interval='betting' holds at any n.", EvalkitWarning, stacklevel=4)


# ---------------------------------------------------------------------------------------------- public
def mean(judge: pd.Series, human: pd.Series, *, method="ppi++", interval: str = "auto", confidence_level: float = 0.95,
         by=None, adjust: str | None = None, null=None, cluster=None, bounds=None, finite_population: bool = False,
         nan_policy: str = "raise", probabilities: pd.Series | None = None) -> pd.DataFrame:
    """The humans' mean over all cases, from judge scores on every case and human labels on a random subset.

    Parameters
    ----------
    judge : Series or DataFrame
        One score per case, indexed by case id (unique): numbers (e.g. TCVA scores), PASS/FAIL verdicts or
        booleans (PASS = 1, FAIL = 0). A DataFrame is a jury: one column per judge. Its ``"ppi++"`` row is then
        cross-prediction-powered (Zrnic & Candès 2024): the least-squares line of the labels on every judge's scores
        is fitted in folds of the labels, each fold predicted by the line fitted on the others, and the unlabelled
        cases by the folds' average, so the interval stays valid although the line is learned on the labels; its
        betting interval bets, label by label, on the line through the earlier labels only. The other methods use
        the judges' plain average; ``attrs["weights"]`` holds each judge's slope in the line on every label (see
        :func:`jury` for each judge's agreement beside it). ``by``, ``adjust``, ``null`` and ``cluster`` are not
        offered with a jury. The coverage harness measures the default at 0.94-0.995 at 20-200 labels; the
        cross-fitted t interval at 0.895 on a pass rate of 0.95 at 50 labels (0.94-0.965 elsewhere).
    human : Series
        The human labels of the labelled cases, on the same scale; its index must be a subset of ``judge``'s.
        The cases of ``judge`` it does not name are the unlabelled ones.
    method : str or list of str, default "ppi++"
        The estimator: ``"ppi++"`` (power-tuned lam, clipped to [0, 1]), ``"ppi"`` (lam = 1), ``"classical"``
        (human labels only, lam = 0) or ``"judge"`` (the judge's mean over all cases with its sampling interval:
        what a judge-only report claims; it ignores the labels and is biased whenever the judge is).
    interval : {"auto", "betting", "clt", "t", "t-pseudo"}, default "auto"
        How the interval is made. ``"auto"`` is ``"betting"`` on a known scale (``bounds``, or 0/1 labels) and
        ``"t"`` where the scale is not known (a metric, a log-probability: the smallest and largest value seen are
        not bounds, and a betting interval on them would claim a guarantee it does not have); the note says so.
        ``"betting"``: the betting confidence interval of Waudby-Smith & Ramdas (2024) on the labels, whose coverage
        is at least ``confidence_level`` at every number of labels for labels within ``bounds``. For PPI and PPI++
        each label bets on its rectified value plus the judge's mean over its own block of unlabelled cases (so the
        judge's uncertainty is carried without spending part of the error rate on it), or, with 100 or more
        unlabelled cases per label, bets on its rectified value with the judge's mean bounded apart at a tenth of
        the error rate (the judge's mean is then nearly known). The judge's scores are clipped to the range a
        holdout of the unlabelled cases shows (their 5% and 95% quantiles for PPI++ on a judge with many distinct
        scores), unless they are 0/1, so that every bet rests on bounds fixed before any label is seen. PPI++
        weighs the judge, label by label from the earlier labels only, as much as narrows the interval: with few
        labels or a weak judge that is little. PPI++ is never wider than the humans-only interval of the same
        table: where its interval comes out wider, its row reports the humans-only estimate and interval (lam = 0,
        with a note), so the reported interval is the narrower of two (the coverage harness measures the default
        so, at or above nominal). On 0/1 labels ``"auto"``'s humans-only interval is the exact Clopper-Pearson one
        (the interval column says ``clopper-pearson``).
        ``"clt"``: the normal interval of ``ppi_py`` (population variances); ``"t"``: the same standard error
        with Student's t on n - 1 degrees of freedom. Both are large-sample intervals that run short on bounded,
        skewed labels at 20-100 labels (see the coverage harness), and are not given (NaN, a note and a
        warning) below ``MIN_LARGE_SAMPLE`` labels.
        ``"t-pseudo"`` (opt-in, approximate, known scale only): Student's t on the rectified labels with half a
        pseudo-label at each end of the scale, narrower than betting and about the t interval's width from 100
        labels on; the harness measures 0.95-1.00 on SummEval, skewed 1-5 ratings and Beta(8, 2) labels at 20-200
        labels. It is refused (NaN and a note) where fewer than ``PSEUDO_MIN_FAR`` labels' worth lie toward the far
        end of the scale (a 98% pass rate at 100 labels, 90% at 20), where it is known not to hold.
        With ``cluster``, ``"auto"`` and ``"betting"`` are the betting interval over whole clusters, and ``"t"`` and
        ``"clt"`` the cluster-robust intervals (see ``cluster``).
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
        for 0/1 labels and scores, else none: the scale is not known and ``"auto"`` gives the t interval.
    finite_population : bool, default False
        The estimand. False: the mean of the population the cases were drawn from (the judge's mean itself is
        then uncertain). True: the mean over exactly the cases given, the labels a random sample of them drawn
        without replacement: the judge's mean over them is known, the interval carries the finite-population
        correction and has width 0 once every case is labelled.
    nan_policy : {"raise", "omit"}, default "raise"
        ``"omit"`` drops cases without a judge score and treats cases whose label is missing as unlabelled.
    probabilities : Series, optional
        Active labelling: the draw probabilities the labelled cases were drawn with (:func:`sampling_probabilities`,
        drawn by :func:`choose_cases` with ``strategy="active"``), one at a time without replacement, each case with
        a chance proportional to its probability among the cases left; cases of ``judge`` not in it are a uniform
        pilot labelled first. The estimand is the mean over exactly the cases of ``judge``. Each label counts by
        Des Raj's (1956) estimator, with a prediction (the least-squares line of the labels on the judge's scores)
        refitted as the labels arrive: its mean given the earlier labels is the mean over the cases whatever the
        judge and the probabilities are, so ``"betting"`` (the default on a known scale) holds at every number of
        labels, and ``"t"``/``"clt"`` are the large-sample intervals on its martingale standard error (from
        ``MIN_LARGE_SAMPLE`` labels; the coverage harness measures the t interval at 0.885 on SummEval's skewed
        consistency ratings at 50 labels, 0.93-0.955 on its other designs at 50-200: the betting one holds there). ``human`` must hold every drawn case's label, in the order drawn. The methods
        offered are ``"ppi++"``, ``"classical"`` (the labels' Des Raj mean without the judge) and ``"judge"``;
        ``by``, ``adjust``, ``null``, ``cluster`` and ``nan_policy="omit"`` are not.

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
    2      judge     3.424   3.366    3.482    NaN        t

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
    if probabilities is not None or isinstance(judge, pd.DataFrame):
        return _designed(judge, human, probabilities, methods=methods, interval=interval,
                         confidence_level=confidence_level, by=by, adjust=adjust, null=null, cluster=cluster,
                         bounds=bounds, finite_population=bool(finite_population), nan_policy=nan_policy)
    judge, human = _as_scores(judge, "judge"), _as_scores(human, "human")
    return _inference(judge, human, methods=methods, interval=interval, confidence_level=confidence_level, by=by,
                      adjust=adjust, cluster=cluster, bounds=bounds, finite_population=bool(finite_population),
                      nan_policy=nan_policy, null=null)


def _designed(judge, human, probabilities, *, methods, interval, confidence_level, by, adjust, null, cluster, bounds,
              finite_population, nan_policy, alternative="two-sided", keep_se=False) -> pd.DataFrame:
    """:func:`mean` for a jury (a DataFrame judge) or for labels drawn with ``probabilities`` (active labelling)."""
    from evalkit.infer._active import active_table
    from evalkit.infer._jury import _judge_frame, jury_table

    what = "`probabilities` (active labelling)" if probabilities is not None else "a jury (a DataFrame `judge`)"
    for name, value in (("by", by), ("adjust", adjust), ("null", null), ("cluster", cluster)):
        if value is not None:
            raise ValueError(f"`{name}` is not offered with {what}; got {name}={show(value)}. Call mean once per "
                             "segment instead.")
    human = _as_scores(human, "human")
    if probabilities is not None:
        if nan_policy != "raise":
            raise ValueError("`nan_policy='omit'` is not offered with `probabilities`: every drawn case needs its label "
                             "and every case its score (a draw left out biases the estimate).")
        return active_table(judge, human, probabilities, methods=methods, interval=interval,
                            confidence_level=confidence_level, bounds=bounds, alternative=alternative, keep_se=keep_se)
    return jury_table(_judge_frame(judge), human, methods=methods, interval=interval,
                      confidence_level=confidence_level, bounds=bounds, finite_population=finite_population,
                      nan_policy=nan_policy, alternative=alternative, keep_se=keep_se)


def difference(judge_a: pd.Series, judge_b: pd.Series, human_a: pd.Series, human_b: pd.Series, *, method="ppi++",
               interval: str = "auto", confidence_level: float = 0.95, alternative: str = "two-sided", cluster=None,
               bounds=None, finite_population: bool = False, nan_policy: str = "raise",
               probabilities: pd.Series | None = None) -> pd.DataFrame:
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
    method, interval, confidence_level, cluster, finite_population, nan_policy, probabilities
        As in :func:`mean`. ``judge_a`` and ``judge_b`` may be DataFrames with the same columns (a jury: each
        judge's scores of A and of B; the jury is learned on the per-case differences). With ``probabilities`` (the
        cases drawn by them, labelled for both systems) the estimand is the mean difference over exactly the cases
        given.
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
    several = isinstance(judge_a, pd.DataFrame) or isinstance(judge_b, pd.DataFrame)
    if several:
        from evalkit.infer._jury import _judge_frame

        ja, jb = _judge_frame(judge_a, "judge_a"), _judge_frame(judge_b, "judge_b")
        if list(ja.columns) != list(jb.columns):
            raise ValueError(f"`judge_a` and `judge_b` must have the same judges (columns); got {list(ja.columns)} and "
                             f"{list(jb.columns)}.")
    else:
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
        if several and isinstance(values, pd.DataFrame):
            values = values.mean(axis=1, skipna=False)
        if nan_policy == "raise" and values.isna().any():
            raise ValueError(f"`{name}` has {int(values.isna().sum())} missing value(s), e.g. for case "
                             f"{show(values.index[values.isna().to_numpy()][0])}; drop them or pass nan_policy='omit'.")
    labels = np.concatenate([ha.to_numpy(float), hb.to_numpy(float)])
    scores = np.concatenate([ja.to_numpy(float).ravel(), jb.to_numpy(float).ravel()])
    # each system's labels' scale, if known (a jury's or an active design's line puts the judges on the labels' scale)
    ends = _bounds(bounds, labels, labels if several or probabilities is not None else scores)
    scale = None if ends is None else (ends[0] - ends[1], ends[1] - ends[0])
    if probabilities is not None or several:
        return _designed_difference(judge, human, probabilities, methods=methods, interval=interval,
                                    confidence_level=confidence_level, cluster=cluster, scale=scale,
                                    finite_population=bool(finite_population), nan_policy=nan_policy,
                                    alternative=alternative)
    one = _judge_scale(scores, bool(finite_population))
    judge_bounds = None if one is None else (one[0] - one[1], one[1] - one[0])
    out = _inference(judge, human, methods=methods, interval=interval, confidence_level=confidence_level, by=None,
                     adjust=None, cluster=cluster, bounds=scale, finite_population=bool(finite_population),
                     nan_policy=nan_policy, alternative=alternative, keep_se=True, judge_bounds=judge_bounds)
    context = _DifferenceTest(judge, human, out.attrs["interval"], scale, judge_bounds, bool(finite_population),
                              alternative, nan_policy, None if cluster is None else as_clusters(cluster, judge.index)[0])
    p_values = [context.p_value(row) for row in out.to_dict("records")]
    out.insert(3, "p_val", np.asarray(p_values, dtype=float))
    return out.drop(columns=["_se", "_df"], errors="ignore")



def _designed_difference(judge, human, probabilities, *, methods, interval, confidence_level, cluster, scale,
                         finite_population, nan_policy, alternative) -> pd.DataFrame:
    """:func:`difference` for a jury or for cases drawn with ``probabilities``: the table and each row's p-value."""
    from evalkit.infer._active import active_p_value
    from evalkit.infer._jury import jury_p_value

    out = _designed(judge, human, probabilities, methods=methods, interval=interval, confidence_level=confidence_level,
                    by=None, adjust=None, null=None, cluster=cluster, bounds=scale,
                    finite_population=finite_population, nan_policy=nan_policy, alternative=alternative, keep_se=True)
    steps = out.attrs.pop("_steps", [None] * len(out))
    p_values = []
    for row, row_steps in zip(out.to_dict("records"), steps, strict=True):
        if row["method"] == "judge" and probabilities is not None:
            p_values.append(np.nan)  # the judge's own mean over the cases: known, nothing to test
        elif probabilities is not None:
            p_values.append(active_p_value(row_steps, interval=row["interval"], bounds=scale, estimate=row["estimate"],
                                           se=row["_se"], df=row["_df"], alternative=alternative))
        elif row["method"] == "ppi++" and not str(row["note"]).startswith(FALLBACK_NOTE):
            p_values.append(jury_p_value(judge, human, interval=interval, bounds=scale,
                                         finite_population=finite_population, nan_policy=nan_policy,
                                         alternative=alternative))
        else:  # the judges' plain average through the single-judge test
            test = _DifferenceTest(judge.mean(axis=1, skipna=False), human, out.attrs["interval"], scale, None,
                                   finite_population, alternative, nan_policy, None)
            p_values.append(test.p_value(dict(row)))
    out.insert(3, "p_val", np.asarray(p_values, dtype=float))
    return out.drop(columns=["_se", "_df"], errors="ignore")


@dataclass(frozen=True)
class _DifferenceTest:
    """The p-value of "no difference" for one row of :func:`difference`, by the interval the row reports.

    A betting interval's p-value is the smallest level whose interval excludes 0 (over whole clusters when
    ``groups`` is given); a t or normal interval's is the studentized estimate's tail.
    """

    judge: pd.Series
    human: pd.Series
    interval: str
    scale: tuple | None
    judge_bounds: tuple | None
    finite_population: bool
    alternative: str
    nan_policy: str
    groups: np.ndarray | None

    def p_value(self, row: dict) -> float:
        if str(row.get("note", "")).startswith(FALLBACK_NOTE):
            row["method"] = "classical"  # the humans-only interval it reports: its test
        interval = self.interval
        if interval == "betting" and row["method"] == "judge" and self.judge_bounds is None and self.groups is None:
            interval = "t"  # the judge's own mean without a known scale: Student's t
        if interval != "betting":
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.divide(np.float64(row["estimate"]), np.float64(row.get("_se", np.nan)))
            dist = stats.norm if interval == "clt" else stats.t(row.get("_df", np.nan))
            return {"two-sided": 2 * dist.sf(np.abs(z)), "greater": dist.sf(z), "less": dist.cdf(z)}[self.alternative]
        y, positions, unlabelled, values = _align(self.judge, self.human, self.nan_policy)
        arrays = (*_segment_arrays(y, values, positions, unlabelled, None, 0), values)
        method = row["method"]
        if self.groups is not None:
            if np.isnan(row["ci_low"]) and np.isnan(row["ci_high"]):
                return np.nan
            bound = float(np.bincount(self.groups).max())
            return _stats.betting_p_value(lambda alpha: _cluster_betting(
                arrays, self.groups, method, 1 - alpha, self.scale, self.judge_bounds, self.alternative, bound, null=0.0))
        degenerate = bool(row["n_unlabelled"] == 0 or np.nanmax(values) == np.nanmin(values))
        return _stats.betting_p_value(lambda alpha: _betting_rows(
            arrays, [method], 1 - alpha, self.scale, self.judge_bounds, self.finite_population, self.alternative,
            degenerate, null=0.0)[method])


def pass_rate(results: pd.DataFrame, human: pd.Series, *, checks: pd.DataFrame | None = None, method="ppi++",
              interval: str = "auto", confidence_level: float = 0.95, by=None, adjust: str | None = None, null=None,
              cluster=None, finite_population: bool = False, probabilities: pd.Series | None = None) -> pd.DataFrame:
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
    method, interval, confidence_level, adjust, null, finite_population, probabilities
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
          method  estimate  n_labelled  n_unlabelled  lam
    0      ppi++     0.400           5             7  0.0
    1  classical     0.400           5             7  0.0
    2      judge     0.667           5             7  NaN
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
        drawn = None if probabilities is None else probabilities[probabilities.index.isin(score.index)] \
            if isinstance(probabilities, pd.Series) else probabilities
        table = mean(score, labels, method=methods, interval=interval, confidence_level=confidence_level, by=segments,
                     adjust=adjust, null=null, cluster=clusters, bounds=(0, 1), finite_population=finite_population,
                     probabilities=drawn)
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
