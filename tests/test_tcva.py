import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import tcva, verdicts


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
    out = tcva.power_mean(x, 2)
    assert np.isnan(out[0]) and out[1] == pytest.approx(stats.pmean(x[1], 2))
    omitted = tcva.power_mean(x, 2, nan_policy="omit")
    assert omitted[0] == pytest.approx(stats.pmean([0.5, 1.0], 2))
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
    for T in temps[::3]:
        pd.testing.assert_series_equal(tcva.score(table, T, items=items), swept[T])
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
