"""The labels file: human labels on disk the moment they are made, readable without any widget library.

A labels file is append-only JSONL, one record per action. ``labeller`` names the annotator, and the annotator
is part of every label's key: a label is the latest record of one annotator on one case (:func:`latest_labels`),
so one annotator's record never replaces, hides or stands for another's, whoever wrote last and in whichever file.

Annotators may share a file or keep one each; both are read the same way. A file has one writer at a time (below),
so annotators who label **at the same time** keep one file each (``labels/<name>.jsonl``, the layout the notebooks
use); annotators who take turns may share one. :func:`read_labels` takes several paths, and the functions of
:mod:`evalkit.agreement` take the files directly. :class:`evalkit.widgets.Labeller`,
:class:`evalkit.widgets.PairwiseLabeller` and :class:`evalkit.widgets.ClaimLabeller` write these files through a
:class:`LabelWriter`, and each shows and resumes only its own annotator's labels;
:func:`evalkit.calibrate.calibrate` and :func:`evalkit.calibrate.self_agreement` read them through
:func:`latest_labels`.

Record fields
-------------
Every record carries the envelope :data:`LABEL_FIELDS`:

``case_id``
    The case (for a pairwise label: the ``comparison_id``).
``label``
    The label, e.g. ``"PASS"``/``"FAIL"`` or a level of the rubric; ``null`` on an undo record, which
    clears the annotator's label of the case, and on an ignore record (below) (see :func:`latest_labels`).
``labeller``
    The annotator's name; a record without one belongs to no annotator (it is nobody's label but its own).
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
``ignored``
    true on an **ignore** record: the annotator's answer that the case cannot or should not be labelled (not
    applicable, broken, beyond their knowledge), with ``label`` null and the reason, if any, in ``note``. Like an
    undo it clears the annotator's label of the case, so it is never a label (calibration and agreement leave
    the case out for that annotator); unlike an undo it is an answer, and the labellers count the case as done.
    :func:`read_labels` returns it for every record (false where a record has none).

Labels made with :class:`evalkit.widgets.Labeller` add :data:`ORDER_FIELDS`, what is known of the order the
cases came in (an anytime-valid interval over the labels, such as the labeller's live one, holds only for a
random order): ``case_order`` is ``"given"`` (the table's order, not known to be random), ``"random"`` (the
table was said to be in a random order) or ``"shuffled"`` (the labeller drew the order), and ``case_seed`` the
seed of a shuffled order (null otherwise), so the order can be reproduced.

Pairwise labels (:class:`evalkit.widgets.PairwiseLabeller`) add :data:`PAIRWISE_FIELDS`: ``label`` is
``"A"`` (the answer shown on the **left** is better), ``"B"`` (the one on the right), ``"TIE"`` (equally good)
or ``"BOTH_BAD"`` (neither is acceptable); ``system_left`` and ``system_right`` name the systems as shown, left
first, so a comparisons table is rebuilt with ``system_a = system_left`` (the system shown first), ``system_b =
system_right`` and ``winner`` ``"a"``, ``"b"`` or ``"tie"`` for ``"A"``, ``"B"``, ``"TIE"`` (a ``"BOTH_BAD"``
counts as a tie there, as Chatbot Arena counts its "tie (bothbad)"; the labels file keeps the two apart);
``order_seed`` is the seed of the random left/right order, so the order can be reproduced.

Claim labels (:class:`evalkit.widgets.ClaimLabeller`) add :data:`CLAIM_FIELDS`: one record per claim of a
claim-verdict table, ``case_id`` the claim's id ``"<item_id>#<claim_idx>"``, ``label`` a level of the verdict
scale (``none`` … ``fully``), ``item_id`` and ``claim_idx`` the claim's key in the table and ``claim`` its text.

One writer at a time
--------------------
A :class:`LabelWriter` holds an advisory lock (``flock`` on ``.<file>.lock``, a hidden file beside the file the
path resolves to, so a second writer through a symbolic link is refused too and the file browser does not list
it) while it is open; the operating system releases it when the process dies, however it dies.
:func:`append_label` takes the same lock for the one record it writes. A lock held by someone else is waited
for, up to ``wait`` seconds (by default :data:`LOCK_WAIT`, 5 s; ``wait=0`` refuses at once), before
:class:`LabelsLockedError`: two processes appending records at once take turns instead of refusing each other,
while a labeller another kernel holds open is still refused, after the wait, naming its holder. Every append first
repairs what an interrupted write may have left: a torn last line is moved to ``<file>.torn`` so the next record
starts on a fresh line. A write that fails (a full disk) is cut back to the last complete record before the
error is raised, so the file stays readable and the same writer can append again.
"""

from __future__ import annotations

import json
import os
import socket
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import pandas as pd

from evalkit._io import read_json_lines
from evalkit._validation import warn

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows: no advisory lock, one writer is up to the user
    fcntl = None

__all__ = ["LABEL_FIELDS", "ORDER_FIELDS", "PAIRWISE_FIELDS", "CLAIM_FIELDS", "LOCK_WAIT", "LabelWriter",
           "LabelsLockedError", "new_session_id", "append_label", "read_labels", "latest_labels"]

#: The envelope every record carries (see the module's docstring).
LABEL_FIELDS = ["case_id", "label", "labeller", "timestamp", "position", "rubric_version", "note", "mode", "session"]
#: What a :class:`evalkit.widgets.Labeller` records of the order the cases came in.
ORDER_FIELDS = ["case_order", "case_seed"]
#: What a :class:`evalkit.widgets.PairwiseLabeller` adds: the systems as shown, and the seed of that order.
PAIRWISE_FIELDS = ["system_left", "system_right", "order_seed"]
#: What a :class:`evalkit.widgets.ClaimLabeller` adds: the claim's key in the claim-verdict table, and its text.
CLAIM_FIELDS = ["item_id", "claim_idx", "claim"]
#: Seconds a writer waits for a lock someone else holds before :class:`LabelsLockedError`, unless given ``wait=``;
#: set it to change the wait of every writer, a labeller's included.
LOCK_WAIT = 5.0


def append_label(path, record: dict, *, wait: float | None = None) -> None:
    """Append one record to a labels file and make it durable (flush and fsync) before returning.

    The file's lock is held for the write, a torn last line is moved aside first, and a failed write leaves the
    file as it was. A lock another writer holds is waited for, up to ``wait`` seconds: processes appending at
    the same time take turns (each holds the lock for one record).

    Parameters
    ----------
    path : str or Path
        The labels file (created, with its folder, on the first record).
    record : dict
        One record, with at least ``case_id`` (see the fields above).
    wait : float, optional
        Seconds to wait for a lock someone else holds; 0 refuses at once. Default: :data:`LOCK_WAIT` (5 s).

    Raises
    ------
    LabelsLockedError
        Another writer held the file for all of ``wait`` seconds (e.g. a labeller open in another kernel).
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
    wait = _check_wait(wait)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    target = path.resolve()
    fd = _take_lock(target, {"labeller": str(record.get("labeller")), "pid": os.getpid(), "host": socket.gethostname(),
                             "session": str(record.get("session")), "since": _now_text()}, wait=wait)
    try:
        torn = _append_bytes(target, data)
    finally:
        _release(fd)
    _warn_torn(path, torn)


def _encode(record) -> bytes:
    if not isinstance(record, dict) or "case_id" not in record:
        raise TypeError(f"`record` must be a dict with a 'case_id'; got {record!r}.")
    return (json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8")


def _check_wait(wait) -> float:
    if wait is None:
        wait = LOCK_WAIT
    if isinstance(wait, bool) or not isinstance(wait, (int, float)) or not 0 <= wait < float("inf"):
        raise ValueError(f"`wait` must be the seconds to wait for the lock, a number >= 0 (e.g. 5); got {wait!r}.")
    return float(wait)


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
    wait : float, optional
        Seconds to wait for a lock someone else holds (e.g. a script's :func:`append_label`) before
        :class:`LabelsLockedError`; 0 refuses at once. Default: :data:`LOCK_WAIT` (5 s) as it is when the writer
        opens, so setting ``evalkit.labels.LOCK_WAIT`` sets it for every writer, a labeller's too.
    on_takeover : callable, optional
        Called with no argument when a newer writer of the same file in this process takes over (this one is
        closed first), so that whatever shows this writer can say so at once.

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
        Another process held the file for all of ``wait`` seconds; the message names its labeller, process id,
        host and since when (on opening, or at the first record when the folder did not exist yet).

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

    def __init__(self, path, *, labeller: str, session: str | None = None, wait: float | None = None,
                 on_takeover=None):
        if not isinstance(labeller, str) or not labeller:
            raise TypeError(f"`labeller` must be a non-empty string (the annotator's name); got {labeller!r}.")
        self.wait = _check_wait(wait)
        self.path = Path(path)
        self.labeller = labeller
        self.session = session or new_session_id()
        if on_takeover is not None and not callable(on_takeover):
            raise TypeError(f"`on_takeover` must be callable (or None); got {type(on_takeover).__name__}.")
        self.on_takeover = on_takeover
        self.torn = None
        self._fd = None
        self._target = self.path.resolve()
        self._key = str(self._target)
        previous = _HELD.get(self._key)
        if previous is not None:
            previous.close()  # the same process opens the file again: the newer writer takes over
            if previous.on_takeover is not None:
                previous.on_takeover()
        self.open = True
        _HELD[self._key] = self
        if self.path.parent.is_dir():  # else nothing is created (no folder, no lock file) before the first record
            try:
                self._lock()
            except LabelsLockedError:
                self.close()
                raise
        self.torn = _repair_tail(self._target)
        _warn_torn(self.path, self.torn)

    def _lock(self) -> None:
        if fcntl is None or self._fd is not None:
            return
        self._fd = _take_lock(self._target, {"labeller": self.labeller, "pid": os.getpid(), "host": socket.gethostname(),
                                             "session": self.session, "since": _now_text()}, wait=self.wait)

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
        _warn_torn(self.path, _append_bytes(self._target, data))

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


def _lock_path(target: Path) -> Path:
    """The lock file of a labels file: hidden (a dot file) beside it, so file browsers do not list it."""
    return target.with_name(f".{target.name}.lock")


def _take_lock(target: Path, info: dict, *, wait: float) -> int | None:
    """``flock`` the lock file, waiting up to ``wait`` s, and write who holds it; LabelsLockedError naming the holder."""
    if fcntl is None:
        return None
    fd = os.open(_lock_path(target), os.O_RDWR | os.O_CREAT, 0o644)
    # Polled rather than a blocking flock, which cannot time out without a signal (and signals belong to the main
    # thread); a poll every millisecond or two finds the gaps between another writer's one-record holds.
    deadline, pause = time.monotonic() + wait, 0.0005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except BlockingIOError:
            if time.monotonic() >= deadline:
                holder = os.pread(fd, 4096, 0).decode("utf-8", "replace")
                os.close(fd)
                waited = f" (waited {wait:g} s)" if wait else ""
                raise LabelsLockedError(f"{target} is open for writing by {_describe(holder)}{waited}; close that "
                                        "labeller (or stop its kernel) first, or label into a file of your own.") from None
            time.sleep(pause)
            pause = min(pause * 2, 0.002)
        except BaseException:
            os.close(fd)
            raise
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


def _warn_torn(path: Path, torn: str | None) -> None:
    if torn is not None:
        warn(f"{path}: the last line was cut short by an interrupted write ({len(torn)} characters: "
                      f"{torn[:40]!r}); it was moved to {path.name}.torn and is not a label.")


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

    Every annotator's records are read as they are: a file several annotators share gives all of them, each
    record with its ``labeller``. A truncated last line (a kernel killed mid-write) is ignored; any other
    malformed line raises an error naming the file and line. A path that does not exist yet holds no record.

    Returns
    -------
    DataFrame
        Columns :data:`LABEL_FIELDS` (``label`` is missing on undo, ignore and reveal records), then ``unsure``
        and ``ignored`` (bool, False where a record has none), then any other fields found (e.g.
        :data:`PAIRWISE_FIELDS`).

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
    for flag in _FLAGS:
        table[flag] = table[flag].fillna(False).astype(bool) if flag in table.columns else False
    first = [*LABEL_FIELDS, *_FLAGS]
    return table[first + [c for c in table.columns if c not in first]]


_FLAGS = ("unsure", "ignored")  # flags beside a record, False where it has none


def latest_labels(records: pd.DataFrame, *, mode: str = "label", labeller: str | None = None,
                  by_labeller: bool = False) -> pd.DataFrame:
    """The latest label of each annotator on each case, in one mode.

    A label is keyed by (annotator, case): an annotator's later record on a case replaces only their own
    earlier one, and an undo or ignore record (no label) clears only their own label of it, whatever the order
    the records of several annotators came in. Records without a labeller name are one more annotator's (no
    one's), never a named annotator's.

    Parameters
    ----------
    records : DataFrame
        Label records (see :func:`read_labels`): ``case_id``, ``label``, and ``labeller`` wherever several
        annotators are in them.
    mode : {"label", "relabel"}, default "label"
        First labels, or re-labels (kept apart: they measure self-agreement).
    labeller : str, optional
        Keep this annotator's labels only.
    by_labeller : bool, default False
        False: one annotator's labels indexed by ``case_id``; the records (or ``labeller``) must then hold one
        annotator, else ValueError naming them. True: every annotator's, as columns (index 0..n-1), one row per
        annotator and case.

    Returns
    -------
    DataFrame
        The latest label records, every field.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.labels import latest_labels
    >>> records = pd.DataFrame({"case_id": ["a", "a", "b", "a"], "label": ["PASS", "FAIL", "PASS", "PASS"],
    ...                         "labeller": ["ann", "ann", "ann", "bob"], "mode": "label"})
    >>> latest_labels(records, labeller="ann")["label"].to_dict()
    {'a': 'FAIL', 'b': 'PASS'}
    >>> latest_labels(records, by_labeller=True)[["labeller", "case_id", "label"]]
      labeller case_id label
    0      ann       a  FAIL
    1      ann       b  PASS
    2      bob       a  PASS
    """
    if not isinstance(records, pd.DataFrame) or not {"case_id", "label"} <= set(records.columns):
        raise TypeError("`records` must be a DataFrame of label records (see read_labels) with case_id and label.")
    if not isinstance(mode, str) or mode not in ("label", "relabel"):
        raise ValueError(f"`mode` must be 'label' (first labels) or 'relabel' (re-labels); got {mode!r}.")
    if not isinstance(by_labeller, bool):
        raise TypeError(f"`by_labeller` must be True or False; got {by_labeller!r}.")
    if labeller is not None and not isinstance(labeller, str):
        raise TypeError(f"`labeller` must be an annotator's name (a string) or None; got {labeller!r}.")
    named = "labeller" in records.columns
    if (by_labeller or labeller is not None) and not named:
        raise KeyError(f"`records` has no 'labeller' column (by_labeller= and labeller= need it); it has columns "
                       f"{list(map(str, records.columns))}.")
    modes = records["mode"].fillna("label") if "mode" in records.columns else pd.Series("label", index=records.index)
    subset = records[(modes == mode).to_numpy()]
    if labeller is not None:
        subset = subset[subset["labeller"].eq(labeller).fillna(False).to_numpy(dtype=bool)]
    keys = ["labeller", "case_id"] if named else ["case_id"]
    latest = subset.drop_duplicates(keys, keep="last")
    latest = latest[latest["label"].notna().to_numpy()]
    if by_labeller:
        return latest.reset_index(drop=True)
    if named and latest["labeller"].nunique(dropna=False) > 1:
        who = sorted({"no name" if pd.isna(n) else repr(n) for n in latest["labeller"]})
        raise ValueError(f"`records` hold labels by several annotators ({', '.join(who[:5])}"
                         f"{' and others' if len(who) > 5 else ''}); pass labeller='...' for one annotator's labels "
                         "by case, or by_labeller=True for everyone's (each annotator's label of a case is their own).")
    return latest.set_index("case_id")
