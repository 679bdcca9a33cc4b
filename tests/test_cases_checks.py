import json

import numpy as np
import pandas as pd
import pytest

from evalkit import cases, checks
from tests._extras import needs_parquet


def write(path, text):
    path.write_text(text, encoding="utf-8")
    return path


@needs_parquet
def test_read_jsonl_csv_parquet_agree(tmp_path):
    table = pd.DataFrame({"case_id": ["1", "b", "c"], "input": ["x", "y", "z"], "output": ["o1", "o2", ""]})
    jsonl = write(tmp_path / "c.jsonl", "\n".join(json.dumps(r) for r in table.to_dict("records")) + "\n\n")
    table.to_csv(tmp_path / "c.csv", index=False)
    table.to_parquet(tmp_path / "c.parquet")
    a = cases.read_cases(jsonl)
    b = cases.read_cases(tmp_path / "c.csv")
    c = cases.read_cases(tmp_path / "c.parquet")
    assert a["case_id"].tolist() == b["case_id"].tolist() == c["case_id"].tolist() == ["1", "b", "c"]
    assert list(a.columns) == ["case_id", "input", "output"]


def test_numeric_ids_become_text(tmp_path):
    path = write(tmp_path / "c.jsonl", '{"case_id": 7, "input": "x"}\n')
    assert cases.read_cases(path)["case_id"].tolist() == ["7"]


@pytest.mark.parametrize(
    "text, message",
    [
        ('{"case_id": "a"}\n{"case_id": "b", \n', r"c.jsonl, line 2: not valid JSON"),
        ('{"case_id": "a"}\n["b"]\n', r"line 2: expected a JSON object; got list"),
        ('{"case_id": "a"}\n\n{"input": "x"}\n', r"line 3: the record has no 'case_id'"),
        ('{"case_id": "a"}\n{"case_id": "b"}\n{"case_id": "a"}\n', r"case_id 'a' appears more than once \(line 1, line 3\)"),
        ("\n\n", "holds no case"),
    ],
)
def test_read_jsonl_errors_name_file_and_line(tmp_path, text, message):
    with pytest.raises(ValueError, match=message):
        cases.read_cases(write(tmp_path / "c.jsonl", text))


def test_read_csv_errors(tmp_path):
    with pytest.raises(ValueError, match=r"c.csv: case_id 'x' appears more than once \(record 1 \(line 2\), record 3 \(line 4\)\)"):
        cases.read_cases(write(tmp_path / "c.csv", "case_id,input\nx,1\ny,2\nx,3\n"))
    with pytest.raises(ValueError, match=r"record 2 \(line 3\) has no case_id"):
        cases.read_cases(write(tmp_path / "d.csv", "case_id,input\nx,1\n,2\n"))
    with pytest.raises(KeyError, match=r"no 'case_id' column; the columns are \['id', 'input'\]"):
        cases.read_cases(write(tmp_path / "e.csv", "id,input\nx,1\n"))
    with pytest.raises(ValueError, match="cannot tell the format"):
        cases.read_cases(write(tmp_path / "f.txt", "x"))
    with pytest.raises(FileNotFoundError):
        cases.read_cases(tmp_path / "missing.jsonl")


def test_custom_id_column(tmp_path):
    path = write(tmp_path / "c.jsonl", '{"id": "a", "output": "x"}\n')
    assert cases.read_cases(path, id_column="id").columns.tolist() == ["case_id", "output"]


def test_sample_cases_is_random_not_head():
    table = pd.DataFrame({"case_id": [f"c{i}" for i in range(100)], "day": np.repeat(["mon", "tue", "wed", "thu"], [40, 30, 20, 10])})
    sample = cases.sample_cases(table, 10, rng=1)
    assert len(sample) == 10 and sample["case_id"].is_unique
    assert sample.index.tolist() != list(range(10))
    assert not sample.index.equals(cases.sample_cases(table, 10, rng=2).index)
    pd.testing.assert_frame_equal(sample, cases.sample_cases(table, 10, rng=1))


def test_sample_cases_stratified_is_proportional():
    table = pd.DataFrame({"case_id": [f"c{i}" for i in range(100)], "day": np.repeat(["mon", "tue", "wed", "thu"], [40, 30, 20, 10])})
    sample = cases.sample_cases(table, 20, stratify="day", rng=0)
    assert sample["day"].value_counts().to_dict() == {"mon": 8, "tue": 6, "wed": 4, "thu": 2}
    odd = cases.sample_cases(table, 7, stratify="day", rng=0)["day"].value_counts()
    assert odd.sum() == 7 and all(abs(odd.get(d, 0) - 7 * n / 100) < 1 for d, n in (("mon", 40), ("tue", 30), ("wed", 20), ("thu", 10)))


def test_sample_cases_bad_input():
    table = pd.DataFrame({"case_id": ["a", "b"], "day": ["x", None]})
    with pytest.raises(ValueError, match=r"`n` must be in \[0, 2\]; got 3"):
        cases.sample_cases(table, 3)
    with pytest.raises(KeyError, match="customer"):
        cases.sample_cases(table, 1, stratify="customer")
    with pytest.raises(ValueError, match="missing values"):
        cases.sample_cases(table, 1, stratify="day")


# ------------------------------------------------------------------ checks
OUTPUTS = pd.Series({
    "ok": '{"label": "yes", "score": 3, "meta": {"source": "doc1"}}',
    "bad_json": '{"label": "yes", ',
    "wrong_value": '{"label": "maybe", "score": 9, "meta": {}}',
    "text": "yes",
    "missing": None,
})


def test_run_checks_table():
    table = checks.run_checks(OUTPUTS, [
        checks.valid_json(),
        checks.required_fields(["label", "meta.source"]),
        checks.value_in({"yes", "no"}, field="label", name="label_ok"),
        checks.number_in_range(1, 5, field="score"),
        checks.max_length(45, name="short"),
        checks.regex(r"^\{", name="starts_with_brace"),
    ])
    expected = {
        "ok": [True, True, True, True, False, True],
        "bad_json": [False, False, False, False, True, True],
        "wrong_value": [True, False, False, False, True, True],
        "text": [False, False, False, False, True, False],
        "missing": [False] * 6,
    }
    for case, row in expected.items():
        assert table.loc[case].iloc[:-1].tolist() == row, case
        assert table.loc[case, "all_passed"] == all(row)
    assert table.index.name == "case_id"


def test_checks_on_plain_text_and_lists():
    assert checks.value_in({"yes"})(" yes ")
    assert not checks.value_in({"yes"}, field="label")('{"label": ["yes"]}')
    assert not checks.number_in_range(0, 1)("true")
    assert checks.number_in_range(0, 1)("0.5")
    assert not checks.number_in_range(0, 1)("NaN")
    assert checks.max_length(2, unit="words")("two words")
    assert checks.regex("secret", must_match=False)("nothing here")


def test_run_checks_from_cases_table_and_bad_input():
    table = pd.DataFrame({"case_id": ["a"], "output": ["{}"]})
    assert checks.run_checks(table, [checks.valid_json()]).loc["a", "all_passed"]
    with pytest.raises(ValueError, match="must be unique"):
        checks.run_checks(OUTPUTS, [checks.valid_json(), checks.valid_json()])
    with pytest.raises(TypeError, match="Check objects"):
        checks.run_checks(OUTPUTS, [lambda s: True])
    with pytest.raises(TypeError, match="Series"):
        checks.run_checks(["x"], [checks.valid_json()])
    with pytest.raises(KeyError, match="output"):
        checks.run_checks(pd.DataFrame({"case_id": ["a"]}), [checks.valid_json()])
    with pytest.raises(ValueError, match="unit"):
        checks.max_length(3, unit="tokens")


@pytest.mark.parametrize("text, message", [
    # the stray quote opens a field that swallows the rest of the line: one field where the header has three
    ('case_id,input,output\n"case-001,What is the warranty?,Two years\ncase-002,Hi,Hello\n',
     r"record 1 \(line 2\) has 1 fields; the header has 3"),
    # ... or the next line too, where the field count happens to match: the id spans two lines
    ('case_id,input,output\n"case-001,What is the warranty?,Two years\ncase-002,Hi",Hello,there\ncase-003,a,b\n',
     r"record 1 \(line 2\) does not parse as the header says: its case_id spans lines 2 to 3"),
])
def test_read_csv_refuses_a_stray_quote_naming_the_line(tmp_path, text, message):
    path = tmp_path / "cases.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match=message):
        cases.read_cases(path)
