"""Argument and column checks shared by every public function, with one message style.

Every message says which parameter, what was expected and what was given; a missing column lists the
columns that exist.
"""

from __future__ import annotations

import numbers
import os
import sys
import warnings
from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd


class EvalkitWarning(UserWarning):
    """A result was computed, but something about the input deserves a look."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__)) + os.sep


def warn(message: str, category: type[Warning] = EvalkitWarning) -> None:
    """``warnings.warn`` pointing at the user's line: the first frame outside evalkit, however deep the call."""
    frame, level = sys._getframe(1), 2
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)


def align_ids(left, right, *, left_name: str, right_name: str, what: str = "case", warn_left: bool = True,
              warn_right: bool = True, shown: int = 3) -> pd.Index:
    """The one alignment of two inputs by id: the ids found in both, in ``left``'s order.

    Ids of one side that the other lacks are left out and said: an :class:`EvalkitWarning` (pointing at the user's
    line) names how many matched, how many of each side's ids matched nothing and the first ``shown`` of them. A side
    whose extra ids are expected (the cases a judge scored that nobody labelled) is not warned about: ``warn_left`` /
    ``warn_right`` False. Nothing in common raises ValueError with the first ids of each side.
    """
    left, right = pd.Index(left), pd.Index(right)
    common = left.intersection(right, sort=False)
    if len(common) == 0:
        raise ValueError(f"`{left_name}` and `{right_name}` share no {what} id, so nothing can be aligned; first ids: "
                         f"{left_name} {left[:shown].tolist()}, {right_name} {right[:shown].tolist()}.")
    parts = []
    for name, other, ids, check in ((left_name, right_name, left, warn_left), (right_name, left_name, right, warn_right)):
        if check and len(ids) > len(common):
            lost = ids[~ids.isin(common)]
            if len(lost):
                parts.append(f"{len(lost)} of `{name}`'s {len(ids)} ids match nothing in `{other}` "
                             f"(e.g. {lost[:shown].tolist()})")
    if parts:
        warn(f"matched {len(common)} {what}(s) by id; " + " and ".join(parts) + ": left out.")
    return common


#: The key of the order of a sequential method's cases when no ``rng`` is given.
ORDER_SEED = 0


def order_seed(rng) -> int:
    """The key of :func:`id_order` from an ``rng`` argument: None gives ``ORDER_SEED``, an int seed itself, a
    Generator one draw from it (so a seeded Generator gives one order, and another seed another)."""
    if rng is None:
        return ORDER_SEED
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        return int(rng)
    return int(check_rng(rng).integers(2**63))


def id_order(ids, seed: int = ORDER_SEED) -> np.ndarray:
    """Positions that put ``ids`` in the order evalkit's sequential methods (betting, sign-flip draws) take cases in.

    The rule: ascending by a 64-bit hash of each id's text keyed by ``seed`` (see :func:`order_seed`), ties by the
    text. The order depends on the set of ids and the seed alone, never on the order the rows came in, and is not
    the ids' sorted order (which may follow a document, a system or a day).
    """
    text = np.asarray(pd.Index(ids).astype(str), dtype=object)
    key = f"{int(seed) % 10**16:016d}"
    hashed = pd.util.hash_array(text, hash_key=key, categorize=False)
    by_text = np.argsort(text, kind="stable")
    return by_text[np.argsort(hashed[by_text], kind="stable")]


def sorted_ids(index) -> pd.Index:
    """``index`` in ascending order of its ids (as text where they are of mixed types): the order in which a resampling
    method (the bootstrap over items) takes the ids, so that its draws do not depend on the order of the rows."""
    index = pd.Index(index)
    try:
        return index[np.argsort(index.to_numpy(), kind="stable")]
    except TypeError:  # ids of mixed types
        return index[np.argsort(index.astype(str).to_numpy(), kind="stable")]


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


def check_number(value, name: str, *, low=None, high=None, integer=False, allow_none=False, closed: str = "both"):
    """Validate a finite scalar number within its bounds; return it (as int when ``integer``).

    ``closed`` says which bounds the value may equal, as scikit-learn's ``Interval(..., closed=...)``: ``"both"``
    ([low, high]), ``"neither"`` ((low, high)), ``"left"`` or ``"right"``.
    """
    if value is None and allow_none:
        return None
    kind = numbers.Integral if integer else numbers.Real
    if isinstance(value, bool) or not isinstance(value, kind):
        expected = "an integer" if integer else "a number"
        raise TypeError(f"`{name}` must be {expected}; got {value!r} ({type(value).__name__}).")
    if not integer and not np.isfinite(value):
        raise ValueError(f"`{name}` must be a finite number; got {value!r}.")
    left, right = closed in ("both", "left"), closed in ("both", "right")
    if ((low is not None and (value < low or (value == low and not left)))
            or (high is not None and (value > high or (value == high and not right)))):
        shown = f"{'[' if left else '('}{low}, {high}{']' if right else ')'}"
        raise ValueError(f"`{name}` must be in {shown}; got {value!r}.")
    return int(value) if integer else float(value)


def check_level(value, name: str = "confidence_level") -> float:
    """A confidence level: a number strictly between 0 and 1."""
    return check_number(value, name, low=0.0, high=1.0, closed="neither")


def as_groups(by, table=None, *, name: str = "cluster", key: str | None = None, length: int | None = None,
              table_name: str = "the table", columns: bool = True) -> pd.Series:
    """The one reading of a ``cluster=`` (or ``by=``) argument as a Series of ids.

    ``by`` is a column name of ``table`` (row by row; with ``key``, one id per ``key`` value, the last row of a
    repeated key counting; not where ``columns=False``, a table whose columns are scores), an index level name of
    ``table``, a Series of ids indexed by case id (returned as it is), or a sequence of ``length`` ids (one per case,
    in their order; indexed 0, 1, ...).
    """
    if isinstance(by, str):
        if table is None:
            raise TypeError(f"`{name}={by!r}` names a column, which needs a table; pass a Series of ids indexed by case "
                            "id instead.")
        if columns and by in table.columns:
            if key is None:
                return table[by]
            check_columns(table, [key], "the table")
            return table.drop_duplicates(key, keep="last").set_index(key)[by]
        if by in [level for level in table.index.names if level is not None]:
            return pd.Series(table.index.get_level_values(by), index=table.index, name=by)
        if columns:
            raise KeyError(f"`{table_name}` is missing column(s) [{by!r}] (the `{name}`); it has columns "
                           f"{list(map(str, table.columns))} and index levels {list(table.index.names)}.")
        raise KeyError(f"`{name}`={by!r} is not an index level of `{table_name}`; its levels are {list(table.index.names)}.")
    if isinstance(by, pd.Series):
        check_unique_index(by.index, name)
        return by
    if isinstance(by, (list, tuple, np.ndarray, pd.Index)):
        values = np.asarray(by)
        expected = len(table) if length is None and table is not None else length
        if values.ndim != 1 or (expected is not None and len(values) != expected):
            raise ValueError(f"`{name}` as a sequence must give one id per case ({expected}); got "
                             f"{values.shape[0] if values.ndim else 0}. Pass a Series indexed by case id to give them by id.")
        return pd.Series(values, index=table.index if table is not None and length is None else None)
    raise TypeError(f"`{name}` must be a column name, a Series of ids indexed by case id, or a sequence as long as the "
                    f"cases; got {type(by).__name__}.")


def as_clusters(cluster, cases: pd.Index, *, table: pd.DataFrame | None = None, name: str = "cluster",
                key: str | None = "case_id", table_name: str = "the table") -> tuple[np.ndarray, int]:
    """The one conversion of a ``cluster=`` argument to what an interval needs: integer codes of each case's cluster,
    in the order of ``cases``, and the largest cluster size among every case the argument covers (a betting
    interval's bound on a cluster).

    ``cluster`` is read by :func:`as_groups` (a column of ``table``, by ``key`` or with ``key=None`` row by row, the
    cases then being the table's index; an index level name; a Series of ids by case id, where ``cases`` may repeat an
    id; or a sequence as long as ``cases``). Codes follow the sorted cluster ids, so an interval that takes clusters
    in a fixed order does not depend on the order of the cases.
    """
    if isinstance(cluster, (list, tuple, np.ndarray, pd.Index)):
        ids = pd.Series(as_groups(cluster, name=name, length=len(cases)).to_numpy(), index=cases)
    else:
        ids = as_groups(cluster, table, name=name, key=key, table_name=table_name)
    aligned = ids.reindex(cases)
    if aligned.isna().any():
        raise ValueError(f"`{name}` has no cluster for {int(aligned.isna().sum())} case(s), e.g. "
                         f"{show(cases[aligned.isna().to_numpy()][0])}; give every case a cluster id.")
    if len(aligned) == 0:  # no case: no cluster (the caller refuses an empty table in its own words)
        return np.zeros(0, dtype=np.intp), 0
    bound = int(max(ids.dropna().value_counts().max(), pd.Series(aligned.to_numpy()).value_counts().max()))
    try:
        codes = pd.factorize(aligned.to_numpy(), sort=True)[0]
    except TypeError:  # ids of mixed types
        codes = pd.factorize(aligned.astype(str).to_numpy(), sort=True)[0]
    return codes, bound


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
