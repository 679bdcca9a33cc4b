"""deepeval results: the ``EvaluationResult`` that ``deepeval.evaluate`` returns, or its ``model_dump()`` dict."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd

from evalkit.logs._shared import PASS_FAIL, digest, get, package_version, results_table, row, text


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
        Not an EvaluationResult; a test result without a name; a metric without a name, with a ``success``
        other than True/False (on a metric that did not raise), or a score or threshold that is not a finite
        number (the message names the test result and the metric by position).

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
        name = get(test, "name")
        if name is None:
            raise ValueError(f"`result.test_results[{position}]` has no name; expected a deepeval TestResult.")
        metrics = get(test, "metrics_data")
        if not metrics:
            skipped["test results without metrics_data"] += 1
            continue
        for number, metric in enumerate(metrics):
            where = f"`result.test_results[{position}].metrics_data[{number}]`"
            error = get(metric, "error")
            score, threshold = (_deepeval_number(get(metric, key), key, where) for key in ("score", "threshold"))
            metric_name, success = get(metric, "name"), get(metric, "success")
            if not isinstance(metric_name, str) or not metric_name:
                raise ValueError(f"{where} has name {metric_name!r}; expected the metric's name (a non-empty string).")
            if error is None and not isinstance(success, (bool, np.bool_)):
                raise ValueError(f"{where} has success {success!r}; expected True or False (deepeval's verdict).")
            definition = [get(metric, key) for key in ("name", "threshold", "strict_mode", "evaluation_model")]
            rows.append(row(case_id=str(name), sample_id=str(name), rubric=metric_name,
                             rubric_version=digest(definition), model=model,
                             verdict="PASS" if success else "FAIL", error=error, score=score, threshold=threshold,
                             reason=get(metric, "reason"), input=text(get(test, "input")),
                             output=text(get(test, "actual_output")), target=text(get(test, "expected_output")),
                             grader=get(metric, "evaluation_model")))
    if not rows:
        raise ValueError("`result` holds no metric results.")
    source = {"tool": "deepeval", "version": package_version(result, "deepeval"), "path": None,
              "format": "EvaluationResult" if not isinstance(result, dict) else "dict",
              "test_run_id": get(result, "test_run_id")}
    rubrics = {row["rubric"]: {"version": row["rubric_version"], "threshold": row["threshold"]} for row in rows}
    return results_table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL",
                  extra=["sample_id", "score", "threshold", "input", "output", "target", "grader"], source=source,
                  skipped=skipped, tool_metrics=None, rubrics=rubrics, repeat=None)


def _deepeval_number(value, key: str, where: str) -> float:
    """A metric's score or threshold as a float (NaN where deepeval recorded none); anything else is refused."""
    if value is None:
        return np.nan
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) or np.isinf(value):
        raise ValueError(f"{where} has {key} {value!r}; expected a finite number (or none).")
    return float(value)
