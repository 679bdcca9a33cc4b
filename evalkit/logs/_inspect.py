"""inspect_ai logs: a ``.eval`` archive (a zip of JSON members, Zstandard-compressed) or its ``.json`` form."""

from __future__ import annotations

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

from evalkit._io import read_json
from evalkit._validation import EvalkitWarning
from evalkit.logs._shared import checked_path, digest, levels_subset, results_table, row, text

INSPECT_LEVELS = ("C", "P", "I", "N")
_ZSTD = 93  # the zip compression method number of Zstandard
_EXTRA = ["sample_id", "epoch", "score", "input", "output", "target", "grader", "reason_code"]


# ------------------------------------------------------------------ the two formats
def _zip_member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes:
    """One member of a zip archive; Zstandard members (which Python's zipfile cannot read) through zstandard."""
    if info.compress_type != _ZSTD:
        return archive.read(info)
    try:
        import zstandard
    except ImportError:
        raise ImportError(f"{path}: reading an inspect_ai .eval log needs the zstandard package (its members are "
                          "Zstandard-compressed): pip install \"evalkit[logs]\", or convert the log to JSON with "
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


def _eval_log(path: Path) -> tuple[dict, list[dict]]:
    """The header and the samples of a ``.eval`` archive."""
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


def _json_log(path: Path) -> tuple[dict, list[dict]]:
    """The header and the samples of a ``.json`` log (``inspect log convert --to json``)."""
    log = read_json(path)
    if not isinstance(log, dict):
        raise ValueError(f"{path}: expected an inspect_ai log (a JSON object with 'eval' and 'samples'); "
                         f"got a JSON {type(log).__name__}.")
    return {k: v for k, v in log.items() if k != "samples"}, log.get("samples") or []


#: The log formats, by suffix: each gives ``(header, samples)`` (as inspect_ai picks a recorder by format).
FORMATS = {".eval": ("eval", _eval_log), ".json": ("json", _json_log)}


# ------------------------------------------------------------------ one sample's rows
def _inspect_value(value) -> tuple[str | None, float, str | None]:
    """``(verdict, score, problem)`` for one inspect_ai score value (inspect_ai's own value_to_float mapping)."""
    if isinstance(value, bool):
        return ("C" if value else "I"), float(value), None
    if isinstance(value, str):
        stripped = value.strip()
        if stripped in INSPECT_LEVELS:
            return stripped, {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}[stripped], None
        if stripped.lower() in ("yes", "true"):
            return "C", 1.0, None
        if stripped.lower() in ("no", "false"):
            return "I", 0.0, None
        try:
            value = float(stripped)
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


def _scorers(spec: dict, results: dict, samples: list[dict]) -> tuple[dict, list[str]]:
    """The scorers by name (from the spec, the results and the samples) and every scorer's name, in that order."""
    scorers = {s["name"]: s for s in spec.get("scorers") or [] if isinstance(s, dict) and "name" in s}
    for score in results.get("scores") or []:
        scorers.setdefault(score["name"], {"name": score["name"], "options": score.get("params") or {}})
    names = list(scorers)
    for sample in samples:
        names.extend(name for name in (sample.get("scores") or {}) if name not in names)
    return scorers, names


def _sample_rows(sample: dict, model: str, scorers: dict, names: list[str], versions: dict, skipped: Counter) -> list:
    """The rows of one sample and epoch: one per scorer, or one error row per scorer when it was not scored."""
    output = sample.get("output") or {}
    base = {"sample_id": str(sample["id"]), "epoch": int(sample.get("epoch", 1)), "model": model,
            "input": text(sample.get("input")), "output": output.get("completion"),
            "target": text(sample.get("target")), "created_at": sample.get("completed_at")}
    scores = sample.get("scores") or {}
    error = (sample.get("error") or {}).get("message") if isinstance(sample.get("error"), dict) else sample.get("error")
    if not scores:
        limit = sample.get("limit")
        problem = error or (f"{limit.get('type')} limit reached" if isinstance(limit, dict) else None) or "not scored"
        return [row(**base, rubric=name, rubric_version=versions[name], error=problem,
                    grader=_grader(scorers.get(name, {})), score=np.nan, reason_code=None) for name in names]
    if error:
        skipped["samples that errored but were still scored (kept as scored)"] += 1
    rows = []
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
        rows.append(row(**base, rubric=name, rubric_version=versions[name], verdict=verdict, score=value,
                        raw=text(raw), reason=score.get("explanation"), error=problem,
                        grader=_grader(scorers.get(name, {})), reason_code=code))
    return rows


def _source(path: Path, fmt: str, header: dict, spec: dict) -> dict:
    config = spec.get("config") or {}
    return {"tool": "inspect_ai", "version": (spec.get("packages") or {}).get("inspect_ai"), "path": str(path),
            "format": fmt, "task": spec.get("task"), "eval_id": spec.get("eval_id"), "run_id": spec.get("run_id"),
            "created": spec.get("created"), "status": header.get("status"), "epochs": config.get("epochs"),
            "epochs_reducer": config.get("epochs_reducer")}


# ------------------------------------------------------------------ the reader
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
        A ``.eval`` log (needs ``pip install "evalkit[logs]"``) or a ``.json`` log, with samples.
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
    path, fmt = checked_path(path, "path", {suffix: name for suffix, (name, _) in FORMATS.items()}, "an inspect_ai log")
    pass_levels = levels_subset(pass_levels, INSPECT_LEVELS, fail_level="I")
    header, samples = FORMATS[path.suffix.lower()][1](path)
    spec = header.get("eval")
    if not isinstance(spec, dict) or "model" not in spec:
        raise ValueError(f"{path}: not an inspect_ai log (no 'eval' section naming the model); expected a log "
                         "written by inspect_ai.")
    if not samples:
        raise ValueError(f"{path}: the log holds no samples (run with log_samples=False, or cancelled before any "
                         "sample finished); evalkit needs each sample's scores.")
    results = header.get("results") or {}
    scorers, names = _scorers(spec, results, samples)
    order = {str(sid): i for i, sid in enumerate((spec.get("dataset") or {}).get("sample_ids") or [])}
    samples = sorted(samples, key=lambda s: (order.get(str(s["id"]), len(order)), str(s["id"]), s.get("epoch", 1)))
    epochs = Counter(str(s["id"]) for s in samples)
    skipped, rows = Counter(), []
    versions = {name: digest(scorers.get(name, {"name": name})) for name in names}
    for sample in samples:
        rows += _sample_rows(sample, spec["model"], scorers, names, versions, skipped)
    several = max(epochs.values()) > 1
    for each in rows:
        each["case_id"] = f"{each['sample_id']}_epoch_{each['epoch']}" if several else each["sample_id"]
    tool_metrics = [{"rubric": s.get("name"), "reducer": s.get("reducer"), "metric": m.get("name"), "value": m.get("value")}
                    for s in results.get("scores") or [] for m in (s.get("metrics") or {}).values()]
    status = header.get("status")
    if status not in ("success", None):
        warnings.warn(f"{path}: the run's status is {status!r}, not 'success'; the table holds the {len(samples)} "
                      "sample(s) the log has.", EvalkitWarning, stacklevel=2)
    rubrics = {name: {"version": versions[name], "scorer": scorers.get(name)} for name in names}
    return results_table(rows, levels=INSPECT_LEVELS, pass_levels=pass_levels, fail_level="I", extra=_EXTRA,
                         source=_source(path, fmt, header, spec), skipped=skipped, tool_metrics=tool_metrics,
                         rubrics=rubrics, repeat="epoch")
