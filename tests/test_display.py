"""Display rounding that follows the quantity, and the table every result dataclass prints (text and escaped HTML)."""

import dataclasses
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit import _display, agreement, calibrate, compare, correlate, report, retrieval

IDS = [f"c{i}" for i in range(50)]


def test_p_values_scientific_below_a_thousandth_and_underflow_named():
    shown = [_display.p_value(p) for p in (0.5, 0.0312, 0.001, 0.00099, 4.77e-74, 1e-300, 0.0, 1e-17, np.nan)]
    assert shown == ["0.500", "0.031", "0.001", "9.9e-04", "< 1e-16", "< 1e-16", "< 1e-16", "< 1e-16", "NaN"]
    assert _display.p_value(np.finfo(float).eps) == "2.2e-16" and _display.p_value(3.1e-9) == "3.1e-09"


def test_ratings_rates_and_temperatures_round_as_their_quantity():
    assert [_display.rating(v) for v in (1237.435, 999.5, -12.6)] == ["1237", "1000", "-13"]
    assert [_display.temperature(v) for v in (0.1, 0.35, 1.0, 1.25)] == ["0.1", "0.35", "1", "1.25"]
    assert [_display.number(v) for v in (0.8, 0.490162, 0.00012, 0.0)] == ["0.800", "0.490", "0.00012", "0.000"]
    assert _display.number(0.0123, sign=True) == "+0.012" and _display.number(-0.5, sign=True) == "-0.500"


@pytest.mark.parametrize(("name", "columns", "attrs", "kind"), [
    ("p_val", (), {}, "p"), ("p_adjusted", (), {}, "p"), ("McNemar p (Holm)", (), {}, "p"), ("chance p", (), {}, "p"),
    ("p", (), {}, "number"),  # TCVA's power-mean exponent
    ("temperature", (), {}, "temperature"), ("T", (), {}, "temperature"),
    ("rating", (), {}, "rating"), ("elo", (), {}, "rating"), ("ci_low", ("rating", "ci_low"), {}, "rating"),
    ("ci_high", (), {"scale": "elo"}, "rating"), ("gpt-4", ("human", "gpt-4"), {"scale": "elo"}, "rating"),
    ("p_val", (), {"scale": "elo"}, "p"), ("ci_low", ("r", "ci_low"), {}, "number"), ("share", (), {}, "number"),
])
def test_column_kind(name, columns, attrs, kind):
    assert _display.column_kind(name, columns, attrs) == kind


def test_formatted_keeps_the_values_and_rounds_each_column_as_its_quantity():
    table = pd.DataFrame({"system": ["a", "b"], "rating": [1237.435, 962.1], "ci_low": [1190.2, np.nan],
                          "p_val": [0.0, 2e-5], "temperature": [0.1, 1.25], "n": [40, 41], "share": [0.8, 0.49016]},
                         index=["x", "y"])
    before = table.copy()
    shown = report.formatted(table)
    pd.testing.assert_frame_equal(table, before)  # the table given is untouched
    assert shown.index.tolist() == ["x", "y"] and shown.columns.tolist() == table.columns.tolist()
    assert shown.to_dict("list") == {"system": ["a", "b"], "rating": ["1237", "962"], "ci_low": ["1190", "NaN"],
                                     "p_val": ["< 1e-16", "2.0e-05"], "temperature": ["0.1", "1.25"], "n": [40, 41],
                                     "share": ["0.800", "0.490"]}
    assert report.formatted(table, decimals=1)["share"].tolist() == ["0.8", "0.5"]


def test_formatted_bad_input():
    with pytest.raises(TypeError, match="`table` must be a pandas DataFrame; got list"):
        report.formatted([1, 2])
    for bad in (-1, 2.5, True):
        with pytest.raises(ValueError, match="`decimals` must be a non-negative integer"):
            report.formatted(pd.DataFrame({"a": [1.0]}), decimals=bad)


def test_use_formatted_registers_with_ipython():
    interactive = pytest.importorskip("IPython.core.interactiveshell", reason="needs IPython (the 'report' extra)")
    shell = interactive.InteractiveShell.instance()
    try:
        with pd.option_context("display.max_colwidth", 50):
            report.use_formatted()
            table = pd.DataFrame({"p_val": [0.0], "ci_note": ["a caveat " * 20]})
            data, _ = shell.display_formatter.format(table)
            assert "&lt; 1e-16" in data["text/html"] and "< 1e-16" in data["text/plain"]
            assert ("a caveat " * 20).strip() in data["text/plain"]  # never cut
            assert ("a caveat " * 20).strip() in data["text/html"]
            long_text = pd.DataFrame({"raw": ["model output " * 20]})  # other text keeps the session's width
            assert ("model output " * 20).strip() not in shell.display_formatter.format(long_text)[0]["text/plain"]
            assert pd.get_option("display.max_colwidth") == 50
            fig = pytest.importorskip("matplotlib.pyplot").figure()
            fig.add_subplot().set_title("coverage of PPI++")
            assert "Axes 1 title: coverage of PPI++" in shell.display_formatter.format(fig)[0]["text/plain"]
    finally:
        for mime in ("text/html", "text/plain"):
            shell.display_formatter.formatters[mime].pop(pd.DataFrame, None)
        shell.display_formatter.formatters["text/plain"].pop("matplotlib.figure.Figure", None)
        interactive.InteractiveShell.clear_instance()
    with pytest.raises(ValueError, match="`decimals`"):
        report.use_formatted(decimals=-2)


def test_result_text_aligns_and_never_cuts_a_note():
    note = "studentized bootstrap on coarse ratings: covered 0.89-0.94 for 95% at 50 items " * 3
    text = _display.result_text("T", [{"quantity": "a", "estimate": "0.500", "note": note},
                                      {"quantity": "longer name", "estimate": "12.250", "method": "m"}])
    lines = text.splitlines()
    assert lines[0] == "T" and note.strip() in text
    starts = {line.index(word) for line, word in zip(lines[1:], ("estimate", "0.500", "12.250"), strict=True)}
    ends = {line.index(word) + len(word) for line, word in zip(lines[1:], ("estimate", "0.500", "12.250"), strict=True)}
    assert len(ends) == 1 and len(starts) == 3  # estimates right-aligned under their header
    assert "interval" not in lines[1]  # a column nobody filled is left out


# ------------------------------------------------------------------ every result dataclass
def _paired():
    a = pd.Series(["PASS"] * 30 + ["FAIL"] * 20, index=IDS)
    b = a.copy()
    b.iloc[:8], b.iloc[45:] = "FAIL", "PASS"
    return compare.paired(a, b), a, b


def _results(random_verdicts):
    paired, a, b = _paired()
    human = a.copy()
    human.iloc[3] = "FAIL"
    rng = np.random.default_rng(0)
    latent = rng.normal(size=60)
    items = [f"i{i}" for i in range(60)]
    ratings = pd.DataFrame([(items[i], name, int(np.clip(np.round(3 + latent[i] + rng.normal(scale=0.7)), 1, 5)))
                            for name in "abcd" for i in range(60)], columns=["item_id", "annotator", "rating"])
    alt = agreement.alternative_annotator_test(pd.Series(latent + 3, index=items), ratings, scoring="neg_rmse")
    from evalkit import tcva

    verdicts, verdict_items = random_verdicts
    truth = tcva.score(verdicts, 0.8, items=verdict_items)
    selection = correlate.select_temperature(verdicts, truth + rng.normal(0, 0.05, len(truth)),
                                             temperatures=[0.1, 0.5, 1.0], items=verdict_items, rng=0)
    claims = pd.DataFrame({"claim_id": ["k1", "k2", "k3"], "text": ["vitamin D helps migraine", "aspirin thins blood",
                                                                    "<script>alert(1)</script> cure"]})
    corpus = pd.DataFrame({"doc_id": ["d1", "d2"], "text": ["vitamin D and migraine trials", "aspirin and blood"]})
    emb = np.eye(3)[:, :2] + 0.01
    cover = retrieval.coverage(claims, corpus, claim_embeddings=emb, doc_embeddings=np.eye(2), min_keywords=1)
    return {"PairedComparison": paired, "CalibrationReport": calibrate.calibrate(b, human), "AltTestResult": alt,
            "TemperatureSelection": selection, "CoverageResult": cover}


def test_every_result_prints_a_table_with_its_estimate_interval_and_method(random_verdicts):
    results = _results(random_verdicts)
    paired = results["PairedComparison"]
    text = repr(paired)
    assert text.startswith("PairedComparison: pass rate, n = 50") and "PairedComparison(" not in text
    assert "95% CI [-0.199, +0.083]" in text and "Newcombe hybrid score" in text and "exact McNemar" in text
    assert re.search(rf"difference b - a\s+{_display.number(paired.difference, sign=True)}", text)
    cal = repr(results["CalibrationReport"])
    row = results["CalibrationReport"].table.loc["fail_recall"]
    assert re.search(rf"fail_recall\s+{row['estimate']:.3f}\s+95% CI \[{row['ci_low']:.3f}, {row['ci_high']:.3f}\]\s+"
                     rf"{row['interval']}", cal)
    alt = results["AltTestResult"]
    assert re.search(rf"winning rate\s+{alt.winning_rate:.3f}\s+alt-test", repr(alt)) and "Benjamini-Yekutieli" in repr(alt)
    sel = results["TemperatureSelection"]
    assert re.search(rf"temperature\s+{sel.temperature:g}\s", repr(sel)) and "out of fold" in repr(sel)
    assert "0.1000" not in repr(sel)
    cover = results["CoverageResult"]
    share = cover.summary.iloc[0]
    assert re.search(rf"coverage \(all claims\)\s+{share['share']:.3f}\s+\[{share['ci_low']:.3f}, {share['ci_high']:.3f}\]"
                     rf"\s+{share['interval']}", repr(cover))
    for name, result in results.items():
        assert repr(result).startswith(f"{name}:"), name
        assert f"<b>{name}:" in result._repr_html_(), name


def test_every_result_dataclass_has_its_own_repr():
    """A result dataclass returned to users prints a table, never the dataclass' field dump."""
    import evalkit

    package = Path(evalkit.__file__).parent
    found = []
    for path in package.rglob("*.py"):
        if path.name.startswith("_") or any(part.startswith("_") for part in path.relative_to(package).parts[:-1]):
            continue
        module = __import__(f"evalkit.{'.'.join(path.relative_to(package).with_suffix('').parts)}", fromlist=["x"])
        for value in vars(module).values():
            if isinstance(value, type) and dataclasses.is_dataclass(value) and value.__module__ == module.__name__ \
                    and value.__name__.endswith(("Result", "Report", "Comparison", "Selection")):
                found.append(value)
                assert "__repr__" in vars(value) and "_repr_html_" in vars(value), value
    assert {c.__name__ for c in found} >= {"PairedComparison", "CalibrationReport", "AltTestResult",
                                           "TemperatureSelection", "CoverageResult", "NotebookResult"}


def test_result_html_escapes_untrusted_text():
    rows = [{"quantity": "<b>x</b>", "estimate": "1", "note": "<script>alert(1)</script> & more"}]
    page = _display.result_html("<img src=x onerror=alert(1)>", rows)
    assert "<script>" not in page and "<img" not in page and "&lt;script&gt;" in page and "&amp; more" in page


def test_notebook_result_prints_its_status(tmp_path):
    ok = report.NotebookResult(tmp_path / "a.ipynb", tmp_path / "a.html", 1.25, title="A")
    failed = report.NotebookResult(tmp_path / "b.ipynb", tmp_path / "b.html", 3.0, error="ZeroDivisionError", cell=4)
    assert repr(ok).startswith("NotebookResult: A") and " ok " in repr(ok) and "1.2" in repr(ok)
    assert "FAILED in cell In [4]" in repr(failed) and "ZeroDivisionError" in repr(failed)
