"""evalkit.agreement against reference packages (krippendorff, pingouin, statsmodels, sklearn) and naive loops."""

from __future__ import annotations

import json
import re
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, _stats, agreement, correlate, datasets, labels
from tests.conftest import ROOT, shared_dataset

# The krippendorff package's own examples (its docstring): Krippendorff's Wikipedia example (coders x units)
# and the example of Hayes & Krippendorff's "fulltext.pdf", page 8.
WIKIPEDIA = [[np.nan, np.nan, np.nan, np.nan, np.nan, 3, 4, 1, 2, 1, 1, 3, 3, np.nan, 3],
             [1, np.nan, 2, 1, 3, 3, 4, 3, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan, np.nan],
             [np.nan, np.nan, 2, 1, 3, 4, 4, np.nan, 2, 1, 1, 3, 3, np.nan, 4]]
FULLTEXT = [[1, 2, 3, 3, 2, 1, 4, 1, 2, np.nan, np.nan, np.nan],
            [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, np.nan, 3],
            [np.nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, np.nan],
            [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, np.nan]]
# The worked example of Shrout & Fleiss (1979): 6 targets x 4 judges.
SHROUT_FLEISS = [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]]


def long_from_coders(matrix) -> pd.DataFrame:
    """coders x units (NaN = missing) -> long ratings table."""
    a = np.asarray(matrix, dtype=float)
    coder, unit = np.nonzero(~np.isnan(a))
    return pd.DataFrame({"item_id": unit, "annotator": [f"c{i}" for i in coder], "rating": a[coder, unit]})


def coders_from_long(ratings: pd.DataFrame) -> np.ndarray:
    return ratings.pivot(index="annotator", columns="item_id", values="rating").to_numpy(dtype=float)


@pytest.fixture(scope="module")
def usr():
    ratings, items = datasets.load_usr(shared_dataset("usr"))
    return ratings, items


# --------------------------------------------------------------------------------------------------
# Krippendorff's alpha
# --------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("level", agreement.LEVELS)
@pytest.mark.parametrize("data", [WIKIPEDIA, FULLTEXT], ids=["wikipedia", "fulltext"])
def test_alpha_matches_krippendorff_package_on_its_examples(data, level):
    krippendorff = pytest.importorskip("krippendorff", reason="reference values need the 'test' extra")
    ratings = long_from_coders(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)  # units with one rating are left out, as the package does
        ours = agreement.krippendorff_alpha(ratings, level=level, n_resamples=0)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
    assert ours["alpha"].iloc[0] == pytest.approx(expected, abs=1e-9)


def test_alpha_published_values():
    # Independent of the package: Krippendorff (2011) gives 0.691 nominal and 0.811 interval for the
    # Wikipedia example; Hayes & Krippendorff give 0.815 ordinal for the fulltext example.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        assert agreement.krippendorff_alpha(long_from_coders(WIKIPEDIA), n_resamples=0)["alpha"].iloc[0] == pytest.approx(0.691358, abs=1e-6)
        assert agreement.krippendorff_alpha(long_from_coders(WIKIPEDIA), level="interval", n_resamples=0)["alpha"].iloc[0] == pytest.approx(0.810845, abs=1e-6)
        assert agreement.krippendorff_alpha(long_from_coders(FULLTEXT), level="ordinal", n_resamples=0)["alpha"].iloc[0] == pytest.approx(0.815, abs=5e-4)


@pytest.mark.slow
@pytest.mark.parametrize("level", agreement.LEVELS)
def test_alpha_matches_krippendorff_package_on_usr(usr, level):
    krippendorff = pytest.importorskip("krippendorff", reason="reference values need the 'test' extra")
    ratings, _ = usr
    for dimension, table in ratings.groupby("dimension"):
        table = table[["item_id", "annotator", "rating"]]
        ours = agreement.krippendorff_alpha(table, level=level, n_resamples=0)["alpha"].iloc[0]
        if level == "ratio" and (table["rating"] == 0).any():
            # 0 vs 0 is a 0/0 ratio distance: both define it as 0, but the package warns; compare quietly.
            with np.errstate(invalid="ignore", divide="ignore"):
                expected = krippendorff.alpha(reliability_data=coders_from_long(table), level_of_measurement=level)
        else:
            expected = krippendorff.alpha(reliability_data=coders_from_long(table), level_of_measurement=level)
        assert ours == pytest.approx(expected, abs=1e-9), dimension


def annotator_noise_ratings(rng, n_items=120, missing=0.1) -> pd.DataFrame:
    """Annotators share a latent item value plus noise; some ratings missing."""
    truth = rng.integers(1, 6, n_items)
    rows = [(i, a, float(np.clip(truth[i] + rng.integers(-1, 2), 1, 5))) for i in range(n_items) for a in "abc"
            if rng.random() > missing]
    return pd.DataFrame(rows, columns=["item_id", "annotator", "rating"])


@pytest.mark.parametrize("level", agreement.LEVELS)
def test_alpha_bootstrap_equals_the_package_on_the_same_resamples(rng, level):
    krippendorff = pytest.importorskip("krippendorff", reason="reference values need the 'test' extra")
    ratings = annotator_noise_ratings(rng)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        out = agreement.krippendorff_alpha(ratings, level=level, n_resamples=200, rng=7, interval="percentile")
        kept = ratings[ratings.groupby("item_id")["rating"].transform("size") >= 2]
    # The documented resampling: items numbered by first appearance, resample r = the items at
    # rng.integers(0, n_items, n_items, dtype=int32); here each resample goes to the package.
    coders = kept.pivot(index="annotator", columns="item_id", values="rating")[pd.unique(kept["item_id"])].to_numpy()
    n = coders.shape[1]
    idx = np.random.default_rng(7).integers(0, n, (200, n), dtype=np.int32)
    with np.errstate(invalid="ignore", divide="ignore"):
        dist = [krippendorff.alpha(reliability_data=coders[:, i], level_of_measurement=level) for i in idx]
    assert list(out.columns) == ["alpha", "ci_low", "ci_high", "interval", "n_items", "n_annotators", "level"]
    row = out.iloc[0]
    assert row["interval"] == "percentile bootstrap over items"
    assert [row["ci_low"], row["ci_high"]] == pytest.approx(np.percentile(dist, [2.5, 97.5]), abs=1e-9)
    assert row["ci_low"] < row["alpha"] < row["ci_high"] and row["alpha"] > 0.2


@pytest.mark.parametrize("level", agreement.LEVELS)
def test_alpha_sparse_path_equals_dense_path(rng, level, monkeypatch):
    ratings = annotator_noise_ratings(rng, n_items=60)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        dense = agreement.krippendorff_alpha(ratings, level=level, n_resamples=50, rng=1, interval="percentile")
        monkeypatch.setattr(agreement, "_DENSE_CELLS", 0)  # the path for many distinct values
        sparse_path = agreement.krippendorff_alpha(ratings, level=level, n_resamples=50, rng=1, interval="percentile")
        # the default (studentized) interval needs dense per-item rows; the sparse path falls back, saying so
        fallback = agreement.krippendorff_alpha(ratings, level=level, n_resamples=50, rng=1)
    pd.testing.assert_frame_equal(dense, sparse_path, rtol=1e-12)
    expected = "percentile bootstrap over items" if level == "ordinal" else "studentized bootstrap over items"
    assert fallback["interval"].iloc[0] == expected


def _studentized_by_loop(coders: np.ndarray, level: str, idx: np.ndarray, confidence_level: float = 0.95):
    """The bootstrap-t interval by brute force: the krippendorff package on every resample and every leave-one-out."""
    krippendorff = pytest.importorskip("krippendorff", reason="reference values need the 'test' extra")

    def alpha(columns):
        with np.errstate(invalid="ignore", divide="ignore"):
            return krippendorff.alpha(reliability_data=coders[:, columns], level_of_measurement=level)

    def jackknife_se(columns):
        m = len(columns)
        values = np.array([alpha(np.delete(columns, i)) for i in range(m)])
        return np.sqrt((m - 1) / m * ((values - values.mean()) ** 2).sum())

    everything = np.arange(coders.shape[1])
    theta, se = alpha(everything), jackknife_se(everything)
    t = np.array([(alpha(i) - theta) / jackknife_se(i) for i in idx])
    tail = (1 - confidence_level) / 2
    q_low, q_high = np.quantile(t, [tail, 1 - tail])
    return theta - q_high * se, theta - q_low * se


@pytest.mark.parametrize("level", agreement.LEVELS)
def test_alpha_studentized_interval_equals_a_brute_force_loop(rng, level):
    ratings = annotator_noise_ratings(rng, n_items=14)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        out = agreement.krippendorff_alpha(ratings, level=level, n_resamples=60, rng=3).iloc[0]
        kept = ratings[ratings.groupby("item_id")["rating"].transform("size") >= 2]
    coders = kept.pivot(index="annotator", columns="item_id", values="rating")[pd.unique(kept["item_id"])].to_numpy()
    n = coders.shape[1]
    idx = np.random.default_rng(3).integers(0, n, (60, n), dtype=np.int32)
    low, high = _studentized_by_loop(coders, level, idx)
    assert (out["ci_low"], out["ci_high"]) == (pytest.approx(low, abs=1e-10), pytest.approx(high, abs=1e-10))
    assert out["interval"] == "studentized bootstrap over items"


def test_alpha_bca_interval_is_scipy_bootstrap_of_the_package(rng):
    krippendorff = pytest.importorskip("krippendorff", reason="reference values need the 'test' extra")
    ratings = annotator_noise_ratings(rng, n_items=25)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        out = agreement.krippendorff_alpha(ratings, level="interval", n_resamples=300, rng=5, interval="BCa").iloc[0]
        kept = ratings[ratings.groupby("item_id")["rating"].transform("size") >= 2]
    coders = kept.pivot(index="annotator", columns="item_id", values="rating")[pd.unique(kept["item_id"])].to_numpy()
    n = coders.shape[1]
    ref = stats.bootstrap((np.arange(n),), lambda i: krippendorff.alpha(reliability_data=coders[:, i],
                          level_of_measurement="interval"), vectorized=False, n_resamples=300, method="BCa",
                          rng=np.random.default_rng(5), batch=max(1, 2_000_000 // n))
    assert out["ci_low"] == pytest.approx(ref.confidence_interval.low, abs=1e-10)
    assert out["ci_high"] == pytest.approx(ref.confidence_interval.high, abs=1e-10)
    assert out["interval"] == "BCa bootstrap over items"


def test_alpha_does_not_mutate_and_ignores_row_order(rng):
    ratings = long_from_coders(FULLTEXT)
    before = ratings.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        a = agreement.krippendorff_alpha(ratings, level="ordinal", n_resamples=0)
        b = agreement.krippendorff_alpha(ratings.sample(frac=1, random_state=3), level="ordinal", n_resamples=0)
    pd.testing.assert_frame_equal(ratings, before)
    assert a["alpha"].iloc[0] == pytest.approx(b["alpha"].iloc[0], abs=1e-12)


# --------------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------------
def test_one_annotator_only():
    ratings = pd.DataFrame({"item_id": [1, 2, 3], "annotator": ["a"] * 3, "rating": [1, 2, 3]})
    for func in (agreement.krippendorff_alpha, agreement.icc, agreement.fleiss_kappa, agreement.pairwise_agreement):
        with pytest.raises(ValueError, match="at least 2 annotators to measure agreement; got 1"):
            func(ratings)


def test_item_rated_by_one_annotator_is_left_out_with_a_warning():
    ratings = long_from_coders(FULLTEXT)  # unit 11 is rated by one coder only
    with pytest.warns(EvalkitWarning, match="1 item.*fewer than 2 ratings.*left out"):
        out = agreement.krippendorff_alpha(ratings, level="ordinal", n_resamples=0)
    assert out["n_items"].iloc[0] == 11
    # 8 complete items: some resamples have no variation, and the bootstrap interval says it is NaN
    with pytest.warns(EvalkitWarning, match="bootstrap interval of ICC1, .* is NaN: some resample of the 8 items"), \
            pytest.warns(EvalkitWarning, match="not rated by every annotator"):
        agreement.icc(ratings, interval="studentized", rng=0)  # (the default would also warn about ICC2's F interval)
    lone = pd.DataFrame({"item_id": [1, 2], "annotator": ["a", "b"], "rating": [1, 2]})
    with pytest.warns(EvalkitWarning), pytest.raises(ValueError, match="no item rated by 2 or more"):
        agreement.krippendorff_alpha(lone)


@pytest.mark.parametrize("level", agreement.LEVELS)
def test_alpha_on_one_item_or_constant_ratings_is_nan_with_the_reason(level):
    one_item = pd.DataFrame({"item_id": [1, 1, 1], "annotator": list("abc"), "rating": [1, 2, 2]})
    with pytest.warns(EvalkitWarning, match="at least 2 items rated by 2 or more annotators; `ratings` has 1"):
        out = agreement.krippendorff_alpha(one_item, level=level, rng=0)
    assert out[["alpha", "ci_low", "ci_high"]].isna().all(axis=None) and out["n_items"].iloc[0] == 1
    constant = pd.DataFrame({"item_id": [1, 1, 2, 2, 3, 3], "annotator": list("ab") * 3, "rating": [4] * 6})
    with pytest.warns(EvalkitWarning, match="undefined \\(NaN\\) when the ratings show no variation.* is 4"):
        out = agreement.krippendorff_alpha(constant, level=level, rng=0)
    assert np.isnan(out["alpha"].iloc[0]) and out["n_items"].iloc[0] == 3


@pytest.mark.parametrize("level", ["ordinal", "interval", "ratio"])
def test_alpha_refuses_infinite_ratings(level):
    ratings = pd.DataFrame({"item_id": [1, 1, 2, 2, 3, 3], "annotator": list("ab") * 3, "rating": [1, 2, np.inf, 2, 3, 3]})
    with pytest.raises(ValueError, match=f"`ratings` column 'rating' must hold finite numbers at level='{level}'; got inf"):
        agreement.krippendorff_alpha(ratings, level=level, rng=0)


def test_alpha_interval_with_degenerate_resamples_is_nan_with_a_warning():
    # two items, one of them the only one that varies: some resamples hold only the constant item
    ratings = pd.DataFrame({"item_id": [1, 1, 2, 2], "annotator": list("ab") * 2, "rating": [1, 1, 1, 2]})
    with pytest.warns(EvalkitWarning, match="bootstrap resamples of the 2 items have no variation"):
        out = agreement.krippendorff_alpha(ratings, n_resamples=200, rng=0)
    assert np.isfinite(out["alpha"].iloc[0]) and out[["ci_low", "ci_high"]].isna().all(axis=None)


def test_fleiss_kappa_with_one_category_or_one_item_is_nan_with_the_reason():
    one_category = pd.DataFrame({"item_id": [1, 1, 2, 2], "annotator": list("ab") * 2, "rating": ["yes"] * 4})
    with pytest.warns(EvalkitWarning, match="Fleiss' kappa is undefined .* every pairable rating in `ratings` is 'yes'"):
        out = agreement.fleiss_kappa(one_category, rng=0)
    assert out[["kappa", "ci_low", "ci_high", "p_val"]].isna().all(axis=None) and out["n_categories"].iloc[0] == 1
    one_item = pd.DataFrame({"item_id": [1, 1, 1], "annotator": list("abc"), "rating": ["yes", "no", "no"]})
    with pytest.warns(EvalkitWarning, match="Fleiss' kappa needs at least 2 items"):
        assert np.isnan(agreement.fleiss_kappa(one_item, rng=0)["kappa"].iloc[0])


def test_non_numeric_ratings_at_interval_level():
    ratings = pd.DataFrame({"item_id": [1, 1, 2, 2], "annotator": ["a", "b"] * 2, "rating": ["good", "bad"] * 2})
    for level in ("ordinal", "interval", "ratio"):
        with pytest.raises(TypeError, match=f"must be numeric at level='{level}'.*'good'"):
            agreement.krippendorff_alpha(ratings, level=level)
    assert agreement.krippendorff_alpha(ratings, level="nominal", n_resamples=0)["n_items"].iloc[0] == 2
    with pytest.raises(TypeError, match="must be numeric for ICC"):
        agreement.icc(ratings)


def test_unknown_level_and_other_bad_arguments():
    ratings = long_from_coders(SHROUT_FLEISS)
    with pytest.raises(ValueError, match=r"`level` must be one of \['nominal', 'ordinal', 'interval', 'ratio'\]; got 'likert'"):
        agreement.krippendorff_alpha(ratings, level="likert")
    with pytest.raises(KeyError, match=r"missing column\(s\) \['rating'\]; it has columns \['item_id', 'annotator', 'score'\]"):
        agreement.krippendorff_alpha(ratings.rename(columns={"rating": "score"}))
    with pytest.raises(TypeError, match="must be a pandas DataFrame"):
        agreement.icc("ratings.csv")
    with pytest.raises(ValueError, match="more than one rating by annotator 'c0' for item 0"):
        agreement.krippendorff_alpha(pd.concat([ratings, ratings.iloc[:1]]))
    with pytest.raises(ValueError, match="`weights` must be one of"):
        agreement.pairwise_agreement(ratings, weights="cubic")
    with pytest.raises(ValueError, match="name the two to compare"):
        agreement.cohen_kappa(ratings)


# --------------------------------------------------------------------------------------------------
# ICC, Fleiss, Cohen, pairwise
# --------------------------------------------------------------------------------------------------
def test_icc_matches_pingouin_on_shrout_fleiss():
    pingouin = pytest.importorskip("pingouin", reason="reference values need the 'test' extra")
    ratings = long_from_coders(np.asarray(SHROUT_FLEISS).T)
    ours = agreement.icc(ratings, interval="F")  # the F intervals are pingouin's
    assert (ours["interval"] == "F distribution (Shrout & Fleiss 1979)").all() and (ours["note"] == "").all()
    ref = pingouin.intraclass_corr(ratings, targets="item_id", raters="annotator", ratings="rating").set_index("Type")
    names = {"ICC1": "ICC(1,1)", "ICC2": "ICC(A,1)", "ICC3": "ICC(C,1)", "ICC1k": "ICC(1,k)", "ICC2k": "ICC(A,k)",
             "ICC3k": "ICC(C,k)"}
    for ours_name, ref_name in names.items():
        row, expected = ours.loc[ours_name], ref.loc[ref_name]
        assert row["icc"] == pytest.approx(expected["ICC"], abs=1e-12)
        assert row["F"] == pytest.approx(expected["F"], abs=1e-10)
        assert row["p_val"] == pytest.approx(expected["pval"], abs=1e-12)
        # pingouin rounds its interval to two decimals.
        assert [row["ci_low"], row["ci_high"]] == pytest.approx(list(expected["CI95"]), abs=0.005 + 1e-12)
    # The values Shrout & Fleiss (1979) publish for their example, to their two decimals.
    assert ours["icc"].round(2).tolist() == [0.17, 0.29, 0.71, 0.44, 0.62, 0.91]


def test_icc_auto_bootstraps_icc1_and_icc3_and_warns_for_icc2_on_coarse_ratings(rng):
    wide = np.clip(np.round(3.5 + rng.normal(size=(40, 1)) + rng.normal(scale=0.8, size=(40, 3))), 1, 5)
    ratings = long_from_coders(wide.T)
    with pytest.warns(EvalkitWarning, match="the ratings take 5 distinct values: the F intervals of ICC2 and ICC2k"):
        auto = agreement.icc(ratings, rng=3)
    with pytest.warns(EvalkitWarning):
        f_based = agreement.icc(ratings, interval="F")
    boot = agreement.icc(ratings, interval="studentized", rng=3)  # no F interval, no warning
    bootstrapped, kept = ["ICC1", "ICC3", "ICC1k", "ICC3k"], ["ICC2", "ICC2k"]
    pd.testing.assert_frame_equal(auto.loc[bootstrapped, ["ci_low", "ci_high", "interval"]],
                                  boot.loc[bootstrapped, ["ci_low", "ci_high", "interval"]])
    pd.testing.assert_frame_equal(auto.loc[kept, ["ci_low", "ci_high", "interval"]],
                                  f_based.loc[kept, ["ci_low", "ci_high", "interval"]])
    assert (auto.loc[kept, "note"].str.startswith("F interval on coarse ratings")).all()
    # the bootstrap ran a little short on some coarse scales in the coverage harness: its rows say so
    for table, rows in ((auto, bootstrapped), (boot, bootstrapped + kept)):
        assert table.loc[rows, "note"].str.startswith("studentized bootstrap on coarse ratings: covered 0.89-0.94").all()
    smooth = long_from_coders(rng.normal(size=(1, 40)).repeat(3, axis=0) + rng.normal(size=(3, 40)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvalkitWarning)  # continuous ratings: no warning
        agreement.icc(smooth, rng=0)
    with pytest.raises(ValueError, match="`interval` must be one of"):
        agreement.icc(ratings, interval="exact")


def test_icc_studentized_interval_equals_a_brute_force_loop(rng):
    """The bootstrap-t interval of ICC3 by brute force: pingouin on every resample and every leave-one-out."""
    pingouin = pytest.importorskip("pingouin", reason="reference values need the 'test' extra")
    wide = rng.normal(size=(12, 1)) + rng.normal(size=(12, 3))
    out = agreement.icc(long_from_coders(wide.T), interval="studentized", n_resamples=20, rng=2)

    def value(rows):  # a resample's repeated items count as distinct targets
        table = long_from_coders(wide[rows].T)
        ref = pingouin.intraclass_corr(table, targets="item_id", raters="annotator", ratings="rating").set_index("Type")
        return ref.loc["ICC(C,1)", "ICC"]

    def jackknife_se(rows):
        values = np.array([value(np.delete(rows, i)) for i in range(len(rows))])
        return np.sqrt((len(rows) - 1) / len(rows) * ((values - values.mean()) ** 2).sum())

    everything = np.arange(12)
    theta, se = value(everything), jackknife_se(everything)
    idx = np.random.default_rng(2).integers(0, 12, (20, 12), dtype=np.int32)
    t = np.array([(value(i) - theta) / jackknife_se(i) for i in idx])
    q_low, q_high = np.quantile(t, [0.025, 0.975])
    assert out.loc["ICC3", "ci_low"] == pytest.approx(theta - q_high * se, abs=1e-9)
    assert out.loc["ICC3", "ci_high"] == pytest.approx(theta - q_low * se, abs=1e-9)


def test_fleiss_kappa_matches_statsmodels(rng):
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater", reason="reference values need the 'test' extra")
    truth = rng.integers(0, 4, 80)
    rows = []
    for i in range(80):
        raters = rng.choice(12, size=5, replace=False)  # different raters per item, 5 ratings each
        rows += [(i, f"r{r}", truth[i] if rng.random() < 0.6 else int(rng.integers(0, 4))) for r in raters]
    ratings = pd.DataFrame(rows, columns=["item_id", "annotator", "rating"])
    counts = pd.crosstab(ratings["item_id"], ratings["rating"]).to_numpy()
    out = agreement.fleiss_kappa(ratings, n_resamples=300, rng=4, interval="percentile")
    assert out["kappa"].iloc[0] == pytest.approx(inter_rater.fleiss_kappa(counts, method="fleiss"), abs=1e-12)
    # The interval: statsmodels' kappa on the same resamples of items (the documented draws).
    idx = np.random.default_rng(4).integers(0, 80, (300, 80), dtype=np.int32)
    dist = [inter_rater.fleiss_kappa(counts[i], method="fleiss") for i in idx]
    assert [out["ci_low"].iloc[0], out["ci_high"].iloc[0]] == pytest.approx(np.percentile(dist, [2.5, 97.5]), abs=1e-12)
    uneven = ratings.drop(index=0)
    with pytest.raises(ValueError, match="same number of ratings.*between 4 and 5"):
        agreement.fleiss_kappa(uneven)


def test_fleiss_kappa_studentized_interval_equals_a_brute_force_loop(rng):
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater", reason="reference values need the 'test' extra")
    truth = rng.integers(0, 3, 18)
    ratings = pd.DataFrame([(i, f"r{j}", truth[i] if rng.random() < 0.6 else int(rng.integers(0, 3)))
                            for i in range(18) for j in range(3)], columns=["item_id", "annotator", "rating"])
    out = agreement.fleiss_kappa(ratings, n_resamples=80, rng=9).iloc[0]
    counts = pd.crosstab(ratings["item_id"], ratings["rating"]).to_numpy()

    def kappa(rows):
        return inter_rater.fleiss_kappa(counts[rows], method="fleiss")

    def jackknife_se(rows):
        values = np.array([kappa(np.delete(rows, i)) for i in range(len(rows))])
        return np.sqrt((len(rows) - 1) / len(rows) * ((values - values.mean()) ** 2).sum())

    everything = np.arange(18)
    theta, se = kappa(everything), jackknife_se(everything)
    idx = np.random.default_rng(9).integers(0, 18, (80, 18), dtype=np.int32)
    t = np.array([(kappa(i) - theta) / jackknife_se(i) for i in idx])
    q_low, q_high = np.quantile(t, [0.025, 0.975])
    assert out["ci_low"] == pytest.approx(theta - q_high * se, abs=1e-10)
    assert out["ci_high"] == pytest.approx(theta - q_low * se, abs=1e-10)
    assert out["interval"] == "studentized bootstrap over items"


def test_fleiss_kappa_null_standard_error_matches_simulation():
    # Under no agreement beyond chance, the spread of kappa over many data sets is the standard error
    # that p_val uses (Fleiss, Nee & Landis 1979); simulated with statsmodels' kappa on random ratings.
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater", reason="reference values need the 'test' extra")
    gen = np.random.default_rng(11)
    probs = [0.5, 0.3, 0.2]
    sims = [inter_rater.fleiss_kappa(gen.multinomial(4, probs, size=150), method="fleiss") for _ in range(3000)]
    ratings = pd.DataFrame([(i, j, int(v)) for i in range(150) for j, v in enumerate(gen.choice(3, 4, p=probs))],
                           columns=["item_id", "annotator", "rating"])
    out = agreement.fleiss_kappa(ratings, n_resamples=0).iloc[0]
    se = abs(out["kappa"]) / stats.norm.isf(out["p_val"] / 2)
    assert se == pytest.approx(np.std(sims), rel=0.1)


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_matches_sklearn(rng, weights):
    metrics = pytest.importorskip("sklearn.metrics", reason="the sklearn reference is in the 'test' extra")
    a = rng.integers(1, 6, 200)
    b = np.clip(a + rng.integers(-2, 3, 200), 1, 5)
    ratings = pd.DataFrame({"item_id": np.r_[np.arange(200), np.arange(200)], "annotator": ["x"] * 200 + ["y"] * 200,
                            "rating": np.r_[a, b]})
    out = agreement.cohen_kappa(ratings, weights=weights)
    assert out["kappa"].iloc[0] == pytest.approx(metrics.cohen_kappa_score(a, b, weights=weights), abs=1e-12)
    assert out["agreement"].iloc[0] == pytest.approx(np.mean(a == b))
    assert _stats.cohen_kappa(a, b, weights=weights) == pytest.approx(
        metrics.cohen_kappa_score(a, b, weights=weights), abs=1e-12)


def test_weighted_kappa_by_hand():
    # Three levels; one disagreement (3 vs 2); quadratic weights 0/1/4 by distance between levels.
    a, b = [1, 2, 3, 3], [1, 2, 2, 3]
    observed = np.array([[1, 0, 0], [0, 1, 0], [0, 1, 1]]) / 4
    expected = np.outer(observed.sum(1), observed.sum(0))
    w = np.array([[0, 1, 4], [1, 0, 1], [4, 1, 0]])
    assert _stats.cohen_kappa(a, b, weights="quadratic") == pytest.approx(1 - (w * observed).sum() / (w * expected).sum())
    assert _stats.cohen_kappa(a, b, weights="quadratic") == pytest.approx(0.8)


def test_pairwise_agreement_table(rng):
    ratings = pd.DataFrame([(i, a, int(rng.integers(0, 3))) for i in range(40) for a in "abc" if rng.random() > 0.2],
                           columns=["item_id", "annotator", "rating"])
    table = agreement.pairwise_agreement(ratings)
    assert list(table.columns) == ["annotator_a", "annotator_b", "n", "agreement", "kappa", "weights"]
    assert list(zip(table["annotator_a"], table["annotator_b"], strict=True)) == list(combinations("abc", 2))
    for row in table.itertuples():
        wide = ratings.pivot(index="item_id", columns="annotator", values="rating")[[row.annotator_a, row.annotator_b]].dropna()
        assert row.n == len(wide)
        assert row.agreement == pytest.approx(np.mean(wide.iloc[:, 0] == wide.iloc[:, 1]))
        assert row.kappa == pytest.approx(_stats.cohen_kappa(wide.iloc[:, 0].to_numpy(), wide.iloc[:, 1].to_numpy()))


def test_ratings_from_labels_keeps_the_latest_label_per_annotator(tmp_path):
    records = [
        {"case_id": "a", "label": "PASS", "labeller": "ann", "mode": "label"},
        {"case_id": "a", "label": "FAIL", "labeller": "ann", "mode": "label"},
        {"case_id": "a", "label": "PASS", "labeller": "ann", "mode": "relabel"},
        {"case_id": "b", "label": None, "labeller": "ann", "mode": "label"},
        {"case_id": "a", "label": "FAIL", "labeller": "bob", "mode": "label"},
        {"case_id": "b", "label": "PASS", "labeller": "bob", "mode": "label"},
    ]
    expected = [{"item_id": "a", "annotator": "ann", "rating": "FAIL"},
                {"item_id": "a", "annotator": "bob", "rating": "FAIL"},
                {"item_id": "b", "annotator": "bob", "rating": "PASS"}]
    assert agreement.ratings_from_labels(pd.DataFrame(records)).to_dict("records") == expected
    # the same records in one file per annotator, read directly
    for who in ("ann", "bob"):
        for record in records:
            if record["labeller"] == who:
                labels.append_label(tmp_path / f"{who}.jsonl", record)
    files = [tmp_path / "ann.jsonl", tmp_path / "bob.jsonl"]
    assert agreement.ratings_from_labels(files).to_dict("records") == expected
    with pytest.raises(KeyError, match=r"\['labeller'\]"):
        agreement.ratings_from_labels(pd.DataFrame([{"case_id": "a", "label": "PASS", "annotator": "ann"}]))
    with pytest.raises(TypeError, match="labels file path"):
        agreement.ratings_from_labels(5)
    with pytest.raises(FileNotFoundError, match="nobody.jsonl: no such labels file"):
        agreement.krippendorff_alpha([tmp_path / "ann.jsonl", tmp_path / "nobody.jsonl"])


def test_agreement_functions_take_labels_files(tmp_path, rng):
    truth = rng.integers(0, 2, size=60)
    files = []
    for who, flip in (("ann", 0.1), ("bob", 0.2), ("cy", 0.3)):
        path = tmp_path / f"{who}.jsonl"
        for i, t in enumerate(truth):
            label = ("PASS", "FAIL")[int(t) ^ int(rng.random() < flip)]
            labels.append_label(path, {"case_id": f"c{i}", "label": label, "labeller": who, "mode": "label"})
        files.append(path)
    from_files = agreement.krippendorff_alpha(files, n_resamples=0)
    from_table = agreement.krippendorff_alpha(agreement.ratings_from_labels(files), n_resamples=0)
    pd.testing.assert_frame_equal(from_files, from_table)
    assert from_files.loc[0, "n_annotators"] == 3 and from_files.loc[0, "n_items"] == 60
    assert len(agreement.pairwise_agreement(files)) == 3


# --------------------------------------------------------------------------------------------------
# USR
# --------------------------------------------------------------------------------------------------
@pytest.mark.slow
def test_load_usr_matches_its_readme_and_the_tcva_release(usr):
    ratings, items = usr
    assert len(items) == 660 and items["corpus"].value_counts().to_dict() == {"topicalchat": 360, "personachat": 300}
    assert len(ratings) == 660 * 3 * 6
    tc = ratings[ratings["item_id"].str.startswith("usr_topicalchat")]
    means = tc.groupby("dimension")["rating"].mean().round(4)
    assert means.to_dict() == {"Engaging": 2.137, "Maintains Context": 2.2481, "Natural": 2.2778, "Overall": 3.1444,
                               "Understandable": 0.6731, "Uses Knowledge": 0.5454}
    # The TCVA release's USR human score is mean("Maintains Context") / 3 under the same item ids.
    path = shared_dataset("tcva") / "data" / "usr_prepared.json"
    prepared = {r["id"]: r for r in json.loads(path.read_text())}
    mc = ratings[ratings["dimension"] == "Maintains Context"].groupby("item_id")["rating"].mean() / 3
    for item_id, record in prepared.items():
        assert mc[item_id] == pytest.approx(record["human_score"], abs=5e-5)
        assert items.loc[item_id, "response"].strip() == record["answer"].strip()


# --------------------------------------------------------------------------------------------------
# the human ceiling
# --------------------------------------------------------------------------------------------------
def test_human_ceiling_uses_correlate_on_the_right_targets(rng):
    truth = pd.Series(rng.normal(size=80), index=[f"i{k}" for k in range(80)])
    rows = [(i, a, t + rng.normal()) for i, t in truth.items() for a in "abcd" if rng.random() > 0.15]
    ratings = pd.DataFrame(rows, columns=["item_id", "annotator", "rating"])
    scores = pd.DataFrame({"good": truth + 0.3 * rng.normal(size=80), "bad": rng.normal(size=80)}, index=truth.index)
    table = agreement.human_ceiling(scores, ratings, n_resamples=200, rng=0)
    assert list(table.columns) == ["kind", "name", "held_out", "target", *correlate.COLUMNS]
    assert table["kind"].tolist() == ["annotator"] * 4 + ["score"] * 8
    assert table["name"].tolist() == list("abcd") + ["good"] * 4 + ["bad"] * 4
    assert table["held_out"].tolist() == list("abcd") * 3 and (table["target"] == "others' mean").all()
    wide = ratings.pivot(index="item_id", columns="annotator", values="rating")
    for name in "abcd":
        own = wide[name].dropna()
        others = wide.drop(columns=name).loc[own.index].mean(axis=1).dropna()
        row = table[table["name"] == name].iloc[0]
        assert row["n"] == len(others)
        assert row["r"] == pytest.approx(stats.spearmanr(own.loc[others.index], others).statistic, abs=1e-12)
        assert row["ci_low"] < row["r"] < row["ci_high"]
        good = table[(table["name"] == "good") & (table["held_out"] == name)].iloc[0]
        assert good["n"] == len(others)
        assert good["r"] == pytest.approx(stats.spearmanr(scores["good"].loc[others.index], others).statistic, abs=1e-12)
        bad = table[(table["name"] == "bad") & (table["held_out"] == name)].iloc[0]
        assert bad["ci_low"] < 0 < bad["ci_high"] < good["r"]
    assert (table["adjust"] == "none").all() and table["p_adjusted"].equals(table["p_val"])
    multipletests = pytest.importorskip("statsmodels.stats.multitest", reason="the reference is statsmodels, from the 'test' extra").multipletests

    adjusted = agreement.human_ceiling(scores, ratings, n_resamples=0, adjust="bh")
    np.testing.assert_allclose(adjusted["p_adjusted"], multipletests(adjusted["p_val"], method="fdr_bh")[1], rtol=0, atol=1e-15)
    assert (adjusted["adjust"] == "bh").all()
    with pytest.raises(ValueError, match="`adjust` must be one of"):
        agreement.human_ceiling(scores, ratings, adjust="fdr")
    dialogue = pd.Series([f"d{k // 4}" for k in range(80)], index=truth.index)
    clustered = agreement.human_ceiling(scores, ratings, n_resamples=200, cluster=dialogue, rng=0)
    good_c = clustered[clustered["name"] == "good"].iloc[0]
    own = wide["a"].dropna()
    others_a = wide.drop(columns="a").loc[own.index].mean(axis=1).dropna()
    direct = correlate.correlate(scores["good"].loc[others_a.index], others_a, cluster=dialogue.loc[others_a.index],
                                 n_resamples=200, rng=np.random.default_rng(0)).iloc[0]
    assert good_c["interval"] == "percentile bootstrap over clusters" and good_c["r"] == direct["r"]
    with pytest.raises(KeyError, match=r"`ratings` is missing column\(s\) \['dialogue'\]"):
        agreement.human_ceiling(scores, ratings, cluster="dialogue")


def _leave_one_out_by_hand(scores: pd.DataFrame, ratings: pd.DataFrame) -> dict:
    """The recipe written out: for each annotator left out, the others' mean on the items they rated; the annotator
    and every score are correlated with that same reference (Spearman, by scipy), then averaged over annotators."""
    found = {}
    for held_out in sorted(ratings["annotator"].unique()):
        own = ratings[ratings["annotator"] == held_out].set_index("item_id")["rating"]
        rest = ratings[(ratings["annotator"] != held_out) & ratings["item_id"].isin(own.index)]
        reference = rest.groupby("item_id")["rating"].mean()
        items = [i for i in own.index if i in reference.index]
        found.setdefault("annotator", {})[held_out] = stats.spearmanr(own.loc[items], reference.loc[items]).statistic
        for column in scores.columns:
            scored = [i for i in items if i in scores.index and not np.isnan(scores.loc[i, column])]
            found.setdefault(column, {})[held_out] = stats.spearmanr(scores.loc[scored, column],
                                                                     reference.loc[scored]).statistic
    return found


def _check_against_hand_loop(scores, ratings):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)  # items some score lacks are left out, with a warning
        table = agreement.human_ceiling(scores, ratings, n_resamples=0)
    expected = _leave_one_out_by_hand(scores, ratings)
    for (kind, name, held_out), r in table.set_index(["kind", "name", "held_out"])["r"].items():
        assert r == pytest.approx(expected["annotator" if kind == "annotator" else name][held_out], abs=1e-12)
    assert len(table) == sum(len(v) for v in expected.values())
    means = table.groupby(["kind", "name"])["r"].mean()
    for name, by_annotator in expected.items():
        key = ("annotator", slice(None)) if name == "annotator" else ("score", name)
        mean = means.loc[key].mean() if name == "annotator" else means.loc[key]
        assert mean == pytest.approx(np.mean(list(by_annotator.values())), abs=1e-12)
    return table


def test_human_ceiling_scores_the_metrics_against_the_annotators_leave_one_out_references():
    # 6 items, 4 annotators (one misses two items), two scores (one misses an item): small enough to check by hand
    ratings = pd.DataFrame([(f"i{i}", a, float(v)) for a, row in zip("abcd", [[1, 2, 3, 4, 5, 4], [2, 2, 3, 5, 4, 5],
                                                                             [1, 3, 2, 4, 5, 3], [3, 1, 2, 5, np.nan, np.nan]],
                                                                      strict=True)
                            for i, v in enumerate(row) if not np.isnan(v)], columns=["item_id", "annotator", "rating"])
    scores = pd.DataFrame({"m1": [0.1, 0.3, 0.2, 0.8, 0.9, 0.7], "m2": [0.5, 0.1, 0.4, 0.6, 0.2, np.nan]},
                          index=[f"i{i}" for i in range(6)])
    table = _check_against_hand_loop(scores, ratings)
    # the reference for annotator d is the mean of a, b and c on the four items d rated, for d and for the scores
    d_reference = [np.mean([1, 2, 1]), np.mean([2, 2, 3]), np.mean([3, 3, 2]), np.mean([4, 5, 4])]
    m1_d = table[(table["name"] == "m1") & (table["held_out"] == "d")].iloc[0]
    assert m1_d["n"] == 4 and m1_d["r"] == pytest.approx(stats.spearmanr([0.1, 0.3, 0.2, 0.8], d_reference).statistic)
    all_mean = ratings.groupby("item_id")["rating"].mean()
    assert m1_d["r"] != pytest.approx(stats.spearmanr(scores["m1"], all_mean.loc[scores.index]).statistic)


@pytest.mark.slow
def test_human_ceiling_leave_one_out_on_usr(usr):
    ratings, _ = usr
    mc = ratings.loc[ratings["dimension"] == "Maintains Context", ["item_id", "annotator", "rating"]]
    rng = np.random.default_rng(1)
    consensus = mc.groupby("item_id")["rating"].mean()
    scores = pd.DataFrame({"noisy": consensus + rng.normal(scale=0.5, size=len(consensus)),
                           "noise": rng.normal(size=len(consensus))}, index=consensus.index)
    table = _check_against_hand_loop(scores, mc)
    assert table["held_out"].nunique() == mc["annotator"].nunique()


def test_human_ceiling_summary_level_and_bad_input(rng):
    ratings = pd.DataFrame([(i, a, float(rng.integers(1, 4))) for i in range(60) for a in "abc"],
                           columns=["item_id", "annotator", "rating"])
    groups = pd.Series(np.arange(60) // 6, index=np.arange(60))
    table = agreement.human_ceiling(None, ratings, level="summary", by=groups, n_resamples=0)
    expected = correlate.correlate(ratings[ratings.annotator == "a"].set_index("item_id")["rating"].rename("a"),
                                   ratings[ratings.annotator != "a"].groupby("item_id")["rating"].mean(),
                                   level="summary", by=groups, n_resamples=0)
    assert table.loc[0, "r"] == pytest.approx(expected["r"].iloc[0], abs=1e-12)
    assert table.loc[0, "n_groups"] == expected["n_groups"].iloc[0]
    with pytest.raises(ValueError, match="`by` must be a Series"):
        agreement.human_ceiling(None, ratings, level="summary")
    with pytest.raises(TypeError, match="must be numeric"):
        agreement.human_ceiling(None, ratings.assign(rating="x"))


# --------------------------------------------------------------------------------------------------
# the alternative annotator test, against the procedure written out as a loop (the authors' recipe)
# --------------------------------------------------------------------------------------------------
def alt_test_by_loop(judge: dict, humans: dict, scoring, epsilon, q=0.05, min_items=30):
    score = (lambda p, anns: np.mean([p == a for a in anns])) if scoring == "accuracy" else \
        (lambda p, anns: -np.sqrt(np.mean([(p - a) ** 2 for a in anns])))
    raters = {}
    for h, anns in humans.items():
        for i in anns:
            raters.setdefault(i, []).append(h)
    keep = {i for i, hs in raters.items() if len(hs) >= 2 and i in judge}
    p_values, rhos = [], []
    for h, anns in humans.items():
        items = [i for i in anns if i in keep]
        if len(items) < min_items:
            continue
        w_f, w_h = [], []
        for i in items:
            rest = [humans[o][i] for o in raters[i] if o != h]
            s_h, s_f = score(anns[i], rest), score(judge[i], rest)
            w_f.append(int(s_f >= s_h))
            w_h.append(int(s_h >= s_f))
        p_values.append(stats.ttest_1samp(np.subtract(w_h, w_f), epsilon, alternative="less").pvalue)
        rhos.append(np.mean(w_f))
    # Benjamini-Yekutieli step-up, written out.
    m = len(p_values)
    order = np.argsort(p_values)
    thresholds = np.arange(1, m + 1) / m * q / np.sum(1 / np.arange(1, m + 1))
    passing = np.flatnonzero(np.asarray(p_values)[order] <= thresholds)
    n_rejected = passing[-1] + 1 if len(passing) else 0
    return n_rejected / m, float(np.mean(rhos)), p_values


@pytest.mark.parametrize("scoring", ["accuracy", "neg_rmse"])
@pytest.mark.parametrize("quality", [0.55, 0.95])
def test_alternative_annotator_test_matches_the_loop(rng, scoring, quality):
    n = 120
    truth = rng.integers(1, 5, n)
    humans = {}
    for h in "abcde":
        rated = rng.random(n) < 0.8
        noise = np.where(rng.random(n) < 0.65, truth, rng.integers(1, 5, n))
        humans[h] = {int(i): int(noise[i]) for i in np.flatnonzero(rated)}
    judge = {int(i): int(truth[i] if rng.random() < quality else rng.integers(1, 5)) for i in range(n) if i != 3}
    ratings = pd.DataFrame([(i, h, v) for h, anns in humans.items() for i, v in anns.items()],
                           columns=["item_id", "annotator", "rating"])
    with pytest.warns(EvalkitWarning, match=r"1 of `ratings`'s 120 ids match nothing in `judge` \(e.g. \[3\]\)"):
        res = agreement.alternative_annotator_test(pd.Series(judge), ratings, scoring=scoring, epsilon=0.15)
    winning_rate, rho, p_values = alt_test_by_loop(judge, humans, scoring, 0.15)
    assert res.winning_rate == pytest.approx(winning_rate, abs=1e-12)
    assert res.advantage_probability == pytest.approx(rho, abs=1e-12)
    assert res.annotators["p_val"].to_numpy() == pytest.approx(p_values, abs=1e-12)
    assert res.passed == (winning_rate >= 0.5)
    if quality > 0.9:
        assert res.passed


def test_an_annotator_tying_with_the_judge_at_epsilon_zero_counts_as_not_rejected():
    """The authors' code keeps an annotator whose t-test p-value is NaN (W_h - W_f = 0 on every item): not rejected,
    in the winning rate's denominator and in the advantage probability."""
    # 30 items rated by five annotators on three values; the judge gives d's ratings, so d ties it everywhere.
    # On a "triple" item three of a, b, c, e agree on a value the judge does not give, and the fourth on a third
    # value: those three each align worse than the judge there (the only items where the judge loses).
    triples = ["abc", "abc", "abe", "ace", "bce"]
    rows = []
    for i in range(30):
        for name in "abcde":
            value = 0 if i >= len(triples) or name == "d" else 1 if name in triples[i] else 2
            rows.append((i, name, value))
    ratings = pd.DataFrame(rows, columns=["item_id", "annotator", "rating"])
    judge = pd.Series(0, index=range(30))
    with pytest.warns(EvalkitWarning, match=r"\['d'\] tie with the judge on every item") as record:
        res = agreement.alternative_annotator_test(judge, ratings, epsilon=0.0)
    assert not any("min_items" in str(w.message) for w in record)
    # a, b, c lose 4 of 30 items, e 3, d none: (26 * 3 + 27 + 30) / 150 = 0.9, the authors' figure
    assert res.advantage_probability == pytest.approx(0.9, abs=1e-12)
    table = res.annotators.set_index("annotator")
    assert table["tested"].all() and np.isnan(table.loc["d", "p_val"]) and not table.loc["d", "judge_wins"]
    humans = {h: dict(zip(g["item_id"], g["rating"], strict=True)) for h, g in ratings.groupby("annotator")}
    winning_rate, rho, p_values = alt_test_by_loop(judge.to_dict(), humans, "accuracy", 0.0)
    assert (res.winning_rate, res.advantage_probability) == pytest.approx((winning_rate, rho), abs=1e-12)
    np.testing.assert_allclose(table["p_val"].to_numpy(), p_values, rtol=1e-12)  # NaN where the loop has NaN


@pytest.mark.parametrize("scoring", ["accuracy", "neg_rmse"])
def test_tying_annotator_and_the_winning_rate_match_the_loop(rng, scoring):
    n = 150
    truth = rng.integers(1, 5, n)
    humans = {h: {int(i): int(truth[i] if rng.random() < 0.6 else rng.integers(1, 5)) for i in range(n)
                  if rng.random() < 0.9} for h in "abcd"}
    judge = {i: humans["d"].get(i, int(truth[i])) for i in range(n)}  # d ties the judge on every item d rated
    ratings = pd.DataFrame([(i, h, v) for h, anns in humans.items() for i, v in anns.items()],
                           columns=["item_id", "annotator", "rating"])
    with pytest.warns(EvalkitWarning, match=r"\['d'\] tie with the judge"):
        res = agreement.alternative_annotator_test(pd.Series(judge), ratings, scoring=scoring, epsilon=0.0)
    winning_rate, rho, p_values = alt_test_by_loop(judge, humans, scoring, 0.0)
    assert res.winning_rate == pytest.approx(winning_rate, abs=1e-12) and 0 < winning_rate < 1
    assert res.advantage_probability == pytest.approx(rho, abs=1e-12)
    np.testing.assert_allclose(res.annotators["p_val"].to_numpy(), p_values, rtol=1e-10)
    assert res.annotators["judge_wins"].sum() == round(winning_rate * 4)


def test_alternative_annotator_test_bad_input(rng):
    two = pd.DataFrame([(i, a, 1) for i in range(40) for a in "ab"], columns=["item_id", "annotator", "rating"])
    with pytest.raises(ValueError, match="at least 3 annotators"):
        agreement.alternative_annotator_test(pd.Series(1, index=range(40)), two)
    three = pd.DataFrame([(i, a, int(rng.integers(0, 2))) for i in range(40) for a in "abc"] + [(0, "d", 1)],
                         columns=["item_id", "annotator", "rating"])
    with pytest.warns(EvalkitWarning, match=r"\['d'\] have fewer than min_items=30"):
        res = agreement.alternative_annotator_test(pd.Series(1, index=range(40)), three)
    assert res.annotators["p_val"].isna().tolist() == [False, False, False, True]
    with pytest.raises(TypeError, match="`judge` must be a Series"):
        agreement.alternative_annotator_test([1, 2], three)
    with pytest.raises(ValueError, match="`epsilon` must be in"):
        agreement.alternative_annotator_test(pd.Series(1, index=range(40)), three, epsilon=2)
    with pytest.raises(TypeError, match="`judge` column 'values' must be numeric for scoring='neg_rmse'"):
        agreement.alternative_annotator_test(pd.Series("good", index=range(40)), three, scoring="neg_rmse")
    with pytest.raises(TypeError, match="`ratings` column 'rating' must be numeric for scoring='neg_rmse'"):
        agreement.alternative_annotator_test(pd.Series(1.0, index=range(40)), three.assign(rating="x"), scoring="neg_rmse")


@pytest.mark.slow
def test_notebook_runs_on_the_real_data(notebook_run, tmp_path):
    report = pytest.importorskip("evalkit.report", reason="notebook runs need the 'report' extra")
    for name in ("usr", "tcva", "llmbar"):
        shared_dataset(name)
    path = ROOT / "notebooks" / "05_human_ceiling.ipynb"
    result = notebook_run(path)  # the session's one run of the notebook, with every real data set present
    assert result.ok, f"failed in cell {result.cell}: {result.error}"
    rendered = re.findall(r"jp-RenderedMarkdown jp-OutputArea-output[^>]*>(.*?)</div>", result.html.read_text(), re.S)
    assert any("TCVA fails" in text or "TCVA passes" in text for text in rendered)
    assert len(rendered) == 6 and not any("Skipped" in text for text in rendered)
    # A data path without its files is refused, naming the parameter and the file.
    result = report.run_notebook(path, tmp_path, params={"USR_DIR": str(tmp_path)})
    assert not result.ok and "`USR_DIR`=" in result.error and "tc_usr_data.json" in result.error
