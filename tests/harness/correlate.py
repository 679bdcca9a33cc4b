"""Correlation with human ratings: correlate.correlate, compare_metrics, the TCVA paper's test."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from tests.harness.core import (
    Design,
    Entry,
    _coefficient,
    _pairs_design,
    _population_rng,
    _slow,
    _summeval_table,
    _tcva_release,
    _usr,
)

# ===================================================================================================
# correlation, agreement, FD* length bias and retrieval: the intervals and tests outside the inference lane
# ===================================================================================================
# Real data sets are resampled with replacement (n independent draws from the set's empirical distribution),
# so the truth is exactly the coefficient computed on the whole set; synthetic designs draw from a fixed
# finite population of 20,000 (or an infinite process), seeded so that their truth is fixed too.



@functools.cache
def _synthetic_scores() -> pd.DataFrame:
    """20,000 items: 1-5 human ratings piled at the top, a bounded score with ties at 0 and 1, a skewed score."""
    from scipy import stats

    rng = _population_rng("synthetic scores")
    n = 20_000
    quality = rng.normal(size=n)
    human = np.digitize(quality + 0.7 * rng.normal(size=n), [-2.6, -2.1, -1.5, -0.55]) + 1.0  # P(5) ~ 0.7
    bounded = np.clip(np.round(stats.norm.cdf(0.9 * quality + 0.8 * rng.normal(size=n) + 0.6) * 1.25 - 0.1, 1), 0, 1)
    skewed = np.exp(0.5 * quality + 0.6 * rng.normal(size=n))
    other = np.clip(np.round(stats.norm.cdf(0.9 * quality + 0.8 * rng.normal(size=n) + 0.6) * 1.25 - 0.1, 1), 0, 1)
    return pd.DataFrame({"human": human, "bounded": bounded, "skewed": skewed, "other": other})


@functools.cache
def _synthetic_clustered() -> pd.DataFrame:
    """3,000 clusters of 6 items (like the 5-6 responses to one USR dialogue): a shared cluster effect."""
    rng = _population_rng("synthetic clustered")
    clusters, size = 3_000, 6
    effect = np.repeat(rng.normal(size=clusters), size)
    human = np.digitize(0.9 * effect + 0.5 * rng.normal(size=clusters * size), [-1.6, -0.9, -0.2, 0.6]) + 1.0
    score = 0.9 * effect + 0.7 * rng.normal(size=clusters * size)
    return pd.DataFrame({"cluster": np.repeat(np.arange(clusters), size), "human": human, "score": score})


def _clustered_design(method: str) -> Design:
    @functools.cache
    def truth():
        t = _synthetic_clustered()
        return _coefficient(t["score"].to_numpy(), t["human"].to_numpy(), method)

    def draw(rng, n):
        t = _synthetic_clustered()
        picked = rng.integers(0, t["cluster"].iat[-1] + 1, -(-n // 6))
        rows = (picked[:, None] * 6 + np.arange(6)).ravel()[:n]
        return {"x": t["score"].to_numpy()[rows], "y": t["human"].to_numpy()[rows], "cluster": t["cluster"].to_numpy()[rows],
                "truth": truth()}

    return Design(f"clustered-6-{method}", "whole clusters of 6 items sharing a cluster effect (dialogues, documents)",
                  draw)


def _correlation_designs(method: str, *, null: bool = False) -> tuple[Design, ...]:
    summeval = lambda: _summeval_table()  # noqa: E731
    designs = [
        _pairs_design("summeval-consistency", "SummEval: CTC consistency score vs the experts' consistency (piled at 5)",
                      summeval, "CTC_D_CNNDM_Consistency", "consistency", method, null=null, data="summeval"),
        _pairs_design("summeval-relevance", "SummEval: BERTScore vs the experts' relevance", summeval, "bert_score_f",
                      "relevance", method, null=null, data="summeval"),
        _pairs_design("tcva-usr", "TCVA release, USR: TCVA T=0.9 (ties at 0 and 1) vs Maintains Context",
                      lambda: _tcva_release("usr"), "tcva", "human", method, null=null, data="tcva"),
        _pairs_design("synthetic-bounded", "bounded score tied at 0 and 1 vs 1-5 ratings piled at the top",
                      _synthetic_scores, "bounded", "human", method, null=null),
        _slow(_pairs_design("synthetic-skewed", "log-normal score vs 1-5 ratings piled at the top", _synthetic_scores,
                            "skewed", "human", method, null=null)),
    ]
    return tuple(designs)


def _correlate(sample, level, *, method="spearman", clustered=False, **options):
    from evalkit import correlate

    index = [f"i{k}" for k in range(len(sample["x"]))]
    if clustered:
        options["cluster"] = pd.Series(sample["cluster"], index=index)
    row = correlate.correlate(pd.Series(sample["x"], index=index, name="score"), pd.Series(sample["y"], index=index),
                              method=method, confidence_level=level, **options).iloc[0]
    return row["ci_low"], row["ci_high"], row["r"]


@functools.cache
def _usr_dialogues() -> pd.DataFrame:
    """The TCVA release's 198 USR responses with TCVA T=0.9, the Maintains Context mean and their dialogue."""
    _, items = _usr()
    table = _tcva_release("usr")
    return table.assign(cluster=items["context_id"].reindex(table.index).to_numpy()).dropna()


def _usr_dialogue_design(method: str) -> Design:
    """Whole dialogues drawn with replacement until n responses: the responses to one context stay together."""

    @functools.cache
    def truth():
        t = _usr_dialogues()
        return _coefficient(t["tcva"].to_numpy(), t["human"].to_numpy(), method)

    def draw(rng, n):
        t = _usr_dialogues()
        groups = [g.index for _, g in t.groupby("cluster", sort=True)]
        rows = []
        while sum(map(len, rows)) < n:
            rows.append(groups[rng.integers(0, len(groups))])
        picked = t.loc[np.concatenate(rows)]
        labels = np.concatenate([[i] * len(r) for i, r in enumerate(rows)])
        return {"x": picked["tcva"].to_numpy(), "y": picked["human"].to_numpy(), "cluster": labels, "truth": truth()}

    return Design(f"tcva-usr-dialogues-{method}", "TCVA release, USR: whole dialogues (their 1-6 scored responses) drawn "
                  "until n responses", draw, data=("tcva", "usr"))


def _correlate_p(sample, alpha, *, method="spearman"):
    from evalkit import correlate

    index = [f"i{k}" for k in range(len(sample["x"]))]
    row = correlate.correlate(pd.Series(sample["x"], index=index, name="score"), pd.Series(sample["y"], index=index),
                              method=method, n_resamples=0).iloc[0]
    return row["p_val"]


# ---- summary and system level: n is the number of groups (documents, systems)
def _draw_documents(rng, n, docs, *, null: bool, truth):
    """n documents drawn with replacement, their items stacked with the document as ``by`` (shuffled within it if null)."""
    xs, ys, by = [], [], []
    for k, d in enumerate(rng.integers(0, len(docs), n)):
        x, y = docs[d]
        if null:
            y = y[rng.permutation(len(y))]
        xs.append(x), ys.append(y), by.append(np.full(len(x), k))
    return {"x": np.concatenate(xs), "y": np.concatenate(ys), "by": np.concatenate(by), "truth": 0.0 if null else truth()}


def _summary_design(method: str, *, null: bool = False) -> Design:
    """SummEval by source document: n documents drawn from the 100, each with its 16 system summaries."""

    @functools.cache
    def groups():
        t = _summeval_table()
        return [(g["CTC_D_CNNDM_Consistency"].to_numpy(), g["consistency"].to_numpy()) for _, g in t.groupby("doc_id", sort=True)]

    @functools.cache
    def truth():
        values = [_coefficient(x, y, method) for x, y in groups() if np.ptp(x) > 0 and np.ptp(y) > 0]
        return float(np.mean(values))

    def draw(rng, n):
        return _draw_documents(rng, n, groups(), null=null, truth=truth)

    return Design(f"summeval-by-document{'-null' if null else ''}-{method}",
                  "SummEval: n source documents with their 16 summaries, CTC consistency vs experts"
                  + (" (shuffled within document)" if null else ""), draw, data="summeval")


@functools.cache
def _synthetic_groups() -> list:
    """5,000 documents of 4-12 items whose within-document correlation varies (mean about 0.35)."""
    rng = _population_rng("synthetic groups")
    out = []
    for _ in range(5_000):
        m = int(rng.integers(4, 13))
        rho = float(np.clip(rng.normal(0.35, 0.25), -0.9, 0.95))
        z = rng.normal(size=m)
        h = np.digitize(rho * z + np.sqrt(1 - rho**2) * rng.normal(size=m), [-1.5, -0.7, 0.0, 0.8]) + 1.0
        out.append((np.round(z, 1), h))
    return out


def _synthetic_summary_design(method: str, *, null: bool = False) -> Design:
    @functools.cache
    def truth():
        values = [_coefficient(x, y, method) for x, y in _synthetic_groups() if np.ptp(x) > 0 and np.ptp(y) > 0]
        return float(np.mean(values))

    def draw(rng, n):
        return _draw_documents(rng, n, _synthetic_groups(), null=null, truth=truth)

    return Design(f"synthetic-documents{'-null' if null else ''}-{method}",
                  "documents of 4-12 items, within-document correlation varying around 0.35, 1-5 ratings"
                  + (" (shuffled within document)" if null else ""), draw)


@functools.cache
def _synthetic_systems() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """5,000 systems with 30 items each: per-item metric and human scores; truth on the per-system means."""
    rng = _population_rng("synthetic systems")
    systems, m = 5_000, 30
    quality, bias = rng.normal(size=systems), rng.normal(size=systems)
    metric = (0.8 * quality + 0.6 * bias)[:, None] + rng.normal(size=(systems, m))
    human = np.clip(np.round(3.5 + 0.5 * quality[:, None] + rng.normal(size=(systems, m))), 1, 5)
    return metric, human, np.arange(systems)


def _system_design(method: str, *, null: bool = False) -> Design:
    @functools.cache
    def truth():
        metric, human, _ = _synthetic_systems()
        return _coefficient(metric.mean(axis=1), human.mean(axis=1), method)

    def draw(rng, n):
        metric, human, _ = _synthetic_systems()
        i = rng.integers(0, len(metric), n)
        j = rng.integers(0, len(metric), n) if null else i
        m = metric.shape[1]
        return {"x": metric[i].ravel(), "y": human[j].ravel(), "by": np.repeat(np.arange(n), m), "truth": 0.0 if null else truth()}

    return Design(f"synthetic-systems{'-null' if null else ''}-{method}",
                  "n systems drawn from 5,000, 30 items each (1-5 human ratings), a system-specific metric bias"
                  + (" (metric and human from different systems)" if null else ""), draw)


def _grouped(sample, level, *, kind, method="spearman", p_value=False, **options):
    from evalkit import correlate

    index = [f"i{k}" for k in range(len(sample["x"]))]
    row = correlate.correlate(pd.Series(sample["x"], index=index, name="score"), pd.Series(sample["y"], index=index),
                              method=method, level=kind, by=pd.Series(sample["by"], index=index),
                              n_resamples=0 if p_value else 1000, **({} if p_value else {"confidence_level": level}),
                              **options).iloc[0]
    return row["p_val"] if p_value else (row["ci_low"], row["ci_high"], row["r"])


# ---- two metrics against the same humans
def _triple_design(name, description, population, a: str, b: str, h: str, *, null: bool, data=None) -> Design:
    """(a, b, h) drawn from a table. ``null``: a and b swapped at random per item, so both correlate equally with h.

    Both scores are first turned into percentile ranks over the table (Spearman's coefficients do not change),
    so that swapping mixes values on one scale.
    """

    @functools.cache
    def ranked():
        t = population()
        return (t[a].rank(pct=True).to_numpy(), t[b].rank(pct=True).to_numpy(), t[h].to_numpy(float))

    @functools.cache
    def truth():
        x, y, z = ranked()
        return _coefficient(x, z, "spearman") - _coefficient(y, z, "spearman")

    def draw(rng, n):
        x, y, z = ranked()
        i = rng.integers(0, len(z), n)
        xa, xb = x[i], y[i]
        if null:
            swap = rng.random(n) < 0.5
            xa, xb = np.where(swap, xb, xa), np.where(swap, xa, xb)
        return {"a": xa, "b": xb, "h": z[i], "truth": 0.0 if null else truth()}

    return Design(f"{name}{'-null' if null else ''}", description + (" (a and b swapped at random per item: equal "
                  "correlations)" if null else ""), draw, data=data)


@functools.cache
def _gaussian_triple() -> pd.DataFrame:
    rng = _population_rng("gaussian triple")
    n = 20_000
    cov = np.array([[1.0, 0.6, 0.45], [0.6, 1.0, 0.45], [0.45, 0.45, 1.0]])
    x = rng.multivariate_normal(np.zeros(3), cov, size=n)
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "h": x[:, 2]})


def _two_metric_designs(*, null: bool) -> tuple[Design, ...]:
    return (
        _triple_design("tcva-usr-vs-ragas", "TCVA release, USR: TCVA T=0.9 vs RAGAS against Maintains Context",
                       lambda: _tcva_release("usr"), "tcva", "ragas", "human", null=null, data="tcva"),
        _triple_design("tcva-summeval-vs-ragas", "TCVA release, SummEval: TCVA T=0.9 vs RAGAS against consistency",
                       lambda: _tcva_release("summeval"), "tcva", "ragas", "human", null=null, data="tcva"),
        _triple_design("summeval-ctc-vs-bartscore", "SummEval: CTC consistency vs BARTScore against the experts' consistency",
                       _summeval_table, "CTC_D_CNNDM_Consistency", "bart_score_cnn_src_hypo", "consistency", null=null,
                       data="summeval"),
        _triple_design("synthetic-bounded-pair", "two bounded scores tied at 0 and 1 against 1-5 ratings piled at the top",
                       _synthetic_scores, "bounded", "other", "human", null=null),
        _triple_design("gaussian-pair", "trivariate normal: r(a, h) = r(b, h) = 0.45, r(a, b) = 0.6", _gaussian_triple,
                       "a", "b", "h", null=null),
    )


def _compare(sample, level, *, test="williams", kind="interval", method="spearman"):
    from evalkit import correlate

    index = [f"i{k}" for k in range(len(sample["h"]))]
    row = correlate.compare_metrics(pd.Series(sample["a"], index=index), pd.Series(sample["b"], index=index),
                                    pd.Series(sample["h"], index=index), method=method, test=test,
                                    **({"confidence_level": level} if kind == "interval" else {})).iloc[0]
    return (row["ci_low"], row["ci_high"], row["delta"]) if kind == "interval" else row["p_val"]


def _paper(sample, alpha):
    from evalkit import correlate

    index = [f"i{k}" for k in range(len(sample["h"]))]
    return correlate.paired_bootstrap_tcva_paper(pd.Series(sample["a"], index=index), pd.Series(sample["b"], index=index),
                                                 pd.Series(sample["h"], index=index)).iloc[0]["p_val"]


ENTRIES = [
    Entry("correlate.correlate", "spearman, dataset level, percentile bootstrap (default)", "interval", _correlate,
          _correlation_designs("spearman"), default=True),
    Entry("correlate.correlate", "kendall, dataset level, percentile bootstrap", "interval",
          functools.partial(_correlate, method="kendall"), _correlation_designs("kendall"), slow=True),
    Entry("correlate.correlate", "pearson, dataset level, percentile bootstrap", "interval",
          functools.partial(_correlate, method="pearson"), _correlation_designs("pearson")),
    Entry("correlate.correlate", "spearman, dataset level, BCa bootstrap", "interval",
          functools.partial(_correlate, interval="BCa"), _correlation_designs("spearman")),
    Entry("correlate.correlate", "spearman, dataset level, percentile bootstrap over items, clustered items", "interval",
          _correlate, (_clustered_design("spearman"), _usr_dialogue_design("spearman"))),
    Entry("correlate.correlate", "spearman, dataset level, percentile bootstrap over clusters (cluster=)", "interval",
          functools.partial(_correlate, clustered=True), (_clustered_design("spearman"), _usr_dialogue_design("spearman"))),
    Entry("correlate.correlate", "spearman p-value, dataset level (default)", "test", _correlate_p,
          _correlation_designs("spearman", null=True), default=True),
    Entry("correlate.correlate", "kendall p-value, dataset level", "test", functools.partial(_correlate_p, method="kendall"),
          _correlation_designs("kendall", null=True)),
    Entry("correlate.correlate", "pearson p-value, dataset level", "test", functools.partial(_correlate_p, method="pearson"),
          _correlation_designs("pearson", null=True)),
    Entry("correlate.correlate", "spearman, summary level, t interval over documents (interval='auto')", "interval",
          functools.partial(_grouped, kind="summary"), (_summary_design("spearman"), _synthetic_summary_design("spearman"))),
    Entry("correlate.correlate", "spearman, summary level, percentile bootstrap over documents", "interval",
          functools.partial(_grouped, kind="summary", interval="percentile"),
          (_summary_design("spearman"), _synthetic_summary_design("spearman"))),
    Entry("correlate.correlate", "spearman p-value, summary level (t-test over documents)", "test",
          lambda s, a: _grouped(s, a, kind="summary", p_value=True),
          (_summary_design("spearman", null=True), _synthetic_summary_design("spearman", null=True))),
    Entry("correlate.correlate", "spearman, system level, percentile bootstrap over systems", "interval",
          functools.partial(_grouped, kind="system"), (_system_design("spearman"),)),
    Entry("correlate.correlate", "spearman p-value, system level", "test", lambda s, a: _grouped(s, a, kind="system", p_value=True),
          (_system_design("spearman", null=True),)),
    Entry("correlate.compare_metrics", "Williams test (default)", "test", functools.partial(_compare, kind="test"),
          _two_metric_designs(null=True), default=True),
    Entry("correlate.compare_metrics", "Zou interval for the difference (default)", "interval", _compare,
          _two_metric_designs(null=False) + _two_metric_designs(null=True), default=True),
    Entry("correlate.compare_metrics", "paired bootstrap test", "test", functools.partial(_compare, test="bootstrap", kind="test"),
          _two_metric_designs(null=True), slow=True),
    Entry("correlate.compare_metrics", "paired bootstrap percentile interval", "interval",
          functools.partial(_compare, test="bootstrap"), _two_metric_designs(null=False), slow=True),
    Entry("correlate.paired_bootstrap_tcva_paper", "the TCVA paper's p-value, reproduced as published (default)", "test",
          _paper, _two_metric_designs(null=True), default=True, slow=True, test_reps=100,  # size 0.14-0.28 over 100 draws
          invalid="a one-sided tail measured from minus the observed difference, not a test of a zero difference"),
]
