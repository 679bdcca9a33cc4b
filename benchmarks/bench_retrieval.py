"""Benchmark: BM25 against bm25s called directly, the hybrid rerank over cosine, FD* against a pandas groupby.

Run on demand: ``python benchmarks/bench_retrieval.py [--docs 100000 --queries 1000 --fd-docs 1000000
--repeats 5]``. Every contender runs once to warm up; then, within each repetition, evalkit and its baseline
run in turn (paired, same process), and the medians are printed with the range of the paired ratios.

- BM25: ``retrieval.search(condition="bm25")`` against bm25s used directly (tokenize, index, retrieve the
  top k), i.e. what evalkit adds on top of the library it calls (the runs table, reproducible tie order).
- Hybrid: cosine top-20 then the FD* rerank, against plain cosine top-10.
- FD*: ``density.fd_raw`` against a plain pandas groupby computing the same sums and counts per document
  (then aligned to the documents), beside the limit (one factorize of all ids, two bincounts, no checks);
  ``density.fd_star`` against the same groupby followed by pandas' quantile bins and within-bin z-scores.
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from _timing import paired, ratio  # benchmarks/ is on sys.path when a benchmark runs as a script

from evalkit import density, retrieval


def corpus(n_docs: int, n_queries: int, rng: np.random.Generator, dim: int = 64):
    vocab = np.array([f"w{i}" for i in range(20_000)])
    # Zipf-like word frequencies, 30-90 words per document.
    p = 1.0 / np.arange(1, len(vocab) + 1) ** 1.05
    p /= p.sum()
    lengths = rng.integers(30, 90, n_docs)
    words = vocab[rng.choice(len(vocab), size=int(lengths.sum()), p=p)]
    texts = [" ".join(chunk) for chunk in np.split(words, np.cumsum(lengths)[:-1])]
    documents = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n_docs)], "text": texts})
    qwords = vocab[rng.choice(len(vocab) // 4, size=(n_queries, 4))]
    queries = pd.DataFrame({"query_id": [f"q{i}" for i in range(n_queries)], "text": [" ".join(q) for q in qwords]})
    doc_vectors = rng.normal(size=(n_docs, dim)).astype(np.float32)
    query_vectors = rng.normal(size=(n_queries, dim)).astype(np.float32)
    fd = pd.Series(rng.normal(size=n_docs), index=documents["doc_id"].to_numpy())
    return documents, queries, doc_vectors, query_vectors, fd


def bm25s_direct(documents: pd.DataFrame, queries: pd.DataFrame, k: int):
    import bm25s

    tokens = bm25s.tokenize(documents["text"].tolist(), stopwords=None, show_progress=False)
    retriever = bm25s.BM25(k1=1.5, b=0.75, method="lucene")
    retriever.index(tokens, show_progress=False)
    query_tokens = bm25s.tokenize(queries["text"].tolist(), stopwords=None, show_progress=False)
    return retriever.retrieve(query_tokens, k=k, show_progress=False)


def fd_corpus(n: int, rng: np.random.Generator):
    n_claims = rng.integers(0, 7, n)
    docs = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n)], "n_tokens": rng.integers(50, 600, n),
                         "source": rng.choice(["review", "trial", "news"], n)})
    claims = pd.DataFrame({"doc_id": np.repeat(docs["doc_id"].to_numpy(), n_claims),
                           "prob_fact": rng.random(int(n_claims.sum()))})
    return docs, claims


def pandas_fd_raw(claims: pd.DataFrame, docs: pd.DataFrame) -> pd.DataFrame:
    """Baseline: the same sums and counts with a pandas groupby, aligned to the documents."""
    agg = claims.groupby("doc_id", sort=False)["prob_fact"].agg(["sum", "size"]).reindex(docs["doc_id"], fill_value=0)
    n_tokens = docs["n_tokens"].to_numpy(dtype=float)
    return pd.DataFrame({"n_tokens": n_tokens, "n_claims": agg["size"].to_numpy(),
                         "fd_raw": agg["sum"].to_numpy() / n_tokens}, index=agg.index)


def pandas_fd_star(claims: pd.DataFrame, docs: pd.DataFrame, authority: dict) -> pd.Series:
    table = pandas_fd_raw(claims, docs)
    bins = pd.qcut(table["n_tokens"], 3, labels=["short", "medium", "long"])
    grouped = table["fd_raw"].groupby(bins, observed=True)
    z = (table["fd_raw"] - grouped.transform("mean")) / grouped.transform("std")
    return z * docs["source"].map(authority).to_numpy()


def fd_raw_limit(claims: pd.DataFrame, docs: pd.DataFrame) -> np.ndarray:
    """The limit: hash every id once (documents first), then two bincounts. No checks."""
    codes, _ = pd.factorize(pd.concat([docs["doc_id"], claims["doc_id"]], ignore_index=True))
    position = codes[len(docs):]
    total = np.bincount(position, weights=claims["prob_fact"].to_numpy(), minlength=len(docs))
    count = np.bincount(position, minlength=len(docs))
    return total / docs["n_tokens"].to_numpy(dtype=float), count


def spread(times: dict) -> str:
    return str({name: f"{values.min():.3f}-{values.max():.3f}" for name, values in times.items()})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--fd-docs", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    documents, queries, doc_vectors, query_vectors, fd = corpus(args.docs, args.queries, rng)
    print(f"corpus: {args.docs:,} documents, {args.queries:,} queries; {args.repeats} paired repetitions after a warm-up")

    ours = retrieval.search(documents, queries, condition="bm25", k=10, stopwords=None)
    _, their_scores = bm25s_direct(documents, queries, 10)
    # Same scores in the same order (documents with tied scores may come in another order).
    same = np.allclose(ours["score"].to_numpy().reshape(-1, 10), their_scores, rtol=1e-5, atol=1e-6)
    times = paired({
        "evalkit": lambda: retrieval.search(documents, queries, condition="bm25", k=10, stopwords=None),
        "bm25s": lambda: bm25s_direct(documents, queries, 10),
    }, args.repeats)
    print(f"BM25 index + top-10   evalkit {np.median(times['evalkit']):6.2f} s   bm25s directly "
          f"{np.median(times['bm25s']):6.2f} s   evalkit / bm25s {ratio(times, 'evalkit', 'bm25s')}; "
          f"top-10 scores {'equal' if same else 'DIFFER'} (rtol 1e-5)")
    print(f"  spread (s): {spread(times)}")

    options = dict(doc_embeddings=doc_vectors, query_embeddings=query_vectors)
    times = paired({
        "cosine": lambda: retrieval.search(documents, queries, condition="cosine", k=10, **options),
        "hybrid": lambda: retrieval.search(documents, queries, condition="hybrid", k=10, candidates=20, fd=fd, **options),
    }, args.repeats)
    print(f"cosine top-10 {np.median(times['cosine']):6.3f} s   hybrid top-10 (cosine top-20 + FD* rerank) "
          f"{np.median(times['hybrid']):6.3f} s   hybrid / cosine {ratio(times, 'hybrid', 'cosine')}  (target < 1.25x)")
    print(f"  spread (s): {spread(times)}")

    docs, claims = fd_corpus(args.fd_docs, rng)
    authority = {"review": 1.2, "trial": 1.0, "news": 0.8}
    table = density.fd_star(claims, docs, authority=authority)
    np.testing.assert_allclose(table["fd_raw"].to_numpy(), pandas_fd_raw(claims, docs)["fd_raw"].to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(table["fd_star"].to_numpy(), pandas_fd_star(claims, docs, authority).to_numpy(),
                               rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(table["fd_raw"].to_numpy(), fd_raw_limit(claims, docs)[0], rtol=1e-12)
    times = paired({
        "fd_raw": lambda: density.fd_raw(claims, docs),
        "groupby": lambda: pandas_fd_raw(claims, docs),
        "limit": lambda: fd_raw_limit(claims, docs),
        "fd_star": lambda: density.fd_star(claims, docs, authority=authority),
        "groupby_star": lambda: pandas_fd_star(claims, docs, authority),
    }, args.repeats)
    med = {name: float(np.median(values)) for name, values in times.items()}
    print(f"FD for {args.fd_docs:,} documents / {len(claims):,} claims:")
    print(f"  density.fd_raw             {med['fd_raw']:6.3f} s   / pandas groupby {ratio(times, 'fd_raw', 'groupby')}"
          "  (target <= 1x)")
    print(f"  pandas groupby sums        {med['groupby']:6.3f} s")
    print(f"  limit: factorize+bincount  {med['limit']:6.3f} s   fd_raw / limit {ratio(times, 'fd_raw', 'limit')}")
    print(f"  density.fd_star            {med['fd_star']:6.3f} s   / pandas groupby + qcut + z "
          f"{ratio(times, 'fd_star', 'groupby_star')}  (target <= 1x)")
    print(f"  pandas groupby + qcut + z  {med['groupby_star']:6.3f} s")
    print(f"  spread (s): {spread(times)}")


if __name__ == "__main__":
    main()
