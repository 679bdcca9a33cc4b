"""Verdict and label coercion shared by the judge, calibration, comparison and labelling code.

Private floor: imports nothing from evalkit above ``_validation``.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import pandas as pd

from evalkit._validation import check_columns, check_unique_index

#: The claim-verdict levels, worst to best (published as ``evalkit.verdicts.LEVELS``).
CLAIM_LEVELS: tuple[str, ...] = ("none", "minor", "partial", "mostly", "fully")

#: Ordered categorical dtype of a normalised claim-verdict column (``evalkit.verdicts.VERDICT_DTYPE``).
CLAIM_DTYPE = pd.CategoricalDtype(list(CLAIM_LEVELS), ordered=True)

# Spellings of the claim-verdict levels that mean the same level.
LEVEL_ALIASES = {"partially": "partial"}

# Below this many claims, encoding on several threads costs more than it saves.
_PARALLEL_ROWS = 200_000
_SEED_ROWS = 4096  # the rows whose distinct labels every chunk is looked up among


def normalise_level(label):
    """Lower-case and strip a claim-verdict label and map its aliases (non-strings are returned as given)."""
    if not isinstance(label, str):
        return label
    label = label.strip().lower()
    return LEVEL_ALIASES.get(label, label)


def claim_codes(ids: pd.Series, labels: pd.Series, *, presorted: bool = False
                ) -> tuple[np.ndarray, pd.Index | np.ndarray, Callable[[], np.ndarray], int]:
    """Each claim's item code and level code: ``pandas.factorize(ids)`` and :func:`claim_level_codes` of ``labels``.

    Returns ``(item codes, item ids in order of first appearance, level codes, disorder)``; a missing id has item
    code -1. ``disorder`` is -1, or with ``presorted`` the position of the first id smaller than the one before it
    (:func:`sorted_item_codes`, which numbers ids in ascending order by their runs instead of hashing them).
    ``level codes`` is a function returning them: labels that are not already :data:`CLAIM_DTYPE` are strings to
    hash, as many as the item ids, and with enough rows and a second core they are encoded on other threads while
    the caller numbers and checks the items (pyarrow, pandas' integer hashing and numpy release the interpreter
    lock): a table of string verdicts costs the same table as a categorical plus what hashing its labels does not
    hide behind that work (``benchmarks/bench_sweep.py --floor`` times it). Call it once, after the work on the
    items.
    """
    cores = os.cpu_count() or 1
    if labels.dtype == CLAIM_DTYPE or len(labels) < _PARALLEL_ROWS or cores < 2:
        codes, uniques, disorder = _item_codes(ids, presorted)
        level = claim_level_codes(labels)
        return codes, uniques, lambda: level, disorder
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(cores)
    try:
        pending = _level_codes(labels, pool)  # every chunk handed to the pool
        codes, uniques, disorder = _item_codes(ids, presorted)  # meanwhile, on this thread
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise

    def levels() -> np.ndarray:
        try:
            return pending()
        finally:
            pool.shutdown(wait=False)

    return codes, uniques, levels, disorder


def _item_codes(ids: pd.Series, presorted: bool) -> tuple[np.ndarray, pd.Index | np.ndarray, int]:
    if presorted:
        runs = sorted_item_codes(ids)
        if runs is not None:
            return runs
    elif isinstance(ids.dtype, np.dtype) and ids.dtype.kind in "iu" and len(ids) > 1:
        grouped = _grouped_codes(ids.to_numpy())
        if grouped is not None:
            return *grouped, -1
    codes, uniques = pd.factorize(ids)
    disorder = -1
    if presorted and len(codes) and (not (codes[1:] >= codes[:-1]).all() or not pd.Index(uniques).is_monotonic_increasing):
        disorder = _first_decrease(ids.to_numpy(dtype=object))
    return codes, uniques, disorder


def _grouped_codes(values: np.ndarray) -> tuple[np.ndarray, pd.Index] | None:
    """``pandas.factorize`` of integer ids whose rows are grouped (each id's rows together, in any order of the ids),
    from their runs: hashing one id per run instead of one per row. None when the ids are not so grouped."""
    starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
    if len(starts) > len(values) // 2:  # runs of one or two rows: no gain, factorize them
        return None
    heads = pd.Index(values[starts])
    if not heads.is_unique:  # an id in two places
        return None
    return np.repeat(np.arange(len(starts), dtype=np.intp), np.diff(np.r_[starts, len(values)])), heads


def sorted_item_codes(ids: pd.Series) -> tuple[np.ndarray, pd.Index, int] | None:
    """For ids in ascending order, what ``pandas.factorize`` gives, from comparing each id with the one before it.

    Returns ``(codes, ids of the runs, disorder)``: each row's run number, the id of each run and -1, or the position
    of the first id smaller than the one before it (then the ids are not in order and the codes are not
    factorize's). Runs are where an id differs from the one before; the ids are in order when the runs' ids
    increase. Numbers and strings held by pyarrow are compared whole-array; other ids (Python objects) or missing
    ids give None: factorize them. Comparing neighbours costs a third of hashing them.
    """
    n = len(ids)
    if n == 0 or ids.isna().any():
        return None
    if isinstance(ids.dtype, np.dtype) and ids.dtype.kind in "iuf":
        values = ids.to_numpy()
        starts = np.flatnonzero(np.r_[True, values[1:] != values[:-1]])
        heads = values[starts]
        down = np.flatnonzero(heads[1:] < heads[:-1])
        uniques = pd.Index(heads)
    else:
        chunks = _arrow_string_chunks(ids)
        if chunks is None:
            return None
        import pyarrow as pa
        import pyarrow.compute as pc

        values = pa.chunked_array(chunks).combine_chunks() if len({c.type for c in chunks}) == 1 else \
            pa.concat_arrays([c.cast(pa.large_string()) for c in chunks])
        changed = pc.not_equal(values.slice(1), values.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        starts = np.flatnonzero(np.r_[True, changed])
        heads = values.take(pa.array(starts))
        down = np.flatnonzero(pc.less(heads.slice(1), heads.slice(0, len(heads) - 1)).to_numpy(zero_copy_only=False))
        uniques = pd.Index(pd.array(heads, dtype=ids.dtype))
    disorder = int(starts[down[0] + 1]) if len(down) else -1
    codes = np.repeat(np.arange(len(starts), dtype=np.intp), np.diff(np.r_[starts, n]))
    return codes, uniques, disorder


def _first_decrease(values: np.ndarray) -> int:
    """Position of the first value smaller than the one before it (values that do not compare: the first such pair)."""
    for i in range(1, len(values)):
        try:
            if values[i] < values[i - 1]:
                return i
        except TypeError:
            return i
    return -1  # pragma: no cover - called only on values out of order


def claim_level_codes(values: pd.Series, *, pool=None) -> np.ndarray:
    """Position of each claim-verdict label in :data:`CLAIM_LEVELS` (int8), -1 for an unknown or missing label.

    Only the distinct labels are normalised (:func:`normalise_level`): a column of plain strings (e.g. read from a
    CSV) is factorized once. Strings held by pyarrow (pandas' default string dtype) are read chunk by chunk: each
    chunk is looked up among the distinct labels of the first rows (``index_in``, about a third cheaper than
    encoding; a chunk with a label they lack is dictionary-encoded on its own), on the threads of ``pool`` when one is
    given or the column is long (pyarrow releases the interpreter lock). Hashing the strings is the whole cost of a
    string column.
    """
    return _level_codes(values, pool)()


def _level_codes(values: pd.Series, pool) -> Callable[[], np.ndarray]:
    """:func:`claim_level_codes` as a function returning them: with ``pool``, the chunks are encoded on its
    threads, and the caller can work meanwhile."""
    if values.dtype == CLAIM_DTYPE:
        codes = values.cat.codes.to_numpy()
        return lambda: codes
    if isinstance(values.dtype, pd.CategoricalDtype):
        codes = _claim_lookup(values.cat.categories)[values.cat.codes.to_numpy()]
        return lambda: codes
    chunks = _arrow_string_chunks(values)
    if chunks is None:
        factorized, uniques = pd.factorize(values)  # missing labels get code -1
        codes = _claim_lookup(uniques)[factorized]
        return lambda: codes
    if not chunks:
        return lambda: np.empty(0, dtype=np.int8)
    import pyarrow.compute as pc

    # The labels to look every chunk up among: those of the first rows, a few microseconds to find, so that with
    # ``pool`` the whole column (the first chunk too) is encoded on its threads while the caller works.
    seen = pc.unique(chunks[0].slice(0, _SEED_ROWS)).drop_null()
    lookup = _claim_lookup(seen.to_pylist())

    def codes_of(chunk) -> np.ndarray:
        index = pc.index_in(chunk, value_set=seen)  # a lookup among the first rows' labels: cheaper than encoding
        if index.null_count == chunk.null_count:
            return lookup[index.fill_null(-1).to_numpy()]
        encoded = chunk.dictionary_encode()  # a label the first rows did not have
        return _claim_lookup(encoded.dictionary.to_pylist())[encoded.indices.fill_null(-1).to_numpy()]

    if pool is not None:
        futures = [pool.submit(codes_of, chunk) for chunk in chunks]
        return lambda: np.concatenate([f.result() for f in futures])
    cores = os.cpu_count() or 1
    if len(chunks) > 1 and len(values) >= _PARALLEL_ROWS and cores > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(len(chunks), cores)) as own:
            out = list(own.map(codes_of, chunks))
    else:
        out = [codes_of(chunk) for chunk in chunks]
    codes = np.concatenate(out)
    return lambda: codes


def _claim_lookup(uniques) -> np.ndarray:
    """Level code of each distinct label, then a trailing -1 (so that code -1, a missing label, maps to -1)."""
    names = ("" if u is None else normalise_level(str(u)) for u in uniques)
    known = [CLAIM_LEVELS.index(name) if name in CLAIM_LEVELS else -1 for name in names]
    return np.asarray(known + [-1], dtype=np.int8)


def _arrow_string_chunks(values: pd.Series) -> list | None:
    """The pyarrow chunks of a string column held by pyarrow, or None (object strings, numbers, ...)."""
    dtype = values.dtype
    held = (isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow") or (
        isinstance(dtype, pd.ArrowDtype) and pd.api.types.is_string_dtype(dtype))
    if not held:
        return None
    import pyarrow as pa  # present: pandas holds these strings with it

    data = values.array.__arrow_array__()
    chunks = data.chunks if isinstance(data, pa.ChunkedArray) else [data]
    if not all(pa.types.is_string(c.type) or pa.types.is_large_string(c.type) for c in chunks):
        return None
    return [c for c in chunks if len(c)]


DEFAULT_LEVELS = ("PASS", "FAIL")


def verdict_levels(data, *, levels=None, pass_levels=None) -> tuple[tuple | None, tuple]:
    """``(levels, pass_levels)`` for verdicts: as given, else a results table's rubric (``attrs["rubric"]``),
    else PASS/FAIL. ``levels`` is None when only the pass levels are known (then every other value fails).
    """
    rubric = (getattr(data, "attrs", None) or {}).get("rubric") or {}
    if pass_levels is None and levels is None and rubric.get("levels"):
        levels = rubric["levels"]
        fail = rubric.get("fail_level")
        pass_levels = rubric.get("pass_levels") or [lvl for lvl in levels if lvl != fail]
    if pass_levels is None:
        if levels is not None and tuple(levels) != DEFAULT_LEVELS:
            raise ValueError(f"`pass_levels` is needed with levels {list(levels)}: say which of them count as a pass.")
        pass_levels = ("PASS",)
    if isinstance(pass_levels, str) or not all(isinstance(p, str) for p in pass_levels) or not len(pass_levels):
        raise TypeError(f"`pass_levels` must be a non-empty sequence of verdict levels, e.g. ('PASS',); "
                        f"got {pass_levels!r}.")
    if levels is None and tuple(pass_levels) == ("PASS",):
        levels = DEFAULT_LEVELS
    return (None if levels is None else tuple(levels)), tuple(pass_levels)


def as_pass(values: pd.Series, name: str, *, levels=DEFAULT_LEVELS, pass_levels=("PASS",)) -> pd.Series:
    """Verdicts or labels -> nullable boolean (True = pass); missing stays missing.

    A value in ``pass_levels`` passes; any other value of ``levels`` fails (with ``levels=None`` every
    other value fails). PASS/FAIL in any case and booleans (True = pass) are always understood; anything
    else raises ValueError naming the case and the levels expected.
    """
    if values.dtype == bool or pd.api.types.is_bool_dtype(values):
        return values.astype("boolean")
    passing = set(pass_levels)
    failing = None if levels is None else set(levels) - passing
    codes, uniques = pd.factorize(values.to_numpy(dtype=object), use_na_sentinel=True)  # decide each value once
    decided = np.zeros(len(uniques), dtype=bool)
    for i, value in enumerate(uniques):
        if isinstance(value, (bool, np.bool_)):
            decided[i] = bool(value)
            continue
        label = str(value).strip()
        if label in passing:
            decided[i] = True
        elif failing is not None and label in failing:
            decided[i] = False
        elif label.upper() in DEFAULT_LEVELS:
            decided[i] = label.upper() == "PASS"
        elif failing is None:
            decided[i] = False
        else:
            key = values.index[int(np.flatnonzero(codes == i)[0])]
            expected = [*passing, *sorted(failing)]
            raise ValueError(f"`{name}` for case {key!r} is {value!r}; expected one of {expected}, PASS/FAIL or a "
                             "boolean (True = pass). For other levels pass `pass_levels=`.")
    result = pd.array(decided[np.maximum(codes, 0)] if len(uniques) else np.zeros(len(codes), dtype=bool), dtype="boolean")
    result[codes < 0] = pd.NA
    return pd.Series(result, index=values.index)


def judge_verdicts(judge, name: str = "judge") -> pd.Series:
    """The judge's verdicts as a Series indexed by case id (from a results table or a Series)."""
    if isinstance(judge, pd.DataFrame):
        check_columns(judge, ["case_id", "verdict"], name)
        keys = [c for c in ("rubric", "rubric_version", "model") if c in judge.columns]
        if keys and len(judge.drop_duplicates(keys)) > 1:
            raise ValueError(f"`{name}` holds several rubrics/versions/models; select one, e.g. "
                             f"results[results.rubric_version == '...'].")
        series = judge.set_index("case_id")["verdict"].astype(object)
    elif isinstance(judge, pd.Series):
        series = judge.astype(object)
    else:
        raise TypeError(f"`{name}` must be a results DataFrame or a Series of verdicts indexed by case id; "
                        f"got {type(judge).__name__}.")
    check_unique_index(series.index, name)
    return series
