"""The labels file: human labels on disk the moment they are made, readable without any widget library.

A labels file is append-only JSONL, one record per action: ``case_id, label, labeller, timestamp,
position, rubric_version, note, mode, session``. ``labeller`` names the annotator, so several annotators
can share one file or keep one file each (:func:`read_labels` takes several paths). An undo is a record
with no label; a re-label (``mode="relabel"``) is kept apart from first labels. :class:`evalkit.widgets.Labeller`
writes these files; :func:`evalkit.calibrate.calibrate` and :func:`evalkit.calibrate.self_agreement` read them
through :func:`latest_labels`.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd

from evalkit._io import read_json_lines

__all__ = ["LABEL_FIELDS", "append_label", "read_labels", "latest_labels"]

LABEL_FIELDS = ["case_id", "label", "labeller", "timestamp", "position", "rubric_version", "note", "mode", "session"]


def append_label(path, record: dict) -> None:
    """Append one record to a labels file and make it durable (flush and fsync) before returning.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from evalkit.labels import append_label, read_labels
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "labels.jsonl"
    >>> append_label(path, {"case_id": "a", "label": "PASS", "labeller": "ann"})
    >>> read_labels(path)[["case_id", "label", "labeller"]]
      case_id label labeller
    0       a  PASS      ann
    """
    if not isinstance(record, dict) or "case_id" not in record:
        raise TypeError(f"`record` must be a dict with a 'case_id'; got {record!r}.")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def read_labels(path) -> pd.DataFrame:
    """Read one labels file, or several (a list of paths, read in order), every record in order.

    A truncated last line (a kernel killed mid-write) is ignored; any other malformed line raises an error
    naming the file and line. A path that does not exist yet holds no record.

    Returns
    -------
    DataFrame
        Columns ``case_id, label, labeller, timestamp, position, rubric_version, note, mode, session``
        (``label`` is missing on undo records), then any other fields found.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from evalkit.labels import read_labels
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "labels.jsonl"
    >>> _ = path.write_text('{"case_id": "a", "label": "PASS", "position": 0, "mode": "label"}\\n')
    >>> read_labels(path)[["case_id", "label", "position"]]
      case_id label  position
    0       a  PASS         0
    """
    paths = [path] if isinstance(path, (str, os.PathLike)) else list(path)
    records = []
    for one in map(Path, paths):
        if one.exists():
            lines, _torn = read_json_lines(one, torn_tail=True)
            for number, record in lines:
                if not isinstance(record, dict):
                    raise ValueError(f"{one}, line {number}: expected a JSON object; the labels file is damaged.")
                records.append(record)
    table = pd.DataFrame.from_records(records)
    for column in LABEL_FIELDS:
        if column not in table.columns:
            table[column] = pd.NA
    return table[LABEL_FIELDS + [c for c in table.columns if c not in LABEL_FIELDS]]


def latest_labels(records: pd.DataFrame, *, mode: str = "label", by_labeller: bool = False) -> pd.DataFrame:
    """The latest record per case in one mode (an undo record clears the case), indexed by ``case_id``.

    With ``by_labeller``, the latest record per (labeller, case) instead, as columns (index 0..n-1).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.labels import latest_labels
    >>> records = pd.DataFrame({"case_id": ["a", "a", "b"], "label": ["PASS", "FAIL", "PASS"],
    ...                         "mode": ["label", "label", "label"]})
    >>> latest_labels(records)["label"].to_dict()
    {'a': 'FAIL', 'b': 'PASS'}
    """
    if not isinstance(records, pd.DataFrame) or not {"case_id", "label"} <= set(records.columns):
        raise TypeError("`records` must be a DataFrame of label records (see read_labels) with case_id and label.")
    modes = records["mode"].fillna("label") if "mode" in records.columns else pd.Series("label", index=records.index)
    subset = records[modes == mode]
    keys = ["labeller", "case_id"] if by_labeller else ["case_id"]
    latest = subset.drop_duplicates(keys, keep="last")
    latest = latest[latest["label"].notna()]
    return latest.reset_index(drop=True) if by_labeller else latest.set_index("case_id")
