"""`evalkit gate` from the command line on saved runs, and the statistics behind it (evalkit.gate)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, cli, gate, judge
from evalkit._stats import mcnemar_exact_p, newcombe_paired_interval
from tests.conftest import ROOT

RUBRIC = judge.Rubric("correct", "The answer is correct.", "{criterion}\n{output}\nAnswer {levels}.")


def _table_judge(verdicts: dict, *, model_id="judge-1"):
    """A judge that answers from a table of verdicts by output text (the prompt ends with the output)."""

    def model(prompt: str) -> str:
        output = prompt.split("\n")[1]
        return verdicts[output]

    model.model_id = model_id
    return model


def _run(tmp_path, name, passes, *, model_id="judge-1", repeats=1):
    """A saved results file: case i passes when passes[i] is true."""
    cases = pd.DataFrame({"case_id": [f"c{i:03d}" for i in range(len(passes))],
                          "output": [f"{name} output {i}" for i in range(len(passes))]})
    verdicts = {out: ("PASS" if ok else "FAIL") for out, ok in zip(cases["output"], passes, strict=True)}
    results = judge.run_judge(cases, RUBRIC, _table_judge(verdicts, model_id=model_id), progress=False,
                              **({"repeats": repeats} if repeats > 1 else {}))
    return judge.save_results(results, tmp_path / f"{name}.jsonl")


def _passes(n, rate, rng):
    return rng.random(n) < rate


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(20261205)
    tmp_path = tmp_path_factory.mktemp("runs")
    base = _passes(400, 0.85, rng)
    same = base.copy()
    same[rng.choice(np.flatnonzero(base), 10, replace=False)] = False  # ten flips each way: no change in pass rate
    same[rng.choice(np.flatnonzero(~base), 10, replace=False)] = True
    worse = base & (rng.random(400) > 0.25)  # a quarter of the passes now fail: -0.2 or so
    small = base[:20]
    return {"baseline": _run(tmp_path, "baseline", base), "same": _run(tmp_path, "same", same),
            "worse": _run(tmp_path, "worse", worse), "small_a": _run(tmp_path, "small_a", small),
            "small_b": _run(tmp_path, "small_b", small[::-1]),
            "other_judge": _run(tmp_path, "other", base, model_id="judge-2")}


def _subprocess(*args):
    return subprocess.run([sys.executable, "-m", "evalkit.cli", "gate", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})


@dataclasses.dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


@pytest.fixture
def _cli(capsys):
    """``evalkit gate ARGS`` in this process (cli.main): its exit status and what it printed."""

    def run(*args):
        capsys.readouterr()
        status = cli.main(["gate", *map(str, args)])
        out = capsys.readouterr()
        return Done(status, out.out, out.err)

    return run


def test_no_change_exits_0_with_the_figures(saved, tmp_path):
    done = _subprocess(saved["baseline"], saved["same"], "--margin", "0.05", "--junit", tmp_path / "g.xml",
                "--summary", tmp_path / "g.md")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("no regression: the candidate is within the margin: change in judge pass rate")
    assert "400 cases" in done.stdout and "newcombe" in done.stdout
    suite = ET.parse(tmp_path / "g.xml").getroot()
    assert suite.get("failures") == "0" and suite.get("skipped") == "0" and suite.find("testcase/failure") is None
    assert "## evalkit gate: no regression" in (tmp_path / "g.md").read_text()


def test_a_regression_exits_1_and_writes_a_failure(saved, tmp_path, _cli):
    done = _cli(saved["baseline"], saved["worse"], "--junit", tmp_path / "g.xml", "--summary", tmp_path / "g.md")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stdout.startswith("regression: the candidate is worse than the margin")
    failure = ET.parse(tmp_path / "g.xml").getroot().find("testcase/failure")
    assert failure is not None and failure.get("message").startswith("regression")
    assert "| baseline | 400 | 400 |" in (tmp_path / "g.md").read_text()


def test_too_few_cases_exits_2_and_says_how_many_are_needed(saved, tmp_path, _cli):
    done = _cli(saved["small_a"], saved["small_b"], "--margin", "0.05", "--junit", tmp_path / "g.xml")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout.startswith("inconclusive: too few cases to tell")
    result = gate.check(saved["small_a"], saved["small_b"], margin=0.05, allow_inconclusive=True)
    assert f"about {result.cases_needed} cases would tell a change of {result.estimate:+.3f} from the margin" in done.stdout
    # the interval's half-width on the margin's side, scaled as 1 / sqrt(n) to (1.96 + 0.84) / 1.96 of the gap (the
    # distance from the margin, at most the margin itself)
    half = (result.estimate - result.ci_low) if result.estimate > -0.05 else (result.ci_high - result.estimate)
    z_a, z_b = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    gap = min(result.estimate + 0.05, 0.05) if result.estimate > -0.05 else -(result.estimate + 0.05)
    plan = int(np.ceil(20 * ((z_a + z_b) / z_a * half / gap) ** 2))
    assert result.cases_needed == max(plan, 21) > 20
    assert ET.parse(tmp_path / "g.xml").getroot().get("skipped") == "1"


def test_a_missing_file_exits_3_naming_it(saved, tmp_path, _cli):
    missing = tmp_path / "nope.jsonl"
    done = _cli(saved["baseline"], missing, "--junit", tmp_path / "g.xml", "--summary", tmp_path / "g.md")
    assert done.returncode == 3
    assert f"{missing}: no such file" in done.stderr and done.stdout == ""
    error = ET.parse(tmp_path / "g.xml").getroot().find("testcase/error")
    assert error is not None and str(missing) in error.get("message")
    assert "bad input" in (tmp_path / "g.md").read_text()


def test_another_judge_exits_3_with_the_reason(saved, _cli):
    done = _cli(saved["baseline"], saved["other_judge"])
    assert done.returncode == 3
    assert "different judges (judge model 'judge-1' in a, 'judge-2' in b)" in done.stderr


def test_usage_errors_exit_3_and_help_names_every_exit_code(_cli):
    assert _cli("only-one").returncode == 3
    assert cli.main(["gate", "a.jsonl", "b.jsonl", "--margin", "x"]) == 3
    done = _subprocess("--help")
    assert done.returncode == 0
    for line in ("0  no regression", "1  regression", "2  inconclusive", "3  bad input or usage"):
        assert line in done.stdout


def test_an_unreadable_file_is_named(tmp_path, saved, _cli):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    assert cli.main(["gate", str(bad), str(saved["baseline"])]) == 3
    text = tmp_path / "notes.txt"
    text.write_text("hello")
    done = _cli(text, saved["baseline"])
    assert done.returncode == 3 and f"{text}: not a results file evalkit reads" in done.stderr


def test_a_broken_run_is_refused_not_counted_as_fails(tmp_path):
    cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(50)], "output": [f"o{i}" for i in range(50)]})
    ok = judge.run_judge(cases, RUBRIC, _table_judge({f"o{i}": "PASS" for i in range(50)}), progress=False)
    garbled = judge.run_judge(cases, RUBRIC, _table_judge({f"o{i}": "PASS" if i % 5 else "**PASS**" for i in range(50)}),
                              progress=False)
    with pytest.raises(ValueError, match=r"the candidate run broke: 0 error\(s\) and 10 unparseable"):
        gate.decide(ok, garbled)
    result = gate.decide(ok, garbled, max_broken=0.25, margin=0.3)
    counts = result.counts.set_index("run")
    assert counts.loc["candidate", ["n_pass", "n_fail", "n_unparseable", "n_error"]].tolist() == [40, 0, 10, 0]


def test_the_interval_is_newcombes_and_the_test_mcnemars(rng):
    ids = [f"c{i}" for i in range(120)]
    a, b = rng.random(120) < 0.8, rng.random(120) < 0.75
    verdict = lambda x: np.where(x, "PASS", "FAIL")  # noqa: E731
    res = gate.decide(pd.DataFrame({"case_id": ids, "verdict": verdict(a)}),
                      pd.DataFrame({"case_id": ids, "verdict": verdict(b)}), margin=0.1)
    n11, n10, n01 = int((a & b).sum()), int((a & ~b).sum()), int((~a & b).sum())
    low, high = newcombe_paired_interval(n11, n10, n01, 120 - n11 - n10 - n01, 0.95)
    assert (res.ci_low, res.ci_high) == (low, high) and res.p_val == mcnemar_exact_p(n10, n01)
    assert res.estimate == pytest.approx(b.mean() - a.mean())
    expected = "regression" if high < -0.1 else "no regression" if low > -0.1 else "inconclusive"
    assert res.status == expected


def test_repeats_are_clustered_by_case_and_row_order_does_not_matter(tmp_path, rng):
    base = _passes(150, 0.8, rng)
    a = judge.load_results(_run(tmp_path, "ra", base, repeats=3))
    b = judge.load_results(_run(tmp_path, "rb", base, repeats=3))
    assert len(a) == 450 and a["sample_id"].nunique() == 150
    res = gate.decide(a, b)
    assert res.n_cases == 150 and res.repeats == 3 and res.interval == "cluster-betting"
    shuffled = gate.decide(a.sample(frac=1, random_state=1), b.sample(frac=1, random_state=2))
    assert (shuffled.ci_low, shuffled.ci_high, shuffled.status) == (res.ci_low, res.ci_high, res.status)


def test_unmatched_cases_are_counted(saved):
    a, b = judge.load_results(saved["baseline"]), judge.load_results(saved["same"])
    with pytest.warns(EvalkitWarning, match="385 cases judged in both runs are compared; left out: 5 case"):
        res = gate.decide(a.iloc[:390], b.iloc[5:])
    assert (res.n_cases, res.n_only_baseline, res.n_only_candidate) == (385, 5, 10)
    assert res.message.endswith("Left out: 5 case(s) in the baseline only, 10 in the candidate only.")


def test_labels_give_the_humans_change(saved, tmp_path, rng, _cli):
    a, b = judge.load_results(saved["baseline"]), judge.load_results(saved["worse"])
    labelled = rng.choice(400, 80, replace=False)
    ids = a["case_id"].to_numpy()[labelled]
    pa = (a.set_index("case_id").loc[ids, "verdict"] == "PASS").to_numpy()
    pb = (b.set_index("case_id").loc[ids, "verdict"] == "PASS").to_numpy()
    labels = pd.DataFrame({"case_id": ids, "baseline": pa.astype(int), "candidate": pb.astype(int)})
    labels.to_csv(tmp_path / "labels.csv", index=False)
    res = gate.decide(a, b, labels=labels)
    assert res.estimand == "human pass rate" and res.n_labelled == 80 and res.interval.startswith("calibrated")
    done = _cli(saved["baseline"], saved["worse"], "--labels", tmp_path / "labels.csv")
    assert done.returncode == res.exit_code and "change in human pass rate" in done.stdout
    assert _cli(saved["baseline"], saved["worse"], "--labels", tmp_path / "none.csv").returncode == 3


def test_the_pytest_helper_raises_with_the_figures(saved):
    assert gate.check(saved["baseline"], saved["same"]).status == "no regression"
    with pytest.raises(AssertionError, match=r"regression: .*change in judge pass rate -0\.\d+"):
        gate.check(saved["baseline"], saved["worse"])
    with pytest.raises(AssertionError, match="inconclusive"):
        gate.check(saved["small_a"], saved["small_b"])


def test_untrusted_text_is_escaped_in_the_reports(tmp_path):
    name = tmp_path / "x<y>&]]>.jsonl"
    assert cli.main(["gate", str(name), str(name), "--junit", str(tmp_path / "g.xml"),
                     "--summary", str(tmp_path / "g.md")]) == 3
    error = ET.parse(tmp_path / "g.xml").getroot().find("testcase/error")
    assert str(name) in error.get("message")
    assert "x\\<y\\>&\\]\\]\\>" in (tmp_path / "g.md").read_text()


def test_the_gate_runs_without_the_report_extra(saved):
    """`evalkit gate` is in the base install: the notebook runner and the widgets are never imported."""
    blocked = "".join(f"sys.modules[{m!r}] = None; " for m in ("nbformat", "nbclient", "nbconvert", "ipykernel",
                                                               "ipywidgets", "statsmodels"))
    code = (f"import sys; {blocked}\nfrom evalkit.cli import main\n"
            f"sys.exit(main(['gate', {str(saved['baseline'])!r}, {str(saved['worse'])!r}]))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 1, done.stderr
    assert done.stdout.startswith("regression:")


def test_a_candidate_that_looks_better_plans_as_if_unchanged(rng):
    """An inconclusive gate whose candidate looks better names the cases a candidate that did not change would need:
    a lead seen in a few cases is not counted on."""
    ids = [f"c{i}" for i in range(30)]
    a = pd.DataFrame({"case_id": ids, "verdict": ["PASS"] * 24 + ["FAIL"] * 6})
    b = pd.DataFrame({"case_id": ids, "verdict": ["PASS"] * 25 + ["FAIL"] * 5})
    better = gate.decide(a, b, margin=0.05)
    assert better.status == "inconclusive" and better.estimate == pytest.approx(1 / 30)
    half = better.estimate - better.ci_low
    z_a, z_b = stats.norm.ppf(0.975), stats.norm.ppf(0.8)
    assert better.cases_needed == int(np.ceil(30 * ((z_a + z_b) / z_a * half / 0.05) ** 2))
