"""One line-numbered JSON / JSONL reader for every file reader in evalkit.

Lines are split on ``\\n`` only (never ``str.splitlines``, which also splits inside text at U+2028, U+2029,
U+0085 and friends), each line is decoded on its own so a decoding error names its line, and every error
names the file and the line. A reader of files a user was handed (another tool's log) passes ``max_bytes``: a file
larger than that is refused, from its size on disk and again from the bytes actually read, before it is parsed.
Private floor: imports nothing from evalkit.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def _decode(raw: bytes, path: Path, encoding: str, first_line: int = 1) -> str:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = first_line + raw.count(b"\n", 0, exc.start)
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ValueError(f"{path}, line {line}: not valid {encoding} text (byte 0x{raw[exc.start]:02x} at column "
                         f"{column}); pass encoding= if the file uses another encoding.") from None


def read_bytes(path, max_bytes: int | None = None) -> bytes:
    """A whole file's bytes; with ``max_bytes``, a file larger than that is refused (ValueError naming the file, its
    size and the limit) without reading more than ``max_bytes + 1`` bytes of it."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    if max_bytes is None:
        return path.read_bytes()
    size = path.stat().st_size
    with path.open("rb") as handle:
        data = handle.read(max_bytes + 1) if size <= max_bytes else b""
    if size > max_bytes or len(data) > max_bytes:  # the size on disk, or a file that grew as it was read
        raise ValueError(f"{path}: {max(size, len(data)):,} bytes, more than the limit of {max_bytes:,} bytes "
                         "(max_bytes); pass a larger max_bytes= to read it.")
    return data


def read_json_lines(path, *, encoding: str = "utf-8", torn_tail: bool = False,
                    max_bytes: int | None = None) -> tuple[list[tuple[int, object]], str | None]:
    """Read a JSONL file: ``([(line_number, value), ...], torn)`` for every non-blank line.

    With ``torn_tail``, a last line that is not valid JSON and has no closing newline (a process killed
    mid-write) is not an error: its text is returned as ``torn`` instead. Any other bad line raises
    ValueError naming the file, the line and the column. ``max_bytes``: see :func:`read_bytes`.
    """
    path = Path(path)
    raw_lines = read_bytes(path, max_bytes).split(b"\n")
    records, torn = [], None
    for number, raw in enumerate(raw_lines, start=1):
        line = _decode(raw, path, encoding, number)
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except RecursionError:
            raise ValueError(f"{path}, line {number}: JSON nested too deeply to read.") from None
        except json.JSONDecodeError as exc:
            if torn_tail and number == len(raw_lines):  # no newline after it: the write was cut short
                torn = line
                continue
            raise ValueError(f"{path}, line {number}: not valid JSON ({exc.msg} at column {exc.colno}).") from None
    return records, torn


def read_text(path, *, encoding: str = "utf-8") -> str:
    """A whole text file; a decoding error names the file, the line and the column."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    return _decode(path.read_bytes(), path, encoding)


def read_json(path, *, encoding: str = "utf-8", max_bytes: int | None = None):
    """Read a whole JSON document; a syntax error names the file, line and column. ``max_bytes``: see :func:`read_bytes`."""
    path = Path(path)
    text = _decode(read_bytes(path, max_bytes), path, encoding)
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deeply to read.") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None


def write_atomic(path, write) -> Path:
    """Write a file so that it is either the old file or the complete new one, never a torn mix.

    ``write(tmp_path)`` writes a temporary file in the same folder; it is fsynced, renamed over ``path``
    (``os.replace``, atomic on one file system) and the folder is fsynced so the rename itself is durable.
    A failure removes the temporary file and leaves ``path`` as it was.
    """
    path = Path(path)
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(handle)
    tmp = Path(tmp)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the file from the rest of the team
        with tmp.open("rb+") as written:
            os.fsync(written.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    folder = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(folder)
    finally:
        os.close(folder)
    return path
