"""The rules every reader of :mod:`evalkit.logs` follows, written once: the path check and the size limit, ids and
numbers read from a tool's file, one row, the results table and its ``attrs`` (``skipped``, ``clusters``,
``source``, ``rubric``), the one-case-once rule, and the readable text of a tool's values.

Private floor: imports nothing public from evalkit.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit._tables import RESULT_COLUMNS
from evalkit._validation import show, warn
from evalkit._version import __version__

PASS_FAIL = ("PASS", "FAIL")
#: The most bytes a reader takes from one file, or expands from one archive member, by default (256 MiB): a log is
#: a file someone handed over, and a small file can expand to gigabytes.
MAX_BYTES = 256 * 2 ** 20


def check_max_bytes(max_bytes) -> int:
    """``max_bytes`` checked: a positive whole number of bytes."""
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, numbers.Integral) or max_bytes < 1:
        raise TypeError(f"`max_bytes` must be a positive whole number of bytes, e.g. {MAX_BYTES} (256 MiB); got "
                        f"{max_bytes!r}.")
    return int(max_bytes)


def digest(value) -> str:
    """A short content hash of a rubric's definition (its ``rubric_version``)."""
    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode("utf-8")).hexdigest()[:12]


def checked_path(path, name: str, suffixes: dict[str, str], expected: str) -> tuple[Path, str]:
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


def text(value) -> str | None:
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


def get(item, key, default=None):
    """A field of a tool's result object or of its dict form."""
    if isinstance(item, dict):
        return item.get(key, default)
    return getattr(item, key, default)


def package_version(obj, package: str) -> str | None:
    """The installed version of the package whose object ``obj`` is (None for a plain dict)."""
    if not type(obj).__module__.startswith(package):
        return None
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def identifier(value, where: str, field: str) -> str:
    """A tool's id of a case (a string or a whole number) as evalkit's text id; anything else is refused, naming where
    it is and the field."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return str(int(value))
    raise ValueError(f"{where}: {field} is {show(value)}; expected the case's id (a non-empty string or a whole "
                     "number).")


def field(container: dict, key: str, kind: type, where: str):
    """``container[key]`` when it is a ``kind`` (dict or list), empty when absent or null; another type is refused,
    naming where and the field."""
    value = container.get(key)
    if value is None:
        return kind()
    if not isinstance(value, kind):
        raise ValueError(f"{where}: {key} is a JSON {_json_type(value)}; expected a JSON "
                         f"{'object' if kind is dict else 'list'}.")
    return value


def _json_type(value) -> str:
    return {dict: "object", list: "list", str: "string", bool: "boolean"}.get(type(value), type(value).__name__)


def number(value, what: str) -> tuple[float, str | None]:
    """``(value, None)`` for a finite number (NaN where the tool recorded none), else ``(NaN, why not)``: one bad
    value is one error row, never a failed read."""
    if value is None:
        return np.nan, None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.number)):
        return np.nan, f"{what} is {_shown(value)}, not a number"
    if math.isinf(value):
        return np.nan, f"{what} is {value!r}, not a finite number"
    return float(value), None


def _shown(value) -> str:
    shown = json.dumps(value, default=str) if isinstance(value, (dict, list)) else show(value)
    return shown if len(shown) <= 80 else shown[:77] + "..."


def row(*, where: str | None = None, bad: bool = False, **values) -> dict:
    """One row of the results table; an ``error`` makes it an error row (no verdict, not parsed).

    ``where`` names the row's place in the tool's file (a member, a line, an item), for the messages of
    :func:`results_table`; ``bad`` marks an error row made because a value is not what the tool writes.
    """
    out = {"rubric_version": None, "raw": None, "reason": None, "error": None, "latency_s": np.nan, "cached": None,
           "created_at": None, "parsed": True}
    out.update(values)
    if out["error"] is not None:
        out["verdict"], out["parsed"] = None, False
    out["_where"], out["_bad"] = where, bad
    return out


def _once_each(rows: list[dict], origin: str) -> None:
    """One row per rubric, model and case, and one tool id per case id: a sample given twice (a duplicated member, a
    repeated id) or two ids that are one id as text (1 and "1", which would merge two samples) is refused, naming
    both places; which copy counts cannot be known."""
    first, ids = {}, {}
    for each in rows:
        tool_id = (type(each.get("_id")).__name__, each.get("_id"))
        other = ids.setdefault(each.get("sample_id"), (tool_id, each))
        if "_id" in each and other[0] != tool_id:
            raise ValueError(f"{origin}: the ids {other[0][1]!r} ({other[1]['_where']}) and {tool_id[1]!r} "
                             f"({each['_where']}) are one case id {each['sample_id']!r} as text, which would merge "
                             "two samples; give them distinct ids and read the log again.")
        key = (each["rubric"], each["model"], each["case_id"])
        if key in first:
            raise ValueError(f"{origin}: case {each['case_id']!r} appears twice for rubric {each['rubric']!r} "
                             f"({first[key]['_where']} and {each['_where']}); a case is read once, since which copy the "
                             "tool meant cannot be known. Remove the duplicate and read the log again.")
        first[key] = each


def results_table(rows: list[dict], *, levels, pass_levels, fail_level, extra: list[str], source: dict,
                  skipped: Counter, tool_metrics, rubrics: dict, repeat: str | None) -> pd.DataFrame:
    """The results table of a reader's rows, with the ``attrs`` every reader sets.

    A case twice is refused (:func:`_once_each`); error rows made from values that are not what the tool writes are
    kept, with one :class:`~evalkit.EvalkitWarning` naming how many and the first.
    """
    origin = source.get("path") or "`result`"
    _once_each(rows, origin)
    bad = [each for each in rows if each["_bad"]]
    if bad:
        warn(f"{origin}: {len(bad)} value(s) are not what {source['tool']} writes, so their rows are error "
                      f"rows ({bad[0]['_where']}: {bad[0]['error']}); the other rows are read as usual.")
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


def levels_subset(pass_levels, levels, *, fail_level) -> tuple:
    """``pass_levels`` checked: a non-empty subset of ``levels`` without the failing level."""
    if isinstance(pass_levels, str) or not all(isinstance(p, str) for p in pass_levels) or not len(pass_levels):
        raise TypeError(f"`pass_levels` must be a non-empty sequence of levels, e.g. ('C',); got {pass_levels!r}.")
    unknown = [p for p in pass_levels if p not in levels]
    if unknown or fail_level in pass_levels:
        raise ValueError(f"`pass_levels` must be a subset of {list(levels)} without {fail_level!r}; got {list(pass_levels)}.")
    return tuple(pass_levels)
