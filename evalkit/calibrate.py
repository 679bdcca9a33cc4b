"""Calibrating a judge against human labels, with FAIL as the positive class.

Every function takes the judge's verdicts either as a results table (``case_id``, ``verdict``, one rubric
and model) or as a Series of verdicts indexed by case id, and human labels as a Series of ``PASS``/``FAIL``
strings or booleans (True = PASS) indexed by case id. Judge and humans are aligned by case id; cases
without a human label, and judge error rows (no verdict), are left out and counted.

Rubrics with other levels (e.g. GOOD / OK / BAD) are reduced to pass / fail by their pass levels: the
rubric's, carried in a results table's ``attrs["rubric"]``, or ``pass_levels=`` (needed for a Series of
other levels). Human labels may use the same levels, PASS/FAIL or booleans.
"""

from __future__ import annotations

import html
import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from evalkit._coerce import as_pass, judge_verdicts, verdict_levels
from evalkit._stats import binomial_interval, cluster_rate_interval, cluster_variance, cp_fiducial_interval
from evalkit._validation import (
    EvalkitWarning,
    check_columns,
    check_dataframe,
    check_number,
    check_option,
    check_rng,
    check_unique_index,
)
from evalkit.labels import latest_labels

__all__ = [
    "CalibrationReport",
    "calibrate",
    "cohen_kappa",
    "disagreements",
    "corrected_pass_rate",
    "agreement_drift",
    "self_agreement",
]


def _pairs(judge, human, pass_levels=None, name: str = "judge", human_name: str = "human") -> tuple[pd.DataFrame, int]:
    levels, passing = verdict_levels(judge, pass_levels=pass_levels)
    j = as_pass(judge_verdicts(judge, name), name, levels=levels, pass_levels=passing)
    if not isinstance(human, pd.Series):
        raise TypeError(f"`human` must be a Series of PASS/FAIL labels indexed by case id; got {type(human).__name__}.")
    check_unique_index(human.index, "human")
    h = as_pass(human, human_name, levels=levels, pass_levels=passing)
    common = j.index.intersection(h.index, sort=False)
    if len(common) == 0:
        raise ValueError(f"`{name}` (the judge's case ids) and `{human_name}` (the labels) share no case id; first "
                         f"ids: {name} {j.index[:3].tolist()}, {human_name} {h.index[:3].tolist()}.")
    pairs = pd.DataFrame({"human": h.loc[common], "judge": j.loc[common]})
    complete = pairs.notna().all(axis=1)
    excluded = int((~complete).sum())
    pairs = pairs[complete].astype(bool)
    pairs.index.name = "case_id"
    if pairs.empty:
        raise ValueError(f"no case has both a judge verdict (in `{name}`) and a label (in `{human_name}`).")
    return pairs, excluded


def cohen_kappa(a, b, *, weights: str | None = None) -> float:
    """Cohen's kappa between two label sequences of equal length (any hashable labels).

    ``kappa = (p_o - p_e) / (1 - p_e)`` with the chance agreement ``p_e`` from each side's label
    frequencies; 1.0 when both sides use one identical label (no disagreement is possible). With
    ``weights`` ("linear" or "quadratic"; numeric labels) disagreements count by their distance
    ``|i - j|`` or ``(i - j) ** 2`` between the positions of the two labels in the sorted label set:
    ``kappa = 1 - sum(w * observed) / sum(w * expected)``.

    Examples
    --------
    >>> from evalkit.calibrate import cohen_kappa
    >>> round(cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"]), 4)
    0.5
    >>> round(cohen_kappa([1, 2, 3, 3], [1, 2, 2, 3], weights="quadratic"), 4)
    0.8
    """
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"`weights` must be one of [None, 'linear', 'quadratic']; got {weights!r}.")
    a, b = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError("`a` and `b` must be non-empty sequences of the same length.")
    if weights is None:
        labels = pd.unique(np.concatenate([a, b]))
        po = float(np.mean(a == b))
        pe = float(sum(np.mean(a == lab) * np.mean(b == lab) for lab in labels))
        return 1.0 if pe == 1.0 else (po - pe) / (1 - pe)
    for name, values in (("a", a), ("b", b)):
        numeric = pd.to_numeric(pd.Series(values), errors="coerce")
        if (numeric.isna() & pd.notna(values)).any() or pd.isna(values).any():
            bad = values[numeric.isna().to_numpy()][0]
            raise TypeError(f"`{name}` must hold numbers for weights={weights!r} (weighted kappa needs ordered "
                            f"numeric labels); got {bad!r}.")
    labels, codes = np.unique(np.concatenate([a, b]).astype(float), return_inverse=True)
    k, n = len(labels), len(a)
    observed = np.zeros((k, k))
    np.add.at(observed, (codes[:n], codes[n:]), 1.0 / n)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    distance = np.abs(np.arange(k)[:, None] - np.arange(k)[None, :]).astype(float)
    w = distance if weights == "linear" else distance**2
    denominator = float((w * expected).sum())
    return 1.0 if denominator == 0 else 1.0 - float((w * observed).sum()) / denominator


@dataclass(frozen=True)
class CalibrationReport:
    """How well a judge's FAILs match the humans' (FAIL = positive class). Built by :func:`calibrate`.

    Attributes
    ----------
    n : int
        Cases with both labels.
    agreement : float
        Share of cases where judge and human agree.
    fail_recall : float
        Failures caught: judge FAIL among human FAIL (NaN when the humans gave no FAIL).
    false_flag_rate : float
        Judge FAIL among human PASS.
    precision : float
        Human FAIL among judge FAIL.
    kappa : float
        Cohen's kappa.
    caught, human_fails, judge_fails : int
    base_rate_agreement : float
        Agreement an always-PASS judge would reach (the share of human PASS).
    table : DataFrame
        Every rate with ``value, ci_low, ci_high, numerator, denominator, interval, note`` (Clopper-Pearson by
        default, or Wilson; kappa's is the Clopper-Pearson fiducial interval; with clusters, the betting interval
        over whole clusters, or the cluster-robust t); ``interval`` names the method, ``note`` says why an interval is missing (and ``n_clusters`` with
        clusters).
    pairs : DataFrame
        The aligned labels (``human``, ``judge``; True = PASS), indexed by case id.
    n_excluded : int
        Aligned cases left out because one side had no label (e.g. a judge error).
    """

    n: int
    agreement: float
    fail_recall: float
    false_flag_rate: float
    precision: float
    kappa: float
    caught: int
    human_fails: int
    judge_fails: int
    base_rate_agreement: float
    confidence_level: float
    table: pd.DataFrame = field(repr=False)
    pairs: pd.DataFrame = field(repr=False)
    n_excluded: int = 0

    @property
    def confusion(self) -> pd.DataFrame:
        """2 x 2 counts: rows human FAIL/PASS, columns judge FAIL/PASS."""
        labels = ["FAIL", "PASS"]
        h = self.pairs["human"].map({False: "FAIL", True: "PASS"})
        j = self.pairs["judge"].map({False: "FAIL", True: "PASS"})
        return pd.crosstab(pd.Categorical(h, labels), pd.Categorical(j, labels), dropna=False,
                           rownames=["human"], colnames=["judge"])

    @property
    def message(self) -> str:
        if self.human_fails == 0:
            return ("The human labels contain no FAIL, so the judge's ability to catch failures cannot be "
                    "measured: label more cases, including failing ones.")
        return (f"caught {self.caught} of {self.human_fails} human FAILs ({self.fail_recall:.0%}); flagged "
                f"{self.judge_fails - self.caught} of {self.n - self.human_fails} human PASSes "
                f"({self.false_flag_rate:.0%}); agreement {self.agreement:.0%} vs {self.base_rate_agreement:.0%} "
                "for an always-PASS judge")

    def __repr__(self) -> str:
        pct = int(round(self.confidence_level * 100))
        lines = [f"CalibrationReport(n={self.n}{f', {self.n_excluded} excluded' if self.n_excluded else ''})",
                 f"  {self.message}"]
        for metric, row in self.table.iterrows():
            lines.append(f"  {metric:<20} {row['value']:7.3f}  {pct}% CI [{row['ci_low']:.3f}, {row['ci_high']:.3f}]")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        return (f"<p><b>Judge calibration</b> (n = {self.n}): {html.escape(self.message)}</p>"
                + self.table.to_html(float_format=lambda v: f"{v:.3f}"))


def calibrate(judge, human: pd.Series, *, confidence_level: float = 0.95, interval: str = "clopper-pearson",
              cluster=None, pass_levels=None) -> CalibrationReport:
    """Measure a judge against human labels.

    Parameters
    ----------
    judge : DataFrame or Series
        A results table for one rubric and model, or verdicts indexed by case id.
    human : Series
        PASS/FAIL strings or booleans (True = PASS), or the rubric's levels, indexed by case id.
    confidence_level : float, default 0.95
    interval : {"clopper-pearson", "wilson", "t"}, default "clopper-pearson"
        The rates' intervals: Clopper-Pearson covers at least ``confidence_level`` at every count (the coverage
        harness's rule for a default); Wilson is narrower and dips below it at some (n, p). Kappa's interval is
        the Clopper-Pearson fiducial one either way: kappa is a function of the human pass rate (pi) and the
        judge's rates on human PASS (Se) and human FAIL (Sp), three binomial rates, and increases in Se and Sp;
        its lower end is the alpha/2 quantile of kappa over draws of Se and Sp from the beta distributions whose
        quantiles are their lower Clopper-Pearson limits (and of pi from Jeffreys' beta), its upper end likewise
        from the upper ones. The large-sample (Fleiss, Cohen & Everitt 1969) interval and the bootstrap run short
        at 20-100 labels with pass rates near 0.9 (the coverage harness measures 0.62-0.93 there); this one held
        at every design measured. With fewer than 2 human PASS or FAIL labels kappa gets no interval (a note).
        ``"t"`` is for ``cluster`` only (see there); Wilson is refused with ``cluster``.
    cluster : str or Series, optional
        Cases that are not independent (the claims of one item, the epochs of one case): a column of the results
        table (e.g. ``"sample_id"`` in a table from :mod:`evalkit.logs`) or a Series of cluster ids by case id.
        Every rate then gets the betting interval over whole clusters (as in :func:`evalkit.infer.mean`: each
        cluster, in a fixed pseudo-random order of the cluster ids, bets on its count of hits minus theta times
        its count of cases in the rate's denominator, over the largest cluster among the cases given), which
        covers at least ``confidence_level`` at every number of clusters; ``interval="t"`` gives instead the
        cluster-robust t (the sandwich of the ratio with G / (G - 1), t on G - 1 degrees of freedom, G the
        clusters holding a case of the rate's denominator), which the coverage harness measures short (0.92 at
        100 clusters of 8 claims, pass rate 0.9). Kappa gets its cluster-robust delta-method interval either way.
        The large-sample intervals are not given with fewer than 50 clusters (a note and a warning).
    pass_levels : sequence of str, optional
        The verdicts that count as a pass (default: the rubric's from ``judge.attrs``, else PASS).

    Returns
    -------
    CalibrationReport

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.calibrate import calibrate
    >>> judge = pd.Series(["FAIL", "PASS", "PASS", "PASS", "FAIL", "PASS"], index=list("abcdef"))
    >>> human = pd.Series(["FAIL", "FAIL", "PASS", "PASS", "PASS", "PASS"], index=list("abcdef"))
    >>> report = calibrate(judge, human)
    >>> report.caught, report.human_fails, round(report.agreement, 3), round(report.base_rate_agreement, 3)
    (1, 2, 0.667, 0.667)
    """
    check_number(confidence_level, "confidence_level", low=0.0, high=1.0)
    check_option(interval, ["clopper-pearson", "wilson", "t"], "interval")
    if interval == "t" and cluster is None:
        raise ValueError("`interval='t'` is the cluster-robust t interval, for `cluster=`; without clusters use "
                         "'clopper-pearson' or 'wilson'.")
    if interval == "wilson" and cluster is not None:
        raise ValueError("`interval='wilson'` treats the cases as independent; with `cluster=` the rates get the betting "
                         "interval over whole clusters (the default, interval='clopper-pearson') or the cluster-robust "
                         "t (interval='t').")
    pairs, excluded = _pairs(judge, human, pass_levels)
    groups, bound = (None, None) if cluster is None else _clusters(cluster, judge, pairs.index)
    h_fail, j_fail = ~pairs["human"].to_numpy(), ~pairs["judge"].to_numpy()
    n = len(pairs)
    tp = int((h_fail & j_fail).sum())
    fn = int((h_fail & ~j_fail).sum())
    fp = int((~h_fail & j_fail).sum())
    tn = n - tp - fn - fp
    if tp + fn == 0:
        warnings.warn("the human labels contain no FAIL: fail_recall is undefined (NaN). Label failing cases too.",
                      EvalkitWarning, stacklevel=2)
    kappa = cohen_kappa(pairs["human"].to_numpy(), pairs["judge"].to_numpy())
    agree = h_fail == j_fail
    rows, few = {}, []
    for metric, hit, among in (("agreement", agree, np.ones(n, bool)), ("fail_recall", h_fail & j_fail, h_fail),
                               ("false_flag_rate", ~h_fail & j_fail, ~h_fail), ("precision", h_fail & j_fail, j_fail),
                               ("base_rate_agreement", ~h_fail, np.ones(n, bool))):
        k, d = int(hit.sum()), int(among.sum())
        row = {"value": k / d if d else np.nan, "numerator": k, "denominator": d, "note": ""}
        if groups is None:
            row["ci_low"], row["ci_high"] = binomial_interval(k, d, confidence_level, interval)
            row["interval"] = interval
        else:
            row.update(_cluster_rate(hit[among].astype(float), groups[among], confidence_level, interval, bound))
            few += [metric] if row["note"] else []
        rows[metric] = row
    row = {"value": kappa, "numerator": pd.NA, "denominator": n, "note": ""}
    if groups is None:
        row.update(_kappa_interval(tp, fn, fp, tn, confidence_level))
    else:
        row.update(_kappa_cluster(h_fail, j_fail, groups, kappa, confidence_level))
        few += ["kappa"] if row["note"] else []
    rows["kappa"] = row
    if few:
        warnings.warn(f"fewer than {MIN_CLUSTERS} clusters for {few}: a cluster-robust interval is not backed there (NaN, "
                      "with a note).", EvalkitWarning, stacklevel=2)
    columns = ["value", "ci_low", "ci_high", "numerator", "denominator", "interval", "note"]
    table = pd.DataFrame(rows).T
    table = table[columns + (["n_clusters"] if groups is not None else [])]
    table.index.name = "metric"
    table = table.astype({"value": float, "ci_low": float, "ci_high": float, "numerator": "Int64", "denominator": "Int64"})
    if groups is not None:
        table["n_clusters"] = table["n_clusters"].astype("Int64")
    return CalibrationReport(
        n=n, agreement=(tp + tn) / n, fail_recall=rows["fail_recall"]["value"], false_flag_rate=rows["false_flag_rate"]["value"],
        precision=rows["precision"]["value"], kappa=kappa, caught=tp, human_fails=tp + fn, judge_fails=tp + fp,
        base_rate_agreement=(fp + tn) / n, confidence_level=confidence_level, table=table, pairs=pairs,
        n_excluded=excluded,
    )


#: Cluster-robust intervals are not given with fewer clusters (as in :func:`evalkit.judge.pass_rate` and
#: :func:`evalkit.infer.mean`: the harness measures large-sample intervals short below that).
MIN_CLUSTERS = 50


def _clusters(cluster, judge, cases: pd.Index) -> tuple[np.ndarray, int]:
    """Cluster codes of the aligned cases, from a column of the results table or a Series by case id, and the
    largest cluster size among every case given."""
    if isinstance(cluster, str):
        if not isinstance(judge, pd.DataFrame):
            raise TypeError(f"`cluster={cluster!r}` names a column, which needs `judge` to be a results table; with a "
                            "Series of verdicts pass a Series of cluster ids by case id.")
        check_columns(judge, [cluster, "case_id"], "judge")
        ids = judge.drop_duplicates("case_id", keep="last").set_index("case_id")[cluster]
    elif isinstance(cluster, pd.Series):
        check_unique_index(cluster.index, "cluster")
        ids = cluster
    else:
        raise TypeError(f"`cluster` must be a column name of the results table or a Series of cluster ids by case id; "
                        f"got {type(cluster).__name__}.")
    aligned = ids.reindex(cases)
    if aligned.isna().any():
        raise ValueError(f"`cluster` has no cluster for {int(aligned.isna().sum())} labelled case(s), e.g. "
                         f"{cases[aligned.isna().to_numpy()][0]!r}; give every case a cluster id.")
    # the largest cluster among every case given (labelled or not): the betting interval's bound on a cluster
    bound = int(max(ids.dropna().value_counts().max(), pd.Series(aligned.to_numpy()).value_counts().max()))
    try:  # codes in the order of the cluster ids, so the betting order does not follow the order labels came in
        codes = pd.factorize(aligned.to_numpy(), sort=True)[0]
    except TypeError:  # ids of mixed types
        codes = pd.factorize(aligned.astype(str).to_numpy(), sort=True)[0]
    return codes, bound


def _cluster_rate(hits: np.ndarray, groups: np.ndarray, confidence_level: float, interval: str = "clopper-pearson",
                  bound: int | None = None) -> dict:
    """A rate's interval with clusters: the betting interval over whole clusters (``bound``: the largest cluster
    size), or with ``interval="t"`` the cluster-robust t (clipped to [0, 1]; a note below MIN_CLUSTERS)."""
    n = len(hits)
    row = {"ci_low": np.nan, "ci_high": np.nan, "interval": "cluster-t" if interval == "t" else "cluster-betting",
           "note": "", "n_clusters": len(np.unique(groups))}
    if n == 0:
        return row
    if interval != "t":
        row["ci_low"], row["ci_high"], _ = cluster_rate_interval(hits, groups, bound=bound,
                                                                 confidence_level=confidence_level)
        return row
    rate = float(hits.mean())
    var, g = cluster_variance((hits - rate) / n, groups)
    row["n_clusters"] = g
    if g < MIN_CLUSTERS:
        row["note"] = f"{g} clusters < {MIN_CLUSTERS}: a cluster-robust interval is not backed here"
        return row
    half = float(stats.t.ppf(0.5 + confidence_level / 2, g - 1) * np.sqrt(var))
    row["ci_low"], row["ci_high"] = max(0.0, rate - half), min(1.0, rate + half)
    return row


#: Quasi-random draws behind kappa's interval (a Sobol sequence: its ends move by about 0.002 between 2,047 and
#: 16,383 draws).
KAPPA_DRAWS = 2047


def _kappa_from_rates(pi, se, sp):
    """Cohen's kappa of a judge with rates ``se`` (PASS on human PASS) and ``sp`` (FAIL on human FAIL) at a human
    pass rate ``pi``: 2 pi (1 - pi) (se + sp - 1) / (pi (1 - j) + (1 - pi) j), j the judge's pass rate."""
    j = pi * se + (1 - pi) * (1 - sp)
    denominator = pi * (1 - j) + (1 - pi) * j
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(denominator > 0, 2 * pi * (1 - pi) * (se + sp - 1) / denominator, 0.0)


def _kappa_interval(tp: int, fn: int, fp: int, tn: int, confidence_level: float) -> dict:
    """Kappa's Clopper-Pearson fiducial interval (see :func:`calibrate`), FAIL = positive: tp = both FAIL."""
    human_pass, human_fail = fp + tn, tp + fn
    row = {"ci_low": np.nan, "ci_high": np.nan, "interval": "cp-fiducial", "note": ""}
    if min(human_pass, human_fail) < 2:
        row["note"] = "fewer than 2 human PASS or FAIL labels: kappa's interval needs both"
        return row
    low, high, _, _ = cp_fiducial_interval(_kappa_from_rates, [(human_pass, tp + fn + fp + tn), (tn, human_pass),
                                                                (tp, human_fail)], [0, +1, +1], confidence_level,
                                                n_draws=KAPPA_DRAWS)
    row["ci_low"], row["ci_high"] = max(-1.0, low), min(1.0, high)
    return row


def _kappa_cluster(h_fail, j_fail, groups, kappa: float, confidence_level: float) -> dict:
    """Cluster-robust delta-method interval for kappa: the sandwich of its influence values, t on G - 1 df."""
    n = len(h_fail)
    h, j, o = (~h_fail).astype(float), (~j_fail).astype(float), (h_fail == j_fail).astype(float)
    h1, j1, po = h.mean(), j.mean(), o.mean()
    pe = h1 * j1 + (1 - h1) * (1 - j1)
    row = {"ci_low": np.nan, "ci_high": np.nan, "interval": "cluster-t", "note": "", "n_clusters": len(np.unique(groups))}
    if pe >= 1:
        row["note"] = "every label and verdict the same: kappa has no interval"
        return row
    influence = ((o - po) + (po - 1) / (1 - pe) * ((2 * j1 - 1) * (h - h1) + (2 * h1 - 1) * (j - j1))) / (1 - pe)
    var, g = cluster_variance(influence / n, groups)
    row["n_clusters"] = g
    if g < MIN_CLUSTERS:
        row["note"] = f"{g} clusters < {MIN_CLUSTERS}: a cluster-robust interval is not backed here"
        return row
    half = float(stats.t.ppf(0.5 + confidence_level / 2, g - 1) * np.sqrt(var))
    row["ci_low"], row["ci_high"] = max(-1.0, kappa - half), min(1.0, kappa + half)
    return row


def disagreements(results: pd.DataFrame, human: pd.Series, *, cases: pd.DataFrame | None = None,
                  pass_levels=None) -> pd.DataFrame:
    """The cases where judge and human disagree on pass / fail, with both labels, the output and the judge's reasoning.

    This is the set to re-run after every rubric change.

    Parameters
    ----------
    results : DataFrame
        A results table (one rubric and model).
    human : Series
    cases : DataFrame, optional
        Cases table whose columns (``input``, ``output``...) are joined in by ``case_id``.
    pass_levels : sequence of str, optional
        As in :func:`calibrate`; two pass levels (GOOD and OK) do not disagree.

    Returns
    -------
    DataFrame
        ``case_id, human, judge, parsed, reason, raw`` plus the case columns; ``human`` and ``judge`` are
        the labels as given (booleans shown as PASS / FAIL).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.calibrate import disagreements
    >>> res = pd.DataFrame({"case_id": ["a", "b"], "verdict": ["PASS", "FAIL"], "parsed": [True, True],
    ...                     "reason": ["fine", "unsupported"], "raw": ["PASS\\nfine", "FAIL\\nunsupported"]})
    >>> disagreements(res, pd.Series({"a": "FAIL", "b": "FAIL"}))[["case_id", "human", "judge", "reason"]]
      case_id human judge reason
    0       a  FAIL  PASS   fine
    """
    results = check_dataframe(results, "results")
    check_columns(results, ["case_id", "verdict"], "results")
    pairs, _ = _pairs(results, human, pass_levels, name="results")
    differ = pairs[pairs["human"] != pairs["judge"]]
    shown = lambda labels, passed: [  # noqa: E731 - the label as given; booleans as PASS / FAIL
        ("PASS" if p else "FAIL") if isinstance(v, (bool, np.bool_)) or pd.isna(v) else str(v)
        for v, p in zip(labels, passed, strict=True)]
    verdicts = judge_verdicts(results, "results")
    out = pd.DataFrame({"case_id": differ.index.to_numpy(),
                        "human": shown(human.loc[differ.index].to_numpy(dtype=object), differ["human"]),
                        "judge": shown(verdicts.loc[differ.index].to_numpy(dtype=object), differ["judge"])})
    extra = [c for c in ("parsed", "reason", "raw") if c in results.columns]
    out = out.merge(results[["case_id", *extra]], on="case_id", how="left")
    if cases is not None:
        check_columns(check_dataframe(cases, "cases"), ["case_id"], "cases")
        out = out.merge(cases.drop(columns=[c for c in cases.columns if c in out.columns and c != "case_id"]),
                        on="case_id", how="left")
    return out


def corrected_pass_rate(results, report: CalibrationReport, *, confidence_level: float = 0.95,
                        n_resamples: int = 4000, rng=None, pass_levels=None) -> pd.DataFrame:
    """The pass rate corrected for the judge's measured error rates (Rogan-Gladen), with a Clopper-Pearson fiducial CI.

    With ``sensitivity = P(judge PASS | human PASS)`` and ``specificity = P(judge FAIL | human FAIL)``
    from the calibration set, the corrected rate is ``(observed + specificity - 1) / (sensitivity +
    specificity - 1)``. It rests on three binomial rates: the run's observed pass rate and the judge's two
    rates on the calibration labels, which must be other cases than the run's (a run corrected with a
    calibration on its own cases gives back the human rate there, by algebra).

    The interval carries the uncertainty of all three. The corrected rate increases in the observed rate
    and the specificity and decreases in the sensitivity (while it lies in [0, 1]), so its lower end is the
    alpha/2 quantile of the formula over draws of the observed rate and the specificity from the beta
    distributions whose quantiles are their lower Clopper-Pearson limits and of the sensitivity from its
    upper one, and the upper end likewise. A percentile bootstrap of the same three rates covered 0.90-0.93
    at 20-100 calibration labels (the coverage harness); this interval held at every design measured. Where
    the calibration labels cannot rule out a judge no better than chance (more than alpha/2 of the draws
    have sensitivity + specificity <= 1) no finite interval can hold: the interval is NaN, with a warning
    and a note. Draws with sensitivity + specificity <= 1 count as -inf (lower end) and +inf (upper end).

    The estimate is not clipped: one outside [0, 1] means the calibration's error rates do not fit this run
    (other data, or too few labels), and an :class:`evalkit.EvalkitWarning` says so. The interval is reported both
    ways: ``ci_low, ci_high`` clipped to [0, 1], the values a rate can take (clipping commutes with
    quantiles, so it loses nothing), and ``ci_low_unclipped, ci_high_unclipped`` as the draws give them. A
    judge no better than chance on the calibration set (sensitivity + specificity <= 1) cannot be corrected
    for: a warning, and NaN estimate and interval.

    Parameters
    ----------
    results : DataFrame or Series
        The verdicts of the run whose rate is corrected (judge errors are left out).
    report : CalibrationReport
        The judge's calibration (same rubric and model) on other cases.
    confidence_level : float, default 0.95
    n_resamples : int, default 4000
        Draws of the three rates (quasi-random: a Sobol sequence).
    rng : None, int or numpy.random.Generator
        Scrambles the Sobol sequence; None (the default) uses it unscrambled, so the interval is reproducible.
    pass_levels : sequence of str, optional
        The run's verdicts that count as a pass (default: the rubric's from ``results.attrs``, else PASS).

    Returns
    -------
    DataFrame
        One row: ``n_run, observed, corrected, ci_low, ci_high, ci_low_unclipped, ci_high_unclipped, interval,
        note, sensitivity, specificity, n_calibration``; ``interval`` names the method (``cp-fiducial``), ``note``
        says why an interval is missing.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.calibrate import calibrate, corrected_pass_rate
    >>> human = pd.Series(["PASS"] * 80 + ["FAIL"] * 40, index=range(120))
    >>> judge = pd.Series(["PASS"] * 70 + ["FAIL"] * 10 + ["FAIL"] * 30 + ["PASS"] * 10, index=range(120))
    >>> run = pd.Series(["PASS"] * 60 + ["FAIL"] * 40)
    >>> row = corrected_pass_rate(run, calibrate(judge, human)).iloc[0]
    >>> float(row["observed"]), round(float(row["corrected"]), 3)  # (0.6 + 0.75 - 1) / (0.875 + 0.75 - 1)
    (0.6, 0.56)
    >>> round(float(row["ci_low"]), 3), round(float(row["ci_high"]), 3), row["interval"]
    (0.31, 0.764, 'cp-fiducial')
    """
    if not isinstance(report, CalibrationReport):
        raise TypeError(f"`report` must be a CalibrationReport (from calibrate); got {type(report).__name__}.")
    n_resamples = check_number(n_resamples, "n_resamples", low=1, integer=True)
    confidence_level = check_number(confidence_level, "confidence_level", low=0.0, high=1.0)
    levels, passing = verdict_levels(results, pass_levels=pass_levels)
    run = as_pass(judge_verdicts(results, "results"), "results", levels=levels, pass_levels=passing).dropna().astype(bool)
    if run.empty:
        raise ValueError("`results` has no verdict to correct.")
    n_run, observed = len(run), float(run.mean())
    h, j = report.pairs["human"].to_numpy(), report.pairs["judge"].to_numpy()
    cells = np.array([(h & j).sum(), (h & ~j).sum(), (~h & ~j).sum(), (~h & j).sum()])  # PP, PF, FF, FP
    if cells[:2].sum() == 0 or cells[2:].sum() == 0:
        raise ValueError("the calibration set needs both human PASS and human FAIL labels to estimate the judge's "
                         "sensitivity and specificity.")

    def correct(obs, se, sp):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(se + sp - 1 > 0, (obs + sp - 1) / (se + sp - 1), np.nan)

    se, sp = cells[0] / cells[:2].sum(), cells[2] / cells[2:].sum()
    corrected = float(correct(observed, se, sp))
    row = {"n_run": n_run, "observed": observed, "corrected": np.nan, "ci_low": np.nan, "ci_high": np.nan,
           "ci_low_unclipped": np.nan, "ci_high_unclipped": np.nan, "interval": "cp-fiducial", "note": "",
           "sensitivity": float(se), "specificity": float(sp), "n_calibration": int(cells.sum())}
    if se + sp - 1 <= 0:
        warnings.warn(f"the judge is no better than chance on the calibration set (sensitivity {se:.2f} + "
                      f"specificity {sp:.2f} <= 1); its pass rate cannot be corrected (NaN).", EvalkitWarning,
                      stacklevel=2)
        row["note"] = "judge no better than chance on the calibration set"
        return pd.DataFrame([row])
    if not 0.0 <= corrected <= 1.0:
        warnings.warn(f"the corrected pass rate {corrected:.3f} is outside [0, 1]: the judge's error rates on the "
                      f"calibration set (sensitivity {se:.2f}, specificity {sp:.2f}, n = {int(cells.sum())}) do not "
                      f"fit this run (observed {observed:.3f}); reported unclipped. Label more cases like this run's.",
                      EvalkitWarning, stacklevel=2)
    low, high, undefined_low, undefined_high = cp_fiducial_interval(
        correct, [(int(run.sum()), n_run), (int(cells[0]), int(cells[:2].sum())), (int(cells[2]), int(cells[2:].sum()))],
        [+1, -1, +1], confidence_level, n_draws=n_resamples, rng=None if rng is None else check_rng(rng))
    row["corrected"] = corrected
    if not (np.isfinite(low) and np.isfinite(high)):
        share = max(undefined_low, undefined_high)
        row["note"] = (f"{share:.0%} of the draws have sensitivity + specificity <= 1: the calibration labels cannot "
                       "rule out a judge no better than chance, so no interval can hold")
        warnings.warn(f"the calibration set ({int(cells[:2].sum())} human PASS, {int(cells[2:].sum())} human FAIL) cannot "
                      f"rule out a judge no better than chance at {confidence_level:.0%} ({share:.0%} of the draws of "
                      "its sensitivity and specificity sum to 1 or less): no interval for the corrected rate can hold "
                      "(NaN). Label more cases, failing ones in particular.", EvalkitWarning, stacklevel=2)
        return pd.DataFrame([row])
    row.update(ci_low=float(np.clip(low, 0, 1)), ci_high=float(np.clip(high, 0, 1)), ci_low_unclipped=float(low),
               ci_high_unclipped=float(high))
    return pd.DataFrame([row])


def agreement_drift(judge, labels: pd.DataFrame, *, by: str = "position", bins: int = 5,
                    confidence_level: float = 0.95, interval: str = "clopper-pearson") -> pd.DataFrame:
    """Agreement of the judge with human labels along the labelling order, to expose drift.

    Parameters
    ----------
    judge : DataFrame or Series
        The judge's verdicts.
    labels : DataFrame
        The labels with their order: ``case_id``, ``label`` and the ``by`` column (e.g. the
        :class:`evalkit.widgets.Labeller` file's ``position``, or a ``session`` id).
    by : str, default "position"
        A numeric column is cut into ``bins`` equal-count bins; any other column is used as is.
    bins : int, default 5
    confidence_level : float, default 0.95
    interval : {"clopper-pearson", "wilson"}, default "clopper-pearson"
        Each bin's interval (as in :func:`calibrate`).

    Returns
    -------
    DataFrame
        One row per bin or session: ``n, agreement, ci_low, ci_high, interval``. ``attrs["p_trend"]`` is
        the p-value of a Spearman test between labelling order and agreement (numeric ``by`` only).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.calibrate import agreement_drift
    >>> labels = pd.DataFrame({"case_id": list("abcdef"), "label": ["PASS"] * 6, "position": range(6)})
    >>> judge = pd.Series(["PASS", "PASS", "PASS", "FAIL", "FAIL", "FAIL"], index=list("abcdef"))
    >>> agreement_drift(judge, labels, bins=2)["agreement"].tolist()
    [1.0, 0.0]
    """
    labels = check_dataframe(labels, "labels")
    check_columns(labels, ["case_id", "label", by], "labels")
    bins = check_number(bins, "bins", low=1, integer=True)
    check_number(confidence_level, "confidence_level", low=0.0, high=1.0)
    latest = labels.drop_duplicates("case_id", keep="last").set_index("case_id")
    pairs, _ = _pairs(judge, latest["label"], human_name="labels")
    order = latest.loc[pairs.index, by]
    agree = (pairs["human"] == pairs["judge"]).to_numpy()
    numeric = pd.api.types.is_numeric_dtype(order)
    groups = pd.qcut(order.rank(method="first"), q=min(bins, len(order)), labels=False) if numeric else order
    rows = []
    for key, idx in pd.Series(range(len(order)), index=order.index).groupby(groups.to_numpy(), sort=True):
        k, n = int(agree[idx.to_numpy()].sum()), len(idx)
        low, high = binomial_interval(k, n, confidence_level, interval)
        span = f"{order.iloc[idx.to_numpy()].min()}-{order.iloc[idx.to_numpy()].max()}" if numeric else key
        rows.append({by: span, "n": n, "agreement": k / n, "ci_low": low, "ci_high": high, "interval": interval})
    out = pd.DataFrame(rows)
    if numeric and len(set(agree)) > 1:
        out.attrs["p_trend"] = float(stats.spearmanr(order.to_numpy(), agree).pvalue)
    return out


def self_agreement(records: pd.DataFrame) -> pd.DataFrame:
    """How often a labeller's re-labels match their earlier labels of the same cases.

    Parameters
    ----------
    records : DataFrame
        Label records (see :func:`evalkit.labels.read_labels`) with ``mode`` ``"label"`` and ``"relabel"``;
        the latest record per case in each mode is compared.

    Returns
    -------
    DataFrame
        One row: ``n`` (cases with both), ``agreement`` and Cohen's ``kappa``.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.calibrate import self_agreement
    >>> records = pd.DataFrame({"case_id": ["a", "b", "a", "b"], "label": ["PASS", "FAIL", "PASS", "PASS"],
    ...                         "mode": ["label", "label", "relabel", "relabel"]})
    >>> self_agreement(records)
       n  agreement  kappa
    0  2        0.5    0.0
    """
    records = check_dataframe(records, "records")
    check_columns(records, ["case_id", "label", "mode"], "records")
    first = latest_labels(records, mode="label")["label"]
    again = latest_labels(records, mode="relabel")["label"]
    common = first.index.intersection(again.index)
    if len(common) == 0:
        raise ValueError("`records`: no case has both a label and a re-label yet (modes 'label' and 'relabel').")
    a, b = first.loc[common].to_numpy(), again.loc[common].to_numpy()
    return pd.DataFrame([{"n": len(common), "agreement": float(np.mean(a == b)), "kappa": cohen_kappa(a, b)}])
