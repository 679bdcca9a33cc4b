"""One line-numbered JSON / JSONL reader for every file reader in evalkit.

Lines are split on ``\\n`` only (never ``str.splitlines``, which also splits inside text at U+2028, U+2029,
U+0085 and friends), each line is decoded on its own so a decoding error names its line, and every error
names the file and the line. Private floor: imports nothing from evalkit.
"""

from __future__ import annotations

import json
from pathlib import Path


def _decode(raw: bytes, path: Path, encoding: str, first_line: int = 1) -> str:
    try:
        return raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = first_line + raw.count(b"\n", 0, exc.start)
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ValueError(f"{path}, line {line}: not valid {encoding} text (byte 0x{raw[exc.start]:02x} at column "
                         f"{column}); pass encoding= if the file uses another encoding.") from None


def read_json_lines(path, *, encoding: str = "utf-8", torn_tail: bool = False) -> tuple[list[tuple[int, object]], str | None]:
    """Read a JSONL file: ``([(line_number, value), ...], torn)`` for every non-blank line.

    With ``torn_tail``, a last line that is not valid JSON and has no closing newline (a process killed
    mid-write) is not an error: its text is returned as ``torn`` instead. Any other bad line raises
    ValueError naming the file, the line and the column.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    raw_lines = path.read_bytes().split(b"\n")
    records, torn = [], None
    for number, raw in enumerate(raw_lines, start=1):
        line = _decode(raw, path, encoding, number)
        if not line.strip():
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            if torn_tail and number == len(raw_lines):  # no newline after it: the write was cut short
                torn = line
                continue
            raise ValueError(f"{path}, line {number}: not valid JSON ({exc.msg} at column {exc.colno}).") from None
    return records, torn


def read_json(path, *, encoding: str = "utf-8"):
    """Read a whole JSON document; a syntax error names the file, line and column."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    text = _decode(path.read_bytes(), path, encoding)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}).") from None
