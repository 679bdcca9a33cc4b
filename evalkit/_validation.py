"""Argument and column checks shared by every public function, with one message style.

Every message says which parameter, what was expected and what was given; a missing column lists the
columns that exist.
"""

from __future__ import annotations

import numbers
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd


class EvalkitWarning(UserWarning):
    """A result was computed, but something about the input deserves a look."""


def show(value) -> str:
    """repr() of a value as the user wrote it (numpy scalars shown as plain Python numbers)."""
    return repr(value.item() if isinstance(value, np.generic) else value)


def check_dataframe(data, name: str) -> pd.DataFrame:
    """Raise TypeError unless ``data`` is a DataFrame (with a hint for common mistakes)."""
    if isinstance(data, pd.DataFrame):
        return data
    hint = ""
    if isinstance(data, (str, bytes)):
        hint = " (got a path or string: read the file first, e.g. with pandas.read_csv)"
    elif isinstance(data, pd.Series):
        hint = " (got a Series: use series.to_frame() or pass a table)"
    raise TypeError(f"`{name}` must be a pandas DataFrame{hint}; got {type(data).__name__}.")


def check_columns(data: pd.DataFrame, columns: Iterable[str], name: str) -> None:
    """Raise KeyError naming the missing columns and the ones that exist."""
    missing = [c for c in columns if c not in data.columns]
    if missing:
        raise KeyError(
            f"`{name}` is missing column(s) {missing}; it has columns {list(map(str, data.columns))}."
        )


def check_option(value, allowed: Sequence, name: str):
    """Raise ValueError unless ``value`` is one of ``allowed``."""
    if value not in allowed:
        raise ValueError(f"`{name}` must be one of {list(allowed)}; got {value!r}.")
    return value


def check_number(value, name: str, *, low=None, high=None, integer=False, allow_none=False):
    """Validate a scalar number within [low, high]; return it (as int when ``integer``)."""
    if value is None and allow_none:
        return None
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        expected = "an integer" if integer else "a number"
        raise TypeError(f"`{name}` must be {expected}; got {value!r} ({type(value).__name__}).")
    if not integer and np.isnan(value):
        raise ValueError(f"`{name}` must be a number; got NaN.")
    if (low is not None and value < low) or (high is not None and value > high):
        raise ValueError(f"`{name}` must be in [{low}, {high}]; got {value!r}.")
    return int(value) if integer else float(value)


def check_unique_index(index: pd.Index, name: str) -> None:
    """Raise ValueError listing a few duplicated labels."""
    if not index.is_unique:
        dupes = index[index.duplicated()].unique()[:5].tolist()
        raise ValueError(f"`{name}` must have a unique index (ids must be unique); duplicated labels include {dupes}.")


def check_unique_column(table: pd.DataFrame, column: str, name: str) -> None:
    """Raise ValueError naming the first id that repeats in ``table[column]``."""
    repeated = table[column].duplicated()
    if repeated.any():
        first = table.loc[repeated, column].iloc[0]
        count = int((table[column] == first).sum())
        times = "twice" if count == 2 else f"{count} times"
        raise ValueError(f"`{name}` has {column} {show(first)} {times} (more than once); ids must be unique.")


def check_rng(rng) -> np.random.Generator:
    """Return a Generator from None, an int seed or a Generator (scipy's ``rng`` convention)."""
    if rng is None or isinstance(rng, (numbers.Integral, np.random.SeedSequence)):
        return np.random.default_rng(rng)
    if isinstance(rng, np.random.Generator):
        return rng
    raise TypeError(f"`rng` must be None, an int seed or a numpy Generator; got {type(rng).__name__}.")


def as_frame(scores, name: str) -> pd.DataFrame:
    """A Series becomes a one-column DataFrame (named after the Series, or ``name``)."""
    if isinstance(scores, pd.Series):
        return scores.to_frame(name if scores.name is None else scores.name)
    return check_dataframe(scores, name)
