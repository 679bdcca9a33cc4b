"""Active labelling (sampling_probabilities, choose_cases(strategy="active"), mean(probabilities=)) and juries of
judges (mean with a DataFrame judge, infer.jury), against hand-written references and ppi_py."""

import itertools

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, infer
from evalkit._stats import jury as jury_kernel


def _cases(n_cases=400, seed=0):
    rng = np.random.default_rng(seed)
    p = rng.beta(0.5, 0.5, n_cases)
    y = (rng.random(n_cases) < p).astype(float)
    ids = pd.Index([f"c{i}" for i in range(n_cases)])
    return pd.Series(p, index=ids), pd.Series(y, index=ids)


def _hall_root(q: float, skewness: float) -> float:
    """The real root T of Hall's (1992) polynomial ``T + g T^2 / 3 + g^2 T^3 / 27 + g / 6 = q`` (numpy's roots)."""
    g = skewness
    roots = np.roots([g**2 / 27, g / 3, 1.0, g / 6 - q]) if abs(g) > 1e-12 else np.array([q - g / 6])
    real = roots[np.abs(roots.imag) < 1e-9].real
    return float(real[np.argmin(np.abs(real - q))])


def _des_raj_loop(x, y, order, weights, pilot, bounds):
    """Des Raj's estimate after each draw, written out: labels so far + the line's prediction of the cases left +
    (label - prediction) / draw probability, the line the least-squares fit through the labels before the draw (the
    labels' mean, clipped to the scale, before 3 labels; the scale's middle before any)."""
    n_cases = len(y)
    remaining = np.ones(n_cases, dtype=bool)
    z = []
    for t, i in enumerate(order):
        seen = np.asarray(order[:t], dtype=int)
        if t == 0:
            h = np.full(n_cases, np.mean(bounds))
        elif t < 3:
            h = np.full(n_cases, np.clip(y[seen].mean(), *bounds))
        else:
            design = np.column_stack([np.ones(t), x[seen]])
            beta = np.linalg.lstsq(design, y[seen], rcond=None)[0]
            h = np.clip(beta[0] + beta[1] * x, *bounds)
        weight = np.ones(n_cases) if t < pilot else weights
        p_i = weight[i] / weight[remaining].sum()
        z.append((y[seen].sum() + h[remaining].sum() + (y[i] - h[i]) / p_i) / n_cases)
        remaining[i] = False
    return np.array(z)


def test_des_raj_estimate_and_t_interval_match_a_hand_written_loop():
    judge, truth = _cases()
    pilot = infer.choose_cases(judge, 12, strategy="random", rng=1)
    q = infer.sampling_probabilities(judge, human_pilot=truth[pilot])
    drawn = infer.choose_cases(judge, 100, strategy="active", probabilities=q, exclude=pilot, rng=2)
    human = pd.concat([truth[pilot], truth[drawn]])
    table = infer.mean(judge, human, probabilities=q, method=["ppi++", "classical"], interval="t")
    weights = q.reindex(judge.index).fillna(0.0).to_numpy()
    order = judge.index.get_indexer(human.index)
    z = _des_raj_loop(judge.to_numpy(), truth.to_numpy(), order, weights, len(pilot), (0.0, 1.0))
    estimate, se = z.mean(), z.std(ddof=1) / np.sqrt(len(z))
    # Student's t with Hall's removal of skewness, the estimate's skewness m3 / (n^2 se^3) from the steps' values
    skewness = np.mean((z - z.mean()) ** 3) / (len(z) ** 2 * se**3)
    q = stats.t.ppf(0.975, len(z) - 1)
    ends = sorted(estimate - se * _hall_root(q_end, skewness) for q_end in (q, -q))
    row = table.set_index("method").loc["ppi++"]
    assert row["estimate"] == pytest.approx(estimate, abs=1e-9)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(ends), abs=1e-9)
    assert abs(skewness) > 0.01  # the correction moved the ends: not Student's t
    half = q * se
    assert abs(row["ci_low"] - (estimate - half)) > 1e-4
    assert table.attrs["n_pilot"] == 12 and table.attrs["population"] == "finite"


@pytest.mark.filterwarnings("ignore:mean with probabilities")  # fewer than 30 labels: no t interval, the estimate is tested
def test_des_raj_is_exactly_unbiased_over_every_draw_order():
    """E[estimate] over every ordered successive sample, weighted by its probability, is the mean over the cases, for
    the labels alone and with the learned line (used from the 4th label on), whatever the draw weights."""
    x = np.array([0.1, 0.9, 0.4, 0.8, 0.3])
    y = np.array([0.0, 1.0, 1.0, 1.0, 0.0])
    w = np.array([0.1, 0.3, 0.2, 0.25, 0.15])
    judge = pd.Series(x, index=list("abcde"))
    q = pd.Series(w, index=judge.index)
    for n in (2, 5):
        expected = {"ppi++": 0.0, "classical": 0.0}
        for order in itertools.permutations(range(5), n):
            left, chance = np.ones(5, dtype=bool), 1.0
            for i in order:
                chance *= w[i] / w[left].sum()
                left[i] = False
            human = pd.Series(y[list(order)], index=judge.index[list(order)])
            table = infer.mean(judge, human, probabilities=q, method=["ppi++", "classical"], interval="t")
            for method, value in zip(table["method"], table["estimate"], strict=True):
                expected[method] += chance * value
        assert expected["ppi++"] == pytest.approx(y.mean(), abs=1e-12)
        assert expected["classical"] == pytest.approx(y.mean(), abs=1e-12)


def test_every_case_labelled_gives_the_mean_and_the_betting_interval_holds_it():
    judge, truth = _cases(60, seed=3)
    q = infer.sampling_probabilities(judge)
    order = infer.choose_cases(judge, 60, strategy="active", probabilities=q, rng=0)
    table = infer.mean(judge, truth[order], probabilities=q)
    row = table.iloc[0]
    assert row["interval"] == "betting"
    assert row["ci_low"] <= truth.mean() <= row["ci_high"]
    assert row["ci_high"] - row["ci_low"] < 1e-9  # every label known: what the labels fix is the mean itself


def test_jury_clt_interval_matches_ppi_py_cross_ppi():
    ppi_py = pytest.importorskip("ppi_py")
    rng = np.random.default_rng(4)
    truth = rng.normal(3, 1, 900)
    judges = pd.DataFrame({"a": truth + rng.normal(0.5, 0.8, 900), "b": 0.5 * truth + rng.normal(0, 0.6, 900),
                           "c": rng.normal(0, 1, 900)}, index=[f"c{i}" for i in range(900)])
    labelled = rng.permutation(900)[:120]
    human = pd.Series(truth[labelled], index=judges.index[labelled])
    row = infer.mean(judges, human, interval="clt").iloc[0]
    # the folds, written out: the line fitted without fold k predicts fold k and (fold k's column) the unlabelled cases
    X, y = judges.to_numpy()[labelled], human.to_numpy()
    rest = np.setdiff1d(np.arange(900), labelled)
    codes = jury_kernel.fold_codes(len(y), jury_kernel.FOLDS)
    oof, per_fold = np.empty(len(y)), np.empty((len(rest), codes.max() + 1))
    for k in range(codes.max() + 1):
        design = np.column_stack([np.ones((codes != k).sum()), X[codes != k]])
        beta = np.linalg.lstsq(design, y[codes != k], rcond=None)[0]
        oof[codes == k] = beta[0] + X[codes == k] @ beta[1:]
        per_fold[:, k] = beta[0] + judges.to_numpy()[rest] @ beta[1:]
    low, high = ppi_py.crossppi_mean_ci(y, oof, per_fold, alpha=0.05)
    estimate = ppi_py.crossppi_mean_pointestimate(y, oof, per_fold)
    assert row["method"] == "ppi++" and row["interval"] == "clt"
    assert row["estimate"] == pytest.approx(float(np.ravel(estimate)[0]), abs=1e-10)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])), abs=1e-10)


def test_jury_weights_are_the_least_squares_slopes_and_agreement_is_out_of_fold():
    rng = np.random.default_rng(5)
    truth = (rng.random(500) < 0.6).astype(float)
    judges = pd.DataFrame({name: np.where(rng.random(500) < acc, truth, 1 - truth)
                           for name, acc in [("big", 0.85), ("small-1", 0.75), ("small-2", 0.7)]},
                          index=[f"c{i}" for i in range(500)])
    human = pd.Series(truth[:150], index=judges.index[:150])
    beta = np.linalg.lstsq(np.column_stack([np.ones(150), judges.to_numpy()[:150]]), truth[:150], rcond=None)[0]
    table = infer.mean(judges, human, interval="betting")
    assert table.attrs["weights"].to_numpy() == pytest.approx(beta[1:], abs=1e-10)
    record = infer.jury(judges, human).set_index("judge")
    assert record.loc[["big", "small-1", "small-2"], "weight"].to_numpy() == pytest.approx(beta[1:], abs=1e-10)
    # one judge's out-of-fold agreement: its line is monotone, so its verdict is the judge's own (up to a constant fit)
    assert record.loc["big", "agreement"] == pytest.approx(float((judges["big"][:150] == truth[:150]).mean()), abs=1e-12)
    assert record.loc["jury", "agreement"] >= record.loc["small-2", "agreement"]
    assert list(record.columns) == ["weight", "standardized_weight", "r", "rmse", "agreement", "n_labelled"]


def test_sampling_probabilities_follow_the_uncertainty_with_a_floor():
    judge = pd.Series([0.5, 0.9, 0.99, 0.6, 1.0], index=list("abcde"))
    u = np.sqrt(judge * (1 - judge)).to_numpy()
    for floor in (0.2, 0.5, 1.0):
        q = infer.sampling_probabilities(judge, floor=floor)
        expected = (1 - floor) * u / u.mean() + floor
        assert q.to_numpy() == pytest.approx(expected / expected.sum(), abs=1e-12)
        assert q.min() >= floor / len(judge) - 1e-15 and q.sum() == pytest.approx(1.0)
    given = infer.sampling_probabilities(judge, uncertainty=pd.Series([0.0, 0, 0, 0, 4], index=judge.index), floor=0.5)
    assert given.to_numpy() == pytest.approx([0.1, 0.1, 0.1, 0.1, 0.6])
    several = infer.sampling_probabilities(pd.DataFrame({"x": [1.0, 0, 1, 0], "y": [1.0, 1, 1, 0]}), floor=1e-9)
    assert several.to_numpy() == pytest.approx([0.0, 1.0, 0.0, 0.0], abs=1e-8)  # only the case the two judges disagree on


def test_pilot_uncertainty_is_higher_where_the_judge_is_wrong_more_often():
    rng = np.random.default_rng(6)
    judge = pd.Series((rng.random(600) < 0.5).astype(float), index=[f"c{i}" for i in range(600)])
    # a FAIL verdict is always right, a PASS is wrong one time in two
    truth = np.where(judge == 1, (rng.random(600) < 0.5).astype(float), 0.0)
    pilot = judge.index[:80]
    q = infer.sampling_probabilities(judge, human_pilot=pd.Series(truth[:80], index=pilot))
    assert not q.index.isin(pilot).any() and len(q) == 520
    passes, fails = q[judge[q.index] == 1], q[judge[q.index] == 0]
    assert passes.min() > 1.5 * fails.max()  # (a bin's spread is shrunk toward the pilot's, and the floor is 0.5)
    assert "pilot" in q.attrs["uncertainty"]


def test_active_draws_follow_the_probabilities():
    judge = pd.Series(np.arange(5.0), index=list("abcde"))
    q = pd.Series([0.05, 0.1, 0.15, 0.3, 0.4], index=judge.index)
    rng = np.random.default_rng(7)
    first = [infer.choose_cases(judge, 1, strategy="active", probabilities=q, rng=rng)[0] for _ in range(3000)]
    counts = pd.Series(first).value_counts().reindex(judge.index, fill_value=0).to_numpy()
    assert stats.chisquare(counts, 3000 * q.to_numpy()).pvalue > 1e-3
    both = infer.choose_cases(judge, 5, strategy="active", probabilities=q, rng=0)
    assert sorted(both) == list("abcde")  # without replacement
    assert "e" not in infer.choose_cases(judge, 4, strategy="active", probabilities=q, exclude=["e"], rng=0)


@pytest.mark.parametrize("interval", ["betting", "t"])
def test_active_difference_p_value_matches_its_interval(interval):
    rng = np.random.default_rng(8)
    ids = pd.Index([f"c{i}" for i in range(300)])
    quality = rng.random(300)
    ha, hb = (rng.random(300) < 0.5 + 0.3 * quality).astype(float), (rng.random(300) < 0.5).astype(float)
    ja, jb = pd.Series(0.5 + 0.3 * quality, index=ids), pd.Series(np.full(300, 0.5), index=ids)
    q = infer.sampling_probabilities(ja - jb + 0.5)
    drawn = infer.choose_cases(ja, 120, strategy="active", probabilities=q, rng=1)
    where = ids.get_indexer(drawn)
    table = infer.difference(ja, jb, pd.Series(ha[where], index=drawn), pd.Series(hb[where], index=drawn),
                             probabilities=q, method=["ppi++", "classical"], interval=interval)
    for row in table.to_dict("records"):
        level_excludes = not (row["ci_low"] <= 0 <= row["ci_high"])
        assert (row["p_val"] < 0.05) == level_excludes
        assert 0 <= row["p_val"] <= 1


def test_pass_rate_with_probabilities_is_mean_of_the_verdicts():
    judge, truth = _cases(200, seed=9)
    verdict = (judge > 0.5).astype(float)
    results = pd.DataFrame({"case_id": judge.index, "rubric": "r", "rubric_version": "v", "model": "m",
                            "verdict": np.where(verdict == 1, "PASS", "FAIL"), "parsed": True, "error": None})
    q = infer.sampling_probabilities(verdict, uncertainty=0.5 - (judge - 0.5).abs())
    drawn = infer.choose_cases(verdict, 50, strategy="active", probabilities=q, rng=3)
    labels = truth[drawn].map({1.0: "PASS", 0.0: "FAIL"})
    rate = infer.pass_rate(results, labels, probabilities=q, method=["ppi++", "classical"])
    direct = infer.mean(verdict, truth[drawn], probabilities=q, method=["ppi++", "classical"])
    assert rate[["estimate", "ci_low", "ci_high"]].to_numpy() == pytest.approx(
        direct[["estimate", "ci_low", "ci_high"]].clip(0, 1).to_numpy(), abs=1e-12)


def test_jury_difference_p_value_matches_its_interval():
    rng = np.random.default_rng(10)
    ids = pd.Index([f"c{i}" for i in range(400)])
    ha, hb = rng.normal(3.3, 1, 400), rng.normal(3.0, 1, 400)
    ja = pd.DataFrame({"x": ha + rng.normal(0, 0.5, 400), "z": ha + rng.normal(0, 1, 400)}, index=ids)
    jb = pd.DataFrame({"x": hb + rng.normal(0, 0.5, 400), "z": hb + rng.normal(0, 1, 400)}, index=ids)
    out = infer.difference(ja, jb, pd.Series(ha[:100], index=ids[:100]), pd.Series(hb[:100], index=ids[:100]),
                           interval="t", method=["ppi++", "classical"])
    for row in out.to_dict("records"):
        assert (row["p_val"] < 0.05) == (not row["ci_low"] <= 0 <= row["ci_high"])
    width = (out["ci_high"] - out["ci_low"]).set_axis(out["method"])
    assert width["ppi++"] < width["classical"]


@pytest.mark.parametrize(("call", "message"), [
    (lambda j, h, q: infer.mean(j, h, probabilities=q.to_numpy()), "`probabilities` must be a pandas Series"),
    (lambda j, h, q: infer.mean(j, h, probabilities=-q), "must be finite and non-negative"),
    (lambda j, h, q: infer.mean(j, h, probabilities=q.iloc[5:]), "has neither a probability nor a label"),
    (lambda j, h, q: infer.mean(j, h, probabilities=q, by=pd.Series("s", index=j.index)), "`by` is not offered"),
    (lambda j, h, q: infer.mean(j, h, probabilities=q, nan_policy="omit"), "`nan_policy='omit'` is not offered"),
    (lambda j, h, q: infer.mean(j, h, probabilities=q.where(~q.index.isin(h.index[:1]), 0.0)), "whose probability is 0"),
    (lambda j, h, q: infer.choose_cases(j, 3, strategy="active"), "`probabilities` goes with strategy='active'"),
    (lambda j, h, q: infer.choose_cases(j, 3, probabilities=q), "`probabilities` goes with strategy='active'"),
    (lambda j, h, q: infer.sampling_probabilities(j.round()), "needs a measure of the judge's uncertainty"),
    (lambda j, h, q: infer.sampling_probabilities(j, floor=0), "`floor`"),
    (lambda j, h, q: infer.sampling_probabilities(j, human_pilot=h[:3]), "at least 8 labels"),
    (lambda j, h, q: infer.mean(pd.DataFrame({"a": j, "b": j}).set_axis(["a", "a"], axis=1), h), "more than once"),
    (lambda j, h, q: infer.mean(pd.DataFrame({"a": j}), h, cluster=pd.Series(1, index=j.index)), "`cluster` is not"),
    (lambda j, h, q: infer.jury(pd.DataFrame({"a": j}), h[:3]), "at least 4 labels"),
    (lambda j, h, q: infer.difference(pd.DataFrame({"a": j}), pd.DataFrame({"b": j}), h, h), "the same judges"),
])
def test_bad_input_names_what_is_wrong(call, message):
    judge, truth = _cases(40, seed=11)
    q = infer.sampling_probabilities(judge)
    human = truth[infer.choose_cases(judge, 20, strategy="active", probabilities=q, rng=0)]
    with pytest.raises((ValueError, TypeError), match=message.replace("(", r"\(").replace(")", r"\)")):
        call(judge, human, q)


# ------------------------------------------------------------------------------- rank-sets with several judges
def _two_judges():
    from evalkit import datasets

    demo = datasets.load_demo("pairwise")
    judge, human = demo["judge"], demo["comparisons"]
    rng = np.random.default_rng(12)
    flip = rng.random(len(judge)) < 0.3
    other = judge.copy()
    other.loc[flip, "winner"] = rng.choice(["a", "b", "tie"], int(flip.sum()))
    return {"first": judge, "noisy": other}, human


def test_rank_sets_jury_weights_are_the_least_squares_fit_of_the_human_outcome():
    from evalkit import pairwise

    judges, human = _two_judges()
    few = human.sample(400, random_state=0)
    out = pairwise.rank_sets(judges, few)
    outcome = (few["winner"] == "a").to_numpy(float) - (few["winner"] == "b").to_numpy(float)
    X = np.column_stack([(t.loc[few.index, "winner"] == "a").to_numpy(float) - (t.loc[few.index, "winner"] == "b").to_numpy(float)
                         for t in judges.values()])
    assert out.attrs["weights"].to_numpy() == pytest.approx(np.linalg.lstsq(X, outcome, rcond=None)[0], abs=1e-12)
    assert out.attrs["weights"]["first"] > out.attrs["weights"]["noisy"]
    assert set(out["system"]) == set(human["system_a"]) | set(human["system_b"])
    assert (out["rank_low"] <= out["rank_high"]).all()


def test_rank_sets_jury_refuses_judges_of_other_comparisons():
    from evalkit import pairwise

    judges, human = _two_judges()
    few = human.sample(100, random_state=0)
    with pytest.raises(ValueError, match="must hold the same comparisons"):
        pairwise.rank_sets({"first": judges["first"], "short": judges["noisy"].iloc[:-1]}, few)
    swapped = judges["noisy"].copy()
    swapped[["system_a", "system_b"]] = swapped[["system_b", "system_a"]].to_numpy()
    with pytest.raises(ValueError, match="names other systems"):
        pairwise.rank_sets({"first": judges["first"], "swapped": swapped}, few)
    with pytest.raises(ValueError, match="empty dict"):
        pairwise.rank_sets({}, few)


@pytest.mark.slow
def test_rank_sets_jury_of_the_arena_judges_holds_the_human_ranking():
    """GPT-4, Claude 3 Opus and GPT-3.5 on the arena votes: over 20 draws of 1,000 human votes the jury's sets hold
    the full-data human ranking every time, and are on average no larger than the human votes' alone."""
    import warnings

    from evalkit import datasets, pairwise
    from tests.harness import SHARED_DATA

    if not (SHARED_DATA / "arena").is_dir():
        pytest.skip("the arena votes are not under ../shared/data (CI provides them)")
    votes = datasets.load_arena(SHARED_DATA / "arena")
    by = {r: votes[votes["rater"] == r].set_index("comparison_id")[["system_a", "system_b", "winner"]]
          for r in votes["rater"].unique()}
    human = by.pop("human")
    judges = {name: table.loc[human.index] for name, table in by.items()}
    full = pairwise.rank_sets(judges["gpt-4"], human, method="human")
    truth = pd.Series(np.arange(1, len(full) + 1), index=full["system"])
    rng = np.random.default_rng(0)
    sizes = {"jury": [], "human": []}
    for _ in range(20):
        ids = rng.choice(human.index.to_numpy(), 1000, replace=False)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name, out in (("jury", pairwise.rank_sets(judges, human.loc[ids])),
                              ("human", pairwise.rank_sets(judges["gpt-4"], human.loc[ids], method="human"))):
                rank = truth.loc[out["system"]].to_numpy()
                assert ((out["rank_low"] <= rank) & (rank <= out["rank_high"])).all()
                sizes[name].append((out["rank_high"] - out["rank_low"] + 1).mean())
    assert np.mean(sizes["jury"]) <= np.mean(sizes["human"])


# ------------------------------------------------------------------------------- the labeller's active order
def test_labeller_active_order_draws_by_the_probabilities_after_the_pilot(tmp_path):
    pytest.importorskip("ipywidgets")
    from evalkit._stats.successive import successive_draws
    from evalkit.widgets import Labeller

    cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(30)], "input": "q", "output": "a"})
    q = pd.Series(np.linspace(1, 3, 25), index=cases["case_id"][5:]) / 50
    lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", order="active", probabilities=q, rng=4)
    shown = [lab._ids[i] for i in range(len(lab.order))]
    expected = successive_draws(q.to_numpy(), 25, np.random.default_rng(4))
    assert shown[:5] == [f"c{i}" for i in range(5)]  # the pilot (not in probabilities) first, in the table's order
    assert shown[5:] == list(q.index[expected])
    lab.label("PASS")
    record = lab.records().iloc[-1]
    assert record["case_order"] == "active" and record["case_seed"] == 4
    again = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", order="active", probabilities=q)
    assert [again._ids[i] for i in range(len(again.order))] == shown  # resumed: the recorded seed


def test_labeller_active_order_refuses_what_it_cannot_watch(tmp_path):
    pytest.importorskip("ipywidgets")
    from evalkit.widgets import Labeller

    cases = pd.DataFrame({"case_id": ["a", "b", "c"], "input": "q", "output": "x"})
    q = pd.Series([0.2, 0.3, 0.5], index=["a", "b", "c"])
    judge = pd.Series(["PASS", "FAIL", "PASS"], index=["a", "b", "c"])
    with pytest.raises(ValueError, match="watch='agreement' is not offered with order='active': it is a rate of the"):
        Labeller(cases, tmp_path / "x.jsonl", labeller="x", order="active", probabilities=q, watch="agreement",
                 judge=judge)
    with pytest.raises(ValueError, match="`probabilities` goes with order='active'"):
        Labeller(cases, tmp_path / "x.jsonl", labeller="x", order="active")
    with pytest.raises(ValueError, match="does not hold"):
        Labeller(cases, tmp_path / "x.jsonl", labeller="x", order="active", probabilities=q.rename({"c": "z"}))


# ------------------------------------------------------------------------------------ pass rates with several judges
def _judged(verdicts: np.ndarray, ids, model: str, *, errors=()) -> pd.DataFrame:
    table = pd.DataFrame({"case_id": ids, "rubric": "r", "rubric_version": "v1", "model": model,
                          "verdict": np.where(verdicts == 1, "PASS", "FAIL"), "parsed": True, "error": None})
    table.loc[table["case_id"].isin(errors), ["verdict", "error"]] = [None, "timeout"]
    return table


def _jury_of_results(n_cases=700, n_labelled=150, seed=13):
    rng = np.random.default_rng(seed)
    truth = (rng.random(n_cases) < 0.8).astype(float)
    ids = pd.Index([f"c{i}" for i in range(n_cases)])
    verdicts = {name: np.where(rng.random(n_cases) < acc, truth, 1 - truth)
                for name, acc in [("large", 0.9), ("small", 0.8), ("tiny", 0.7)]}
    labelled = rng.permutation(n_cases)[:n_labelled]
    human = pd.Series(np.where(truth[labelled] == 1, "PASS", "FAIL"), index=ids[labelled])
    return verdicts, ids, truth, labelled, human


def test_jury_pass_rate_is_the_cross_fitted_line_written_out_and_ppi_py_cross_ppi():
    ppi_py = pytest.importorskip("ppi_py")
    verdicts, ids, truth, labelled, human = _jury_of_results()
    results = {name: _judged(v, ids, name) for name, v in verdicts.items()}
    row = infer.pass_rate(results, human, interval="clt").iloc[0]
    X = np.column_stack(list(verdicts.values()))
    y = truth[labelled]
    rest = np.setdiff1d(np.arange(len(ids)), labelled)
    # the cross-fitted least squares, by hand: the line without fold k predicts fold k and the unlabelled cases
    codes = jury_kernel.fold_codes(len(y), jury_kernel.FOLDS)
    oof, per_fold = np.empty(len(y)), np.empty((len(rest), codes.max() + 1))
    for k in range(codes.max() + 1):
        train = codes != k
        beta = np.linalg.lstsq(np.column_stack([np.ones(train.sum()), X[labelled][train]]), y[train], rcond=None)[0]
        oof[~train] = np.clip(beta[0] + X[labelled][~train] @ beta[1:], 0, 1)
        per_fold[:, k] = np.clip(beta[0] + X[rest] @ beta[1:], 0, 1)
    # the rectified mean: the unlabelled cases' mean prediction plus the labels' mean out-of-fold residual
    rectified = per_fold.mean(axis=1).mean() + (y - oof).mean()
    se = np.sqrt(per_fold.mean(axis=1).var() / len(rest) + (y - oof).var() / len(y))
    assert row["estimate"] == pytest.approx(rectified, abs=1e-12)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((rectified - 1.959963984540054 * se,
                                                             rectified + 1.959963984540054 * se), abs=1e-9)
    low, high = ppi_py.crossppi_mean_ci(y, oof, per_fold, alpha=0.05)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((float(np.ravel(low)[0]), float(np.ravel(high)[0])),
                                                            abs=1e-10)
    assert row["model"] == "jury: large, small, tiny" and row["method"] == "ppi++"
    assert (row["n_labelled"], row["n_unlabelled"], row["n_error"]) == (150, 550, 0)
    full = np.linalg.lstsq(np.column_stack([np.ones(len(y)), X[labelled]]), y, rcond=None)[0]
    weights = infer.pass_rate(results, human, interval="clt").attrs["weights"]
    assert list(weights.columns) == ["rubric", "rubric_version", "large", "small", "tiny"]
    assert weights[["large", "small", "tiny"]].to_numpy()[0] == pytest.approx(full[1:], abs=1e-12)
    assert weights.loc[0, "large"] > weights.loc[0, "tiny"]


@pytest.mark.parametrize("interval", ["auto", "t"])
def test_jury_pass_rate_is_mean_of_the_verdicts_frame_with_errors_left_out(interval):
    verdicts, ids, truth, labelled, human = _jury_of_results(seed=14)
    errors = list(ids[:5]) + list(ids[labelled[:2]])  # a timeout of one judge leaves the case out for the jury
    results = [_judged(verdicts["large"], ids, "large", errors=errors[:4]),
               _judged(verdicts["small"], ids, "small", errors=errors[4:]), _judged(verdicts["tiny"], ids, "tiny")]
    out = infer.pass_rate(results, human, method=["ppi++", "classical", "judge"], interval=interval)
    keep = ~ids.isin(errors)
    frame = pd.DataFrame(verdicts, index=ids)[keep]
    labels = (human[human.index.isin(ids[keep])] == "PASS").astype(float)
    direct = infer.mean(frame, labels, method=["ppi++", "classical", "judge"], interval=interval, bounds=(0, 1))
    assert out[["estimate", "ci_low", "ci_high"]].to_numpy() == pytest.approx(
        direct[["estimate", "ci_low", "ci_high"]].clip(0, 1).to_numpy(), abs=1e-12)
    assert (out["n_error"] == len(set(errors))).all() and (out["n_labelled"] == len(labels)).all() and len(labels) < len(human)
    if interval == "auto":  # 0/1 labels: betting, or the exact humans-only interval where that is narrower
        assert set(out.loc[out["method"] == "ppi++", "interval"]) <= {"betting", "clopper-pearson"}


def test_jury_pass_rate_checks_fail_every_judges_verdict():
    verdicts, ids, truth, labelled, human = _jury_of_results(seed=15)
    results = {name: _judged(v, ids, name) for name, v in verdicts.items()}
    failed = pd.DataFrame({"all_passed": np.arange(len(ids)) % 7 != 0}, index=ids)
    out = infer.pass_rate(results, human, checks=failed, method="judge").iloc[0]
    scores = pd.DataFrame(verdicts, index=ids).mul(failed["all_passed"].astype(float), axis=0)
    assert out["estimate"] == pytest.approx(float(scores.mean(axis=1).mean()), abs=1e-12)


@pytest.mark.parametrize(("results", "message"), [
    (lambda r: {}, "empty dict"),
    (lambda r: [], "empty list"),
    (lambda r: {**r, "short": r["large"].iloc[:-1]}, "must hold the same cases"),
    (lambda r: [r["large"], r["small"].assign(model="large")], "model 'large' again"),
    (lambda r: [r["large"], pd.concat([r["small"], r["tiny"]])], "holds 2 models"),
    (lambda r: {**r, "empty": r["large"].iloc[:0]}, "holds no row"),
    (lambda r: {**r, "odd": r["large"].drop(columns="verdict")}, "verdict"),
])
def test_jury_pass_rate_bad_input_names_what_is_wrong(results, message):
    verdicts, ids, truth, labelled, human = _jury_of_results(n_cases=60, n_labelled=20, seed=16)
    tables = {name: _judged(v, ids, name) for name, v in verdicts.items()}
    with pytest.raises((ValueError, TypeError, KeyError), match=message):
        infer.pass_rate(results(tables), human)
    with pytest.raises(ValueError, match="`by` is not offered with a jury"):
        infer.pass_rate(tables, human, by=pd.Series("s", index=ids))


# ------------------------------------------------------------------------- the large-sample intervals' small-sample fix
def test_skew_corrected_interval_inverts_halls_polynomial_and_is_t_without_skewness():
    from evalkit import _stats

    for skewness in (-0.6, -0.1, 0.3):
        low, high = _stats.skew_corrected_interval(2.0, 0.5, skewness, 40, 0.95)
        q = stats.t.ppf(0.975, 40)
        assert (2.0 - low) / 0.5 == pytest.approx(_hall_root(q, skewness), abs=1e-9)
        assert (2.0 - high) / 0.5 == pytest.approx(_hall_root(-q, skewness), abs=1e-9)
        # left-skewed estimate: the lower end reaches further down than Student's t's
        assert (low < 2.0 - 0.5 * q) == (skewness < 0)
        for alternative in ("two-sided", "greater", "less"):
            p = _stats.skew_corrected_p_value(2.0, 0.5, skewness, 40, alternative)
            level = 1 - p if alternative == "two-sided" else 1 - p
            low, high = _stats.skew_corrected_interval(2.0, 0.5, skewness, 40, level, alternative)
            assert min(abs(low), abs(high)) == pytest.approx(0.0, abs=1e-9)  # at its p-value the interval reaches 0
    assert _stats.skew_corrected_interval(2.0, 0.5, 0.0, 40, 0.95) == pytest.approx(
        stats.t.interval(0.95, 40, loc=2.0, scale=0.5), abs=1e-12)


def test_jury_t_interval_is_halls_on_the_cross_fitted_estimate():
    rng = np.random.default_rng(17)
    truth = rng.choice([1.0, 2, 3, 4, 5], 900, p=[0.03, 0.05, 0.12, 0.35, 0.45])
    judges = pd.DataFrame({"a": np.clip(truth + rng.normal(0.3, 0.7, 900), 1, 5),
                           "b": rng.integers(1, 6, 900).astype(float)}, index=[f"c{i}" for i in range(900)])
    labelled = rng.permutation(900)[:120]
    human = pd.Series(truth[labelled], index=judges.index[labelled])
    clt = infer.mean(judges, human, interval="clt", bounds=(1, 5)).iloc[0]
    t = infer.mean(judges, human, interval="t", bounds=(1, 5)).iloc[0]
    se = (clt["ci_high"] - clt["ci_low"]) / (2 * stats.norm.ppf(0.975))  # ppi_py's cross-PPI standard error
    X, y = judges.to_numpy()[labelled], human.to_numpy()
    rest = np.setdiff1d(np.arange(900), labelled)
    codes = jury_kernel.fold_codes(len(y), jury_kernel.FOLDS)
    oof, per_fold = np.empty(len(y)), np.empty((len(rest), codes.max() + 1))
    for k in range(codes.max() + 1):
        beta = np.linalg.lstsq(np.column_stack([np.ones((codes != k).sum()), X[codes != k]]), y[codes != k],
                               rcond=None)[0]
        oof[codes == k] = np.clip(beta[0] + X[codes == k] @ beta[1:], 1, 5)
        per_fold[:, k] = np.clip(beta[0] + judges.to_numpy()[rest] @ beta[1:], 1, 5)
    residual, imputed = y - oof, per_fold.mean(axis=1)
    third = np.mean((residual - residual.mean()) ** 3) / 120**2 + np.mean((imputed - imputed.mean()) ** 3) / 780**2
    skewness = third / se**3
    q = stats.t.ppf(0.975, 119)
    assert t["estimate"] == pytest.approx(clt["estimate"], abs=1e-12)
    assert (t["ci_low"], t["ci_high"]) == pytest.approx(
        tuple(sorted(t["estimate"] - se * _hall_root(end, skewness) for end in (q, -q))), abs=1e-9)
    assert abs(skewness) > 1e-3 and (t["ci_low"] < t["estimate"] - q * se) == (skewness < 0)  # not Student's t


@pytest.mark.parametrize("where", ["jury", "active"])
def test_t_interval_refused_below_the_measured_size(where):
    rng = np.random.default_rng(18)
    truth = (rng.random(800) < 0.9).astype(float)
    ids = pd.Index([f"c{i}" for i in range(800)])
    judges = pd.DataFrame({"a": np.where(rng.random(800) < 0.9, truth, 1 - truth),
                           "b": np.where(rng.random(800) < 0.8, truth, 1 - truth)}, index=ids)

    def call(n, interval="t"):
        if where == "jury":
            return infer.mean(judges, pd.Series(truth[:n], index=ids[:n]), interval=interval)
        q = infer.sampling_probabilities(judges)
        drawn = infer.choose_cases(judges, n, strategy="active", probabilities=q, rng=0)
        return infer.mean(judges, pd.Series(truth[ids.get_indexer(drawn)], index=drawn), probabilities=q,
                          interval=interval, method="ppi++")

    with pytest.warns(EvalkitWarning, match="99 labels < 100"):
        row = call(99).iloc[0]
    assert np.isnan(row["ci_low"]) and np.isnan(row["ci_high"]) and np.isfinite(row["estimate"])
    assert "the t interval is known to run short here" in row["note"] and row["method"] == "ppi++"
    assert np.isfinite(call(99, "betting").iloc[0]["ci_low"])  # the betting interval is given
    assert np.isfinite(call(100).iloc[0][["ci_low", "ci_high"]].astype(float)).all()
