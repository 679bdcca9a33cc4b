"""The private floor: the JSON/JSONL reader, interval helpers, verdict coercion, label storage and the call engine."""

import json

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import calibrate, judge, labels, models
from evalkit._coerce import as_pass, judge_verdicts, normalise_level
from evalkit._io import read_json, read_json_lines
from evalkit._stats import rate_interval, wilson, z_value
from tests._extras import needs


def test_jsonl_keeps_unicode_line_separators_inside_text(tmp_path):
    path = tmp_path / "a.jsonl"
    text = "one\u2028two\u2029three\u0085four\x1c"
    path.write_text(json.dumps({"t": text}, ensure_ascii=False) + '\n{"t": "x"}\n', encoding="utf-8")
    assert "\u2028" in path.read_text(encoding="utf-8")  # written raw, as evalkit's writers do
    records, torn = read_json_lines(path)
    assert [r["t"] for _, r in records] == [text, "x"] and [n for n, _ in records] == [1, 2] and torn is None


def test_jsonl_errors_name_file_line_and_column(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"a": 1}\n\n{"a": \n')
    with pytest.raises(ValueError, match=r"a.jsonl, line 3: not valid JSON \(Expecting value at column 7\)"):
        read_json_lines(path)
    path.write_bytes(b'{"a": 1}\n{"a": "caf\xe9"}\n')
    with pytest.raises(ValueError, match=r"a.jsonl, line 2: not valid utf-8 text \(byte 0xe9 at column 11\)"):
        read_json_lines(path)
    assert read_json_lines(path, encoding="latin-1")[0][1][1] == {"a": "café"}
    with pytest.raises(FileNotFoundError, match="no such file"):
        read_json_lines(tmp_path / "missing.jsonl")


def test_torn_tail_is_returned_only_when_asked(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_text('{"a": 1}\n{"a": 2, "b"')
    records, torn = read_json_lines(path, torn_tail=True)
    assert [r for _, r in records] == [{"a": 1}] and torn == '{"a": 2, "b"'
    with pytest.raises(ValueError, match="line 2"):
        read_json_lines(path)
    path.write_text('{"a": 2, "b"\n{"a": 1}\n')  # not the last line: damage, not a torn write
    with pytest.raises(ValueError, match="line 1"):
        read_json_lines(path, torn_tail=True)


def test_read_json_names_line_and_column(tmp_path):
    path = tmp_path / "a.json"
    path.write_text('[\n  {"a": 1},\n  {"a": }\n]')
    with pytest.raises(ValueError, match=r"a.json: not valid JSON \(line 3, column 9"):
        read_json(path)
    path.write_bytes(b'[\n"ok",\n"\xff"]')
    with pytest.raises(ValueError, match=r"line 3: not valid utf-8 text \(byte 0xff at column 2\)"):
        read_json(path)


@pytest.mark.parametrize("k, n", [(0, 10), (3, 10), (10, 10), (29, 35)])
def test_intervals_against_references(k, n):
    low, high = wilson(k, n, 0.95)
    # Wilson's formula by hand
    z, p = stats.norm.ppf(0.975), k / n
    centre, half = (p + z**2 / (2 * n)) / (1 + z**2 / n), z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    np.testing.assert_allclose([low, high], [max(0.0, centre - half), min(1.0, centre + half)], rtol=1e-12, atol=1e-15)
    assert np.isnan(wilson(0, 0, 0.95)).all()
    assert z_value(0.95) == pytest.approx(1.959963984540054, rel=1e-15)
    exact = stats.binomtest(k, n).proportion_ci(confidence_level=0.9, method="exact")
    row = rate_interval(k, n, method="clopper-pearson", confidence_level=0.9)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((exact.low, exact.high), abs=1e-12)
    assert row["interval"] == "clopper-pearson" and row["n_clusters"] is None


def test_rate_interval_with_clusters():
    """Clusters: the betting interval over clusters equals the floor's kernel; Clopper-Pearson on the clusters' means
    is the exact interval of a whole-count when every cluster agrees within itself; the cluster-robust t equals the
    sandwich by hand and is refused below MIN_CLUSTERS; a name that does not fit the data is refused."""
    from evalkit._stats import MIN_CLUSTERS, cluster_rate_interval, rate_method

    gen = np.random.default_rng(3)
    groups = np.repeat(np.arange(60), 3)
    hits = (gen.random(60) < 0.8)[groups].astype(float)  # each cluster's 3 cases agree
    betting = rate_interval(hits, method="cluster-betting", confidence_level=0.95, groups=groups)
    assert (betting["ci_low"], betting["ci_high"]) == cluster_rate_interval(hits, groups, bound=3, confidence_level=0.95)[:2]
    means = rate_interval(hits, method="cluster-means", confidence_level=0.95, groups=groups)
    exact = stats.binomtest(int(hits[::3].sum()), 60).proportion_ci(confidence_level=0.95, method="exact")
    assert (means["ci_low"], means["ci_high"]) == pytest.approx((exact.low, exact.high), abs=1e-12)
    t = rate_interval(hits, method="cluster-t", confidence_level=0.95, groups=groups)
    totals = np.bincount(groups, weights=hits - hits.mean()) / len(hits)
    se = np.sqrt(60 / 59 * np.sum(totals ** 2))
    half = stats.t.ppf(0.975, 59) * se
    assert (t["ci_low"], t["ci_high"]) == pytest.approx((hits.mean() - half, min(1.0, hits.mean() + half)), abs=1e-12)
    few = rate_interval(hits[:30], method="cluster-t", confidence_level=0.95, groups=groups[:30])
    assert np.isnan(few["ci_low"]) and f"< {MIN_CLUSTERS}" in few["note"] and few["n_clusters"] == 10
    assert [rate_method(i, True) for i in ("auto", "betting", "t", "clopper-pearson")] == [
        "cluster-betting", "cluster-betting", "cluster-t", "cluster-means"]
    with pytest.raises(ValueError, match="needs clusters"):
        rate_method("t", False)
    with pytest.raises(ValueError, match="treats the cases as independent"):
        rate_method("wilson", True)
    with pytest.raises(ValueError, match="for cases in clusters"):
        rate_interval(hits, method="wilson", confidence_level=0.95, groups=groups)


def test_coercion():
    assert [normalise_level(x) for x in (" Partially ", "FULLY", None)] == ["partial", "fully", None]
    out = as_pass(pd.Series(["pass", " FAIL", None, True], index=list("abcd")), "human")
    assert out.tolist() == [True, False, pd.NA, True] or out.isna().tolist() == [False, False, True, False]
    with pytest.raises(ValueError, match="`human` for case 'a' is 'maybe'"):
        as_pass(pd.Series(["maybe"], index=["a"]), "human")
    results = pd.DataFrame({"case_id": ["a", "b"], "verdict": ["PASS", "FAIL"], "rubric_version": ["v1", "v2"]})
    with pytest.raises(ValueError, match="several rubrics"):
        judge_verdicts(results)
    with pytest.raises(TypeError, match="results DataFrame or a Series"):
        judge_verdicts(["PASS"])
    with pytest.raises(ValueError, match=r"`judge` must have a unique index \(ids must be unique\); duplicated labels include \[.a.\]"):
        judge_verdicts(pd.Series(["PASS", "FAIL"], index=["a", "a"]))


def test_label_storage_without_widgets(tmp_path):
    path = tmp_path / "sub" / "labels.jsonl"
    labels.append_label(path, {"case_id": "a", "label": "PASS", "labeller": "ann", "mode": "label"})
    labels.append_label(path, {"case_id": "a", "label": "FAIL", "labeller": "bob", "mode": "label"})
    labels.append_label(path, {"case_id": "b", "label": None, "labeller": "ann", "mode": "label"})
    records = labels.read_labels(path)
    assert list(records.columns[:9]) == labels.LABEL_FIELDS and len(records) == 3
    # bob's FAIL is bob's: it neither replaces ann's PASS nor stands for it; ann's undo of b clears only hers
    with pytest.raises(ValueError, match=r"labels by several annotators \('ann', 'bob'\); pass labeller="):
        labels.latest_labels(records)
    assert labels.latest_labels(records, labeller="ann")["label"].to_dict() == {"a": "PASS"}
    assert labels.latest_labels(records, labeller="bob")["label"].to_dict() == {"a": "FAIL"}
    per_annotator = labels.latest_labels(records, by_labeller=True)
    assert sorted(zip(per_annotator["labeller"], per_annotator["label"], strict=True)) == [("ann", "PASS"), ("bob", "FAIL")]
    assert len(labels.read_labels([path, tmp_path / "not-yet.jsonl"])) == 3
    with pytest.raises(TypeError, match="with a 'case_id'"):
        labels.append_label(path, {"label": "PASS"})
    with pytest.raises(TypeError, match="label records"):
        labels.latest_labels(pd.DataFrame({"x": [1]}))


def test_import_labels_needs_no_widget_library():
    import subprocess
    import sys

    code = ("import sys; sys.modules['ipywidgets'] = None; import evalkit.labels, evalkit.calibrate; "
            "print('ipywidgets' in sys.modules and sys.modules['ipywidgets'] is not None)")
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


def test_self_agreement_bad_input():
    records = pd.DataFrame({"case_id": ["a"], "label": ["PASS"], "mode": ["label"]})
    with pytest.raises(ValueError, match="no case has both a label and a re-label"):
        calibrate.self_agreement(records)
    with pytest.raises(KeyError, match=r"missing column\(s\) \['mode'\]"):
        calibrate.self_agreement(records.drop(columns="mode"))
    with pytest.raises(TypeError, match="DataFrame"):
        calibrate.self_agreement("labels.jsonl")


def test_call_and_parse_engine():
    calls = []

    def model(prompt):
        calls.append(prompt)
        return {"p1": "7", "p2": "x"}[prompt]

    def parse(key, text):
        if not text.isdigit():
            raise models.ParseError(f"{text!r} is no number")
        return int(text)

    out = models.call_and_parse(pd.Series({"a": "p1", "b": "p2"}), parse, model, model_id="m", progress=False)
    assert out["value"].tolist() == [7, None] and out["attempts"].tolist() == [1, 2]
    assert out.loc["b", "error"] == "unparseable after retry: 'x' is no number" and pd.isna(out.loc["a", "error"])
    assert calls == ["p1", "p2", "p2"] and out.attrs["model"] == "m"
    with pytest.raises(TypeError, match="`prompts` must be a Series"):
        models.call_and_parse(["p1"], parse, model, model_id="m")
    with pytest.raises(ValueError, match="unique index"):
        models.call_and_parse(pd.Series(["p1", "p2"], index=["a", "a"]), parse, model, model_id="m")
    with pytest.raises(TypeError, match="`parse` must be a callable"):
        models.call_and_parse(pd.Series({"a": "p1"}), None, model, model_id="m")
    with pytest.raises(TypeError, match="`model` must be a callable"):
        models.model_identity("gpt")
    assert issubclass(models.ParseError, ValueError)


def test_plan_bad_input():
    rubric = judge.Rubric("r", "criterion", "{criterion} {output} {levels}")
    with pytest.raises(TypeError, match="`cases` must be a pandas DataFrame"):
        judge.plan("cases.jsonl", rubric, model_id="m")
    with pytest.raises(TypeError, match="`rubric` must be a Rubric"):
        judge.plan(pd.DataFrame({"case_id": ["a"], "output": ["x"]}), "rubric", model_id="m")


@needs("statsmodels", "test")
def test_adjust_p_values_equals_statsmodels_multipletests(monkeypatch):
    import gc

    from statsmodels.stats.multitest import multipletests

    # statsmodels' Holm step calls gc.collect() on every call, which in a test process with a large heap costs a
    # tenth of a second each time; the adjusted values do not depend on it.
    monkeypatch.setattr(gc, "collect", lambda *args: 0)

    from evalkit._stats import adjust_p_values

    gen = np.random.default_rng(7)
    names = {"holm": "holm", "bonferroni": "bonferroni", "bh": "fdr_bh", "by": "fdr_by"}
    for trial in range(300):
        p = gen.random(int(gen.integers(1, 40))) ** gen.uniform(0.2, 3)
        if trial % 3 == 0:
            p = np.round(p, 2)  # ties
        for ours, theirs in names.items():
            np.testing.assert_allclose(adjust_p_values(p, ours), multipletests(p, method=theirs)[1], rtol=0, atol=1e-14)


def test_adjust_p_values_keeps_nan_out_of_the_family_and_refuses_unknown_methods():
    from evalkit._stats import adjust_p_values

    out = adjust_p_values([0.01, np.nan, 0.04], "bonferroni")
    np.testing.assert_allclose(out, [0.02, np.nan, 0.08])
    assert np.isnan(adjust_p_values([np.nan], "holm")).all()
    with pytest.raises(ValueError, match="`adjust` must be one of"):
        adjust_p_values([0.1], "sidak")


def test_betting_stream_equals_the_betting_sequence_value_for_value():
    """One value at a time, the confidence sequence is the batch one to the last bit (0/1 and 1-5 data, three levels),
    and a snapshot taken before a value restores the state without it."""
    from evalkit._stats import BettingStream, betting_sequence

    gen = np.random.default_rng(5)
    for trial in range(12):
        n = int(gen.integers(1, 250))
        lo, hi = (0.0, 1.0) if trial % 2 else (1.0, 5.0)
        z = (gen.random(n) < gen.random()).astype(float) if trial % 2 else gen.choice([1, 2, 3, 4, 5], n, p=[.01, .02, .04, .17, .76])
        level = (0.95, 0.9, 0.8)[trial % 3]
        low, high = betting_sequence(z, lo, hi, confidence_level=level, theta_range=(lo, hi))
        stream = BettingStream(lo, hi, confidence_level=level, theta_range=(lo, hi))
        ends = []
        for value in z:
            state = stream.snapshot()
            stream.update(hi - value + lo)  # a value taken back ...
            stream.restore(state)
            ends.append(stream.update(value))  # ... leaves no trace
        np.testing.assert_array_equal(np.array(ends), np.column_stack([low, high]))
