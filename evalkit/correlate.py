"""Correlation of metric scores with human ratings, with bootstrap CIs and tests between metrics.

Scores and human ratings are always aligned by index (item id), never by position. The point estimates
and p-values come from :func:`scipy.stats.spearmanr`, :func:`~scipy.stats.kendalltau` and
:func:`~scipy.stats.pearsonr`; confidence intervals from :func:`scipy.stats.bootstrap` with a statistic
vectorized over resamples and over every score column at once. For Spearman each column is ranked once
and every resample by counting (the same coefficients as ranking each resample, bit for bit).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from evalkit import _display, _stats
from evalkit import tcva as _tcva
from evalkit._stats import ADJUSTMENTS, adjust_p_values, z_value, z_variance_factor
from evalkit._validation import (
    align_ids,
    as_frame,
    as_groups,
    check_level,
    check_number,
    check_option,
    check_rng,
    check_unique_index,
    sorted_ids,
    warn,
)

__all__ = [
    "correlate",
    "mean_absolute_error",
    "compare_metrics",
    "paired_bootstrap_tcva_paper",
    "select_temperature",
    "TemperatureSelection",
]

METHODS = ("spearman", "kendall", "pearson")
LEVELS = ("dataset", "summary", "system")
COLUMNS = ["n", "r", "ci_low", "ci_high", "interval", "p_val", "p_adjusted", "adjust", "method", "level", "n_groups",
           "n_skipped"]


# --------------------------------------------------------------------------------------------------
# array kernels
# --------------------------------------------------------------------------------------------------
def _pearson_lastaxis(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson r along the last axis (broadcasting); NaN where either side is constant."""
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (xc * yc).sum(axis=-1) / np.sqrt((xc * xc).sum(axis=-1) * (yc * yc).sum(axis=-1))
    return np.clip(r, -1.0, 1.0)


def _corr_lastaxis(x: np.ndarray, y: np.ndarray, method: str) -> np.ndarray:
    """Correlation along the last axis for arrays that broadcast; the vectorized bootstrap kernel."""
    if method == "pearson":
        return _pearson_lastaxis(x, y)
    if method == "spearman":
        return _pearson_lastaxis(stats.rankdata(x, axis=-1), stats.rankdata(y, axis=-1))
    # Kendall's tau-b has no vectorized form in scipy; loop over the leading positions.
    x, y = np.broadcast_arrays(x, y)
    flat_x, flat_y = x.reshape(-1, x.shape[-1]), y.reshape(-1, y.shape[-1])
    out = np.array([stats.kendalltau(a, b).statistic for a, b in zip(flat_x, flat_y, strict=True)])
    return out.reshape(x.shape[:-1])


def _midranks(codes: np.ndarray, n_values: int, *, shift: float = 0.0) -> np.ndarray:
    """Average ranks along the last axis of integer codes in ``[0, n_values)``, found by counting.

    Equal to :func:`scipy.stats.rankdata` (``method="average"``) of any values whose order the codes
    keep, bit for bit (mid-ranks are half-integers, exact in floating point). Why not rankdata: it
    sorts every row, while a bootstrap resample of already ranked values needs only a count per code
    (``bincount``), its running total (``cumsum``) and a lookup. ``shift`` is subtracted from every rank
    (a half-integer shift keeps them exact).
    """
    rows = codes.reshape(-1, codes.shape[-1])
    flat = rows + (np.arange(len(rows)) * n_values)[:, None]  # each row's codes in its own block
    count = np.bincount(flat.ravel(), minlength=len(rows) * n_values)
    mid = count * -0.5  # mid-rank of a code: its running total - (count - 1) / 2
    mid += np.cumsum(count.reshape(len(rows), n_values), axis=1).ravel()
    mid += 0.5 - shift
    return mid[flat].reshape(codes.shape)


def _resampled_corr(x: np.ndarray, y: np.ndarray, method: str):
    """``idx -> r`` of the columns of ``x`` (cols, n) with ``y`` (n,) on resampled positions ``idx`` (..., m).

    Spearman ranks each column once (dense codes, ties share one) and each resample by counting
    (:func:`_midranks`), centred on their known mean ``(m + 1) / 2``. The same coefficients as ranking
    every resample with rankdata and correlating, bit for bit: centred mid-ranks are half-integers, so
    their products and sums are exact in floating point in any order (for m up to about 200,000).
    Columns are done one at a time so that a batch's arrays stay in the processor cache.
    """
    if method != "spearman":
        return lambda idx: _corr_lastaxis(x[:, idx], y[idx], method)
    n = x.shape[-1]
    code_x = [np.unique(column, return_inverse=True)[1].ravel() for column in x]
    code_y = np.unique(y, return_inverse=True)[1].ravel()

    def stat(idx):
        centre = (idx.shape[-1] + 1) / 2
        yc = _midranks(code_y[idx], n, shift=centre)
        yy = np.einsum("...i,...i->...", yc, yc)
        out = np.empty((len(code_x), *idx.shape[:-1]))
        with np.errstate(invalid="ignore", divide="ignore"):
            for j, codes in enumerate(code_x):
                xc = _midranks(codes[idx], n, shift=centre)
                out[j] = np.einsum("...i,...i->...", xc, yc) / np.sqrt(np.einsum("...i,...i->...", xc, xc) * yy)
        return np.clip(out, -1.0, 1.0)

    return stat


def _weighted_corr(x: np.ndarray, y: np.ndarray, weights: np.ndarray, method: str) -> np.ndarray:
    """The coefficient of the multiset in which item i occurs ``weights[b, i]`` times, for each row b of weights.

    A cluster bootstrap resample is such a multiset (every item of a drawn cluster, as often as the cluster
    is drawn). Equal to the coefficient of the data with the items repeated (ties from repetition included).
    """
    w = weights
    total = w.sum(axis=1, keepdims=True)
    if method == "kendall":  # tau-b from weighted pairs: copies of one item are tied on both sides
        sx = np.sign(x[:, None] - x[None, :])
        sy = np.sign(y[:, None] - y[None, :])
        num = np.einsum("bi,bj,ij->b", w, w, sx * sy)
        with np.errstate(invalid="ignore", divide="ignore"):
            return num / np.sqrt(np.einsum("bi,bj,ij->b", w, w, np.abs(sx)) * np.einsum("bi,bj,ij->b", w, w, np.abs(sy)))
    if method == "spearman":  # mid-ranks of the multiset: counts of each distinct value, weighted
        ranked = []
        for v in (x, y):
            codes = np.unique(v, return_inverse=True)[1].ravel()
            onehot = np.zeros((len(v), codes.max() + 1))
            onehot[np.arange(len(v)), codes] = 1.0
            count = w @ onehot
            mid = np.cumsum(count, axis=1) - (count - 1) / 2
            ranked.append(np.take_along_axis(mid, np.broadcast_to(codes, w.shape), axis=1))
        x, y = ranked
    else:
        x, y = np.broadcast_to(x, w.shape), np.broadcast_to(y, w.shape)
    mx, my = (w * x).sum(axis=1, keepdims=True) / total, (w * y).sum(axis=1, keepdims=True) / total
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (w * (x - mx) * (y - my)).sum(axis=1) / np.sqrt((w * (x - mx) ** 2).sum(axis=1) * (w * (y - my) ** 2).sum(axis=1))
    return np.clip(r, -1.0, 1.0)


# Up to this many items, p-values come from the exact permutation distribution (all n! pairings): the
# asymptotic formulas give p = 0 to 3 or 4 perfectly ranked items, where the smallest possible two-sided
# p-value is 2 / n!. 9! = 362,880 pairings still take well under a second.
EXACT_MAX_N = 9


def _kendall_pairwise(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b along the last axis from all pairs (vectorized; for the small-n permutation test)."""
    sx = np.sign(x[..., :, None] - x[..., None, :])
    sy = np.sign(y[..., :, None] - y[..., None, :])
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=(-2, -1)) / np.sqrt((sx * sx).sum(axis=(-2, -1)) * (sy * sy).sum(axis=(-2, -1)))


def _exact_p(x: np.ndarray, y: np.ndarray, method: str) -> float:
    """Two-sided p-value of the exact permutation test (scipy.stats.permutation_test over all pairings)."""
    if method == "kendall":
        statistic = lambda u, axis=-1: _kendall_pairwise(u, y)  # noqa: E731
    else:
        statistic = lambda u, axis=-1: _corr_lastaxis(u, y, method)  # noqa: E731
    res = stats.permutation_test((x,), statistic, permutation_type="pairings", n_resamples=np.inf, vectorized=True,
                                 alternative="two-sided", batch=20_000)
    return float(res.pvalue)


def _scipy_corr(x: np.ndarray, y: np.ndarray, method: str, *, p_value: bool = True) -> tuple[float, float]:
    """Coefficient and two-sided p-value from scipy; NaN when either side is constant or n < 3.

    Up to ``EXACT_MAX_N`` items the p-value is the exact permutation p-value instead of scipy's asymptotic one
    (skipped, as NaN, when the caller needs only the coefficient).
    """
    if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
        return np.nan, np.nan
    func = {"spearman": stats.spearmanr, "kendall": stats.kendalltau, "pearson": stats.pearsonr}[method]
    res = func(x, y)
    if len(x) <= EXACT_MAX_N:
        return float(res.statistic), _exact_p(x, y, method) if p_value else np.nan
    return float(res.statistic), float(res.pvalue)


def _why_undefined(x: np.ndarray, y: np.ndarray) -> str:
    if len(x) < 3:
        return f"only {len(x)} item(s) with both a score and a rating"
    if np.ptp(y) == 0:
        return f"the human ratings are constant ({y[0]:g} for all {len(y)} items)"
    return f"the scores are constant ({x[0]:g} for all {len(x)} items)"


def _warn_undefined(reasons: dict) -> None:
    if reasons:
        listed = "; ".join(f"{col!r}: {why}" for col, why in reasons.items())
        warn(f"a correlation is undefined, so r and p_val are NaN for {listed}.")


def _bootstrap_ci(stat, n: int, *, n_resamples, confidence_level, interval, rng, k: int):
    """CI of a vector-valued statistic of resampled indices 0..n-1 (k outputs); NaN when impossible.

    Resamples where the statistic is undefined (a resample whose ratings or scores are all equal: likely
    with ratings piled at the top of a scale) are left out of a percentile or basic interval; the third
    value returned, ``(result, undefined)``, counts them per output. BCa needs every resample, so its
    interval is NaN then.
    """
    if n_resamples == 0 or n < 3:
        return np.full(k, np.nan), np.full(k, np.nan), None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # degenerate resamples give NaN, handled below
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap(
            (np.arange(n),), lambda idx, axis=-1: stat(np.asarray(idx, dtype=np.intp)), vectorized=True,
            n_resamples=n_resamples, confidence_level=confidence_level, method=interval, rng=rng,
            batch=max(1, 2_000_000 // max(1, n * k)),
        )
    low, high = np.atleast_1d(res.confidence_interval.low).copy(), np.atleast_1d(res.confidence_interval.high).copy()
    dist = np.atleast_2d(res.bootstrap_distribution)
    undefined = np.isnan(dist).sum(axis=-1)
    if interval != "BCa":
        tail = (1 - confidence_level) / 2
        for j in np.flatnonzero((undefined > 0) & (undefined < dist.shape[-1])):
            q = stats.quantile(dist[j], [tail, 1 - tail], nan_policy="omit")
            if interval == "basic":
                theta = float(stat(np.arange(n)[None, :]).reshape(k, -1)[j, 0])
                q = 2 * theta - q[::-1]
            low[j], high[j] = q
    return low, high, (res, undefined)


def _warn_undefined_resamples(columns, undefined, n_resamples: int) -> None:
    if undefined is not None and undefined.any():
        listed = "; ".join(f"{col!r}: {int(u)} of {n_resamples}" for col, u in zip(columns, undefined, strict=True) if u)
        warn(f"some bootstrap resamples have constant scores or ratings, so their correlation is undefined; "
             f"they were left out of the interval ({listed}). Many such resamples mean too few items that vary.")


# --------------------------------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------------------------------
def _human_series(human) -> pd.Series:
    """A Series of ratings by item; a long table ``item_id, annotator, rating`` is averaged per item."""
    if isinstance(human, pd.DataFrame):
        missing = [c for c in ("item_id", "rating") if c not in human.columns]
        if missing:
            raise KeyError(
                f"`human` as a table needs columns ['item_id', 'rating'] (and usually 'annotator'); missing "
                f"{missing}; it has {list(human.columns)}."
            )
        if "dimension" in human.columns and human["dimension"].nunique() > 1:
            raise ValueError(f"`human` holds ratings of {human['dimension'].nunique()} dimensions (e.g. "
                             f"{human['dimension'].unique()[:3].tolist()}); select one, e.g. "
                             "human[human['dimension'] == 'Overall'], so that one item's ratings are averaged.")
        return human.groupby("item_id", sort=False)["rating"].mean().rename("human")
    if not isinstance(human, pd.Series):
        raise TypeError(
            f"`human` must be a Series indexed by item id or a long DataFrame; got {type(human).__name__}. "
            "Plain arrays are refused because they can only be aligned by position."
        )
    return human


def _check_numeric(values: pd.Series, name: str) -> None:
    """Raise TypeError when ``values`` holds something that is not a number (e.g. rating labels as text)."""
    if pd.api.types.is_numeric_dtype(values):
        return
    bad = values[pd.to_numeric(values, errors="coerce").isna() & values.notna()]
    if len(bad):
        raise TypeError(f"`{name}` must hold numbers; got {values.dtype} values such as {bad.unique()[:3].tolist()}. "
                        "Map rating labels to numbers first (e.g. with Series.map or pandas.to_numeric).")


def _align(scores, human, *, by=None, warn=True, by_name="by", sort=True) -> tuple[pd.DataFrame, pd.Series, pd.Series | None]:
    """Align scores (DataFrame), human (Series) and by (Series or None) on their common index, in sorted id order (the
    order the bootstrap draws items in; ``sort=False`` keeps the scores' order, for the TCVA paper's own bootstrap)."""
    frame = as_frame(scores, "scores")
    human = _human_series(human)
    _check_numeric(human, "human")
    for column, values in frame.items():
        _check_numeric(values, f"scores[{column!r}]" if isinstance(scores, pd.DataFrame) else "scores")
    check_unique_index(frame.index, "scores")
    check_unique_index(human.index, "human")
    for name, obj in (("scores", frame), ("human", human)):
        if len(obj) == 0:
            raise ValueError(f"`{name}` is empty.")
    groups = None if by is None else as_groups(by, frame, name=by_name, table_name="scores", columns=False)
    if not frame.index.isin(human.index).any():
        raise ValueError(
            "`scores` and `human` share no index labels, so nothing can be aligned; first labels: "
            f"scores {frame.index[:3].tolist()}, human {human.index[:3].tolist()}."
        )
    common = align_ids(frame.index, human.index, left_name="scores", right_name="human", what="item",
                       warn_left=warn, warn_right=warn)
    if sort:
        common = sorted_ids(common)  # the bootstrap draws items by position: sorted ids, whatever the rows' order
    if groups is not None:
        common = common.intersection(groups.index, sort=False)
        if len(common) == 0:
            raise ValueError(f"`{by_name}` gives a group to none of the items in both `scores` and `human`.")
    frame = frame.loc[common].astype(float)
    human = human.loc[common].astype(float)
    if human.isna().all():
        raise ValueError(f"`human` has no rating for any of the {len(common)} aligned items (all NaN).")
    if groups is not None:
        groups = groups.loc[common]
        if groups.isna().any():
            raise ValueError(f"`{by_name}` has missing group labels for some aligned items.")
    return frame, human, groups


def _valid_mask(frame: pd.DataFrame, human: pd.Series, nan_policy: str) -> np.ndarray:
    values = frame.to_numpy(dtype=float)
    valid = ~np.isnan(values) & ~np.isnan(human.to_numpy())[:, None]
    if nan_policy == "raise" and not valid.all():
        col = frame.columns[np.flatnonzero(~valid.all(axis=0))[0]]
        raise ValueError(f"missing values in `scores` column {col!r} or in `human` (nan_policy='raise').")
    if nan_policy == "propagate":
        valid = np.ones_like(valid)
    return valid


# --------------------------------------------------------------------------------------------------
# public API
# --------------------------------------------------------------------------------------------------
def correlate(
    scores,
    human,
    *,
    method: str = "spearman",
    level: str = "dataset",
    by=None,
    confidence_level: float = 0.95,
    n_resamples: int = 1000,
    interval: str = "auto",
    nan_policy: str = "omit",
    adjust: str | None = None,
    cluster=None,
    rng=None,
) -> pd.DataFrame:
    """Correlate each score column with human ratings.

    Parameters
    ----------
    scores : Series or DataFrame
        Metric scores indexed by item id; a DataFrame (e.g. the output of :func:`evalkit.tcva.sweep`)
        gives one result row per column.
    human : Series or DataFrame
        Human ratings indexed by item id, or a long table ``item_id, annotator, rating`` (averaged per item).
    method : {"spearman", "kendall", "pearson"}
        The coefficient (``r`` holds whichever it is). Kendall is tau-b.
    level : {"dataset", "summary", "system"}
        ``"dataset"``: over all items pooled. ``"summary"``: within each group of ``by`` (e.g. the
        source document), then averaged over groups; groups where either side is constant are skipped
        and counted in ``n_skipped``; ``p_val`` is a one-sample t-test of the per-group coefficients
        against 0. ``"system"``: correlate the per-group means (``by`` names the system).
    by : str or Series, optional
        Index level name of ``scores`` or a Series of group labels indexed like ``scores``.
    confidence_level : float, default 0.95
    n_resamples : int, default 1000
        Bootstrap resamples of items (groups at summary and system level); 0 skips the CI.
    interval : {"auto", "percentile", "basic", "BCa", "t"}, default "auto"
        ``"percentile"``, ``"basic"``, ``"BCa"``: passed to :func:`scipy.stats.bootstrap` as ``method``
        (resampling items, clusters or groups). ``"t"`` (summary level only): the mean of the per-group
        coefficients plus or minus Student's t times their standard error, the interval of the t-test
        behind ``p_val``. ``"auto"``: ``"t"`` at summary level, ``"percentile"`` otherwise. At 20 source
        documents of SummEval the percentile interval of the summary-level mean covered 0.90 where 0.95 is
        claimed, the t interval 0.93 (the coverage harness); at 50, 0.96 and 0.97.
    nan_policy : {"omit", "raise", "propagate"}, default "omit"
        ``"omit"`` drops the items where a column or the human rating is NaN, per column.
    adjust : {None, "holm", "bonferroni", "bh", "by"}
        Adjust the p-values of the score columns (one family of tests, e.g. every temperature of a sweep)
        for multiplicity; None: ``p_adjusted`` repeats ``p_val``.
    cluster : str or Series, optional
        At dataset level: items that come in clusters (the summaries of one source document, the responses
        to one dialogue) are resampled cluster by cluster, so the interval carries the dependence within a
        cluster. An index level name of ``scores`` or a Series of cluster labels indexed like ``scores``.
        Without it the bootstrap treats items as independent: on items in clusters of 6 sharing a cluster
        effect its 95% interval covered 0.77-0.81, and 0.87-0.91 on whole USR dialogues (the coverage
        harness). With it, 0.94-0.95 from 17 clusters on; with fewer than 15 clusters the interval is NaN,
        with an EvalkitWarning (4 to 9 clusters covered 0.73-0.93). The p-value still treats items as
        independent.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DataFrame
        One row per score column with columns ``n, r, ci_low, ci_high, interval, p_val, p_adjusted, adjust,
        method, level, n_groups, n_skipped`` (``n`` counts items; ``n_groups`` the groups used, missing at
        dataset level; ``interval`` names how the interval was made; ``adjust`` the multiplicity adjustment).

    Warns
    -----
    EvalkitWarning
        When a correlation is undefined (constant human ratings, constant scores, fewer than 3 items):
        its ``r`` and ``p_val`` are NaN, and the warning says why; when a defined correlation has no
        bootstrap interval (resamples of so few items where it is undefined): ``ci_low``, ``ci_high`` NaN.

    Raises
    ------
    TypeError
        Scores or ratings that are not numbers (e.g. rating labels as text).
    ValueError
        Human ratings that are all missing.

    Notes
    -----
    At dataset and system level, ``p_val`` is scipy's two-sided p-value, except with at most 9 items,
    where the asymptotic formulas are wrong (3 or 4 perfectly ranked items would get p = 0): there it is
    the exact permutation p-value over all n! pairings (:func:`scipy.stats.permutation_test`), whose
    smallest possible value is 2 / n!.

    Examples
    --------
    >>> from evalkit import correlate, datasets, tcva
    >>> demo = datasets.load_demo("tcva")
    >>> verdicts, items = demo["verdicts"], demo["items"]
    >>> scores = tcva.sweep(verdicts, [0.3, 0.5, 0.9], items=items)
    >>> table = correlate.correlate(scores, items["human"], rng=0)
    >>> list(table.columns)
    ['n', 'r', 'ci_low', 'ci_high', 'interval', 'p_val', 'p_adjusted', 'adjust', 'method', 'level', 'n_groups', 'n_skipped']
    >>> bool((table["ci_low"] < table["r"]).all() and (table["r"] < table["ci_high"]).all())
    True
    """
    check_option(method, METHODS, "method")
    check_option(level, LEVELS, "level")
    check_option(nan_policy, ("omit", "raise", "propagate"), "nan_policy")
    check_option(interval, ("auto", "percentile", "basic", "BCa", "t"), "interval")
    if interval == "t" and level != "summary":
        raise ValueError(f"interval='t' is the summary level's interval (over per-group coefficients); at level={level!r} "
                         "use a bootstrap method ('percentile', 'basic' or 'BCa').")
    if interval == "auto":
        interval = "t" if level == "summary" else "percentile"
    check_level(confidence_level)
    check_option(adjust, (None, *ADJUSTMENTS), "adjust")
    n_resamples = check_number(n_resamples, "n_resamples", low=0, integer=True)
    rng = check_rng(rng)
    if level != "dataset" and by is None:
        raise ValueError(f"`by` is required at level={level!r}: it names the document (summary) or system groups.")
    if cluster is not None and level != "dataset":
        raise ValueError(f"`cluster` is for level='dataset'; at level={level!r} `by` already resamples the groups.")
    if cluster is not None and by is not None:
        raise ValueError("give `cluster` or `by`, not both (`by` is for the summary and system levels).")
    frame, human, groups = _align(scores, human, by=cluster if cluster is not None else by,
                                  by_name="cluster" if cluster is not None else "by")
    if level == "system":
        frame = frame.groupby(groups.to_numpy(), sort=False).mean()
        human = human.groupby(groups.to_numpy(), sort=False).mean()
        out = _dataset_level(frame, human, method, nan_policy, confidence_level, n_resamples, interval, rng, unit="systems")
        out["level"] = "system"
        out["n_groups"] = out["n"].astype("Int64")
    elif level == "summary":
        out = _summary_level(frame, human, groups, method, nan_policy, confidence_level, n_resamples, interval, rng)
    else:
        out = _dataset_level(frame, human, method, nan_policy, confidence_level, n_resamples, interval, rng,
                             clusters=groups)
    if adjust is not None:
        out["p_adjusted"], out["adjust"] = adjust_p_values(out["p_val"].to_numpy(dtype=float), adjust), adjust
    return out


def _result_frame(frame, n, r, low, high, p, method, level, n_groups=None, n_skipped=None, *, interval="none") -> pd.DataFrame:
    k = len(frame.columns)
    out = pd.DataFrame(
        {
            "n": np.asarray(n, dtype=np.int64),
            "r": r,
            "ci_low": low,
            "ci_high": high,
            "interval": interval,
            "p_val": p,
            "p_adjusted": p,
            "adjust": "none",
            "method": method,
            "level": level,
            "n_groups": pd.array([pd.NA] * k if n_groups is None else n_groups, dtype="Int64"),
            "n_skipped": pd.array([0] * k if n_skipped is None else n_skipped, dtype="Int64"),
        },
        index=frame.columns.copy(),
    )
    return out[COLUMNS]


def _dataset_level(frame, human, method, nan_policy, confidence_level, n_resamples, interval, rng, unit="items",
                   clusters=None):
    values = frame.to_numpy(dtype=float)
    h = human.to_numpy(dtype=float)
    valid = _valid_mask(frame, human, nan_policy)
    k = values.shape[1]
    n = valid.sum(axis=0)
    r = np.full(k, np.nan)
    p = np.full(k, np.nan)
    low = np.full(k, np.nan)
    high = np.full(k, np.nan)
    undefined = {}
    for j in range(k):
        x, y = values[valid[:, j], j], h[valid[:, j]]
        r[j], p[j] = _scipy_corr(x, y, method)
        if np.isnan(r[j]) and not np.isnan(x).any() and not np.isnan(y).any():
            undefined[frame.columns[j]] = _why_undefined(x, y)
    _warn_undefined(undefined)
    # Bootstrap columns that share a validity mask together (usually all of them).
    masks, which = np.unique(valid.T, axis=0, return_inverse=True)
    left_out = np.zeros(k, dtype=np.int64)
    few = np.zeros(k, dtype=np.int64)  # columns with too few clusters for a cluster bootstrap: how many they have
    if clusters is not None:
        unit = "clusters"
    for m, mask in enumerate(masks):
        cols = np.flatnonzero(which.ravel() == m)
        if clusters is None:
            stat = _resampled_corr(values[mask][:, cols].T, h[mask], method)  # columns (cols, n_valid), human (n_valid,)
            units = int(mask.sum())
        else:
            stat, units = _cluster_corr(values[mask][:, cols], h[mask], clusters.to_numpy()[mask], method)
            if units < MIN_CLUSTERS and n_resamples:
                few[cols] = units
                continue
        lo, hi, info = _bootstrap_ci(stat, units, n_resamples=n_resamples,
                                     confidence_level=confidence_level, interval=interval, rng=rng, k=len(cols))
        low[cols], high[cols] = lo, hi
        if info is not None:
            left_out[cols] = info[1]
    names = _ci_names(frame.columns, interval, n_resamples, left_out, r, unit)
    if few.any():
        warn(f"only {int(few[few > 0].min())} cluster(s): a cluster bootstrap needs at least {MIN_CLUSTERS} to cover "
             "as claimed, so the interval is NaN (with 9 clusters of 6 items the 95% interval covered 0.87, with 17 "
             "0.94, in the coverage harness).")
        names = [f"none: {u} clusters, fewer than {MIN_CLUSTERS}" if u else name for u, name in zip(few, names, strict=True)]
    return _result_frame(frame, n, r, low, high, p, method, "dataset", interval=names)


#: Fewer clusters than this and the cluster bootstrap's 95% interval covers less than claimed (see
#: :data:`evalkit._stats.MIN_RESAMPLED_CLUSTERS`).
MIN_CLUSTERS = _stats.MIN_RESAMPLED_CLUSTERS


def _cluster_corr(x: np.ndarray, y: np.ndarray, labels: np.ndarray, method: str):
    """``idx -> r`` for resampled cluster positions ``idx`` (..., g): every item of each drawn cluster, per column of x."""
    codes, _ = pd.factorize(labels)
    g = codes.max() + 1

    def stat(idx):
        flat = idx.reshape(-1, idx.shape[-1])
        draws = np.bincount((flat + g * np.arange(len(flat))[:, None]).ravel(), minlength=len(flat) * g).reshape(len(flat), g)
        weights = draws[:, codes].astype(float)
        out = np.stack([_weighted_corr(x[:, j], y, weights, method) for j in range(x.shape[1])])
        return out.reshape(x.shape[1], *idx.shape[:-1])

    return stat, g


def _ci_names(columns, interval: str, n_resamples: int, left_out: np.ndarray, r: np.ndarray, unit: str) -> list[str]:
    """The interval method of each row, and how many resamples it left out (with a warning when any)."""
    if n_resamples == 0:
        return ["none"] * len(columns)
    partial = (left_out > 0) & (left_out < n_resamples) & ~np.isnan(r)
    if interval == "BCa":
        if partial.any():
            listed = ", ".join(repr(c) for c, x in zip(columns, partial, strict=True) if x)
            warn(f"some bootstrap resamples have constant scores or ratings and BCa needs every one, so the "
                 f"interval is NaN for {listed}; interval='percentile' leaves them out.")
        partial[:] = False
    _warn_undefined_resamples([c for c, x in zip(columns, partial, strict=True) if x], left_out[partial], n_resamples)
    base = f"{interval} bootstrap over {unit}"
    return [f"{base} ({u} of {n_resamples} resamples undefined, left out)" if x else base
            for u, x in zip(left_out, partial, strict=True)]


def _summary_level(frame, human, groups, method, nan_policy, confidence_level, n_resamples, interval, rng):
    values = frame.to_numpy(dtype=float)
    h = human.to_numpy(dtype=float)
    valid = _valid_mask(frame, human, nan_policy)
    codes, labels = pd.factorize(groups)
    k = values.shape[1]
    per_group, n_items = _per_group_corr(values, h, valid, codes, len(labels), method)
    used = ~np.isnan(per_group)
    n_groups = used.sum(axis=0)
    n_skipped = len(labels) - n_groups
    _warn_undefined({frame.columns[j]: f"every one of the {len(labels)} groups has a constant side or fewer than 2 items"
                     for j in range(k) if n_groups[j] == 0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        r = np.nanmean(per_group, axis=0)
        p = np.array([stats.ttest_1samp(per_group[used[:, j], j], 0.0).pvalue if n_groups[j] > 1 else np.nan
                      for j in range(k)])

    def stat(idx):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return np.nanmean(per_group[idx], axis=-2).T

    if interval == "t":
        low, high = np.full(k, np.nan), np.full(k, np.nan)
        for j in np.flatnonzero(n_groups > 1):
            per = per_group[used[:, j], j]
            half = stats.t.ppf(0.5 + confidence_level / 2, len(per) - 1) * per.std(ddof=1) / np.sqrt(len(per))
            low[j], high[j] = r[j] - half, r[j] + half
        names = ["t interval over groups"] * k
    else:
        low, high, info = _bootstrap_ci(stat, len(labels), n_resamples=n_resamples, confidence_level=confidence_level,
                                        interval=interval, rng=rng, k=k)
        left_out = np.zeros(k, dtype=np.int64) if info is None else info[1]
        names = _ci_names(frame.columns, interval, n_resamples, left_out, r, "groups")
    return _result_frame(frame, n_items, r, low, high, p, method, "summary", n_groups, n_skipped, interval=names)


def _per_group_corr(values, h, valid, codes, n_groups: int, method: str) -> tuple[np.ndarray, np.ndarray]:
    """Correlation within each group, per column: (groups, cols), NaN where a side is constant or n < 2.

    Groups of equal size are stacked and correlated in one call along the last axis (items keep their
    order within a group), which gives each group the value a call on it alone gives.
    """
    per_group = np.full((n_groups, values.shape[1]), np.nan)
    n_items = np.zeros(values.shape[1], dtype=np.int64)
    for j in range(values.shape[1]):
        order = np.flatnonzero(valid[:, j])
        order = order[np.argsort(codes[order], kind="stable")]
        x, y = values[order, j], h[order]
        sizes = np.bincount(codes[order], minlength=n_groups)
        starts = np.cumsum(sizes) - sizes
        for size in np.unique(sizes[sizes >= 2]):
            members = np.flatnonzero(sizes == size)
            rows = starts[members][:, None] + np.arange(size)
            xs, ys = x[rows], y[rows]
            ok = (np.ptp(xs, axis=1) > 0) & (np.ptp(ys, axis=1) > 0)
            if ok.any():
                per_group[members[ok], j] = _corr_lastaxis(xs[ok], ys[ok], method)
                n_items[j] += size * int(ok.sum())
    return per_group, n_items


def mean_absolute_error(scores, human) -> pd.Series:
    """Mean absolute difference between each score column and the human ratings (aligned by index).

    Items scored but not rated (or rated but not scored) are left out with an :class:`~evalkit.EvalkitWarning`
    counting them, as in :func:`correlate`; NaN values are skipped.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.correlate import mean_absolute_error
    >>> mean_absolute_error(pd.Series([0.5, 1.0], index=["a", "b"], name="m"), pd.Series({"b": 0.5, "a": 0.5}))
    m    0.25
    Name: mae, dtype: float64
    """
    frame, human, _ = _align(scores, human)
    for values, name in ((frame.to_numpy(dtype=float), "scores"), (human.to_numpy(dtype=float), "human")):
        if np.isinf(values).any():
            raise ValueError(f"`{name}` holds inf; scores and ratings must be finite (NaN for a missing one).")
    return frame.sub(human, axis=0).abs().mean().rename("mae")


# --------------------------------------------------------------------------------------------------
# comparing two metrics
# --------------------------------------------------------------------------------------------------
def _williams(r12: float, r13: float, r23: float, n: int) -> tuple[float, float]:
    """Williams' t for dependent overlapping correlations (Steiger 1980, eq. 7), df = n - 3."""
    det = 1 - r12**2 - r13**2 - r23**2 + 2 * r12 * r13 * r23
    rbar = (r12 + r13) / 2
    t = (r12 - r13) * np.sqrt((n - 1) * (1 + r23) / (2 * (n - 1) / (n - 3) * det + rbar**2 * (1 - r23) ** 3))
    return float(t), float(2 * stats.t.sf(abs(t), n - 3))


def _zou_ci(r12: float, r13: float, r23: float, n: int, confidence_level: float, *, factors=(1.0, 1.0)) -> tuple[float, float]:
    """Zou (2007) confidence interval for r12 - r13 (overlapping dependent correlations).

    Built from one Fisher-z interval per correlation (Zou's method takes any interval for each);
    ``factors`` multiply their normal-theory variance ``1 / (n - 3)`` (see :func:`evalkit._stats.z_variance_factor`).
    """
    z = z_value(confidence_level)
    h1, h2 = (z * np.sqrt(f / (n - 3)) for f in factors)
    l1, u1 = np.tanh(np.arctanh(r12) - h1), np.tanh(np.arctanh(r12) + h1)
    l2, u2 = np.tanh(np.arctanh(r13) - h2), np.tanh(np.arctanh(r13) + h2)
    c = ((r23 - 0.5 * r12 * r13) * (1 - r12**2 - r13**2 - r23**2) + r23**3) / ((1 - r12**2) * (1 - r13**2))
    d = r12 - r13
    low = d - np.sqrt((r12 - l1) ** 2 + (u2 - r13) ** 2 - 2 * c * (r12 - l1) * (u2 - r13))
    high = d + np.sqrt((u1 - r12) ** 2 + (r13 - l2) ** 2 - 2 * c * (u1 - r12) * (r13 - l2))
    return float(low), float(high)


COMPARE_METHODS = {
    "williams": {"pearson": "Williams t; Zou interval from Fisher-z intervals",
                 "spearman": "Williams t and Zou interval, Bonett-Wright variance for Spearman",
                 "kendall": "Williams t and Zou interval, Fieller variance for Kendall"},
    "bootstrap": "paired bootstrap over items, percentile interval",
}


def _three(a, b, human, *, same_items: bool = True, sort: bool = True) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    if not isinstance(a, pd.Series) or not isinstance(b, pd.Series):
        raise TypeError("`a` and `b` must be Series of scores indexed by item id.")
    check_unique_index(a.index, "a")
    check_unique_index(b.index, "b")
    for name, series in (("a", a), ("b", b)):
        if len(series) == 0:
            raise ValueError(f"`{name}` is empty.")
        _check_numeric(series, name)
    if same_items and (len(a) != len(b) or not a.index.isin(b.index).all()):
        shared = a.index.intersection(b.index, sort=False)
        either = a.index.union(b.index, sort=False)
        raise ValueError(f"`a` and `b` must score the same items (two metrics compared on the same items); they share "
                         f"{len(shared)} of the {len(either)} items in either (`a` has {len(a)}, `b` has {len(b)}), e.g. "
                         f"not in both: {either.difference(shared, sort=False)[:3].tolist()}. To compare on the shared "
                         "items, select them in both first.")
    # Documented: the items scored by both (not NaN) and rated take part; `n` in the result says how many.
    if not same_items and not len(a.index.intersection(b.index)):
        raise ValueError(f"`a` and `b` share no item; first ids: a {a.index[:3].tolist()}, b {b.index[:3].tolist()}.")
    frame, h, _ = _align(pd.concat({"a": a, "b": b}, axis=1, join="inner", sort=False), human, warn=False, sort=sort)
    keep = frame.notna().all(axis=1) & h.notna()
    if keep.sum() < 4:
        raise ValueError(f"comparing two metrics needs at least 4 items scored by both `a` and `b` and rated in `human`; "
                         f"got {int(keep.sum())}.")
    return frame["a"][keep].to_numpy(float), frame["b"][keep].to_numpy(float), h[keep].to_numpy(float)


def compare_metrics(
    a: pd.Series,
    b,
    human,
    *,
    method: str = "spearman",
    test: str = "williams",
    confidence_level: float = 0.95,
    n_resamples: int = 10_000,
    adjust: str | None = None,
    rng=None,
) -> pd.DataFrame:
    """Test whether metric ``a`` correlates with the humans differently from metric ``b`` (or from each of several).

    Both correlations share the human ratings, so they are dependent; testing each CI for overlap is
    wrong. ``a`` and ``b`` must score the same items (else ValueError, saying how many they share); the items
    taking part are those where both scores are present and a human rating exists (NaN rows are dropped).

    Parameters
    ----------
    a : Series
        Scores indexed by item id.
    b : Series or DataFrame
        Scores indexed by item id; a DataFrame compares ``a`` with each of its columns (e.g. the best
        temperature of a sweep with every other one), one row each.
    human : Series or DataFrame
        Human ratings (see :func:`correlate`).
    method : {"spearman", "kendall", "pearson"}
    test : {"williams", "bootstrap"}
        ``"williams"``: Williams' t-test for dependent overlapping correlations (Steiger 1980, eq. 7) with
        df = n - 3, and Zou's (2007) interval for the difference. Both are normal theory for Pearson's r;
        for Spearman and Kendall the Fisher-z variance is taken larger, as Bonett & Wright (2000) and
        Fieller et al. (1957) give it (t divided by the square root of the factor at the mean of the two
        coefficients; each of Zou's two intervals widened by its own). ``"bootstrap"``: a paired bootstrap
        resampling items, percentile interval for ``r_a - r_b``, a two-sided p-value
        ``2 * min(P*(d <= 0), P*(d >= 0))`` and, as ``statistic``, the difference over its bootstrap
        standard error.
    confidence_level : float, default 0.95
    n_resamples : int, default 10000
        For ``test="bootstrap"``.
    adjust : {None, "holm", "bonferroni", "bh", "by"}
        With several columns in ``b``: adjust the family's p-values for multiplicity (None: ``p_adjusted``
        repeats ``p_val``).
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DataFrame
        One row per column of ``b``: ``a, b, n, r_a, r_b, r_ab, delta, ci_low, ci_high, statistic, p_val,
        p_adjusted, adjust, test, method, interval`` (``a`` and ``b`` name the metrics; ``interval`` the
        test and interval).

    Warns
    -----
    EvalkitWarning
        When either correlation is undefined (constant ratings or scores): the row is NaN but for ``n``.

    Notes
    -----
    Measured in the coverage harness (``python benchmarks/bench_coverage.py --function
    correlate.compare_metrics``) at 20 to 200 items resampled from the TCVA release and SummEval and on
    synthetic tied and normal data, with the two metrics swapped at random per item (equal correlations).

    Examples
    --------
    >>> from evalkit import correlate, datasets, tcva
    >>> demo = datasets.load_demo("tcva")
    >>> verdicts, items = demo["verdicts"], demo["items"]
    >>> s = tcva.sweep(verdicts, [0.2, 0.5, 0.9], items=items)
    >>> res = correlate.compare_metrics(s[0.2], s[0.9], items["human"])
    >>> int(res.loc[0, "n"]), res.loc[0, "test"]
    (120, 'williams')
    >>> correlate.compare_metrics(s[0.5], s[[0.2, 0.9]], items["human"], adjust="holm")[["b", "p_val", "p_adjusted"]].round(3)
         b  p_val  p_adjusted
    0  0.2  0.056       0.112
    1  0.9  0.499       0.499
    """
    check_option(method, METHODS, "method")
    check_option(test, ("williams", "bootstrap"), "test")
    check_option(adjust, (None, *ADJUSTMENTS), "adjust")
    check_level(confidence_level)
    n_resamples = check_number(n_resamples, "n_resamples", low=1, integer=True)
    rng = check_rng(rng)
    if isinstance(b, pd.DataFrame):
        others = list(b.items())
        if not others:
            raise ValueError("`b` is a DataFrame without columns; give at least one score column.")
    else:
        others = [(b.name if isinstance(b, pd.Series) and b.name is not None else "b", b)]
    name_a = a.name if isinstance(a, pd.Series) and a.name is not None else "a"
    rows = [{"a": name_a, "b": name, **_compare_two(a, column, human, method, test, confidence_level, n_resamples, rng)}
            for name, column in others]
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p_val") + 1, "p_adjusted",
               out["p_val"] if adjust is None else adjust_p_values(out["p_val"].to_numpy(dtype=float), adjust))
    out.insert(out.columns.get_loc("p_adjusted") + 1, "adjust", adjust or "none")
    return out


def _compare_two(a, b, human, method, test, confidence_level, n_resamples, rng) -> dict:
    x, y, h = _three(a, b, human)
    n = len(h)
    r_a, r_b, r_ab = (_scipy_corr(u, v, method, p_value=False)[0] for u, v in ((x, h), (y, h), (x, y)))
    _warn_undefined({name: _why_undefined(u, v) for name, u, v in (("a", x, h), ("b", y, h)) if np.ptp(u) == 0 or np.ptp(v) == 0})
    if np.isnan(r_a) or np.isnan(r_b):
        statistic = p = low = high = np.nan
    elif test == "williams":
        statistic, _ = _williams(r_a, r_b, r_ab, n)
        statistic /= np.sqrt(z_variance_factor(method, (r_a + r_b) / 2, n))
        p = float(2 * stats.t.sf(abs(statistic), n - 3))
        low, high = _zou_ci(r_a, r_b, r_ab, n, confidence_level,
                            factors=(z_variance_factor(method, r_a, n), z_variance_factor(method, r_b, n)))
    else:
        pair = _resampled_corr(np.vstack([x, y]), h, method)

        def stat(idx):
            r = pair(idx)
            return r[0] - r[1]

        low, high, (res, left_out) = _bootstrap_ci(stat, n, n_resamples=n_resamples, confidence_level=confidence_level,
                                                   interval="percentile", rng=rng, k=1)
        low, high = float(low[0]), float(high[0])
        _warn_undefined_resamples(["a - b"], left_out, n_resamples)
        dist = res.bootstrap_distribution
        dist = dist[~np.isnan(dist)]
        with np.errstate(divide="ignore", invalid="ignore"):
            statistic = float(np.divide(r_a - r_b, np.std(dist, ddof=1)))
        p = float(min(1.0, 2 * min(np.mean(dist <= 0), np.mean(dist >= 0))))
    return {"n": n, "r_a": r_a, "r_b": r_b, "r_ab": r_ab, "delta": r_a - r_b, "ci_low": low, "ci_high": high,
            "statistic": statistic, "p_val": p, "test": test, "method": method,
            "interval": COMPARE_METHODS[test][method] if test == "williams" else COMPARE_METHODS[test]}


def paired_bootstrap_tcva_paper(a: pd.Series, b: pd.Series, human, *, n_resamples: int = 10_000, seed: int = 42) -> pd.DataFrame:
    """The paired-bootstrap p-value exactly as the TCVA paper computed it (for checking its figures).

    With ``delta_obs = rho_a - rho_b`` (Spearman) on all items, it draws ``n_resamples`` resamples with
    legacy ``numpy.random.RandomState(seed)`` (``choice(n, size=n, replace=True)``, one call per
    resample) and reports the share of resamples with ``rho_b* - rho_a* >= delta_obs``. That is a
    one-sided tail measured from ``-delta_obs``, not a test that the difference is zero: the resampled
    differences centre on ``delta_obs``, so the share is about ``Phi(-2 delta_obs / se)``, and it falls
    below 0.05 as soon as ``delta_obs`` exceeds 0.82 standard errors (a share of about 0.21 of samples
    under equal correlations). Resampling the TCVA release and SummEval with the two metrics swapped at
    random per item (equal correlations), it is below 0.05 in 0.16 to 0.23 of samples at 50 and 200 items,
    not 0.05 (the coverage harness: ``python benchmarks/bench_coverage.py --function
    correlate.paired_bootstrap_tcva_paper``). It is reproduced as published, for checking the paper's
    figures; use :func:`compare_metrics` for inference.

    Items are those scored by both (NaN dropped) and rated, in the order of ``a``, as the paper took them
    (its ``n_common``).

    Returns
    -------
    DataFrame
        One row: ``n, rho_a, rho_b, delta, p_val, note`` (``note`` says what the p-value is not); NaN ``delta``
        and ``p_val``, with an :class:`~evalkit.EvalkitWarning`, where a correlation is undefined (constant
        ratings or scores).

    Warns
    -----
    EvalkitWarning
        Always: the p-value is the paper's statistic, not a valid test at its nominal level.

    Examples
    --------
    >>> import warnings
    >>> from evalkit import correlate, datasets, tcva
    >>> demo = datasets.load_demo("tcva")
    >>> verdicts, items = demo["verdicts"], demo["items"]
    >>> s = tcva.sweep(verdicts, [0.2, 0.9], items=items)
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     res = correlate.paired_bootstrap_tcva_paper(s[0.9], s[0.2], items["human"], n_resamples=500)
    >>> 0 <= float(res.loc[0, "p_val"]) <= 1, "not a test" in str(caught[0].message)
    (True, True)
    """
    n_resamples = check_number(n_resamples, "n_resamples", low=1, integer=True)
    x, y, h = _three(a, b, human, same_items=False, sort=False)  # the paper's draws, on its file order
    n = len(h)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", stats.ConstantInputWarning)  # said below, once, as an EvalkitWarning
        rho_a = stats.spearmanr(x, h).statistic
        rho_b = stats.spearmanr(y, h).statistic
    delta = rho_a - rho_b
    if np.isnan(delta):  # the paper's loop would count NaN >= NaN as False and report p = 0
        warn(f"paired_bootstrap_tcva_paper: a correlation is undefined ({_why_undefined(x if np.isnan(rho_a) else y, h)}), "
             "so delta and p_val are NaN.")
        return pd.DataFrame([{"n": n, "rho_a": rho_a, "rho_b": rho_b, "delta": delta, "p_val": np.nan}])
    state = np.random.RandomState(seed)  # legacy generator on purpose: it is what the paper used
    idx = np.stack([state.choice(n, size=n, replace=True) for _ in range(n_resamples)])
    r = _corr_lastaxis(np.stack([x[idx], y[idx]]), h[idx], "spearman")
    p = float(np.mean(r[1] - r[0] >= delta))
    warn(PAPER_NOTE)
    return pd.DataFrame([{"n": n, "rho_a": rho_a, "rho_b": rho_b, "delta": delta, "p_val": p, "note": PAPER_NOTE}])


PAPER_NOTE = ("the TCVA paper's statistic, not a test of a zero difference: with equal correlations it is below 0.05 "
              "in about one sample in five, not one in twenty (use compare_metrics)")


# --------------------------------------------------------------------------------------------------
# choosing a temperature honestly
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TemperatureSelection:
    """Result of :func:`select_temperature`.

    Attributes
    ----------
    temperature : float
        The temperature chosen on all items (what to use from now on).
    r_in_sample : float
        Its correlation on all items: optimistic, because the same items chose it.
    r_out_of_fold : float
        The correlation of the pooled out-of-fold scores (each fold scored at the temperature chosen
        without it): the number to report.
    method : str
        The correlation: ``"spearman"``, ``"kendall"`` or ``"pearson"``.
    folds : DataFrame
        One row per fold: ``fold, n_train, n_test, temperature, r_train, r_test``.
    """

    temperature: float
    r_in_sample: float
    r_out_of_fold: float
    method: str
    folds: pd.DataFrame = field(repr=False)

    def _rows(self) -> tuple[str, list[dict]]:
        temps = ", ".join(_display.temperature(t) for t in self.folds["temperature"])
        return f"TemperatureSelection: T = {_display.temperature(self.temperature)}", [
            {"quantity": "temperature", "estimate": _display.temperature(self.temperature),
             "method": f"cross-validated, {len(self.folds)} folds", "note": f"per-fold choices: {temps}"},
            {"quantity": "r in sample", "estimate": _display.number(self.r_in_sample), "method": self.method,
             "note": "optimistic: the same items chose the temperature"},
            {"quantity": "r out of fold", "estimate": _display.number(self.r_out_of_fold), "method": self.method,
             "note": "pooled out-of-fold scores: the number to report"}]

    def __repr__(self) -> str:
        return _display.result_text(*self._rows())

    def _repr_html_(self) -> str:
        return _display.result_html(*self._rows()) + _display.format_frame(self.folds).to_html(index=False)


def select_temperature(
    verdicts: pd.DataFrame,
    human,
    *,
    temperatures,
    folds: int = 5,
    method: str = "spearman",
    items=None,
    rng=None,
    **score_options,
) -> TemperatureSelection:
    """Choose a temperature by cross-validation, so the reported correlation is not tuned on itself.

    Items are split into ``folds`` random folds. For each fold, the temperature with the highest
    correlation on the other folds is chosen and the held-out items are scored at it; the pooled
    held-out scores are then correlated with the humans (``r_out_of_fold``).

    Parameters
    ----------
    verdicts : DataFrame
        Claim-verdict table.
    human : Series
        Human ratings indexed by item id; only items rated here are used (a NaN rating, or a NaN score, leaves
        the item out, as ``nan_policy="omit"`` does in :func:`correlate`).
    temperatures : sequence of float
        Candidate temperatures in [0.1, 1.0].
    folds : int, default 5
    method : {"spearman", "kendall", "pearson"}
    items : optional
        All item ids, including those without claims (see :func:`evalkit.tcva.sweep`).
    rng : None, int or numpy.random.Generator
    **score_options
        Passed to :func:`evalkit.tcva.sweep` (``scale``, ``none_penalty``...).

    Returns
    -------
    TemperatureSelection
        Where the correlation is undefined at every temperature (constant ratings or scores, on all items or
        on a fold's training items), the temperature and correlations concerned are NaN, with an
        :class:`~evalkit.EvalkitWarning`; so is a fold's ``r_test`` where its held-out items cannot give one.

    Examples
    --------
    >>> import numpy as np
    >>> from evalkit import correlate, datasets
    >>> demo = datasets.load_demo("tcva")
    >>> verdicts, items = demo["verdicts"], demo["items"]
    >>> sel = correlate.select_temperature(verdicts, items["human"], temperatures=np.linspace(0.1, 1, 10),
    ...                                    items=items, rng=0)
    >>> sel.folds.shape
    (5, 6)
    """
    check_option(method, METHODS, "method")
    folds = check_number(folds, "folds", low=2, integer=True)
    scores = _tcva.sweep(verdicts, temperatures, items=items, **score_options)
    frame, h, _ = _align(scores, human, warn=False)  # only rated items take part, as documented
    # Missing ratings (and items scored NaN, e.g. with empty=np.nan) are left out, as correlate's nan_policy="omit"
    # leaves them out; a NaN score covers a whole row (an item without claims), so rows and columns agree.
    complete = h.notna().to_numpy() & frame.notna().all(axis=1).to_numpy()
    frame, h = frame[complete], h[complete]
    if len(h) < 2 * folds:
        raise ValueError(f"`folds`={folds} needs at least {2 * folds} rated items; got {len(h)}.")
    values, hv = frame.to_numpy(float), h.to_numpy(float)
    temps = frame.columns.to_numpy(dtype=float)
    fold_of = check_rng(rng).permutation(len(hv)) % folds
    rows, pooled, undefined = [], np.full(len(hv), np.nan), []
    for f in range(folds):
        train, test = fold_of != f, fold_of == f
        r_train = _corr_lastaxis(values[train].T, hv[train], method)
        best = _best(r_train)
        if best is None:
            undefined.append(f"fold {f}'s training items")
        if best is not None:
            pooled[test] = values[test, best]
        rows.append({"fold": f, "n_train": int(train.sum()), "n_test": int(test.sum()),
                     "temperature": np.nan if best is None else temps[best],
                     "r_train": np.nan if best is None else float(r_train[best]),
                     "r_test": np.nan if best is None else
                     _scipy_corr(values[test, best], hv[test], method, p_value=False)[0]})
    r_all = _corr_lastaxis(values.T, hv, method)
    best = _best(r_all)
    if best is None:
        undefined.insert(0, f"all {len(hv)} rated items")
    if undefined:
        warn(f"the correlation is undefined at every temperature on {', '.join(undefined)} (the human ratings "
             "or the scores are constant there), so no temperature can be chosen there: NaN.")
    held_out = [str(row["fold"]) for row in rows if not np.isnan(row["temperature"]) and np.isnan(row["r_test"])]
    if held_out:
        warn(f"the correlation on the held-out items of fold(s) {', '.join(held_out)} is undefined (fewer than 3 "
             "items, or constant ratings or scores there): their r_test is NaN.")
    r_oof = np.nan if np.isnan(pooled).any() else _scipy_corr(pooled, hv, method, p_value=False)[0]
    return TemperatureSelection(
        temperature=np.nan if best is None else float(temps[best]), r_in_sample=np.nan if best is None else float(r_all[best]),
        r_out_of_fold=float(r_oof), method=method, folds=pd.DataFrame(rows),
    )


def _best(r: np.ndarray) -> int | None:
    """Position of the highest correlation; None when every one is undefined."""
    return None if np.isnan(r).all() else int(np.nanargmax(r))
