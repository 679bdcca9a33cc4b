"""The call engine part by part (retry policy, unreachable detector, cache writer, table builder) and the lean
HTTP path of OpenAIChat: deadlines that cover the whole request, kept-alive connections, status errors, proxies,
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
from evalkit._chat import APIConnectionError, APIStatusError, RateLimitError, Reply, checked_reply, retry_after
from evalkit._testing import ChatServer, Drop, Fail, Hang, Raw, Trickle
from evalkit.models import _CacheWriter, _calls_table, _in_threads, _RetryPolicy, _Unreachable

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


# ------------------------------------------------------------------ the lean HTTP path
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


def test_a_request_goes_out_in_one_write(monkeypatch):
    """Request line, headers and body leave in one socket write (http.client alone writes the body separately),
    and the server reads the whole request: the prompt, escaped or not, comes back as sent."""
    from evalkit import _chat

    writes = []
    original = _chat._Connection.send
    monkeypatch.setattr(_chat._Connection, "send", lambda self, data: (writes.append(bytes(data)), original(self, data)))
    prompts = ["plain", "ünïcode – ok", "a lone \ud800 surrogate", "x" * 70_000]
    with ChatServer(lambda prompt, attempt: prompt[:20]) as server:
        model = models.OpenAIChat("m", base_url=server.url)
        texts = [model(prompt).text for prompt in prompts]
    assert texts == [p[:20] for p in prompts]
    assert len(writes) == len(prompts)
    for data in writes:
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.startswith(b"POST ") and int(dict(line.split(b": ", 1) for line in head.split(b"\r\n")[1:])
                                                  [b"Content-Length"]) == len(body) > 0


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
        with pytest.raises(APIConnectionError, match="RemoteDisconnected"):
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
    import http.server
    import socket
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

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answer)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*certificate)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
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
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))  # trusted the way a private CA is
    try:
        model = models.OpenAIChat("m", base_url=f"https://127.0.0.1:{server.server_address[1]}/v1")
        assert [model(p).text for p in ("a", "b", "c")] == ["PASS over TLS"] * 3
        assert len(model._pool._idle) == 1  # one connection, kept alive
        slow = models.OpenAIChat("m", base_url=f"https://127.0.0.1:{stalled.getsockname()[1]}/v1", timeout=1.0)
        start = time.monotonic()
        with pytest.raises(TimeoutError, match="within the 1 s deadline"):
            slow("x")
        assert time.monotonic() - start < 1.5
    finally:
        server.shutdown()
        stalled.close()
