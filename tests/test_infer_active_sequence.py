"""The live interval of labels drawn by probabilities: infer.confidence_sequence(probabilities=), its kernel
(evalkit._stats.successive.steps_sequence) and the Labeller's line under order="active"."""

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("hypothesis", reason='property tests: pip install "llm-evalkit[test]"')
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

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


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**16), n=st.integers(1, 60), k=st.integers(1, 40))
def test_betting_sequence_bets_predictably(seed, n, k):
    """Each step's bet and range come from the steps before it: the kernel's sequence of n values is the first n of
    that of n + k (values with a range of their own at every step, as Des Raj's have)."""
    rng = np.random.default_rng(seed)
    lo, width = rng.uniform(-1, 0, n + k), rng.uniform(0.5, 3, n + k)
    z = lo + width * rng.beta(0.5, 0.5, n + k)
    whole = _stats.betting_sequence(z, lo, lo + width, confidence_level=0.9, theta_range=(-1.0, 3.0))
    start = _stats.betting_sequence(z[:n], lo[:n], (lo + width)[:n], confidence_level=0.9, theta_range=(-1.0, 3.0))
    for a, b in zip(start, whole, strict=True):
        np.testing.assert_array_equal(a, b[:n])


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


@pytest.mark.parametrize("horizon", ["running", 150])
def test_sequence_weights_depend_only_on_earlier_steps(horizon):
    """lam_t (for the running horizon, and for the number of cases the sequence uses) is the same computed on the
    first t steps as on all of them."""
    judge, truth, bounds = _population(150, 7, ratings=True)
    human, q = _drawn(judge, truth, bounds, 80, 9, 16)
    order = judge.index.get_indexer(human.index)
    weights = q.reindex(judge.index).fillna(0.0).to_numpy()
    X = judge.to_numpy()[:, None]
    steps = successive.successive_steps(truth.to_numpy(), X, order, weights, bounds=bounds, uniform_first=16)
    every = successive.choose_weights(steps, horizon=horizon, alpha=0.05)
    for t in (5, 20, 47, 80):
        part = successive.successive_steps(truth.to_numpy(), X, order[:t], weights, bounds=bounds, uniform_first=16)
        np.testing.assert_array_equal(successive.choose_weights(part, horizon=horizon, alpha=0.05), every[:t])
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


# ------------------------------------------------------------------------------- the labeller's live line
def _labeller(tmp_path, n_cases=120, *, pilot=0, ratings=False, seed=0, name="ann.jsonl", **options):
    pytest.importorskip("ipywidgets")
    from evalkit.widgets import Labeller

    judge, truth, bounds = _population(n_cases, seed, ratings=ratings)
    first = judge.index[:pilot]  # the table's first cases: a uniform pilot when the table is in a random order
    q = infer.sampling_probabilities(judge, human_pilot=truth[first] if pilot else None, bounds=bounds)
    cases = pd.DataFrame({"case_id": judge.index, "input": "q", "output": "a"})
    levels = ("1", "2", "3", "4", "5") if ratings else ("PASS", "FAIL")
    lab = Labeller(cases, tmp_path / name, labeller="ann", order="active", probabilities=q, rng=7, levels=levels,
                   watch="mean" if ratings else "pass_rate", blind=False, **options)
    word = (lambda y: str(int(y))) if ratings else (lambda y: "PASS" if y else "FAIL")
    return lab, truth, q, bounds, word


def _public(lab, truth, q, bounds):
    """The public sequence the labeller's line should be, built here from the design: the labels in the labeller's
    draw order, the cases ignored, or open before the last one labelled (skipped), left out of the cases and of
    the probabilities; while the last label is a pilot case, equal probabilities over the cases left in."""
    given = lab.labels()
    drawn = [lab._ids[i] for i in range(len(lab.order))]
    ignored = set(lab._store.ignored)
    last = max(k for k, case in enumerate(drawn) if case in given.index)
    out = ignored | {case for case in drawn[:last] if case not in given.index}
    order = [case for case in drawn if case in given.index and case not in out]
    labels = pd.Series({case: float(given[case] == "PASS") if bounds == (0.0, 1.0) else float(given[case])
                        for case in order})
    kept = [case for case in drawn if case not in out]
    probabilities = (q.drop([c for c in out if c in q.index]) if drawn[last] in q.index
                     else pd.Series(1.0, index=kept))
    return infer.confidence_sequence(human=labels, probabilities=probabilities, bounds=bounds,
                                     confidence_level=lab.confidence_level)


@pytest.mark.parametrize(("ratings", "pilot"), [(False, 0), (True, 12)])
def test_labeller_live_line_is_the_public_sequence_on_the_same_draws(tmp_path, ratings, pilot):
    lab, truth, q, bounds, word = _labeller(tmp_path, pilot=pilot, ratings=ratings, stop_half_width=0.2)
    for _ in range(40):
        lab.label(word(truth[lab.current_case]))
    columns = ["n_labelled", "estimate", "cs_low", "cs_high", "half_width"]
    shown, public = lab.sequence()[columns], _public(lab, truth, q, bounds)[columns]
    np.testing.assert_allclose(shown.to_numpy(dtype=float), public.to_numpy(dtype=float), rtol=0, atol=1e-12)
    assert "anytime-valid 95%" in lab.watch_text and "between" in lab.watch_text
    assert lab.settled_at == infer.stopping_point(public, half_width=0.2)


def test_labeller_live_line_during_the_pilot_is_the_prefix_of_the_whole(tmp_path):
    lab, truth, q, bounds, word = _labeller(tmp_path, pilot=12, ratings=True)
    for _ in range(5):
        lab.label(word(truth[lab.current_case]))
    during = lab.sequence()
    for _ in range(30):
        lab.label(word(truth[lab.current_case]))
    pd.testing.assert_frame_equal(during, lab.sequence().iloc[:5], check_exact=True)
    np.testing.assert_allclose(lab.sequence()["cs_low"], _public(lab, truth, q, bounds)["cs_low"], rtol=0, atol=1e-12)


def test_labeller_live_line_stays_exact_after_undo_relabel_and_resume(tmp_path):
    lab, truth, q, bounds, word = _labeller(tmp_path, stop_half_width=0.25)
    for _ in range(30):
        lab.label(word(truth[lab.current_case]))
    lab.undo()
    lab.undo()
    assert len(lab.sequence()) == 28
    np.testing.assert_allclose(lab.sequence()["cs_high"], _public(lab, truth, q, bounds)["cs_high"], rtol=0, atol=1e-12)
    first = lab._ids[0]
    lab.position = 0
    lab.label("FAIL" if lab.labels()[first] == "PASS" else "PASS")  # an earlier label changed
    relabelled = lab.sequence()
    np.testing.assert_allclose(relabelled["cs_low"], _public(lab, truth, q, bounds)["cs_low"], rtol=0, atol=1e-12)
    lab.close()
    from evalkit.widgets import Labeller

    again = Labeller(lab.cases, lab.path, labeller="ann", order="active", probabilities=q, watch="pass_rate",
                     stop_half_width=0.25, blind=False)
    assert again.case_seed == 7 and [again._ids[i] for i in range(len(again.order))] == \
        [lab._ids[i] for i in range(len(lab.order))]  # the recorded seed draws the same order
    pd.testing.assert_frame_equal(again.sequence(), relabelled, check_exact=True)
    assert again.watch_text == lab.watch_text


@pytest.mark.parametrize("leave", ["skip", "ignore"])
def test_a_case_skipped_or_ignored_is_left_out_and_the_line_goes_on(tmp_path, leave):
    lab, truth, q, bounds, word = _labeller(tmp_path, stop_half_width=0.9)
    for _ in range(20):
        lab.label(word(truth[lab.current_case]))
    assert "you can stop" in lab.watch_text and lab.watch_text.startswith("pass rate of these 120 cases: between")
    left = lab.current_case
    getattr(lab, leave)()
    for _ in range(5):
        lab.label(word(truth[lab.current_case]))
    how = "skipped" if leave == "skip" else "ignored"
    assert len(lab.sequence()) == 25  # the labels after the gap count: the line never freezes
    np.testing.assert_allclose(lab.sequence()["cs_low"], _public(lab, truth, q, bounds)["cs_low"], rtol=0, atol=1e-12)
    assert lab.watch_text.startswith(f"pass rate of 119 of these 120 cases (1 {how}: left out): between")
    assert "— you can stop: " in lab.watch_text  # still reachable
    lab.position = lab._at[left]
    lab.label(word(truth[left]))  # labelled after all: back in its place in the draw order
    assert len(lab.sequence()) == 26 and lab.watch_text.startswith("pass rate of these 120 cases: between")
    np.testing.assert_allclose(lab.sequence()["cs_low"], _public(lab, truth, q, bounds)["cs_low"], rtol=0, atol=1e-12)


def test_ignored_and_skipped_in_the_pilot_and_the_estimate_in_its_range_at_the_end(tmp_path):
    lab, truth, q, bounds, word = _labeller(tmp_path, n_cases=40, pilot=8, ratings=True, stop_half_width=0.6)
    lab.label(word(truth[lab.current_case]))
    ignored = lab.current_case
    lab.ignore()  # a pilot case ignored
    lab.label(word(truth[lab.current_case]))
    lab.skip()  # and one skipped
    for _ in range(6):
        lab.label(word(truth[lab.current_case]))
    public = _public(lab, truth, q, bounds)
    np.testing.assert_allclose(lab.sequence()[["estimate", "cs_low", "cs_high"]].to_numpy(dtype=float),
                               public[["estimate", "cs_low", "cs_high"]].to_numpy(dtype=float), rtol=0, atol=1e-12)
    assert "of 38 of these 40 cases (1 ignored, 1 skipped: left out)" in lab.watch_text
    while not lab.done:
        lab.label(word(truth[lab.current_case]))
    kept = truth.drop(ignored)  # every case but the ignored one: the mean over them is known exactly
    seq = lab.sequence()
    last = seq.iloc[-1]
    assert last["cs_low"] == pytest.approx(kept.mean(), abs=1e-9) and last["cs_high"] == pytest.approx(kept.mean(), abs=1e-9)
    assert last["estimate"] == pytest.approx(kept.mean(), abs=1e-9)  # in its range, so exact at the end
    assert ((seq["cs_low"] - 1e-12 <= seq["estimate"]) & (seq["estimate"] <= seq["cs_high"] + 1e-12)).all()
    assert "outside the range" not in lab.watch_text and "of 39 of these 40 cases (1 ignored: left out)" in lab.watch_text


def test_a_case_never_drawn_labelled_by_hand_leaves_nothing_out():
    pytest.importorskip("ipywidgets")
    from evalkit.widgets._labeller import _drawn_inputs

    ids, weights = ["a", "b", "c", "d"], [np.nan, 0.6, 0.4, 0.0]  # a pilot case, two drawn, one of probability 0
    human, probabilities, ignored, skipped = _drawn_inputs(ids, weights, {"a": 1.0, "d": 0.0}, set())
    assert human.index.tolist() == ["a"] and ignored == [] and skipped == []  # d is no draw, and b, c are not skipped
    assert probabilities.index.tolist() == ids and (probabilities == 1.0).all()  # the pilot: uniform over every case
    human, probabilities, ignored, skipped = _drawn_inputs(ids, weights, {"a": 1.0, "c": 0.0}, {"b"})
    assert human.index.tolist() == ["a", "c"] and ignored == ["b"] and skipped == []
    assert probabilities.to_dict() == {"c": 0.4, "d": 0.0}  # b left out of the cases and of the draw
