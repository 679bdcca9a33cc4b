"""Readers of other tools' logs, on logs the tools themselves wrote (tests/data/logs, data/demo/logs).

Each reference value is read from the tool's file with the standard library (json), independently of the
reader: the tool's own summary (inspect_ai's accuracy, promptfoo's stats, lm-eval's results file, evals'
final report) and every sample's value as the tool wrote it.
"""

import json
import math
import re
import shutil
import sys
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, calibrate, compare, datasets, infer, judge, logs
from tests._extras import needs
from tests._memory import peak_traced

HERE = Path(__file__).resolve().parent / "data" / "logs"
DEMO = datasets.demo_path() / "logs"
SMALL_JSON = HERE / "inspect" / "inspect_small.json"
needs_zstd = needs("zstandard", "logs")
LETTER = {"C": 1.0, "P": 0.5, "I": 0.0, "N": 0.0}


def _accuracy(table):
    return {m["rubric"]: m["value"] for m in table.attrs["tool_metrics"] if m["metric"] == "accuracy"}


# --- inspect_ai ---------------------------------------------------------------------------------------------------

def test_inspect_json_rows_are_the_samples_as_written():
    log = json.loads(SMALL_JSON.read_text())
    table = logs.read_inspect(SMALL_JSON)
    scorers = [s["name"] for s in log["eval"]["scorers"]]
    assert len(table) == len(log["samples"]) * len(scorers) == 18
    assert table.attrs["source"]["tool"] == "inspect_ai" and table.attrs["source"]["version"] == "0.3.285"
    assert table.attrs["skipped"] == {}
    for sample in log["samples"]:
        rows = table[(table["sample_id"] == sample["id"]) & (table["epoch"] == sample["epoch"])]
        assert rows["rubric"].tolist() == scorers
        assert (rows["case_id"] == f"{sample['id']}_epoch_{sample['epoch']}").all()
        assert (rows["output"] == sample["output"]["completion"]).all()
        if sample.get("error"):  # q08 epoch 2: the model raised
            assert rows["error"].eq(sample["error"]["message"]).all() and rows["verdict"].isna().all()
            continue
        for name, score in sample["scores"].items():
            row = rows[rows["rubric"] == name].iloc[0]
            assert row["reason"] == score.get("explanation")
            if isinstance(score["value"], float) and math.isnan(score["value"]):  # inspect_ai left it unscored
                assert pd.isna(row["verdict"]) and row["error"].startswith(f"unscored ({score['reason']})")
            else:
                assert row["verdict"] == score["value"] and row["score"] == LETTER[score["value"]]
                assert pd.isna(row["error"])
    assert table["error"].notna().sum() == 4  # three scorers of the errored epoch, one unscored grade


@needs_zstd
def test_inspect_eval_and_json_give_the_same_table():
    a = logs.read_inspect(HERE / "inspect" / "inspect_small.eval")
    b = logs.read_inspect(SMALL_JSON)
    pd.testing.assert_frame_equal(a, b)
    assert {k: v for k, v in a.attrs.items() if k != "source"} == {k: v for k, v in b.attrs.items() if k != "source"}
    assert (a.attrs["source"]["format"], b.attrs["source"]["format"]) == ("eval", "json")


@needs_zstd
@pytest.mark.parametrize("path", [DEMO / "inspect_v1.eval", DEMO / "inspect_v2.eval", SMALL_JSON], ids=lambda p: p.name)
def test_inspect_pass_rate_is_inspects_accuracy(path):
    table = logs.read_inspect(path)
    rates = judge.pass_rate(table).set_index("rubric")  # the epochs of a case are one cluster, found from the table
    accuracy = _accuracy(table)
    assert set(accuracy) == set(rates.index) == {"match", "includes", "model_graded_qa"}
    for rubric, value in accuracy.items():
        assert abs(rates.loc[rubric, "mean_score"] - value) < 1e-12
        if not (table.loc[table["rubric"] == rubric, "verdict"] == "P").any():  # no partial credit: rate == accuracy
            assert abs(rates.loc[rubric, "pass_rate"] - value) < 1e-12
    assert (rates["n_clusters"] == table.groupby("rubric")["sample_id"].nunique().loc[rates.index]).all()
    assert rates["interval"].eq("cluster-means-betting").all() and rates.attrs["cluster"] == "sample_id"


def test_inspect_partial_credit_passes_when_asked():
    strict, lenient = (judge.pass_rate(logs.read_inspect(SMALL_JSON, pass_levels=levels)).set_index("rubric")
                       for levels in (("C",), ("C", "P")))
    # q02's second epoch is the only P: with it passing, q02 goes from 1/2 to 2/2 of its epochs
    assert lenient.loc["model_graded_qa", "pass_rate"] - strict.loc["model_graded_qa", "pass_rate"] == pytest.approx(0.5 / 3)
    assert lenient.loc["match", "pass_rate"] == strict.loc["match", "pass_rate"]
    with pytest.raises(ValueError, match="without 'I'"):
        logs.read_inspect(SMALL_JSON, pass_levels=("C", "I"))


def test_eval_log_without_zstandard_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "zstandard", None)
    with pytest.raises(ImportError, match=r'inspect_small.eval.*zstandard.*pip install "llm-evalkit\[logs\]"'):
        logs.read_inspect(HERE / "inspect" / "inspect_small.eval")


# --- promptfoo ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("version", ["v1", "v2"])
def test_promptfoo_counts_are_its_stats(version):
    path = DEMO / f"promptfoo_{version}.json"
    document = json.loads(path.read_text())
    table = logs.read_promptfoo(path)
    tests = table[table["rubric"] == "test"]
    stats = document["results"]["stats"]
    assert int((tests["verdict"] == "PASS").sum()) == stats["successes"]
    assert int((tests["verdict"] == "FAIL").sum()) == stats["failures"]
    assert int(tests["error"].notna().sum()) == stats["errors"] == 1
    metrics = document["results"]["prompts"][0]["metrics"]
    components = table[(table["rubric"] != "test") & table["error"].isna()]
    assert int((components["verdict"] == "PASS").sum()) == metrics["assertPassCount"]
    assert int((components["verdict"] == "FAIL").sum()) == metrics["assertFailCount"]
    assert table.attrs["source"]["version"] == document["metadata"]["promptfooVersion"] == "0.123.1"


def test_promptfoo_rows_are_the_results_as_written():
    path = DEMO / "promptfoo_v1.json"
    results = sorted(json.loads(path.read_text())["results"]["results"], key=lambda r: r["testIdx"])
    table = logs.read_promptfoo(path)
    assert len(table) == sum(len(r["testCase"]["assert"]) + 1 for r in results) == 60
    assert table["test_idx"].drop_duplicates().tolist() == [r["testIdx"] for r in results]
    assert table["sample_id"].nunique() == 10 and set(table["repeat"]) == {1, 2}
    for result in results:
        rows = table[table["test_idx"] == result["testIdx"]]
        repeat = 1 + [r["testIdx"] for r in results if r["testCase"]["description"] == result["testCase"]["description"]].index(result["testIdx"])
        assert (rows["case_id"] == f"{result['testCase']['description']}_repeat_{repeat}").all()
        test = rows[rows["rubric"] == "test"].iloc[0]
        if result["failureReason"] == 2:  # the provider failed: no grading, error rows only
            assert result["gradingResult"] is None and rows["verdict"].isna().all()
            assert rows["error"].eq(result["error"]).all() and len(rows) == len(result["testCase"]["assert"]) + 1
            continue
        assert test["verdict"] == ("PASS" if result["success"] else "FAIL") and pd.isna(test["error"])
        for component in result["gradingResult"]["componentResults"]:
            row = rows[rows["rubric"] == component["assertion"]["type"]].iloc[0]
            assert row["verdict"] == ("PASS" if component["pass"] else "FAIL")
            assert (row["score"], row["reason"]) == (component["score"], component["reason"])
            assert pd.isna(row["error"])  # a failed assertion is a FAIL, even where promptfoo fills `error`
    assert table["raw"].isna().all()  # promptfoo does not store the grader's reply


def test_promptfoo_jsonl_gives_the_same_rows():
    a = logs.read_promptfoo(DEMO / "promptfoo_v1.json")
    b = logs.read_promptfoo(HERE / "promptfoo" / "promptfoo_v1.jsonl")  # another run of the same config
    assert b.attrs["source"]["version"] is None and b.attrs["tool_metrics"] == {}
    same = ["case_id", "rubric", "rubric_version", "model", "verdict", "reason", "error", "score", "output", "repeat"]
    pd.testing.assert_frame_equal(a[same], b[same])


def test_promptfoo_csv_is_refused_with_the_reason(tmp_path):
    csv = tmp_path / "results.csv"
    csv.write_text("Description,question,[answerer] v1,Status,Score\nq01,France,Paris,PASS,1.00\n")
    with pytest.raises(ValueError, match=r"results.csv: promptfoo's CSV export keeps only .* no per-assertion"):
        logs.read_promptfoo(csv)


# --- lm-evaluation-harness ----------------------------------------------------------------------------------------

def test_lm_eval_task_means_are_its_results_file():
    folder = HERE / "lm_eval" / "out"
    summary = json.loads(next(folder.rglob("results_*.json")).read_text())
    table = logs.read_lm_eval(folder)
    means = table.groupby("rubric")["score"].mean()
    expected = {f"{task}/{key}": value for task, values in summary["results"].items() for key, value in values.items()
                if "," in key and "_stderr," not in key}
    assert set(means.index) == set(expected) and len(expected) == 4
    for rubric, value in expected.items():
        assert abs(means[rubric] - value) < 1e-12
        task = rubric.split("/")[0]
        assert (table["rubric"] == rubric).sum() == summary["n-samples"][task]["effective"] == 6
    rates = judge.pass_rate(table).set_index("rubric")["pass_rate"]
    for rubric, value in expected.items():
        assert abs(rates[rubric] - value) < 1e-12
    assert table.attrs["source"]["version"] == summary["lm_eval_version"] == "0.4.13"
    assert table["error"].isna().all() and set(table["case_id"]) == {str(i) for i in range(6)}


# --- OpenAI evals -------------------------------------------------------------------------------------------------

def _evals_log(name):
    return [json.loads(line) for line in (HERE / "openai_evals" / name).read_text().splitlines()]


def test_openai_evals_match_log():
    lines = _evals_log("match.jsonl")
    report = next(line["final_report"] for line in lines if "final_report" in line)
    matches = {line["sample_id"]: line["data"] for line in lines if line.get("type") == "match"}
    errored = {line["sample_id"] for line in lines if line.get("type") == "error"}
    table = logs.read_openai_evals(HERE / "openai_evals" / "match.jsonl")
    assert sorted(table["case_id"]) == sorted(matches) and len(table) == 6
    for _, row in table.iterrows():
        data = matches[row["case_id"]]
        assert row["output"] == data["sampled"] and row["target"] == data["expected"]
        if row["case_id"] in errored:
            assert pd.isna(row["verdict"]) and row["error"] == "RuntimeError: simulated provider outage"
        else:
            assert row["verdict"] == ("PASS" if data["correct"] else "FAIL")
    rate = judge.pass_rate(table).iloc[0]
    # evals counts the errored sample as a non-match; evalkit leaves it out and counts it
    assert abs(rate["n_pass"] / (rate["n_judged"] + rate["n_error"]) - report["accuracy"]) < 1e-12
    assert rate["n_error"] == 1


def test_openai_evals_model_graded_log():
    lines = _evals_log("closedqa.jsonl")
    report = next(line["final_report"] for line in lines if "final_report" in line)
    table = logs.read_openai_evals(HERE / "openai_evals" / "closedqa.jsonl")
    assert set(table["rubric"]) == {"closedqa"} and table["grader"].eq("canned-grader").all()
    assert abs(table["score"].mean() - report["score"]) < 1e-12
    invalid = table[table["reason"] == "choice __invalid__"]
    assert len(invalid) == report["counts/__invalid__"] == 1 and not invalid["parsed"].any()
    assert (invalid["verdict"] == "FAIL").all()
    judged = table[table["error"].isna()]
    assert int((judged["verdict"] == "PASS").sum()) == report["counts/Y"]
    strict = logs.read_openai_evals(HERE / "openai_evals" / "closedqa.jsonl", pass_choices=("N",))
    assert int((strict["verdict"] == "PASS").sum()) == 2  # the N choices outside the errored sample


# --- deepeval and ragas -------------------------------------------------------------------------------------------

def _namespace(value):
    """The dict deepeval's model_dump wrote, back as objects with attributes (deepeval's classes, duck-typed)."""
    if isinstance(value, dict):
        return types.SimpleNamespace(**{k: _namespace(v) for k, v in value.items()})
    if isinstance(value, list):
        return [_namespace(v) for v in value]
    return value


def test_deepeval_result():
    dump = json.loads((HERE / "deepeval" / "deepeval_result.json").read_text())
    table = logs.from_deepeval(dump, model="answerer")
    metrics = [(t, m) for t in dump["test_results"] for m in t["metrics_data"]]
    assert len(table) == len(metrics) == 12
    for (_, row), (test, metric) in zip(table.iterrows(), metrics, strict=True):
        assert (row["case_id"], row["rubric"]) == (test["name"], metric["name"])
        if metric["error"]:
            assert pd.isna(row["verdict"]) and row["error"] == metric["error"]
        else:
            assert row["verdict"] == ("PASS" if metric["success"] else "FAIL") and row["score"] == metric["score"]
            assert row["reason"] == metric["reason"]
    pd.testing.assert_frame_equal(table, logs.from_deepeval(_namespace(dump), model="answerer"))
    assert table["error"].notna().sum() == 1 and table["model"].eq("answerer").all()


def test_ragas_result():
    frame = pd.read_json(HERE / "ragas" / "ragas_result.json", orient="table")
    table = logs.from_ragas(frame, threshold={"exact_match": 1.0, "string_present": 1.0, "non_llm_string_similarity": 0.5})
    metrics = ["exact_match", "string_present", "non_llm_string_similarity"]
    assert len(table) == len(frame) * 3 and list(dict.fromkeys(table["rubric"])) == metrics
    for (_, row) in table.iterrows():
        value = frame.loc[int(row["case_id"]), row["rubric"]]
        if np.isnan(value):
            assert pd.isna(row["verdict"]) and row["error"].startswith("ragas gave no score")
        else:
            assert row["score"] == value and row["verdict"] == ("PASS" if value >= row["threshold"] else "FAIL")
    assert table["error"].notna().sum() == int(frame[metrics].isna().sum().sum()) == 2
    assert (table.groupby("rubric", sort=False)["score"].mean() - frame[metrics].mean()).abs().max() < 1e-12


# --- the tables in evalkit's own functions ------------------------------------------------------------------------

@needs_zstd
def test_calibrate_and_compare_two_inspect_runs():
    v1, v2 = (logs.read_inspect(DEMO / f"inspect_{v}.eval") for v in ("v1", "v2"))
    graded1, graded2 = (t[t["rubric"] == "model_graded_qa"] for t in (v1, v2))
    labels = pd.read_csv(DEMO / "inspect_labels.csv", dtype={"sample_id": str})
    human = graded1.merge(labels, on=["sample_id", "epoch"]).set_index("case_id")["label"]
    assert len(human) == 19  # every answer but the errored one
    # the epochs of a question are one cluster, found from the table: 10 questions, too few for kappa's interval
    with pytest.warns(EvalkitWarning, match=r"fewer than 50 clusters for \['kappa'\]"), \
            pytest.warns(EvalkitWarning, match=r"1 labelled case\(s\) have no judge verdict .*\['q09_epoch_1'\]"):
        report = calibrate.calibrate(graded1, human)  # v1 could not grade the empty answer: said, and left out
    assert report.cluster == "sample_id" and report.table.loc["agreement", "n_clusters"] == 10
    assert report.table.loc["agreement", "interval"] == "cluster-betting"
    # labels: 9 PASS (6 correct, 3 verbose), 10 FAIL (3 hedged, 3 extra, 3 wrong, 1 empty); v1 cannot grade the
    # empty answer, passes the 3 answers with a false extra claim and fails nothing a reader passes
    assert (report.n, report.n_excluded, report.human_fails, report.caught) == (18, 1, 9, 6)
    assert report.false_flag_rate == 0.0
    with pytest.warns(EvalkitWarning, match="have no judge verdict"):
        rows = calibrate.calibrate(graded1.drop(columns="sample_id"), human)  # every row taken as its own case
    assert rows.cluster is None and rows.table.loc["agreement", "interval"] == "clopper-pearson"
    with pytest.warns(EvalkitWarning, match="fewer than 50 clusters"):
        report2 = calibrate.calibrate(graded2, human)  # v2 catches every FAIL but also fails the 3 verbose answers
    assert (report2.n, report2.caught, report2.human_fails) == (19, 10, 10)
    assert report2.false_flag_rate == pytest.approx(3 / 9)
    with pytest.warns(EvalkitWarning, match="have no judge verdict"):
        flips = calibrate.disagreements(graded1, human)
    assert set(flips["case_id"]) == {"q03_epoch_1", "q07_epoch_2", "q10_epoch_1"}
    assert (flips["judge"] == "C").all() and (flips["human"] == "FAIL").all()
    with pytest.warns(EvalkitWarning, match=r"2 of the 20 common cases have no verdict in one run"):
        result = compare.paired(graded1, graded2)
    # 9 verdicts change (3 verbose and 3 extra C -> I, 3 hedged P -> I); 6 of them from a pass to a fail, in 5
    # questions (q06 in both epochs): the test is per question, the epochs of one found from the tables
    assert result.n == 18 and len(result.flips) == 9 and result.rate_a == pytest.approx(12 / 18)
    assert result.rate_b == pytest.approx(6 / 18) and (result.cluster, result.n_clusters) == ("sample_id", 10)
    assert result.p_val == pytest.approx(0.0625)  # 5 questions changed, all one way: 2 * 0.5 ** 5
    assert result.test == "exact sign-flip over clusters" and result.method == "cluster-betting"
    assert result.ci_low <= result.difference <= result.ci_high
    with pytest.warns(EvalkitWarning, match="have no verdict in one run"):
        rows = compare.paired(graded1.drop(columns="sample_id"), graded2.drop(columns="sample_id"))
    assert rows.p_val == pytest.approx(0.03125) and rows.cluster is None  # rows as independent: 2 * 0.5 ** 6
    estimate = infer.pass_rate(graded1, human.iloc[:10], method="classical")
    assert estimate["n_labelled"].iloc[0] == 10 and estimate["n_error"].iloc[0] == 2  # the errored and the ungraded


@needs_zstd
def test_log_tables_round_trip_and_feed_the_labeller(tmp_path):
    table = logs.read_inspect(DEMO / "inspect_v1.eval")
    back = judge.load_results(judge.save_results(table, tmp_path / "run.jsonl"))
    assert back["case_id"].tolist() == table["case_id"].tolist()
    assert back["verdict"].astype(object).where(back["verdict"].notna(), None).tolist() == \
        table["verdict"].astype(object).where(table["verdict"].notna(), None).tolist()
    pytest.importorskip("ipywidgets")
    from evalkit.widgets import Labeller

    graded = table[table["rubric"] == "model_graded_qa"]
    labeller = Labeller(graded, tmp_path / "labels.jsonl", levels=("PASS", "FAIL"), judge=graded, labeller="ann")
    labeller.buttons["FAIL"].click()
    assert labeller.labels().to_dict() == {"q01_epoch_1": "FAIL"}
    labeller.close()


def test_pass_rate_with_epochs_is_clopper_pearson_on_the_case_means_when_asked():
    table = logs.read_promptfoo(DEMO / "promptfoo_v2.json")
    rates = judge.pass_rate(table, interval="clopper-pearson").set_index("rubric")
    judged = table[table["error"].isna()]
    for rubric, group in judged.groupby("rubric"):
        means = (group["verdict"] == "PASS").groupby(group["sample_id"]).mean()
        k, n = means.sum(), len(means)
        low = stats.beta.ppf(0.025, k, n - k + 1) if k > 0 else 0.0
        high = stats.beta.isf(0.025, k + 1, n - k) if k < n else 1.0
        assert rates.loc[rubric, "n_clusters"] == n == 10 and rates.loc[rubric, "interval"] == "cluster-means"
        assert abs(rates.loc[rubric, "pass_rate"] - means.mean()) < 1e-12
        assert abs(rates.loc[rubric, "ci_low"] - low) < 1e-12 and abs(rates.loc[rubric, "ci_high"] - high) < 1e-12
    with pytest.raises(ValueError, match="`interval` must be one of"):
        judge.pass_rate(table, interval="wald")
    with pytest.raises(ValueError, match="`interval='wilson'` treats the cases as independent"):
        judge.pass_rate(table, interval="wilson")


def test_pass_rate_interval_coverage_with_clustered_epochs():
    """Coverage at the sizes logs have (20-200 cases, 1-5 epochs, skewed, clustered or not): Clopper-Pearson on the
    case means (interval='clopper-pearson' with epochs) holds nominal less 3 Monte Carlo s.e."""
    from evalkit._stats import clopper_pearson

    rng = np.random.default_rng(20240611)
    reps, failing = 2000, []
    mc_se = math.sqrt(0.95 * 0.05 / reps)
    for n in (20, 50, 100, 200):
        for mean in (0.5, 0.8, 0.9, 0.97):
            for epochs in (1, 3, 5):
                for concentration in (1.0, 1e6):  # beta(mean * c, (1 - mean) * c): strong clustering vs none
                    p = rng.beta(mean * concentration, (1 - mean) * concentration, size=(reps, n))
                    rate = (rng.binomial(epochs, p) / epochs).mean(axis=1)
                    low, high = clopper_pearson(rate * n, n, 0.95)
                    coverage = float(np.mean((low <= mean) & (mean <= high)))
                    if coverage < 0.95 - 3 * mc_se:
                        failing.append((coverage, n, epochs, mean, concentration))
    assert not failing, failing


# --- bad input ----------------------------------------------------------------------------------------------------

def test_readers_bad_input(tmp_path):
    missing = tmp_path / "missing.json"
    for reader in (logs.read_inspect, logs.read_promptfoo):
        with pytest.raises(FileNotFoundError, match="missing.json: no such file"):
            reader(missing)
    with pytest.raises(FileNotFoundError, match="missing.jsonl: no such file"):
        logs.read_openai_evals(tmp_path / "missing.jsonl")
    with pytest.raises(FileNotFoundError, match="nowhere: no such folder"):
        logs.read_lm_eval(tmp_path / "nowhere")
    text = tmp_path / "log.txt"
    text.write_text("hello")
    for reader, expected in ((logs.read_inspect, "an inspect_ai log"), (logs.read_promptfoo, "a promptfoo results file"),
                             (logs.read_openai_evals, "an OpenAI evals record file")):
        with pytest.raises(ValueError, match=f"log.txt: expected {expected}"):
            reader(text)
    with pytest.raises(TypeError, match="`path` must be a path"):
        logs.read_inspect(123)
    with pytest.raises(ValueError, match="log.txt: expected an lm-evaluation-harness results"):
        logs.read_lm_eval(text)
    with pytest.raises(ValueError, match=r"found 0 .*--output_path"):
        logs.read_lm_eval(tmp_path)


def test_truncated_files_are_refused(tmp_path):
    torn = tmp_path / "torn.eval"
    torn.write_bytes((HERE / "inspect" / "inspect_small.eval").read_bytes()[:5000])
    with pytest.raises(ValueError, match=r"torn.eval: not a complete inspect_ai .eval log .*truncated"):
        logs.read_inspect(torn)
    for name, source, reader in (("torn.json", SMALL_JSON, logs.read_inspect),
                                 ("torn_pf.json", DEMO / "promptfoo_v1.json", logs.read_promptfoo)):
        path = tmp_path / name
        path.write_text(source.read_text()[:3000])
        with pytest.raises(ValueError, match=f"{name}: not valid JSON"):
            reader(path)
    lines = (HERE / "openai_evals" / "match.jsonl").read_text()
    cut = tmp_path / "cut.jsonl"
    cut.write_text(lines[: lines.index("\n", 1000) + 40])
    with pytest.raises(ValueError, match=r"cut.jsonl, line \d+: not valid JSON"):
        logs.read_openai_evals(cut)
    unfinished = tmp_path / "unfinished.jsonl"
    unfinished.write_text("\n".join(line for line in lines.splitlines() if "final_report" not in line) + "\n")
    with pytest.warns(UserWarning, match="no final report: the run did not finish"):
        assert len(logs.read_openai_evals(unfinished)) == 6
    out = tmp_path / "lm"
    out.mkdir()
    source = next((HERE / "lm_eval" / "out").rglob("results_*.json"))
    (out / source.name).write_text(source.read_text())
    with pytest.raises(ValueError, match="no samples_<task>_.*--log_samples"):
        logs.read_lm_eval(out)


def test_wrong_contents_are_refused(tmp_path):
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"results": [1, 2]}))
    with pytest.raises(ValueError, match="other.json: not a promptfoo results file"):
        logs.read_promptfoo(other)
    with pytest.raises(ValueError, match="other.json: not an inspect_ai log"):
        logs.read_inspect(other)
    spec_only = tmp_path / "spec.jsonl"
    spec_only.write_text(json.dumps({"type": "match", "sample_id": "a.dev.0", "data": {"correct": True}}) + "\n")
    with pytest.raises(ValueError, match="spec.jsonl: no spec line"):
        logs.read_openai_evals(spec_only)
    zipped = tmp_path / "not_inspect.eval"
    import zipfile

    with zipfile.ZipFile(zipped, "w") as archive:
        archive.writestr("readme.txt", "hi")
    with pytest.raises(ValueError, match="not_inspect.eval: a zip archive without header.json"):
        logs.read_inspect(zipped)
    with pytest.raises(TypeError, match="`result` must be a deepeval EvaluationResult"):
        logs.from_deepeval(pd.DataFrame())
    with pytest.raises(TypeError, match="`frame` must be a pandas DataFrame"):
        logs.from_ragas([1, 2], threshold=0.5)
    with pytest.raises(KeyError, match=r"`threshold` has no value for metric column\(s\) \['b'\]"):
        logs.from_ragas(pd.DataFrame({"a": [0.1], "b": [0.2]}), threshold={"a": 0.5})
    with pytest.raises(ValueError, match="`frame` has no numeric metric column"):
        logs.from_ragas(pd.DataFrame({"user_input": ["q"], "response": ["r"]}), threshold=0.5)
    with pytest.raises(KeyError, match="`results` is missing column"):
        judge.pass_rate(pd.DataFrame({"case_id": ["a"]}))
    with pytest.raises(TypeError, match="`results` must be a pandas DataFrame"):
        judge.pass_rate("run.jsonl")


# --- untrusted files: size limits, archives, one case once, one bad value one row -----------------------------------

EVAL_SMALL = HERE / "inspect" / "inspect_small.eval"


def _zip(members) -> bytes:
    """A zip archive written byte by byte (Python's zipfile writes no Zstandard member and no lying sizes):
    ``members`` are ``(name, bytes as stored, method, crc32 of the content, declared content size)``."""
    import struct

    out, central = bytearray(), bytearray()
    for name, data, method, crc, size in members:
        offset, encoded = len(out), name.encode()
        out += struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, method, 0, 0, crc, len(data), size, len(encoded), 0)
        out += encoded + data
        central += struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, len(data), size,
                               len(encoded), 0, 0, 0, 0, 0, offset) + encoded
    return bytes(out + central + struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(members), len(members),
                                              len(central), len(out), 0))


def _eval_members(path=EVAL_SMALL) -> list[tuple[str, bytes]]:
    """Every member of a .eval archive as its name and its content (read with zstandard, not with evalkit)."""
    import zipfile

    zstandard = pytest.importorskip("zstandard")
    with zipfile.ZipFile(path) as archive:
        return [(info.filename, zstandard.ZstdDecompressor().stream_reader(archive.fp and _raw(path, info)).read())
                for info in archive.infolist()]


def _raw(path, info):
    """The stored (compressed) bytes of one zip member."""
    import io
    import struct

    data = Path(path).read_bytes()
    name_length, extra_length = struct.unpack("<HH", data[info.header_offset + 26:info.header_offset + 30])
    start = info.header_offset + 30 + name_length + extra_length
    return io.BytesIO(data[start:start + info.compress_size])


def _zstd(content: bytes, frames: int = 1) -> bytes:
    import zlib  # noqa: F401 - the crc of the content is the caller's

    zstandard = pytest.importorskip("zstandard")
    cut = [len(content) * i // frames for i in range(frames + 1)]
    return b"".join(zstandard.ZstdCompressor().compress(content[a:b]) for a, b in zip(cut, cut[1:], strict=False))


def _write_eval(path, members, *, frames: int = 1, method: int = 93):
    """A .eval archive of ``(name, content)`` members, each Zstandard-compressed (in ``frames`` frames) or deflated."""
    import zlib

    def stored(content):
        if method == 8:
            packer = zlib.compressobj(9, zlib.DEFLATED, -15)
            return packer.compress(content) + packer.flush()
        return _zstd(content, frames)

    path.write_bytes(_zip([(name, stored(content), method, zlib.crc32(content), len(content))
                           for name, content in members]))
    return path


def _zeros_stored(size: int, method: int) -> bytes:
    """``size`` zero bytes compressed a MiB at a time (a decompression bomb: tiny on disk)."""
    import zlib

    chunk = bytes(1 << 20)
    if method == 8:
        packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    else:
        packer = pytest.importorskip("zstandard").ZstdCompressor().compressobj()
    return b"".join([packer.compress(chunk) for _ in range(size >> 20)] + [packer.flush()])


def _zeros_crc(size: int) -> int:
    import zlib

    crc, chunk = 0, bytes(1 << 20)
    for _ in range(size >> 20):
        crc = zlib.crc32(chunk, crc)
    return crc


@needs_zstd
def test_a_multi_frame_zstd_member_reads_as_inspect_ai_reads_it(tmp_path):
    members = _eval_members()
    two = _write_eval(tmp_path / "two_frames.eval", members, frames=2)
    pd.testing.assert_frame_equal(logs.read_inspect(two), logs.read_inspect(EVAL_SMALL))
    deflated = _write_eval(tmp_path / "deflated.eval", members, method=8)  # a zip tool's deflate reads the same
    pd.testing.assert_frame_equal(logs.read_inspect(deflated), logs.read_inspect(EVAL_SMALL))


@needs_zstd
def test_a_duplicated_archive_member_is_refused(tmp_path):
    members = _eval_members()
    names = [name for name, _ in members]
    # a second copy of q02's first epoch, holding q09's answer: zipfile would read the last copy for both names
    q09 = dict(members)["samples/q09_epoch_1.json"]
    altered = json.loads(q09)
    altered["id"] = "q02"
    members.insert(names.index("header.json"), ("samples/q02_epoch_1.json", json.dumps(altered).encode()))
    path = _write_eval(tmp_path / "twice.eval", members)
    with pytest.raises(ValueError, match=r"twice.eval: member 'samples/q02_epoch_1.json' appears 2 times in the archive"):
        logs.read_inspect(path)


@needs_zstd
@pytest.mark.parametrize("method", [93, 8], ids=["zstd", "deflate"])
def test_a_decompression_bomb_is_refused_within_the_limit(tmp_path, method):
    size, limit = 64 << 20, 4 << 20
    bomb = _zeros_stored(size, method)
    assert len(bomb) < 200_000
    honest = tmp_path / "honest.eval"  # declares its 64 MiB: refused before anything is expanded
    honest.write_bytes(_zip([("header.json", bomb, method, _zeros_crc(size), size)]))
    refused, peak = peak_traced(lambda: logs.read_inspect(honest, max_bytes=limit))
    assert isinstance(refused, ValueError), refused
    assert "honest.eval: member 'header.json' expands to 67,108,864 bytes, more than the limit of 4,194,304" in str(refused)
    assert peak < limit
    liar = tmp_path / "liar.eval"  # declares 1,000 bytes and expands to 64 MiB: stopped as it passes them
    liar.write_bytes(_zip([("header.json", bomb, method, _zeros_crc(size), 1000)]))
    refused, peak = peak_traced(lambda: logs.read_inspect(liar, max_bytes=limit))
    assert isinstance(refused, ValueError), refused
    assert re.search(r"liar.eval: member 'header.json' (expands past the 1,000 bytes the archive declares|is not valid "
                     r"compressed data)", str(refused)), refused
    assert peak < limit + (2 << 20)  # at most the limit and one chunk


def test_the_default_limit_is_256_mib_and_applies_to_every_file(tmp_path):
    declared = tmp_path / "declared.eval"  # a member that says it expands to 300 MiB (its data is not even there)
    declared.write_bytes(_zip([("header.json", b"\x28\xb5\x2f\xfd", 93, 0, 300 << 20)]))
    with pytest.raises(ValueError, match=r"member 'header.json' expands to 314,572,800 bytes, more than the limit of "
                                         r"268,435,456 bytes \(max_bytes\)"):
        logs.read_inspect(declared)
    folder = HERE / "lm_eval" / "out"
    for reader, path in ((logs.read_inspect, SMALL_JSON), (logs.read_promptfoo, DEMO / "promptfoo_v1.json"),
                         (logs.read_promptfoo, HERE / "promptfoo" / "promptfoo_v1.jsonl"),
                         (logs.read_openai_evals, HERE / "openai_evals" / "match.jsonl"), (logs.read_lm_eval, folder)):
        with pytest.raises(ValueError, match=r"bytes, more than the limit of 1,000 bytes \(max_bytes\)"):
            reader(path, max_bytes=1000)
        with pytest.raises(TypeError, match="`max_bytes` must be a positive whole number of bytes"):
            reader(path, max_bytes=0)
    big = next(folder.rglob("samples_capitals_mc_*.jsonl")).stat().st_size
    with pytest.raises(ValueError, match=r"samples_capitals_mc_.*jsonl: .* more than the limit"):
        logs.read_lm_eval(folder, max_bytes=big - 1)  # the results file fits; a samples file does not


def _json_log(tmp_path, edit, name="edited.json"):
    log = json.loads(SMALL_JSON.read_text())
    edit(log)
    path = tmp_path / name
    path.write_text(json.dumps(log))
    return path


def test_a_case_given_twice_is_refused_in_every_reader(tmp_path):
    twice = _json_log(tmp_path, lambda log: log["samples"].append(log["samples"][0]))
    with pytest.raises(ValueError, match=r"edited.json: case 'q02_epoch_1' appears twice for rubric 'match' "
                                         r"\(samples\[0\] and samples\[6\]\)"):
        logs.read_inspect(twice)

    def one_and_text_one(log):  # q02 (epochs 1 and 2) as 1, q08 as "1": they would be one sample of four epochs
        for sample in log["samples"]:
            sample["id"] = {"q02": 1, "q08": "1"}.get(sample["id"], sample["id"])
    with pytest.raises(ValueError, match=r"edited.json: the ids (1 \(samples\[\d\]\) and '1'|'1' \(samples\[\d\]\) and 1) "
                                         r"\(samples\[\d\]\) are one case id '1' as text, which would merge two samples"):
        logs.read_inspect(_json_log(tmp_path, one_and_text_one))
    out = tmp_path / "lm"
    shutil.copytree(HERE / "lm_eval" / "out", out)
    samples = next(out.rglob("samples_capitals_mc_*.jsonl"))
    lines = samples.read_text().splitlines()
    samples.write_text("\n".join([*lines, lines[2]]) + "\n")  # doc 2 again
    with pytest.raises(ValueError, match=r"case '2' appears twice for rubric 'capitals_mc/acc,none' \(samples_capitals_mc_"
                                         r".*line 3 and samples_capitals_mc_.*line 7\)"):
        logs.read_lm_eval(out)
    dump = json.loads((HERE / "deepeval" / "deepeval_result.json").read_text())
    dump["test_results"][1]["name"] = dump["test_results"][0]["name"]
    with pytest.raises(ValueError, match=r"`result`: case '.*' appears twice .*test_results\[0\]\.metrics_data\[0\] and "
                                         r"test_results\[1\]\.metrics_data\[0\]"):
        logs.from_deepeval(dump)
    document = json.loads((DEMO / "promptfoo_v1.json").read_text())
    document["results"]["results"].append(document["results"]["results"][3])
    path = tmp_path / "pf.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"pf.json: results.results\[3\] and results.results\[20\] are both test \d+ of "
                                         r"prompt 0 for one provider"):
        logs.read_promptfoo(path)


def test_one_bad_value_is_one_error_row_and_blocks_nothing(tmp_path):
    def bad_scores(log):
        scores = log["samples"][0]["scores"]
        scores["match"]["value"] = float("inf")  # one infinite score
        scores["includes"]["value"] = {"a": 1, "b": 0}  # a dict
        log["samples"][1]["scores"]["includes"]["value"] = [1, 0]  # a list
    with pytest.warns(EvalkitWarning, match=r"3 value\(s\) are not what inspect_ai writes, so their rows are error rows"):
        table = logs.read_inspect(_json_log(tmp_path, bad_scores))
    clean = logs.read_inspect(SMALL_JSON)
    assert len(table) == len(clean) == 18  # nothing dropped
    bad = table["error"].notna() & clean["error"].isna()
    assert bad.sum() == 3 and table.loc[bad, "score"].isna().all()
    assert table.loc[bad, "error"].str.contains("not a finite number|is a dict|is a list").all()
    pd.testing.assert_frame_equal(table[~bad].drop(columns=["error", "verdict", "parsed"]),
                                  clean[~bad].drop(columns=["error", "verdict", "parsed"]))
    rates = judge.pass_rate(table).set_index("rubric")  # not blocked by the infinity: every rubric has its rate
    assert rates["n_error"].to_dict() == {"match": 2, "includes": 3, "model_graded_qa": 2}
    assert rates["pass_rate"].notna().all()


def test_lm_eval_one_bad_document_is_its_own_error_row(tmp_path):
    out = tmp_path / "lm"
    shutil.copytree(HERE / "lm_eval" / "out", out)
    samples = next(out.rglob("samples_capitals_mc_*.jsonl"))
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    records[1]["acc"], records[2]["acc"] = float("nan"), "high"
    del records[3]["acc_norm"]
    samples.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    with pytest.warns(EvalkitWarning, match=r"3 value\(s\) are not what lm-evaluation-harness writes"):
        table = logs.read_lm_eval(out)
    acc = table[table["rubric"] == "capitals_mc/acc,none"].set_index("case_id")
    assert acc.loc["1", "error"] == "acc is NaN for this document"
    assert acc.loc["2", "error"] == "acc is 'high', not a number"
    others = acc.drop(index=["1", "2"])
    assert others["error"].isna().all() and others["verdict"].isin(["PASS", "FAIL"]).all()  # still a 0/1 metric
    norm = table[table["rubric"] == "capitals_mc/acc_norm,none"].set_index("case_id")
    assert norm.loc["3", "error"] == "the document lists acc_norm in 'metrics' but has no value for it"
    assert norm.drop(index="3")["error"].isna().all()
    assert not table["error"].str.contains("not a 0/1 metric", na=False).any()


def test_schema_oddities_name_the_file_and_the_field(tmp_path):
    def edit(change):
        return _json_log(tmp_path, change)

    cases = [
        (lambda log: log["samples"][0].pop("id"), r"edited.json: samples\[0\] has no id"),
        (lambda log: log["samples"][0].update(epoch=None), r"edited.json: samples\[0\] has epoch None; expected a whole number"),
        (lambda log: log["samples"][0].update(epoch=1.5), r"samples\[0\] has epoch 1.5"),
        (lambda log: log["samples"].__setitem__(0, [log["samples"][0]]), r"samples\[0\] is a JSON list; expected a sample"),
        (lambda log: log["samples"][0].update(id=["q"]), r"samples\[0\]: id is \['q'\]; expected the case's id"),
        (lambda log: log["samples"][0].update(scores=[1]), r"samples\[0\] has scores of type list"),
        (lambda log: log["results"]["scores"][0].pop("name"), r"results.scores\[0\] has no name"),
    ]
    for change, message in cases:
        with pytest.raises(ValueError, match=message):
            logs.read_inspect(edit(change))

    def text_epoch(log):  # inspect_ai reads an epoch "2" as 2
        for sample in log["samples"]:
            sample["epoch"] = str(sample["epoch"])
    pd.testing.assert_frame_equal(logs.read_inspect(edit(text_epoch)), logs.read_inspect(SMALL_JSON))
    document = json.loads((DEMO / "promptfoo_v1.json").read_text())
    document["results"]["results"][0]["testIdx"] = None
    path = tmp_path / "pf.json"
    path.write_text(json.dumps(document))
    with pytest.raises(ValueError, match=r"pf.json, results.results\[0\]: testIdx is None; expected promptfoo's index"):
        logs.read_promptfoo(path)
    document = json.loads((DEMO / "promptfoo_v1.json").read_text())
    graded = next(r for r in document["results"]["results"] if r.get("gradingResult"))
    graded["gradingResult"]["componentResults"][0]["score"] = "high"
    path.write_text(json.dumps(document))
    with pytest.warns(EvalkitWarning, match="1 value"):
        table = logs.read_promptfoo(path)
    assert (table["error"] == "score is 'high', not a number").sum() == 1 and len(table) == 60
    lines = (HERE / "openai_evals" / "closedqa.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    errored = {e["sample_id"] for e in events if e.get("type") == "error"}
    first = next(e for e in events if e.get("type") == "metrics" and e["sample_id"] not in errored)
    first["data"]["score"] = "Y"
    evals = tmp_path / "evals.jsonl"
    evals.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    with pytest.warns(EvalkitWarning, match="1 value"):
        table = logs.read_openai_evals(evals)
    row = table.set_index("case_id").loc[first["sample_id"]]
    assert row["error"] == "score is 'Y', not a number" and np.isnan(row["score"])
    assert len(table) == len(logs.read_openai_evals(HERE / "openai_evals" / "closedqa.jsonl"))


def test_deepeval_and_ragas_keep_every_metric_through_one_bad_value():
    dump = json.loads((HERE / "deepeval" / "deepeval_result.json").read_text())
    dump["test_results"][0]["metrics_data"][0]["score"] = float("inf")
    dump["test_results"][1]["metrics_data"][0]["success"] = "yes"
    with pytest.warns(EvalkitWarning, match=r"2 value\(s\) are not what deepeval writes"):
        table = logs.from_deepeval(dump)
    assert len(table) == 12 and table["error"].notna().sum() == 3  # deepeval's own error, and the two
    assert table["error"].iloc[0] == "score is inf, not a finite number"
    frame = pd.read_json(HERE / "ragas" / "ragas_result.json", orient="table")
    thresholds = {"exact_match": 1.0, "string_present": 1.0, "non_llm_string_similarity": 0.5}
    clean = logs.from_ragas(frame, threshold=thresholds)
    frame["exact_match"] = frame["exact_match"].astype(object)
    frame.loc[2, "exact_match"] = "n/a"
    frame["notes"] = "checked"
    with pytest.warns(EvalkitWarning, match=r"1 value\(s\) are not what ragas writes"):
        table = logs.from_ragas(frame, threshold=thresholds)
    assert len(table) == len(clean) == 18 and table["rubric"].value_counts().eq(6).all()  # the metric is kept
    changed = table["error"].fillna("") != clean["error"].fillna("")
    assert table.loc[changed, ["case_id", "rubric", "error"]].values.tolist() == [
        ["2", "exact_match", "the exact_match score is 'n/a', not a number"]]
    assert table.attrs["skipped"] == {"values of column 'notes', neither a ragas sample field nor a metric (no number "
                                      "in it)": 6}
