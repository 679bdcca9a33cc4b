"""Juries: several judges' scores combined by a line learned on the labels (:func:`mean` with a DataFrame judge), and
each judge's and the jury's agreement with the labels beside the weight the jury gives it (:func:`jury`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalkit import _stats
from evalkit._stats import jury as _jury
from evalkit._stats import successive as _successive
from evalkit._validation import check_dataframe, check_number, check_unique_index, show, warn
from evalkit.infer._engine import (
    COLUMNS,
    FALLBACK_NOTE,
    MIN_LARGE_SAMPLE,
    _align,
    _as_scores,
    _betting_order,
    _bounds,
    _inference,
    _resolve_interval,
)

#: What the jury row of :func:`mean` is made of, for its note.
JURY_NOTE = "a jury: the least-squares line of the labels on every judge's scores"


#: The fewest labels the t interval of a jury or of labels drawn with ``probabilities`` is given from (Student's t with
#: Hall's skewness correction): the coverage harness measures it at 0.96-0.97 from 100 labels on its skewed designs
#: (a pass rate of 0.95 with a jury, SummEval's consistency ratings drawn actively), and short at 50 (0.895 and 0.94),
#: where the rare labels at the far end of the scale are too few to read the skewness from.
MIN_T_LABELS = 100


def _few_labels_note(n: int) -> str:
    return (f"{n} labels < {MIN_T_LABELS}: the t interval is known to run short here on skewed labels (the coverage "
            "harness); use interval='betting'")


def _judge_frame(judge: pd.DataFrame, name: str = "judge") -> pd.DataFrame:
    """Each judge's scores (a column per judge) as floats, checked: numbers, PASS/FAIL verdicts or booleans."""
    judge = check_dataframe(judge, name)
    if judge.shape[1] == 0:
        raise ValueError(f"`{name}` has no column: give one column of scores per judge.")
    if judge.columns.duplicated().any():
        raise ValueError(f"`{name}` has the column {show(judge.columns[judge.columns.duplicated()][0])} more than once; "
                         "each judge needs a column of its own.")
    check_unique_index(judge.index, name)
    return pd.DataFrame({c: _as_scores(judge[c], f"{name}[{c!r}]") for c in judge.columns}, index=judge.index)


def _labels_scale(bounds, y: np.ndarray):
    """The labels' scale: ``bounds`` (checked against the labels), else (0, 1) for 0/1 labels, else None. The judges'
    scales do not matter: the jury's prediction is put on the labels' scale."""
    return _bounds(bounds, y, np.array([]))


def _pool(judges: pd.DataFrame, human: pd.Series, nan_policy: str):
    """The labels, their cases' positions, the unlabelled positions and every judge's scores (N, p) of the cases kept
    (with ``nan_policy="omit"``, cases a judge did not score are dropped)."""
    panel = judges.mean(axis=1, skipna=False).rename(None)  # NaN where any judge has no score
    y, positions, unlabelled, _ = _align(panel, human, nan_policy)
    X = judges.to_numpy(dtype=float)
    keep = ~np.isnan(X).any(axis=1)
    rest = np.ones(len(X), dtype=bool) if unlabelled is None else unlabelled.copy()
    if unlabelled is None:
        rest[positions] = False
    rest &= keep
    return y, positions, np.flatnonzero(rest), X


def _one_sided(level: float, alternative: str) -> float:
    return level if alternative == "two-sided" else 1 - 2 * (1 - level)


def _open_end(low: float, high: float, alternative: str):
    return (low, np.inf) if alternative == "greater" else (-np.inf, high) if alternative == "less" else (low, high)


def _jury_steps(y, positions, rest, X, scale, finite_population: bool):
    """The betting steps of the jury: the labels in mean's fixed order (by case, then a fixed permutation); for the
    population, one block of unlabelled cases (in a fixed pseudo-random order) per label; for the cases given, the
    labels as a successive sample with equal weights."""
    by_case = np.argsort(positions, kind="stable")
    labelled = positions[by_case][_betting_order(len(y))]
    ys = y[by_case][_betting_order(len(y))]
    if finite_population:
        keep = np.sort(np.concatenate([labelled, rest]))  # the pool: every case with every judge's score
        where = np.searchsorted(keep, labelled)
        full = np.full(len(keep), np.nan)
        full[where] = ys
        return _successive.successive_steps(full, X[keep], where, np.ones(len(keep)), bounds=scale)
    shuffled = rest[np.random.default_rng(len(rest)).permutation(len(rest))]
    return _successive.block_steps(ys, X[labelled], X[shuffled], bounds=scale)


def _jury_interval(y, positions, rest, X, *, scale, interval, level, finite_population, alternative, est, se, df,
                   skewness=0.0, null=None):
    """The jury row's interval (or, with ``null``, whether it excludes it) and its note where it refuses one."""
    if interval == "betting":
        steps = _jury_steps(y, positions, rest, X, scale, finite_population)
        found = _successive.steps_betting(steps, bounds=scale, confidence_level=_one_sided(level, alternative),
                                          null=null)
        if null is not None:
            below, above = bool(found[0]), bool(found[1])
            return {"two-sided": below or above, "greater": below, "less": above}[alternative], ""
        return (*_open_end(float(found[0]), float(found[1]), alternative), "")
    if len(y) < MIN_LARGE_SAMPLE:
        return np.nan, np.nan, (f"{len(y)} labels < {MIN_LARGE_SAMPLE}: a large-sample interval is not backed here; "
                                "use interval='betting'" + (" with bounds=(low, high)" if scale is None else ""))
    if interval == "t":
        if len(y) < MIN_T_LABELS:
            return (False, _few_labels_note(len(y))) if null is not None else (np.nan, np.nan, _few_labels_note(len(y)))
        low, high = _stats.skew_corrected_interval(est, se, skewness, df, level, alternative)
    else:
        low, high = _successive.t_interval(est, se, df, level, alternative, kind=interval)
    if null is not None:
        return not (low <= null <= high), ""
    return low, high, ""


def _jury_skewness(y, out_of_fold, per_fold, se: float, *, finite_population: bool) -> float:
    """The skewness of the cross-fitted estimate, for Hall's correction of its t interval: its third cumulant over
    ``se^3``, the residuals' ``m3 / n^2`` (times ``(1 - f)(1 - 2 f)`` for the mean over exactly the cases, f the share
    labelled) plus, for the population, the unlabelled predictions' ``m3 / N^2``."""
    if not np.isfinite(se) or se <= 0:
        return 0.0
    residual = np.asarray(y, dtype=float) - np.asarray(out_of_fold, dtype=float)
    imputed = np.asarray(per_fold, dtype=float).mean(axis=1)
    n, big_n = len(residual), len(imputed)
    third = np.mean((residual - residual.mean()) ** 3) / n**2
    if finite_population:
        f = n / (n + big_n)
        third *= (1 - f) * (1 - 2 * f)
    elif big_n:
        third += np.mean((imputed - imputed.mean()) ** 3) / big_n**2
    return float(third / se**3)


def jury_table(judges: pd.DataFrame, human: pd.Series, *, methods, interval, confidence_level, bounds,
               finite_population: bool, nan_policy: str, alternative: str = "two-sided", keep_se: bool = False
               ) -> pd.DataFrame:
    """:func:`mean`'s table for several judges (``judges``: a column each) and labels on a random subset."""
    panel = judges.mean(axis=1, skipna=False).rename(None)  # the judges' plain average, for the other methods
    others = [m for m in methods if m != "ppi++"]
    need = list(dict.fromkeys(others + (["classical"] if "ppi++" in methods else [])))
    y, positions, rest, X = _pool(judges, human, nan_policy)
    if len(y) < 2:
        raise ValueError(f"`human` must hold at least 2 labels (with every judge's score and a label); got {len(y)}.")
    scale = _labels_scale(bounds, y)
    resolved, why = _resolve_interval(interval, scale)
    base = None
    if need:
        base = _inference(panel, human, methods=need, interval=interval, confidence_level=confidence_level, by=None,
                          adjust=None, cluster=None, bounds=bounds if bounds is not None else scale,
                          finite_population=finite_population, nan_policy=nan_policy, alternative=alternative,
                          keep_se=True)
    rows = []
    weights = pd.Series(_jury.line(X[positions], y)[1:], index=judges.columns, name="weight")
    for method in methods:
        if method != "ppi++":
            row = base[base["method"] == method].iloc[0].to_dict()
            if method in ("ppi", "judge"):
                row["note"] = "; ".join(p for p in (row.get("note", ""), "the judges' plain average") if p)
            rows.append(row)
            continue
        oof, per_fold, _ = _jury.cross_fitted(X[positions], y, X[rest], bounds=scale)
        est, se, df = _jury.cross_ppi(y, oof, per_fold, finite_population=finite_population)
        skewness = _jury_skewness(y, oof, per_fold, se, finite_population=finite_population)
        low, high, note = _jury_interval(y, positions, rest, X, scale=scale, interval=resolved, level=confidence_level,
                                         finite_population=finite_population, alternative=alternative, est=est,
                                         se=se, df=df, skewness=skewness)
        row = {"estimate": est, "ci_low": low, "ci_high": high, "n_labelled": len(y), "n_unlabelled": len(rest),
               "lam": np.nan, "method": "ppi++", "interval": resolved,
               "note": "; ".join(p for p in (why, note) if p) or JURY_NOTE, "_se": se, "_df": df}
        classical = base[base["method"] == "classical"].iloc[0]
        width, narrow = high - low, classical["ci_high"] - classical["ci_low"]
        # the narrower of two intervals only where both are betting ones (or exact): the humans-only t interval is the
        # one that runs short on skewed labels, and picking it where narrower undid the jury's (0.84 at a 0.95 pass rate)
        if (alternative == "two-sided" and resolved == "betting" and np.isfinite(narrow) and not note
                and not (np.isfinite(width) and width <= narrow)):
            row.update(estimate=classical["estimate"], ci_low=classical["ci_low"], ci_high=classical["ci_high"],
                       lam=0.0, interval=classical["interval"], note=FALLBACK_NOTE, _se=classical.get("_se", np.nan),
                       _df=classical.get("_df", np.nan))
        if note and np.isnan(row["ci_low"]):
            warn(f"jury: {note} (the estimate stands, the interval is NaN with a note).")
        rows.append(row)
    out = pd.DataFrame(rows)
    for column in COLUMNS:
        if column not in out.columns:
            out[column] = np.nan
    out = out[COLUMNS + (["_se", "_df"] if keep_se else [])]
    out.attrs.update(confidence_level=confidence_level, joint_confidence_level=None, adjust=None, interval=resolved,
                     population="finite" if finite_population else "superpopulation", cluster=None, bounds=scale,
                     weights=weights, judges=list(judges.columns))
    return out


def jury_p_value(judges: pd.DataFrame, human: pd.Series, *, interval, bounds, finite_population, nan_policy,
                 alternative) -> float:
    """The test of "the mean is 0" that matches the jury row's interval (for :func:`difference`)."""
    y, positions, rest, X = _pool(judges, human, nan_policy)
    scale = _labels_scale(bounds, y)
    resolved, _ = _resolve_interval(interval, scale)
    oof, per_fold, _ = _jury.cross_fitted(X[positions], y, X[rest], bounds=scale)
    est, se, df = _jury.cross_ppi(y, oof, per_fold, finite_population=finite_population)
    skewness = _jury_skewness(y, oof, per_fold, se, finite_population=finite_population)

    def excludes(alpha):
        return _jury_interval(y, positions, rest, X, scale=scale, interval=resolved, level=1 - alpha,
                              finite_population=finite_population, alternative=alternative, est=est, se=se, df=df,
                              skewness=skewness, null=0.0)[0]

    if resolved != "betting" and len(y) < MIN_LARGE_SAMPLE:
        return np.nan
    if resolved == "t" and len(y) < MIN_T_LABELS:
        return np.nan
    return _stats.betting_p_value(excludes, tol=1e-5)


def jury(judge: pd.DataFrame, human: pd.Series, *, bounds=None, folds: int = _jury.FOLDS) -> pd.DataFrame:
    """Each judge's agreement with the human labels beside the weight a jury of them gives it, and the jury's own.

    The jury is the least-squares line of the labels on every judge's scores, as :func:`mean` learns it for a
    DataFrame ``judge``. Agreement is measured out of fold (each judge alone and the jury are fitted in ``folds``
    folds of the labels, each fold predicted by the line fitted on the others), so that the jury, which has more to
    fit, is not flattered by its own labels.

    Parameters
    ----------
    judge : DataFrame
        One column of scores per judge (numbers, PASS/FAIL verdicts or booleans), indexed by case id.
    human : Series
        Labels of some of the cases (a subset of ``judge``'s index), on one scale.
    bounds : (float, float), optional
        The labels' scale; the predictions are clipped to it (default: (0, 1) for 0/1 labels, else unclipped).
    folds : int, default 5

    Returns
    -------
    DataFrame
        One row per judge, then ``"jury"``: ``judge, weight, standardized_weight, r, rmse, agreement, n_labelled``.
        ``weight`` is the judge's slope in the jury's line fitted on every label (label units per unit of its score;
        NaN for the jury row), ``standardized_weight`` the slope times the judge's standard deviation over every case
        (label units per standard deviation: comparable across judges on different scales); ``r`` the Pearson
        correlation of the out-of-fold prediction with the labels, ``rmse`` its root mean squared error (label
        units); ``agreement`` (0/1 labels only, else NaN) the share of labels the prediction, read as a verdict
        (above 0.5 passes, 0.5 counts half), gets right.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.random(600) < 0.7
    >>> judges = pd.DataFrame({name: np.where(rng.random(600) < acc, truth, ~truth).astype(float)
    ...                        for name, acc in [("big", 0.85), ("small-1", 0.75), ("small-2", 0.75)]})
    >>> infer.jury(judges, pd.Series(truth[:200].astype(float), index=judges.index[:200])).round(2)
         judge  weight  standardized_weight     r  rmse  agreement  n_labelled
    0      big    0.44                 0.21  0.70  0.34       0.86         200
    1  small-1    0.21                 0.10  0.51  0.41       0.77         200
    2  small-2    0.36                 0.18  0.66  0.36       0.83         200
    3     jury     NaN                  NaN  0.82  0.28       0.90         200
    """
    judges = _judge_frame(judge)
    folds = check_number(folds, "folds", low=2, integer=True)
    labels = _as_scores(human, "human")
    y, positions, _, X = _pool(judges, labels, "raise")
    if len(y) < 4:
        raise ValueError(f"`human` must hold at least 4 labels to fit the jury out of fold; got {len(y)}.")
    scale = _labels_scale(bounds, y)
    binary = bool(np.isin(y, (0.0, 1.0)).all())
    beta = _jury.line(X[positions], y)
    spread = np.nanstd(X, axis=0)

    def measured(columns):
        oof, _, _ = _jury.cross_fitted(X[positions][:, columns], y, X[:0][:, columns], bounds=scale, folds=folds)
        with np.errstate(invalid="ignore", divide="ignore"):
            r = float(np.corrcoef(oof, y)[0, 1]) if np.ptp(oof) > 0 and np.ptp(y) > 0 else np.nan
        verdict = np.where(oof > 0.5, 1.0, np.where(oof < 0.5, 0.0, 0.5))
        agreement = float(np.mean(1 - np.abs(verdict - y))) if binary else np.nan
        return r, float(np.sqrt(np.mean((y - oof) ** 2))), agreement

    rows = []
    for j, name in enumerate(judges.columns):
        r, rmse, agreement = measured([j])
        rows.append({"judge": name, "weight": float(beta[1 + j]), "standardized_weight": float(beta[1 + j] * spread[j]),
                     "r": r, "rmse": rmse, "agreement": agreement, "n_labelled": len(y)})
    r, rmse, agreement = measured(list(range(X.shape[1])))
    rows.append({"judge": "jury", "weight": np.nan, "standardized_weight": np.nan, "r": r, "rmse": rmse,
                 "agreement": agreement, "n_labelled": len(y)})
    return pd.DataFrame(rows)
