"""lm-evaluation-harness output folders: ``results_<stamp>.json`` and its ``samples_<task>_<stamp>.jsonl`` files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit._io import read_json, read_json_lines
from evalkit.logs._shared import (
    MAX_BYTES,
    PASS_FAIL,
    check_max_bytes,
    digest,
    identifier,
    number,
    results_table,
    row,
    text,
)

_EXTRA = ["sample_id", "score", "input", "output", "target", "task", "metric", "filter"]


def _results_file(folder) -> Path:
    """The one ``results_*.json`` file of an output folder (or the file given)."""
    if not isinstance(folder, (str, Path)):
        raise TypeError(f"`folder` must be a path to an lm-evaluation-harness output folder; got {type(folder).__name__}.")
    folder = Path(folder)
    if folder.is_file():
        if not (folder.name.startswith("results_") and folder.suffix == ".json"):
            raise ValueError(f"{folder}: expected an lm-evaluation-harness results_*.json file or its folder.")
        found = [folder]
    elif folder.is_dir():
        found = sorted(folder.rglob("results_*.json"))
    else:
        raise FileNotFoundError(f"{folder}: no such folder.")
    if len(found) != 1:
        raise ValueError(f"{folder}: expected one lm-evaluation-harness results_*.json file; found {len(found)}"
                         + (f" ({[str(p) for p in found[:4]]}); pass the one to read." if found else
                            " (was lm_eval run with --output_path here?)."))
    return found[0]


def _task_rows(samples_path: Path, task: str, model: str, version: str, max_bytes: int) -> list[dict]:
    """The rows of one task's samples file: one per document, filter and metric. A value that is not a finite number
    (NaN, text, missing) is that document's error row; whether the metric is 0/1 is decided by the others."""
    by_metric: dict[str, list] = {}
    for number_, record in read_json_lines(samples_path, max_bytes=max_bytes)[0]:
        where = f"{samples_path.name}, line {number_}"
        if not isinstance(record, dict) or "doc_id" not in record:
            raise ValueError(f"{samples_path}, line {number_}: not an lm-evaluation-harness sample (no 'doc_id').")
        metrics, filter_ = record.get("metrics") or [], record.get("filter", "none")
        if not isinstance(metrics, list) or not all(isinstance(m, str) for m in metrics) or not isinstance(filter_, str):
            raise ValueError(f"{samples_path}, line {number_}: 'metrics' must list the metrics' names and 'filter' name "
                             f"the filter; got metrics {metrics!r}, filter {filter_!r}.")
        doc = identifier(record["doc_id"], f"{samples_path}, line {number_}", "doc_id")
        for metric in metrics:
            given = float(record[metric]) if isinstance(record.get(metric), bool) else record.get(metric)  # True: 1
            value, problem = number(given, metric) if metric in record else (np.nan, None)
            if metric not in record:
                problem = f"the document lists {metric} in 'metrics' but has no value for it"
            elif problem is None and np.isnan(value):
                problem = f"{metric} is NaN for this document"
            by_metric.setdefault(f"{metric},{filter_}", []).append((where, doc, record, metric, value, problem))
    rows = []
    for key, entries in by_metric.items():
        binary = all(value in (0.0, 1.0) for *_, value, problem in entries if problem is None)
        for where, doc, record, metric, value, problem in entries:
            arguments = record.get("arguments")
            first = next(iter(arguments.values()), {}) if isinstance(arguments, dict) and arguments else {}
            response = record.get("filtered_resps")
            if problem is None and not binary:
                problem_row = {"error": f"{metric} is not a 0/1 metric: no pass/fail verdict (see `score`)"}
            else:
                problem_row = {"error": problem, "bad": problem is not None}
            rows.append(row(case_id=doc, sample_id=doc, _id=record["doc_id"], rubric=f"{task}/{key}", where=where,
                            rubric_version=version, model=model, verdict="PASS" if value == 1.0 else "FAIL",
                            score=value, input=text(first.get("arg_0")) if isinstance(first, dict) else None,
                            output=text(response[0] if isinstance(response, list) and len(response) == 1 else response),
                            target=text(record.get("target")), task=task, metric=metric, filter=key.split(",")[-1],
                            **problem_row))
    return rows


def read_lm_eval(folder, *, max_bytes: int = MAX_BYTES) -> pd.DataFrame:
    """Read an lm-evaluation-harness output folder (``lm_eval --output_path DIR --log_samples``) into a results table.

    One row per task, document, filter and metric: ``rubric`` is ``"<task>/<metric>,<filter>"`` (the key of
    the results file, e.g. ``"arc_easy/acc,none"``), ``case_id`` and ``sample_id`` the document's ``doc_id``.
    A metric value of 1 is a PASS and 0 a FAIL; ``score`` keeps the value, so the per-task mean of ``score``
    is the results file's number. A metric whose per-document values are not 0 or 1 (a BLEU or F1 score)
    has no pass/fail verdict: its rows are error rows saying so, with the value in ``score``.

    Parameters
    ----------
    folder : str or Path
        The output folder (searched for one ``results_*.json`` and its ``samples_<task>_*.jsonl`` files), or a
        ``results_*.json`` file.
    max_bytes : int, default 268435456 (256 MiB)
        The most bytes read from each file (the results file and every samples file): a larger one is refused, naming it, before it is parsed.

    Returns
    -------
    DataFrame
        The results table with ``sample_id``, ``score``, ``input``, ``output``, ``target``, ``task``,
        ``metric``, ``filter``; ``attrs["tool_metrics"]`` holds the results file's values per task.

    Examples
    --------
    >>> from evalkit import logs
    >>> table = logs.read_lm_eval("tests/data/logs/lm_eval/out")  # doctest: +SKIP
    """
    results_path = _results_file(folder)
    max_bytes = check_max_bytes(max_bytes)
    summary = read_json(results_path, max_bytes=max_bytes)
    if not isinstance(summary, dict) or not isinstance(summary.get("results"), dict):
        raise ValueError(f"{results_path}: not an lm-evaluation-harness results file (no 'results' object).")
    stamp = results_path.stem[len("results_"):]
    model = summary.get("model_name") or (summary.get("config") or {}).get("model") or "unknown"
    rows, skipped = [], Counter()
    tool_metrics = [{"task": task, "metric": key, "value": value} for task, values in summary["results"].items()
                    if isinstance(values, dict) for key, value in values.items()
                    if "," in key and "_stderr," not in key and isinstance(value, (int, float))]
    for task in summary["results"]:
        samples_path = results_path.parent / f"samples_{task}_{stamp}.jsonl"
        if not samples_path.is_file():
            skipped[f"tasks without a samples file (run with --log_samples): {task}"] += 1
            continue
        configs = summary.get("configs") if isinstance(summary.get("configs"), dict) else {}
        rows += _task_rows(samples_path, task, str(model), digest(configs.get(task, {})), max_bytes)
    if not rows:
        raise ValueError(f"{results_path}: no samples_<task>_{stamp}.jsonl file beside it; run lm_eval with "
                         "--log_samples to keep each document's result.")
    source = {"tool": "lm-evaluation-harness", "version": summary.get("lm_eval_version"), "path": str(results_path),
              "format": "json", "model": model, "model_args": (summary.get("config") or {}).get("model_args"),
              "created": summary.get("date"), "n_samples": summary.get("n-samples")}
    rubrics = {each["rubric"]: {"version": each["rubric_version"]} for each in rows}
    return results_table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL", extra=_EXTRA, source=source,
                         skipped=skipped, tool_metrics=tool_metrics, rubrics=rubrics, repeat=None)
