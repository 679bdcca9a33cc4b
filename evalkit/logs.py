"""Other tools' result logs read into evalkit's results table.

inspect_ai, promptfoo, lm-evaluation-harness and OpenAI evals write their results to files; deepeval and
ragas hand them back as Python objects. Each reader here turns one of them into the table
:func:`evalkit.judge.run_judge` returns, so that :func:`evalkit.judge.pass_rate`,
:func:`evalkit.calibrate.calibrate`, :func:`evalkit.calibrate.disagreements`, :mod:`evalkit.infer`,
:func:`evalkit.compare.paired` and the :class:`evalkit.widgets.Labeller` take it as it is. None of the tools
needs to be installed to read its files (a ``.eval`` log needs the ``zstandard`` package:
``pip install "llm-evalkit[logs]"``).

Every table has one row per graded output and rubric (a scorer, an assertion, a metric): ``case_id,
rubric, rubric_version, model, verdict, parsed, raw, reason, error, latency_s, cached, created_at``, then
``sample_id`` (the tool's own id of the test case), ``epoch`` or ``repeat`` where the tool runs a case
more than once, ``score`` (the tool's number), and the case's ``input``, ``output`` and ``target`` where
the tool records them. ``case_id`` is unique within one rubric: it is the ``sample_id`` when every case
ran once, else ``<sample_id>_epoch_<n>`` (inspect_ai's own name for an epoch's sample) or
``<sample_id>_repeat_<n>``, because each epoch graded another output. ``model`` is the model the tool
evaluated; the grading model, where the tool names one, is in ``grader``. A number the tool did not
record is NaN: ``latency_s`` always (no tool records a grading call's latency), ``score`` and
``threshold`` where the tool gave none.

Rules that hold for every reader:

- A failed check or assertion is a FAIL, never an error. An output the tool could not produce or grade
  (a provider error, an exception, a grader reply without a grade) is an error row: no verdict, the
  tool's message in ``error``; :func:`evalkit.judge.pass_rate` leaves it out and counts it.
- Nothing is dropped silently: what a reader could not turn into rows is counted, with the reason, in
  ``attrs["skipped"]``.
- ``attrs["source"]`` names the tool, its version, the file and the run; ``attrs["rubric"]`` the verdict
  levels and which of them pass; ``attrs["tool_metrics"]`` the tool's own summary numbers, to check
  against; ``attrs["clusters"]`` the column that groups the epochs or repeats of one case.

Epochs and repeats of one case are not independent: :func:`evalkit.judge.pass_rate` treats them as one cluster
(found from ``attrs["clusters"]``).
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import warnings
import zipfile
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit._io import read_json, read_json_lines
from evalkit._optional import install_hint
from evalkit._tables import RESULT_COLUMNS
from evalkit._validation import EvalkitWarning, check_dataframe, check_number
from evalkit._version import __version__

__all__ = ["read_inspect", "read_promptfoo", "read_lm_eval", "read_openai_evals", "from_deepeval", "from_ragas",
           "pass_rate"]

INSPECT_LEVELS = ("C", "P", "I", "N")
PASS_FAIL = ("PASS", "FAIL")
_ZSTD = 93  # the zip compression method number of Zstandard


# --- shared -------------------------------------------------------------------------------------------------------

def _digest(value) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:12]


def _path(path, name: str, suffixes: dict[str, str], expected: str) -> tuple[Path, str]:
    """The path as a Path and its format; a missing file or a wrong type is refused, naming the file."""
    if not isinstance(path, (str, Path)):
        raise TypeError(f"`{name}` must be a path to {expected}; got {type(path).__name__}.")
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in suffixes:
        raise ValueError(f"{path}: expected {expected} ({', '.join(suffixes)}); got a {suffix or 'suffix-less'} file.")
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    return path, suffixes[suffix]


def _text(value) -> str | None:
    """A chat input (a list of messages), a list of targets or any JSON value as readable text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(m, dict) and "role" in m for m in value):
        parts = []
        for message in value:
            content = message.get("content")
            if isinstance(content, list):
                content = "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict))
            parts.append(f"{message['role']}: {content}")
        return "\n\n".join(parts)
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(value)
    return json.dumps(value, ensure_ascii=False, default=str)


def _table(rows: list[dict], *, levels, pass_levels, fail_level, extra: list[str], source: dict, skipped: Counter,
           tool_metrics, rubrics: dict, repeat: str | None) -> pd.DataFrame:
    columns = [*RESULT_COLUMNS, *extra]
    table = pd.DataFrame.from_records(rows, columns=columns) if rows else pd.DataFrame(columns=columns)
    table["verdict"] = pd.Categorical(table["verdict"], categories=list(levels))
    table["parsed"] = table["parsed"].astype(bool)
    table["reason"] = table["reason"].astype("string")
    table["latency_s"] = table["latency_s"].astype(float)
    table["cached"] = pd.array(table["cached"].tolist(), dtype="boolean")
    if "score" in table.columns:
        table["score"] = table["score"].astype(float)
    for column in ("epoch", "repeat"):
        if column in table.columns:
            table[column] = table[column].astype("Int64")
    names = list(dict.fromkeys(table["rubric"]))
    models = list(dict.fromkeys(table["model"]))
    table.attrs.update({
        "evalkit_version": __version__,
        "source": source,
        "rubric": {"name": names[0] if len(names) == 1 else None, "levels": list(levels), "fail_level": fail_level,
                   "pass_levels": list(pass_levels)},
        "rubrics": rubrics,
        "model": {"id": models[0] if len(models) == 1 else None},
        "skipped": dict(skipped),
        "clusters": {"column": "sample_id", "within": repeat},
        "tool_metrics": tool_metrics,
    })
    return table


def _row(**values) -> dict:
    row = {"rubric_version": None, "raw": None, "reason": None, "error": None, "latency_s": np.nan, "cached": None,
           "created_at": None, "parsed": True}
    row.update(values)
    if row["error"] is not None:
        row["verdict"], row["parsed"] = None, False
    return row


# --- inspect_ai ---------------------------------------------------------------------------------------------------

def _zip_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """One member of a zip archive; Zstandard members (which Python's zipfile cannot read) through zstandard."""
    if info.compress_type != _ZSTD:
        return archive.read(info)
    try:
        import zstandard
    except ImportError:
        raise ImportError(f"{path}: reading an inspect_ai .eval log needs the zstandard package (its members are "
                          f"Zstandard-compressed): {install_hint('logs')}, or convert the log to JSON with "
                          "`inspect log convert --to json`.") from None
    with path.open("rb") as handle:
        handle.seek(info.header_offset)
        header = handle.read(30)
        if len(header) < 30 or header[:4] != b"PK\x03\x04":
            raise ValueError(f"{path}: member {info.filename!r} has no local header; the .eval archive is damaged.")
        name_length, extra_length = struct.unpack("<HH", header[26:30])
        handle.seek(info.header_offset + 30 + name_length + extra_length)
        data = handle.read(info.compress_size)
    try:
        content = zstandard.ZstdDecompressor().decompressobj().decompress(data)
    except zstandard.ZstdError as exc:
        raise ValueError(f"{path}: member {info.filename!r} is not valid Zstandard data ({exc}); the .eval archive "
                         "is damaged.") from None
    if len(data) != info.compress_size or zlib.crc32(content) != info.CRC:
        raise ValueError(f"{path}: member {info.filename!r} is truncated or damaged (checksum mismatch).")
    return content


def _member_json(path: Path, archive: zipfile.ZipFile, name: str):
    content = _zip_member(path, archive, archive.getinfo(name))
    try:
        return json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: member {name!r} is not valid JSON ({exc}).") from None


def _inspect_eval(path: Path) -> tuple[dict, list[dict]]:
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{path}: not a complete inspect_ai .eval log (a zip archive was expected: {exc}); "
                         "was the file truncated?") from None
    with archive:
        names = archive.namelist()
        if "header.json" in names:
            header = _member_json(path, archive, "header.json")
        elif "_journal/start.json" in names:  # a log whose run has not finished: no header yet
            header = {**_member_json(path, archive, "_journal/start.json"), "status": "started"}
        else:
            raise ValueError(f"{path}: a zip archive without header.json or _journal/start.json, so not an "
                             "inspect_ai .eval log.")
        samples = [_member_json(path, archive, name) for name in names
                   if name.startswith("samples/") and name.endswith(".json")]
    return header, samples


def _inspect_value(value) -> tuple[str | None, float, str | None]:
    """``(verdict, score, problem)`` for one inspect_ai score value (inspect_ai's own value_to_float mapping)."""
    if isinstance(value, bool):
        return ("C" if value else "I"), float(value), None
    if isinstance(value, str):
        text = value.strip()
        if text in INSPECT_LEVELS:
            return text, {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}[text], None
        if text.lower() in ("yes", "true"):
            return "C", 1.0, None
        if text.lower() in ("no", "false"):
            return "I", 0.0, None
        try:
            value = float(text)
        except ValueError:
            return None, np.nan, f"score value {value!r} is none of C, P, I, N, a boolean or a number"
    if isinstance(value, (int, float)):
        value = float(value)
        if math.isnan(value):
            return None, np.nan, "unscored"
        if value == 1.0:
            return "C", value, None
        if value == 0.0:
            return "I", value, None
        if 0.0 < value < 1.0:
            return "P", value, None
        return None, value, f"score {value!r} is outside [0, 1], so it has no pass/fail verdict (see `score`)"
    return None, np.nan, "list or dict"


def _grader(scorer: dict) -> str | None:
    model = (scorer.get("options") or {}).get("model")
    if isinstance(model, dict):
        return model.get("model")
    return model if isinstance(model, str) else None


def read_inspect(path, *, pass_levels=("C",)) -> pd.DataFrame:
    """Read an inspect_ai log (``.eval`` or ``.json``) into a results table: one row per sample, epoch and scorer.

    Both formats give the same table, row for row (samples in dataset order, then epoch, then scorer).
    ``verdict`` is inspect_ai's grade: ``C`` (correct), ``P`` (partial), ``I`` (incorrect) or ``N`` (no
    answer); a boolean value is C or I, a number 1 / 0 is C / I and one strictly between them P; ``score``
    is inspect_ai's own number for it (C 1, P 0.5, I and N 0, numbers as given), so the mean of ``score``
    is inspect_ai's accuracy. ``raw`` is the grading model's full reply where inspect_ai stores it (model
    graded scorers), ``reason`` the scorer's explanation, ``reason_code`` inspect_ai's reason for an
    abnormal score (e.g. ``no_response``). A sample that errored is an error row for every scorer; a
    score inspect_ai left unscored (a grader reply without a grade; inspect_ai leaves it out of its
    metrics too) is an error row naming the reason.

    Parameters
    ----------
    path : str or Path
        A ``.eval`` log (needs ``pip install "llm-evalkit[logs]"``) or a ``.json`` log, with samples.
    pass_levels : sequence of str, default ("C",)
        The grades that count as a pass. A partly correct answer (``P``) is not a pass by default;
        inspect_ai's accuracy gives it half a point, which ``score`` keeps. Pass ``("C", "P")`` to count
        it as a pass.

    Returns
    -------
    DataFrame
        The results table (see the module docstring) with ``sample_id``, ``epoch``, ``score``, ``input``,
        ``output``, ``target``, ``grader``, ``reason_code``; ``attrs["tool_metrics"]`` holds inspect_ai's
        metrics (``rubric, reducer, metric, value``).

    Examples
    --------
    >>> from evalkit import datasets, logs
    >>> table = logs.read_inspect(datasets.demo_path() / "logs" / "inspect_v1.eval")
    >>> table[["case_id", "rubric", "verdict", "score"]].head(3)
           case_id           rubric verdict  score
    0  q01_epoch_1            match       C    1.0
    1  q01_epoch_1         includes       C    1.0
    2  q01_epoch_1  model_graded_qa       C    1.0
    """
    path, fmt = _path(path, "path", {".eval": "eval", ".json": "json"}, "an inspect_ai log")
    pass_levels = _levels_subset(pass_levels, INSPECT_LEVELS, fail_level="I")
    if fmt == "eval":
        header, samples = _inspect_eval(path)
    else:
        log = read_json(path)
        if not isinstance(log, dict):
            raise ValueError(f"{path}: expected an inspect_ai log (a JSON object with 'eval' and 'samples'); "
                             f"got a JSON {type(log).__name__}.")
        header = {k: v for k, v in log.items() if k != "samples"}
        samples = log.get("samples") or []
    spec = header.get("eval")
    if not isinstance(spec, dict) or "model" not in spec:
        raise ValueError(f"{path}: not an inspect_ai log (no 'eval' section naming the model); expected a log "
                         "written by inspect_ai.")
    if not samples:
        raise ValueError(f"{path}: the log holds no samples (run with log_samples=False, or cancelled before any "
                         "sample finished); evalkit needs each sample's scores.")
    scorers = {s["name"]: s for s in spec.get("scorers") or [] if isinstance(s, dict) and "name" in s}
    results = header.get("results") or {}
    for score in results.get("scores") or []:
        scorers.setdefault(score["name"], {"name": score["name"], "options": score.get("params") or {}})
    names = list(scorers)
    for sample in samples:
        names.extend(name for name in (sample.get("scores") or {}) if name not in names)
    order = {str(sid): i for i, sid in enumerate((spec.get("dataset") or {}).get("sample_ids") or [])}
    samples = sorted(samples, key=lambda s: (order.get(str(s["id"]), len(order)), str(s["id"]), s.get("epoch", 1)))
    epochs = Counter(str(s["id"]) for s in samples)
    status = header.get("status")
    skipped = Counter()
    rows = []
    versions = {name: _digest(scorers.get(name, {"name": name})) for name in names}
    for sample in samples:
        sample_id = str(sample["id"])
        output = sample.get("output") or {}
        base = {"sample_id": sample_id, "epoch": int(sample.get("epoch", 1)), "model": spec["model"],
                "input": _text(sample.get("input")), "output": output.get("completion"),
                "target": _text(sample.get("target")), "created_at": sample.get("completed_at")}
        scores = sample.get("scores") or {}
        error = (sample.get("error") or {}).get("message") if isinstance(sample.get("error"), dict) else sample.get("error")
        if not scores:
            limit = sample.get("limit")
            problem = error or (f"{limit.get('type')} limit reached" if isinstance(limit, dict) else None) or "not scored"
            for name in names:
                rows.append(_row(**base, rubric=name, rubric_version=versions[name], error=problem,
                                 grader=_grader(scorers.get(name, {})), score=np.nan, reason_code=None))
            continue
        if error:
            skipped["samples that errored but were still scored (kept as scored)"] += 1
        for name, score in scores.items():
            verdict, value, problem = _inspect_value(score.get("value"))
            if problem == "list or dict":
                skipped["scores whose value is a list or a dict"] += 1
                continue
            grading = (score.get("metadata") or {}).get("grading")
            raw = grading[-1].get("content") if isinstance(grading, list) and grading and isinstance(grading[-1], dict) else None
            code = score.get("reason")
            if problem == "unscored":
                problem = f"unscored ({code or 'no reason given'}): {score.get('explanation') or ''}".rstrip(": ")
            rows.append(_row(**base, rubric=name, rubric_version=versions[name], verdict=verdict, score=value,
                             raw=_text(raw), reason=score.get("explanation"), error=problem,
                             grader=_grader(scorers.get(name, {})), reason_code=code))
    several = max(epochs.values()) > 1
    for row in rows:
        row["case_id"] = f"{row['sample_id']}_epoch_{row['epoch']}" if several else row["sample_id"]
    tool_metrics = [{"rubric": s.get("name"), "reducer": s.get("reducer"), "metric": m.get("name"), "value": m.get("value")}
                    for s in results.get("scores") or [] for m in (s.get("metrics") or {}).values()]
    source = {"tool": "inspect_ai", "version": (spec.get("packages") or {}).get("inspect_ai"), "path": str(path),
              "format": fmt, "task": spec.get("task"), "eval_id": spec.get("eval_id"), "run_id": spec.get("run_id"),
              "created": spec.get("created"), "status": status, "epochs": (spec.get("config") or {}).get("epochs"),
              "epochs_reducer": (spec.get("config") or {}).get("epochs_reducer")}
    if status not in ("success", None):
        warnings.warn(f"{path}: the run's status is {status!r}, not 'success'; the table holds the {len(samples)} "
                      "sample(s) the log has.", EvalkitWarning, stacklevel=2)
    rubrics = {name: {"version": versions[name], "scorer": scorers.get(name)} for name in names}
    return _table(rows, levels=INSPECT_LEVELS, pass_levels=pass_levels, fail_level="I",
                  extra=["sample_id", "epoch", "score", "input", "output", "target", "grader", "reason_code"],
                  source=source, skipped=skipped, tool_metrics=tool_metrics, rubrics=rubrics, repeat="epoch")


def _levels_subset(pass_levels, levels, *, fail_level):
    if isinstance(pass_levels, str) or not all(isinstance(p, str) for p in pass_levels) or not len(pass_levels):
        raise TypeError(f"`pass_levels` must be a non-empty sequence of levels, e.g. ('C',); got {pass_levels!r}.")
    unknown = [p for p in pass_levels if p not in levels]
    if unknown or fail_level in pass_levels:
        raise ValueError(f"`pass_levels` must be a subset of {list(levels)} without {fail_level!r}; got {list(pass_levels)}.")
    return tuple(pass_levels)


# --- promptfoo ----------------------------------------------------------------------------------------------------

_PROMPTFOO_CSV = ("promptfoo's CSV export keeps only each test's output, overall status, score and grader reason: "
                  "no per-assertion verdicts, scores or reasons, no error details and no repeat index. Export JSON "
                  "instead (promptfoo eval -o results.json) and read that.")


def _assertion_names(assertions: list) -> list[str]:
    """A rubric name per assertion: its ``metric``, else its type; a name repeated within a test is numbered."""
    names = [(a.get("metric") or a.get("type") or "assertion") if isinstance(a, dict) else "assertion"
             for a in assertions]
    seen, out = Counter(), []
    for name in names:
        seen[name] += 1
        out.append(name if seen[name] == 1 and names.count(name) == 1 else f"{name} #{seen[name]}")
    return out


def read_promptfoo(path) -> pd.DataFrame:
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
        raise ValueError(f"{Path(path)}: {_PROMPTFOO_CSV}")
    path, fmt = _path(path, "path", {".json": "json", ".jsonl": "jsonl"}, "a promptfoo results file")
    header = {}
    if fmt == "json":
        document = read_json(path)
        inner = document.get("results") if isinstance(document, dict) else None
        if not isinstance(inner, dict) or not isinstance(inner.get("results"), list):
            raise ValueError(f"{path}: not a promptfoo results file (expected an object whose 'results' holds a "
                             "'results' list, as `promptfoo eval -o results.json` writes).")
        if inner.get("version") not in (2, 3):
            raise ValueError(f"{path}: promptfoo results version {inner.get('version')!r}; versions 2 and 3 are read.")
        header, results = document, inner["results"]
    else:
        results = []
        for number, record in read_json_lines(path)[0]:
            if not isinstance(record, dict) or "testIdx" not in record:
                raise ValueError(f"{path}, line {number}: not a promptfoo result (no 'testIdx').")
            results.append(record)
    if not results:
        raise ValueError(f"{path}: the file holds no results.")
    for number, result in enumerate(results, start=1):
        missing = [key for key in ("testIdx", "promptIdx", "provider") if key not in result]
        if missing:
            raise ValueError(f"{path}: result {number} has no {missing}; expected promptfoo results.")
    results = sorted(results, key=lambda r: (r["testIdx"], r["promptIdx"]))
    test_of = [r.get("testCase") or {"vars": r.get("vars"), "description": r.get("description")} for r in results]
    content = [json.dumps({"description": t.get("description"), "vars": t.get("vars"), "assert": t.get("assert")},
                          sort_keys=True, default=str) for t in test_of]
    distinct = list(dict.fromkeys(content))
    descriptions = {}
    for key, test in zip(content, test_of, strict=True):
        descriptions[key] = test.get("description")
    named = all(descriptions[k] for k in distinct) and len({descriptions[k] for k in distinct}) == len(distinct)
    sample_of = {key: (str(descriptions[key]) if named else str(i)) for i, key in enumerate(distinct)}
    prompts = list(dict.fromkeys((r.get("prompt") or {}).get("label") for r in results))
    seen, repeats = Counter(), []
    for key, result in zip(content, results, strict=True):
        column = (key, result["promptIdx"], json.dumps(result["provider"], sort_keys=True, default=str))
        seen[column] += 1
        repeats.append(seen[column])
    several = max(repeats) > 1
    rows, definitions = [], {}
    for result, test, key, repeat in zip(results, test_of, content, repeats, strict=True):
        provider = result["provider"]
        model = (provider.get("label") or provider.get("id")) if isinstance(provider, dict) else str(provider)
        prompt = (result.get("prompt") or {}).get("label")
        if len(prompts) > 1:
            model = f"{model} [{prompt}]"
        sample_id = sample_of[key]
        response = result.get("response") or {}
        output = response.get("output")
        base = {"case_id": f"{sample_id}_repeat_{repeat}" if several else sample_id, "sample_id": sample_id,
                "repeat": repeat, "model": model, "input": (result.get("prompt") or {}).get("raw"),
                "output": output if output is None or isinstance(output, str) else _text(output),
                "description": test.get("description"), "vars": _text(result.get("vars") or test.get("vars")),
                "prompt": prompt, "test_idx": result["testIdx"]}
        grading = result.get("gradingResult")
        errored = result.get("failureReason") == 2
        message = (result.get("error") or response.get("error") or "error") if errored else None
        assertions = list(test.get("assert") or [])
        grader = (test.get("options") or {}).get("provider")
        if isinstance(grading, dict) and grading.get("componentResults"):
            components = grading["componentResults"]
            names = _assertion_names([c.get("assertion") or {} for c in components])
            for name, component in zip(names, components, strict=True):
                definitions.setdefault(name, {})[sample_id] = [component.get("assertion"), grader]
                rows.append(_row(**base, rubric=name, verdict="PASS" if component.get("pass") else "FAIL",
                                 score=component.get("score"), reason=component.get("reason")))
        else:
            for name, assertion in zip(_assertion_names(assertions), assertions, strict=True):
                definitions.setdefault(name, {})[sample_id] = [assertion, grader]
                rows.append(_row(**base, rubric=name, score=np.nan,
                                 error=message or "promptfoo recorded no grading result for this test"))
        definitions.setdefault("test", {})[sample_id] = [test.get("threshold"), [a for a in assertions]]
        rows.append(_row(**base, rubric="test", verdict="PASS" if result.get("success") else "FAIL",
                         score=result.get("score"), reason=(grading or {}).get("reason"), error=message))
    versions = {name: _digest(defs) for name, defs in definitions.items()}
    for row in rows:
        row["rubric_version"] = versions[row["rubric"]]
    inner = header.get("results") or {}
    source = {"tool": "promptfoo", "version": (header.get("metadata") or {}).get("promptfooVersion"), "path": str(path),
              "format": fmt, "eval_id": header.get("evalId"), "created": inner.get("timestamp"),
              "results_version": inner.get("version"), "repeat": (header.get("runtimeOptions") or {}).get("repeat")}
    stats = inner.get("stats") or {}
    tool_metrics = {key: stats[key] for key in ("successes", "failures", "errors") if key in stats}
    rubrics = {name: {"version": versions[name]} for name in definitions}
    return _table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL",
                  extra=["sample_id", "repeat", "score", "input", "output", "description", "vars", "prompt", "test_idx"],
                  source=source, skipped=Counter(), tool_metrics=tool_metrics, rubrics=rubrics, repeat="repeat")


# --- lm-evaluation-harness ----------------------------------------------------------------------------------------

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
    results_path = found[0]
    summary = read_json(results_path)
    if not isinstance(summary, dict) or not isinstance(summary.get("results"), dict):
        raise ValueError(f"{results_path}: not an lm-evaluation-harness results file (no 'results' object).")
    stamp = results_path.stem[len("results_"):]
    model = summary.get("model_name") or (summary.get("config") or {}).get("model") or "unknown"
    rows, skipped, tool_metrics = [], Counter(), []
    for task, values in summary["results"].items():
        for key, value in values.items():
            if "," in key and "_stderr," not in key and isinstance(value, (int, float)):
                tool_metrics.append({"task": task, "metric": key, "value": value})
    for task in summary["results"]:
        samples_path = results_path.parent / f"samples_{task}_{stamp}.jsonl"
        if not samples_path.is_file():
            skipped[f"tasks without a samples file (run with --log_samples): {task}"] += 1
            continue
        records = read_json_lines(samples_path)[0]
        by_metric: dict[str, list] = {}
        for number, record in records:
            if not isinstance(record, dict) or "doc_id" not in record:
                raise ValueError(f"{samples_path}, line {number}: not an lm-evaluation-harness sample (no 'doc_id').")
            for metric in record.get("metrics") or []:
                by_metric.setdefault(f"{metric},{record.get('filter', 'none')}", []).append((number, record, metric))
        for key, entries in by_metric.items():
            values = [record.get(metric) for _, record, metric in entries]
            binary = all(isinstance(v, (int, float, bool)) and float(v) in (0.0, 1.0) for v in values)
            for (_, record, metric), value in zip(entries, values, strict=True):
                arguments = record.get("arguments")
                first = next(iter(arguments.values()), {}) if isinstance(arguments, dict) else {}
                response = record.get("filtered_resps")
                score = float(value) if isinstance(value, (int, float, bool)) else np.nan
                problem = None if binary else (f"{metric} is not a 0/1 metric: no pass/fail verdict (see `score`)")
                rows.append(_row(case_id=str(record["doc_id"]), sample_id=str(record["doc_id"]), rubric=f"{task}/{key}",
                                 rubric_version=_digest((summary.get("configs") or {}).get(task, {})),
                                 model=model, verdict=("PASS" if score == 1.0 else "FAIL") if binary else None,
                                 score=score, error=problem, input=first.get("arg_0") if isinstance(first, dict) else None,
                                 output=_text(response[0] if isinstance(response, list) and len(response) == 1 else response),
                                 target=_text(record.get("target")), task=task, metric=metric,
                                 filter=record.get("filter", "none")))
    if not rows:
        raise ValueError(f"{results_path}: no samples_<task>_{stamp}.jsonl file beside it; run lm_eval with "
                         "--log_samples to keep each document's result.")
    source = {"tool": "lm-evaluation-harness", "version": summary.get("lm_eval_version"), "path": str(results_path),
              "format": "json", "model": model, "model_args": (summary.get("config") or {}).get("model_args"),
              "created": summary.get("date"), "n_samples": summary.get("n-samples")}
    rubrics = {row["rubric"]: {"version": row["rubric_version"]} for row in rows}
    return _table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL",
                  extra=["sample_id", "score", "input", "output", "target", "task", "metric", "filter"],
                  source=source, skipped=skipped, tool_metrics=tool_metrics, rubrics=rubrics, repeat=None)


# --- OpenAI evals -------------------------------------------------------------------------------------------------

def _sample_order(sample_id: str):
    head, _, tail = sample_id.rpartition(".")
    return (head, int(tail)) if tail.isdigit() else (sample_id, -1)


def read_openai_evals(path, *, pass_choices=None) -> pd.DataFrame:
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
    path, _ = _path(path, "path", {".jsonl": "jsonl", ".json": "jsonl"}, "an OpenAI evals record file")
    if pass_choices is not None and (isinstance(pass_choices, str) or not all(isinstance(c, str) for c in pass_choices)):
        raise TypeError(f"`pass_choices` must be a sequence of choices, e.g. ('Y',); got {pass_choices!r}.")
    lines = read_json_lines(path)[0]
    spec, report, events = None, None, []
    for number, record in lines:
        if not isinstance(record, dict):
            raise ValueError(f"{path}, line {number}: expected a JSON object (an OpenAI evals record).")
        if "spec" in record:
            spec = record["spec"]
        elif "final_report" in record:
            report = record["final_report"]
        elif "type" in record and "sample_id" in record:
            events.append(record)
        else:
            raise ValueError(f"{path}, line {number}: neither the spec, the final report nor an event.")
    if spec is None:
        raise ValueError(f"{path}: no spec line; expected an OpenAI evals record file (its first line is the run spec).")
    fns = list(spec.get("completion_fns") or [])
    args = ((spec.get("run_config") or {}).get("eval_spec") or {}).get("args") or {}
    graded_name = args.get("modelgraded_spec") or "metrics"
    errors, outputs, skipped, rows = {}, {}, Counter(), []
    for event in events:
        sid = str(event["sample_id"])
        if event["type"] == "error":
            data = event.get("data") or {}
            errors.setdefault(sid, f"{data.get('type', 'error')}: {data.get('message', '')}".strip())
        elif event["type"] == "sampling":
            outputs.setdefault(sid, (event.get("data") or {}).get("sampled"))
    for event in sorted(events, key=lambda e: (_sample_order(str(e["sample_id"])), e.get("event_id", 0))):
        sid, data = str(event["sample_id"]), event.get("data") or {}
        base = {"sample_id": sid, "model": fns[0] if fns else "unknown", "created_at": event.get("created_at"),
                "error": errors.get(sid)}
        if event["type"] == "match":
            sampled = data.get("sampled")
            rows.append(_row(**base, rubric="match", verdict="PASS" if data.get("correct") else "FAIL",
                             score=float(bool(data.get("correct"))), output=_text(sampled if sampled is not None else outputs.get(sid)),
                             target=_text(data.get("expected")), grader=None))
        elif event["type"] == "metrics" and "choice" in data:
            choice, score = data.get("choice"), data.get("score")
            passed = (choice in pass_choices) if pass_choices is not None else (score is not None and float(score) == 1.0)
            rows.append(_row(**base, rubric=graded_name, verdict="PASS" if passed else "FAIL",
                             parsed=choice != "__invalid__", score=np.nan if score is None else float(score),
                             reason=f"choice {choice}", output=_text(outputs.get(sid)), target=None,
                             grader=fns[-1] if len(fns) > 1 else None))
        elif event["type"] not in ("error", "sampling"):
            skipped[f"{event['type']} events (no verdict)"] += 1
    if not rows:
        raise ValueError(f"{path}: no match or model-graded metrics events; nothing to read as verdicts.")
    counts = Counter((r["rubric"], r["sample_id"]) for r in rows)
    seen = Counter()
    for row in rows:
        seen[(row["rubric"], row["sample_id"])] += 1
        row["repeat"] = seen[(row["rubric"], row["sample_id"])]
    several = max(counts.values()) > 1
    for row in rows:
        row["case_id"] = f"{row['sample_id']}_repeat_{row['repeat']}" if several else row["sample_id"]
        row["rubric_version"] = _digest([spec.get("eval_name"), args, fns[1:]])
    if report is None:
        warnings.warn(f"{path}: no final report: the run did not finish; the table holds the {len(rows)} verdict(s) "
                      "recorded before it stopped.", EvalkitWarning, stacklevel=2)
    source = {"tool": "openai-evals", "version": None, "path": str(path), "format": "jsonl",
              "eval_name": spec.get("eval_name"), "run_id": spec.get("run_id"), "created": spec.get("created_at"),
              "completion_fns": fns, "complete": report is not None}
    rubrics = {name: {"version": rows[0]["rubric_version"], "eval_spec": args} for name in dict.fromkeys(r["rubric"] for r in rows)}
    return _table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL",
                  extra=["sample_id", "repeat", "score", "output", "target", "grader"], source=source, skipped=skipped,
                  tool_metrics=report, rubrics=rubrics, repeat="repeat" if several else None)


# --- deepeval and ragas (in-memory results) -----------------------------------------------------------------------

def _get(item, key, default=None):
    if isinstance(item, dict):
        return item.get(key, default)
    return getattr(item, key, default)


def _package_version(obj, package: str) -> str | None:
    if not type(obj).__module__.startswith(package):
        return None
    from importlib import metadata
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


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
    tests = _get(result, "test_results")
    if tests is None or isinstance(tests, (str, bytes)) or not hasattr(tests, "__iter__"):
        raise TypeError(f"`result` must be a deepeval EvaluationResult (or its model_dump() dict) with "
                        f"`test_results`; got {type(result).__name__}.")
    if not isinstance(model, str) or not model:
        raise TypeError(f"`model` must be a non-empty string; got {model!r}.")
    rows, skipped = [], Counter()
    for position, test in enumerate(tests):
        name = _get(test, "name")
        if name is None:
            raise ValueError(f"`result.test_results[{position}]` has no name; expected a deepeval TestResult.")
        metrics = _get(test, "metrics_data")
        if not metrics:
            skipped["test results without metrics_data"] += 1
            continue
        for number, metric in enumerate(metrics):
            where = f"`result.test_results[{position}].metrics_data[{number}]`"
            error = _get(metric, "error")
            score, threshold = (_deepeval_number(_get(metric, key), key, where) for key in ("score", "threshold"))
            metric_name, success = _get(metric, "name"), _get(metric, "success")
            if not isinstance(metric_name, str) or not metric_name:
                raise ValueError(f"{where} has name {metric_name!r}; expected the metric's name (a non-empty string).")
            if error is None and not isinstance(success, (bool, np.bool_)):
                raise ValueError(f"{where} has success {success!r}; expected True or False (deepeval's verdict).")
            definition = [_get(metric, key) for key in ("name", "threshold", "strict_mode", "evaluation_model")]
            rows.append(_row(case_id=str(name), sample_id=str(name), rubric=metric_name,
                             rubric_version=_digest(definition), model=model,
                             verdict="PASS" if success else "FAIL", error=error, score=score, threshold=threshold,
                             reason=_get(metric, "reason"), input=_text(_get(test, "input")),
                             output=_text(_get(test, "actual_output")), target=_text(_get(test, "expected_output")),
                             grader=_get(metric, "evaluation_model")))
    if not rows:
        raise ValueError("`result` holds no metric results.")
    source = {"tool": "deepeval", "version": _package_version(result, "deepeval"), "path": None,
              "format": "EvaluationResult" if not isinstance(result, dict) else "dict",
              "test_run_id": _get(result, "test_run_id")}
    rubrics = {row["rubric"]: {"version": row["rubric_version"], "threshold": row["threshold"]} for row in rows}
    return _table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL",
                  extra=["sample_id", "score", "threshold", "input", "output", "target", "grader"], source=source,
                  skipped=skipped, tool_metrics=None, rubrics=rubrics, repeat=None)


def _deepeval_number(value, key: str, where: str) -> float:
    """A metric's score or threshold as a float (NaN where deepeval recorded none); anything else is refused."""
    if value is None:
        return np.nan
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.number)) or np.isinf(value):
        raise ValueError(f"{where} has {key} {value!r}; expected a finite number (or none).")
    return float(value)


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
        version = _package_version(frame, "ragas")
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
            rows.append(_row(case_id=str(position), sample_id=str(position), rubric=str(name),
                             rubric_version=_digest([name, float(thresholds[name])]), model=model,
                             verdict=None if missing_score else ("PASS" if value >= thresholds[name] else "FAIL"),
                             score=np.nan if missing_score else float(value), threshold=float(thresholds[name]),
                             error="ragas gave no score (NaN): the metric could not score this sample" if missing_score else None,
                             input=_text(record.get("user_input")), output=_text(record.get("response")),
                             target=_text(record.get("reference"))))
    source = {"tool": "ragas", "version": version, "path": None, "format": "DataFrame"}
    rubrics = {name: {"version": _digest([name, float(thresholds[name])]), "threshold": float(thresholds[name])}
               for name in metrics}
    return _table(rows, levels=PASS_FAIL, pass_levels=("PASS",), fail_level="FAIL",
                  extra=["sample_id", "score", "threshold", "input", "output", "target"], source=source,
                  skipped=Counter(), tool_metrics=None, rubrics=rubrics, repeat=None)


# --- the pass rate of a log ---------------------------------------------------------------------------------------

def pass_rate(results: pd.DataFrame, *, confidence_level: float = 0.95, interval: str = "clopper-pearson",
              pass_levels=None) -> pd.DataFrame:
    """Deprecated: :func:`evalkit.judge.pass_rate` is the one pass rate of a results table and reads a log's epochs
    (repeated ``sample_id``) as clusters; this name calls it and will be removed in the next release.

    ``interval="clopper-pearson"`` (this function's default) is Clopper-Pearson on the per-case means, as before;
    :func:`evalkit.judge.pass_rate`'s own default with epochs is the betting interval over whole clusters. The table
    is :func:`evalkit.judge.pass_rate`'s (``n``, ``n_clusters``, ``interval``, ``mean_score``).
    """
    warnings.warn("evalkit.logs.pass_rate is deprecated: evalkit.judge.pass_rate reads a log's epochs as clusters "
                  "(call it instead; this name will be removed in the next release).", FutureWarning, stacklevel=2)
    from evalkit import judge  # the deprecated name only: the module itself does not depend on judge

    return judge.pass_rate(results, confidence_level=confidence_level, interval=interval, pass_levels=pass_levels,
                           unparseable_alert=1.0)
