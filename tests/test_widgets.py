"""Widgets driven from Python: set values, click buttons, inspect children and the labels file."""

import errno
import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("ipywidgets", reason='needs the \'widgets\' extra: pip install "evalkit[widgets]"')

from evalkit import EvalkitWarning, calibrate, datasets, density, infer, judge, labels, tcva, widgets  # noqa: E402
from evalkit import cases as cases_mod  # noqa: E402
from evalkit.labels import LabelsLockedError, read_labels  # noqa: E402
from evalkit.widgets import AnnotatorError, FDBinExplorer, Labeller, PairwiseLabeller, SweepExplorer  # noqa: E402

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
    assert again.done and again.current_case is None and "All 4 cases are labelled" in again.case_view.value
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
    assert lab.current_case is None and "1 skipped case still unlabelled" in lab.case_view.value
    lab.back()
    lab.back()
    lab.back()
    lab.label("PASS")
    assert lab.done and lab.current_case is None and "All 4 cases are labelled" in lab.case_view.value


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
    lab.back()  # blind stays blind going back: your label, not the judge's
    assert lab.current_case == "c1" and "your label: <b>PASS</b>" in lab.case_view.value
    assert "hidden" in lab.judge_view.value and "FAIL" not in lab.judge_view.value
    assert lab.reveal_button.layout.display != "none"
    open_lab = Labeller(CASES, tmp_path / "m.jsonl", judge=JUDGE, blind=False, labeller="ann")
    assert "judge: <b>FAIL</b>" in open_lab.judge_view.value and open_lab.reveal_button.layout.display == "none"


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
        Labeller(CASES, tmp_path / "empty.jsonl", relabel=2, labeller="ann")


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
    with pytest.raises(TypeError, match="`relabel` must be an integer"):
        Labeller(CASES, tmp_path / "l.jsonl", relabel="all")
    with pytest.raises(ValueError, match="has none"):
        Labeller(CASES, tmp_path / "l.jsonl", relabel=2)
    with pytest.raises(ValueError, match="`watch` must be one of \\[None, 'pass_rate', 'mean', 'agreement', 'fail_recall'\\]"):
        Labeller(CASES, tmp_path / "l.jsonl", watch="kappa", order="random")
    with pytest.raises(ValueError, match="`stop_half_width` is a stop rule for the live interval: pass watch="):
        Labeller(CASES, tmp_path / "l.jsonl", stop_half_width=0.1)
    with pytest.raises(ValueError, match="`stop_half_width` must be a half-width above 0"):
        Labeller(CASES, tmp_path / "l.jsonl", watch="pass_rate", stop_half_width=0, order="random")
    with pytest.raises(TypeError, match="`stop_half_width` must be a number"):
        Labeller(CASES, tmp_path / "l.jsonl", watch="pass_rate", stop_half_width="0.1", order="random")
    with pytest.raises(ValueError, match="`confidence_level` must be strictly between 0 and 1"):
        Labeller(CASES, tmp_path / "l.jsonl", watch="pass_rate", confidence_level=1.0, order="random")
    with pytest.raises(ValueError, match="`order` must be one of \\['given', 'random', 'shuffle'\\]; got 'sorted'"):
        Labeller(CASES, tmp_path / "l.jsonl", order="sorted")
    with pytest.raises(ValueError, match="`rng` must be in \\[0, None\\]"):
        Labeller(CASES, tmp_path / "l.jsonl", order="shuffle", rng=-1)
    with pytest.raises(ValueError, match="compares your labels with the judge's verdicts: pass judge="):
        Labeller(CASES, tmp_path / "l.jsonl", watch="agreement", order="random")
    with pytest.raises(ValueError, match=r"needs the judge's verdict on every case; `judge` has none for 1 case\(s\), e.g. \['c4'\]"):
        Labeller(CASES, tmp_path / "l.jsonl", watch="fail_recall", judge=JUDGE.drop("c4"), order="random")
    with pytest.raises(ValueError, match="`judge` for case 'c2' is 'maybe'"):
        Labeller(CASES, tmp_path / "l.jsonl", watch="agreement", judge=JUDGE.replace("PASS", "maybe"), order="random")
    with pytest.raises(ValueError, match="needs numeric levels .* or levels of which some pass: got levels \\['fully'"):
        Labeller(CASES, tmp_path / "l.jsonl", watch="mean", levels=("fully", "none"), order="random")
    with pytest.raises(ValueError, match="watch='pass_rate' needs levels of which some pass"):
        Labeller(CASES, tmp_path / "l.jsonl", watch="pass_rate", levels=("1", "2", "3"), order="random")
    with pytest.raises(ValueError, match="re-label mode measures self-agreement"):
        Labeller(CASES, tmp_path / "l.jsonl", watch="pass_rate", relabel=2, order="random")
    with pytest.raises(ValueError, match="this labeller watches nothing: open it with watch="):
        Labeller(CASES, tmp_path / "quiet.jsonl", labeller="q").sequence()
    import subprocess
    import sys

    other = subprocess.run([sys.executable, "-c", f"from evalkit.labels import LabelWriter; LabelWriter({str(tmp_path / 'l.jsonl')!r}, "
                            "labeller='bob')"], capture_output=True, text=True)
    assert other.returncode == 0, other.stderr  # a labeller that could not be built holds no lock


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
    assert "Spearman rho = -0.600" in explorer.summary.value  # scipy.stats.spearmanr of n_tokens and fd_raw
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


# ------------------------------------------------------------------ the annotator, the keys, the status line
def test_header_names_the_annotator_and_the_file(tmp_path):
    path = tmp_path / "ann.jsonl"
    lab = Labeller(CASES, path, labeller="ann")
    assert f"labelling as <b>ann</b> → <code>{path}</code>" in lab.header.value
    assert "no name given" not in lab.header.value
    lab.close()
    odd = Labeller(CASES, tmp_path / "x<y>.jsonl", labeller="<b>eve</b>")  # names and paths are text too
    assert "labelling as <b>&lt;b&gt;eve&lt;/b&gt;</b>" in odd.header.value and "x&lt;y&gt;.jsonl" in odd.header.value


def test_two_annotators_with_the_default_name_are_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "jovyan")  # everyone's name on a typical JupyterHub
    first = Labeller(CASES, tmp_path / "a.jsonl")
    assert first.labeller == "jovyan" and "no name given" in first.header.value
    first.label("PASS")
    first.close()
    with pytest.raises(AnnotatorError, match=r"name the annotator: .* holds labels by 'jovyan' \(a.jsonl\); pass labeller=") as refused:
        Labeller(CASES, tmp_path / "b.jsonl")  # a second person, default name, own file: would merge with the first
    assert refused.value._render_traceback_() == [f"AnnotatorError: {refused.value}"]  # one line in a notebook
    again = Labeller(CASES, tmp_path / "a.jsonl")  # the same default name resuming its own file is fine
    assert again.current_case == "c2"
    again.close()
    named = Labeller(CASES, tmp_path / "b.jsonl", labeller="bob")
    named.label("FAIL")
    named.close()
    with pytest.raises(AnnotatorError, match=r"holds labels by 'jovyan' \(a.jsonl\), 'bob' \(b.jsonl\)"):
        Labeller(CASES, tmp_path / "b.jsonl")  # bob's own file, opened without a name
    with pytest.raises(TypeError, match="annotator's name"):
        Labeller(CASES, tmp_path / "c.jsonl", labeller="  ")


def test_every_key_says_what_it_did(tmp_path):
    lab = Labeller(CASES, tmp_path / "l.jsonl", labeller="ann")
    assert lab.keys_line.legend == "1 PASS · 2 FAIL · s skip · b back · u undo · ? unsure"
    lab.handle_key({"key": "?"})
    assert lab.unsure_button.value and "<code>c1</code> marked unsure" in lab.status.value
    lab.handle_key({"key": "1"})
    assert "labelled <code>c1</code> <b>PASS</b> (unsure)" in lab.status.value
    lab.handle_key({"key": "s"})
    assert "skipped <code>c2</code>: it comes round again" in lab.status.value
    lab.handle_key({"key": "b"})
    assert "back to <code>c2</code> · not labelled yet" in lab.status.value
    lab.handle_key({"key": "b"})
    assert "back to <code>c1</code> · current label: <b>PASS</b>" in lab.status.value
    lab.handle_key({"key": "u"})
    assert "undid <code>c1</code> <b>PASS</b>" in lab.status.value
    lab.handle_key({"key": "x"})
    assert "key &#x27;x&#x27; does nothing here; the keys are 1 PASS" in lab.status.value
    assert len(lines(tmp_path / "l.jsonl")) == 2  # the label and the undo; no other key wrote anything


def test_key_messages_from_the_browser_reach_the_labeller(tmp_path):
    lab = Labeller(CASES, tmp_path / "l.jsonl", labeller="ann")
    lab.keys_line._handle_custom_msg({"key": "2"}, [])  # what the front end sends for a key typed in the key area
    assert lab.labels().to_dict() == {"c1": "FAIL"}
    assert "evalkit-keyarea" in lab.children[-1]._dom_classes and "evalkit-keyarea" not in lab.note._dom_classes


def test_unsure_flag_and_notes_round_trip_through_the_labels_file(tmp_path):
    path = tmp_path / "ann.jsonl"
    lab = Labeller(CASES, path, labeller="ann")
    lab.note.value = "wrong years, source says 5; sub 12 ok"
    lab.unsure_button.value = True
    lab.label("FAIL")
    assert lab.note.value == "" and not lab.unsure_button.value  # the next case starts clean
    lab.label("PASS")
    records = read_labels(path)
    assert records["unsure"].tolist() == [True, False] and records["unsure"].dtype == bool
    assert records["note"].iloc[0] == "wrong years, source says 5; sub 12 ok" and pd.isna(records["note"].iloc[1])
    latest = lab.records().set_index("case_id")
    assert bool(latest.loc["c1", "unsure"]) and latest.loc["c1", "note"].startswith("wrong years")
    lab.undo()  # c2 PASS
    lab.undo()  # c1 FAIL: its note and flag come back into the box
    assert lab.current_case == "c1" and lab.note.value.startswith("wrong years") and lab.unsure_button.value
    lab.label("PASS")  # the next label carries the restored note
    last = lines(path)[-1]
    assert (last["label"], last["note"], last["unsure"]) == ("PASS", "wrong years, source says 5; sub 12 ok", True)
    lab.back()  # a typed but unsaved note survives going away and coming back
    lab.note.value = "draft"
    lab.skip()
    lab.back()
    assert lab.current_case == "c1" and lab.note.value == "draft"


def test_undo_works_across_a_restart(tmp_path):
    path = tmp_path / "ann.jsonl"
    lab = Labeller(CASES, path, labeller="ann")
    lab.note.value = "n1"
    lab.label("PASS")
    lab.label("FAIL")
    lab.close()
    again = Labeller(CASES, path, labeller="ann")  # a new kernel
    assert again.current_case == "c3" and not again.undo_button.disabled
    again.back()
    again.back()
    assert again.current_case == "c1" and again.note.value == "n1"  # the saved note shows going back
    again.skip()
    again.skip()
    again.undo()
    assert "undid <code>c2</code> <b>FAIL</b>" in again.status.value and again.current_case == "c2"
    again.undo()
    assert again.current_case == "c1" and again.note.value == "n1" and again.labels().empty
    again.undo()
    assert "nothing to undo: no label by &#x27;ann&#x27; in this file is left" in again.status.value


def test_going_back_stays_blind_until_a_recorded_click_or_the_end(tmp_path):
    path = tmp_path / "ann.jsonl"
    lab = Labeller(CASES, path, labeller="ann", judge=JUDGE)
    lab.label("PASS")
    lab.back()
    assert "FAIL" not in lab.judge_view.value + lab.case_view.value + lab.status.value
    lab.reveal_button.click()
    assert "judge: <b>FAIL</b>" in lab.judge_view.value and "recorded in the labels file" in lab.status.value
    reveal = lines(path)[-1]
    assert (reveal["case_id"], reveal["mode"], reveal["label"]) == ("c1", "reveal", None)
    assert lab.labels().to_dict() == {"c1": "PASS"}  # a reveal is not a label
    lab.skip()  # c2, unlabelled: nothing to reveal yet
    lab.reveal()
    assert "label this case first" in lab.status.value and "PASS" not in lab.judge_view.value
    lab.close()
    again = Labeller(CASES, path, labeller="ann", judge=JUDGE)  # the reveal is remembered
    again.back()
    assert again.current_case == "c1" and "judge: <b>FAIL</b>" in again.judge_view.value
    again.skip()
    for level in ("PASS", "PASS", "PASS"):
        again.label(level)
    assert again.done
    again.back()  # the batch is done: the verdicts show
    assert "judge: <b>FAIL</b>" in again.judge_view.value and again.current_case == "c4"


def test_pacing_tally_and_time_left(tmp_path, monkeypatch):
    clock = [pd.Timestamp("2026-11-30T10:00:00", tz="UTC").to_pydatetime()]
    monkeypatch.setattr(widgets, "_now", lambda: clock[0])
    cases = pd.DataFrame({"case_id": [f"k{i}" for i in range(10)], "input": "q", "output": "a"})
    lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann")
    assert "0 PASS · 0 FAIL" in lab.pacing.value and "pace after two labels" in lab.pacing.value
    for seconds, level in ((20, "PASS"), (30, "FAIL"), (40, "PASS"), (1800, "PASS"), (20, "FAIL")):
        clock[0] += pd.Timedelta(seconds=seconds)
        lab.label(level)
    # gaps 30, 40 and 20 s (the 30 min break is left out): median 30 s, 5 cases open
    assert lab.progress_text.value == "5 / 10"
    assert lab.pacing.value == " · 3 PASS · 2 FAIL · 32 min this session · 30 s per label · about 2 min left"
    lab.close()
    clock[0] += pd.Timedelta(hours=2)
    again = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann")  # the pace is read back from the file
    assert "30 s per label · about 2 min left" in again.pacing.value


def test_end_state_summary_next_step_and_disabled_buttons(tmp_path):
    lab = Labeller(CASES, tmp_path / "ann.jsonl", labeller="ann", judge=JUDGE)
    lab.unsure_button.value = True
    lab.note.value = "hm"
    for level in ("PASS", "FAIL", "PASS", "PASS"):
        lab.label(level)
    summary = lab.case_view.value
    assert "All 4 cases are labelled</b>: 3 PASS · 1 FAIL; 1 marked unsure, 1 with a note" in summary
    assert "calibrate.calibrate(results, labeller.labels())" in summary and "verdict is shown now" in summary
    assert all(b.disabled for b in lab.buttons.values()) and lab.unsure_button.disabled and lab.skip_button.disabled
    assert lab.note.disabled and not lab.back_button.disabled and not lab.undo_button.disabled
    lab.label("PASS")
    assert "nothing to label: all 4 cases are labelled" in lab.status.value and len(lab.labels()) == 4


def test_long_cases_scroll_wrap_and_json_is_pretty_printed(tmp_path):
    cases = pd.DataFrame({"case_id": ["j"], "input": ["delivery " * 400],
                          "output": ['{"answer": "<i>5</i>", "sources": [1, 2]}']})
    lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann")
    view = lab.case_view.value
    assert view.count("max-height: 14em; overflow: auto") == 2 and "word-break: normal" in view
    assert "break-all" not in view and "overflow-wrap: break-word" in view
    assert '{\n  &quot;answer&quot;: &quot;&lt;i&gt;5&lt;/i&gt;&quot;,\n  &quot;sources&quot;: [\n    1,' in view
    assert "<i>5</i>" not in view


def test_rubric_in_a_collapsible_panel_and_its_version_stored(tmp_path):
    rubric = judge.UNSUPPORTED_CLAIMS
    lab = Labeller(CASES, tmp_path / "ann.jsonl", labeller="ann", rubric=rubric)
    assert lab.rubric_panel.selected_index is None  # collapsed
    assert rubric.criterion[:40] in lab.rubric_panel.children[0].value and "SOURCE" in lab.rubric_panel.children[0].value
    assert any(f"<b>PASS</b> when: {rubric.criterion[:30]}" in c.value for c in lab.children if hasattr(c, "value"))
    lab.label("FAIL")
    assert lines(tmp_path / "ann.jsonl")[0]["rubric_version"] == rubric.version
    with pytest.raises(TypeError, match="`rubric` must be an evalkit.judge.Rubric"):
        Labeller(CASES, tmp_path / "b.jsonl", labeller="ann", rubric=5)


def test_relabel_mode_looks_different(tmp_path):
    path = tmp_path / "ann.jsonl"
    lab = Labeller(CASES, path, labeller="ann")
    for level in ("PASS", "FAIL", "PASS", "FAIL"):
        lab.label(level)
    assert "RE-LABEL" not in lab.header.value and "evalkit-relabel" not in lab._dom_classes
    again = Labeller(CASES, path, labeller="ann", relabel=2, rng=0)
    assert "RE-LABEL MODE" in again.header.value and "evalkit-relabel" in again._dom_classes
    assert "#e66101" in again.header.value and "your label" not in again.case_view.value


def test_lock_refusal_is_one_line(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "ann.jsonl"
    code = (f"import time; from evalkit.labels import LabelWriter; w = LabelWriter({str(path)!r}, labeller='bob'); "
            "print('locked', flush=True); time.sleep(60)")
    other = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert other.stdout.readline().strip() == "locked"
        with pytest.raises(LabelsLockedError) as refused:
            Labeller(CASES, path, labeller="ann")
        shown = refused.value._render_traceback_()
        assert len(shown) == 1 and shown[0].startswith("LabelsLockedError: ") and "labeller 'bob'" in shown[0]
        from IPython.core.interactiveshell import InteractiveShell

        shell = InteractiveShell.instance()
        import io
        from contextlib import redirect_stdout

        out = io.StringIO()
        with redirect_stdout(out):
            shell.run_cell(f"from evalkit.widgets import Labeller\nimport pandas as pd\nLabeller(pd.DataFrame("
                           f"{{'case_id': ['a'], 'input': ['q'], 'output': ['o']}}), {str(path)!r}, labeller='ann')")
        printed = [line for line in out.getvalue().splitlines() if line.strip()]
        assert len(printed) == 1 and "is open for writing by labeller 'bob'" in printed[0], printed
    finally:
        other.kill()
        other.wait()


def test_a_failed_write_is_not_saved_and_says_so(tmp_path, monkeypatch):
    lab = Labeller(CASES, tmp_path / "ann.jsonl", labeller="ann")
    lab.label("PASS")

    def full(record):
        raise OSError(errno.ENOSPC, "ann.jsonl: the label was not saved (No space left on device)")

    monkeypatch.setattr(lab._writer, "append", full)
    lab.note.value = "keep me"
    lab.label("FAIL")
    assert "not saved" in lab.status.value and "No space left" in lab.status.value
    assert lab.current_case == "c2" and lab.progress_text.value == "1 / 4" and lab.note.value == "keep me"
    monkeypatch.undo()
    lab.label("FAIL")
    assert lab.labels().to_dict() == {"c1": "PASS", "c2": "FAIL"}


# ------------------------------------------------------------------ pairwise
PAIRS = pd.DataFrame({
    "comparison_id": [f"p{i}" for i in range(8)],
    "input": [f"question {i}" for i in range(8)],
    "output_a": [f"answer from alpha {i}" for i in range(8)],
    "output_b": [f"<b>answer from beta {i}</b>" for i in range(8)],
    "system_a": "alpha", "system_b": "beta",
})


def test_pairwise_labels_rebuild_the_comparisons_table(tmp_path):
    path = tmp_path / "ann.jsonl"
    lab = PairwiseLabeller(PAIRS, path, labeller="ann", seed=7)
    assert lab.keys_line.legend == "1 A (left) · 2 B (right) · 3 tie · s skip · b back · u undo · ? unsure"
    assert "&lt;b&gt;answer from beta" in lab.case_view.value and "alpha" not in lab.judge_view.value
    assert lab.pacing.value.startswith(" · 0 A (left) · 0 B (right) · 0 tie") and "8 comparisons to label" in lab.status.value
    winners = {}
    for i in range(8):
        shown = lab.shown()
        key = "1" if "alpha" in shown["left"] else "2"  # this annotator always prefers alpha
        if i == 5:
            key = "3"
        lab.handle_key({"key": key})
        winners[f"p{i}"] = "alpha" if key != "3" else None
    records = read_labels(path)
    assert set(records.columns) >= {"system_left", "system_right", "order_seed", "unsure"}
    assert set(records["label"]) == {"A", "B", "TIE"} and (records["order_seed"] == 7).all()
    sides = records["system_left"].tolist()
    assert 1 <= sides.count("alpha") <= 7  # a random order, both ways round
    # The contract: system_a is the system shown first (left); winner a / b / tie for A / B / TIE.
    table = pd.DataFrame({"comparison_id": records["case_id"], "system_a": records["system_left"],
                          "system_b": records["system_right"],
                          "winner": records["label"].map({"A": "a", "B": "b", "TIE": "tie"})})
    for row in table.itertuples():
        won = {"a": row.system_a, "b": row.system_b, "tie": None}[row.winner]
        assert won == winners[row.comparison_id]
    again = PairwiseLabeller(PAIRS, tmp_path / "bob.jsonl", labeller="bob", seed=7)  # the seed reproduces the order
    assert [again.shown(i)["system_left"] for i in range(8)] == sides


def test_pairwise_keeps_the_shown_order_and_stays_blind(tmp_path):
    path = tmp_path / "ann.jsonl"
    lab = PairwiseLabeller(PAIRS, path, labeller="ann")  # no seed: a fresh one, recorded
    seed = lab.seed
    lab.label("B")
    left = lines(path)[0]["system_left"]
    assert lines(path)[0]["order_seed"] == seed
    lab.back()
    assert "systems hidden" in lab.judge_view.value and "alpha" not in lab.judge_view.value + lab.case_view.value.replace(
        "answer from alpha", "")
    lab.reveal()
    assert f"A (left) = <b>{left}</b>" in lab.judge_view.value and lines(path)[-1]["mode"] == "reveal"
    lab.close()
    other_seed = PairwiseLabeller(PAIRS, path, labeller="ann", seed=seed + 1)  # the labelled one keeps its order
    other_seed.back()
    assert other_seed.shown(0)["system_left"] == left and "your label: <b>B (right)</b>" in other_seed.case_view.value
    other_seed.label("A")  # recorded with seed + 1
    other_seed.close()
    resumed = PairwiseLabeller(PAIRS, path, labeller="ann")  # no seed: the file's latest, so the order goes on as before
    assert resumed.seed == seed + 1
    assert [resumed.shown(i)["system_left"] for i in range(2, 8)] == [other_seed.shown(i)["system_left"] for i in range(2, 8)]
    resumed.close()
    open_lab = PairwiseLabeller(PAIRS, tmp_path / "c.jsonl", labeller="cy", blind=False)
    assert "systems: A (left) = <b>" in open_lab.judge_view.value


def test_pairwise_bad_input(tmp_path):
    with pytest.raises(KeyError, match="output_b"):
        PairwiseLabeller(PAIRS.drop(columns="output_b"), tmp_path / "l.jsonl", labeller="ann")
    with pytest.raises(ValueError, match="`answers` must name two columns"):
        PairwiseLabeller(PAIRS, tmp_path / "l.jsonl", labeller="ann", answers="output_a")
    with pytest.raises(ValueError, match="twice"):
        PairwiseLabeller(pd.concat([PAIRS, PAIRS]), tmp_path / "l.jsonl", labeller="ann")
    renamed = PAIRS.rename(columns={"comparison_id": "id", "input": "q", "system_a": "m1", "system_b": "m2"})
    lab = PairwiseLabeller(renamed, tmp_path / "l.jsonl", labeller="ann", comparison_id="id", question="q",
                           systems=("m1", "m2"), seed=0)
    lab.label("TIE")
    assert lines(tmp_path / "l.jsonl")[0]["case_id"] == "p0" and lab.status.value == "labelled <code>p0</code> <b>tie</b>"
    with pytest.raises(ValueError, match="`seed` must be in"):
        PairwiseLabeller(PAIRS, tmp_path / "m.jsonl", labeller="ann", seed=-1)


# ------------------------------------------------------------------ notebook 00 with someone's labels
NOTEBOOK_00 = Path(__file__).resolve().parents[1] / "notebooks" / "00_labelling.ipynb"


@pytest.mark.slow
def test_notebook_00_calibrates_on_your_labels_and_says_so(tmp_path):
    pytest.importorskip("nbclient", reason='needs the \'report\' extra: pip install "evalkit[report]"')
    from evalkit import report

    demo = datasets.load_demo("judge")
    to_label = cases_mod.sample_cases(demo["cases"], 30, stratify="day", rng=0)
    folder = tmp_path / "labels"
    for i, case in enumerate(to_label["case_id"][:12]):
        labels.append_label(folder / "ann.jsonl", {"case_id": case, "label": ("PASS", "FAIL")[i % 2], "labeller": "ann",
                                                   "mode": "label", "position": i})
    result = report.run_notebook(NOTEBOOK_00, tmp_path, params={"ANNOTATOR": "ann", "LABELS_DIR": str(folder)})
    assert result.ok, result.error
    page = result.html.read_text()
    assert "Calibrating on your 12 labels</strong> (labeller <code>ann</code>" in page
    assert "18 of the 30 sampled cases are not labelled yet" in page and "<strong>Not your labels</strong>" not in page
    assert "labelling as <b>ann</b>" in page and "12 / 30" in page
    # Without a name, in a folder that holds someone else's labels: refused in one line.
    (tmp_path / "out").mkdir()
    refused = report.run_notebook(NOTEBOOK_00, tmp_path / "out", params={"LABELS_DIR": str(folder)})
    assert not refused.ok and refused.error.startswith("AnnotatorError: name the annotator")
    assert "holds labels by 'ann' (ann.jsonl)" in refused.error


@pytest.mark.slow
def test_notebook_00_report_page_says_it_used_the_demo_labels(tmp_path):
    pytest.importorskip("nbclient", reason='needs the \'report\' extra: pip install "evalkit[report]"')
    from evalkit import report

    result = report.run_notebook(NOTEBOOK_00, tmp_path, params={"LABELS_DIR": str(tmp_path / "none")})
    assert result.ok, result.error
    page = result.html.read_text()
    assert "<strong>Not your labels</strong>" in page and "recorded labels of the synthetic demo set" in page
    assert "no name given" in page and "0 / 30" in page and not (tmp_path / "none").exists()


# ------------------------------------------------------------------ the live interval (watch=)
def cases_of(n):
    return pd.DataFrame({"case_id": [f"k{i:03d}" for i in range(n)], "input": "q", "output": "a"})


def labels_in_order(lab):
    """The latest label of each case, in the order the cases were first labelled, read from the file alone."""
    records = read_labels(lab.path)
    made = records[(records["mode"] == "label") & records["label"].notna()]
    current = lab.labels()
    order = [case for case in dict.fromkeys(made["case_id"]) if case in current.index]
    return current[order]


def expected_sequence(lab, judge=None):
    """infer.confidence_sequence called directly on the labels file's labels, as the docs say the line is made."""
    human = labels_in_order(lab)
    if lab.watch in ("pass_rate", "mean") and human.isin(["PASS", "FAIL"]).all():
        return infer.confidence_sequence(human=human == "PASS", confidence_level=lab.confidence_level)
    if lab.watch == "mean":
        return infer.confidence_sequence(human=human.astype(float), confidence_level=lab.confidence_level, bounds=(1, 5))
    return infer.confidence_sequence(judge == "PASS", human == "PASS", statistic=lab.watch,
                                     confidence_level=lab.confidence_level)


def expected_line(name, cs, h, *, hidden=False):
    """The status line from infer's table and stopping point (two decimals; ends rounded outwards)."""
    row = cs.iloc[-1]
    stop = infer.stopping_point(cs, half_width=h) if h is not None else None
    half = row["half_width"]
    digits = 2
    while h is not None and half != h and ((round(half, digits) <= round(h, digits)) != (half <= h)
                                           or round(half, digits) == round(h, digits)):
        digits += 1
    ends = f"[{np.floor(row['cs_low'] * 100 + 1e-9) / 100:.2f}, {np.ceil(row['cs_high'] * 100 - 1e-9) / 100:.2f}]"
    over = f" over {row['n_used']} human FAIL{'' if row['n_used'] == 1 else 's'}" if row["statistic"] == "fail_recall" else ""
    head = (f"{name}{over} ±{half:.{digits}f} (anytime-valid 95%; the estimate stays hidden while you label blind)" if hidden
            else f"{name} {row['estimate']:.2f} {ends}{over} (anytime-valid 95%)")
    if stop is None:
        return head + ("" if hidden else f", ±{half:.{digits}f}") + (f"; stop at ±{h:.2f}" if h is not None else "")
    since = "" if stop == len(cs) else f" (first at {stop})"
    return f"{head} · settled: ±{half:.{digits}f} ≤ {h:.2f} after {len(cs)} labels{since} — you can stop"


@pytest.mark.parametrize(("watch", "h"), [("pass_rate", 0.3), ("agreement", 0.3), ("fail_recall", 0.45)])
def test_live_interval_equals_infer_through_labels_undo_back_and_skips(tmp_path, watch, h):
    """After every action the labeller's sequence is infer.confidence_sequence on the file's labels (to the last bit),
    its stop point infer.stopping_point, and its line the text made from them."""
    gen = np.random.default_rng(7)
    cases = cases_of(60)
    judge = pd.Series(np.where(gen.random(60) < 0.7, "PASS", "FAIL"), index=cases["case_id"])
    lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", judge=judge, blind=False, watch=watch,
                   stop_half_width=h, order="shuffle", rng=3)
    name = widgets._WATCHED[watch]
    lines_checked = 0
    for _ in range(60):
        action = gen.random()
        if action < 0.75:
            lab.label("PASS" if gen.random() < 0.75 else "FAIL")
        elif action < 0.87:
            lab.undo()
        elif action < 0.97:
            lab.back()
        else:
            lab.skip()
        if not len(lab.labels()):
            continue
        cs = expected_sequence(lab, judge)
        pd.testing.assert_frame_equal(lab.sequence(), cs, check_exact=True)
        assert lab.settled_at == infer.stopping_point(cs, half_width=h)
        skipped = lab._open and lab._open[0] < max(lab._at[c] for c in lab.labels().index)
        if cs.iloc[-1]["n_used"] and not skipped:
            assert lab.watch_text == expected_line(name, cs, h)
            lines_checked += 1
    assert lab.settled_at is not None and lines_checked > 15
    assert html.escape(f"{name} ") in lab.watch_view.value and lab.watch_view.layout.display != "none"


def test_live_mean_of_numeric_levels_and_a_resumed_file(tmp_path):
    cases = cases_of(40)
    levels = ("1", "2", "3", "4", "5")
    lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", levels=levels, watch="mean", order="random")
    for level in "5545354455":
        lab.label(level)
    cs = expected_sequence(lab)
    pd.testing.assert_frame_equal(lab.sequence(), cs, check_exact=True)
    assert lab.watch_text == expected_line("mean label", cs, None)
    lab.close()
    again = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", levels=levels, watch="mean", order="random")
    pd.testing.assert_frame_equal(again.sequence(), cs, check_exact=True)  # rebuilt from the file on opening
    again.label("4")
    pd.testing.assert_frame_equal(again.sequence(), expected_sequence(again), check_exact=True)


def test_live_interval_lines_before_during_and_after_the_stop(tmp_path):
    lab = Labeller(cases_of(200), tmp_path / "ann.jsonl", labeller="ann", watch="pass_rate", stop_half_width=0.1,
                   order="shuffle", rng=0)
    assert lab.watch_text == "pass rate: no label yet · anytime-valid 95% interval from the first label; stop at ±0.10"
    gen = np.random.default_rng(1)
    while lab.settled_at is None:
        lab.label("PASS" if gen.random() < 0.95 else "FAIL")
        if lab.settled_at is None:
            assert lab.watch_text.endswith("; stop at ±0.10") and "(anytime-valid 95%), ±" in lab.watch_text
            assert "#4575b4" in lab.watch_view.value  # the live tone
    n = lab.settled_at
    cs = infer.confidence_sequence(human=labels_in_order(lab) == "PASS")
    assert infer.stopping_point(cs, half_width=0.1) == n == len(cs)
    assert lab.watch_text.endswith(f"≤ 0.10 after {n} labels — you can stop") and "#1a9850" in lab.watch_view.value
    lab.label("PASS")
    assert lab.watch_text.endswith(f"after {n + 1} labels (first at {n}) — you can stop")
    lab.undo()
    lab.undo()  # back under the stop point: the rule is not met any more
    assert lab.settled_at is None and lab.watch_text.endswith("; stop at ±0.10")
    assert lab.watch_view.value in lab._snapshot_html()  # a report page shows the line too


def test_an_order_not_known_to_be_random_is_said_and_never_called_stoppable(tmp_path):
    cases = cases_of(30)
    with pytest.warns(EvalkitWarning, match="holds only if the cases come in a random order"):
        lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", watch="pass_rate", stop_half_width=0.35)
    for _ in range(4):
        lab.label("PASS")
    assert lab.settled_at == 4 and "you can stop" not in lab.watch_text
    assert ("settled: ±0.31 ≤ 0.35 after 4 labels, but the labels so far came in an order not known to be random "
            "(order='given'), so the interval may not hold") in lab.watch_text and "#e66101" in lab.watch_view.value
    assert {r["case_order"] for r in lines(tmp_path / "ann.jsonl")} == {"given"}
    lab.close()
    # Resumed in a random order: the labels made before still came in the given one, and the line keeps saying so.
    again = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", watch="pass_rate", stop_half_width=0.35,
                     order="random")
    again.label("FAIL")
    assert "4 of the 5 labels so far came in an order not known to be random" in again.watch_text
    # A file written before orders were recorded: unknown, too.
    path = tmp_path / "old.jsonl"
    labels.append_label(path, {"case_id": "k000", "label": "PASS", "labeller": "bo", "mode": "label", "position": 0})
    old = Labeller(cases, path, labeller="bo", watch="pass_rate", order="shuffle", rng=1)
    assert "the labels so far came in an order not known to be random" in old.watch_text


def test_skipped_cases_are_named_before_the_stop(tmp_path):
    lab = Labeller(cases_of(30), tmp_path / "ann.jsonl", labeller="ann", watch="pass_rate", stop_half_width=0.35,
                   order="random")
    lab.skip()
    lab.skip()
    for _ in range(4):
        lab.label("PASS")
    assert lab.settled_at == 4
    assert lab.watch_text.endswith("— label the 2 skipped cases still open before you stop: it assumes skipping has "
                                   "nothing to do with the label")
    lab.position = 0
    lab.label("FAIL")
    lab.label("FAIL")  # the skipped ones, labelled: the caveat goes
    assert lab.watch_text.endswith("after 6 labels (first at 4) — you can stop")
    pd.testing.assert_frame_equal(lab.sequence(), expected_sequence(lab), check_exact=True)


def test_order_shuffle_is_recorded_and_reproduced_on_resume(tmp_path):
    cases = cases_of(50)
    path = tmp_path / "ann.jsonl"
    lab = Labeller(cases, path, labeller="ann", order="shuffle", rng=11)
    assert lab.current_case == f"k{np.random.default_rng(11).permutation(50)[0]:03d}"
    shown = []
    for _ in range(3):
        shown.append(lab.current_case)
        lab.label("PASS")
    records = read_labels(path)
    assert (records["case_order"] == "shuffled").all() and (records["case_seed"] == 11).all()
    assert records["position"].tolist() == [int(c[1:]) for c in shown]  # rows of the table as given
    lab.close()
    again = Labeller(cases, path, labeller="ann", order="shuffle")  # no seed: the recorded one
    assert again.case_seed == 11 and again.current_case == f"k{np.random.default_rng(11).permutation(50)[3]:03d}"
    again.close()
    fresh = Labeller(cases, tmp_path / "bo.jsonl", labeller="bo", order="shuffle")
    assert fresh.case_seed is not None and fresh.order == np.random.default_rng(fresh.case_seed).permutation(50).tolist()
    plain = Labeller(cases, tmp_path / "cy.jsonl", labeller="cy", order="random")
    plain.label("FAIL")
    assert lines(tmp_path / "cy.jsonl")[0]["case_order"] == "random" and lines(tmp_path / "cy.jsonl")[0]["case_seed"] is None


def test_blind_agreement_shows_only_the_half_width(tmp_path):
    """Blind: agreement and FAIL recall show their half-width, not the estimate, until the batch is done. The figure
    in the Labeller's Notes: how often the shown half-width differs between an agreeing and a disagreeing verdict."""
    cases = cases_of(12)
    judge = pd.Series(["PASS", "FAIL"] * 6, index=cases["case_id"])
    lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", judge=judge, watch="agreement", stop_half_width=0.1,
                   order="random")
    assert lab.blind
    for i in range(11):
        lab.label("PASS" if i % 3 else "FAIL")
        cs = expected_sequence(lab, judge)
        assert lab.watch_text == expected_line("agreement with the judge", cs, 0.1, hidden=True)
        assert f"{cs.iloc[-1]['estimate']:.2f}" not in lab.watch_text.split("±")[0]
    lab.label("PASS")  # the batch is done: the estimate shows, as the verdicts do
    assert lab.watch_text == expected_line("agreement with the judge", expected_sequence(lab, judge), 0.1)
    recall = Labeller(cases, tmp_path / "bo.jsonl", labeller="bo", judge=judge, watch="fail_recall", order="random")
    recall.label("PASS")
    assert recall.watch_text.startswith("the judge's FAIL recall: no human FAIL yet")
    recall.label("FAIL")
    assert recall.watch_text.startswith("the judge's FAIL recall over 1 human FAIL ±0.50 (anytime-valid 95%; the estimate")
    # What the half-width can tell: over the first 200 labels of agreement streams at 0.85, the share of labels after
    # which the two-decimal half-width would differ had the judge agreed or not.
    differs = []
    for seed in range(20):
        gen = np.random.default_rng(seed)
        stream = widgets._LiveSequence("agreement", 0.0, 1.0, 0.95)
        for _ in range(200):
            shown = []
            for hit in (1.0, 0.0):
                stream.push(hit)
                shown.append(round(stream.half_width(), 2))
                stream.pop()
            differs.append(shown[0] != shown[1])
            stream.push(float(gen.random() < 0.85))
    assert 0.12 < np.mean(differs) < 0.22  # "about one label in six"


def test_stopping_when_the_labeller_says_settled_keeps_its_level(tmp_path):
    """An annotator who stops the first time the labeller says "settled" (±0.10, at most 300 cases, pass rate 0.9):
    the interval then shown covers the truth at least 95% of the time (within 3 MC s.e.); the fixed-n large-sample
    interval (normal, from 30 labels) used the same way does not. The fixed-n Clopper-Pearson interval survives this
    rule (its width hardly depends on the data); it does not survive an annotator who stops as soon as the number
    clears the team's bar (lower end above 0.9 when the truth is 0.9, at most 150 labels), which the sequence does.

    The settled moment is the labeller's own (its live sequence and rule); the first runs drive a real Labeller and
    check that it stops at the same label with the same interval."""
    from statsmodels.stats.proportion import proportion_confint

    p, h, bar, reps, level = 0.9, 0.1, 0.9, 300, 0.95
    floor = level - 3 * np.sqrt(level * (1 - level) / reps)
    covered = {"settled": 0, "settled, clopper-pearson": 0, "settled, normal": 0, "bar": 0, "bar, clopper-pearson": 0}
    for rep in range(reps):
        x = (np.random.default_rng([20261201, rep]).random(300) < p).astype(float)
        live = widgets._LiveSequence("mean", 0.0, 1.0, level)
        settled = cleared = None
        for t, value in enumerate(x, start=1):
            live.push(value)
            if settled is None and live.half_width() <= h:
                settled = (t, live.low[-1], live.high[-1])
            if cleared is None and (live.low[-1] > bar or t == 150):
                cleared = (live.low[-1], live.high[-1])
            if settled is not None and cleared is not None:
                break
        settled = settled or (300, live.low[-1], live.high[-1])
        covered["settled"] += settled[1] <= p <= settled[2]
        covered["bar"] += cleared[0] <= p <= cleared[1]
        t = np.arange(1, 301)
        k = np.cumsum(x)
        for name, method in (("clopper-pearson", "beta"), ("normal", "normal")):
            low, high = (np.nan_to_num(v, nan=fill) for v, fill in zip(proportion_confint(k, t, alpha=1 - level, method=method),
                                                                        (0.0, 1.0), strict=True))
            stop = np.flatnonzero(((high - low) / 2 <= h) & (t >= (30 if name == "normal" else 1)))
            i = stop[0] if len(stop) else 299
            covered[f"settled, {name}"] += low[i] <= p <= high[i]
            if name == "clopper-pearson":
                hit = np.flatnonzero((low[:150] > bar) | (t[:150] == 150))[0]
                covered["bar, clopper-pearson"] += low[hit] <= p <= high[hit]
        if rep < 3:  # the widget itself stops there, with that interval
            lab = Labeller(cases_of(300), tmp_path / f"sim{rep}.jsonl", labeller="sim", watch="pass_rate",
                           stop_half_width=h, order="random")
            for value in x:
                lab.label("PASS" if value else "FAIL")
                if lab.settled_at is not None:
                    break
            row = lab.sequence().iloc[-1]
            assert (lab.settled_at, row["cs_low"], row["cs_high"]) == settled and "you can stop" in lab.watch_text
            lab.close()
    rate = {name: hits / reps for name, hits in covered.items()}
    assert rate["settled"] >= floor and rate["bar"] >= floor, rate
    assert rate["settled, normal"] < floor - 0.05, rate  # about 0.80
    assert rate["settled, clopper-pearson"] >= floor, rate  # about 0.97: the half-width rule is mild for an exact interval
    assert rate["bar, clopper-pearson"] < floor, rate  # about 0.89
