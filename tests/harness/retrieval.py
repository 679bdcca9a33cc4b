"""Retrieval: compare_conditions and coverage."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd

from tests.harness.core import (
    SHARED_DATA,
    Design,
    Entry,
    bernoulli,
)


# ---- retrieval: per-query comparisons and coverage
@functools.cache
def _demo_metrics() -> pd.DataFrame:
    from evalkit import datasets, density, retrieval

    corpus = datasets.load_demo("fd")
    table = density.fd_star(corpus["claims"], corpus["documents"])
    options = dict(doc_embeddings=corpus["doc_embeddings"], query_embeddings=corpus["query_embeddings"], fd=table)
    runs = pd.concat([retrieval.search(corpus["documents"], corpus["queries"], condition=c, k=10, **options)
                      for c in ("cosine", "bm25", "hybrid")])
    return retrieval.evaluate(runs, corpus["qrels"], k=10, documents=corpus["documents"])


@functools.cache
def _healthfc_metrics() -> pd.DataFrame:
    from evalkit import density, retrieval

    hfc = pd.read_csv(SHARED_DATA / "healthfc" / "Datensatz.csv", encoding="utf-8-sig")
    passages = pd.DataFrame({"doc_id": [f"h{i:03d}" for i in range(len(hfc))],
                             "text": (hfc["en_top_sentences"].fillna("") + " " + hfc["en_explanation"].fillna("")).str.strip(),
                             "source": "medizin-transparent"})
    queries = pd.DataFrame({"query_id": [f"c{i:03d}" for i in range(len(hfc))], "text": hfc["en_claim"]})
    qrels = pd.DataFrame({"query_id": queries["query_id"], "doc_id": passages["doc_id"], "relevance": 1})
    doc_vec, query_vec = retrieval.lsa_embeddings(passages["text"], queries["text"], dim=128)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = density.fd_star(density.claims_from_text(passages), passages)
    runs = pd.concat([retrieval.search(passages, queries, condition=c, k=10, doc_embeddings=doc_vec,
                                       query_embeddings=query_vec, fd=table) for c in ("cosine", "bm25", "hybrid")])
    return retrieval.evaluate(runs, qrels, k=10)


def _paired_queries(name, description, population, a: str, b: str, metric: str, *, data=None) -> Design:
    """Queries drawn with replacement, the two conditions' values swapped at random per query (no difference)."""

    @functools.cache
    def pairs():
        wide = population().pivot_table(index="query_id", columns="condition", values=metric, aggfunc="first")[[a, b]].dropna()
        return wide.to_numpy(float)

    def draw(rng, n):
        values = pairs()[rng.integers(0, len(pairs()), n)]
        swap = rng.random(n) < 0.5
        return {"a": np.where(swap, values[:, 1], values[:, 0]), "b": np.where(swap, values[:, 0], values[:, 1]), "truth": 0.0}

    return Design(name, description + " (conditions swapped at random per query: no difference)", draw, data=data)


def _tied_queries(rng, n):
    """nDCG-like values with ties: a third of the queries score 0 under both, the rest on a coarse grid."""
    base = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=n, p=[0.3, 0.1, 0.2, 0.2, 0.2])
    other = np.where(rng.random(n) < 0.5, base, rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=n))
    other = np.where(base == 0, np.where(rng.random(n) < 0.7, 0.0, other), other)
    swap = rng.random(n) < 0.5
    return {"a": np.where(swap, other, base), "b": np.where(swap, base, other), "truth": 0.0}


RETRIEVAL_NULLS = (
    _paired_queries("demo-hybrid-vs-cosine-ndcg", "the demo corpus's 50 queries: nDCG@10 of hybrid and cosine",
                    _demo_metrics, "hybrid", "cosine", "ndcg"),
    _paired_queries("demo-hybrid-vs-cosine-precision", "the demo corpus's 50 queries: precision@10 (steps of 0.1, ties)",
                    _demo_metrics, "hybrid", "cosine", "precision"),
    _paired_queries("healthfc-bm25-vs-cosine-mrr", "HealthFC's 750 claims: MRR of BM25 and LSA cosine (ties at 1 and 0)",
                    _healthfc_metrics, "bm25", "cosine", "mrr", data="healthfc"),
    Design("tied-grid", "per-query scores on a 5-point grid, 30% of queries at 0, many ties (no difference)", _tied_queries),
)


def _compare_conditions(sample, alpha, **options):
    from evalkit import retrieval

    n = len(sample["a"])
    metrics = pd.DataFrame({"query_id": np.tile(np.arange(n), 2), "condition": np.repeat(["a", "b"], n),
                            "ndcg": np.concatenate([sample["a"], sample["b"]])})
    return retrieval.compare_conditions(metrics, "a", "b", **options).iloc[0]["p_val"]


def _coverage(sample, level, interval="clopper-pearson"):
    from evalkit import retrieval

    covered = sample["x"] > 0
    n = len(covered)
    claims = pd.DataFrame({"claim_id": np.arange(n), "text": np.where(covered, "vitamin migraine dose", "unrelated words")})
    corpus = pd.DataFrame({"doc_id": ["d0", "d1"], "text": ["vitamin migraine dose trial", "other text here"]})
    embeddings = np.where(covered[:, None], [[1.0, 0.0]], [[0.0, 1.0]])
    row = retrieval.coverage(claims, corpus, claim_embeddings=embeddings, doc_embeddings=np.eye(2)[[0, 0]],
                             confidence_level=level, interval=interval).summary.iloc[0]
    return row["ci_low"], row["ci_high"], row["share"]


ENTRIES = [
    Entry("retrieval.compare_conditions", "Wilcoxon signed-rank p-value (default)", "test", _compare_conditions,
          RETRIEVAL_NULLS, default=True),
    Entry("retrieval.coverage", "Clopper-Pearson interval (default)", "interval", _coverage,
          (bernoulli(0.665), bernoulli(0.9), bernoulli(0.97)), default=True),
    Entry("retrieval.coverage", "interval='wilson'", "interval", functools.partial(_coverage, interval="wilson"),
          (bernoulli(0.665), bernoulli(0.9), bernoulli(0.97))),
]
