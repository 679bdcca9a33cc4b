"""Several systems, one calibration: infer.systems and infer.system_differences against a loop by hand."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, infer
from evalkit._stats import calibration


def responses(rng, *, systems=4, cases=150, labels=30, shared=False, offsets=None, scale=(1, 5)):
    """A long responses table: 1-5 ratings, a judge on [0, 1] that blurs them; n labels per system."""
    quality = np.linspace(2.6, 4.2, systems)
    hardness = rng.normal(0, 0.6, cases)
    rows = []
    common = rng.choice(cases, labels, replace=False)
    for s in range(systems):
        latent = quality[s] + hardness + rng.normal(0, 0.7, cases)
        truth = np.clip(np.round(latent), *scale)
        offset = 0.0 if offsets is None else offsets[s]
        score = np.clip((latent - 1) / 4 + offset + rng.normal(0, 0.1, cases), 0, 1)
        labelled = np.zeros(cases, bool)
        labelled[common if shared else rng.choice(cases, labels, replace=False)] = True
        rows += [{"system": f"s{s}", "case_id": f"c{i}", "judge": score[i], "human": truth[i] if labelled[i] else np.nan}
                 for i in range(cases)]
    return pd.DataFrame(rows)


def by_hand(table: pd.DataFrame, folds: int = 5):
    """The estimate, from scikit-learn's IsotonicRegression and loops: the same folds of whole cases, each label's
    out-of-fold calibrated score, each system's PPI++ weight, and its estimate."""
    from sklearn.isotonic import IsotonicRegression

    cases = pd.factorize(table["case_id"], sort=True)[0]
    labelled = table["human"].notna().to_numpy()
    fold = calibration.folds_of(cases[labelled], min(folds, len(np.unique(cases[labelled]))))
    f, y = table["judge"].to_numpy(), table["human"].to_numpy()
    oof = np.empty(labelled.sum())
    every = np.zeros(len(table))
    k = fold.max() + 1
    for j in range(k):
        train = fold != j
        model = IsotonicRegression(out_of_bounds="clip").fit(f[labelled][train], y[labelled][train])
        oof[~train] = model.predict(f[labelled][~train])
        every += model.predict(f) / k
    out = {}
    lab_system = table["system"].to_numpy()[labelled]
    for name in sorted(table["system"].unique()):
        rows = (table["system"] == name).to_numpy()
        own = lab_system == name
        g, yy, gg = every[rows], y[labelled][own], oof[own]
        lam = np.clip(np.cov(yy, gg)[0, 1] / np.var(g, ddof=1), 0, 1)  # the calibrated mean runs over every case
        out[name] = lam * g.mean() + np.mean(yy - lam * gg)
    return out


def variance_by_hand(fit: dict, w: np.ndarray, *, fitted: int) -> float:
    """The contrast's variance with no floor and no pseudo-residuals, by loops over cases: the calibrated scores'
    and the residuals' influence summed per case (G / (G - 1) and n / (n - fitted)), their cross term and the
    delete-one-fold jackknife."""
    codes, cases, labelled = fit["systems"], fit["cases"], fit["labelled"]
    a, b = {}, {}
    for s in np.flatnonzero(w):
        own = codes == s
        g, r = fit["calibrated"][own], fit["residual"][own & labelled]
        for case, value in zip(cases[own], w[s] * (g - g.mean()) / own.sum(), strict=True):
            a[case] = a.get(case, 0.0) + value
        for case, value in zip(cases[own & labelled], w[s] * (r - r.mean()) / len(r), strict=True):
            b[case] = b.get(case, 0.0) + value
    n = min(int(np.sum(labelled & (codes == s))) for s in np.flatnonzero(w))
    big = len(a)
    v_pred = big / (big - 1) * sum(v**2 for v in a.values())
    v_res = n / (n - fitted) * sum(v**2 for v in b.values())
    v_cross = 2 * sum(a[case] * b.get(case, 0.0) for case in a)
    jack = fit["jackknife"] @ w
    return v_pred + v_res + v_cross + (len(jack) - 1) / len(jack) * np.sum((jack - jack.mean()) ** 2)


def test_the_estimate_equals_a_loop_by_hand_with_scikit_learns_isotonic_regression(rng):
    table = responses(rng)
    found = infer.systems(table, bounds=(1, 5)).set_index("system")["estimate"]
    expected = by_hand(table)
    for name, value in expected.items():
        assert found[name] == pytest.approx(value, abs=1e-12)


def test_the_variance_of_one_system_is_its_two_parts_and_the_fold_jackknife(rng):
    """Without the pseudo-residuals (no scale): the t interval's variance is Var(lam g over cases) / G + Var(label -
    lam oof) / (n - 2) * (n - 1) / n ... as written out here, plus the delete-one-fold jackknife."""
    table = responses(rng, systems=3)
    codes = pd.factorize(table["system"], sort=True)[0]
    cases = pd.factorize(table["case_id"], sort=True)[0]
    fit = calibration.calibrated_ppi(codes, cases, table["judge"].to_numpy(), table["human"].to_numpy(), n_systems=3)
    w = np.array([0.0, 1.0, 0.0])
    estimate, variance, df = calibration.contrast_variance(fit, w)
    own = codes == 1
    lab = own & fit["labelled"]
    g, r = fit["calibrated"][own], fit["residual"][lab]
    n, big = lab.sum(), own.sum()
    a = (g - g.mean()) / big
    b = np.zeros(big)
    b[fit["labelled"][own]] = (r - r.mean()) / n
    v_pred, v_res, v_cross = big / (big - 1) * np.sum(a**2), n / (n - 2) * np.sum(b**2), 2 * np.sum(a * b)
    jack = fit["jackknife"][:, 1]
    v_cal = (len(jack) - 1) / len(jack) * np.sum((jack - jack.mean()) ** 2)
    assert variance == pytest.approx(v_pred + v_res + v_cross + v_cal, rel=1e-12)
    assert estimate == pytest.approx(fit["estimate"][1], abs=1e-12)
    assert df == pytest.approx((v_pred + v_res + v_cal) ** 2 / (v_pred**2 / (big - 1) + v_res**2 / (n - 2)
                                                                 + v_cal**2 / (len(jack) - 1)), rel=1e-12)


def test_the_interval_is_the_t_interval_of_that_variance_clipped_to_the_scale(rng):
    table = responses(rng, systems=3)
    row = infer.systems(table).set_index("system").loc["s1"]  # no scale: the plain t, unclipped
    codes = pd.factorize(table["system"], sort=True)[0]
    cases = pd.factorize(table["case_id"], sort=True)[0]
    fit = calibration.calibrated_ppi(codes, cases, table["judge"].to_numpy(), table["human"].to_numpy(), n_systems=3)
    estimate, variance, df = calibration.contrast_variance(fit, np.array([0.0, 1.0, 0.0]))
    half = stats.t.ppf(0.975, df) * np.sqrt(variance)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((estimate - half, estimate + half), abs=1e-12)
    scaled = infer.systems(table, bounds=(1, 5))
    assert ((scaled["ci_low"] >= 1) & (scaled["ci_high"] <= 5)).all()
    assert scaled.attrs["bounds"] == (1.0, 5.0) and (scaled["interval"] == "calibrated-t").all()


def test_a_difference_uses_every_label_when_the_systems_were_labelled_on_cases_of_their_own(rng):
    table = responses(rng, systems=2, labels=40, shared=False)
    diff = infer.system_differences(table, bounds=(1, 5)).iloc[0]
    means = infer.systems(table, bounds=(1, 5)).set_index("system")["estimate"]
    assert diff["estimate"] == pytest.approx(means["s0"] - means["s1"], abs=1e-12)
    assert diff["n_labelled_a"] == diff["n_labelled_b"] == 40 and diff["n_labelled_both"] < 40
    assert np.isfinite(diff["ci_low"]) and diff["ci_high"] - diff["ci_low"] < 1.0
    # paired on the cases: the difference's interval is narrower than the two means' intervals added in quadrature
    wide = infer.systems(table, bounds=(1, 5)).set_index("system")
    unpaired = np.hypot(*(wide["ci_high"] - wide["ci_low"]))
    assert diff["ci_high"] - diff["ci_low"] < unpaired
    assert diff["ci_low"] < 0 < diff["ci_high"] or diff["p_val"] < 0.05


def test_the_transport_check_flags_a_system_the_shared_calibration_does_not_fit(rng):
    table = responses(rng, systems=4, labels=60, offsets=[0.0, 0.0, 0.0, 0.25])  # s3's judge reads a quarter higher
    out = infer.systems(table, bounds=(1, 5)).set_index("system")
    assert out.loc["s3", "transport_p"] < 0.01 and "off by" in out.loc["s3", "note"]
    assert (out.loc[["s0", "s1", "s2"], "transport_p"] > 0.001).all()


def test_a_system_with_too_few_labels_gets_no_interval_and_says_why(rng):
    table = responses(rng, systems=3)
    lonely = table["system"] == "s2"
    table.loc[lonely & table["human"].notna(), "human"] = np.nan  # s2: no label of its own
    with pytest.warns(EvalkitWarning, match="no interval for \\['s2'\\]"):
        out = infer.systems(table, bounds=(1, 5)).set_index("system")
    assert np.isnan(out.loc["s2", "ci_low"]) and out.loc["s2", "n_labelled"] == 0
    assert "cannot be checked" in out.loc["s2", "note"] and np.isfinite(out.loc["s2", "estimate"])
    with pytest.warns(EvalkitWarning):
        diff = infer.system_differences(table, bounds=(1, 5), baseline="s0")
    assert diff.set_index("system_a").loc["s2", "note"].startswith("fewer than")


def test_pairs_baseline_and_adjustment(rng):
    table = responses(rng, systems=4)
    every = infer.system_differences(table, bounds=(1, 5))
    assert len(every) == 6 and list(every[["system_a", "system_b"]].iloc[0]) == ["s0", "s1"]
    held = infer.system_differences(table, bounds=(1, 5), adjust="holm")
    assert (held["p_adjusted"] >= held["p_val"]).all()
    assert ((held["ci_high"] - held["ci_low"]) > (every["ci_high"] - every["ci_low"])).all()  # Bonferroni's, wider
    assert held.attrs["joint_confidence_level"] == 0.95
    base = infer.system_differences(table, bounds=(1, 5), baseline="s1")
    assert list(base["system_b"].unique()) == ["s1"] and len(base) == 3


def test_pass_fail_labels_and_verdicts(rng):
    table = responses(rng, systems=3, labels=40)
    table["human"] = np.where(table["human"].isna(), None, np.where(table["human"] >= 4, "PASS", "FAIL"))
    table["judge"] = np.where(table["judge"] > 0.7, "PASS", "FAIL")
    out = infer.systems(table)
    assert out.attrs["bounds"] == (0.0, 1.0) and ((out["ci_low"] >= 0) & (out["ci_high"] <= 1)).all()


def test_bad_input(rng):
    table = responses(rng, systems=2)
    with pytest.raises(KeyError, match="missing column"):
        infer.systems(table.drop(columns="judge"))
    with pytest.raises(ValueError, match="more than once"):
        infer.systems(pd.concat([table, table.iloc[:1]]))
    with pytest.raises(ValueError, match="holds 0 label"):
        infer.systems(table.assign(human=np.nan))
    with pytest.raises(ValueError, match="labels outside `bounds`"):
        infer.systems(table, bounds=(2, 4))
    with pytest.raises(ValueError, match="missing judge score"):
        infer.systems(table.assign(judge=np.where(np.arange(len(table)) == 3, np.nan, table["judge"])))
    with pytest.raises(ValueError, match="`interval` must be one of"):
        infer.systems(table, interval="betting")
    with pytest.raises(ValueError, match="is not a system"):
        infer.system_differences(table, baseline="nope")
    with pytest.raises(ValueError, match="a difference needs two"):
        infer.system_differences(table[table["system"] == "s0"])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        infer.systems(table, bounds=(1, 5))  # nothing to warn of


def test_too_few_labels_off_the_end_replace_the_row_by_the_exact_humans_only_interval_when_pooled_ones_are_too(rng):
    """0/1 labels with fewer than 5 of the rarer class in every system's labels together: nothing measures their
    spread, so the row is the Clopper-Pearson interval of the labels, with their mean as the estimate and lam 0."""
    table = responses(rng, systems=1, labels=40)
    labelled = table["human"].notna()
    table.loc[labelled, "human"] = 1.0
    table.loc[labelled[labelled].index[:2], "human"] = 0.0  # 2 fails of 40
    row = infer.systems(table).iloc[0]
    ci = stats.binomtest(38, 40).proportion_ci(method="exact")
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high), abs=1e-10)
    assert row["estimate"] == pytest.approx(38 / 40) and row["lam"] == 0.0 and row["method"] == "classical"
    assert row["interval"] == "clopper-pearson" and "2 of 40 labels off" in row["note"]
    assert row["estimate"] == pytest.approx(row["lam"] * row["calibrated_mean"] + row["correction"])
    # on a 1-5 scale, labels all at 5 but for two: the betting interval of the labels on the scale
    ratings = responses(rng, systems=1, labels=30)
    top = ratings["human"].notna()
    ratings.loc[top, "human"] = 5.0
    ratings.loc[top[top].index[:2], "human"] = 4.0
    row = infer.systems(ratings, bounds=(1, 5)).iloc[0]
    assert row["interval"] == "betting" and row["lam"] == 0.0 and row["ci_high"] == pytest.approx(5.0, abs=1e-6)
    assert row["ci_low"] <= row["estimate"] <= row["ci_high"]
    ratings.loc[top[top].index[2], "human"] = 2.0  # labels of three values: the betting interval reads their order
    row = infer.systems(ratings, bounds=(1, 5)).iloc[0]
    for seed in range(3):  # the cases in the order of their ids, whatever the rows' order
        shuffled = infer.systems(ratings.sample(frac=1, random_state=seed), bounds=(1, 5)).iloc[0]
        assert (shuffled["ci_low"], shuffled["ci_high"]) == (row["ci_low"], row["ci_high"])
    # the rule on a scale is the rate's: 4 labels off its end are too few, 5 are enough
    for off, interval in ((4, "betting"), (5, "calibrated-t")):
        ratings.loc[top, "human"] = 5.0
        ratings.loc[top[top].index[:off], "human"] = 3.0
        assert infer.systems(ratings, bounds=(1, 5)).iloc[0]["interval"] == interval


def test_a_difference_where_every_label_is_at_one_value_is_two_exact_intervals_at_half_the_alpha(rng):
    """Every label of both systems a pass: nothing measures the spread, so the difference is each system's
    Clopper-Pearson interval at 1 - alpha / 2, ``[low_a - high_b, high_a - low_b]``, p = 1. With rates 1% and 9% at 20
    labels each, such draws made the calibrated t of the difference cover 0.86 (``python
    benchmarks/bench_coverage.py --function infer.system_differences --design far-apart``)."""
    table = responses(rng, systems=2, labels=40, shared=True)
    table.loc[table["human"].notna(), "human"] = 1.0
    table.loc[(table["system"] == "s1") & table["human"].notna(), "human"] = np.nan
    labelled_b = table.index[(table["system"] == "s1")][:25]
    table.loc[labelled_b, "human"] = 1.0  # 40 and 25 labels
    row = infer.system_differences(table).iloc[0]
    a, b = (stats.binomtest(k, k).proportion_ci(0.975, method="exact") for k in (40, 25))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((a.low - b.high, a.high - b.low), abs=1e-10)
    assert (row["estimate"], row["p_val"]) == (0.0, 1.0)
    assert (row["method"], row["interval"]) == ("classical", "clopper-pearson") and "65 labels at 1" in row["note"]
    # the rank sets come from the same intervals; a mean gets Clopper-Pearson too
    out = infer.systems(table).set_index("system")
    assert (out["rank_low"] == 1).all() and (out["rank_high"] == 2).all()
    assert (out["interval"] == "clopper-pearson").all()
    # one label off that value anywhere: the calibrated t
    table.loc[labelled_b[0], "human"] = 0.0
    assert infer.system_differences(table).iloc[0]["interval"] == "calibrated-t"


def test_a_system_thin_at_its_end_among_others_gets_the_calibrated_t_with_the_pooled_variance_floor(rng):
    """2 fails of 40 for one system, many for the others: the pooled calibration measures the spread, so the row is
    the calibrated t with lam 1 and its residuals' variance at least the pooled variance model's."""
    table = responses(rng, systems=3, labels=40)
    table["human"] = np.where(table["human"].isna(), np.nan, (table["human"] >= 3).astype(float))
    rare = (table["system"] == "s2") & table["human"].notna()
    table.loc[rare, "human"] = 1.0
    table.loc[rare[rare].index[:2], "human"] = 0.0
    out = infer.systems(table).set_index("system")
    row = out.loc["s2"]
    assert row["interval"] == "calibrated-t" and row["lam"] == 1.0
    codes, cases, f, y, _, _ = infer._systems._responses(table, "system", "case_id", "judge", "human", None)
    fit = calibration.calibrated_ppi(codes, cases, f, y, n_systems=3)
    assert fit["thin"].tolist() == [False, False, True] and fit["pooled_off"][2] >= 5
    labelled = ~np.isnan(y)
    g = y[labelled] - fit["against_calibration"][labelled]  # every label's out-of-fold calibrated score
    kappa = np.sum((y[labelled] - g) ** 2) / np.sum(g * (1 - g))
    own = codes[labelled] == 2
    assert fit["floor"][2] == pytest.approx(kappa * np.mean(g[own] * (1 - g[own])))
    assert fit["floor_labels"][2] == pytest.approx(3 / 42 * (1 - 3 / 42))  # Laplace: (2 + 1) / (40 + 2), step 1
    assert (fit["floor_labels"][:2] == 0).all()  # only thin systems have it
    weights = np.array([0.0, 0.0, 1.0])
    _, variance, _ = calibration.contrast_variance(fit, weights)  # no scale: no pseudo-residuals
    r = fit["residual"][labelled & (codes == 2)]
    floor = max(fit["floor"][2], fit["floor_labels"][2])
    # lam was not fitted for the thin system: its residuals lose one degree of freedom (the mean), not two
    assert variance == pytest.approx(variance_by_hand(fit, weights, fitted=1)
                                     + max(0.0, floor / len(r) - np.var(r, ddof=1) / len(r)), rel=1e-12)
    # a paired difference without a scale keeps the variance model's floor alone (s1's lam was fitted: n - 2)
    weights = np.array([0.0, -1.0, 1.0])
    _, variance, _ = calibration.contrast_variance(fit, weights)
    assert variance == pytest.approx(variance_by_hand(fit, weights, fitted=2)
                                     + max(0.0, fit["floor"][2] / len(r) - np.var(r, ddof=1) / len(r)), rel=1e-12)
    assert (out.loc[["s0", "s1"], "interval"] == "calibrated-t").all()


def test_a_difference_of_thin_systems_takes_no_floor_on_a_scale_and_the_model_floor_together_without_one(rng):
    """Two thin systems whose floors are far above or below their residuals' own variance. On a known scale their
    paired difference takes no floor (the pseudo-residuals are its guard); without one, the residual variance added is
    the sum of their model floors less the sum of their own variances, so one's spread above the model meets the
    other's shortfall. Each one's mean is floored by its own."""
    table = responses(rng, systems=2, labels=40)
    codes = pd.factorize(table["system"], sort=True)[0]
    cases = pd.factorize(table["case_id"], sort=True)[0]
    fit = calibration.calibrated_ppi(codes, cases, table["judge"].to_numpy(), table["human"].to_numpy(), n_systems=2)
    own = np.array([np.var(fit["residual"][fit["labelled"] & (codes == s)], ddof=1) for s in (0, 1)])  # per label
    difference = np.array([1.0, -1.0])
    for floor in (np.array([2.0, 0.5]) * own, np.array([3.0, 0.2]) * own, np.array([0.5, 0.5]) * own):
        thin = {**fit, "thin": np.ones(2, bool), "floor": floor, "floor_labels": np.zeros(2)}
        on_scale = calibration.contrast_variance(thin, difference, bounds=(1, 5))
        assert on_scale == calibration.contrast_variance({**thin, "floor": np.zeros(2)}, difference, bounds=(1, 5))
        _, variance, _ = calibration.contrast_variance(thin, difference)
        added = max(0.0, float(np.sum(floor - own)) / 40)
        assert variance == pytest.approx(variance_by_hand(thin, difference, fitted=1) + added, rel=1e-12)
        for s in (0, 1):
            weights = np.eye(2)[s]
            _, variance, _ = calibration.contrast_variance(thin, weights)
            added = max(0.0, float(floor[s] - own[s]) / 40)
            assert variance == pytest.approx(variance_by_hand(thin, weights, fitted=1) + added, rel=1e-12)


def test_rank_sets_are_every_pair_of_bonferroni_intervals_from_the_same_fit(rng):
    table = responses(rng, systems=4, labels=40)
    out = infer.systems(table, bounds=(1, 5)).set_index("system")
    pairs = infer.system_differences(table, bounds=(1, 5), adjust="bonferroni")
    above = {name: 0 for name in out.index}
    below = dict(above)
    for row in pairs.itertuples():
        if row.ci_low > 0:
            above[row.system_b] += 1  # system_a is surely higher than system_b
            below[row.system_a] += 1
        elif row.ci_high < 0:
            above[row.system_a] += 1
            below[row.system_b] += 1
    for name in out.index:
        assert out.loc[name, "rank_low"] == 1 + above[name]
        assert out.loc[name, "rank_high"] == 4 - below[name]
    assert (out["rank_low"] <= out["rank_high"]).all()
    best = out["estimate"].idxmax()
    assert out.loc[best, "rank_low"] == 1  # quality rises with the system's number: s3 is the best
    assert out.loc["s0", "rank_high"] == 4 and out.loc["s0", "rank_low"] > 1


def test_one_system_is_the_one_segment_case(rng):
    table = responses(rng, systems=1, labels=40)
    out = infer.systems(table, bounds=(1, 5))
    assert len(out) == 1 and out.loc[0, "rank_low"] == out.loc[0, "rank_high"] == 1
    assert out.loc[0, "ci_low"] < out.loc[0, "estimate"] < out.loc[0, "ci_high"]
    assert out.loc[0, "estimate"] == pytest.approx(by_hand(table)["s0"], abs=1e-12)
