import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from evalkit import correlate, datasets, plots, tcva


@pytest.fixture
def corr_table():
    demo = datasets.load_demo("tcva")
    verdicts, items = demo["verdicts"], demo["items"]
    return correlate.correlate(tcva.sweep(verdicts, [0.9, 0.1, 0.5], items=items), items["human"], rng=0, n_resamples=200)


def test_temperature_sweep_draws_curve_band_and_baselines(corr_table):
    fig, ax = plt.subplots()
    out = plots.temperature_sweep(corr_table, baselines={"RAGAS": 0.4, "DeepEval": 0.3}, ax=ax)
    assert out is ax
    curve = ax.lines[0]
    np.testing.assert_allclose(curve.get_xdata(), [0.1, 0.5, 0.9])  # sorted by temperature
    np.testing.assert_allclose(curve.get_ydata(), corr_table.sort_index()["r"])
    assert [line.get_label() for line in ax.lines[1:]] == ["RAGAS", "DeepEval"]
    assert ax.lines[1].get_ydata()[0] == 0.4
    band = ax.collections[0].get_paths()[0].vertices
    assert band[:, 1].min() == pytest.approx(corr_table["ci_low"].min())
    assert band[:, 1].max() == pytest.approx(corr_table["ci_high"].max())
    assert any("p(T)" in child.get_xlabel() for child in ax.child_axes)


def test_temperature_sweep_uses_current_axes_and_skips_missing_ci(corr_table):
    table = corr_table.assign(ci_low=np.nan, ci_high=np.nan)
    plt.figure()
    ax = plots.temperature_sweep(table, show_p=False)
    assert ax is plt.gca()
    assert len(ax.collections) == 0 and not ax.child_axes


def test_temperature_sweep_bad_input():
    with pytest.raises(KeyError, match=r"missing column\(s\) \['r'\]"):
        plots.temperature_sweep(pd.DataFrame({"rho": [0.1]}))


def test_verdict_distribution_shares_sum_to_one():
    demo = datasets.load_demo("tcva")
    verdicts = demo["verdicts"]
    verdicts = verdicts.assign(system=verdicts["item_id"].str.split("-").str[1])
    ax = plots.verdict_distribution(verdicts, by="system")
    n_groups = verdicts["system"].nunique()
    assert len(ax.patches) == 5 * n_groups
    widths = np.array([p.get_width() for p in ax.patches]).reshape(5, n_groups)
    np.testing.assert_allclose(widths.sum(axis=0), 1.0)
    expected = (verdicts["verdict"] == "fully").groupby(verdicts["system"]).mean().sort_index()
    np.testing.assert_allclose(widths[4], expected.to_numpy())
    with pytest.raises(KeyError, match="missing column"):
        plots.verdict_distribution(verdicts, by="model")


def test_confusion_and_calibration_rates():
    from evalkit import calibrate

    judge = pd.Series(["FAIL", "FAIL", "PASS", "PASS", "PASS"], index=list("abcde"))
    human = pd.Series(["FAIL", "PASS", "FAIL", "PASS", "PASS"], index=list("abcde"))
    report = calibrate.calibrate(judge, human)
    fig, axes = plt.subplots(1, 2)
    ax = plots.confusion(report, ax=axes[0])
    assert [t.get_text() for t in ax.texts] == ["1", "1", "1", "2"]  # FF, FP / PF, PP
    assert ax.get_title() == "caught 1 of 2 human FAILs"
    ax2 = plots.calibration_rates(report, ax=axes[1])
    labels = [t.get_text() for t in ax2.get_yticklabels()]
    assert labels == list(report.table.index)
    line = ax2.lines[0]
    np.testing.assert_allclose(line.get_xdata(), report.table["estimate"])


def test_density_plots():
    from evalkit import density

    corpus = datasets.load_demo("fd")
    table = density.fd_star(corpus["claims"], corpus["documents"])
    fig, axes = plt.subplots(1, 2)
    ax = plots.length_bias(table, ax=axes[0])
    assert len(ax.collections) == 3
    assert sum(len(c.get_offsets()) for c in ax.collections) == len(table)
    assert "Spearman rho = -0.60" in ax.get_title()  # scipy.stats.spearmanr of n_tokens and fd_raw
    ax = plots.fd_by_bin(table, ax=axes[1])
    assert len([p for p in ax.patches]) == 9  # 3 bins x 3 tiers
    assert [t.get_text() for t in ax.get_legend().get_texts()] == sorted(table["source"].unique())


def test_tier_share_stacks_means():
    metrics = pd.DataFrame({"condition": ["a", "a", "b"], "share_x": [0.2, 0.4, 1.0], "share_y": [0.8, 0.6, 0.0]})
    fig, ax = plt.subplots()
    plots.tier_share(metrics, ax=ax)
    widths = [p.get_width() for p in ax.patches]
    np.testing.assert_allclose(widths, [0.3, 1.0, 0.7, 0.0])
    with pytest.raises(KeyError, match="share_<tier>"):
        plots.tier_share(metrics.drop(columns=["share_x", "share_y"]))


def legend_clear_of_data(ax):
    """The legend's box lies above or below the Axes' box, so it covers no point, interval or whisker."""
    ax.figure.canvas.draw()
    legend, box = ax.get_legend().get_window_extent(), ax.get_window_extent()
    return legend.y0 >= box.y1 - 1e-6 or legend.y1 <= box.y0 + 1e-6


def test_legends_stay_off_the_data():
    from evalkit import calibrate, density

    judge = pd.Series(["PASS"] * 6 + ["FAIL"] * 4, index=range(10))
    human = pd.Series(["PASS"] * 5 + ["FAIL"] * 5, index=range(10))
    fig, ax = plt.subplots()
    assert legend_clear_of_data(plots.calibration_rates(calibrate.calibrate(judge, human), ax=ax))
    corpus = datasets.load_demo("fd")
    fig, ax = plt.subplots()
    assert legend_clear_of_data(plots.fd_by_bin(density.fd_star(corpus["claims"], corpus["documents"]), ax=ax))


def test_labels_from_the_data_are_shown_as_written():
    from evalkit import density

    corpus = datasets.load_demo("fd")
    documents = corpus["documents"].replace({"source": {"trial": r"$\frac$ trial"}})
    table = density.fd_star(corpus["claims"], documents)
    fig, axes = plt.subplots(1, 3)
    plots.fd_by_bin(table, ax=axes[0])
    plots.length_bias(table, ax=axes[1])
    metrics = pd.DataFrame({"condition": ["$x$"], "share_$a$": [1.0]})
    plots.tier_share(metrics, ax=axes[2])
    fig.canvas.draw()  # mathtext would fail here on an unfinished \frac
    labels = [t.get_text() for t in axes[0].get_legend().get_texts()]
    assert r"\$\frac\$ trial" in labels
    assert [t.get_text() for t in axes[2].get_yticklabels()] == [r"\$x\$"]


def test_length_bias_and_sweep_legends_sit_beside_the_axes(corr_table):
    from evalkit import density

    corpus = datasets.load_demo("fd")
    fig, axes = plt.subplots(1, 2)
    for ax in (plots.length_bias(density.fd_star(corpus["claims"], corpus["documents"]), ax=axes[0]),
               plots.temperature_sweep(corr_table, ax=axes[1])):
        fig.canvas.draw()
        assert ax.get_legend().get_window_extent().x0 >= ax.get_window_extent().x1 - 1e-6


def test_pairwise_plots_draw_what_the_tables_hold():
    from evalkit import datasets, pairwise

    votes = datasets.load_demo("pairwise")["comparisons"]
    table = pairwise.bradley_terry(votes)
    fig, ax = plt.subplots()
    assert plots.ratings(table, ax=ax) is ax
    bars = ax.containers[0]
    x = bars.lines[0].get_xdata()
    np.testing.assert_allclose(sorted(x), sorted(table["rating"]))
    segments = bars.lines[2][0].get_segments()
    np.testing.assert_allclose(sorted(seg[0][0] for seg in segments), sorted(table["ci_low"]))
    assert [t.get_text() for t in ax.get_yticklabels()] == table["system"].tolist()  # best at the top
    assert "95% robust (sandwich) interval" in ax.get_xlabel() and ax.get_title() == "Bradley-Terry ratings of 6 systems"
    clustered = pairwise.bradley_terry(votes, cluster="question_id")
    fig, ax = plt.subplots()
    plots.ratings(clustered, ax=ax)  # the sandwich with clusters is the cluster-robust interval, and says so
    assert "95% cluster-robust (sandwich) interval, clusters: question_id" in ax.get_xlabel()
    assert ax.containers[0].get_label() == "95% cluster-robust (sandwich) interval, clusters: question_id"
    judge_votes = datasets.load_demo("pairwise")["judge"]
    few = votes.sample(300, random_state=0)
    for method, name in (("ppr", "PPR (human votes + judge)"), ("human", "human votes only"), ("judge", "judge only")):
        sets = pairwise.rank_sets(judge_votes, few, method=method)
        fig, ax = plt.subplots()
        plots.rank_sets(sets, ax=ax)
        drawn = [tuple(seg[:, 0]) for seg in ax.collections[0].get_segments()]
        assert drawn == list(zip(sets["rank_low"].astype(float), sets["rank_high"].astype(float), strict=True))
        assert ax.get_title() == f"rank-sets: {name}" and ax.collections[0].get_label() == f"rank-sets: {name}"
        assert f"95% simultaneous, {sets.attrs['sets']} sets" in ax.get_xlabel()
    fig, ax = plt.subplots()
    matrix = pairwise.win_rates(votes)
    plots.win_rates(matrix, ax=ax)
    np.testing.assert_allclose(ax.images[0].get_array().filled(np.nan), matrix.to_numpy(), equal_nan=True)
    assert len(ax.texts) == int(matrix.notna().to_numpy().sum())
    with pytest.raises(ValueError, match="must be square"):
        plots.win_rates(matrix.iloc[:, :3])
    with pytest.raises(KeyError, match=r"missing column\(s\) \['rank_low', 'rank_high'\]"):
        plots.rank_sets(table)
    with pytest.raises(TypeError, match="`table` must be a pandas DataFrame"):
        plots.ratings("ratings.csv")


def test_human_ceiling_puts_each_score_on_the_row_of_the_reference_it_was_scored_against(rng):
    from evalkit import agreement

    truth = pd.Series(rng.normal(size=60), index=[f"i{k}" for k in range(60)])
    ratings = pd.DataFrame([(i, a, t + rng.normal()) for i, t in truth.items() for a in "abc"],
                           columns=["item_id", "annotator", "rating"])
    scores = pd.DataFrame({"good": truth + 0.3 * rng.normal(size=60), "noise": rng.normal(size=60)}, index=truth.index)
    table = agreement.human_ceiling(scores, ratings, n_resamples=50, rng=0)
    ax = plots.human_ceiling(table)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["a left out", "b left out", "c left out"]
    points = {c.get_label(): c.lines[0].get_data() for c in ax.containers}
    assert set(points) == {"annotators (with the others' mean)", "good", "noise"}
    for label, name in (("annotators (with the others' mean)", None), ("good", "good"), ("noise", "noise")):
        rows = table[table["kind"] == "annotator"] if name is None else table[table["name"] == name]
        np.testing.assert_allclose(points[label][0], rows["r"])  # x: the correlations, row by row
        assert np.all(np.abs(points[label][1] - np.array([2, 1, 0])) < 0.5)  # y: the row of its held-out annotator
    means = {line.get_label(): line.get_xdata()[0] for line in ax.lines if line.get_linestyle() == "--"}
    ceiling = table.loc[table["kind"] == "annotator", "r"].mean()
    assert means[f"human ceiling (mean) {ceiling:.2f}"] == pytest.approx(ceiling)
    good = table.loc[table["name"] == "good", "r"].mean()
    assert means[f"good mean {good:.2f}"] == pytest.approx(good)
    assert "percentile bootstrap" in ax.get_xlabel() and "same leave-one-out references" in ax.get_title()


def test_calibration_rates_draws_the_always_pass_reference_on_the_agreement_row_only():
    from evalkit import calibrate

    ids = [f"c{i}" for i in range(40)]
    human = pd.Series(["PASS"] * 28 + ["FAIL"] * 12, index=ids)
    judge = human.copy()
    judge.iloc[[0, 1, 30, 31, 32]] = ["FAIL", "FAIL", "PASS", "PASS", "PASS"]
    report = calibrate.calibrate(judge, human)
    fig, ax = plt.subplots()
    plots.calibration_rates(report, ax=ax)
    rows = {t.get_text(): y for t, y in zip(ax.get_yticklabels(), ax.get_yticks(), strict=True)}
    (segment,) = ax.collections[-1].get_segments()
    assert segment[0, 0] == segment[1, 0] == pytest.approx(report.base_rate_agreement)
    low, high = sorted(segment[:, 1])
    assert rows["agreement"] - 0.5 < low < rows["agreement"] < high < rows["agreement"] + 0.5  # crosses no other row
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(legend) == sorted(["95% intervals: clopper-pearson, cp-fiducial",
                                     f"always-PASS agreement {report.base_rate_agreement:.2f}"])
    assert ax.get_title().startswith("Calibration")


def test_hybrid_weight_draws_the_mean_per_weight_and_the_other_conditions():
    metrics = pd.DataFrame({"query_id": ["q1", "q2"] * 5,
                            "condition": ["hybrid"] * 6 + ["cosine"] * 2 + ["bm25"] * 2,
                            "alpha": [1.0, 1.0, 0.0, 0.0, 0.5, 0.5] + [np.nan] * 4,
                            "ndcg": [0.6, 0.8, 0.2, 0.4, 0.5, 0.7, 0.5, 0.9, 0.1, 0.3], "mrr": 1.0})
    fig, ax = plt.subplots()
    assert plots.hybrid_weight(metrics, ax=ax) is ax
    curve, *rest = ax.lines
    np.testing.assert_allclose(curve.get_xdata(), [0.0, 0.5, 1.0])  # sorted by weight
    np.testing.assert_allclose(curve.get_ydata(), [0.3, 0.6, 0.7])  # means over queries
    assert [line.get_label() for line in rest] == ["bm25", "cosine", "default alpha = 0.5"]
    np.testing.assert_allclose(rest[0].get_ydata(), [0.2, 0.2])
    np.testing.assert_allclose(rest[1].get_ydata(), [0.7, 0.7])
    np.testing.assert_allclose(rest[2].get_xdata(), [0.5, 0.5])
    assert "alpha" in ax.get_xlabel() and ax.get_ylabel() == "mean ndcg over queries"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["hybrid", "bm25", "cosine", "default alpha = 0.5"]
    fig, ax = plt.subplots()
    plots.hybrid_weight(metrics, metric="mrr", default=None, ax=ax)
    assert len(ax.lines) == 3 and ax.get_title() == "Mean mrr against the hybrid's weight"


def test_hybrid_weight_bad_input():
    metrics = pd.DataFrame({"query_id": ["q1"], "condition": ["hybrid"], "alpha": [np.nan], "ndcg": [0.5]})
    with pytest.raises(ValueError, match="needs 'hybrid' rows, each with its weight in 'alpha'"):
        plots.hybrid_weight(metrics)
    with pytest.raises(KeyError, match=r"missing column\(s\) \['alpha'\]"):
        plots.hybrid_weight(metrics.drop(columns="alpha"))
    with pytest.raises(ValueError, match="`default`"):
        plots.hybrid_weight(metrics.assign(alpha=0.5), default=2.0)


def test_system_estimates_draws_each_systems_interval_and_its_rank_set(rng):
    import matplotlib.pyplot as plt

    from evalkit import infer

    rows = []
    for name, mu in (("a", 3.0), ("b", 3.0), ("c", 3.9)):
        for i, q in enumerate(rng.normal(mu, 0.6, 200)):
            rows.append({"system": name, "case_id": i, "judge": q + rng.normal(0, 0.3), "human": q if i < 40 else np.nan})
    table = infer.systems(pd.DataFrame(rows))
    fig, ax = plt.subplots()
    assert plots.system_estimates(table, ax=ax) is ax
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels[0] == "c  (rank 1)" and sorted(labels[1:]) == ["a  (ranks 2-3)", "b  (ranks 2-3)"]
    line = ax.lines[0]  # the estimates, highest at the top (largest y)
    xs, ys = line.get_xdata(), line.get_ydata()
    by_name = table.set_index("system")
    assert xs[np.argmax(ys)] == pytest.approx(by_name.loc["c", "estimate"])
    segments = ax.collections[0].get_segments()  # one horizontal whisker per system: its interval
    spans = sorted((round(seg[0][0], 9), round(seg[1][0], 9)) for seg in segments)
    assert spans == sorted((round(r.ci_low, 9), round(r.ci_high, 9)) for r in table.itertuples())
    assert "95% interval" in ax.get_xlabel()
    with pytest.raises(KeyError):
        plots.system_estimates(table.drop(columns="ci_low"))
    plt.close(fig)
