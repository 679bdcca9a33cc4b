"""ragas results: ``ragas.evaluate(...)`` or its ``to_pandas()`` table, one number per sample and metric."""

from __future__ import annotations

import math
import numbers
from collections import Counter

import numpy as np
import pandas as pd

from evalkit._validation import check_dataframe, check_number, show
from evalkit.logs._shared import PASS_FAIL, digest, number, package_version, results_table, row, text

_EXTRA = ["sample_id", "score", "threshold", "input", "output", "target"]
_RAGAS_FIELDS = {"user_input", "retrieved_contexts", "reference_contexts", "response", "multi_responses", "reference",
                 "rubrics", "reference_tool_calls", "persona_name", "query_style", "query_length", "synthesizer_name"}


def from_ragas(frame, *, threshold, model: str = "unknown") -> pd.DataFrame:
    """A ragas result (``ragas.evaluate(...)``, or its ``to_pandas()`` table) as a results table.

    ragas gives each sample a number per metric and no verdict, so a verdict needs a threshold: a score at
    or above it is a PASS. One row per sample and metric column (every column that is not one of ragas' sample
    fields and holds numbers): ``case_id`` is the row's position in the table (``"0"``, ``"1"``, ...),
    ``rubric`` the metric's column name, ``score`` the value. A missing score (NaN: ragas could not score
    the sample, e.g. a metric that needs a reference the sample lacks, or a timeout) is an error row; so is a
    value that is not a finite number (text, an infinity) in a metric column, with an
    :class:`~evalkit.EvalkitWarning`: one bad value is one error row, never a metric left out. Columns that are
    neither sample fields nor metrics (no number in them) are counted in ``attrs["skipped"]``.

    Parameters
    ----------
    frame : DataFrame or ragas EvaluationResult
    threshold : float or dict
        The pass threshold, one for every metric or one per metric column (``{"faithfulness": 0.8, ...}``).
    model : str, default "unknown"
        The system that produced the responses (ragas does not record it).

    Returns
    -------
    DataFrame
        The results table with ``sample_id``, ``score``, ``threshold``, ``input``, ``output``, ``target``.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import logs
    >>> frame = pd.DataFrame({"user_input": ["q1", "q2"], "response": ["a", "b"], "faithfulness": [0.9, float("nan")]})
    >>> table = logs.from_ragas(frame, threshold=0.8)
    >>> table[["case_id", "rubric", "verdict", "score"]]
      case_id        rubric verdict  score
    0       0  faithfulness    PASS    0.9
    1       1  faithfulness     NaN    NaN
    >>> print(table["error"].iloc[1])
    ragas gave no score (NaN): the metric could not score this sample
    """
    if hasattr(frame, "to_pandas") and not isinstance(frame, pd.DataFrame):
        version = package_version(frame, "ragas")
        frame = frame.to_pandas()
    else:
        version = None
    frame = check_dataframe(frame, "frame")
    if frame.columns.duplicated().any():
        raise ValueError(f"`frame` has column {show(frame.columns[frame.columns.duplicated()][0])} twice; a metric is "
                         "one column.")
    metrics, skipped = _metric_columns(frame)
    if not metrics:
        raise ValueError(f"`frame` has no numeric metric column; it has columns {list(map(str, frame.columns))}.")
    thresholds = threshold if isinstance(threshold, dict) else {name: threshold for name in metrics}
    missing = [m for m in metrics if m not in thresholds]
    if missing:
        raise KeyError(f"`threshold` has no value for metric column(s) {missing}; give one number or one per metric.")
    for name in metrics:
        check_number(thresholds[name], f"threshold[{name!r}]" if isinstance(threshold, dict) else "threshold")
    if not isinstance(model, str) or not model:
        raise TypeError(f"`model` must be a non-empty string; got {model!r}.")
    rows = []
    for position, record in enumerate(frame.to_dict("records")):
        base = {"case_id": str(position), "sample_id": str(position), "model": model,
                "input": text(record.get("user_input")), "output": text(record.get("response")),
                "target": text(record.get("reference"))}
        rows += [_score_row(base, name, record[name], float(thresholds[name]), position) for name in metrics]
    source = {"tool": "ragas", "version": version, "path": None, "format": "DataFrame"}
    rubrics = {str(name): {"version": digest([name, float(thresholds[name])]), "threshold": float(thresholds[name])}
               for name in metrics}
    return results_table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL", extra=_EXTRA, source=source,
                         skipped=skipped, tool_metrics=None, rubrics=rubrics, repeat=None)


def _metric_columns(frame: pd.DataFrame) -> tuple[list, Counter]:
    """The metric columns (not a sample field, holding a number: a column with one value of text among its numbers
    is still a metric, that value its error row) and, counted in ``skipped``, the other columns that are not fields."""
    metrics, skipped = [], Counter()
    for column in frame.columns:
        if column in _RAGAS_FIELDS:
            continue
        values = frame[column]
        if pd.api.types.is_bool_dtype(values):
            numeric = False
        elif pd.api.types.is_numeric_dtype(values):
            numeric = True
        else:
            numeric = any(isinstance(v, (numbers.Real, np.number)) and not isinstance(v, (bool, np.bool_))
                          for v in values)
        if numeric:
            metrics.append(column)
        else:
            skipped[f"values of column {column!r}, neither a ragas sample field nor a metric (no number in it)"] += len(frame)
    return metrics, skipped


def _score_row(base: dict, name, value, threshold: float, position: int) -> dict:
    """One sample's row for one metric: PASS at or above the threshold; ragas' NaN (no score) and a value that is not a
    finite number are error rows."""
    where = f"row {position}, column {name!r}"
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return row(**base, rubric=str(name), rubric_version=digest([name, threshold]), score=np.nan, threshold=threshold,
                   where=where, error="ragas gave no score (NaN): the metric could not score this sample")
    score, problem = number(value, f"the {name} score")
    return row(**base, rubric=str(name), rubric_version=digest([name, threshold]), score=score, threshold=threshold,
               verdict="PASS" if score >= threshold else "FAIL", where=where, error=problem, bad=problem is not None)
