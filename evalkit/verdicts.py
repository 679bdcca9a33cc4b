"""The claim-verdict table: validation, verdict scales (weights) and level counts per item.

A verdict table has one row per claim: ``item_id``, ``claim_idx`` (order within the item), optional
``claim`` text and the ``verdict`` on the five-level scale ``none < minor < partial < mostly < fully``.
Items that produced no claim cannot appear in it; they are carried by an *items* table (any DataFrame
indexed by ``item_id``, or just an Index of ids) that the scoring functions accept as ``items=``.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from evalkit import _dask
from evalkit._coerce import CLAIM_DTYPE, CLAIM_LEVELS, LEVEL_ALIASES, claim_codes
from evalkit._validation import check_columns, check_dataframe, check_unique_index, show

__all__ = ["LEVELS", "VERDICT_DTYPE", "SCALES", "validate", "get_scale", "level_counts", "items_index"]

#: The five verdict levels, from worst to best.
LEVELS: tuple[str, ...] = CLAIM_LEVELS

#: Ordered categorical dtype of the ``verdict`` column.
VERDICT_DTYPE = CLAIM_DTYPE

#: Weight scales of the TCVA paper (level -> weight).
SCALES: dict[str, dict[str, float]] = {
    "default": {"fully": 1.0, "mostly": 0.9, "partial": 0.7, "minor": 0.3, "none": 0.0},
    "linear": {"fully": 1.0, "mostly": 0.75, "partial": 0.5, "minor": 0.25, "none": 0.0},
    "aggressive": {"fully": 1.0, "mostly": 0.95, "partial": 0.8, "minor": 0.1, "none": 0.0},
    "conservative": {"fully": 1.0, "mostly": 0.8, "partial": 0.5, "minor": 0.2, "none": 0.0},
    "binary": {"fully": 1.0, "mostly": 1.0, "partial": 0.0, "minor": 0.0, "none": 0.0},
}

def validate(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Check a claim-verdict table and return a normalised copy.

    Labels are lower-cased and stripped, ``"partially"`` becomes ``"partial"`` and the column becomes
    the ordered categorical :data:`VERDICT_DTYPE`. When ``claim_idx`` is absent it is numbered in row
    order within each item. The input is never modified.

    Parameters
    ----------
    verdicts : DataFrame
        Columns ``item_id`` and ``verdict``; optional ``claim_idx``, ``claim``, ``reason``, ``support``.

    Returns
    -------
    DataFrame
        The same rows with ``claim_idx`` (int64) and a categorical ``verdict``.

    Raises
    ------
    KeyError
        A required column is missing.
    ValueError
        An unknown or missing verdict label (the row, its item and the value are named), a missing
        ``item_id``, a non-integer ``claim_idx`` or a repeated ``(item_id, claim_idx)`` pair.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import verdicts
    >>> table = pd.DataFrame({"item_id": ["a", "a", "b"], "verdict": ["Fully", " partially", "none"]})
    >>> verdicts.validate(table)
      item_id verdict  claim_idx
    0       a   fully          0
    1       a partial          1
    2       b    none          0
    """
    return _validate(verdicts)[0]


def _validate(verdicts: pd.DataFrame, *, table: bool = True, presorted: bool = False
              ) -> tuple[pd.DataFrame | None, np.ndarray, pd.Index, np.ndarray]:
    """Validate; return the normalised table (None with ``table=False``: the counts need only the codes), each
    row's item code, the item ids in order of first appearance and each row's level code. ``presorted``: the
    rows must be in ascending order of item_id (checked; the ids are then numbered by comparing neighbours)."""
    verdicts = check_dataframe(verdicts, "verdicts")
    check_columns(verdicts, ["item_id", "verdict"], "verdicts")
    codes, uniques, level_codes, disorder = claim_codes(verdicts["item_id"], verdicts["verdict"], presorted=presorted)
    if len(codes) and codes.min() < 0:  # factorize numbers a missing id -1
        row = verdicts.index[int(np.argmax(codes < 0))]
        raise ValueError(f"`verdicts` row {show(row)}: item_id is missing; every claim needs an item_id.")
    if disorder >= 0:
        ids = verdicts["item_id"]
        raise ValueError(f"`verdicts` row {show(verdicts.index[disorder])}: item_id {show(ids.iloc[disorder])} comes after "
                         f"{show(ids.iloc[disorder - 1])}; with presorted=True the claims must be in ascending order of "
                         "item_id (sort them, or leave presorted=False).")
    given = "claim_idx" in verdicts.columns
    claim = _claim_numbers(verdicts["claim_idx"]) if given else _numbered_within_items(codes)
    if given and len(codes):
        _check_claims_once(verdicts, codes, len(uniques), claim)
    level = level_codes()  # encoded on other threads while the items were numbered and checked
    bad = level < 0
    if bad.any():
        pos = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"`verdicts` row {show(verdicts.index[pos])} (item_id={show(verdicts['item_id'].iloc[pos])}): verdict "
            f"{show(verdicts['verdict'].iloc[pos])} is not one of {list(LEVELS)} "
            f"(accepted alias: 'partially'); {int(bad.sum())} row(s) have unknown verdicts."
            + (" A missing verdict often comes from pandas.read_csv, which reads the text 'None' as missing: "
               "read with keep_default_na=False." if pd.isna(verdicts["verdict"].iloc[pos]) else "")
        )
    out = None
    if table:
        out = verdicts.copy(deep=False)  # columns are replaced, never written in place: the input stays intact
        if out["verdict"].dtype != VERDICT_DTYPE:
            out["verdict"] = pd.Categorical.from_codes(level, dtype=VERDICT_DTYPE)
        if not given or out["claim_idx"].dtype != np.int64:
            out["claim_idx"] = claim
    return out, codes, pd.Index(uniques, name="item_id"), level


def _claim_numbers(idx: pd.Series) -> np.ndarray:
    """The ``claim_idx`` column as int64, or a ValueError saying what it holds instead."""
    if idx.dtype == np.int64:
        return idx.to_numpy()
    if not pd.api.types.is_numeric_dtype(idx) or idx.isna().any():
        raise ValueError(f"`verdicts` column 'claim_idx' must hold integers; got dtype {idx.dtype}.")
    as_int = idx.astype("int64")
    if not np.array_equal(as_int.to_numpy(), idx.to_numpy()):
        raise ValueError("`verdicts` column 'claim_idx' must hold whole numbers.")
    return as_int.to_numpy()


def _numbered_within_items(codes: np.ndarray) -> np.ndarray:
    """Each row's number (0, 1, ...) among the rows of its item, in row order (``groupby(...).cumcount()``)."""
    n = len(codes)
    if n and (codes[1:] >= codes[:-1]).all():  # each item's rows together (codes number items as they appear)
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        return np.arange(n, dtype=np.int64) - np.repeat(starts, np.diff(np.r_[starts, n]))
    return pd.Series(codes).groupby(codes, sort=False).cumcount().to_numpy(dtype=np.int64)


def _check_claims_once(verdicts: pd.DataFrame, codes: np.ndarray, n_items: int, claim: np.ndarray) -> None:
    """Refuse a repeated ``(item_id, claim_idx)`` pair, naming the first repeat."""
    low = int(claim.min())
    span = int(claim.max()) - low + 1
    if n_items * span < 2**62:
        key = codes.astype(np.int64, copy=False) * span  # a new array: updated in place
        key += claim
        key -= low
        if (key[1:] > key[:-1]).all():  # sorted by item, then claim: nothing repeats (no hashing needed)
            return
        dup = pd.Index(key).duplicated()
    else:  # claim numbers too far apart to pack with the item code
        dup = pd.DataFrame({"item": codes, "claim": claim}).duplicated().to_numpy()
    if dup.any():
        pos = int(np.flatnonzero(dup)[0])
        raise ValueError(
            f"`verdicts` has {int(dup.sum())} repeated (item_id, claim_idx) pair(s), first "
            f"({show(verdicts['item_id'].iloc[pos])}, {int(claim[pos])}) at row {show(verdicts.index[pos])}; "
            "each claim must appear once."
        )


def get_scale(scale="default") -> pd.Series:
    """Return a verdict scale as a Series of weights indexed by :data:`LEVELS`.

    Parameters
    ----------
    scale : str or mapping
        A name in :data:`SCALES` or a mapping from each of the five levels to a weight in [0, 1]
        (``"partially"`` is accepted for ``"partial"``).

    Examples
    --------
    >>> from evalkit import verdicts
    >>> verdicts.get_scale("linear").tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
    if isinstance(scale, str):
        if scale not in SCALES:
            raise ValueError(f"`scale` must be one of {list(SCALES)} or a mapping; got {scale!r}.")
        mapping = SCALES[scale]
    elif isinstance(scale, Mapping):
        mapping = {LEVEL_ALIASES.get(str(k).strip().lower(), str(k).strip().lower()): v for k, v in scale.items()}
        unknown = sorted(set(mapping) - set(LEVELS))
        missing = [lvl for lvl in LEVELS if lvl not in mapping]
        if unknown or missing:
            raise ValueError(
                f"`scale` must map exactly the levels {list(LEVELS)}; missing {missing}, unknown {unknown}."
            )
        for level, weight in mapping.items():
            if isinstance(weight, bool) or not isinstance(weight, (int, float, np.number)) or not 0 <= weight <= 1:
                raise ValueError(f"`scale` weight for {level!r} must be a number in [0, 1]; got {weight!r}.")
    else:
        raise TypeError(f"`scale` must be a name or a mapping; got {type(scale).__name__}.")
    return pd.Series([float(mapping[lvl]) for lvl in LEVELS], index=pd.Index(LEVELS, name="verdict"), name="weight")


def items_index(items) -> pd.Index | None:
    """Return the item ids of ``items`` (an Index, a list-like of ids, or a DataFrame/Series indexed by id).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.verdicts import items_index
    >>> items_index(pd.DataFrame({"human": [3, 4]}, index=["a", "b"])).tolist()
    ['a', 'b']
    """
    if items is None:
        return None
    if isinstance(items, (pd.DataFrame, pd.Series)):
        index = items.index
    elif isinstance(items, pd.Index):
        index = items
    else:
        index = pd.Index(list(items))
    check_unique_index(index, "items")
    return index.rename("item_id")


def level_counts(verdicts: pd.DataFrame, *, items=None, presorted: bool = False) -> pd.DataFrame:
    """Count the claims at each verdict level for every item.

    Parameters
    ----------
    verdicts : DataFrame
        A claim-verdict table (validated here).
    items : Index, DataFrame or list-like, optional
        All item ids to report, including those without claims (their counts are 0). Every item in
        ``verdicts`` must be among them. Without it, the items in ``verdicts`` in order of appearance.
    presorted : bool, default False
        The claims are in ascending order of ``item_id`` (as a table written item by item is, an item's claims
        possibly continuing into the next file). Checked: a row out of order raises ValueError naming it. The
        counts are the same; a dask table is then counted without a shuffle (below).

    Returns
    -------
    DataFrame
        Index ``item_id``, one int64 column per level in :data:`LEVELS`, plus ``n_claims``.

        A dask ``verdicts`` (e.g. ``dask.dataframe.read_parquet`` of a partitioned table) gives a lazy dask
        DataFrame whose ``.compute()`` equals this function on the whole table: each partition is counted
        here, the integer counts are summed per item across partitions (a hash-partitioned groupby), and
        range partitioning puts the items back in order: without ``items`` each item in the partition of its
        first claim, with ``items`` in consecutive chunks of ``items``. Bad labels and unknown items raise
        when computed; a repeated ``(item_id, claim_idx)`` pair is found only within a partition. With
        ``presorted=True`` nothing is shuffled: an item can then continue only from the end of one partition
        into the next, so each partition's counts are completed by a small row carried from the partition
        before it (each item lands in the partition of its last claim), and ``items`` in ascending order are
        filled in partition by partition too (other orders take one range partitioning).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import verdicts
    >>> table = pd.DataFrame({"item_id": ["a", "a", "b"], "verdict": ["fully", "none", "minor"]})
    >>> verdicts.level_counts(table, items=["a", "b", "c"])
             none  minor  partial  mostly  fully  n_claims
    item_id
    a           1      0        0       0      1         2
    b           0      1        0       0      0         1
    c           0      0        0       0      0         0
    """
    if not isinstance(presorted, bool):
        raise TypeError(f"`presorted` must be True or False; got {presorted!r}.")
    if _dask.is_dask(verdicts):
        return _level_counts_dask(verdicts, items_index(items), presorted)
    _, codes, seen, level = _validate(verdicts, table=False, presorted=presorted)
    index = items_index(items)
    if index is None:
        index = seen
    else:
        position = index.get_indexer(seen)
        if (position < 0).any():
            unknown = seen[position < 0][:5].tolist()
            raise ValueError(f"`verdicts` has item_id(s) not in `items`: {unknown}; `items` must list every item.")
        codes = position[codes]
    n_levels = len(LEVELS)
    flat = codes.astype(np.int64, copy=False) * n_levels  # a new array: updated in place
    flat += level
    counts = np.bincount(flat, minlength=len(index) * n_levels).reshape(len(index), n_levels)
    out = pd.DataFrame(counts.astype(np.int64, copy=False), index=index, columns=list(LEVELS), copy=False)
    out["n_claims"] = counts.sum(axis=1)
    return out


def _partition_counts(part: pd.DataFrame, partition_info=None) -> pd.DataFrame:
    counts = level_counts(part).reset_index()
    codes = pd.factorize(part["item_id"])[0]
    counts[_dask.POSITION] = _dask.first_positions(codes, _dask.partition_number(partition_info))
    return counts


def _item_positions(counts: pd.DataFrame, index: pd.Index) -> pd.DataFrame:
    position = index.get_indexer(counts["item_id"])
    if (position < 0).any():
        unknown = counts["item_id"][position < 0][:5].tolist()
        raise ValueError(f"`verdicts` has item_id(s) not in `items`: {unknown}; `items` must list every item.")
    return counts.assign(**{_dask.POSITION: position.astype(np.int64)})


def _fill_items(counts: pd.DataFrame, index: pd.Index, divisions: list[int], partition_info=None) -> pd.DataFrame:
    """Counts of the items at positions [divisions[j], divisions[j + 1]) of ``index``, zeros for those without claims."""
    j = _dask.partition_number(partition_info)
    stop = divisions[j + 1] if j + 2 < len(divisions) else len(index)
    out = counts.drop(columns="item_id").reindex(pd.RangeIndex(divisions[j], stop), fill_value=0)
    return out.set_axis(index[divisions[j]:stop]).astype(np.int64)


def _fill_sorted_items(counts: pd.DataFrame, before, index: pd.Index, last: bool) -> pd.DataFrame:
    """The items of ``index`` (ascending) after ``before`` up to this partition's last counted item (all the rest
    in the last partition), with the partition's counts and zeros for those without claims."""
    low = 0 if before is None else int(index.searchsorted(before, side="right"))
    high = len(index) if last else low if counts.empty else int(index.searchsorted(counts.index[-1], side="right"))
    chunk = index[low:high]
    unknown = counts.index[~counts.index.isin(chunk)]
    if len(unknown):
        raise ValueError(f"`verdicts` has item_id(s) not in `items`: {unknown[:5].tolist()}; `items` must list every item.")
    return counts.reindex(chunk, fill_value=0).astype(np.int64)


def _last_counted(counts: pd.DataFrame, before):
    return before if counts.empty else counts.index[-1]


def _level_counts_sorted_dask(verdicts, index: pd.Index | None, meta: pd.DataFrame):
    """level_counts of a dask verdict table in ascending order of item_id: no shuffle (see its docstring)."""
    import dask

    per_partition = verdicts.map_partitions(level_counts, presorted=True, meta=meta)
    summed = _dask.sum_sorted(per_partition, "`verdicts` item ids (presorted=True)")
    if index is None:
        return summed
    if not index.is_monotonic_increasing:
        counts = summed.reset_index()
        return _level_counts_in_order(counts, index, verdicts.npartitions,
                                      counts._meta.assign(**{_dask.POSITION: np.array([], dtype=np.int64)}))
    items, delayed = dask.delayed(index, pure=True), dask.delayed
    parts, before, out = summed.to_delayed(), None, []
    for j, part in enumerate(parts):
        out.append(delayed(_fill_sorted_items, pure=True)(part, before, items, j == len(parts) - 1))
        before = delayed(_last_counted, pure=True)(part, before)
    result_meta = meta.set_axis(index[:0])
    return _dask.dataframe().from_delayed(out, meta=result_meta, verify_meta=False)


def _level_counts_in_order(counts, index: pd.Index, npartitions: int, meta: pd.DataFrame):
    """Counts summed per item (a dask frame with ``item_id`` as a column) put in the order of ``index``."""
    import dask

    columns = [*LEVELS, "n_claims"]
    items = dask.delayed(index, pure=True)
    divisions = _dask.chunk_divisions(len(index), npartitions)
    ordered = _dask.sort_into(counts.map_partitions(_item_positions, items, meta=meta), divisions)
    result_meta = pd.DataFrame({c: np.array([], dtype=np.int64) for c in columns}, index=index[:0])
    return ordered.map_partitions(_fill_items, items, divisions, meta=result_meta, clear_divisions=True)


def _level_counts_dask(verdicts, index: pd.Index | None, presorted: bool = False):
    """level_counts of a dask verdict table (see its docstring): a lazy dask DataFrame."""
    check_columns(verdicts, ["item_id", "verdict"], "verdicts")
    columns = [*LEVELS, "n_claims"]
    if presorted:
        meta = pd.DataFrame({c: np.array([], dtype=np.int64) for c in columns},
                            index=pd.Index(verdicts._meta["item_id"].iloc[:0], name="item_id"))
        return _level_counts_sorted_dask(verdicts, index, meta)
    meta = pd.DataFrame({"item_id": verdicts._meta["item_id"].iloc[:0],
                         **{c: np.array([], dtype=np.int64) for c in (*columns, _dask.POSITION)}})
    per_partition = verdicts.map_partitions(_partition_counts, meta=meta)
    summed = _dask.sum_by_key(per_partition, "item_id", _dask.POSITION, verdicts.npartitions)
    if index is None:  # each item goes to the partition of its first claim, in order of first appearance
        ordered = _dask.restore_order(summed, verdicts.npartitions)
        return ordered.map_partitions(lambda part: part.set_index("item_id")[columns].astype(np.int64),
                                      meta=meta.set_index("item_id")[columns], clear_divisions=True)
    return _level_counts_in_order(summed, index, verdicts.npartitions, meta)
