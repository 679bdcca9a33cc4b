"""LLMBar: each judge's decisions against the gold labels reproduce every published statistics.json figure."""

import json

import numpy as np
import pandas as pd
import pytest

from evalkit import _stats, calibrate, compare, datasets
from tests.conftest import shared_dataset


@pytest.fixture(scope="module")
def llmbar():
    root = shared_dataset("llmbar")
    decisions = datasets.load_llmbar(root)
    published = {}
    for (subset, judge), _ in decisions.groupby(["subset", "judge"]):
        path = root / subset / "evaluators" / judge / "Vanilla" / "statistics.json"
        published[subset, judge] = json.loads(path.read_text())
    return decisions, published


def count(text: str) -> int:
    return int(text.split("/")[0])


def test_loader_shape(llmbar):
    decisions, published = llmbar
    assert len(decisions) == 2514 and len(published) == 15
    assert decisions["winner"].isna().sum() == 2  # LLaMA-2 refused twice


def test_published_statistics_reproduced(llmbar):
    decisions, published = llmbar
    for (subset, judge), stats_json in published.items():
        d = decisions[(decisions["subset"] == subset) & (decisions["judge"] == judge)]
        first = d[d["order"] == "original"].set_index("instance")
        second = d[d["order"] == "swapped"].set_index("instance")
        correct_first = first["winner"].eq(first["label"]).fillna(False)
        correct_second = second["winner"].eq(second["label"]).fillna(False)
        assert correct_first.sum() == count(stats_json["correct_False"]), (subset, judge)
        assert correct_second.sum() == count(stats_json["correct_True"]), (subset, judge)
        assert (correct_first & correct_second).sum() == count(stats_json["correct_both"]), (subset, judge)
        same = first["winner"].eq(second["winner"]).fillna(False) | (first["winner"].isna() & second["winner"].isna())
        assert same.sum() == count(stats_json["equal"]), (subset, judge)
        # The source codes a pick of output 1 as 1 and anything else (output 2, unparseable) as 0: that is
        # evalkit's strict rule too (unparseable = FAIL), so its kappa between the two orders is the same.
        code = lambda w: (w == "1").fillna(False).map({True: "PASS", False: "FAIL"})  # noqa: E731
        assert _stats.cohen_kappa(code(first["winner"]), code(second["winner"])) == pytest.approx(
            stats_json["kappa_agreement"], abs=1e-12)
        # The published kappa_False/True compare that 0/1 code with the gold label coded 1/2, so they
        # measure a label mismatch, not judge-gold agreement; reproduced here to show exactly that.
        gold = first["label"].astype(int).to_numpy()
        kappas = [_stats.cohen_kappa((w == "1").fillna(False).astype(int).to_numpy(), gold)
                  for w in (first["winner"], second["winner"])]
        assert kappas[0] == pytest.approx(stats_json["kappa_False"], abs=1e-12)
        assert kappas[1] == pytest.approx(stats_json["kappa_True"], abs=1e-12)
        assert np.mean(kappas) == pytest.approx(stats_json["kappa_average"], abs=1e-12)


def test_calibration_per_subset_and_position_consistency(llmbar):
    decisions, _ = llmbar
    gpt4 = decisions[(decisions["judge"] == "GPT-4") & (decisions["subset"] == "Natural")]
    first = gpt4[gpt4["order"] == "original"]
    # "output 1 is better" as PASS: agreement is the accuracy, kappa the judge-gold kappa.
    judge = pd.Series(np.where(first["winner"] == "1", "PASS", "FAIL"), index=first["case_id"])
    human = pd.Series(np.where(first["label"] == "1", "PASS", "FAIL"), index=first["case_id"])
    report = calibrate.calibrate(judge, human)
    assert report.agreement == pytest.approx(0.95)
    assert report.kappa > 0.85  # the published 0.268 is not a judge-gold kappa
    second = gpt4[gpt4["order"] == "swapped"]
    swapped = pd.Series(np.where(second["winner"] == "1", "PASS", "FAIL"), index=second["case_id"])
    position = compare.paired(judge, swapped)
    assert position.agreement == pytest.approx(0.95)
