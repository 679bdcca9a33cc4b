"""Retrieval conditions compared per query: cosine, BM25 (bm25s) and the FD*-hybrid rerank.

Tables: documents ``doc_id, text, source``; queries ``query_id, text``; qrels ``query_id, doc_id, relevance``;
runs ``query_id, condition, rank, doc_id, score``. Embeddings, when used, are arrays whose rows align with
the documents and queries tables. The hybrid condition takes the cosine top ``candidates`` (20) and reranks
them by ``alpha * cos + (1 - alpha) * fd_star_rescaled`` (alpha = 0.5), FD* min-max rescaled to [0, 1]
over the corpus.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import sparse, stats
from scipy.sparse.linalg import svds

from evalkit import _dask, _display, _stats
from evalkit._stats import ADJUSTMENTS, adjust_p_values
from evalkit._validation import (
    check_columns,
    check_dataframe,
    check_level,
    check_number,
    check_option,
    check_rng,
    check_unique_column,
    show,
    warn,
)

__all__ = [
    "search",
    "evaluate",
    "compare_conditions",
    "coverage",
    "CoverageResult",
    "keywords",
    "lsa_embeddings",
]

CONDITIONS = ("cosine", "bm25", "hybrid")
BM25_METHODS = ("robertson", "atire", "bm25l", "bm25+", "lucene")
RUN_COLUMNS = ["query_id", "condition", "rank", "doc_id", "score"]
_WORD = re.compile(r"(?u)\b\w\w+\b")
# Common English function words (bm25s's English list plus a few), used for keywords and LSA.
_STOP = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there these they "
    "this to was will with what which who whom does do did can could has have had from than was were been being "
    "its our your we you he she his her them about after before over under more most other some only also".split()
)


def _tables(documents, queries) -> tuple[pd.DataFrame, pd.DataFrame]:
    documents = check_dataframe(documents, "documents")
    queries = check_dataframe(queries, "queries")
    check_columns(documents, ["doc_id"], "documents")
    check_columns(queries, ["query_id"], "queries")
    if documents.empty:
        raise ValueError("`documents` is empty: there is no corpus to search.")
    if queries.empty:
        raise ValueError("`queries` is empty.")
    check_unique_column(documents, "doc_id", "documents")
    check_unique_column(queries, "query_id", "queries")
    return documents, queries


def _unit_rows(matrix, n_rows: int, name: str) -> np.ndarray:
    if matrix is None:
        row = {"doc_embeddings": "document", "query_embeddings": "query"}.get(name, "row of its table")
        raise ValueError(f"`{name}` is required for this condition (one row per {row}).")
    try:
        array = np.asarray(matrix, dtype=np.float32)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a 2-D array of numbers (one row per row of its table); got values that are "
                        "not numbers.") from None
    if array.ndim != 2 or array.shape[0] != n_rows:
        raise ValueError(f"`{name}` must be a 2-D array with {n_rows} rows (aligned with its table); got shape {array.shape}.")
    norms = np.linalg.norm(array, axis=1, keepdims=True)
    if (norms == 0).any() or not np.isfinite(array).all():
        raise ValueError(f"`{name}` has a zero or non-finite row ({int(np.flatnonzero((norms == 0).ravel() | ~np.isfinite(array).all(axis=1))[0])}).")
    return array / norms


def _top_k(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Indices and scores of the k best per row, best first; ties keep corpus order."""
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k] if k < scores.shape[1] else np.tile(np.arange(scores.shape[1]), (len(scores), 1))
    part_scores = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((part, -part_scores), axis=1)
    idx = np.take_along_axis(part, order, axis=1)
    return idx, np.take_along_axis(scores, idx, axis=1)


def _cosine_top(doc_vectors: np.ndarray, query_vectors: np.ndarray, k: int, batch: int = 256):
    indices, scores = [], []
    for start in range(0, len(query_vectors), batch):
        sims = query_vectors[start:start + batch] @ doc_vectors.T
        idx, sc = _top_k(sims, k)
        indices.append(idx)
        scores.append(sc)
    return np.vstack(indices), np.vstack(scores)


def _runs(queries, documents, idx, scores, condition) -> pd.DataFrame:
    n_q, k = idx.shape
    return pd.DataFrame({
        "query_id": np.repeat(queries["query_id"].to_numpy(), k),
        "condition": condition,
        "rank": np.tile(np.arange(1, k + 1), n_q),
        "doc_id": documents["doc_id"].to_numpy()[idx.ravel()],
        "score": scores.ravel().astype(float),
    })


def _fd_rescaled(fd, documents) -> np.ndarray:
    if fd is None:
        raise ValueError("`fd` is required for the hybrid condition: FD* per doc_id (a Series or fd_star's table).")
    if _dask.is_dask(fd):  # only the corpus's rows are computed; min and max are then taken over them here
        fd = _dask.compute_rows(fd, documents["doc_id"])
    values = fd["fd_star"] if isinstance(fd, pd.DataFrame) else fd
    if not isinstance(values, pd.Series):
        raise TypeError(f"`fd` must be a Series indexed by doc_id or a table with 'fd_star'; got {type(fd).__name__}.")
    if not pd.api.types.is_numeric_dtype(values):
        raise TypeError(f"`fd` must hold numbers (FD* per doc_id); got dtype {values.dtype}.")
    aligned = values.reindex(documents["doc_id"].to_numpy())
    if aligned.isna().any():
        missing = documents["doc_id"].to_numpy()[aligned.isna().to_numpy()][:5].tolist()
        raise ValueError(f"`fd` has no FD* for doc_id(s) {missing}; the hybrid needs one for every document.")
    if not np.isfinite(aligned.to_numpy(dtype=float)).all():
        infinite = documents["doc_id"].to_numpy()[~np.isfinite(aligned.to_numpy(dtype=float))][:5].tolist()
        raise ValueError(f"`fd` has an infinite FD* for doc_id(s) {infinite}; the min-max rescaling needs finite values.")
    lo, hi = float(aligned.min()), float(aligned.max())
    return np.zeros(len(aligned)) if hi == lo else ((aligned - lo) / (hi - lo)).to_numpy(dtype=float)


def search(documents: pd.DataFrame, queries: pd.DataFrame, *, condition: str, k: int = 10, doc_embeddings=None,
           query_embeddings=None, embed=None, fd=None, candidates: int = 20, alpha: float = 0.5, k1: float = 1.5, b: float = 0.75,
           method: str = "lucene", stopwords="en") -> pd.DataFrame:
    """Run one retrieval condition for every query.

    Parameters
    ----------
    documents : DataFrame
        ``doc_id`` and, for BM25, ``text``.
    queries : DataFrame
        ``query_id`` and, for BM25, ``text``.
    condition : {"cosine", "bm25", "hybrid"}
    k : int, default 10
        Documents returned per query (at most the corpus size).
    doc_embeddings, query_embeddings : array, optional
        Row-aligned with ``documents`` / ``queries``; required for cosine and hybrid. Any embedding works,
        e.g. from your model, or :func:`lsa_embeddings` when there is none.
    embed : callable, optional
        ``list of str -> 2-D array``, any embedding model (e.g. a sentence-transformers ``model.encode``);
        used for whichever of the two embeddings is not given, on the ``text`` columns.
    fd : Series or DataFrame, optional
        FD* per doc id (:func:`evalkit.density.fd_star` output or its ``fd_star`` column); for hybrid. A dask
        table or Series (e.g. ``fd_star`` of dask tables) works too: only the rows of ``documents`` are
        computed, and the result equals the pandas one.
    candidates : int, default 20
        Cosine candidates the hybrid reranks (at least ``k``).
    alpha : float, default 0.5
        Weight of the cosine in the hybrid score.
    k1, b, method, stopwords
        Passed to :class:`bm25s.BM25` and :func:`bm25s.tokenize`.

    Every option is checked whatever the condition, so a wrong value fails even where the condition does
    not use it (one set of options can then serve all three conditions).

    Returns
    -------
    DataFrame
        The runs table ``query_id, condition, rank, doc_id, score`` (rank 1 = best).

    Warns
    -----
    EvalkitWarning
        BM25 queries with no token left after tokenization (empty, or only stopwords): they score 0 for
        every document, so their ranking is corpus order.

    Raises
    ------
    ValueError
        An option out of range, BM25 over documents whose text is empty for all of them, or an infinite FD*.

    Examples
    --------
    >>> from evalkit import datasets, density, retrieval
    >>> corpus = datasets.load_demo("fd")
    >>> fd = density.fd_star(corpus["claims"], corpus["documents"])
    >>> runs = retrieval.search(corpus["documents"], corpus["queries"], condition="hybrid", k=5, fd=fd,
    ...                         doc_embeddings=corpus["doc_embeddings"], query_embeddings=corpus["query_embeddings"])
    >>> runs.shape, list(runs.columns)
    ((250, 5), ['query_id', 'condition', 'rank', 'doc_id', 'score'])
    """
    documents, queries = _tables(documents, queries)
    check_option(condition, CONDITIONS, "condition")
    k = check_number(k, "k", low=1, integer=True)
    if k > len(documents):
        raise ValueError(f"`k`={k} is larger than the corpus ({len(documents)} documents).")
    # Options are checked whatever the condition: a typo must not pass because this condition ignores it.
    candidates = check_number(candidates, "candidates", low=1, integer=True)
    alpha = check_number(alpha, "alpha", low=0.0, high=1.0)
    check_number(k1, "k1", low=0.0)
    check_number(b, "b", low=0.0, high=1.0)
    check_option(method, BM25_METHODS, "method")
    if fd is not None and not isinstance(fd, (pd.Series, pd.DataFrame)) and not _dask.is_dask(fd):
        raise TypeError(f"`fd` must be a Series indexed by doc_id or a table with 'fd_star'; got {type(fd).__name__}.")
    if embed is not None and not callable(embed):
        raise TypeError(f"`embed` must be a callable (list of str -> 2-D array); got {type(embed).__name__}.")
    if condition == "bm25":
        return _bm25(documents, queries, k=k, k1=k1, b=b, method=method, stopwords=stopwords)
    if embed is not None:
        if doc_embeddings is None:
            check_columns(documents, ["text"], "documents")
            doc_embeddings = embed(documents["text"].fillna("").tolist())
        if query_embeddings is None:
            check_columns(queries, ["text"], "queries")
            query_embeddings = embed(queries["text"].fillna("").tolist())
    docs = _unit_rows(doc_embeddings, len(documents), "doc_embeddings")
    qs = _unit_rows(query_embeddings, len(queries), "query_embeddings")
    if docs.shape[1] != qs.shape[1]:
        raise ValueError(f"document and query embeddings differ in width: {docs.shape[1]} vs {qs.shape[1]}.")
    if condition == "cosine":
        idx, scores = _cosine_top(docs, qs, k)
        return _runs(queries, documents, idx, scores, "cosine")
    if candidates < k:
        raise ValueError(f"`candidates` must be at least `k`={k} for the hybrid; got {candidates}.")
    fd_scaled = _fd_rescaled(fd, documents).astype(np.float32)
    cand_idx, cand_cos = _cosine_top(docs, qs, min(candidates, len(documents)))
    combined = alpha * cand_cos + (1 - alpha) * fd_scaled[cand_idx]
    order, scores = _top_k(combined, k)
    return _runs(queries, documents, np.take_along_axis(cand_idx, order, axis=1), scores, "hybrid")


def _bm25(documents, queries, *, k, k1, b, method, stopwords) -> pd.DataFrame:
    import bm25s

    check_columns(documents, ["text"], "documents")
    check_columns(queries, ["text"], "queries")
    corpus_tokens = bm25s.tokenize(documents["text"].fillna("").tolist(), stopwords=stopwords, show_progress=False)
    if not corpus_tokens.vocab or not any(len(doc) for doc in corpus_tokens.ids):
        raise ValueError("`documents` has no word to index: every text is empty (or only stopwords), so BM25 "
                         "cannot score anything.")
    retriever = bm25s.BM25(k1=k1, b=b, method=method)
    retriever.index(corpus_tokens, show_progress=False)
    query_tokens = bm25s.tokenize(queries["text"].fillna("").tolist(), stopwords=stopwords, return_ids=False,
                                  show_progress=False)
    # Scores come from bm25s; the top k is chosen here, among the documents that share a term with the query
    # first (numpy's argpartition slows down sharply on the many tied zeros of a full score vector), with
    # ties broken by corpus order so ranks are reproducible.
    idx = np.empty((len(queries), k), dtype=np.int64)
    scores = np.empty((len(queries), k), dtype=np.float64)
    empty = [q for q, tokens in zip(queries["query_id"], query_tokens, strict=True) if not tokens]
    if empty:
        warn(f"{len(empty)} query(ies) have no token left after tokenization (empty or only stopwords), "
                      f"e.g. query_id {empty[:3]}: they score 0 for every document and are ranked in corpus order.")
    for row, tokens in enumerate(query_tokens):
        all_scores = retriever.get_scores(tokens) if tokens else np.zeros(len(documents))
        nonzero = np.flatnonzero(all_scores > 0)
        if len(nonzero) >= k:
            top, top_scores = _top_k(all_scores[nonzero][None, :], k)
            idx[row], scores[row] = nonzero[top[0]], top_scores[0]
        else:
            best = nonzero[np.lexsort((nonzero, -all_scores[nonzero]))]
            rest = np.setdiff1d(np.arange(len(all_scores)), best, assume_unique=True)[: k - len(best)]
            idx[row] = np.concatenate([best, rest])
            scores[row] = all_scores[idx[row]]
    return _runs(queries, documents, idx, scores, "bm25")


def _relevance(qrels: pd.DataFrame) -> pd.Series:
    """Graded relevance by ``(query_id, doc_id)``: finite numbers >= 0, else ValueError/TypeError naming the pair."""
    values = qrels["relevance"]
    if pd.api.types.is_bool_dtype(values):
        values = values.astype(float)
    numeric = pd.to_numeric(values, errors="coerce") if not pd.api.types.is_numeric_dtype(values) else values
    if (numeric.isna() & values.notna()).any():
        bad = values[numeric.isna() & values.notna()].iloc[0]
        raise TypeError(f"`qrels` column 'relevance' must hold numbers (graded relevance, 0 = not relevant); got "
                        f"{show(bad)}.")
    numeric = numeric.astype(float)
    bad = ~np.isfinite(numeric.to_numpy()) | (numeric.to_numpy() < 0)
    if bad.any():
        row = qrels[bad].iloc[0]
        raise ValueError(f"`qrels` column 'relevance' must be a finite number >= 0 (graded relevance, 0 = not relevant; "
                         f"leave an unjudged pair out); got {show(numeric[bad].iloc[0])} for query_id "
                         f"{show(row['query_id'])}, doc_id {show(row['doc_id'])}.")
    return pd.Series(numeric.to_numpy(), index=pd.MultiIndex.from_frame(qrels[["query_id", "doc_id"]]), name="relevance")


def evaluate(runs: pd.DataFrame, qrels: pd.DataFrame, *, k: int = 10, documents: pd.DataFrame | None = None,
             tier: str = "source") -> pd.DataFrame:
    """Per-query metrics of each condition against relevance judgements.

    Parameters
    ----------
    runs : DataFrame
        ``query_id, condition, rank, doc_id`` (several conditions may be stacked).
    qrels : DataFrame
        ``query_id, doc_id, relevance`` (graded, finite and >= 0; relevance > 0 counts as relevant). A
        negative, missing or infinite relevance is refused, naming the pair: nDCG's gains ``2**rel - 1``
        are defined for grades >= 0 only.
    k : int, default 10
    documents : DataFrame, optional
        With a ``tier`` column: adds the share of each tier among the top k (``share_<tier>``).

    Returns
    -------
    DataFrame
        One row per query and condition: ``query_id, condition, n_relevant, precision, recall, ndcg, mrr``
        (at k; nDCG with gains ``2**rel - 1``; MRR over the run's depth), then the tier shares. Queries with
        no relevant document get NaN recall, nDCG and MRR, with an :class:`~evalkit.EvalkitWarning` counting them.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.retrieval import evaluate
    >>> runs = pd.DataFrame({"query_id": "q", "condition": "bm25", "rank": [1, 2], "doc_id": ["x", "y"]})
    >>> qrels = pd.DataFrame({"query_id": ["q"], "doc_id": ["y"], "relevance": [1]})
    >>> evaluate(runs, qrels, k=2)[["precision", "recall", "ndcg", "mrr"]].round(4).iloc[0].tolist()
    [0.5, 1.0, 0.6309, 0.5]
    """
    runs = check_dataframe(runs, "runs")
    qrels = check_dataframe(qrels, "qrels")
    check_columns(runs, ["query_id", "condition", "rank", "doc_id"], "runs")
    check_columns(qrels, ["query_id", "doc_id", "relevance"], "qrels")
    k = check_number(k, "k", low=1, integer=True)
    rel = _relevance(qrels)
    if not rel.index.is_unique:
        raise ValueError("`qrels` lists a (query_id, doc_id) pair more than once.")
    ranked = runs.sort_values(["condition", "query_id", "rank"], kind="stable")
    ranked = ranked.assign(rel=rel.reindex(pd.MultiIndex.from_frame(ranked[["query_id", "doc_id"]])).fillna(0.0).to_numpy())
    ranked["pos"] = ranked.groupby(["condition", "query_id"]).cumcount() + 1
    top = ranked[ranked["pos"] <= k]
    positive = rel[rel > 0]
    n_relevant = positive.groupby(level="query_id").size()
    # the gain 2 ** rel - 1 as expm1(rel ln 2): exact for tiny positive relevance, where 2 ** rel - 1 rounds to 0 (0 / 0)
    ideal = positive.groupby(level="query_id").apply(
        lambda g: float(np.sum(np.expm1(np.log(2.0) * np.sort(g.to_numpy())[::-1][:k])
                               / np.log2(np.arange(2, min(k, len(g)) + 2)))))
    gains = np.expm1(np.log(2.0) * top["rel"]) / np.log2(top["pos"] + 1)
    keys = ["condition", "query_id"]
    out = pd.DataFrame({
        "hits": (top["rel"] > 0).groupby([top["condition"], top["query_id"]]).sum(),
        "dcg": gains.groupby([top["condition"], top["query_id"]]).sum(),
    })
    first = ranked[ranked["rel"] > 0].groupby(keys)["pos"].min()
    out = out.join(first.rename("first"), how="left").reset_index()
    out["n_relevant"] = out["query_id"].map(n_relevant).fillna(0).astype(int)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["precision"] = out["hits"] / k
        out["recall"] = np.where(out["n_relevant"] > 0, out["hits"] / out["n_relevant"], np.nan)
        out["ndcg"] = np.where(out["n_relevant"] > 0, out["dcg"] / out["query_id"].map(ideal).to_numpy(dtype=float), np.nan)
        out["mrr"] = np.where(out["n_relevant"] > 0, (1.0 / out["first"]).fillna(0.0), np.nan)
    result = out[["query_id", "condition", "n_relevant", "precision", "recall", "ndcg", "mrr"]]
    unjudged = pd.unique(out.loc[out["n_relevant"] == 0, "query_id"])
    if len(unjudged):
        warn(f"{len(unjudged)} of {out['query_id'].nunique()} queries have no relevant document in `qrels` (e.g. "
                      f"{show(unjudged[0])}): their recall, nDCG and MRR are undefined (NaN), and compare_conditions "
                      "leaves them out.")
    if documents is not None:
        check_columns(documents, ["doc_id", tier], "documents")
        tiers = top["doc_id"].map(documents.set_index("doc_id")[tier])
        shares = pd.crosstab([top["condition"], top["query_id"]], tiers, normalize="index")
        shares.columns = [f"share_{c}" for c in shares.columns]
        result = result.merge(shares.reset_index(), on=["condition", "query_id"], how="left")
    return result.sort_values(["condition", "query_id"], kind="stable").reset_index(drop=True)


def compare_conditions(metrics: pd.DataFrame, a: str | None = None, b: str | None = None, *, pairs=None,
                       metric="ndcg", alternative: str = "two-sided", zero_method: str = "wilcox", min_queries: int = 20,
                       adjust: str | None = None) -> pd.DataFrame:
    """Wilcoxon signed-rank test of condition ``a`` against ``b`` across queries, or of several pairs and metrics.

    Parameters
    ----------
    metrics : DataFrame
        :func:`evaluate` output.
    a, b : str
        Conditions to compare (paired by query; queries missing or NaN in either are left out).
    pairs : list of (str, str), optional
        Several pairs of conditions instead of ``a`` and ``b``: one row per pair and metric.
    metric : str or list of str, default "ndcg"
    alternative, zero_method
        Passed to :func:`scipy.stats.wilcoxon`.
    min_queries : int, default 20
        Warn when fewer queries are judged: the test then has little power.
    adjust : {None, "holm", "bonferroni", "bh", "by"}
        Adjust the p-values of all the rows (one family of tests) for multiplicity; None: ``p_adjusted``
        repeats ``p_val``. Read several comparisons together only through their adjusted p-values.

    Returns
    -------
    DataFrame
        One row per pair and metric: ``metric, a, b, n, n_ties, mean_a, mean_b, median_diff, statistic, p_val,
        p_adjusted, adjust, test, effect_size``. ``n_ties`` counts queries where both conditions score the same;
        ``test`` names how :func:`scipy.stats.wilcoxon` computed the p-value (the exact null distribution of
        the signed-rank statistic without ties or zeros up to 50 queries; with them, all sign flips up to 13
        queries and the normal approximation with the tie correction beyond); ``effect_size`` is the
        matched-pairs rank-biserial correlation (Kerby 2014) over the non-tied queries, positive when ``a``
        is better. When every query is tied there is nothing to test: ``statistic`` is NaN and ``p_val`` 1,
        with an :class:`~evalkit.EvalkitWarning`.

    Notes
    -----
    The size of the test is measured in the coverage harness (``python benchmarks/bench_coverage.py
    --function retrieval.compare_conditions``) at 20 to 200 queries drawn from the demo corpus and HealthFC
    (with the two conditions swapped at random per query) and on a grid of tied scores.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.retrieval import compare_conditions
    >>> m = pd.DataFrame({"query_id": list(range(6)) * 2, "condition": ["x"] * 6 + ["y"] * 6,
    ...                   "ndcg": [.9, .8, .7, .9, .6, .5, .5, .8, .4, .3, .2, .1]})
    >>> row = compare_conditions(m, "x", "y", min_queries=5).iloc[0]
    >>> int(row["n"]), int(row["n_ties"]), float(row["effect_size"]), row["test"]
    (6, 1, 1.0, 'signed-rank, all sign flips, ties/zeros')
    """
    metrics = check_dataframe(metrics, "metrics")
    check_option(adjust, (None, *ADJUSTMENTS), "adjust")
    min_queries = check_number(min_queries, "min_queries", low=0, integer=True)
    if pairs is None:
        if a is None or b is None:
            raise TypeError("give the two conditions `a` and `b`, or a list of them as `pairs`.")
        pairs = [(a, b)]
    elif a is not None or b is not None:
        raise TypeError("give either `a` and `b` or `pairs`, not both.")
    else:
        pairs = list(pairs)
        if not pairs or any(not isinstance(pair, (tuple, list)) or len(pair) != 2 for pair in pairs):
            raise ValueError(f"`pairs` must be a non-empty list of (a, b) condition pairs; got {pairs!r}.")
    for x, y in pairs:
        if x == y:
            raise ValueError(f"`a` and `b` must name two different conditions to compare; got {show(x)} for both.")
    names = [metric] if isinstance(metric, str) else list(metric)
    check_columns(metrics, ["query_id", "condition", *names], "metrics")
    present = set(metrics["condition"])
    for name in (c for pair in pairs for c in pair):
        if name not in present:
            raise ValueError(f"condition {name!r} is not in `metrics`; it has {sorted(present)}.")
    for name in names:
        values = metrics[name]
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            raise TypeError(f"`metrics` column {name!r} must hold numbers; got dtype {values.dtype}.")
        if np.isinf(values.to_numpy(dtype=float)).any():
            raise ValueError(f"`metrics` column {name!r} must hold finite numbers (NaN for an undefined one); got inf.")
    rows = [_wilcoxon_row(metrics, x, y, m, alternative, zero_method, min_queries) for x, y in pairs for m in names]
    out = pd.DataFrame(rows)
    out.insert(out.columns.get_loc("p_val") + 1, "p_adjusted",
               out["p_val"] if adjust is None else adjust_p_values(out["p_val"].to_numpy(dtype=float), adjust))
    out.insert(out.columns.get_loc("p_adjusted") + 1, "adjust", adjust or "none")
    return out


def _wilcoxon_method(diff: np.ndarray) -> str:
    """How scipy.stats.wilcoxon (method="auto") computes the p-value for these differences."""
    tied = bool(np.any(diff == 0)) or len(np.unique(np.abs(diff))) < len(diff)
    if len(diff) > 50:
        return "normal approx."
    if not tied:
        return "exact"
    return "all sign flips, ties/zeros" if len(diff) <= 13 else "normal approx., ties/zeros"


def _wilcoxon_row(metrics, a, b, metric, alternative, zero_method, min_queries) -> dict:
    wide = metrics.pivot_table(index="query_id", columns="condition", values=metric, aggfunc="first", dropna=False)
    wide = wide.reindex(columns=[a, b]).dropna()
    x, y = wide[a].to_numpy(float), wide[b].to_numpy(float)
    n = len(wide)
    if n == 0:
        raise ValueError(f"`metrics` has no query with a {metric!r} value for both `a`={show(a)} and `b`={show(b)}.")
    if n < min_queries:
        warn(f"only {n} queries are judged for both {a!r} and {b!r} (fewer than {min_queries}): the Wilcoxon "
                      "test has little power and its p-value is fragile.")
    diff = x - y
    ties = int(np.sum(diff == 0))
    nonzero = diff[diff != 0]
    if len(nonzero) == 0:
        warn(f"{show(a)} and {show(b)} score the same {metric} on all {n} queries: there is no difference to "
                      "test (statistic NaN, p_val 1).")
        statistic, p, test = np.nan, 1.0, "none: no query differs"
    else:
        res = stats.wilcoxon(x, y, zero_method=zero_method, alternative=alternative)
        statistic, p = float(res.statistic), float(res.pvalue)
        test = f"signed-rank, {_wilcoxon_method(diff)}"
    ranks = stats.rankdata(np.abs(nonzero))
    effect = float((ranks[nonzero > 0].sum() - ranks[nonzero < 0].sum()) / ranks.sum()) if len(nonzero) else 0.0
    return {"metric": metric, "a": a, "b": b, "n": n, "n_ties": ties, "mean_a": float(x.mean()) if n else np.nan,
            "mean_b": float(y.mean()) if n else np.nan, "median_diff": float(np.median(diff)) if n else np.nan,
            "statistic": statistic, "p_val": p, "test": test, "effect_size": effect}


def keywords(text: str) -> set[str]:
    """Lower-cased words of two or more letters or digits, without common English function words.

    Examples
    --------
    >>> sorted(keywords("Does vitamin D help with the migraine?"))
    ['help', 'migraine', 'vitamin']
    """
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP} if isinstance(text, str) else set()


@dataclass(frozen=True)
class CoverageResult:
    """Result of :func:`coverage`: ``summary`` (one row per scope) and ``claims`` (one row per claim)."""

    summary: pd.DataFrame
    claims: pd.DataFrame = field(repr=False)

    def _rows(self) -> tuple[str, list[dict]]:
        rows = [{"quantity": f"coverage ({row['scope']})", "estimate": _display.number(row["share"]),
                 "interval": _display.interval(row["ci_low"], row["ci_high"], level=row.get("confidence_level")),
                 "method": row.get("interval", ""), "note": f"{int(row['covered'])} of {int(row['n'])} claims covered"}
                for row in self.summary.to_dict("records")]
        return f"CoverageResult: {len(self.claims)} benchmark claims", rows

    def __repr__(self) -> str:
        return _display.result_text(*self._rows())

    def _repr_html_(self) -> str:
        return _display.result_html(*self._rows())


def coverage(benchmark_claims: pd.DataFrame, corpus: pd.DataFrame, *, claim_embeddings, doc_embeddings,
             min_cos: float = 0.75, min_keywords: int = 2, sample_size: int | None = None, rng=None,
             confidence_level: float = 0.95, interval: str = "clopper-pearson") -> CoverageResult:
    """Does the corpus hold the evidence a benchmark asks about? A pre-check before comparing retrievers.

    A benchmark claim is covered when its most similar document (cosine of the embeddings) reaches
    ``min_cos`` and shares at least ``min_keywords`` :func:`keywords` with it.

    Parameters
    ----------
    benchmark_claims : DataFrame
        ``claim_id, text``.
    corpus : DataFrame
        ``doc_id, text``.
    claim_embeddings, doc_embeddings : array
        Row-aligned with the two tables.
    min_cos : float, default 0.75
    min_keywords : int, default 2
    sample_size : int, optional
        Also estimate coverage from a random sample of this many claims, to show how far a small pilot's
        estimate can sit from the full benchmark's.
    rng : None, int or numpy.random.Generator
    confidence_level : float, default 0.95
    interval : {"clopper-pearson", "wilson"}, default "clopper-pearson"
        The share's interval. Clopper-Pearson's covers at least ``confidence_level`` at every n and share; Wilson's
        is narrower but dips below it at some (n, share): the coverage harness measures it at 0.933 at 50 claims
        with a share of 0.665.

    Returns
    -------
    CoverageResult
        ``summary``: ``scope, n, covered, share, ci_low, ci_high, interval`` (``interval`` names the method);
        ``claims``: ``claim_id, best_doc, best_cos, shared_keywords, covered``.

    Examples
    --------
    >>> from evalkit import datasets, retrieval
    >>> corpus = datasets.load_demo("fd")
    >>> result = retrieval.coverage(corpus["benchmark"], corpus["documents"],
    ...                             claim_embeddings=corpus["benchmark_embeddings"], doc_embeddings=corpus["doc_embeddings"])
    >>> row = result.summary.iloc[0]
    >>> int(row["n"]), int(row["covered"]), float(row["share"])
    (200, 133, 0.665)
    """
    benchmark_claims = check_dataframe(benchmark_claims, "benchmark_claims")
    corpus = check_dataframe(corpus, "corpus")
    check_columns(benchmark_claims, ["claim_id", "text"], "benchmark_claims")
    check_columns(corpus, ["doc_id", "text"], "corpus")
    check_level(confidence_level)
    check_option(interval, list(_stats.COUNT_METHODS), "interval")
    if benchmark_claims.empty or corpus.empty:
        raise ValueError("`benchmark_claims` and `corpus` must both be non-empty.")
    claims_v = _unit_rows(claim_embeddings, len(benchmark_claims), "claim_embeddings")
    docs_v = _unit_rows(doc_embeddings, len(corpus), "doc_embeddings")
    min_cos = check_number(min_cos, "min_cos", low=-1.0, high=1.0)
    min_keywords = check_number(min_keywords, "min_keywords", low=0, integer=True)
    best_idx, best_cos = _cosine_top(docs_v, claims_v, 1)
    best_idx, best_cos = best_idx[:, 0], best_cos[:, 0]
    doc_text = corpus["text"].to_numpy()
    shared = np.array([len(keywords(t) & keywords(doc_text[i])) for t, i in zip(benchmark_claims["text"], best_idx, strict=True)])
    table = pd.DataFrame({"claim_id": benchmark_claims["claim_id"].to_numpy(), "best_doc": corpus["doc_id"].to_numpy()[best_idx],
                          "best_cos": best_cos.astype(float), "shared_keywords": shared})
    table["covered"] = (table["best_cos"] >= min_cos) & (table["shared_keywords"] >= min_keywords)

    def summarise(scope, covered):
        n, hits = len(covered), int(covered.sum())
        found = _stats.rate_interval(hits, n, method=interval, confidence_level=confidence_level)
        return {"scope": scope, "n": n, "covered": hits, "share": hits / n, "ci_low": found["ci_low"],
                "ci_high": found["ci_high"], "interval": interval}

    rows = [summarise("all claims", table["covered"].to_numpy())]
    if sample_size is not None:
        sample_size = check_number(sample_size, "sample_size", low=1, high=len(table), integer=True)
        pick = check_rng(rng).choice(len(table), size=sample_size, replace=False)
        rows.append(summarise(f"random sample of {sample_size}", table["covered"].to_numpy()[pick]))
    return CoverageResult(summary=pd.DataFrame(rows), claims=table)


def lsa_embeddings(doc_texts, *others, dim: int = 128):
    """Model-free embeddings: TF-IDF over the documents reduced by a truncated SVD (latent semantic analysis).

    Fitted on ``doc_texts``; every sequence in ``others`` (queries, benchmark claims...) is projected into
    the same space. Use it when no embedding model is at hand; a neural model usually does better.

    Parameters
    ----------
    doc_texts : sequence of str
    *others : sequence of str
    dim : int, default 128
        Dimensions kept (at most the vocabulary size minus one).

    Returns
    -------
    tuple of ndarray
        ``(doc_vectors, *other_vectors)``, each row L2-normalised (all-zero rows stay zero).

    Examples
    --------
    >>> from evalkit.retrieval import lsa_embeddings
    >>> docs, queries = lsa_embeddings(["cats purr softly", "dogs bark loudly", "cats and dogs play"],
    ...                                ["purring cats"], dim=2)
    >>> docs.shape, queries.shape
    ((3, 2), (1, 2))
    """
    dim = check_number(dim, "dim", low=1, integer=True)
    doc_texts = list(doc_texts)
    if len(doc_texts) < 2:
        raise ValueError(f"`doc_texts` must hold at least 2 documents: a truncated SVD of {len(doc_texts)} "
                         "document(s) has no dimension to keep.")
    tokenized = [[w for w in _WORD.findall(str(t).lower()) if w not in _STOP] for t in doc_texts]
    vocab = {w: i for i, w in enumerate(sorted({w for doc in tokenized for w in doc}))}
    if len(vocab) < 2:
        raise ValueError("`doc_texts`: the documents have fewer than two distinct words; nothing to embed.")

    def tf(token_lists):
        rows, cols, vals = [], [], []
        for r, doc in enumerate(token_lists):
            counts = pd.Series([vocab[w] for w in doc if w in vocab], dtype=np.int64).value_counts()
            rows.extend([r] * len(counts))
            cols.extend(counts.index.tolist())
            vals.extend(counts.to_numpy(dtype=float).tolist())
        return sparse.csr_matrix((vals, (rows, cols)), shape=(len(token_lists), len(vocab)))

    counts = tf(tokenized)
    df = np.asarray((counts > 0).sum(axis=0)).ravel()
    idf = np.log((1 + len(doc_texts)) / (1 + df)) + 1.0

    def weigh(matrix):
        weighted = sparse.csr_matrix(matrix.multiply(idf[None, :]))
        norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1))).ravel()
        return sparse.diags(np.where(norms > 0, 1 / np.where(norms > 0, norms, 1), 0.0)) @ weighted

    doc_matrix = weigh(counts)
    k = min(dim, min(doc_matrix.shape) - 1)
    _, _, vt = svds(doc_matrix, k=k, random_state=0)
    basis = vt[::-1].T  # largest singular values first

    def project(matrix):
        vectors = np.asarray(matrix @ basis)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.divide(vectors, norms, out=np.zeros_like(vectors), where=norms > 0)

    others_vectors = [project(weigh(tf([[w for w in _WORD.findall(str(t).lower()) if w not in _STOP] for t in texts])))
                      for texts in others]
    return (project(doc_matrix), *others_vectors)
