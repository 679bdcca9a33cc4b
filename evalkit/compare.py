"""Paired comparison of runs on the same cases (two prompts, models or rubric versions), and how many cases
a comparison needs.

Two runs on the same cases differ only where a case's verdict changed, so the comparison counts the flips:
the change in pass rate (b - a) with Newcombe's hybrid score interval, the exact McNemar test on the flips, and for
numeric scores the mean paired difference with a finite-sample betting interval and a sign-flip test.
The planners say, before any run, the smallest change an exact McNemar test on n cases detects and how
many cases a change of a given size needs. :func:`against_baseline` compares many runs (versions x rubrics
x segments) against one baseline in one table, with adjusted p-values.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd
from scipy import optimize

from evalkit import _display, _stats
from evalkit._coerce import as_pass, judge_verdicts, verdict_levels
from evalkit._stats import (
    ADJUSTMENTS,
    MEAN_METHODS,
    cluster_difference_interval,
    integer_sign_flip_p,
    mcnemar_exact_p,
    mcnemar_power,
    mean_interval,
    newcombe_paired_interval,
    sign_flip_p,
    tango_interval,
)
from evalkit._stats import adjust_p_values as _adjust
from evalkit._tables import epoch_column
from evalkit._validation import (
    align_ids,
    as_clusters,
    check_columns,
    check_dataframe,
    check_level,
    check_number,
    check_option,
    check_unique_index,
    id_order,
    order_seed,
    show,
    sorted_ids,
    warn,
)

__all__ = ["PairedComparison", "paired", "detectable_difference", "cases_needed", "against_baseline", "adjust_p_values"]

#: Interval methods for a difference in pass rates (default first).
RATE_METHODS = ("newcombe", "tango")
#: Interval methods for a mean difference of numeric scores (default first).
SCORE_METHODS = MEAN_METHODS
_METHOD_NAMES = {"tango": "Tango score", "newcombe": "Newcombe hybrid score (method 10)",
                 "betting": "betting (Waudby-Smith & Ramdas)", "t": "Student t", "bootstrap": "BCa bootstrap",
                 "cluster-betting": "betting over whole clusters"}
_RATE_TEST, _SCORE_TEST = "exact McNemar", "sign-flip permutation"
_CLUSTER_RATE_TEST, _CLUSTER_SCORE_TEST = "exact sign-flip over clusters", "sign-flip permutation over clusters"


@dataclass(frozen=True)
class PairedComparison:
    """Result of :func:`paired`.

    Attributes
    ----------
    n : int
        Cases with a verdict (or score) in both runs.
    table : DataFrame
        Verdicts: counts of verdict pairs (rows: run a, columns: run b); 2 x 2 for PASS/FAIL. Scores: mean,
        sd, min and max of a, b and b - a.
    p_val : float
        Verdicts: exact McNemar test (two-sided binomial test on the cases that went from pass to fail or
        back), with the rubric's pass levels deciding what passes. Scores: two-sided sign-flip permutation
        test of the mean difference (the runs exchangeable within each case). With clusters, the sign-flip test
        of the clusters' totals of change (the runs exchangeable within each cluster), exact for verdicts.
        ``test`` names it.
    agreement, kappa : float
        Share of unchanged verdicts (scores) and Cohen's kappa between the runs (NaN for scores).
    rate_a, rate_b : float
        Share of passing verdicts in each run (the mean score, for scores).
    flips : DataFrame
        The cases whose verdict (score) changed: ``case_id, a, b`` and, from results tables,
        ``reason_a, reason_b``.
    kind : str
        ``"pass rate"`` or ``"mean score"``.
    difference, ci_low, ci_high : float
        ``rate_b - rate_a`` and its interval at ``confidence_level``, made by ``method``.
    method : str
        The interval's method: ``"newcombe"`` (default for pass rates) or ``"tango"``; ``"betting"``
        (default for scores), ``"t"`` or ``"bootstrap"``; ``"cluster-betting"`` with clusters.
    confidence_level : float
    test : str
        ``"exact McNemar"`` or ``"sign-flip permutation"``; with clusters ``"exact sign-flip over clusters"`` or
        ``"sign-flip permutation over clusters"``.
    discordant : float
        Share of cases whose pass/fail verdict flipped (the planners' ``discordant``); NaN for scores.
    cluster : str or None
        The clusters the interval and the test are over: a column name (given, or a log's epochs found in the
        tables), ``"given"`` (a Series or sequence), or None (every case independent).
    n_clusters : int or None
        Clusters with a case in both runs (None without clusters).
    judge_change : tuple of str
        How the judges of two results tables differ (:func:`evalkit.judge.identity_changes`: model, parameters,
        rubric or its version), one sentence each; empty for one judge, or where a table does not say. Where it is
        not empty the change measures the judge as well as the system, and the printed result says so.
    """

    n: int
    table: pd.DataFrame
    p_val: float
    agreement: float
    kappa: float
    rate_a: float
    rate_b: float
    flips: pd.DataFrame = field(repr=False)
    kind: str
    difference: float
    ci_low: float
    ci_high: float
    method: str
    confidence_level: float
    test: str
    discordant: float
    cluster: str | None = None
    n_clusters: int | None = None
    judge_change: tuple[str, ...] = ()

    def _rows(self) -> tuple[str, list[dict]]:
        test = "exact McNemar" if self.cluster is None and self.kind == "pass rate" else self.test
        clusters = f", {self.n_clusters} clusters ({self.cluster})" if self.cluster is not None else ""
        title = f"PairedComparison: {self.kind}, n = {self.n}{clusters}, {len(self.flips)} flips"
        rows = [{"quantity": f"{self.kind} a", "estimate": _display.number(self.rate_a)},
                {"quantity": f"{self.kind} b", "estimate": _display.number(self.rate_b)},
                {"quantity": "difference b - a", "estimate": _display.number(self.difference, sign=True),
                 "interval": _display.interval(self.ci_low, self.ci_high, level=self.confidence_level, sign=True),
                 "method": _METHOD_NAMES[self.method]},
                {"quantity": "p-value", "estimate": _display.p_value(self.p_val), "method": test,
                 "note": "two-sided test of no difference"},
                {"quantity": "agreement", "estimate": _display.number(self.agreement),
                 "note": "share of cases unchanged"}]
        if not np.isnan(self.kappa):
            rows.append({"quantity": "kappa", "estimate": _display.number(self.kappa), "method": "Cohen's kappa"})
        if self.judge_change:
            rows.append({"quantity": "judge change", "note": "; ".join(self.judge_change)
                         + ": the change measures the judge as well as the system"})
        return title, rows

    def __repr__(self) -> str:
        return _display.result_text(*self._rows())

    def _repr_html_(self) -> str:
        caption = ("verdict pairs: rows run a, columns run b" if self.kind == "pass rate"
                   else "scores of run a, run b and b - a")
        return _display.result_html(*self._rows()) + f"<p>{caption}</p>" + self.table.to_html()


# ------------------------------------------------------------------------------------------ kernels
def _rate_comparison(pass_a: np.ndarray, pass_b: np.ndarray, method: str, confidence_level: float,
                     groups=None) -> dict:
    n10, n01 = int((pass_a & ~pass_b).sum()), int((~pass_a & pass_b).sum())
    n11, n = int((pass_a & pass_b).sum()), len(pass_a)
    if groups is not None:  # whole clusters: the betting interval of the mean change, the exact test of its totals
        d = pass_b.astype(float) - pass_a.astype(float)
        low, high, g = cluster_difference_interval(d, groups, lo=-1.0, hi=1.0, confidence_level=confidence_level)
        totals = np.bincount(np.unique(groups, return_inverse=True)[1].ravel(), weights=d)
        return {"n": n, "mean_a": float(pass_a.mean()), "mean_b": float(pass_b.mean()), "difference": (n01 - n10) / n,
                "ci_low": low, "ci_high": high, "p_val": integer_sign_flip_p(np.rint(totals).astype(np.int64)),
                "discordant": (n10 + n01) / n, "n_clusters": g}
    if method == "tango":
        low, high = tango_interval(n10, n01, n, confidence_level)
    else:
        low, high = newcombe_paired_interval(n11, n10, n01, n - n11 - n10 - n01, confidence_level)
    return {"n": n, "mean_a": float(pass_a.mean()), "mean_b": float(pass_b.mean()), "difference": (n01 - n10) / n,
            "ci_low": low, "ci_high": high, "p_val": mcnemar_exact_p(n10, n01), "discordant": (n10 + n01) / n}


def _score_comparison(x_a: np.ndarray, x_b: np.ndarray, method: str, confidence_level: float, bounds, rng,
                      groups=None) -> dict:
    d = x_b - x_a
    span = bounds[1] - bounds[0]
    if groups is not None:
        low, high, g = cluster_difference_interval(d, groups, lo=-span, hi=span, confidence_level=confidence_level)
        totals = np.bincount(np.unique(groups, return_inverse=True)[1].ravel(), weights=d)
        return {"n": len(d), "mean_a": float(x_a.mean()), "mean_b": float(x_b.mean()), "difference": float(d.mean()),
                "ci_low": low, "ci_high": high, "p_val": sign_flip_p(totals, rng=rng), "discordant": np.nan,
                "n_clusters": g}
    low, high = mean_interval(d, method, confidence_level, bounds=(-span, span), rng=rng)
    return {"n": len(d), "mean_a": float(x_a.mean()), "mean_b": float(x_b.mean()), "difference": float(d.mean()),
            "ci_low": low, "ci_high": high, "p_val": sign_flip_p(d, rng=rng), "discordant": np.nan}


def _is_score(run) -> bool:
    values = run["verdict"] if isinstance(run, pd.DataFrame) and "verdict" in run.columns else run
    if not isinstance(values, pd.Series):
        return False
    return pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)


def _score_bounds(bounds, values: np.ndarray, name: str = "bounds") -> tuple[float, float]:
    """The range the scores can take: as given (checked against the data), else the observed range."""
    if bounds is None:
        low, high = float(np.min(values)), float(np.max(values))
        if high > low:
            return low, high
        warn(f"every score is {show(low)}, so the data show no range; the betting interval assumes "
             f"[{low:g}, {low + 1:g}]: give `{name}=` (the scale's range).")
        return low, low + 1.0
    if not isinstance(bounds, (tuple, list)) or len(bounds) != 2:
        raise TypeError(f"`{name}` must be a pair (low, high), e.g. (1, 5) for 1-5 ratings; got {bounds!r}.")
    low, high = (check_number(v, name) for v in bounds)
    if not high > low:
        raise ValueError(f"`{name}` must have low < high; got {bounds!r}.")
    outside = values[(values < low) | (values > high)]
    if outside.size:
        raise ValueError(f"`{name}` is {bounds!r} but a score is {show(outside[0])}; give the scale's true range.")
    return low, high


def _check_method(method, kind: str, clustered: bool = False, name: str = "method") -> str:
    allowed = RATE_METHODS if kind == "pass rate" else SCORE_METHODS
    if clustered:
        if method not in (None, "betting"):
            raise ValueError(f"`{name}={method!r}` treats the cases as independent; with clusters (`cluster=`, or a "
                             "log's epochs) the interval is 'betting', over whole clusters (the default).")
        return "cluster-betting"
    if method is None:
        return allowed[0]
    if method not in allowed:
        raise ValueError(f"`{name}` for a {kind} difference must be one of {list(allowed)}; got {method!r}.")
    return method


def _clusters(a, b, cluster, cases: pd.Index) -> tuple[np.ndarray | None, str | None]:
    """Each common case's cluster code, and the clusters' name: ``cluster`` as given (a column of ``a``, whose values
    ``b`` must not contradict; a Series by case id; a sequence), else a log's epochs found in both tables."""
    if cluster is None:
        found = epoch_column(a) if isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame) else None
        if found is None or found not in b.columns:
            return None, None
        cluster = found
    if isinstance(cluster, str):
        for name, run in (("a", a), ("b", b)):
            if not isinstance(run, pd.DataFrame):
                raise TypeError(f"`cluster={cluster!r}` names a column, which needs `{name}` to be a results table; "
                                "with Series of verdicts pass a Series of cluster ids by case id.")
        if cluster in b.columns:
            ids = [run.drop_duplicates("case_id", keep="last").set_index("case_id")[cluster].reindex(cases)
                   for run in (a, b)]
            differ = ids[0].astype(object).ne(ids[1].astype(object)) & ids[1].notna()
            if differ.any():
                raise ValueError(f"`cluster={cluster!r}`: case {show(cases[differ.to_numpy()][0])} is in cluster "
                                 f"{show(ids[0][differ].iloc[0])} in a and {show(ids[1][differ].iloc[0])} in b; a case "
                                 "is in one cluster.")
    codes, _ = as_clusters(cluster, cases, table=a if isinstance(cluster, str) else None)
    return codes, cluster if isinstance(cluster, str) else "given"


# ------------------------------------------------------------------------------------------- paired
def paired(a, b, *, labels=None, pass_levels=None, interval=None, cluster=None, confidence_level: float = 0.95,
           bounds=None, rng=None) -> PairedComparison:
    """Compare two runs on the same cases, aligned by case id: the change b - a with its interval and a test.

    Verdicts (PASS/FAIL or a rubric's levels) give the change in pass rate with Newcombe's hybrid score
    interval for paired proportions (Newcombe 1998, method 10), which keeps its coverage at small n and near
    pass rates of 0 or 1 (at n = 30-200, pass rates near 0.9 and 2-20% of cases flipping: at least 0.95 in
    every setting measured, where Tango's score interval, as wide on average, dips to 0.94;
    ``benchmarks/bench_compare.py``), and the exact McNemar test. Numeric scores (TCVA scores, 1-5 ratings, any judge score) give the mean paired
    difference with a betting interval, valid in finite samples for scores within ``bounds``, and a
    sign-flip permutation test.

    Parameters
    ----------
    a, b : DataFrame or Series
        Results tables (one rubric and model each) or verdicts indexed by case id; numeric Series (or a
        numeric ``verdict`` column) are scores. Cases missing from either run, and error rows, are left out.
    labels : sequence, optional
        The verdict levels, in table order (default: the rubric's from ``a.attrs``, else PASS, FAIL);
        other values found are appended.
    pass_levels : sequence of str, optional
        The verdicts that count as a pass (default: the rubric's from ``a.attrs``, else PASS).
    interval : str, optional
        The interval: ``"newcombe"`` (default; Newcombe 1998, method 10) or ``"tango"`` (Tango 1998) for pass rates;
        ``"betting"`` (default), ``"t"`` or ``"bootstrap"`` (BCa) for scores. The t and bootstrap intervals
        collapse when few cases change and under-cover there: they warn below 25 changed cases. With clusters,
        ``"betting"`` over whole clusters only.
    cluster : str, Series or sequence, optional
        Cases that are not independent (the epochs of one question, the claims of one item): a column of the
        results tables (``b``'s, where it has one, must agree), a Series of cluster ids by case id, or a sequence
        as long as the common cases. Default: a log's epochs, found in both tables as :func:`evalkit.judge.pass_rate`
        finds them (``attrs["clusters"]``, else a repeated ``sample_id``); else every case on its own. With clusters
        the interval is the betting interval over whole clusters of the mean change (each cluster betting on its
        total change, bounded by the largest cluster), valid at any number of clusters for the per-case mean
        change, and the test is the sign-flip test of the clusters' totals (the runs exchangeable within each
        cluster), exact for verdicts: with one case per cluster, the exact McNemar test. The coverage harness
        measures both at 20 to 200 clusters of 1 to 5 epochs, where the Newcombe interval over the cases, which
        takes them as independent, falls short.
    confidence_level : float
    bounds : (low, high), optional
        Scores only: the range the scores can take, e.g. ``(1, 5)``; the betting interval's guarantee rests
        on it. Default: the observed range of both runs.
    rng : None, int or Generator
        Scores only. The betting interval and the sign-flip test take the cases in one order, which ``rng`` keys:
        ascending by a hash of each case id keyed by the seed (None: a fixed key, 0; an int: that seed; a
        Generator: one draw from it), so the same cases give the same interval whatever the order of the rows, and
        a seed gives one order among many. The same seed (None: 0) draws the sign-flip test's signs when its cases
        are too many to enumerate (and the bootstrap's resamples), so one call's answer is the next one's.

    Returns
    -------
    PairedComparison

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.compare import paired
    >>> a = pd.Series(["PASS"] * 8 + ["FAIL"] * 2, index=range(10))
    >>> b = pd.Series(["FAIL"] * 6 + ["PASS"] * 2 + ["FAIL"] * 2, index=range(10))
    >>> res = paired(a, b)
    >>> len(res.flips), round(res.p_val, 4), res.difference, res.method
    (6, 0.0312, -0.6, 'newcombe')
    >>> round(res.ci_low, 3), round(res.ci_high, 3)
    (-0.803, -0.162)
    >>> scores = paired(pd.Series([4, 5, 3, 5, 4]), pd.Series([5, 5, 4, 5, 4]), bounds=(1, 5))
    >>> scores.kind, scores.difference, scores.method
    ('mean score', 0.4, 'betting')

    Two epochs of five questions: six verdicts changed, but both epochs of one question changed, so five questions
    did; the test over questions is the exact one of five changes all one way.

    >>> questions = pd.Series(["q1", "q1", "q2", "q2", "q3", "q3", "q4", "q4", "q5", "q5"], index=range(10))
    >>> a = pd.Series(["PASS"] * 10, index=range(10))
    >>> b = pd.Series(["FAIL", "FAIL", "FAIL", "PASS", "FAIL", "PASS", "FAIL", "PASS", "FAIL", "PASS"], index=range(10))
    >>> round(paired(a, b).p_val, 4), round(paired(a, b, cluster=questions).p_val, 4)
    (0.0312, 0.0625)
    """
    confidence_level = check_level(confidence_level)
    va, vb = judge_verdicts(a, "a"), judge_verdicts(b, "b")
    scores = _is_score(a) and _is_score(b)
    kind = "mean score" if scores else "pass rate"
    check_unique_index(va.index, "a")
    check_unique_index(vb.index, "b")
    common = align_ids(va.index, vb.index, left_name="a", right_name="b")
    both = pd.DataFrame({"a": va.loc[common], "b": vb.loc[common]})
    failed = both.isna().any(axis=1)
    if failed.all():
        raise ValueError("`a` and `b` (the two runs) share no case with a verdict in both; compare runs on the same cases.")
    if failed.any():
        warn(f"{int(failed.sum())} of the {len(both)} common cases have no verdict in one run (a failed call: an error "
             f"row), e.g. {both.index[failed.to_numpy()][:3].tolist()}: left out of the comparison.")
        both = both[~failed]
    groups, cluster = _clusters(a, b, cluster, both.index)
    method = _check_method(interval, kind, groups is not None, "interval")
    changes = ()
    if isinstance(a, pd.DataFrame) and isinstance(b, pd.DataFrame):
        from evalkit.judge import identity_changes

        changes = tuple(identity_changes(a, b))
    if scores:
        # the betting interval and the sign-flip draws take the cases in one documented order (a keyed hash of the
        # ids), so the result does not depend on the order of the rows
        seed = order_seed(rng)
        order = id_order(both.index, seed)
        groups = None if groups is None else groups[order]
        generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(seed)
        return replace(_paired_scores(both.iloc[order], method, confidence_level, bounds, generator, groups, cluster),
                       judge_change=changes)
    levels_a, passing = verdict_levels(a, levels=labels, pass_levels=pass_levels)
    levels_b, passing_b = verdict_levels(b, levels=labels, pass_levels=pass_levels)
    if set(passing) != set(passing_b):
        raise ValueError(f"the runs count different verdicts as a pass ({list(passing)} in a, {list(passing_b)} in "
                         "b); pass `pass_levels=` to compare them on one definition.")
    found = {*both["a"], *both["b"]}
    if labels is None and all(isinstance(v, (bool, np.bool_)) for v in found):
        labels = (True, False)  # booleans (True = pass) are their own levels
    labels = labels if labels is not None else (levels_a or ("PASS", "FAIL"))
    levels = list(labels) + sorted(found - set(labels), key=str)
    k = len(levels)
    codes = [pd.Categorical(both[side], levels).codes.astype(np.int64) for side in ("a", "b")]
    counts = np.bincount(codes[0] * k + codes[1], minlength=k * k).reshape(k, k)  # pd.crosstab, without its cost
    table = pd.DataFrame(counts, index=pd.Index(levels, name="a"), columns=pd.Index(levels, name="b"))
    pass_a = as_pass(both["a"], "a", levels=levels_a, pass_levels=passing).to_numpy(dtype=bool)
    pass_b = as_pass(both["b"], "b", levels=levels_b, pass_levels=passing).to_numpy(dtype=bool)
    result = _rate_comparison(pass_a, pass_b, method, confidence_level, groups)
    changed = both[both["a"] != both["b"]]
    flips = pd.DataFrame({"case_id": changed.index.to_numpy(), "a": changed["a"].to_numpy(), "b": changed["b"].to_numpy()})
    for name, run in (("a", a), ("b", b)):
        if isinstance(run, pd.DataFrame) and "reason" in run.columns:
            flips[f"reason_{name}"] = run.set_index("case_id")["reason"].reindex(flips["case_id"]).to_numpy()
    return PairedComparison(
        n=len(both), table=table, p_val=result["p_val"], agreement=float((both["a"] == both["b"]).mean()),
        kappa=_stats.cohen_kappa(both["a"].to_numpy(), both["b"].to_numpy()), rate_a=result["mean_a"],
        rate_b=result["mean_b"], flips=flips, kind=kind, difference=result["difference"], ci_low=result["ci_low"],
        ci_high=result["ci_high"], method=method, confidence_level=confidence_level,
        test=_RATE_TEST if groups is None else _CLUSTER_RATE_TEST, discordant=result["discordant"], cluster=cluster,
        n_clusters=result.get("n_clusters"), judge_change=changes,
    )


def _paired_scores(both: pd.DataFrame, method, confidence_level, bounds, rng, groups=None, cluster=None
                   ) -> PairedComparison:
    x_a, x_b = both["a"].to_numpy(dtype=float), both["b"].to_numpy(dtype=float)
    if not (np.isfinite(x_a).all() and np.isfinite(x_b).all()):
        raise ValueError("scores must be finite numbers; a run holds inf.")
    bounds = _score_bounds(bounds, np.concatenate([x_a, x_b]))
    result = _score_comparison(x_a, x_b, method, confidence_level, bounds, rng, groups)
    d = x_b - x_a
    table = pd.DataFrame({"mean": [x_a.mean(), x_b.mean(), d.mean()], "sd": [x_a.std(ddof=1) if len(d) > 1 else np.nan,
                          x_b.std(ddof=1) if len(d) > 1 else np.nan, d.std(ddof=1) if len(d) > 1 else np.nan],
                          "min": [x_a.min(), x_b.min(), d.min()], "max": [x_a.max(), x_b.max(), d.max()]},
                         index=pd.Index(["a", "b", "b - a"], name="score"))
    changed = both[both["a"] != both["b"]]
    flips = pd.DataFrame({"case_id": changed.index.to_numpy(), "a": changed["a"].to_numpy(dtype=float),
                          "b": changed["b"].to_numpy(dtype=float)})
    if np.isnan(result["ci_low"]):
        warn(f"no {_METHOD_NAMES[method]} interval for these {len(d)} differences (fewer than two, or all "
             "equal); the betting interval (the default) gives one.")
    else:
        _warn_few_changes(method, int(np.count_nonzero(d)))
    return PairedComparison(
        n=len(d), table=table, p_val=result["p_val"], agreement=float(np.mean(d == 0)), kappa=np.nan,
        rate_a=result["mean_a"], rate_b=result["mean_b"], flips=flips, kind="mean score",
        difference=result["difference"], ci_low=result["ci_low"], ci_high=result["ci_high"], method=method,
        confidence_level=confidence_level, test=_SCORE_TEST if groups is None else _CLUSTER_SCORE_TEST,
        discordant=np.nan, cluster=cluster, n_clusters=result.get("n_clusters"),
    )


#: Below this many changed cases the t and bootstrap intervals under-cover skewed changes (coverage harness:
#: 0.88-0.92 at 95% with 5-15 changed cases out of 20-100).
_FEW_CHANGES = 25


def _warn_few_changes(method: str, changed: int) -> None:
    if method in ("t", "bootstrap") and changed < _FEW_CHANGES:
        warn(f"only {changed} cases changed their score: the {_METHOD_NAMES[method]} interval under-covers "
             f"there (0.88-0.92 at 95% in the coverage harness with 5-15 changed cases); the default "
             "betting interval holds.")


# ----------------------------------------------------------------------------------------- planning
_MAX_CASES = 2_000_000


def _check_plan(discordant, power, alpha) -> tuple[float, float, float]:
    if isinstance(discordant, PairedComparison):
        if discordant.kind != "pass rate":
            raise ValueError("`discordant` from a pilot must be a pass/fail comparison; this one compares scores.")
        discordant = discordant.discordant
        if discordant == 0:
            raise ValueError("`discordant`: no case flipped in the pilot comparison, so it cannot say how many will; "
                             "give the expected share of flipping cases as a number.")
    discordant = check_number(discordant, "discordant", low=0, high=1)
    if discordant == 0:
        raise ValueError("`discordant` must be above 0: with no case flipping no test can detect a change.")
    power = check_number(power, "power", low=0, high=1)
    alpha = check_number(alpha, "alpha", low=0, high=1)
    if not 0 < alpha < power < 1:
        raise ValueError(f"`alpha` and `power` must satisfy 0 < alpha < power < 1; got alpha={alpha!r}, power={power!r}.")
    return discordant, power, alpha


def _as_list(values, name: str, *, integer: bool) -> list:
    single = np.ndim(values) == 0
    items = [values] if single else list(values)
    if not items:
        raise ValueError(f"`{name}` is empty.")
    return [check_number(v, name, low=1 if integer else None, integer=integer) for v in items]


def detectable_difference(n, *, discordant, power: float = 0.8, alpha: float = 0.05) -> pd.DataFrame:
    """The smallest change in pass rate an exact McNemar test on ``n`` paired cases detects with ``power``.

    Exact, not a normal approximation: the power sums, over the binomial number of flipping cases, the
    conditional probability that the exact test rejects (each case flips with probability ``discordant``;
    a flip goes the new run's way with probability ``(1 + difference / discordant) / 2``). Checked by
    simulation (tests/test_compare.py; ``python benchmarks/bench_compare.py``).

    Parameters
    ----------
    n : int or sequence of int
        Paired cases.
    discordant : float or PairedComparison
        The expected share of cases whose verdict flips between the runs, or a pilot comparison whose
        observed share is used (an estimate: a pilot of few cases gives a rough plan).
    power : float
        Required probability of rejecting at ``alpha`` (two-sided).
    alpha : float

    Returns
    -------
    DataFrame
        One row per ``n``: ``n, discordant, alpha, power, difference``. ``difference`` (a change of either
        sign) is NaN, with a warning, when no change can reach the power: even all flips in one direction.

    Examples
    --------
    >>> from evalkit.compare import detectable_difference
    >>> detectable_difference([100, 400], discordant=0.1).round(4)
         n  discordant  alpha  power  difference
    0  100         0.1   0.05    0.8      0.0884
    1  400         0.1   0.05    0.8      0.0456
    """
    discordant, power, alpha = _check_plan(discordant, power, alpha)
    rows = []
    for size in _as_list(n, "n", integer=True):
        if mcnemar_power(size, discordant, discordant, alpha) < power:
            warn(f"with {size} cases and {discordant:.3g} of them flipping, no change reaches power {power:g}: "
                 "even every flip in one direction is not detected reliably; plan more cases.")
            found = np.nan
        else:
            found = optimize.brentq(lambda d, s=size: mcnemar_power(s, d, discordant, alpha) - power, 0.0, discordant,
                                    xtol=1e-10)
        rows.append({"n": size, "discordant": discordant, "alpha": alpha, "power": power, "difference": found})
    return pd.DataFrame(rows)


def cases_needed(difference, *, discordant, power: float = 0.8, alpha: float = 0.05) -> pd.DataFrame:
    """How many paired cases an exact McNemar test needs to detect a change in pass rate with ``power``.

    The smallest n whose exact power (as in :func:`detectable_difference`) reaches ``power``; the power rises
    with n here, because the binomial number of flipping cases smooths the exact test's saw-tooth. Checked by
    simulation (tests/test_compare.py; ``python benchmarks/bench_compare.py``).

    Parameters
    ----------
    difference : float or sequence of float
        The change in pass rate to detect (either sign), at most ``discordant``: a change of 0.02 needs at
        least 2% of the cases to flip.
    discordant : float or PairedComparison
        The expected share of cases whose verdict flips, or a pilot comparison supplying it.
    power, alpha : float

    Returns
    -------
    DataFrame
        One row per difference: ``difference, discordant, alpha, power, n, power_at_n`` (the exact power at
        that n). ``n`` is NaN, with a warning, beyond two million cases.

    Examples
    --------
    >>> from evalkit.compare import cases_needed
    >>> cases_needed(0.02, discordant=0.1).round(4)
       difference  discordant  alpha  power     n  power_at_n
    0        0.02         0.1   0.05    0.8  2043      0.8002
    """
    discordant, power, alpha = _check_plan(discordant, power, alpha)
    rows = []
    for change in _as_list(difference, "difference", integer=False):
        change = abs(change)
        if change == 0:
            raise ValueError("`difference` must be nonzero: a change of 0 cannot be detected.")
        if change > discordant + 1e-12:
            raise ValueError(f"`difference` {change:g} exceeds `discordant` {discordant:g}: a change in pass rate "
                             "cannot be larger than the share of cases that flip.")
        def reaches(size, change=change):
            return mcnemar_power(size, change, discordant, alpha) >= power

        high = 1
        while not reaches(high) and high < _MAX_CASES:
            high = min(2 * high, _MAX_CASES)
        if not reaches(high):
            warn(f"a change of {change:g} with {discordant:g} flipping needs more than {_MAX_CASES:,} cases.")
            rows.append({"difference": change, "discordant": discordant, "alpha": alpha, "power": power, "n": np.nan,
                         "power_at_n": np.nan})
            continue
        low = high // 2  # reaches(low) is False (or low == 0)
        while high - low > 1:
            middle = (low + high) // 2
            low, high = (low, middle) if reaches(middle) else (middle, high)
        rows.append({"difference": change, "discordant": discordant, "alpha": alpha, "power": power, "n": high,
                     "power_at_n": mcnemar_power(high, change, discordant, alpha)})
    out = pd.DataFrame(rows)
    if out["n"].notna().all():
        out["n"] = out["n"].astype(int)
    return out


# -------------------------------------------------------------------------------- several runs at once
def against_baseline(runs: pd.DataFrame, *, baseline, run: str = "run", case: str = "case_id",
                     value: str = "verdict", by=None, adjust: str = "holm", confidence_level: float = 0.95,
                     interval=None, pass_levels=None, bounds=None, smallest_change=None, power: float = 0.8,
                     rng=None) -> pd.DataFrame:
    """Every run against one baseline on the same cases, in one table with multiplicity-adjusted p-values.

    Each run other than ``baseline`` is paired with the baseline case by case (within each ``by`` group:
    rubrics, segments) as :func:`paired` pairs two runs: pass rates with Newcombe's interval and the exact
    McNemar test, numeric scores with the betting interval and the sign-flip test. The p-values of all
    comparisons in the table form one family, adjusted by ``adjust``.

    Parameters
    ----------
    runs : DataFrame
        Long: one row per case and run (and ``by`` group), e.g. ``pd.concat([results_v1, results_v2])``
        with ``run="rubric_version"``.
    baseline
        The value of ``runs[run]`` every other run is compared with.
    run, case, value : str
        Columns: which run, which case, and the verdict or numeric score.
    by : str or list of str, optional
        Columns whose groups are compared separately (e.g. ``"rubric"``, ``"segment"``).
    adjust : {"holm", "bonferroni", "bh", "by"}
        Holm (default) and Bonferroni control the family-wise error rate; Benjamini-Hochberg ("bh") and
        Benjamini-Yekutieli ("by") the false discovery rate.
    confidence_level : float
        Of each interval; ``alpha = 1 - confidence_level`` is the level the adjusted p-values are read at.
    interval : str, optional
        The interval, as in :func:`paired`.
    pass_levels : sequence of str, optional
        The verdicts that count as a pass (default: PASS).
    bounds : (low, high), optional
        Scores: the range they can take (default: the observed range).
    smallest_change : float, optional
        The smallest difference that matters. A difference not distinguishable from zero is then read
        against it: whether the joint interval still allows a change that large, and, for pass rates, the
        exact McNemar power to detect it with these cases at the unadjusted ``alpha`` (an upper bound on the
        power under any adjustment).
    power : float
        The power called sufficient in that reading.
    rng : None, int or Generator
        Scores: the order of the cases and the sign-flip test's draws, as in :func:`paired` (each comparison gives
        the interval :func:`paired` gives for its two runs with the same ``rng``).

    Returns
    -------
    DataFrame
        One row per comparison: the ``by`` columns, ``run, baseline, n, baseline_mean, mean, difference,
        ci_low, ci_high`` (each interval at ``confidence_level``), ``joint_low, joint_high`` (Bonferroni
        intervals at ``1 - alpha / m`` for the m comparisons: they hold together with probability at least
        ``confidence_level``), ``p_val, p_adjusted, method, test``, ``power`` (with ``smallest_change``,
        pass rates) and ``conclusion``: "higher than baseline" or "lower than baseline" where the adjusted
        p-value is at most alpha, else "not distinguishable from baseline", followed, with
        ``smallest_change``, by what the cases can say about a change of that size. ``attrs`` name the
        adjustment, the level, the family size and the interval methods. A run that shares no case with the
        baseline (in its group) gets ``n`` 0, NaN numbers, the conclusion "no shared cases" and an
        :class:`~evalkit.EvalkitWarning`; cases in one of the two runs only (or without a verdict in one) are left
        out with a warning that counts them and names the first few, as in :func:`paired`; the t and bootstrap intervals warn, as in :func:`paired`, where few
        cases changed.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.compare import against_baseline
    >>> runs = pd.DataFrame({"case_id": list(range(40)) * 3, "run": ["v1"] * 40 + ["v2"] * 40 + ["v3"] * 40,
    ...                      "verdict": ["PASS"] * 36 + ["FAIL"] * 4 + ["PASS"] * 20 + ["FAIL"] * 20
    ...                                 + ["PASS"] * 37 + ["FAIL"] * 3})
    >>> table = against_baseline(runs, baseline="v1")
    >>> table[["run", "difference", "p_adjusted", "conclusion"]].round(4)
      run  difference  p_adjusted                        conclusion
    0  v2       -0.40      0.0000              lower than baseline
    1  v3        0.025     1.0000  not distinguishable from baseline
    """
    runs, by, adjust, confidence_level, smallest_change, power = _baseline_inputs(
        runs, baseline, run, case, value, by, adjust, confidence_level, smallest_change, power)
    scores = pd.api.types.is_numeric_dtype(runs[value]) and not pd.api.types.is_bool_dtype(runs[value])
    kind = "mean score" if scores else "pass rate"
    method = _check_method(interval, kind, name="interval")
    seed = order_seed(rng)
    generator = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(seed)
    if scores:
        values = runs[value].to_numpy(dtype=float)
        if not np.isfinite(values[~np.isnan(values)]).all():
            raise ValueError(f"runs[{value!r}] holds inf; scores must be finite.")
        bounds = _score_bounds(bounds, values[~np.isnan(values)])
        coded = runs[value].astype(float)
    else:
        _, passing = verdict_levels(runs, pass_levels=pass_levels)
        coded = as_pass(runs[value], f"runs[{value!r}]", levels=None, pass_levels=passing)
    frame = runs[[*by, run, case]].assign(_value=coded.astype(float))  # pass as 1.0/0.0, missing as NaN
    pairs = _baseline_pairs(frame, by, run, case, baseline, seed)
    joint_level = 1 - (1 - confidence_level) / len(pairs)
    rows = [_baseline_row(labels, other, baseline, x_a, x_b, by=by, scores=scores, method=method,
                          confidence_level=confidence_level, joint_level=joint_level, bounds=bounds, rng=generator)
            for labels, other, x_a, x_b in pairs]
    table = _baseline_table(rows, by, adjust, confidence_level, method, scores, smallest_change, power)
    table.attrs.update({"adjust": adjust, "confidence_level": confidence_level, "comparisons": len(pairs),
                        "method": _METHOD_NAMES[method], "test": table["test"].iloc[0] if len(pairs) else None,
                        "joint": f"Bonferroni: each joint interval at {joint_level:.6g}, all {len(pairs)} together >= "
                                 f"{confidence_level:g}", "kind": kind})
    return table


def _baseline_inputs(runs, baseline, run, case, value, by, adjust, confidence_level, smallest_change, power):
    """:func:`against_baseline`'s checks: the table, its columns, one row per case and run, and the options."""
    runs = check_dataframe(runs, "runs")
    by = [] if by is None else ([by] if isinstance(by, str) else list(by))
    check_columns(runs, [case, run, value, *by], "runs")
    adjust = check_option(adjust, ADJUSTMENTS, "adjust")
    confidence_level = check_level(confidence_level)
    if smallest_change is not None:
        smallest_change = abs(check_number(smallest_change, "smallest_change"))
        if smallest_change == 0:
            raise ValueError("`smallest_change` must be nonzero (the smallest difference that matters).")
    power = check_number(power, "power", low=0, high=1)
    names = runs[run].unique()
    if baseline not in set(names):
        raise ValueError(f"`baseline` {baseline!r} is not a value of runs[{run!r}]; its values are {list(names)[:10]}.")
    if len(names) < 2:
        raise ValueError(f"runs[{run!r}] holds only the baseline; give at least one other run to compare.")
    duplicated = runs.duplicated([*by, run, case])
    if duplicated.any():
        row = runs[duplicated].iloc[0]
        raise ValueError(f"`runs` has case {show(row[case])} more than once in run {show(row[run])}"
                         + (f" and group {tuple(row[b] for b in by)}" if by else "")
                         + "; each case appears once per run (and group).")
    return runs, by, adjust, confidence_level, smallest_change, power


def _baseline_pairs(frame: pd.DataFrame, by: list, run: str, case: str, baseline, seed: int) -> list:
    """Each (group labels, run, baseline values, run values) on the cases both have, in the order the runs appear;
    the cases in :func:`paired`'s order (:func:`evalkit._validation.id_order` keyed by ``seed``)."""
    names = frame[run].unique()
    pairs = []
    groups = frame.groupby(by, sort=False, dropna=False) if by else [((), frame)]
    for key, group in groups:
        key = key if isinstance(key, tuple) else (key,)
        wide = group.pivot(index=case, columns=run, values="_value")  # one column per run, aligned by case
        if baseline not in wide.columns:
            continue
        wide = wide.iloc[id_order(wide.index, seed)]  # paired's order of the cases: a keyed hash of the ids
        base = wide[baseline].to_numpy()
        for other in [name for name in names if name != baseline and name in wide.columns]:
            values = wide[other].to_numpy()
            keep = ~(np.isnan(base) | np.isnan(values))
            if keep.any() and (np.isnan(base) != np.isnan(values)).any():  # a case in one run only: said, as paired
                align_ids(sorted_ids(wide.index[~np.isnan(base)]), sorted_ids(wide.index[~np.isnan(values)]),
                          left_name=f"{baseline} (baseline)", right_name=str(other), what="case")
            pairs.append((dict(zip(by, key, strict=True)), other, base[keep], values[keep]))
    return pairs


def _baseline_row(labels, other, baseline, x_a, x_b, *, by, scores, method, confidence_level, joint_level, bounds,
                  rng) -> dict:
    """One comparison with the baseline: its marginal interval and test, and its joint (Bonferroni) interval."""
    row = {**labels, "run": other, "baseline": baseline}
    if len(x_a) == 0:
        warn(f"run {show(other)} shares no case with the baseline" + (f" in group {labels}" if by else "")
             + "; its row is NaN.")
        return {**row, "n": 0}
    if scores:
        marginal = _score_comparison(x_a, x_b, method, confidence_level, bounds, rng)
        _warn_few_changes(method, int(np.count_nonzero(x_b - x_a)))
        span = bounds[1] - bounds[0]
        joint = mean_interval(x_b - x_a, method, joint_level, bounds=(-span, span), rng=rng)
    else:
        a_, b_ = x_a.astype(bool), x_b.astype(bool)
        marginal = _rate_comparison(a_, b_, method, confidence_level)
        joint = tuple(_rate_comparison(a_, b_, method, joint_level)[k] for k in ("ci_low", "ci_high"))
    return {**row, "n": marginal["n"], "baseline_mean": marginal["mean_a"], "mean": marginal["mean_b"],
            "difference": marginal["difference"], "ci_low": marginal["ci_low"], "ci_high": marginal["ci_high"],
            "joint_low": joint[0], "joint_high": joint[1], "p_val": marginal["p_val"],
            "_discordant": marginal["discordant"]}


def _baseline_table(rows, by, adjust, confidence_level, method, scores, smallest_change, power) -> pd.DataFrame:
    """The comparisons as one table: adjusted p-values, the power at the smallest change, and each conclusion."""
    alpha = 1 - confidence_level
    table = pd.DataFrame(rows)
    for column in ("baseline_mean", "mean", "difference", "ci_low", "ci_high", "joint_low", "joint_high", "p_val",
                   "_discordant"):
        if column not in table.columns:
            table[column] = np.nan
    table["p_adjusted"] = _adjust(table["p_val"].to_numpy(dtype=float), adjust)
    table["method"] = method
    table["test"] = _SCORE_TEST if scores else _RATE_TEST
    if smallest_change is not None:
        table["power"] = [
            np.nan if scores or not n or np.isnan(share)
            else mcnemar_power(int(n), smallest_change, max(share, smallest_change), alpha)
            for n, share in zip(table["n"], table["_discordant"], strict=True)]
    table["conclusion"] = [_conclusion(row, alpha, smallest_change, power) for row in table.to_dict("records")]
    columns = [*by, "run", "baseline", "n", "baseline_mean", "mean", "difference", "ci_low", "ci_high", "joint_low",
               "joint_high", "p_val", "p_adjusted", "method", "test", *(["power"] if smallest_change else []),
               "conclusion"]
    return table.drop(columns="_discordant")[columns]


def _conclusion(row: dict, alpha: float, smallest_change, power: float) -> str:
    if not row.get("n"):
        return "no shared cases"
    if row["p_adjusted"] <= alpha:
        return "higher than baseline" if row["difference"] > 0 else "lower than baseline"
    text = "not distinguishable from baseline"
    if smallest_change is None:
        return text
    low, high = row["joint_low"], row["joint_high"]
    if np.isnan(low) or np.isnan(high):
        return text
    if low <= -smallest_change or high >= smallest_change:
        text += f"; a change of {smallest_change:g} is not ruled out"
        achieved = row.get("power", np.nan)
        if not np.isnan(achieved) and achieved < power:
            text += f" (power to detect it at most {achieved:.2f})"
        return text
    return text + f"; the joint interval lies within +-{smallest_change:g}"


def adjust_p_values(table: pd.DataFrame, *, method: str = "holm", column: str = "p_val") -> pd.DataFrame:
    """Adjust a family of p-values for multiplicity: the table with ``p_adjusted`` and ``adjust`` columns added.

    When several tests are read together (one McNemar test per judge and subset, one Wilcoxon test per
    pair of conditions and metric), some come out small by chance; the adjusted p-values keep the chance
    of any false finding (``"holm"``, ``"bonferroni"``: the family-wise error rate) or the expected share of
    false findings among those claimed (``"bh"``, ``"by"``: the false discovery rate) at the level they are
    compared with. Every row of ``table`` is one test of the family.

    Parameters
    ----------
    table : DataFrame
        One row per test, holding the raw p-values in ``column``; NaN p-values stay NaN and are not counted
        (with an :class:`~evalkit.EvalkitWarning`).
    method : {"holm", "bonferroni", "bh", "by"}, default "holm"
        Holm's step-down, Bonferroni, Benjamini-Hochberg (independent or positively dependent tests) or
        Benjamini-Yekutieli (any dependence). The values equal statsmodels' ``multipletests``.
    column : str, default "p_val"
        The column of raw p-values (kept as it is).

    Returns
    -------
    DataFrame
        A copy of ``table`` with ``p_adjusted`` (the adjusted p-value) and ``adjust`` (the method's name).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.compare import adjust_p_values
    >>> tests = pd.DataFrame({"test": ["a", "b", "c"], "p_val": [0.01, 0.04, 0.03]})
    >>> adjust_p_values(tests, method="holm")
      test  p_val  p_adjusted adjust
    0    a   0.01        0.03   holm
    1    b   0.04        0.06   holm
    2    c   0.03        0.06   holm
    """
    table = check_dataframe(table, "table")
    check_option(method, ADJUSTMENTS, "method")
    check_columns(table, [column], "table")
    values = pd.to_numeric(table[column], errors="coerce")
    bad = table[column][values.isna() & table[column].notna()]
    if len(bad) or ((values < 0) | (values > 1)).any():
        example = bad.iloc[0] if len(bad) else values[(values < 0) | (values > 1)].iloc[0]
        raise ValueError(f"`table` column {column!r} must hold p-values in [0, 1] (or NaN); got {example!r}.")
    missing = int(values.isna().sum())
    if missing:
        warn(f"{missing} of the {len(values)} p-values in column {column!r} are NaN: they stay NaN and are not "
             f"counted in the family of {len(values) - missing} tests.")
    out = table.copy()
    out["p_adjusted"] = _adjust(values.to_numpy(dtype=float), method)
    out["adjust"] = method
    return out
