"""The rules every reader of :mod:`evalkit.logs` follows, written once: the path check, one row, the results table
and its ``attrs`` (``skipped``, ``clusters``, ``source``, ``rubric``), and the readable text of a tool's values.

Private floor: imports nothing public from evalkit.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit._tables import RESULT_COLUMNS
from evalkit._version import __version__

PASS_FAIL = ("PASS", "FAIL")


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


def row(**values) -> dict:
    """One row of the results table; an ``error`` makes it an error row (no verdict, not parsed)."""
    out = {"rubric_version": None, "raw": None, "reason": None, "error": None, "latency_s": np.nan, "cached": None,
           "created_at": None, "parsed": True}
    out.update(values)
    if out["error"] is not None:
        out["verdict"], out["parsed"] = None, False
    return out


def results_table(rows: list[dict], *, levels, pass_levels, fail_level, extra: list[str], source: dict,
                  skipped: Counter, tool_metrics, rubrics: dict, repeat: str | None) -> pd.DataFrame:
    """The results table of a reader's rows, with the ``attrs`` every reader sets."""
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
