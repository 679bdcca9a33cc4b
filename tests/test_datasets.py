import runpy
from pathlib import Path

import pandas as pd
import pytest

from evalkit import datasets, verdicts

ROOT = Path(__file__).resolve().parents[1]


def test_load_demo_tcva():
    demo = datasets.load_demo("tcva")
    table, items = demo["verdicts"], demo["items"]
    assert table["verdict"].dtype == verdicts.VERDICT_DTYPE
    assert items.index.name == "item_id" and items.index.is_unique
    assert set(table["item_id"]) <= set(items.index)
    assert (~items.index.isin(table["item_id"])).sum() > 0, "the demo keeps items without claims"
    assert items["human"].between(1, 5).all()


def test_load_demo_unknown_name():
    with pytest.raises(ValueError, match=r"must be one of \['fd', 'judge', 'tcva'\]"):
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
