"""Widgets driven from Python: set values, click buttons, inspect children and the labels file."""

import json
import re

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("ipywidgets", reason='needs the \'widgets\' extra: pip install "evalkit[widgets]"')

from evalkit import EvalkitWarning, calibrate, datasets, density, tcva  # noqa: E402
from evalkit.labels import read_labels  # noqa: E402
from evalkit.widgets import FDBinExplorer, Labeller, SweepExplorer  # noqa: E402

CASES = pd.DataFrame({
    "case_id": ["c1", "c2", "c3", "c4"],
    "input": ["What is 2+2?", "Capital of France?", "Tell me a joke", "Summarise"],
    "output": ["<script>alert('x')</script>", '<img src=x onerror="alert(1)">', "plain & simple", "ok"],
})
JUDGE = pd.Series({"c1": "FAIL", "c2": "PASS", "c3": "PASS", "c4": "FAIL"})


def lines(path):
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_untrusted_text_is_escaped(tmp_path):
    lab = Labeller(CASES, tmp_path / "l.jsonl")
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in lab.case_view.value
    assert "<script>" not in lab.case_view.value
    lab.skip()
    assert "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;" in lab.case_view.value and "<img" not in lab.case_view.value


def test_each_label_is_on_disk_immediately(tmp_path):
    path = tmp_path / "labels.jsonl"
    lab = Labeller(CASES, path, labeller="ann", rubric_version="abc123")
    assert not path.exists()
    lab.note.value = "looks unsafe"
    lab.buttons["FAIL"].click()
    records = lines(path)
    assert len(records) == 1
    assert {k: records[0][k] for k in ("case_id", "label", "labeller", "position", "rubric_version", "note", "mode")} == {
        "case_id": "c1", "label": "FAIL", "labeller": "ann", "position": 0, "rubric_version": "abc123",
        "note": "looks unsafe", "mode": "label"}
    assert records[0]["timestamp"].endswith("+00:00")
    assert lab.note.value == "" and lab.current_case == "c2" and lab.progress_text.value == "1 / 4"
    lab.buttons["PASS"].click()
    assert [r["case_id"] for r in lines(path)] == ["c1", "c2"]


def test_resume_at_first_unlabelled(tmp_path):
    path = tmp_path / "labels.jsonl"
    first = Labeller(CASES, path)
    first.buttons["PASS"].click()  # c1
    first.skip()  # c2 left for later
    first.buttons["FAIL"].click()  # c3
    again = Labeller(CASES, path)
    assert again.current_case == "c2" and again.progress.value == 2
    again.buttons["PASS"].click()
    assert again.current_case == "c4"  # c3 is already labelled
    again.buttons["PASS"].click()
    assert again.done and again.current_case is None and "All cases are labelled" in again.case_view.value
    assert again.labels().to_dict() == {"c1": "PASS", "c3": "FAIL", "c2": "PASS", "c4": "PASS"}


def test_skipped_cases_come_round_again(tmp_path):
    lab = Labeller(CASES, tmp_path / "l.jsonl")
    lab.label("PASS")  # c1
    lab.skip()  # c2 skipped
    lab.label("FAIL")  # c3
    lab.label("PASS")  # c4, then back to the skipped c2
    assert lab.current_case == "c2" and not lab.done
    lab.skip()
    assert lab.current_case == "c3"  # skip walks on; the end of the list says what is left
    lab.skip()
    lab.skip()
    assert lab.current_case is None and "1 skipped case(s) are still unlabelled" in lab.case_view.value
    lab.back()
    lab.back()
    lab.back()
    lab.label("PASS")
    assert lab.done and lab.current_case is None and "All cases are labelled" in lab.case_view.value


def test_back_relabel_and_undo(tmp_path):
    path = tmp_path / "labels.jsonl"
    lab = Labeller(CASES, path)
    lab.buttons["PASS"].click()
    lab.back()
    assert lab.current_case == "c1" and "current label: <b>PASS</b>" in lab.status.value
    lab.buttons["FAIL"].click()  # replace the label
    assert lab.labels()["c1"] == "FAIL"
    lab.undo_button.click()
    assert lab.current_case == "c1" and "c1" not in lab.labels().index
    assert lines(path)[-1]["label"] is None and lines(path)[-1]["note"] == "undo"
    lab.undo_button.click()  # the earlier PASS is still in this session's history
    lab.undo_button.click()
    assert "nothing to undo" in lab.status.value


def test_blind_judge(tmp_path):
    lab = Labeller(CASES, tmp_path / "l.jsonl", judge=JUDGE)
    assert "hidden" in lab.judge_view.value and "FAIL" not in lab.judge_view.value
    lab.buttons["PASS"].click()
    lab.back()
    assert "judge: <b>FAIL</b>" in lab.judge_view.value
    open_lab = Labeller(CASES, tmp_path / "m.jsonl", judge=JUDGE, blind=False)
    assert "judge: <b>FAIL</b>" in open_lab.judge_view.value


def test_tcva_levels_and_keyboard(tmp_path):
    levels = ("fully", "mostly", "partial", "minor", "none")
    lab = Labeller(CASES, tmp_path / "l.jsonl", levels=levels)
    assert list(lab.buttons) == list(levels)
    lab.handle_key({"key": "3"})
    lab.handle_key({"key": "s"})
    lab.handle_key({"key": "5"})
    assert lab.labels().to_dict() == {"c1": "partial", "c3": "none"}
    lab.handle_key({"key": "u"})
    lab.handle_key({"key": "b"})
    assert lab.current_case == "c2"
    with pytest.raises(ValueError, match="`level` must be one of"):
        lab.label("PASS")


def test_relabel_mode_self_agreement(tmp_path):
    path = tmp_path / "labels.jsonl"
    lab = Labeller(CASES, path)
    for level in ("PASS", "FAIL", "PASS", "FAIL"):
        lab.label(level)
    again = Labeller(CASES, path, relabel=4, rng=0, judge=JUDGE)
    assert again.mode == "relabel" and "current label" not in again.status.value  # blind to the earlier label
    assert "hidden" in again.judge_view.value
    for level in ("PASS", "FAIL", "FAIL", "FAIL"):  # the third differs
        again.label(level)
    agreement = again.self_agreement().iloc[0]
    assert agreement["n"] == 4 and agreement["agreement"] == 0.75
    assert again.labels().to_dict() == {"c1": "PASS", "c2": "FAIL", "c3": "PASS", "c4": "FAIL"}  # relabels kept apart
    with pytest.raises(ValueError, match="has none"):
        Labeller(CASES, tmp_path / "empty.jsonl", relabel=2)


def test_labels_feed_calibration_and_drift(tmp_path):
    path = tmp_path / "labels.jsonl"
    lab = Labeller(CASES, path)
    for level in ("FAIL", "PASS", "PASS", "PASS"):
        lab.label(level)
    report = calibrate.calibrate(JUDGE, lab.labels())
    assert report.caught == 1 and report.human_fails == 1 and report.judge_fails == 2
    drift = calibrate.agreement_drift(JUDGE, lab.records(), bins=2)
    assert drift["n"].sum() == 4


def test_killed_kernel_loses_nothing_but_the_partial_line(tmp_path):
    path = tmp_path / "labels.jsonl"
    lab = Labeller(CASES, path)
    lab.label("PASS")
    with path.open("a") as handle:
        handle.write('{"case_id": "c2", "lab')  # the process died mid-write
    assert read_labels(path)["case_id"].tolist() == ["c1"]
    with pytest.warns(EvalkitWarning, match="cut short by an interrupted write.*moved to labels.jsonl.torn"):
        again = Labeller(CASES, path)
    assert again.current_case == "c2" and again.progress_text.value == "1 / 4"
    assert (tmp_path / "labels.jsonl.torn").read_text() == '{"case_id": "c2", "lab\n'
    again.label("FAIL")  # lands on a fresh line: counted, shown and read back
    again.label("PASS")
    assert again.labels().to_dict() == {"c1": "PASS", "c2": "FAIL", "c3": "PASS"}
    assert again.progress_text.value == "3 / 4" and len(path.read_text().split("\n")) == 4
    again.close()
    path.write_text('{"case_id": "c1"\n{"case_id": "c2", "label": "PASS"}\n')
    with pytest.raises(ValueError, match="line 1: not valid JSON"):
        read_labels(path)


def test_labeller_bad_input(tmp_path):
    with pytest.raises(KeyError, match="output"):
        Labeller(CASES.drop(columns="output"), tmp_path / "l.jsonl")
    with pytest.raises(ValueError, match="twice"):
        Labeller(pd.concat([CASES, CASES]), tmp_path / "l.jsonl")
    with pytest.raises(ValueError, match="two distinct"):
        Labeller(CASES, tmp_path / "l.jsonl", levels=("PASS",))


def test_sweep_explorer():
    demo = datasets.load_demo("tcva")
    verdicts, items = demo["verdicts"], demo["items"]
    explorer = SweepExplorer(verdicts, items["human"], items=items, top=5)
    first_image = explorer.figure.value
    assert len(first_image) > 1000 and "T = 0.5" in explorer.summary.value
    explorer.slider.value = 0.1
    assert explorer.temperature == 0.1 and "T = 0.1" in explorer.summary.value
    assert explorer.figure.value != first_image
    explorer.compare_to = 0.93  # snaps to the nearest swept temperature
    assert explorer.compare_to == 0.95
    movers = explorer.movers
    scores = tcva.sweep(verdicts, [0.1, 0.95], items=items)
    change = scores[0.95].rank(ascending=False) - scores[0.1].rank(ascending=False)
    assert movers["rank_change"].abs().tolist() == sorted(change.abs(), reverse=True)[:5]
    assert "rank_change" in explorer.movers_view.value
    ranks = re.findall(r"<th>[^<]*</th>\s*<td>([^<]*)</td>\s*<td>([^<]*)</td>\s*<td>([^<]*)</td>", explorer.movers_view.value)
    assert len(ranks) == 5 and not any(r.endswith((".0", ".00")) for row in ranks for r in row)  # 57, not 57.00


def test_sweep_explorer_bad_input():
    demo = datasets.load_demo("tcva")
    verdicts, items = demo["verdicts"], demo["items"]
    with pytest.raises(TypeError, match="`verdicts` must be a pandas DataFrame"):
        SweepExplorer("verdicts.csv", items["human"])
    with pytest.raises(ValueError, match="must lie in"):
        SweepExplorer(verdicts, items["human"], items=items, temperatures=[0.5, 3.0])
    with pytest.raises(ValueError, match="share no index labels"):
        SweepExplorer(verdicts, items["human"].set_axis([f"x{i}" for i in range(len(items))]), items=items)


def test_fd_bin_explorer():
    corpus = datasets.load_demo("fd")
    table = density.fd_star(corpus["claims"], corpus["documents"])
    explorer = FDBinExplorer(table)
    assert "r = -0.652" in explorer.summary.value
    explorer.bins_slider.value = 4
    assert explorer.table["length_bin"].nunique() == 4
    explorer.edges_text.value = "0, 150, 300, 600"
    assert explorer.table["length_bin"].astype(str).unique().tolist() != []
    assert list(explorer.table["length_bin"].cat.categories) == ["short", "medium", "long"]
    explorer.weights["systematic_review"].value = 2.0
    reviews = explorer.table["source"] == "systematic_review"
    np.testing.assert_allclose(explorer.table.loc[reviews, "fd_star"], 2.0 * explorer.table.loc[reviews, "z"])
    explorer.edges_text.value = "0, abc"
    assert "must be numbers" in explorer.summary.value
    explorer.edges_text.value = "200, 300"
    assert "cannot bin" in explorer.summary.value and "outside the edges" in explorer.summary.value


def test_static_snapshot_for_exported_reports(tmp_path):
    demo = datasets.load_demo("tcva")
    verdicts, items = demo["verdicts"], demo["items"]
    bundle = SweepExplorer(verdicts, items["human"], items=items)._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert "data:image/png;base64," in bundle["text/html"] and "rank_change" in bundle["text/html"]
    lab_bundle = Labeller(CASES, tmp_path / "l.jsonl")._repr_mimebundle_()
    assert "0 / 4 labelled" in lab_bundle["text/html"] and "&lt;script&gt;" in lab_bundle["text/html"]


def test_fd_bin_explorer_with_mathtext_in_a_tier_name():
    corpus = datasets.load_demo("fd")
    documents = corpus["documents"].replace({"source": {"trial": r"$\frac$"}})
    explorer = FDBinExplorer(density.fd_star(corpus["claims"], documents))
    assert explorer.figure.value and "tier spread" in explorer.summary.value
    explorer.weights[r"$\frac$"].value = 1.5
    assert explorer.authority[r"$\frac$"] == 1.5


def test_a_labeller_opened_again_takes_over_and_the_old_one_writes_nothing(tmp_path):
    path = tmp_path / "labels.jsonl"
    old = Labeller(CASES, path, labeller="ann")
    old.label("PASS")
    new = Labeller(CASES, path, labeller="ann")  # the cell run again in the same kernel
    assert new.session != old.session and new.current_case == "c2"
    old.label("FAIL")  # c2 from the stale widget: refused on screen, not written
    assert "not saved" in old.status.value and old.current_case == "c2" and old.progress_text.value == "1 / 4"
    new.label("PASS")
    assert new.labels().to_dict() == {"c1": "PASS", "c2": "PASS"}
    new.close()


def test_labeller_keeps_its_open_list_in_step(tmp_path, rng):
    """Random clicks (label, skip, back, undo) against a from-scratch recount of the file after each one."""
    cases = pd.DataFrame({"case_id": [f"k{i}" for i in range(30)], "input": "q", "output": "a"})
    lab = Labeller(cases, tmp_path / "l.jsonl")
    for _ in range(300):
        action = rng.choice(["label", "label", "skip", "back", "undo"])
        {"label": lambda: lab.label("PASS"), "skip": lab.skip, "back": lab.back, "undo": lab.undo}[action]()
        done = set(lab.labels().index)
        assert lab.progress.value == len(done)
        assert lab._open == [i for i, c in enumerate(cases["case_id"]) if c not in done]
        if action == "label" and lab.current_case is not None:
            assert lab.current_case not in done
    lab.close()
