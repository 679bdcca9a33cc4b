"""The judge's wire (aiohttp under evalkit's policies) against loopback servers that behave as real servers, proxies
and load balancers do: every reply lands on its own case, at concurrency, or the call fails with an error that names
what the server sent; interim replies, header forms, encodings, idle, half-closed and limited connections,
truncation; base_url's query; idle expiry; Ctrl-C; finish_reason; attempts counted as the server counts requests;
seed, logprobs and replace(); the cache keeping finish_reason and logprobs."""

import asyncio
import signal
import threading
import time

import pandas as pd
import pytest

from evalkit import _wire, judge, models
from evalkit._testing import Answer, ChatServer, Drop, Fail, Hang
from tests._rawserver import RawServer

#: Forms aiohttp reads (the reply reaches its case) and forms it refuses, with what the error says. aiohttp 3.14 reads
#: interim 100 and 103 replies (skipped, as HTTP requires), a CRLF after a body, 150 header fields and a 70 KiB one
#: (evalkit raises its limits to 1,024 fields and 128 KiB), a head whose lines end in a bare LF (its parser is lenient
#: there), gzip, UTF-16 with its charset declared, chunked bodies with trailers, and a connection closed after a
#: reply, announced or not, or half-closed: such a connection is never reused. It refuses ``Content-Length: 103, 103``
#: (RFC 9110 lets a client accept a list of identical values; aiohttp's parser does not), a header field past the
#: 128 KiB evalkit allows, and a body that is not the gzip it says it is; evalkit refuses a charset it has no
#: decoder for. A refused reply is a ReplyError naming what was wrong (not retried, not an unreachable server), and
#: its connection is closed: nothing of it reaches another case. A truncated body is a broken connection,
#: retried, and the retry gets the case's answer.
READ = ["plain", "continue", "early-hints", "crlf-after", "idle-408", "many-headers", "huge-header", "bare-lf", "gzip",
        "unknown-encoding", "utf-16", "chunked", "close", "close-unannounced", "half-close", "truncated"]
REFUSED = {
    "length-twice": "ReplyError: the reply from {url} is not valid HTTP/1.1 (ClientResponseError: 400, Invalid "
                    "character in Content-Length",
    "false-gzip": "ReplyError: the reply from {url} could not be decoded (ClientPayloadError: 400, message: Can not "
                  "decode content-encoding: gzip)",
    "bad-charset": "ReplyError: the server's reply declares the charset 'klingon', which has no decoder here",
    "giant-header": "ReplyError: the reply from {url} is not valid HTTP/1.1 (ClientResponseError: 400, Got more than "
                    "131072 bytes when reading",
}


def fast(**kwargs):
    return {"backoff": 0.001, "max_backoff": 0.01, "progress": False, **kwargs}


@pytest.mark.parametrize("per_connection", [0, 3], ids=["keep-alive", "three-requests-a-connection"])
def test_every_reply_lands_on_its_own_case_at_concurrency(per_connection):
    forms = READ + list(REFUSED)
    prompts = pd.Series({f"c{i}": f"c{i} {forms[i % len(forms)]}" for i in range(8 * len(forms))})
    with RawServer(per_connection=per_connection) as server:
        model = models.OpenAIChat("m", base_url=server.url, timeout=10)
        calls = models.call_many(prompts, model, concurrency=8, max_retries=2, **fast())
    form = prompts.str.split().str[1]
    text, error = calls["text"], calls["error"]
    answered = text.notna()
    assert (text[answered] == "answer to " + calls.index[answered]).all()  # never another case's answer
    assert answered[form.isin(READ)].all(), error[form.isin(READ) & ~answered].tolist()[:3]
    for name, message in REFUSED.items():
        mine = form == name
        assert not answered[mine].any() and error[mine].str.startswith(message.format(url=server.url)).all(), \
            error[mine].iloc[0]
    assert calls.loc[form == "truncated", "attempts"].ge(2).all()  # the broken reply, then the whole one
    # Every request the server received is an attempt in the table. A request written on a kept-alive connection the
    # server had just closed (after a reply sent with a close, announced or not, a half-close or a 408) is sent again
    # at once and counted too, though that server never read it: attempts count the requests sent.
    assert calls["attempts"].sum() >= server.requests == len(prompts) + (form == "truncated").sum()
    assert not calls.attrs["stopped"]  # a reply the client refuses is not an unreachable server


def test_a_refused_reply_that_echoes_the_key_is_redacted(monkeypatch):
    key = "sk-echoed-0123456789abcdef"
    monkeypatch.setenv("EVALKIT_ECHO_KEY", key)
    with RawServer() as server:
        model = models.OpenAIChat("m", base_url=server.url, api_key_env="EVALKIT_ECHO_KEY")
        with pytest.raises(models.ReplyError, match="not valid HTTP/1.1") as refused:
            model("c1 echo-key")
        calls = models.call_many(pd.Series(["c2 echo-key"]), model, **fast())
    shown = [str(refused.value), repr(refused.value), calls.loc[0, "error"]]
    assert "Bearer [redacted]" in shown[0] and not [text for text in shown if key in text]


def test_base_url_keeps_its_query_string():
    with ChatServer(lambda prompt, attempt: "PASS") as server:
        model = models.OpenAIChat("m", base_url=server.url + "?api-version=2024-10-21")
        assert model("x").text == "PASS"
        assert list(server.targets) == ["/v1/chat/completions?api-version=2024-10-21"]
        assert "api-version" not in str(models.OpenAIChat("m", base_url=server.url + "/?api-version=1")._wire.url)


def test_idle_connections_expire_and_a_forgotten_one_costs_no_timeout(monkeypatch):
    """A server that stops answering on connections idle longer than a second (as a NAT or load balancer that forgot
    them: no FIN, no reset) costs nothing once idle connections expire before that."""
    monkeypatch.setattr(_wire, "KEEPALIVE", 0.3)
    with ChatServer(lambda prompt, attempt: "PASS") as server:
        model = models.OpenAIChat("m", base_url=server.url, timeout=5)
        assert model("a").text == "PASS" and server.connections == 1
        time.sleep(0.8)
        start = time.monotonic()
        assert model("b").text == "PASS"
        assert time.monotonic() - start < 1.0 and server.connections == 2  # a new connection, at once
        assert model("c").text == "PASS" and server.connections == 2  # kept alive between calls that follow


def test_a_stale_connection_is_sent_again_at_once_and_counted():
    script = lambda prompt, attempt: Drop() if prompt.startswith("drop") and attempt == 1 else "PASS"  # noqa: E731
    with ChatServer(script) as server:
        model = models.OpenAIChat("m", base_url=server.url, timeout=30)
        calls = models.call_many(pd.Series(["first", "drop-1", "drop-2"]), model, concurrency=1, max_retries=0,
                                 **fast())
        assert calls["text"].tolist() == ["PASS"] * 3 and calls["latency_s"].max() < 5
        assert calls["attempts"].tolist() == [1, 2, 2] and calls["attempts"].sum() == server.requests == 5
        usage = models.usage_summary(calls)
        assert usage.loc[0, "n_attempts"] == server.requests


def test_n_attempts_is_what_the_server_received():
    def script(prompt, attempt):
        kind = prompt.split()[0]
        if kind == "drop" and attempt <= 2:
            return Drop()
        if kind == "fail" and attempt == 1:
            return Fail(503)
        return "PASS"

    prompts = pd.Series([f"{kind} {i}" for i in range(12) for kind in ("ok", "drop", "fail")])
    with ChatServer(script) as server:
        calls = models.call_many(prompts, models.OpenAIChat("m", base_url=server.url), concurrency=8, max_retries=3,
                                 **fast())
    assert calls["error"].isna().all()
    assert models.usage_summary(calls).loc[0, "n_attempts"] == server.requests == 12 * (1 + 3 + 2)


@pytest.mark.parametrize("way", ["call", "call_many"])
def test_ctrl_c_cancels_the_calls_in_flight_within_a_second(way):
    with ChatServer(lambda prompt, attempt: "PASS" if prompt == "after" else Hang(30)) as server:
        model = models.OpenAIChat("m", base_url=server.url, timeout=15)
        main = threading.main_thread().ident  # Ctrl-C: SIGINT, to the thread that waits for the calls
        timer = threading.Timer(0.5, signal.pthread_kill, (main, signal.SIGINT))
        timer.start()
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            if way == "call":
                model("x")
            else:
                models.call_many(pd.Series([f"p{i}" for i in range(20)]), model, concurrency=8, **fast())
        assert time.monotonic() - start < 1.5
        assert server.requests >= 1
        assert model("after").text == "PASS"  # the model is whole after an interrupted call
    timer.cancel()


def test_a_cut_or_filtered_answer_is_an_error_row_never_a_verdict():
    script = {"cut": Answer("PASS", finish_reason="length"), "empty": Answer("", finish_reason="length"),
              "filtered": Answer(None, finish_reason="content_filter"), "whole": Answer("PASS\nfine")}
    cases = pd.DataFrame({"case_id": list(script), "input": list(script), "output": ["x"] * 4})
    rubric = judge.Rubric("plain", "Judge.", "{input}")
    with ChatServer(lambda prompt, attempt: script[prompt.split()[-1]]) as server:
        model = models.OpenAIChat("m", base_url=server.url)
        with pytest.warns(Warning, match="judge calls failed"):
            res = judge.run_judge(cases, rubric, model, **fast())
    rate = judge.pass_rate(res)
    res = res.set_index("case_id")
    assert res.loc["whole", "verdict"] == "PASS" and pd.isna(res.loc["whole", "error"])
    for case, reason in (("cut", "length"), ("empty", "length"), ("filtered", "content_filter")):
        assert pd.isna(res.loc[case, "verdict"]), case
        assert f"(finish_reason '{reason}')" in res.loc[case, "error"] and res.loc[case, "error"].startswith("ReplyError")
    assert rate.loc[0, "n_unparseable"] == 0 and rate.loc[0, "n_error"] == 3 and server.requests == 4  # not retried, not unparseable


def test_seed_logprobs_and_replace_reach_the_request_and_the_reply(tmp_path):
    tokens = ({"PASS": -0.05, "FAIL": -3.0}, {"\n": -0.01, ".": -4.5})
    with ChatServer(lambda prompt, attempt: Answer("PASS\n", logprobs=tokens)) as server:
        judge_model = models.OpenAIChat("m", base_url=server.url, logprobs=2)
        reply = judge_model("x")
        assert reply.logprobs == tokens and reply.finish_reason == "stop"
        assert server.received[-1]["logprobs"] is True and server.received[-1]["top_logprobs"] == 2
        assert "seed" not in server.received[-1]
        again = judge_model.replace(seed=3, temperature=0.7)
        assert again("x").text == "PASS\n"
        assert server.received[-1]["seed"] == 3 and server.received[-1]["temperature"] == 0.7
        assert again.params == {"temperature": 0.7, "max_tokens": None, "system": None, "seed": 3, "logprobs": 2}
        assert judge_model.params == {"temperature": 0.0, "max_tokens": None, "system": None, "logprobs": 2}
        # the cache keeps finish_reason and logprobs, under keys that differ by seed
        cache = models.CallCache(tmp_path / "calls.sqlite")
        for model in (judge_model, again):
            models.call_many(pd.Series(["y"]), model, cache=cache, **fast())
        assert len(cache) == 2
        key = models.CallCache.key("m", again.params, "y")
        assert cache.get(key) == models.Reply("PASS\n", 1, 1, finish_reason="stop", logprobs=tokens)
    with pytest.raises(TypeError, match=r"replace\(\) got option\(s\) \['temprature'\]"):
        judge_model.replace(temprature=0.7)
    with pytest.raises(ValueError, match="`logprobs` must be in"):
        models.OpenAIChat("m", base_url="http://127.0.0.1:9/v1", logprobs=21)


def test_a_call_from_a_running_event_loop_and_from_threads():
    """A notebook's loop is running in the thread that calls: the call runs on evalkit's loop all the same."""
    with ChatServer(lambda prompt, attempt: f"answer {prompt}") as server:
        model = models.OpenAIChat("m", base_url=server.url)

        async def in_a_notebook():
            blocking = model("sync")  # a blocking call while this loop runs
            awaited = await asyncio.gather(*(model.acall(f"a{i}") for i in range(20)))
            return blocking, awaited

        blocking, awaited = asyncio.run(in_a_notebook())
        assert blocking.text == "answer sync" and [r.text for r in awaited] == [f"answer a{i}" for i in range(20)]
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(16) as pool:
            texts = list(pool.map(lambda p: model(p).text, [f"t{i}" for i in range(64)]))
        assert texts == [f"answer t{i}" for i in range(64)]


def test_redirects_are_not_followed():
    with RawServer() as server:
        with pytest.raises(models.APIStatusError, match="Error code: 307 - moved") as moved:
            models.OpenAIChat("m", base_url=server.url)("c1 redirect")
        assert moved.value.status_code == 307 and server.requests == 1
