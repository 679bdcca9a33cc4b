import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, _stats, calibrate, compare, datasets

Z95 = stats.norm.ppf(0.975)


def wilson(k, n, z=Z95):
    """Wilson score interval, by hand (Wilson 1927)."""
    p = k / n
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z / (1 + z**2 / n) * math.sqrt(p * (1 - p) / n + z**2 / (4 * n**2))
    return centre - half, centre + half


@pytest.fixture
def labelled(rng):
    n = 200
    human = pd.Series(np.where(rng.random(n) < 0.3, "FAIL", "PASS"), index=[f"c{i}" for i in range(n)])
    flip = rng.random(n) < np.where(human == "FAIL", 0.25, 0.1)
    judge = human.where(~flip, human.map({"PASS": "FAIL", "FAIL": "PASS"}))
    return judge, human


def test_calibrate_against_hand_counts(labelled):
    judge, human = labelled
    report = calibrate.calibrate(judge, human)
    tp = int(((judge == "FAIL") & (human == "FAIL")).sum())
    fn = int(((judge == "PASS") & (human == "FAIL")).sum())
    fp = int(((judge == "FAIL") & (human == "PASS")).sum())
    tn = int(((judge == "PASS") & (human == "PASS")).sum())
    n = tp + fn + fp + tn
    assert (report.caught, report.human_fails, report.judge_fails, report.n) == (tp, tp + fn, tp + fp, n)
    assert report.agreement == pytest.approx((tp + tn) / n)
    assert report.fail_recall == pytest.approx(tp / (tp + fn))
    assert report.false_flag_rate == pytest.approx(fp / (fp + tn))
    assert report.precision == pytest.approx(tp / (tp + fp))
    assert report.base_rate_agreement == pytest.approx((fp + tn) / n)
    po, pe = (tp + tn) / n, ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / n**2
    assert report.kappa == pytest.approx((po - pe) / (1 - pe))
    with_wilson = calibrate.calibrate(judge, human, interval="wilson")
    for metric, (k, d) in {"agreement": (tp + tn, n), "fail_recall": (tp, tp + fn), "false_flag_rate": (fp, fp + tn),
                           "precision": (tp, tp + fp)}.items():
        exact = stats.binomtest(k, d).proportion_ci(confidence_level=0.95, method="exact")
        assert report.table.loc[metric, "ci_low"] == pytest.approx(exact.low, abs=1e-12)
        assert report.table.loc[metric, "ci_high"] == pytest.approx(exact.high, abs=1e-12)
        assert report.table.loc[metric, "interval"] == "clopper-pearson"
        low, high = wilson(k, d)
        assert with_wilson.table.loc[metric, "ci_low"] == pytest.approx(low, abs=1e-12)
        assert with_wilson.table.loc[metric, "ci_high"] == pytest.approx(high, abs=1e-12)
    assert f"caught {tp} of {tp + fn}" in repr(report)
    assert report.confusion.loc["FAIL", "FAIL"] == tp and report.confusion.loc["PASS", "FAIL"] == fp
    assert "<table" in report._repr_html_()


def test_calibrate_accepts_booleans_results_tables_and_aligns(labelled):
    judge, human = labelled
    as_bool = human == "PASS"
    shuffled = as_bool.sample(frac=1, random_state=0)
    results = pd.DataFrame({"case_id": judge.index, "verdict": judge.to_numpy(), "rubric": "r", "model": "m"})
    a = calibrate.calibrate(judge, human)
    b = calibrate.calibrate(results, shuffled)
    assert (a.caught, a.n, a.kappa) == (b.caught, b.n, b.kappa)


def test_calibrate_excludes_errors_and_subsets():
    judge = pd.Series(["PASS", None, "FAIL", "PASS"], index=list("abcd"))
    human = pd.Series(["PASS", "FAIL", "FAIL"], index=list("abc"))
    with pytest.warns(EvalkitWarning, match=r"1 labelled case\(s\) have no judge verdict .*\['b'\]") as caught:
        report = calibrate.calibrate(judge, human)
    assert report.n == 2 and report.n_excluded == 1
    assert caught[0].filename == __file__  # the warning points at the line above, not inside evalkit


def test_calibrate_says_how_many_labels_matched_no_result():
    """10 of 50 label ids match no result: n = 40, with a warning naming the count and the first ids (not quietly)."""
    ids = [f"case-{i:03d}" for i in range(50)]
    results = pd.DataFrame({"case_id": ids[:40] + [f"other-{i}" for i in range(20)], "verdict": ["PASS", "FAIL"] * 30})
    human = pd.Series(["PASS", "FAIL"] * 25, index=ids)
    with pytest.warns(EvalkitWarning, match=r"matched 40 case\(s\) by id; 10 of `human`'s 50 ids match nothing in "
                                            r"`judge` \(e.g. \['case-040', 'case-041', 'case-042'\]\)") as caught:
        report = calibrate.calibrate(results, human)
    assert report.n == 40 and caught[0].filename == __file__
    with pytest.raises(ValueError, match="share no case id"):
        calibrate.calibrate(results, pd.Series(["PASS"], index=["nowhere"]))


def test_calibrate_without_human_fail_is_a_message_not_a_crash():
    with pytest.warns(EvalkitWarning, match="no FAIL"):
        report = calibrate.calibrate(pd.Series(["PASS", "FAIL"]), pd.Series(["PASS", "PASS"]))
    assert np.isnan(report.fail_recall) and "cannot be measured" in report.message
    assert "cannot be measured" in repr(report)


@pytest.mark.parametrize(
    "judge, human, error, message",
    [
        (pd.Series(["PASS"], index=["a"]), pd.Series(["maybe"], index=["a"]), ValueError, "case 'a' is 'maybe'"),
        (pd.Series(["PASS"], index=["a"]), pd.Series(["PASS"], index=["b"]), ValueError, "share no case id"),
        (pd.Series(["PASS"], index=["a"]), ["PASS"], TypeError, "Series of PASS/FAIL"),
        (["PASS"], pd.Series(["PASS"]), TypeError, "results DataFrame or a Series"),
        (pd.DataFrame({"case_id": ["a", "a"], "verdict": ["PASS", "FAIL"], "rubric_version": ["v1", "v2"]}),
         pd.Series(["PASS"], index=["a"]), ValueError, "several rubrics"),
    ],
)
def test_calibrate_bad_input(judge, human, error, message):
    with pytest.raises(error, match=message):
        calibrate.calibrate(judge, human)


def test_cohen_kappa_reference():
    # Hand computation: po = 0.7, pe = 0.5*0.6 + 0.5*0.4 = 0.5 -> kappa = 0.4.
    a = ["y"] * 5 + ["n"] * 5
    b = ["y"] * 4 + ["n"] + ["y"] * 2 + ["n"] * 3
    assert _stats.cohen_kappa(a, b) == pytest.approx(0.4)
    assert _stats.cohen_kappa(["x", "x"], ["x", "x"]) == 1.0
    with pytest.raises(ValueError):
        _stats.cohen_kappa(["x"], ["x", "y"])
    assert not hasattr(calibrate, "cohen_kappa")  # one public Cohen's kappa: agreement.cohen_kappa


def test_disagreements_lists_both_labels_and_the_reasoning():
    results = pd.DataFrame({"case_id": ["a", "b", "c"], "verdict": ["PASS", "FAIL", "FAIL"], "parsed": [True, True, False],
                            "reason": ["fine", "bad", ""], "raw": ["PASS\nfine", "FAIL\nbad", "PASS."]})
    cases = pd.DataFrame({"case_id": ["a", "b", "c"], "output": ["<b>x</b>", "y", "z"]})
    out = calibrate.disagreements(results, pd.Series({"a": "FAIL", "b": "FAIL", "c": "PASS"}), cases=cases)
    assert out["case_id"].tolist() == ["a", "c"]
    assert out.columns.tolist() == ["case_id", "human", "judge", "parsed", "reason", "raw", "output"]
    assert out.loc[0, "output"] == "<b>x</b>"


def test_corrected_pass_rate_rogan_gladen(labelled, rng):
    judge, human = labelled
    report = calibrate.calibrate(judge, human)
    run = pd.Series(np.where(rng.random(500) < 0.62, "PASS", "FAIL"))
    row = calibrate.corrected_pass_rate(run, report, rng=0).iloc[0]
    se = 1 - report.false_flag_rate
    sp = report.fail_recall
    observed = (run == "PASS").mean()
    assert row["estimate"] == pytest.approx((observed + sp - 1) / (se + sp - 1))
    assert row["ci_low"] < row["estimate"] < row["ci_high"]
    # Calibration uncertainty widens the interval beyond the run's own binomial interval.
    low, high = wilson(int((run == "PASS").sum()), 500)
    assert row["ci_high"] - row["ci_low"] > high - low


def test_corrected_pass_rate_warns_on_a_chance_judge():
    human = pd.Series(["PASS", "PASS", "FAIL", "FAIL"])
    judge = pd.Series(["PASS", "FAIL", "PASS", "FAIL"])
    with pytest.warns(EvalkitWarning, match="no better than chance"):
        row = calibrate.corrected_pass_rate(pd.Series(["PASS"]), calibrate.calibrate(judge, human)).iloc[0]
    assert np.isnan(row["estimate"]) and np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])
    assert (row["fail_recall"], row["false_flag_rate"]) == (0.5, 0.5)
    assert "sensitivity" not in row.index  # one name per quantity: calibrate's, FAIL the positive class
    with pytest.raises(TypeError, match="CalibrationReport"):
        calibrate.corrected_pass_rate(pd.Series(["PASS"]), {"agreement": 1})


def test_agreement_drift_by_position_and_session():
    labels = pd.DataFrame({"case_id": [f"c{i}" for i in range(40)], "label": ["PASS"] * 40, "position": range(40),
                           "session": ["s1"] * 20 + ["s2"] * 20})
    judge = pd.Series(["PASS"] * 20 + ["PASS", "FAIL"] * 10, index=labels["case_id"])
    by_pos = calibrate.agreement_drift(judge, labels, bins=4)
    assert by_pos["agreement"].tolist() == [1.0, 1.0, 0.5, 0.5] and by_pos["n"].tolist() == [10] * 4
    assert by_pos.attrs["p_trend"] < 0.01
    by_session = calibrate.agreement_drift(judge, labels, by="session")
    assert by_session["session"].tolist() == ["s1", "s2"] and by_session["agreement"].tolist() == [1.0, 0.5]


def test_paired_mcnemar_exact_and_flips():
    a = pd.Series(["PASS"] * 30 + ["FAIL"] * 10, index=range(40))
    b = a.copy()
    b.iloc[:7] = "FAIL"  # 7 PASS -> FAIL
    b.iloc[30:31] = "PASS"  # 1 FAIL -> PASS
    res = compare.paired(a, b)
    assert res.table.loc["PASS", "FAIL"] == 7 and res.table.loc["FAIL", "PASS"] == 1
    assert res.p_val == pytest.approx(2 * sum(math.comb(8, k) for k in range(0, 2)) / 2**8)
    assert len(res.flips) == 8 and set(res.flips.columns) == {"case_id", "a", "b"}
    assert res.rate_a == 0.75 and res.rate_b == pytest.approx(24 / 40)
    assert "McNemar" in repr(res)


def test_paired_results_tables_keep_reasons():
    a = pd.DataFrame({"case_id": ["x", "y"], "verdict": ["PASS", "FAIL"], "reason": ["ok", "bad"]})
    b = pd.DataFrame({"case_id": ["y", "x"], "verdict": ["FAIL", "FAIL"], "reason": ["bad", "now bad"]})
    res = compare.paired(a, b)
    assert res.flips.to_dict("records") == [{"case_id": "x", "a": "PASS", "b": "FAIL", "reason_a": "ok", "reason_b": "now bad"}]
    with pytest.raises(ValueError, match="share no case"):
        compare.paired(a, b.assign(case_id=["p", "q"]))


def test_demo_judge_end_to_end():
    from evalkit import judge, models

    demo = datasets.load_demo("judge")
    cases, labels, outputs = demo["cases"], demo["labels"], demo["outputs"]
    runs = {}
    for version in ("v1", "v2"):
        recorded = outputs[outputs["rubric"] == version].set_index("case_id")["raw"]
        replay = models.Replay({judge.UNSUPPORTED_CLAIMS.render(r): recorded[r["case_id"]] for r in cases.to_dict("records")},
                               model_id=f"demo-judge-{version}")
        runs[version] = judge.run_judge(cases, judge.UNSUPPORTED_CLAIMS, replay, progress=False)
    human = labels.set_index("case_id")["label"]
    r1, r2 = calibrate.calibrate(runs["v1"], human), calibrate.calibrate(runs["v2"], human)
    assert r2.fail_recall > r1.fail_recall
    assert (~runs["v1"]["parsed"]).sum() > 0
    assert compare.paired(runs["v1"], runs["v2"]).n == 100


def test_corrected_pass_rate_outside_unit_interval_is_not_clipped():
    # An all-PASS run of 20, a judge that passes 8 of 15 human PASS and fails 3 of 5 human FAIL on 20 labels. Those 20
    # labels cannot rule out a judge no better than chance, so no interval can hold: NaN, with a warning and a note.
    human = pd.Series(["PASS"] * 15 + ["FAIL"] * 5, index=range(20))
    judge = pd.Series(["PASS"] * 8 + ["FAIL"] * 7 + ["FAIL"] * 3 + ["PASS"] * 2, index=range(20))
    report = calibrate.calibrate(judge, human)
    with pytest.warns(EvalkitWarning) as caught:
        row = calibrate.corrected_pass_rate(pd.Series(["PASS"] * 20), report).iloc[0]
    messages = " ".join(str(w.message) for w in caught)
    assert "outside [0, 1]" in messages and "reported unclipped" in messages and "no interval" in messages
    assert row["false_flag_rate"] == pytest.approx(7 / 15) and row["fail_recall"] == pytest.approx(3 / 5)
    assert (row["fail_recall"], row["false_flag_rate"]) == pytest.approx((report.fail_recall, report.false_flag_rate))
    assert row["estimate"] == pytest.approx((1 + 3 / 5 - 1) / (8 / 15 + 3 / 5 - 1))  # 4.5, not 1.0
    assert np.isnan(row["ci_low"]) and np.isnan(row["ci_high"]) and "no better than chance" in row["note"]
    # 200 labels pin the judge's rates down: an estimate above 1 (an all-PASS run) still gets its interval
    human = pd.Series(["PASS"] * 150 + ["FAIL"] * 50, index=range(200))
    judge = pd.Series(["PASS"] * 135 + ["FAIL"] * 15 + ["FAIL"] * 40 + ["PASS"] * 10, index=range(200))
    with pytest.warns(EvalkitWarning, match="outside \\[0, 1\\].*reported unclipped"):
        row = calibrate.corrected_pass_rate(pd.Series(["PASS"] * 60), calibrate.calibrate(judge, human)).iloc[0]
    assert row["estimate"] == pytest.approx((1 + 0.8 - 1) / (0.9 + 0.8 - 1))
    assert row["ci_low_unclipped"] < row["estimate"] < row["ci_high_unclipped"]  # no zero-width interval
    # the interval a rate can take: the unclipped one clipped to [0, 1]
    assert (row["ci_low"], row["ci_high"]) == (min(max(row["ci_low_unclipped"], 0), 1), min(max(row["ci_high_unclipped"], 0), 1))
    assert 0 <= row["ci_low"] <= row["ci_high"] <= 1 and row["interval"] == "cp-fiducial"


def test_adjust_p_values_equals_statsmodels_and_checks_its_input():
    multipletests = pytest.importorskip("statsmodels.stats.multitest", reason="the reference is statsmodels, from "
                                        "the 'stats' extra").multipletests

    tests = pd.DataFrame({"name": list("abcdef"), "p_val": [0.001, 0.2, 0.04, np.nan, 0.03, 0.5]})
    for ours, theirs in (("holm", "holm"), ("bonferroni", "bonferroni"), ("bh", "fdr_bh"), ("by", "fdr_by")):
        with pytest.warns(EvalkitWarning, match="1 of the 6 p-values in column 'p_val' are NaN.*family of 5"):
            out = compare.adjust_p_values(tests, method=ours)
        assert out["p_val"].equals(tests["p_val"]) and (out["adjust"] == ours).all() and "p_adjusted" not in tests
        ok = tests["p_val"].notna()
        np.testing.assert_allclose(out.loc[ok, "p_adjusted"], multipletests(tests.loc[ok, "p_val"], method=theirs)[1],
                                   rtol=0, atol=1e-15)
        assert np.isnan(out.loc[~ok, "p_adjusted"]).all()
    renamed = compare.adjust_p_values(tests.dropna().rename(columns={"p_val": "McNemar p"}), column="McNemar p")
    assert renamed["p_adjusted"].tolist()[:3] == pytest.approx([0.005, 0.4, 0.12])
    with pytest.raises(ValueError, match="`method` must be one of"):
        compare.adjust_p_values(tests, method="sidak")
    with pytest.raises(KeyError, match=r"missing column\(s\) \['pvalue'\]"):
        compare.adjust_p_values(tests, column="pvalue")
    with pytest.raises(ValueError, match="p-values in \\[0, 1\\].*1.5"):
        compare.adjust_p_values(tests.assign(p_val=[0.1, 1.5, 0.2, 0.3, 0.4, 0.5]))
    with pytest.raises(ValueError, match="p-values in \\[0, 1\\].*'small'"):
        compare.adjust_p_values(tests.assign(p_val=["small"] * 6))
    with pytest.raises(TypeError, match="`table` must be a pandas DataFrame"):
        compare.adjust_p_values([0.1, 0.2])


@pytest.mark.slow  # a simulation of many label draws: the slow tier
def test_cp_fiducial_is_clopper_pearson_for_one_rate_and_holds_for_rogan_gladen():
    """With one rate the fiducial interval is Clopper-Pearson's; for the corrected rate its coverage, over 400
    calibrations of 60 labels and runs of 200, stays at the level where the percentile bootstrap fell short."""
    from evalkit._stats import clopper_pearson, cp_fiducial_interval

    for k, n in ((0, 20), (7, 20), (45, 50)):
        low, high, _, _ = cp_fiducial_interval(lambda p: p, [(k, n)], [+1], 0.95, n_draws=2**16 - 1)
        np.testing.assert_allclose([low, high], clopper_pearson(k, n, 0.95), atol=2e-4)
    rng = np.random.default_rng(11)
    hits, shown = 0, 0
    for _ in range(400):
        human = rng.random(60) < 0.85
        judge = np.where(human, rng.random(60) < 0.93, rng.random(60) >= 0.8)
        truth = rng.random(200) < 0.85
        run = np.where(truth, rng.random(200) < 0.93, rng.random(200) >= 0.8)
        if human.all():
            continue
        report = calibrate.calibrate(pd.Series(np.where(judge, "PASS", "FAIL")), pd.Series(np.where(human, "PASS", "FAIL")))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row = calibrate.corrected_pass_rate(pd.Series(np.where(run, "PASS", "FAIL")), report, n_resamples=1000).iloc[0]
        if np.isnan(row["ci_low"]):
            continue
        shown += 1
        hits += row["ci_low"] <= 0.85 <= row["ci_high"]
    assert shown > 300 and hits / shown >= 0.95


def test_kappa_interval_by_the_rates_and_clusters():
    """Kappa from (pass rate, sensitivity, specificity) is Cohen's kappa; its interval holds the estimate, is named,
    and is missing (with a note) without both human labels; with clusters and interval='t' every rate gets the
    cluster-robust t."""
    from evalkit._stats import kappa_from_rates as _kappa_from_rates

    rng = np.random.default_rng(3)
    human = pd.Series(np.where(rng.random(120) < 0.85, "PASS", "FAIL"))
    judge = pd.Series(np.where((human == "PASS") == (rng.random(120) < 0.9), "PASS", "FAIL"))
    report = calibrate.calibrate(judge, human)
    h, j = (human == "PASS").to_numpy(), (judge == "PASS").to_numpy()
    assert float(_kappa_from_rates(h.mean(), j[h].mean(), (~j[~h]).mean())) == pytest.approx(report.kappa, abs=1e-12)
    row = report.table.loc["kappa"]
    assert row["interval"] == "cp-fiducial" and row["ci_low"] < report.kappa < row["ci_high"]
    with pytest.warns(EvalkitWarning, match="no FAIL"):
        one_sided = calibrate.calibrate(judge[h], human[h]).table.loc["kappa"]
    assert np.isnan(one_sided["ci_low"]) and "needs both" in one_sided["note"]
    human = pd.Series(np.where(rng.random(600) < 0.7, "PASS", "FAIL"))
    judge = pd.Series(np.where((human == "PASS") == (rng.random(600) < 0.9), "PASS", "FAIL"))
    h, j = (human == "PASS").to_numpy(), (judge == "PASS").to_numpy()
    groups = pd.Series(np.arange(600) // 2)
    clustered = calibrate.calibrate(judge, human, cluster=groups, interval="t").table
    assert (clustered["interval"] == "cluster-t").all() and clustered.loc["agreement", "n_clusters"] == 300
    sm = pytest.importorskip("statsmodels.api", reason="the reference needs statsmodels (the 'test' extra)")
    for metric, hit, among in (("agreement", h == j, np.ones(600, bool)), ("fail_recall", ~j, ~h)):
        fit = sm.OLS(hit[among].astype(float), np.ones(among.sum())).fit(
            cov_type="cluster", cov_kwds={"groups": groups.to_numpy()[among]}, use_t=True)
        np.testing.assert_allclose(clustered.loc[metric, ["ci_low", "ci_high"]].to_numpy(dtype=float),
                                   np.clip(fit.conf_int(0.05)[0], 0, 1), atol=1e-10)
    with pytest.warns(EvalkitWarning, match="fewer than 50 clusters"):
        few = calibrate.calibrate(judge, human, cluster=pd.Series(np.arange(600) // 50), interval="t").table
    assert few["ci_low"].isna().all() and few["note"].str.contains("clusters < 50").all()
    with pytest.raises(ValueError, match="no cluster for"):
        calibrate.calibrate(judge, human, cluster=groups.iloc[:500])
    with pytest.raises(TypeError, match="names a column"):
        calibrate.calibrate(judge, human, cluster="sample_id")


def test_clustered_rates_default_to_the_betting_interval_over_whole_clusters():
    """With clusters the rates' default is the betting interval over whole clusters: with every case its own
    cluster, the unclustered betting interval of the hits (in the same fixed order); at 12 clusters, where the
    cluster-robust t is refused, an interval all the same; Wilson (independent cases) is refused with clusters."""
    from evalkit._stats import betting_interval

    rng = np.random.default_rng(5)
    human = pd.Series(np.where(rng.random(200) < 0.8, "PASS", "FAIL"), index=[f"k{i:03d}" for i in range(200)])
    judge = pd.Series(np.where((human == "PASS") == (rng.random(200) < 0.85), "PASS", "FAIL"), index=human.index)
    table = calibrate.calibrate(judge, human, cluster=pd.Series(np.arange(200), index=human.index)).table
    h, j = (human == "PASS").to_numpy(), (judge == "PASS").to_numpy()
    for metric, hit, among in (("agreement", h == j, np.ones(200, bool)), ("fail_recall", ~j, ~h),
                               ("false_flag_rate", ~j, h)):
        x = hit[among].astype(float)
        order = np.random.default_rng(len(x)).permutation(len(x))
        expected = betting_interval(x[order], 0.0, 1.0, confidence_level=0.95, theta_range=(0, 1))
        np.testing.assert_allclose(table.loc[metric, ["ci_low", "ci_high"]].to_numpy(dtype=float),
                                   np.array(expected, dtype=float), rtol=0, atol=1e-9)
    assert (table.loc[["agreement", "fail_recall"], "interval"] == "cluster-betting").all()
    with pytest.warns(EvalkitWarning, match=r"fewer than 50 clusters for \['kappa'\]"):  # kappa's is large-sample
        few = calibrate.calibrate(judge, human, cluster=pd.Series(np.arange(200) // 17, index=human.index)).table
    row = few.loc["agreement"]
    assert row["n_clusters"] == 12 and row["ci_low"] < row["estimate"] < row["ci_high"] and row["note"] == ""
    with pytest.warns(EvalkitWarning, match="kappa"):
        reordered = calibrate.calibrate(judge.iloc[::-1], human.iloc[::-1],
                                        cluster=pd.Series(np.arange(200) // 17, index=human.index)).table
    assert reordered.loc["agreement", "ci_low"] == row["ci_low"]
    with pytest.raises(ValueError, match="interval='wilson'"):
        calibrate.calibrate(judge, human, cluster=pd.Series(np.arange(200), index=human.index), interval="wilson")
    with pytest.raises(ValueError, match="interval='t'"):
        calibrate.calibrate(judge, human, interval="t")


def test_kappa_cluster_variance_is_fleiss_cohen_everitt_with_singleton_clusters():
    """With every case its own cluster, kappa's cluster-robust delta-method variance is the large-sample variance of
    Fleiss, Cohen & Everitt (1969), as statsmodels' cohens_kappa computes it, times the sandwich's n / (n - 1)."""
    inter_rater = pytest.importorskip("statsmodels.stats.inter_rater", reason="the reference needs statsmodels")
    from evalkit._stats import kappa_cluster_interval as _kappa_cluster

    rng = np.random.default_rng(3)
    h = rng.random(300) < 0.8
    j = np.where(h, rng.random(300) < 0.9, rng.random(300) > 0.7)
    reference = inter_rater.cohens_kappa(pd.crosstab(h, j).to_numpy())
    kappa = _stats.cohen_kappa(h, j)
    row = _kappa_cluster(~h, ~j, np.arange(300), kappa, 0.95)
    se = (row["ci_high"] - kappa) / stats.t.ppf(0.975, 299)
    assert kappa == pytest.approx(reference.kappa, abs=1e-14)
    assert se**2 * 299 / 300 == pytest.approx(reference.var_kappa, rel=1e-10)
