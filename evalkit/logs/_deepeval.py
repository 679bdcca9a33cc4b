"""deepeval results: the ``EvaluationResult`` that ``deepeval.evaluate`` returns, or its ``model_dump()`` dict."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from evalkit.logs._shared import PASS_FAIL, digest, get, identifier, number, package_version, results_table, row, text

_EXTRA = ["sample_id", "score", "threshold", "input", "output", "target", "grader"]


def from_deepeval(result, *, model: str = "unknown") -> pd.DataFrame:
    """A deepeval ``EvaluationResult`` (what ``deepeval.evaluate`` returns) as a results table.

    One row per test case and metric: ``case_id`` is the test case's name, ``rubric`` the metric's name,
    ``verdict`` PASS when deepeval's ``success`` is true, ``score``, ``reason`` and ``grader`` (the metric's
    ``evaluation_model``) as deepeval recorded them. A metric that raised (deepeval's ``error``, kept when
    ``ErrorConfig(ignore_errors=True)``) is an error row, not a FAIL. ``rubric_version`` covers the
    metric's name, threshold, strict mode and evaluation model.

    Parameters
    ----------
    result : deepeval EvaluationResult, or its ``model_dump()`` dict
        Either form; anything with ``test_results`` whose items have ``name`` and ``metrics_data``.
    model : str, default "unknown"
        The system that produced the outputs (deepeval does not record it).

    Returns
    -------
    DataFrame
        The results table with ``sample_id``, ``score``, ``threshold``, ``input``, ``output``, ``target``,
        ``grader``; ``score`` and ``threshold`` are NaN where deepeval recorded none.

    Raises
    ------
    TypeError, ValueError
        Not an EvaluationResult; a test result without a name (or two test results of one name, which would be one
        case); a metric without a name (the message names the test result and the metric by position). A score or
        threshold that is not a finite number, or a ``success`` other than True/False on a metric that did not
        raise, makes that metric's row an error row (with an :class:`~evalkit.EvalkitWarning`), not a failed read.

    Examples
    --------
    >>> from evalkit import logs
    >>> result = {"test_results": [{"name": "t1", "input": "q", "actual_output": "a", "expected_output": "a",
    ...           "metrics_data": [{"name": "Exact", "threshold": 1.0, "success": True, "score": 1.0,
    ...                             "reason": "same", "evaluation_model": None, "error": None}]}]}
    >>> logs.from_deepeval(result)[["case_id", "rubric", "verdict", "score", "reason"]]
      case_id rubric verdict  score reason
    0      t1  Exact    PASS    1.0   same
    """
    tests = get(result, "test_results")
    if tests is None or isinstance(tests, (str, bytes)) or not hasattr(tests, "__iter__"):
        raise TypeError(f"`result` must be a deepeval EvaluationResult (or its model_dump() dict) with "
                        f"`test_results`; got {type(result).__name__}.")
    if not isinstance(model, str) or not model:
        raise TypeError(f"`model` must be a non-empty string; got {model!r}.")
    rows, skipped = [], Counter()
    for position, test in enumerate(tests):
        where = f"test_results[{position}]"
        if get(test, "name") is None:
            raise ValueError(f"`result.{where}` has no name; expected a deepeval TestResult.")
        name = identifier(get(test, "name"), f"`result.{where}`", "name")
        metrics = get(test, "metrics_data")
        if not metrics:
            skipped["test results without metrics_data"] += 1
            continue
        if isinstance(metrics, (str, bytes, dict)) or not hasattr(metrics, "__iter__"):
            raise ValueError(f"`result.{where}.metrics_data` is a {type(metrics).__name__}; expected a list of metrics.")
        base = {"case_id": name, "sample_id": name, "_id": get(test, "name"), "model": model,
                "input": text(get(test, "input")), "output": text(get(test, "actual_output")),
                "target": text(get(test, "expected_output"))}
        rows += [_metric_row(base, metric, f"{where}.metrics_data[{number_}]") for number_, metric in enumerate(metrics)]
    if not rows:
        raise ValueError("`result` holds no metric results.")
    source = {"tool": "deepeval", "version": package_version(result, "deepeval"), "path": None,
              "format": "EvaluationResult" if not isinstance(result, dict) else "dict",
              "test_run_id": get(result, "test_run_id")}
    rubrics = {each["rubric"]: {"version": each["rubric_version"], "threshold": each["threshold"]} for each in rows}
    return results_table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL", extra=_EXTRA, source=source,
                         skipped=skipped, tool_metrics=None, rubrics=rubrics, repeat=None)


def _metric_row(base: dict, metric, where: str) -> dict:
    """One metric's row: deepeval's verdict and score; an error row when the metric raised, or when its score,
    threshold or success is not what deepeval writes."""
    metric_name = get(metric, "name")
    if not isinstance(metric_name, str) or not metric_name:
        raise ValueError(f"`result.{where}` has name {metric_name!r}; expected the metric's name (a non-empty string).")
    error, success = get(metric, "error"), get(metric, "success")
    (score, bad_score), (threshold, bad_threshold) = (number(get(metric, key), key) for key in ("score", "threshold"))
    problem = bad_score or bad_threshold
    if problem is None and not isinstance(success, (bool, np.bool_)):
        problem = f"success is {success!r}, not true or false (deepeval's verdict)"
    definition = [get(metric, key) for key in ("name", "threshold", "strict_mode", "evaluation_model")]
    return row(**base, rubric=metric_name, rubric_version=digest(definition), verdict="PASS" if success else "FAIL",
               score=score, threshold=threshold, reason=text(get(metric, "reason")), where=where,
               error=text(error) if error is not None else problem, bad=error is None and problem is not None,
               grader=text(get(metric, "evaluation_model")))
