"""OpenAI evals run logs: the JSONL that ``evals/record.py``'s ``LocalRecorder`` writes (spec, events, final report)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd

from evalkit._io import read_json_lines
from evalkit._validation import warn
from evalkit.logs._shared import (
    MAX_BYTES,
    PASS_FAIL,
    check_max_bytes,
    checked_path,
    digest,
    identifier,
    number,
    results_table,
    row,
    text,
)

_EXTRA = ["sample_id", "repeat", "score", "output", "target", "grader"]


def _sample_order(sample_id: str):
    head, _, tail = sample_id.rpartition(".")
    return (head, int(tail)) if tail.isdigit() else (sample_id, -1)


def _records(path: Path, max_bytes: int) -> tuple[dict, dict | None, list[dict]]:
    """The run's spec, its final report (None when the run did not finish) and its events, each with its line."""
    spec, report, events = None, None, []
    for number_, record in read_json_lines(path, max_bytes=max_bytes)[0]:
        if not isinstance(record, dict):
            raise ValueError(f"{path}, line {number_}: expected a JSON object (an OpenAI evals record).")
        if "spec" in record:
            spec = record["spec"]
        elif "final_report" in record:
            report = record["final_report"]
        elif "type" in record and "sample_id" in record:
            events.append(_checked_event(path, number_, record))
        else:
            raise ValueError(f"{path}, line {number_}: neither the spec, the final report nor an event.")
    if not isinstance(spec, dict):
        raise ValueError(f"{path}: no spec line; expected an OpenAI evals record file (its first line is the run spec).")
    return spec, report, events


def _checked_event(path: Path, line: int, event: dict) -> dict:
    """An event with its sample id as text, its data an object and its event id a whole number."""
    where = f"{path}, line {line}"
    data = event.get("data") if event.get("data") is not None else {}
    event_id = event.get("event_id", 0)
    if not isinstance(data, dict) or not isinstance(event["type"], str):
        raise ValueError(f"{where}: an event's type must be text and its data an object; got type {event['type']!r} "
                         f"and data of type {type(data).__name__}.")
    if isinstance(event_id, bool) or not isinstance(event_id, int):
        raise ValueError(f"{where}: event_id is {event_id!r}; expected a whole number (evals numbers its events).")
    return {**event, "sample_id": identifier(event["sample_id"], where, "sample_id"), "_id": event["sample_id"],
            "data": data, "event_id": event_id, "_where": f"line {line}"}


def _graded_row(base: dict, data: dict, name: str, pass_choices, grader) -> dict:
    """The row of a model-graded metrics event: the choice passes when its score is 1 (or when it is in
    ``pass_choices``); a score that is not a number is an error row."""
    choice = data.get("choice")
    score, problem = number(data.get("score"), "score")
    passed = (choice in pass_choices) if pass_choices is not None else score == 1.0
    return row(**{**base, "error": base["error"] or problem}, bad=base["error"] is None and problem is not None,
               rubric=name, verdict="PASS" if passed else "FAIL", parsed=choice != "__invalid__", score=score,
               reason=f"choice {choice}", target=None, grader=grader)


def _event_rows(events: list[dict], fns: list, graded_name: str, pass_choices, skipped: Counter) -> list[dict]:
    """One row per match event and per model-graded metrics event; a sample with an error event is an error row."""
    errors, outputs, rows = {}, {}, []
    for event in events:
        sid = event["sample_id"]
        if event["type"] == "error":
            data = event["data"]
            errors.setdefault(sid, text(f"{data.get('type', 'error')}: {data.get('message', '')}".strip()))
        elif event["type"] == "sampling":
            outputs.setdefault(sid, event["data"].get("sampled"))
    for event in sorted(events, key=lambda e: (_sample_order(e["sample_id"]), e["event_id"])):
        sid, data = event["sample_id"], event["data"]
        base = {"sample_id": sid, "_id": event["_id"], "model": str(fns[0]) if fns else "unknown",
                "created_at": event.get("created_at"), "error": errors.get(sid), "where": event["_where"]}
        if event["type"] == "match":
            sampled, correct = data.get("sampled"), data.get("correct")
            problem = None if isinstance(correct, bool) else f"correct is {correct!r}, not true or false"
            rows.append(row(**base | {"error": base["error"] or problem}, bad=base["error"] is None and bool(problem),
                            rubric="match", verdict="PASS" if correct else "FAIL", score=float(correct is True),
                            output=text(sampled if sampled is not None else outputs.get(sid)),
                            target=text(data.get("expected")), grader=None))
        elif event["type"] == "metrics" and "choice" in data:
            rows.append(_graded_row({**base, "output": text(outputs.get(sid))}, data, graded_name, pass_choices,
                                    str(fns[-1]) if len(fns) > 1 else None))
        elif event["type"] not in ("error", "sampling"):
            skipped[f"{event['type']} events (no verdict)"] += 1
    return rows


def read_openai_evals(path, *, pass_choices=None, max_bytes: int = MAX_BYTES) -> pd.DataFrame:
    """Read an OpenAI evals run log (the JSONL that ``evals/record.py``'s ``LocalRecorder`` writes) into a results table.

    The first line is the run's spec, one line the final report, every other line an event. ``match``
    events (basic evals: Match, Includes, FuzzyMatch) give rubric ``"match"``: ``correct`` is PASS, else
    FAIL, with ``sampled`` as the output and ``expected`` as the target. ``metrics`` events with a
    ``choice`` (model-graded evals) give a rubric named after the model-graded spec (e.g. ``"closedqa"``):
    ``score`` is evals' score for the choice, and a choice passes when its score is 1 (closedqa's ``Y``)
    unless ``pass_choices`` says which choices pass; evals' ``__invalid__`` (a grader reply without a
    choice) is a FAIL with ``parsed`` False. A sample with an ``error`` event is an error row (evals itself
    counts it in its accuracy as a non-match). ``case_id`` is evals' ``sample_id`` (``<eval>.<split>.<n>``).
    Other event types (sampling, embedding, cond_logp, ...) carry no verdict and are counted in
    ``attrs["skipped"]``; the first ``sampling`` event of a sample supplies its output when no match
    event does.

    Parameters
    ----------
    path : str or Path
        The ``--record_path`` file of ``oaieval`` (``.jsonl``).
    pass_choices : sequence of str, optional
        The model-graded choices that pass (default: those whose recorded score is 1).
    max_bytes : int, default 268435456 (256 MiB)
        The most bytes read from the file: a larger one is refused, naming it, before it is parsed.

    Returns
    -------
    DataFrame
        The results table with ``sample_id``, ``score``, ``output``, ``target``, ``grader``;
        ``attrs["tool_metrics"]`` holds the final report.

    Examples
    --------
    >>> from evalkit import logs
    >>> table = logs.read_openai_evals("tests/data/logs/openai_evals/match.jsonl")  # doctest: +SKIP
    """
    path, _ = checked_path(path, "path", {".jsonl": "jsonl", ".json": "jsonl"}, "an OpenAI evals record file")
    if pass_choices is not None and (isinstance(pass_choices, str) or not all(isinstance(c, str) for c in pass_choices)):
        raise TypeError(f"`pass_choices` must be a sequence of choices, e.g. ('Y',); got {pass_choices!r}.")
    spec, report, events = _records(path, check_max_bytes(max_bytes))
    fns = spec.get("completion_fns") if isinstance(spec.get("completion_fns"), list) else []
    run_config = spec.get("run_config") if isinstance(spec.get("run_config"), dict) else {}
    eval_spec = run_config.get("eval_spec") if isinstance(run_config.get("eval_spec"), dict) else {}
    args = eval_spec.get("args") if isinstance(eval_spec.get("args"), dict) else {}
    skipped = Counter()
    rows = _event_rows(events, fns, str(args.get("modelgraded_spec") or "metrics"), pass_choices, skipped)
    if not rows:
        raise ValueError(f"{path}: no match or model-graded metrics events; nothing to read as verdicts.")
    counts = Counter((r["rubric"], r["sample_id"]) for r in rows)
    seen = Counter()
    for each in rows:
        seen[(each["rubric"], each["sample_id"])] += 1
        each["repeat"] = seen[(each["rubric"], each["sample_id"])]
    several = max(counts.values()) > 1
    for each in rows:
        each["case_id"] = f"{each['sample_id']}_repeat_{each['repeat']}" if several else each["sample_id"]
        each["rubric_version"] = digest([spec.get("eval_name"), args, fns[1:]])
    if report is None:
        warn(f"{path}: no final report: the run did not finish; the table holds the {len(rows)} verdict(s) "
                      "recorded before it stopped.")
    source = {"tool": "openai-evals", "version": None, "path": str(path), "format": "jsonl",
              "eval_name": spec.get("eval_name"), "run_id": spec.get("run_id"), "created": spec.get("created_at"),
              "completion_fns": fns, "complete": report is not None}
    rubrics = {name: {"version": rows[0]["rubric_version"], "eval_spec": args}
               for name in dict.fromkeys(r["rubric"] for r in rows)}
    return results_table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL", extra=_EXTRA, source=source,
                         skipped=skipped, tool_metrics=report, rubrics=rubrics, repeat="repeat" if several else None)
