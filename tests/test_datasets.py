import json
import runpy
from pathlib import Path

import pandas as pd
import pytest

from evalkit import datasets, verdicts
from tests.conftest import shared_dataset

ROOT = Path(__file__).resolve().parents[1]


def test_load_demo_tcva():
    demo = datasets.load_demo("tcva")
    table, items = demo["verdicts"], demo["items"]
    assert table["verdict"].dtype == verdicts.VERDICT_DTYPE
    assert items.index.name == "item_id" and items.index.is_unique
    assert set(table["item_id"]) <= set(items.index)
    assert (~items.index.isin(table["item_id"])).sum() > 0, "the demo keeps items without claims"
    assert items["human"].between(1, 5).all()


def test_load_demo_judge_systems_one_rubric():
    demo = datasets.load_demo("judge")
    systems = demo["systems"]
    assert systems.groupby("system").size().to_dict() == {"bot-v1": 100, "bot-v2": 100, "bot-v3": 100}
    assert not systems.duplicated(["system", "case_id"]).any()
    first = systems[systems["system"] == "bot-v1"].set_index("case_id")
    cases = demo["cases"].set_index("case_id")
    assert first["output"].equals(cases["output"]) and first["source"].equals(cases["source"])
    assert first["label"].equals(demo["labels"].set_index("case_id")["label"])
    assert first["raw"].equals(demo["outputs"].query("rubric == 'v1'").set_index("case_id")["raw"])
    # every version answers the same questions from the same sources
    for _, part in systems.groupby("system"):
        assert part.set_index("case_id")[["input", "source"]].sort_index().equals(cases[["input", "source"]].sort_index())
    # one judge: the same prompt (case and answer) always gets the same reply
    assert systems.groupby(["case_id", "output"])["raw"].nunique().eq(1).all()
    # a later answer is labelled FAIL exactly when its figure differs from the source's
    later = systems[systems["system"] != "bot-v1"]
    answers = later["output"].map(lambda text: json.loads(text)["answer"])
    stated = [answer in source for answer, source in zip(answers.str.rstrip("."), later["source"], strict=True)]
    assert (later["label"] == "PASS").tolist() == stated


def test_load_demo_unknown_name():
    with pytest.raises(ValueError, match=r"must be one of \['fd', 'judge', 'pairwise', 'tcva'\]"):
        datasets.load_demo("summeval")


def test_demo_files_are_what_the_seeded_script_writes(tmp_path):
    runpy.run_path(str(ROOT / "data" / "make_demo.py"))["main"](tmp_path)
    for path in sorted(tmp_path.iterdir()):
        assert path.read_bytes() == (datasets.demo_path() / path.name).read_bytes(), path.name


def test_release_loader_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[{\"id\": 1,")
    with pytest.raises(ValueError, match=r"bad.json: not valid JSON \(line 1"):
        datasets.load_tcva_release(bad)
    with pytest.raises(FileNotFoundError, match="missing.json"):
        datasets.load_tcva_release(tmp_path / "missing.json")
    wrong = tmp_path / "wrong.json"
    wrong.write_text('[{"id": "a", "human_score": 0.5, "verdicts": [{"verdict": "sure"}]}]')
    with pytest.raises(ValueError, match=r"wrong.json: .*verdict 'sure' is not one of"):
        datasets.load_tcva_release(wrong)


def test_release_loader_small_file(tmp_path):
    path = tmp_path / "x_tcva_scores.json"
    path.write_text(
        '[{"id": "summeval_doc-1_3", "human_score": 0.5, "tcva_scores": {"T0.5": 0.7},'
        ' "verdicts": [{"verdict": "fully", "reason": "r"}, {"verdict": "partially", "reason": "s", "support": "q"}]},'
        ' {"id": "summeval_doc-2_0", "human_score": 0.25, "tcva_scores": {"T0.5": -1.0}, "verdicts": [], "error": "bad json"}]'
    )
    table, items = datasets.load_tcva_release(path)
    assert table["verdict"].tolist() == ["fully", "partial"]
    assert table["claim_idx"].tolist() == [0, 1]
    assert items.loc["summeval_doc-2_0", "error"] == "bad json"
    assert pd.isna(items.loc["summeval_doc-2_0", "stored_T0.5"])
    assert items.loc["summeval_doc-1_3", ["document", "system"]].tolist() == ["doc-1", "3"]


@pytest.mark.slow
def test_load_summeval_real_release():
    table = datasets.load_summeval(shared_dataset("summeval"))
    assert table.shape[0] == 1600 and table.index.is_unique and table["system"].nunique() == 16
    assert table.groupby("doc_id").size().eq(16).all()
    # the figures the data set's README states for the expert means
    assert table["relevance"].mean() == pytest.approx(3.7771, abs=5e-5)
    assert table["relevance"].nunique() == 13 and table["rouge1_f"].between(0.0995, 0.5405).all()
    by_system = table.groupby("system")["relevance"].mean()
    assert by_system["M11"] == pytest.approx(3.147, abs=5e-4) and by_system["M23"] == pytest.approx(4.26, abs=5e-4)
    assert table.index[0] == "dm-test-8764fb95bfad8ee849274873a92fb8d6b400eee2/M11"


def test_load_summeval_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="ctc_summeval_metric_scores.json: no such file"):
        datasets.load_summeval(tmp_path)
    (tmp_path / "ctc_summeval_metric_scores.json").write_text('{"d1": ')
    with pytest.raises(ValueError, match="not valid JSON"):
        datasets.load_summeval(tmp_path)
    (tmp_path / "ctc_summeval_metric_scores.json").write_text('{"d1": {"src": "x"}}')
    with pytest.raises(ValueError, match="document 'd1' has no 'hypos'"):
        datasets.load_summeval(tmp_path / "ctc_summeval_metric_scores.json")


def test_data_path_names_the_parameter_and_the_missing_file(tmp_path):
    assert datasets.data_path(None, parameter="TCVA_DIR") is None
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "a_tcva_scores.json").write_text("[]")
    assert datasets.data_path(str(tmp_path), parameter="TCVA_DIR", files=["results/*_tcva_scores.json"]) == tmp_path
    with pytest.raises(FileNotFoundError, match=r"`TCVA_DIR`=.* lacks results/b_ragas_scores.json"):
        datasets.data_path(tmp_path, parameter="TCVA_DIR", files=["results/*_tcva_scores.json", "results/b_ragas_scores.json"])
    with pytest.raises(FileNotFoundError, match=r"`TCVA_DIR`='/nonexistent/tcva' does not exist"):
        datasets.data_path("/nonexistent/tcva", parameter="TCVA_DIR", files=["x"])
    with pytest.raises(FileNotFoundError, match=r"`HEALTHFC_CSV`=.* must be a file"):
        datasets.data_path(tmp_path, parameter="HEALTHFC_CSV")
    with pytest.raises(FileNotFoundError, match=r"`TCVA_DIR`=.* must be a folder"):
        datasets.data_path(tmp_path / "results" / "a_tcva_scores.json", parameter="TCVA_DIR", files=["x"])
    with pytest.raises(TypeError, match="`TCVA_DIR` must be a path"):
        datasets.data_path(3, parameter="TCVA_DIR")


HEALTHFC_HEADER = ["en_claim", "en_explanation", "en_top_sentences", "de_claim", "de_explanation", "de_top_sentences",
                   "label", "de_verdict", "de_title", "authors", "date", "url"]


def _healthfc_row(label="1", date="17. November 2022", claim="Does zinc shorten a cold?"):
    return [claim, "Perhaps.", "Two trials.\nOne review.", "Verkürzt Zink?", "", "", label, "Belege fehlen", "Zink",
            "A. Author,B. Author", date, "https://example.org/zink"]


def _write_healthfc(folder, rows, header=HEALTHFC_HEADER):
    import csv

    path = folder / "Datensatz.csv"
    with path.open("w", encoding="utf-8-sig", newline="") as handle:
        csv.writer(handle).writerows([header, *rows])
    return path


def test_load_healthfc_small_file(tmp_path):
    path = _write_healthfc(tmp_path, [_healthfc_row("0", "5. Dezember 2022"), _healthfc_row("2", "1. März 2013", "Q2?")])
    table = datasets.load_healthfc(tmp_path)
    assert table.index.tolist() == ["hfc-000", "hfc-001"] and table.index.name == "claim_id"
    assert table["label"].tolist() == ["supported", "refuted"]
    assert table["label"].cat.categories.tolist() == ["supported", "not enough information", "refuted"]
    assert table["evidence"].iloc[0] == "Two trials.\nOne review."  # a quoted multi-line field stays one field
    assert table["date"].dt.strftime("%Y-%m-%d").tolist() == ["2022-12-05", "2013-03-01"]
    assert table["claim"].iloc[1] == "Q2?" and table["explanation_de"].iloc[0] == ""
    assert datasets.load_healthfc(path).equals(table)  # the file itself, or its folder


def test_load_healthfc_refuses_what_does_not_parse(tmp_path):
    with pytest.raises(FileNotFoundError, match="Datensatz.csv: no such file"):
        datasets.load_healthfc(tmp_path)
    # the second record starts on line 4: the first one's evidence spans lines 2 and 3
    _write_healthfc(tmp_path, [_healthfc_row(), _healthfc_row("3")])
    with pytest.raises(ValueError, match=r"Datensatz.csv, line 4: label '3' is not one of 0 \(supported\)"):
        datasets.load_healthfc(tmp_path)
    _write_healthfc(tmp_path, [_healthfc_row(), _healthfc_row(date="2022-12-05")])
    with pytest.raises(ValueError, match=r"line 4: date '2022-12-05' is not a date such as '5. Dezember 2022'"):
        datasets.load_healthfc(tmp_path)
    _write_healthfc(tmp_path, [_healthfc_row(), _healthfc_row()[:-1]])
    with pytest.raises(ValueError, match="line 4: 11 fields where the header has 12"):
        datasets.load_healthfc(tmp_path)
    _write_healthfc(tmp_path, [_healthfc_row()], header=[c for c in HEALTHFC_HEADER if c != "label"])
    with pytest.raises(ValueError, match=r"missing column\(s\) \['label'\]; the header has \['en_claim'"):
        datasets.load_healthfc(tmp_path)
    path = _write_healthfc(tmp_path, [_healthfc_row()])
    path.write_text(path.read_text(encoding="utf-8-sig") + '"open quote, never closed\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"Datensatz.csv, line 4: not valid CSV"):
        datasets.load_healthfc(tmp_path)
    path.write_bytes(b"en_claim,\xff\n")
    with pytest.raises(ValueError, match="not valid UTF-8"):
        datasets.load_healthfc(path)
    path.write_bytes(b"")
    with pytest.raises(ValueError, match="the file is empty"):
        datasets.load_healthfc(path)


@pytest.mark.slow
def test_load_healthfc_real_release():
    table = datasets.load_healthfc(shared_dataset("healthfc"))
    # the figures the data set's README states
    assert table.shape == (750, 12) and table["claim"].is_unique
    assert table["label"].value_counts().to_dict() == {"not enough information": 423, "supported": 202, "refuted": 125}
    years = table["date"].dt.year.value_counts().sort_index()
    assert years.to_dict() == {2011: 14, 2012: 13, 2013: 38, 2014: 66, 2015: 36, 2016: 105, 2017: 81, 2018: 91, 2019: 88,
                               2020: 82, 2021: 89, 2022: 47}
    assert table["url"].nunique() == 648 and table["verdict_de"].nunique() == 55
    assert table.groupby("verdict_de")["label"].nunique().eq(1).all()
    assert (table["explanation"] == "").sum() == 9 and ((table["explanation"] == "") == (table["explanation_de"] == "")).all()
    lengths = table["claim"].str.len()
    assert (lengths.min(), lengths.median(), lengths.max()) == (21, 76, 395)
    assert table.loc["hfc-000", "claim"].startswith("Can masks reduce corona infections")
