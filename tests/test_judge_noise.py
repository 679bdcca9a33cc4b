"""The judge as a noisy instrument: repeats, the consistency table, the judge's identity, re-judging a baseline and the
score from token log-probabilities."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pandas as pd
import pytest

from evalkit import datasets, judge, logs, models
from evalkit._tables import RESULT_COLUMNS

RUBRIC = judge.Rubric("correct", "The answer is correct.", "{criterion}\n{output}\nAnswer {levels}.")


def _cases(n):
    return pd.DataFrame({"case_id": [f"c{i:03d}" for i in range(n)], "output": [f"output {i}" for i in range(n)]})


class SeededJudge:
    """A judge shaped like models.OpenAIChat: ``params`` key its cache, ``replace`` gives a copy with other options.
    Its answer is a deterministic function of (seed, prompt): a case whose number is below ``noisy`` flips with the
    seed."""

    def __init__(self, *, seed=None, temperature=1.0, noisy=10, model_id="seeded"):
        self.model_id, self.seed, self.temperature, self.noisy = model_id, seed, temperature, noisy
        self.calls = []

    @property
    def params(self):
        return {"temperature": self.temperature, "seed": self.seed}

    def replace(self, **changes):
        new = SeededJudge(**{"seed": self.seed, "temperature": self.temperature, "noisy": self.noisy,
                             "model_id": self.model_id, **changes})
        new.calls = self.calls
        return new

    def __call__(self, prompt):
        self.calls.append((self.seed, prompt))
        number = int(prompt.split("\n")[1].split()[-1])
        if number < self.noisy:
            return "PASS" if ((self.seed or 0) + number) % 2 else "FAIL"
        return "PASS"


# ------------------------------------------------------------------------------------------------- repeats
def test_one_repeat_is_the_run_without_repeats():
    cases = _cases(5)
    plain = judge.run_judge(cases, RUBRIC, lambda p: "PASS\nfine", model_id="m", progress=False)
    once = judge.run_judge(cases, RUBRIC, lambda p: "PASS\nfine", model_id="m", progress=False, repeats=1)
    assert list(plain.columns) == RESULT_COLUMNS and "repeats" not in plain.attrs
    pd.testing.assert_frame_equal(plain.drop(columns=["latency_s", "created_at"]),
                                  once.drop(columns=["latency_s", "created_at"]))


def test_repeats_with_replace_draw_seeds_and_each_is_its_own_cached_call(tmp_path):
    cases = _cases(12)
    cache = models.CallCache(tmp_path / "cache.sqlite")
    model = SeededJudge(seed=7, temperature=0.7)
    res = judge.run_judge(cases, RUBRIC, model, cache=cache, repeats=3, progress=False)
    assert len(res) == 36 and res["case_id"].is_unique
    assert res["case_id"].iloc[:3].tolist() == ["c000_repeat_1", "c000_repeat_2", "c000_repeat_3"]
    assert res["sample_id"].iloc[:3].tolist() == ["c000"] * 3 and res["repeat"].iloc[:3].tolist() == [1, 2, 3]
    assert sorted({seed for seed, _ in model.calls}) == [7, 8, 9] and len(model.calls) == 36
    assert [(d["repeat"], d["seed"], d["temperature"]) for d in res.attrs["repeats"]] == [(1, 7, 0.7), (2, 8, 0.7),
                                                                                         (3, 9, 0.7)]
    assert res.attrs["clusters"] == {"column": "sample_id", "within": "repeat"}
    again = judge.run_judge(cases, RUBRIC, model, cache=cache, repeats=3, progress=False)
    assert len(model.calls) == 36 and again["cached"].all()  # every repeat came from the cache
    pd.testing.assert_series_equal(res["verdict"], again["verdict"])
    # repeat 1 is the model as given: a run without repeats finds its answers in the cache
    single = judge.run_judge(cases, RUBRIC, model, cache=cache, progress=False)
    assert single["cached"].all() and single["verdict"].tolist() == res.loc[res["repeat"] == 1, "verdict"].tolist()
    cache.close()


def test_a_plain_callable_gets_the_repeat_in_its_cache_key(tmp_path):
    cache = models.CallCache(tmp_path / "cache.sqlite")
    seen = []

    def model(prompt):
        seen.append(prompt)
        return "PASS"

    res = judge.run_judge(_cases(4), RUBRIC, model, model_id="plain", cache=cache, repeats=2, progress=False)
    assert len(seen) == 8 and not res["cached"].any()  # the same prompt twice: two calls, not one from the cache
    assert [d["extra"] for d in res.attrs["repeats"]] == [{}, {"repeat": 2}]
    judge.run_judge(_cases(4), RUBRIC, model, model_id="plain", cache=cache, repeats=2, progress=False)
    assert len(seen) == 8
    cache.close()


def test_repeats_are_clusters_in_pass_rate_as_a_logs_epochs_are():
    res = judge.run_judge(_cases(30), RUBRIC, SeededJudge(noisy=10), repeats=4, progress=False)
    table = judge.pass_rate(res)
    assert table["n_clusters"].iloc[0] == 30 and table["interval"].iloc[0] == "cluster-means-betting"
    assert table["n"].iloc[0] == 120


def test_run_judge_refuses_a_bad_repeats():
    for bad in (0, 1.5, "2"):
        with pytest.raises((ValueError, TypeError), match="repeats"):
            judge.run_judge(_cases(2), RUBRIC, lambda p: "PASS", model_id="m", repeats=bad, progress=False)


# --------------------------------------------------------------------------------------------- consistency
def _repeat_table(passes: np.ndarray, *, unparseable=None) -> pd.DataFrame:
    """A results table from a (cases x repeats) array of pass/fail."""
    n, k = passes.shape
    rows = []
    for i in range(n):
        for r in range(k):
            bad = unparseable is not None and unparseable[i, r]
            rows.append({"case_id": f"c{i}_repeat_{r + 1}", "sample_id": f"c{i}", "repeat": r + 1,
                         "rubric": "x", "rubric_version": "v", "model": "m",
                         "verdict": "PASS" if passes[i, r] and not bad else "FAIL", "parsed": not bad, "error": None})
    table = pd.DataFrame(rows)
    table.attrs["clusters"] = {"column": "sample_id", "within": "repeat"}
    return table


def test_consistency_by_hand():
    passes = np.array([[1, 1, 1], [1, 0, 1], [0, 0, 0], [0, 1, 0]], dtype=bool)
    noise = judge.consistency(_repeat_table(passes))
    summary = noise.summary.set_index("quantity")
    # cases 2 and 4 disagree in 2 of their 3 pairs of repeats: (0 + 2/3 + 0 + 2/3) / 4
    assert summary.loc["flip rate", "estimate"] == pytest.approx(1 / 3)
    assert summary.loc["unstable cases", "estimate"] == 0.5
    assert noise.cases["flip_rate"].tolist() == pytest.approx([0, 2 / 3, 0, 2 / 3])
    # within-case variance m (k - m) / (k (k - 1)) = 1/3 for the two unstable cases, over k = 3, averaged over cases;
    # the per-case rates (1, 2/3, 0, 1/3) have variance 5/27 (ddof 1)
    assert summary.loc["judge share of variance", "estimate"] == pytest.approx((2 * (1 / 3) / 3 / 4) / (5 / 27))
    lo, hi = summary.loc["flip rate", ["ci_low", "ci_high"]]
    assert 0 <= lo <= 1 / 3 <= hi <= 1
    assert dataclasses.is_dataclass(noise) and type(noise).__dataclass_params__.frozen


def test_test_retest_kappa_equals_sklearn(rng):
    sklearn = pytest.importorskip("sklearn.metrics", reason="the reference kappa: the 'test' extra")
    passes = rng.random((80, 2)) < np.where(rng.random(80) < 0.6, 0.9, 0.2)[:, None]
    noise = judge.consistency(_repeat_table(passes))
    kappa = noise.summary.set_index("quantity").loc["test-retest kappa"]
    assert kappa["estimate"] == pytest.approx(sklearn.cohen_kappa_score(passes[:, 0], passes[:, 1]), abs=1e-12)
    assert kappa["ci_low"] < kappa["estimate"] < kappa["ci_high"]


def test_the_variance_split_recovers_a_known_judge_noise():
    """True per-case rates Beta(2, 2): between-case variance 0.05, mean within-case variance E[mu (1 - mu)] = 0.2;
    with k = 4 repeats the judge's share of the variance of a case's mean is 0.05 / (0.05 + 0.05) = 0.5."""
    rng = np.random.default_rng(5)
    mu = rng.beta(2, 2, 4000)
    passes = rng.random((4000, 4)) < mu[:, None]
    share = judge.consistency(_repeat_table(passes)).summary.set_index("quantity").loc["judge share of variance",
                                                                                       "estimate"]
    assert share == pytest.approx(0.5, abs=0.03)


def test_unparseable_rate_per_repeat_and_rows_order_free(rng):
    passes = rng.random((50, 3)) < 0.7
    bad = np.zeros((50, 3), dtype=bool)
    bad[:5, 1] = True
    table = _repeat_table(passes, unparseable=bad)
    noise = judge.consistency(table)
    assert noise.repeats["n_unparseable"].tolist() == [0, 5, 0]
    assert noise.repeats["unparseable_rate"].tolist() == [0, 0.1, 0]
    shuffled = judge.consistency(table.sample(frac=1, random_state=3))
    pd.testing.assert_frame_equal(noise.summary, shuffled.summary)


def test_consistency_reads_a_logs_repeats():
    table = logs.read_promptfoo(datasets.demo_path() / "logs" / "promptfoo_v2.json")
    noise = judge.consistency(table[table["rubric"] == "llm-rubric"])
    assert noise.repeats["n_error"].sum() == 1  # one grading failed: its case has one judged repeat, and is left out
    assert noise.summary["n"].iloc[0] == 9 and noise.summary["note"].iloc[0].startswith("1 case(s) with fewer than two")


def test_consistency_bad_input():
    with pytest.raises(KeyError, match="no repeat column"):
        judge.consistency(pd.DataFrame({"case_id": ["a"], "verdict": ["PASS"]}))
    with pytest.raises(ValueError, match="no case has two judged repeats"):
        judge.consistency(_repeat_table(np.ones((3, 1), dtype=bool)))
    with pytest.raises(TypeError):
        judge.consistency("results.jsonl")
    two = pd.concat([_repeat_table(np.ones((3, 2), dtype=bool)),
                     _repeat_table(np.ones((3, 2), dtype=bool)).assign(rubric_version="w")])
    with pytest.raises(ValueError, match="several rubrics"):
        judge.consistency(two)


# ---------------------------------------------------------------------------------------------- identity
def test_identity_rides_in_the_saved_file_and_a_judge_change_is_named(tmp_path):
    a = judge.run_judge(_cases(3), RUBRIC, SeededJudge(seed=1, temperature=0.0), progress=False)
    back = judge.load_results(judge.save_results(a, tmp_path / "a.parquet"))
    assert judge.identity(back) == judge.identity(a) == {"model": "seeded", "params": {"temperature": 0.0},
                                                         "rubric": "correct", "rubric_version": RUBRIC.version}
    b = judge.run_judge(_cases(3), RUBRIC, SeededJudge(seed=2, temperature=1.0), progress=False)
    assert judge.identity_changes(a, b) == ["judge parameter 'temperature' 0.0 in a, 1.0 in b"]
    other = judge.Rubric("correct", "The answer is right.", RUBRIC.template)
    c = judge.run_judge(_cases(3), other, SeededJudge(seed=1, temperature=0.0, model_id="judge-2"), progress=False)
    assert judge.identity_changes(a, c) == ["judge model 'seeded' in a, 'judge-2' in b",
                                            f"rubric version {RUBRIC.version!r} in a, {other.version!r} in b"]
    assert judge.identity_changes(a, a.copy()) == []


def test_a_logs_judge_is_its_grader():
    table = logs.read_promptfoo(datasets.demo_path() / "logs" / "promptfoo_v2.json")
    rubric = table[table["rubric"] == "llm-rubric"]
    assert judge.identity(rubric)["model"] == judge._values(rubric, "grader")
    with pytest.raises(TypeError):
        judge.identity(["not", "a", "table"])


# ----------------------------------------------------------------------------------------------- rejudge
def test_rejudge_a_saved_baseline_with_the_current_judge(tmp_path):
    cases = _cases(6)
    old = judge.run_judge(cases, RUBRIC, SeededJudge(noisy=0, model_id="old"), repeats=2, progress=False)
    path = judge.save_results(old, tmp_path / "baseline.jsonl", cases=cases)
    assert judge.load_results(path)["output"].tolist()[:2] == ["output 0", "output 0"]
    new = judge.rejudge(path, RUBRIC, SeededJudge(noisy=3, model_id="new"), progress=False)
    assert len(new) == 12 and new["sample_id"].nunique() == 6 and judge.identity(new)["model"] == "new"
    assert new.attrs["rejudged"]["judge"]["model"] == "old" and new.attrs["rejudged"]["path"] == str(path)
    assert judge.identity_changes(judge.load_results(path), new)  # the saved baseline's judge differs
    plain = judge.save_results(old, tmp_path / "plain.jsonl")
    with pytest.raises(KeyError, match=r"the baseline has no \['output'\].*save_results\(results, path, cases=cases\)"):
        judge.rejudge(plain, RUBRIC, SeededJudge())
    again = judge.rejudge(plain, RUBRIC, SeededJudge(model_id="new"), cases=cases, progress=False)
    assert len(again) == 12
    with pytest.raises(KeyError, match="rubric renders"):
        judge.save_results(old, tmp_path / "x.jsonl", cases=cases[["case_id"]])


def test_rejudge_a_log_whose_epochs_graded_different_outputs():
    table = logs.read_promptfoo(datasets.demo_path() / "logs" / "promptfoo_v2.json")
    run = table[(table["rubric"] == "llm-rubric") & table["output"].notna()].reset_index(drop=True)
    run.attrs = dict(table.attrs)
    rubric = judge.Rubric("ok", "Answers the question.", "{input}\n{output}\n{levels}")
    new = judge.rejudge(run, rubric, lambda p: "PASS", model_id="new", progress=False)
    assert len(new) == len(run) and new["repeat"].tolist() == run["repeat"].tolist()
    assert judge.pass_rate(new)["n_clusters"].iloc[0] == run["sample_id"].nunique()


# ---------------------------------------------------------------------------------------- log-probabilities
def test_verdict_score_from_logprobs():
    log = math.log
    assert judge.verdict_score([{"PASS": log(0.7), "FAIL": log(0.3)}], RUBRIC) == pytest.approx(0.7)
    # a leading newline is skipped; a token that begins one level counts for it; lower case is not a level
    assert judge.verdict_score([{"\n": 0.0}, {"P": log(0.5), "FA": log(0.25), "pass": log(0.25)}], RUBRIC) == \
        pytest.approx(2 / 3)
    assert math.isnan(judge.verdict_score([{"Sure": 0.0}], RUBRIC))
    assert math.isnan(judge.verdict_score(None, RUBRIC)) and math.isnan(judge.verdict_score([], RUBRIC))
    likert = judge.Rubric("q", "c", "{output}", levels=("1", "2", "3", "4", "5"), fail_level="1")
    assert judge.verdict_score([{"3": log(0.2), "4": log(0.6), "5": log(0.2)}], likert) == pytest.approx(4.0)
    words = judge.Rubric("t", "c", "{output}", levels=("GOOD", "OK", "BAD"), fail_level="BAD")
    assert judge.verdict_score([{"GOOD": log(0.5), "OK": log(0.3), "BAD": log(0.2)}], words) == pytest.approx(0.8)


# ------------------------------------------------------------------------------------ over the wire (loopback)
def test_repeats_over_the_wire_draw_seeds_and_are_cached_apart(tmp_path):
    """OpenAIChat's replace(seed=...) through a loopback server: each repeat its own request and cache entry; the server
    answers a prompt's successive requests PASS, FAIL, PASS, so the repeats flip and the consistency table sees it."""
    from evalkit._testing import ChatServer

    cache = models.CallCache(tmp_path / "cache.sqlite")
    with ChatServer(lambda prompt, attempt: "PASS\nok" if attempt % 2 else "FAIL\nno") as server:
        model = models.OpenAIChat("judge-m", base_url=server.url, api_key_env="EVALKIT_TEST_NO_KEY", temperature=0.7)
        res = judge.run_judge(_cases(5), RUBRIC, model, cache=cache, repeats=3, progress=False, concurrency=2)
        assert server.requests == 15
        assert [(d["seed"], d["temperature"]) for d in res.attrs["repeats"]] == [(None, 0.7), (1, 0.7), (2, 0.7)]
        assert res.groupby("repeat")["verdict"].agg(lambda v: set(v.astype(str))).tolist() == [{"PASS"}, {"FAIL"},
                                                                                             {"PASS"}]
        noise = judge.consistency(res).summary.set_index("quantity")
        assert noise.loc["flip rate", "estimate"] == pytest.approx(2 / 3)
        again = judge.run_judge(_cases(5), RUBRIC, model, cache=cache, repeats=3, progress=False)
        assert server.requests == 15 and again["cached"].all()
    cache.close()


def test_the_score_from_a_server_that_returns_logprobs(tmp_path):
    """A loopback server returning token log-probabilities: the reply's first token's alternatives give P(PASS), and
    run_judge keeps it as ``score`` on every row, read from the server and again from the cache."""
    from evalkit._testing import Answer, ChatServer

    sure = ({"PASS": math.log(0.8), "FAIL": math.log(0.15), "Pass": math.log(0.05)}, {"\n": 0.0}, {"ok": 0.0})
    unsure = ({"FAIL": math.log(0.6), "PASS": math.log(0.4)}, {"\n": 0.0}, {"no": 0.0})

    def script(prompt, attempt):
        return Answer("FAIL\nno", logprobs=unsure) if "case 3" in prompt else Answer("PASS\nok", logprobs=sure)

    cache = models.CallCache(tmp_path / "calls.sqlite")
    with ChatServer(script) as server:
        model = models.OpenAIChat("judge-m", base_url=server.url, api_key_env="EVALKIT_TEST_NO_KEY", logprobs=3)
        reply = model(RUBRIC.render({"output": "an answer"}))
        assert judge.verdict_score(reply.logprobs, RUBRIC) == pytest.approx(0.8 / 0.95)
        cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(5)], "output": [f"case {i}" for i in range(5)]})
        first = judge.run_judge(cases, RUBRIC, model, cache=cache, progress=False)
        again = judge.run_judge(cases, RUBRIC, model, cache=cache, progress=False)
    expected = [0.8 / 0.95] * 3 + [0.4] + [0.8 / 0.95]
    np.testing.assert_allclose(first["score"], expected, rtol=1e-12)
    assert again["cached"].all()
    np.testing.assert_allclose(again["score"], expected, rtol=1e-12)
    cache.close()
