"""The engine under mean, difference and pass_rate: inputs, per-segment moments, the interval kernels, the table driver."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from evalkit import _stats
from evalkit._coerce import as_pass
from evalkit._validation import (
    align_ids,
    as_clusters,
    check_number,
    check_option,
    check_unique_index,
    id_order,
    show,
    warn,
)

METHODS = ("calibrated", "ppi++", "ppi", "classical", "judge")
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


def _align(judge: pd.Series, human: pd.Series, nan_policy: str, name: str = "human", judge_name: str = "judge"):
    """The labels and their cases' positions in ``judge``; the unlabelled cases (None: every other case).
    ``name`` and ``judge_name``: the arguments, for messages (the planners' ``human_pilot`` has no ``nan_policy``)."""
    omit = " or pass nan_policy='omit'" if name != "human_pilot" else ""
    check_unique_index(human.index, name)
    check_unique_index(judge.index, "judge")  # pandas keeps the hash table it builds here for get_indexer below
    values = judge.to_numpy(dtype=float)
    positions = judge.index.get_indexer(human.index)
    if (positions < 0).any():  # a label of a case the judge did not score: counted, named and left out
        kept = align_ids(judge.index, human.index, left_name=judge_name, right_name=name, warn_left=False)
        human = human.loc[human.index.isin(kept)]
        positions = judge.index.get_indexer(human.index)
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
        warn(f"fewer than 2 human labels{where}: no interval can be estimated there (NaN row).")
    if any(x in methods for x in ("ppi", "ppi++")):
        if ((m["N"] == 0) & ~few).any():
            warn("every case is labelled: there is no unlabelled case for the judge to add, so PPI and "
                          "PPI++ equal the classical estimate (lam = 0).")
        constant = _constant(m)
        if (constant & ~few).any():
            warn("the judge gives every case the same score: it carries no information, so PPI and PPI++ "
                          "equal the classical estimate.")


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
    labels (``"judge"``: of its judge scores on every case), clusters in the order of their first case, then the fixed
    pseudo-random order of :func:`_betting_order` (with one case per cluster, the unclustered betting interval);
    with ``null``, whether the interval excludes it (as :func:`_betting_excludes`)."""
    y, _, pos, rest_idx, values = arrays
    if method == "judge":
        every = np.concatenate([pos, rest_idx])
        x, ids, (lo, hi) = values[every], groups[every], judge_bounds
    else:
        x, ids, (lo, hi) = y, groups[pos], bounds
    if alternative != "two-sided":
        level = 1 - 2 * (1 - level)
    inverse = pd.factorize(ids)[0]  # clusters in the order of their first case (cases in the order of their ids)
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
    """PPI++ is never wider than the humans-only interval in the same table: where its interval is not narrower (or not
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
        # not narrower (equal to the last digits where the bets gave the judge no weight): the humans-only row, whole
        if np.isnan(width) or width >= (high - low) * (1 - 1e-9):
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


def _in_id_order(judge: pd.Series, by, cluster):
    """The judge's cases in evalkit's fixed order of their ids (:func:`evalkit._validation.id_order`), with ``by`` and
    ``cluster`` when given by position: the betting intervals take the cases in an order set by the ids alone, so the
    same cases in other rows give the same numbers."""
    order = id_order(judge.index)
    if (order == np.arange(len(order))).all():
        return judge, by, cluster

    def by_position(value):
        if value is None or isinstance(value, (pd.Series, str)) or np.ndim(value) != 1 or len(value) != len(order):
            return value  # by id (aligned later), or wrong (refused later with its own message)
        return np.asarray(value)[order]

    return judge.iloc[order], by_position(by), by_position(cluster)


def _inference(judge: pd.Series, human: pd.Series, *, methods, interval, confidence_level, by, adjust, cluster, bounds,
               finite_population, nan_policy, alternative="two-sided", keep_se=False, null=None, judge_bounds=None):
    """The table of :func:`mean` (``keep_se``: with each row's standard error and degrees of freedom, for p-values;
    ``judge_bounds``: the judge scores' known scale, where the caller knows it)."""
    judge, by, cluster = _in_id_order(judge, by, cluster)
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
        warn(f"{call.interval} intervals need at least {MIN_LARGE_SAMPLE} labels ({MIN_CLUSTERS} clusters); not "
                      f"given for {sorted(set(map(str, refused[True])))[:6]}: the estimate stands, the interval is NaN "
                      "with a note. interval='betting' holds at any number of labels"
                      + (" (it needs bounds=(low, high): the labels' scale)." if call.scale is None else "."))
    if refused.get("ppi"):
        warn(f"{sorted(set(methods) & {'ppi', 'ppi++'})} with `cluster=`: no finite-sample interval (NaN with a "
                      "note; the estimate stands). interval='t' gives the large-sample cluster-robust interval (50 or "
                      "more clusters); method='classical' the betting interval over whole clusters, valid at any number "
                      "of clusters.")
    if refused.get("pseudo"):
        warn(f"interval='t-pseudo' is not given for {sorted(set(map(str, refused['pseudo'])))[:6]}: too few labels "
                      f"toward the far end of the scale (fewer than {PSEUDO_MIN_FAR} labels' worth), where it is known not "
                      "to hold (NaN with a note); interval='betting' holds at any n.")
