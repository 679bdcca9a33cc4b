"""Judge runs through the provider Batch API, against the local files/batches server on 127.0.0.1 (no mocks)."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalkit import EvalkitWarning, batch, judge, models
from evalkit._testing import BatchServer, Fail, Line, Raw

openai = pytest.importorskip("openai", reason="batch jobs go through the 'openai' extra")

ROOT = Path(__file__).resolve().parents[1]
RUBRIC = judge.Rubric("grounded", "The answer is grounded.", "{criterion}\nQ: {input}\nA: {output}\nAnswer {levels}.")


def make_cases(n: int) -> pd.DataFrame:
    """n cases; every 500th (from the 7th) is scripted to fail on its first attempt."""
    ids = [f"case-{i:05d}" for i in range(n)]
    return pd.DataFrame({"case_id": ids, "input": [f"question {i}" for i in range(n)],
                         "output": [f"{'flaky' if i % 500 == 7 else 'answer'} {i} {'even' if i % 2 == 0 else 'odd'}"
                                    for i in range(n)]})


def script(prompt: str, attempt: int):
    if "flaky" in prompt and attempt == 1:
        return Fail(500, "overloaded")
    return "PASS\nsupported" if " even" in prompt else "FAIL\nnot supported"


def total_requests(server) -> int:
    return server.api_requests + server.requests


# ------------------------------------------------------------------ the killed kernel
CHILD = """
import sys
from evalkit import batch, models
from tests.test_batch import RUBRIC, make_cases
cache = models.CallCache(sys.argv[1])
model = models.OpenAIChat("judge-batch", base_url=sys.argv[2])
batch.run_judge(make_cases(int(sys.argv[3])), RUBRIC, model, cache=cache, max_requests_per_file=4000, interval=0.05)
print("finished")
"""


def test_kernel_killed_while_polling_resumes_without_resubmitting(tmp_path):
    n = 10_000
    cases = make_cases(n)
    flaky = cases["output"].str.startswith("flaky").to_numpy()
    path = tmp_path / "calls.sqlite"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with BatchServer(script, batch_delay=float("inf")) as server:  # the batches run until the kill
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), server.url, str(n)], cwd=ROOT, env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        # 3 uploads and 3 creations, then at least one round of 3 polls: the child is polling.
        while server.api_requests < 9 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        assert child.poll() is None, f"the child ended before it was killed: {child.communicate()}"
        child.send_signal(signal.SIGKILL)
        child.communicate()
        assert child.returncode == -signal.SIGKILL

        cache = models.CallCache(path)
        before = batch.jobs(cache)
        assert len(before) == 3 and (before["status"] == "in_progress").all() and before["collected_at"].isna().all()
        assert before["n_requests"].tolist() == [4000, 4000, 2000]
        assert len(cache) == 0  # killed before any answer came back

        server.batch_delay = 0.0  # the provider finishes while no kernel is polling
        model = models.OpenAIChat("judge-batch", base_url=server.url)
        with pytest.warns(EvalkitWarning, match=f"{flaky.sum()} of {n} judge calls failed"):
            results = batch.run_judge(cases, RUBRIC, model, cache=cache, max_requests_per_file=4000, interval=0.05)

        # zero duplicate submissions: one batch per uploaded file, every request in exactly one batch
        uploads = [f for f in server.files.values() if f["purpose"] == "batch"]
        assert len(uploads) == 3 and sorted(server.created.values()) == [1, 1, 1]
        assert len(server.submitted) == n and set(server.submitted.values()) == {1}
        assert server.requests == 0  # no live call
        # every case one row; the scripted line failures are error rows, the rest carry the scripted verdict
        assert results["case_id"].tolist() == cases["case_id"].tolist()
        assert results["error"].notna().to_numpy().tolist() == flaky.tolist()
        assert results.loc[flaky, "error"].str.fullmatch(r"BatchError: HTTP 500: overloaded").all()
        expected = np.where(cases["output"].str.endswith("even"), "PASS", "FAIL")
        assert (results.loc[~flaky, "verdict"].astype(str).to_numpy() == expected[~flaky]).all()
        assert results.loc[~flaky, "parsed"].all()
        usage = results.attrs["usage"]
        answered = judge.render_prompts(cases, RUBRIC)[~flaky]  # the server counts words as tokens
        assert (usage["n_cached"], usage["n_errors"], usage["n_attempts"]) == (0, flaky.sum(), n)
        assert usage["prompt_tokens"] == sum(len(p.split()) for p in answered)
        assert usage["completion_tokens"] == sum(len(script(p, 2).split()) for p in answered)

        # the next run sends only the failed requests again, as one new batch
        again = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05)
        assert sum(server.created.values()) == 4 and len(server.submitted) == n
        retried = {key for key, count in server.submitted.items() if count == 2}
        assert len(retried) == flaky.sum() and again["error"].isna().all()
        assert (again["verdict"].astype(str).to_numpy() == expected).all()
        assert again.loc[~flaky, "cached"].all() and again.attrs["usage"]["n_attempts"] == flaky.sum()

        # and a cached re-run makes no request at all
        seen = total_requests(server)
        last = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05)
        assert total_requests(server) == seen and last["cached"].all() and len(last) == n
        assert last.attrs["usage"]["n_cached"] == n
        pd.testing.assert_series_equal(last["verdict"], again["verdict"])
        # judge.run_judge with the real model reads the same answers: the keys are the ones call_many uses
        live = judge.run_judge(cases, RUBRIC, model, cache=cache, progress=False)
        assert total_requests(server) == seen and live["cached"].all()
    assert batch.jobs(cache)["collected_at"].notna().all()


def test_creation_interrupted_after_the_provider_accepted_it_is_adopted(tmp_path):
    cache = models.CallCache(tmp_path / "calls.sqlite")
    cases = make_cases(30)
    with BatchServer(script, create_hang=5.0) as server:
        model = models.OpenAIChat("judge-batch", base_url=server.url, timeout=1.0)
        with pytest.raises(openai.APITimeoutError):
            batch.submit(judge.render_prompts(cases, RUBRIC), model, cache=cache)
        pending = batch.jobs(cache)
        assert pending["status"].tolist() == ["uploaded"] and pending["batch_id"].isna().all()
        assert sum(server.created.values()) == 1  # the provider has the batch; evalkit did not hear back
        server.create_hang = 0.0
        with pytest.warns(EvalkitWarning, match="failed"):  # case 7 is scripted to fail once
            results = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05)
        assert sum(server.created.values()) == 1 and set(server.submitted.values()) == {1}
        assert batch.jobs(cache)["batch_id"].tolist() == list(server.batches)  # the provider's one batch
        assert len(results) == 30 and results["error"].notna().sum() == 1


def test_a_batch_the_provider_never_created_is_created_and_a_refusal_frees_the_requests(tmp_path):
    cache = models.CallCache(tmp_path / "calls.sqlite")
    cases = make_cases(6).assign(output="answer even")
    prompts = judge.render_prompts(cases, RUBRIC)
    with BatchServer(script, create_hang=5.0) as server:
        model = models.OpenAIChat("judge-batch", base_url=server.url, timeout=1.0)
        with pytest.raises(openai.APITimeoutError):
            batch.submit(prompts, model, cache=cache)
        server.create_hang = 0.0
        server.batches.clear()  # as if the provider had never created it: the resume creates it
        assert batch.submit(prompts, model, cache=cache).empty
        assert batch.jobs(cache)["batch_id"].tolist() == list(server.batches) and sum(server.created.values()) == 2
        assert batch.collect(model, cache=cache).empty  # still running

    cache2 = models.CallCache(tmp_path / "other.sqlite")
    with BatchServer(script, create_hang=5.0) as server:
        model = models.OpenAIChat("judge-batch", base_url=server.url, timeout=1.0)
        with pytest.raises(openai.APITimeoutError):
            batch.submit(prompts, model, cache=cache2)
        server.create_hang = 0.0
        server.batches.clear()
        server.files.clear()  # and its input file is gone: creating that batch is refused (400)
        results = batch.run_judge(cases, RUBRIC, model, cache=cache2, interval=0.05)
    # the refused job ended and freed its requests, which the same call sent again in a new file
    refused, fresh = batch.jobs(cache2).sort_values("status", ascending=False).itertuples(index=False)
    assert refused.status == "failed" and refused.message.startswith("BadRequestError") and pd.isna(refused.batch_id)
    assert fresh.status == "completed" and fresh.n_completed == 6
    assert results["error"].isna().all() and results["cached"].all()
    assert sorted(server.created.values()) == [1, 1] and set(server.submitted.values()) == {2}


def test_batch_lines_are_the_live_requests_and_files_are_split(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALKIT_TEST_KEY", "sk-very-secret-batch")
    cache = models.CallCache(tmp_path / "calls.sqlite")
    prompts = pd.Series({"a": "one", "b": "two", "c": "one", "d": "three", "e": "four", "f": "fïve"})
    with BatchServer(lambda prompt, attempt: f"echo {prompt}") as server:
        model = models.OpenAIChat("judge-x", base_url=server.url, system="Be strict.", max_tokens=5, temperature=0.2,
                                  api_key_env="EVALKIT_TEST_KEY")
        created = batch.submit(prompts, model, cache=cache, max_requests_per_file=2)
        assert created["n_requests"].tolist() == [2, 2, 1]  # five distinct prompts
        mid, params = models.model_identity(model)
        lines = [json.loads(line) for f, meta in server.files.items() if meta["purpose"] == "batch"
                 for line in server.contents[f].decode("utf-8").splitlines()]
        by_key = {models.CallCache.key(mid, params, p): p for p in prompts.unique()}
        assert sorted(line["custom_id"] for line in lines) == sorted(by_key)
        for line in lines:
            assert line["method"] == "POST" and line["url"] == "/v1/chat/completions"
            assert line["body"] == model.request_body(by_key[line["custom_id"]])
        assert batch.poll(model, cache=cache, interval=0.05)["status"].eq("completed").all()
        answers = batch.collect(model, cache=cache)
        assert sorted(answers["text"]) == sorted(f"echo {p}" for p in by_key.values())
        assert batch.collect(model, cache=cache).empty  # each job is collected once
        seen = total_requests(server)
        calls = models.call_many(prompts, model, cache=cache, progress=False)
    assert total_requests(server) == seen and calls["cached"].all()
    assert calls["text"].tolist() == [f"echo {p}" for p in prompts]
    stored = b"".join(f.read_bytes() for f in tmp_path.glob("calls.sqlite*"))  # the database and its WAL
    assert b"judge-x" in stored and b"sk-very-secret" not in stored


def test_a_job_that_ends_without_answers_gives_error_rows_and_is_resubmitted(tmp_path):
    cache = models.CallCache(tmp_path / "calls.sqlite")
    cases = make_cases(4).assign(output="answer even")
    with BatchServer(script, batch_delay=float("inf")) as server:
        model = models.OpenAIChat("judge-batch", base_url=server.url)
        batch.submit(judge.render_prompts(cases, RUBRIC), model, cache=cache)
        (batch_id,) = server.batches
        server.batches[batch_id].update(status="expired", expired_at=int(time.time()))  # the provider gave up
        assert batch.poll(model, cache=cache, wait=False)["status"].tolist() == ["expired"]
        answers = batch.collect(model, cache=cache)
        assert answers["error"].eq("no result for this request (batch expired)").all() and len(cache) == 0
        assert models.usage_summary(answers).loc[0, "n_errors"] == 4
        server.batch_delay = 0.0
        results = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05)
    assert results["error"].isna().all() and (results["verdict"] == "PASS").all()
    assert sum(server.created.values()) == 2 and set(server.submitted.values()) == {2}


def test_usage_summary_prices_batch_rows_at_the_batch_price():
    calls = pd.DataFrame({"cached": [False, False, True], "error": [None, None, None], "attempts": [1, 1, 0],
                          "prompt_tokens": [1000, 500, 700], "completion_tokens": [100, 50, 70],
                          "batch": [True, False, True]})
    cost = models.usage_summary(calls, price_per_million={"prompt": 2.0, "completion": 8.0},
                                batch_discount=0.4).loc[0, "cost_usd"]
    by_hand = (1000 * 0.4 + 500) * 2.0 / 1e6 + (100 * 0.4 + 50) * 8.0 / 1e6
    assert cost == pytest.approx(by_hand, rel=1e-12)
    plain = models.usage_summary(calls.drop(columns="batch"), price_per_million={"prompt": 2.0, "completion": 8.0})
    assert plain.loc[0, "cost_usd"] == pytest.approx(1500 * 2.0 / 1e6 + 150 * 8.0 / 1e6, rel=1e-12)
    with pytest.raises(ValueError, match=r"`batch_discount` must be in \[0.0, 1.0\]; got 2"):
        models.usage_summary(calls, batch_discount=2)


def test_bad_input(tmp_path):
    cache = models.CallCache(tmp_path / "calls.sqlite")
    with BatchServer(script, batch_delay=float("inf")) as server:
        model = models.OpenAIChat("judge-batch", base_url=server.url)
        prompts = pd.Series(["a"])
        with pytest.raises(TypeError, match="`model` must be a models.OpenAIChat .*got Replay"):
            batch.submit(prompts, models.Replay({}, model_id="r"), cache=cache)
        with pytest.raises(TypeError, match="`cache` must be a models.CallCache .*got str"):
            batch.submit(prompts, model, cache="calls.sqlite")
        with pytest.raises(TypeError, match="`prompts` must be a Series of str; got list"):
            batch.submit(["a"], model, cache=cache)
        with pytest.raises(TypeError, match="entry 1 is int"):
            batch.submit(pd.Series(["a", 3]), model, cache=cache)
        for bad in (0, 50_001):
            with pytest.raises(ValueError, match="`max_requests_per_file` must be in"):
                batch.submit(prompts, model, cache=cache, max_requests_per_file=bad)
        with pytest.raises(ValueError, match="`interval` must be in"):
            batch.poll(model, cache=cache, interval=-1)
        with pytest.raises(TypeError, match="`cache` must be a models.CallCache"):
            batch.jobs(tmp_path)
        with pytest.raises(TypeError, match="`model` must be a models.OpenAIChat"):
            batch.collect(lambda prompt: "PASS", cache=cache)
        with pytest.raises(TypeError, match="`cache` must be a models.CallCache"):
            batch.poll(model, cache=None)
        with pytest.raises(TypeError, match="`cases` must be a pandas DataFrame.*got a path"):
            judge.render_prompts("cases.csv", RUBRIC)
        with pytest.raises(TypeError, match="`rubric` must be a Rubric; got str"):
            judge.render_prompts(make_cases(1), "grounded")
        with pytest.raises(KeyError, match="needs the case field 'input'"):
            judge.render_prompts(pd.DataFrame({"case_id": ["x"], "output": ["y"]}), RUBRIC)
        with pytest.raises(KeyError, match=r"missing column\(s\) \['case_id'\]"):
            batch.run_judge(pd.DataFrame({"id": ["x"]}), RUBRIC, model, cache=cache)
        with pytest.raises(ValueError, match="`batch_discount` must be in"):
            batch.run_judge(make_cases(2), RUBRIC, model, cache=cache, batch_discount=1.5)
        with pytest.raises(ValueError, match="`timeout` must be in"):
            batch.run_judge(make_cases(2), RUBRIC, model, cache=cache, timeout=-1)
        assert total_requests(server) == 0  # refused before any request
        batch.submit(prompts, model, cache=cache)
        with pytest.raises(TimeoutError, match="1 batch job\\(s\\) still running after 0.2 s"):
            batch.poll(model, cache=cache, interval=0.05, timeout=0.2)


# ------------------------------------------------------------------ odd output files
KEY = "sk-batch-secret-0123456789"
ODD = {  # kind: (what the provider puts in that request's output, the error row it must give; None: an answer)
    "null": (Raw('{"choices": [{"message": {"content": null}}]}'), "ReplyError: the message has no content"),
    "dict": (Raw('{"choices": [{"message": {"content": {"verdict": "PASS"}}}]}'),
             "ReplyError: content is not text (a JSON dict)"),
    "list": (Raw('{"choices": [{"message": {"content": ["PASS"]}}]}'), "ReplyError: content is not text (a JSON list)"),
    "refusal": (Raw('{"choices": [{"message": {"content": null, "refusal": "I will not"}}]}'),
                "ReplyError: the model refused: I will not"),
    "no choices": (Raw('{"choices": []}'), "ReplyError: the server returned no choices"),
    "body a list": (Raw('["PASS"]'), "ReplyError: the server's reply is a JSON list, not an object"),
    "choice a string": (Raw('{"choices": ["PASS"]}'), "ReplyError: the server's first choice has no message"),
    "bytes": (Raw(b'{"choices": [{"message": {"content": "PASS\xff\xfe"}}]}'),
              "ReplyError: the output line is not valid UTF-8"),
    "key in status": (Fail(401, f"Incorrect API key provided: {KEY}"),
                      "HTTP 401: Incorrect API key provided: [redacted]"),
    "status, text body": (Raw(f'"upstream said {KEY}"', status=502), "HTTP 502: upstream said [redacted]"),
    "error a string": (Line(f'{{"custom_id": "{{custom_id}}", "response": null, "error": "boom {KEY}"}}'),
                       "boom [redacted]"),
    "error a dict": (Line(f'{{"custom_id": "{{custom_id}}", "error": {{"code": "server_error", "message": "{KEY}"}}}}'),
                     "server_error: [redacted]"),
    "response a string": (Line('{"custom_id": "{custom_id}", "response": "oops", "error": null}'),
                          "ReplyError: the output line has no response"),
    "not JSON": (Line("this line is not JSON"), "no result for this request (batch completed)"),
    "no custom_id": (Line('{"response": {"status_code": 200, "body": {}}}'),
                     "no result for this request (batch completed)"),
    "custom_id a number": (Line('{"custom_id": 7, "response": {"status_code": 200}}'),
                           "no result for this request (batch completed)"),
    "surrogate": (Raw('{"choices": [{"message": {"content": "PASS\\n\\ud800"}}]}'), None),
    "odd usage": (Raw('{"choices": [{"message": {"content": "PASS\\nok"}}], "usage": {"prompt_tokens": "many"}}'), None),
    "empty text": ("", None),
    "error, then the answer": (Line('{"custom_id": "{custom_id}", "response": {"status_code": 500, "body": {}}}\n'
                                    '{"custom_id": "{custom_id}", "response": {"status_code": 200, "body": '
                                    '{"choices": [{"message": {"content": "PASS\\nsecond line"}}]}}}'), None),
}
ANSWERED = {"surrogate": "PASS\n\ufffd", "odd usage": "PASS\nok", "empty text": "", "error, then the answer": "PASS\nsecond line"}


def odd_cases(n: int) -> tuple[pd.DataFrame, list]:
    kinds = list(ODD) + ["good"] * 5
    kind = [kinds[i % len(kinds)] for i in range(n)]
    cases = pd.DataFrame({"case_id": [f"case-{i:04d}" for i in range(n)], "input": [f"question {i}" for i in range(n)],
                          "output": [f"{k} :: answer {i}" for i, k in enumerate(kind)]})
    return cases, kind


def odd_script(prompt: str, attempt: int):
    kind = prompt.split("A: ")[1].split(" :: ")[0]
    if kind == "good" or attempt > 1:
        return "PASS\nsupported"
    return ODD[kind][0]


def test_every_odd_output_line_is_one_row_and_nothing_stops_the_job(tmp_path, monkeypatch):
    monkeypatch.setenv("EVALKIT_BATCH_KEY", KEY)
    cases, kind = odd_cases(250)
    kind = np.array(kind)
    cache = models.CallCache(tmp_path / "calls.sqlite")
    errors = np.array([ODD[k][1] if k in ODD else None for k in kind], dtype=object)
    failing = np.array([e is not None for e in errors])
    with BatchServer(odd_script) as server:
        model = models.OpenAIChat("judge-odd", base_url=server.url, api_key_env="EVALKIT_BATCH_KEY")
        with pytest.warns(EvalkitWarning, match=f"{failing.sum()} of 250 judge calls failed"):
            results = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05)
        # every request one row, in the cases' order; each odd line its own plain error, redacted
        assert results["case_id"].tolist() == cases["case_id"].tolist()
        assert (results.loc[failing, "error"].to_numpy() == np.array(["BatchError: " + e for e in errors[failing]])).all()
        assert results.loc[~failing, "error"].isna().all() and results.loc[failing, "verdict"].isna().all()
        # every answer stored, cleaned as a live call's would be
        prompts = judge.render_prompts(cases, RUBRIC)
        mid, params = models.model_identity(model)
        stored = [cache.get(models.CallCache.key(mid, params, p)) for p in prompts]
        assert [s is not None for s in stored] == (~failing).tolist()
        for k, text in ANSWERED.items():
            assert {s.text for s, kk in zip(stored, kind, strict=True) if kk == k} == {text}, k
        assert {s.text for s, kk in zip(stored, kind, strict=True) if kk == "good"} == {"PASS\nsupported"}
        assert results.attrs["n_surrogates_replaced"] == int((kind == "surrogate").sum())
        assert {s.prompt_tokens for s, kk in zip(stored, kind, strict=True) if kk == "odd usage"} == {None}
        # the job was collected once: collecting again reads no file
        (job,) = batch.jobs(cache).itertuples(index=False)
        assert job.status == "completed" and job.collected_at is not None
        downloads = sum(server.downloads.values())
        assert batch.collect(model, cache=cache).empty and sum(server.downloads.values()) == downloads
        # a re-run of the answered cases makes no request, through either lane
        seen = total_requests(server)
        answered = cases[~failing]
        again = batch.run_judge(answered, RUBRIC, model, cache=cache, interval=0.05)
        live = judge.run_judge(answered, RUBRIC, model, cache=cache, progress=False)
        assert total_requests(server) == seen and again["cached"].all() and live["cached"].all()
        # no file of ours holds the key: the database, its journal, the saved results
        saved = judge.save_results(results, tmp_path / "results.jsonl")
        for path in [*tmp_path.glob("calls.sqlite*"), saved]:
            assert KEY.encode() not in path.read_bytes(), path
        with sqlite3.connect(cache.path) as db:
            assert db.execute("SELECT COUNT(*) FROM batch_requests WHERE error LIKE '%redacted%'").fetchone()[0] == 4 * (
                (kind == "key in status").sum())
        # the failed requests, and only they, go again as one new job
        fixed = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05)
    assert fixed["error"].isna().all() and sum(server.created.values()) == 2
    assert sorted(server.submitted.values()).count(2) == failing.sum()


def test_a_job_whose_files_cannot_be_read_now_waits_for_the_next_collect(tmp_path):
    cases = make_cases(30).assign(output="answer even")
    cache = models.CallCache(tmp_path / "calls.sqlite")
    with BatchServer(script) as server:
        model = models.OpenAIChat("judge-batch", base_url=server.url)
        batch.submit(judge.render_prompts(cases, RUBRIC), model, cache=cache, max_requests_per_file=10)
        batch.poll(model, cache=cache, interval=0.05)
        first, second, third = (server.batches[b]["output_file_id"] for b in batch.jobs(cache)["batch_id"])
        server.fail_downloads[second] = 2  # the file store fails twice, in the middle of collecting
        with pytest.warns(EvalkitWarning, match="could not collect batch job .*InternalServerError.*the next collect"):
            answers = batch.collect(model, cache=cache)
        jobs = batch.jobs(cache)
        assert jobs["collected_at"].notna().tolist() == [True, False, True]  # the jobs after it were collected too
        assert len(answers) == 20 and len(cache) == 20
        with pytest.warns(EvalkitWarning) as caught:  # a run while the store still fails: the rows say why
            waiting = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05)
        messages = [str(w.message) for w in caught]
        assert len(messages) == 2 and messages[0].startswith(f"could not collect batch job {jobs.job_id[1]} now")
        assert messages[1].startswith("10 of 30 judge calls failed")
        assert waiting["error"].dropna().str.fullmatch(
            r"BatchError: in batch job \w+ \(completed\), not collected yet: run again to collect it").sum() == 10
        assert server.downloads == {first: 1, third: 1}  # nothing read twice
        results = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05)  # resumes where it stopped
        assert results["error"].isna().all() and len(cache) == 30
        assert server.downloads == {first: 1, second: 1, third: 1} and sum(server.created.values()) == 3
        assert batch.jobs(cache)["collected_at"].notna().all()


def test_a_job_whose_files_are_gone_is_collected_with_error_rows_and_resubmitted(tmp_path):
    cases = make_cases(4).assign(output="answer even")
    cache = models.CallCache(tmp_path / "calls.sqlite")
    with BatchServer(script) as server:
        model = models.OpenAIChat("judge-batch", base_url=server.url)
        batch.submit(judge.render_prompts(cases, RUBRIC), model, cache=cache)
        batch.poll(model, cache=cache, interval=0.05)
        (batch_id,) = server.batches
        del server.files[server.batches[batch_id]["output_file_id"]]  # the provider deleted it (404)
        answers = batch.collect(model, cache=cache)
        assert answers["error"].str.fullmatch(r"no result for this request \(batch completed: the provider no longer "
                                              r"has file file-\d+ \(NotFoundError\)\)").all() and len(answers) == 4
        results = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05)
    assert results["error"].isna().all() and sum(server.created.values()) == 2


def test_repeats_go_through_the_batch_api_each_under_its_own_seed(tmp_path):
    """repeats=3: every case's three requests in the jobs (repeat r with seed r - 1 after the first), one row per case
    and repeat as judge.run_judge gives, a re-run reading all of them from the cache, and the live call reading the
    batch's answers under the same keys."""
    cases = make_cases(6)
    cache = models.CallCache(tmp_path / "calls.sqlite")
    with BatchServer(script, batch_delay=0.05) as server:
        model = models.OpenAIChat("judge-batch", base_url=server.url)
        res = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05, repeats=3)
        before = total_requests(server)
        again = batch.run_judge(cases, RUBRIC, model, cache=cache, interval=0.05, repeats=3)
        assert total_requests(server) == before  # nothing sent: every repeat is in the cache
        live = judge.run_judge(cases, RUBRIC, model, cache=cache, repeats=3, progress=False)
        assert total_requests(server) == before
    assert batch.jobs(cache)["n_requests"].sum() == 18  # three requests per case, in the jobs
    assert res["sample_id"].tolist() == list(np.repeat(cases["case_id"], 3))
    assert res["repeat"].tolist() == [1, 2, 3] * 6
    assert res["case_id"].tolist() == [f"{c}_repeat_{r}" for c in cases["case_id"] for r in (1, 2, 3)]
    assert [d["seed"] for d in res.attrs["repeats"]] == [None, 1, 2]
    assert res.attrs["usage"]["n_attempts"] == 18 and again.attrs["usage"]["n_cached"] == 18
    pd.testing.assert_series_equal(res["verdict"], live["verdict"])
    assert (res.loc[res["case_id"].str.startswith("case-00000"), "verdict"] == "PASS").all()
    cache.close()
