"""Factual density (FD*) of documents, its length-bias correction and its diagnostics.

``fd_raw(d) = sum(prob_fact of d's claims) / n_tokens(d)``. Raw density falls with length (long documents
carry more filler), so FD* z-scores it within document-length bins and weights it by source authority:
``fd_star(d) = (fd_raw(d) - mean_bin) / std_bin * authority(source(d))``. :func:`length_bias` checks that
the correction removed the length correlation; :func:`tier_spread` checks that it did not also flatten the
difference between source tiers.

Tokens are counted with a documented tokenizer: whitespace splitting by default, or any callable
``text -> sequence of tokens`` (or ``text -> int``).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
from scipy import stats

from evalkit import _dask
from evalkit._stats import studentized_over_items, z_value, z_variance_factor
from evalkit._validation import (
    EvalkitWarning,
    check_columns,
    check_dataframe,
    check_level,
    check_number,
    check_option,
    check_rng,
    check_unique_column,
    show,
    sorted_ids,
    warn,
)

__all__ = [
    "whitespace_tokens",
    "fd_raw",
    "length_bins",
    "fd_star",
    "rescore",
    "length_bias",
    "tier_means",
    "tier_spread",
    "split_sentences",
    "estimate_prob_fact",
    "claims_from_text",
]

TABLE_COLUMNS = ["source", "n_tokens", "n_claims", "fd_raw", "length_bin", "z", "authority", "fd_star"]


def whitespace_tokens(text: str) -> list[str]:
    """The default tokenizer: ``text.split()`` (runs of whitespace separate tokens).

    Examples
    --------
    >>> from evalkit.density import whitespace_tokens
    >>> whitespace_tokens("Aspirin  reduced risk by 12%.")
    ['Aspirin', 'reduced', 'risk', 'by', '12%.']
    """
    if not isinstance(text, str):
        raise TypeError(f"`text` must be str; got {type(text).__name__}.")
    return text.split()


def _n_tokens(documents: pd.DataFrame, tokenizer: Callable | None) -> pd.Series:
    """Token counts per document: the ``n_tokens`` column when present and no tokenizer is given."""
    if "n_tokens" in documents.columns and tokenizer is None:
        counts = documents["n_tokens"]
        if counts.isna().any() or not pd.api.types.is_numeric_dtype(counts):
            raise ValueError("`documents` column 'n_tokens' must hold numbers for every document.")
    else:
        check_columns(documents, ["text"], "documents")
        tokenize = tokenizer or whitespace_tokens
        counts = documents["text"].map(lambda t: _count(tokenize(t if isinstance(t, str) else "")))
    counts = pd.Series(counts.to_numpy(dtype=float), index=pd.Index(documents["doc_id"]), name="n_tokens")
    zero = counts <= 0
    if zero.any():
        raise ValueError(f"document {show(counts.index[zero][0])} has {int(counts[zero].iloc[0])} tokens; factual "
                         f"density needs at least one ({int(zero.sum())} document(s) affected).")
    return counts


def _finite(values: pd.Series, name: str, *, what: str = "finite numbers", allow_nan: bool = False) -> np.ndarray:
    """``values`` as floats, or TypeError/ValueError naming ``name`` and the first value that is not a finite number."""
    if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
        numeric = pd.to_numeric(values, errors="coerce") if not pd.api.types.is_bool_dtype(values) else values * np.nan
        bad = numeric.isna() & values.notna() if not pd.api.types.is_bool_dtype(values) else values.notna()
        if bad.any():
            raise TypeError(f"{name} must hold {what}; got {show(values[bad].iloc[0])} for {show(values.index[bad][0])}.")
        values = numeric
    floats = values.to_numpy(dtype=float, na_value=np.nan)
    bad = np.isinf(floats) | (np.isnan(floats) if not allow_nan else False)
    if bad.any():
        raise ValueError(f"{name} must hold {what}; got {show(floats[bad][0])} for {show(values.index[bad][0])}.")
    return floats


def _count(tokens) -> int:
    return int(tokens) if isinstance(tokens, (int, np.integer)) else len(tokens)


def _documents(documents, *, unique_ids: bool = True) -> pd.DataFrame:
    """Check a documents table; ``unique_ids=False`` leaves the repeated-id check to the caller."""
    documents = check_dataframe(documents, "documents")
    check_columns(documents, ["doc_id"], "documents")
    if documents.empty:
        raise ValueError("`documents` is empty.")
    if unique_ids:
        check_unique_column(documents, "doc_id", "documents")
    return documents


def fd_raw(doc_claims: pd.DataFrame, documents: pd.DataFrame, *, tokenizer: Callable | None = None) -> pd.DataFrame:
    """Raw factual density: the sum of ``prob_fact`` over a document's claims per token.

    Parameters
    ----------
    doc_claims : DataFrame
        ``doc_id, prob_fact`` (one row per claim; ``claim`` text optional).
    documents : DataFrame
        ``doc_id`` and ``n_tokens`` or ``text``.
    tokenizer : callable, optional
        ``text -> tokens`` (or a count); default :func:`whitespace_tokens`. When given, it is used even if
        ``n_tokens`` exists.

    Returns
    -------
    DataFrame
        Indexed by ``doc_id`` in document order: ``n_tokens, n_claims, fd_raw``. Documents without claims
        get ``fd_raw = 0``; ``attrs["n_without_claims"]`` counts them.

        Dask tables (either or both) give a lazy dask DataFrame, partitioned like ``documents``, whose
        ``.compute()`` equals this function on the whole tables, float for float: claims and documents are
        shuffled by a hash of ``doc_id`` so that each document meets all its claims in one partition, in
        their original order, and this function runs there. Errors about rows raise when computed; the
        ``attrs`` count is not kept.

    Raises
    ------
    ValueError
        ``prob_fact`` outside [0, 1] or missing (the row is named), a claim without a doc_id (the row is
        named) or for an unknown document, a document with zero tokens, a missing or repeated doc id, an
        empty corpus.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.density import fd_raw
    >>> docs = pd.DataFrame({"doc_id": ["a", "b"], "text": ["one two three four", "five six"]})
    >>> claims = pd.DataFrame({"doc_id": ["a", "a"], "prob_fact": [0.9, 0.3]})
    >>> fd_raw(claims, docs)
             n_tokens  n_claims  fd_raw
    doc_id
    a             4.0         2     0.3
    b             2.0         0     0.0
    """
    if _dask.is_dask(doc_claims) or _dask.is_dask(documents):
        return _fd_raw_dask(doc_claims, documents, tokenizer)
    return _fd_raw(doc_claims, _documents(documents, unique_ids=False), tokenizer)


def _fd_raw(doc_claims, documents: pd.DataFrame, tokenizer) -> pd.DataFrame:
    """fd_raw on a checked documents table (its ids are checked for repeats here)."""
    doc_claims = check_dataframe(doc_claims, "doc_claims")
    check_columns(doc_claims, ["doc_id", "prob_fact"], "doc_claims")
    prob = pd.to_numeric(doc_claims["prob_fact"], errors="coerce")
    bad = prob.isna() | (prob < 0) | (prob > 1)
    if bad.any():
        row = doc_claims.index[bad.to_numpy()][0]
        raise ValueError(f"`doc_claims` row {show(row)}: prob_fact {show(doc_claims['prob_fact'][row])} is not a number "
                         f"in [0, 1] ({int(bad.sum())} row(s) affected).")
    n_tokens = _n_tokens(documents, tokenizer)
    position = _claim_positions(doc_claims, documents)
    total = np.bincount(position, weights=prob.to_numpy(dtype=float), minlength=len(n_tokens))
    count = np.bincount(position, minlength=len(n_tokens))
    out = pd.DataFrame({"n_tokens": n_tokens.to_numpy(), "n_claims": count, "fd_raw": total / n_tokens.to_numpy()},
                       index=pd.Index(n_tokens.index, name="doc_id"))
    out.attrs["n_without_claims"] = int((count == 0).sum())
    return out


def _claim_positions(doc_claims: pd.DataFrame, documents: pd.DataFrame) -> np.ndarray:
    """Each claim's document row; also checks that document ids are present and unique.

    Hashing the string ids is the whole cost, so it is done once, over the document ids followed by the
    claims' ids: documents get codes 0..n-1 exactly when their ids are unique and present, and a claim
    gets its document's code (n or more for an unknown id, -1 for a missing one).
    """
    n_docs = len(documents)
    codes, uniques = pd.factorize(pd.concat([documents["doc_id"], doc_claims["doc_id"]], ignore_index=True))
    if codes[n_docs - 1] != n_docs - 1:  # codes count up from 0 in order of first appearance
        missing = documents["doc_id"].isna().to_numpy()
        if missing.any():
            raise ValueError(f"`documents` row {show(documents.index[missing][0])}: doc_id is missing; every "
                             "document needs an id.")
        check_unique_column(documents, "doc_id", "documents")
    position = codes[n_docs:]
    if (position < 0).any():
        pos = int(np.flatnonzero(position < 0)[0])
        raise ValueError(f"`doc_claims` row {show(doc_claims.index[pos])}: doc_id is missing; every claim needs its "
                         f"document ({int((position < 0).sum())} row(s) affected).")
    unknown = position >= n_docs
    if unknown.any():
        names = list(uniques[pd.unique(position[unknown])[:5]])
        raise ValueError(f"`doc_claims` refers to unknown doc_id(s) {names}; every claim needs its document.")
    return position


def length_bins(n_tokens, *, bins: int = 3, edges=None, labels=None) -> pd.Series:
    """Assign documents to length bins: quantile bins by default (terciles), or explicit edges.

    Parameters
    ----------
    n_tokens : Series or DataFrame
        Token counts indexed by doc id, or a table with ``n_tokens`` (indexed by doc id).
    bins : int, default 3
        Number of equal-count bins (ignored when ``edges`` is given).
    edges : sequence of float, optional
        Increasing bin edges; the first bin includes its lower edge. Every document must fall inside.
    labels : sequence of str, optional
        Default ``("short", "medium", "long")`` for three bins, else ``bin1, bin2, ...``.

    Returns
    -------
    Series
        Ordered categorical of bin labels, indexed like the input.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.density import length_bins
    >>> length_bins(pd.Series([10, 20, 30, 40, 50, 60], index=list("abcdef"))).tolist()
    ['short', 'short', 'medium', 'medium', 'long', 'long']
    >>> length_bins(pd.Series([10, 60], index=["a", "b"]), edges=[0, 50, 100], labels=["s", "l"]).tolist()
    ['s', 'l']
    """
    return _length_bins(n_tokens, bins=bins, edges=edges, labels=labels, name="`n_tokens`")


def _length_bins(n_tokens, *, bins, edges, labels, name: str) -> pd.Series:
    counts = n_tokens["n_tokens"] if isinstance(n_tokens, pd.DataFrame) else n_tokens
    if not isinstance(counts, pd.Series):
        raise TypeError(f"`n_tokens` must be a Series or a table with 'n_tokens'; got {type(n_tokens).__name__}.")
    counts = pd.Series(_finite(counts, name, what="finite token counts"), index=counts.index, name=counts.name)
    if edges is not None:
        edges = np.asarray(edges, dtype=float)
        if edges.ndim != 1 or len(edges) < 2 or not np.all(np.diff(edges) > 0):
            raise ValueError(f"`edges` must be at least two increasing numbers; got {edges.tolist()}.")
        k = len(edges) - 1
    else:
        k = check_number(bins, "bins", low=1, integer=True)
    if labels is None:
        labels = ("short", "medium", "long") if k == 3 else tuple(f"bin{i + 1}" for i in range(k))
    labels = list(labels)
    if len(labels) != k:
        raise ValueError(f"`labels` must name the {k} bins; got {len(labels)} labels.")
    if edges is not None:
        cut = pd.cut(counts, edges, labels=labels, include_lowest=True)
        outside = cut.isna() & counts.notna()
        if outside.any():
            raise ValueError(f"document {show(counts.index[outside][0])} has {counts[outside].iloc[0]:g} tokens, outside "
                             f"the edges [{edges[0]:g}, {edges[-1]:g}].")
        return cut.cat.as_ordered().rename("length_bin")
    # Quantile edges on the lengths themselves: equal lengths always share a bin, whatever the row order.
    try:
        return pd.qcut(counts, k, labels=labels).cat.as_ordered().rename("length_bin")
    except ValueError:
        raise ValueError(f"the lengths do not split into {k} quantile bins (too many equal lengths; "
                         f"{counts.nunique()} distinct); pass explicit `edges`.") from None


def fd_star(doc_claims: pd.DataFrame, documents: pd.DataFrame, *, bins: int = 3, edges=None, labels=None,
            authority: Mapping[str, float] | None = None, tokenizer: Callable | None = None) -> pd.DataFrame:
    """FD*: raw density z-scored within length bins, times the source's authority weight.

    Parameters
    ----------
    doc_claims, documents, tokenizer
        As in :func:`fd_raw`; ``documents`` may carry ``source`` (the tier).
    bins, edges, labels
        As in :func:`length_bins`.
    authority : mapping of str to float, optional
        Weight per source, a finite number >= 0; sources not named get 1.0 (with a warning when
        ``authority`` is given).

    Returns
    -------
    DataFrame
        Indexed by ``doc_id``: ``source, n_tokens, n_claims, fd_raw, length_bin, z, authority, fd_star``.
        ``z`` uses the bin's mean and sample standard deviation (ddof=1). A bin with one document or no
        spread gets ``z = 0`` and a warning naming it.

        Dask tables give a lazy dask DataFrame, partitioned like ``documents``, whose ``.compute()`` equals
        this function on the whole tables (same bins, same floats): :func:`fd_raw` runs as for dask tables,
        the quantile edges are the exact ones :func:`length_bins` uses (from one value count of
        ``n_tokens``), and the bin means and deviations are computed as here, over the documents' ``fd_raw``
        in document order (one float and one bin per document travel to one task). The warnings are raised
        when computed, by the task (shown by the local scheduler; in the worker logs on a cluster).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.density import fd_star
    >>> docs = pd.DataFrame({"doc_id": list("abcd"), "n_tokens": [10, 10, 20, 20], "source": ["review", "news"] * 2})
    >>> claims = pd.DataFrame({"doc_id": list("abcd"), "prob_fact": [1.0, 0.5, 1.0, 0.2]})
    >>> fd_star(claims, docs, bins=2, authority={"review": 1.5, "news": 1.0})[["fd_raw", "length_bin", "z", "fd_star"]]
            fd_raw length_bin         z   fd_star
    doc_id
    a         0.10       bin1  0.707107  1.060660
    b         0.05       bin1 -0.707107 -0.707107
    c         0.05       bin2  0.707107  1.060660
    d         0.01       bin2 -0.707107 -0.707107
    """
    if _dask.is_dask(doc_claims) or _dask.is_dask(documents):
        return _fd_star_dask(doc_claims, documents, bins=bins, edges=edges, labels=labels, authority=authority,
                             tokenizer=tokenizer)
    documents = _documents(documents, unique_ids=False)
    table = _fd_raw(doc_claims, documents, tokenizer)
    source = documents["source"] if "source" in documents.columns else pd.Series("all", index=documents.index)
    table.insert(0, "source", source.array)
    return rescore(table, bins=bins, edges=edges, labels=labels, authority=authority)


def rescore(table: pd.DataFrame, *, bins: int = 3, edges=None, labels=None,
            authority: Mapping[str, float] | None = None) -> pd.DataFrame:
    """Redo the length-bin correction of an FD* table with other bins or authority weights.

    Needs only ``source``, ``n_tokens`` and ``fd_raw`` (no claims, no model), so exploring bin choices is
    cheap. :func:`fd_star` is :func:`fd_raw` followed by this.

    Parameters
    ----------
    table : DataFrame
        Indexed by doc id with ``source, n_tokens, fd_raw`` (e.g. an :func:`fd_star` output).
    bins, edges, labels, authority
        As in :func:`fd_star`.

    Returns
    -------
    DataFrame
        The :func:`fd_star` columns; a bin with one document or no spread gets ``z = 0`` and an
        :class:`~evalkit.EvalkitWarning` naming it, as in :func:`fd_star`.

    Examples
    --------
    >>> from evalkit import datasets, density
    >>> corpus = datasets.load_demo("fd")
    >>> table = density.fd_star(corpus["claims"], corpus["documents"])
    >>> density.rescore(table, bins=5)["length_bin"].nunique()
    5
    """
    table = check_dataframe(table, "table")
    check_columns(table, ["source", "n_tokens", "fd_raw"], "table")
    out = table.copy()
    if "n_claims" not in out.columns:
        out["n_claims"] = pd.NA
    out["length_bin"] = _length_bins(out["n_tokens"], bins=bins, edges=edges, labels=labels,
                                     name="`table` column 'n_tokens'")
    _finite(out["fd_raw"], "`table` column 'fd_raw'")
    grouped = out.groupby("length_bin", observed=True)["fd_raw"]
    mean, std, size = (grouped.transform(f).to_numpy(dtype=float) for f in ("mean", "std", "size"))
    degenerate = (size < 2) | ~(std > 0)
    if degenerate.any():
        names = sorted(pd.unique(out["length_bin"].astype(str).to_numpy()[degenerate]))
        warn(f"length bin(s) {names} hold a single document or no spread in fd_raw; their z is set to 0.")
    out["z"] = np.where(degenerate, 0.0, (out["fd_raw"].to_numpy(dtype=float) - mean) / np.where(degenerate, 1.0, std))
    weights = _authority(authority)
    codes, tiers = pd.factorize(out["source"])
    if authority is not None:
        unnamed = sorted(str(t) for t in tiers if t not in weights)
        if unnamed:
            warn(f"`authority` names no weight for source(s) {unnamed}; they get 1.0.")
    tier_weight = np.array([float(weights.get(t, 1.0)) for t in tiers] + [1.0])  # code -1 (missing source) -> 1.0
    out["authority"] = tier_weight[codes]
    out["fd_star"] = out["z"] * out["authority"]
    out.attrs["n_without_claims"] = int((out["n_claims"] == 0).sum()) if out["n_claims"].notna().all() else None
    return out[TABLE_COLUMNS]


def _fd_raw_part(claims: pd.DataFrame, documents: pd.DataFrame, tokenizer) -> pd.DataFrame:
    """fd_raw of one hash bucket: its claims and documents, each back in original order; keeps the key and source."""
    pos = _dask.POSITION
    claims = claims.sort_values(pos, kind="stable").drop(columns=pos)
    documents = documents.sort_values(pos, kind="stable")
    if documents.empty:
        if len(claims):
            unknown = list(pd.unique(claims["doc_id"])[:5])
            raise ValueError(f"`doc_claims` refers to unknown doc_id(s) {unknown}; every claim needs its document.")
        out = pd.DataFrame({"n_tokens": np.array([], dtype=float), "n_claims": np.array([], dtype=np.int64),
                            "fd_raw": np.array([], dtype=float)}, index=pd.Index(documents["doc_id"], name="doc_id"))
    else:
        out = fd_raw(claims, documents.drop(columns=pos), tokenizer=tokenizer)
    source = documents["source"] if "source" in documents.columns else pd.Series("all", index=documents.index)
    out.insert(0, "source", source.array)
    out[pos] = documents[pos].to_numpy()
    return out.reset_index()


def _fd_table_dask(doc_claims, documents, tokenizer):
    """doc_id, source, n_tokens, n_claims, fd_raw of dask tables, partitioned and ordered like ``documents``."""
    claims, docs = _dask.as_dask(doc_claims), _dask.as_dask(documents)
    check_columns(claims, ["doc_id", "prob_fact"], "doc_claims")
    check_columns(docs, ["doc_id"], "documents")
    columns = ["doc_id", *(c for c in ("n_tokens", "text", "source") if c in docs.columns)]
    claims = _dask.with_position(claims[["doc_id", "prob_fact"]])
    docs = _dask.with_position(docs[columns])
    meta = _fd_raw_part(claims._meta, docs._meta, tokenizer)
    claims, buckets = _dask.co_partition(claims, docs, "doc_id", max(claims.npartitions, docs.npartitions))
    table = _dask.dataframe().map_partitions(_fd_raw_part, claims, buckets, tokenizer, meta=meta, align_dataframes=False)
    return _dask.restore_order(table, docs.npartitions)


def _fd_raw_dask(doc_claims, documents, tokenizer):
    table = _fd_table_dask(doc_claims, documents, tokenizer)
    return table.map_partitions(lambda part: part.drop(columns="source").set_index("doc_id"),
                                meta=table._meta.drop(columns="source").set_index("doc_id"), clear_divisions=True)


def _quantile_edges(value_counts: pd.Series, k: int) -> np.ndarray:
    """The edges pandas.qcut puts at the quantiles of n_tokens, from its value count."""
    edges = _dask.quantiles_from_counts(value_counts, _dask.qcut_levels(k))
    if not np.all(np.diff(edges) > 0):
        raise ValueError(f"the lengths do not split into {k} quantile bins (too many equal lengths; "
                         f"{len(value_counts)} distinct); pass explicit `edges`.")
    return edges


def _bin_stats(parts: list[pd.DataFrame], sources, authority) -> pd.DataFrame:
    """Mean, std and size of fd_raw per length bin, computed as rescore does, over all documents in order."""
    stats = pd.concat(parts).groupby("length_bin", observed=True)["fd_raw"].agg(["mean", "std", "size"])
    degenerate = (stats["size"] < 2) | ~(stats["std"] > 0)
    if degenerate.any():
        warn(f"length bin(s) {sorted(map(str, stats.index[degenerate]))} hold a single document or no spread "
             "in fd_raw; their z is set to 0.")
    if authority is not None:
        unnamed = sorted(str(t) for t in pd.unique(np.concatenate(sources)) if t not in authority)
        if unnamed:
            warn(f"`authority` names no weight for source(s) {unnamed}; they get 1.0.")
    return stats.assign(degenerate=degenerate)


def _binned(part: pd.DataFrame, edges, labels) -> pd.DataFrame:
    bins = length_bins(part["n_tokens"].set_axis(part["doc_id"]), edges=edges, labels=labels)
    return pd.DataFrame({"length_bin": bins.to_numpy(), "fd_raw": part["fd_raw"].to_numpy()})


def _fd_star_part(part: pd.DataFrame, edges, labels, stats: pd.DataFrame, authority) -> pd.DataFrame:
    out = part.set_index("doc_id")
    out["length_bin"] = length_bins(out["n_tokens"], edges=edges, labels=labels)
    row = stats.reindex(out["length_bin"].astype(object))
    mean, std = row["mean"].to_numpy(dtype=float), row["std"].to_numpy(dtype=float)
    degenerate = row["degenerate"].to_numpy(dtype=bool)
    out["z"] = np.where(degenerate, 0.0, (out["fd_raw"].to_numpy(dtype=float) - mean) / np.where(degenerate, 1.0, std))
    weights = dict(authority or {})
    codes, tiers = pd.factorize(out["source"])
    tier_weight = np.array([float(weights.get(t, 1.0)) for t in tiers] + [1.0])
    out["authority"] = tier_weight[codes]
    out["fd_star"] = out["z"] * out["authority"]
    return out[TABLE_COLUMNS]


def _fd_star_dask(doc_claims, documents, *, bins, edges, labels, authority, tokenizer):
    """fd_star of dask tables (see its docstring): a lazy dask DataFrame."""
    import dask

    authority = None if authority is None else _authority(authority)  # checked now, as the pandas path does
    # Bin arguments are checked now, on a two-document stand-in.
    probe = length_bins(pd.Series([1.0, 2.0]), bins=bins, labels=labels) if edges is None else \
        length_bins(pd.Series([], dtype=float), edges=edges, labels=labels)
    labels = list(probe.cat.categories)
    table = _fd_table_dask(doc_claims, documents, tokenizer)
    # One graph of delayed partitions, so the shuffles above run once for the edges, the bin statistics and the
    # result (separately optimised dask expressions would each recompute them).
    parts = table.to_delayed()
    delayed = dask.delayed
    if edges is None:
        counts = [delayed(lambda part: part["n_tokens"].value_counts())(part) for part in parts]
        total = delayed(lambda counts: pd.concat(counts).groupby(level=0).sum())(counts)
        edges = delayed(_quantile_edges)(total, len(labels))
    binned = [delayed(_binned)(part, edges, labels) for part in parts]
    sources = [delayed(lambda part: pd.unique(part["source"].to_numpy(dtype=object)))(part) for part in parts] \
        if authority is not None else None
    stats = delayed(_bin_stats)(binned, sources, authority)
    no_stats = pd.DataFrame({"mean": [], "std": [], "size": [], "degenerate": []})
    meta = _fd_star_part(table._meta, np.arange(len(labels) + 1, dtype=float), labels, no_stats, None)
    out = [delayed(_fd_star_part)(part, edges, labels, stats, authority) for part in parts]
    return _dask.dataframe().from_delayed(out, meta=meta, verify_meta=False)


def _authority(authority) -> dict:
    """Authority weights by source: each a finite number >= 0."""
    if authority is None:
        return {}
    if not isinstance(authority, Mapping):
        raise TypeError(f"`authority` must be a mapping of source to weight; got {type(authority).__name__}.")
    for source, weight in authority.items():
        if isinstance(weight, bool) or not isinstance(weight, (int, float, np.integer, np.floating)):
            raise TypeError(f"`authority` weight for source {show(source)} must be a number; got {show(weight)}.")
        if not np.isfinite(weight) or weight < 0:
            raise ValueError(f"`authority` weight for source {show(source)} must be a finite number >= 0; "
                             f"got {show(weight)}.")
    return dict(authority)


def _pearson_z_of_sums(sums: np.ndarray) -> np.ndarray:
    """Fisher's z of Pearson's r from sums over rows of (1, x, y, x**2, y**2, x*y)."""
    n, sx, sy, sxx, syy, sxy = sums.T
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (sxy - sx * sy / n) / np.sqrt((sxx - sx**2 / n) * (syy - sy**2 / n))
        return np.arctanh(np.clip(r, -1.0, 1.0))


#: A note and a warning for the intervals measured not to hold (the coverage harness, ``python
#: benchmarks/bench_coverage.py --function density.length_bias``).
_PEARSON_NOTE = ("Pearson's r on skewed, heavy-tailed lengths and densities: no interval measured holds (the studentized "
                 "one covered 0.91-0.93 at 20 to 100 documents of log-normal length, the Fisher one 0.90-0.92 on the "
                 "demo corpus, where 0.95 is claimed; its p-value rejected 7.6% of independent samples at 0.05); "
                 "method='spearman' holds")
_TIES_NOTE = ("{share:.0%} of the documents share one {side} value: the Bonett-Wright variance assumes few ties (with "
              "15% of fd_raw at 0 it covered 0.92 at 100 documents where 0.95 is claimed); interval='studentized' "
              "holds there")


def length_bias(table: pd.DataFrame, *, columns=("fd_raw", "fd_star"), method: str = "spearman",
                confidence_level: float = 0.95, interval: str = "studentized", n_resamples: int = 1000,
                rng=None) -> pd.DataFrame:
    """Correlation between document length and density (Spearman's by default), before and after the correction.

    A length bias is a density that falls (or rises) with length, whatever the shape of that relation, and
    lengths are log-normal, densities heavy-tailed: the default measures it by Spearman's rank correlation,
    whose intervals hold where Pearson's do not.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`fd_star` (``n_tokens`` and the ``columns``).
    columns : sequence of str, default ("fd_raw", "fd_star")
    method : {"spearman", "pearson"}, default "spearman"
        The coefficient: Spearman's rho (:func:`scipy.stats.spearmanr`, ties at mid-ranks) or Pearson's r
        (:func:`scipy.stats.pearsonr`).
    confidence_level : float, default 0.95
    interval : {"studentized", "fisher"}, default "studentized"
        ``"studentized"``: a bootstrap-t interval on Fisher's z scale over documents, each resample's z
        divided by its own jackknife standard error, then back to the coefficient (for Spearman, of the
        Pearson correlation of the documents' ranks, held fixed across resamples). ``"fisher"``: the
        normal-theory interval ``tanh(z -/+ q sqrt(f / (n - 3)))``, with ``f = 1`` for Pearson (as
        :meth:`scipy.stats.PearsonRResult.confidence_interval`) and the Bonett & Wright (2000) variance
        ``f = 1 + rho**2 / 2`` for Spearman. Coverage of the 95% intervals, resampling the demo corpus,
        HealthFC passages and log-normal lengths with heavy-tailed densities (with and without 15% or 30%
        of documents at ``fd_raw = 0``), at 20 to 200 documents (the coverage harness: ``python
        benchmarks/bench_coverage.py --function density.length_bias``, 1000 samples a cell): Spearman
        studentized 0.93-0.96, everywhere within Monte Carlo error of 0.95; Spearman Fisher 0.94-0.97
        without ties, down to 0.92 with 15% of ``fd_raw = 0``; Pearson studentized down to 0.91 on log-normal
        lengths and Pearson Fisher 0.90-0.92 on the demo corpus (0.98-1.00 on log-normal lengths: too wide).
        An interval known not to hold says so in ``note``, with an :class:`~evalkit.EvalkitWarning`:
        every Pearson interval, and a Spearman Fisher interval where 10% or more of the documents share one
        length or one density.
    n_resamples : int, default 1000
        For the studentized interval; 0 skips the interval.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DataFrame
        Indexed by measure: ``n, r, ci_low, ci_high, interval, note, p_val, method`` over the documents
        with both values: ``r`` is the coefficient ``method`` names, ``p_val`` its two-sided p-value of no
        correlation from scipy (Spearman: the t approximation, whose size measured 0.04-0.07 at 0.05 on the
        designs above, ties included; Pearson's reached 0.076 at 50 log-normal lengths), ``note`` empty unless the interval is known not to hold. A
        corrected FD* should show no significant length correlation. With fewer than 3 such documents, or a
        constant side, the row is NaN with an :class:`~evalkit.EvalkitWarning`.

    Examples
    --------
    >>> from evalkit import datasets, density
    >>> corpus = datasets.load_demo("fd")
    >>> table = density.fd_star(corpus["claims"], corpus["documents"])
    >>> bias = density.length_bias(table, rng=0)
    >>> bias[["n", "r", "p_val"]].round(2)
               n     r  p_val
    measure
    fd_raw   600 -0.60   0.00
    fd_star  600 -0.06   0.16
    >>> bool(bias.loc["fd_raw", "ci_high"] < 0 < bias.loc["fd_star", "ci_high"])
    True
    """
    table = check_dataframe(table, "table")
    if isinstance(columns, str) or not all(isinstance(c, str) for c in np.atleast_1d(np.asarray(columns, dtype=object))):
        raise TypeError(f"`columns` must be a sequence of column names; got {columns!r}.")
    check_columns(table, ["n_tokens", *columns], "table")
    check_option(method, ("spearman", "pearson"), "method")
    check_option(interval, ("studentized", "fisher"), "interval")
    confidence_level = check_level(confidence_level)
    n_resamples = check_number(n_resamples, "n_resamples", low=0, integer=True)
    rng = check_rng(rng)
    table = table.loc[sorted_ids(table.index)] if table.index.is_unique else table  # the bootstrap's order: sorted ids
    length = _finite(table["n_tokens"], "`table` column 'n_tokens'", allow_nan=True)
    rows, undefined, lost, notes = {}, [], [], {}
    for column in columns:
        density = _finite(table[column], f"`table` column {column!r}", allow_nan=True)
        both = ~np.isnan(length) & ~np.isnan(density)  # documents without one of the two are left out
        x, y = length[both], density[both]
        row = {"n": int(both.sum()), "r": np.nan, "ci_low": np.nan, "ci_high": np.nan, "interval": "none",
               "note": "", "p_val": np.nan, "method": method}
        if len(x) < 3 or np.ptp(x) == 0 or np.ptp(y) == 0:
            undefined.append(f"{column!r} ({len(x)} documents" + (")" if len(x) < 3 else ", one side constant)"))
            rows[column] = row
            continue
        res = stats.spearmanr(x, y) if method == "spearman" else stats.pearsonr(x, y)
        r = float(res.statistic)
        if method == "spearman":  # Spearman's rho is Pearson's r of the mid-ranks
            x, y = stats.rankdata(x), stats.rankdata(y)
        low, high, name, note = _length_interval(x, y, r, method, interval, confidence_level, n_resamples, rng)
        if interval == "fisher" and len(x) == 3:
            lost.append(f"{column!r} (3 documents)")
        elif name != "none" and not (np.isfinite(low) and np.isfinite(high)):
            lost.append(repr(column))
        if note:
            notes.setdefault(note, []).append(repr(column))
        row.update(r=r, ci_low=low, ci_high=high, interval=name, note=note, p_val=float(res.pvalue))
        rows[column] = row
    if undefined:
        warn(f"the length correlation is undefined (NaN) for {', '.join(undefined)}: it needs 3 or more "
             "documents whose lengths and densities both vary.")
    if lost and interval == "fisher":
        warn(f"the Fisher-z interval is NaN for {', '.join(lost)}: it needs 4 or more documents.")
    elif lost:
        warn(f"the studentized bootstrap interval is NaN for {', '.join(lost)}: some resample of the documents "
             "has a constant side (too few documents, or lengths or densities that rarely vary); "
             "interval='fisher' gives the normal-theory interval.")
    for note, named in notes.items():
        warn(f"the length-bias interval of {', '.join(named)} may cover less than claimed (note): {note}.")
    out = pd.DataFrame.from_dict(rows, orient="index", columns=["n", "r", "ci_low", "ci_high", "interval", "note",
                                                                 "p_val", "method"])
    out = out.astype({"n": "int64", "r": float, "ci_low": float, "ci_high": float, "p_val": float})
    out.index.name = "measure"
    return out


def _length_interval(x, y, r: float, method: str, interval: str, confidence_level: float, n_resamples: int, rng):
    """The interval of one length correlation (x, y: the documents' lengths and densities, ranked for Spearman): its
    ends, its name and the note of an interval known not to hold there."""
    note = _PEARSON_NOTE if method == "pearson" else ""
    if interval == "fisher" and len(x) == 3:  # the variance of z has n - 3 = 0 in its denominator
        return np.nan, np.nan, "none", ""
    if interval == "fisher":
        half = z_value(confidence_level) * np.sqrt(z_variance_factor(method, r, len(x)) / (len(x) - 3))
        z = np.arctanh(r)
        if method == "spearman":
            share, side = max((np.unique(v, return_counts=True)[1].max() / len(v), s) for v, s in ((x, "length"), (y, "density")))
            note = _TIES_NOTE.format(share=share, side=side) if share >= 0.10 else ""
        name = "Fisher z, Bonett-Wright variance" if method == "spearman" else "Fisher z (normal theory)"
        return float(np.tanh(z - half)), float(np.tanh(z + half)), name, note
    if n_resamples == 0:
        return np.nan, np.nan, "none", ""
    xs, ys = ((v - v.mean()) / v.std() for v in (x, y))  # r is unchanged; the sums stay well scaled
    per_row = np.column_stack([np.ones(len(xs)), xs, ys, xs * xs, ys * ys, xs * ys])
    z_low, z_high = studentized_over_items(_pearson_z_of_sums, per_row, n_resamples, confidence_level, rng)
    low, high = float(np.tanh(z_low)), float(np.tanh(z_high))
    return low, high, "studentized bootstrap on Fisher z", note if np.isfinite(low) and np.isfinite(high) else ""


def tier_means(table: pd.DataFrame, *, by: str = "source", column: str = "fd_star") -> pd.DataFrame:
    """Mean, spread and count of a density column per source tier.

    Returns
    -------
    DataFrame
        Indexed by tier: ``n`` (documents with a value), ``mean`` and ``std`` (ddof=1). A tier with one
        document has NaN std, with an :class:`~evalkit.EvalkitWarning`; documents without a tier or a value
        are left out.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.density import tier_means
    >>> tier_means(pd.DataFrame({"source": ["a", "a", "b", "b"], "fd_star": [1.0, 0.0, -1.0, -2.0]}))
            n  mean       std
    source
    a       2   0.5  0.707107
    b       2  -1.5  0.707107
    """
    table = check_dataframe(table, "table")
    check_columns(table, [by, column], "table")
    values = pd.Series(_finite(table[column], f"`table` column {column!r}", allow_nan=True), index=table.index)
    out = values.groupby(table[by].to_numpy(), sort=True).agg(["count", "mean", "std"]).rename(columns={"count": "n"})
    out = out[out["n"] > 0].rename_axis(by)
    if out.empty:
        raise ValueError(f"`table` has no document with both a {by!r} and a {column!r} value.")
    single = out.index[out["n"] < 2]
    if len(single):
        warn(f"tier(s) {list(map(str, single))[:5]} hold a single document: their std is undefined (NaN).")
    return out


def tier_spread(table: pd.DataFrame, *, by: str = "source", column: str = "fd_star", threshold: float = 0.10) -> pd.DataFrame:
    """Spread (standard deviation, ddof=0) of the tier means: the "ghost audit".

    A binned correction can erase the very difference between source tiers it should preserve. A spread
    of at least ``threshold`` (0.10) means the signal did not collapse.

    Returns
    -------
    DataFrame
        One row: ``n_tiers, spread, threshold, collapsed``.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.density import tier_spread
    >>> tier_spread(pd.DataFrame({"source": ["a", "b"], "fd_star": [0.5, -0.5]}))
       n_tiers  spread  threshold  collapsed
    0        2     0.5        0.1      False
    """
    threshold = check_number(threshold, "threshold", low=0.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)  # a tier's undefined std does not enter the spread of the means
        means = tier_means(table, by=by, column=column)["mean"]
    spread = float(means.std(ddof=0))
    return pd.DataFrame([{"n_tiers": len(means), "spread": spread, "threshold": threshold, "collapsed": spread < threshold}])


# --------------------------------------------------------------------------------------------------
# prob_fact without a model
# --------------------------------------------------------------------------------------------------
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\"'])")
_NUMBER = re.compile(r"\d")
_UNIT = re.compile(r"\d\s*(?:%|percent|mg|g\b|kg|µg|mcg|ml|mmhg|mmol|years?|months?|weeks?|days?|hours?|patients|"
                   r"participants|people|adults|children|studies|trials)", re.IGNORECASE)
_EFFECT = re.compile(r"\b(?:OR|RR|HR|SMD|MD|NNT|CI)\b|(?i:\b(?:odds ratio|relative risk|hazard ratio|"
                     r"confidence interval|p\s*[<=>]\s*0?\.\d)|95\s*%)")
_MEASURE = re.compile(r"\b(?:randomi[sz]ed|placebo|meta-analys[ie]s|systematic review|cohort|trial|controlled|"
                      r"double-blind|incidence|mortality|prevalence|sensitivity|specificity)\b", re.IGNORECASE)
_HEDGE = re.compile(r"\b(?:may|might|could|possibly|perhaps|suggests?|appears?|seems?|unclear|believe|some)\b", re.IGNORECASE)


def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ., ! or ? followed by space and a capital, digit or quote.

    Examples
    --------
    >>> from evalkit.density import split_sentences
    >>> split_sentences("BP fell by 12 mmHg. Patients were 60 years old! Why? 3 trials agreed.")
    ['BP fell by 12 mmHg.', 'Patients were 60 years old!', 'Why?', '3 trials agreed.']
    """
    return [s.strip() for s in _SENTENCE.split(text.strip()) if s.strip()] if isinstance(text, str) else []


def estimate_prob_fact(claims) -> pd.Series:
    """A model-free ``prob_fact``: how specific and checkable a sentence is.

    Start at 0.2; add 0.25 if it has a number, 0.15 for a number with a unit or a count of people or
    studies, 0.2 for an effect size or statistical term (OR, RR, HR, CI, p-value, 95 %), and 0.1 for a named
    study design or measure (randomised, placebo, meta-analysis, cohort, mortality...); subtract 0.15 for
    hedging (may, might, suggests...); clip to [0, 1]. Questions score 0. This is a documented heuristic,
    meant for when no model is at hand, not a calibrated probability.

    Parameters
    ----------
    claims : Series or sequence of str

    Returns
    -------
    Series of float in [0, 1]

    Examples
    --------
    >>> from evalkit.density import estimate_prob_fact
    >>> estimate_prob_fact(["Aspirin cut mortality by 12% (RR 0.88, 95% CI 0.80-0.97) in 4,000 patients.",
    ...                     "Exercise may help some people feel better."]).round(2).tolist()
    [0.9, 0.05]
    """
    if isinstance(claims, str) or not hasattr(claims, "__iter__"):
        raise TypeError(f"`claims` must be a Series or sequence of str; got {type(claims).__name__}.")
    series = claims if isinstance(claims, pd.Series) else pd.Series(list(claims))
    text = series.fillna("").astype(str)
    score = (0.2 + 0.25 * text.str.contains(_NUMBER) + 0.15 * text.str.contains(_UNIT)
             + 0.2 * text.str.contains(_EFFECT) + 0.1 * text.str.contains(_MEASURE) - 0.15 * text.str.contains(_HEDGE))
    score = score.where(~text.str.rstrip().str.endswith("?"), 0.0)
    return score.clip(0.0, 1.0).astype(float).rename("prob_fact")


def claims_from_text(documents: pd.DataFrame) -> pd.DataFrame:
    """Offline claims: every sentence of every document, scored by :func:`estimate_prob_fact`.

    Returns
    -------
    DataFrame
        ``doc_id, claim, prob_fact`` (documents without text contribute no row).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.density import claims_from_text
    >>> claims_from_text(pd.DataFrame({"doc_id": ["d1"], "text": ["Dose was 5 mg. It may help."]}))
      doc_id           claim  prob_fact
    0     d1  Dose was 5 mg.       0.60
    1     d1     It may help.       0.05
    """
    documents = _documents(documents)
    check_columns(documents, ["text"], "documents")
    rows = [(doc, sentence) for doc, text in zip(documents["doc_id"], documents["text"], strict=True) for sentence in split_sentences(text)]
    out = pd.DataFrame(rows, columns=["doc_id", "claim"])
    out["prob_fact"] = estimate_prob_fact(out["claim"]).to_numpy()
    return out
