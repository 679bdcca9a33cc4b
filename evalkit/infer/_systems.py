"""Several systems at once: one judge -> label calibration learned from every system's labels, each system's estimate
rectified by its own labels, and paired differences on the shared cases."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from evalkit._stats import calibration as _calibration
from evalkit._validation import (
    check_columns,
    check_dataframe,
    check_level,
    check_number,
    check_option,
    id_order,
    show,
    warn,
)
from evalkit.infer._engine import ADJUST, _as_scores

#: Below this many labels a system's interval is not given (NaN and a note): the coverage harness measures the
#: calibrated t from 20 labels per system on.
MIN_SYSTEM_LABELS = 10
#: Below this many labels a system's transport check (is the shared calibration unbiased on its own labels?) is
#: said to be too weak to tell.
MIN_TRANSPORT_LABELS = 10
#: See ``evalkit._stats.calibration.MIN_OFF_END``: a system whose labels hold fewer than these off the end of the
#: labels' range has its residual variance floored (``evalkit._stats.calibration._floor_added``); where every system's labels
#: together hold fewer, the row is the humans-only interval that holds at any n (Clopper-Pearson; the betting interval
#: on the scale).
MIN_OFF_END = _calibration.MIN_OFF_END
SYSTEM_INTERVALS = ("auto", "t")
SYSTEM_COLUMNS = ["system", "estimate", "ci_low", "ci_high", "rank_low", "rank_high", "n_labelled", "n_cases",
                  "calibrated_mean", "lam", "correction", "transport_p", "method", "interval", "note"]
DIFFERENCE_COLUMNS = ["system_a", "system_b", "estimate", "ci_low", "ci_high", "p_val", "n_cases", "n_labelled_a",
                      "n_labelled_b", "n_labelled_both", "method", "interval", "note"]


def _responses(responses, system, case, judge, human, bounds):
    """The checked long table as codes and arrays, the scale, and the names of the systems."""
    responses = check_dataframe(responses, "responses")
    check_columns(responses, [system, case, judge, human], "responses")
    if responses.empty:
        raise ValueError("`responses` is empty.")
    repeated = responses.duplicated([system, case])
    if repeated.any():
        row = responses[repeated].iloc[0]
        raise ValueError(f"`responses` has system {show(row[system])} on case {show(row[case])} more than once; each "
                         "system answers each case once.")
    for column in (system, case):
        if responses[column].isna().any():
            raise ValueError(f"`responses` column {column!r} has missing values; every response needs its {column}.")
    scores = _as_scores(responses[judge].reset_index(drop=True), f"responses[{judge!r}]")
    if scores.isna().any():
        raise ValueError(f"`responses` column {judge!r} has {int(scores.isna().sum())} missing judge score(s); every "
                         "response needs one (drop the others).")
    labels = _as_scores(responses[human].reset_index(drop=True), f"responses[{human!r}]")
    if labels.notna().sum() < 2:
        raise ValueError(f"`responses` column {human!r} holds {int(labels.notna().sum())} label(s); the calibration "
                         "needs at least 2.")
    y = labels.to_numpy(dtype=float)
    seen = y[~np.isnan(y)]
    if responses[case][labels.notna().to_numpy()].nunique() < 2:
        raise ValueError(f"`responses` column {human!r} labels one case only; the cross-fitted calibration needs labels "
                         "on at least 2 cases.")
    if bounds is None:
        scale = (0.0, 1.0) if np.isin(seen, (0.0, 1.0)).all() else None
    else:
        try:
            scale = tuple(float(v) for v in bounds)
        except (TypeError, ValueError):
            raise ValueError(f"`bounds` must be a pair (low, high) of the labels' scale, e.g. (1, 5); got {bounds!r}.") from None
        if len(scale) != 2 or not scale[0] < scale[1]:
            raise ValueError(f"`bounds` must be a pair with low < high; got {bounds!r}.")
        if seen.min() < scale[0] or seen.max() > scale[1]:
            raise ValueError(f"`responses` column {human!r} has labels outside `bounds` {bounds!r} (from "
                             f"{seen.min():g} to {seen.max():g}).")
    systems, names = pd.factorize(responses[system], sort=True)
    cases = pd.factorize(responses[case], sort=True)[0]
    return systems, cases, scores.to_numpy(dtype=float), y, scale, pd.Index(names, name=system)


def _interval(fit, weights, scale, confidence_level, low_end, high_end):
    """A contrast's estimate, interval and p-value (against 0) by the calibrated t, clipped to the contrast's range."""
    estimate, variance, df = _calibration.contrast_variance(fit, weights, bounds=scale)
    centre = estimate  # the pseudo-residuals' shift is in the estimate returned; the reported one is unshifted
    raw = float(np.dot(weights, fit["estimate"]))
    se = np.sqrt(variance)
    if not (np.isfinite(se) and np.isfinite(df)):
        return raw, np.nan, np.nan, np.nan
    half = float(stats.t.ppf(0.5 + confidence_level / 2, df)) * se
    low, high = centre - half, centre + half
    if scale is not None:
        low, high = max(low, low_end), min(high, high_end)
    p = float(2 * stats.t.sf(abs(centre) / se, df)) if se > 0 else (0.0 if centre != 0 else 1.0)
    return raw, low, high, p


def systems(responses: pd.DataFrame, *, system: str = "system", case: str = "case_id", judge: str = "judge",
            human: str = "human", bounds=None, confidence_level: float = 0.95, interval: str = "auto",
            folds: int = _calibration.FOLDS) -> pd.DataFrame:
    """Every system's mean label from a judge on all its cases and human labels on a few, with one calibration.

    The judge scored every response; humans labelled some responses of each system. A monotone (isotonic) map from
    the judge's score to the expected label is learned from every label of every system, cross-fitted in ``folds``
    folds of whole cases (all labels of a case in one fold), and each system's estimate is its mean calibrated score
    over its cases plus the mean residual of its own labels (label minus the out-of-fold calibrated score):
    cross-prediction-powered inference with a calibrated predictor, the estimate CJE's direct mode makes, with the
    calibrated scores weighted by PPI++'s lam in [0, 1] per system (so a judge that tells little about a system's
    labels costs little over its labels alone). It is unbiased for the system's mean label whatever the calibration
    does; pooling every system's labels into one calibration is what narrows it. Labels need not fall on the same
    cases for every system.

    The interval (``"t"``, the default) is Student's t on the cluster-robust variance by case (the calibrated scores
    over every case, the residuals over the system's labels and their cross term) plus the delete-one-fold jackknife
    of the calibration (its own uncertainty, as CJE's oracle jackknife), on Welch-Satterthwaite degrees of freedom;
    on a known scale (``bounds``, or 0/1 labels) every system's residuals also take a twentieth of a pseudo-residual
    at each end of the scale (a small-sample guard; see ``evalkit._stats.calibration.PSEUDO_WEIGHT``) and the interval
    is clipped to the scale. A system whose labels hold fewer than ``MIN_OFF_END`` off the end of the labels' range
    where most lie (fewer than 5 of the rarer class of 0/1 labels, or off the end of a longer scale) has its
    residuals' variance floored by a variance model fitted on every system's labels (``kappa (g - lo) (hi - g)`` at
    its calibrated scores ``g``, ``lo, hi`` the labels' range: see ``evalkit._stats.calibration._thin_ends``; for a
    mean, at least its own labels' variance by Laplace's rule of succession; a paired difference takes none on a
    known scale, where the pseudo-residuals are its guard, and the model's for its thin systems together without
    one) and ``lam = 1``; where every system's labels together hold that few,
    nothing measures the spread and the row is the humans-only interval that holds at any n (Clopper-Pearson, or the
    betting interval on the scale) with ``lam = 0`` and a note (a difference switches only where every label is at
    one value: see :func:`system_differences`). It is a large-sample interval, not a finite-sample
    one: the coverage harness measures it at 20-50 labels per system on SummEval, USR and the arena votes (``python
    benchmarks/bench_systems.py`` prints coverage and width beside CJE's and ppi_py's on the same draws). A system with fewer than ``MIN_SYSTEM_LABELS``
    labels gets no interval (NaN and a note).

    Each system's own labels also test the shared calibration on it (``transport_p``: the t-test that its residuals
    have mean 0): a small p-value says the judge relates to the labels differently for this system (its estimate is
    still corrected by its labels; an estimate without labels would not be), the number to watch when a system or
    the judge changes.

    Parameters
    ----------
    responses : DataFrame
        One row per system and case: the ``system``, the ``case`` (the prompt, shared across systems), the
        ``judge``'s score (a number, PASS/FAIL or boolean) and the ``human`` label (a number, PASS/FAIL or boolean;
        NaN where the response is unlabelled). The labelled responses of each system must be a random sample of its
        responses.
    system, case, judge, human : str
        The columns.
    bounds : (float, float), optional
        The labels' scale, e.g. ``(1, 5)``: the pseudo-residuals and the clipping use it. Default: (0, 1) for 0/1
        labels, else none (plain t, unclipped).
    confidence_level : float, default 0.95
    interval : {"auto", "t"}, default "auto"
    folds : int, default 5
        Folds of the cross-fitted calibration (fewer when fewer cases are labelled).

    Returns
    -------
    DataFrame
        One row per system: ``system, estimate, ci_low, ci_high, n_labelled, n_cases, calibrated_mean, lam,
        correction, transport_p, method, interval, note`` (``calibrated_mean``: the mean calibrated score; ``lam``: the
        weight it gets, PPI++'s, in [0, 1]; ``correction``: the mean of the labels less lam times their out-of-fold
        calibrated scores; the estimate is ``lam * calibrated_mean + correction``). ``attrs`` hold ``confidence_level``, ``bounds``, ``folds``, ``increasing`` (the
        calibration's direction, from the labels' Spearman correlation with the scores) and ``n_labels``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> quality = {"a": 3.2, "b": 3.6, "c": 4.1}
    >>> rows = []
    >>> for name, mu in quality.items():
    ...     truth = np.clip(np.round(rng.normal(mu, 0.8, 300)), 1, 5)
    ...     score = np.clip(truth / 5 + rng.normal(0, 0.08, 300), 0, 1)  # a judge on [0, 1]
    ...     labelled = rng.random(300) < 0.1
    ...     rows += [{"system": name, "case_id": i, "judge": score[i], "human": truth[i] if labelled[i] else np.nan}
    ...              for i in range(300)]
    >>> table = infer.systems(pd.DataFrame(rows), bounds=(1, 5))
    >>> table[["system", "estimate", "ci_low", "ci_high", "n_labelled"]].round(2)
      system  estimate  ci_low  ci_high  n_labelled
    0      a      3.05    2.84     3.27          23
    1      b      3.52    3.34     3.70          30
    2      c      4.03    3.85     4.20          35
    """
    confidence_level = check_level(confidence_level)
    check_option(interval, list(SYSTEM_INTERVALS), "interval")
    folds = check_number(folds, "folds", low=2, integer=True)
    codes, cases, f, y, scale, names = _responses(responses, system, case, judge, human, bounds)
    fit = _calibration.calibrated_ppi(codes, cases, f, y, n_systems=len(names), folds=folds)
    low_end, high_end = scale if scale is not None else (-np.inf, np.inf)
    rows = []
    for s, name in enumerate(names):
        weights = np.zeros(len(names))
        weights[s] = 1.0
        n = int(fit["n"][s])
        estimate, low, high, _ = _interval(fit, weights, scale, confidence_level, low_end, high_end)
        row = {"system": name, "estimate": estimate, "ci_low": low, "ci_high": high, "n_labelled": n,
               "n_cases": int(fit["rows"][s]), "calibrated_mean": float(fit["calibrated_mean"][s]),
               "lam": float(fit["lam"][s]), "correction": float(fit["resid_mean"][s]) if n else np.nan,
               "method": "calibrated", "interval": "calibrated-t", "note": ""}
        if n < MIN_SYSTEM_LABELS:
            row.update(ci_low=np.nan, ci_high=np.nan,
                       note=f"{n} label(s) < {MIN_SYSTEM_LABELS}: no interval (the calibrated mean alone rests on the "
                            "shared calibration holding for this system, which its labels cannot check)")
        else:
            own = np.flatnonzero((codes == s) & fit["labelled"])
            own = own[id_order(responses[case].iloc[own])]  # the betting interval takes them in the ids' order
            row.update(_off_end_fallback(y[own], scale, confidence_level, fit, s))
        transport_p, transport_note = _transport(fit, s, n)
        row.update(transport_p=transport_p, note="; ".join(part for part in (row["note"], transport_note) if part))
        rows.append(row)
    table = pd.DataFrame(rows)
    table["rank_low"], table["rank_high"] = _ranks(fit, y, table, scale, confidence_level)
    table = table[SYSTEM_COLUMNS].rename(columns={"system": names.name or "system"})
    _warn_notes(table, "systems")
    table.attrs.update(confidence_level=confidence_level, bounds=scale, folds=fit["folds"],
                       increasing=fit["increasing"], n_labels=int(fit["labelled"].sum()), cluster=case,
                       rank_confidence_level=confidence_level)
    return table


def _humans_only(labels: np.ndarray, scale, confidence_level: float) -> tuple[float, float, str]:
    """The interval of a system's labels alone that holds at any n: Clopper-Pearson for 0/1 labels, else the betting
    interval on the scale."""
    from evalkit import _stats
    from evalkit.infer._engine import _betting_order

    if scale == (0.0, 1.0) and bool(np.isin(labels, (0.0, 1.0)).all()):
        low, high = _stats.clopper_pearson(float(labels.sum()), float(len(labels)), confidence_level)
        return float(low), float(high), "clopper-pearson"
    low, high = _stats.betting_interval(labels[_betting_order(len(labels))], *scale, confidence_level=confidence_level,
                                        theta_range=scale)
    return float(low), float(high), "betting"


def _off_end_fallback(labels: np.ndarray, scale, confidence_level: float, fit: dict, s: int) -> dict:
    """Where a system's labels hold too few off the end of the labels' range where most lie and every system's labels
    together hold too few as well (``MIN_OFF_END``), the humans-only interval that holds at any n replaces the whole
    row (estimate, lam, interval, note); else nothing."""
    if scale is None or not len(labels) or not fit["thin"][s] or int(fit["pooled_off"][s]) >= MIN_OFF_END:
        return {}
    low, high, name = _humans_only(labels, scale, confidence_level)
    mean = float(labels.mean())
    near = scale[0] if mean - scale[0] < scale[1] - mean else scale[1]
    end = "rarer class" if name == "clopper-pearson" else "end of the scale"
    return {"estimate": mean, "ci_low": low, "ci_high": high, "lam": 0.0, "correction": mean, "method": "classical",
            "interval": name, "note": f"{int(np.sum(labels != near))} of {len(labels)} labels off the {end} at {near:g} "
                                      f"(< {MIN_OFF_END}), {int(fit['pooled_off'][s])} of every system's together: the "
                                      f"calibrated t does not hold here, so the humans-only {name} interval (valid at "
                                      "any n) replaces the row"}


def _pair(fit: dict, y: np.ndarray, scale, confidence_level: float, a: int, b: int) -> dict:
    """The difference of systems a and b (A - B): estimate, interval, p-value, method, interval's name and note.

    The calibrated t on the paired contrast; where every system's labels are at one value (on a known scale),
    nothing measures the spread or the calibration, and the humans-only difference replaces it: the two systems'
    humans-only intervals at ``1 - alpha / 2`` each, ``[low_a - high_b, high_a - low_b]`` (valid at any n whether or
    not their labels share cases, by Bonferroni; both hold the labels' one value, so it holds 0 at every level and
    its p-value is 1). A difference does not take a mean's switch (``_off_end_fallback``: a system thin at its end
    with every system's labels): that switch made the 0/1 differences at 3% 1.5-1.9x CJE's width at 20-30 labels per
    system where the calibrated t held, and on a pair 1% and 9% apart the calibrated t held once any label showed the
    rarer class (``python benchmarks/bench_coverage.py --function infer.system_differences --design far-apart``)."""
    weights = np.zeros(len(fit["n"]))
    weights[a], weights[b] = 1.0, -1.0
    span = np.inf if scale is None else scale[1] - scale[0]
    labels = [y[(fit["systems"] == s) & fit["labelled"]] for s in (a, b)]
    pooled = y[fit["labelled"]]
    if scale is None or np.ptp(pooled) > 0 or min(len(v) for v in labels) < 1:
        estimate, low, high, p = _interval(fit, weights, scale, confidence_level, -span, span)
        return {"estimate": estimate, "ci_low": low, "ci_high": high, "p_val": p, "method": "calibrated",
                "interval": "calibrated-t", "note": ""}
    (low_a, high_a, name), (low_b, high_b, _) = (_humans_only(v, scale, 1 - (1 - confidence_level) / 2)
                                                 for v in labels)
    return {"estimate": 0.0, "ci_low": low_a - high_b, "ci_high": high_a - low_b, "p_val": 1.0, "method": "classical",
            "interval": name,
            "note": f"every system's {len(pooled)} labels at {pooled[0]:g}: nothing measures the spread, so the two "
                    f"systems' humans-only {name} intervals at 1 - alpha/2 each (valid at any n) give the difference"}


def _ranks(fit: dict, y: np.ndarray, table: pd.DataFrame, scale, confidence_level: float
           ) -> tuple[np.ndarray, np.ndarray]:
    """The ranks each system could hold (1: the highest mean), jointly at ``confidence_level``: every pair's
    interval of the difference (:func:`system_differences`') at ``1 - alpha / pairs`` (Bonferroni), a system placed
    below another where their difference's interval excludes 0. All the rank sets hold together when every pair's
    interval does."""
    k = len(table)
    pairs = k * (k - 1) // 2
    above = np.zeros((k, k), dtype=bool)  # above[i, j]: system i surely has the higher mean
    if pairs:
        level = 1 - (1 - confidence_level) / pairs
        enough = fit["n"] >= MIN_SYSTEM_LABELS
        for i in range(k):
            for j in range(i + 1, k):
                if not (enough[i] and enough[j]):
                    continue
                pair = _pair(fit, y, scale, level, i, j)
                above[i, j], above[j, i] = bool(pair["ci_low"] > 0), bool(pair["ci_high"] < 0)
    rank_low = 1 + above.sum(axis=0)
    rank_high = k - above.sum(axis=1)
    return rank_low, rank_high


def _transport(fit: dict, s: int, n: int) -> tuple[float, str]:
    """The t-test that system s's residuals (its labels against the shared calibration) have mean 0, and its note."""
    if n < MIN_TRANSPORT_LABELS:
        return np.nan, (f"{n} label(s): too few to check the shared calibration on this system" if n else
                        "no label of its own: the shared calibration cannot be checked on it")
    r = fit["against_calibration"][(fit["systems"] == s) & fit["labelled"]]
    if np.ptp(r) == 0:
        p = 1.0 if r[0] == 0 else 0.0
    else:
        p = float(stats.ttest_1samp(r, 0.0).pvalue)
    note = ""
    if p < 0.05:
        note = (f"the shared calibration is off by {r.mean():+.3g} on this system's labels (p = {p:.2g}): the judge "
                "relates to the labels differently here (the estimate is corrected by these labels)")
    return p, note


def _warn_notes(table: pd.DataFrame, what: str) -> None:
    missing = table[table["ci_low"].isna()]
    if len(missing):
        warn(f"{what}: no interval for {missing.iloc[:, 0].tolist()[:5]} ({missing['note'].iloc[0]}).")


def system_differences(responses: pd.DataFrame, *, system: str = "system", case: str = "case_id", judge: str = "judge",
                       human: str = "human", baseline=None, bounds=None, confidence_level: float = 0.95,
                       interval: str = "auto", adjust: str | None = None, folds: int = _calibration.FOLDS
                       ) -> pd.DataFrame:
    """Paired differences between systems' mean labels (A - B), with the calibration of :func:`systems`.

    ``A - B`` is the difference of their mean calibrated scores over the cases both answered (paired by case) plus
    the difference of their labels' mean residuals. Each system's labels may fall on cases of its own: only the
    calibrated scores need shared cases, so a system's labels count whether or not the other system was labelled on
    the same cases (where both were, the covariance of their residuals is kept). The interval is :func:`systems`'
    calibrated t on the difference, cluster-robust by case; ``p_val`` is its t-test of no difference. Where every
    system's labels are at one value (on a known scale), nothing measures the spread: the row is the two systems'
    humans-only intervals at ``1 - alpha / 2`` each combined, ``[low_a - high_b, high_a - low_b]`` (valid at any n),
    with ``p_val`` 1 and a note. A difference keeps the calibrated t where a system's mean switches to its humans-only
    interval (fewer than ``MIN_OFF_END`` labels off the end in every system's together): on a pair at 1% and 9% the
    calibrated t of the difference held once any label showed the rarer class, and the switch cost 1.5-1.9x the
    width at 20-30 labels on 0/1 labels at 3%.

    Parameters
    ----------
    responses, system, case, judge, human, bounds, confidence_level, interval, folds
        As in :func:`systems`.
    baseline : optional
        A system: compare every other one with it (``system_a`` the other, ``system_b`` the baseline). Default: every
        pair of systems, in the order of their names.
    adjust : {None, "bonferroni", "holm", "bh", "by"}, default None
        A multiplicity adjustment of the p-values (column ``p_adjusted``) over the pairs; with ``"bonferroni"`` or
        ``"holm"`` the intervals are Bonferroni's, simultaneous for every pair.

    Returns
    -------
    DataFrame
        One row per pair: ``system_a, system_b, estimate, ci_low, ci_high, p_val, n_cases, n_labelled_a,
        n_labelled_b, n_labelled_both, method, interval, note`` (and ``p_adjusted`` with ``adjust``); ``n_cases``
        counts the cases both answered, ``n_labelled_both`` those labelled for both.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(1)
    >>> base = rng.normal(0, 1, 400)  # how hard each case is, shared by both systems
    >>> rows = []
    >>> for name, shift in (("v1", 0.0), ("v2", 0.3)):
    ...     truth = base + shift + rng.normal(0, 0.5, 400)
    ...     labelled = rng.random(400) < 0.1  # each system's labels on cases of its own
    ...     rows += [{"system": name, "case_id": i, "judge": truth[i] + rng.normal(0, 0.4),
    ...               "human": truth[i] if labelled[i] else np.nan} for i in range(400)]
    >>> diff = infer.system_differences(pd.DataFrame(rows), baseline="v1")
    >>> diff[["estimate", "ci_low", "ci_high", "n_labelled_a", "n_labelled_b", "n_labelled_both"]].round(2)
       estimate  ci_low  ci_high  n_labelled_a  n_labelled_b  n_labelled_both
    0      0.17   -0.04     0.39            45            30                4

    Only 4 cases are labelled for both systems; every label counts.
    """
    confidence_level = check_level(confidence_level)
    check_option(interval, list(SYSTEM_INTERVALS), "interval")
    check_option(adjust, list(ADJUST), "adjust")
    folds = check_number(folds, "folds", low=2, integer=True)
    codes, cases, f, y, scale, names = _responses(responses, system, case, judge, human, bounds)
    if len(names) < 2:
        raise ValueError(f"`responses` has one system ({names[0]!r}); a difference needs two.")
    if baseline is None:
        pairs = [(a, b) for a in range(len(names)) for b in range(a + 1, len(names))]
    else:
        if baseline not in set(names):
            raise ValueError(f"`baseline` {baseline!r} is not a system of `responses`; its systems are {list(names)[:10]}.")
        base = names.get_loc(baseline)
        pairs = [(a, base) for a in range(len(names)) if a != base]
    level = confidence_level if adjust not in ("bonferroni", "holm") else 1 - (1 - confidence_level) / len(pairs)
    fit = _calibration.calibrated_ppi(codes, cases, f, y, n_systems=len(names), folds=folds)
    labelled_cases = [set(cases[(codes == s) & fit["labelled"]]) for s in range(len(names))]
    answered = [set(cases[codes == s]) for s in range(len(names))]
    rows = []
    for a, b in pairs:
        pair = _pair(fit, y, scale, level, a, b)
        n_a, n_b = int(fit["n"][a]), int(fit["n"][b])
        if min(n_a, n_b) < MIN_SYSTEM_LABELS:
            pair.update(ci_low=np.nan, ci_high=np.nan, p_val=np.nan,
                        note=f"fewer than {MIN_SYSTEM_LABELS} labels for {names[a] if n_a < n_b else names[b]!r}: no "
                             "interval")
        rows.append({"system_a": names[a], "system_b": names[b], **pair, "n_cases": len(answered[a] & answered[b]),
                     "n_labelled_a": n_a, "n_labelled_b": n_b,
                     "n_labelled_both": len(labelled_cases[a] & labelled_cases[b])})
    table = pd.DataFrame(rows, columns=DIFFERENCE_COLUMNS)
    if adjust is not None:
        from evalkit._stats import adjust_p_values

        table.insert(6, "p_adjusted", adjust_p_values(table["p_val"].to_numpy(dtype=float), adjust))
    _warn_notes(table, "system_differences")
    table.attrs.update(confidence_level=level, joint_confidence_level=confidence_level if adjust in ("bonferroni", "holm")
                       else None, adjust=adjust, bounds=scale, folds=fit["folds"], increasing=fit["increasing"],
                       cluster=case)
    return table
