"""Widgets driven from Python: set values, click buttons, inspect children and the labels file."""

import errno
import html
import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("ipywidgets", reason='needs the \'widgets\' extra: pip install "llm-evalkit[widgets]"')

from evalkit import EvalkitWarning, calibrate, datasets, density, infer, judge, labels, tcva, widgets  # noqa: E402
from evalkit import cases as cases_mod  # noqa: E402
from evalkit.labels import LabelsLockedError, read_labels  # noqa: E402
from evalkit.widgets import (  # noqa: E402
    AnnotatorError,
    ClaimLabeller,
    FDBinExplorer,
    Labeller,
    PairwiseLabeller,
    SweepExplorer,
)

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
    assert lines(path)[-1]["label"] is None and lines(path)[-1]["note"] is None  # an undo: no label, not ignored
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
    with pytest.raises(ValueError, match="`order` must be one of \\['given', 'random', 'shuffle', 'active'\\]; got 'sorted'"):
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
    assert explorer.figure.layout.display == "none" and "plot is hidden" in explorer.summary.value
    assert "data:image/png" not in explorer._repr_mimebundle_()["text/html"]  # no stale plot under the message
    explorer.edges_text.value = "200, 300"
    assert "cannot bin" in explorer.summary.value and "outside the edges" in explorer.summary.value
    assert explorer.figure.layout.display == "none"
    explorer.edges_text.value = ""
    assert explorer.figure.layout.display == "" and "Spearman rho" in explorer.summary.value
    explorer.weights["systematic_review"].value = -1.0
    assert "<b>tier weight</b> of systematic_review must be a number &gt;= 0; got -1" in explorer.summary.value
    assert "cannot bin" not in explorer.summary.value and explorer.figure.layout.display == "none"
    explorer.weights["systematic_review"].value = 1.0
    assert explorer.figure.layout.display == "" and explorer.figure.value
    assert all(box.description == tier and box.style.description_width == "initial"
               for tier, box in explorer.weights.items())  # whole names, never cut


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
    assert lab.keys_line.legend == "1 PASS · 2 FAIL · s skip · b back · u undo · i ignore · ? unsure · / find"
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


def test_a_key_or_click_made_on_another_case_is_not_applied_and_says_why(tmp_path):
    path = tmp_path / "l.jsonl"
    lab = Labeller(CASES, path, labeller="ann")
    msg = lab.keys_line._handle_custom_msg
    assert "data-evalkit-case='c1'" in lab.case_view.value  # the page reads the case on screen from here
    msg({"key": "1", "case": "c1", "seq": 1}, [])  # pressed while c1 was on screen: labels c1
    msg({"key": "2", "case": "c1", "seq": 2}, [])  # a second tap before the screen showed c2: refused
    assert lab.labels().to_dict() == {"c1": "PASS"} and lab.current_case == "c2"
    assert "key &#x27;2&#x27; not applied</b>: it was made on <code>c1</code>, but <code>c2</code> is on screen" in lab.status.value
    for event in ({"click": "level-1", "case": "c1"}, {"click": "skip", "case": "c1"}, {"click": "ignore", "case": "c3"},
                  {"click": "undo", "case": "c1"}, {"click": "unsure", "case": "c1"}, {"key": "s", "case": "c1"}):
        msg({**event, "seq": 3}, [])
        assert "not applied" in lab.status.value and lab.current_case == "c2", event
    assert not lab.unsure_button.value and len(lines(path)) == 1  # nothing written by a stale event
    msg({"click": "level-1", "case": "c2", "seq": 4}, [])  # a click on the case on screen acts
    msg({"click": "unsure", "case": "c3", "seq": 5}, [])
    msg({"click": "ignore", "case": "c3", "seq": 6}, [])
    assert lab.labels().to_dict() == {"c1": "PASS", "c2": "FAIL"} and lab.current_case == "c4"
    assert lines(path)[-1]["case_id"] == "c3" and lines(path)[-1]["ignored"]
    msg({"click": "level-0", "case": "c4", "seq": 7}, [])
    msg({"key": "1", "case": "c4", "seq": 8}, [])  # the end summary is on screen now (case None)
    assert "not applied" in lab.status.value and "the end summary is on screen now" in lab.status.value
    msg({"key": "b", "case": None, "seq": 9}, [])  # made on the end summary: acts
    assert lab.current_case == "c4"
    msg({"click": "nonsense", "case": "c4", "seq": 10}, [])
    assert "does nothing here" in lab.status.value
    assert all(f"evalkit-act-level-{i}" in b._dom_classes for i, b in enumerate(lab.buttons.values()))


def test_a_labeller_taken_over_says_so_at_once(tmp_path):
    path = tmp_path / "l.jsonl"
    first = Labeller(CASES, path, labeller="ann")
    assert first.keys_line.taken == ""
    second = Labeller(CASES, path, labeller="ann")  # the cell run again: the newer one takes the file
    assert "took the file over" in first.keys_line.taken and "taken over" in first.status.value  # before any key
    assert second.keys_line.taken == ""
    first.label("PASS")
    assert "not saved" in first.status.value and read_labels(path).empty
    second.label("FAIL")
    assert second.labels().to_dict() == {"c1": "FAIL"}
    second.close()
    third = Labeller(CASES, path, labeller="ann")  # a closed labeller is not told anything
    assert second.keys_line.taken == "" and third.current_case == "c2"
    third.close()


def test_the_end_summary_names_the_labellers_variable(tmp_path):
    from IPython.core.interactiveshell import InteractiveShell

    shell = InteractiveShell.instance()
    shell.user_ns["cases"], shell.user_ns["path"] = CASES.iloc[:1], tmp_path / "l.jsonl"
    shell.run_cell("from evalkit.widgets import Labeller\nmy_lab = Labeller(cases, path, labeller='ann')")
    lab = shell.user_ns["my_lab"]
    lab.label("PASS")
    assert "calibrate.calibrate(results, my_lab.labels())" in lab.case_view.value
    shell.user_ns["other_name"] = lab  # two names: neither is the one, so a neutral stand-in
    lab.back()
    lab.label("FAIL")
    assert "<i>the labeller</i>.labels()" in lab.case_view.value
    lab.close()
    for name in ("cases", "path", "my_lab", "other_name"):
        shell.user_ns.pop(name, None)


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
    monkeypatch.setattr(widgets._common, "_now", lambda: clock[0])
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
    assert "calibrate.calibrate(results, <i>the labeller</i>.labels())" in summary and "verdict is shown now" in summary
    assert lab.pace_warning.layout.display == "none"  # the "too fast" box is not for the end summary
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


def test_lock_refusal_is_one_line(tmp_path, monkeypatch):
    import subprocess
    import sys

    monkeypatch.setattr(labels, "LOCK_WAIT", 0.2)  # every writer's wait, the labeller's too: refused after 0.2 s
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
        assert "(waited 0.2 s)" in shown[0]
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
    assert lab.keys_line.legend == ("1 A (left) · 2 B (right) · 3 tie · 4 both bad · s skip · b back · u undo · "
                                    "i ignore · ? unsure · / find")
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
    pytest.importorskip("nbclient", reason='needs the \'report\' extra: pip install "llm-evalkit[report]"')
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
    pytest.importorskip("nbclient", reason='needs the \'report\' extra: pip install "llm-evalkit[report]"')
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


def expected_line(name, cs, h, *, n_cases, hidden=False):
    """The status line from infer's table and stopping point: the range in plain words (a rate in percent, its widths
    in points, ends rounded outwards), then whether it is narrow enough to stop."""
    row = cs.iloc[-1]
    stop = infer.stopping_point(cs, half_width=h) if h is not None else None
    rate = name != "mean label"
    scale, unit, pct = (100, " points", "%") if rate else (1, "", "")
    digits = 0 if rate else 2  # h of 0.1 to 0.45: two decimals, none in points
    half, limit = row["half_width"] * scale, None if h is None else h * scale
    shown = digits
    while limit is not None and half != limit and ((round(half, shown) <= round(limit, shown)) != (half <= limit)
                                                   or round(half, shown) == round(limit, shown)):
        shown += 1
    width = f"±{half:.{shown}f}{unit}"
    low = np.floor(row["cs_low"] * scale * 10**digits + 1e-9) / 10**digits
    high = np.ceil(row["cs_high"] * scale * 10**digits - 1e-9) / 10**digits
    over = f" over {row['n_used']} human FAIL{'' if row['n_used'] == 1 else 's'}" if row["statistic"] == "fail_recall" else ""
    over += f" in the population these {n_cases} cases come from"  # what it estimates
    if hidden:
        head = f"{name}{over}: within {width} (anytime-valid 95%; the estimate stays hidden while you label blind)"
    else:
        head = (f"{name}{over}: between {low:.{digits}f}{pct} and {high:.{digits}f}{pct} (estimate "
                f"{row['estimate'] * scale:.{digits}f}{pct}; anytime-valid 95%)")
    if stop is None:
        if h is None:
            return f"{head}, {width}"
        return f"{head} — too wide to stop:{'' if hidden else f' {width} now,'} stop at ±{limit:.{digits}f}{unit}"
    since = "" if stop == len(cs) else f" (first at {stop})"
    return f"{head} — you can stop: ±{half:.{shown}f} ≤ {limit:.{digits}f}{unit} after {len(cs)} labels{since}"


@pytest.mark.parametrize(("watch", "h"), [("pass_rate", 0.3), ("agreement", 0.3), ("fail_recall", 0.45)])
def test_live_interval_equals_infer_through_labels_undo_back_and_skips(tmp_path, watch, h):
    """After every action the labeller's sequence is infer.confidence_sequence on the file's labels (to the last bit),
    its stop point infer.stopping_point, and its line the text made from them."""
    gen = np.random.default_rng(7)
    cases = cases_of(60)
    judge = pd.Series(np.where(gen.random(60) < 0.7, "PASS", "FAIL"), index=cases["case_id"])
    lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", judge=judge, blind=False, watch=watch,
                   stop_half_width=h, order="shuffle", rng=3)
    name = widgets._labeller._WATCHED[watch]
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
            assert lab.watch_text == expected_line(name, cs, h, n_cases=len(lab.order))
            lines_checked += 1
    assert lab.settled_at is not None and lines_checked > 15
    assert html.escape(name) in lab.watch_view.value and ": between " in lab.watch_view.value and lab.watch_view.layout.display != "none"


def test_live_mean_of_numeric_levels_and_a_resumed_file(tmp_path):
    cases = cases_of(40)
    levels = ("1", "2", "3", "4", "5")
    lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", levels=levels, watch="mean", order="random")
    for level in "5545354455":
        lab.label(level)
    cs = expected_sequence(lab)
    pd.testing.assert_frame_equal(lab.sequence(), cs, check_exact=True)
    assert lab.watch_text == expected_line("mean label", cs, None, n_cases=len(lab.order))
    lab.close()
    again = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", levels=levels, watch="mean", order="random")
    pd.testing.assert_frame_equal(again.sequence(), cs, check_exact=True)  # rebuilt from the file on opening
    again.label("4")
    pd.testing.assert_frame_equal(again.sequence(), expected_sequence(again), check_exact=True)


def test_live_interval_lines_before_during_and_after_the_stop(tmp_path):
    lab = Labeller(cases_of(200), tmp_path / "ann.jsonl", labeller="ann", watch="pass_rate", stop_half_width=0.1,
                   order="shuffle", rng=0)
    assert lab.watch_text == ("pass rate in the population these 200 cases come from: no label yet · an anytime-valid 95% range from the first label; you can stop "
                              "at ±10 points")
    gen = np.random.default_rng(1)
    while lab.settled_at is None:
        lab.label("PASS" if gen.random() < 0.95 else "FAIL")
        if lab.settled_at is None:
            assert lab.watch_text.endswith("points now, stop at ±10 points") and "— too wide to stop: ±" in lab.watch_text
            assert "#4575b4" in lab.watch_view.value  # the live tone
    n = lab.settled_at
    cs = infer.confidence_sequence(human=labels_in_order(lab) == "PASS")
    assert infer.stopping_point(cs, half_width=0.1) == n == len(cs)
    assert lab.watch_text.endswith(f"≤ 10 points after {n} labels") and "— you can stop: ±" in lab.watch_text
    assert "#1a9850" in lab.watch_view.value
    lab.label("PASS")
    assert lab.watch_text.endswith(f"after {n + 1} labels (first at {n})") and "you can stop" in lab.watch_text
    lab.undo()
    lab.undo()  # back under the stop point: the rule is not met any more
    assert lab.settled_at is None and lab.watch_text.endswith("stop at ±10 points")
    assert lab.watch_view.value in lab._snapshot_html()  # a report page shows the line too


def test_an_order_not_known_to_be_random_is_said_and_never_called_stoppable(tmp_path):
    cases = cases_of(30)
    with pytest.warns(EvalkitWarning, match="holds only if the cases come in a random order"):
        lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann", watch="pass_rate", stop_half_width=0.35)
    for _ in range(4):
        lab.label("PASS")
    assert lab.settled_at == 4 and "you can stop" not in lab.watch_text
    assert lab.watch_text == ("pass rate in the population these 30 cases come from: between 37% and 100% (estimate 100%; anytime-valid 95%) — settled (±31 ≤ 35 "
                              "points after 4 labels), but the labels so far came in an order not known to be random "
                              "(order='given'), so the interval may not hold") and "#e66101" in lab.watch_view.value
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
    assert lab.watch_text.endswith("after 4 labels): label the 2 skipped cases still open before you stop: it assumes "
                                   "skipping has nothing to do with the label")
    lab.position = 0
    lab.label("FAIL")
    lab.label("FAIL")  # the skipped ones, labelled: the caveat goes
    assert lab.watch_text.endswith("— you can stop: ±31 ≤ 35 points after 6 labels (first at 4)")
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
        assert lab.watch_text == expected_line("agreement with the judge", cs, 0.1, hidden=True, n_cases=len(lab.order))
        assert "between" not in lab.watch_text and "%" not in lab.watch_text.replace("95%", "")
    lab.label("PASS")  # the batch is done: the estimate shows, as the verdicts do
    assert lab.watch_text == expected_line("agreement with the judge", expected_sequence(lab, judge), 0.1, n_cases=len(lab.order))
    recall = Labeller(cases, tmp_path / "bo.jsonl", labeller="bo", judge=judge, watch="fail_recall", order="random")
    recall.label("PASS")
    assert recall.watch_text.startswith("the judge's FAIL recall in the population these 12 cases come from: no human FAIL yet")
    recall.label("FAIL")
    assert recall.watch_text.startswith("the judge's FAIL recall over 1 human FAIL in the population these 12 cases come from: within ±50 points (anytime-valid "
                                        "95%; the estimate stays hidden")
    # What the half-width can tell: over the first 200 labels of agreement streams at 0.85, the share of labels after
    # which the two-decimal half-width would differ had the judge agreed or not.
    differs = []
    for seed in range(20):
        gen = np.random.default_rng(seed)
        stream = widgets._labeller._LiveSequence("agreement", 0.0, 1.0, 0.95)
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
        live = widgets._labeller._LiveSequence("mean", 0.0, 1.0, level)
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


# ------------------------------------------------------------------ annotators: whose label is this
# Four sessions on one shared file, ann's and bob's, whose observations depend on their own annotator's labels only:
# the same in every interleaving with the other annotator's sessions, in one kernel, in two, and after a kill.
SESSION_CODE = '''
import pandas as pd
from evalkit.widgets import Labeller

CASES4 = pd.DataFrame({"case_id": ["c1", "c2", "c3", "c4"], "input": ["q1", "q2", "q3", "q4"], "output": "a"})
SESSIONS = {"ann1": ("ann", [("label", "PASS")] * 3), "bob1": ("bob", [("label", "FAIL")] * 2),
            "ann2": ("ann", [("back",), ("label", "FAIL"), ("undo",)]), "bob2": ("bob", [("label", "PASS"), ("ignore",)])}


def run_session(path, name):
    who, actions = SESSIONS[name]
    lab = Labeller(CASES4, path, labeller=who)
    seen = {"done": lab.progress.value, "case": lab.current_case, "labels": lab.labels().to_dict()}
    for action, *args in actions:
        getattr(lab, action)(*args)
        if action == "back":
            seen["back"] = lab.status.value
            seen["yours"] = lab.case_view.value.split("your label: ")[1][:11] if "your label: " in lab.case_view.value else None
    seen.update(end=lab.labels().to_dict(), done_end=lab.progress.value, case_end=lab.current_case)
    return lab, seen
'''
EXPECTED_SESSIONS = {
    "ann1": {"done": 0, "case": "c1", "labels": {}, "end": {"c1": "PASS", "c2": "PASS", "c3": "PASS"}, "done_end": 3,
             "case_end": "c4"},
    "bob1": {"done": 0, "case": "c1", "labels": {}, "end": {"c1": "FAIL", "c2": "FAIL"}, "done_end": 2, "case_end": "c3"},
    "ann2": {"done": 3, "case": "c4", "labels": {"c1": "PASS", "c2": "PASS", "c3": "PASS"},
             "back": "back to <code>c3</code> · current label: <b>PASS</b>", "yours": "<b>PASS</b>",
             "end": {"c1": "PASS", "c2": "PASS"}, "done_end": 2, "case_end": "c3"},
    "bob2": {"done": 2, "case": "c3", "labels": {"c1": "FAIL", "c2": "FAIL"}, "end": {"c1": "FAIL", "c2": "FAIL", "c3": "PASS"},
             "done_end": 4, "case_end": None},
}
# every record each session writes: (labeller, case, label, ignored, note)
SESSION_RECORDS = {"ann1": [("ann", c, "PASS", False, None) for c in ("c1", "c2", "c3")],
                   "bob1": [("bob", c, "FAIL", False, None) for c in ("c1", "c2")],
                   "ann2": [("ann", "c3", "FAIL", False, None), ("ann", "c3", None, False, None)],
                   "bob2": [("bob", "c3", "PASS", False, None), ("bob", "c4", None, True, None)]}
ORDERS = [order for order in __import__("itertools").permutations(["ann1", "ann2", "bob1", "bob2"])
          if order.index("ann1") < order.index("ann2") and order.index("bob1") < order.index("bob2")]

SESSION_SERVER = SESSION_CODE + '''
import json, os, signal, sys
path, mode = sys.argv[1], sys.argv[2]
print("ready", flush=True)
for line in sys.stdin:
    lab, seen = run_session(path, line.strip())
    if mode == "kill":
        print(json.dumps(seen), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)  # killed with its labeller open: the lock goes with the process
    lab.close()
    print(json.dumps(seen), flush=True)
'''


def _session_namespace():
    namespace = {}
    exec(SESSION_CODE, namespace)  # noqa: S102 - the sessions' code, run here and in the other kernels alike
    return namespace


def _check_records(path, order):
    rows = read_labels(path)
    got = [(r["labeller"], r["case_id"], None if pd.isna(r["label"]) else r["label"], bool(r["ignored"]),
            None if pd.isna(r["note"]) else r["note"]) for r in rows.to_dict("records")]
    assert got == [record for name in order for record in SESSION_RECORDS[name]], order  # none lost, none misattributed
    latest = labels.latest_labels(rows, by_labeller=True)
    assert sorted(zip(latest["labeller"], latest["case_id"], latest["label"], strict=True)) == [
        ("ann", "c1", "PASS"), ("ann", "c2", "PASS"), ("bob", "c1", "FAIL"), ("bob", "c2", "FAIL"), ("bob", "c3", "PASS")]


def _sessions_in_kernels(path, order, mode):
    """Each annotator's sessions in a kernel of their own (``mode="close"``: it stays, closing each labeller), or
    each session in a new kernel killed at its end with its labeller open (``mode="kill"``)."""
    import subprocess
    import sys

    kernels, seen = {}, {}
    try:
        for name in order:
            who = SESSIONS_WHO[name]
            if who not in kernels or kernels[who].poll() is not None:
                kernels[who] = subprocess.Popen([sys.executable, "-c", SESSION_SERVER, str(path), mode], text=True,
                                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
                assert kernels[who].stdout.readline().strip() == "ready"
            kernels[who].stdin.write(name + "\n")
            kernels[who].stdin.flush()
            seen[name] = json.loads(kernels[who].stdout.readline())
            if mode == "kill":
                assert kernels[who].wait(timeout=30) == -9
    finally:
        for kernel in kernels.values():
            kernel.kill()
            kernel.wait()
    return seen


SESSIONS_WHO = {"ann1": "ann", "ann2": "ann", "bob1": "bob", "bob2": "bob"}


@pytest.mark.parametrize("order", ORDERS, ids="-".join)
def test_two_annotators_on_one_file_in_one_kernel_keep_their_own_labels(tmp_path, order):
    """ann's and bob's sessions on one shared file, in each of the six orders, in one kernel (a later labeller takes
    the file over): each resumes, shows and undoes only its annotator's labels, and every record is whose it says."""
    namespace = _session_namespace()
    path, labs = tmp_path / "shared.jsonl", {}
    for name in order:
        labs[name], seen = namespace["run_session"](path, name)
        assert seen == EXPECTED_SESSIONS[name], name
    _check_records(path, order)
    stale = labs[order[0]]  # taken over long ago: it writes nothing, and says so
    stale.label("FAIL") if stale.current_case else stale.undo()
    assert "not saved" in stale.status.value
    _check_records(path, order)
    for lab in labs.values():
        lab.close()


@pytest.mark.slow  # two kernels started and one killed: 23 s of the file's 60 s fast-tier budget
def test_two_annotators_in_two_kernels_and_after_a_kill_keep_their_own_labels(tmp_path):
    """The same sessions with each annotator in a kernel of their own, and each session in a kernel killed with its
    labeller open, in one order (every order: the slow test below)."""
    order = ("ann1", "bob1", "ann2", "bob2")
    for mode in ("close", "kill"):
        path = tmp_path / f"{mode}.jsonl"
        assert _sessions_in_kernels(path, order, mode) == {name: EXPECTED_SESSIONS[name] for name in order}
        _check_records(path, order)


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["close", "kill"])
@pytest.mark.parametrize("order", ORDERS, ids="-".join)
def test_two_annotators_in_every_order_of_kernels_keep_their_own_labels(tmp_path, order, mode):
    path = tmp_path / "shared.jsonl"
    assert _sessions_in_kernels(path, order, mode) == {name: EXPECTED_SESSIONS[name] for name in order}
    _check_records(path, order)


def test_a_shared_file_names_the_other_annotators_and_self_agreement_is_your_own(tmp_path):
    path = tmp_path / "shared.jsonl"
    ann = Labeller(CASES, path, labeller="ann")
    for level in ("PASS", "FAIL", "PASS", "FAIL"):
        ann.label(level)
    ann.close()
    labels.append_label(path, {"case_id": "c1", "label": "PASS", "mode": "label"})  # a record of no one
    bob = Labeller(CASES, path, labeller="bob")
    assert "this file also holds labels by &#x27;ann&#x27;: theirs, never shown or counted as yours" in bob.header.value
    assert "1 label record(s) without an annotator's name, no one's" in bob.header.value
    assert bob.labels().empty and bob.progress_text.value == "0 / 4" and "ready: 4 cases to label" in bob.status.value
    for level in ("FAIL", "FAIL", "FAIL", "FAIL"):
        bob.label(level)
    bob.close()
    again = Labeller(CASES, path, labeller="ann", relabel=4, rng=0)  # ann's re-labels, compared with ann's labels only
    for level in ("PASS", "FAIL", "PASS", "FAIL"):
        again.label(level)
    agreement = again.self_agreement().iloc[0]
    assert agreement["n"] == 4 and agreement["agreement"] == 1.0
    with pytest.raises(ValueError, match=r"labels by several annotators \('ann', 'bob', no name\)"):
        calibrate.self_agreement(read_labels(path))  # the file's records as a whole are no one annotator's
    with pytest.raises(ValueError, match="has none by 'cy'"):
        Labeller(CASES, path, labeller="cy", relabel=2)


# ------------------------------------------------------------------ ignore, find, pacing, readable levels
def test_ignore_is_an_answer_never_a_label(tmp_path):
    path = tmp_path / "ann.jsonl"
    lab = Labeller(CASES, path, labeller="ann", watch="pass_rate", order="random")
    lab.label("PASS")  # c1
    lab.note.value = "the output is empty"
    lab.handle_key({"key": "i"})  # c2: ignored, with the note as its reason
    assert lab.status.value == ("ignored <code>c2</code>: recorded as your answer, not a label (with the note as its "
                                "reason); undo takes it back")
    last = lines(path)[-1]
    assert (last["case_id"], last["label"], last["ignored"], last["note"]) == ("c2", None, True, "the output is empty")
    assert lab.current_case == "c3" and lab.progress_text.value == "2 / 4" and "1 ignored" in lab.pacing.value
    assert lab.labels().to_dict() == {"c1": "PASS"}  # not a label: calibration and agreement leave it out
    assert "1 ignored case left out: it assumes ignoring has nothing to do with the label" in lab.watch_text
    lab.back()
    assert "back to <code>c2</code> · ignored by you (not a label)" in lab.status.value
    assert "you ignored it" in lab.case_view.value and lab.ignore_button.button_style == "warning"
    lab.label("FAIL")  # a label replaces the ignore
    assert lab.labels().to_dict() == {"c1": "PASS", "c2": "FAIL"} and "ignored" not in lab.pacing.value
    lab.ignore()  # c3
    lab.ignore()  # c4
    assert lab.done and "All 4 cases are done</b>: 1 PASS · 1 FAIL, 2 ignored" in lab.case_view.value
    lab.undo()  # c4 open again
    assert lab.status.value == "undid your ignore of <code>c4</code>: open again" and lab.current_case == "c4"
    lab.close()
    again = Labeller(CASES, path, labeller="ann")  # resumed: the ignored case is done, the undone one open
    assert again.current_case == "c4" and again.progress_text.value == "3 / 4"
    assert again.labels().to_dict() == {"c1": "PASS", "c2": "FAIL"}
    assert calibrate.calibrate(JUDGE, again.labels()).n == 2


def test_find_a_case_by_its_id_or_by_words_in_it(tmp_path):
    cases = pd.DataFrame({"case_id": [f"k{i}" for i in range(6)], "input": "q",
                          "output": ["refund policy", "shipping", "Refund later", "x", "no REFUND", "y"]})
    lab = Labeller(cases, tmp_path / "ann.jsonl", labeller="ann")
    lab.go_to("k3")
    assert lab.current_case == "k3" and "found <code>k3</code> by its id · not labelled yet" in lab.status.value
    lab.go_to("refund")  # the next match after k3, then on, wrapping round
    assert lab.current_case == "k4" and "(match 3 of 3; Enter again for the next)" in lab.status.value
    lab.go_to("refund")
    assert lab.current_case == "k0"
    lab.label("PASS")
    lab.go_to("  Refund ")
    assert lab.current_case == "k2"
    lab.go_to("k0")
    assert "current label: <b>PASS</b>" in lab.status.value
    lab.go_to("nowhere")
    assert "no case has the id &#x27;nowhere&#x27; or holds it in its text" in lab.status.value and lab.current_case == "k0"
    lab.go_to("")
    assert "type a case id, or words in one, in the find box" in lab.status.value
    sent = []
    lab.keys_line.send = sent.append  # what the page gets back
    lab.keys_line._handle_custom_msg({"find": "shipping", "seq": 4}, [])  # Enter in the find box
    assert lab.current_case == "k1" and sent == [{"ack": 4}]
    lab.find.value = "k5"
    lab.find_button.click()
    assert lab.current_case == "k5"
    with pytest.raises(TypeError, match="`query` must be a case id or words to find"):
        lab.go_to(5)


def test_every_key_is_acknowledged_and_the_page_knows_the_saved_note(tmp_path):
    lab = Labeller(CASES, tmp_path / "ann.jsonl", labeller="ann")
    sent = []
    lab.keys_line.send = sent.append
    assert lab.keys_line.autofocus and lab.keys_line.file == str(tmp_path / "ann.jsonl")
    lab.note.value = "typed, not saved"
    assert lab.keys_line.saved_note == ""  # the page compares the box with this: not saved yet
    lab.keys_line._handle_custom_msg({"key": "2", "seq": 1}, [])
    lab.keys_line._handle_custom_msg({"key": "x", "seq": 2}, [])  # a key that does nothing is answered too
    assert sent == [{"ack": 1}, {"ack": 2}] and lab.labels().to_dict() == {"c1": "FAIL"}
    lab.back()
    assert lab.keys_line.saved_note == "typed, not saved" and lab.note.value == "typed, not saved"  # saved with c1


def test_pacing_warning_when_labels_come_faster_than_the_case_can_be_read(tmp_path, monkeypatch):
    clock = [pd.Timestamp("2026-11-30T10:00:00", tz="UTC").to_pydatetime()]
    monkeypatch.setattr(widgets._common, "_now", lambda: clock[0])

    def labeller(name, output="a short answer"):
        cases = pd.DataFrame({"case_id": [f"k{i}" for i in range(20)], "input": "what is it?", "output": output})
        return Labeller(cases, tmp_path / f"{name}.jsonl", labeller=name)

    def pace(lab, seconds, n):
        for _ in range(n):
            clock[0] += pd.Timedelta(seconds=seconds)
            lab.label("PASS")

    steady = labeller("steady")
    pace(steady, 3, 6)  # 3 s on a six-word case: read
    assert steady.pace_warning.layout.display == "none" and steady.pace_warning.value == ""
    quick = labeller("quick")
    pace(quick, 0.6, 1)
    assert quick.pace_warning.value == ""  # one quick label is not a pattern
    pace(quick, 0.6, 1)
    assert quick.pace_warning.layout.display != "none"
    assert ("⚠ too fast to read: 2 of your last 2 labels came 0.6 s after their case appeared, sooner than the 1.0 s a "
            "skim of it takes (at 700 words a minute, 1 s at the least). Slow down, or go back (key b) and check them."
            ) in html.unescape(quick.pace_warning.value)
    pace(quick, 3, 2)  # slower again: two of the last three are read
    assert quick.pace_warning.value == ""
    burst = labeller("burst")
    pace(burst, 1 / 12, 12)  # twelve labels in one second
    assert "3 of your last 3 labels came 0.1 s after" in html.unescape(burst.pace_warning.value)
    long = labeller("long", output="word " * 400)  # 403 words: a skim takes 403 / (700 / 60) = 34.5 s
    pace(long, 10, 2)
    assert "came 10.0 s after their case appeared, sooner than the 34.5 s a skim" in html.unescape(long.pace_warning.value)


def test_graded_levels_read_as_levels_not_as_doubled_numbers(tmp_path):
    levels = ("1", "2", "3", "4", "5")
    lab = Labeller(cases_of(10), tmp_path / "ann.jsonl", labeller="ann", levels=levels)
    assert lab.keys_line.legend == "1–5 the level · s skip · b back · u undo · i ignore · ? unsure · / find"
    for level in "51555":
        lab.label(level)
    assert lab.pacing.value.startswith(" · 1: 1 label · 2: 0 labels · 3: 0 labels · 4: 0 labels · 5: 4 labels · ")
    described = Labeller(cases_of(10), tmp_path / "bo.jsonl", labeller="bo", levels={
        "1": "very poor", "2": "poor", "3": "fair", "4": "good", "5": "excellent"})
    assert described.keys_line.legend.startswith("1 (very poor) · 2 (poor) · 3 (fair) · 4 (good) · 5 (excellent) · s skip")
    assert [b.description for b in described.buttons.values()] == ["1 · very poor", "2 · poor", "3 · fair", "4 · good",
                                                                    "5 · excellent"]
    described.handle_key({"key": "4"})
    assert described.status.value == "labelled <code>k000</code> <b>4 (good)</b>" and lines(tmp_path / "bo.jsonl")[0]["label"] == "4"
    assert " · 4 (good): 1 label · " in described.pacing.value
    tcva_levels = Labeller(CASES, tmp_path / "cy.jsonl", labeller="cy", levels=("fully", "mostly", "partial", "minor", "none"))
    assert tcva_levels.keys_line.legend.startswith("1 fully · 2 mostly · 3 partial · 4 minor · 5 none · s skip")
    with pytest.raises(TypeError, match="`levels` as a mapping gives each level its description"):
        Labeller(CASES, tmp_path / "dee.jsonl", labeller="dee", levels={"PASS": 1, "FAIL": 0})


def test_the_current_label_is_marked_and_unsure_is_plain_to_see(tmp_path):
    lab = Labeller(CASES, tmp_path / "ann.jsonl", labeller="ann")
    lab.label("FAIL")
    assert not any("evalkit-current" in b._dom_classes for b in lab.buttons.values())  # c2: no label yet
    lab.back()
    assert "evalkit-current" in lab.buttons["FAIL"]._dom_classes and "evalkit-current" not in lab.buttons["PASS"]._dom_classes
    lab.label("PASS")  # replaced: the mark follows the label
    lab.back()
    assert "evalkit-current" in lab.buttons["PASS"]._dom_classes and "evalkit-current" not in lab.buttons["FAIL"]._dom_classes
    assert lab.unsure_button.button_style == "" and lab.unsure_button.description == "unsure"
    lab.handle_key({"key": "?"})
    assert lab.unsure_button.button_style == "warning" and lab.unsure_button.description == "unsure ✓"
    assert "evalkit-status" in lab.status._dom_classes  # the page gives it role=status and aria-live=polite


# ------------------------------------------------------------------ pairwise: both bad
def test_pairwise_both_bad_is_its_own_answer_and_a_tie_for_the_ratings(tmp_path):
    from evalkit import pairwise

    path = tmp_path / "ann.jsonl"
    lab = PairwiseLabeller(PAIRS, path, labeller="ann", seed=3)
    assert [b.description for b in lab.buttons.values()] == ["A (left) is better", "B (right) is better", "tie", "both bad"]
    lab.handle_key({"key": "4"})
    lab.handle_key({"key": "3"})
    lab.handle_key({"key": "1"})
    assert [r["label"] for r in lines(path)] == ["BOTH_BAD", "TIE", "A"]
    assert lab.status.value == "labelled <code>p2</code> <b>A (left)</b>" and "1 both bad" in lab.pacing.value
    table = pairwise.comparisons_from_labels(path)
    assert table["winner"].tolist() == ["tie", "tie", "a"] and table["comparison_id"].tolist() == ["p0", "p1", "p2"]
    assert pairwise.bradley_terry(table)["ties"].sum() == 4  # two ties, each counted for both systems


# ------------------------------------------------------------------ claims
CLAIMS = pd.DataFrame({"item_id": ["a1", "a1", "a1", "a2", "a2", "a3"], "claim_idx": [0, 1, 2, 0, 1, 0],
                       "claim": ["The drug cut deaths by 20%.", "It was tested on <b>4,000</b> people.", "It is cheap.",
                                 "Rain fell on Monday.", "It was 30 degrees.", "The bridge opened in 1932."],
                       "verdict": ["fully", "mostly", "none", "partial", "minor", "fully"]})
ANSWERS = pd.DataFrame({"item_id": ["a1", "a2", "a3"], "input": ["q1", "q2", "q3"],
                        "output": ["A trial of 4,000 people found 20% fewer deaths.", "It rained.", "It opened in 1932."]})


def test_claim_labeller_records_round_trip_into_calibrate_agreement_and_the_sweep(tmp_path):
    from evalkit import agreement

    human = {"ann": ["fully", "partial", "none", "minor", "minor", "fully"],
             "bob": ["mostly", "mostly", "minor", "minor", "none", "fully"]}
    files = {}
    for who, verdicts in human.items():
        files[who] = tmp_path / f"{who}-claims.jsonl"
        lab = ClaimLabeller(CLAIMS, files[who], answers=ANSWERS, question="input", labeller=who)
        assert lab.current_case == "a1#0" and "judge's verdict hidden until you label this claim" in lab.judge_view.value
        for i, level in enumerate(verdicts):
            lab.handle_key({"key": str(lab.levels.index(level) + 1)})
            if i == 0:
                lab.back()
                assert f"your verdict: {level}" in lab.case_view.value.split("▶")[1].split("</li>")[0]  # the marked one
                assert "judge: " not in lab.judge_view.value  # blind: still hidden going back
                lab.skip()
        assert lab.done and lab.current_case is None and "All 6 claims are labelled" in lab.case_view.value
        lab.close()
    records = read_labels(files["ann"])
    assert set(labels.CLAIM_FIELDS) <= set(records.columns)
    assert records[["case_id", "item_id", "claim_idx", "label"]].values.tolist() == [
        [f"{i}#{c}", i, c, v] for i, c, v in zip(CLAIMS["item_id"], CLAIMS["claim_idx"], human["ann"], strict=True)]
    lab = ClaimLabeller(CLAIMS, files["ann"], labeller="ann")  # resumed: all done
    assert lab.done and lab.labels().tolist() == human["ann"]
    # calibrate: the labeller's two Series against the same computed from the tables directly
    report = calibrate.calibrate(lab.judge_verdicts(), lab.labels(), pass_levels=["fully", "mostly"])
    judge_pass = CLAIMS["verdict"].isin(["fully", "mostly"]).to_numpy()
    human_pass = np.isin(human["ann"], ["fully", "mostly"])
    assert report.n == 6 and report.agreement == np.mean(judge_pass == human_pass)
    assert report.caught == int((~judge_pass & ~human_pass).sum()) and report.human_fails == int((~human_pass).sum())
    from_file = labels.latest_labels(read_labels(files["ann"]), labeller="ann")["label"]  # the labels reader alone
    pd.testing.assert_series_equal(from_file.rename("label"), lab.labels(), check_names=False)
    # agreement: the two files as they are, each claim an item, against the long table built by hand
    long = pd.DataFrame([{"item_id": f"{i}#{c}", "annotator": who, "rating": v} for who, vs in human.items()
                         for i, c, v in zip(CLAIMS["item_id"], CLAIMS["claim_idx"], vs, strict=True)])
    pd.testing.assert_frame_equal(agreement.krippendorff_alpha([files["ann"], files["bob"]], n_resamples=0),
                                  agreement.krippendorff_alpha(long, n_resamples=0))
    # the human verdict table: what the sweep takes, equal to the table built by hand
    mine = lab.verdicts()
    assert mine["verdict"].dtype == CLAIMS.pipe(lambda t: __import__("evalkit").verdicts.validate(t))["verdict"].dtype
    by_hand = CLAIMS.assign(verdict=human["ann"])
    pd.testing.assert_frame_equal(tcva.sweep(mine, [0.3, 0.7]), tcva.sweep(by_hand, [0.3, 0.7]))


def test_claim_labeller_shows_the_answer_once_per_item_and_escapes_it(tmp_path):
    lab = ClaimLabeller(CLAIMS, tmp_path / "ann.jsonl", answers=ANSWERS, labeller="ann", blind=False)
    view = lab.case_view.value
    assert "A trial of 4,000 people found 20% fewer deaths." in view and "&lt;b&gt;4,000&lt;/b&gt;" in view
    assert "<b>4,000</b>" not in view and view.count("<li") == 3 and "▶ The drug cut deaths by 20%." in view
    assert "judge: <b>fully</b>" in lab.judge_view.value  # not blind
    assert lab._reading_words(0) == 6 + 9 and lab._reading_words(1) == 6  # the answer is read with an item's first claim
    lab.label("mostly")
    assert "claims of a1" in lab.case_view.value and "your verdict: mostly" in lab.case_view.value
    lab.go_to("bridge")
    assert lab.current_case == "a3#0"
    assert "<ol class='evalkit-claims' start='1'" in view  # numbered from 1, as people count
    assert "The source is not shown here" in view
    sourced = ClaimLabeller(CLAIMS, tmp_path / "cy.jsonl", answers=ANSWERS.assign(context=["Trial: <i>n</i> = 4,000.",
                            "Rain on Monday.", "Opened 1932."]), source="context", labeller="cy")
    view = sourced.case_view.value
    assert "context (the source)" in view and "Trial: &lt;i&gt;n&lt;/i&gt; = 4,000." in view
    assert "how well does the source above support it?" in view and "not shown" not in view
    assert sourced._reading_words(0) == 6 + 9 + 4  # the claim, the answer and the source, with an item's first claim
    sourced.go_to("Opened 1932")
    assert sourced.current_case == "a3#0"
    sourced.close()
    with pytest.raises(ValueError, match="pass answers= too"):
        ClaimLabeller(CLAIMS, tmp_path / "dy.jsonl", source="context", labeller="dy")
    with pytest.raises(KeyError, match="context"):
        ClaimLabeller(CLAIMS, tmp_path / "dy.jsonl", answers=ANSWERS, source="context", labeller="dy")
    bare = ClaimLabeller(CLAIMS.drop(columns="verdict"), tmp_path / "bo.jsonl", labeller="bo")
    assert bare.judge_view.value == "" and "output" not in bare.case_view.value
    with pytest.raises(ValueError, match="no 'verdict' column"):
        bare.judge_verdicts()


def test_claim_labeller_bad_input(tmp_path):
    with pytest.raises(KeyError, match="claim"):
        ClaimLabeller(CLAIMS.drop(columns="claim"), tmp_path / "l.jsonl", labeller="ann")
    with pytest.raises(ValueError, match="verdict 'maybe' is not one of"):
        ClaimLabeller(CLAIMS.replace({"verdict": {"none": "maybe"}}), tmp_path / "l.jsonl", labeller="ann")
    with pytest.raises(ValueError, match="repeated \\(item_id, claim_idx\\)"):
        ClaimLabeller(CLAIMS.assign(claim_idx=0), tmp_path / "l.jsonl", labeller="ann")
    with pytest.raises(ValueError, match="has the claim \\('a1', 0\\) twice"):
        ClaimLabeller(CLAIMS.drop(columns="verdict").assign(claim_idx=0), tmp_path / "l.jsonl", labeller="ann")
    alike = pd.DataFrame({"item_id": [1, "1"], "claim_idx": [0, 0], "claim": ["x", "y"]})
    with pytest.raises(ValueError, match="share the id '1#0'"):
        ClaimLabeller(alike, tmp_path / "l.jsonl", labeller="ann")
    with pytest.raises(KeyError, match="summary"):
        ClaimLabeller(CLAIMS, tmp_path / "l.jsonl", answers=ANSWERS, answer="summary", labeller="ann")
    with pytest.raises(ValueError, match="twice"):
        ClaimLabeller(CLAIMS, tmp_path / "l.jsonl", answers=pd.concat([ANSWERS, ANSWERS]), labeller="ann")
    with pytest.raises(TypeError, match="`verdicts` must be a pandas DataFrame"):
        ClaimLabeller("claims.csv", tmp_path / "l.jsonl", labeller="ann")
    numbered = ClaimLabeller(pd.DataFrame({"item_id": [7, 7], "claim": ["x", "y"], "claim_id": ["own", "column"]}),
                             tmp_path / "n.jsonl", labeller="ann")  # a column of the table's own is left as it is
    assert numbered.claims["claim_id"].tolist() == ["own", "column"] and numbered.claim_ids.tolist() == ["7#0", "7#1"]
    numbered.label("fully")
    assert lines(tmp_path / "n.jsonl")[0]["item_id"] == 7 and numbered.current_case == "7#1"  # numbered in row order


def test_every_labeller_works_on_the_bundled_demo_data(tmp_path):
    tcva_demo = datasets.load_demo("tcva")
    claims, answers = tcva_demo["claims"], tcva_demo["answers"]
    pd.testing.assert_frame_equal(claims.drop(columns="claim"), tcva_demo["verdicts"])  # the verdicts, with their text
    assert claims["claim"].notna().all() and set(answers["item_id"]) == set(tcva_demo["items"].index)
    lab = ClaimLabeller(claims, tmp_path / "c.jsonl", answers=answers, question="input", source="source", labeller="ann")
    first = claims.iloc[0]
    view = lab.case_view.value
    assert html.escape(first["claim"]) in view and "source (the source)" in view
    assert html.escape(answers.set_index("item_id").loc[first["item_id"], "source"]) in view
    lab.label("fully")
    assert lab.labels().to_dict() == {f"{first['item_id']}#{first['claim_idx']}": "fully"}
    lab.close()
    pair_demo = datasets.load_demo("pairwise")
    comparisons = pair_demo["comparisons"].join(pair_demo["texts"]).reset_index()
    words = comparisons[["output_a", "output_b"]].map(lambda text: len(text.split()))
    assert (words["output_a"] == comparisons["length_a"]).all() and (words["output_b"] == comparisons["length_b"]).all()
    pair = PairwiseLabeller(comparisons.head(20), tmp_path / "p.jsonl", labeller="ann", seed=0)
    assert html.escape(comparisons["input"].iloc[0]) in pair.case_view.value
    pair.label("A")
    assert pair.labels().index.tolist() == ["c0000"]
    pair.close()


def test_an_estimate_outside_its_range_is_said_with_why(tmp_path):
    lab = Labeller(cases_of(80), tmp_path / "l.jsonl", labeller="ann", watch="pass_rate", order="random", blind=False)
    for level in ["PASS"] * 30 + ["FAIL"] * 30:  # an unusual start: the range never widens, the mean moves on
        lab.label(level)
    row = lab.sequence().iloc[-1]
    outside = not row["cs_low"] <= row["estimate"] <= row["cs_high"]
    assert outside and "lies outside the range: the range never widens" in lab.watch_text
    assert "(estimate 50%;" in lab.watch_text
