"""Prediction-powered estimates: agreement with ppi_py, Monte Carlo coverage, segments, budgets, case choice, bad input."""

import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, datasets, infer, judge, plots


def synthetic(rng, n_cases=3000, n_labelled=200, bias=0.0, noise=0.6, binary=False):
    """Human truth on every case, a judge that tracks it (plus ``bias``), and labels on a random subset."""
    ids = pd.Index([f"case{i:05d}" for i in range(n_cases)])
    if binary:
        quality = rng.normal(0, 1, n_cases)
        human = (quality > -0.4).astype(float)
        score = ((quality + rng.normal(0, noise, n_cases) + bias) > -0.4).astype(float)
    else:
        human = rng.normal(3.0, 1.0, n_cases)
        score = human + bias + rng.normal(0, noise, n_cases)
    labelled = rng.choice(n_cases, n_labelled, replace=False)
    return pd.Series(score, index=ids), pd.Series(human[labelled], index=ids[labelled]), human


def split(judge_scores, human):
    lab = judge_scores.index.isin(human.index)
    return human.reindex(judge_scores.index[lab]).to_numpy(), judge_scores.to_numpy()[lab], judge_scores.to_numpy()[~lab]


# ----------------------------------------------------------------------------------------- ppi_py reference
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("confidence_level", [0.9, 0.95])
def test_mean_matches_ppi_py(binary, confidence_level):
    ppi_py = pytest.importorskip("ppi_py", reason="the reference needs ppi-python (the 'test' extra)")
    for seed in range(5):
        rng = np.random.default_rng(seed)
        scores, human, _ = synthetic(rng, n_cases=int(rng.integers(500, 3000)), n_labelled=int(rng.integers(20, 300)),
                                     bias=float(rng.normal(0, 0.5)), noise=float(rng.uniform(0.1, 2.0)), binary=binary)
        y, yhat, yhat_u = split(scores, human)
        table = infer.mean(scores, human, method=["ppi++", "ppi", "classical"], confidence_level=confidence_level,
                           interval="clt")
        alpha = 1 - confidence_level
        for method, lam in (("ppi++", None), ("ppi", 1), ("classical", 0)):
            row = table.set_index("method").loc[method]
            point = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam)
            low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=alpha, lam=lam)
            np.testing.assert_allclose(row["estimate"], np.squeeze(point), rtol=0, atol=1e-10)
            np.testing.assert_allclose([row["ci_low"], row["ci_high"]], [np.squeeze(low), np.squeeze(high)], rtol=0, atol=1e-10)
            if lam is not None:
                assert row["lam"] == lam
        # the tuned lam itself: ppi_py's point estimate with our lam passed explicitly gives the same estimate
        lam_hat = table.set_index("method").loc["ppi++", "lam"]
        assert 0.0 <= lam_hat <= 1.0
        np.testing.assert_allclose(np.squeeze(ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u, lam=lam_hat)),
                                   table.set_index("method").loc["ppi++", "estimate"], rtol=0, atol=1e-10)


def test_ppi_plus_plus_is_never_much_wider_than_classical(rng):
    for bias, noise in ((0.0, 0.3), (1.0, 0.3), (0.0, 3.0), (0.0, 20.0)):
        scores, human, _ = synthetic(rng, bias=bias, noise=noise)
        table = infer.mean(scores, human, method=["ppi++", "classical"], interval="clt").set_index("method")
        width = table["ci_high"] - table["ci_low"]
        assert width["ppi++"] <= width["classical"] * 1.01, (bias, noise, width.to_dict())


def test_judge_method_is_the_plain_mean_of_every_score(rng):
    scores, human, _ = synthetic(rng, bias=0.7)
    row = infer.mean(scores, human, method="judge", interval="clt").iloc[0]
    values = scores.to_numpy()
    half = stats.norm.ppf(0.975) * values.std() / np.sqrt(len(values))
    np.testing.assert_allclose([row["estimate"], row["ci_low"], row["ci_high"]],
                               [values.mean(), values.mean() - half, values.mean() + half], rtol=1e-12)
    assert np.isnan(row["lam"])


# ------------------------------------------------------------------------------------------- coverage
@pytest.mark.parametrize("bias", [0.0, 0.8])
@pytest.mark.slow  # a simulation of many label draws: the slow tier
def test_monte_carlo_coverage_with_an_honest_and_a_biased_judge(bias):
    """Fresh data each draw (truth known: the population mean 3.0): PPI, PPI++, classical hold 95%; judge-only does not."""
    ppi_methods = [m for m in infer.METHODS if m != "calibrated"]  # interval="clt" is the PPI estimators'
    hits = {m: 0 for m in ppi_methods}
    n_draws = 1000
    ids = pd.Index([f"case{i:05d}" for i in range(1500)])
    for seed in range(n_draws):
        rng = np.random.default_rng([bias > 0, seed])
        truth = rng.normal(3.0, 1.0, 1500)
        labelled = rng.choice(1500, 100, replace=False)
        scores = pd.Series(truth + bias + rng.normal(0, 0.8, 1500), index=ids)
        table = infer.mean(scores, pd.Series(truth[labelled], index=ids[labelled]), method=ppi_methods, interval="clt")
        for method, low, high in table[["method", "ci_low", "ci_high"]].itertuples(index=False):
            hits[method] += low <= 3.0 <= high
    coverage = {m: h / n_draws for m, h in hits.items()}
    for method in ("ppi++", "ppi", "classical"):
        assert coverage[method] >= 0.93, coverage
    if bias:
        assert coverage["judge"] < 0.05, coverage  # a narrow interval around the wrong number
    else:
        assert coverage["judge"] >= 0.93, coverage


def test_simulate_reuses_mean_on_the_same_draw(rng):
    scores, _, truth = synthetic(rng, n_cases=800, bias=0.4)
    human_all = pd.Series(truth, index=scores.index)
    sim = infer.simulate(scores, human_all, n_labelled=60, n_draws=1, rng=7).set_index("method")
    picks = np.argsort(np.random.default_rng(7).random((1, 800)), axis=1)[0, :60]
    table = infer.mean(scores, human_all.iloc[picks], interval="clt").set_index("method")
    for method in ("ppi++",):
        np.testing.assert_allclose(sim.loc[method, "width"], table.loc[method, "ci_high"] - table.loc[method, "ci_low"],
                                   rtol=1e-9)
        np.testing.assert_allclose(sim.loc[method, "bias"], table.loc[method, "estimate"] - truth.mean(), atol=1e-10)


def test_simulate_coverage_on_a_finite_population(rng):
    scores, _, truth = synthetic(rng, n_cases=1600, bias=0.5, noise=0.7)
    sim = infer.simulate(scores, pd.Series(truth, index=scores.index), n_labelled=[25, 100, 400], n_draws=2000, rng=1)
    cov = sim.set_index(["n_labelled", "method"])["coverage"]
    assert (cov.drop("judge", level="method").drop(25, level="n_labelled") >= 0.93).all(), cov
    # 25 labels: normal intervals with estimated variances (and lam) run a little short, as ppi_py's do
    assert (cov.drop("judge", level="method").loc[25] >= 0.90).all(), cov
    assert (cov.xs("judge", level="method") == 0).all()
    width = sim.set_index(["n_labelled", "method"])["width"].unstack()
    assert (width["ppi++"] < width["classical"]).all()
    assert (width["classical"].diff().dropna() < 0).all()  # more labels, narrower intervals


# ------------------------------------------------------------------------------------------- segments
def test_segments_equal_separate_estimates_and_bonferroni(rng):
    scores, human, _ = synthetic(rng, n_cases=2400, n_labelled=300, bias=0.3)
    system = pd.Series(np.where(np.arange(2400) % 3 == 0, "A", np.where(np.arange(2400) % 3 == 1, "B", "C")),
                       index=scores.index, name="system")
    table = infer.mean(scores, human, method=["ppi++", "classical"], by=system, interval="clt")
    assert list(table.columns) == ["system", *infer.COLUMNS]
    for name in ("A", "B", "C"):
        ids = system.index[system == name]
        alone = infer.mean(scores[ids], human[human.index.isin(ids)], method=["ppi++", "classical"], interval="clt")
        mine = table[table["system"] == name].drop(columns="system").reset_index(drop=True)
        pd.testing.assert_frame_equal(mine, alone, rtol=1e-12)
    adjusted = infer.mean(scores, human, by=system, adjust="bonferroni", interval="clt")
    assert adjusted.attrs["confidence_level"] == pytest.approx(1 - 0.05 / 3)
    alone = infer.mean(scores[system == "A"], human[human.index.isin(system.index[system == "A"])],
                       confidence_level=1 - 0.05 / 3, interval="clt")
    np.testing.assert_allclose(adjusted.iloc[0][["ci_low", "ci_high"]].astype(float),
                               alone.iloc[0][["ci_low", "ci_high"]].astype(float), rtol=1e-12)
    by_array = infer.mean(scores, human, method=["ppi++", "classical"], by=system.to_numpy(), interval="clt")
    np.testing.assert_allclose(by_array["estimate"], table["estimate"])


def test_segment_with_too_few_labels_gets_a_nan_row(rng):
    scores, human, _ = synthetic(rng, n_cases=600, n_labelled=80)
    segment = pd.Series("big", index=scores.index)
    lonely = [i for i in scores.index if i not in human.index][:5] + [human.index[0]]
    segment[lonely] = "small"
    with pytest.warns(EvalkitWarning, match=r"fewer than 2 human labels in segment\(s\) \['small'\]"):
        table = infer.mean(scores, human, by=segment, method="ppi++")
    row = table.set_index("segment").loc["small"]
    assert row["n_labelled"] == 1 and np.isnan(row["estimate"]) and np.isnan(row["ci_low"])
    assert np.isfinite(table.set_index("segment").loc["big", "estimate"])
    # the default (calibrated): the shared calibration's mean stands, with no interval, and the note says why
    with pytest.warns(EvalkitWarning, match=r"no interval for \['small'\]"):
        table = infer.mean(scores, human, by=segment)
    row = table.set_index("segment").loc["small"]
    assert row["n_labelled"] == 1 and np.isfinite(row["estimate"]) and np.isnan(row["ci_low"])
    assert "1 label(s) < 10" in row["note"]


# ----------------------------------------------------------------------------------------- difference
def test_difference_matches_ppi_py_on_the_paired_differences():
    ppi_py = pytest.importorskip("ppi_py", reason="the reference needs ppi-python (the 'test' extra)")
    rng = np.random.default_rng(3)
    ids = pd.Index([f"c{i}" for i in range(2000)])
    quality = rng.normal(0, 1, 2000)
    ha, hb = quality + 0.1 + rng.normal(0, 0.4, 2000), quality + rng.normal(0, 0.4, 2000)
    ja, jb = pd.Series(ha + 0.3 + rng.normal(0, 0.3, 2000), index=ids), pd.Series(hb + rng.normal(0, 0.3, 2000), index=ids)
    lab = rng.choice(2000, 150, replace=False)
    res = infer.difference(ja, jb, pd.Series(ha[lab], index=ids[lab]), pd.Series(hb[lab], index=ids[lab]),
                           method=["ppi++", "ppi", "classical"], interval="clt").set_index("method")
    mask = np.zeros(2000, dtype=bool)
    mask[lab] = True
    y, yhat, yhat_u = (ha - hb)[mask], (ja - jb).to_numpy()[mask], (ja - jb).to_numpy()[~mask]  # in judge order
    for method, lam in (("ppi++", None), ("ppi", 1), ("classical", 0)):
        low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05, lam=lam)
        np.testing.assert_allclose([res.loc[method, "ci_low"], res.loc[method, "ci_high"]],
                                   [np.squeeze(low), np.squeeze(high)], atol=1e-10)
        p = ppi_py.ppi_mean_pval(y, yhat, yhat_u, null=0, lam=res.loc[method, "lam"])
        np.testing.assert_allclose(res.loc[method, "p_val"], np.squeeze(p), rtol=1e-9, atol=1e-300)
    assert res.loc["ppi++", "ci_high"] - res.loc["ppi++", "ci_low"] < res.loc["classical", "ci_high"] - res.loc["classical", "ci_low"]
    greater = infer.difference(ja, jb, pd.Series(ha[lab], index=ids[lab]), pd.Series(hb[lab], index=ids[lab]),
                               alternative="greater", interval="clt").iloc[0]
    assert greater["ci_high"] == np.inf and greater["p_val"] == pytest.approx(res.loc["ppi++", "p_val"] / 2)


def test_difference_bad_input(rng):
    scores, human, _ = synthetic(rng, n_cases=300, n_labelled=40)
    with pytest.raises(ValueError, match="must score the same cases"):
        infer.difference(scores, scores.iloc[:-1], human, human)
    with pytest.warns(EvalkitWarning, match="3 label\\(s\\) belong to cases labelled for only one system"):
        res = infer.difference(scores, scores * 0.9, human, human.iloc[3:], method="ppi++")
    assert res["n_labelled"].iloc[0] == 37
    res = infer.difference(scores, scores * 0.9, human, human.iloc[3:])  # the default: every label counts
    assert res["n_labelled"].iloc[0] == 40 and res["method"].iloc[0] == "calibrated"
    with pytest.raises(ValueError, match="`alternative` must be one of"):
        infer.difference(scores, scores, human, human, alternative="larger")


# ------------------------------------------------------------------------------------------ pass rate
def demo_results():
    demo = datasets.load_demo("judge")
    labels, outputs = demo["labels"], demo["outputs"]
    rubric = judge.Rubric("support", "Supported.", "{output}")
    parsed = [rubric.parse(t) for t in outputs["raw"]]
    results = pd.DataFrame({"case_id": outputs["case_id"], "rubric": "support", "rubric_version": outputs["rubric"],
                            "model": "sim", "verdict": [v for v, _ in parsed], "parsed": [p for _, p in parsed],
                            "error": None})
    return results, labels.set_index("case_id")["label"]


def test_pass_rate_counts_as_judge_pass_rate_does():
    results, labels = demo_results()
    results.loc[results.index[results["rubric_version"] == "v1"][:3], ["verdict", "error"]] = [None, "timeout"]
    checks = pd.DataFrame({"all_passed": True}, index=results["case_id"].unique())
    checks.iloc[10:14] = False
    human = labels.iloc[::2]
    table = infer.pass_rate(results, human, checks=checks, method=["ppi++", "classical", "judge"])
    assert list(table.columns) == ["rubric", "rubric_version", "model", *infer.COLUMNS, "n_error"]
    v1 = table[table["rubric_version"] == "v1"].set_index("method")
    assert v1["n_error"].iloc[0] == 3
    # the judge-only estimate is judge.pass_rate's rate
    reference = judge.pass_rate(results.assign(parsed=True), checks=checks).set_index("rubric_version")
    assert v1.loc["judge", "estimate"] == pytest.approx(reference.loc["v1", "pass_rate"])
    # the same numbers from infer.mean on the 0/1 scores of the judged cases
    ok = results[(results["rubric_version"] == "v1") & results["error"].isna()]
    score = pd.Series(((ok["verdict"] == "PASS") & checks["all_passed"].reindex(ok["case_id"]).to_numpy()).astype(float).to_numpy(),
                      index=ok["case_id"].to_numpy())
    direct = infer.mean(score, human[human.index.isin(score.index)], method=["ppi++", "classical", "judge"]).set_index("method")
    np.testing.assert_allclose(v1["estimate"], direct["estimate"], rtol=1e-12)
    np.testing.assert_allclose(v1["ci_low"], direct["ci_low"].clip(0, 1), rtol=1e-12)
    assert v1.loc["ppi++", "n_labelled"] == int(human.index.isin(score.index).sum())
    assert ((table["ci_low"] >= 0) & (table["ci_high"] <= 1)).all()


def test_pass_rate_by_column_and_bad_input():
    results, labels = demo_results()
    results["half"] = np.where(results["case_id"].str[-1].isin(list("01234")), "first", "second")
    table = infer.pass_rate(results, labels.iloc[:60], by="half")
    assert set(table["half"]) == {"first", "second"} and len(table) == 4
    with pytest.raises(ValueError, match="`human` has 1 case id\\(s\\) that `results` does not hold"):
        infer.pass_rate(results, pd.concat([labels, pd.Series({"nope": "PASS"})]))
    with pytest.raises(KeyError, match="missing column"):
        infer.pass_rate(results.drop(columns="error"), labels)
    with pytest.raises(ValueError, match="expected a number, PASS/FAIL"):
        infer.pass_rate(results, labels.replace({"PASS": "OK"}))


def test_pass_rate_counts_the_rubric_pass_levels_as_judge_pass_rate_does(rng):
    rubric = judge.Rubric("tone", "The reply is polite.", "{output}", levels=("GOOD", "OK", "BAD"), fail_level="BAD")
    cases = pd.DataFrame({"case_id": [f"c{i:03d}" for i in range(300)], "output": [f"reply {i}" for i in range(300)]})
    truth = pd.Series(rng.choice(["GOOD", "OK", "BAD"], 300, p=[0.4, 0.3, 0.3]), index=cases["case_id"])
    flip = rng.random(300) < 0.15  # the judge disagrees with the humans on some cases
    said = truth.where(~flip, truth.map({"GOOD": "BAD", "OK": "BAD", "BAD": "GOOD"}))
    replies = dict(zip(cases["output"], said.to_numpy(), strict=True))
    results = judge.run_judge(cases, rubric, lambda prompt: replies[prompt], model_id="sim", progress=False)
    human = truth.iloc[::4]  # humans label with the rubric's own levels
    table = infer.pass_rate(results, human, method=["ppi++", "classical", "judge"]).set_index("method")
    reference = judge.pass_rate(results).iloc[0]
    assert reference["pass_rate"] > 0.5
    assert table.loc["judge", "estimate"] == pytest.approx(reference["pass_rate"], abs=1e-12)
    human_pass = human.isin(["GOOD", "OK"]).astype(float)
    assert table.loc["classical", "estimate"] == pytest.approx(human_pass.mean(), abs=1e-12)
    widths = table["ci_high"] - table["ci_low"]  # PPI++ is never wider than the humans-only interval in one table
    assert widths["ppi++"] <= widths["classical"] + 1e-12
    assert table.loc["ppi++", "lam"] > 0 or table.loc["ppi++", "note"].startswith("the judge did not narrow")
    scores = (said != "BAD").astype(float)
    direct = infer.mean(scores, human_pass, method=["ppi++", "classical", "judge"]).set_index("method")
    np.testing.assert_allclose(table["estimate"], direct["estimate"], rtol=1e-12)
    # human labels as booleans (True = pass) give the same table
    again = infer.pass_rate(results, human.isin(["GOOD", "OK"]), method=["ppi++", "classical", "judge"])
    np.testing.assert_allclose(again["estimate"], table["estimate"].to_numpy(), rtol=1e-12)
    with pytest.raises(ValueError, match="`human` for case .* is 'GREAT'"):
        infer.pass_rate(results, human.replace({"GOOD": "GREAT"}))


# -------------------------------------------------------------------------------------------- budgets
def test_expected_half_width_by_hand(rng):
    scores, human, _ = synthetic(rng, n_cases=2000, n_labelled=80, noise=0.5)
    curve = infer.expected_half_width(scores, human, n_labelled=[80, 400], confidence_level=0.9,
                                      interval="clt").set_index(["n_labelled", "method"])
    y, yhat, _ = split(scores, human)
    vy, cyh, vj = y.var(), np.cov(y, yhat, ddof=0)[0, 1], scores.to_numpy().var()
    z = stats.norm.ppf(0.95)
    for n in (80, 400):
        big_n = 2000 - n
        lam = min(1.0, max(0.0, cyh / ((1 + n / big_n) * scores.to_numpy().var(ddof=1))))
        var = lam**2 * vj / big_n + (vy + lam**2 * vj - 2 * lam * cyh) / n
        assert curve.loc[(n, "ppi++"), "half_width"] == pytest.approx(z * np.sqrt(var), rel=1e-12)
        assert curve.loc[(n, "ppi++"), "lam"] == pytest.approx(lam, rel=1e-12)
        assert curve.loc[(n, "classical"), "half_width"] == pytest.approx(z * np.sqrt(vy / n), rel=1e-12)
    # at the pilot's own size the plan is close to the interval mean() reports on the pilot
    actual = infer.mean(scores, human, interval="clt").iloc[0]
    planned = infer.expected_half_width(scores, human, n_labelled=80, interval="clt").iloc[0]["half_width"]
    assert planned == pytest.approx((actual["ci_high"] - actual["ci_low"]) / 2, rel=0.1)
    # t: the same standard error with Student's quantile on n - 1 degrees of freedom
    t_plan = infer.expected_half_width(scores, human, n_labelled=[80], interval="t").set_index("method")["half_width"]
    z_plan = infer.expected_half_width(scores, human, n_labelled=[80], interval="clt").set_index("method")["half_width"]
    np.testing.assert_allclose(t_plan / z_plan, stats.t.ppf(0.975, 79) / stats.norm.ppf(0.975), rtol=1e-12)


def test_default_plan_at_the_pilot_size_is_the_interval_mean_prints(rng):
    """The default plan simulates mean()'s default interval: at the pilot's own size every draw is the pilot (in
    random orders, which the betting interval depends on), so the planned half-width is close to half the width
    mean() reports on it, and equal to it for classical on 0/1 labels (Clopper-Pearson, which the order does not
    move)."""
    scores, human, _ = synthetic(rng, n_cases=800, n_labelled=60)
    actual = infer.mean(scores, human, method=["ppi++", "classical"]).set_index("method")
    plan = infer.expected_half_width(scores, human, n_labelled=[60]).set_index("method")
    np.testing.assert_allclose(plan["half_width"], (actual["ci_high"] - actual["ci_low"]) / 2, rtol=0.15)
    assert (plan["interval"] == actual["interval"]).all()  # scores with no known scale: both the t interval
    scored = infer.mean(scores, human, method=["ppi++", "classical"], bounds=(0, 6)).set_index("method")
    plan = infer.expected_half_width(scores, human, n_labelled=[60], bounds=(0, 6)).set_index("method")
    np.testing.assert_allclose(plan["half_width"], (scored["ci_high"] - scored["ci_low"]) / 2, rtol=0.15)
    assert (plan["interval"] == "betting").all() and (scored["interval"] == "betting").all()
    verdicts, labels, _ = synthetic(rng, n_cases=800, n_labelled=60, binary=True)
    actual = infer.mean(verdicts, labels, method=["ppi++", "classical"]).set_index("method")
    plan = infer.expected_half_width(verdicts, labels, n_labelled=[60]).set_index("method")
    half = (actual["ci_high"] - actual["ci_low"]) / 2
    assert plan.loc["classical", "half_width"] == pytest.approx(half["classical"], rel=1e-9)
    assert plan.loc["ppi++", "half_width"] == pytest.approx(half["ppi++"], rel=0.15)
    assert plan.loc["classical", "interval"] == actual.loc["classical", "interval"] == "clopper-pearson"
    # the planned half-width falls as labels are added, and is 0 with every case labelled for the finite estimand
    curve = infer.expected_half_width(scores, human, n_labelled=[60, 200, 400, 800], finite_population=True,
                                      n_draws=50).set_index(["method", "n_labelled"])["half_width"]
    for method in ("ppi++", "classical"):
        assert np.all(np.diff(curve[method].to_numpy()) < 0) and curve[(method, 800)] == 0


def test_labels_needed_is_the_smallest_count_that_reaches_the_target(rng):
    scores, human, _ = synthetic(rng, n_cases=5000, n_labelled=60, noise=0.5)
    table = infer.labels_needed(scores, human, half_width=0.08, interval="clt").set_index("method")
    y, _, _ = split(scores, human)
    z = stats.norm.ppf(0.975)
    assert table.loc["classical", "labels_needed"] == int(np.ceil(z**2 * y.var() / 0.08**2))
    n = int(table.loc["ppi++", "labels_needed"])
    curve = infer.expected_half_width(scores, human, n_labelled=[n - 1, n], interval="clt").set_index(
        ["n_labelled", "method"])["half_width"]
    assert curve[(n, "ppi++")] <= 0.08 < curve[(n - 1, "ppi++")]
    assert n < table.loc["classical", "labels_needed"]
    assert (table["n_cases"] == 5000).all()


def test_labels_needed_unreachable_and_bad_input(rng):
    scores, human, _ = synthetic(rng, n_cases=100, n_labelled=20, noise=5.0)
    with pytest.warns(EvalkitWarning, match="even 100 labels"):
        table = infer.labels_needed(scores, human, half_width=0.01)
    assert table["labels_needed"].isna().all()
    with pytest.raises(ValueError, match="`half_width` must be positive"):
        infer.labels_needed(scores, human, half_width=0)
    with pytest.raises(ValueError, match="`n_labelled` must be integers in \\[2, 100\\]"):
        infer.expected_half_width(scores, human, n_labelled=[1, 50])
    with pytest.raises(ValueError, match="at least 2 labels"):
        infer.labels_needed(scores, human.iloc[:1], half_width=0.1)
    with pytest.raises(ValueError, match="`interval` must be one of"):
        infer.labels_needed(scores, human, half_width=0.1, interval="wilson")
    with pytest.raises(ValueError, match="`n_draws` must be in"):
        infer.expected_half_width(scores, human, n_labelled=[50], n_draws=0)
    with pytest.raises(ValueError, match="`bounds` must have low < high"):
        infer.expected_half_width(scores, human, n_labelled=[50], bounds=(5, 1))


def test_label_budget_plot(rng):
    scores, human, _ = synthetic(rng, n_cases=2000, n_labelled=50)
    curve = infer.expected_half_width(scores, human, n_labelled=np.arange(20, 1000, 20), interval="clt")
    fig, ax = plt.subplots()
    out = plots.label_budget(curve, half_width=0.1, ax=ax)
    assert out is ax
    labels = [line.get_label() for line in ax.lines]
    assert labels[0] == "ppi++" and "classical" in labels and "target 0.1" in labels
    ppi_line = ax.lines[0]
    np.testing.assert_allclose(ppi_line.get_ydata(), curve[curve["method"] == "ppi++"]["half_width"])
    markers = [line for line in ax.lines if line.get_label() == "_nolegend_"]
    assert len(markers) == 2 and all(line.get_ydata()[0] <= 0.1 for line in markers)
    with pytest.raises(KeyError, match="it has columns"):
        plots.label_budget(curve.drop(columns="half_width"))


# ------------------------------------------------------------------------------------------ choose_cases
def test_choose_cases_keeps_every_prefix_stratified():
    judge_verdicts = pd.Series(["PASS"] * 700 + ["FAIL"] * 300, index=[f"c{i:04d}" for i in range(1000)])
    ids = infer.choose_cases(judge_verdicts, 200, rng=0)
    assert isinstance(ids, pd.Index) and ids.name == "case_id" and ids.is_unique and len(ids) == 200
    fails = (judge_verdicts[ids] == "FAIL").to_numpy().cumsum()
    for k in (10, 20, 50, 100, 200):
        assert abs(fails[k - 1] - 0.3 * k) <= 1, (k, fails[k - 1])
    assert infer.choose_cases(judge_verdicts, 200, rng=0).equals(ids)
    assert not infer.choose_cases(judge_verdicts, 200, rng=1).equals(ids)


def test_choose_cases_gives_every_case_the_same_chance():
    scores = pd.Series(np.r_[np.zeros(30), np.linspace(0, 1, 70)], index=[f"c{i}" for i in range(100)])
    counts = pd.Series(0, index=scores.index)
    for seed in range(1000):
        counts[infer.choose_cases(scores, 20, n_strata=4, rng=seed)] += 1
    share = counts / 1000  # 20 of 100: 0.2 for every case (binomial sd 0.013 per case)
    assert share.min() > 0.14 and share.max() < 0.26
    assert abs(share[:30].mean() - 0.2) < 0.01 and abs(share[30:].mean() - 0.2) < 0.01  # the tied zeros and the rest


def test_choose_cases_exclude_random_and_labeller(tmp_path):
    pytest.importorskip("ipywidgets", reason="the Labeller needs the 'widgets' extra")
    from evalkit.widgets import Labeller

    scores = pd.Series(np.linspace(0, 1, 50), index=[f"c{i}" for i in range(50)])
    done = scores.index[:10]
    ids = infer.choose_cases(scores, 40, exclude=done, strategy="random", rng=2)
    assert not ids.isin(done).any() and set(ids) == set(scores.index[10:])
    cases = pd.DataFrame({"case_id": scores.index, "input": "q", "output": "a"})
    lab = Labeller(cases.set_index("case_id").loc[ids].reset_index(), tmp_path / "labels.jsonl", labeller="t")
    assert lab.current_case == ids[0]
    lab.buttons["PASS"].click()
    assert lab.current_case == ids[1]
    with pytest.raises(ValueError, match="`n` must be in \\[1, 40\\]"):
        infer.choose_cases(scores, 41, exclude=done)
    with pytest.raises(ValueError, match="`strategy` must be one of"):
        infer.choose_cases(scores, 5, strategy="neyman")


# ------------------------------------------------------------------------------------------- bad input
def test_human_ids_must_be_judged(rng):
    scores, human, _ = synthetic(rng, n_cases=100, n_labelled=10)
    extra = pd.concat([human, pd.Series({"ghost": 1.0, "phantom": 2.0})])
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "t intervals need at least", EvalkitWarning)  # 10 labels: said elsewhere
        with pytest.warns(EvalkitWarning, match=r"2 of `human`'s 12 ids match nothing in `judge` \(e.g. \['ghost', "
                                                r"'phantom'\]\)"):
            left = infer.mean(scores, extra)  # the two labels without a judge score are counted, named and left out
        pd.testing.assert_frame_equal(left, infer.mean(scores, human))
    with pytest.raises(ValueError, match="share no case id"):
        infer.mean(scores, pd.Series({"ghost": 1.0, "phantom": 2.0}))
    with pytest.raises(ValueError, match="`human` must have a unique index"):
        infer.mean(scores, pd.concat([human, human.iloc[:1]]))
    with pytest.raises(ValueError, match="`judge` must have a unique index"):
        infer.mean(pd.concat([scores, scores.iloc[:1]]), human)


def test_nan_labels_raise_or_count_as_unlabelled(rng):
    scores, human, _ = synthetic(rng, n_cases=500, n_labelled=50)
    holes = human.copy()
    holes.iloc[[3, 7]] = np.nan
    with pytest.raises(ValueError, match="`human` has 2 missing label\\(s\\).*nan_policy='omit'"):
        infer.mean(scores, holes)
    omitted = infer.mean(scores, holes, nan_policy="omit", method=["ppi++", "ppi", "classical"])
    dropped = infer.mean(scores, holes.dropna(), method=["ppi++", "ppi", "classical"])
    pd.testing.assert_frame_equal(omitted, dropped)
    assert omitted["n_labelled"].iloc[0] == 48 and omitted["n_unlabelled"].iloc[0] == 452
    gaps = scores.copy()
    gaps.iloc[0] = np.nan
    with pytest.raises(ValueError, match="`judge` has 1 missing score"):
        infer.mean(gaps, human)
    assert infer.mean(gaps, human, nan_policy="omit")["n_unlabelled"].iloc[0] + 50 == 499 + (gaps.index[0] in human.index)


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_infinite_scores_and_labels_are_refused_naming_the_argument(rng, value):
    scores, human, _ = synthetic(rng, n_cases=200, n_labelled=30)
    bad_scores, bad_human = scores.copy(), human.copy()
    bad_scores.iloc[5] = value
    bad_human.iloc[2] = value
    for call in (lambda j, h: infer.mean(j, h, method=["ppi++", "classical", "judge"]),
                 lambda j, h: infer.mean(j, h, nan_policy="omit"),
                 lambda j, h: infer.difference(j, j * 0.5, h, h),
                 lambda j, h: infer.labels_needed(j, h, half_width=0.1),
                 lambda j, h: infer.expected_half_width(j, h, n_labelled=[50])):
        with pytest.raises(ValueError, match=r"`judge\w*` has 1 infinite value\(s\), e.g. -?inf for case 'case\d+'"):
            call(bad_scores, human)
        with pytest.raises(ValueError, match=r"`human\w*` has 1 infinite value\(s\)"):
            call(scores, bad_human)
    with pytest.raises(ValueError, match="`judge` has 1 infinite value"):
        infer.choose_cases(bad_scores, 5, rng=0)


def test_fewer_than_two_labels(rng):
    scores, human, _ = synthetic(rng, n_cases=100, n_labelled=10)
    with pytest.raises(ValueError, match="at least 2 labels.*got 1"):
        infer.mean(scores, human.iloc[:1])
    with pytest.raises(ValueError, match="at least 2 labels.*got 0"):
        infer.mean(scores, human.iloc[:0])


def test_constant_judge_warns_and_falls_back_to_classical(rng):
    _, human, _ = synthetic(rng, n_cases=400, n_labelled=40)
    for value in (1.0, 0.1, 1 / 3):  # sums of 0.1 and 1/3 are not exact: the check must not depend on luck
        flat = pd.Series(value, index=[f"case{i:05d}" for i in range(400)])
        with pytest.warns(EvalkitWarning, match="same score: it carries no information"):
            table = infer.mean(flat, human, method=["ppi++", "ppi", "classical"]).set_index("method")
        assert table.loc["ppi++", "lam"] == 0.0
        for method in ("ppi++", "ppi"):
            np.testing.assert_allclose(table.loc[method, ["estimate", "ci_low", "ci_high"]].astype(float),
                                       table.loc["classical", ["estimate", "ci_low", "ci_high"]].astype(float), rtol=1e-12)


def test_everything_labelled_warns_and_gives_classical(rng):
    scores, _, truth = synthetic(rng, n_cases=50, n_labelled=5)
    with pytest.warns(EvalkitWarning, match="every case is labelled"):
        table = infer.mean(scores, pd.Series(truth, index=scores.index), method=["ppi++", "ppi", "classical"])
    assert table["estimate"].nunique() == 1 and (table["lam"] == 0).all()


def test_types_options_and_no_mutation(rng):
    scores, human, _ = synthetic(rng, n_cases=200, n_labelled=30)
    before_s, before_h = scores.copy(), human.copy()
    infer.mean(scores, human, method=list(infer.METHODS), by=pd.Series("x", index=scores.index))
    pd.testing.assert_series_equal(scores, before_s)
    pd.testing.assert_series_equal(human, before_h)
    with pytest.raises(TypeError, match="`judge` must be a pandas Series"):
        infer.mean(scores.to_numpy(), human)
    with pytest.raises(TypeError, match="`human` must be a pandas Series"):
        infer.mean(scores, human.to_frame())
    with pytest.raises(ValueError, match="`method` must be one of"):
        infer.mean(scores, human, method="ppi+")
    with pytest.raises(ValueError, match="`adjust` must be one of"):
        infer.mean(scores, human, adjust="sidak")
    with pytest.raises(ValueError, match="`confidence_level` must be in"):
        infer.mean(scores, human, confidence_level=95)
    with pytest.raises(ValueError, match="`by` has no segment for 1 case"):
        infer.mean(scores, human, by=pd.Series("x", index=scores.index[1:]))
    with pytest.raises(ValueError, match="`by` must be a Series indexed by case id or a sequence as long as"):
        infer.mean(scores, human, by=["x", "y"])
    with pytest.raises(ValueError, match="`simulate` needs a human label for every judged case"):
        infer.simulate(scores, human, n_labelled=10)
    with pytest.raises(ValueError, match="`null` selects segments for adjust='bh' or 'by'"):
        infer.mean(scores, human, by=pd.Series("x", index=scores.index), adjust="holm", null=3.0)
    with pytest.raises(TypeError, match="`null` must be a number"):
        infer.mean(scores, human, by=pd.Series("x", index=scores.index), adjust="bh", null="3")


def test_fcr_intervals_for_the_segments_bh_selects():
    """adjust="bh" with null: each segment's p-value inverts its interval (for 0/1 labels and classical, the exact
    binomial test's), BH selects on them, and only the R selected get an interval, at 1 - R alpha / m (Benjamini &
    Yekutieli 2005); BY selects with its own step-up and divides that error rate by 1 + 1/2 + ... + 1/m."""
    from evalkit._stats import adjust_p_values, clopper_pearson

    rng = np.random.default_rng(9)
    seg = np.repeat(np.arange(8), 100)
    rates = np.array([0.6, 0.65, 0.7, 0.9, 0.9, 0.9, 0.9, 0.9])
    human_all = (rng.random(800) < rates[seg]).astype(float)
    ids = pd.Index([f"c{i}" for i in range(800)])
    scores = pd.Series(np.where(rng.random(800) < 0.85, human_all, 1 - human_all), index=ids)
    labelled = rng.choice(800, 320, replace=False)
    human = pd.Series(human_all[labelled], index=ids[labelled])
    by = pd.Series(seg, index=ids, name="segment")
    for adjust, harmonic in (("bh", 1.0), ("by", sum(1 / i for i in range(1, 9)))):
        table = infer.mean(scores, human, by=by, adjust=adjust, null=0.9, method="classical").set_index("segment")
        k = human.groupby(seg[labelled]).sum().to_numpy()
        n = human.groupby(seg[labelled]).size().to_numpy()
        exact = np.minimum(1, 2 * np.minimum(stats.binom.cdf(k, n, 0.9), stats.binom.sf(k - 1, n, 0.9)))
        np.testing.assert_allclose(table["p_val"], exact, atol=2e-5)
        chosen = adjust_p_values(table["p_val"].to_numpy(), adjust) <= 0.05
        assert (table["selected"].to_numpy() == chosen).all() and 0 < chosen.sum() < 8
        level = 1 - chosen.sum() * 0.05 / (8 * harmonic)
        assert table.attrs["selected_confidence_level"]["classical"] == pytest.approx(level)
        low, high = clopper_pearson(k[chosen], n[chosen], level)
        np.testing.assert_allclose(table.loc[chosen, "ci_low"], low, rtol=1e-12)
        np.testing.assert_allclose(table.loc[chosen, "ci_high"], high, rtol=1e-12)
        assert table.loc[~chosen, "ci_low"].isna().all() and table.loc[~chosen, "note"].str.startswith("not selected").all()
        assert ((table.loc[chosen, "ci_low"] > 0.9) | (table.loc[chosen, "ci_high"] < 0.9)).all()
    # without null every segment is reported: BH's level is the marginal one
    assert infer.mean(scores, human, by=by, adjust="bh").attrs["confidence_level"] == 0.95


def test_verdicts_and_booleans_are_scores(rng):
    ids = [f"c{i}" for i in range(300)]
    truth = rng.random(300) < 0.6
    verdicts = pd.Series(np.where(truth ^ (rng.random(300) < 0.1), "pass", "FAIL"), index=ids)
    human = pd.Series(truth[:60], index=ids[:60])
    as_text = infer.mean(verdicts, human.map({True: "PASS", False: "FAIL"}))
    as_bool = infer.mean(verdicts == "pass", human)
    as_num = infer.mean((verdicts == "pass").astype(int), human.astype(float))
    pd.testing.assert_frame_equal(as_text, as_bool)
    pd.testing.assert_frame_equal(as_text, as_num)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        infer.mean(verdicts, human)  # a good judge on binary data raises no warning


@pytest.mark.slow
def test_few_labels_notebook_names_a_bad_summeval_dir(tmp_path):
    pytest.importorskip("nbclient", reason="notebook tests need the 'report' extra")
    from pathlib import Path

    from evalkit import report

    notebook = Path(__file__).resolve().parents[1] / "notebooks" / "04_few_labels.ipynb"
    result = report.run_notebook(notebook, tmp_path, params={"SUMMEVAL_DIR": str(tmp_path)})
    assert not result.ok and "SUMMEVAL_DIR=" in result.error and "ctc_summeval_metric_scores.json" in result.error


def test_stratified_choice_reduces_the_spread_of_the_estimates():
    """Balancing the labelled set over the judge's verdicts removes chance imbalance: estimates vary less than
    under a plain random choice, and stay centred on the truth."""
    rng = np.random.default_rng(5)
    ids = pd.Index([f"c{i}" for i in range(2000)])
    quality = rng.normal(0, 1, 2000)
    human_all = pd.Series((quality > 0).astype(float), index=ids)
    verdicts = pd.Series(np.where(quality + rng.normal(0, 0.5, 2000) > 0, "PASS", "FAIL"), index=ids)
    estimates = {"stratified": [], "random": []}
    for seed in range(300):
        for strategy in estimates:
            chosen = infer.choose_cases(verdicts, 60, strategy=strategy, rng=seed)
            estimates[strategy].append(infer.mean(verdicts, human_all[chosen], method="classical")["estimate"].iloc[0])
    sd = {k: np.std(v) for k, v in estimates.items()}
    assert sd["stratified"] < 0.85 * sd["random"], sd  # theory: within-verdict variance gives about 0.67
    assert abs(np.mean(estimates["stratified"]) - human_all.mean()) < 3 * sd["stratified"] / np.sqrt(300)


# ------------------------------------------------------------------------------ betting, clusters, sequences
def _slow_betting_lower(x, level, trunc=0.9):
    """Independent recipe for the lower end of the hedged betting interval (WSR 2024, Theorem 3) on [0, 1] data:
    a plain loop over a fine grid of candidate means."""
    n, alpha = len(x), 1 - level
    best = 0.0
    for m in np.linspace(0, 1, 20001):
        cap, mu, var, rejected = 1.0, 0.5, 0.25, False
        s, ss = 0.0, 0.25
        for t, xi in enumerate(x, start=1):
            lam = np.sqrt(2 * np.log(2 / alpha) / (n * var))
            bet = min(lam, trunc / m) if m > 0 else lam
            cap *= 1 + bet * (xi - m)
            if cap >= 2 / alpha:
                rejected = True
                break
            s += xi
            mu = (0.5 + s) / (t + 1)
            ss += (xi - mu) ** 2
            var = ss / (t + 1)
        if not rejected:
            return m
        best = m
    return best


def test_betting_interval_matches_an_independent_loop():
    from evalkit._stats import betting_interval

    rng = np.random.default_rng(4)
    for n in (15, 40):
        x = rng.choice([0, 0.25, 0.5, 0.75, 1.0], size=n, p=[0.02, 0.03, 0.05, 0.2, 0.7])
        low, _ = betting_interval(x, 0.0, 1.0, confidence_level=0.95, theta_range=(0, 1))
        assert abs(float(low) - _slow_betting_lower(x, 0.95)) <= 1 / 20000 + 1e-9


def test_classical_cluster_interval_equals_statsmodels():
    sm = pytest.importorskip("statsmodels.api", reason="the reference needs statsmodels (the 'test' extra)")
    rng = np.random.default_rng(8)
    ids = pd.Index([f"c{i}" for i in range(600)])
    groups = pd.Series(np.repeat(np.arange(150), 4), index=ids)
    y = rng.integers(1, 6, 600).astype(float)
    judge_scores = pd.Series(y + rng.normal(0, 1, 600), index=ids)
    labelled = ids[:240]
    row = infer.mean(judge_scores, pd.Series(y[:240], index=labelled), method="classical", cluster=groups,
                     interval="t").iloc[0]
    fit = sm.OLS(y[:240], np.ones(240)).fit(cov_type="cluster", cov_kwds={"groups": groups[labelled].to_numpy()}, use_t=True)
    low, high = fit.conf_int(0.05)[0]
    np.testing.assert_allclose([row["ci_low"], row["ci_high"]], [low, high], rtol=0, atol=1e-10)
    assert row["interval"] == "cluster-t" and row["n_clusters"] == 60


def _slow_cluster_capital(totals, sizes, bound, theta, level, side, trunc=0.9):
    """Independent recipe for one bettor of the betting interval over whole clusters on [0, 1] data: a plain
    loop, the bet sized from the earlier clusters' ratio residuals, truncated at c / theta (or c / (1 - theta))."""
    g, alpha = len(totals), 1 - level
    cap, s_u, s_w, ss, var = 1.0, 0.0, 0.0, 0.25, 0.25
    for t in range(g):
        lam = np.sqrt(2 * np.log(2 / alpha) / (g * var))
        d = (totals[t] - theta * sizes[t]) / bound
        if side > 0:
            cap *= 1 + min(lam, trunc / theta) * d
        else:
            cap *= 1 - min(lam, trunc / (1 - theta)) * d
        if cap >= 2 / alpha:
            return True
        u, w = totals[t] / bound, sizes[t] / bound
        s_u, s_w = s_u + u, s_w + w
        mu = (0.5 + s_u) / (1 + s_w)
        ss += (u - mu * w) ** 2
        var = ss / (t + 2)
    return False


def test_cluster_betting_interval_matches_an_independent_loop():
    """Clusters of uneven sizes (some cases of the rate, some none): each end is where the plain-loop bettor
    stops rejecting, and with every cluster of size 1 the interval is the unclustered betting interval."""
    from evalkit._stats import betting_interval, cluster_betting_interval

    rng = np.random.default_rng(11)
    sizes = rng.integers(0, 6, 40).astype(float)
    totals = rng.binomial(sizes.astype(int), rng.beta(4, 1, 40)).astype(float)
    low, high = cluster_betting_interval(totals, sizes, 0.0, 1.0, bound=5, confidence_level=0.9)
    for end, side in ((float(low), +1), (float(high), -1)):
        inside = end + (1e-6 if side > 0 else -1e-6)
        outside = end - (1e-6 if side > 0 else -1e-6)
        assert not _slow_cluster_capital(totals, sizes, 5, inside, 0.9, side)
        assert _slow_cluster_capital(totals, sizes, 5, outside, 0.9, side)
    assert 0 < low < totals.sum() / sizes.sum() < high < 1
    for lo, hi, x in ((0, 1, (rng.random(60) < 0.9).astype(float)), (1, 5, rng.integers(1, 6, 35).astype(float)),
                      (-2, 3, rng.uniform(-2, 3, 120))):
        plain = betting_interval(x, lo, hi, confidence_level=0.95, theta_range=(lo, hi))
        clustered = cluster_betting_interval(x, np.ones_like(x), lo, hi, bound=1, confidence_level=0.95)
        np.testing.assert_allclose(np.array(clustered, dtype=float), np.array(plain, dtype=float), rtol=0, atol=1e-9)
        for null in (float(plain[0]) - 0.01, float(plain[1]) + 0.01, float(x.mean())):
            assert (tuple(map(bool, cluster_betting_interval(x, np.ones_like(x), lo, hi, bound=1, confidence_level=0.95,
                                                            null=null)))
                    == tuple(map(bool, betting_interval(x, lo, hi, confidence_level=0.95, theta_range=(lo, hi), null=null))))
    with pytest.raises(ValueError, match="more than the bound"):
        cluster_betting_interval(totals, sizes, 0.0, 1.0, bound=4, confidence_level=0.9)


def test_cluster_default_is_the_betting_interval_over_whole_clusters():
    """With ``cluster=`` the default is the betting interval over clusters: with every case its own cluster it
    equals the unclustered betting interval of infer.mean; it does not depend on the order labels come in; PPI gets
    no default interval (NaN, a note, a warning) and the cluster-robust t stays available as interval='t'."""
    rng = np.random.default_rng(8)
    ids = pd.Index([f"c{i}" for i in range(600)])
    y = rng.integers(1, 6, 600).astype(float)
    judge_scores = pd.Series(y + rng.normal(0, 1, 600), index=ids)
    human = pd.Series(y[:90], index=ids[:90])
    singletons = pd.Series(np.arange(600), index=ids)
    one = infer.mean(judge_scores, human, method="classical", cluster=singletons, bounds=(1, 5)).iloc[0]
    plain = infer.mean(judge_scores, human, method="classical", interval="betting", bounds=(1, 5)).iloc[0]
    np.testing.assert_allclose([one["ci_low"], one["ci_high"]], [plain["ci_low"], plain["ci_high"]], rtol=0, atol=1e-9)
    assert one["interval"] == "cluster-betting" and one["n_clusters"] == 90
    groups = pd.Series(np.repeat(np.arange(150), 4), index=ids)
    row = infer.mean(judge_scores, human, method="classical", cluster=groups, bounds=(1, 5)).iloc[0]
    shuffled = human.sample(frac=1.0, random_state=3)
    again = infer.mean(judge_scores, shuffled, method="classical", cluster=groups, bounds=(1, 5)).iloc[0]
    assert (row["ci_low"], row["ci_high"]) == (again["ci_low"], again["ci_high"])
    assert row["ci_low"] < row["estimate"] < row["ci_high"] and row["n_clusters"] == 23
    # 23 clusters: the cluster-robust t is refused there, the betting interval is not
    with pytest.warns(EvalkitWarning, match="need at least"):
        t_row = infer.mean(judge_scores, human, method="classical", cluster=groups, interval="t").iloc[0]
    assert np.isnan(t_row["ci_low"]) and "23 clusters < 50" in t_row["note"]
    with pytest.warns(EvalkitWarning, match="interval='t' gives the large-sample"):
        table = infer.mean(judge_scores, human, method=["ppi++", "classical", "judge"], cluster=groups, bounds=(1, 5))
    ppi, classical, judge_row = (table.iloc[i] for i in range(3))
    assert np.isnan(ppi["ci_low"]) and "no finite-sample interval for PPI" in ppi["note"] and np.isfinite(ppi["estimate"])
    assert classical["ci_low"] == row["ci_low"] and judge_row["n_clusters"] == 150
    assert judge_row["ci_low"] < judge_scores.mean() < judge_row["ci_high"]
    # a one-sided alternative gives one end of the 1 - 2 alpha interval
    diff = infer.difference(judge_scores, judge_scores * 0 + 3, human, human * 0 + 3, method="classical",
                            cluster=groups, bounds=(1, 5))
    assert diff["interval"].iat[0] == "cluster-betting" and 0 <= diff["p_val"].iat[0] <= 1
    greater = infer.difference(judge_scores, judge_scores * 0 + 3, human, human * 0 + 3, method="classical",
                               cluster=groups, bounds=(1, 5), alternative="greater", confidence_level=0.95)
    two = infer.difference(judge_scores, judge_scores * 0 + 3, human, human * 0 + 3, method="classical",
                           cluster=groups, bounds=(1, 5), confidence_level=0.9)
    assert greater["ci_low"].iat[0] == pytest.approx(two["ci_low"].iat[0], abs=1e-9) and greater["ci_high"].iat[0] == np.inf


def test_clopper_pearson_equals_scipy():
    from evalkit._stats import clopper_pearson

    for k, n in ((0, 20), (3, 20), (20, 20), (47, 50), (1, 1)):
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
        np.testing.assert_allclose(clopper_pearson(k, n, 0.95), [ci.low, ci.high], rtol=0, atol=1e-12)


def test_finite_population_half_width_is_zero_with_every_case_labelled(rng):
    scores, _, truth = synthetic(rng, n_cases=60, n_labelled=5)
    human_all = pd.Series(truth, index=scores.index)
    row = infer.mean(scores, human_all, method="classical", finite_population=True).iloc[0]
    assert row["ci_low"] == pytest.approx(truth.mean(), abs=1e-9) and row["ci_high"] == pytest.approx(truth.mean(), abs=1e-9)
    curve = infer.expected_half_width(scores, human_all.iloc[:20], n_labelled=[20, 60], finite_population=True)
    assert (curve[curve["n_labelled"] == 60]["half_width"] == 0).all()


@pytest.mark.slow  # a simulation of many label draws: the slow tier
def test_stopping_when_narrow_keeps_the_sequence_level_where_the_fixed_n_interval_does_not():
    """Stop the first time the half-width is <= 0.1 (at most 300 labels, pass rate 0.9): the confidence sequence at
    that moment holds at least 95% of the time; the fixed-n clt interval read after every label and stopped the
    same way does not."""
    hits_cs, hits_fixed = 0, 0
    reps = 300
    for seed in range(reps):
        rng = np.random.default_rng(seed)
        x = (rng.random(300) < 0.9).astype(float)
        cs = infer.confidence_sequence(human=pd.Series(x, index=[f"c{i}" for i in range(300)]))
        stop = infer.stopping_point(cs, half_width=0.1) or 300
        row = cs.iloc[stop - 1]
        hits_cs += row["cs_low"] <= 0.9 <= row["cs_high"]
        t = np.arange(1, 301)
        m = np.cumsum(x) / t
        half = 1.96 * np.sqrt(np.maximum(np.cumsum(x * x) / t - m**2, 0)) / np.sqrt(t)
        first = np.flatnonzero((half <= 0.1) & (t >= 5))[0]
        hits_fixed += m[first] - half[first] <= 0.9 <= m[first] + half[first]
    assert hits_cs / reps >= 0.95
    assert hits_fixed / reps < 0.9


def test_confidence_sequence_bad_input():
    labels = pd.Series(["PASS", "FAIL", "PASS"], index=["a", "b", "c"])
    with pytest.raises(ValueError, match="`statistic` must be one of"):
        infer.confidence_sequence(human=labels, statistic="median")
    with pytest.raises(ValueError, match="compares judge and human: pass `judge`"):
        infer.confidence_sequence(human=labels, statistic="agreement")
    with pytest.raises(ValueError, match="that `judge` does not score"):
        infer.confidence_sequence(pd.Series(["PASS"], index=["a"]), labels, statistic="agreement")
    with pytest.raises(ValueError, match="holds no label"):
        infer.confidence_sequence(human=labels.iloc[:0])
    with pytest.raises(KeyError, match="missing column"):
        infer.stopping_point(pd.DataFrame({"x": [1]}), half_width=0.1)
    recall = infer.confidence_sequence(pd.Series(["FAIL", "FAIL", "PASS"], index=["a", "b", "c"]), labels,
                                       statistic="fail_recall")
    assert recall["n_used"].tolist() == [0, 1, 1] and recall["estimate"].iloc[1] == 1.0


@pytest.mark.slow  # a simulation of many label draws: the slow tier
def test_planned_labels_deliver_the_half_width():
    """labels_needed's plan, checked by simulation on the fully labelled cases: at the planned n the default
    (betting) interval's median half-width is at the target (within the pilot's own error: a pilot of 300 here),
    and the large-sample plan gives the clt interval's half-width."""
    rng = np.random.default_rng(2)
    ids = pd.Index([f"c{i}" for i in range(3000)])
    truth = rng.normal(3, 1, 3000).clip(0, 6)
    scores = pd.Series(truth + rng.normal(0, 0.6, 3000), index=ids)
    pilot = pd.Series(truth[:300], index=ids[:300])
    human = pd.Series(truth, index=ids)
    plan = infer.labels_needed(scores, pilot, half_width=0.08, bounds=(0, 6)).set_index("method")
    for method in ("ppi++", "classical"):
        n = int(plan.loc[method, "labels_needed"])
        assert n > 300  # the plan rests on labels imputed from the pilot
        sim = infer.simulate(scores, human, n_labelled=n, n_draws=300, method=method, interval="betting", bounds=(0, 6),
                             rng=3).iloc[0]
        assert 0.9 * 0.08 <= sim["median_width"] / 2 <= 1.05 * 0.08, (method, n, sim["median_width"] / 2)
        assert sim["coverage"] >= 0.95
    plan = infer.labels_needed(scores, pilot, half_width=0.08, interval="clt").set_index("method")
    n = int(plan.loc["ppi++", "labels_needed"])
    sim = infer.simulate(scores, human, n_labelled=n, n_draws=1000, method="ppi++", rng=3).iloc[0]
    assert abs(sim["width"] / 2 - 0.08) < 0.008 and sim["coverage"] >= 0.93


def test_confidence_sequence_with_the_judge_warns_of_nothing_it_does_not_show():
    """The prediction-powered sequence's running estimate is made with clt intervals it never shows: their notes (fewer
    than 30 labels, every case labelled) are not the caller's, and warnings are errors in this suite."""
    gen = np.random.default_rng(0)
    ids = [f"c{i}" for i in range(40)]
    judge = pd.Series(gen.random(40) < 0.8, index=ids)
    human = pd.Series(gen.random(40) < 0.8, index=ids)
    cs = infer.confidence_sequence(judge, human)
    assert len(cs) == 40 and cs["method"].eq("ppi++").all() and cs["half_width"].iloc[-1] == 0


def test_ppi_betting_blocks_by_hand_and_widths():
    """The population betting interval of PPI: each label's rectified value plus the mean of its own block of
    unlabelled scores (in ppi_betting's fixed order), as one betting interval on [a - r, b + r]; with weight 0 it is
    the humans-only betting interval. PPI++'s weights make it about as narrow as the humans-only interval with a
    useless judge and much narrower with a good one."""
    from evalkit import _stats

    rng = np.random.default_rng(6)
    y = rng.choice([1.0, 2, 3, 4, 5], 40, p=[0.05, 0.05, 0.1, 0.3, 0.5])
    yhat = np.clip(y + rng.normal(0, 0.7, 40), 1, 5)
    rest = np.clip(rng.choice([1.0, 2, 3, 4, 5], 130, p=[0.05, 0.05, 0.1, 0.3, 0.5]) + rng.normal(0, 0.7, 130), 1, 5)
    jb = (min(yhat.min(), rest.min()), max(yhat.max(), rest.max()))
    shuffled = rest[np.random.default_rng(130).permutation(130)]
    edges = np.linspace(0, 130, 41).round().astype(int)
    blocks = np.array([shuffled[a:b].mean() for a, b in zip(edges[:-1], edges[1:], strict=True)])
    r = jb[1] - jb[0]
    expected = _stats.betting_interval(y - yhat + blocks, 1 - r, 5 + r, confidence_level=0.9, theta_range=(1, 5))
    got = _stats.ppi_betting(y, yhat, rest, weight=1.0, bounds=(1, 5), judge_bounds=jb, confidence_level=0.9)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-9)
    classical = _stats.ppi_betting(y, yhat, rest, weight=0.0, bounds=(1, 5), judge_bounds=jb, confidence_level=0.9)
    np.testing.assert_allclose(classical, _stats.betting_interval(y, 1, 5, confidence_level=0.9, theta_range=(1, 5)),
                               atol=1e-12)
    # widths, over 40 label sets of 200 from 3,000 cases
    for noise, most in ((0.3, 0.85), (5.0, 1.03)):
        truth = rng.normal(3, 0.8, 3000).clip(1, 5)
        judge_scores = truth + rng.normal(0, noise, 3000)
        picks = np.argsort(rng.random((40, 3000)), axis=1)
        lab, others = picks[:, :200], picks[:, 200:]
        bounds = (float(judge_scores.min()), float(judge_scores.max()))
        widths = [np.mean(np.subtract(*_stats.ppi_betting(truth[lab], judge_scores[lab], judge_scores[others], weight=w,
                                                          bounds=(1, 5), judge_bounds=bounds, confidence_level=0.95)[::-1]))
                  for w in ("tuned", 0.0)]
        assert widths[0] <= most * widths[1], (noise, widths)


def test_width_weights_in_a_loop_equal_all_at_once(monkeypatch):
    from evalkit import _stats

    rng = np.random.default_rng(7)
    y = rng.random((30, 120))
    g = y + rng.normal(0, 0.3, (30, 120))
    kwargs = dict(judge_var=np.full(30, 0.1), horizon=120, alpha=0.05, bounds=(0, 1), spread=np.full(30, 1.5))
    at_once = _stats.ppi._width_weights(y, g, **kwargs)
    monkeypatch.setattr(_stats.ppi, "WEIGHT_GRID_AT_ONCE", 0)
    np.testing.assert_array_equal(_stats.ppi._width_weights(y, g, **kwargs), at_once)
    assert (at_once[:, :3] == 0).all() and 0 < at_once[:, 3:].mean() < 1


def test_no_betting_interval_rests_on_bounds_read_from_the_data(rng):
    """Scores without a known scale get the t interval by default, and the betting interval only with bounds; the
    judge's scores are clipped to what a holdout of the unlabelled cases shows, a bound fixed before any label."""
    scores, human, _ = synthetic(rng, n_cases=1000, n_labelled=80)
    table = infer.mean(scores, human, method=["ppi++", "classical"])
    assert (table["interval"] == "t").all() and table["note"].str.contains("scale is not known").all()
    assert table.attrs["bounds"] is None
    with pytest.raises(ValueError, match="rests on the labels' scale, which is not known"):
        infer.mean(scores, human, interval="betting")
    with pytest.raises(ValueError, match="rests on the labels' scale"):
        infer.mean(scores, human, interval="t-pseudo")
    labelled = human.clip(0, 6)
    betting = infer.mean(scores, labelled, method="ppi", bounds=(0, 6)).iloc[0]
    assert betting["interval"] == "betting" and np.isfinite(betting["ci_low"])
    from evalkit._stats import ppi

    rest = np.arange(100, dtype=float)
    g, others, low, high = ppi._clipped(np.array([-5.0, 500.0]), rest, None, tuned=False)
    holdout = rest[: int(round(ppi.CLIP_HOLDOUT * 100))]  # the first cases set aside; the rest clipped to their range
    assert (low, high) == tuple(np.quantile(holdout, [ppi.JUDGE_CLIP_QUANTILE, 1 - ppi.JUDGE_CLIP_QUANTILE]))
    assert g.tolist() == [low, high] and others.min() >= low and others.max() <= high and len(others) == 90


def test_ppi_plus_plus_is_never_wider_than_the_humans_only_interval():
    """0/1 labels at 40 labels (a judge agreeing on 85%, 2,000 cases), where the betting PPI++ interval is wider than
    Clopper-Pearson's: the PPI++ row reports the humans-only one, with a note; with a strong judge and more labels it
    keeps its own, narrower interval."""
    gen = np.random.default_rng(11)
    ids = pd.Index([f"c{i}" for i in range(2000)])
    for n, agree in ((40, 0.85), (60, 0.8), (400, 0.97)):
        human_all = gen.random(2000) < 0.8
        judge = pd.Series(np.where(gen.random(2000) < agree, human_all, ~human_all).astype(float), index=ids)
        picks = gen.choice(2000, n, replace=False)
        human = pd.Series(human_all[picks].astype(float), index=ids[picks])
        table = infer.mean(judge, human, method=["ppi++", "classical"]).set_index("method")
        width = table["ci_high"] - table["ci_low"]
        assert width["ppi++"] <= width["classical"] + 1e-12
        if table.loc["ppi++", "lam"] == 0:
            assert table.loc["ppi++", "interval"] == "clopper-pearson" and "did not narrow" in table.loc["ppi++", "note"]
            assert table.loc["ppi++", "estimate"] == table.loc["classical", "estimate"]
    assert table.loc["ppi++", "lam"] > 0 and width["ppi++"] < width["classical"]  # the strong judge, 400 labels


def test_t_pseudo_is_t_with_half_a_pseudo_label_at_each_end_and_refused_where_the_far_end_is_thin():
    ids = pd.Index([f"c{i}" for i in range(40)])
    y = np.r_[np.full(20, 5.0), np.full(10, 4.0), np.full(10, 2.0)]  # 10 labels' worth toward the far end
    human = pd.Series(y, index=ids)
    judge = pd.Series(y, index=ids)  # every case labelled: the judge adds nothing
    row = infer.mean(judge, human, method="classical", interval="t-pseudo", bounds=(1, 5)).iloc[0]
    x = np.r_[y, 1.0, 5.0]
    weights = np.r_[np.ones(40), 0.5, 0.5]
    centre = np.sum(weights * x) / 41
    var = np.sum(weights * (x - centre) ** 2) / 40
    half = stats.t.ppf(0.975, 40) * np.sqrt(var / 41)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((centre - half, min(centre + half, 5.0)), abs=1e-12)
    passes = pd.Series(np.r_[np.ones(39), 0.0], index=ids)  # 1 fail of 40: half a label's worth at the far end
    with pytest.warns(EvalkitWarning, match="t-pseudo' is not given"):
        refused = infer.mean(passes, passes, method="classical", interval="t-pseudo").iloc[0]
    assert np.isnan(refused["ci_low"]) and "far end of the scale" in refused["note"]


def test_a_ppi_row_whose_betting_interval_is_the_humans_only_one_is_the_humans_only_row():
    """One method per row: where PPI++'s bets gave the judge no weight (its interval equal to the humans-only one), the
    row reports the humans-only estimate, lam = 0 and the note, not PPI++'s estimate and lam beside that interval."""
    n_cases = 1600
    ids = [f"c{i}" for i in range(n_cases)]
    gen = np.random.default_rng(1)
    y = np.clip(np.round(gen.normal(4.3, 0.9, n_cases)), 1, 5)
    judge_scores = pd.Series(y + gen.normal(0, 1.2, n_cases), index=ids)
    segment = pd.Series(np.arange(n_cases) % 6, index=ids, name="system")
    picks = gen.choice(n_cases, 180, replace=False)
    labels = pd.Series(y[picks], index=[ids[i] for i in picks])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = infer.mean(judge_scores, labels, by=segment, bounds=(1, 5), method=["ppi++", "classical"],
                           interval="betting")
    ppi = table[table["method"] == "ppi++"].set_index("system")
    classical = table[table["method"] == "classical"].set_index("system")
    same = np.isclose(ppi["ci_low"], classical["ci_low"], atol=1e-9) & np.isclose(ppi["ci_high"], classical["ci_high"],
                                                                                    atol=1e-9)
    assert same.any()
    assert (ppi.loc[same, "lam"] == 0).all() and (ppi.loc[same, "estimate"] == classical.loc[same, "estimate"]).all()
    assert ppi.loc[same, "note"].str.startswith("the judge did not narrow").all()
