"""Gate a release: is the candidate worse than the baseline by more than a margin, with stated confidence?

Two judged runs of the same cases (evalkit's saved results, or another tool's log that :mod:`evalkit.logs` reads)
are paired by case; a case judged several times (repeats, a log's epochs) is one case whose pass rate is the mean
of its repeats, so the repeats of a case are never counted as independent evidence. The change is
``candidate - baseline`` in pass rate, with a two-sided interval at ``confidence_level``:

- **regression** (exit 1): the whole interval lies below ``-margin`` (the candidate is worse than the margin);
- **no regression** (exit 0): the whole interval lies above ``-margin`` (non-inferior within the margin);
- **inconclusive** (exit 2): the interval holds ``-margin``: too few cases to tell; the result says about how many
  cases would tell the observed change from the margin with 80% power (the interval's half-width scaled as
  1 / sqrt(n); ``benchmarks/bench_gate.py`` measures the power such a plan delivers).

A candidate that did not change is called a regression only when the interval excludes it, so at most
``1 - confidence_level`` of the time; ``benchmarks/bench_gate.py`` measures it with a noisy judge (0.010-0.030 at 95%
with margin 0, never with a margin), and the power at the planned number of cases. Parse failures and errors are counted apart from FAILs: an unparseable answer counts as a FAIL in the pass
rate (as in :func:`evalkit.judge.pass_rate`) and is reported beside it; an error (no verdict) leaves its repeat out.
A run in which more than ``max_broken`` of the rows are errors or unparseable is refused: the judge broke, and its
pass rate says nothing about the system. Runs judged by different judges (model, its parameters, rubric version)
are refused, naming what differs: a judge change is not a system change.

With human labels of both runs' outputs on a random subset of the cases, the change is the humans' pass rate,
estimated from the judge on every case and the labels (:func:`evalkit.infer.difference`: the judge calibrated on
every label of both runs).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from pathlib import Path
from xml.etree import ElementTree as ET

import numpy as np
import pandas as pd

from evalkit import _display
from evalkit._coerce import as_pass, verdict_levels
from evalkit._stats import cluster_difference_interval, mcnemar_exact_p, newcombe_paired_interval
from evalkit._tables import epoch_column
from evalkit._validation import check_columns, check_dataframe, check_level, check_number, warn

__all__ = ["GateResult", "decide", "check", "read_run", "EXIT_CODES"]

#: The exit status of ``evalkit gate`` for each outcome; 3 is bad input or usage (a file missing or unreadable, judges
#: that differ, a run that broke).
EXIT_CODES = {"no regression": 0, "regression": 1, "inconclusive": 2, "bad input": 3}

_COUNT_COLUMNS = ["run", "n_rows", "n_cases", "n_pass", "n_fail", "n_unparseable", "n_error", "pass_rate"]


@dataclass(frozen=True)
class GateResult:
    """The gate's verdict and the figures behind it (:func:`decide`).

    Attributes
    ----------
    status : str
        ``"no regression"``, ``"regression"`` or ``"inconclusive"``.
    exit_code : int
        0, 1 or 2 (:data:`EXIT_CODES`).
    estimate, ci_low, ci_high : float
        The change ``candidate - baseline`` in pass rate and its two-sided interval at ``confidence_level``.
    interval : str
        How the interval was made: ``"newcombe"`` (one verdict per case in each run, with the exact McNemar test),
        ``"cluster-betting"`` (repeats: the betting interval of the per-case mean change) or the labelled estimate's
        (``"calibrated (calibrated-t)"`` ...).
    p_val : float
        Two-sided test of no change (exact McNemar, or the betting p-value); NaN where none is made.
    margin, confidence_level : float
    n_cases : int
        Cases with a verdict in both runs (the pairs the comparison uses).
    n_labelled : int
        Cases with human labels of both runs (0 without labels).
    estimand : str
        ``"judge pass rate"`` or ``"human pass rate"`` (with labels).
    counts : DataFrame
        One row per run: ``run, n_rows, n_cases, n_pass, n_fail, n_unparseable, n_error, pass_rate`` (FAILs,
        parse failures and errors apart; ``pass_rate`` the mean over cases of each case's rate).
    n_only_baseline, n_only_candidate : int
        Cases with a verdict in one run only (left out, and said so).
    repeats : int
        The most repeats any case has in either run.
    discordant : float
        Share of the paired cases whose pass rate changed.
    cases_needed : int or None
        Inconclusive only: about how many cases would tell the observed change from ``-margin`` (``power``, 80%): the
        interval's half-width scaled as 1 / sqrt(n); None otherwise, or when the change sits on the margin.
    message : str
        The verdict in one line, with the figures.
    """

    status: str
    exit_code: int
    estimate: float
    ci_low: float
    ci_high: float
    interval: str
    p_val: float
    margin: float
    confidence_level: float
    n_cases: int
    n_labelled: int
    estimand: str
    counts: pd.DataFrame = field(repr=False)
    n_only_baseline: int
    n_only_candidate: int
    repeats: int
    discordant: float
    cases_needed: int | None
    message: str

    def _rows(self) -> tuple[str, list[dict]]:
        title = f"GateResult: {self.status} (exit {self.exit_code}), {self.n_cases} cases paired"
        rows = [{"quantity": f"change in {self.estimand}", "estimate": _display.number(self.estimate, sign=True),
                 "interval": _display.interval(self.ci_low, self.ci_high, level=self.confidence_level, sign=True),
                 "method": self.interval, "note": "candidate - baseline"},
                {"quantity": "margin", "estimate": _display.number(-self.margin, sign=True),
                 "note": "a regression is a change below it"},
                {"quantity": "p-value", "estimate": _display.p_value(self.p_val), "note": "two-sided test of no change"},
                {"quantity": "cases with a changed verdict", "estimate": _display.number(self.discordant)}]
        if self.n_labelled:
            rows.append({"quantity": "cases labelled in both runs", "estimate": str(self.n_labelled)})
        if self.cases_needed is not None:
            rows.append({"quantity": "cases needed (about)", "estimate": str(self.cases_needed),
                         "note": "to tell this change from the margin"})
        if self.n_only_baseline or self.n_only_candidate:
            rows.append({"quantity": "cases left out", "estimate": str(self.n_only_baseline + self.n_only_candidate),
                         "note": f"in one run only (baseline {self.n_only_baseline}, candidate {self.n_only_candidate})"})
        return title, rows

    def __repr__(self) -> str:
        return _display.result_text(*self._rows()) + f"\n{self.message}"

    def _repr_html_(self) -> str:
        return _display.result_html(*self._rows()) + f"<p>{html.escape(self.message)}</p>" + self.counts.to_html(index=False)

    @property
    def table(self) -> pd.DataFrame:
        """One row: the verdict and its figures (``status, estimate, ci_low, ci_high, p_val, margin, level, ...``)."""
        return pd.DataFrame([{
            "status": self.status, "exit_code": self.exit_code, "estimate": self.estimate, "ci_low": self.ci_low,
            "ci_high": self.ci_high, "p_val": self.p_val, "margin": self.margin, "level": self.confidence_level,
            "interval": self.interval, "estimand": self.estimand, "n_cases": self.n_cases,
            "n_labelled": self.n_labelled, "repeats": self.repeats, "discordant": self.discordant,
            "cases_needed": self.cases_needed, "n_only_baseline": self.n_only_baseline,
            "n_only_candidate": self.n_only_candidate}])

    def to_markdown(self) -> str:
        """A Markdown summary for a CI job's page (e.g. ``$GITHUB_STEP_SUMMARY``)."""
        lines = [f"## evalkit gate: {self.status}", "", self.message, "",
                 "| quantity | value |", "|---|---|",
                 f"| change in {self.estimand} (candidate - baseline) | {self.estimate:+.3f} |",
                 f"| {self.confidence_level:.0%} interval ({self.interval}) | [{self.ci_low:+.3f}, {self.ci_high:+.3f}] |",
                 f"| margin | {self.margin:.3f} (a regression is a change below {-self.margin:+.3f}) |",
                 f"| p-value (no change) | {_p(self.p_val)} |",
                 f"| cases paired | {self.n_cases} |"]
        if self.n_labelled:
            lines.append(f"| cases with human labels of both runs | {self.n_labelled} |")
        if self.cases_needed is not None:
            lines.append(f"| cases this margin needs (about) | {self.cases_needed} |")
        if self.n_only_baseline or self.n_only_candidate:
            lines.append(f"| cases left out (one run only) | baseline {self.n_only_baseline}, "
                         f"candidate {self.n_only_candidate} |")
        lines += ["", "| run | rows | cases | PASS | FAIL | unparseable | errors | pass rate |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in self.counts.itertuples(index=False):
            lines.append(f"| {row.run} | {row.n_rows} | {row.n_cases} | {row.n_pass} | {row.n_fail} | "
                         f"{row.n_unparseable} | {row.n_error} | {row.pass_rate:.3f} |")
        return "\n".join(lines) + "\n"

    def to_junit(self, *, name: str = "evalkit gate") -> str:
        """JUnit XML (one test case): a regression is a failure, an inconclusive gate a skipped test."""
        suite = ET.Element("testsuite", name=name, tests="1", failures=str(int(self.status == "regression")),
                           errors="0", skipped=str(int(self.status == "inconclusive")))
        case = ET.SubElement(suite, "testcase", classname="evalkit.gate", name=f"{self.estimand} non-inferiority")
        if self.status == "regression":
            ET.SubElement(case, "failure", message=self.message, type="regression").text = self.to_markdown()
        elif self.status == "inconclusive":
            ET.SubElement(case, "skipped", message=self.message)
        ET.SubElement(case, "system-out").text = self.to_markdown()
        return _xml(suite)


def bad_input_junit(message: str, *, name: str = "evalkit gate") -> str:
    """JUnit XML for a gate that could not run (bad input): one test case with an error."""
    suite = ET.Element("testsuite", name=name, tests="1", failures="0", errors="1", skipped="0")
    case = ET.SubElement(suite, "testcase", classname="evalkit.gate", name="inputs")
    ET.SubElement(case, "error", message=message, type="bad input")
    return _xml(suite)


def bad_input_markdown(message: str) -> str:
    """A Markdown summary for a gate that could not run (bad input); the message (file names) is escaped."""
    return f"## evalkit gate: bad input\n\n{_escape_markdown(message)}\n"


def _xml(element) -> str:
    ET.indent(element)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(element, encoding="unicode") + "\n"


def _escape_markdown(text: str) -> str:
    """Untrusted text (file names, case ids) as literal Markdown: no markup, links or HTML."""
    return "".join("\\" + ch if ch in "\\`*_{}[]()<>#+-.!|~" else ch for ch in text)


def _p(value: float) -> str:
    return "n/a" if value is None or not np.isfinite(value) else (f"{value:.2g}" if value < 0.001 else f"{value:.3f}")


# ------------------------------------------------------------------------------------------------ reading
def read_run(path, *, rubric: str | None = None) -> pd.DataFrame:
    """A results table from a file: evalkit's saved results (:func:`evalkit.judge.save_results`), or another tool's
    log (inspect_ai ``.eval``/``.json``, promptfoo ``.json``/``.jsonl``, OpenAI evals ``.jsonl``, an
    lm-evaluation-harness folder).

    Parameters
    ----------
    path : str or Path
    rubric : str, optional
        The rubric (a log's scorer, assertion or metric) to keep, where the file holds several.

    Raises
    ------
    FileNotFoundError
        The file does not exist (named).
    ValueError
        The file is none of these formats (each reader's reason given), or holds several rubrics and ``rubric``
        names none of them.

    Examples
    --------
    >>> from evalkit import datasets, gate
    >>> run = gate.read_run(datasets.demo_path() / "logs" / "promptfoo_v2.json", rubric="llm-rubric")
    >>> run["sample_id"].nunique(), int(run["repeat"].max())
    (10, 2)
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file.")
    table = _read_any(path)
    return _one_rubric(table, rubric, path)


def _read_any(path: Path) -> pd.DataFrame:
    from evalkit import judge, logs

    suffix = path.suffix.lower()
    reasons = []
    if path.is_file() and suffix in (".parquet", ".pq") or (suffix in (".jsonl", ".ndjson") and _has_metadata(path)):
        return judge.load_results(path)
    readers = {".eval": [logs.read_inspect], ".json": [logs.read_promptfoo, logs.read_inspect],
               ".jsonl": [logs.read_openai_evals, logs.read_promptfoo]}.get(suffix, [])
    if path.is_dir():
        readers = [logs.read_lm_eval]
    for reader in readers:
        try:
            return reader(path)
        except (ValueError, KeyError, TypeError) as exc:
            reasons.append(f"{reader.__name__}: {exc}")
    if not readers:
        raise ValueError(f"{path}: not a results file evalkit reads (evalkit's .jsonl/.parquet results, an inspect_ai "
                         ".eval/.json log, a promptfoo .json/.jsonl, an OpenAI evals .jsonl, an lm-evaluation-harness "
                         "folder).")
    raise ValueError(f"{path}: not a results file evalkit reads; " + "; ".join(reasons))


def _has_metadata(path: Path) -> bool:
    with open(path, "rb") as handle:
        return handle.readline(1 << 20).lstrip().startswith(b'{"__metadata__"')


def _one_rubric(table: pd.DataFrame, rubric: str | None, path) -> pd.DataFrame:
    if "rubric" not in table.columns:
        return table
    names = pd.unique(table["rubric"].dropna().astype(str)).tolist()
    if rubric is None:
        if len(names) > 1:
            raise ValueError(f"{path} holds several rubrics {names}; choose one with --rubric (rubric=).")
        return table
    if rubric not in names:
        raise ValueError(f"{path} has no rubric {rubric!r}; it holds {names}.")
    kept = table[table["rubric"].astype(str) == rubric].reset_index(drop=True)
    kept.attrs = dict(table.attrs)
    versions = (table.attrs.get("rubrics") or {}).get(rubric) or {}
    if versions:
        kept.attrs["rubric"] = {**(table.attrs.get("rubric") or {}), "name": rubric, **versions}
    return kept


# ----------------------------------------------------------------------------------------------- the check
def _case_column(run: pd.DataFrame) -> str:
    """The column naming the case: a log's epochs or evalkit's repeats group by it (``sample_id``), else ``case_id``."""
    return epoch_column(run) or "case_id"


def _per_case(run: pd.DataFrame, name: str, pass_levels) -> tuple[pd.DataFrame, dict]:
    """Each case's mean pass over its judged repeats and its number of judged repeats; the run's counts."""
    run = check_dataframe(run, name).reset_index(drop=True)
    check_columns(run, ["case_id", "verdict"], name)
    case = _case_column(run)
    error = run["error"].notna() if "error" in run.columns else pd.Series(False, index=run.index)
    parsed = run["parsed"].fillna(False).astype(bool) if "parsed" in run.columns else pd.Series(True, index=run.index)
    levels, passing = verdict_levels(run, pass_levels=pass_levels)
    judged = run[~error]
    passed = as_pass(judged["verdict"], name, levels=levels, pass_levels=passing).fillna(False).astype(bool)
    frame = pd.DataFrame({"case": judged[case].astype(str).to_numpy(), "pass": passed.to_numpy(dtype=float)})
    per_case = frame.groupby("case", sort=True)["pass"].agg(["mean", "size"])
    counts = {"run": name, "n_rows": len(run), "n_cases": int(run[case].nunique()), "n_pass": int(passed.sum()),
              "n_fail": int((~passed & parsed[~error]).sum()), "n_unparseable": int((~parsed[~error]).sum()),
              "n_error": int(error.sum()),
              "pass_rate": float(per_case["mean"].mean()) if len(per_case) else np.nan}
    return per_case, counts


def _same_judge(baseline: pd.DataFrame, candidate: pd.DataFrame) -> None:
    from evalkit import judge

    changes = judge.identity_changes(baseline, candidate)
    if changes:
        raise ValueError("the runs were judged by different judges (" + "; ".join(changes) + "): a judge change is not "
                         "a system change; re-judge the baseline's outputs with the candidate's judge "
                         "(evalkit.judge.rejudge) and gate on that.")


def _labelled_difference(judge_b, judge_a, human_b, human_a, confidence_level) -> dict:
    """The humans' change (candidate - baseline) from the judge on every case and labels on a few: the one place that
    calls :mod:`evalkit.infer`."""
    from evalkit import infer

    row = infer.difference(judge_b, judge_a, human_b, human_a, confidence_level=confidence_level, bounds=(0, 1)).iloc[0]
    return {"estimate": float(row["estimate"]), "ci_low": float(row["ci_low"]), "ci_high": float(row["ci_high"]),
            "p_val": float(row["p_val"]), "interval": f"{row['method']} ({row['interval']})",
            "n_labelled": int(row["n_labelled"])}


def _labels_table(labels, cases: pd.Index, pass_levels) -> tuple[pd.Series, pd.Series]:
    labels = check_dataframe(labels, "labels")
    check_columns(labels, ["case_id", "baseline", "candidate"], "labels")
    if labels["case_id"].astype(str).duplicated().any():
        dup = labels["case_id"].astype(str)[labels["case_id"].astype(str).duplicated()].iloc[0]
        raise ValueError(f"`labels` holds case {dup!r} twice; one row per case.")
    table = labels.assign(case_id=labels["case_id"].astype(str)).set_index("case_id")
    unknown = table.index.difference(cases)
    if len(unknown):
        raise ValueError(f"`labels` names {len(unknown)} case(s) not judged in both runs, e.g. {unknown[0]!r}.")
    out = []
    for side in ("baseline", "candidate"):
        values = table[side].dropna()
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            if not values.isin([0, 1]).all():
                raise ValueError(f"`labels` column {side!r} must hold PASS/FAIL, booleans or 0/1; got "
                                 f"{values[~values.isin([0, 1])].iloc[0]!r}.")
            values = values == 1
        out.append(as_pass(values, f"labels column {side!r}", pass_levels=pass_levels or ("PASS",)).astype(float))
    return out[0], out[1]


def decide(baseline: pd.DataFrame, candidate: pd.DataFrame, *, margin: float = 0.05, confidence_level: float = 0.95,
           labels: pd.DataFrame | None = None, pass_levels=None, max_broken: float = 0.05,
           power: float = 0.8) -> GateResult:
    """Is the candidate worse than the baseline by more than ``margin``? One verdict, with the figures behind it.

    Parameters
    ----------
    baseline, candidate : DataFrame
        Results tables of one rubric (:func:`evalkit.judge.run_judge`, :func:`evalkit.judge.load_results`,
        :func:`read_run`), judging the same cases with the same judge. Repeats of a case (evalkit's ``repeat``,
        a log's epochs: the rows sharing a ``sample_id``) are one case.
    margin : float, default 0.05
        The largest drop in pass rate that is not a regression (non-inferiority margin), in [0, 1).
    confidence_level : float, default 0.95
        The two-sided interval's level.
    labels : DataFrame, optional
        Human labels of both runs' outputs on a random subset of the cases: ``case_id, baseline, candidate``
        (PASS/FAIL, booleans or 0/1). The change is then the humans' pass rate, estimated from the judge on every
        case and these labels (the judge calibrated on every label, :func:`evalkit.infer.difference`).
    pass_levels : sequence of str, optional
        The verdicts that pass (default: the rubric's).
    max_broken : float, default 0.05
        The largest share of a run's rows that may be errors or unparseable answers; more is refused (ValueError).
    power : float, default 0.8
        The power of the plan an inconclusive result gives (``cases_needed``).

    Returns
    -------
    GateResult

    Raises
    ------
    ValueError
        Judges that differ (named), a broken run, no case in common.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import gate
    >>> ids = [f"c{i}" for i in range(400)]
    >>> a = pd.DataFrame({"case_id": ids, "verdict": ["PASS"] * 360 + ["FAIL"] * 40})
    >>> b = pd.DataFrame({"case_id": ids, "verdict": ["PASS"] * 352 + ["FAIL"] * 8 + ["PASS"] * 4 + ["FAIL"] * 36})
    >>> result = gate.decide(a, b, margin=0.05)
    >>> result.status, result.exit_code, round(result.estimate, 3)
    ('no regression', 0, -0.01)
    >>> worse = pd.DataFrame({"case_id": ids, "verdict": ["PASS"] * 300 + ["FAIL"] * 100})
    >>> gate.decide(a, worse, margin=0.05).status
    'regression'
    """
    confidence_level = check_level(confidence_level)
    margin = check_number(margin, "margin", low=0.0, high=1.0, closed="left")
    max_broken = check_number(max_broken, "max_broken", low=0.0, high=1.0)
    _same_judge(baseline, candidate)
    case_a, counts_a = _per_case(baseline, "baseline", pass_levels)
    case_b, counts_b = _per_case(candidate, "candidate", pass_levels)
    for counts in (counts_a, counts_b):
        broken = (counts["n_error"] + counts["n_unparseable"]) / max(1, counts["n_rows"])
        if broken > max_broken:
            raise ValueError(f"the {counts['run']} run broke: {counts['n_error']} error(s) and {counts['n_unparseable']} "
                             f"unparseable answer(s) in {counts['n_rows']} rows ({broken:.1%} > max_broken "
                             f"{max_broken:.1%}); fix the judge run (re-run with its cache to resume) before gating.")
    common = case_a.index.intersection(case_b.index)
    if not len(common):
        raise ValueError("the baseline and the candidate share no case with a verdict in both; gate runs of the same "
                         "cases.")
    only_a, only_b = len(case_a.index.difference(common)), len(case_b.index.difference(common))
    if only_a or only_b:
        warn(f"{len(common)} cases judged in both runs are compared; left out: {only_a} case(s) judged in the "
                      f"baseline only, {only_b} in the candidate only.")
    x_a, x_b = case_a.loc[common, "mean"].to_numpy(), case_b.loc[common, "mean"].to_numpy()
    repeats = int(max(case_a["size"].max(), case_b["size"].max()))
    d = x_b - x_a
    discordant = float(np.mean(d != 0))
    n_labelled = 0
    if labels is not None:
        human_a, human_b = _labels_table(labels, common, pass_levels)
        found = _labelled_difference(pd.Series(x_b, index=common), pd.Series(x_a, index=common), human_b, human_a,
                                     confidence_level)
        estimand, n_labelled = "human pass rate", found.pop("n_labelled")
    else:
        found = _judge_difference(x_a, x_b, common, repeats, confidence_level)
        estimand = "judge pass rate"
    if found["ci_high"] < -margin:
        status = "regression"
    elif found["ci_low"] > -margin:
        status = "no regression"
    else:
        status = "inconclusive"
    needed = _cases_needed(found, margin, len(common), power, confidence_level) if status == "inconclusive" else None
    message = _message(status, found, margin, confidence_level, len(common), estimand, needed, n_labelled)
    if only_a or only_b:
        message += f" Left out: {only_a} case(s) in the baseline only, {only_b} in the candidate only."
    return GateResult(status=status, exit_code=EXIT_CODES[status], margin=margin, confidence_level=confidence_level,
                      n_cases=len(common), n_labelled=n_labelled, estimand=estimand,
                      counts=pd.DataFrame([counts_a, counts_b], columns=_COUNT_COLUMNS),
                      n_only_baseline=only_a, n_only_candidate=only_b, repeats=repeats, discordant=discordant,
                      cases_needed=needed, message=message, **found)


def _judge_difference(x_a: np.ndarray, x_b: np.ndarray, cases: pd.Index, repeats: int, confidence_level: float) -> dict:
    """The change in the judge's pass rate: Newcombe's paired interval and the exact McNemar test with one verdict per
    case; with repeats, the betting interval of the per-case mean change (cases taken in the order of their sorted
    ids, then a seeded permutation: the same answer for the same data)."""
    d = x_b - x_a
    if repeats == 1:
        pa, pb = x_a.astype(bool), x_b.astype(bool)
        n11, n10, n01 = int((pa & pb).sum()), int((pa & ~pb).sum()), int((~pa & pb).sum())
        low, high = newcombe_paired_interval(n11, n10, n01, len(d) - n11 - n10 - n01, confidence_level)
        return {"estimate": float(d.mean()), "ci_low": float(low), "ci_high": float(high),
                "p_val": mcnemar_exact_p(n10, n01), "interval": "newcombe"}
    low, high, _ = cluster_difference_interval(d, np.asarray(cases), lo=-1.0, hi=1.0, confidence_level=confidence_level)
    return {"estimate": float(d.mean()), "ci_low": float(low), "ci_high": float(high), "p_val": np.nan,
            "interval": "cluster-betting"}


def _cases_needed(found: dict, margin: float, n: int, power: float, confidence_level: float) -> int | None:
    """About how many cases would tell the observed change from ``-margin`` with ``power``: the interval's half-width
    on the margin's side, scaled as 1 / sqrt(n) until the change's distance from the margin is (z_a + z_power) / z_a
    half-widths (the usual sample-size rule, for the change observed; a change above 0 counts as 0). It scales the interval the gate made (Newcombe,
    betting over repeats, or the labelled estimate's), so repeats and labels count; from a handful of cases it is
    rough. None when the change sits on the margin (no number of cases can tell)."""
    from scipy import stats

    estimate = found["estimate"]
    # toward "no regression" the gap is at most the margin: a pilot that looks better than the baseline plans as if
    # the candidate did not change (its lead is as likely noise as not)
    gap = min(estimate + margin, margin) if estimate > -margin else -(estimate + margin)
    half = (estimate - found["ci_low"]) if estimate > -margin else (found["ci_high"] - estimate)
    if gap < 1e-9 or not np.isfinite(half) or half <= 0:
        return None
    z_a = stats.norm.ppf(0.5 + confidence_level / 2)
    factor = (z_a + stats.norm.ppf(power)) / z_a
    return max(n + 1, math.ceil(n * (factor * half / gap) ** 2))


def _message(status, found, margin, level, n, estimand, needed, n_labelled) -> str:
    figures = (f"change in {estimand} {found['estimate']:+.3f}, {level:.0%} interval [{found['ci_low']:+.3f}, "
               f"{found['ci_high']:+.3f}] ({found['interval']}), margin {margin:.3f}, {n} cases"
               + (f", {n_labelled} labelled" if n_labelled else ""))
    if status == "regression":
        return f"regression: the candidate is worse than the margin: {figures}."
    if status == "no regression":
        return f"no regression: the candidate is within the margin: {figures}."
    plan = (f"; about {needed} cases would tell a change of {found['estimate']:+.3f} from the margin" if needed is not None
            else "; the change sits on the margin: no number of cases can tell")
    return f"inconclusive: too few cases to tell: {figures}{plan}."


def check(baseline: pd.DataFrame, candidate: pd.DataFrame, *, allow_inconclusive: bool = False, **options) -> GateResult:
    """:func:`decide` as an assertion for a test suite: raises AssertionError with the figures unless no regression.

    Parameters
    ----------
    baseline, candidate : DataFrame or path
        Results tables, or files :func:`read_run` reads.
    allow_inconclusive : bool, default False
        Let an inconclusive gate pass (the figures are still returned).
    **options
        :func:`decide`'s options (``margin``, ``confidence_level``, ``labels``, ...).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import gate
    >>> ids = [f"c{i}" for i in range(300)]
    >>> a = pd.DataFrame({"case_id": ids, "verdict": ["PASS"] * 270 + ["FAIL"] * 30})
    >>> gate.check(a, a.copy(), margin=0.05).status
    'no regression'
    >>> gate.check(a, a.assign(verdict="FAIL"), margin=0.05)
    Traceback (most recent call last):
    ...
    AssertionError: regression: the candidate is worse than the margin: change in judge pass rate -0.900, ...
    """
    if not isinstance(baseline, pd.DataFrame):
        baseline = read_run(baseline)
    if not isinstance(candidate, pd.DataFrame):
        candidate = read_run(candidate)
    result = decide(baseline, candidate, **options)
    if result.status == "regression" or (result.status == "inconclusive" and not allow_inconclusive):
        raise AssertionError(result.message)
    return result
