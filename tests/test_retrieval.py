
import bm25s
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, datasets, density, retrieval


@pytest.fixture(scope="module")
def corpus():
    data = datasets.load_demo("fd")
    data["fd"] = density.fd_star(data["claims"], data["documents"])
    return data


def emb(corpus):
    return {"doc_embeddings": corpus["doc_embeddings"], "query_embeddings": corpus["query_embeddings"]}


def test_bm25_agrees_with_bm25s_called_directly(corpus):
    docs, queries = corpus["documents"], corpus["queries"]
    runs = retrieval.search(docs, queries, condition="bm25", k=15, k1=1.2, b=0.75)
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index(bm25s.tokenize(docs["text"].tolist(), stopwords="en", show_progress=False), show_progress=False)
    tokens = bm25s.tokenize(queries["text"].tolist(), stopwords="en", return_ids=False, show_progress=False)
    for query_id, query_tokens in zip(queries["query_id"], tokens, strict=True):
        scores = retriever.get_scores(query_tokens)
        order = np.lexsort((np.arange(len(scores)), -scores))[:15]
        mine = runs[runs["query_id"] == query_id]
        assert mine["doc_id"].tolist() == docs["doc_id"].to_numpy()[order].tolist()
        np.testing.assert_allclose(mine["score"].to_numpy(), scores[order], rtol=1e-6)
        assert mine["rank"].tolist() == list(range(1, 16))


def test_cosine_agrees_with_brute_force(corpus):
    runs = retrieval.search(corpus["documents"], corpus["queries"], condition="cosine", k=5, **emb(corpus))
    d = corpus["doc_embeddings"] / np.linalg.norm(corpus["doc_embeddings"], axis=1, keepdims=True)
    q = corpus["query_embeddings"] / np.linalg.norm(corpus["query_embeddings"], axis=1, keepdims=True)
    sims = q.astype(np.float64) @ d.T.astype(np.float64)
    for i in (0, 17, 49):
        expected = np.argsort(-sims[i], kind="stable")[:5]
        mine = runs[runs["query_id"] == corpus["queries"]["query_id"][i]]
        assert mine["doc_id"].tolist() == corpus["documents"]["doc_id"].to_numpy()[expected].tolist()
        np.testing.assert_allclose(mine["score"], sims[i, expected], rtol=1e-5)


def test_embed_callable_fills_missing_embeddings(corpus):
    lookup = dict(zip(corpus["documents"]["text"], corpus["doc_embeddings"], strict=True))
    lookup.update(zip(corpus["queries"]["text"], corpus["query_embeddings"], strict=True))
    embed = lambda texts: np.stack([lookup[t] for t in texts])  # noqa: E731
    a = retrieval.search(corpus["documents"], corpus["queries"], condition="cosine", k=5, embed=embed)
    b = retrieval.search(corpus["documents"], corpus["queries"], condition="cosine", k=5, **emb(corpus))
    pd.testing.assert_frame_equal(a, b)


def test_hybrid_hand_computation():
    docs = pd.DataFrame({"doc_id": ["a", "b", "c", "d"]})
    queries = pd.DataFrame({"query_id": ["q"]})
    doc_vectors = np.array([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8], [0.0, 1.0]])
    fd = pd.Series({"a": -1.0, "b": 0.0, "c": 1.0, "d": 3.0})
    runs = retrieval.search(docs, queries, condition="hybrid", k=2, candidates=3, doc_embeddings=doc_vectors,
                            query_embeddings=np.array([[1.0, 0.0]]), fd=fd)
    # candidates a (cos 1.0), b (0.8), c (0.6); fd rescaled over the corpus: a 0, b .25, c .5 (d is not a candidate)
    # a: .5*1 + .5*0 = .5; b: .5*.8 + .5*.25 = .525; c: .5*.6 + .5*.5 = .55
    assert runs["doc_id"].tolist() == ["c", "b"]
    np.testing.assert_allclose(runs["score"], [0.55, 0.525])
    cosine_heavy = retrieval.search(docs, queries, condition="hybrid", k=2, candidates=3, alpha=0.9,
                                    doc_embeddings=doc_vectors, query_embeddings=np.array([[1.0, 0.0]]), fd=fd)
    assert cosine_heavy["doc_id"].tolist() == ["a", "b"]  # a .9, b .72 + .025 = .745, c .54 + .05 = .59
    np.testing.assert_allclose(cosine_heavy["score"], [0.9, 0.745])


def test_evaluate_by_hand():
    runs = pd.DataFrame({"query_id": ["q1"] * 3 + ["q2"] * 3, "condition": "x", "rank": [1, 2, 3] * 2,
                         "doc_id": ["a", "b", "c", "d", "e", "f"]})
    qrels = pd.DataFrame({"query_id": ["q1", "q1", "q2", "q2"], "doc_id": ["b", "z", "d", "f"], "relevance": [2, 1, 1, 1]})
    docs = pd.DataFrame({"doc_id": list("abcdef"), "source": ["r", "r", "t", "t", "t", "r"]})
    m = retrieval.evaluate(runs, qrels, k=3, documents=docs).set_index("query_id")
    assert m.loc["q1", "precision"] == pytest.approx(1 / 3) and m.loc["q1", "recall"] == 0.5
    ideal_q1 = 3 / np.log2(2) + 1 / np.log2(3)
    assert m.loc["q1", "ndcg"] == pytest.approx((3 / np.log2(3)) / ideal_q1)
    assert m.loc["q1", "mrr"] == 0.5 and m.loc["q2", "mrr"] == 1.0
    assert m.loc["q2", "ndcg"] == pytest.approx((1 + 1 / np.log2(4)) / (1 + 1 / np.log2(3)))
    assert m.loc["q1", "share_r"] == pytest.approx(2 / 3) and m.loc["q2", "share_t"] == pytest.approx(2 / 3)


@pytest.mark.parametrize("relevance, error, message", [
    (-1, ValueError, r"'relevance' must be a finite number >= 0 .*got -1(\.0)? for query_id 'q1', doc_id 'b'"),
    (np.inf, ValueError, r"got inf for query_id 'q1', doc_id 'b'"),
    (np.nan, ValueError, r"got nan for query_id 'q1', doc_id 'b'"),
    ("high", TypeError, r"`qrels` column 'relevance' must hold numbers .*got 'high'"),
])
def test_evaluate_refuses_relevance_it_cannot_score(relevance, error, message):
    runs = pd.DataFrame({"query_id": "q1", "condition": "x", "rank": [1, 2], "doc_id": ["a", "b"]})
    qrels = pd.DataFrame({"query_id": ["q1", "q1"], "doc_id": ["a", "b"], "relevance": [1, relevance]}, dtype=object)
    with pytest.raises(error, match=message):
        retrieval.evaluate(runs, qrels, k=2)
    assert retrieval.evaluate(runs, qrels.assign(relevance=[1, 0]), k=2)["ndcg"].iloc[0] == 1.0  # 0 = not relevant


def test_compare_conditions_needs_two_conditions():
    m = pd.DataFrame({"query_id": list(range(25)) * 2, "condition": ["cosine"] * 25 + ["bm25"] * 25,
                      "ndcg": np.linspace(0, 1, 50)})
    with pytest.raises(ValueError, match="`a` and `b` must name two different conditions to compare; got 'cosine' for both"):
        retrieval.compare_conditions(m, "cosine", "cosine")


def test_compare_conditions_agrees_with_scipy(corpus):
    runs = pd.concat([retrieval.search(corpus["documents"], corpus["queries"], condition=c, k=10, fd=corpus["fd"], **emb(corpus))
                      for c in ("cosine", "hybrid")])
    metrics = retrieval.evaluate(runs, corpus["qrels"], k=10)
    res = retrieval.compare_conditions(metrics, "hybrid", "cosine").iloc[0]
    wide = metrics.pivot(index="query_id", columns="condition", values="ndcg")
    ref = stats.wilcoxon(wide["hybrid"], wide["cosine"])
    assert res["statistic"] == pytest.approx(ref.statistic) and res["p_val"] == pytest.approx(ref.pvalue)
    assert res["n"] == 50 and res["n_ties"] == int((wide["hybrid"] == wide["cosine"]).sum())
    d = (wide["hybrid"] - wide["cosine"]).to_numpy()
    d = d[d != 0]
    r = stats.rankdata(np.abs(d))
    assert res["effect_size"] == pytest.approx((r[d > 0].sum() - r[d < 0].sum()) / r.sum())


def test_hybrid_lifts_dense_reviews_on_demo(corpus):
    runs = pd.concat([retrieval.search(corpus["documents"], corpus["queries"], condition=c, k=10, fd=corpus["fd"], **emb(corpus))
                      for c in ("cosine", "bm25", "hybrid")])
    metrics = retrieval.evaluate(runs, corpus["qrels"], k=10, documents=corpus["documents"])
    share = metrics.groupby("condition")["share_systematic_review"].mean()
    assert share["hybrid"] > share["cosine"] and share["hybrid"] > share["bm25"]


def test_compare_conditions_warnings_and_ties():
    m = pd.DataFrame({"query_id": [1, 2, 3] * 2, "condition": ["a"] * 3 + ["b"] * 3, "ndcg": [0.5, 0.5, 0.5] * 2})
    with pytest.warns(EvalkitWarning, match="only 3 queries"), \
            pytest.warns(EvalkitWarning, match="score the same ndcg on all 3 queries: there is no difference to test"):
        res = retrieval.compare_conditions(m, "a", "b").iloc[0]
    assert res["n_ties"] == 3 and res["p_val"] == 1.0 and np.isnan(res["statistic"])
    with pytest.raises(ValueError, match="condition 'c' is not in"):
        retrieval.compare_conditions(m, "a", "c", min_queries=1)


def test_compare_conditions_family_is_adjusted_like_statsmodels(corpus):
    multipletests = pytest.importorskip("statsmodels.stats.multitest", reason="the reference is statsmodels, from the 'test' extra").multipletests

    runs = pd.concat([retrieval.search(corpus["documents"], corpus["queries"], condition=c, k=10, fd=corpus["fd"], **emb(corpus))
                      for c in ("cosine", "bm25", "hybrid")])
    metrics = retrieval.evaluate(runs, corpus["qrels"], k=10)
    pairs = [("hybrid", "cosine"), ("hybrid", "bm25"), ("cosine", "bm25")]
    family = retrieval.compare_conditions(metrics, pairs=pairs, metric=["ndcg", "precision"], adjust="holm")
    assert list(zip(family["a"], family["b"], family["metric"], strict=True)) == [(a, b, m) for a, b in pairs
                                                                                 for m in ("ndcg", "precision")]
    for row in family.itertuples():  # each row is the single comparison, p-value for p-value
        one = retrieval.compare_conditions(metrics, row.a, row.b, metric=row.metric).iloc[0]
        assert row.p_val == one["p_val"] and row.statistic == one["statistic"] and row.test == one["test"]
        assert one["p_adjusted"] == one["p_val"] and one["adjust"] == "none"
    np.testing.assert_allclose(family["p_adjusted"], multipletests(family["p_val"], method="holm")[1], rtol=0, atol=1e-15)
    assert (family["adjust"] == "holm").all()
    by = retrieval.compare_conditions(metrics, pairs=pairs, metric="ndcg", adjust="by")
    np.testing.assert_allclose(by["p_adjusted"], multipletests(by["p_val"], method="fdr_by")[1], rtol=0, atol=1e-15)


def test_compare_conditions_names_how_scipy_computed_the_p_value():
    rng = np.random.default_rng(0)
    n = 30
    base = rng.random(n)
    m = pd.DataFrame({"query_id": list(range(n)) * 2, "condition": ["a"] * n + ["b"] * n,
                      "ndcg": np.concatenate([base + rng.normal(0, 0.1, n), base])})
    exact = retrieval.compare_conditions(m, "a", "b").iloc[0]
    assert exact["test"] == "signed-rank, exact"
    assert exact["p_val"] == stats.wilcoxon(m["ndcg"][:n], m["ndcg"][n:], method="exact").pvalue
    tied = m.assign(ndcg=np.round(m["ndcg"], 1))
    row = retrieval.compare_conditions(tied, "a", "b").iloc[0]
    assert row["test"] == "signed-rank, normal approx., ties/zeros"
    assert row["p_val"] == stats.wilcoxon(tied["ndcg"][:n], tied["ndcg"][n:], method="asymptotic").pvalue


def test_compare_conditions_family_bad_input():
    m = pd.DataFrame({"query_id": [1, 2, 3] * 3, "condition": ["a"] * 3 + ["b"] * 3 + ["c"] * 3,
                      "ndcg": np.arange(9.0), "mrr": np.ones(9)})
    with pytest.raises(TypeError, match="give the two conditions `a` and `b`"):
        retrieval.compare_conditions(m, "a")
    with pytest.raises(TypeError, match="either `a` and `b` or `pairs`, not both"):
        retrieval.compare_conditions(m, "a", "b", pairs=[("a", "c")])
    with pytest.raises(ValueError, match="`pairs` must be a non-empty list of \\(a, b\\) condition pairs"):
        retrieval.compare_conditions(m, pairs=[("a", "b", "c")])
    with pytest.raises(ValueError, match="condition 'd' is not in"):
        retrieval.compare_conditions(m, pairs=[("a", "b"), ("a", "d")], min_queries=1)
    with pytest.raises(KeyError, match=r"missing column\(s\) \['recall'\]"):
        retrieval.compare_conditions(m, "a", "b", metric=["ndcg", "recall"])
    with pytest.raises(ValueError, match="`adjust` must be one of"):
        retrieval.compare_conditions(m, "a", "b", adjust="fdr", min_queries=1)
    with pytest.raises(TypeError, match="`metrics` must be a pandas DataFrame"):
        retrieval.compare_conditions("metrics.csv", "a", "b")


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"condition": "bm25", "k": 601}, ValueError, r"`k`=601 is larger than the corpus \(600 documents\)"),
        ({"condition": "dense"}, ValueError, "`condition` must be one of"),
        ({"condition": "cosine"}, ValueError, "`doc_embeddings` is required"),
        ({"condition": "hybrid", "doc_embeddings": np.ones((600, 4)), "query_embeddings": np.ones((50, 4))}, ValueError, "`fd` is required"),
        ({"condition": "cosine", "doc_embeddings": np.ones((599, 4)), "query_embeddings": np.ones((50, 4))}, ValueError, "600 rows"),
        ({"condition": "hybrid", "doc_embeddings": np.ones((600, 4)), "query_embeddings": np.ones((50, 4)),
          "fd": pd.Series({"d000": 1.0})}, ValueError, r"no FD\* for doc_id"),
        ({"condition": "hybrid", "k": 30, "doc_embeddings": np.ones((600, 4)), "query_embeddings": np.ones((50, 4)),
          "fd": pd.Series(dtype=float)}, ValueError, r"`candidates` must be at least `k`=30 for the hybrid; got 20"),
    ],
)
def test_search_bad_input(corpus, kwargs, error, message):
    with pytest.raises(error, match=message):
        retrieval.search(corpus["documents"], corpus["queries"], **kwargs)


def test_search_empty_corpus(corpus):
    with pytest.raises(ValueError, match="no corpus"):
        retrieval.search(corpus["documents"].iloc[:0], corpus["queries"], condition="bm25")


def test_coverage_by_hand():
    claims = pd.DataFrame({"claim_id": ["c1", "c2", "c3"], "text": ["magnesium lowers blood pressure",
                                                                   "magnesium cures everything", "unrelated claim"]})
    corpus = pd.DataFrame({"doc_id": ["d1", "d2"], "text": ["Magnesium lowers blood pressure in trials.", "Other text."]})
    claim_vectors = np.array([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]])
    doc_vectors = np.array([[1.0, 0.05], [0.2, 1.0]])
    res = retrieval.coverage(claims, corpus, claim_embeddings=claim_vectors, doc_embeddings=doc_vectors)
    table = res.claims.set_index("claim_id")
    assert table["best_doc"].tolist() == ["d1", "d1", "d2"]
    assert table["shared_keywords"].tolist() == [4, 1, 0]
    assert table["covered"].tolist() == [True, False, False]
    row = res.summary.iloc[0]
    assert (row["n"], row["covered"]) == (3, 1) and row["ci_low"] < 1 / 3 < row["ci_high"]


def test_coverage_sample_on_demo(corpus):
    res = retrieval.coverage(corpus["benchmark"], corpus["documents"], claim_embeddings=corpus["benchmark_embeddings"],
                             doc_embeddings=corpus["doc_embeddings"], sample_size=25, rng=0)
    assert res.summary["scope"].tolist() == ["all claims", "random sample of 25"]
    assert res.summary.loc[1, "ci_high"] - res.summary.loc[1, "ci_low"] > res.summary.loc[0, "ci_high"] - res.summary.loc[0, "ci_low"]


def test_lsa_embeddings_rank_related_text_first():
    docs = ["magnesium lowers blood pressure", "yoga helps back pain", "vitamin d and bone density"]
    doc_v, query_v = retrieval.lsa_embeddings(docs, ["does magnesium lower pressure"], dim=2)
    assert np.argmax(doc_v @ query_v[0]) == 0
    np.testing.assert_allclose(np.linalg.norm(doc_v, axis=1), 1.0)


def test_options_are_checked_whatever_the_condition():
    docs = pd.DataFrame({"doc_id": ["a", "b", "c"], "text": ["cats purr", "dogs bark", "birds sing"]})
    queries = pd.DataFrame({"query_id": ["q"], "text": ["cats"]})
    with pytest.raises(ValueError, match=r"`alpha` must be in \[0.0, 1.0\]; got 7"):
        retrieval.search(docs, queries, condition="bm25", k=2, alpha=7)
    with pytest.raises(TypeError, match="`fd` must be a Series indexed by doc_id"):
        retrieval.search(docs, queries, condition="bm25", k=2, fd="nonsense")
    with pytest.raises(ValueError, match=r"`candidates` must be in \[1, None\]; got -3"):
        retrieval.search(docs, queries, condition="bm25", k=2, candidates=-3)
    with pytest.raises(ValueError, match="`method` must be one of"):
        retrieval.search(docs, queries, condition="cosine", k=2, method="okapi", doc_embeddings=np.eye(3),
                         query_embeddings=np.eye(3)[:1])
    with pytest.raises(ValueError, match="`candidates` must be at least `k`=3 for the hybrid; got 2"):
        retrieval.search(docs, queries, condition="hybrid", k=3, candidates=2, fd=pd.Series([1.0, 2.0, 3.0], index=list("abc")),
                         doc_embeddings=np.eye(3), query_embeddings=np.eye(3)[:1])
    # Valid options that a condition does not use are accepted (one options dict serves every condition).
    runs = retrieval.search(docs, queries, condition="bm25", k=2, alpha=0.3, candidates=5, fd=pd.Series([1.0, 2.0, 3.0], index=list("abc")))
    assert runs["doc_id"].tolist()[0] == "a"


def test_bm25_empty_queries_and_empty_corpus():
    docs = pd.DataFrame({"doc_id": ["a", "b", "c"], "text": ["cats purr", "dogs bark", "birds sing"]})
    queries = pd.DataFrame({"query_id": ["q1", "q2", "q3"], "text": ["the", "", "dogs"]})
    with pytest.warns(EvalkitWarning, match=r"2 query\(ies\) have no token .* query_id \['q1', 'q2'\]"):
        runs = retrieval.search(docs, queries, condition="bm25", k=2)
    empty = runs[runs["query_id"].isin(["q1", "q2"])]
    assert empty["score"].eq(0).all() and empty["doc_id"].tolist() == ["a", "b", "a", "b"]
    assert runs[runs["query_id"] == "q3"]["doc_id"].iloc[0] == "b"
    with pytest.raises(ValueError, match="`documents` has no word to index"):
        retrieval.search(docs.assign(text=["", "the", None]), queries.iloc[2:], condition="bm25", k=2)


def test_infinite_fd_star_is_refused():
    docs = pd.DataFrame({"doc_id": ["a", "b", "c"]})
    queries = pd.DataFrame({"query_id": ["q"]})
    fd = pd.Series([1.0, np.inf, 0.5], index=["a", "b", "c"])
    with pytest.raises(ValueError, match=r"`fd` has an infinite FD\* for doc_id\(s\) \['b'\]"):
        retrieval.search(docs, queries, condition="hybrid", k=3, fd=fd, doc_embeddings=np.eye(3), query_embeddings=np.eye(3)[:1])
    with pytest.raises(TypeError, match="`fd` must hold numbers"):
        retrieval.search(docs, queries, condition="hybrid", k=3, fd=fd.astype(str), doc_embeddings=np.eye(3),
                         query_embeddings=np.eye(3)[:1])


def test_lsa_embeddings_needs_two_documents():
    with pytest.raises(ValueError, match="`doc_texts` must hold at least 2 documents"):
        retrieval.lsa_embeddings(["cats purr softly"], ["cats"])
    docs, queries = retrieval.lsa_embeddings(["cats purr softly", "dogs bark loudly"], ["cats"])
    assert docs.shape == (2, 1) and queries.shape == (1, 1)
