"""Re-aggregating the TCVA paper's released per-claim verdicts reproduces its stored scores and tables."""

import json
import warnings

import pytest

from evalkit import EvalkitWarning, correlate, datasets, tcva
from tests.conftest import shared_dataset

DATASETS = ("summeval", "summeval_rel", "usr")
TEMPS = (0.2, 0.3, 0.5, 0.7, 0.9)
BEST_T = {"summeval": 0.9, "summeval_rel": 0.5, "usr": 0.9}


@pytest.fixture(scope="module")
def release():
    root = shared_dataset("tcva")
    out = {}
    for ds in DATASETS:
        verdicts, items = datasets.load_tcva_release(root / "results" / f"{ds}_tcva_scores.json")
        ragas = datasets.load_tcva_baseline(root / "results" / f"{ds}_ragas_scores.json")
        deepeval = datasets.load_tcva_baseline(root / "results" / f"{ds}_deepeval_scores.json")
        out[ds] = verdicts, items, ragas, deepeval
    out["summary"] = {r["dataset"]: r["correlations"] for r in json.loads((root / "results" / "analysis_summary.json").read_text())}
    out["step8"] = json.loads((root / "results" / "step8_sensitivity_bootstrap.json").read_text())
    out["step9"] = json.loads((root / "results" / "step9_ablation.json").read_text())
    return out


@pytest.mark.parametrize("ds", DATASETS)
def test_loader_flags_failed_rows(release, ds):
    verdicts, items, _, _ = release[ds]
    expected_errors = {"summeval": 3, "summeval_rel": 1, "usr": 0}[ds]
    assert items["error"].notna().sum() == expected_errors
    assert items.loc[items["error"].notna(), "n_claims"].eq(0).all()
    assert items.loc[items["error"].notna(), "stored_T0.5"].isna().all()
    assert len(items) == {"summeval": 172, "summeval_rel": 196, "usr": 198}[ds]
    assert verdicts.groupby("item_id").size().sum() == items["n_claims"].sum()


@pytest.mark.parametrize("ds", DATASETS)
def test_stored_scores_reproduced_exactly(release, ds):
    verdicts, items, _, _ = release[ds]
    ok = items[items["error"].isna()]
    scores = tcva.sweep(verdicts, TEMPS, items=ok, decimals=4)
    mismatches = sum(int((scores[t] != ok[f"stored_T{t}"]).sum()) for t in TEMPS)
    assert mismatches == 0
    assert len(ok) * len(TEMPS) == scores.size


@pytest.mark.parametrize("ds", DATASETS)
def test_main_table(release, ds):
    verdicts, items, ragas, deepeval = release[ds]
    ok = items[items["error"].isna()]
    scores = tcva.sweep(verdicts, TEMPS, items=ok, decimals=4)
    published = release["summary"][ds]
    for method, key in (("spearman", "spearman_rho"), ("kendall", "kendall_tau")):
        table = correlate.correlate(scores, ok["human"], method=method, n_resamples=0)
        for t in TEMPS:
            entry = published[f"TCVA (T={t})"]
            assert table.loc[t, "n"] == entry["n"]
            assert round(table.loc[t, "r"], 4) == pytest.approx(entry[key], abs=1e-12)
    mae = correlate.mean_absolute_error(scores, ok["human"])
    for t in TEMPS:
        assert round(mae[t], 4) == pytest.approx(published[f"TCVA (T={t})"]["mae"], abs=1e-12)
    for name, baseline in (("RAGAS (binary)", ragas), ("DeepEval (ternary)", deepeval)):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvalkitWarning)
            row = correlate.correlate(baseline, items["human"], n_resamples=0).iloc[0]
        assert row["n"] == published[name]["n"]
        assert round(row["r"], 4) == pytest.approx(published[name]["spearman_rho"], abs=1e-12)


@pytest.mark.parametrize("ds", DATASETS)
def test_weight_sensitivity_and_ablation(release, ds):
    verdicts, items, _, _ = release[ds]
    nonempty = items[items["n_claims"] > 0]  # step8/step9 drop rows with no verdicts
    T = BEST_T[ds]
    human = nonempty["human"]

    def rho(**options):
        s = tcva.score(verdicts, T, items=nonempty, decimals=4, **options)
        return round(correlate.correlate(s, human, n_resamples=0).iloc[0]["r"], 4)

    for name, scale in (("Default", "default"), ("Linear", "linear"), ("Aggressive", "aggressive"),
                        ("Conservative", "conservative")):
        assert rho(scale=scale) == pytest.approx(release["step8"]["sensitivity_analysis"][ds][name]["spearman_rho"], abs=1e-12)
    ablation = release["step9"][ds]
    assert rho() == pytest.approx(ablation["A. Full TCVA"]["spearman_rho"], abs=1e-12)
    assert rho(none_penalty=False) == pytest.approx(ablation["B. No penalty"]["spearman_rho"], abs=1e-12)
    assert rho(p=1.0) == pytest.approx(ablation["C. Arithmetic"]["spearman_rho"], abs=1e-12)
    assert rho(scale="binary") == pytest.approx(ablation["D. Binary"]["spearman_rho"], abs=1e-12)


@pytest.mark.parametrize("ds", DATASETS)
def test_papers_bootstrap_p_values(release, ds):
    verdicts, items, ragas, _ = release[ds]
    ok = items[items["error"].isna()]
    tcva_best = tcva.score(verdicts, BEST_T[ds], items=ok, decimals=4)
    with pytest.warns(EvalkitWarning, match="not a test of a zero difference"):
        res = correlate.paired_bootstrap_tcva_paper(tcva_best, ragas, items["human"])
    published = release["step8"]["bootstrap_ci"][ds]["_paired_tcva_vs_ragas"]
    assert res.loc[0, "n"] == published["n_common"]
    assert round(res.loc[0, "delta"], 4) == pytest.approx(published["delta_rho"], abs=1e-12)
    assert res.loc[0, "p_val"] == pytest.approx(published["p_value"], abs=1e-12)


def test_standard_tests_disagree_with_the_papers_significance_claim(release):
    """SummEval-Rel: published p = 0.0412, but a test of zero difference gives about 0.4."""
    verdicts, items, ragas, _ = release["summeval_rel"]
    ok = items[items["error"].isna()]
    best = tcva.score(verdicts, 0.5, items=ok, decimals=4)
    shared = best.index.intersection(ragas.index)  # the paper's common items
    best, ragas = best[shared], ragas[shared]
    williams = correlate.compare_metrics(best, ragas, items["human"], test="williams")
    boot = correlate.compare_metrics(best, ragas, items["human"], test="bootstrap", n_resamples=4000, rng=0)
    assert williams.loc[0, "p_val"] == pytest.approx(0.43, abs=0.01)  # Williams with the Bonett-Wright variance for Spearman
    assert 0.3 < boot.loc[0, "p_val"] < 0.5
    assert williams.loc[0, "ci_low"] < 0 < williams.loc[0, "ci_high"]


def test_failed_runs_are_left_out_not_scored_zero(release):
    """The SummEval release's 3 failed runs: swept with the whole items table they are NaN (with a warning), so
    Spearman at T = 0.3 is 0.668 on 169 items, the published figure, not 0.641 on 172 with three 0.0 scores."""
    verdicts, items, _, _ = release["summeval"]
    with pytest.warns(EvalkitWarning, match=r"3 of the 172 items have an `error` \(a failed run\)"):
        scores = tcva.sweep(verdicts, [0.3], items=items)
    row = correlate.correlate(scores, items["human"], n_resamples=0).loc[0.3]
    assert row["n"] == 169 and round(row["r"], 3) == 0.668
    assert release["summary"]["summeval"]["TCVA (T=0.3)"]["n"] == 169
