"""Verdict labels given as strings, whatever holds them (Python objects, pyarrow chunks, categories), read alike."""

import numpy as np
import pandas as pd
import pytest

from evalkit import tcva, verdicts
from evalkit._coerce import claim_level_codes

LABELS = np.array(["fully", "Mostly ", " partially", "NONE", "minor", "bogus", "", "fully\x00", "é", "partial"],
                  dtype=object)


@pytest.fixture
def labels(rng):
    values = LABELS[rng.integers(0, len(LABELS), 250_000)]
    values[rng.random(len(values)) < 0.01] = None
    return values


def expected(values) -> np.ndarray:
    """The level of each label by hand: stripped, lower-cased, 'partially' read as 'partial'; -1 otherwise."""
    names = {"fully": 4, "mostly": 3, "partial": 2, "partially": 2, "minor": 1, "none": 0}
    return np.array([-1 if v is None else names.get(v.strip().lower(), -1) for v in values], dtype=np.int8)


@pytest.mark.parametrize("dtype", ["object", "str", "string[pyarrow]", "string[python]", "category", "large_string",
                                   "chunked", "sliced"])
def test_level_codes_of_strings_however_they_are_held(labels, dtype):
    if dtype in ("string[pyarrow]", "large_string", "chunked"):
        pa = pytest.importorskip("pyarrow", reason='strings held by pyarrow: pip install "llm-evalkit[parquet]"')
    if dtype == "large_string":
        series = pd.Series(labels, dtype=pd.ArrowDtype(pa.large_string()))
    elif dtype == "chunked":  # several chunks; the first lacks some labels, a later one has a label of its own
        labels = labels.copy()
        labels[:60_000][np.isin(labels[:60_000], ["minor", "bogus"])] = "fully"
        labels[200_000] = "partial!"
        chunks = [pa.array(labels[i:i + 60_000].tolist(), pa.large_string()) for i in range(0, len(labels), 60_000)]
        series = pd.Series(pd.arrays.ArrowStringArray(pa.chunked_array(chunks)))
    elif dtype == "sliced":  # an arrow array that starts inside its buffers
        series = pd.Series(labels, dtype="str").iloc[7:]
        labels = labels[7:]
    else:
        series = pd.Series(labels, dtype=dtype)
    codes = claim_level_codes(series)
    assert codes.dtype == np.int8 and (codes == expected(labels)).all()


def test_sweep_of_string_verdicts_equals_the_categorical_sweep(rng):
    n = 300_000
    levels = rng.integers(0, 5, n)
    spelled = np.array([["none", "None "], ["minor", "MINOR"], ["partially", "partial"], ["mostly", " Mostly"],
                        ["fully", "Fully"]], dtype=object)[levels, rng.integers(0, 2, n)]
    item = np.sort(rng.integers(0, 40_000, n))
    table = pd.DataFrame({"item_id": item, "verdict": pd.Categorical.from_codes(levels, dtype=verdicts.VERDICT_DTYPE)})
    temperatures = [0.1, 0.5, 1.0]
    expect = tcva.sweep(table, temperatures)
    for dtype in ("str", "object"):
        pd.testing.assert_frame_equal(tcva.sweep(table.assign(verdict=pd.Series(spelled, dtype=dtype)), temperatures),
                                      expect)
    with pytest.raises(ValueError, match="verdict 'bogus' is not one of"):
        tcva.sweep(table.assign(verdict=pd.Series(np.where(np.arange(n) == 5, "bogus", spelled), dtype="str")), [0.5])


def test_a_bad_label_deep_in_a_long_string_column_is_named(rng):
    """Encoded on other threads while the items are checked, a long column's unknown label still names its row."""
    n = 300_000
    spelled = np.array(["none", "minor", "partial", "mostly", "fully"], dtype=object)[rng.integers(0, 5, n)]
    spelled[250_123] = "mostlyy"
    table = pd.DataFrame({"item_id": np.repeat(np.arange(n // 3), 3), "verdict": pd.Series(spelled, dtype="str")})
    with pytest.raises(ValueError, match=r"row 250123 \(item_id=83374\): verdict 'mostlyy' is not one of"):
        verdicts.level_counts(table)
    with pytest.raises(ValueError, match="item_id is missing"):  # an item check still comes first
        verdicts.level_counts(table.assign(item_id=table["item_id"].astype(float).where(table.index != 5)))
