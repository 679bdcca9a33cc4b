"""The table contract: docs/schemas.md lists each public function's table with its columns; every function there is
called on the demo data and its output checked against the list, and every table is fed, unchanged, to every function
that takes its kind (producer x consumer)."""

from __future__ import annotations

import re
import tempfile
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit import (
    EvalkitWarning,
    agreement,
    calibrate,
    compare,
    correlate,
    datasets,
    density,
    infer,
    judge,
    logs,
    models,
    pairwise,
    tcva,
    verdicts,
)
from tests.conftest import shared_dataset
from tests.harness import ROOT

SCHEMAS = ROOT / "docs" / "schemas.md"


def contract() -> dict[str, tuple[str, list[str], list[str], bool]]:
    """Each function's row of docs/schemas.md: (kind, required columns, optional columns, whether extras may follow)."""
    text = SCHEMAS.read_text()
    section = text[text.index("## Every table, function by function"):]
    rows = {}
    for name, kind, cell in re.findall(r"^\| `([\w.]+)` \| ([^|]+) \| (.+) \|$", section, re.M):
        columns = cell.strip()
        if not columns.startswith("`"):  # described in words (the scores' one column per temperature)
            rows[name] = (kind.split(" (")[0].strip(), [], [], True)
            continue
        inner = columns.strip("`")
        optional = re.findall(r"\[([^\]]*)\]", inner)
        required_text = re.sub(r"\[[^\]]*\]", "", inner)
        required = [c.strip() for c in required_text.split(",") if c.strip() and c.strip() != "..."]
        rows[name] = (kind.split(" (")[0].strip(), required, [c.strip() for part in optional for c in part.split(",") if c.strip()],
                      inner.rstrip().endswith("..."))
    return rows


# ------------------------------------------------------------------------------------------ the demo tables
@pytest.fixture(scope="module")
def demo():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)  # the demo judge's unparseable answers, said elsewhere
        jd, td, pw, fd = (datasets.load_demo(name) for name in ("judge", "tcva", "pairwise", "fd"))
        rubric = judge.UNSUPPORTED_CLAIMS

        def run(version):
            replies = jd["outputs"].query("rubric == @version").set_index("case_id")["raw"]
            model = models.Replay({rubric.render(c): replies[c["case_id"]] for c in jd["cases"].to_dict("records")},
                                  model_id=f"demo-{version}")
            return judge.run_judge(jd["cases"], rubric, model, progress=False)

        r1, r2 = run("v1"), run("v2")
    human = jd["labels"].set_index("case_id")["label"]
    scores = tcva.sweep(td["verdicts"], [0.3, 0.7], items=td["items"])
    gen = np.random.default_rng(3)
    ids = list(td["items"].index)
    records = pd.DataFrame({"case_id": ids * 2, "labeller": ["ann"] * 120 + ["bob"] * 120,
                            "label": np.r_[np.clip(np.round(td["items"]["human"].to_numpy() * 4 + 1), 1, 5),
                                           gen.integers(1, 6, 120)].astype(int)})
    return {"r1": r1, "r2": r2, "human": human, "td": td, "pw": pw, "fd": fd, "scores": scores, "records": records,
            "logs": datasets.demo_path() / "logs"}


def _one_run(table: pd.DataFrame) -> pd.DataFrame:
    """The rows of the first rubric and model (a one-run consumer's input; the columns are as produced)."""
    first = table[["rubric", "model"]].iloc[0]
    return table[(table["rubric"] == first["rubric"]) & (table["model"] == first["model"])]


def _labels_for(results: pd.DataFrame) -> pd.Series:
    """PASS/FAIL labels of the first 30 judged cases of one run: the judge's verdict, a third of them flipped."""
    judged = _one_run(results)
    judged = judged[judged["verdict"].notna()].drop_duplicates("case_id").head(30)
    passed = np.array(judged["verdict"].astype(str).isin(judged.attrs.get("rubric", {}).get("pass_levels", ["PASS"])))
    passed[::3] = ~passed[::3]
    return pd.Series(np.where(passed, "PASS", "FAIL"), index=judged["case_id"].to_numpy())


PRODUCERS = {
    "judge.run_judge": lambda d: d["r1"],
    "judge.load_results": lambda d: judge.load_results(judge.save_results(d["r1"], Path(tempfile.mkdtemp()) / "r.jsonl")),
    "judge.results_from_verdicts": lambda d: judge.results_from_verdicts(
        pd.DataFrame({"case_id": d["r1"]["case_id"], "verdict": d["r1"]["verdict"].astype(str),
                      "score": np.linspace(0, 1, len(d["r1"]))}), rubric=judge.UNSUPPORTED_CLAIMS, model="mine"),
    "logs.read_promptfoo": lambda d: logs.read_promptfoo(d["logs"] / "promptfoo_v1.json"),
    "judge.pass_rate": lambda d: judge.pass_rate(d["r1"]),
    "calibrate.calibrate": lambda d: calibrate.calibrate(d["r1"], d["human"]).table,
    "calibrate.disagreements": lambda d: calibrate.disagreements(d["r1"], d["human"]),
    "calibrate.corrected_pass_rate": lambda d: calibrate.corrected_pass_rate(d["r2"], calibrate.calibrate(d["r1"], d["human"])),
    "calibrate.agreement_drift": lambda d: calibrate.agreement_drift(d["r1"], datasets.load_demo("judge")["labels"]),
    "compare.against_baseline": lambda d: compare.against_baseline(pd.concat([d["r1"], d["r2"]]), baseline="demo-v1",
                                                                   run="model"),
    "compare.detectable_difference": lambda d: compare.detectable_difference(100, discordant=0.1),
    "compare.cases_needed": lambda d: compare.cases_needed(0.1, discordant=0.2),
    "verdicts.level_counts": lambda d: verdicts.level_counts(d["td"]["verdicts"]),
    "tcva.sweep": lambda d: d["scores"],
    "correlate.correlate": lambda d: correlate.correlate(d["scores"], d["td"]["items"]["human"], n_resamples=50, rng=0),
    "correlate.compare_metrics": lambda d: correlate.compare_metrics(d["scores"][0.3], d["scores"][0.7],
                                                                     d["td"]["items"]["human"], n_resamples=50, rng=0),
    "correlate.paired_bootstrap_tcva_paper": lambda d: correlate.paired_bootstrap_tcva_paper(
        d["scores"][0.3], d["scores"][0.7], d["td"]["items"]["human"], n_resamples=50),
    "agreement.ratings_from_labels": lambda d: agreement.ratings_from_labels(d["records"]),
    "agreement.krippendorff_alpha": lambda d: agreement.krippendorff_alpha(
        agreement.ratings_from_labels(d["records"]), level="interval", n_resamples=50, rng=0),
    "agreement.icc": lambda d: agreement.icc(agreement.ratings_from_labels(d["records"]), n_resamples=50, rng=0),
    "agreement.fleiss_kappa": lambda d: agreement.fleiss_kappa(agreement.ratings_from_labels(d["records"]),
                                                               n_resamples=50, rng=0),
    "agreement.cohen_kappa": lambda d: agreement.cohen_kappa(agreement.ratings_from_labels(d["records"])),
    "agreement.pairwise_agreement": lambda d: agreement.pairwise_agreement(agreement.ratings_from_labels(d["records"])),
    "agreement.human_ceiling": lambda d: agreement.human_ceiling(d["scores"], agreement.ratings_from_labels(d["records"]),
                                                                 n_resamples=50, rng=0),
    "density.fd_star": lambda d: density.fd_star(d["fd"]["claims"], d["fd"]["documents"]),
    "density.length_bias": lambda d: density.length_bias(density.fd_star(d["fd"]["claims"], d["fd"]["documents"]),
                                                         n_resamples=50, rng=0),
    "pairwise.validate": lambda d: pairwise.validate(d["pw"]["comparisons"]),
    "pairwise.bradley_terry": lambda d: pairwise.bradley_terry(d["pw"]["comparisons"]),
    "pairwise.rank_sets": lambda d: pairwise.rank_sets(d["pw"]["comparisons"], d["pw"]["judge"]["winner"]),
    "infer.mean": lambda d: infer.mean(d["r1"].set_index("case_id")["verdict"].eq("PASS").astype(float),
                                       d["human"].eq("PASS").astype(float).iloc[:40]),
    "infer.pass_rate": lambda d: infer.pass_rate(d["r1"], d["human"].iloc[:40]),
}
#: Producers that read a real data set (the slow tier), with the fixture-free way to get their table.
SLOW_PRODUCERS = {"datasets.load_usr": lambda: datasets.load_usr(shared_dataset("usr"))[0]}


def produce(name: str, demo) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)  # small demo designs; their warnings are tested elsewhere
        return PRODUCERS[name](demo)


def test_every_function_of_the_contract_is_checked_and_every_row_parses():
    rows = contract()
    assert set(rows) == set(PRODUCERS) | set(SLOW_PRODUCERS), (
        f"in docs/schemas.md only: {sorted(set(rows) - set(PRODUCERS) - set(SLOW_PRODUCERS))}; "
        f"checked here only: {sorted(set(PRODUCERS) | set(SLOW_PRODUCERS) - set(rows))}")
    assert all(kind for kind, *_ in rows.values())


def check_columns_against_contract(name: str, table: pd.DataFrame) -> None:
    kind, required, optional, extras = contract()[name]
    columns = [str(c) for c in table.columns]
    if not required:  # one column per temperature
        assert all(isinstance(c, float) for c in table.columns), columns
        return
    missing = [c for c in required if c not in columns]
    assert not missing, f"{name} lacks {missing} of docs/schemas.md; it has {columns}"
    unlisted = [c for c in columns if c not in required and c not in optional]
    assert extras or not unlisted, f"{name} has {unlisted}, which docs/schemas.md does not list"
    listed = [c for c in columns if c in required]
    assert listed == required, f"{name}'s columns are in another order than docs/schemas.md says: {listed}"


@pytest.mark.parametrize("name", sorted(PRODUCERS))
def test_output_columns_are_the_contract(name, demo):
    check_columns_against_contract(name, produce(name, demo))


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(SLOW_PRODUCERS))
def test_output_columns_of_the_real_data_loaders(name):
    check_columns_against_contract(name, SLOW_PRODUCERS[name]())


# ------------------------------------------------------------------------------------ producer x consumer
def _quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        return call()


CONSUMERS = {
    "results": {
        "judge.pass_rate": lambda t, d: judge.pass_rate(t, unparseable_alert=1.0),
        "calibrate.calibrate": lambda t, d: calibrate.calibrate(_one_run(t), _labels_for(t)),
        "calibrate.disagreements": lambda t, d: calibrate.disagreements(_one_run(t), _labels_for(t)),
        "compare.paired": lambda t, d: compare.paired(_one_run(t), _one_run(t)),
        "infer.pass_rate": lambda t, d: infer.pass_rate(_one_run(t), _labels_for(t)),
    },
    "tests": {"compare.adjust_p_values": lambda t, d: compare.adjust_p_values(t)},
    "ratings": {
        "correlate.correlate": lambda t, d: correlate.correlate(
            pd.Series(np.arange(t["item_id"].nunique(), dtype=float), index=t["item_id"].unique()), t, n_resamples=0),
        "agreement.krippendorff_alpha": lambda t, d: agreement.krippendorff_alpha(t, level="interval", n_resamples=20, rng=0),
        "agreement.icc": lambda t, d: agreement.icc(t, n_resamples=20, rng=0),
        "agreement.pairwise_agreement": lambda t, d: agreement.pairwise_agreement(t),
    },
    "scores": {
        "correlate.correlate": lambda t, d: correlate.correlate(t, d["td"]["items"]["human"], n_resamples=0),
        "correlate.select_temperature": lambda t, d: correlate.select_temperature(
            d["td"]["verdicts"], d["td"]["items"]["human"], temperatures=list(t.columns), items=d["td"]["items"]),
    },
    "comparisons": {
        "pairwise.bradley_terry": lambda t, d: pairwise.bradley_terry(t),
        "pairwise.win_rates": lambda t, d: pairwise.win_rates(t),
    },
}


def _pairs():
    rows = contract()
    return [(producer, consumer) for producer in sorted(PRODUCERS) for consumer in sorted(CONSUMERS.get(rows[producer][0], {}))]


def test_every_kind_handed_on_has_a_producer_and_a_consumer():
    kinds = {kind for kind, *_ in contract().values()}
    assert set(CONSUMERS) <= kinds
    for kind in CONSUMERS:
        assert any(contract()[p][0] == kind for p in PRODUCERS), kind


@pytest.mark.parametrize(("producer", "consumer"), _pairs())
def test_each_table_feeds_every_consumer_of_its_kind(producer, consumer, demo):
    """A producer's table goes into every function that takes its kind, unchanged (no renamed column, no KeyError)."""
    table = produce(producer, demo)
    kind = contract()[producer][0]
    if kind == "ratings" and consumer == "correlate.correlate" and not pd.api.types.is_numeric_dtype(table["rating"]):
        pytest.skip("ratings as labels: a correlation needs numbers")
    out = _quiet(lambda: CONSUMERS[kind][consumer](table, demo))
    assert out is not None


@pytest.mark.slow
def test_usr_ratings_feed_the_correlation_unchanged():
    """datasets.load_usr's long table is the ratings table: one dimension of it goes straight into correlate (the rating
    column is `rating`, as everywhere), and the whole table, of six dimensions, is refused rather than averaged."""
    ratings, items = datasets.load_usr(shared_dataset("usr"))
    overall = ratings[ratings["dimension"] == "Overall"]
    score = pd.Series(np.arange(len(items), dtype=float), index=items.index)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        row = correlate.correlate(score, overall, n_resamples=0).iloc[0]
    assert row["n"] == overall["item_id"].nunique()
    with pytest.raises(ValueError, match="ratings of 6 dimensions"):
        correlate.correlate(score, ratings, n_resamples=0)


def test_adjust_p_values_takes_against_baselines_table_unchanged(demo):
    """The measured case: against_baseline's table went into adjust_p_values with a KeyError (p_value vs p_val)."""
    table = produce("compare.against_baseline", demo)
    adjusted = compare.adjust_p_values(table, method="bonferroni")
    assert adjusted["p_adjusted"].tolist() == pytest.approx(np.minimum(1, table["p_val"] * len(table)).tolist())
