"""lm-evaluation-harness output folders: ``results_<stamp>.json`` and its ``samples_<task>_<stamp>.jsonl`` files."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit._io import read_json, read_json_lines
from evalkit.logs._shared import PASS_FAIL, digest, results_table, row, text

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


def _task_rows(samples_path: Path, task: str, model: str, version: str) -> list[dict]:
    """The rows of one task's samples file: one per document, filter and metric."""
    by_metric: dict[str, list] = {}
    for number, record in read_json_lines(samples_path)[0]:
        if not isinstance(record, dict) or "doc_id" not in record:
            raise ValueError(f"{samples_path}, line {number}: not an lm-evaluation-harness sample (no 'doc_id').")
        for metric in record.get("metrics") or []:
            by_metric.setdefault(f"{metric},{record.get('filter', 'none')}", []).append((number, record, metric))
    rows = []
    for key, entries in by_metric.items():
        values = [record.get(metric) for _, record, metric in entries]
        binary = all(isinstance(v, (int, float, bool)) and float(v) in (0.0, 1.0) for v in values)
        for (_, record, metric), value in zip(entries, values, strict=True):
            arguments = record.get("arguments")
            first = next(iter(arguments.values()), {}) if isinstance(arguments, dict) else {}
            response = record.get("filtered_resps")
            score = float(value) if isinstance(value, (int, float, bool)) else np.nan
            problem = None if binary else (f"{metric} is not a 0/1 metric: no pass/fail verdict (see `score`)")
            rows.append(row(case_id=str(record["doc_id"]), sample_id=str(record["doc_id"]), rubric=f"{task}/{key}",
                            rubric_version=version, model=model,
                            verdict=("PASS" if score == 1.0 else "FAIL") if binary else None,
                            score=score, error=problem, input=first.get("arg_0") if isinstance(first, dict) else None,
                            output=text(response[0] if isinstance(response, list) and len(response) == 1 else response),
                            target=text(record.get("target")), task=task, metric=metric,
                            filter=record.get("filter", "none")))
    return rows


def read_lm_eval(folder) -> pd.DataFrame:
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
    summary = read_json(results_path)
    if not isinstance(summary, dict) or not isinstance(summary.get("results"), dict):
        raise ValueError(f"{results_path}: not an lm-evaluation-harness results file (no 'results' object).")
    stamp = results_path.stem[len("results_"):]
    model = summary.get("model_name") or (summary.get("config") or {}).get("model") or "unknown"
    rows, skipped = [], Counter()
    tool_metrics = [{"task": task, "metric": key, "value": value} for task, values in summary["results"].items()
                    for key, value in values.items()
                    if "," in key and "_stderr," not in key and isinstance(value, (int, float))]
    for task in summary["results"]:
        samples_path = results_path.parent / f"samples_{task}_{stamp}.jsonl"
        if not samples_path.is_file():
            skipped[f"tasks without a samples file (run with --log_samples): {task}"] += 1
            continue
        rows += _task_rows(samples_path, task, model, digest((summary.get("configs") or {}).get(task, {})))
    if not rows:
        raise ValueError(f"{results_path}: no samples_<task>_{stamp}.jsonl file beside it; run lm_eval with "
                         "--log_samples to keep each document's result.")
    source = {"tool": "lm-evaluation-harness", "version": summary.get("lm_eval_version"), "path": str(results_path),
              "format": "json", "model": model, "model_args": (summary.get("config") or {}).get("model_args"),
              "created": summary.get("date"), "n_samples": summary.get("n-samples")}
    rubrics = {each["rubric"]: {"version": each["rubric_version"]} for each in rows}
    return results_table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL", extra=_EXTRA, source=source,
                         skipped=skipped, tool_metrics=tool_metrics, rubrics=rubrics, repeat=None)
