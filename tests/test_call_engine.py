"""The call engine part by part (retry policy, unreachable detector, cache writer, table builder) and the wire of
OpenAIChat (aiohttp under evalkit's policies): deadlines that cover the whole request, kept-alive connections, status
errors, proxies,
the cache keys of earlier versions, and answers on disk while other calls stall (kill -9).

Everything runs against the real chat-completions server on 127.0.0.1 (evalkit._testing), no mocks; none of
these tests needs the official client: the base install makes live calls.
"""

import email.utils
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd
import pytest

from evalkit import EvalkitWarning, judge, models
from evalkit._testing import ChatServer, Drop, Fail, Hang, Raw, Trickle
from evalkit._wire import APIConnectionError, APIStatusError, RateLimitError, Reply, checked_reply, retry_after
from evalkit.models import _CacheWriter, _calls_table, _in_threads, _RetryPolicy, _Unreachable
from tests._memory import peak_traced

ROOT = Path(__file__).resolve().parents[1]


# ------------------------------------------------------------------ the retry policy
class Status(Exception):
    """An HTTP status error as another client raises it: the status on the exception, headers on its response."""

    def __init__(self, status, headers=None):
        super().__init__(f"status {status}")
        self.status_code = status
        self.response = type("Response", (), {"headers": headers or {}})()


def test_retry_policy_classifies_backs_off_and_honours_retry_after():
    policy = _RetryPolicy(max_retries=3, backoff=0.5, max_backoff=30.0)
    top = lambda low, high: high  # noqa: E731 - the largest wait the jitter can draw
    for exc in (TimeoutError(), ConnectionRefusedError(), APIConnectionError("x"), models.TransientError(),
                Status(429), Status(503), Status(408), Status(409)):
        assert policy.wait(exc, 1, top) == 0.5, exc
    for exc in (ValueError("no"), models.ReplyError("shape"), TypeError(), Status(400), Status(401), Status(404)):
        assert policy.wait(exc, 1, top) is None, exc
    assert [policy.wait(TimeoutError(), k, top) for k in (1, 2, 3, 4)] == [0.5, 1.0, 2.0, None]  # then gives up
    assert policy.wait(TimeoutError(), 1, lambda low, high: low) == 0.0  # full jitter: from zero
    capped = _RetryPolicy(max_retries=20, backoff=0.5, max_backoff=3.0)
    assert capped.wait(TimeoutError(), 10, top) == 3.0
    # Retry-After: at least what the server asked, never more than max_backoff.
    assert policy.wait(models.TransientError(retry_after=7.0), 1, top) == 7.0
    assert policy.wait(Status(429, {"retry-after": "12"}), 1, top) == 12.0
    assert policy.wait(Status(429, {"retry-after-ms": "2500"}), 1, top) == 2.5
    assert policy.wait(Status(429, {"retry-after": "3600"}), 1, top) == 30.0
    assert policy.wait(Status(429, {"retry-after": "0.1"}), 1, top) == 0.5  # the backoff is longer
    assert policy.wait(Status(429, {"retry-after": "soon"}), 1, top) == 0.5  # unreadable: the backoff
    lean = RateLimitError("x", status_code=429, headers={"retry-after": "4"})
    assert policy.wait(lean, 1, top) == 4.0
    in_five = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=5), usegmt=True)
    assert 3.9 <= retry_after({"retry-after": in_five}) <= 5.0
    assert retry_after({"retry-after": email.utils.format_datetime(datetime(2000, 1, 1, tzinfo=UTC), usegmt=True)}) == 0.0


def test_unreachable_detector_counts_consecutive_misses_only():
    stop = threading.Event()
    detector = _Unreachable(3, stop)
    for exc in (TimeoutError(), APIConnectionError("refused"), None, ConnectionResetError(), Status(500),
                TimeoutError(), TimeoutError()):
        detector.record(exc)  # a reply (None) or an answered error (500) resets the count
    assert not detector.tripped and not stop.is_set()
    detector.record(TimeoutError())
    assert detector.tripped and stop.is_set()
    detector.record(None)
    assert detector.tripped  # once stopped, the run stays stopped


def test_unreachable_detector_is_exact_across_threads():
    stop = threading.Event()
    detector = _Unreachable(8 * 500 + 1, stop)
    threads = [threading.Thread(target=lambda: [detector.record(TimeoutError()) for _ in range(500)]) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not stop.is_set()
    detector.record(TimeoutError())
    assert stop.is_set()


# ------------------------------------------------------------------ the cache writer
def rows_on_disk(path) -> int:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]


def test_cache_writer_flushes_on_its_timer_while_nothing_else_happens(tmp_path):
    cache = models.CallCache(tmp_path / "calls.sqlite")
    writer = _CacheWriter(cache, every=0.2)
    for i in range(3):
        writer.put(models.CallCache.key("m", {}, f"p{i}"), "m", Reply(f"answer {i}"))
    deadline = time.monotonic() + 5
    while rows_on_disk(cache.path) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert rows_on_disk(cache.path) == 3  # stored without close() and without any other call finishing
    writer.put(models.CallCache.key("m", {}, "last"), "m", Reply("last"))
    writer.close()  # flushes what is left at once
    assert rows_on_disk(cache.path) == 4 and cache.get(models.CallCache.key("m", {}, "p1")).text == "answer 1"


def test_cache_writer_flushes_a_full_batch_before_its_timer(tmp_path):
    cache = models.CallCache(tmp_path / "calls.sqlite")
    writer = _CacheWriter(cache, every=60.0, batch=5)
    for i in range(5):
        writer.put(models.CallCache.key("m", {}, f"p{i}"), "m", Reply("x"))
    deadline = time.monotonic() + 5
    while rows_on_disk(cache.path) < 5 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert rows_on_disk(cache.path) == 5
    writer.close()


def test_cache_writer_retries_refused_answers_and_warns_once_about_the_rest(tmp_path):
    path = tmp_path / "calls.sqlite"
    cache = models.CallCache(path)
    cache._db.execute("PRAGMA busy_timeout = 50")  # fail fast while the other connection holds the lock
    other = sqlite3.connect(path, timeout=0)
    other.execute("BEGIN EXCLUSIVE")
    writer = _CacheWriter(cache, every=0.1)
    writer.put(models.CallCache.key("m", {}, "a"), "m", Reply("A"))
    time.sleep(0.5)  # several flushes refused
    other.rollback()  # the lock is released: the next flush stores the answer
    writer.put(models.CallCache.key("m", {}, "b"), "m", Reply("B"))
    writer.close()
    assert rows_on_disk(path) == 2
    other.execute("BEGIN EXCLUSIVE")
    writer = _CacheWriter(cache, every=0.1)
    writer.put(models.CallCache.key("m", {}, "c"), "m", Reply("C"))
    writer.put(models.CallCache.key("m", {}, "d"), "m", Reply("D"))
    with pytest.warns(EvalkitWarning, match=r"could not store 2 answers in the cache .*database is locked"):
        writer.close()
    other.rollback()
    other.close()
    assert rows_on_disk(path) == 2


# ------------------------------------------------------------------ the threads
def test_in_threads_gives_every_result_once_and_stops_cleanly():
    stop = threading.Event()
    seen = set()

    def work(item):
        time.sleep(0.001 * (item % 3))
        seen.add(threading.get_ident())
        return item * item

    out = dict(_in_threads(list(range(500)), work, 16, stop))
    assert out == {i: i * i for i in range(500)} and len(seen) == 16 and stop.is_set()
    assert dict(_in_threads([], work, 8, threading.Event())) == {}

    def fails(item):
        if item == 3:
            raise RuntimeError("a bug in work")
        return item

    with pytest.raises(RuntimeError, match="a bug in work"):
        dict(_in_threads(list(range(10)), fails, 1, threading.Event()))
    # A caller that stops early (Ctrl-C) sets stop: the running items end their waits, the queued ones never start.
    started = []
    stop = threading.Event()

    def slow(item):
        started.append(item)
        if item:
            stop.wait(30)
        return item

    results = _in_threads(list(range(100)), slow, 4, stop)
    assert next(results) == (0, 0)
    begin = time.monotonic()
    results.close()
    assert stop.is_set() and time.monotonic() - begin < 5 and len(started) < 20


# ------------------------------------------------------------------ the table builder
def test_calls_table_one_row_per_prompt_in_order():
    prompts = pd.Series(["x", "y", "x"], index=["c", "a", "b"])
    rows = {"x": {"text": "X", "error": None, "latency_s": 0.2, "cached": False, "attempts": 2, "prompt_tokens": 3,
                  "completion_tokens": 1, "created_at": "t"},
            "y": {"text": None, "error": "ReplyError: no", "latency_s": 0.1, "cached": False, "attempts": 1,
                  "prompt_tokens": None, "completion_tokens": None, "created_at": "t"}}
    table = _calls_table(prompts, rows, model_id="m", params={"temperature": 0}, n_replaced=4, stopped=False)
    assert table.index.tolist() == ["c", "a", "b"] and table.columns.tolist() == models.CALL_COLUMNS
    assert table["text"].tolist()[::2] == ["X", "X"] and pd.isna(table.loc["a", "text"])
    assert table["cached"].tolist() == [False, False, True] and table["attempts"].tolist() == [2, 1, 0]
    assert table.loc["b", "latency_s"] == 0.0  # the repeat cost nothing
    assert str(table["attempts"].dtype) == "Int64" and str(table["text"].dtype) == "string"
    assert table.attrs == {"model": "m", "params": {"temperature": 0}, "n_calls": 3, "n_surrogates_replaced": 4,
                           "stopped": False}
    assert rows["x"]["cached"] is False  # the rows given are not changed


def test_checked_reply_is_the_one_check_of_a_models_return_value():
    assert checked_reply("PASS") == (Reply("PASS"), 0)
    assert checked_reply(Reply("ok\ud800\udfff", 3, 1)) == (Reply("ok\ufffd\ufffd", 3, 1), 2)
    with pytest.raises(TypeError, match="a model must return str or Reply; got dict"):
        checked_reply({"content": "PASS"})


# ------------------------------------------------------------------ the wire
def test_a_server_trickling_its_headers_is_cut_off_at_the_deadline():
    # 5,000 header bytes at one per 10 ms: about 50 s before the body would even begin.
    with ChatServer(lambda prompt, attempt: Trickle("PASS", interval=0.01, headers=True, padding=5000)) as server:
        model = models.OpenAIChat("m", base_url=server.url, timeout=1.0)
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="no complete reply within the 1 s deadline"):
            model("x")
        assert time.monotonic() - start < 1.5
        start = time.monotonic()
        calls = models.call_many(pd.Series(["y"]), model, max_retries=0, progress=False)
        assert time.monotonic() - start < 1.5
    assert calls.loc[0, "error"] == "TimeoutError: no complete reply within the 1 s deadline"


def test_deadline_covers_a_server_that_never_answers_and_a_slow_body():
    script = lambda prompt, attempt: Hang(30) if prompt == "hang" else Trickle("PASS", interval=0.005)  # noqa: E731
    with ChatServer(script) as server:
        model = models.OpenAIChat("m", base_url=server.url, timeout=0.5)
        for prompt in ("hang", "trickle"):
            start = time.monotonic()
            with pytest.raises(TimeoutError):
                model(prompt)
            assert time.monotonic() - start < 0.75, prompt
        fast = models.OpenAIChat("m", base_url=server.url, timeout=30)
        assert fast("trickle").text == "PASS"  # the same body, given the time


def test_connections_are_kept_alive_and_reused_across_threads():
    with ChatServer(lambda prompt, attempt: "PASS", latency=0.01) as server:
        model = models.OpenAIChat("m", base_url=server.url)
        first = models.call_many(pd.Series([f"p{i}" for i in range(200)]), model, concurrency=8, progress=False)
        again = models.call_many(pd.Series([f"q{i}" for i in range(200)]), model, concurrency=8, progress=False)
    assert first["error"].isna().all() and again["error"].isna().all()
    assert server.requests == 400 and server.connections <= 8  # one connection per thread, kept for the next run


def _on_call_loop(coroutine):
    """Run a coroutine on the process's call loop (where call_many runs a model's ``acall``) and wait for it."""
    import asyncio

    from evalkit import _wire

    return asyncio.run_coroutine_threadsafe(coroutine, _wire.call_loop()).result(timeout=60)


def test_the_event_loop_client_sends_and_reads_what_a_call_does():
    """``acall`` (what call_many runs for OpenAIChat) and a call in a thread give the same replies, for prompts escaped
    or not and one larger than a socket buffer; both clients' requests reach the server whole."""
    prompts = ["plain", "ünïcode – ok", "a lone \ud800 surrogate", "x" * 70_000]
    with ChatServer(lambda prompt, attempt: prompt[:20] + f"|{len(prompt)}") as server:
        model = models.OpenAIChat("m", base_url=server.url)
        threaded = [model(prompt) for prompt in prompts]
        looped = [_on_call_loop(model.acall(prompt)) for prompt in prompts]
        table = models.call_many(pd.Series(prompts, dtype=object), model, concurrency=4, progress=False)
    assert looped == threaded and table["text"].tolist() == [checked_reply(r)[0].text for r in threaded]
    assert [int(r.text.rsplit("|", 1)[1]) for r in looped] == [len(p) for p in prompts]


def test_the_event_loop_client_keeps_the_deadline_and_replaces_a_dropped_connection():
    import asyncio

    script = lambda prompt, attempt: (Hang(30) if prompt == "hang" else Drop() if prompt == "second" and attempt == 1  # noqa: E731
                                      else Trickle("PASS", interval=0.005) if prompt == "trickle" else "PASS")
    with ChatServer(script) as server:
        model = models.OpenAIChat("m", base_url=server.url, timeout=0.5)
        for prompt in ("hang", "trickle"):
            start = time.monotonic()
            with pytest.raises(TimeoutError, match="no complete reply within the 0.5 s deadline"):
                _on_call_loop(model.acall(prompt))
            assert time.monotonic() - start < 0.75, prompt
        connections = server.connections
        calls = models.call_many(pd.Series(["first", "second"]), model, concurrency=1, max_retries=0, progress=False)
        assert calls["text"].tolist() == ["PASS", "PASS"]
        assert server.attempts["second"] == 2 and server.connections == connections + 2  # re-sent on a new one
        assert calls["attempts"].tolist() == [1, 2]  # and counted: attempts are the requests the server received
        # a new connection dropped without an answer is a connection error (retried by call_many, not by the client)
        server.attempts.clear()
        model.close()
        time.sleep(0.1)  # the close runs on the loop's thread
        with pytest.raises(APIConnectionError, match="ServerDisconnectedError"):
            _on_call_loop(model.acall("second"))
        # outside call_many, on a loop of the caller's own
        assert asyncio.run(models.OpenAIChat("m", base_url=server.url).acall("plain")).text == "PASS"


def test_call_many_through_a_proxy_keeps_many_calls_in_flight(monkeypatch, no_proxies):
    with ChatServer(lambda prompt, attempt: "via proxy", latency=0.05) as server:
        monkeypatch.setenv("http_proxy", server.url.rsplit("/", 1)[0])  # this server answers the absolute URL too
        model = models.OpenAIChat("m", base_url="http://127.0.0.9:9/v1")  # reached only through the proxy
        calls = models.call_many(pd.Series([f"p{i}" for i in range(40)]), model, concurrency=20, progress=False)
    assert (calls["text"] == "via proxy").all() and server.requests == 40
    assert server.max_in_flight > 4  # many in flight at once, not one at a time


def test_a_server_that_closes_every_connection_is_read_to_the_end():
    body = "a long answer " * 5000  # larger than one read: the rest is read after the connection was handed over
    with ChatServer(lambda prompt, attempt: body, keep_alive=False) as server:
        model = models.OpenAIChat("m", base_url=server.url)
        calls = models.call_many(pd.Series([f"p{i}" for i in range(40)]), model, concurrency=4, progress=False)
    assert (calls["text"] == body).all() and calls["attempts"].eq(1).all()
    assert server.connections == 40


def test_a_connection_the_server_closed_is_replaced_without_a_failed_attempt():
    # The first prompt's connection is kept; the server then drops it when the second request arrives on it.
    script = lambda prompt, attempt: Drop() if prompt == "second" and attempt == 1 else "PASS"  # noqa: E731
    with ChatServer(script) as server:
        model = models.OpenAIChat("m", base_url=server.url)
        assert model("first").text == "PASS"
        assert model("second").text == "PASS"  # re-sent once, on a new connection, within the same call
        assert server.attempts["second"] == 2 and server.connections == 2
        # A new connection dropped without an answer is a connection error (retried by call_many, not here).
        server.attempts.clear()
        model.close()
        with pytest.raises(APIConnectionError, match="ServerDisconnectedError"):
            model("second")


def test_status_errors_carry_their_names_headers_and_no_key(monkeypatch):
    key = "sk-lean-secret-0123456789"
    monkeypatch.setenv("EVALKIT_LEAN_KEY", key)
    script = {"limited": Fail(429, "slow down", retry_after="0.3"), "broken": Fail(503, "overloaded"),
              "key": Fail(401, f"Incorrect API key provided: {key}"), "plain": Raw("not json", status=404,
                                                                                content_type="text/plain")}
    with ChatServer(lambda prompt, attempt: script[prompt]) as server:
        model = models.OpenAIChat("m", base_url=server.url, api_key_env="EVALKIT_LEAN_KEY")
        with pytest.raises(RateLimitError, match="Error code: 429 - slow down") as limited:
            model("limited")
        assert limited.value.status_code == 429 and limited.value.headers["Retry-After"] == "0.3"
        with pytest.raises(APIStatusError, match="Error code: 503 - overloaded") as broken:
            model("broken")
        assert type(broken.value).__name__ == "InternalServerError"
        with pytest.raises(APIStatusError) as refused:
            model("key")
        assert type(refused.value).__name__ == "AuthenticationError" and key not in str(refused.value)
        assert "[redacted]" in str(refused.value)
        with pytest.raises(APIStatusError, match="Error code: 404 - not json"):
            model("plain")
        calls = models.call_many(pd.Series(list(script)), model, max_retries=1, backoff=0.001, max_backoff=5.0,
                                 progress=False)
    assert calls["error"].str.split(":").str[0].tolist() == ["RateLimitError", "InternalServerError",
                                                             "AuthenticationError", "NotFoundError"]
    assert calls["attempts"].tolist() == [2, 2, 1, 1] and not calls["error"].str.contains(key).any()


def test_an_unreachable_server_is_a_connection_error_and_the_run_stops():
    model = models.OpenAIChat("m", base_url="http://127.0.0.1:9/v1", timeout=2.0)  # port 9: nothing listens
    with pytest.raises(APIConnectionError, match="Connection error"):
        model("x")
    start = time.monotonic()
    calls = models.call_many(pd.Series([f"p{i}" for i in range(50)]), model, concurrency=4, max_retries=0,
                             max_unreachable=5, progress=False)
    assert time.monotonic() - start < 5 and calls.attrs["stopped"]
    assert calls["error"].str.startswith("not attempted: server unreachable").sum() >= 50 - 4 - 5


def test_base_url_from_the_environment_and_a_proxy_from_the_environment(monkeypatch):
    with ChatServer(lambda prompt, attempt: "via proxy") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url)
        monkeypatch.setenv("EVALKIT_ANY_KEY", "sk-any-0123456789")
        assert models.OpenAIChat("m", api_key_env="EVALKIT_ANY_KEY")("x").text == "via proxy"
        # An HTTP proxy gets the absolute URL; this server answers any path that ends like the API's.
        monkeypatch.setenv("http_proxy", server.url.rsplit("/", 1)[0])
        monkeypatch.setenv("no_proxy", "")
        before = server.requests
        unreachable = "http://127.0.0.9:9/v1"  # reached only through the proxy
        assert models.OpenAIChat("m", base_url=unreachable)("y").text == "via proxy"
        assert server.requests == before + 1
        monkeypatch.setenv("no_proxy", "127.0.0.9")
        with pytest.raises(APIConnectionError):
            models.OpenAIChat("m", base_url=unreachable, timeout=2.0)("z")
    with pytest.raises(ValueError, match="`base_url` must be an http:// or https:// URL; got 'ftp://x/v1'"):
        models.OpenAIChat("m", base_url="ftp://x/v1")


def test_live_calls_need_no_official_client():
    code = ("import sys\nfrom evalkit import models\nfrom evalkit._testing import ChatServer\n"
            "with ChatServer(lambda p, a: 'PASS') as s:\n"
            "    print(models.OpenAIChat('m', base_url=s.url)('hi').text, 'openai' in sys.modules, 'httpx' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout.split()
    assert out == ["PASS", "False", "False"]


def test_the_cache_is_read_in_one_query_per_500_prompts_with_the_keys_it_always_had(tmp_path):
    """call_many looks its prompts up many at a time: the keys are CallCache.key's, byte for byte, and the answers
    found are those get() finds one key at a time."""
    from evalkit.models import CallCache

    params = {"temperature": 0.0, "max_tokens": None, "system": "Réponds.", "extra": {"b": [1, 2], "a": None}}
    prompts = ["", "plain", 'quotes " and \\ back', "ünïcode – and\nnew lines", "\u2028 separator"] + [f"p{i}" for i in range(1200)]
    keys = CallCache._keys("judge-é", params, prompts)
    assert keys == [CallCache.key("judge-é", params, prompt) for prompt in prompts]
    cache = CallCache(tmp_path / "calls.sqlite")
    cache.put_many([(key, "judge-é", Reply(f"answer {i}", i, 1)) for i, key in enumerate(keys) if i % 3 == 0])
    found = cache._get_many(keys + ["absent"])
    assert found == {key: cache.get(key) for key in keys if cache.get(key) is not None} and len(found) == 402
    calls = models.call_many(pd.Series(prompts[:30]), lambda prompt: "new", model_id="judge-é", params=params,
                             cache=cache, progress=False)
    assert calls["cached"].tolist() == [i % 3 == 0 for i in range(30)]


def test_answers_cached_by_earlier_versions_stay_cached(tmp_path):
    """The cache keys are those evalkit 0.1.0 wrote through the official client (tests/data/cache_0.1.0.json)."""
    fixture = json.loads((ROOT / "tests" / "data" / "cache_0.1.0.json").read_text(encoding="utf-8"))
    path = tmp_path / "calls.sqlite"
    with sqlite3.connect(path) as db:  # the file as that version left it (its schema, its rows)
        db.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, model TEXT, text TEXT, prompt_tokens INTEGER,"
                   " completion_tokens INTEGER, created_at TEXT)")
        db.executemany("INSERT INTO calls VALUES (?, ?, ?, ?, ?, '2025-01-01T00:00:00.000+00:00')",
                       [(r["key"], r["model"], r["text"], r["prompt_tokens"], r["completion_tokens"])
                        for r in fixture["rows"]])
    cache = models.CallCache(path)
    cases = pd.DataFrame(fixture["cases"])
    with ChatServer(lambda prompt, attempt: "a new answer") as server:
        for kwargs in fixture["runs"]:
            model = models.OpenAIChat("judge-fixture", base_url=server.url, **kwargs)
            res = judge.run_judge(cases, judge.UNSUPPORTED_CLAIMS, model, cache=cache, progress=False)
            assert res["cached"].all() and res["verdict"].astype(str).tolist() == ["PASS", "FAIL", "FAIL"]
        model = models.OpenAIChat("judge-fixture", base_url=server.url)
        for run in fixture["call_many"]:
            calls = models.call_many(pd.Series(run["prompts"]), model, params=run["params"], cache=cache,
                                     progress=False)
            assert calls["cached"].all() and calls["text"].tolist() == ["FAIL\nno"] * len(run["prompts"])
    assert server.requests == 0 and len(cache) == len(fixture["rows"])


# ------------------------------------------------------------------ kill -9 while calls stall
CHILD = """
import sys
import pandas as pd
from evalkit import models
model = models.OpenAIChat("judge-kill", base_url=sys.argv[2], timeout=600)
models.call_many(pd.Series([f"prompt {i}" for i in range(100)]), model, cache=models.CallCache(sys.argv[1]),
                 concurrency=100, progress=False)
print("finished")
"""


def test_answers_received_are_on_disk_while_other_calls_stall(tmp_path):
    """40 answers in, 60 calls stalled: a kill -9 two seconds later finds the 40 in the cache."""
    path = tmp_path / "calls.sqlite"
    script = lambda prompt, attempt: Hang(600) if int(prompt.split()[1]) >= 40 else f"answer {prompt}"  # noqa: E731
    with ChatServer(script) as server:
        child = subprocess.Popen([sys.executable, "-c", CHILD, str(path), server.url], cwd=ROOT,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)}, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 60
        while (server.requests < 100 or server.in_flight > 60) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.requests == 100 and server.in_flight == 60, "the child did not send its calls"
        time.sleep(2.0)  # the 40 answers arrived; 60 calls hang
        assert child.poll() is None, child.communicate()
        child.send_signal(signal.SIGKILL)
        child.communicate()
    assert child.returncode == -signal.SIGKILL
    cache = models.CallCache(path)
    assert len(cache) == 40
    params = {"temperature": 0.0, "max_tokens": None, "system": None}
    assert cache.get(models.CallCache.key("judge-kill", params, "prompt 7")).text == "answer prompt 7"


FORKED: dict = {}


def call_in_child(prompt: str, out) -> None:
    out.put(FORKED["model"](prompt).text)


def test_a_forked_process_opens_its_own_connections():
    import multiprocessing

    if "fork" not in multiprocessing.get_all_start_methods():
        pytest.skip("no fork on this platform")
    context = multiprocessing.get_context("fork")
    with ChatServer(lambda prompt, attempt: f"answer {prompt}") as server:
        FORKED["model"] = model = models.OpenAIChat("m", base_url=server.url)
        assert model("parent").text == "answer parent"  # its connection is kept, then inherited by the children
        out = context.Queue()
        children = [context.Process(target=call_in_child, args=(f"child {i}", out)) for i in range(4)]
        for child in children:
            child.start()
        texts = sorted(out.get(timeout=30) for _ in children)
        for child in children:
            child.join(30)
        assert texts == [f"answer child {i}" for i in range(4)]
        assert model("parent again").text == "answer parent again"  # the parent's connection is intact
        assert server.connections == 5  # one per process
    FORKED.clear()


@pytest.fixture
def certificate(tmp_path):
    """A self-signed certificate for 127.0.0.1, made by the openssl command line."""
    import shutil

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command line to make a test certificate")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(tmp_path / "key.pem"),
                    "-out", str(tmp_path / "cert.pem"), "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    return tmp_path / "cert.pem", tmp_path / "key.pem"


def test_https_keeps_its_connections_and_a_stalled_handshake_meets_the_deadline(certificate, monkeypatch):
    import socket

    server = _tls_answer_server(certificate)
    stalled = socket.create_server(("127.0.0.1", 0))  # accepts, then sends a handshake byte every half second

    def trickle():
        conn, _ = stalled.accept()
        try:
            for _ in range(40):
                conn.send(b"\x16")
                time.sleep(0.5)
        except OSError:
            pass

    threading.Thread(target=trickle, daemon=True).start()
    untrusted = models.OpenAIChat("m", base_url=f"https://127.0.0.1:{server.server_address[1]}/v1")
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))  # trusted the way a private CA is
    try:
        with pytest.raises(APIConnectionError, match="certificate verify failed"):  # TLS is verified
            untrusted("x")
        model = models.OpenAIChat("m", base_url=f"https://127.0.0.1:{server.server_address[1]}/v1")
        assert [model(p).text for p in ("a", "b", "c")] == ["PASS over TLS"] * 3
        assert server.connections == 1  # one connection (one handshake), kept alive
        slow = models.OpenAIChat("m", base_url=f"https://127.0.0.1:{stalled.getsockname()[1]}/v1", timeout=1.0)
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="within the 1 s deadline"):
            slow("x")
        assert time.monotonic() - start < 1.5
    finally:
        server.shutdown()
        stalled.close()


# ------------------------------------------------------------------ untrusted networks: keys, proxies, reply sizes
class Echo(threading.Thread):
    """A chat-completions server on 127.0.0.1 that echoes the Authorization header it got, as a careless or hostile
    server would: in a 401 message (escaped, as a client's error shows a header), in a 500 body, or as the answer."""

    def __init__(self):
        import http.server

        seen = self.seen = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                prompt = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["messages"][-1]["content"]
                auth = self.headers.get("Authorization", "")
                seen.append(auth)
                status, body = {
                    "401": (401, {"error": {"message": f"Invalid header value {auth.encode()!r}: {auth}"}}),
                    "500": (500, f"internal error for {auth}"),
                }.get(prompt, (200, {"choices": [{"message": {"content": f"you sent {auth}"}}]}))
                data = (json.dumps(body) if isinstance(body, dict) else body).encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        super().__init__(target=self.server.serve_forever, daemon=True)

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()


def _encoded(secret: str) -> set[str]:
    """Every form of a secret a leak would show (the test's own list: as is, escaped, quoted, base64, hex)."""
    import base64
    from urllib.parse import quote

    raw = secret.encode()
    return {secret, repr(secret)[1:-1], json.dumps(secret)[1:-1], repr(raw)[2:-1], quote(secret, safe=""),
            base64.b64encode(raw).decode(), base64.b64encode(raw).decode().rstrip("="), raw.hex()}


def _leaks(secret: str, *outputs: str) -> list[str]:
    return [form for form in _encoded(secret) for text in outputs if form and form in text]


# Keys as they reach the environment: pasted from a file (a newline, CRLF), with spaces around them: sent stripped.
STRIPPED_KEYS = ["sk-live-{}\n", "sk-live-{}\r\n", "  sk-live-{}  ", "\tsk-live-{}\n\n"]
# Keys no header can carry: refused at once, the key not shown.
REFUSED_KEYS = ["sk-live-{} extra", "sk-live-\x01{}", "sk-live-{}\x7f", "sk-live-é{}", "sk-\nlive-{}", "sk-live-{}\u2028x"]


@pytest.mark.parametrize("form", REFUSED_KEYS, ids=[repr(f) for f in REFUSED_KEYS])
def test_a_key_no_header_can_carry_is_refused_in_one_line_without_it(form, monkeypatch):
    secret = "0123456789abcdefXYZ"
    monkeypatch.setenv("EVALKIT_BAD_KEY", form.format(secret))
    with pytest.raises(ValueError) as refused:
        models.OpenAIChat("m", base_url="http://127.0.0.1:9/v1", api_key_env="EVALKIT_BAD_KEY")
    message = str(refused.value)
    assert message.startswith("the environment variable EVALKIT_BAD_KEY holds an API key with") and "\n" not in message
    assert "position" in message and not _leaks(secret, message, repr(refused.value))


@pytest.mark.parametrize("form", STRIPPED_KEYS, ids=[repr(f) for f in STRIPPED_KEYS])
def test_no_form_of_the_key_reaches_any_output(form, monkeypatch, tmp_path):
    """Every way a key reaches text: a server echoing it in a 401 (escaped, as a client's error shows a header), in a 500
    body, as the answer; then the exception, the error column, results.jsonl/.csv/.parquet and the printed tables."""
    import traceback

    secret = "sk-live-0123456789abcdefXYZ"
    monkeypatch.setenv("EVALKIT_PASTED_KEY", form.format("0123456789abcdefXYZ"))
    cases = pd.DataFrame({"case_id": ["a", "b", "c"], "input": ["401", "500", "echo"], "output": ["x", "y", "z"]})
    rubric = judge.Rubric("echo", "Echo.", "{input}")
    with Echo() as server:
        model = models.OpenAIChat("m", base_url=server.url, api_key_env="EVALKIT_PASTED_KEY")
        outputs = [repr(model), str(vars(model).get("params"))]
        for prompt in ("401", "500"):
            with pytest.raises(APIStatusError) as failed:
                model(prompt)
            outputs += [str(failed.value), repr(failed.value), "".join(traceback.format_exception(failed.value))]
        echoed = model("echo")
        with pytest.warns(EvalkitWarning, match="judge calls failed"):
            results = judge.run_judge(cases, rubric, model, progress=False, max_retries=0)
        calls = models.call_many(pd.Series(["401", "500", "echo"]), model, max_retries=0, progress=False)
    assert server.seen[0] == f"Bearer {secret}"  # sent stripped, and the calls went through
    assert echoed.text == "you sent Bearer [redacted]"
    for suffix in (".jsonl", ".parquet"):
        outputs.append(judge.save_results(results, tmp_path / f"results{suffix}").read_bytes().decode("latin-1"))
    results.to_csv(tmp_path / "results.csv")
    outputs += [(tmp_path / "results.csv").read_text(), repr(results), results.to_html(), repr(calls), calls.to_html(),
                str(results.attrs), str(calls.attrs), echoed.text]
    assert results["error"].notna().sum() == 2 and results["raw"].str.contains("[redacted]", regex=False).any()
    assert not _leaks(secret, *outputs), _leaks(secret, *outputs)


@pytest.fixture
def no_proxies(monkeypatch):
    """No proxy variable from the machine's environment (lower case wins over upper case in it); the test's own
    ``monkeypatch`` is this one, so what the test sets is undone with it."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


def test_a_proxys_credentials_leave_no_trace_in_errors(monkeypatch, no_proxies):
    monkeypatch.setenv("HTTPS_PROXY", "https://ann:s3cret-proxy-pass@127.0.0.1:9")  # nothing listens there
    monkeypatch.setenv("NO_PROXY", "")
    model = models.OpenAIChat("m", base_url="https://127.0.0.1:1/v1", timeout=2.0)
    with pytest.raises(APIConnectionError, match=r"through the proxy https://127.0.0.1:9 \(") as failed:
        model("x")
    calls = models.call_many(pd.Series(["y"]), model, max_retries=0, progress=False)
    outputs = [str(failed.value), repr(failed.value), repr(model), str(calls["error"].iloc[0])]
    for secret in ("s3cret-proxy-pass", "ann:s3cret-proxy-pass"):
        assert not _leaks(secret, *outputs)
    assert model.redact("Basic YW5uOnMzY3JldC1wcm94eS1wYXNz and s3cret-proxy-pass") == "Basic [redacted] and [redacted]"


class Tap(threading.Thread):
    """A TCP relay in front of a proxy that keeps every byte the client sends through it: what the network carries."""

    def __init__(self, port: int):
        import socket

        super().__init__(daemon=True)
        self.sent = bytearray()
        self._target = port
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]

    def run(self):
        import socket

        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(("127.0.0.1", self._target))
            threading.Thread(target=_pump, args=(client, upstream, self.sent), daemon=True).start()
            threading.Thread(target=_pump, args=(upstream, client, None), daemon=True).start()

    def close(self):
        self._listener.close()


def _pump(source, sink, keep):
    try:
        while data := source.recv(65536):
            if keep is not None:
                keep += data
            sink.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, sink):
            try:
                sock.shutdown(2)
            except OSError:
                pass


class _AcceptLoop(threading.Thread):
    """A listening socket on 127.0.0.1 whose connections are each handled by ``handle(client)`` on a thread of its own;
    closing ``_listener`` ends the loop."""

    def __init__(self):
        import socket

        super().__init__(daemon=True)
        self._listener = socket.create_server(("127.0.0.1", 0))

    def run(self):
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            threading.Thread(target=self.handle, args=(client,), daemon=True).start()


class LoopbackProxy(_AcceptLoop):
    """An HTTP proxy on 127.0.0.1, spoken to over TLS when given a server context: CONNECT opens a tunnel, any other
    request (an absolute URL) is forwarded to its host. ``requests`` keeps each request line and its headers."""

    def __init__(self, context=None):
        super().__init__()
        self.context, self.requests = context, []
        self.port = self._listener.getsockname()[1]

    def handle(self, client):
        import socket
        from urllib.parse import urlsplit

        try:
            if self.context is not None:
                client = self.context.wrap_socket(client, server_side=True)
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = client.recv(65536)
                if not chunk:
                    return
                head += chunk
            head, rest = head.split(b"\r\n\r\n", 1)
            line, *fields = head.decode("latin-1").split("\r\n")
            headers = dict(f.split(": ", 1) for f in fields)
            self.requests.append((line, headers))
            method, target, _ = line.split(" ")
            if method == "CONNECT":
                host, port = target.rsplit(":", 1)
                upstream = socket.create_connection((host, int(port)))
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
            else:
                parts = urlsplit(target)
                upstream = socket.create_connection((parts.hostname, parts.port))
                upstream.sendall(head + b"\r\n\r\n" + rest)
            threading.Thread(target=_pump, args=(upstream, client, None), daemon=True).start()
            _pump(client, upstream, None)
        except (OSError, ValueError):
            client.close()

    def close(self):
        self._listener.close()


def _tls_answer_server(certificate):
    """An HTTPS chat-completions server on 127.0.0.1 answering "PASS over TLS"."""
    import http.server
    import ssl

    class Answer(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self):
            self.rfile.read(int(self.headers["Content-Length"]))
            body = json.dumps({"choices": [{"message": {"content": "PASS over TLS"}}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    class Counted(http.server.ThreadingHTTPServer):
        connections = 0

        def process_request(self, request, client_address):
            self.connections += 1
            super().process_request(request, client_address)

    server = Counted(("127.0.0.1", 0), Answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_an_https_proxy_is_spoken_to_over_tls(certificate, monkeypatch, no_proxies):
    """HTTPS_PROXY=https://user:secret@...: TLS with the proxy for both kinds of server, so neither the proxy's
    credentials nor (to an http:// server) the key cross the network in clear; a tunnel to an https:// server is TLS
    inside TLS, kept alive across calls."""
    import base64
    import ssl

    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    proxy = LoopbackProxy(context)
    proxy.start()
    tap = Tap(proxy.port)
    tap.start()
    target = _tls_answer_server(certificate)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    key, password = "sk-proxied-0123456789abcdef", "pr0xy-secret-word"
    monkeypatch.setenv("EVALKIT_PROXIED_KEY", key)
    monkeypatch.setenv("HTTPS_PROXY", f"https://ann:{password}@127.0.0.1:{tap.port}")
    monkeypatch.setenv("HTTP_PROXY", f"https://ann:{password}@127.0.0.1:{tap.port}")
    monkeypatch.setenv("NO_PROXY", "")
    try:
        with ChatServer(lambda prompt, attempt: "via the proxy") as plain:
            plain_url = plain.url
            model = models.OpenAIChat("m", base_url=plain_url, api_key_env="EVALKIT_PROXIED_KEY")
            assert model("a").text == "via the proxy" and plain.requests == 1
        secure = models.OpenAIChat("m", base_url=f"https://127.0.0.1:{target.server_address[1]}/v1",
                                   api_key_env="EVALKIT_PROXIED_KEY")
        assert [secure(p).text for p in ("b", "c", "d")] == ["PASS over TLS"] * 3
    finally:
        target.shutdown()
        proxy.close()
        tap.close()
    token = base64.b64encode(f"ann:{password}".encode()).decode()
    lines = [line for line, _ in proxy.requests]
    assert lines[0].startswith(f"POST {plain_url}/chat/completions")
    assert lines[1].startswith(f"CONNECT 127.0.0.1:{target.server_address[1]} HTTP/1.")
    assert len(lines) == 2  # one tunnel for the three calls: kept alive
    assert all(headers["Proxy-Authorization"] == f"Basic {token}" for _, headers in proxy.requests)
    wire = bytes(tap.sent)
    assert wire and not [form for form in (token, password, key, "Proxy-Authorization", "Bearer")
                         if form.encode() in wire]


@pytest.mark.parametrize(("variables", "url", "expected"), [
    ({"HTTPS_PROXY": "http://p:3128"}, "https://api.example.com/v1", "http://p:3128"),
    ({"HTTPS_PROXY": "http://p:3128"}, "http://api.example.com/v1", None),
    ({"ALL_PROXY": "http://all:8888"}, "http://api.example.com/v1", "http://all:8888"),
    ({"ALL_PROXY": "http://all:8888", "HTTPS_PROXY": "http://p:3128"}, "https://h/v1", "http://p:3128"),
    ({"HTTP_PROXY": "proxyhost"}, "http://api.example.com/v1", "http://proxyhost:80"),
    ({"HTTPS_PROXY": "https://proxyhost"}, "https://api.example.com/v1", "https://proxyhost:443"),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "*"}, "http://h/v1", None),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "127.0.0.1:8000"}, "http://127.0.0.1:8000/v1", None),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "127.0.0.1:8000"}, "http://127.0.0.1:8001/v1", "http://p:1"),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "http://api.example.com/v1", None),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "http://example.com/v1", None),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "example.com"}, "http://notexample.com/v1", "http://p:1"),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": ".example.com"}, "http://example.com/v1", "http://p:1"),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": ".example.com"}, "http://a.example.com/v1", None),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "localhost, 10.1.2.3"}, "http://10.1.2.3/v1", None),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "::1"}, "http://[::1]:8000/v1", None),
    ({"HTTP_PROXY": "http://p:1", "NO_PROXY": "http://h"}, "http://h/v1", None),
    ({"HTTP_PROXY": "http://p:1", "no_proxy": "h.example"}, "http://h.example:9/v1", None),
])
def test_proxies_are_chosen_as_httpx_chooses_them(variables, url, expected, monkeypatch, no_proxies):
    from urllib.parse import urlsplit

    from evalkit._wire import proxy_for

    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    parts = urlsplit(url)
    found = proxy_for(parts.scheme, parts.hostname, parts.port or {"http": 80, "https": 443}[parts.scheme])
    assert (None if found is None else str(found)) == expected
    httpx = pytest.importorskip("httpx")  # the official client's transport, as the reference
    from httpx._utils import URLPattern, get_environment_proxies

    mounts = sorted((URLPattern(pattern), proxy) for pattern, proxy in get_environment_proxies().items())
    chosen = next((proxy for pattern, proxy in mounts if pattern.matches(httpx.URL(url))), None)
    assert (chosen is None) == (expected is None)
    if chosen is not None:
        reference = httpx.URL(chosen)
        assert (reference.scheme, reference.host) == (found.scheme, found.host)
        assert (reference.port or {"http": 80, "https": 443}[reference.scheme]) == found.port


def test_no_proxy_ranges_socks_and_a_host_port_end_to_end(monkeypatch, no_proxies):
    from evalkit._wire import proxy_for

    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")  # nothing listens: a call through it would fail
    monkeypatch.setenv("NO_PROXY", "10.0.0.0/8,fd00::/8")
    # a CIDR range bypasses every address in it (httpx reads it as the network address alone)
    assert proxy_for("http", "10.20.30.40", 80) is None and proxy_for("http", "fd00::5", 80) is None
    assert str(proxy_for("http", "11.0.0.1", 80)) == "http://127.0.0.1:9"
    with ChatServer(lambda prompt, attempt: "direct") as server:
        monkeypatch.setenv("NO_PROXY", f"127.0.0.1:{server.url.split(':')[2].split('/')[0]}")
        assert models.OpenAIChat("m", base_url=server.url)("x").text == "direct"
    monkeypatch.setenv("ALL_PROXY", "socks5://u:pw@127.0.0.1:1080")
    monkeypatch.delenv("HTTP_PROXY")
    monkeypatch.setenv("NO_PROXY", "")
    with pytest.raises(ValueError, match=r"the proxy for http:// URLs in the environment is socks5://127.0.0.1:1080: "
                                         r"evalkit's client speaks to http:// and https:// proxies only") as refused:
        models.OpenAIChat("m", base_url="http://127.0.0.1:1/v1")
    assert "pw" not in str(refused.value)


class BodyServer(_AcceptLoop):
    """A server on 127.0.0.1 whose 200 reply is ``declared`` (a Content-Length of 500 MB, then zeros as fast as the
    client reads), ``endless`` (chunks of 64 KiB, forever) or ``sized:<n>`` (a chat completion of n bytes)."""

    def __init__(self, kind: str):
        super().__init__()
        self.kind, self.sent = kind, 0
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"

    def handle(self, client):
        try:
            head = b""
            while b"\r\n\r\n" not in head:
                head += client.recv(65536)
            length = int(next(line.split(b":")[1] for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")))
            body = head.split(b"\r\n\r\n", 1)[1]
            while len(body) < length:
                body += client.recv(65536)
            if self.kind.startswith("sized:"):
                padding = int(self.kind[6:]) - len(json.dumps({"choices": [{"message": {"content": ""}}]}))
                data = json.dumps({"choices": [{"message": {"content": "x" * padding}}]}).encode()
                client.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
                return
            chunk = bytes(1 << 16)
            if self.kind == "declared":
                client.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 500000000\r\n\r\n")
                frame = chunk
            else:
                client.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
                frame = b"10000\r\n" + chunk + b"\r\n"
            while True:
                client.sendall(frame)
                self.sent += len(chunk)
        except OSError:
            pass
        finally:
            client.close()

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self._listener.close()


@pytest.mark.parametrize("kind", ["declared", "endless"])
def test_a_huge_or_endless_reply_is_refused_within_the_limit(kind):
    limit = 1 << 20
    with BodyServer(kind) as server:
        model = models.OpenAIChat("m", base_url=server.url, timeout=30, max_reply_bytes=limit)
        start = time.monotonic()
        refused, peak = peak_traced(lambda: model("x"))
        elapsed = time.monotonic() - start
        calls = models.call_many(pd.Series(["y"]), model, progress=False)
    assert isinstance(refused, models.ReplyError), refused
    assert str(refused).startswith(f"the reply from {server.url}") and "max_reply_bytes limit of 1,048,576" in str(refused)
    assert elapsed < 5 and peak < limit + (1 << 20)
    assert calls["attempts"].iloc[0] == 1 and calls["error"].iloc[0].startswith("ReplyTooLarge: the reply from")
    if kind == "declared":
        assert "declares 500,000,000 bytes" in str(refused) and server.sent < 64 * limit  # it was not read


def test_a_reply_at_the_limit_is_read_and_one_byte_more_is_not():
    for size, ok in ((4096, True), (4097, False)):
        with BodyServer(f"sized:{size}") as server:
            model = models.OpenAIChat("m", base_url=server.url, max_reply_bytes=4096)
            if ok:
                assert len(model("x").text) == size - len(json.dumps({"choices": [{"message": {"content": ""}}]}))
            else:
                with pytest.raises(models.ReplyError, match="declares 4,097 bytes, more than the max_reply_bytes"):
                    model("x")
    with pytest.raises(TypeError, match="`max_reply_bytes` must be an integer"):
        models.OpenAIChat("m", base_url="http://127.0.0.1:9/v1", max_reply_bytes=1.5)


def test_redaction_covers_every_encoded_form(monkeypatch, no_proxies):
    monkeypatch.setenv("EVALKIT_FORMS_KEY", "sk-forms-0123456789\n")
    monkeypatch.setenv("HTTPS_PROXY", "https://ann:p@ss word@127.0.0.1:9")
    model = models.OpenAIChat("m", base_url="https://127.0.0.1:1/v1", api_key_env="EVALKIT_FORMS_KEY")
    for secret in ("sk-forms-0123456789\n", "sk-forms-0123456789", "ann:p@ss word", "p@ss word"):
        for form in sorted(_encoded(secret) - {secret.encode().hex()}):  # hex: not a form a message takes
            text = f"before {form} after"
            assert form not in model.redact(text) and "[redacted]" in model.redact(text), (secret, form)
    assert model.redact("nothing secret here") == "nothing secret here"
