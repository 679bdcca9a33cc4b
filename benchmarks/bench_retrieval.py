"""Benchmark: BM25 against rank_bm25, the hybrid rerank's overhead over cosine, and FD* at scale.

Run on demand: ``python benchmarks/bench_retrieval.py [--docs 100000 --queries 1000 --fd-docs 1000000]``.
Needs the ``bench`` extra (rank_bm25). Every figure is measured in the same run; rank_bm25 scores one query
at a time in Python, so it runs on ``--rank-bm25-queries`` queries and its search time is scaled up
(printed as such).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

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


def timed(func, repeat=1):
    best, result = np.inf, None
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - start)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=1_000)
    parser.add_argument("--rank-bm25-queries", type=int, default=100)
    parser.add_argument("--fd-docs", type=int, default=1_000_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    documents, queries, doc_vectors, query_vectors, fd = corpus(args.docs, args.queries, rng)
    print(f"corpus: {args.docs:,} documents, {args.queries:,} queries")

    t_ours, _ = timed(lambda: retrieval.search(documents, queries, condition="bm25", k=10, stopwords=None))
    from rank_bm25 import BM25Okapi

    t_index, index = timed(lambda: BM25Okapi([t.split() for t in documents["text"]]))
    sub = queries["text"].iloc[: args.rank_bm25_queries]
    t_sub, _ = timed(lambda: [np.argsort(-index.get_scores(q.split()))[:10] for q in sub])
    t_theirs = t_index + t_sub * len(queries) / len(sub)
    print(f"BM25 index + search   evalkit (bm25s) {t_ours:7.2f} s   rank_bm25 {t_theirs:8.1f} s "
          f"(index {t_index:.1f} s + {t_sub:.1f} s for {len(sub)} queries x {len(queries) / len(sub):g})   "
          f"ratio {t_theirs / t_ours:6.1f}x  (target >= 20x)")

    options = dict(doc_embeddings=doc_vectors, query_embeddings=query_vectors)
    t_cos, _ = timed(lambda: retrieval.search(documents, queries, condition="cosine", k=10, **options), repeat=3)
    t_hyb, _ = timed(lambda: retrieval.search(documents, queries, condition="hybrid", k=10, candidates=20, fd=fd, **options),
                     repeat=3)
    print(f"cosine top-10 {t_cos:6.3f} s   hybrid top-10 (cosine top-20 + FD* rerank) {t_hyb:6.3f} s   "
          f"overhead {100 * (t_hyb / t_cos - 1):5.1f}%  (target < 25%)")

    n = args.fd_docs
    n_claims = rng.integers(0, 7, n)
    docs = pd.DataFrame({"doc_id": [f"d{i}" for i in range(n)], "n_tokens": rng.integers(50, 600, n),
                         "source": rng.choice(["review", "trial", "news"], n)})
    claims = pd.DataFrame({"doc_id": np.repeat(docs["doc_id"].to_numpy(), n_claims),
                           "prob_fact": rng.random(int(n_claims.sum()))})
    t_fd, table = timed(lambda: density.fd_star(claims, docs, authority={"review": 1.2, "trial": 1.0, "news": 0.8}),
                        repeat=3)
    print(f"FD* for {n:,} documents ({len(claims):,} claims): {t_fd:.2f} s  (target < 2 s); "
          f"{table.attrs['n_without_claims']:,} documents without claims")


if __name__ == "__main__":
    main()
