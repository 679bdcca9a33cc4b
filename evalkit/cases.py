"""Reading evaluation cases (JSONL, CSV, Parquet) and drawing honest samples of them.

A cases table has a unique string ``case_id``, usually ``input`` and ``output``, optionally ``source`` and
any metadata columns. Readers refuse rather than skip: a malformed line, a missing id or a repeated id
raises an error naming the file and the line.
"""

from __future__ import annotations

import codecs
import csv
import io
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit._io import read_json_lines, read_text
from evalkit._validation import check_columns, check_dataframe, check_number, check_rng

__all__ = ["read_cases", "sample_cases"]


def read_cases(path, *, id_column: str = "case_id", format: str | None = None, encoding: str = "utf-8") -> pd.DataFrame:
    """Read cases from a JSONL, CSV or Parquet file.

    Parameters
    ----------
    path : str or Path
    id_column : str, default "case_id"
        The column holding the unique case id; it is renamed to ``case_id`` and read as text.
    format : {"jsonl", "csv", "parquet"}, optional
        Default: from the file extension (``.jsonl``/``.ndjson``, ``.csv``, ``.parquet``/``.pq``).
    encoding : str, default "utf-8"
        Text encoding of a JSONL or CSV file.

    Returns
    -------
    DataFrame
        One row per case, in file order, with a ``case_id`` column of strings. A JSONL record without
        some field has it missing (NaN); ``attrs["source"]`` keeps the file and those records' lines, so
        :func:`evalkit.judge.run_judge` can name them. An empty CSV field of a text column is an empty
        string.

    Raises
    ------
    ValueError
        A line that is not a JSON object or not valid text in ``encoding`` (file and line number named),
        a CSV record with the wrong number of fields (record and its first line named), a CSV id that spans
        lines (a stray quote that swallowed the lines after it), a missing or empty id, a repeated id (both lines
        named), an unknown format.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from evalkit.cases import read_cases
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "cases.jsonl"
    >>> _ = path.write_text('{"case_id": "c1", "input": "2+2?", "output": "4"}\\n{"case_id": "c2", "input": "Capital of France?", "output": "Paris"}\\n')
    >>> read_cases(path)
      case_id               input output
    0      c1                2+2?      4
    1      c2  Capital of France?  Paris
    """
    path = Path(path)
    try:
        codecs.lookup(encoding)
    except (LookupError, TypeError):
        raise ValueError(f"`encoding` must be a text encoding Python knows, e.g. 'utf-8' or 'latin-1'; got {encoding!r}.") from None
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file.")
    fmt = format or {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet",
                     ".pq": "parquet"}.get(path.suffix.lower())
    if fmt not in ("jsonl", "csv", "parquet"):
        raise ValueError(f"{path}: cannot tell the format from {path.suffix!r}; pass format='jsonl', 'csv' or 'parquet'.")
    if fmt == "jsonl":
        return _read_jsonl(path, id_column, encoding)
    if fmt == "csv":
        text = read_text(path, encoding=encoding)
        starts = _csv_record_lines(path, text)
        table = pd.read_csv(io.StringIO(text), dtype={id_column: str}, keep_default_na=False, na_values=[""])
        for column in table.columns:
            if column != id_column and (table[column].dtype == object or pd.api.types.is_string_dtype(table[column])):
                table[column] = table[column].fillna("")  # an empty field is an empty text, not a missing one
        line_of = lambda pos: f"record {pos + 1} (line {starts[pos + 1]})"  # noqa: E731 - record 0 is the header
        if len(table) != len(starts) - 1:
            raise ValueError(f"{path}: {len(starts) - 1} records by the CSV rules but {len(table)} rows read; a quote "
                             "that is not closed where its field ends?")
        if id_column in table.columns:
            broken = table[id_column].astype(str).str.contains("[\r\n]", regex=True).to_numpy()
            if broken.any():
                pos = int(np.flatnonzero(broken)[0])
                raise ValueError(f"{path}: {line_of(pos)} does not parse as the header says: its {id_column} spans "
                                 f"lines {starts[pos + 1]} to {starts[pos + 1] + table[id_column].iloc[pos].count(chr(10))} "
                                 f"({table[id_column].iloc[pos][:60]!r}...): a stray quote opens a field there.")
    else:
        table = pd.read_parquet(path)
        line_of = lambda pos: f"row {pos}"  # noqa: E731
    if id_column not in table.columns:
        raise KeyError(f"{path}: no {id_column!r} column; the columns are {list(table.columns)}.")
    ids = table[id_column]
    missing = ids.isna() | (ids.astype(str).str.strip() == "")
    if missing.any():
        raise ValueError(f"{path}: {line_of(int(np.flatnonzero(missing)[0]))} has no {id_column}.")
    table[id_column] = ids.astype(str)
    _check_duplicates(path, table[id_column], line_of)
    return table.rename(columns={id_column: "case_id"})


def _csv_record_lines(path: Path, text: str) -> list[int]:
    """The first physical line of every CSV record (fields may hold newlines); a ragged record is refused."""
    reader = csv.reader(io.StringIO(text, newline=""))
    starts, width, previous_end = [], None, 0
    try:
        for row in reader:
            start = previous_end + 1
            previous_end = reader.line_num
            if not row:
                continue
            starts.append(start)
            if width is None:
                width = len(row)
            elif len(row) != width:
                raise ValueError(f"{path}: record {len(starts) - 1} (line {start}) has {len(row)} fields; the header "
                                 f"has {width}.")
    except csv.Error as exc:
        raise ValueError(f"{path}: record {len(starts)} (line {previous_end + 1}) is not valid CSV ({exc}).") from None
    return starts


def _read_jsonl(path: Path, id_column: str, encoding: str = "utf-8") -> pd.DataFrame:
    records, lines = [], []
    for number, record in read_json_lines(path, encoding=encoding)[0]:
        if not isinstance(record, dict):
            raise ValueError(f"{path}, line {number}: expected a JSON object; got {type(record).__name__}.")
        value = record.get(id_column)
        if value is None or str(value).strip() == "":
            raise ValueError(f"{path}, line {number}: the record has no {id_column!r}.")
        record[id_column] = str(value)
        records.append(record)
        lines.append(number)
    table = pd.DataFrame.from_records(records)
    if table.empty:
        raise ValueError(f"{path}: the file holds no case.")
    _check_duplicates(path, table[id_column], lambda pos: f"line {lines[pos]}")
    columns = [id_column] + [c for c in table.columns if c != id_column]
    table = table[columns].rename(columns={id_column: "case_id"})
    incomplete = np.flatnonzero([len(record) < len(columns) for record in records])
    table.attrs["source"] = {"path": str(path),
                             "lines": {records[i][id_column]: lines[i] for i in incomplete}}  # records lacking a field
    return table


def _check_duplicates(path: Path, ids: pd.Series, line_of) -> None:
    dup = ids.duplicated(keep=False).to_numpy()
    if dup.any():
        first = ids[dup].iloc[0]
        where = [line_of(int(p)) for p in np.flatnonzero((ids == first).to_numpy())]
        raise ValueError(f"{path}: case_id {first!r} appears more than once ({', '.join(where)}); ids must be unique.")


def sample_cases(cases: pd.DataFrame, n: int, *, stratify: str | None = None, rng=None) -> pd.DataFrame:
    """Draw ``n`` cases at random, never "the first n rows".

    Parameters
    ----------
    cases : DataFrame
    n : int
        Sample size (at most the number of cases).
    stratify : str, optional
        A column (e.g. day or customer): each stratum gets its share of ``n`` in proportion to its
        size (largest-remainder rounding), drawn at random within the stratum.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DataFrame
        The sampled rows in random order (the original index is kept).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.cases import sample_cases
    >>> cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(10)], "day": ["mon"] * 6 + ["tue"] * 4})
    >>> sample_cases(cases, 5, stratify="day", rng=0)["day"].value_counts().sort_index().tolist()
    [3, 2]
    """
    cases = check_dataframe(cases, "cases")
    n = check_number(n, "n", low=0, high=len(cases), integer=True)
    gen = check_rng(rng)
    if stratify is None:
        return cases.iloc[gen.permutation(len(cases))[:n]]
    check_columns(cases, [stratify], "cases")
    if cases[stratify].isna().any():
        raise ValueError(f"`cases` column {stratify!r} has missing values; fill them before stratifying.")
    codes, strata = pd.factorize(cases[stratify])
    sizes = np.bincount(codes, minlength=len(strata))
    exact = n * sizes / len(cases)
    take = np.floor(exact).astype(int)
    remainder = n - take.sum()
    if remainder:
        order = np.lexsort((gen.random(len(strata)), -(exact - take)))  # ties broken at random
        take[order[:remainder]] += 1
    chosen = np.concatenate([gen.permutation(np.flatnonzero(codes == s))[:k] for s, k in enumerate(take)] or [[]])
    return cases.iloc[gen.permutation(chosen.astype(int))]
