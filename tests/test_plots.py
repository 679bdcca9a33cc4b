import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from evalkit import correlate, datasets, plots, tcva


@pytest.fixture
def corr_table():
    verdicts, items = datasets.load_demo("tcva")
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
    verdicts, items = datasets.load_demo("tcva")
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
