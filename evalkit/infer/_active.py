"""Active labelling: draw probabilities from the judge's uncertainty, the draws themselves, and :func:`mean`'s table
for labels drawn with them (successive sampling and Des Raj's estimator, :mod:`evalkit._stats.successive`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalkit import _stats
from evalkit._stats import jury as _jury
from evalkit._stats import successive as _successive
from evalkit._validation import check_number, check_rng, check_unique_index, show, warn
from evalkit.infer._engine import (
    COLUMNS,
    FALLBACK_NOTE,
    MIN_LARGE_SAMPLE,
    _as_scores,
    _bounds,
    _resolve_interval,
)
from evalkit.infer._jury import MIN_T_LABELS, _few_labels_note, _judge_frame

#: The default share of every case's draw probability that is uniform: a case the judge is sure of keeps half the
#: chance it would have under uniform draws. Below it the betting interval pays for the rare cases' range (the label a
#: rarely drawn case could have moves the estimate by its inverse probability) more than the variance saves.
FLOOR = 0.5
#: Pilot labels per bin of the predicted label in the residual-spread model (at most ``SPREAD_BINS`` bins).
PER_BIN = 10
SPREAD_BINS = 5
#: Pseudo-cases at the pilot's mean squared residual added to each bin (shrinking a bin of few labels toward it).
SPREAD_PRIOR = 5


def _features(judge, name: str = "judge") -> tuple[pd.DataFrame, bool]:
    """The judge's scores as a frame (one column per judge) and whether several judges were given."""
    if isinstance(judge, pd.DataFrame):

        return _judge_frame(judge, name), True
    scores = _as_scores(judge, name)
    check_unique_index(scores.index, name)
    return scores.to_frame("judge"), False


def _residual_spread(X: np.ndarray, pilot_positions: np.ndarray, y: np.ndarray, bounds) -> np.ndarray:
    """Each case's expected squared residual about the line through the pilot: the pilot's out-of-fold squared
    residuals, averaged within equal-count bins of the predicted label (at most ``SPREAD_BINS``, about ``PER_BIN``
    labels each; one per distinct prediction where there are at most ``SPREAD_BINS``, as for verdicts), each bin shrunk
    toward the pilot's mean by ``SPREAD_PRIOR`` cases."""
    oof, _, _ = _jury.cross_fitted(X[pilot_positions], y, X[:0], bounds=bounds)
    squared = (y - oof) ** 2
    beta = _jury.line(X[pilot_positions], y)
    fitted = _jury.predict(beta, X[pilot_positions], bounds)
    every = _jury.predict(beta, X, bounds)
    distinct = np.unique(fitted)
    bins = int(np.clip(len(y) // PER_BIN, 1, SPREAD_BINS))
    if len(distinct) <= SPREAD_BINS:  # a verdict's few levels are its bins, however few labels each has (shrunk)
        edges = (distinct[1:] + distinct[:-1]) / 2
    else:
        edges = np.unique(np.quantile(fitted, np.linspace(0, 1, bins + 1)[1:-1]))
    where, at = np.searchsorted(edges, fitted), np.searchsorted(edges, every)
    k = len(edges) + 1
    mean = squared.mean()
    spread = (np.bincount(where, squared, minlength=k) + SPREAD_PRIOR * mean) / (np.bincount(where, minlength=k)
                                                                               + SPREAD_PRIOR)
    return spread[at]


def sampling_probabilities(judge, *, human_pilot: pd.Series | None = None, uncertainty: pd.Series | None = None,
                           floor: float = FLOOR, bounds=None) -> pd.Series:
    """The chance each case has of being drawn next, from the judge's uncertainty: label where it counts.

    A case whose label the judge (or a jury of judges) predicts well adds little to an estimate that already has the
    judge's score; a case it is unsure of adds much. Drawing cases with probability proportional to the spread of
    their label about the prediction (Zrnic & Candès, "Active Statistical Inference", ICML 2024) and weighting each
    label by the inverse of its probability keeps the estimate unbiased and lowers its variance by
    ``1 - (mean spread)^2 / mean(spread^2)``. The uncertainty is, in order of preference:

    - ``uncertainty``, given (e.g. one minus a judge's stated confidence);
    - with ``human_pilot`` (labels of a random pilot): the root mean squared residual of the pilot's labels about
      the least-squares line of the labels on the judge's scores (or on every judge's, for a DataFrame), in bins of
      the predicted label, out of fold (for a PASS/FAIL judge, the bins are its two verdicts: how often each is
      wrong);
    - several judges (a DataFrame) without a pilot: how much they disagree (the standard deviation of their scores
      on each case; the judges on one scale, e.g. verdicts);
    - one judge whose scores are probabilities (in [0, 1], not only 0 and 1): ``sqrt(p (1 - p))``.

    Every case keeps at least ``floor`` of the uniform chance (``floor * 1 / N``), so every case can be drawn and no
    label weighs more than ``1 / floor`` times its uniform weight: the betting interval must survive the worst label
    a rarely drawn case could have, and pays for a low floor in width (``floor=1``: uniform draws).

    Parameters
    ----------
    judge : Series or DataFrame
        The judge's scores (numbers, PASS/FAIL verdicts or booleans) by case id, or one column per judge.
    human_pilot : Series, optional
        Labels of a pilot drawn uniformly at random (``choose_cases(judge, n, strategy="random")``), a subset of the
        cases; the probabilities are for the other cases (the pilot is labelled already), and :func:`mean` counts
        the pilot as the first, uniform draws.
    uncertainty : Series, optional
        A non-negative uncertainty per case (any scale), instead of one read from the pilot or the judges.
    floor : float, default 0.5
        The share of each case's probability that is uniform, in (0, 1].
    bounds : (float, float), optional
        The labels' scale; the pilot's predictions are clipped to it (default: (0, 1) for 0/1 labels).

    Returns
    -------
    Series
        Named ``probability``, indexed by the cases not in the pilot (in the judge's order), summing to 1: the chance
        of each being the next draw while every one is left. :func:`choose_cases` with ``strategy="active"`` draws
        from it (one case at a time, without replacement, each with a chance proportional to its value among the
        cases left) and :func:`mean` with ``probabilities=`` gives the interval; both read the same Series.
        ``attrs["uncertainty"]`` says which uncertainty was used.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> judge = pd.Series([0.5, 0.9, 0.99, 0.6], index=["a", "b", "c", "d"])  # the judge's probability of a pass
    >>> infer.sampling_probabilities(judge).round(3)
    a    0.305
    b    0.233
    c    0.161
    d    0.301
    Name: probability, dtype: float64
    """
    frame, several = _features(judge)
    floor = check_number(floor, "floor", low=0.0, high=1.0, closed="right")
    X = frame.to_numpy(dtype=float)
    if np.isnan(X).any():
        row = frame.index[np.isnan(X).any(axis=1)][0]
        raise ValueError(f"`judge` has no score for case {show(row)}; every case needs one (drop the others: a case "
                         "without a score cannot be weighed).")
    keep = np.ones(len(frame), dtype=bool)
    how = ""
    if uncertainty is not None:
        u_series = _as_scores(uncertainty, "uncertainty")
        check_unique_index(u_series.index, "uncertainty")
        u = u_series.reindex(frame.index).to_numpy(dtype=float)
        if np.isnan(u).any():
            missing = frame.index[np.isnan(u)][0]
            raise ValueError(f"`uncertainty` has no value for case {show(missing)}; give one for every judged case.")
        if (u < 0).any():
            bad = frame.index[u < 0][0]
            raise ValueError(f"`uncertainty` must be non-negative; got {u[u < 0][0]:g} for case {show(bad)}.")
        how = "given"
    if human_pilot is not None:
        pilot = _as_scores(human_pilot, "human_pilot").dropna()
        check_unique_index(pilot.index, "human_pilot")
        positions = frame.index.get_indexer(pilot.index)
        if (positions < 0).any():
            raise ValueError(f"`human_pilot` labels case(s) the judge does not score, e.g. "
                             f"{pilot.index[positions < 0][:3].tolist()}; its index must be a subset of judge's.")
        keep[positions] = False
        if uncertainty is None:
            y = pilot.to_numpy(dtype=float)
            if len(y) < 8:
                raise ValueError(f"`human_pilot` must hold at least 8 labels to read the judge's uncertainty from; got "
                                 f"{len(y)}.")
            u = np.sqrt(_residual_spread(X, positions, y, _bounds(bounds, y, np.array([]))))
            how = "the pilot's residual spread about the line of the labels on the judge" + ("s" if several else "")
    elif uncertainty is None:
        if several:
            u = np.std(X, axis=1)
            how = "the judges' disagreement (standard deviation of their scores)"
        elif ((X >= 0) & (X <= 1)).all() and not np.isin(X, (0.0, 1.0)).all():
            u = np.sqrt(X[:, 0] * (1 - X[:, 0]))
            how = "the judge's probability p: sqrt(p (1 - p))"
        else:
            raise ValueError("sampling_probabilities needs a measure of the judge's uncertainty: pass `human_pilot` "
                             "(labels of a random pilot, from which the spread of the labels about the judge is read), "
                             "`uncertainty=` (one value per case), several judges (a DataFrame: their disagreement), "
                             "or a judge whose scores are probabilities in [0, 1].")
    u = u[keep]
    if not keep.any():
        raise ValueError("`human_pilot` labels every case: there is no case left to draw.")
    share = u / u.mean() if u.mean() > 0 else np.ones(len(u))
    weights = (1 - floor) * share + floor
    out = pd.Series(weights / weights.sum(), index=frame.index[keep], name="probability")
    out.attrs["uncertainty"] = how
    return out


def _within(values: pd.Index, pool: pd.Index) -> np.ndarray:
    """``values.isin(pool)`` by a hash lookup where ``pool`` is unique (pandas' isin on string indexes loops in
    Python: a tenth of a second per thousand-case table, paid on every label of a live interval)."""
    return pool.get_indexer(values) >= 0 if pool.is_unique else values.isin(pool)


def _check_probabilities(probabilities, index: pd.Index) -> pd.Series:
    if not isinstance(probabilities, pd.Series):
        raise TypeError("`probabilities` must be a pandas Series of draw probabilities indexed by case id (as "
                        f"sampling_probabilities returns it); got {type(probabilities).__name__}.")
    if not (pd.api.types.is_numeric_dtype(probabilities) and not pd.api.types.is_bool_dtype(probabilities)):
        raise TypeError(f"`probabilities` must hold numbers; got dtype {probabilities.dtype}.")
    check_unique_index(probabilities.index, "probabilities")
    values = probabilities.to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values < 0)
    if bad.any():
        raise ValueError(f"`probabilities` must be finite and non-negative; got {show(values[bad][0])} for case "
                         f"{show(probabilities.index[bad][0])}.")
    if not (values > 0).any():
        raise ValueError("`probabilities` gives every case probability 0: no case can be drawn.")
    unknown = ~_within(probabilities.index, index)
    if unknown.any():
        raise ValueError(f"`probabilities` has {int(unknown.sum())} case id(s) that `judge` does not score, e.g. "
                         f"{probabilities.index[unknown][:3].tolist()}.")
    return probabilities.astype(float)


def draw_cases(judge_index: pd.Index, probabilities, n: int, *, exclude, rng) -> pd.Index:
    """:func:`choose_cases`' ``strategy="active"``: n cases drawn one at a time without replacement, each with a chance
    proportional to its probability among the cases left (``exclude``: labelled already, not drawn)."""
    q = _check_probabilities(probabilities, judge_index)
    if exclude is not None:
        q = q[~q.index.isin(pd.Index(exclude))]
    drawable = int((q > 0).sum())
    n = check_number(n, "n", low=1, high=max(drawable, 1), integer=True)
    if n > drawable:
        raise ValueError(f"`n` must be at most {drawable} (the cases with a positive probability); got {n}.")
    picks = _successive.successive_draws(q.to_numpy(), n, check_rng(rng))
    return pd.Index(q.index[picks], name="case_id")


def _design(frame: pd.DataFrame, human: pd.Series, probabilities: pd.Series):
    """The draw order (pilot first, then the draws in the order of ``human``), the weights and the labels."""
    q = _check_probabilities(probabilities, frame.index)
    check_unique_index(human.index, "human")
    if human.isna().any():
        raise ValueError(f"`human` has a missing label for case {show(human.index[human.isna().to_numpy()][0])}; with "
                         "`probabilities` every drawn case needs its label (a draw left unlabelled biases the "
                         "estimate): label it or leave it out of the draws.")
    unknown = ~_within(human.index, frame.index)
    if unknown.any():
        raise ValueError(f"`human` has {int(unknown.sum())} case id(s) that `judge` does not score, e.g. "
                         f"{human.index[unknown][:3].tolist()}.")
    X = frame.to_numpy(dtype=float)
    if np.isnan(X).any():
        raise ValueError(f"`judge` has no score for case {show(frame.index[np.isnan(X).any(axis=1)][0])}; with "
                         "`probabilities` every case needs one (the draws are made among them).")
    listed = _within(frame.index, q.index)
    labelled = _within(frame.index, human.index)
    orphan = ~listed & ~labelled
    if orphan.any():
        raise ValueError(f"case {show(frame.index[orphan][0])} has neither a probability nor a label: every case is "
                         "either in `probabilities` (it could be drawn) or labelled beforehand as part of a random pilot "
                         f"({int(orphan.sum())} case(s) are neither).")
    drawn = _within(human.index, q.index)
    impossible = drawn & (q.reindex(human.index).fillna(0).to_numpy() == 0)
    if impossible.any():
        raise ValueError(f"`human` labels case {show(human.index[impossible][0])}, whose probability is 0: it cannot "
                         "have been drawn.")
    order = np.concatenate([frame.index.get_indexer(human.index[~drawn]), frame.index.get_indexer(human.index[drawn])])
    weights = np.zeros(len(frame))
    weights[frame.index.get_indexer(q.index)] = q.to_numpy()
    y = np.full(len(frame), np.nan)
    y[frame.index.get_indexer(human.index)] = human.to_numpy(dtype=float)
    return X, y, order, weights, int((~drawn).sum())


def _bounds_for(bounds, labels: np.ndarray):
    """The labels' scale: ``bounds``, else (0, 1) for 0/1 labels. The judge's scale does not matter: its scores are
    put on the labels' scale by the line learned on the labels."""
    return _bounds(bounds, labels, np.array([]))


def active_table(judge, human: pd.Series, probabilities, *, methods, interval, confidence_level, bounds,
                 alternative: str = "two-sided", keep_se: bool = False) -> pd.DataFrame:
    """:func:`mean`'s table for labels drawn with ``probabilities`` (a pilot first, drawn uniformly, if any)."""
    frame, several = _features(judge)
    unsupported = [m for m in methods if m == "ppi"]
    if unsupported:
        raise ValueError("method='ppi' (the raw judge with weight 1) is not offered with `probabilities`: the judge's "
                         "scores are put on the labels' scale by a line learned on the labels; use method='ppi++'.")
    X, y, order, weights, pilot = _design(frame, human, probabilities)
    n = len(order)
    if n < 2:
        raise ValueError(f"`human` must hold at least 2 labels; got {n}.")
    scale = _bounds_for(bounds, y[order])
    resolved, why = _resolve_interval(interval, scale)
    rows, kept = [], {}
    for method in dict.fromkeys(list(methods) + (["classical"] if "ppi++" in methods else [])):
        if method == "judge":  # the judge's mean over exactly these cases: known, with no sampling error
            value = float(np.mean(X.mean(axis=1)))
            kept[method] = {"estimate": value, "ci_low": value, "ci_high": value, "n_labelled": n,
                            "n_unlabelled": len(X) - n, "lam": np.nan, "method": "judge", "interval": resolved,
                            "note": "the judge's mean over every case" + (" (the judges' plain average)" if several else ""),
                            "_se": 0.0, "_df": np.nan}
            continue
        features = X if method == "ppi++" else X[:, :0]
        steps = _successive.successive_steps(y, features, order, weights, bounds=scale, uniform_first=pilot)
        estimate, se = _successive.steps_estimate(steps)
        low, high, note = _interval_of(steps, estimate, se, n, resolved=resolved, why=why, bounds=scale,
                                       confidence_level=confidence_level, alternative=alternative)
        kept[method] = {"estimate": estimate, "ci_low": low, "ci_high": high, "n_labelled": n,
                        "n_unlabelled": len(X) - n, "lam": np.nan if method == "ppi++" else 0.0, "method": method,
                        "interval": resolved, "note": note, "_se": se, "_df": n - 1, "_steps": steps}
    for method in methods:
        row = dict(kept[method])
        if method == "ppi++" and alternative == "two-sided" and resolved == "betting":  # as the jury's (see there)
            classical = kept["classical"]
            width, narrow = row["ci_high"] - row["ci_low"], classical["ci_high"] - classical["ci_low"]
            if np.isfinite(narrow) and not (np.isfinite(width) and width <= narrow):
                row.update({k: classical[k] for k in ("estimate", "ci_low", "ci_high", "_se", "_df", "_steps")},
                           lam=0.0, note=FALLBACK_NOTE)
        rows.append(row)
    out = pd.DataFrame(rows)
    steps_used = list(out.pop("_steps")) if "_steps" in out.columns else [None] * len(out)
    out = out[COLUMNS + (["_se", "_df"] if keep_se else [])]
    beta = _jury.line(X[order], y[order])
    out.attrs.update(confidence_level=confidence_level, joint_confidence_level=None, adjust=None, interval=resolved,
                     population="finite", cluster=None, bounds=scale, design="successive", n_pilot=pilot,
                     weights=pd.Series(beta[1:], index=list(frame.columns), name="weight"))
    if keep_se:
        out.attrs["_steps"] = steps_used
    return out


def _interval_of(steps: dict, estimate: float, se: float, n: int, *, resolved: str, why: str, bounds,
                 confidence_level: float, alternative: str) -> tuple[float, float, str]:
    """``(ci_low, ci_high, note)`` of one method's successive estimate: the betting interval, or the large-sample
    one (NaN with a note and a warning below the labels it needs)."""
    if resolved == "betting":
        one_sided = confidence_level if alternative == "two-sided" else 1 - 2 * (1 - confidence_level)
        low, high = _successive.steps_betting(steps, bounds=bounds, confidence_level=one_sided)
        return ((low, np.inf) if alternative == "greater" else (-np.inf, high) if alternative == "less"
                else (low, high)) + (why,)
    if n < MIN_LARGE_SAMPLE:
        warn(f"mean with probabilities: {n} labels < {MIN_LARGE_SAMPLE}, no {resolved} interval (the "
                      "estimate stands, the interval is NaN with a note).")
        return np.nan, np.nan, "; ".join(p for p in (why, f"{n} labels < {MIN_LARGE_SAMPLE}: a large-sample interval "
                                                      "is not backed here; use interval='betting'") if p)
    if resolved == "t" and n < MIN_T_LABELS:
        warn(f"mean with probabilities: {_few_labels_note(n)} (the estimate stands, the interval is NaN "
                      "with a note).")
        return np.nan, np.nan, "; ".join(p for p in (why, _few_labels_note(n)) if p)
    if resolved == "t":
        low, high = _stats.skew_corrected_interval(estimate, se, _skewness(steps, se), n - 1, confidence_level,
                                                   alternative)
    else:
        low, high = _successive.t_interval(estimate, se, n - 1, confidence_level, alternative, kind=resolved)
    return low, high, why


def _skewness(steps: dict, se: float) -> float:
    """The skewness of Des Raj's estimate (the mean of the steps' values at lam = 1): ``m3 / (n^2 se^3)``, m3 the values'
    third central moment, for Hall's correction of the t interval."""
    z = steps["u"] + steps["v"]
    if not np.isfinite(se) or se <= 0:
        return 0.0
    return float(np.mean((z - z.mean()) ** 3) / (len(z) ** 2 * se**3))


def active_p_value(steps: dict, *, interval: str, bounds, estimate: float, se: float, df: float,
                   alternative: str) -> float:
    """The test of "the mean is 0" matching the row's interval (for :func:`difference`)."""
    from scipy import stats

    if interval == "betting":
        def excludes(alpha):
            level = 1 - alpha if alternative == "two-sided" else 1 - 2 * alpha
            below, above = _successive.steps_betting(steps, bounds=bounds, confidence_level=level, null=0.0)
            return {"two-sided": below or above, "greater": below, "less": above}[alternative]

        return _stats.betting_p_value(excludes, tol=1e-5)
    if not np.isfinite(se) or se <= 0:
        return np.nan
    if interval == "t":
        if len(steps["u"]) < MIN_T_LABELS:
            return np.nan
        return _stats.skew_corrected_p_value(estimate, se, _skewness(steps, se), df, alternative)
    z = estimate / se
    dist = stats.norm if interval == "clt" else stats.t(df)
    return float({"two-sided": 2 * dist.sf(abs(z)), "greater": dist.sf(z), "less": dist.cdf(z)}[alternative])


def active_sequence(judge, human: pd.Series, probabilities, *, method: str, bounds, confidence_level: float,
                    cases: pd.Index | None = None):
    """:func:`confidence_sequence`'s columns for labels drawn with ``probabilities``, in the order given: the running
    Des Raj estimate (pulled into the sequence where it falls outside it), the sequence's ends and the method used. The cases are ``judge``'s (or ``cases``, or, with
    neither, those ``probabilities`` names and the pilot's: the labelled cases it does not name)."""
    if method == "ppi":
        raise ValueError("method='ppi' (the raw judge with weight 1) is not offered with `probabilities`: the judge's "
                         "scores are put on the labels' scale by a line learned on the labels; use method='ppi++'.")
    if judge is not None:
        frame, _ = _features(judge)
    else:
        if cases is None:
            q_index = probabilities.index if isinstance(probabilities, pd.Series) else pd.Index([])
            cases = q_index.append(human.index[~_within(human.index, q_index)])
        frame = pd.DataFrame(index=cases)
    used = method if judge is not None and method == "ppi++" else "classical"
    X, y, order, weights, pilot = _design(frame, human, probabilities)
    drawn = _within(human.index, probabilities.index)
    late = np.flatnonzero(~drawn)
    if len(late) and late[-1] >= pilot:  # a pilot label after a drawn one: not the order the cases were drawn in
        case = human.index[late[late >= pilot][0]]
        raise ValueError(f"`human` gives the pilot case {show(case)} (a case `probabilities` does not name) after a case "
                         "drawn by the probabilities: the labels must be in the order the cases were drawn, the uniform "
                         "pilot first.")
    scale = _bounds_for(bounds, y[order])
    if scale is None:
        raise ValueError("confidence_sequence with `probabilities` needs the labels' scale: pass bounds=(low, high) "
                         "(0/1 labels are on [0, 1] without it).")
    features = X if used == "ppi++" else X[:, :0]
    steps = _successive.successive_steps(y, features, order, weights, bounds=scale, uniform_first=pilot)
    low, high = _successive.steps_sequence(steps, bounds=scale, confidence_level=confidence_level)
    z = steps["u"] + steps["v"]
    # Des Raj's running mean, pulled into the sequence where it falls outside (the sequence also uses what the labels
    # fix, so once every case is labelled it is the mean itself, and so is the estimate)
    estimate = np.clip(np.cumsum(z) / np.arange(1, len(z) + 1), low, high)
    return estimate, low, high, used
