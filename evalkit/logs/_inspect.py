"""inspect_ai logs: a ``.eval`` archive (a zip of JSON members, Zstandard-compressed) or its ``.json`` form."""

from __future__ import annotations

import json
import math
import struct
import zipfile
import zlib
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit._io import read_json
from evalkit._optional import install_hint
from evalkit._validation import warn
from evalkit.logs._shared import (
    MAX_BYTES,
    check_max_bytes,
    checked_path,
    digest,
    identifier,
    levels_subset,
    results_table,
    row,
    text,
)

INSPECT_LEVELS = ("C", "P", "I", "N")
_ZSTD = 93  # the zip compression method number of Zstandard
_EXTRA = ["sample_id", "epoch", "score", "input", "output", "target", "grader", "reason_code"]


# ------------------------------------------------------------------ the two formats
_CHUNK = 1 << 20  # bytes decompressed at a time: a member is checked against its limits as it expands
_ZSTD_WINDOW = 1 << 27  # the largest Zstandard window accepted (libzstd's own default limit, 128 MiB)
_SAMPLE_FIELDS = ("id", "epoch", "input", "target", "output", "scores", "error", "limit", "completed_at")


class _Slice:
    """The ``size`` bytes of an open file from where it stands: a zip member's compressed data, read as a stream."""

    def __init__(self, handle, size: int):
        self._handle, self._left = handle, size

    def read(self, n: int = -1) -> bytes:
        n = self._left if n is None or n < 0 else min(n, self._left)
        data = self._handle.read(n)
        self._left -= len(data)
        return data

    def close(self) -> None:
        self._handle.close()


def _zstd_stream(path: Path, info: zipfile.ZipInfo):
    """A stream of a Zstandard member's content (Python's zipfile cannot read one), across every frame it holds."""
    try:
        import zstandard
    except ImportError:
        raise ImportError(f"{path}: reading an inspect_ai .eval log needs the zstandard package (its members are "
                          f"Zstandard-compressed): {install_hint('logs')}, or convert the log to JSON with "
                          "`inspect log convert --to json`.") from None
    handle = path.open("rb")
    handle.seek(info.header_offset)
    header = handle.read(30)
    if len(header) < 30 or header[:4] != b"PK\x03\x04":
        handle.close()
        raise ValueError(f"{path}: member {info.filename!r} has no local header; the .eval archive is damaged.")
    name_length, extra_length = struct.unpack("<HH", header[26:30])
    handle.seek(info.header_offset + 30 + name_length + extra_length)
    decompressor = zstandard.ZstdDecompressor(max_window_size=_ZSTD_WINDOW)
    return decompressor.stream_reader(_Slice(handle, info.compress_size), read_across_frames=True, closefd=True)


def _member(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int) -> bytearray:
    """One member's content, expanded a chunk at a time: refused past ``max_bytes`` (from the size the archive declares
    for it, before anything is expanded) and past that declared size (as it expands), so a member made to expand to
    gigabytes costs at most ``max_bytes`` of memory."""
    where = f"{path}: member {info.filename!r}"
    if info.file_size > max_bytes:
        raise ValueError(f"{where} expands to {info.file_size:,} bytes, more than the limit of {max_bytes:,} bytes "
                         "(max_bytes); pass a larger max_bytes= to read it.")
    content, size, crc = bytearray(info.file_size), 0, 0
    try:
        import zstandard

        errors = (zipfile.BadZipFile, zlib.error, EOFError, zstandard.ZstdError)
    except ImportError:
        errors = (zipfile.BadZipFile, zlib.error, EOFError)
    try:
        with (_zstd_stream(path, info) if info.compress_type == _ZSTD else archive.open(info)) as stream:
            while chunk := stream.read(_CHUNK):
                if size + len(chunk) > info.file_size:
                    raise ValueError(f"{where} expands past the {info.file_size:,} bytes the archive declares for it "
                                     "(a damaged member, or one made to exhaust memory); it was not read further.")
                content[size:size + len(chunk)] = chunk
                crc, size = zlib.crc32(chunk, crc), size + len(chunk)
    except errors as exc:
        raise ValueError(f"{where} is not valid compressed data ({exc}); the .eval archive is damaged.") from None
    except (NotImplementedError, RuntimeError) as exc:  # a compression method or an encryption zipfile cannot read
        raise ValueError(f"{where} cannot be read ({exc}); inspect_ai writes Zstandard or deflate members.") from None
    if size != info.file_size or crc != info.CRC:
        raise ValueError(f"{where} is truncated or damaged (checksum mismatch).")
    return content


def _member_json(path: Path, archive: zipfile.ZipFile, info: zipfile.ZipInfo, max_bytes: int):
    content = _member(path, archive, info, max_bytes)
    try:
        return json.loads(content.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{path}: member {info.filename!r} is not valid JSON ({exc}).") from None
    except RecursionError:
        raise ValueError(f"{path}: member {info.filename!r} is JSON nested too deeply to read.") from None


def _members(path: Path, archive: zipfile.ZipFile) -> dict[str, zipfile.ZipInfo]:
    """The archive's members by name; a name given twice is refused (which copy inspect_ai meant cannot be known)."""
    names = Counter(info.filename for info in archive.infolist())
    twice = [name for name, count in names.items() if count > 1]
    if twice:
        raise ValueError(f"{path}: member {twice[0]!r} appears {names[twice[0]]} times in the archive; inspect_ai writes "
                         "each member once, so the log was altered or damaged, and which copy counts cannot be known.")
    return {info.filename: info for info in archive.infolist()}


def _eval_log(path: Path, max_bytes: int) -> tuple[dict, list[tuple[str, dict]]]:
    """The header and the samples (each with where it was) of a ``.eval`` archive, one member at a time."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise ValueError(f"{path}: not a complete inspect_ai .eval log (a zip archive was expected: {exc}); "
                         "was the file truncated?") from None
    with archive:
        members = _members(path, archive)
        if "header.json" in members:
            header = _member_json(path, archive, members["header.json"], max_bytes)
        elif "_journal/start.json" in members:  # a log whose run has not finished: no header yet
            header = {**_member_json(path, archive, members["_journal/start.json"], max_bytes), "status": "started"}
        else:
            raise ValueError(f"{path}: a zip archive without header.json or _journal/start.json, so not an "
                             "inspect_ai .eval log.")
        samples = [(f"member {name!r}", _reduced(_member_json(path, archive, info, max_bytes)))
                   for name, info in members.items() if name.startswith("samples/") and name.endswith(".json")]
    return header, samples


def _json_log(path: Path, max_bytes: int) -> tuple[dict, list[tuple[str, dict]]]:
    """The header and the samples of a ``.json`` log (``inspect log convert --to json``)."""
    log = read_json(path, max_bytes=max_bytes)
    if not isinstance(log, dict):
        raise ValueError(f"{path}: expected an inspect_ai log (a JSON object with 'eval' and 'samples'); "
                         f"got a JSON {type(log).__name__}.")
    samples = log.get("samples") or []
    if not isinstance(samples, list):
        raise ValueError(f"{path}: 'samples' is a JSON {type(samples).__name__}; expected a list of samples.")
    return ({k: v for k, v in log.items() if k != "samples"},
            [(f"samples[{i}]", _reduced(sample)) for i, sample in enumerate(samples)])


def _reduced(sample):
    """What the table needs of a sample (its messages and events, often most of it, are let go at once)."""
    if not isinstance(sample, dict):
        return sample
    out = {key: sample[key] for key in _SAMPLE_FIELDS if key in sample}
    if isinstance(out.get("output"), dict):
        out["output"] = {"completion": out["output"].get("completion")}
    return out


#: The log formats, by suffix: each gives ``(header, samples)`` (as inspect_ai picks a recorder by format).
FORMATS = {".eval": ("eval", _eval_log), ".json": ("json", _json_log)}


# ------------------------------------------------------------------ one sample's rows
def _inspect_value(value) -> tuple[str | None, float, str | None, bool]:
    """``(verdict, score, problem, bad)`` for one inspect_ai score value (inspect_ai's own value_to_float mapping);
    ``bad``: the value is none that inspect_ai's metrics read as one number (a list, a dict, text, an infinity)."""
    if isinstance(value, bool):
        return ("C" if value else "I"), float(value), None, False
    if isinstance(value, str):
        stripped = value.strip()
        if stripped in INSPECT_LEVELS:
            return stripped, {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}[stripped], None, False
        if stripped.lower() in ("yes", "true"):
            return "C", 1.0, None, False
        if stripped.lower() in ("no", "false"):
            return "I", 0.0, None, False
        try:
            value = float(stripped)
        except ValueError:
            return None, np.nan, f"score value {value!r} is none of C, P, I, N, a boolean or a number", True
    if isinstance(value, (int, float)):
        value = float(value)
        if math.isnan(value):
            return None, np.nan, "unscored", False
        if math.isinf(value):
            return None, np.nan, f"score value {value!r} is not a finite number", True
        if value in (0.0, 1.0) or 0.0 < value < 1.0:
            return ("C" if value == 1.0 else "I" if value == 0.0 else "P"), value, None, False
        return None, value, f"score {value!r} is outside [0, 1], so it has no pass/fail verdict (see `score`)", False
    kind = {list: "a list", dict: "a dict"}.get(type(value), f"a JSON {type(value).__name__}")
    return None, np.nan, (f"score value is {kind} ({json.dumps(value, default=str)[:80]}); evalkit reads one value per "
                          "scorer (C, P, I, N, a boolean or a number)"), True


def _grader(scorer: dict) -> str | None:
    model = (scorer.get("options") or {}).get("model") if isinstance(scorer.get("options"), dict) else None
    if isinstance(model, dict):
        return model.get("model")
    return model if isinstance(model, str) else None


def _scorers(path: Path, spec: dict, results: dict, samples: list[dict]) -> tuple[dict, list[str]]:
    """The scorers by name (from the spec, the results and the samples) and every scorer's name, in that order."""
    listed = spec.get("scorers") if isinstance(spec.get("scorers"), list) else []
    scorers = {s["name"]: s for s in listed if isinstance(s, dict) and isinstance(s.get("name"), str)}
    for i, score in enumerate(results.get("scores") if isinstance(results.get("scores"), list) else []):
        if not isinstance(score, dict) or not isinstance(score.get("name"), str):
            raise ValueError(f"{path}: results.scores[{i}] has no name; expected inspect_ai's metrics of a named scorer.")
        scorers.setdefault(score["name"], {"name": score["name"], "options": score.get("params") or {}})
    names = list(scorers)
    for sample in samples:
        names.extend(name for name in sample["scores"] if name not in names)
    return scorers, names


def _checked_sample(path: Path, where: str, sample) -> dict:
    """A sample with its id as text and its epoch as a whole number; one inspect_ai could not read is refused."""
    if not isinstance(sample, dict):
        raise ValueError(f"{path}: {where} is a JSON {type(sample).__name__}; expected a sample (a JSON object).")
    if "id" not in sample:
        raise ValueError(f"{path}: {where} has no id; expected the sample's id (a string or a whole number).")
    epoch = sample.get("epoch", 1)
    if isinstance(epoch, str) and epoch.strip().isdigit():  # as inspect_ai reads it
        epoch = int(epoch)
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 1:
        raise ValueError(f"{path}: {where} has epoch {epoch!r}; expected a whole number from 1 (inspect_ai numbers "
                         "the epochs 1, 2, ...).")
    scores = sample.get("scores") or {}
    if not isinstance(scores, dict):
        raise ValueError(f"{path}: {where} has scores of type {type(scores).__name__}; expected an object of scores "
                         "by scorer name.")
    return {**sample, "id": identifier(sample["id"], f"{path}: {where}", "id"), "_id": sample["id"], "epoch": epoch,
            "scores": scores, "_where": where}


def _sample_rows(sample: dict, model: str, scorers: dict, names: list[str], versions: dict, skipped: Counter) -> list:
    """The rows of one sample and epoch: one per scorer, or one error row per scorer when it was not scored."""
    output = sample.get("output") if isinstance(sample.get("output"), dict) else {}
    base = {"sample_id": sample["id"], "_id": sample["_id"], "epoch": sample["epoch"], "model": model,
            "input": text(sample.get("input")), "output": text(output.get("completion")),
            "target": text(sample.get("target")), "created_at": sample.get("completed_at"), "where": sample["_where"]}
    error = sample.get("error")
    error = text(error.get("message")) if isinstance(error, dict) else text(error)
    if not sample["scores"]:
        limit = sample.get("limit")
        problem = error or (f"{limit.get('type')} limit reached" if isinstance(limit, dict) else None) or "not scored"
        return [row(**base, rubric=name, rubric_version=versions[name], error=problem,
                    grader=_grader(scorers.get(name, {})), score=np.nan, reason_code=None) for name in names]
    if error:
        skipped["samples that errored but were still scored (kept as scored)"] += 1
    rows = []
    for name, score in sample["scores"].items():
        if not isinstance(score, dict):
            rows.append(row(**base, rubric=name, rubric_version=versions[name], score=np.nan, bad=True, reason_code=None,
                            grader=_grader(scorers.get(name, {})),
                            error=f"score {json.dumps(score, default=str)[:80]} is not a score object (value, explanation)"))
            continue
        verdict, value, problem, bad = _inspect_value(score.get("value"))
        grading = (score.get("metadata") or {}).get("grading") if isinstance(score.get("metadata"), dict) else None
        raw = grading[-1].get("content") if isinstance(grading, list) and grading and isinstance(grading[-1], dict) else None
        code = score.get("reason")
        if problem == "unscored":
            problem = f"unscored ({code or 'no reason given'}): {score.get('explanation') or ''}".rstrip(": ")
        rows.append(row(**base, rubric=name, rubric_version=versions[name], verdict=verdict, score=value, bad=bad,
                        raw=text(raw), reason=text(score.get("explanation")), error=problem,
                        grader=_grader(scorers.get(name, {})), reason_code=text(code)))
    return rows


def _tool_metrics(results: dict) -> list[dict]:
    """inspect_ai's own metrics: one row per scorer, reducer and metric."""
    return [{"rubric": s.get("name"), "reducer": s.get("reducer"), "metric": m.get("name"), "value": m.get("value")}
            for s in results.get("scores") or [] if isinstance(s.get("metrics"), dict)
            for m in s["metrics"].values() if isinstance(m, dict)]


def _source(path: Path, fmt: str, header: dict, spec: dict) -> dict:
    config = spec.get("config") if isinstance(spec.get("config"), dict) else {}
    packages = spec.get("packages") if isinstance(spec.get("packages"), dict) else {}
    return {"tool": "inspect_ai", "version": packages.get("inspect_ai"), "path": str(path),
            "format": fmt, "task": spec.get("task"), "eval_id": spec.get("eval_id"), "run_id": spec.get("run_id"),
            "created": spec.get("created"), "status": header.get("status"), "epochs": config.get("epochs"),
            "epochs_reducer": config.get("epochs_reducer")}


# ------------------------------------------------------------------ the reader
def read_inspect(path, *, pass_levels=("C",), max_bytes: int = MAX_BYTES) -> pd.DataFrame:
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
    max_bytes : int, default 268435456 (256 MiB)
        The most bytes read from one file or expanded from one archive member: a larger one is refused (from the size the archive declares for a member, and again as it expands, so a member made to expand to gigabytes costs no more than this), naming it, before it is parsed.

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
    header, samples = FORMATS[path.suffix.lower()][1](path, check_max_bytes(max_bytes))
    spec = header.get("eval")
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), str):
        raise ValueError(f"{path}: not an inspect_ai log (no 'eval' section naming the model); expected a log "
                         "written by inspect_ai.")
    if not samples:
        raise ValueError(f"{path}: the log holds no samples (run with log_samples=False, or cancelled before any "
                         "sample finished); evalkit needs each sample's scores.")
    samples = [_checked_sample(path, where, sample) for where, sample in samples]
    results = header.get("results") if isinstance(header.get("results"), dict) else {}
    scorers, names = _scorers(path, spec, results, samples)
    dataset = spec.get("dataset") if isinstance(spec.get("dataset"), dict) else {}
    order = {str(sid): i for i, sid in enumerate(dataset.get("sample_ids") or [])}
    samples.sort(key=lambda s: (order.get(s["id"], len(order)), s["id"], s["epoch"]))
    several = max(Counter(s["id"] for s in samples).values()) > 1
    skipped, rows = Counter(), []
    versions = {name: digest(scorers.get(name, {"name": name})) for name in names}
    for sample in samples:
        rows += _sample_rows(sample, spec["model"], scorers, names, versions, skipped)
    for each in rows:
        each["case_id"] = f"{each['sample_id']}_epoch_{each['epoch']}" if several else each["sample_id"]
    status = header.get("status")
    if status not in ("success", None):
        warn(f"{path}: the run's status is {status!r}, not 'success'; the table holds the {len(samples)} "
                      "sample(s) the log has.")
    rubrics = {name: {"version": versions[name], "scorer": scorers.get(name)} for name in names}
    return results_table(rows, levels=INSPECT_LEVELS, pass_levels=pass_levels, fail_level="I", extra=_EXTRA,
                         source=_source(path, fmt, header, spec), skipped=skipped, tool_metrics=_tool_metrics(results),
                         rubrics=rubrics, repeat="epoch")
