"""ragas results: ``ragas.evaluate(...)`` or its ``to_pandas()`` table, one number per sample and metric."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pandas as pd

from evalkit._validation import check_dataframe, check_number
from evalkit.logs._shared import PASS_FAIL, digest, package_version, results_table, row, text

_RAGAS_FIELDS = {"user_input", "retrieved_contexts", "reference_contexts", "response", "multi_responses", "reference",
                 "rubrics", "reference_tool_calls", "persona_name", "query_style", "query_length", "synthesizer_name"}


def from_ragas(frame, *, threshold, model: str = "unknown") -> pd.DataFrame:
    """A ragas result (``ragas.evaluate(...)``, or its ``to_pandas()`` table) as a results table.

    ragas gives each sample a number per metric and no verdict, so a verdict needs a threshold: a score at
    or above it is a PASS. One row per sample and metric column (every numeric column that is not one of
    ragas' sample fields): ``case_id`` is the row's position in the table (``"0"``, ``"1"``, ...),
    ``rubric`` the metric's column name, ``score`` the value. A missing score (NaN: ragas could not score
    the sample, e.g. a metric that needs a reference the sample lacks, or a timeout) is an error row.

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
    metrics = [c for c in frame.columns if c not in _RAGAS_FIELDS and pd.api.types.is_numeric_dtype(frame[c])]
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
        for name in metrics:
            value = record[name]
            missing_score = value is None or (isinstance(value, float) and math.isnan(value))
            rows.append(row(case_id=str(position), sample_id=str(position), rubric=str(name),
                             rubric_version=digest([name, float(thresholds[name])]), model=model,
                             verdict=None if missing_score else ("PASS" if value >= thresholds[name] else "FAIL"),
                             score=np.nan if missing_score else float(value), threshold=float(thresholds[name]),
                             error="ragas gave no score (NaN): the metric could not score this sample" if missing_score else None,
                             input=text(record.get("user_input")), output=text(record.get("response")),
                             target=text(record.get("reference"))))
    source = {"tool": "ragas", "version": version, "path": None, "format": "DataFrame"}
    rubrics = {name: {"version": digest([name, float(thresholds[name])]), "threshold": float(thresholds[name])}
               for name in metrics}
    return results_table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL",
                  extra=["sample_id", "score", "threshold", "input", "output", "target"], source=source,
                  skipped=Counter(), tool_metrics=None, rubrics=rubrics, repeat=None)
