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
from evalkit._stats import binomial_interval, z_value
from evalkit._validation import EvalkitWarning, check_columns, check_dataframe, check_number, check_rng, check_unique_index
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
        Every rate with ``value, ci_low, ci_high, numerator, denominator, interval`` (Clopper-Pearson by
        default, or Wilson; kappa's is the large-sample normal interval); ``interval`` names the method.
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
              pass_levels=None) -> CalibrationReport:
    """Measure a judge against human labels.

    Parameters
    ----------
    judge : DataFrame or Series
        A results table for one rubric and model, or verdicts indexed by case id.
    human : Series
        PASS/FAIL strings or booleans (True = PASS), or the rubric's levels, indexed by case id.
    confidence_level : float, default 0.95
    interval : {"clopper-pearson", "wilson"}, default "clopper-pearson"
        The rates' intervals: Clopper-Pearson covers at least ``confidence_level`` at every count (the coverage
        harness's rule for a default); Wilson is narrower and dips below it at some (n, p).
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
    if interval not in ("clopper-pearson", "wilson"):
        raise ValueError(f"`interval` must be one of ['clopper-pearson', 'wilson']; got {interval!r}.")
    pairs, excluded = _pairs(judge, human, pass_levels)
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
    po = (tp + tn) / n
    pe = ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / n**2
    z = z_value(confidence_level)
    se = np.sqrt(po * (1 - po) / (n * (1 - pe) ** 2)) if pe < 1 else np.nan
    rows = {}
    for metric, k, d in (("agreement", tp + tn, n), ("fail_recall", tp, tp + fn), ("false_flag_rate", fp, fp + tn),
                         ("precision", tp, tp + fp), ("base_rate_agreement", fp + tn, n)):
        low, high = binomial_interval(k, d, confidence_level, interval)
        rows[metric] = {"value": k / d if d else np.nan, "ci_low": low, "ci_high": high, "numerator": k, "denominator": d,
                        "interval": interval}
    rows["kappa"] = {"value": kappa, "ci_low": max(-1.0, kappa - z * se), "ci_high": min(1.0, kappa + z * se),
                     "numerator": pd.NA, "denominator": n, "interval": "clt"}
    table = pd.DataFrame(rows).T
    table.index.name = "metric"
    table = table.astype({"value": float, "ci_low": float, "ci_high": float, "numerator": "Int64", "denominator": "Int64"})
    return CalibrationReport(
        n=n, agreement=po, fail_recall=rows["fail_recall"]["value"], false_flag_rate=rows["false_flag_rate"]["value"],
        precision=rows["precision"]["value"], kappa=kappa, caught=tp, human_fails=tp + fn, judge_fails=tp + fp,
        base_rate_agreement=(fp + tn) / n, confidence_level=confidence_level, table=table, pairs=pairs,
        n_excluded=excluded,
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
    """The pass rate corrected for the judge's measured error rates (Rogan-Gladen), with a bootstrap CI.

    With ``sensitivity = P(judge PASS | human PASS)`` and ``specificity = P(judge FAIL | human FAIL)``
    from the calibration set, the corrected rate is ``(observed + specificity - 1) / (sensitivity +
    specificity - 1)``. The percentile interval resamples both the run's verdicts and the calibration set,
    so it carries the uncertainty of the calibration too.

    The estimate is not clipped: one outside [0, 1] means the calibration's error rates do not fit this run
    (other data, or too few labels), and an :class:`evalkit.EvalkitWarning` says so. The interval is reported both
    ways: ``ci_low, ci_high`` clipped to [0, 1], the values a rate can take (clipping commutes with the
    bootstrap percentiles, so it loses nothing), and ``ci_low_unclipped, ci_high_unclipped`` as the bootstrap
    gives them. A judge no better than chance on the calibration set (sensitivity
    + specificity <= 1) cannot be corrected for: a warning, and NaN estimate and interval.

    Parameters
    ----------
    results : DataFrame or Series
        The verdicts of the run whose rate is corrected (judge errors are left out).
    report : CalibrationReport
        The judge's calibration (same rubric and model).
    confidence_level : float, default 0.95
    n_resamples : int, default 4000
        Resamples whose calibration set lacks human PASS or FAIL labels, or whose judge is no better than
        chance, cannot be corrected for and are left out (a NaN interval, with a warning, when none is left).
    rng : None, int or numpy.random.Generator
    pass_levels : sequence of str, optional
        The run's verdicts that count as a pass (default: the rubric's from ``results.attrs``, else PASS).

    Returns
    -------
    DataFrame
        One row: ``n_run, observed, corrected, ci_low, ci_high, ci_low_unclipped, ci_high_unclipped, interval,
        sensitivity, specificity, n_calibration``; ``interval`` names the method (the bootstrap percentile
        interval over the run and the calibration set).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.calibrate import calibrate, corrected_pass_rate
    >>> human = pd.Series(["PASS"] * 8 + ["FAIL"] * 4, index=range(12))
    >>> judge = pd.Series(["PASS"] * 7 + ["FAIL"] + ["FAIL"] * 3 + ["PASS"], index=range(12))
    >>> run = pd.Series(["PASS"] * 60 + ["FAIL"] * 40)
    >>> row = corrected_pass_rate(run, calibrate(judge, human), rng=0).iloc[0]
    >>> float(row["observed"]), round(float(row["corrected"]), 3)  # (0.6 + 0.75 - 1) / (0.875 + 0.75 - 1)
    (0.6, 0.56)
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

    def correct(obs, c):
        with np.errstate(divide="ignore", invalid="ignore"):  # a resample without PASS or FAIL is dropped below
            se = c[..., 0] / (c[..., 0] + c[..., 1])
            sp = c[..., 2] / (c[..., 2] + c[..., 3])
            return (obs + sp - 1) / (se + sp - 1), se, sp

    corrected, se, sp = correct(observed, cells.astype(float))
    row = {"n_run": n_run, "observed": observed, "corrected": np.nan, "ci_low": np.nan, "ci_high": np.nan,
           "ci_low_unclipped": np.nan, "ci_high_unclipped": np.nan, "interval": "bootstrap-percentile",
           "sensitivity": float(se), "specificity": float(sp), "n_calibration": int(cells.sum())}
    if se + sp - 1 <= 0:
        warnings.warn(f"the judge is no better than chance on the calibration set (sensitivity {se:.2f} + "
                      f"specificity {sp:.2f} <= 1); its pass rate cannot be corrected (NaN).", EvalkitWarning,
                      stacklevel=2)
        return pd.DataFrame([row])
    if not 0.0 <= corrected <= 1.0:
        warnings.warn(f"the corrected pass rate {corrected:.3f} is outside [0, 1]: the judge's error rates on the "
                      f"calibration set (sensitivity {se:.2f}, specificity {sp:.2f}, n = {int(cells.sum())}) do not "
                      f"fit this run (observed {observed:.3f}); reported unclipped. Label more cases like this run's.",
                      EvalkitWarning, stacklevel=2)
    gen = check_rng(rng)
    obs_star = gen.binomial(n_run, observed, size=n_resamples) / n_run
    cells_star = gen.multinomial(cells.sum(), cells / cells.sum(), size=n_resamples).astype(float)
    boot, se_star, sp_star = correct(obs_star, cells_star)
    boot = boot[np.isfinite(boot) & (se_star + sp_star - 1 > 0)]
    if not len(boot):
        warnings.warn(f"none of the {n_resamples} bootstrap resamples of the calibration set can be corrected for (each "
                      "lacks human PASS or FAIL labels, or its judge is no better than chance): the interval is NaN. "
                      "Label more cases, or draw more resamples.", EvalkitWarning, stacklevel=2)
    alpha = (1 - confidence_level) / 2
    low, high = np.quantile(boot, [alpha, 1 - alpha]) if len(boot) else (np.nan, np.nan)
    row.update(corrected=float(corrected), ci_low=float(np.clip(low, 0, 1)), ci_high=float(np.clip(high, 0, 1)),
               ci_low_unclipped=float(low), ci_high_unclipped=float(high))
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
