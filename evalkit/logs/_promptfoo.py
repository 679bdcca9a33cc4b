"""promptfoo results files: ``promptfoo eval -o results.json`` (results versions 2 and 3) or ``.jsonl``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit._io import read_json, read_json_lines
from evalkit.logs._shared import (
    MAX_BYTES,
    PASS_FAIL,
    check_max_bytes,
    checked_path,
    digest,
    field,
    number,
    results_table,
    row,
    text,
)

_CSV = ("promptfoo's CSV export keeps only each test's output, overall status, score and grader reason: "
        "no per-assertion verdicts, scores or reasons, no error details and no repeat index. Export JSON "
        "instead (promptfoo eval -o results.json) and read that.")
_EXTRA = ["sample_id", "repeat", "score", "input", "output", "description", "vars", "prompt", "test_idx"]


def _assertion_names(assertions: list) -> list[str]:
    """A rubric name per assertion: its ``metric``, else its type; a name repeated within a test is numbered."""
    names = [str((a.get("metric") or a.get("type") or "assertion") if isinstance(a, dict) else "assertion")
             for a in assertions]
    seen, out = Counter(), []
    for name in names:
        seen[name] += 1
        out.append(name if seen[name] == 1 and names.count(name) == 1 else f"{name} #{seen[name]}")
    return out


def _results(path: Path, fmt: str, max_bytes: int) -> tuple[dict, list[dict]]:
    """The file's header (empty for JSONL) and its results, each with where it is, checked to be promptfoo's."""
    header = {}
    if fmt == "json":
        document = read_json(path, max_bytes=max_bytes)
        inner = document.get("results") if isinstance(document, dict) else None
        if not isinstance(inner, dict) or not isinstance(inner.get("results"), list):
            raise ValueError(f"{path}: not a promptfoo results file (expected an object whose 'results' holds a "
                             "'results' list, as `promptfoo eval -o results.json` writes).")
        if inner.get("version") not in (2, 3):
            raise ValueError(f"{path}: promptfoo results version {inner.get('version')!r}; versions 2 and 3 are read.")
        header, results = document, [(f"results.results[{i}]", r) for i, r in enumerate(inner["results"])]
    else:
        results = [(f"line {number}", record) for number, record in read_json_lines(path, max_bytes=max_bytes)[0]]
    if not results:
        raise ValueError(f"{path}: the file holds no results.")
    seen = {}
    for where, result in results:
        _check_result(path, where, result)
        key = (result["testIdx"], result["promptIdx"], json.dumps(result["provider"], sort_keys=True, default=str))
        if key in seen:
            raise ValueError(f"{path}: {seen[key]} and {where} are both test {key[0]} of prompt {key[1]} for one "
                             "provider; promptfoo writes each once, so which counts cannot be known.")
        seen[key] = where
        result["_where"] = where
    return header, sorted((r for _, r in results), key=lambda r: (r["testIdx"], r["promptIdx"]))


def _check_result(path: Path, where: str, result) -> None:
    """A promptfoo result: an object with a whole-number ``testIdx`` and ``promptIdx`` and a provider."""
    if not isinstance(result, dict):
        raise ValueError(f"{path}, {where}: a JSON {type(result).__name__}; expected a promptfoo result (an object).")
    missing = [key for key in ("testIdx", "promptIdx", "provider") if key not in result]
    if missing:
        raise ValueError(f"{path}, {where}: no {missing}; expected a promptfoo result.")
    for key in ("testIdx", "promptIdx"):
        if isinstance(result[key], bool) or not isinstance(result[key], int) or result[key] < 0:
            raise ValueError(f"{path}, {where}: {key} is {result[key]!r}; expected promptfoo's index (a whole number "
                             "from 0).")
    if not isinstance(result["provider"], (dict, str)):
        raise ValueError(f"{path}, {where}: provider is a JSON {type(result['provider']).__name__}; expected its id "
                         "or an object with its id and label.")
    for key in ("testCase", "response", "gradingResult", "prompt", "vars"):
        field(result, key, dict, f"{path}, {where}")
    test = field(result, "testCase", dict, f"{path}, {where}")
    for key, kind in (("options", dict), ("assert", list), ("vars", dict)):
        field(test, key, kind, f"{path}, {where}, testCase")
    for key, value in (("testCase.description", test.get("description")), ("description", result.get("description"))):
        if value is not None and not isinstance(value, str):
            raise ValueError(f"{path}, {where}: {key} is {value!r}; expected the test's description (text).")
    components = field(field(result, "gradingResult", dict, f"{path}, {where}"), "componentResults", list,
                       f"{path}, {where}, gradingResult")
    for i, component in enumerate(components):
        if isinstance(component, dict):
            field(component, "assertion", dict, f"{path}, {where}, gradingResult.componentResults[{i}]")


def _tests(results: list[dict]) -> tuple[list[dict], list[str], dict, list[int]]:
    """Each result's test case, its content key, the sample id of each content key, and each result's repeat."""
    tests = [r.get("testCase") or {"vars": r.get("vars"), "description": r.get("description")} for r in results]
    content = [json.dumps({"description": t.get("description"), "vars": t.get("vars"), "assert": t.get("assert")},
                          sort_keys=True, default=str) for t in tests]
    distinct = list(dict.fromkeys(content))
    descriptions = {}
    for key, test in zip(content, tests, strict=True):
        descriptions[key] = test.get("description")
    named = all(descriptions[k] for k in distinct) and len({descriptions[k] for k in distinct}) == len(distinct)
    sample_of = {key: (str(descriptions[key]) if named else str(i)) for i, key in enumerate(distinct)}
    seen, repeats = Counter(), []
    for key, result in zip(content, results, strict=True):
        column = (key, result["promptIdx"], json.dumps(result["provider"], sort_keys=True, default=str))
        seen[column] += 1
        repeats.append(seen[column])
    return tests, content, sample_of, repeats


def _result_rows(result: dict, test: dict, base: dict, definitions: dict) -> list[dict]:
    """One result's rows: one per assertion (error rows when the test errored), then promptfoo's test verdict."""
    sample_id, response = base["sample_id"], result.get("response") or {}
    grading = result.get("gradingResult")
    message = (result.get("error") or response.get("error") or "error") if result.get("failureReason") == 2 else None
    assertions = list(test.get("assert") or [])
    grader = (test.get("options") or {}).get("provider")
    rows = []
    if isinstance(grading, dict) and grading.get("componentResults"):
        components = [c if isinstance(c, dict) else {"pass": c} for c in grading["componentResults"]]
        for name, component in zip(_assertion_names([c.get("assertion") or {} for c in components]), components,
                                   strict=True):
            definitions.setdefault(name, {})[sample_id] = [component.get("assertion"), grader]
            rows.append(_verdict_row(base, name, component, "pass", None))
    else:
        for name, assertion in zip(_assertion_names(assertions), assertions, strict=True):
            definitions.setdefault(name, {})[sample_id] = [assertion, grader]
            rows.append(row(**base, rubric=name, score=np.nan,
                            error=message or "promptfoo recorded no grading result for this test"))
    definitions.setdefault("test", {})[sample_id] = [test.get("threshold"), [a for a in assertions]]
    rows.append(_verdict_row(base, "test", {**result, "reason": (grading or {}).get("reason")}, "success", message))
    return rows


def _verdict_row(base: dict, name: str, graded: dict, key: str, message: str | None) -> dict:
    """The row of an assertion (``pass``) or of a test (``success``): a verdict and a score, or an error row when the
    test errored or a value is not what promptfoo writes."""
    score, problem = number(graded.get("score"), "score")
    passed = graded.get(key)
    if problem is None and not isinstance(passed, bool):
        problem = f"{key} is {json.dumps(passed, default=str)[:80]}, not true or false"
    return row(**base, rubric=name, verdict="PASS" if passed else "FAIL", score=score, reason=text(graded.get("reason")),
               error=message or problem, bad=message is None and problem is not None)


def read_promptfoo(path, *, max_bytes: int = MAX_BYTES) -> pd.DataFrame:
    """Read a promptfoo results file (``promptfoo eval -o results.json``, or ``.jsonl``) into a results table.

    One row per test, prompt, provider and assertion (``rubric`` = the assertion's ``metric``, else its
    type, e.g. ``icontains``, ``llm-rubric``), plus one row per test for promptfoo's own test verdict
    (``rubric`` = ``"test"``: all assertions, with their weights and threshold), whose pass and fail counts
    are promptfoo's ``stats``. A failed assertion is a FAIL (promptfoo also writes its reason into the
    result's ``error``; only ``failureReason`` 2 is a real error); a test that errored (promptfoo's
    ``failureReason`` 2; no grading when the provider failed) is an error row for each of its assertions.
    ``score`` is promptfoo's score, ``reason`` its reason; promptfoo does not store the grader's raw reply,
    so ``raw`` is empty. ``sample_id`` is the test's description when every test has its own, else the
    test's position among the distinct tests (0-based); with ``--repeat`` the runs of one test are told
    apart by ``repeat`` (promptfoo numbers them into ``testIdx`` without a repeat index; they are counted
    here in ``testIdx`` order). ``model`` is the provider's label (else its id), followed by the prompt's
    label in brackets when the file holds several prompts.

    A JSONL file (one result per line) gives the same rows; it carries no header, so the promptfoo version,
    the stats and the repeat count are not in ``attrs``. promptfoo's CSV export is refused: it lacks the
    per-assertion results.

    Parameters
    ----------
    path : str or Path
        A ``.json`` (results version 2 or 3) or ``.jsonl`` file written by ``promptfoo eval -o``.
    max_bytes : int, default 268435456 (256 MiB)
        The most bytes read from the file: a larger one is refused, naming it, before it is parsed.

    Returns
    -------
    DataFrame
        The results table with ``sample_id``, ``repeat``, ``score``, ``input``, ``output``, ``description``,
        ``vars`` (JSON text), ``prompt``, ``test_idx``; ``attrs["tool_metrics"]`` holds promptfoo's ``stats``.

    Examples
    --------
    >>> from evalkit import datasets, logs
    >>> table = logs.read_promptfoo(datasets.demo_path() / "logs" / "promptfoo_v1.json")
    >>> tests = table[table["rubric"] == "test"]
    >>> int((tests["verdict"] == "PASS").sum()), table.attrs["tool_metrics"]["successes"]
    (13, 13)
    """
    if isinstance(path, (str, Path)) and Path(path).suffix.lower() == ".csv":
        raise ValueError(f"{Path(path)}: {_CSV}")
    path, fmt = checked_path(path, "path", {".json": "json", ".jsonl": "jsonl"}, "a promptfoo results file")
    header, results = _results(path, fmt, check_max_bytes(max_bytes))
    tests, content, sample_of, repeats = _tests(results)
    prompts = list(dict.fromkeys(text((r.get("prompt") or {}).get("label")) for r in results))
    several = max(repeats) > 1
    rows, definitions = [], {}
    for result, test, key, repeat in zip(results, tests, content, repeats, strict=True):
        provider = result["provider"]
        model = str((provider.get("label") or provider.get("id")) if isinstance(provider, dict) else provider)
        prompt = text((result.get("prompt") or {}).get("label"))
        sample_id, output = sample_of[key], (result.get("response") or {}).get("output")
        base = {"case_id": f"{sample_id}_repeat_{repeat}" if several else sample_id, "sample_id": sample_id,
                "repeat": repeat, "model": f"{model} [{prompt}]" if len(prompts) > 1 else model,
                "input": text((result.get("prompt") or {}).get("raw")),
                "output": output if output is None or isinstance(output, str) else text(output),
                "description": test.get("description"), "vars": text(result.get("vars") or test.get("vars")),
                "prompt": prompt, "test_idx": result["testIdx"], "where": result["_where"]}
        rows += _result_rows(result, test, base, definitions)
    versions = {name: digest(defs) for name, defs in definitions.items()}
    for each in rows:
        each["rubric_version"] = versions[each["rubric"]]
    inner = header.get("results") or {}
    source = {"tool": "promptfoo", "version": (header.get("metadata") or {}).get("promptfooVersion"), "path": str(path),
              "format": fmt, "eval_id": header.get("evalId"), "created": inner.get("timestamp"),
              "results_version": inner.get("version"), "repeat": (header.get("runtimeOptions") or {}).get("repeat")}
    stats = inner.get("stats") or {}
    tool_metrics = {key: stats[key] for key in ("successes", "failures", "errors") if key in stats}
    return results_table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL", extra=_EXTRA, source=source,
                         skipped=Counter(), tool_metrics=tool_metrics,
                         rubrics={name: {"version": versions[name]} for name in definitions}, repeat="repeat")
