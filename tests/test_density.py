import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, datasets, density


@pytest.fixture(scope="module")
def corpus():
    return datasets.load_demo("fd")


def test_fd_star_hand_computation():
    docs = pd.DataFrame({"doc_id": ["a", "b", "c", "d", "e", "f"], "n_tokens": [10, 20, 30, 100, 120, 140],
                         "source": ["review", "news", "review", "news", "review", "news"]})
    claims = pd.DataFrame({"doc_id": ["a", "a", "b", "c", "d", "e", "e", "f"],
                           "prob_fact": [0.5, 0.5, 0.4, 0.9, 0.5, 0.6, 0.6, 0.7]})
    table = density.fd_star(claims, docs, bins=2, authority={"review": 2.0, "news": 1.0})
    # fd_raw by hand: a 1/10, b .4/20, c .9/30, d .5/100, e 1.2/120, f .7/140
    raw = np.array([0.1, 0.02, 0.03, 0.005, 0.01, 0.005])
    np.testing.assert_allclose(table["fd_raw"], raw)
    assert table["length_bin"].astype(str).tolist() == ["bin1"] * 3 + ["bin2"] * 3
    z = np.concatenate([(raw[:3] - raw[:3].mean()) / raw[:3].std(ddof=1), (raw[3:] - raw[3:].mean()) / raw[3:].std(ddof=1)])
    np.testing.assert_allclose(table["z"], z)
    np.testing.assert_allclose(table["fd_star"], z * np.array([2, 1, 2, 1, 2, 1]))
    assert table["n_claims"].tolist() == [2, 1, 1, 1, 2, 1]
    assert list(table.columns) == density.TABLE_COLUMNS


def test_within_bin_z_has_mean_0_and_std_1(corpus):
    table = density.fd_star(corpus["claims"], corpus["documents"])
    grouped = table.groupby("length_bin", observed=True)["z"]
    np.testing.assert_allclose(grouped.mean(), 0, atol=1e-12)
    np.testing.assert_allclose(grouped.std(ddof=1), 1)
    assert all(195 <= n <= 205 for n in table["length_bin"].value_counts())


def test_length_bias_removed_on_demo(corpus):
    table = density.fd_star(corpus["claims"], corpus["documents"])
    bias = density.length_bias(table, rng=0)
    assert bias.loc["fd_raw", "r"] < -0.5 and bias.loc["fd_raw", "p_val"] < 1e-10
    assert bias.loc["fd_star", "p_val"] > 0.05
    for column in ("fd_raw", "fd_star"):
        ref = stats.spearmanr(table["n_tokens"], table[column])
        assert bias.loc[column, "r"] == pytest.approx(ref.statistic, abs=1e-12)
        assert bias.loc[column, "p_val"] == pytest.approx(ref.pvalue, rel=1e-9, abs=1e-300)
    assert (bias["method"] == "spearman").all() and (bias["note"] == "").all()
    assert list(bias.columns) == ["n", "r", "ci_low", "ci_high", "interval", "note", "p_val", "method"]


def _skewed_table(rng, n=25):
    length = np.round(np.exp(rng.normal(5, 0.7, n)))
    return pd.DataFrame({"n_tokens": length, "fd_raw": np.exp(-0.3 * np.log(length) + 0.5 * rng.normal(size=n))})


def _brute_force_bootstrap_t(x, y, n_resamples, seed, level=0.95):
    """Bootstrap-t on Fisher z of Pearson's r of (x, y), jackknife standard errors, the documented draws."""
    n = len(x)

    def z(rows):
        return np.arctanh(stats.pearsonr(x[rows], y[rows]).statistic)

    def jackknife_se(rows):
        values = np.array([z(np.delete(rows, i)) for i in range(len(rows))])
        return np.sqrt((len(rows) - 1) / len(rows) * ((values - values.mean()) ** 2).sum())

    everything = np.arange(n)
    theta, se = z(everything), jackknife_se(everything)
    idx = np.random.default_rng(seed).integers(0, n, (n_resamples, n), dtype=np.int32)  # the documented resample draws
    t = np.array([(z(i) - theta) / jackknife_se(i) for i in idx])
    q_low, q_high = np.quantile(t, [(1 - level) / 2, (1 + level) / 2])
    return np.tanh(theta - q_high * se), np.tanh(theta - q_low * se)


def test_length_bias_pearson_intervals_equal_scipy_and_a_brute_force_bootstrap_t(rng):
    table = _skewed_table(rng)
    with pytest.warns(EvalkitWarning, match="may cover less than claimed.*method='spearman' holds"):
        fisher = density.length_bias(table, columns=("fd_raw",), method="pearson", interval="fisher").loc["fd_raw"]
    ref = stats.pearsonr(table["n_tokens"], table["fd_raw"])
    ci = ref.confidence_interval(0.95)
    assert fisher["ci_low"] == pytest.approx(ci.low, abs=1e-12) and fisher["ci_high"] == pytest.approx(ci.high, abs=1e-12)
    assert fisher["interval"] == "Fisher z (normal theory)" and "Pearson's r" in fisher["note"]
    assert fisher["r"] == pytest.approx(ref.statistic, abs=1e-12) and fisher["p_val"] == pytest.approx(ref.pvalue, rel=1e-9)
    with pytest.warns(EvalkitWarning, match="may cover less than claimed"):
        out = density.length_bias(table, columns=("fd_raw",), method="pearson", n_resamples=80, rng=6).loc["fd_raw"]
    low, high = _brute_force_bootstrap_t(table["n_tokens"].to_numpy(), table["fd_raw"].to_numpy(), 80, 6)
    assert out["ci_low"] == pytest.approx(low, abs=1e-9) and out["ci_high"] == pytest.approx(high, abs=1e-9)
    assert out["interval"] == "studentized bootstrap on Fisher z" and out["p_val"] == fisher["p_val"]
    with pytest.raises(ValueError, match="`interval` must be one of"):
        density.length_bias(table, interval="bca", columns=("fd_raw",))
    with pytest.raises(ValueError, match="`method` must be one of"):
        density.length_bias(table, method="kendall", columns=("fd_raw",))


def test_length_bias_spearman_intervals_by_hand_and_a_brute_force_bootstrap_t(rng):
    table = _skewed_table(rng, n=30)
    x, y = table["n_tokens"].to_numpy(), table["fd_raw"].to_numpy()
    ref = stats.spearmanr(x, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no note: the default holds
        fisher = density.length_bias(table, columns=("fd_raw",), interval="fisher", confidence_level=0.9).loc["fd_raw"]
        out = density.length_bias(table, columns=("fd_raw",), n_resamples=80, rng=6).loc["fd_raw"]
    # Bonett & Wright (2000): Fisher's z of rho with variance (1 + rho^2 / 2) / (n - 3)
    rho, n = ref.statistic, len(x)
    half = stats.norm.ppf(0.95) * np.sqrt((1 + rho**2 / 2) / (n - 3))
    assert fisher["ci_low"] == pytest.approx(np.tanh(np.arctanh(rho) - half), abs=1e-12)
    assert fisher["ci_high"] == pytest.approx(np.tanh(np.arctanh(rho) + half), abs=1e-12)
    assert fisher["interval"] == "Fisher z, Bonett-Wright variance" and fisher["note"] == ""
    assert fisher["r"] == pytest.approx(rho, abs=1e-12) and fisher["p_val"] == pytest.approx(ref.pvalue, rel=1e-9)
    # the studentized interval is the bootstrap-t of Pearson's r of the sample's mid-ranks
    low, high = _brute_force_bootstrap_t(stats.rankdata(x), stats.rankdata(y), 80, 6)
    assert out["ci_low"] == pytest.approx(low, abs=1e-9) and out["ci_high"] == pytest.approx(high, abs=1e-9)
    assert out["ci_low"] < rho < out["ci_high"] and out["interval"] == "studentized bootstrap on Fisher z"


def test_length_bias_fisher_interval_notes_many_ties(rng):
    table = _skewed_table(rng, n=40)
    table.loc[table.index[:8], "fd_raw"] = 0.0  # 20% of the documents without a claim
    with pytest.warns(EvalkitWarning, match="'fd_raw' may cover less than claimed.*20% of the documents share one density"):
        fisher = density.length_bias(table, columns=("fd_raw",), interval="fisher").loc["fd_raw"]
    assert "interval='studentized' holds there" in fisher["note"] and np.isfinite(fisher["ci_low"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert density.length_bias(table, columns=("fd_raw",), rng=0).loc["fd_raw", "note"] == ""


def test_tier_spread_survives_on_demo(corpus):
    table = density.fd_star(corpus["claims"], corpus["documents"])
    spread = density.tier_spread(table).iloc[0]
    means = table.groupby("source")["fd_star"].mean()
    assert spread["spread"] == pytest.approx(means.std(ddof=0)) and not spread["collapsed"]
    assert means.idxmax() == "systematic_review"


def test_invariances(corpus):
    docs, claims = corpus["documents"], corpus["claims"]
    base = density.fd_star(claims, docs)
    shuffled = density.fd_star(claims.sample(frac=1, random_state=0), docs.sample(frac=1, random_state=1))
    pd.testing.assert_frame_equal(base, shuffled.loc[base.index])
    scaled = density.fd_star(claims.assign(prob_fact=claims["prob_fact"] * 0.5), docs)
    np.testing.assert_allclose(scaled["z"], base["z"], atol=1e-10)  # z is scale invariant


def test_documents_without_claims_and_tokenizers():
    docs = pd.DataFrame({"doc_id": ["a", "b"], "text": ["one two three four", "five six"]})
    claims = pd.DataFrame({"doc_id": ["a"], "prob_fact": [1.0]})
    table = density.fd_raw(claims, docs)
    assert table.loc["b", "fd_raw"] == 0 and table.attrs["n_without_claims"] == 1
    by_char = density.fd_raw(claims, docs, tokenizer=lambda text: len(text))
    assert by_char.loc["a", "n_tokens"] == len("one two three four")


@pytest.mark.parametrize(
    "claims, docs, message",
    [
        (pd.DataFrame({"doc_id": ["a"], "prob_fact": [1.2]}), None, r"row 0: prob_fact 1.2 is not a number in \[0, 1\]"),
        (pd.DataFrame({"doc_id": ["a"], "prob_fact": ["high"]}), None, "prob_fact 'high'"),
        (pd.DataFrame({"doc_id": ["zz"], "prob_fact": [0.5]}), None, r"unknown doc_id\(s\) \['zz'\]"),
        (pd.DataFrame({"doc_id": ["a"], "prob_fact": [0.5]}), pd.DataFrame({"doc_id": ["a"], "n_tokens": [0]}), "has 0 tokens"),
        (pd.DataFrame({"doc_id": ["a"], "prob_fact": [0.5]}), pd.DataFrame({"doc_id": [], "n_tokens": []}), "is empty"),
        (pd.DataFrame({"doc_id": ["a"], "prob_fact": [0.5]}), pd.DataFrame({"doc_id": ["a", "a"], "n_tokens": [1, 2]}), "more than once"),
    ],
)
def test_fd_bad_input(claims, docs, message):
    docs = pd.DataFrame({"doc_id": ["a", "b"], "n_tokens": [10, 20]}) if docs is None else docs
    with pytest.raises(ValueError, match=message):
        density.fd_raw(claims, docs)


def test_degenerate_bin_and_authority_warnings():
    docs = pd.DataFrame({"doc_id": list("abcd"), "n_tokens": [10, 10, 50, 60], "source": ["x", "x", "y", "z"]})
    claims = pd.DataFrame({"doc_id": list("abcd"), "prob_fact": [0.5, 0.5, 0.2, 0.9]})
    with pytest.warns(EvalkitWarning, match=r"length bin\(s\) \['s'\] hold a single document or no spread"):
        table = density.fd_star(claims, docs, edges=[0, 20, 100], labels=["s", "l"])
    assert table.loc[["a", "b"], "z"].tolist() == [0.0, 0.0]
    with pytest.warns(EvalkitWarning, match=r"no weight for source\(s\) \['z'\]"):
        density.fd_star(claims.assign(prob_fact=[0.5, 0.4, 0.2, 0.9]), docs, edges=[0, 20, 100], labels=["s", "l"],
                        authority={"x": 1.0, "y": 2.0})


def test_length_bins_errors():
    counts = pd.Series([10, 20, 30], index=list("abc"))
    with pytest.raises(ValueError, match="outside the edges"):
        density.length_bins(counts, edges=[15, 40])
    with pytest.raises(ValueError, match="increasing"):
        density.length_bins(counts, edges=[40, 15])
    with pytest.raises(ValueError, match="name the 2 bins"):
        density.length_bins(counts, bins=2, labels=["x"])
    with pytest.raises(ValueError, match="pass explicit `edges`"):
        density.length_bins(pd.Series([5, 5, 5]), bins=3)


def test_prob_fact_heuristic_orders_specificity():
    scores = density.estimate_prob_fact([
        "In 240 patients, the drug lowered blood pressure by 12 mmHg (95% CI 8-16) versus placebo.",
        "A randomised trial found fewer relapses.",
        "Many people like tea or coffee.",
        "Could vitamin D perhaps help?",
    ])
    assert scores.is_monotonic_decreasing and scores.iloc[0] == 0.9 and scores.iloc[-1] == 0.0
    assert density.split_sentences("") == []


def test_claim_without_doc_id_names_its_row():
    docs = pd.DataFrame({"doc_id": ["a", "b"], "n_tokens": [10, 20]})
    # A missing id must not be counted for the last document (factorize code -1 used as an index).
    for missing in (None, np.nan):
        claims = pd.DataFrame({"doc_id": ["a", missing, "b"], "prob_fact": [0.5, 0.9, 0.2]}, index=[7, 8, 9])
        with pytest.raises(ValueError, match=r"`doc_claims` row 8: doc_id is missing.*1 row\(s\) affected"):
            density.fd_raw(claims, docs)
        with pytest.raises(ValueError, match="row 8: doc_id is missing"):
            density.fd_star(claims, docs, bins=1)
    with pytest.raises(ValueError, match="`documents` row 1: doc_id is missing"):
        density.fd_raw(pd.DataFrame({"doc_id": ["a"], "prob_fact": [0.5]}),
                       pd.DataFrame({"doc_id": ["a", None], "n_tokens": [10, 20]}))


def test_claims_match_documents_by_id_whatever_the_order(rng):
    ids = np.array([f"doc{i}" for i in range(300)])
    docs = pd.DataFrame({"doc_id": ids[rng.permutation(300)], "n_tokens": rng.integers(5, 50, 300)})
    claims = pd.DataFrame({"doc_id": rng.choice(ids[:250], 2000), "prob_fact": rng.random(2000)})
    out = density.fd_raw(claims, docs)
    grouped = claims.groupby("doc_id")["prob_fact"].agg(["sum", "size"]).reindex(docs["doc_id"])
    np.testing.assert_allclose(out["fd_raw"], grouped["sum"].fillna(0.0).to_numpy() / docs["n_tokens"], rtol=1e-12)
    assert out["n_claims"].tolist() == grouped["size"].fillna(0).astype(int).tolist()
    assert out.index.tolist() == docs["doc_id"].tolist() and out.attrs["n_without_claims"] == 50
    with pytest.raises(ValueError, match=r"unknown doc_id\(s\) \['zz', 'yy'\]"):
        density.fd_raw(pd.concat([claims, pd.DataFrame({"doc_id": ["zz", "yy", "zz"], "prob_fact": 0.5})]), docs)


@pytest.mark.parametrize(
    "authority, error, message",
    [
        ({"news": float("nan")}, ValueError, r"`authority` weight for source 'news' must be a finite number >= 0; got nan"),
        ({"news": -0.5}, ValueError, r"source 'news' must be a finite number >= 0; got -0.5"),
        ({"news": np.inf}, ValueError, "finite number"),
        ({"news": "high"}, TypeError, r"`authority` weight for source 'news' must be a number; got 'high'"),
        ({"news": True}, TypeError, "must be a number"),
        ([("news", 1.0)], TypeError, "`authority` must be a mapping"),
    ],
)
def test_authority_weights_are_checked(authority, error, message):
    docs = pd.DataFrame({"doc_id": list("abcd"), "n_tokens": [10, 12, 50, 60], "source": ["news", "blog"] * 2})
    claims = pd.DataFrame({"doc_id": list("abcd"), "prob_fact": [0.5, 0.4, 0.2, 0.9]})
    with pytest.raises(error, match=message):
        density.fd_star(claims, docs, bins=2, authority=authority)
    table = density.fd_star(claims, docs, bins=2, authority={"news": 0.0, "blog": 2})
    assert (table.loc[["a", "c"], "fd_star"] == 0).all() and table.loc["b", "authority"] == 2.0
