"""Generic dask helpers for the functions that also take dask DataFrames (the optional ``dask`` extra).

dask is imported lazily, only when a dask object is passed: ``import evalkit`` never imports it. The helpers
keep the pandas path as the reference: the dask paths call the pandas functions on partitions (or on
aggregated counts) and these helpers only move rows and keep their original order.
"""

from __future__ import annotations

import sys

import numpy as np
import pandas as pd

from evalkit._optional import install_hint

#: Column holding a row's global position key (see :func:`with_position`).
POSITION = "_evalkit_pos"
_BUCKET = "_evalkit_bucket"
_ROWS_PER_PARTITION = 2**40  # position key = partition number * 2**40 + row within the partition


def is_dask(obj) -> bool:
    """True for a dask DataFrame, Series or Index (without importing dask when it was never imported)."""
    if "dask.dataframe" not in sys.modules:
        return False
    import dask.dataframe as dd

    return isinstance(obj, (dd.DataFrame, dd.Series, dd.Index))


def dataframe():
    """Import and return ``dask.dataframe``, or say which extra to install."""
    try:
        import dask.dataframe as dd
    except ImportError as error:  # pragma: no cover - the test environment has the extra
        raise ImportError(f"dask input needs the dask extra: {install_hint('dask')}") from error
    return dd


def as_dask(frame, npartitions: int = 1):
    """A dask DataFrame as is; a pandas DataFrame wrapped in ``npartitions`` partitions."""
    return frame if is_dask(frame) else dataframe().from_pandas(frame, npartitions=npartitions, sort=False)


def _positions(part: pd.DataFrame, partition_info=None) -> pd.DataFrame:
    offset = np.int64(partition_number(partition_info)) * _ROWS_PER_PARTITION
    return part.assign(**{POSITION: np.arange(len(part), dtype=np.int64) + offset})


def with_position(frame):
    """Add column :data:`POSITION`: a key that sorts the rows in their global order across partitions."""
    meta = frame._meta.assign(**{POSITION: np.array([], dtype=np.int64)})
    return frame.map_partitions(_positions, meta=meta)


def first_positions(codes: np.ndarray, number: int) -> np.ndarray:
    """Position key of the first row of each code ``0..k-1`` (codes numbered in order of first appearance)."""
    first = np.flatnonzero(~pd.Index(codes).duplicated())
    return first.astype(np.int64) + np.int64(number) * _ROWS_PER_PARTITION


def partition_number(partition_info) -> int:
    """The partition's number from dask's ``partition_info`` (0 when called on metadata)."""
    return 0 if partition_info is None else int(partition_info["number"])


def sum_by_key(frame, key: str, first: str, npartitions: int):
    """Sum every column of ``frame`` per ``key`` across partitions (hash-partitioned into ``npartitions``).

    ``first`` holds each group's position key (see :func:`first_positions`); the result keeps its minimum.
    Integer sums are exact in any order. Returns ``key`` as a column.
    """
    aggregations = {column: "sum" for column in frame.columns if column not in (key, first)}
    aggregations[first] = "min"
    return frame.groupby(key, sort=False).agg(aggregations, split_out=npartitions).reset_index()


def sum_sorted(frame, what: str = "rows", *, block: int = 16):
    """Sum the rows of ``frame`` that share an index value, for an index in ascending order across the partitions.

    ``frame`` holds one row per index value within each partition (e.g. per-partition counts), each partition in
    ascending order (the caller checks), and its partitions follow the order of the table they came from: a value
    can only continue from the end of one partition into the start of the next ones. No shuffle: each partition
    hands on its first and last rows (its edges); one small task per ``block`` partitions works out, from the
    edges, the row carried into each of them (the last value seen before it, summed over the partitions it spans),
    and partition ``j`` of the result is partition ``j``'s rows with the carried row added to (or put before) its
    first one and its own last row held back for the next partition (the last partition keeps it). So a
    partition waits only for the edges of the ones before it, and the carried rows cross the cluster once per
    block rather than once per partition. Integer sums are exact: the result equals summing the whole table at
    once. A value smaller than one in an earlier partition raises ValueError naming ``what`` and the values.
    """
    import dask

    delayed = dask.delayed
    parts = frame.to_delayed()
    edges = [delayed(_edges, pure=True)(part) for part in parts]
    carry, out = None, []
    for first in range(0, len(parts), block):
        carried = delayed(_carries, pure=True, nout=2)(carry, edges[first:first + block])
        into, carry = carried
        for j in range(first, min(first + block, len(parts))):
            out.append(delayed(_emit_sorted, pure=True)(parts[j], into[j - first], j == len(parts) - 1, what))
    return dataframe().from_delayed(out, meta=frame._meta, verify_meta=False)


def _edges(part: pd.DataFrame) -> pd.DataFrame:
    """A partition's first and last rows (one row when it has one, none when empty)."""
    return part.iloc[[0, -1]] if len(part) > 1 else part


def _carries(carry: pd.DataFrame | None, edges: list) -> tuple[list, pd.DataFrame | None]:
    """The row carried into each partition of a block (None before the first value), and the one carried out."""
    into = []
    for edge in edges:
        into.append(carry)
        if edge.empty:
            continue
        last = edge.iloc[-1:]
        if carry is not None and len(edge) == 1 and edge.index[0] == carry.index[0]:
            carry = carry + last.to_numpy()  # a partition holding only the carried value: it goes on
        else:
            carry = last
    return into, carry


def _emit_sorted(part: pd.DataFrame, carry: pd.DataFrame | None, last: bool, what: str) -> pd.DataFrame:
    if carry is not None and not part.empty:
        if part.index[0] < carry.index[0]:
            raise ValueError(f"{what} are not in ascending order: {part.index[0]!r} comes after {carry.index[0]!r} "
                             "(in an earlier partition).")
        if part.index[0] == carry.index[0]:
            part = part.copy()
            part.iloc[0] += carry.iloc[0].to_numpy()
        else:
            part = pd.concat([carry, part])
    elif carry is not None and last:
        part = carry
    return part if last else part.iloc[:-1]


def partition_divisions(npartitions: int) -> list[int]:
    """Boundaries of the position keys of ``npartitions`` partitions (see :func:`with_position`)."""
    return [i * _ROWS_PER_PARTITION for i in range(npartitions)] + [npartitions * _ROWS_PER_PARTITION - 1]


def chunk_divisions(n: int, npartitions: int) -> list[int]:
    """Boundaries that cut positions ``0..n-1`` into at most ``npartitions`` consecutive chunks."""
    step = max(1, -(-n // max(npartitions, 1)))
    divisions = sorted(set(range(0, n, step)) | {max(n - 1, 0)})
    return divisions if len(divisions) > 1 else divisions * 2


def sort_into(frame, divisions: list[int]):
    """Range-partition ``frame`` on its :data:`POSITION` column with known ``divisions`` (no quantile pass) and
    sort each partition by it; the position becomes the index."""
    return frame.set_index(POSITION, divisions=divisions)


def co_partition(left, right, column: str, npartitions: int):
    """Shuffle two frames so that equal values of ``column`` land in the same partition number of both.

    Rows go to bucket ``hash(value) % npartitions``; both frames are shuffled on that integer bucket, so
    the same hashing (the one dask's hash joins rely on) sends a bucket to the same partition in both.
    """
    def bucket(part):
        values = pd.Series(part[column].to_numpy(dtype=object))
        hashed = pd.util.hash_pandas_object(values, index=False).to_numpy()
        return part.assign(**{_BUCKET: (hashed % np.uint64(npartitions)).astype(np.int64)})

    out = []
    for frame in (left, right):
        meta = frame._meta.assign(**{_BUCKET: np.array([], dtype=np.int64)})
        out.append(frame.map_partitions(bucket, meta=meta).shuffle(on=_BUCKET, npartitions=npartitions)
                   .map_partitions(lambda part: part.drop(columns=_BUCKET), meta=frame._meta))
    return tuple(out)


def qcut_levels(bins: int) -> np.ndarray:
    """The quantile levels ``pandas.qcut(x, bins)`` uses: ``linspace(0, 1, bins + 1)``, rounded up where the
    level is not representable in base 2 (as pandas does since 3.0)."""
    levels = np.linspace(0, 1, bins + 1)
    np.putmask(levels, bins * levels != np.arange(bins + 1), np.nextafter(levels, 1))
    return levels


def quantiles_from_counts(value_counts: pd.Series, levels) -> np.ndarray:
    """Exact ``numpy.quantile(values, levels)`` (method "linear") from a value count of ``values``.

    A dask column's quantiles are approximate; a value count is one exact reduction, and for integer-valued
    columns (token counts) it is small. numpy needs the whole array in memory, so its linear interpolation
    (Hyndman & Fan's method 7) is redone here step by step: virtual index ``(n - 1) * q``, its floor and the
    next order statistic (both clamped to the array), and numpy's two-sided lerp.

    Parameters
    ----------
    value_counts : Series
        Count (> 0) of each distinct non-missing value, indexed by the values (any order).
    levels : array_like of float
        Quantile levels in [0, 1].

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit._dask import quantiles_from_counts
    >>> values = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0])
    >>> counts = pd.Series(values).value_counts()
    >>> bool(np.array_equal(quantiles_from_counts(counts, [0, 1 / 3, 0.5, 1]), np.quantile(values, [0, 1 / 3, 0.5, 1])))
    True
    """
    counts = value_counts.sort_index()
    values = counts.index.to_numpy(dtype=float)
    ends = np.cumsum(counts.to_numpy(dtype=np.int64))  # order statistics [ends[i-1], ends[i]) equal values[i]
    n = int(ends[-1])
    q = np.asarray(levels, dtype=float)
    virtual = (n - 1) * q
    previous = np.floor(virtual)
    following = previous + 1
    above = virtual >= n - 1
    previous[above] = n - 1
    following[above] = n - 1
    below = virtual < 0
    previous[below] = 0
    following[below] = 0
    gamma = virtual - np.floor(virtual)

    def order_statistic(position):
        return values[np.searchsorted(ends, position.astype(np.int64), side="right")]

    a, b = order_statistic(previous), order_statistic(following)
    diff = b - a
    out = a + diff * gamma
    return np.where(gamma >= 0.5, b - diff * (1 - gamma), out)


def restore_order(frame, npartitions: int):
    """Bring rows keyed by :data:`POSITION` back to their original partitions and order (drops the key)."""
    return sort_into(frame, partition_divisions(npartitions)).map_partitions(
        lambda part: part.reset_index(drop=True), meta=frame._meta.drop(columns=POSITION).reset_index(drop=True),
        clear_divisions=True)


def compute_rows(frame, labels) -> pd.DataFrame | pd.Series:
    """Compute only the rows of a dask frame whose index is among ``labels`` (a pandas result)."""
    wanted = pd.Index(labels).unique()
    # get_indexer, not isin: pandas' isin on Arrow-backed string ids loops in Python, a hash lookup does not
    return frame.map_partitions(lambda part: part[wanted.get_indexer(part.index) >= 0], meta=frame._meta).compute()
