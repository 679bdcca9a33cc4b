"""Judge runs that never lose a case: odd replies, faults, an unreachable server, slow bodies, results files.

Everything runs against the real chat-completions server on 127.0.0.1 (evalkit._testing), no mocks.
"""

import email.utils
import json
import socket
import sqlite3
import threading
import time
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from evalkit import EvalkitWarning, calibrate, cases, compare, judge, models
from evalkit._testing import ChatServer, Fail, Raw, Trickle
from tests._extras import needs_openai, needs_parquet

RUBRIC = judge.Rubric("r", "The answer is right.", "{criterion}\n{output}\nAnswer {levels}.")

# Malformed 200 replies, each with the plain message its error row must carry.
MALFORMED = [
    (Raw('{"choices": [{"message": {"content": {"verdict": "PASS"}}}]}'), "content is not text (a JSON dict)"),
    (Raw('{"choices": [{"finish_reason": "stop"}]}'), "the server's first choice has no message"),
    (Raw('{"choices": []}'), "the server returned no choices"),
    (Raw("<html><body>502 Bad Gateway</body></html>", content_type="text/html"), "the server's reply is not JSON (text/html"),
    (Raw('{"choices": [{"message": {"content": null}}]}'), "the message has no content"),
    (Raw('["PASS"]'), "the server's reply is a JSON list, not an object"),
    (Raw('{"object": "chat.completion"}'), "the server returned no choices"),
    (Raw(b"PASS\xff\xfe"), "the server's reply is not UTF-8 (byte 4; application/json, 6 bytes)"),
    # an answer the server cut short is an error row, never a verdict (its text may read as one)
    (Raw('{"choices": [{"message": {"content": "PASS"}, "finish_reason": "length"}]}'),
     "the answer was cut at max_tokens (finish_reason 'length')"),
    (Raw('{"choices": [{"message": {"content": null}, "finish_reason": "content_filter"}]}'),
     "the answer was withheld by a content filter (finish_reason 'content_filter')"),
    (Raw('{"choices": [{"message": {"content": "PASS"}}]}', content_type="application/json; charset=klingon"),
     "the server's reply declares the charset 'klingon', which has no decoder here"),
]


def fast(**kwargs):
    return {"backoff": 0.001, "max_backoff": 0.01, "progress": False, **kwargs}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@needs_openai
def test_fault_injection_every_case_one_row_no_verdict_from_a_malformed_reply():
    n = 1000
    kinds = np.arange(n) % 8  # 0, 1: malformed (a quarter); 2: lone surrogate; 3: transient faults first; rest fine
    table = pd.DataFrame({"case_id": [f"c{i}" for i in range(n)], "output": [f"answer {i}" for i in range(n)]})
    shape = {f"answer {i}": (int(kinds[i]), i) for i in range(n)}

    def script(prompt, attempt):
        kind, i = shape[prompt.split("\n")[1]]
        if kind in (0, 1):
            return MALFORMED[(i // 8 * 2 + kind) % len(MALFORMED)][0]
        if kind == 2:
            return Raw('{"choices": [{"message": {"content": "PASS\\ud800\\nlone surrogate"}}]}')
        if kind == 3 and attempt < 3:
            return Fail(500 if attempt == 1 else 429)
        return "PASS\nfine" if i % 2 else "FAIL\nwrong"

    with ChatServer(script) as server:
        model = models.OpenAIChat("judge-test", base_url=server.url)
        with pytest.warns(EvalkitWarning, match="250 of 1000 judge calls failed"):
            res = judge.run_judge(table, RUBRIC, model, concurrency=16, **fast())
    assert len(res) == n and res["case_id"].tolist() == table["case_id"].tolist()
    malformed = np.isin(kinds, [0, 1])
    assert res.loc[malformed, "verdict"].isna().all() and res.loc[malformed, "raw"].isna().all()
    assert res.loc[~malformed, "error"].isna().all()
    for i in np.flatnonzero(malformed)[:16]:
        message = MALFORMED[(i // 8 * 2 + kinds[i]) % len(MALFORMED)][1]
        assert res.loc[i, "error"].startswith("ReplyError: " + message), (i, res.loc[i, "error"])
    surrogate = kinds == 2
    assert (res.loc[surrogate, "raw"] == "PASS\ufffd\nlone surrogate").all()
    assert (res.loc[surrogate, "verdict"] == "FAIL").all() and not res.loc[surrogate, "parsed"].any()
    assert res.attrs["n_surrogates_replaced"] == int(surrogate.sum())
    transient = kinds == 3
    expected = np.where(np.arange(n) % 2, "PASS", "FAIL")
    assert (res.loc[transient, "verdict"].astype(object) == expected[transient]).all()
    assert all(server.attempts[RUBRIC.render({"output": f"answer {i}"})] == 3 for i in np.flatnonzero(transient))
    # Everything made it through pyarrow and back.
    res.to_parquet(__import__("io").BytesIO())


@needs_openai
def test_server_down_returns_fast_marks_every_case_and_resumes(tmp_path):
    n = 1000
    port = free_port()
    table = pd.DataFrame({"case_id": [f"c{i}" for i in range(n)], "output": [f"answer {i}" for i in range(n)]})
    cache = models.CallCache(tmp_path / "calls.sqlite")
    model = models.OpenAIChat("judge-test", base_url=f"http://127.0.0.1:{port}/v1", timeout=2.0)
    start = time.perf_counter()
    with pytest.warns(EvalkitWarning, match="server was unreachable"):
        down = judge.run_judge(table, RUBRIC, model, cache=cache, concurrency=8, **fast())
    assert time.perf_counter() - start < 30
    assert down["error"].notna().all() and down["verdict"].isna().all() and down.attrs["stopped"]
    not_tried = down["error"].str.startswith("not attempted: server unreachable")
    assert not_tried.sum() >= n - 8 * 5  # at most the calls in flight were tried (each up to 5 attempts)
    assert down.loc[~not_tried, "error"].str.contains("APIConnectionError").all()
    with ChatServer(lambda prompt, attempt: "PASS\nok", port=port) as server:
        back = judge.run_judge(table, RUBRIC, model, cache=cache, concurrency=8, **fast())
        again = judge.run_judge(table, RUBRIC, model, cache=cache, concurrency=8, **fast())
    assert back["error"].isna().all() and (back["verdict"] == "PASS").all() and not back.attrs["stopped"]
    assert server.requests == n and again["cached"].all()  # each case called once; the re-run made no call


@needs_openai
def test_retry_after_is_honoured_in_seconds_and_as_a_date():
    asked: dict = {}
    in_two = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)

    def script(prompt, attempt):
        asked.setdefault(prompt, []).append(time.monotonic())
        if attempt == 1:
            return Fail(429, retry_after="1" if prompt == "seconds" else in_two)
        return "PASS"

    with ChatServer(script) as server:
        calls = models.call_many(pd.Series({"a": "seconds", "b": "date"}), models.OpenAIChat("m", base_url=server.url),
                                 backoff=0.001, max_backoff=5.0, progress=False)
    assert calls["text"].tolist() == ["PASS", "PASS"]
    assert asked["seconds"][1] - asked["seconds"][0] >= 1.0
    assert asked["date"][1] - asked["date"][0] >= 0.9  # the header's date has whole seconds


@needs_openai
def test_retry_after_is_capped_by_max_backoff():
    script = lambda prompt, attempt: Fail(503, retry_after="3600") if attempt == 1 else "PASS"  # noqa: E731
    with ChatServer(script) as server:
        start = time.monotonic()
        calls = models.call_many(pd.Series(["x"]), models.OpenAIChat("m", base_url=server.url), backoff=0.001,
                                 max_backoff=0.2, progress=False)
    assert calls.loc[0, "text"] == "PASS" and time.monotonic() - start < 60  # not the hour asked


@needs_openai
def test_timeout_is_a_wall_clock_deadline_for_a_trickling_body():
    with ChatServer(lambda prompt, attempt: Trickle("PASS", interval=0.05)) as server:  # ~200 bytes: ~10 s
        start = time.monotonic()
        calls = models.call_many(pd.Series(["x"]), models.OpenAIChat("m", base_url=server.url, timeout=0.5),
                                 max_retries=0, progress=False)
        elapsed = time.monotonic() - start
    assert "TimeoutError: no complete reply within the 0.5 s deadline" == calls.loc[0, "error"]
    assert elapsed < 5  # the body alone would take about 10 s


@needs_openai
def test_key_echoed_by_the_server_is_redacted(tmp_path, monkeypatch):
    key = "sk-test-echoed-0123456789"
    monkeypatch.setenv("EVALKIT_ECHO_KEY", key)
    with ChatServer(lambda prompt, attempt: Fail(401, f"Incorrect API key provided: {key}")) as server:
        model = models.OpenAIChat("m", base_url=server.url, api_key_env="EVALKIT_ECHO_KEY")
        with pytest.warns(EvalkitWarning, match="failed"):
            res = judge.run_judge(pd.DataFrame({"case_id": ["a"], "output": ["x"]}), RUBRIC, model, **fast())
    assert "[redacted]" in res.loc[0, "error"] and key not in res.loc[0, "error"]
    path = judge.save_results(res, tmp_path / "run.jsonl")
    assert key.encode() not in path.read_bytes()


def test_a_cache_write_failure_does_not_lose_the_run(tmp_path):
    cache = models.CallCache(tmp_path / "calls.sqlite")
    cache.put_many([(models.CallCache.key("m", {}, "old"), "m", models.Reply("PASS"))])
    other = sqlite3.connect(tmp_path / "calls.sqlite", timeout=0)
    other.execute("BEGIN EXCLUSIVE")  # another process holds the write lock for the whole run
    try:
        with pytest.warns(EvalkitWarning, match="could not store 2 answers in the cache.*database is locked"):
            calls = models.call_many(pd.Series({"a": "old", "b": "new", "c": "newer"}), lambda p: "FAIL", model_id="m",
                                     cache=cache, progress=False)
    finally:
        other.rollback()
        other.close()
    assert calls["text"].tolist() == ["PASS", "FAIL", "FAIL"] and calls["cached"].tolist() == [True, False, False]
    assert cache.get(models.CallCache.key("m", {}, "new")) is None  # not stored: a re-run asks again
    bad = models.call_many(pd.Series(["x"]), lambda p: models.Reply({"verdict": "PASS"}), model_id="m", cache=cache,
                           progress=False)
    assert bad.loc[0, "error"] == "TypeError: a model's Reply.text must be str; got dict."


def test_missing_field_is_refused_before_any_call(tmp_path):
    path = tmp_path / "cases.jsonl"
    path.write_text('{"case_id": "a", "output": "Paris"}\n{"case_id": "b", "output": ""}\n{"case_id": "c"}\n')
    table = cases.read_cases(path)
    called = []
    model = lambda prompt: called.append(prompt) or "PASS"  # noqa: E731
    with pytest.raises(ValueError, match=r"case 'c' \(.*cases.jsonl, line 3\) has no 'output'.*No call was made"):
        judge.run_judge(table, RUBRIC, model, model_id="m", progress=False)
    assert called == []
    res = judge.run_judge(table.iloc[:2], RUBRIC, model, model_id="m", progress=False)  # "" is a value
    assert res["verdict"].tolist() == ["PASS", "PASS"] and len(called) == 2
    with pytest.raises(ValueError, match=r"case 'x' has no 'output'"):
        judge.run_judge(pd.DataFrame({"case_id": ["x"], "output": [None]}), RUBRIC, model, model_id="m")
    with pytest.raises(ValueError, match="this case has no value"):
        RUBRIC.render({"output": np.nan})


def test_read_cases_encoding_and_csv_records(tmp_path):
    latin = tmp_path / "latin.jsonl"
    latin.write_bytes('{"case_id": "a", "output": "ok"}\n{"case_id": "b", "output": "café"}\n'.encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin.jsonl, line 2: not valid utf-8 .*pass encoding="):
        cases.read_cases(latin)
    assert cases.read_cases(latin, encoding="latin-1").loc[1, "output"] == "café"
    csv_latin = tmp_path / "latin.csv"
    csv_latin.write_bytes("case_id,output\na,ok\nb,\"two\nlines\"\nc,café\n".encode("latin-1"))
    with pytest.raises(ValueError, match=r"latin.csv, line 5: not valid utf-8"):
        cases.read_cases(csv_latin)
    multi = tmp_path / "multi.csv"
    multi.write_text('case_id,output\na,"one\ntwo\nthree"\nb,x\na,y\n')
    with pytest.raises(ValueError, match=r"'a' appears more than once \(record 1 \(line 2\), record 3 \(line 6\)\)"):
        cases.read_cases(multi)
    ragged = tmp_path / "ragged.csv"
    ragged.write_text('case_id,output\na,"x\ny"\nb,1,2\n')
    with pytest.raises(ValueError, match=r"ragged.csv: record 2 \(line 4\) has 3 fields; the header has 2"):
        cases.read_cases(ragged)
    with pytest.raises(ValueError, match="`encoding` must be a text encoding.*got 'klingon'"):
        cases.read_cases(latin, encoding="klingon")
    empty = tmp_path / "empty.csv"
    empty.write_text("case_id,output,score\na,,1.5\nb,x,\n")
    table = cases.read_cases(empty)
    assert table["output"].tolist() == ["", "x"] and np.isnan(table.loc[1, "score"])


# ------------------------------------------------------------------ pass levels
LEVELS3 = judge.Rubric("tone", "The reply is polite.", "{output}\n{levels}", levels=("GOOD", "OK", "BAD"),
                       fail_level="BAD")


def test_three_level_rubric_end_to_end(tmp_path):
    outputs = ["GOOD", "OK", "BAD", "GOOD", "meh", "OK", "GOOD", "BAD"]
    table = pd.DataFrame({"case_id": [f"c{i}" for i in range(8)], "output": outputs})
    res = judge.run_judge(table, LEVELS3, lambda prompt: prompt.split("\n")[0] + "\nbecause", model_id="m",
                          progress=False)
    assert res.attrs["rubric"]["pass_levels"] == ["GOOD", "OK"]
    # Judged: GOOD OK BAD GOOD BAD(unparseable "meh") OK GOOD BAD -> 5 pass of 8.
    with pytest.warns(EvalkitWarning, match="unparseable"):
        rate = judge.pass_rate(res).iloc[0]
    assert (rate["n_pass"], rate["n_judged"]) == (5, 8)
    back = judge.load_results(judge.save_results(res, tmp_path / "run.jsonl"))
    with pytest.warns(EvalkitWarning, match="unparseable"):
        assert judge.pass_rate(back).loc[0, "n_pass"] == 5
    strict = judge.Rubric("tone", LEVELS3.criterion, LEVELS3.template, levels=LEVELS3.levels, fail_level="BAD",
                          pass_levels=("GOOD",))
    assert strict.version == LEVELS3.version  # pass levels do not change a verdict
    with pytest.warns(EvalkitWarning, match="unparseable"):
        assert judge.pass_rate(res, pass_levels=("GOOD",)).loc[0, "n_pass"] == 3
    # Humans label in the same levels; GOOD vs OK is no disagreement, OK vs BAD is.
    human = pd.Series(["OK", "OK", "BAD", "BAD", "BAD", "GOOD", "BAD", "GOOD"], index=table["case_id"])
    report = calibrate.calibrate(res, human)
    # judge pass: T T F T F T T F; human pass: T T F F F T F T
    assert (report.n, report.human_fails, report.caught, report.judge_fails) == (8, 4, 2, 3)
    assert report.agreement == pytest.approx(5 / 8)
    diff = calibrate.disagreements(res, human)
    assert diff["case_id"].tolist() == ["c3", "c6", "c7"]
    assert diff["human"].tolist() == ["BAD", "BAD", "GOOD"] and diff["judge"].tolist() == ["GOOD", "GOOD", "BAD"]
    run = res.assign(verdict=pd.Categorical(["GOOD"] * 3 + ["OK"] * 2 + ["BAD"] * 3, categories=LEVELS3.levels))
    run.attrs = res.attrs
    with pytest.warns(EvalkitWarning, match="4 human PASS, 4 human FAIL.*cannot rule out a judge no better than chance"):
        row = calibrate.corrected_pass_rate(run, report, rng=0).iloc[0]
    assert np.isnan(row["ci_low"]) and np.isnan(row["ci_high"])  # 8 labels cannot back any interval here
    se, sp = 3 / 4, 2 / 4  # judge pass among human pass (c0 c1 c5 c7), judge fail among human fail (c2 c3 c4 c6)
    assert (row["false_flag_rate"], row["fail_recall"]) == (1 - se, sp)
    assert row["observed"] == 5 / 8 and row["estimate"] == pytest.approx((5 / 8 + sp - 1) / (se + sp - 1))
    other = res.assign(verdict=pd.Categorical(["BAD", "OK", "BAD", "GOOD", "BAD", "OK", "OK", "BAD"],
                                              categories=LEVELS3.levels))
    other.attrs = res.attrs
    cmp = compare.paired(res, other)
    assert (cmp.rate_a, cmp.rate_b) == (5 / 8, 4 / 8)
    assert cmp.p_val == pytest.approx(1.0)  # one pass -> fail (c0), none back: binomial test 1 of 1
    assert list(cmp.table.index) == ["GOOD", "OK", "BAD"] and cmp.table.loc["GOOD", "OK"] == 1
    assert len(cmp.flips) == 2  # c0 GOOD -> BAD, c6 GOOD -> OK


def test_other_levels_are_refused_without_pass_levels():
    verdicts = pd.Series(["GOOD", "BAD"], index=["a", "b"])
    results = pd.DataFrame({"case_id": ["a", "b"], "rubric": "r", "rubric_version": "v", "model": "m",
                            "verdict": ["GOOD", "GOOD"], "parsed": True, "error": None})
    with pytest.raises(ValueError, match=r"for case 0 is 'GOOD'.*pass `pass_levels=`"):
        judge.pass_rate(results)
    assert judge.pass_rate(results, pass_levels=("GOOD",)).loc[0, "pass_rate"] == 1.0
    with pytest.raises(ValueError, match="is 'GOOD'"):
        calibrate.calibrate(verdicts, pd.Series(["PASS", "FAIL"], index=["a", "b"]))
    report = calibrate.calibrate(verdicts, pd.Series(["PASS", "FAIL"], index=["a", "b"]), pass_levels=("GOOD",))
    assert report.agreement == 1.0
    with pytest.raises(TypeError, match="pass_levels"):
        judge.pass_rate(results, pass_levels="GOOD")
    with pytest.raises(ValueError, match="runs count different verdicts"):
        compare.paired(results.assign(verdict=["GOOD", "BAD"]).pipe(_with_rubric, ("GOOD",)),
                       results.pipe(_with_rubric, ("GOOD", "OK")))
    with pytest.raises(ValueError, match="pass_levels.*without the fail level"):
        judge.Rubric("r", "c", "{output}", levels=("GOOD", "BAD"), fail_level="BAD", pass_levels=("BAD",))
    with pytest.raises(TypeError, match="tuple of levels"):
        judge.Rubric("r", "c", "{output}", levels=("GOOD", "BAD"), fail_level="BAD", pass_levels="GOOD")


def _with_rubric(table, pass_levels):
    table = table.copy()
    table.attrs["rubric"] = {"levels": ["GOOD", "OK", "BAD"], "fail_level": "BAD", "pass_levels": list(pass_levels)}
    return table


# ------------------------------------------------------------------ results files
@pytest.mark.parametrize("name", ["run.jsonl", pytest.param("run.parquet", marks=needs_parquet)])
def test_save_is_atomic_and_load_refuses_empty_or_truncated(tmp_path, name):
    res = pd.DataFrame({"case_id": ["a", "b", "c"], "verdict": ["PASS", "FAIL", "PASS"]})
    path = judge.save_results(res, tmp_path / name)
    before = path.read_bytes()
    if name.endswith("parquet"):  # pyarrow refuses the column mid-write: the old file stays whole
        with pytest.raises(Exception):  # noqa: B017 - whatever pyarrow raises
            judge.save_results(res.assign(verdict=[object(), 1, 2]), path)
        assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temp file left
    empty = tmp_path / f"empty{path.suffix}"
    empty.write_bytes(b"")
    with pytest.raises(ValueError, match="the file is empty"):
        judge.load_results(empty)
    if name.endswith("jsonl"):
        lines = path.read_text().split("\n")
        cut = tmp_path / "cut.jsonl"
        cut.write_text("\n".join(lines[:3]) + "\n")  # metadata and two of three rows
        with pytest.raises(ValueError, match="holds 2 rows but was saved with 3; the file is truncated"):
            judge.load_results(cut)
    else:
        half = tmp_path / "half.parquet"
        half.write_bytes(path.read_bytes()[:200])
        with pytest.raises(ValueError, match="not a complete Parquet file"):
            judge.load_results(half)


def test_a_killed_save_leaves_the_previous_file(tmp_path):
    path = judge.save_results(pd.DataFrame({"case_id": ["a"], "verdict": ["PASS"]}), tmp_path / "run.jsonl")
    before = path.read_bytes()
    big = pd.DataFrame({"case_id": [f"c{i}" for i in range(200_000)], "verdict": "PASS"})
    # Save from a thread and snapshot the file while it is written: it is always the old or the new file.
    seen = set()
    worker = threading.Thread(target=judge.save_results, args=(big, path))
    worker.start()
    while worker.is_alive():
        seen.add(len(path.read_bytes()))
    worker.join()
    after = path.read_bytes()
    assert seen <= {len(before), len(after)} and len(judge.load_results(path)) == 200_000


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085", "\x1c", "\r", "\x0b"])
def test_jsonl_round_trips_any_text(tmp_path, separator):
    text = f"PASS{separator}reason with {separator} inside\nand a second line"
    res = pd.DataFrame({"case_id": ["a", "b"], "raw": [text, "plain"], "reason": [separator, None]})
    back = judge.load_results(judge.save_results(res, tmp_path / "run.jsonl"))
    assert back["raw"].tolist() == [text, "plain"] and back.loc[0, "reason"] == separator
    assert json.loads((tmp_path / "run.jsonl").read_text(encoding="utf-8").split("\n")[0])["__metadata__"]["n_rows"] == 2


@needs_openai
def test_call_options_bad_input():
    prompts = pd.Series(["x"])
    for option, value, error in (("backoff", -1.0, ValueError), ("max_backoff", "1", TypeError),
                                 ("max_unreachable", 0, ValueError), ("max_unreachable", 2.5, TypeError)):
        with pytest.raises(error, match=f"`{option}`"):
            models.call_many(prompts, lambda p: "y", model_id="m", **{option: value})
    with pytest.raises(ValueError, match="`timeout` must be a positive"):
        models.OpenAIChat("m", base_url="http://127.0.0.1:9/v1", timeout=0)
    with pytest.raises(ValueError, match="`max_unreachable`"):
        judge.run_judge(pd.DataFrame({"case_id": ["a"], "output": ["x"]}), RUBRIC, lambda p: "PASS", model_id="m",
                        max_unreachable=0)
