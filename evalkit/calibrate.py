"""Calibrating a judge against human labels, with FAIL as the positive class.

Every function takes the judge's verdicts either as a results table (``case_id``, ``verdict``, one rubric
and model) or as a Series of verdicts indexed by case id, and human labels as a Series of ``PASS``/``FAIL``
strings or booleans (True = PASS) indexed by case id. Judge and humans are aligned by case id: the judge's
cases without a human label are left out (labelling a few is the point); a label whose case the judge did not
score, and a labelled judge error row (no verdict: a failed call), are left out with an
:class:`~evalkit.EvalkitWarning` that counts them and names the first few; no case in common is an error.

Rubrics with other levels (e.g. GOOD / OK / BAD) are reduced to pass / fail by their pass levels: the
rubric's, carried in a results table's ``attrs["rubric"]``, or ``pass_levels=`` (needed for a Series of
other levels). Human labels may use the same levels, PASS/FAIL or booleans.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import stats

from evalkit import _display, _stats
from evalkit._coerce import as_pass, judge_verdicts, verdict_levels
from evalkit._tables import epoch_column
from evalkit._validation import (
    align_ids,
    as_clusters,
    check_columns,
    check_dataframe,
    check_level,
    check_number,
    check_rng,
    check_unique_index,
    warn,
)
from evalkit.labels import latest_labels

__all__ = [
    "CalibrationReport",
    "calibrate",
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
    check_unique_index(j.index, name)
    # the judge's cases without a label are the usual case (a few are labelled); a label without a case is said
    common = align_ids(j.index, h.index, left_name=name, right_name=human_name, warn_left=False)
    pairs = pd.DataFrame({"human": h.loc[common], "judge": j.loc[common]})
    complete = pairs.notna().all(axis=1)
    excluded = int((~complete).sum())
    no_verdict = pairs["judge"].isna() & pairs["human"].notna()
    if no_verdict.any():
        warn(f"{int(no_verdict.sum())} labelled case(s) have no judge verdict (a failed call: an error row), e.g. "
             f"{pairs.index[no_verdict.to_numpy()][:3].tolist()}: left out, not counted as a verdict.")
    pairs = pairs[complete].astype(bool)
    pairs.index.name = "case_id"
    if pairs.empty:
        raise ValueError(f"no case has both a judge verdict (in `{name}`) and a label (in `{human_name}`).")
    return pairs, excluded


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
        Every rate with ``estimate, ci_low, ci_high, numerator, denominator, interval, note`` (Clopper-Pearson by
        default, or Wilson; kappa's is the Clopper-Pearson fiducial interval; with clusters, the betting interval
        over whole clusters, or the cluster-robust t); ``interval`` names the method, ``note`` says why an interval is missing (and ``n_clusters`` with
        clusters).
    pairs : DataFrame
        The aligned labels (``human``, ``judge``; True = PASS), indexed by case id.
    n_excluded : int
        Aligned cases left out because one side had no label (e.g. a judge error).
    cluster : str or None
        The clusters of the intervals: a column of the results table (given, or a log's epochs found in it),
        ``"given"`` (a Series of cluster ids), or None (every case independent).
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
    cluster: str | None = None

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

    def _rows(self) -> tuple[str, list[dict]]:
        excluded = f", {self.n_excluded} excluded" if self.n_excluded else ""
        rows = [{"quantity": str(metric), "estimate": _display.number(row["estimate"]),
                 "interval": _display.interval(row["ci_low"], row["ci_high"], level=self.confidence_level),
                 "method": row.get("interval", ""), "note": row.get("note", "")}
                for metric, row in self.table.iterrows()]
        return f"CalibrationReport: n = {self.n}{excluded}; {self.message}", rows

    def __repr__(self) -> str:
        return _display.result_text(*self._rows())

    def _repr_html_(self) -> str:
        return _display.result_html(*self._rows())


def calibrate(judge, human: pd.Series, *, confidence_level: float = 0.95, interval: str = "auto",
              cluster=None, pass_levels=None) -> CalibrationReport:
    """Measure a judge against human labels.

    Parameters
    ----------
    judge : DataFrame or Series
        A results table for one rubric and model, or verdicts indexed by case id.
    human : Series
        PASS/FAIL strings or booleans (True = PASS), or the rubric's levels, indexed by case id.
    confidence_level : float, default 0.95
    interval : {"auto", "clopper-pearson", "wilson", "betting", "t"}, default "auto"
        The rates' intervals, named as in :func:`evalkit.judge.pass_rate`: ``"auto"`` is Clopper-Pearson, which
        covers at least ``confidence_level`` at every count (the coverage harness's rule for a default), and with
        ``cluster`` the betting interval over whole clusters (see there); Wilson is narrower and dips below it at
        some (n, p). Kappa's interval is
        the Clopper-Pearson fiducial one either way: kappa is a function of the human pass rate (pi) and the
        judge's rates on human PASS (Se) and human FAIL (Sp), three binomial rates, and increases in Se and Sp;
        its lower end is the alpha/2 quantile of kappa over draws of Se and Sp from the beta distributions whose
        quantiles are their lower Clopper-Pearson limits (and of pi from Jeffreys' beta), its upper end likewise
        from the upper ones. The large-sample (Fleiss, Cohen & Everitt 1969) interval and the bootstrap run short
        at 20-100 labels with pass rates near 0.9 (the coverage harness measures 0.62-0.93 there); this one held
        at every design measured. With fewer than 2 human PASS or FAIL labels kappa gets no interval (a note).
        ``"betting"`` and ``"t"`` are for ``cluster`` only (see there); Wilson is refused with ``cluster``, and
        ``"clopper-pearson"`` with ``cluster`` is Clopper-Pearson on the clusters' means.
    cluster : str or Series, optional
        Cases that are not independent (the claims of one item, the epochs of one case): a column of the results
        table (e.g. ``"sample_id"`` in a table from :mod:`evalkit.logs`) or a Series of cluster ids by case id.
        Default: a log's epochs, found in the results table as :func:`evalkit.judge.pass_rate` finds them
        (``attrs["clusters"]``, else a repeated ``sample_id``), else every case on its own.
        By default every rate then gets the betting interval over whole clusters (as in :func:`evalkit.infer.mean`: each
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
    check_level(confidence_level)
    if cluster is None and isinstance(judge, pd.DataFrame):
        cluster = epoch_column(judge)  # a log's epochs: each case's epochs are one cluster, as in judge.pass_rate
    method = _stats.rate_method(interval, cluster is not None)
    pairs, excluded = _pairs(judge, human, pass_levels)
    if cluster is not None and isinstance(cluster, str) and not isinstance(judge, pd.DataFrame):
        raise TypeError(f"`cluster={cluster!r}` names a column, which needs `judge` to be a results table; with a "
                        "Series of verdicts pass a Series of cluster ids by case id.")
    groups, bound = (None, None) if cluster is None else as_clusters(
        cluster, pairs.index, table=judge if isinstance(judge, pd.DataFrame) else None)
    h_fail, j_fail = ~pairs["human"].to_numpy(), ~pairs["judge"].to_numpy()
    n = len(pairs)
    tp = int((h_fail & j_fail).sum())
    fn = int((h_fail & ~j_fail).sum())
    fp = int((~h_fail & j_fail).sum())
    tn = n - tp - fn - fp
    if tp + fn == 0:
        warn("the human labels contain no FAIL: fail_recall is undefined (NaN). Label failing cases too.")
    kappa = _stats.cohen_kappa(pairs["human"].to_numpy(), pairs["judge"].to_numpy())
    agree = h_fail == j_fail
    rows, few = {}, []
    for metric, hit, among in (("agreement", agree, np.ones(n, bool)), ("fail_recall", h_fail & j_fail, h_fail),
                               ("false_flag_rate", ~h_fail & j_fail, ~h_fail), ("precision", h_fail & j_fail, j_fail),
                               ("base_rate_agreement", ~h_fail, np.ones(n, bool))):
        k, d = int(hit.sum()), int(among.sum())
        row = {"estimate": k / d if d else np.nan, "numerator": k, "denominator": d}
        if groups is None:
            found = _stats.rate_interval(k, d, method=method, confidence_level=confidence_level)
            del found["n_clusters"]
        else:
            found = _stats.rate_interval(hit[among].astype(float), method=method, confidence_level=confidence_level,
                                         groups=groups[among], bound=bound)
            few += [metric] if found["note"] else []
        row.update(found)
        rows[metric] = row
    row = {"estimate": kappa, "numerator": pd.NA, "denominator": n, "note": ""}
    if groups is None:
        row.update(_stats.kappa_interval(tp, fn, fp, tn, confidence_level))
    else:
        row.update(_stats.kappa_cluster_interval(h_fail, j_fail, groups, kappa, confidence_level))
        few += ["kappa"] if row["note"] else []
    rows["kappa"] = row
    if few:
        warn(f"fewer than {_stats.MIN_CLUSTERS} clusters for {few}: a cluster-robust interval is not backed there (NaN, "
             "with a note).")
    columns = ["estimate", "ci_low", "ci_high", "numerator", "denominator", "interval", "note"]
    table = pd.DataFrame(rows).T
    table = table[columns + (["n_clusters"] if groups is not None else [])]
    table.index.name = "metric"
    table = table.astype({"estimate": float, "ci_low": float, "ci_high": float, "numerator": "Int64", "denominator": "Int64"})
    if groups is not None:
        table["n_clusters"] = table["n_clusters"].astype("Int64")
    return CalibrationReport(
        n=n, agreement=(tp + tn) / n, fail_recall=rows["fail_recall"]["estimate"], false_flag_rate=rows["false_flag_rate"]["estimate"],
        precision=rows["precision"]["estimate"], kappa=kappa, caught=tp, human_fails=tp + fn, judge_fails=tp + fp,
        base_rate_agreement=(fp + tn) / n, confidence_level=confidence_level, table=table, pairs=pairs,
        n_excluded=excluded, cluster=None if cluster is None else cluster if isinstance(cluster, str) else "given",
    )


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

    The judge's error rates are named as in :func:`calibrate`, FAIL the positive class: ``fail_recall = P(judge FAIL |
    human FAIL)`` and ``false_flag_rate = P(judge FAIL | human PASS)`` on the calibration set. The judge passes a
    share ``observed = p (1 - false_flag_rate) + (1 - p) (1 - fail_recall)`` of a run whose human pass rate is p, so
    the corrected rate is ``(observed + fail_recall - 1) / (fail_recall - false_flag_rate)`` (Rogan-Gladen, whose
    sensitivity and specificity for the pass class are ``1 - false_flag_rate`` and ``fail_recall``). It rests on three
    binomial rates: the run's observed pass rate and the judge's two rates on the calibration labels, which must be
    other cases than the run's (a run corrected with a calibration on its own cases gives back the human rate
    there, by algebra).

    The interval carries the uncertainty of all three. The corrected rate increases in the observed rate
    and the fail recall and in the false-flag rate (while it lies in [0, 1]), so its lower end is the alpha/2
    quantile of the formula over draws of the observed rate and the fail recall from the beta distributions whose
    quantiles are their lower Clopper-Pearson limits and of the false-flag rate from its lower one too, and the
    upper end likewise. A percentile bootstrap of the same three rates covered 0.90-0.93 at 20-100 calibration
    labels (the coverage harness); this interval held at every design measured. Where the calibration labels
    cannot rule out a judge no better than chance (more than alpha/2 of the draws have fail_recall <=
    false_flag_rate) no finite interval can hold: the interval is NaN, with a warning and a note. Such draws count
    as -inf (lower end) and +inf (upper end).

    The estimate is not clipped: one outside [0, 1] means the calibration's error rates do not fit this run
    (other data, or too few labels), and an :class:`evalkit.EvalkitWarning` says so. The interval is reported both
    ways: ``ci_low, ci_high`` clipped to [0, 1], the values a rate can take (clipping commutes with
    quantiles, so it loses nothing), and ``ci_low_unclipped, ci_high_unclipped`` as the draws give them. A
    judge no better than chance on the calibration set (fail_recall <= false_flag_rate) cannot be corrected
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
        One row: ``n_run, observed, estimate, ci_low, ci_high, ci_low_unclipped, ci_high_unclipped, interval, note,
        fail_recall, false_flag_rate, n_calibration``; ``estimate`` is the corrected rate, ``interval`` names the
        method (``cp-fiducial``), ``note`` says why an interval is missing.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.calibrate import calibrate, corrected_pass_rate
    >>> human = pd.Series(["PASS"] * 80 + ["FAIL"] * 40, index=range(120))
    >>> judge = pd.Series(["PASS"] * 70 + ["FAIL"] * 10 + ["FAIL"] * 30 + ["PASS"] * 10, index=range(120))
    >>> run = pd.Series(["PASS"] * 60 + ["FAIL"] * 40)
    >>> row = corrected_pass_rate(run, calibrate(judge, human)).iloc[0]
    >>> float(row["observed"]), round(float(row["estimate"]), 3)  # (0.6 + 0.75 - 1) / (0.875 + 0.75 - 1)
    (0.6, 0.56)
    >>> round(float(row["ci_low"]), 3), round(float(row["ci_high"]), 3), row["interval"]
    (0.31, 0.764, 'cp-fiducial')
    """
    if not isinstance(report, CalibrationReport):
        raise TypeError(f"`report` must be a CalibrationReport (from calibrate); got {type(report).__name__}.")
    n_resamples = check_number(n_resamples, "n_resamples", low=1, integer=True)
    confidence_level = check_level(confidence_level)
    levels, passing = verdict_levels(results, pass_levels=pass_levels)
    run = as_pass(judge_verdicts(results, "results"), "results", levels=levels, pass_levels=passing).dropna().astype(bool)
    if run.empty:
        raise ValueError("`results` has no verdict to correct.")
    n_run, observed = len(run), float(run.mean())
    h, j = report.pairs["human"].to_numpy(), report.pairs["judge"].to_numpy()
    cells = np.array([(h & j).sum(), (h & ~j).sum(), (~h & ~j).sum(), (~h & j).sum()])  # PP, PF, FF, FP
    if cells[:2].sum() == 0 or cells[2:].sum() == 0:
        raise ValueError("the calibration set needs both human PASS and human FAIL labels to estimate the judge's "
                         "fail_recall and false_flag_rate.")

    def correct(obs, se, sp):
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(se + sp - 1 > 0, (obs + sp - 1) / (se + sp - 1), np.nan)

    se, sp = cells[0] / cells[:2].sum(), cells[2] / cells[2:].sum()
    corrected = float(correct(observed, se, sp))
    row = {"n_run": n_run, "observed": observed, "estimate": np.nan, "ci_low": np.nan, "ci_high": np.nan,
           "ci_low_unclipped": np.nan, "ci_high_unclipped": np.nan, "interval": "cp-fiducial", "note": "",
           "fail_recall": float(sp), "false_flag_rate": float(1 - se), "n_calibration": int(cells.sum())}
    if se + sp - 1 <= 0:
        warn(f"the judge is no better than chance on the calibration set (fail_recall {sp:.2f} <= false_flag_rate "
             f"{1 - se:.2f}); its pass rate cannot be corrected (NaN).")
        row["note"] = "judge no better than chance on the calibration set"
        return pd.DataFrame([row])
    if not 0.0 <= corrected <= 1.0:
        warn(f"the corrected pass rate {corrected:.3f} is outside [0, 1]: the judge's error rates on the "
             f"calibration set (fail_recall {sp:.2f}, false_flag_rate {1 - se:.2f}, n = {int(cells.sum())}) do not "
             f"fit this run (observed {observed:.3f}); reported unclipped. Label more cases like this run's.")
    low, high, undefined_low, undefined_high = _stats.cp_fiducial_interval(
        correct, [(int(run.sum()), n_run), (int(cells[0]), int(cells[:2].sum())), (int(cells[2]), int(cells[2:].sum()))],
        [+1, -1, +1], confidence_level, n_draws=n_resamples, rng=None if rng is None else check_rng(rng))
    row["estimate"] = corrected
    if not (np.isfinite(low) and np.isfinite(high)):
        share = max(undefined_low, undefined_high)
        row["note"] = (f"{share:.0%} of the draws have fail_recall <= false_flag_rate: the calibration labels cannot "
                       "rule out a judge no better than chance, so no interval can hold")
        warn(f"the calibration set ({int(cells[:2].sum())} human PASS, {int(cells[2:].sum())} human FAIL) cannot "
             f"rule out a judge no better than chance at {confidence_level:.0%} ({share:.0%} of the draws have its "
             "fail_recall at or below its false_flag_rate): no interval for the corrected rate can hold "
             "(NaN). Label more cases, failing ones in particular.")
        return pd.DataFrame([row])
    row.update(ci_low=float(np.clip(low, 0, 1)), ci_high=float(np.clip(high, 0, 1)), ci_low_unclipped=float(low),
               ci_high_unclipped=float(high))
    return pd.DataFrame([row])


def agreement_drift(judge, labels: pd.DataFrame, *, by: str = "position", bins: int = 5,
                    confidence_level: float = 0.95, interval: str = "auto") -> pd.DataFrame:
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
    interval : {"auto", "clopper-pearson", "wilson"}, default "auto"
        Each bin's interval (as in :func:`calibrate`; "auto" is Clopper-Pearson).

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
    check_level(confidence_level)
    method = _stats.rate_method(interval, False)
    latest = labels.drop_duplicates("case_id", keep="last").set_index("case_id")
    pairs, _ = _pairs(judge, latest["label"], human_name="labels")
    order = latest.loc[pairs.index, by]
    agree = (pairs["human"] == pairs["judge"]).to_numpy()
    numeric = pd.api.types.is_numeric_dtype(order)
    groups = pd.qcut(order.rank(method="first"), q=min(bins, len(order)), labels=False) if numeric else order
    rows = []
    for key, idx in pd.Series(range(len(order)), index=order.index).groupby(groups.to_numpy(), sort=True):
        k, n = int(agree[idx.to_numpy()].sum()), len(idx)
        found = _stats.rate_interval(k, n, method=method, confidence_level=confidence_level)
        low, high = found["ci_low"], found["ci_high"]
        span = f"{order.iloc[idx.to_numpy()].min()}-{order.iloc[idx.to_numpy()].max()}" if numeric else key
        rows.append({by: span, "n": n, "agreement": k / n, "ci_low": low, "ci_high": high, "interval": method})
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
    return pd.DataFrame([{"n": len(common), "agreement": float(np.mean(a == b)), "kappa": _stats.cohen_kappa(a, b)}])
