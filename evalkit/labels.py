"""The labels file: human labels on disk the moment they are made, readable without any widget library.

A labels file is append-only JSONL, one record per action: ``case_id, label, labeller, timestamp,
position, rubric_version, note, mode, session``. ``labeller`` names the annotator. Several annotators
labelling one case set keep **one file each** (a file has one writer at a time, below); :func:`read_labels`
takes several paths, and the functions of :mod:`evalkit.agreement` take the files directly. An undo is a record
with no label; a re-label (``mode="relabel"``) is kept apart from first labels. :class:`evalkit.widgets.Labeller`
writes these files through a :class:`LabelWriter`; :func:`evalkit.calibrate.calibrate` and
:func:`evalkit.calibrate.self_agreement` read them through :func:`latest_labels`.

One writer at a time: a :class:`LabelWriter` holds an advisory lock (``flock`` on ``<file>.lock``) while
it is open; the operating system releases it when the process dies, however it dies. Opening a writer
also repairs what a killed process may have left: a torn last line is moved to ``<file>.torn`` so the next
record starts on a fresh line.
"""

from __future__ import annotations

import json
import os
import socket
import uuid
import warnings
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from evalkit._io import read_json_lines
from evalkit._validation import EvalkitWarning

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory lock, one writer is up to the user
    fcntl = None

__all__ = ["LABEL_FIELDS", "LabelWriter", "LabelsLockedError", "new_session_id", "append_label", "read_labels",
           "latest_labels"]

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


class LabelsLockedError(RuntimeError):
    """Another writer holds the labels file (the message names it: labeller, process, host, since when)."""


def new_session_id() -> str:
    """A unique, time-ordered session id: UTC time to the second, then 12 random hex digits (uuid4).

    Examples
    --------
    >>> from evalkit.labels import new_session_id
    >>> a, b = new_session_id(), new_session_id()
    >>> a != b and len(a) == len("20261130T170000-0123456789ab")
    True
    """
    return f"{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:12]}"


_HELD: dict[str, LabelWriter] = {}  # the open writer of each file in this process


class LabelWriter:
    """The one writer of a labels file: locks it, repairs a torn last line, appends records durably.

    Parameters
    ----------
    path : str or Path
        The labels file (created on the first record).
    labeller : str
        Who writes (the annotator's name, stored with every record by the caller).
    session : str, optional
        Default: :func:`new_session_id`.

    Attributes
    ----------
    torn : str or None
        The fragment of a torn last line found on opening (moved to ``<file>.torn``), else None.
    open : bool
        False once closed, or once a newer writer on the same file in this process took over (re-running
        a notebook cell replaces the old labeller instead of locking it out).

    Notes
    -----
    The lock is taken on opening; when the file's folder does not exist yet, nothing is created until the
    first record, and the lock is taken then.

    Raises
    ------
    LabelsLockedError
        Another process holds the file; the message names its labeller, process id, host and since when
        (on opening, or at the first record when the folder did not exist yet).

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from evalkit.labels import LabelWriter, LabelsLockedError, read_labels
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "labels.jsonl"
    >>> writer = LabelWriter(path, labeller="ann")
    >>> writer.append({"case_id": "a", "label": "PASS", "labeller": "ann"})
    >>> writer.close()
    >>> read_labels(path)["label"].tolist()
    ['PASS']
    """

    def __init__(self, path, *, labeller: str, session: str | None = None):
        if not isinstance(labeller, str) or not labeller:
            raise TypeError(f"`labeller` must be a non-empty string (the annotator's name); got {labeller!r}.")
        self.path = Path(path)
        self.labeller = labeller
        self.session = session or new_session_id()
        self.torn = None
        self._fd = None
        self._key = str(self.path.resolve())
        previous = _HELD.get(self._key)
        if previous is not None:
            previous.close()  # the same process opens the file again: the newer writer takes over
        self.open = True
        _HELD[self._key] = self
        if self.path.parent.is_dir():  # else nothing is created (no folder, no lock file) before the first record
            try:
                self._lock()
            except LabelsLockedError:
                self.close()
                raise
        self.torn = _repair_tail(self.path)
        if self.torn is not None:
            warnings.warn(f"{self.path}: the last line was cut short by an interrupted write ({len(self.torn)} "
                          f"characters: {self.torn[:40]!r}); it was moved to {self.path.name}.torn and is not a label.",
                          EvalkitWarning, stacklevel=2)

    def _lock(self) -> None:
        if fcntl is None or self._fd is not None:
            return
        fd = os.open(f"{self.path}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = os.read(fd, 4096).decode("utf-8", "replace")
            os.close(fd)
            raise LabelsLockedError(f"{self.path} is open for writing by {_describe(holder)}; close that labeller "
                                    "(or stop its kernel) first, or label into a file of your own.") from None
        info = {"labeller": self.labeller, "pid": os.getpid(), "host": socket.gethostname(), "session": self.session,
                "since": datetime.now(UTC).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(info).encode("utf-8"), 0)
        self._fd = fd

    def __repr__(self) -> str:
        return f"LabelWriter({str(self.path)!r}, labeller={self.labeller!r}, open={self.open})"

    def append(self, record: dict) -> None:
        """Append one record durably (see :func:`append_label`); refused once the writer is closed."""
        if not self.open:
            raise LabelsLockedError(f"this writer of {self.path} is closed (a newer one in this process took over, "
                                    "or it was closed); labels go through the open one.")
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock()
        append_label(self.path, record)

    def close(self) -> None:
        """Release the lock (idempotent)."""
        if not self.open:
            return
        self.open = False
        if _HELD.get(self._key) is self:
            del _HELD[self._key]
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> LabelWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _describe(holder: str) -> str:
    try:
        info = json.loads(holder)
        return (f"labeller {info['labeller']!r} (process {info['pid']} on {info['host']}, since "
                f"{info['since']}, session {info['session']})")
    except (ValueError, KeyError, TypeError):
        return "another process"


def _repair_tail(path: Path) -> str | None:
    """Make the file end on a complete line: finish a whole record, move a torn fragment to ``<file>.torn``."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    with path.open("rb+") as handle:
        handle.seek(-1, os.SEEK_END)
        if handle.read(1) == b"\n":
            return None
        size = handle.seek(0, os.SEEK_END)
        start = max(0, size - (1 << 20))  # the last MiB holds the last line, unless that line is longer
        handle.seek(start)
        tail = handle.read()
        if start and b"\n" not in tail:
            start, tail = 0, (handle.seek(0), handle.read())[1]
        cut = tail.rfind(b"\n") + 1
        fragment = tail[cut:]
        try:
            json.loads(fragment)  # the record is whole; only its newline is missing
            handle.write(b"\n")
            fragment = None
        except ValueError:
            with open(f"{path}.torn", "ab") as side:
                side.write(fragment + b"\n")
                side.flush()
                os.fsync(side.fileno())
            handle.truncate(start + cut)
        handle.flush()
        os.fsync(handle.fileno())
    return None if fragment is None else fragment.decode("utf-8", "replace")


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
