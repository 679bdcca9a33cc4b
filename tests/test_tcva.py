import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, tcva, verdicts


def reference_score(weights, T, *, none_penalty=True, eps=1e-9, p=None):
    """The reference implementation (eval_lib/utils.py::score_agg), transcribed as a plain loop."""
    if not weights:
        return 0.0
    p = -8 + (min(max(T, 0.1), 1.0) - 0.1) / 0.9 * 20.25 if p is None else p
    w = [max(x, eps) if p < 0 else x for x in weights]
    if abs(p) < 1e-12:
        m = math.exp(sum(math.log(max(x, 1e-9)) for x in w) / len(w))
    else:
        m = (sum(x**p for x in w) / len(w)) ** (1 / p)
    n_none = sum(1 for x in weights if x == 0.0)
    return m * (1 - n_none / len(weights)) ** (1.5 - T) if none_penalty else m


# ------------------------------------------------------------------ power_mean
@pytest.mark.parametrize("p", [-10.0, -3.0, -1.0, -0.5, 0.3, 1.0, 2.5, 7.0, 40.0])
def test_power_mean_matches_scipy_pmean(rng, p):
    x = rng.uniform(0.01, 1.0, size=(7, 13))
    w = rng.uniform(0.1, 2.0, size=(7, 13))
    np.testing.assert_allclose(tcva.power_mean(x, p), stats.pmean(x, p, axis=-1), rtol=1e-12)
    np.testing.assert_allclose(tcva.power_mean(x, p, axis=0, weights=w), stats.pmean(x, p, axis=0, weights=w), rtol=1e-12)


def test_power_mean_limits_by_hand():
    x = np.array([1.0, 0.9, 0.7])
    assert tcva.power_mean(x, 0) == pytest.approx(stats.gmean(x), rel=1e-14)
    assert tcva.power_mean(x, np.inf) == 1.0
    assert tcva.power_mean(x, -np.inf) == 0.7
    assert tcva.power_mean(x, 1e-300) == pytest.approx(stats.gmean(x), rel=1e-9)
    assert tcva.power_mean([0.0, 0.5], -2) == 0.0  # the limit, not a warning or NaN
    assert tcva.power_mean([0.0, 0.5], 0) == 0.0
    assert tcva.power_mean([0.0, 0.5], 2) == pytest.approx(math.sqrt(0.125))
    # Large p in log space: no overflow where the naive formula gives inf.
    assert tcva.power_mean([1e200, 1e200], 5) == pytest.approx(1e200)


def test_power_mean_papers_table3():
    """TCVA paper Table 3: M_p of the weights [1.0, 0.9, 0.7]."""
    expected = {-10: 0.773, -5: 0.809, 0: 0.857, 1: 0.867, 5: 0.899, 10: 0.925}
    for p, value in expected.items():
        assert round(float(tcva.power_mean([1.0, 0.9, 0.7], p)), 3) == value


def test_power_mean_nan_policy():
    x = np.array([[0.5, np.nan, 1.0], [0.2, 0.4, 0.8]])
    with pytest.warns(EvalkitWarning, match="1 of 2 power mean\\(s\\) are NaN: their slice holds NaN \\(nan_policy='propagate'\\)"):
        out = tcva.power_mean(x, 2)
    assert np.isnan(out[0]) and out[1] == pytest.approx(stats.pmean(x[1], 2))
    omitted = tcva.power_mean(x, 2, nan_policy="omit")
    assert omitted[0] == pytest.approx(stats.pmean([0.5, 1.0], 2))
    with pytest.warns(EvalkitWarning, match="1 of 1 power mean"):
        assert np.isnan(tcva.power_mean([np.nan], 1, nan_policy="omit"))
    with pytest.raises(ValueError, match="contains NaN"):
        tcva.power_mean(x, 2, nan_policy="raise")


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"x": [-0.1, 0.5], "p": 1}, "non-negative"),
        ({"x": [0.1, 0.5], "p": float("nan")}, "got NaN"),
        ({"x": [0.1, 0.5], "p": 1, "weights": [-1, 1]}, "weights"),
        ({"x": [0.1, 0.5], "p": 1, "nan_policy": "skip"}, "nan_policy"),
    ],
)
def test_power_mean_bad_input(kwargs, message):
    with pytest.raises(ValueError, match=message):
        tcva.power_mean(**kwargs)


# ------------------------------------------------------------------ temperature
def test_temperature_to_p():
    assert tcva.temperature_to_p(0.5) == pytest.approx(1.0)
    assert tcva.temperature_to_p(0.1) == -8.0
    assert tcva.temperature_to_p(1.0) == pytest.approx(12.25)
    t = np.linspace(0.1, 1.0, 19)
    np.testing.assert_allclose(tcva.temperature_to_p(t), -8 + (t - 0.1) / 0.9 * 20.25)
    np.testing.assert_allclose(tcva.p_to_temperature(tcva.temperature_to_p(t)), t)


@pytest.mark.parametrize("bad", [0.05, 1.01, float("nan"), [0.5, 2.0], []])
def test_temperature_out_of_range(bad):
    with pytest.raises(ValueError, match=r"temperature"):
        tcva.temperature_to_p(bad)


# ------------------------------------------------------------------ score / sweep
@pytest.mark.parametrize("scale", list(verdicts.SCALES))
@pytest.mark.parametrize("none_penalty", [True, False])
def test_sweep_matches_reference_loop(random_verdicts, scale, none_penalty):
    table, items = random_verdicts
    temps = [0.1, 0.2, 0.35, 0.5, 0.72, 0.9, 1.0, 0.1 + 8 / 20.25 * 0.9]  # the last one gives p = 0
    out = tcva.sweep(table, temps, items=items, scale=scale, none_penalty=none_penalty)
    weights = verdicts.get_scale(scale)
    for item in items:
        w = [weights[v] for v in table.loc[table["item_id"] == item, "verdict"]]
        for T in temps:
            assert out.loc[item, T] == pytest.approx(reference_score(w, T, none_penalty=none_penalty), rel=1e-12, abs=1e-15)


def test_sweep_fixed_p_is_the_arithmetic_ablation(random_verdicts):
    table, items = random_verdicts
    out = tcva.sweep(table, [0.9], items=items, p=1)
    weights = verdicts.get_scale()
    for item in items[:20]:
        w = [weights[v] for v in table.loc[table["item_id"] == item, "verdict"]]
        assert out.loc[item, 0.9] == pytest.approx(reference_score(w, 0.9, p=1))


def test_score_is_a_sweep_column_and_monotone_in_temperature(random_verdicts):
    table, items = random_verdicts
    temps = np.linspace(0.1, 1.0, 10)
    swept = tcva.sweep(table, temps, items=items)
    assert swept.columns.tolist() == [0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]  # not 0.30000000000000004
    for T in temps[::3]:
        pd.testing.assert_series_equal(tcva.score(table, T, items=items), swept[round(T, 10)])
    # Without the penalty the power mean is non-decreasing in p, hence in T.
    plain = tcva.sweep(table, temps, items=items, none_penalty=False).to_numpy()
    assert (np.diff(plain, axis=1) >= -1e-12).all()


def test_sweep_is_invariant_to_row_order(random_verdicts, rng):
    table, items = random_verdicts
    shuffled = table.sample(frac=1.0, random_state=1)
    pd.testing.assert_frame_equal(tcva.sweep(table, [0.2, 0.8], items=items), tcva.sweep(shuffled, [0.2, 0.8], items=items))


def test_empty_items_score_empty():
    table = pd.DataFrame({"item_id": ["a"], "verdict": ["mostly"]})
    out = tcva.sweep(table, [0.3, 0.7], items=["a", "b"])
    assert out.loc["b"].tolist() == [0.0, 0.0]
    assert tcva.sweep(table, [0.3], items=["a", "b"], empty=np.nan).loc["b"].isna().all()
    assert out.index.name == "item_id" and out.columns.name == "temperature"


def test_eps_clamping_for_negative_p():
    table = pd.DataFrame({"item_id": ["a", "a"], "verdict": ["fully", "none"]})
    # T = 0.1 (p = -8): a zero weight clamped to 1e-9 drives the mean to ~0, then the penalty halves it.
    strict = tcva.score(table, 0.1, none_penalty=False)["a"]
    assert strict == pytest.approx(reference_score([1.0, 0.0], 0.1, none_penalty=False))
    assert 0 < strict < 1e-8
    assert tcva.score(table, 0.1, none_penalty=False, eps=1e-3)["a"] == pytest.approx(((1 + 1e-3**-8) / 2) ** (-1 / 8))


def test_decimals_round_like_python():
    table = pd.DataFrame({"item_id": ["a"] * 4, "verdict": ["fully", "none", "fully", "mostly"]})
    # 0.725 * 0.75 = 0.54375, stored in binary just below the tie: Python rounds to 0.5437.
    assert tcva.score(table, 0.5, decimals=4)["a"] == 0.5437
    assert tcva.score(table, 0.5)["a"] == pytest.approx(0.54375)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"temperatures": [0.5, 1.5]}, ValueError, r"must lie in \[0.1, 1.0\]; got 1.5"),
        ({"temperatures": [float("nan")]}, ValueError, "got nan"),
        ({"temperatures": [0.5], "scale": "harsh"}, ValueError, "`scale` must be one of"),
        ({"temperatures": [0.5], "eps": -1.0}, ValueError, "`eps` must be in"),
        ({"temperatures": [0.5], "decimals": 2.5}, TypeError, "`decimals` must be an integer"),
    ],
)
def test_sweep_bad_input(kwargs, error, message):
    table = pd.DataFrame({"item_id": ["a"], "verdict": ["fully"]})
    with pytest.raises(error, match=message):
        tcva.sweep(table, **kwargs)


def test_score_refuses_several_temperatures():
    table = pd.DataFrame({"item_id": ["a"], "verdict": ["fully"]})
    with pytest.raises(TypeError, match="use sweep"):
        tcva.score(table, [0.2, 0.4])


def test_empty_table_scores_listed_items_only():
    empty = pd.DataFrame({"item_id": pd.Series([], dtype=str), "verdict": pd.Series([], dtype=str)})
    out = tcva.sweep(empty, [0.5], items=["a", "b"])
    assert out[0.5].tolist() == [0.0, 0.0]
    with pytest.raises(ValueError, match="`verdicts` is empty and no `items` were given"):
        tcva.sweep(empty, [0.5])


# ------------------------------------------------------------------ distinct count vectors
def dense_sweep(table, temps, *, items=None, **options):
    """Today's dense computation: every item's count row through the kernel, no deduplication."""
    counts = verdicts.level_counts(table, items=items)
    t = np.asarray(temps, dtype=float)
    weights = verdicts.get_scale(options.pop("scale", "default")).to_numpy()
    opts = {"none_penalty": True, "eps": 1e-9, "empty": 0.0, "p": None, "decimals": None} | options
    out = tcva._scores_from_counts(counts[list(verdicts.LEVELS)].to_numpy(), t, weights, **opts)
    return pd.DataFrame(out.T, index=counts.index, columns=pd.Index(t, name="temperature"))


@pytest.fixture
def heavy_verdicts(rng):
    """Many items sharing count vectors, a few with hundreds of claims, and items without claims."""
    n_claims = np.concatenate([rng.integers(1, 20, 3000), rng.integers(100, 400, 5), [0] * 7])
    ids = np.array([f"x{k}" for k in range(len(n_claims))])
    levels = rng.choice(5, size=int(n_claims.sum()), p=[0.1, 0.1, 0.2, 0.25, 0.35])
    table = pd.DataFrame({"item_id": np.repeat(ids, n_claims), "verdict": np.array(verdicts.LEVELS)[levels]})
    return table.sample(frac=1.0, random_state=3), pd.Index(ids[rng.permutation(len(ids))], name="item_id")


@pytest.mark.parametrize(
    "options",
    [{}, {"none_penalty": False}, {"scale": "binary"}, {"scale": "aggressive", "p": 1.0}, {"p": 0.0}, {"p": -3.0},
     {"empty": np.nan}, {"decimals": 4}, {"eps": 1e-4, "none_penalty": False}],
)
def test_distinct_vectors_give_the_dense_result_bitwise(heavy_verdicts, options):
    table, items = heavy_verdicts
    temps = np.round(np.linspace(0.1, 1.0, 19), 4)
    out = tcva.sweep(table, temps, items=items, **options)
    expected = dense_sweep(table, temps, items=items, **dict(options))
    assert np.array_equal(out.to_numpy(), expected.to_numpy(), equal_nan=True)
    pd.testing.assert_index_equal(out.index, items)


def test_distinct_vectors_match_the_reference_loop_with_long_items(heavy_verdicts):
    table, items = heavy_verdicts
    temps = [0.1, 0.3, 0.5, 0.8, 1.0]
    out = tcva.sweep(table, temps, items=items)
    weights = verdicts.get_scale()
    by_item = table.groupby("item_id")["verdict"].agg(list)
    for item in [*items[:40], *by_item.index[by_item.map(len) >= 100]]:
        w = [weights[v] for v in by_item.get(item, [])]
        for T in temps:
            assert out.loc[item, T] == pytest.approx(reference_score(w, T), rel=1e-12, abs=1e-15)
    assert (out.loc[items.difference(by_item.index)] == 0.0).all().all()


def test_distinct_rows_fallback_for_items_with_thousands_of_claims(rng):
    # 7,000 claims make the packed key overflow int64 (7001**5 > 2**63): np.unique over rows takes over.
    counts = np.array([[7000, 0, 0, 0, 0], [1, 2, 3, 4, 5], [7000, 0, 0, 0, 0], [0, 0, 0, 0, 0], [1, 2, 3, 4, 5]])
    distinct, inverse = tcva._distinct_rows(counts)
    assert len(distinct) == 3 and np.array_equal(distinct[inverse], counts)
    small = rng.integers(0, 20, size=(500, 5))
    distinct, inverse = tcva._distinct_rows(small)
    assert len(distinct) == len(np.unique(small, axis=0)) and np.array_equal(distinct[inverse], small)
    table = pd.DataFrame({"item_id": ["big"] * 7000 + ["s"] * 3, "verdict": ["fully"] * 6999 + ["none"] + ["mostly"] * 3})
    out = tcva.sweep(table, [0.1, 0.5, 0.9])
    for T in (0.1, 0.5, 0.9):
        assert out.loc["big", T] == pytest.approx(reference_score([1.0] * 6999 + [0.0], T), rel=1e-12)
        assert out.loc["s", T] == pytest.approx(0.9, rel=1e-12)


def test_string_verdicts_score_like_categorical(heavy_verdicts):
    table, items = heavy_verdicts
    variants = table["verdict"].map({"none": " None", "minor": "MINOR", "partial": "Partially ", "mostly": "mostly",
                                     "fully": "Fully"})
    temps = [0.2, 0.6]
    categorical = table.assign(verdict=pd.Categorical(table["verdict"], dtype=verdicts.VERDICT_DTYPE))
    expected = tcva.sweep(categorical, temps, items=items)
    for column in (variants, variants.astype("string"), variants.astype("category")):
        pd.testing.assert_frame_equal(tcva.sweep(table.assign(verdict=column), temps, items=items), expected)


@pytest.mark.parametrize("call", [lambda t: tcva.sweep(t, [0.5], eps=0.0), lambda t: tcva.score(t, 0.1, eps=0.0)])
def test_eps_must_be_positive(call):
    table = pd.DataFrame({"item_id": ["a", "a"], "verdict": ["fully", "none"]})
    with pytest.raises(ValueError, match=r"`eps` must be in \(0, 1\].*got 0.0"):
        call(table)


def test_a_failed_run_is_nan_with_a_warning_never_a_score():
    """An items table with an ``error`` column (a failed run) scores NaN there, with a warning; a correlation then
    leaves it out instead of counting a 0.0."""
    table = pd.DataFrame({"item_id": ["a", "a", "b", "c"], "verdict": ["fully", "mostly", "partial", "fully"]})
    items = pd.DataFrame({"human": [0.9, 0.5, 0.8, 0.1], "error": [None, None, None, "timeout"]},
                         index=pd.Index(["a", "b", "c", "d"], name="item_id"))
    with pytest.warns(EvalkitWarning, match=r"1 of the 4 items have an `error` \(a failed run\), e.g. \['d'\]") as caught:
        scores = tcva.sweep(table, [0.3, 0.7], items=items)
    assert caught[0].filename == __file__
    assert scores.loc["d"].isna().all() and scores.loc[["a", "b", "c"]].notna().all().all()
    quiet = tcva.sweep(table, [0.3], items=items.drop(columns="error"))  # no error column: an empty item is 0.0
    assert quiet.loc["d", 0.3] == 0.0
