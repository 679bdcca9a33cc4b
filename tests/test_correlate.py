
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, correlate

SCIPY = {"spearman": stats.spearmanr, "kendall": stats.kendalltau, "pearson": stats.pearsonr}


@pytest.fixture
def rated(rng):
    n = 80
    human = pd.Series(rng.integers(1, 6, n) + rng.normal(0, 0.3, n), index=[f"it{i:03d}" for i in range(n)], name="human")
    scores = pd.DataFrame({t: human + rng.normal(0, 1.0 + 2 * t, n) for t in (0.1, 0.5, 0.9)}, index=human.index)
    scores.columns.name = "temperature"
    groups = pd.Series([f"doc{i % 8}" for i in range(n)], index=human.index, name="document")
    return scores, human, groups


@pytest.mark.parametrize("method", ["spearman", "kendall", "pearson"])
def test_dataset_level_matches_scipy(rated, method):
    scores, human, _ = rated
    out = correlate.correlate(scores, human, method=method, rng=0, n_resamples=200)
    for t in scores.columns:
        ref = SCIPY[method](scores[t], human)
        assert out.loc[t, "r"] == pytest.approx(ref.statistic, rel=1e-12)
        assert out.loc[t, "p_val"] == pytest.approx(ref.pvalue, rel=1e-9)
        assert out.loc[t, "ci_low"] < out.loc[t, "r"] < out.loc[t, "ci_high"]
    assert (out["n"] == 80).all() and (out["method"] == method).all() and (out["level"] == "dataset").all()


def test_alignment_is_by_index_not_position(rated):
    scores, human, _ = rated
    shuffled = human.sample(frac=1.0, random_state=3)
    a = correlate.correlate(scores, human, n_resamples=0)
    b = correlate.correlate(scores, shuffled, n_resamples=0)
    pd.testing.assert_frame_equal(a, b)


def test_nan_omitted_per_column(rated):
    scores, human, _ = rated
    scores = scores.copy()
    scores.iloc[:5, 0] = np.nan
    out = correlate.correlate(scores, human, rng=1, n_resamples=100)
    assert out["n"].tolist() == [75, 80, 80]
    ref = stats.spearmanr(scores.iloc[5:, 0], human.iloc[5:])
    assert out.iloc[0]["r"] == pytest.approx(ref.statistic)
    with pytest.raises(ValueError, match="nan_policy='raise'"):
        correlate.correlate(scores, human, nan_policy="raise")
    assert np.isnan(correlate.correlate(scores, human, nan_policy="propagate", n_resamples=0).iloc[0]["r"])


def test_summary_level_matches_a_plain_loop(rated):
    scores, human, groups = rated
    scores = scores.copy()
    # Make one group constant in the 0.9 column: it must be skipped and counted for that column only.
    scores.loc[groups == "doc3", 0.9] = 0.5
    out = correlate.correlate(scores, human, level="summary", by=groups, rng=0, n_resamples=300)
    for t in scores.columns:
        rs = []
        for _, idx in groups.groupby(groups).groups.items():
            x, y = scores.loc[idx, t], human.loc[idx]
            if x.nunique() > 1 and y.nunique() > 1:
                rs.append(stats.spearmanr(x, y).statistic)
        assert out.loc[t, "r"] == pytest.approx(np.mean(rs), rel=1e-12)
        assert out.loc[t, "n_groups"] == len(rs)
        assert out.loc[t, "p_val"] == pytest.approx(stats.ttest_1samp(rs, 0).pvalue)
    assert out["n_skipped"].tolist() == [0, 0, 1]
    assert out.loc[0.9, "n"] == 70


def test_summary_level_by_index_level(rated):
    scores, human, groups = rated
    multi = scores.set_index(pd.MultiIndex.from_arrays([scores.index, groups], names=["item_id", "document"]))
    human_multi = human.set_axis(multi.index)
    a = correlate.correlate(multi, human_multi, level="summary", by="document", n_resamples=0)
    b = correlate.correlate(scores, human, level="summary", by=groups, n_resamples=0)
    np.testing.assert_allclose(a["r"], b["r"])


def test_system_level_correlates_group_means(rated):
    scores, human, groups = rated
    out = correlate.correlate(scores, human, level="system", by=groups, method="pearson", n_resamples=0)
    means = scores.groupby(groups).mean()
    hmeans = human.groupby(groups).mean()
    for t in scores.columns:
        assert out.loc[t, "r"] == pytest.approx(stats.pearsonr(means[t], hmeans).statistic)
    assert (out["n"] == 8).all() and (out["level"] == "system").all()


def test_bootstrap_is_reproducible_and_vectorized_columns_agree(rated):
    scores, human, _ = rated
    a = correlate.correlate(scores, human, rng=7, n_resamples=300)
    b = correlate.correlate(scores, human, rng=7, n_resamples=300)
    pd.testing.assert_frame_equal(a, b)
    # Column 0.1 alone with the same seed gives the same CI as inside the vectorized run.
    single = correlate.correlate(scores[[0.1]], human, rng=7, n_resamples=300)
    assert single.loc[0.1, "ci_low"] == pytest.approx(a.loc[0.1, "ci_low"])


def test_long_human_table_is_averaged(rated):
    scores, human, _ = rated
    long = pd.concat([pd.DataFrame({"item_id": human.index, "annotator": k, "rating": human + d})
                      for k, d in (("x", -0.5), ("y", 0.5))])
    a = correlate.correlate(scores, long, n_resamples=0)
    b = correlate.correlate(scores, human, n_resamples=0)
    np.testing.assert_allclose(a["r"], b["r"])


def test_misaligned_and_bad_inputs(rated):
    scores, human, groups = rated
    with pytest.raises(ValueError, match="share no index labels"):
        correlate.correlate(scores, human.set_axis([f"x{i}" for i in range(len(human))]))
    with pytest.warns(EvalkitWarning, match=r"matched 79 item\(s\) by id; 1 of `scores`'s 80 ids match nothing in "
                                            r"`human` \(e.g. \['it000'\]\)") as caught:
        correlate.correlate(scores, human.iloc[1:], n_resamples=0)
    assert caught[0].filename == __file__
    with pytest.raises(TypeError, match="aligned by position"):
        correlate.correlate(scores, human.to_numpy())
    with pytest.raises(ValueError, match="unique index"):
        correlate.correlate(scores, pd.concat([human, human.iloc[:1]]))
    with pytest.raises(ValueError, match="`by` is required"):
        correlate.correlate(scores, human, level="summary")
    with pytest.raises(KeyError, match="not an index level"):
        correlate.correlate(scores, human, level="summary", by="document")
    with pytest.raises(ValueError, match="`method` must be one of"):
        correlate.correlate(scores, human, method="spearmans")
    with pytest.raises(ValueError, match="is empty"):
        correlate.correlate(scores.iloc[:0], human)
    with pytest.raises(KeyError, match=r"needs columns \['item_id', 'rating'\]"):
        correlate.correlate(scores, pd.DataFrame({"id": [1]}))


def test_mean_absolute_error(rated):
    scores, human, _ = rated
    out = correlate.mean_absolute_error(scores, human)
    for t in scores.columns:
        assert out[t] == pytest.approx(np.mean(np.abs(scores[t] - human)))


# ------------------------------------------------------------------ comparing metrics
def test_williams_reference_values():
    # psych::r.test(n = 103, r12 = .4, r13 = .5, r23 = .1): t = -0.89, p = 0.37 (Williams' test).
    t, p = correlate._williams(0.4, 0.5, 0.1, 103)
    assert round(t, 2) == -0.89 and round(p, 2) == 0.37
    # Zou (2007), example 2 (overlapping): r12 = .396, r13 = .179, r23 = .088, n = 66 -> (-.0929, .5168).
    low, high = correlate._zou_ci(0.396, 0.179, 0.088, 66, 0.95)
    assert (round(low, 3), round(high, 3)) == (-0.093, 0.517)


def test_compare_metrics_williams_uses_the_three_correlations(rated):
    """Pearson: Williams' t and Zou's interval as published; Spearman: the Bonett-Wright Fisher-z variance."""
    scores, human, _ = rated
    for method, func in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr)):
        res = correlate.compare_metrics(scores[0.1], scores[0.9], human, method=method)
        r12 = func(scores[0.1], human).statistic
        r13 = func(scores[0.9], human).statistic
        r23 = func(scores[0.1], scores[0.9]).statistic
        t, _ = correlate._williams(r12, r13, r23, 80)
        factor = 1.0 if method == "pearson" else 1 + ((r12 + r13) / 2) ** 2 / 2
        row = res.iloc[0]
        assert row["statistic"] == pytest.approx(t / np.sqrt(factor), rel=1e-12)
        assert row["p_val"] == pytest.approx(2 * stats.t.sf(abs(t) / np.sqrt(factor), 77), rel=1e-12)
        # Zou's interval, by hand from one Fisher-z interval per correlation
        halves = [1.959963984540054 * np.sqrt((1.0 if method == "pearson" else 1 + r**2 / 2) / 77) for r in (r12, r13)]
        l1, u1 = np.tanh(np.arctanh(r12) - halves[0]), np.tanh(np.arctanh(r12) + halves[0])
        l2, u2 = np.tanh(np.arctanh(r13) - halves[1]), np.tanh(np.arctanh(r13) + halves[1])
        c = ((r23 - r12 * r13 / 2) * (1 - r12**2 - r13**2 - r23**2) + r23**3) / ((1 - r12**2) * (1 - r13**2))
        low = r12 - r13 - np.sqrt((r12 - l1) ** 2 + (u2 - r13) ** 2 - 2 * c * (r12 - l1) * (u2 - r13))
        high = r12 - r13 + np.sqrt((u1 - r12) ** 2 + (r13 - l2) ** 2 - 2 * c * (u1 - r12) * (r13 - l2))
        assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low, rel=1e-12), pytest.approx(high, rel=1e-12))
        assert row["ci_low"] < row["delta"] < row["ci_high"] and row["interval"].startswith("Williams t")


def test_compare_metrics_against_several_columns_adjusts_the_family(rated):
    multipletests = pytest.importorskip("statsmodels.stats.multitest", reason="the reference is statsmodels, from the 'test' extra").multipletests

    scores, human, _ = rated
    others = scores[[0.1, 0.5]].assign(noise=scores[0.5] + np.random.default_rng(3).normal(0, 2, 80))
    res = correlate.compare_metrics(scores[0.9], others, human, adjust="holm")
    assert res["b"].tolist() == [0.1, 0.5, "noise"] and (res["a"] == 0.9).all() and (res["adjust"] == "holm").all()
    for name, row in zip(others.columns, res.itertuples(), strict=True):
        one = correlate.compare_metrics(scores[0.9], others[name], human).iloc[0]
        assert row.p_val == one["p_val"] and row.ci_low == one["ci_low"]
    np.testing.assert_allclose(res["p_adjusted"], multipletests(res["p_val"], method="holm")[1], rtol=0, atol=1e-15)
    plain = correlate.compare_metrics(scores[0.9], others, human)
    assert (plain["adjust"] == "none").all() and plain["p_adjusted"].equals(plain["p_val"])
    with pytest.raises(ValueError, match="`adjust` must be one of"):
        correlate.compare_metrics(scores[0.9], others, human, adjust="sidak")


def test_compare_metrics_bootstrap(rated):
    scores, human, _ = rated
    res = correlate.compare_metrics(scores[0.1], scores[0.9], human, test="bootstrap", n_resamples=2000, rng=0)
    row = res.iloc[0]
    assert 0 <= row["p_val"] <= 1 and row["ci_low"] < row["delta"] < row["ci_high"]
    same = correlate.compare_metrics(scores[0.1], scores[0.1], human, test="bootstrap", n_resamples=200, rng=0)
    assert same.loc[0, "delta"] == 0 and same.loc[0, "p_val"] == 1.0
    with pytest.raises(ValueError, match="`test` must be one of"):
        correlate.compare_metrics(scores[0.1], scores[0.9], human, test="fisher")
    with pytest.raises(TypeError, match="Series"):
        correlate.compare_metrics(scores, scores[0.9], human)


def test_paper_bootstrap_matches_a_loop(rated):
    scores, human, _ = rated
    a, b = scores[0.1].iloc[:30], scores[0.5].iloc[:30]
    with pytest.warns(EvalkitWarning, match="not a test of a zero difference"):
        res = correlate.paired_bootstrap_tcva_paper(a, b, human.iloc[:30], n_resamples=300)
    assert res.loc[0, "note"].startswith("the TCVA paper's statistic, not a test")
    state = np.random.RandomState(42)
    x, y, h = a.to_numpy(), b.to_numpy(), human.iloc[:30].to_numpy()
    delta = stats.spearmanr(x, h).statistic - stats.spearmanr(y, h).statistic
    hits = 0
    for _ in range(300):
        i = state.choice(30, size=30, replace=True)
        hits += stats.spearmanr(y[i], h[i]).statistic - stats.spearmanr(x[i], h[i]).statistic >= delta
    assert res.loc[0, "p_val"] == hits / 300


# ------------------------------------------------------------------ select_temperature
def test_select_temperature_is_honest(random_verdicts, rng):
    from evalkit import tcva

    table, items = random_verdicts
    truth = tcva.score(table, 0.8, items=items)
    human = truth + rng.normal(0, 0.05, len(truth))
    sel = correlate.select_temperature(table, human, temperatures=[0.1, 0.3, 0.5, 0.8, 1.0], items=items, rng=0)
    assert sel.temperature in (0.5, 0.8, 1.0)
    assert sel.folds["n_test"].sum() == len(items)
    assert set(sel.folds.columns) == {"fold", "n_train", "n_test", "temperature", "r_train", "r_test"}
    assert np.isfinite(sel.r_out_of_fold)
    assert "out of fold" in repr(sel)
    with pytest.raises(ValueError, match="needs at least 40 rated items"):
        correlate.select_temperature(table, human.iloc[:30], temperatures=[0.5], items=items, folds=20)


def test_select_temperature_leaves_out_missing_ratings_as_correlate_does(random_verdicts, rng):
    from evalkit import tcva

    table, items = random_verdicts
    human = tcva.score(table, 0.8, items=items) + rng.normal(0, 0.05, len(items))
    holes = human.copy()
    holes.iloc[[2, 9, 31]] = np.nan
    sel = correlate.select_temperature(table, holes, temperatures=[0.1, 0.5, 0.8], items=items, rng=0)
    same = correlate.select_temperature(table, holes.dropna(), temperatures=[0.1, 0.5, 0.8], items=items, rng=0)
    assert sel.folds["n_test"].sum() == len(items) - 3
    assert (sel.temperature, sel.r_in_sample, sel.r_out_of_fold) == (same.temperature, same.r_in_sample, same.r_out_of_fold)
    pd.testing.assert_frame_equal(sel.folds, same.folds)
    scores = tcva.sweep(table, [0.1, 0.5, 0.8], items=items)
    r = correlate.correlate(scores, holes, n_resamples=0)["r"]
    assert sel.r_in_sample == pytest.approx(r.max(), abs=1e-12)  # the same items as correlate's nan_policy="omit"


def test_select_temperature_with_constant_ratings_warns_with_nan(random_verdicts):
    table, items = random_verdicts
    constant = pd.Series(3.0, index=items)
    with pytest.warns(EvalkitWarning, match="undefined at every temperature on all 60 rated items, fold 0's training items"):
        sel = correlate.select_temperature(table, constant, temperatures=[0.1, 0.5], items=items, rng=0)
    assert np.isnan(sel.temperature) and np.isnan(sel.r_in_sample) and np.isnan(sel.r_out_of_fold)
    assert sel.folds["temperature"].isna().all()


def test_compare_metrics_refuses_metrics_scored_on_different_items(rated):
    scores, human, _ = rated
    a, b = scores[0.1].iloc[:60], scores[0.9].iloc[30:]
    with pytest.raises(ValueError, match=r"`a` and `b` must score the same items .*share 30 of the 80 items in either "
                                         r"\(`a` has 60, `b` has 50\)"):
        correlate.compare_metrics(a, b, human)
    shared = a.index.intersection(b.index)
    assert correlate.compare_metrics(a[shared], b[shared], human).loc[0, "n"] == 30
    holes = scores[0.9].copy()
    holes.iloc[:5] = np.nan  # the same items, some unscored: those rows are left out, as documented
    assert correlate.compare_metrics(scores[0.1], holes, human).loc[0, "n"] == 75


def test_constant_or_missing_human_ratings_warn_or_raise(rated):
    scores, human, _ = rated
    with pytest.warns(EvalkitWarning, match=r"human ratings are constant \(3 for all 80 items\)"):
        out = correlate.correlate(scores, human * 0 + 3, n_resamples=0)
    assert out["r"].isna().all() and out["p_val"].isna().all() and (out["n"] == 80).all()
    constant_column = scores.assign(**{"flat": 0.5})
    with pytest.warns(EvalkitWarning, match=r"'flat': the scores are constant"):
        out = correlate.correlate(constant_column, human, n_resamples=0)
    assert np.isnan(out.loc["flat", "r"]) and out.drop(index="flat")["r"].notna().all()
    with pytest.raises(ValueError, match=r"`human` has no rating for any of the 80 aligned items \(all NaN\)"):
        correlate.correlate(scores, human * np.nan, n_resamples=0)
    with pytest.warns(EvalkitWarning, match="human ratings are constant"):
        res = correlate.compare_metrics(scores[0.1], scores[0.5], human * 0 + 3)
    assert res.loc[0, "n"] == 80 and res[["r_a", "r_b", "statistic", "p_val", "ci_low", "ci_high"]].isna().all(axis=None)
    with pytest.warns(EvalkitWarning, match="every one of the 8 groups"):
        correlate.correlate(scores, human * 0 + 3, level="summary", by=rated[2], n_resamples=0)


def test_string_ratings_are_refused_naming_the_parameter(rated):
    scores, human, _ = rated
    labels = human.round().map({1: "bad", 2: "poor", 3: "fair", 4: "good", 5: "great"}).fillna("great")
    with pytest.raises(TypeError, match=r"`human` must hold numbers; got \w+ values such as \["):
        correlate.correlate(scores, labels, n_resamples=0)
    with pytest.raises(TypeError, match="`human` must hold numbers"):
        correlate.compare_metrics(scores[0.1], scores[0.5], labels)
    with pytest.raises(TypeError, match=r"`scores\[0.5\]` must hold numbers"):
        correlate.correlate(scores.assign(**{"0.5": "x"}).rename(columns={"0.5": 0.5}).drop(columns=[0.1, 0.9]), human)
    # Numbers stored as text are read as numbers.
    as_text = correlate.correlate(scores, human.astype(str), n_resamples=0)
    pd.testing.assert_frame_equal(as_text, correlate.correlate(scores, human, n_resamples=0))


@pytest.mark.parametrize("method", ["spearman", "kendall", "pearson"])
def test_small_n_p_values_are_exact_permutation_p_values(method):
    # Four perfectly ranked items: the asymptotic formula says p = 0; the exact two-sided p is 2 / 4!.
    human = pd.Series([1.0, 2.0, 3.0, 4.0], index=list("abcd"))
    scores = pd.Series([0.1, 0.2, 0.4, 0.9], index=list("abcd"), name="m")
    out = correlate.correlate(scores, human, method=method, n_resamples=0).iloc[0]
    assert out["r"] == pytest.approx(1.0 if method != "pearson" else stats.pearsonr(scores, human).statistic)
    if method != "pearson":
        assert out["p_val"] == pytest.approx(2 / 24, rel=1e-12)
    # Against scipy's own tools on a noisier sample of 6 (6! = 720 pairings).
    rng = np.random.default_rng(3)
    h = pd.Series(rng.normal(size=6), index=range(6))
    s = pd.Series(h.to_numpy() + rng.normal(size=6), index=range(6), name="m")
    got = correlate.correlate(s, h, method=method, n_resamples=0).iloc[0]["p_val"]
    if method == "kendall":
        ref = stats.kendalltau(s, h, method="exact").pvalue  # no ties: scipy's exact null distribution
    else:
        func = SCIPY[method]
        ref = stats.permutation_test((s.to_numpy(),), lambda x: func(x, h.to_numpy()).statistic,
                                     permutation_type="pairings", n_resamples=np.inf).pvalue
    assert got == pytest.approx(ref, rel=1e-9)
    # From 10 items on, scipy's usual p-value.
    h10 = pd.Series(rng.normal(size=10), index=range(10))
    s10 = pd.Series(h10.to_numpy() + rng.normal(size=10), index=range(10), name="m")
    assert correlate.correlate(s10, h10, method=method, n_resamples=0).iloc[0]["p_val"] == pytest.approx(
        SCIPY[method](s10, h10).pvalue, rel=1e-12)


# ------------------------------------------------------------------ ranking by counting
def today_statistic(x, y, method):
    """The bootstrap statistic before ranking by counting: scipy's rankdata on every resample."""
    def stat(idx):
        if method == "spearman":
            return correlate._pearson_lastaxis(stats.rankdata(x[:, idx], axis=-1), stats.rankdata(y[idx], axis=-1))
        return correlate._pearson_lastaxis(x[:, idx], y[idx])
    return stat


def scipy_ci(stat, n, k, *, n_resamples, method, rng):
    """scipy.stats.bootstrap over item positions, with the batch size correlate uses."""
    res = stats.bootstrap((np.arange(n),), lambda idx, axis=-1: stat(idx), vectorized=True, n_resamples=n_resamples,
                          method=method, rng=np.random.default_rng(rng), batch=max(1, 2_000_000 // (n * k)))
    return np.atleast_1d(res.confidence_interval.low), np.atleast_1d(res.confidence_interval.high)


@pytest.fixture
def tied(rng):
    """Scores and ratings with many ties (as rounded metric scores and Likert ratings have)."""
    n = 150
    human = pd.Series(rng.integers(1, 6, n).astype(float), index=[f"t{i:03d}" for i in range(n)])
    scores = pd.DataFrame({t: np.round(human * t + rng.normal(0, 1, n), 1) for t in (0.2, 0.5, 0.8, 1.0)}, index=human.index)
    return scores, human


def test_midranks_are_rankdata_bit_for_bit(rng):
    for shape, n_values in (((7,), 3), ((4, 50), 5), ((3, 6, 40), 40), ((2, 1), 1)):
        codes = rng.integers(0, n_values, shape)
        assert np.array_equal(correlate._midranks(codes, n_values), stats.rankdata(codes, axis=-1))
    values = np.round(rng.normal(size=(3, 60)), 1)
    stat = correlate._resampled_corr(values, values[0] ** 2, "spearman")
    idx = rng.integers(0, 60, (25, 60))
    assert np.array_equal(stat(idx), today_statistic(values, values[0] ** 2, "spearman")(idx))


@pytest.mark.parametrize("interval", ["percentile", "BCa", "basic"])
@pytest.mark.parametrize("method", ["spearman", "pearson"])
def test_dataset_cis_identical_to_scipy_bootstrap_with_rankdata(tied, method, interval):
    scores, human = tied
    out = correlate.correlate(scores, human, method=method, interval=interval, n_resamples=400, rng=7)
    x, y = scores.to_numpy().T, human.to_numpy()
    low, high = scipy_ci(today_statistic(x, y, method), len(y), x.shape[0], n_resamples=400,
                         method=interval, rng=7)
    assert np.array_equal(out["ci_low"].to_numpy(), low) and np.array_equal(out["ci_high"].to_numpy(), high)


def test_dataset_cis_identical_with_nan_columns(tied):
    scores, human = tied
    scores = scores.copy()
    scores.iloc[:9, 1] = np.nan
    out = correlate.correlate(scores, human, n_resamples=300, rng=3)
    # Columns sharing a validity mask are bootstrapped together on one rng stream, masks in sorted order
    # (the one with missing rows, False < True, first).
    gen = np.random.default_rng(3)
    masks = ~scores.isna().to_numpy()
    for mask, cols in ((masks[:, 1], [1]), (masks[:, 0], [0, 2, 3])):
        x, y = scores.to_numpy()[mask][:, cols].T, human.to_numpy()[mask]
        low, high = scipy_ci(today_statistic(x, y, "spearman"), len(y), len(cols), n_resamples=300,
                             method="percentile", rng=gen)
        assert np.array_equal(out["ci_low"].to_numpy()[cols], low)
        assert np.array_equal(out["ci_high"].to_numpy()[cols], high)


def test_summary_level_identical_to_a_per_group_loop(rng):
    n = 300
    groups = pd.Series(rng.integers(0, 40, n), index=[f"s{i:03d}" for i in range(n)]).map(lambda g: f"g{g}")
    human = pd.Series(rng.integers(1, 6, n).astype(float), index=groups.index)
    scores = pd.DataFrame({t: np.round(human * t + rng.normal(0, 1, n), 1) for t in (0.3, 0.9)}, index=groups.index)
    scores.iloc[::17, 0] = np.nan
    scores.loc[groups == "g5", 0.9] = 0.25  # constant in one column: skipped there only
    out = correlate.correlate(scores, human, level="summary", by=groups, n_resamples=500, rng=11, interval="percentile")
    # Today's loop: one group and one column at a time, rankdata per call.
    codes, labels = pd.factorize(groups)
    per_group = np.full((len(labels), 2), np.nan)
    for g in range(len(labels)):
        for j in range(2):
            sel = (codes == g) & scores.iloc[:, j].notna().to_numpy()
            x, y = scores.to_numpy()[sel, j], human.to_numpy()[sel]
            if len(x) >= 2 and np.ptp(x) > 0 and np.ptp(y) > 0:
                per_group[g, j] = correlate._pearson_lastaxis(stats.rankdata(x), stats.rankdata(y))
                if len(x) >= 3:
                    assert per_group[g, j] == pytest.approx(stats.spearmanr(x, y).statistic, rel=1e-12, abs=1e-15)
    assert np.array_equal(out["r"].to_numpy(), np.nanmean(per_group, axis=0))
    assert out["n_skipped"].tolist() == np.isnan(per_group).sum(axis=0).tolist()

    def stat(idx):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # resamples of groups all skipped in a column
            return np.nanmean(per_group[idx], axis=-2).T

    res = stats.bootstrap((np.arange(len(labels)),), lambda idx, axis=-1: stat(idx), vectorized=True, n_resamples=500,
                          method="percentile", rng=np.random.default_rng(11), batch=max(1, 2_000_000 // (len(labels) * 2)))
    assert np.array_equal(out["ci_low"].to_numpy(), res.confidence_interval.low)
    assert np.array_equal(out["ci_high"].to_numpy(), res.confidence_interval.high)
    # The default at summary level: the t interval of the t-test behind p_val (scipy's ttest_1samp).
    default = correlate.correlate(scores, human, level="summary", by=groups, rng=11)
    for j, column in enumerate(scores.columns):
        test = stats.ttest_1samp(per_group[~np.isnan(per_group[:, j]), j], 0.0)
        ci = test.confidence_interval(0.95)
        assert default.loc[column, "ci_low"] == pytest.approx(ci.low, abs=1e-14)
        assert default.loc[column, "ci_high"] == pytest.approx(ci.high, abs=1e-14)
        assert default.loc[column, "p_val"] == pytest.approx(test.pvalue, abs=1e-15)
    assert (default["interval"] == "t interval over groups").all()
    with pytest.raises(ValueError, match="interval='t' is the summary level's interval"):
        correlate.correlate(scores, human, interval="t")


def test_compare_metrics_bootstrap_identical_to_rankdata(tied):
    scores, human = tied
    res = correlate.compare_metrics(scores[0.2], scores[0.8], human, test="bootstrap", n_resamples=500, rng=5)
    data, y = scores[[0.2, 0.8]].to_numpy().T, human.to_numpy()
    today = today_statistic(data, y, "spearman")

    def stat(idx, axis=-1):
        r = today(idx)
        return r[0] - r[1]

    ref = stats.bootstrap((np.arange(len(y)),), stat, vectorized=True, n_resamples=500, method="percentile", rng=np.random.default_rng(5),
                          batch=max(1, 2_000_000 // len(y)))
    assert res.loc[0, "ci_low"] == ref.confidence_interval.low and res.loc[0, "ci_high"] == ref.confidence_interval.high


def test_resamples_with_constant_ratings_are_left_out_of_the_interval_with_a_warning():
    """Ratings piled at the top: some resamples have one rating only; they are left out, said in a warning and interval."""
    human = pd.Series([5.0] * 17 + [4.0, 3.0, 1.0], index=[f"i{k:02d}" for k in range(20)])
    score = pd.Series(np.linspace(0, 1, 20)[::-1] + np.random.default_rng(0).normal(0, 0.3, 20), index=human.index, name="m")
    with pytest.warns(EvalkitWarning, match="constant scores or ratings.*left out of the interval \\('m': \\d+ of 1000\\)"):
        row = correlate.correlate(score, human, rng=4).iloc[0]
    with warnings.catch_warnings():  # the reference's own notice of the undefined resamples (evalkit's is checked above)
        warnings.simplefilter("ignore", stats.DegenerateDataWarning)
        res = stats.bootstrap((np.arange(20),), lambda i, axis=-1: correlate._corr_lastaxis(
            score.to_numpy()[i], human.to_numpy()[i], "spearman"), vectorized=True, n_resamples=1000,
            method="percentile", rng=np.random.default_rng(4), batch=max(1, 2_000_000 // 20))
    dist = res.bootstrap_distribution
    undefined = int(np.isnan(dist).sum())
    assert undefined > 0 and row["interval"] == f"percentile bootstrap over items ({undefined} of 1000 resamples undefined, left out)"
    low, high = np.quantile(dist[~np.isnan(dist)], [0.025, 0.975])
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    with pytest.warns(EvalkitWarning, match="BCa needs every one, so the interval is NaN for 'm'"):
        bca = correlate.correlate(score, human, interval="BCa", rng=4).iloc[0]
    assert np.isnan(bca["ci_low"]) and bca["interval"] == "BCa bootstrap over items"  # BCa needs every resample


@pytest.mark.parametrize("method", ["spearman", "kendall", "pearson"])
def test_cluster_bootstrap_equals_scipy_bootstrap_of_the_repeated_items(method):
    gen = np.random.default_rng(1)
    effect = np.repeat(gen.normal(size=16), 3)
    index = [f"i{k:02d}" for k in range(48)]
    human = pd.Series(np.round(effect + gen.normal(size=48)), index=index)
    score = pd.Series(effect + gen.normal(size=48), index=index, name="m")
    cluster = pd.Series(np.repeat(np.arange(16), 3), index=index)
    row = correlate.correlate(score, human, method=method, cluster=cluster, n_resamples=300, rng=5).iloc[0]
    x, y = score.to_numpy(), human.to_numpy()

    def by_repetition(idx):  # each drawn cluster's items, stacked: the resampled data set itself
        items = np.concatenate([np.flatnonzero(cluster.to_numpy() == c) for c in idx])
        return SCIPY[method](x[items], y[items]).statistic

    ref = stats.bootstrap((np.arange(16),), by_repetition, vectorized=False, n_resamples=300, method="percentile",
                          rng=np.random.default_rng(5), batch=max(1, 2_000_000 // 16))
    assert row["ci_low"] == pytest.approx(ref.confidence_interval.low, abs=1e-12)
    assert row["ci_high"] == pytest.approx(ref.confidence_interval.high, abs=1e-12)
    assert row["interval"] == "percentile bootstrap over clusters"
    assert row["r"] == pytest.approx(SCIPY[method](x, y).statistic, abs=1e-12)
    few = pd.Series(np.repeat(np.arange(12), 4), index=index)  # 12 clusters: too few to back an interval
    with pytest.warns(EvalkitWarning, match="only 12 cluster\\(s\\): a cluster bootstrap needs at least 15"):
        refused = correlate.correlate(score, human, method=method, cluster=few, rng=5).iloc[0]
    assert np.isnan(refused["ci_low"]) and refused["interval"] == "none: 12 clusters, fewer than 15"
    assert refused["r"] == row["r"]


def test_cluster_is_for_the_dataset_level(rated):
    scores, human, groups = rated
    with pytest.raises(ValueError, match="`cluster` is for level='dataset'"):
        correlate.correlate(scores, human, level="summary", by=groups, cluster=groups)
    with pytest.raises(KeyError, match="`cluster`='document' is not an index level of `scores`"):
        correlate.correlate(scores, human, cluster="document")
    with pytest.raises(ValueError, match="give `cluster` or `by`, not both"):
        correlate.correlate(scores, human, by=groups, cluster=groups)
