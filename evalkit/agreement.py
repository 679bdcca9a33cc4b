"""Agreement among annotators, the human ceiling and the alternative annotator test.

Ratings come in long form: a DataFrame with columns ``item_id, annotator, rating``, one row per rating,
any number of annotators per item, missing ratings simply absent (or NaN). Labels files of the labeller
become that table with :func:`ratings_from_labels`.

Which numbers come from where:

- Krippendorff's alpha is computed here from the coincidence matrix (vectorized over items and over
  bootstrap resamples); the ``krippendorff`` package computes the same point estimate but has no
  bootstrap, and resampling by calling it once per resample is slow. Tested against it to 1e-9.
- ICC (Shrout & Fleiss 1979, the six forms and their F-based intervals) is a few lines of two-way
  ANOVA; ``pingouin.intraclass_corr`` would add a dependency for it. Tested against pingouin.
- Fleiss' kappa takes the long table directly (statsmodels wants a count table and is not a dependency);
  tested against ``statsmodels.stats.inter_rater.fleiss_kappa``.
- Cohen's kappa, unweighted or weighted, between two annotators: :func:`cohen_kappa`.
- Correlations (the human ceiling) are :func:`evalkit.correlate.correlate`.
- The pairwise-judge diagnostics (position, length and self-preference bias) are in :mod:`evalkit.pairwise`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse, stats

from evalkit import _display, _stats
from evalkit import correlate as _correlate
from evalkit._stats import (
    ADJUSTMENTS,
    adjust_p_values,
    bca_over_items,
    percentile_over_items,
    studentized_over_items,
)
from evalkit._validation import (
    align_ids,
    as_groups,
    check_columns,
    check_dataframe,
    check_level,
    check_number,
    check_option,
    check_rng,
    show,
    sorted_ids,
    warn,
)
from evalkit.labels import latest_labels, read_labels

__all__ = [
    "ratings_from_labels",
    "krippendorff_alpha",
    "icc",
    "fleiss_kappa",
    "cohen_kappa",
    "pairwise_agreement",
    "human_ceiling",
    "AltTestResult",
    "alternative_annotator_test",
]

LEVELS = ("nominal", "ordinal", "interval", "ratio")
RATING_COLUMNS = ["item_id", "annotator", "rating"]


# --------------------------------------------------------------------------------------------------
# input handling
# --------------------------------------------------------------------------------------------------
def _ratings(ratings, *, name: str = "ratings", min_annotators: int = 2) -> pd.DataFrame:
    """Validated copy of a long ratings table: NaN ratings dropped, one rating per item and annotator.

    A labels file path (or a list of them) is read with :func:`ratings_from_labels` first.
    """
    if _label_files(ratings):
        ratings = ratings_from_labels(ratings)
    table = check_dataframe(ratings, name)
    check_columns(table, RATING_COLUMNS, name)
    table = table[RATING_COLUMNS][table["rating"].notna()]
    if table[["item_id", "annotator"]].isna().any().any():
        raise ValueError(f"`{name}` has missing item_id or annotator values; every rating needs both.")
    repeated = table.duplicated(["item_id", "annotator"])
    if repeated.any():
        first = table[repeated].iloc[0]
        raise ValueError(f"`{name}` has more than one rating by annotator {show(first['annotator'])} for item "
                         f"{show(first['item_id'])}; keep one rating per item and annotator (e.g. the latest).")
    n_annotators = table["annotator"].nunique()
    if n_annotators < min_annotators:
        raise ValueError(f"`{name}` needs ratings from at least {min_annotators} annotators to measure agreement; "
                         f"got {n_annotators}.")
    return table


def _drop_single(table: pd.DataFrame, name: str, *, min_ratings: int = 2) -> pd.DataFrame:
    """Leave out items with fewer than ``min_ratings`` ratings (they cannot be compared), with a warning."""
    size = table.groupby("item_id", sort=False)["rating"].transform("size")
    short = size < min_ratings
    if short.any():
        items = table.loc[short, "item_id"].unique()
        warn(f"{len(items)} item(s) of `{name}` have fewer than {min_ratings} ratings and were left out "
             f"(e.g. {show(items[0])}).")
        table = table[~short]
    if table["item_id"].nunique() == 0:
        raise ValueError(f"`{name}` has no item rated by {min_ratings} or more annotators.")
    return table


def _numeric(values: pd.Series, purpose: str, name: str = "ratings", column: str = "rating") -> np.ndarray:
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        example = values.iloc[0] if len(values) else None
        raise TypeError(f"`{name}` column {column!r} must be numeric {purpose}; got dtype {values.dtype} with values "
                        f"like {show(example)}. Map labels to numbers, or use a nominal measure (level='nominal').")
    numbers = values.to_numpy(dtype=float)
    if np.isinf(numbers).any():
        raise ValueError(f"`{name}` column {column!r} must hold finite numbers {purpose}; got {show(numbers[np.isinf(numbers)][0])}.")
    return numbers


def _label_files(value) -> bool:
    """A labels file path (``.jsonl``) or a non-empty list of them."""
    paths = [value] if isinstance(value, (str, os.PathLike)) else value if isinstance(value, (list, tuple)) else []
    return bool(paths) and all(isinstance(p, (str, os.PathLike)) and str(p).endswith(".jsonl") for p in paths)


def ratings_from_labels(labels) -> pd.DataFrame:
    """Turn label records from several annotators into the long ratings table.

    Parameters
    ----------
    labels : str, Path, list of paths, or DataFrame
        Labels files written by :class:`evalkit.widgets.Labeller` (one shared file, or one file per annotator;
        read with :func:`evalkit.labels.read_labels`), or their records as a DataFrame with ``case_id, label,
        labeller`` (the annotator's name). Per annotator and case the latest label counts (an undo clears it);
        re-labels (``mode="relabel"``) are left out: they measure self-agreement, not agreement between people.
        Every function of this module that takes ``ratings`` also takes labels files directly.

    Raises
    ------
    ValueError
        Two files hold labels under one labeller name (two annotators would merge into one, the latest label
        winning; name each annotator, or read one person's files into one table with
        :func:`evalkit.labels.read_labels` and pass that), or a label record has no labeller name.

    Returns
    -------
    DataFrame
        ``item_id, annotator, rating`` (``item_id`` is the case id, ``annotator`` the labeller, ``rating`` the label).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from evalkit.agreement import ratings_from_labels
    >>> from evalkit.labels import append_label
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "labels.jsonl"
    >>> for case, label, who in [("a", "PASS", "ann"), ("a", "FAIL", "bob"), ("a", "FAIL", "ann")]:
    ...     append_label(path, {"case_id": case, "label": label, "labeller": who, "mode": "label"})
    >>> ratings_from_labels(path)
      item_id annotator rating
    0       a       ann   FAIL
    1       a       bob   FAIL
    """
    def named(records: pd.DataFrame, where: str) -> None:
        # Label records without a labeller name cannot be told apart from another annotator's.
        modes = records["mode"].fillna("label") if "mode" in records.columns else pd.Series("label", index=records.index)
        names = records.loc[modes == "label", "labeller"]
        blank = names.isna() | (names.astype(str).str.strip() == "")
        if blank.any():
            case = records.loc[blank[blank].index[0], "case_id"]
            raise ValueError(f"{where}: {int(blank.sum())} label record(s) name no labeller (e.g. case {show(case)}); "
                             "every label needs the annotator's name to be compared with other annotators'.")

    if isinstance(labels, pd.DataFrame):
        records = labels
    elif _label_files(labels):
        paths = [labels] if isinstance(labels, (str, os.PathLike)) else list(labels)
        missing = [str(p) for p in paths if not Path(p).is_file()]
        if missing:
            raise FileNotFoundError(f"{missing[0]}: no such labels file.")
        tables, owner = [], {}
        for path in paths:
            table = read_labels(path)
            named(table, f"{path}")
            for name in table.loc[table["mode"].fillna("label") == "label", "labeller"].unique():
                if name in owner and Path(owner[name]).resolve() != Path(path).resolve():
                    raise ValueError(f"{owner[name]} and {path} both hold labels by labeller {show(name)}: two annotators "
                                     "under one name would be merged into one (the latest label winning). Give each "
                                     "annotator their own name; if both files are one person's, read them into one "
                                     "table with evalkit.labels.read_labels([...]) and pass that.")
                owner.setdefault(name, str(path))
            tables.append(table)
        records = pd.concat(tables, ignore_index=True)
    else:
        raise TypeError(f"`labels` must be a labels file path (.jsonl), a list of them, or a DataFrame of label records; "
                        f"got {type(labels).__name__}.")
    check_columns(records, ["case_id", "label", "labeller"], "labels")
    if isinstance(labels, pd.DataFrame):
        named(records, "`labels`")
    latest = latest_labels(records, by_labeller=True).sort_values(["case_id", "labeller"], kind="stable")
    return pd.DataFrame({"item_id": latest["case_id"].to_numpy(), "annotator": latest["labeller"].to_numpy(),
                         "rating": latest["label"].to_numpy()})


# --------------------------------------------------------------------------------------------------
# Krippendorff's alpha
# --------------------------------------------------------------------------------------------------
_DENSE_CELLS = 20_000_000  # items x values**2 up to which the per-item coincidences are kept as a dense array


def _pair_matrix(item_codes: np.ndarray, value_codes: np.ndarray, counts: np.ndarray):
    """Each item's contribution to the coincidence matrix, flattened: (items x values**2).

    Item u adds ``n_uc * (n_uk - [c == k]) / (m_u - 1)`` to cell (c, k): one ``1 / (m_u - 1)`` for every
    ordered pair of its ratings (i != j) valued c and k.
    """
    n_items, k = counts.shape
    m = counts.sum(axis=1)
    if n_items * k * k <= _DENSE_CELLS:
        pairs = counts[:, :, None] * counts[:, None, :]
        pairs[:, np.arange(k), np.arange(k)] -= counts
        return (pairs / (m - 1)[:, None, None]).reshape(n_items, k * k)
    # Many distinct values: sparse, built from the ordered pairs of ratings within each item.
    order = np.argsort(item_codes, kind="stable")
    items, values = item_codes[order], value_codes[order]
    starts = np.flatnonzero(np.r_[True, items[1:] != items[:-1]])
    sizes = np.diff(np.r_[starts, len(items)])
    rows, cols, data = [], [], []
    for size in np.unique(sizes):
        first = starts[sizes == size]
        block = values[first[:, None] + np.arange(size)]  # (items of this size, size)
        i, j = np.nonzero(~np.eye(size, dtype=bool))
        rows.append(np.repeat(items[first], len(i)))
        cols.append((block[:, i] * k + block[:, j]).ravel())
        data.append(np.full(len(first) * len(i), 1.0 / (size - 1)))
    pairs = sparse.coo_matrix((np.concatenate(data), (np.concatenate(rows), np.concatenate(cols))),
                              shape=(n_items, k * k)).tocsr()
    pairs.sum_duplicates()
    return pairs


def _delta(values: np.ndarray, level: str, n_c: np.ndarray) -> np.ndarray:
    """Squared distances between the distinct values (..., K, K); ordinal ones depend on the frequencies n_c."""
    if level == "nominal":
        return 1.0 - np.eye(len(values))
    if level == "interval":
        return (values[:, None] - values[None, :]) ** 2
    if level == "ratio":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.nan_to_num(((values[:, None] - values[None, :]) / (values[:, None] + values[None, :])) ** 2)
    # ordinal: (sum of n_g from c to k - (n_c + n_k) / 2) ** 2 = squared distance of mid-cumulative frequencies
    mid = np.cumsum(n_c, axis=-1) - n_c / 2.0
    return (mid[..., :, None] - mid[..., None, :]) ** 2


def _alpha(d_o, n_c: np.ndarray, delta: np.ndarray) -> np.ndarray:
    """``1 - (n - 1) * D_o / sum(n_c n_k delta)`` for stacks of observed disagreements and value counts."""
    n = n_c.sum(axis=-1)
    d_e = np.einsum("...c,...ck,...k->...", n_c, delta, n_c)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - (n - 1) * d_o / d_e


def _times(weights: np.ndarray, per_item) -> np.ndarray:
    """(resamples x items) @ (items x columns), for a dense or sparse right-hand side."""
    if sparse.issparse(per_item):
        return np.asarray((per_item.T @ weights.T).T)
    return weights @ per_item


CI_METHODS = {"studentized": "studentized bootstrap over items",
              "percentile": "percentile bootstrap over items", "BCa": "BCa bootstrap over items"}


def _item_interval(interval, of_sums, per_item, n_resamples, confidence_level, rng) -> tuple[float, float]:
    if interval == "percentile":
        return percentile_over_items(lambda w: of_sums(w @ per_item), len(per_item), n_resamples, confidence_level, rng)
    if interval == "BCa":
        return bca_over_items(of_sums, per_item, n_resamples, confidence_level, rng)
    return studentized_over_items(of_sums, per_item, n_resamples, confidence_level, rng)


def _warn_undefined(what: str, n_items: int, values, name: str = "ratings") -> bool:
    """Warn (and return True) when an agreement coefficient is undefined: one item, or one value in all."""
    if n_items < 2:
        warn(f"{what} needs at least 2 items rated by 2 or more annotators; `{name}` has {n_items}, so it is "
             "undefined (NaN): on a single item the disagreement observed is all the disagreement expected.")
        return True
    if len(values) < 2:
        warn(f"{what} is undefined (NaN) when the ratings show no variation: every pairable rating in `{name}` "
             f"is {show(values[0])}, so agreement cannot be told from chance.")
        return True
    return False


def krippendorff_alpha(ratings, *, level: str = "nominal", n_resamples: int = 1000, confidence_level: float = 0.95,
                       interval: str = "studentized", rng=None) -> pd.DataFrame:
    """Krippendorff's alpha with a bootstrap interval over items.

    Parameters
    ----------
    ratings : DataFrame
        Long table ``item_id, annotator, rating``; missing ratings allowed. Items with a single rating
        cannot be paired and are left out with an :class:`~evalkit.EvalkitWarning`.
    level : {"nominal", "ordinal", "interval", "ratio"}
        The level of measurement, which sets the distance between two values. ``"nominal"`` takes any
        labels; the others need numeric ratings (ordinal uses only their order).
    n_resamples : int, default 1000
        Bootstrap resamples of items; 0 skips the interval. Resample ``r`` takes the items at
        ``rng.integers(0, n_items, n_items, dtype=np.int32)`` (drawn in resample order; items numbered in
        order of first appearance), so other code can repeat the same resamples.
    confidence_level : float, default 0.95
    interval : {"studentized", "percentile", "BCa"}, default "studentized"
        ``"studentized"``: the bootstrap-t interval, each resample's alpha divided by its own jackknife
        standard error over items. ``"percentile"``: the percentiles of the resampled alphas. ``"BCa"``:
        scipy.stats.bootstrap's bias-corrected and accelerated interval. At 20 items rated by 3
        annotators the percentile interval covers 0.87-0.91 of the time where 0.95 is claimed, 0.93 at
        50; the studentized one 0.95-0.97 (the coverage harness, ``python benchmarks/bench_coverage.py
        --function agreement.krippendorff_alpha``). Ordinal alpha with so many distinct values that the
        per-item rows are kept sparse gets the percentile interval (``interval`` in the result says so).
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DataFrame
        One row: ``alpha, ci_low, ci_high, interval, n_items, n_annotators, level`` (items and annotators
        that took part; ``interval`` names the interval). Alpha is NaN, with an :class:`~evalkit.EvalkitWarning`,
        when the pairable ratings use a single value (no variation to agree on) or come from a single item
        (alpha would be 0 by construction); the interval is NaN, with a warning, when some resample has none.

    Notes
    -----
    The coincidence matrix ``o`` sums, over items, ``1 / (m_u - 1)`` for every ordered pair of the item's
    ratings; ``alpha = 1 - (n - 1) * sum(o * delta) / sum(n_c n_k delta)`` (Krippendorff 2011). Each
    item's contribution is kept as one row of an items x values**2 matrix (sparse when that would exceed
    20 million cells), so a bootstrap resample is one matrix product of resample counts with it. Memory
    grows with the square of the number of distinct values: fine for rating scales, not meant for
    continuous scores with thousands of distinct values.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.agreement import krippendorff_alpha
    >>> ratings = pd.DataFrame({"item_id": [1, 1, 2, 2, 3, 3, 3], "annotator": ["a", "b", "a", "b", "a", "b", "c"],
    ...                         "rating": [1, 1, 2, 2, 3, 3, 2]})
    >>> krippendorff_alpha(ratings, level="interval", n_resamples=0)
          alpha  ci_low  ci_high interval  n_items  n_annotators     level
    0  0.785714     NaN      NaN      none        3             3  interval
    """
    check_option(level, LEVELS, "level")
    check_option(interval, tuple(CI_METHODS), "interval")
    n_resamples = check_number(n_resamples, "n_resamples", low=0, integer=True)
    check_level(confidence_level)
    rng = check_rng(rng)
    table = _drop_single(_ratings(ratings), "ratings")
    if level == "nominal":
        value_codes, values = pd.factorize(table["rating"], sort=False)
        values = np.arange(len(values), dtype=float)
    else:
        numeric = _numeric(table["rating"], f"at level={level!r}")
        values, value_codes = np.unique(numeric, return_inverse=True)
    item_codes, items = pd.factorize(table["item_id"], sort=True)
    value_codes = np.asarray(value_codes, dtype=np.intp)
    k, n = len(values), len(items)
    if _warn_undefined("Krippendorff's alpha", n, pd.unique(table["rating"])):
        return pd.DataFrame([{"alpha": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n_items": n,
                              "n_annotators": int(table["annotator"].nunique()), "level": level}])
    counts = np.bincount(item_codes * k + value_codes, minlength=n * k).reshape(n, k).astype(float)
    pairs = _pair_matrix(item_codes, value_codes, counts)
    o = np.asarray(pairs.sum(axis=0)).reshape(k, k)
    n_c = counts.sum(axis=0)  # the coincidence matrix's margins are the pairable values' counts
    delta = _delta(values, level, n_c)
    alpha = float(_alpha((o * delta).sum(), n_c, delta))
    low = high = np.nan
    if n_resamples and n >= 2:
        # The statistic as a function of sums over items, so that a resample (or a leave-one-out) is one
        # product of item weights with the per-item rows: value counts, then D_o (fixed distances) or the
        # item's coincidences (ordinal distances depend on the value counts).
        if level != "ordinal":
            per_item = np.column_stack([counts, np.asarray(pairs @ delta.ravel()).ravel()])

            def of_sums(sums: np.ndarray) -> np.ndarray:
                return _alpha(sums[:, k], sums[:, :k], delta)
        elif not sparse.issparse(pairs):
            per_item = np.hstack([counts, pairs])

            def of_sums(sums: np.ndarray) -> np.ndarray:
                o_b, n_c_b = sums[:, k:].reshape(-1, k, k), sums[:, :k]
                delta_b = _delta(values, level, n_c_b)
                return _alpha((o_b * delta_b).sum(axis=(-2, -1)), n_c_b, delta_b)
        else:  # too many distinct values for dense per-item rows: the percentile interval, from sparse products
            per_item = None
            interval = "percentile"

            def statistic(weights: np.ndarray) -> np.ndarray:
                n_c_b = weights @ counts
                o_b = _times(weights, pairs).reshape(len(weights), k, k)
                delta_b = _delta(values, level, n_c_b)
                return _alpha((o_b * delta_b).sum(axis=(-2, -1)), n_c_b, delta_b)

        with np.errstate(invalid="ignore", divide="ignore"):
            if per_item is None:
                low, high = percentile_over_items(statistic, n, n_resamples, confidence_level, rng)
            else:
                low, high = _item_interval(interval, of_sums, per_item, n_resamples, confidence_level, rng)
        if np.isnan(low) or np.isnan(high):
            warn(f"some bootstrap resamples of the {n} items have no variation to agree on (alpha is undefined "
                 "there), so the interval is NaN: too few items, or ratings that (nearly) never vary.")
    return pd.DataFrame([{"alpha": alpha, "ci_low": low, "ci_high": high,
                          "interval": CI_METHODS[interval] if n_resamples else "none", "n_items": len(items),
                          "n_annotators": int(table["annotator"].nunique()), "level": level}])


# --------------------------------------------------------------------------------------------------
# ICC, Fleiss, Cohen, pairwise tables
# --------------------------------------------------------------------------------------------------
def _complete_matrix(table: pd.DataFrame, name: str) -> pd.DataFrame:
    """Items x annotators, keeping only items rated by every annotator (the rest left out with a warning)."""
    wide = table.pivot(index="item_id", columns="annotator", values="rating")
    complete = wide.notna().all(axis=1)
    if not complete.all():
        warn(f"{int((~complete).sum())} item(s) of `{name}` are not rated by every annotator and were "
             f"left out (e.g. {show(wide.index[~complete][0])}); ICC needs complete items.")
        wide = wide[complete]
    if len(wide) < 2:
        raise ValueError(f"`{name}` needs at least 2 items rated by every annotator; got {len(wide)}.")
    return wide


ICC_FORMS = ("ICC1", "ICC2", "ICC3", "ICC1k", "ICC2k", "ICC3k")


def _icc_of_sums(k: int):
    """The six ICCs as a function of sums over items of (1, the item's k ratings, their squares' sum, their sum squared)."""

    def of_sums(sums: np.ndarray) -> np.ndarray:
        n, cols, squares, rows2 = sums[:, 0], sums[:, 1:k + 1], sums[:, k + 1], sums[:, k + 2]
        correction = cols.sum(axis=1) ** 2 / (n * k)
        ss_total, ss_rows = squares - correction, rows2 / k - correction
        ss_cols = (cols**2).sum(axis=1) / n - correction
        with np.errstate(invalid="ignore", divide="ignore"):
            msb, msw = ss_rows / (n - 1), (ss_total - ss_rows) / (n * (k - 1))
            msj, mse = ss_cols / (k - 1), (ss_total - ss_rows - ss_cols) / ((n - 1) * (k - 1))
            return np.column_stack([
                (msb - msw) / (msb + (k - 1) * msw),
                (msb - mse) / (msb + (k - 1) * mse + k * (msj - mse) / n),
                (msb - mse) / (msb + (k - 1) * mse),
                (msb - msw) / msb,
                (msb - mse) / (msb + (msj - mse) / n),
                (msb - mse) / msb,
            ])

    return of_sums


def icc(ratings, *, confidence_level: float = 0.95, interval: str = "auto", n_resamples: int = 1000,
        rng=None) -> pd.DataFrame:
    """The six intraclass correlations of Shrout & Fleiss (1979) with intervals that hold on rating scales.

    Parameters
    ----------
    ratings : DataFrame
        Long table ``item_id, annotator, rating`` with numeric ratings. Items not rated by every
        annotator are left out with an :class:`~evalkit.EvalkitWarning`.
    confidence_level : float, default 0.95
    interval : {"auto", "F", "studentized", "percentile", "BCa"}, default "auto"
        ``"F"``: Shrout & Fleiss's intervals from the F distribution (Satterthwaite's for ICC2), exact when
        ratings are normal. ``"studentized"``, ``"percentile"``, ``"BCa"``: bootstrap over items (as in
        :func:`krippendorff_alpha`), which is right when the annotators are fixed (ICC3) or nested in the
        items (ICC1), not when they are a random draw rating every item (ICC2). ``"auto"``: the studentized
        bootstrap for ICC1, ICC3 and their k forms, the F interval for ICC2 and ICC2k. Measured in the
        coverage harness (``python benchmarks/bench_coverage.py --function agreement.icc``): on 1-3 and 1-5
        ratings piled at the top of the scale the F intervals of ICC1 and ICC3 cover 0.87-0.92 where 0.95 is
        claimed, at 20 to 200 items, the studentized ones 0.92-0.98; with annotators drawn at random the
        bootstrap interval of ICC2 covers 0.77 at 200 items, the F one 0.93. No interval measured holds for
        ICC2 on coarse ratings: there the ICC2 rows carry a ``note`` and an EvalkitWarning.
    n_resamples : int, default 1000
        For the bootstrap intervals.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DataFrame
        Indexed by ``ICC1, ICC2, ICC3, ICC1k, ICC2k, ICC3k`` (one-way random, two-way random absolute
        agreement, two-way mixed consistency; single rater and mean of k raters), columns
        ``icc, ci_low, ci_high, interval, note, F, df1, df2, p_val, n_items, n_annotators``. ``p_val`` is
        the F test of no item effect (ICC = 0); ``note`` is empty unless the interval's method is known not
        to hold, or was measured short of its level, on ratings like these (the F intervals of ICC2 on coarse
        ratings; the bootstrap on coarse ratings, 0.89-0.94 at 95% on some 1-5 scales). Where a mean square is zero (constant ratings, annotators who agree exactly,
        items rated alike) the quantities that divide by it are undefined: NaN (an infinite ``F`` where there
        is no error variance), with an :class:`~evalkit.EvalkitWarning`.

    Warns
    -----
    EvalkitWarning
        When the ICC2 rows' F intervals come from ratings on a coarse scale (at most 7 distinct values).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.agreement import icc
    >>> wide = pd.DataFrame([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]])
    >>> ratings = wide.rename_axis(index="item_id", columns="annotator").stack().rename("rating").reset_index()
    >>> icc(ratings, interval="F")["icc"].round(2).tolist()   # the published values of Shrout & Fleiss's example
    [0.17, 0.29, 0.71, 0.44, 0.62, 0.91]
    """
    check_level(confidence_level)
    check_option(interval, ("auto", "F", *CI_METHODS), "interval")
    n_resamples = check_number(n_resamples, "n_resamples", low=1, integer=True)
    rng = check_rng(rng)
    table = _ratings(ratings)
    _numeric(table["rating"], "for ICC")
    x = _complete_matrix(table, "ratings").to_numpy(dtype=float)
    n, k = x.shape
    out = _icc_f_table(x, confidence_level)
    boot = ICC_FORMS if interval not in ("F", "auto") else ("ICC1", "ICC3", "ICC1k", "ICC3k") if interval == "auto" else ()
    if boot:
        _icc_bootstrap(out, x, boot, "studentized" if interval == "auto" else interval, n_resamples, confidence_level, rng)
    _icc_coarse_notes(out, x)
    out["n_items"], out["n_annotators"] = n, k
    return out.astype({"df1": np.int64, "df2": np.int64})


def _icc_f_table(x: np.ndarray, confidence_level: float) -> pd.DataFrame:
    """The six ICC forms of a complete items x annotators matrix, their F intervals (Shrout & Fleiss 1979) and F
    tests; undefined quantities (a zero mean square) are NaN, with a warning."""
    n, k = x.shape
    # a zero mean square (constant ratings, annotators who agree exactly, items alike) makes some ratios 0/0 or x/0
    with np.errstate(divide="ignore", invalid="ignore"):
        grand = x.mean()
        ss_rows = k * ((x.mean(axis=1) - grand) ** 2).sum()
        ss_cols = n * ((x.mean(axis=0) - grand) ** 2).sum()
        ss_total = ((x - grand) ** 2).sum()
        msb = ss_rows / (n - 1)
        msw = (ss_total - ss_rows) / (n * (k - 1))
        msj = ss_cols / (k - 1)
        mse = (ss_total - ss_rows - ss_cols) / ((n - 1) * (k - 1))
        icc1 = (msb - msw) / (msb + (k - 1) * msw)
        icc2 = (msb - mse) / (msb + (k - 1) * mse + k * (msj - mse) / n)
        icc3 = (msb - mse) / (msb + (k - 1) * mse)
        q = 1 - (1 - confidence_level) / 2
        df_w, df_e = n * (k - 1), (n - 1) * (k - 1)
        f1, f3 = msb / msw, msb / mse
        f1l, f1u = f1 / stats.f.ppf(q, n - 1, df_w), f1 * stats.f.ppf(q, df_w, n - 1)
        f3l, f3u = f3 / stats.f.ppf(q, n - 1, df_e), f3 * stats.f.ppf(q, df_e, n - 1)
        l2, u2 = _icc2_limits(n, k, icc2, msb, msj, mse, df_e, q)
        # (F - 1) / (F + k - 1) written as 1 - k / (F + k - 1): equal, and 1 (not inf / inf) at an infinite F
        rows = {
            "ICC1": (icc1, 1 - k / (f1l + k - 1), 1 - k / (f1u + k - 1), f1, n - 1, df_w),
            "ICC2": (icc2, l2, u2, f3, n - 1, df_e),
            "ICC3": (icc3, 1 - k / (f3l + k - 1), 1 - k / (f3u + k - 1), f3, n - 1, df_e),
            "ICC1k": ((msb - msw) / msb, 1 - 1 / f1l, 1 - 1 / f1u, f1, n - 1, df_w),
            "ICC2k": ((msb - mse) / (msb + (msj - mse) / n), l2 * k / (1 + l2 * (k - 1)), u2 * k / (1 + u2 * (k - 1)),
                      f3, n - 1, df_e),
            "ICC3k": ((msb - mse) / msb, 1 - 1 / f3l, 1 - 1 / f3u, f3, n - 1, df_e),
        }
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["icc", "ci_low", "ci_high", "F", "df1", "df2"])
    out.insert(3, "interval", "F distribution (Shrout & Fleiss 1979)")
    out.insert(4, "note", "")
    out["p_val"] = stats.f.sf(out["F"], out["df1"], out["df2"])
    estimates = ["icc", "ci_low", "ci_high"]
    finite = np.isfinite(out[estimates].to_numpy(dtype=float))
    if not finite.all() or not np.isfinite(out[["F", "p_val"]].to_numpy(dtype=float)).all():
        out[estimates] = out[estimates].where(finite)  # an ICC or an interval end of +-inf is as undefined as 0/0
        undefined = ", ".join(out.index[~finite.all(axis=1)])
        warn(f"icc: a mean square is zero (every rating the same, annotators who agree exactly, or items rated "
             f"alike), so the quantities that divide by it are undefined: NaN in {undefined or 'no ICC'}"
             f"{'; F is infinite where there is no error variance' if np.isinf(out['F']).any() else ''}.")
    return out


def _icc2_limits(n, k, icc2, msb, msj, mse, df_e, q):
    """ICC2's F interval, with Satterthwaite's degrees of freedom for the combined mean squares (Shrout & Fleiss
    1979, eq. 9)."""
    fj = msj / mse
    v = df_e * (k * icc2 * fj + n * (1 + (k - 1) * icc2) - k * icc2) ** 2 / (
        (n - 1) * k**2 * icc2**2 * fj**2 + (n * (1 + (k - 1) * icc2) - k * icc2) ** 2)
    fs_low, fs_high = stats.f.ppf(q, n - 1, v), stats.f.ppf(q, v, n - 1)
    l2 = n * (msb - fs_low * mse) / (fs_low * (k * msj + (k * n - k - n) * mse) + n * msb)
    u2 = n * (fs_high * msb - mse) / (k * msj + (k * n - k - n) * mse + n * fs_high * msb)
    return l2, u2


def _icc_bootstrap(out: pd.DataFrame, x: np.ndarray, boot, method: str, n_resamples: int, confidence_level: float,
                   rng) -> None:
    """The bootstrap interval over items of the ``boot`` forms, in place of their F interval (a warning where a
    resample is undefined)."""
    n, k = x.shape
    per_item = np.column_stack([np.ones(n), x, (x**2).sum(axis=1), x.sum(axis=1) ** 2])
    low, high = _item_interval(method, _icc_of_sums(k), per_item, n_resamples, confidence_level, rng)
    chosen = [ICC_FORMS.index(form) for form in boot]
    out.loc[list(boot), "ci_low"], out.loc[list(boot), "ci_high"] = np.asarray(low)[chosen], np.asarray(high)[chosen]
    out.loc[list(boot), "interval"] = CI_METHODS[method]
    lost = [form for form in boot if np.isfinite(out.loc[form, "icc"])
            and not np.isfinite(out.loc[form, ["ci_low", "ci_high"]].to_numpy(dtype=float)).all()]
    if lost:
        warn(f"icc: the bootstrap interval of {', '.join(lost)} is NaN: some resample of the {n} items has "
             "no variation to compare (too few items, or items rated alike); interval='F' gives the "
             "normal-theory interval.")


def _icc_coarse_notes(out: pd.DataFrame, x: np.ndarray) -> None:
    """On ratings with at most 7 distinct values, the notes (and a warning) of the intervals measured short there."""
    if len(np.unique(x)) > 7:
        return
    f_rows = [form for form in ("ICC2", "ICC2k") if out.loc[form, "interval"].startswith("F ")]
    if f_rows:
        out.loc[f_rows, "note"] = ("F interval on coarse ratings: covers less than claimed (0.87 for 95% at 50 items "
                                      "of 1-5 ratings piled at the top, in the coverage harness)")
        warn(f"the ratings take {len(np.unique(x))} distinct values: the F intervals of {' and '.join(f_rows)} "
             "assume normal ratings and cover less than claimed on a coarse scale; no interval measured "
             "holds there (see icc's interval). The bootstrap intervals of ICC1 and ICC3 come closer but run "
             "a little short on some coarse scales too (see their note).")
    boot_rows = [form for form in ICC_FORMS if out.loc[form, "interval"] == CI_METHODS["studentized"]]
    if boot_rows:
        out.loc[boot_rows, "note"] = ("studentized bootstrap on coarse ratings: covered 0.89-0.94 for 95% at 50 items "
                                         "on some 1-5 scales in the coverage harness (USR Overall: 0.936 for ICC1 over "
                                         "3,500 draws, 0.89 for ICC1k over 200; 1-5 ratings piled at the top: 0.92-0.93 "
                                         "for ICC3k)")


def fleiss_kappa(ratings, *, n_resamples: int = 1000, confidence_level: float = 0.95, interval: str = "studentized",
                 rng=None) -> pd.DataFrame:
    """Fleiss' kappa for items that each have the same number of ratings (annotators may differ by item).

    Parameters
    ----------
    ratings : DataFrame
        Long table ``item_id, annotator, rating`` (any labels). Every item must have the same number of
        ratings (at least 2); use :func:`krippendorff_alpha` when some are missing.
    n_resamples : int, default 1000
        Bootstrap resamples of items (drawn as in :func:`krippendorff_alpha`); 0 skips the interval.
    confidence_level : float, default 0.95
    interval : {"studentized", "percentile", "BCa"}, default "studentized"
        As in :func:`krippendorff_alpha`.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DataFrame
        One row: ``kappa, ci_low, ci_high, interval, p_val, n_items, n_raters, n_categories``. ``p_val`` tests
        kappa = 0 (two-sided) with the standard error under no agreement beyond chance of Fleiss, Nee &
        Landis (1979). With a single category (chance agreement is 1) or a single item, kappa is undefined:
        a NaN row and an :class:`~evalkit.EvalkitWarning`; the interval is NaN, with a warning, when some
        resample has a single category.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.agreement import fleiss_kappa
    >>> ratings = pd.DataFrame({"item_id": [1, 1, 1, 2, 2, 2, 3, 3, 3], "annotator": list("abc") * 3,
    ...                         "rating": ["x", "x", "x", "y", "y", "x", "y", "y", "y"]})
    >>> round(float(fleiss_kappa(ratings, n_resamples=0)["kappa"].iloc[0]), 4)
    0.55
    """
    n_resamples = check_number(n_resamples, "n_resamples", low=0, integer=True)
    check_level(confidence_level)
    check_option(interval, tuple(CI_METHODS), "interval")
    rng = check_rng(rng)
    table = _drop_single(_ratings(ratings), "ratings")
    item_codes, _ = pd.factorize(table["item_id"], sort=True)
    value_codes, values = pd.factorize(table["rating"], sort=False)
    n_items, k = item_codes.max() + 1, len(values)
    counts = np.bincount(item_codes * k + value_codes, minlength=n_items * k).reshape(n_items, k).astype(float)
    per_item = counts.sum(axis=1)
    if np.ptp(per_item) > 0:
        raise ValueError(f"Fleiss' kappa needs the same number of ratings for every item of `ratings`; got between "
                         f"{int(per_item.min())} and {int(per_item.max())}. Use krippendorff_alpha for missing ratings.")
    m = per_item[0]
    if _warn_undefined("Fleiss' kappa", int(n_items), values):
        return pd.DataFrame([{"kappa": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_val": np.nan,
                              "n_items": int(n_items), "n_raters": int(m), "n_categories": k}])
    agree = (counts * (counts - 1)).sum(axis=1) / (m * (m - 1))  # each item's share of agreeing rating pairs

    # Kappa as a function of sums over items of (1, the item's category counts, its share of agreeing pairs).
    rows = np.column_stack([np.ones(n_items), counts, agree])

    def of_sums(sums: np.ndarray) -> np.ndarray:
        total = sums[:, 0]
        p = sums[:, 1:-1] / (total * m)[:, None]
        p_e = (p**2).sum(axis=-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            return (sums[:, -1] / total - p_e) / (1 - p_e)

    kappa = float(of_sums(rows.sum(axis=0)[None, :])[0])
    p = counts.sum(axis=0) / counts.sum()
    q = (p * (1 - p)).sum()
    with np.errstate(invalid="ignore", divide="ignore"):
        se = np.sqrt(2 / (n_items * m * (m - 1))) * np.sqrt(q**2 - (p * (1 - p) * (1 - 2 * p)).sum()) / q
    low = high = np.nan
    if n_resamples and n_items >= 2:
        with np.errstate(invalid="ignore", divide="ignore"):
            low, high = _item_interval(interval, of_sums, rows, n_resamples, confidence_level, rng)
        if np.isnan(low) or np.isnan(high):
            warn(f"some bootstrap resamples of the {n_items} items use a single category (kappa is undefined "
                 "there), so the interval is NaN: too few items, or one category (nearly) always.")
    return pd.DataFrame([{"kappa": kappa, "ci_low": low, "ci_high": high,
                          "interval": CI_METHODS[interval] if n_resamples else "none",
                          "p_val": float(2 * stats.norm.sf(abs(kappa / se))) if se > 0 else np.nan,
                          "n_items": int(n_items), "n_raters": int(m), "n_categories": k}])


def _two(table: pd.DataFrame, a, b) -> pd.DataFrame:
    wide = table[table["annotator"].isin([a, b])].pivot(index="item_id", columns="annotator", values="rating")
    return wide.dropna()


def cohen_kappa(ratings, *, annotators=None, weights: str | None = None) -> pd.DataFrame:
    """Cohen's kappa between two annotators on the items both rated, unweighted or weighted.

    Parameters
    ----------
    ratings : DataFrame
        Long table ``item_id, annotator, rating``.
    annotators : pair of annotator ids, optional
        Which two to compare; required when ``ratings`` has more than two annotators.
    weights : {None, "linear", "quadratic"}
        Weighted kappa for ordered numeric ratings (linear or quadratic distances between the sorted labels).

    Returns
    -------
    DataFrame
        One row: ``annotator_a, annotator_b, n, agreement, kappa, weights``; two annotators with no common
        item get ``n = 0`` and NaN, with an :class:`~evalkit.EvalkitWarning`.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.agreement import cohen_kappa
    >>> ratings = pd.DataFrame({"item_id": [1, 2, 3, 4] * 2, "annotator": ["a"] * 4 + ["b"] * 4,
    ...                         "rating": [1, 2, 3, 3, 1, 2, 2, 3]})
    >>> cohen_kappa(ratings, weights="quadratic")[["n", "agreement", "kappa"]].round(4)
       n  agreement  kappa
    0  4       0.75    0.8
    """
    check_option(weights, (None, "linear", "quadratic"), "weights")
    table = _ratings(ratings)
    present = list(sorted_ids(pd.unique(table["annotator"])))  # in sorted order, whatever the rows' order
    if annotators is None:
        if len(present) != 2:
            raise ValueError(f"`ratings` has {len(present)} annotators; name the two to compare with `annotators`, "
                             f"e.g. annotators={present[:2]!r}, or use pairwise_agreement for every pair.")
        annotators = present
    if len(annotators) != 2 or any(a not in present for a in annotators):
        raise ValueError(f"`annotators` must name two annotators of `ratings` ({present}); got {annotators!r}.")
    out = _pair_row(table, *annotators, weights)
    if out["n"].iloc[0] == 0:
        warn(f"cohen_kappa: {annotators[0]!r} and {annotators[1]!r} rated no item in common: their agreement "
             "and kappa are NaN.")
    return out


def _pair_row(table: pd.DataFrame, a, b, weights) -> pd.DataFrame:
    both = _two(table, a, b)
    n = len(both)
    if n == 0:
        kappa = agreement = np.nan
    else:
        x, y = both[a].to_numpy(), both[b].to_numpy()
        if weights is not None:
            x, y = (_numeric(both[name], f"for weights={weights!r}") for name in (a, b))
        agreement = float(np.mean(x == y))
        kappa = _stats.cohen_kappa(x, y, weights=weights)
    return pd.DataFrame([{"annotator_a": a, "annotator_b": b, "n": n, "agreement": agreement, "kappa": kappa,
                          "weights": weights or "none"}])


def pairwise_agreement(ratings, *, weights: str | None = None) -> pd.DataFrame:
    """Agreement and Cohen's kappa for every pair of annotators, on the items each pair both rated.

    Parameters
    ----------
    ratings : DataFrame
        Long table ``item_id, annotator, rating``.
    weights : {None, "linear", "quadratic"}

    Returns
    -------
    DataFrame
        One row per pair: ``annotator_a, annotator_b, n, agreement, kappa, weights``; pairs with no
        common item have ``n = 0`` and NaN, with an :class:`~evalkit.EvalkitWarning` naming them.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.agreement import pairwise_agreement
    >>> ratings = pd.DataFrame({"item_id": [1, 2, 3] * 3, "annotator": list("aaabbbccc"),
    ...                         "rating": ["x", "y", "x", "x", "y", "y", "x", "y", "x"]})
    >>> pairwise_agreement(ratings)[["annotator_a", "annotator_b", "n", "agreement"]]
      annotator_a annotator_b  n  agreement
    0           a           b  3   0.666667
    1           a           c  3   1.000000
    2           b           c  3   0.666667
    """
    check_option(weights, (None, "linear", "quadratic"), "weights")
    table = _ratings(ratings)
    names = sorted(pd.unique(table["annotator"]), key=str)
    rows = [_pair_row(table, a, b, weights) for a, b in combinations(names, 2)]
    out = pd.concat(rows, ignore_index=True)
    apart = out[out["n"] == 0]
    if len(apart):
        pairs = ", ".join(f"{a!r} and {b!r}" for a, b in zip(apart["annotator_a"][:3], apart["annotator_b"][:3], strict=True))
        warn(f"pairwise_agreement: {len(apart)} pair(s) of annotators rated no item in common ({pairs}"
             f"{', ...' if len(apart) > 3 else ''}): their agreement and kappa are NaN.")
    return out


# --------------------------------------------------------------------------------------------------
# the human ceiling
# --------------------------------------------------------------------------------------------------
CEILING_COLUMNS = ["kind", "name", "held_out", "target", *_correlate.COLUMNS]


def human_ceiling(scores, ratings, *, method: str = "spearman", level: str = "dataset", by=None,
                  n_resamples: int = 1000, confidence_level: float = 0.95, adjust: str | None = None,
                  cluster=None, rng=None) -> pd.DataFrame:
    """Each annotator's leave-one-out correlation with the other annotators, and each score's with the same references.

    An annotator's leave-one-out correlation (their ratings against the mean of the other annotators'
    ratings of the same items) is how well one human predicts the others: the ceiling a score can be
    expected to reach. A score is held to the same references: for each annotator left out, its correlation
    with the mean of the other annotators, on the items that annotator rated. So each annotator's row has beside
    it each score's row against the very same reference (same ``held_out``), and the mean over annotators of
    either (the human ceiling, a score's figure) is averaged the same way. A score compared with the mean of all
    annotators instead would meet a less noisy target than any annotator does, which favours the score. All
    correlations come from :func:`evalkit.correlate.correlate`.

    Parameters
    ----------
    scores : Series, DataFrame or None
        Scores indexed by item id (one column per score); None gives the annotator rows only.
    ratings : DataFrame
        Long table ``item_id, annotator, rating`` with numeric ratings, at least 2 annotators.
    method : {"spearman", "kendall", "pearson"}
    level : {"dataset", "summary"}
        ``"summary"`` correlates within each group of ``by`` and averages (see :func:`evalkit.correlate.correlate`).
    by : Series, optional
        Group labels indexed by item id (e.g. the dialogue or source document); required at summary level.
    n_resamples, confidence_level, rng
        For the bootstrap intervals, as in :func:`evalkit.correlate.correlate`.
    adjust : {None, "holm", "bonferroni", "bh", "by"}
        Adjust the p-values of all the rows (annotators and scores: one family) for multiplicity; None:
        ``p_adjusted`` repeats ``p_val``.
    cluster : str or Series, optional
        At dataset level, each item's cluster (e.g. the dialogue of each response), a column of ``ratings`` or a
        Series of cluster labels indexed by item id: every interval resamples whole clusters (see
        :func:`evalkit.correlate.correlate`).

    Returns
    -------
    DataFrame
        One row per annotator (``kind="annotator"``, ``held_out`` its name, on the items they rated that someone
        else rated too), then, for each score column, one row per annotator left out (``kind="score"``, ``held_out``
        the annotator, on those items that the score scored), all with ``target="others' mean"``: the mean rating of
        the annotators but ``held_out``. Columns ``kind, name, held_out, target`` and those of
        :func:`evalkit.correlate.correlate` (``n, r, ci_low, ci_high, interval, p_val, p_adjusted, adjust,
        method, level, n_groups, n_skipped``). ``table.groupby(["kind", "name"])["r"].mean()`` gives the human
        ceiling and each score's figure, averaged over the same references. Where a correlation is undefined (too
        few common items, constant ratings or scores) its ``r`` and ``p_val`` are NaN and
        :func:`evalkit.correlate.correlate` warns with an :class:`~evalkit.EvalkitWarning`, as it does where it
        aligns items by index and leaves some out.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit.agreement import human_ceiling
    >>> rng = np.random.default_rng(0)
    >>> truth = pd.Series(rng.normal(size=60), index=[f"i{k}" for k in range(60)])
    >>> ratings = pd.DataFrame([(i, a, t + rng.normal()) for i, t in truth.items() for a in "abc"],
    ...                        columns=["item_id", "annotator", "rating"])
    >>> table = human_ceiling(truth.rename("oracle"), ratings, n_resamples=0)
    >>> table[["kind", "name", "held_out", "n"]]
            kind    name held_out   n
    0  annotator       a        a  60
    1  annotator       b        b  60
    2  annotator       c        c  60
    3      score  oracle        a  60
    4      score  oracle        b  60
    5      score  oracle        c  60
    >>> means = table.groupby(["kind", "name"])["r"].mean()  # the ceiling and the score's, averaged alike
    >>> bool(means["annotator"].iloc[0] < means["score", "oracle"])
    True
    """
    check_option(level, ("dataset", "summary"), "level")
    check_option(adjust, (None, *ADJUSTMENTS), "adjust")
    rng = check_rng(rng)
    table = _ratings(ratings)
    _numeric(table["rating"], "for correlations")
    if cluster is not None:  # a column of the ratings table (one value per item) or a Series by item id
        cluster = as_groups(cluster, ratings if isinstance(ratings, pd.DataFrame) else None, key="item_id",
                            table_name="ratings")
    if level == "summary" and not isinstance(by, pd.Series):
        raise ValueError("`by` must be a Series of group labels indexed by item id at level='summary'; "
                         f"got {type(by).__name__}.")
    wide = table.pivot(index="item_id", columns="annotator", values="rating").astype(float)
    options = dict(method=method, level=level, n_resamples=n_resamples, confidence_level=confidence_level, rng=rng)

    def run(x: pd.DataFrame, target: pd.Series) -> pd.DataFrame:
        common = x.index.intersection(target.index[target.notna()], sort=False)
        if level == "summary":
            common = common.intersection(by.index, sort=False)
        if cluster is not None:
            common = common.intersection(cluster.index, sort=False)
        groups = by.loc[common] if level == "summary" else None
        return _correlate.correlate(x.loc[common], target.loc[common], by=groups,
                                    cluster=None if cluster is None else cluster.loc[common], **options)

    frame = None if scores is None else _as_score_frame(scores)
    humans, machines = [], []
    for name in wide.columns:
        own = wide[name].dropna()
        others = wide.drop(columns=name).loc[own.index].mean(axis=1)
        if others.notna().sum() == 0:
            continue
        humans.append(run(own.to_frame(name), others).assign(kind="annotator", name=name, held_out=name))
        if frame is not None:  # the scores against the same reference, on the items this annotator rated
            machines.append(run(frame, others).assign(kind="score", held_out=name).rename_axis("name").reset_index())
    rows = humans
    if machines:  # each score's rows together, in the annotators' order
        scored = pd.concat(machines, ignore_index=True)
        order = {name: i for i, name in enumerate(frame.columns)}
        rows = [*humans, scored.sort_values("name", key=lambda s: s.map(order), kind="stable")]
    out = pd.concat([r.reset_index(drop=True) for r in rows], ignore_index=True).assign(target="others' mean")
    if adjust is not None:
        out["p_adjusted"], out["adjust"] = adjust_p_values(out["p_val"].to_numpy(dtype=float), adjust), adjust
    return out[CEILING_COLUMNS]


def _as_score_frame(scores) -> pd.DataFrame:
    if isinstance(scores, pd.Series):
        return scores.to_frame("score" if scores.name is None else scores.name)
    return check_dataframe(scores, "scores")


# --------------------------------------------------------------------------------------------------
# the alternative annotator test
# --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class AltTestResult:
    """Result of :func:`alternative_annotator_test`.

    Attributes
    ----------
    winning_rate : float
        Share of the tested annotators for whom the judge's advantage is significant (after the
        Benjamini-Yekutieli correction): the judge passes when it is at least 0.5.
    advantage_probability : float
        Mean over annotators of the share of items where the judge aligns with the other annotators at
        least as well as the left-out annotator does (for comparing judges: higher is better).
    passed : bool
    epsilon, fdr_level : float
        The cost-benefit margin and the false discovery rate used.
    annotators : DataFrame
        One row per annotator: ``annotator, n_items, tested, advantage_probability, human_advantage, p_val,
        p_adjusted, adjust, judge_wins`` (``p_adjusted``: Benjamini-Yekutieli over the tested annotators, named
        in ``adjust``). Annotators with fewer than ``min_items`` items are not tested (``tested`` False, NaN
        p-values) and not counted. At ``epsilon=0`` an annotator who ties with the judge on every item has an
        undefined t-test (NaN p-values, with a warning): the judge does not win against them, and they count in
        both rates, as in the authors' code.
    """

    winning_rate: float
    advantage_probability: float
    passed: bool
    epsilon: float
    fdr_level: float
    annotators: pd.DataFrame = field(repr=False)

    def _rows(self) -> tuple[str, list[dict]]:
        tested = int(self.annotators["tested"].sum())
        wins = int(self.annotators["judge_wins"].sum())
        title = (f"AltTestResult: {'passed' if self.passed else 'failed'} at epsilon = {self.epsilon:g}, "
                 f"false discovery rate {self.fdr_level:g}")
        method = "alt-test, one-sided t per annotator, Benjamini-Yekutieli"
        return title, [
            {"quantity": "winning rate", "estimate": _display.number(self.winning_rate), "method": method,
             "note": f"the judge wins against {wins} of {tested} tested annotators; it passes at 0.5 or more"},
            {"quantity": "advantage probability", "estimate": _display.number(self.advantage_probability),
             "note": "mean share of items where the judge matches the others at least as well as the left-out annotator"}]

    def __repr__(self) -> str:
        return _display.result_text(*self._rows())

    def _repr_html_(self) -> str:
        return _display.result_html(*self._rows()) + _display.format_frame(self.annotators).to_html(index=False)


def alternative_annotator_test(judge, ratings, *, scoring: str = "accuracy", epsilon: float = 0.2,
                               fdr_level: float = 0.05, min_items: int = 30) -> AltTestResult:
    """Can the judge replace a human annotator? The alt-test of Calderon, Reichart & Dror (ACL 2025).

    Each annotator ``j`` is left out in turn. On every item ``j`` rated, the judge and ``j`` are each
    scored by how well they match the remaining annotators of that item; ``W_f = 1`` when the judge
    scores at least as well, ``W_h = 1`` when ``j`` does (ties count for both). A one-sided t-test of
    ``mean(W_h - W_f) < epsilon`` gives a p-value per annotator; the Benjamini-Yekutieli procedure at
    ``fdr_level`` decides which are significant (the judge "wins" against them).

    Parameters
    ----------
    judge : Series
        The judge's annotation per item, indexed by item id; rated items without one are left out, with an
        :class:`~evalkit.EvalkitWarning` that counts them and names the first few.
    ratings : DataFrame
        Long table ``item_id, annotator, rating`` with at least 3 annotators; items with fewer than 2
        ratings are left out.
    scoring : {"accuracy", "neg_rmse"}
        Alignment with the remaining annotators: the share of them giving the same label, or minus the
        root mean squared difference from their ratings (numeric ratings on the judge's scale).
    epsilon : float, default 0.2
        The cost-benefit margin in [0, 1) granted to the judge; the paper suggests 0.2 for experts,
        0.15 for skilled annotators and 0.1 for crowd workers.
    fdr_level : float, default 0.05
    min_items : int, default 30
        Annotators with fewer scored items are not tested (an :class:`~evalkit.EvalkitWarning` names them).

    Returns
    -------
    AltTestResult

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit.agreement import alternative_annotator_test
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.integers(0, 3, 100)
    >>> noisy = lambda p: np.where(rng.random(100) < p, truth, rng.integers(0, 3, 100))
    >>> ratings = pd.DataFrame([(i, a, v) for a in "abc" for i, v in enumerate(noisy(0.7))],
    ...                        columns=["item_id", "annotator", "rating"])
    >>> res = alternative_annotator_test(pd.Series(noisy(0.9)), ratings, epsilon=0.1)
    >>> res.passed, res.annotators["n_items"].tolist()
    (True, [100, 100, 100])
    """
    check_option(scoring, ("accuracy", "neg_rmse"), "scoring")
    epsilon = check_number(epsilon, "epsilon", low=0.0, high=1.0)
    fdr_level = check_number(fdr_level, "fdr_level", low=0.0, high=1.0)
    min_items = check_number(min_items, "min_items", low=2, integer=True)
    if not isinstance(judge, pd.Series):
        raise TypeError(f"`judge` must be a Series of annotations indexed by item id; got {type(judge).__name__}.")
    table = _ratings(ratings, min_annotators=3)
    judge = judge.dropna()
    rated = pd.Index(pd.unique(table["item_id"]))
    if rated.isin(judge.index).any():  # rated items the judge did not annotate are counted, named and left out
        align_ids(judge.index, rated, left_name="judge", right_name="ratings", what="item", warn_left=False)
    table = table[table["item_id"].isin(judge.index)]
    table = table[table.groupby("item_id")["rating"].transform("size") >= 2]
    if table.empty:
        raise ValueError("`judge` and `ratings` share no item rated by 2 or more annotators.")
    wide = table.pivot(index="item_id", columns="annotator", values="rating")
    if scoring == "accuracy":
        codes, _ = pd.factorize(pd.concat([pd.Series(wide.to_numpy().ravel()), judge.loc[wide.index]], ignore_index=True))
        values = np.where(wide.isna().to_numpy().ravel(), np.nan, codes[: wide.size]).reshape(wide.shape)
        pred = codes[wide.size:].astype(float)
    else:
        _numeric(table["rating"], "for scoring='neg_rmse'")
        values = wide.to_numpy(dtype=float)
        pred = _numeric(judge.loc[wide.index], "for scoring='neg_rmse'", name="judge", column="values")
    rows = []
    for j, name in enumerate(wide.columns):
        rated = ~np.isnan(values[:, j])
        others = np.delete(values, j, axis=1)[rated]
        human, llm = values[rated, j], pred[rated]
        score_h, score_f = _alignment(human, others, scoring), _alignment(llm, others, scoring)
        w_f, w_h = (score_f >= score_h).astype(float), (score_h >= score_f).astype(float)
        n = int(rated.sum())
        diff = w_h - w_f
        tied = n >= min_items and epsilon == 0 and not diff.any()
        # Every item tied at epsilon = 0: the t statistic is 0 / 0 and scipy's p-value NaN, kept as NaN (not rejected).
        p = np.nan if tied or n < min_items else stats.ttest_1samp(diff, epsilon, alternative="less").pvalue
        rows.append({"annotator": name, "n_items": n, "tested": n >= min_items,
                     "advantage_probability": w_f.mean() if n else np.nan,
                     "human_advantage": w_h.mean() if n else np.nan, "p_val": p})
    out = pd.DataFrame(rows)
    tested = out["tested"].to_numpy()
    if not tested.all():
        warn(f"annotator(s) {out.loc[~tested, 'annotator'].tolist()} have fewer than min_items={min_items} "
             "items and were not tested.")
    if not tested.any():
        raise ValueError(f"no annotator has min_items={min_items} items scored by the judge and another annotator.")
    undefined = tested & out["p_val"].isna().to_numpy()
    if undefined.any():
        warn(f"annotator(s) {out.loc[undefined, 'annotator'].tolist()} tie with the judge on every item "
             "(W_h - W_f = 0 throughout): at epsilon=0 the t-test is undefined (p_val NaN), so the judge does "
             "not win against them; they count in the winning rate and the advantage probability, as in the "
             "authors' procedure.")
    out["p_adjusted"] = np.nan
    # Benjamini-Yekutieli adjusted p-values over every tested annotator: rejecting where they are <= fdr_level is
    # the step-up procedure. An undefined p-value enters as 1, the last rank, which the step-up never rejects.
    adjusted = adjust_p_values(np.nan_to_num(out.loc[tested, "p_val"].to_numpy(), nan=1.0), "by")
    out.loc[tested & ~undefined, "p_adjusted"] = adjusted[~undefined[tested]]
    out["adjust"] = "by"
    out["judge_wins"] = (out["p_adjusted"] <= fdr_level).to_numpy()
    winning_rate = float(out.loc[tested, "judge_wins"].mean())
    return AltTestResult(winning_rate=winning_rate, advantage_probability=float(out.loc[tested, "advantage_probability"].mean()),
                         passed=winning_rate >= 0.5, epsilon=epsilon, fdr_level=fdr_level, annotators=out)


def _alignment(pred: np.ndarray, others: np.ndarray, scoring: str) -> np.ndarray:
    """Alignment of each item's prediction with the item's remaining (non-NaN) annotations."""
    present = ~np.isnan(others)
    if scoring == "accuracy":
        return (present & (others == pred[:, None])).sum(axis=1) / present.sum(axis=1)
    squared = np.where(present, (others - pred[:, None]) ** 2, 0.0)
    return -np.sqrt(squared.sum(axis=1) / present.sum(axis=1))
