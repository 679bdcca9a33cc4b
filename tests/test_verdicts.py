import numpy as np
import pandas as pd
import pytest

from evalkit import verdicts


def test_validate_normalises_labels_and_numbers_claims():
    table = pd.DataFrame({"item_id": ["a", "a", "b"], "verdict": [" FULLY", "Partially", "none "]})
    out = verdicts.validate(table)
    assert out["verdict"].tolist() == ["fully", "partial", "none"]
    assert out["verdict"].dtype == verdicts.VERDICT_DTYPE
    assert out["claim_idx"].tolist() == [0, 1, 0]
    assert table["verdict"].tolist() == [" FULLY", "Partially", "none "], "input must not be mutated"


def test_validate_keeps_given_claim_idx_and_categorical_input():
    table = pd.DataFrame({"item_id": ["a", "a"], "claim_idx": [3, 1],
                          "verdict": pd.Categorical(["Mostly", "minor"])})
    out = verdicts.validate(table)
    assert out["claim_idx"].tolist() == [3, 1]
    assert out["verdict"].tolist() == ["mostly", "minor"]


def test_unknown_label_names_row_value_and_allowed():
    table = pd.DataFrame({"item_id": ["a", "b", "b"], "verdict": ["fully", "fully", "maybe"]}, index=[10, 11, 12])
    with pytest.raises(ValueError, match=r"row 12 \(item_id='b'\): verdict 'maybe' is not one of \['none'"):
        verdicts.validate(table)


def test_missing_verdict_is_an_unknown_label():
    table = pd.DataFrame({"item_id": ["a"], "verdict": [None]})
    with pytest.raises(ValueError, match="is not one of"):
        verdicts.validate(table)


def test_duplicate_claims_rejected():
    table = pd.DataFrame({"item_id": ["a", "a", "b"], "claim_idx": [0, 0, 0], "verdict": ["fully"] * 3})
    with pytest.raises(ValueError, match=r"1 repeated \(item_id, claim_idx\) pair\(s\), first \('a', 0\)"):
        verdicts.validate(table)


@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_claims_numbered_and_repeats_found_in_any_row_order(rng, order):
    """claim_idx numbering equals groupby().cumcount(), and a repeated pair is named, whether or not each item's
    rows are together (the sorted case is checked without hashing)."""
    ids = np.repeat(np.array([f"i{k}" for k in range(3000)], dtype=object), rng.integers(1, 9, 3000))
    rows = np.arange(len(ids)) if order == "sorted" else rng.permutation(len(ids))
    table = pd.DataFrame({"item_id": ids[rows], "verdict": "fully"}, index=np.arange(len(ids)) * 2)
    expected = table.groupby("item_id", sort=False).cumcount().to_numpy()
    numbered = verdicts.validate(table)
    assert numbered["claim_idx"].dtype == np.int64 and np.array_equal(numbered["claim_idx"].to_numpy(), expected)
    verdicts.validate(numbered)  # numbered claims are each once
    repeat = numbered.copy()
    pos = len(repeat) - 5
    same_item = np.flatnonzero(repeat["item_id"].to_numpy() == repeat["item_id"].iloc[pos])
    other = same_item[same_item != pos]
    if not len(other):
        pytest.skip("the chosen item has one claim")
    first = min(pos, int(other[0]))
    second = max(pos, int(other[0]))
    repeat.iloc[second, repeat.columns.get_loc("claim_idx")] = repeat["claim_idx"].iloc[first]
    with pytest.raises(ValueError, match=rf"1 repeated \(item_id, claim_idx\) pair\(s\), first "
                                         rf"\('{repeat['item_id'].iloc[second]}', {repeat['claim_idx'].iloc[first]}\) "
                                         rf"at row {repeat.index[second]};"):
        verdicts.validate(repeat)


def test_repeats_found_when_claim_numbers_are_far_apart():
    table = pd.DataFrame({"item_id": ["a", "b", "b", "a"], "claim_idx": [0, 2**61, 2**61, -(2**61)],
                          "verdict": ["fully"] * 4})
    verdicts.validate(table.iloc[:3].drop(index=2))
    with pytest.raises(ValueError, match=r"first \('b', 2305843009213693952\) at row 2"):
        verdicts.validate(table)


@pytest.mark.parametrize("dtype", ["object", "str", "category"])
def test_large_tables_of_string_labels_count_as_small_ones(rng, dtype):
    """Above the size where labels are encoded on another thread than the item ids, counts and errors are those
    of the one-thread path (checked on the same table cut in pieces)."""
    n = 450_000
    spelled = np.array(["none", "MINOR", "partially", " Mostly", "Fully"], dtype=object)[rng.integers(0, 5, n)]
    ids = np.sort(rng.integers(0, 60_000, n)).astype(str)
    table = pd.DataFrame({"item_id": ids, "verdict": pd.Series(spelled, dtype=dtype)})
    whole = verdicts.level_counts(table)
    pieces = [verdicts.level_counts(table.iloc[i:i + 50_000]) for i in range(0, n, 50_000)]
    summed = pd.concat(pieces).groupby(level=0, sort=False).sum()
    pd.testing.assert_frame_equal(whole, summed)
    bad = table.assign(verdict=pd.Series(np.where(np.arange(n) == n - 3, "fuly", spelled), dtype=dtype))
    with pytest.raises(ValueError, match=rf"row {n - 3} \(item_id='{ids[n - 3]}'\): verdict 'fuly'"):
        verdicts.level_counts(bad)
    missing = table.copy()
    missing.loc[n - 7, "item_id"] = None
    with pytest.raises(ValueError, match=rf"row {n - 7}: item_id is missing"):
        verdicts.level_counts(missing)


@pytest.mark.parametrize(
    "table, error, message",
    [
        (pd.DataFrame({"item_id": ["a"]}), KeyError, r"missing column\(s\) \['verdict'\]; it has columns \['item_id'\]"),
        (pd.DataFrame({"item_id": [None], "verdict": ["fully"]}), ValueError, "item_id is missing"),
        (pd.DataFrame({"item_id": ["a"], "claim_idx": [0.5], "verdict": ["fully"]}), ValueError, "whole numbers"),
        (pd.DataFrame({"item_id": ["a"], "claim_idx": ["x"], "verdict": ["fully"]}), ValueError, "must hold integers"),
        ("verdicts.csv", TypeError, "got a path or string"),
    ],
)
def test_validate_bad_input(table, error, message):
    with pytest.raises(error, match=message):
        verdicts.validate(table)


def test_scales_are_the_papers():
    assert verdicts.get_scale().to_dict() == {"none": 0.0, "minor": 0.3, "partial": 0.7, "mostly": 0.9, "fully": 1.0}
    assert verdicts.get_scale("binary").tolist() == [0, 0, 0, 1, 1]
    assert verdicts.get_scale("aggressive").tolist() == [0, 0.1, 0.8, 0.95, 1]
    assert verdicts.get_scale("conservative").tolist() == [0, 0.2, 0.5, 0.8, 1]


def test_user_scale_accepts_alias_and_validates():
    scale = verdicts.get_scale({"Fully": 1, "mostly": 0.8, "partially": 0.6, "minor": 0.2, "none": 0})
    assert scale["partial"] == 0.6
    with pytest.raises(ValueError, match=r"missing \['none'\]"):
        verdicts.get_scale({"fully": 1, "mostly": 0.8, "partial": 0.6, "minor": 0.2})
    with pytest.raises(ValueError, match=r"weight for 'minor' must be a number in \[0, 1\]; got 1.5"):
        verdicts.get_scale({"fully": 1, "mostly": 0.8, "partial": 0.6, "minor": 1.5, "none": 0})
    with pytest.raises(ValueError, match="must be one of"):
        verdicts.get_scale("strict")
    with pytest.raises(TypeError):
        verdicts.get_scale(0.5)


def test_level_counts_match_a_loop(random_verdicts):
    table, items = random_verdicts
    counts = verdicts.level_counts(table, items=items)
    assert counts.index.equals(items)
    for item in items:
        expected = table.loc[table["item_id"] == item, "verdict"].value_counts()
        for level in verdicts.LEVELS:
            assert counts.loc[item, level] == expected.get(level, 0)
    assert (counts["n_claims"] == 0).sum() == len(set(items) - set(table["item_id"]))


def test_level_counts_rejects_items_not_listed():
    table = pd.DataFrame({"item_id": ["a", "z"], "verdict": ["fully", "none"]})
    with pytest.raises(ValueError, match=r"item_id\(s\) not in `items`: \['z'\]"):
        verdicts.level_counts(table, items=["a", "b"])
    with pytest.raises(ValueError, match="must be unique"):
        verdicts.level_counts(table, items=["a", "a", "z"])


def test_level_counts_without_items_keeps_first_appearance_order():
    table = pd.DataFrame({"item_id": ["b", "a", "b"], "verdict": ["fully", "none", "minor"]})
    counts = verdicts.level_counts(table)
    assert counts.index.tolist() == ["b", "a"]
    np.testing.assert_array_equal(counts.loc["b", list(verdicts.LEVELS)], [0, 1, 0, 0, 1])


def test_string_labels_are_normalised_once_per_distinct_label():
    labels = ["Fully", " partially", "NONE ", "mostly", "minor", "Partial", "fully"] * 3
    expected = ["fully", "partial", "none", "mostly", "minor", "partial", "fully"] * 3
    for column in (pd.Series(labels, dtype=object), pd.Series(labels, dtype="string"), pd.Series(labels).astype("category")):
        table = pd.DataFrame({"item_id": np.arange(len(labels)) // 4, "verdict": column})
        out = verdicts.validate(table)
        assert out["verdict"].dtype == verdicts.VERDICT_DTYPE
        assert out["verdict"].astype(str).tolist() == expected
        assert table["verdict"].tolist() == labels  # the input is untouched


@pytest.mark.parametrize("bad", [None, np.nan, pd.NA, "", "fullyy", 3])
def test_unknown_or_missing_string_label_names_the_row(bad):
    column = pd.Series(["fully", "none", bad, "mostly"], dtype=object, index=[10, 11, 12, 13])
    table = pd.DataFrame({"item_id": ["a", "a", "b", "b"], "verdict": column}, index=column.index)
    with pytest.raises(ValueError, match=r"row 12 \(item_id='b'\).*1 row\(s\) have unknown verdicts"):
        verdicts.validate(table)


def test_none_read_as_missing_by_read_csv_gets_a_hint():
    import io

    text = "item_id,verdict\na,fully\na,None\n"
    with pytest.raises(ValueError, match="row 1 .*read_csv, which reads the text 'None' as missing: read with "
                                         "keep_default_na=False"):
        verdicts.validate(pd.read_csv(io.StringIO(text)))
    table = verdicts.validate(pd.read_csv(io.StringIO(text), keep_default_na=False))
    assert table["verdict"].astype(str).tolist() == ["fully", "none"]


def test_item_numbering_without_hashing_every_row_is_factorize():
    """The items' numbering (runs of grouped integer ids, neighbours of ascending ones, or hashing) is always what
    pandas.factorize gives, and the level codes what each label means, whatever the order of the rows."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from evalkit import _coerce

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.tuples(st.integers(-3, 6), st.integers(1, 4)), min_size=1, max_size=30), st.booleans())
    def check(runs, shuffle):
        ids = np.repeat([i for i, _ in runs], [k for _, k in runs])
        if shuffle:
            np.random.default_rng(len(ids)).shuffle(ids)
        labels = pd.Series(np.asarray(verdicts.LEVELS)[np.arange(len(ids)) % 5])
        codes, uniques, levels, disorder = _coerce.claim_codes(pd.Series(ids), labels)
        expected_codes, expected_uniques = pd.factorize(ids)
        np.testing.assert_array_equal(codes, expected_codes)
        np.testing.assert_array_equal(np.asarray(uniques), expected_uniques)
        np.testing.assert_array_equal(levels(), np.arange(len(ids)) % 5)
        assert disorder == -1

    check()
