"""mean, difference and pass_rate: the PPI and PPI++ estimates of one judge's cases, with active labelling and juries."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from evalkit import _stats
from evalkit._coerce import as_pass
from evalkit._validation import (
    as_clusters,
    check_columns,
    check_dataframe,
    check_level,
    check_option,
    check_unique_index,
    show,
    sorted_ids,
    warn,
)
from evalkit.infer._active import active_p_value, active_table
from evalkit.infer._engine import (
    FALLBACK_NOTE,
    INTERVALS,
    _align,
    _as_scores,
    _betting_rows,
    _bounds,
    _cluster_betting,
    _inference,
    _judge_scale,
    _methods,
    _segment_arrays,
)
from evalkit.infer._jury import _judge_frame, jury_p_value, jury_table


def mean(judge: pd.Series, human: pd.Series, *, method=None, interval: str = "auto", confidence_level: float = 0.95,
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
        offered with a jury. The coverage harness measures the default at 0.94-0.995 at 20-200 labels. The jury's
        ``"t"`` interval is Student's t with Hall's (1992) skewness correction (the estimate's skewness read from the
        out-of-fold residuals), given from 100 labels (``MIN_T_LABELS``; below, NaN with a note and a warning): plain
        Student's t covered 0.896 at 50 labels and 0.882 at 100 on a pass rate of 0.95, where the rare fails are
        too few for the residuals' spread; Hall's covers 0.93-0.97 at 100-200 labels on the harness's jury designs.
        The jury's t row is its own: it does not fall back to the humans-only t interval, which is the one that runs
        short there.
    human : Series
        The human labels of the labelled cases, on the same scale; its index must be a subset of ``judge``'s.
        The cases of ``judge`` it does not name are the unlabelled ones.
    method : str or list of str, optional
        The estimator. Default: ``"calibrated"``, the estimator of :func:`systems` on these cases (one segment, or
        each ``by`` segment a system): the judge's score calibrated to the labels by one cross-fitted isotonic map,
        the mean calibrated score rectified by the labels, with the calibrated t interval (``interval`` column
        ``calibrated-t``; where too few labels lie off the end of the scale, even pooled over segments, the whole
        row is the humans-only interval that holds at any n, and the note says so; see :func:`systems`). ``by=`` rows then carry
        ``rank_low, rank_high``, the ranks each segment could hold, jointly. Where an option asks for what only the
        PPI estimators offer (an ``interval`` by name, ``cluster``, ``finite_population``,
        ``adjust``, ``null``, ``probabilities`` or a jury) the default is ``"ppi++"``. By name: ``"ppi++"``
        (power-tuned lam, clipped to [0, 1]), ``"ppi"`` (lam = 1), ``"classical"`` (human labels only, lam = 0) or
        ``"judge"`` (the judge's mean over all cases with its sampling interval: what a judge-only report claims; it
        ignores the labels and is biased whenever the judge is).
    interval : {"auto", "betting", "clt", "t", "t-pseudo"}, default "auto"
        For ``"calibrated"``: its calibrated t. For the PPI methods: how the interval is made. ``"auto"`` is ``"betting"`` on a known scale (``bounds``, or 0/1 labels) and
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
        labels, and ``"t"``/``"clt"`` are the large-sample intervals on its martingale standard error (``"clt"``
        from ``MIN_LARGE_SAMPLE`` labels). ``"t"`` is Student's t with Hall's (1992) correction for the estimate's
        skewness (read from the Des Raj terms), given from 100 labels (``MIN_T_LABELS``; below, NaN with a note and a
        warning): on SummEval's consistency ratings, piled at 5, plain Student's t covered 0.895 at 50 labels and
        0.917 at 100 (the rare low ratings, weighted by their inverse probabilities, are the skewed terms it misses
        on), Hall's 0.94-0.95 at 100-200 (the coverage harness). ``human`` must hold every drawn case's label, in the
        order drawn. The methods
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
    0      ppi++     3.007   2.847    3.220  0.937  betting
    1  classical     3.100   2.822    3.399  0.000  betting
    2      judge     3.424   3.366    3.482    NaN        t

    The same labels as 30 whole items of 5 claims each (``cluster``): the interval is over items.

    >>> items = pd.Series(np.arange(2000) // 5, index=judge.index)
    >>> by_item = infer.mean(judge, human, method="classical", cluster=items, bounds=(1, 5))
    >>> by_item[["method", "estimate", "ci_low", "ci_high", "n_clusters", "interval"]].round(3)
          method  estimate  ci_low  ci_high  n_clusters         interval
    0  classical       3.1   2.828    3.434          30  cluster-betting
    """
    confidence_level = check_level(confidence_level)
    check_option(nan_policy, ["raise", "omit"], "nan_policy")
    check_option(interval, list(INTERVALS), "interval")
    options = {"interval": interval if interval != "auto" else None, "cluster": cluster,
               "finite_population": finite_population or None, "null": null, "adjust": adjust,
               "probabilities": probabilities, "judge": "a jury" if isinstance(judge, pd.DataFrame) else None}
    methods = _resolve_methods(method, options)
    if "calibrated" in methods:
        return _with_calibrated(methods, judge, human, by=by, bounds=bounds, confidence_level=confidence_level,
                                nan_policy=nan_policy, others=lambda rest: mean(
                                    judge, human, method=rest, interval=interval, confidence_level=confidence_level,
                                    by=by, bounds=bounds, nan_policy=nan_policy))
    if probabilities is not None or isinstance(judge, pd.DataFrame):
        return _designed(judge, human, probabilities, methods=methods, interval=interval,
                         confidence_level=confidence_level, by=by, adjust=adjust, null=null, cluster=cluster,
                         bounds=bounds, finite_population=bool(finite_population), nan_policy=nan_policy)
    judge, human = _as_scores(judge, "judge"), _as_scores(human, "human")
    return _inference(judge, human, methods=methods, interval=interval, confidence_level=confidence_level, by=by,
                      adjust=adjust, cluster=cluster, bounds=bounds, finite_population=bool(finite_population),
                      nan_policy=nan_policy, null=null)


def _resolve_methods(method, options: dict) -> list[str]:
    """The methods asked for; ``None`` is ``"calibrated"`` for the plain question and ``"ppi++"`` where an option
    asks for what only the PPI estimators offer (an interval by name, clusters, a jury, active labelling, ...)."""
    asked = {name: value for name, value in options.items() if value is not None}
    if method is None:
        return ["ppi++"] if asked else ["calibrated"]
    methods = _methods(method)
    if "calibrated" in methods and asked:
        name, value = next(iter(asked.items()))
        raise ValueError(f"method='calibrated' is not offered with {name}={show(value)}: its interval is the calibrated "
                         "t (interval='auto'); clusters, juries, active labelling, the finite population, selection "
                         "and one-sided tests are the PPI estimators' (method='ppi++').")
    return methods


def _with_calibrated(methods, judge, human, *, by, bounds, confidence_level, nan_policy, others) -> pd.DataFrame:
    """The calibrated rows (:func:`evalkit.infer.systems` on these cases, segments as systems) and the other methods'
    rows, in the order asked."""
    calibrated = _calibrated_mean(judge, human, by=by, bounds=bounds, confidence_level=confidence_level,
                                  nan_policy=nan_policy)
    rest = [m for m in methods if m != "calibrated"]
    if not rest:
        return calibrated
    other = others(rest)
    parts = [calibrated if m == "calibrated" else other[other["method"] == m] for m in methods]
    out = pd.concat(parts, ignore_index=True)
    out.attrs = dict(calibrated.attrs)
    return out


def _calibrated_mean(judge, human, *, by, bounds, confidence_level, nan_policy) -> pd.DataFrame:
    """:func:`mean`'s ``"calibrated"`` rows: one segment (or each of ``by``) as a system of
    :func:`evalkit.infer.systems`, its cases the judge's."""
    from evalkit.infer._engine import _codes
    from evalkit.infer._systems import systems

    judge, human = _as_scores(judge, "judge"), _as_scores(human, "human")
    y, positions, _, values = _align(judge, human, nan_policy)
    if len(y) < 2:
        raise ValueError(f"`human` must hold at least 2 labels (with a score and a label); got {len(y)}.")
    labels = np.full(len(values), np.nan)
    labels[positions] = y
    keep = ~np.isnan(values)
    if by is None:
        segment, name = np.zeros(len(values), dtype=np.int64), None
        names = pd.Index([0])
    else:
        segment, names = _codes(by, judge)
        name = names.name or "segment"
    ranks = sorted_ids(judge.index).get_indexer(judge.index)  # each case by its id, never by its row: the same folds
    frame = pd.DataFrame({"_segment": names[segment[keep]], "case_id": ranks[keep], "judge": values[keep],
                          "human": labels[keep]})
    table = systems(frame, system="_segment", judge="judge", human="human", bounds=bounds,
                    confidence_level=confidence_level)
    out = pd.DataFrame({"estimate": table["estimate"], "ci_low": table["ci_low"], "ci_high": table["ci_high"],
                        "n_labelled": table["n_labelled"], "n_unlabelled": table["n_cases"] - table["n_labelled"],
                        "lam": table["lam"], "method": table["method"], "interval": table["interval"],
                        "note": table["note"]})
    if by is not None:
        out.insert(0, name, table["_segment"].to_numpy())
        out["rank_low"], out["rank_high"] = table["rank_low"].to_numpy(), table["rank_high"].to_numpy()
    out.attrs.update(confidence_level=confidence_level, joint_confidence_level=None, adjust=None, interval="auto",
                     cluster=None, population="superpopulation", bounds=table.attrs["bounds"],
                     folds=table.attrs["folds"], increasing=table.attrs["increasing"])
    return out


def _designed(judge, human, probabilities, *, methods, interval, confidence_level, by, adjust, null, cluster, bounds,
              finite_population, nan_policy, alternative="two-sided", keep_se=False) -> pd.DataFrame:
    """:func:`mean` for a jury (a DataFrame judge) or for labels drawn with ``probabilities`` (active labelling)."""

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


def difference(judge_a: pd.Series, judge_b: pd.Series, human_a: pd.Series, human_b: pd.Series, *, method=None,
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
    confidence_level = check_level(confidence_level)
    check_option(alternative, ["two-sided", "greater", "less"], "alternative")
    check_option(nan_policy, ["raise", "omit"], "nan_policy")
    check_option(interval, list(INTERVALS), "interval")
    several = isinstance(judge_a, pd.DataFrame) or isinstance(judge_b, pd.DataFrame)
    options = {"interval": interval if interval != "auto" else None, "cluster": cluster,
               "finite_population": finite_population or None, "probabilities": probabilities,
               "alternative": alternative if alternative != "two-sided" else None, "judge": "a jury" if several else None}
    methods = _resolve_methods(method, options)
    if methods == ["calibrated"]:
        return _calibrated_difference(judge_a, judge_b, human_a, human_b, bounds=bounds,
                                      confidence_level=confidence_level, nan_policy=nan_policy)
    if "calibrated" in methods:
        raise ValueError("method='calibrated' is a difference of its own (every label of either system counts); ask "
                         "for it alone, and for the PPI methods in another call.")
    if several:

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
        warn(f"{set_aside} label(s) belong to cases labelled for only one system; a paired difference "
                      f"uses the {len(both)} cases labelled for both.")
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



def _calibrated_difference(judge_a, judge_b, human_a, human_b, *, bounds, confidence_level, nan_policy) -> pd.DataFrame:
    """:func:`difference`'s ``"calibrated"`` row: the two systems through :func:`evalkit.infer.system_differences`, on
    their shared cases, every label of either system counting."""
    from evalkit.infer._systems import system_differences

    ja, jb = _as_scores(judge_a, "judge_a"), _as_scores(judge_b, "judge_b")
    ha, hb = _as_scores(human_a, "human_a"), _as_scores(human_b, "human_b")
    for index, name in ((ha.index, "human_a"), (hb.index, "human_b"), (ja.index, "judge_a"), (jb.index, "judge_b")):
        check_unique_index(index, name)
    if len(ja) != len(jb) or not ja.index.isin(jb.index).all():
        raise ValueError("`judge_a` and `judge_b` must score the same cases (a paired comparison); they differ, e.g. "
                         f"{ja.index.symmetric_difference(jb.index)[:3].tolist()}.")
    parts = []
    ranks = sorted_ids(ja.index).get_indexer(ja.index)  # each case by its id, never by its row: the same folds
    for system, judged, labels, name in (("a", ja, ha, "human_a"), ("b", jb.reindex(ja.index), hb, "human_b")):
        y, positions, _, values = _align(judged, labels, nan_policy, name=name, judge_name=f"judge_{system}")
        full = np.full(len(values), np.nan)
        full[positions] = y
        parts.append(pd.DataFrame({"system": system, "case_id": ranks, "judge": values, "human": full}))
    frame = pd.concat(parts, ignore_index=True)
    scored = frame["judge"].notna().groupby(frame["case_id"]).transform("all")  # by both judges
    frame = frame[scored.to_numpy()]
    labelled = frame[frame["human"].notna()]["case_id"].nunique()
    if labelled < 2:
        raise ValueError(f"`human_a` and `human_b` label {labelled} case(s) both judges score; the calibration needs "
                         "labels on at least 2 cases.")
    table = system_differences(frame, baseline="b", bounds=bounds, confidence_level=confidence_level).iloc[0]
    cases = frame["case_id"].nunique()
    out = pd.DataFrame([{"estimate": table["estimate"], "ci_low": table["ci_low"], "ci_high": table["ci_high"],
                         "p_val": table["p_val"], "n_labelled": labelled, "n_unlabelled": cases - labelled,
                         "lam": np.nan, "method": "calibrated", "interval": table["interval"], "note": table["note"]}])
    out.attrs.update(confidence_level=confidence_level, interval="auto", alternative="two-sided", cluster=None,
                     population="superpopulation")
    return out


def _designed_difference(judge, human, probabilities, *, methods, interval, confidence_level, cluster, scale,
                         finite_population, nan_policy, alternative) -> pd.DataFrame:
    """:func:`difference` for a jury or for cases drawn with ``probabilities``: the table and each row's p-value."""

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


def pass_rate(results: pd.DataFrame, human: pd.Series, *, checks: pd.DataFrame | None = None, method=None,
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
    results : DataFrame, dict of DataFrame or list of DataFrame
        A results table (:func:`evalkit.judge.run_judge`); one estimate per ``(rubric, rubric_version, model)``.
        Several judges' results tables on the same cases are a jury: a dict ``{judge name: results table}``, or a
        list of tables each of one ``model`` (its name). Each judge's verdict counts 1 for a pass and 0 for a fail
        and :func:`mean` with the DataFrame of them (a column per judge) gives the estimate: the least-squares line
        of the labels on every judge's verdicts, cross-fitted on the labels (its betting interval bets, label by
        label, on the line through the earlier labels; on 0/1 labels the narrower of it and Clopper-Pearson), one
        row per ``(rubric, rubric_version)``, ``model`` naming the jury. A case any judge has an error on is left
        out (counted in ``n_error``); every judge must hold the same cases. ``attrs["weights"]`` is a DataFrame:
        ``rubric, rubric_version`` and each judge's slope in the line on every label (:func:`jury` gives each
        judge's agreement beside it). ``by``, ``adjust``, ``null`` and ``cluster`` are not offered with a jury.
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

    Three judges' verdicts on the same 600 cases, 150 of them labelled: a jury, each judge weighted by its slope.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.random(600) < 0.8
    >>> ids = [f"c{i}" for i in range(600)]
    >>> def judged(accuracy, model):
    ...     verdict = np.where(rng.random(600) < accuracy, truth, ~truth)
    ...     return pd.DataFrame({"case_id": ids, "rubric": "support", "rubric_version": "v1", "model": model,
    ...                          "verdict": np.where(verdict, "PASS", "FAIL"), "parsed": True, "error": None})
    >>> juries = {"large": judged(0.9, "l"), "small": judged(0.8, "s"), "tiny": judged(0.7, "t")}
    >>> labels = pd.Series(np.where(truth[:150], "PASS", "FAIL"), index=ids[:150])
    >>> table = infer.pass_rate(juries, labels, method=["ppi++", "classical"], interval="t")
    >>> table[["model", "method", "estimate", "ci_low", "ci_high"]].round(3)
                          model     method  estimate  ci_low  ci_high
    0  jury: large, small, tiny      ppi++     0.746   0.696    0.795
    1  jury: large, small, tiny  classical     0.727   0.655    0.799
    >>> table.attrs["weights"].round(2)
        rubric rubric_version  large  small  tiny
    0  support             v1   0.51   0.33  0.15
    """
    from evalkit._coerce import verdict_levels

    if isinstance(results, dict | list | tuple):
        return _jury_pass_rate(results, human, checks=checks, method=method, interval=interval,
                               confidence_level=confidence_level, by=by, adjust=adjust, null=null, cluster=cluster,
                               finite_population=finite_population, probabilities=probabilities)
    levels, passing = verdict_levels(check_dataframe(results, "results"))  # the rubric's, as judge.pass_rate reads them
    results = results.reset_index(drop=True)  # concatenated runs repeat labels
    results.attrs = {}  # a new frame: the rubric is read above, and pandas would copy the metadata at every step
    check_columns(results, ["case_id", "rubric", "rubric_version", "model", "verdict", "error"], "results")
    methods = method if method is None else _methods(method)
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


def _jury_tables(results) -> dict:
    """A jury's results tables by judge name: a dict as given, a list named by each table's one ``model``."""
    if isinstance(results, dict):
        if not results:
            raise ValueError("`results` is an empty dict: a jury needs at least one judge's results table.")
        tables = {}
        for name, table in results.items():
            tables[name] = check_dataframe(table, f"results[{name!r}]")
        return tables
    if not results:
        raise ValueError("`results` is an empty list: a jury needs at least one judge's results table.")
    tables = {}
    for i, table in enumerate(results):
        check_columns(check_dataframe(table, f"results[{i}]"), ["model"], f"results[{i}]")
        models = pd.unique(table["model"])
        if len(models) != 1:
            raise ValueError(f"`results[{i}]` holds {len(models)} models ({list(map(str, models[:3]))}); a list of "
                             "judges names each by its table's one model: pass a dict {judge name: results table}.")
        if models[0] in tables:
            raise ValueError(f"`results[{i}]` is model {show(models[0])} again; two judges need two names: pass a "
                             "dict {judge name: results table}.")
        tables[models[0]] = table
    return tables


def _jury_pass_rate(results, human, *, checks, method, interval, confidence_level, by, adjust, null, cluster,
                    finite_population, probabilities) -> pd.DataFrame:
    """:func:`pass_rate` for several judges' results tables on the same cases: mean's jury on their verdicts."""
    from evalkit._coerce import verdict_levels

    tables = _jury_tables(results)
    names = list(tables)
    for name, value in (("by", by), ("adjust", adjust), ("null", null), ("cluster", cluster)):
        if value is not None:
            raise ValueError(f"`{name}` is not offered with a jury (several results tables); got {name}={show(value)}. "
                             "Call pass_rate once per segment instead.")
    if checks is not None:
        check_columns(check_dataframe(checks, "checks"), ["all_passed"], "checks")
    levels = verdict_levels(tables[names[0]])
    scored = {name: _jury_scores(table, f"results[{name!r}]", checks) for name, table in tables.items()}
    labels = _as_scores(human, "human", levels=levels[0], pass_levels=levels[1])
    check_unique_index(labels.index, "human")
    parts, weights = [], []
    for (rubric, version), group in scored[names[0]].groupby(["rubric", "rubric_version"], sort=False, observed=True,
                                                             dropna=False):
        cases = pd.Index(group["case_id"])
        frame = _jury_frame(scored, rubric, version, cases)
        errored = frame.isna().any(axis=1).to_numpy()
        frame = frame[~errored]
        unknown = labels.index[~labels.index.isin(cases)]
        if len(unknown):
            raise ValueError(f"`human` has {len(unknown)} case id(s) that `results` does not hold, e.g. "
                             f"{unknown[:3].tolist()}.")
        kept = labels[labels.index.isin(frame.index)]
        drawn = probabilities[probabilities.index.isin(frame.index)] if isinstance(probabilities, pd.Series) \
            else probabilities
        table = mean(frame, kept, method=method, interval=interval, confidence_level=confidence_level, bounds=(0, 1),
                     finite_population=finite_population, probabilities=drawn)
        for column in ("ci_low", "ci_high"):
            table[column] = np.clip(table[column].to_numpy(), 0.0, 1.0)
        table.insert(0, "model", "jury: " + ", ".join(map(str, names)))
        table.insert(0, "rubric_version", version)
        table.insert(0, "rubric", rubric)
        table["n_error"] = int(errored.sum())
        parts.append(table)
        weights.append({"rubric": rubric, "rubric_version": version, **table.attrs["weights"].to_dict()})
    out = pd.concat(parts, ignore_index=True)
    out.attrs = {k: v for k, v in parts[0].attrs.items() if k != "weights"}
    out.attrs["weights"] = pd.DataFrame(weights)
    return out


def _jury_scores(table: pd.DataFrame, where: str, checks) -> pd.DataFrame:
    """One judge's results table of a jury, checked, with ``_score``: 1.0 for a PASS (and every code check passed),
    0.0 for a FAIL, NaN for a call that errored."""
    from evalkit._coerce import verdict_levels

    judge_levels, passing = verdict_levels(table)
    table = table.reset_index(drop=True)
    table.attrs = {}
    check_columns(table, ["case_id", "rubric", "rubric_version", "verdict", "error"], where)
    if table.empty:
        raise ValueError(f"`{where}` holds no row: every judge of a jury judges the same cases.")
    twice = table.duplicated(["case_id", "rubric", "rubric_version"]).to_numpy()
    if twice.any():
        raise ValueError(f"`{where}` has case_id {show(table['case_id'][twice].iloc[0])} more than once for rubric "
                         f"{show(table['rubric'][twice].iloc[0])}; each judge judges each case once per rubric.")
    ok = table["error"].isna().to_numpy()
    passed = pd.Series(False, index=table.index)
    passed[ok] = as_pass(table["verdict"][ok], where, levels=judge_levels,
                         pass_levels=passing).fillna(False).to_numpy(dtype=bool)
    if checks is not None:
        status = checks["all_passed"].reindex(table["case_id"].to_numpy())
        if status.isna().any():
            raise ValueError(f"`checks` has no row for case(s) {table['case_id'][status.isna().to_numpy()][:3].tolist()}"
                             f" of {where}; run the checks on every judged output.")
        passed &= status.to_numpy(dtype=bool)
    return table.assign(_score=np.where(ok, passed.astype(float), np.nan))


def _jury_frame(scored: dict, rubric, version, cases: pd.Index) -> pd.DataFrame:
    """The judges' scores of one rubric version, a column per judge and a row per case of the first judge (whose
    cases every other judge must hold, no more and no fewer)."""
    names = list(scored)
    columns = {}
    for name, table in scored.items():
        mine = table[(table["rubric"] == rubric) & (table["rubric_version"] == version)]
        other = pd.Index(mine["case_id"])
        if len(other) != len(cases) or (cases.get_indexer(other) < 0).any():
            missing = cases.difference(other)[:3].tolist() or other.difference(cases)[:3].tolist()
            raise ValueError(f"the judges' results tables must hold the same cases for rubric {show(rubric)} "
                             f"({version}); `results[{name!r}]` differs from `results[{names[0]!r}]`, e.g. case(s) "
                             f"{missing}.")
        columns[name] = mine.set_index("case_id")["_score"].reindex(cases)
    frame = pd.DataFrame(columns, index=cases)
    frame.index.name = None
    return frame
