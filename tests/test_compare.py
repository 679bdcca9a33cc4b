"""Paired comparisons: published worked examples, the planners by simulation, and the several-runs table.

Coverage and size are measured in the coverage harness (tests/harness.py, compare section; the full grid is
``python benchmarks/bench_compare.py``).
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, compare, datasets
from evalkit._stats import (
    betting_interval,
    mcnemar_exact_p,
    mcnemar_power,
    mcnemar_rejection_bounds,
    mean_interval,
    sign_flip_p,
)
from tests import harness


def _runs_from_cells(both: int, a_only: int, b_only: int, neither: int):
    """Two verdict Series whose 2 x 2 table is the given cells (a_only: pass in a, fail in b)."""
    a = ["PASS"] * both + ["PASS"] * a_only + ["FAIL"] * b_only + ["FAIL"] * neither
    b = ["PASS"] * both + ["FAIL"] * a_only + ["PASS"] * b_only + ["FAIL"] * neither
    return pd.Series(a), pd.Series(b)


# Newcombe (1998), Statistics in Medicine 17:2635, Table II, method 10 (the hybrid score interval), 95%.
# Cells e, f, g, h: both positive, first only, second only, neither; the difference is (f - g) / n.
NEWCOMBE_1998 = [
    ((36, 12, 2, 0), (0.0569, 0.3404)),
    ((18, 12, 2, 18), (0.0562, 0.3290)),
    ((53, 0, 0, 1), (-0.0729, 0.0729)),
    ((0, 30, 0, 0), (0.8395, 1.0)),
]


def test_the_one_wilson_interval_equals_scipy_and_statsmodels():
    from scipy import stats as sps

    from evalkit._stats import rate_interval, wilson

    proportion = pytest.importorskip("statsmodels.stats.proportion", reason='needs the \'test\' extra: pip install "llm-evalkit[test]"')
    for n in (1, 7, 30, 200):
        k = np.arange(n + 1)
        low, high = wilson(k, n, 0.95)  # vectorised: every count at once
        for j in range(n + 1):
            ci = sps.binomtest(j, n).proportion_ci(confidence_level=0.95, method="wilson")
            assert (low[j], high[j]) == pytest.approx((ci.low, ci.high), abs=1e-12)
        np.testing.assert_allclose(np.column_stack([low, high]),
                                   np.column_stack(proportion.proportion_confint(k, n, alpha=0.05, method="wilson")),
                                   atol=1e-12)
        row = rate_interval(k, n, method="wilson", confidence_level=0.95)
        np.testing.assert_array_equal(row["ci_low"], low)
    assert np.isnan(wilson(0, 0, 0.95)).all()


@pytest.mark.parametrize(("cells", "published"), NEWCOMBE_1998)
def test_newcombe_interval_equals_newcombe_1998(cells, published):
    e, f, g, h = cells
    first, second = _runs_from_cells(e, f, g, h)
    res = compare.paired(second, first, interval="newcombe")  # b = the first classification: b - a = (f - g) / n
    assert res.difference == pytest.approx((f - g) / sum(cells))
    assert (round(res.ci_low, 4), round(res.ci_high, 4)) == published


# Tango's score interval. Cells (a, b, c, d): both, first only, second only, neither; difference (b - c) / n.
# Tango (1998), Statistics in Medicine 17:891, worked examples (n = 32 at 95%; the off-diagonal-zero table of
# n = 44 at 90%); Agresti & Min (2005), Statistics in Medicine 24:729, the score interval of their example;
# Fagerland, Lydersen & Laake (2014), Statistics in Medicine 33:2850, Table V (Bentur et al. data), Tango.
# The same values are the published-example tests of the ratesci R package (tests/testthat/test3.R).
TANGO_PUBLISHED = [
    ((4, 9, 3, 16), 0.95, (-0.027, 0.390)),
    ((43, 0, 1, 0), 0.90, (-0.096, 0.037)),
    ((53, 16, 8, 9), 0.95, (-0.020, 0.207)),
    ((1, 1, 7, 12), 0.95, (-0.517, -0.026)),
]


@pytest.mark.parametrize(("cells", "level", "published"), TANGO_PUBLISHED)
def test_tango_interval_equals_published_examples(cells, level, published):
    both, first_only, second_only, neither = cells
    first, second = _runs_from_cells(both, first_only, second_only, neither)
    res = compare.paired(second, first, interval="tango", confidence_level=level)
    assert res.method == "tango" and res.difference == pytest.approx((first_only - second_only) / sum(cells))
    assert (round(res.ci_low, 3), round(res.ci_high, 3)) == published
    assert res.ci_low <= res.difference <= res.ci_high


@pytest.mark.parametrize("method", ["newcombe", "tango"])
def test_intervals_are_informative_without_flips_and_symmetric(method):
    a, b = _runs_from_cells(45, 0, 0, 5)
    res = compare.paired(a, b, interval=method)
    assert res.difference == 0 and res.ci_low < 0 < res.ci_high and res.ci_high == pytest.approx(-res.ci_low)
    swapped = compare.paired(b.iloc[::-1], a)
    forward = compare.paired(*_runs_from_cells(30, 7, 2, 11), interval=method)
    backward = compare.paired(*_runs_from_cells(30, 2, 7, 11), interval=method)
    assert (forward.ci_low, forward.ci_high) == pytest.approx((-backward.ci_high, -backward.ci_low), abs=1e-10)
    assert swapped.n == 50


def test_paired_keeps_its_fields_and_names_the_method():
    a, b = _runs_from_cells(30, 7, 1, 2)
    res = compare.paired(a, b)
    assert res.table.loc["PASS", "FAIL"] == 7 and res.rate_a == pytest.approx(37 / 40)
    assert res.discordant == pytest.approx(8 / 40) and res.test == "exact McNemar" and res.kind == "pass rate"
    assert res.method == "newcombe" and "Newcombe hybrid score" in repr(res) and "95% CI" in repr(res)
    with pytest.raises(ValueError, match="`interval` for a pass rate difference must be one of \\['newcombe', 'tango'\\]"):
        compare.paired(a, b, interval="t")
    assert compare.paired(a, b, interval="tango").method == "tango"
    with pytest.raises(TypeError, match="unexpected keyword argument 'method'"):
        compare.paired(a, b, method="tango")  # no second name for the interval
    with pytest.raises(ValueError, match="`confidence_level` must be in \\(0.0, 1.0\\)"):
        compare.paired(a, b, confidence_level=1.0)


def test_mcnemar_p_value_and_rejection_region_equal_binomtest():
    for m in range(1, 61):
        for x in range(m + 1):
            assert mcnemar_exact_p(x, m - x) == pytest.approx(stats.binomtest(x, m, 0.5).pvalue, rel=1e-12), (x, m)
    assert mcnemar_exact_p(0, 0) == 1.0
    for alpha in (0.05, 0.05 / 7):
        bounds = mcnemar_rejection_bounds(80, alpha)
        for m in range(81):
            for x in range(m // 2 + 1):  # the test is symmetric in x and m - x
                rejects = m > 0 and stats.binomtest(x, m, 0.5).pvalue <= alpha
                assert rejects == (x <= bounds[m]), (alpha, m, x)


# ----------------------------------------------------------------------------------------- scores
def test_numeric_differences_use_the_shared_betting_kernel_on_the_difference_scale():
    """The betting interval of a paired difference is the floor's bounded-mean kernel (checked against an independent
    loop in test_infer.py) on [-span, span]; on another scale the interval maps linearly."""
    x1 = np.array([0.5, 0.5, 0.625, 0.5, 0.375, 0.5, 0.5, 0.5, 0.625, 0.5, 0.5, 0.5, 0.375, 0.5, 0.5, 0.5, 0.5, 0.75,
                   0.5, 0.5, 0.5, 0.5, 0.5, 0.625, 0.5, 0.5, 0.5, 0.5, 0.375, 0.5])
    unit = betting_interval(x1, 0.0, 1.0, confidence_level=0.95, theta_range=(0.0, 1.0))
    assert mean_interval(x1, "betting", 0.95, bounds=(0, 1)) == pytest.approx(tuple(map(float, unit)), abs=1e-12)
    scaled = mean_interval(x1 * 8 - 4, "betting", 0.95, bounds=(-4, 4))
    assert scaled == pytest.approx((float(unit[0]) * 8 - 4, float(unit[1]) * 8 - 4), abs=1e-6)
    assert float(unit[0]) <= x1.mean() <= float(unit[1])


def test_paired_scores_methods_against_scipy():
    rng = np.random.default_rng(3)
    a = pd.Series(rng.integers(1, 6, 40).astype(float))
    b = (a + rng.choice([-1.0, 0.0, 0.0, 1.0], 40)).clip(1, 5)
    d = (b - a).to_numpy()
    with pytest.warns(EvalkitWarning, match="only 1[0-9] cases changed their score: the Student t interval under-covers"):
        t = compare.paired(a, b, interval="t")
    ci = stats.ttest_1samp(d, 0).confidence_interval(0.95)
    assert (t.ci_low, t.ci_high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert t.kind == "mean score" and t.difference == pytest.approx(d.mean()) and np.isnan(t.kappa)
    with pytest.warns(EvalkitWarning, match="BCa bootstrap interval under-covers"):
        boot = compare.paired(a, b, interval="bootstrap", rng=1)
    ref = stats.bootstrap((d,), np.mean, method="BCa", n_resamples=9999, rng=np.random.default_rng(1)).confidence_interval
    assert (boot.ci_low, boot.ci_high) == pytest.approx((ref.low, ref.high), abs=1e-12)
    default = compare.paired(a, b, bounds=(1, 5))
    assert default.method == "betting" and default.ci_low <= d.mean() <= default.ci_high
    assert default.test == "sign-flip permutation" and list(default.table.index) == ["a", "b", "b - a"]
    with pytest.raises(ValueError, match="`bounds` is \\(2, 5\\) but a score is 1.0"):
        compare.paired(a, b, bounds=(2, 5))
    with pytest.raises(TypeError, match="`bounds` must be a pair"):
        compare.paired(a, b, bounds=5)
    with pytest.warns(EvalkitWarning, match="no Student t interval"):
        compare.paired(a, a, interval="t")
    with pytest.warns(EvalkitWarning, match="every score is 5.0, so the data show no range"):
        constant = compare.paired(pd.Series([5.0] * 30), pd.Series([5.0] * 30))
    assert constant.difference == 0 and constant.ci_low < 0 < constant.ci_high


def test_sign_flip_p_equals_scipy_permutation_test():
    rng = np.random.default_rng(5)
    for _ in range(5):
        d = rng.choice([-2.0, -1.0, 0.0, 0.0, 1.0, 3.0], 11)
        ref = stats.permutation_test((d,), np.mean, permutation_type="samples", n_resamples=np.inf,
                                     alternative="two-sided").pvalue
        assert sign_flip_p(d) == pytest.approx(ref, abs=1e-12)
    assert sign_flip_p(np.zeros(5)) == 1.0


# --------------------------------------------------------------------------------------- planners
def test_planners_reach_the_power_by_simulation():
    """At the planned n the exact McNemar test's simulated power is >= target - 2 MC s.e. and <= target + 0.05
    (2,000 simulated data sets per setting; scipy's binomtest on each). The full study: bench_compare.py."""
    rng = np.random.default_rng(20261201)
    for difference, discordant, power in [(0.05, 0.1, 0.8), (0.1, 0.2, 0.8), (0.03, 0.05, 0.9)]:
        row = compare.cases_needed(difference, discordant=discordant, power=power).iloc[0]
        sim, se = harness.compare.simulated_mcnemar_power(int(row["n"]), difference, discordant, 0.05, reps=2000, rng=rng)
        assert power - 2 * se <= sim <= power + 0.05, (difference, discordant, row["n"], sim)
    for n, discordant, power in [(100, 0.1, 0.8), (50, 0.2, 0.8), (200, 0.05, 0.9)]:
        difference = compare.detectable_difference(n, discordant=discordant, power=power).iloc[0]["difference"]
        sim, se = harness.compare.simulated_mcnemar_power(n, difference, discordant, 0.05, reps=2000, rng=rng)
        assert power - 2 * se <= sim <= power + 0.05, (n, discordant, difference, sim)


def test_exact_power_equals_a_direct_sum():
    # Sum over every (n10, n01) table of the trinomial probability times the binomtest decision.
    n, difference, discordant = 30, 0.1, 0.2
    p10, p01 = (discordant - difference) / 2, (discordant + difference) / 2
    total = sum(stats.multinomial.pmf([x, y, n - x - y], n, [p10, p01, 1 - p10 - p01])
                for x in range(n + 1) for y in range(n + 1 - x)
                if x + y > 0 and stats.binomtest(x, x + y, 0.5).pvalue <= 0.05)
    assert mcnemar_power(n, difference, discordant, 0.05) == pytest.approx(total, abs=1e-12)


def test_cases_needed_is_the_smallest_n_and_detectable_inverts_it():
    table = compare.cases_needed([0.05, -0.05, 0.1], discordant=0.15)
    assert table["n"].iloc[0] == table["n"].iloc[1] and table["difference"].tolist() == [0.05, 0.05, 0.1]
    for n, change in zip(table["n"], table["difference"], strict=True):
        assert mcnemar_power(n - 1, change, 0.15, 0.05) < 0.8 <= mcnemar_power(n, change, 0.15, 0.05)
        detectable = compare.detectable_difference(n, discordant=0.15).iloc[0]["difference"]
        assert detectable <= change and mcnemar_power(n, detectable, 0.15, 0.05) == pytest.approx(0.8, abs=1e-8)
    sizes = compare.detectable_difference(range(100, 401, 50), discordant=0.1)
    assert sizes["difference"].is_monotonic_decreasing and list(sizes.columns) == [
        "n", "discordant", "alpha", "power", "difference"]


def test_planners_take_a_pilot_and_refuse_what_they_cannot_plan():
    pilot = compare.paired(*_runs_from_cells(80, 6, 4, 10))
    assert compare.cases_needed(0.02, discordant=pilot).iloc[0]["discordant"] == pytest.approx(0.1)
    with pytest.warns(EvalkitWarning, match="no change reaches power 0.8"):
        out = compare.detectable_difference(10, discordant=0.1)
    assert np.isnan(out.iloc[0]["difference"])
    with pytest.raises(ValueError, match="cannot be larger than the share of cases that flip"):
        compare.cases_needed(0.2, discordant=0.1)
    with pytest.raises(ValueError, match="`discordant` must be above 0"):
        compare.cases_needed(0.02, discordant=0)
    with pytest.raises(ValueError, match="`discordant`: no case flipped in the pilot"):
        compare.cases_needed(0.02, discordant=compare.paired(*_runs_from_cells(8, 0, 0, 2)))
    with pytest.raises(ValueError, match="this one compares scores"):
        compare.cases_needed(0.02, discordant=compare.paired(pd.Series([1.0, 2.0]), pd.Series([2.0, 2.0])))
    with pytest.raises(ValueError, match="0 < alpha < power < 1"):
        compare.detectable_difference(100, discordant=0.1, power=0.01)
    with pytest.raises(TypeError, match="`n` must be an integer; got 10.5"):
        compare.detectable_difference(10.5, discordant=0.1)
    with pytest.raises(ValueError, match="`difference` must be nonzero"):
        compare.cases_needed(0, discordant=0.1)


# ---------------------------------------------------------------------------------- several runs
def _several_runs(seed=0, n=60):
    rng = np.random.default_rng(seed)
    frames = []
    for segment in ("billing", "returns"):
        base = rng.random(n) < 0.9
        for name, flip_down, flip_up in (("v1", 0.0, 0.0), ("v2", 0.15, 0.0), ("v3", 0.02, 0.03), ("v4", 0.05, 0.3)):
            u = rng.random(n)
            verdict = np.where(base, u >= flip_down, u < flip_up)
            frames.append(pd.DataFrame({"case_id": np.arange(n), "segment": segment, "version": name,
                                        "verdict": np.where(verdict, "PASS", "FAIL")}))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize(("adjust", "reference"), [("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh"),
                                                   ("by", "fdr_by")])
def test_against_baseline_adjusted_p_values_equal_statsmodels(adjust, reference):
    multipletests = pytest.importorskip("statsmodels.stats.multitest", reason="the reference is statsmodels, from the 'test' extra").multipletests

    table = compare.against_baseline(_several_runs(), baseline="v1", run="version", by="segment", adjust=adjust)
    assert len(table) == 6 and table.attrs["adjust"] == adjust and table.attrs["comparisons"] == 6
    expected = multipletests(table["p_val"].to_numpy(), method=reference)[1]
    np.testing.assert_allclose(table["p_adjusted"].to_numpy(), expected, rtol=1e-12, atol=0)


def test_against_baseline_rows_equal_paired_and_joint_intervals_are_bonferroni():
    runs = _several_runs(1)
    table = compare.against_baseline(runs, baseline="v1", run="version", by="segment")
    def pick(segment, version):
        return runs[(runs["segment"] == segment) & (runs["version"] == version)].set_index("case_id")["verdict"]

    for row in table.to_dict("records"):
        base, other = pick(row["segment"], "v1"), pick(row["segment"], row["run"])
        res = compare.paired(base, other)
        joint = compare.paired(base, other, confidence_level=1 - 0.05 / 6)
        assert (row["difference"], row["ci_low"], row["ci_high"], row["p_val"]) == pytest.approx(
            (res.difference, res.ci_low, res.ci_high, res.p_val), abs=1e-12)
        assert (row["joint_low"], row["joint_high"]) == pytest.approx((joint.ci_low, joint.ci_high), abs=1e-12)
        assert row["method"] == "newcombe" and row["test"] == "exact McNemar"
    alpha = 0.05
    decided = table["p_adjusted"] <= alpha
    assert (table.loc[decided, "conclusion"].isin(["higher than baseline", "lower than baseline"])).all()
    assert (table.loc[~decided, "conclusion"].str.startswith("not distinguishable from baseline")).all()
    assert set(table.columns) >= {"segment", "run", "baseline", "n", "baseline_mean", "mean", "joint_low", "p_adjusted"}


def test_against_baseline_reads_the_smallest_change_without_overstating():
    runs = _several_runs(2, n=40)
    table = compare.against_baseline(runs, baseline="v1", run="version", by="segment", smallest_change=0.02)
    undecided = table[table["p_adjusted"] > 0.05]
    assert len(undecided) and undecided["conclusion"].str.contains("a change of 0.02 is not ruled out").all()
    for row in undecided.to_dict("records"):
        wide = runs[runs["segment"] == row["segment"]].pivot(index="case_id", columns="version", values="verdict")
        share = max((wide["v1"] != wide[row["run"]]).mean(), 0.02)
        assert row["power"] == pytest.approx(mcnemar_power(row["n"], 0.02, share, 0.05))
        assert f"(power to detect it at most {row['power']:.2f})" in row["conclusion"]
    loose = compare.against_baseline(runs, baseline="v1", run="version", by="segment", smallest_change=0.9)
    assert loose.loc[loose["p_adjusted"] > 0.05, "conclusion"].str.endswith("the joint interval lies within +-0.9").all()


def test_against_baseline_scores_and_bad_input():
    rng = np.random.default_rng(4)
    a = rng.integers(3, 6, 50).astype(float)
    runs = pd.DataFrame({"case_id": np.tile(np.arange(50), 3), "run": np.repeat(["a", "b", "c"], 50),
                         "score": np.concatenate([a, np.clip(a - (rng.random(50) < 0.4), 1, 5), a])})
    table = compare.against_baseline(runs, baseline="a", value="score", bounds=(1, 5), rng=0)
    assert table["method"].tolist() == ["betting"] * 2 and table.attrs["kind"] == "mean score"
    assert table.loc[1, "difference"] == 0 and table.loc[1, "p_val"] == 1.0
    with pytest.warns(EvalkitWarning, match="cases changed their score"):
        t_table = compare.against_baseline(runs, baseline="a", value="score", bounds=(1, 5), interval="t", rng=0)
    assert t_table["method"].tolist() == ["t"] * 2
    with pytest.raises(TypeError, match="unexpected keyword argument 'method'"):
        compare.against_baseline(runs, baseline="a", value="score", bounds=(1, 5), method="t", rng=0)
    with pytest.raises(ValueError, match="`interval` for a mean score difference must be one of"):
        compare.against_baseline(runs, baseline="a", value="score", interval="wald")
    with pytest.raises(ValueError, match="`baseline` 'z' is not a value of runs\\['run'\\]"):
        compare.against_baseline(runs, baseline="z", value="score")
    with pytest.raises(KeyError, match="`runs` is missing column\\(s\\) \\['verdict'\\]"):
        compare.against_baseline(runs, baseline="a")
    with pytest.raises(ValueError, match="`adjust` must be one of"):
        compare.against_baseline(runs, baseline="a", value="score", adjust="fdr")
    with pytest.raises(ValueError, match="has case 0 more than once in run 'a'"):
        compare.against_baseline(pd.concat([runs, runs.head(1)]), baseline="a", value="score")
    with pytest.raises(ValueError, match="holds only the baseline"):
        compare.against_baseline(runs[runs.run == "a"], baseline="a", value="score")
    with pytest.raises(TypeError, match="`runs` must be a pandas DataFrame"):
        compare.against_baseline("runs.csv", baseline="a")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        before = runs.copy()
        compare.against_baseline(runs, baseline="a", value="score", rng=0)
        pd.testing.assert_frame_equal(runs, before)


# ------------------------------------------------------------------------------------------ clusters
def _clustered_runs(rng, clusters: int, epochs: int):
    groups = np.repeat(np.arange(clusters), epochs)
    p = rng.beta(2, 1, clusters)[groups]
    a = rng.random(len(groups)) < p
    b = np.where(rng.random(len(groups)) < 0.3, rng.random(len(groups)) < p, a)
    ids = [f"c{i}" for i in range(len(groups))]
    return (pd.Series(np.where(a, "PASS", "FAIL"), index=ids), pd.Series(np.where(b, "PASS", "FAIL"), index=ids),
            pd.Series(groups, index=ids))


def test_paired_over_clusters_is_an_exact_test_of_the_clusters_totals():
    rng = np.random.default_rng(7)
    for clusters, epochs in ((6, 3), (9, 2), (12, 1), (5, 5)):
        a, b, groups = _clustered_runs(rng, clusters, epochs)
        res = compare.paired(a, b, cluster=groups)
        change = (b == "PASS").astype(int) - (a == "PASS").astype(int)
        totals = change.groupby(groups).sum().to_numpy()
        # the reference: scipy's permutation test of the clusters' totals, signs flipped (exact: 2 ** k <= 9999)
        ref = stats.permutation_test((totals,), np.sum, permutation_type="samples", n_resamples=9999).pvalue
        assert res.p_val == pytest.approx(min(1.0, ref), rel=1e-12), (clusters, epochs)
        assert (res.cluster, res.n_clusters, res.test) == ("given", clusters, "exact sign-flip over clusters")
        assert res.ci_low <= res.difference <= res.ci_high and res.method == "cluster-betting"
    for n10, n01 in ((0, 0), (3, 9), (12, 1), (20, 20)):  # one case per cluster: the exact McNemar test
        a, b = _runs_from_cells(10, n10, n01, 10)
        res = compare.paired(a, b, cluster=pd.Series(np.arange(len(a)), index=a.index))
        assert res.p_val == pytest.approx(mcnemar_exact_p(n10, n01), rel=1e-12)


def test_paired_over_clusters_options_and_refusals():
    rng = np.random.default_rng(3)
    a, b, groups = _clustered_runs(rng, 8, 3)
    table_a = pd.DataFrame({"case_id": a.index, "rubric": "r", "rubric_version": "v", "model": "m", "verdict": a.to_numpy(),
                            "error": None, "question": groups.to_numpy()})
    table_b = table_a.assign(verdict=b.to_numpy())
    by_column = compare.paired(table_a, table_b, cluster="question")
    by_series = compare.paired(a, b, cluster=groups)
    assert (by_column.p_val, by_column.ci_low, by_column.ci_high) == (by_series.p_val, by_series.ci_low, by_series.ci_high)
    assert by_column.cluster == "question" and "8 clusters (question)" in repr(by_column)
    with pytest.raises(ValueError, match=r"`interval='newcombe'` treats the cases as independent; with clusters"):
        compare.paired(a, b, cluster=groups, interval="newcombe")
    moved = table_b.assign(question=np.roll(groups.to_numpy(), 1))
    with pytest.raises(ValueError, match=r"`cluster='question'`: case 'c0' is in cluster 0 in a and 7 in b"):
        compare.paired(table_a, moved, cluster="question")
    with pytest.raises(TypeError, match="`cluster='question'` names a column, which needs `a` to be a results table"):
        compare.paired(a, b, cluster="question")
    with pytest.raises(ValueError, match="`cluster` has no cluster for 1 case"):
        compare.paired(a, b, cluster=groups.iloc[1:])
    scores_a, scores_b = (pd.Series(rng.integers(1, 6, len(a)).astype(float), index=a.index) for _ in range(2))
    res = compare.paired(scores_a, scores_b, cluster=groups, bounds=(1, 5), rng=0)
    totals = (scores_b - scores_a).groupby(groups).sum().to_numpy()
    ref = stats.permutation_test((totals,), np.sum, permutation_type="samples", n_resamples=9999).pvalue
    assert res.kind == "mean score" and res.test == "sign-flip permutation over clusters"
    assert res.p_val == pytest.approx(ref, rel=1e-12) and res.ci_low <= res.difference <= res.ci_high


def _rated_pairs(n=100, seed=11):
    """Two 1-5 ratings of the same n items, ids grouped by document (as SummEval's), in file order."""
    gen = np.random.default_rng(seed)
    ids = [f"doc{i // 4:03d}_sys{i % 4}" for i in range(n)]
    a = gen.integers(2, 6, n).astype(float)
    b = np.clip(a - (gen.random(n) < 0.3) + (gen.random(n) < 0.1) * np.arange(n) / n * 2, 1, 5).round()
    return pd.Series(a, index=ids), pd.Series(b, index=ids)


def test_paired_scores_give_one_interval_in_any_row_order():
    """The betting interval takes the cases in a documented order (a keyed hash of the ids): file order, sorted and
    shuffled give one interval, ``rng`` picks the order, and against_baseline reports what paired does."""
    a, b = _rated_pairs()
    first = compare.paired(a, b, bounds=(1, 5))
    for order in (np.arange(100)[::-1], np.argsort(a.index.str[::-1]), np.random.default_rng(3).permutation(100)):
        again = compare.paired(a.iloc[order], b.iloc[order[::-1]], bounds=(1, 5))
        assert (again.ci_low, again.ci_high, again.p_val) == (first.ci_low, first.ci_high, first.p_val)
    seeded = [compare.paired(a, b, bounds=(1, 5), rng=seed) for seed in (1, 2)]
    assert (seeded[0].ci_low, seeded[0].ci_high) != (seeded[1].ci_low, seeded[1].ci_high)  # rng is honoured
    assert (compare.paired(a, b, bounds=(1, 5), rng=1).ci_low) == seeded[0].ci_low
    runs = pd.concat([pd.DataFrame({"case_id": s.index, "run": name, "score": s.to_numpy()})
                      for name, s in (("a", a), ("b", b))]).sample(frac=1, random_state=5)
    for rng in (None, 1):
        row = compare.against_baseline(runs, baseline="a", value="score", bounds=(1, 5), rng=rng).iloc[0]
        res = compare.paired(a, b, bounds=(1, 5), rng=rng)
        assert (row["ci_low"], row["ci_high"], row["p_val"]) == (res.ci_low, res.ci_high, res.p_val)


def test_paired_says_how_many_cases_matched():
    a, b = _rated_pairs(20)
    with pytest.warns(EvalkitWarning, match=r"matched 15 case\(s\) by id; 5 of `a`'s 20 ids match nothing in `b` "
                                            r"\(e.g. \['doc003_sys3', 'doc004_sys0', 'doc004_sys1'\]\)") as caught:
        compare.paired(a, b.iloc[:15], bounds=(1, 5))
    assert caught[0].filename == __file__
    failed = b.copy()
    failed.iloc[2] = np.nan
    with pytest.warns(EvalkitWarning, match=r"1 of the 20 common cases have no verdict in one run"):
        assert compare.paired(a, failed, bounds=(1, 5)).n == 19
    with pytest.raises(ValueError, match="share no case id"):
        compare.paired(a, b.set_axis([f"x{i}" for i in range(20)]), bounds=(1, 5))


@pytest.mark.slow
def test_paired_on_summeval_gives_one_interval_in_file_sorted_and_shuffled_order():
    """The measured case: two SummEval systems' relevance ratings on the same 100 documents, compared with the betting
    interval: file order, sorted by document and shuffled gave three intervals; now one, and `rng` picks another."""
    from tests.conftest import shared_dataset

    table = datasets.load_summeval(shared_dataset("summeval"))
    first, second = sorted(table["system"].unique())[:2]
    a = table[table["system"] == first].set_index("doc_id")["relevance"]
    b = table[table["system"] == second].set_index("doc_id")["relevance"]
    assert len(a) == len(b) == 100
    found = set()
    for order in (a.index, a.index.sort_values(), a.index[np.random.default_rng(0).permutation(100)]):
        res = compare.paired(a.loc[order], b.loc[order], bounds=(1, 5))
        found.add((res.ci_low, res.ci_high))
    assert len(found) == 1
    other = compare.paired(a, b, bounds=(1, 5), rng=1)
    assert (other.ci_low, other.ci_high) not in found


def test_against_baseline_says_which_cases_one_run_lacks():
    runs = pd.DataFrame({"case_id": list("abcdef") + list("abcd"), "run": ["v1"] * 6 + ["v2"] * 4,
                         "verdict": ["PASS", "FAIL"] * 5})
    with pytest.warns(EvalkitWarning, match=r"matched 4 case\(s\) by id; 2 of `v1 \(baseline\)`'s 6 ids match nothing "
                                            r"in `v2` \(e.g. \['e', 'f'\]\)") as caught:
        table = compare.against_baseline(runs, baseline="v1")
    assert table.loc[0, "n"] == 4 and caught[0].filename == __file__


def test_a_change_of_judge_is_reported_as_one():
    """Runs judged by different rubric versions: the comparison says the change measures the judge too; one judge on
    two systems' outputs says nothing of the kind."""
    from evalkit import judge

    cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(30)], "output": [f"answer {i}" for i in range(30)]})
    strict = judge.Rubric("ok", "The answer is fine.", "{criterion}\n{output}\n{levels}")
    lenient = judge.Rubric("ok", "The answer is roughly fine.", "{criterion}\n{output}\n{levels}")
    verdict = lambda prompt: "PASS" if int(prompt.rsplit("answer ", 1)[1].split()[0]) % 3 else "FAIL"  # noqa: E731
    a = judge.run_judge(cases, strict, verdict, model_id="rule", progress=False)
    b = judge.run_judge(cases, lenient, verdict, model_id="rule", progress=False)
    res = compare.paired(a, b)
    assert len(res.judge_change) == 1 and res.judge_change[0].startswith("rubric version")
    assert "judge change" in repr(res) and "measures the judge" in res._repr_html_()
    other = judge.run_judge(cases.assign(output=[f"answer {i + 1}" for i in range(30)]), strict, verdict,
                            model_id="rule", progress=False)
    same = compare.paired(a, other)
    assert same.judge_change == () and "judge change" not in repr(same)
