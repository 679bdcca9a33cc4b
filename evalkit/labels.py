"""The labels file: human labels on disk the moment they are made, readable without any widget library.

A labels file is append-only JSONL, one record per action. ``labeller`` names the annotator. Several
annotators labelling one case set keep **one file each** (a file has one writer at a time, below);
:func:`read_labels` takes several paths, and the functions of :mod:`evalkit.agreement` take the files
directly. :class:`evalkit.widgets.Labeller` and :class:`evalkit.widgets.PairwiseLabeller` write these files
through a :class:`LabelWriter`; :func:`evalkit.calibrate.calibrate` and :func:`evalkit.calibrate.self_agreement`
read them through :func:`latest_labels`.

Record fields
-------------
Every record carries the envelope :data:`LABEL_FIELDS`:

``case_id``
    The case (for a pairwise label: the ``comparison_id``).
``label``
    The label, e.g. ``"PASS"``/``"FAIL"`` or a level of the rubric; ``null`` on an undo record, which
    clears the case (see :func:`latest_labels`).
``labeller``
    The annotator's name.
``timestamp``
    UTC, ISO 8601 with milliseconds, e.g. ``"2026-11-30T17:00:00.123+00:00"``.
``position``
    The row of the case in the table the labeller was given (0-based).
``rubric_version``
    The rubric's version (``Rubric.version`` of :class:`evalkit.judge.Rubric`), or null.
``note``
    Free text typed with the label, or null.
``mode``
    ``"label"`` (first labels), ``"relabel"`` (re-labels, kept apart: they measure self-agreement), or
    ``"reveal"`` (an audit record, ``label`` null: the annotator asked to see what blind mode hides, the
    judge's verdict or the systems of a comparison, for ``case_id``). Only ``"label"`` and ``"relabel"``
    records are labels.
``session``
    The writer's session id (:func:`new_session_id`).

and beside them:

``unsure``
    true when the annotator flagged the label as unsure (a flag beside the label, not a level of it).
    :func:`read_labels` returns it for every record (false where a record has none).

Labels made with :class:`evalkit.widgets.Labeller` add :data:`ORDER_FIELDS`, what is known of the order the
cases came in (an anytime-valid interval over the labels, such as the labeller's live one, holds only for a
random order): ``case_order`` is ``"given"`` (the table's order, not known to be random), ``"random"`` (the
table was said to be in a random order) or ``"shuffled"`` (the labeller drew the order), and ``case_seed`` the
seed of a shuffled order (null otherwise), so the order can be reproduced.

Pairwise labels (:class:`evalkit.widgets.PairwiseLabeller`) add :data:`PAIRWISE_FIELDS`: ``label`` is
``"A"`` (the answer shown on the **left** is better), ``"B"`` (the one on the right) or ``"TIE"``;
``system_left`` and ``system_right`` name the systems as shown, left first, so a comparisons table is
rebuilt with ``system_a = system_left`` (the system shown first), ``system_b = system_right`` and
``winner`` ``"a"``, ``"b"`` or ``"tie"`` for ``"A"``, ``"B"``, ``"TIE"``; ``order_seed`` is the seed of
the random left/right order, so the order can be reproduced.

One writer at a time
--------------------
A :class:`LabelWriter` holds an advisory lock (``flock`` on ``<file>.lock``, beside the file the path
resolves to, so a second writer through a symbolic link is refused too) while it is open; the operating
system releases it when the process dies, however it dies. :func:`append_label` takes the same lock for
the one record it writes. Every append first repairs what an interrupted write may have left: a torn last
line is moved to ``<file>.torn`` so the next record starts on a fresh line. A write that fails (a full
disk) is cut back to the last complete record before the error is raised, so the file stays readable and
the same writer can append again.
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

__all__ = ["LABEL_FIELDS", "ORDER_FIELDS", "PAIRWISE_FIELDS", "LabelWriter", "LabelsLockedError", "new_session_id", "append_label",
           "read_labels", "latest_labels"]

LABEL_FIELDS = ["case_id", "label", "labeller", "timestamp", "position", "rubric_version", "note", "mode", "session"]
ORDER_FIELDS = ["case_order", "case_seed"]
PAIRWISE_FIELDS = ["system_left", "system_right", "order_seed"]


def append_label(path, record: dict) -> None:
    """Append one record to a labels file and make it durable (flush and fsync) before returning.

    The file's lock is held for the write (a file another writer holds is refused, see :class:`LabelWriter`),
    a torn last line is moved aside first, and a failed write leaves the file as it was.

    Raises
    ------
    LabelsLockedError
        Another writer holds the file.
    OSError
        The record could not be written (e.g. the disk is full); the file still ends on its last complete
        record.

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
    data = _encode(record)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    target = path.resolve()
    fd = _take_lock(target, {"labeller": str(record.get("labeller")), "pid": os.getpid(), "host": socket.gethostname(),
                             "session": str(record.get("session")), "since": _now_text()})
    try:
        torn = _append_bytes(target, data)
    finally:
        _release(fd)
    _warn_torn(path, torn, stacklevel=3)


def _encode(record) -> bytes:
    if not isinstance(record, dict) or "case_id" not in record:
        raise TypeError(f"`record` must be a dict with a 'case_id'; got {record!r}.")
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def _now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class LabelsLockedError(RuntimeError):
    """Another writer holds the labels file (the message names it: labeller, process, host, since when).

    In a notebook the refusal shows as its one-line message, not a traceback.
    """

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead of the traceback
        return [f"{type(self).__name__}: {self}"]


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
        The labels file (created on the first record). The lock is taken on the file the path resolves to,
        so a symbolic link and its target are one file.
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
    first record, and the lock is taken then. Every :meth:`append` repairs a torn last line first (another
    program may have written to the file), and a write that fails is cut back to the last complete record.

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
        self._target = self.path.resolve()
        self._key = str(self._target)
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
        self.torn = _repair_tail(self._target)
        _warn_torn(self.path, self.torn, stacklevel=3)

    def _lock(self) -> None:
        if fcntl is None or self._fd is not None:
            return
        self._fd = _take_lock(self._target, {"labeller": self.labeller, "pid": os.getpid(), "host": socket.gethostname(),
                                             "session": self.session, "since": _now_text()})

    def __repr__(self) -> str:
        return f"LabelWriter({str(self.path)!r}, labeller={self.labeller!r}, open={self.open})"

    def append(self, record: dict) -> None:
        """Append one record durably (see :func:`append_label`); refused once the writer is closed.

        A failed write (``OSError``, e.g. a full disk) leaves the file ending on its last complete record, and
        this writer can append again.
        """
        data = _encode(record)
        if not self.open:
            raise LabelsLockedError(f"this writer of {self.path} is closed (a newer one in this process took over, "
                                    "or it was closed); labels go through the open one.")
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock()
        _warn_torn(self.path, _append_bytes(self._target, data), stacklevel=3)

    def close(self) -> None:
        """Release the lock (idempotent)."""
        if not self.open:
            return
        self.open = False
        if _HELD.get(self._key) is self:
            del _HELD[self._key]
        _release(self._fd)
        self._fd = None

    def __enter__(self) -> LabelWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _take_lock(target: Path, info: dict) -> int | None:
    """``flock`` ``<target>.lock`` without waiting and write who holds it; LabelsLockedError naming the holder."""
    if fcntl is None:
        return None
    fd = os.open(f"{target}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = os.read(fd, 4096).decode("utf-8", "replace")
        os.close(fd)
        raise LabelsLockedError(f"{target} is open for writing by {_describe(holder)}; close that labeller "
                                "(or stop its kernel) first, or label into a file of your own.") from None
    os.ftruncate(fd, 0)
    os.pwrite(fd, json.dumps(info).encode("utf-8"), 0)
    return fd


def _release(fd: int | None) -> None:
    if fd is not None:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _describe(holder: str) -> str:
    try:
        info = json.loads(holder)
        return (f"labeller {info['labeller']!r} (process {info['pid']} on {info['host']}, since "
                f"{info['since']}, session {info['session']})")
    except (ValueError, KeyError, TypeError):
        return "another process"


def _warn_torn(path: Path, torn: str | None, *, stacklevel: int) -> None:
    if torn is not None:
        warnings.warn(f"{path}: the last line was cut short by an interrupted write ({len(torn)} characters: "
                      f"{torn[:40]!r}); it was moved to {path.name}.torn and is not a label.",
                      EvalkitWarning, stacklevel=stacklevel)


def _append_bytes(target: Path, data: bytes) -> str | None:
    """Repair the tail, append ``data``, fsync; on failure cut the file back to where it ended. Returns the torn fragment."""
    # Raw (unbuffered) writes, so a short write is seen and the bytes on disk are known at every step.
    with open(target, "ab+", buffering=0) as handle:
        torn = _repair_open(handle, target)
        end = handle.seek(0, os.SEEK_END)
        try:
            _write_all(handle, data)
            os.fsync(handle.fileno())
        except OSError as exc:
            try:  # truncating frees space, so it works on a full disk; if not, the next append moves the fragment aside
                handle.truncate(end)
                os.fsync(handle.fileno())
            except OSError:
                pass
            raise OSError(exc.errno, f"{target}: the label was not saved ({exc.strerror or exc}); the file still ends "
                                     "on its last complete record, so nothing saved before is lost") from exc
    return torn


def _repair_tail(path: Path) -> str | None:
    """Make the file end on a complete line: finish a whole record, move a torn fragment to ``<file>.torn``."""
    if not path.exists() or path.stat().st_size == 0:
        return None
    with open(path, "rb+", buffering=0) as handle:
        return _repair_open(handle, path)


def _repair_open(handle, path: Path) -> str | None:
    size = handle.seek(0, os.SEEK_END)
    if size == 0:
        return None
    handle.seek(size - 1)
    if handle.read(1) == b"\n":
        return None
    start = max(0, size - (1 << 20))  # the last MiB holds the last line, unless that line is longer
    handle.seek(start)
    tail = handle.read()
    if start and b"\n" not in tail:
        start = 0
        handle.seek(0)
        tail = handle.read()
    cut = tail.rfind(b"\n") + 1
    fragment = tail[cut:]
    try:
        json.loads(fragment)  # the record is whole; only its newline is missing
    except ValueError:
        with open(f"{path}.torn", "ab") as side:  # kept, not lost: the fragment may matter to someone
            side.write(fragment + b"\n")
            side.flush()
            os.fsync(side.fileno())
        handle.truncate(start + cut)
        os.fsync(handle.fileno())
        return fragment.decode("utf-8", "replace")
    handle.seek(0, os.SEEK_END)
    _write_all(handle, b"\n")
    os.fsync(handle.fileno())
    return None


def _write_all(handle, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[handle.write(view):]


def read_labels(path) -> pd.DataFrame:
    """Read one labels file, or several (a list of paths, read in order), every record in order.

    A truncated last line (a kernel killed mid-write) is ignored; any other malformed line raises an error
    naming the file and line. A path that does not exist yet holds no record.

    Returns
    -------
    DataFrame
        Columns :data:`LABEL_FIELDS` (``label`` is missing on undo and reveal records), then ``unsure`` (bool,
        False where a record has none), then any other fields found (e.g. :data:`PAIRWISE_FIELDS`).

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
    table["unsure"] = table["unsure"].fillna(False).astype(bool) if "unsure" in table.columns else False
    first = [*LABEL_FIELDS, "unsure"]
    return table[first + [c for c in table.columns if c not in first]]


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
    if not isinstance(mode, str) or mode not in ("label", "relabel"):
        raise ValueError(f"`mode` must be 'label' (first labels) or 'relabel' (re-labels); got {mode!r}.")
    if not isinstance(by_labeller, bool):
        raise TypeError(f"`by_labeller` must be True or False; got {by_labeller!r}.")
    if by_labeller and "labeller" not in records.columns:
        raise KeyError(f"`records` has no 'labeller' column (by_labeller=True needs it); it has columns "
                       f"{list(map(str, records.columns))}.")
    modes = records["mode"].fillna("label") if "mode" in records.columns else pd.Series("label", index=records.index)
    subset = records[modes == mode]
    keys = ["labeller", "case_id"] if by_labeller else ["case_id"]
    latest = subset.drop_duplicates(keys, keep="last")
    latest = latest[latest["label"].notna()]
    return latest.reset_index(drop=True) if by_labeller else latest.set_index("case_id")
