"""The live interval of labels drawn by probabilities: infer.confidence_sequence(probabilities=), its kernel
(evalkit._stats.successive.steps_sequence) and the Labeller's line under order="active"."""

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from evalkit import _stats, infer
from evalkit._stats import successive


def _population(n_cases, seed, *, ratings=False):
    rng = np.random.default_rng(seed)
    ids = pd.Index([f"c{i}" for i in range(n_cases)])
    if ratings:
        judge = rng.uniform(1, 5, n_cases)
        y = np.clip(np.round(judge + rng.normal(0, 0.1 + 0.35 * (judge - 1), n_cases)), 1, 5)
        return pd.Series(judge, index=ids), pd.Series(y, index=ids), (1.0, 5.0)
    p = rng.beta(0.5, 0.5, n_cases)
    return pd.Series(p, index=ids), pd.Series((rng.random(n_cases) < p).astype(float), index=ids), (0.0, 1.0)


def _drawn(judge, truth, bounds, n, seed, pilot):
    first = infer.choose_cases(truth, pilot, strategy="random", rng=seed) if pilot else pd.Index([])
    q = infer.sampling_probabilities(judge, human_pilot=truth[first] if pilot else None, bounds=bounds)
    drawn = infer.choose_cases(truth, n - len(first), strategy="active", probabilities=q, rng=seed + 1)
    return truth[first.append(drawn)], q


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), n=st.integers(1, 40), k=st.integers(1, 30), ratings=st.booleans(),
       pilot=st.sampled_from([0, 8]), jury=st.booleans())
def test_the_sequence_at_n_labels_is_the_prefix_of_the_one_at_n_plus_k(seed, n, k, ratings, pilot, jury):
    judge, truth, bounds = _population(120, seed, ratings=ratings)
    if jury:  # a second judge: two slopes refitted at every label
        judge = pd.DataFrame({"a": judge, "b": judge.sample(frac=1.0, random_state=seed).to_numpy()}, index=judge.index)
    pilot = 8 if ratings else pilot  # ratings need a pilot to read the uncertainty from; a probability does not
    human, q = _drawn(judge if not jury else judge["a"], truth, bounds, max(n + k, pilot + 1), seed, pilot)
    n = max(n, pilot)
    whole = infer.confidence_sequence(judge, human.iloc[: n + k], probabilities=q, bounds=bounds)
    start = infer.confidence_sequence(judge, human.iloc[:n], probabilities=q, bounds=bounds)
    columns = ["n_labelled", "estimate", "cs_low", "cs_high"]
    pd.testing.assert_frame_equal(start[columns], whole[columns].iloc[:n], check_exact=True)


def test_classical_sequence_is_the_betting_sequence_of_des_raj_values_written_out():
    """method='classical': z_t = (labels before t + (cases left) c + (y_t - c) / p_t) / N, c the labels' running
    mean (0.5 before any), its range the extremes of that over the cases left and the labels 0 and 1; the sequence is
    betting_sequence of them intersected with what the labels fix."""
    judge, truth, bounds = _population(200, 3)
    human, q = _drawn(judge, truth, bounds, 60, 5, 0)
    got = infer.confidence_sequence(judge, human, probabilities=q, method="classical")
    w = q.reindex(judge.index).to_numpy()
    order = judge.index.get_indexer(human.index)
    y, N = truth.to_numpy(), len(truth)
    remaining = np.ones(N, dtype=bool)
    z, lo, hi, known_lo, known_hi = [], [], [], [], []
    past = 0.0
    for t, i in enumerate(order):
        c = 0.5 if t == 0 else past / t
        inverse = w[remaining].sum() / w[remaining]
        base = past + remaining.sum() * c
        z.append((base + (y[i] - c) * w[remaining].sum() / w[i]) / N)
        lo.append((base + ((0 - c) * inverse).min()) / N)
        hi.append((base + ((1 - c) * inverse).max()) / N)
        remaining[i] = False
        past += y[i]
        known_lo.append(past / N)
        known_hi.append((past + N - t - 1) / N)
    low, high = _stats.betting_sequence(np.array(z), np.array(lo), np.array(hi), confidence_level=0.95,
                                        theta_range=(0.0, 1.0))
    np.testing.assert_allclose(got["estimate"], np.cumsum(z) / np.arange(1, len(z) + 1), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["cs_low"], np.maximum(low, known_lo), rtol=0, atol=1e-12)
    np.testing.assert_allclose(got["cs_high"], np.minimum(high, known_hi), rtol=0, atol=1e-12)
    assert (got["method"] == "classical").all() and got.attrs["population"] == "finite"


def test_sequence_weights_depend_only_on_earlier_steps():
    """lam_t of the running horizon is the same computed on the first t steps as on all of them."""
    judge, truth, bounds = _population(150, 7, ratings=True)
    human, q = _drawn(judge, truth, bounds, 80, 9, 16)
    order = judge.index.get_indexer(human.index)
    weights = q.reindex(judge.index).fillna(0.0).to_numpy()
    X = judge.to_numpy()[:, None]
    steps = successive.successive_steps(truth.to_numpy(), X, order, weights, bounds=bounds, uniform_first=16)
    every = successive.choose_weights(steps, horizon="running", alpha=0.05)
    for t in (5, 20, 47, 80):
        part = successive.successive_steps(truth.to_numpy(), X, order[:t], weights, bounds=bounds, uniform_first=16)
        np.testing.assert_array_equal(successive.choose_weights(part, horizon="running", alpha=0.05), every[:t])
    assert (every[successive.WEIGHT_START:] > 0).any()  # the judge is used: the check is not on zeros alone


def test_the_sequence_contains_the_fixed_n_estimate_and_ends_within_the_scale():
    judge, truth, bounds = _population(300, 11, ratings=True)
    human, q = _drawn(judge, truth, bounds, 120, 2, 24)
    cs = infer.confidence_sequence(judge, human, probabilities=q, bounds=bounds)
    assert (np.diff(cs["cs_low"]) >= -1e-12).all() and (np.diff(cs["cs_high"]) <= 1e-12).all()  # running intersection
    assert ((cs["cs_low"] >= 1.0) & (cs["cs_high"] <= 5.0)).all()
    fixed = infer.mean(judge, human, probabilities=q, bounds=bounds, method="ppi++").iloc[0]
    assert cs["cs_low"].iloc[-1] <= fixed["estimate"] <= cs["cs_high"].iloc[-1]


@pytest.mark.parametrize(("call", "message"), [
    (lambda j, h, q: infer.confidence_sequence(j, h, probabilities=q, statistic="agreement"),
     "statistic='agreement' is not offered with `probabilities`"),
    (lambda j, h, q: infer.confidence_sequence(j, h, probabilities=q, method="ppi"), "method='ppi'"),
    (lambda j, h, q: infer.confidence_sequence(j, h * 4 + 1, probabilities=q),
     r"needs the labels' scale: pass bounds=\(low, high\)"),
    (lambda j, h, q: infer.confidence_sequence(j, pd.concat([h.iloc[1:], h.iloc[:1]]),
                                               probabilities=q.drop(h.index[0])),
     "gives the pilot case 'c[0-9]+' .* after a case drawn by the probabilities"),
    (lambda j, h, q: infer.confidence_sequence(j, h, probabilities=q.to_numpy()), "must be a pandas Series"),
])
def test_bad_input_names_what_is_wrong(call, message):
    judge, truth, bounds = _population(100, 1)
    human, q = _drawn(judge, truth, bounds, 20, 1, 0)
    with pytest.raises((ValueError, TypeError), match=message):
        call(judge, human, q)
