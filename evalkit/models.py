"""Models and the machinery around every model call: cache, retries, concurrency, progress, usage.

A *model* is any callable ``prompt -> str``; it may instead return a :class:`Reply` carrying token usage.
Give it a ``model_id`` attribute (and optionally ``params``, a dict of what changes its answers) or pass
``model_id=`` to the functions that call it, so cached answers are matched to the model that gave them.

:class:`OpenAIChat` adapts any OpenAI-compatible chat-completions server (hosted APIs, vLLM, llama.cpp,
Ollama...) over aiohttp's HTTP client, a dependency of the base install, so the base install makes live calls;
evalkit writes the policies on top (one deadline over the whole reply, a size cap, redaction, retries,
``finish_reason``). The official ``openai`` client (``pip install "llm-evalkit[openai]"``) is used only for the
provider's Files and Batches APIs (:mod:`evalkit.batch`). Its key is read from an environment variable and is never
stored, printed or written to the cache.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import inspect
import json
import os
import queue
import random
import sqlite3
import sys
import threading
import time
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit import _wire
from evalkit._optional import install_hint
from evalkit._validation import check_columns, check_dataframe, check_number, show, warn
from evalkit._version import __version__
from evalkit._wire import APIConnectionError, APIStatusError, Reply, ReplyError

__all__ = [
    "Reply",
    "TransientError",
    "ReplyError",
    "APIStatusError",
    "APIConnectionError",
    "OpenAIChat",
    "Replay",
    "CallCache",
    "ParseError",
    "model_identity",
    "call_many",
    "call_and_parse",
    "plan_calls",
    "usage_summary",
]

CALL_COLUMNS = ["text", "error", "latency_s", "cached", "attempts", "prompt_tokens", "completion_tokens", "finish_reason",
                "logprobs", "created_at"]


class TransientError(RuntimeError):
    """Raise from a model callable to mark a failure worth retrying (rate limit, timeout, 5xx).

    ``retry_after`` (seconds) asks :func:`call_many` to wait at least that long before the retry.
    """

    def __init__(self, message: str = "", *, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


class ParseError(ValueError):
    """A model answer did not follow the required format (raised by parsers, caught by :func:`evalkit.models.call_and_parse`)."""


class OpenAIChat:
    """A model backed by an OpenAI-compatible chat-completions endpoint.

    Parameters
    ----------
    model : str
        The model name the server expects; also the ``model_id`` used for caching.
    base_url : str, optional
        The server, e.g. ``"http://127.0.0.1:8000/v1"`` for a local vLLM; default: the environment variable
        ``OPENAI_BASE_URL``, else ``"https://api.openai.com/v1"`` (as the official client does). A query string is
        kept on every request (Azure's ``?api-version=...``).
    api_key_env : str, default "OPENAI_API_KEY"
        Environment variable holding the key. Local servers without authentication may leave it unset
        when ``base_url`` is given.
    temperature : float, default 0.0
    max_tokens : int, optional
    system : str, optional
        A system message sent before every prompt.
    seed : int, optional
        Sent as ``seed`` when given (the server's best effort at the same answer for the same request).
    logprobs : int, optional
        When given, ``k``: the request asks for ``"logprobs": true, "top_logprobs": k`` and each :class:`Reply`
        holds, per answer token, the log probabilities of its top ``k`` alternatives (``Reply.logprobs``).
    timeout : float, default 60.0
        Wall-clock deadline in seconds for each request, from opening the connection to the last byte of the
        reply (aiohttp's ``ClientTimeout(total=)``): a server trickling its head or body is cut off at the
        deadline. Retries are handled by :func:`call_many`.
    max_reply_bytes : int, default 16777216 (16 MiB)
        The largest reply body read: a larger one is refused with a :class:`ReplyError` naming the URL (not
        retried), at once when its Content-Length says so and otherwise as it arrives, so a huge or endless body
        costs at most this much memory. A chat completion is a few kilobytes.

    Notes
    -----
    HTTP is aiohttp's: every call goes through one ``aiohttp.ClientSession`` per model on an event loop in a thread
    of evalkit's own, so a call from any thread, from a notebook whose loop is running, and the many calls in flight
    of :func:`call_many` (which awaits :meth:`acall` on that loop) share kept-alive connections. Idle connections
    are dropped after 5 seconds (a NAT or load balancer may have forgotten them); a request that a kept-alive
    connection lost before any reply is sent again at once, on a new connection, and counts as an attempt. Redirects
    are not followed (a 3xx is an :class:`APIStatusError`); TLS certificates are verified. Ctrl-C during a call
    aborts the request in flight. ``params`` holds what changes an answer (``temperature``, ``max_tokens``,
    ``system``, and ``seed`` and ``logprobs`` when given), and so keys the call cache; :meth:`replace` makes the same
    model with some of them changed (repeats with other seeds). The official ``openai`` client is used only for the
    Files and Batches APIs (:attr:`client`, :mod:`evalkit.batch`).

    A proxy is taken from the environment as the official client's httpx takes it: ``HTTPS_PROXY`` or
    ``HTTP_PROXY`` (by the server's scheme), else ``ALL_PROXY``; ``NO_PROXY`` entries as httpx reads them (``*``,
    host names with their subdomains, ``.name`` for subdomains only, IP addresses, ``host:port`` for one port),
    and a CIDR range (``10.0.0.0/8``) as every address in it; a proxy URL without a port on 80 (``http://``) or
    443 (``https://``). An ``https://`` proxy is spoken to over TLS, so its ``Proxy-Authorization`` (and, to an
    ``http://`` server, the key) never crosses the network in clear; a ``socks5://`` one is refused with a clear
    error.

    The key is stripped of the whitespace around it (a key pasted from a file often ends in a newline); one with
    a space, a control character or a character outside printable ASCII inside it is refused in a message that
    does not show it.

    The reply body is read as JSON by evalkit: any shape a server sends (no ``choices``, no ``message``,
    content that is not text, an HTML page, a charset or content encoding that does not decode, which the message
    names) raises :class:`ReplyError` with a plain message, which :func:`call_many` turns into an error row; so does
    an answer the server cut short (``finish_reason`` ``"length"``: ``max_tokens`` reached; ``"content_filter"``),
    which is never read as a verdict. An HTTP error status raises :class:`APIStatusError` (its subclasses are named
    as the official client names them: ``RateLimitError`` for 429, ``InternalServerError`` for 5xx,
    ``BadRequestError``, ``AuthenticationError``...) carrying the reply's headers, so Retry-After is honoured; a
    server that cannot be reached, or a connection that breaks, raises :class:`APIConnectionError`, and a missed
    deadline ``TimeoutError``. :meth:`redact` removes the key and a proxy's credentials from any text, in every form
    they take (as they are, escaped as in a repr or JSON, URL-quoted, base64): every exception a call raises is
    redacted, so is a reply that echoes them, and ``call_many`` applies it again to every error it stores.

    Examples
    --------
    Against a local OpenAI-compatible server (here evalkit's scripted test server):

    >>> from evalkit._testing import ChatServer
    >>> from evalkit.models import OpenAIChat
    >>> with ChatServer(lambda prompt, attempt: "PASS") as server:
    ...     judge = OpenAIChat("local-judge", base_url=server.url)
    ...     reply = judge("Reply with PASS.")
    >>> reply
    Reply(text='PASS', prompt_tokens=3, completion_tokens=1, finish_reason='stop')
    >>> judge.replace(seed=3, temperature=0.7).params
    {'temperature': 0.7, 'max_tokens': None, 'system': None, 'seed': 3}
    """

    def __init__(self, model: str, *, base_url: str | None = None, api_key_env: str = "OPENAI_API_KEY",
                 temperature: float = 0.0, max_tokens: int | None = None, system: str | None = None,
                 seed: int | None = None, logprobs: int | None = None, timeout: float = 60.0,
                 max_reply_bytes: int = _wire.MAX_REPLY_BYTES):
        given = os.environ.get(api_key_env)
        key = None if given is None else _wire.checked_key(given, api_key_env)
        if key is None and base_url is None:
            raise ValueError(f"set the environment variable {api_key_env} (the API key is never passed as an argument).")
        seed = check_number(seed, "seed", integer=True, allow_none=True)
        logprobs = check_number(logprobs, "logprobs", low=0, high=20, integer=True, allow_none=True)
        self.model_id = model
        self.params = {"temperature": temperature, "max_tokens": max_tokens, "system": system}
        # only when given: the cache keys of a model without them are those earlier versions wrote
        self.params.update({name: value for name, value in (("seed", seed), ("logprobs", logprobs)) if value is not None})
        self.timeout = check_number(timeout, "timeout", low=0.0)
        if self.timeout == 0:
            raise ValueError("`timeout` must be a positive number of seconds; got 0.")
        max_reply_bytes = check_number(max_reply_bytes, "max_reply_bytes", low=1, integer=True)
        self._options = {"base_url": base_url, "api_key_env": api_key_env, "temperature": temperature,
                         "max_tokens": max_tokens, "system": system, "seed": seed, "logprobs": logprobs,
                         "timeout": timeout, "max_reply_bytes": max_reply_bytes}
        self._key = key
        self._base_url = base_url
        self._wire = _wire.Wire(base_url or os.environ.get("OPENAI_BASE_URL") or "https://api.openai.com/v1",
                                max_reply_bytes=max_reply_bytes)
        self._secrets = _wire.Secrets(given, key, *self._wire.secrets)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json",
                         "User-Agent": f"evalkit/{__version__}"}
        if key:
            self._headers["Authorization"] = f"Bearer {key}"
        self._client = None
        self._lock = threading.Lock()
        weakref.finalize(self, self._wire.close)  # a model dropped (or the process ending) closes its connections

    def __repr__(self) -> str:
        where = f", base_url={self._base_url!r}" if self._base_url else ""
        return f"OpenAIChat({self.model_id!r}{where}, params={self.params})"

    def replace(self, **changes) -> OpenAIChat:
        """The same model (server, key variable, options) with some options changed, e.g. ``replace(seed=3)``.

        ``changes`` are keyword options of :class:`OpenAIChat` (not ``model``); the new model has its own
        connections and its own ``params``, so its answers are cached apart.

        Examples
        --------
        >>> from evalkit.models import OpenAIChat
        >>> judge = OpenAIChat("m", base_url="http://127.0.0.1:1/v1", temperature=0.0)
        >>> [judge.replace(seed=k, temperature=0.7).params["seed"] for k in (1, 2)]
        [1, 2]
        """
        unknown = sorted(set(changes) - set(self._options))
        if unknown:
            raise TypeError(f"replace() got option(s) {unknown}; the options are {sorted(self._options)}.")
        return OpenAIChat(self.model_id, **{**self._options, **changes})

    def redact(self, text: str) -> str:
        """``text`` with the API key and a proxy's credentials replaced by ``[redacted]``, in every form they take (a
        server may echo the key in an error; a client's error may hold it escaped)."""
        return self._secrets(text)

    @property
    def client(self):
        """The official ``openai.OpenAI`` client (no retries of its own) for the Files and Batches APIs.

        Made on first use; needs the ``openai`` extra (``pip install "llm-evalkit[openai]"``).
        """
        with self._lock:
            if self._client is None:
                try:
                    import openai
                except ImportError:
                    raise ImportError('the Files and Batches APIs go through the official client: '
                                      f"{install_hint('openai')}") from None
                self._client = openai.OpenAI(api_key=self._key or "unused", base_url=self._base_url, max_retries=0,
                                             timeout=self.timeout)
            return self._client

    def request_body(self, prompt: str) -> dict:
        """The chat-completions request for one prompt: what a call sends, and the body of a batch file line.

        Examples
        --------
        >>> from evalkit.models import OpenAIChat
        >>> OpenAIChat("m", base_url="http://127.0.0.1:1/v1", system="Be brief.").request_body("Hi")
        {'model': 'm', 'messages': [{'role': 'system', 'content': 'Be brief.'}, {'role': 'user', 'content': 'Hi'}], 'temperature': 0.0}
        >>> OpenAIChat("m", base_url="http://127.0.0.1:1/v1", seed=7, logprobs=2).request_body("Hi")
        {'model': 'm', 'messages': [{'role': 'user', 'content': 'Hi'}], 'temperature': 0.0, 'seed': 7, 'logprobs': True, 'top_logprobs': 2}
        """
        messages = ([{"role": "system", "content": self.params["system"]}] if self.params["system"] else [])
        messages.append({"role": "user", "content": prompt})
        body = {"model": self.model_id, "messages": messages, "temperature": self.params["temperature"]}
        if self.params["max_tokens"] is not None:
            body["max_tokens"] = self.params["max_tokens"]
        if "seed" in self.params:
            body["seed"] = self.params["seed"]
        if "logprobs" in self.params:
            body.update(logprobs=True, top_logprobs=self.params["logprobs"])
        return body

    def _encoded(self, prompt: str) -> bytes:
        request = self.request_body(prompt)
        try:
            return json.dumps(request, ensure_ascii=False).encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate in the prompt: escaped, as JSON allows
            return json.dumps(request).encode("ascii")

    async def _send(self, prompt: str, sent: list | None) -> Reply:
        """One call on the running loop (evalkit's call loop): the request, its reply checked, every error redacted."""
        try:
            status, headers, data = await self._wire.post("/chat/completions", self._encoded(prompt), self._headers,
                                                          self.timeout, sent)
            if not 200 <= status < 300:
                raise _wire.status_error(status, headers, data, self.redact)
            reply = _wire.reply_from_bytes(data, headers.get("Content-Type", ""), headers.get("Content-Encoding", ""))
        except Exception as exc:
            self._secrets.scrub(exc)  # whatever raised it, its message never holds the key
            raise
        if self._secrets.found(reply.text):  # a server echoing the key: it goes no further
            return dataclasses.replace(reply, text=self._secrets(reply.text))
        return reply

    def __call__(self, prompt: str) -> Reply:
        """One call, from any thread (a notebook's included): it runs on evalkit's call loop; Ctrl-C aborts it."""
        return _wire.run(self._send(prompt, _wire.SENT.get()))

    async def acall(self, prompt: str) -> Reply:
        """The call as a coroutine, for an event loop with many calls in flight (what :func:`call_many` runs).

        The same request, deadline, limits, errors and redaction as a call. Awaited on another loop than evalkit's
        call loop, the call runs there and this coroutine waits for it (cancelling it cancels the call).

        Examples
        --------
        >>> import asyncio
        >>> from evalkit._testing import ChatServer
        >>> from evalkit.models import OpenAIChat
        >>> with ChatServer(lambda prompt, attempt: "PASS") as server:
        ...     asyncio.run(OpenAIChat("m", base_url=server.url).acall("Is it?")).text
        'PASS'
        """
        loop = _wire.call_loop()
        if asyncio.get_running_loop() is loop:
            return await self._send(prompt, _wire.SENT.get())
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._send(prompt, _wire.SENT.get()), loop))

    def close(self) -> None:
        """Close the kept-alive connections now (a later call opens new ones)."""
        self._wire.close()


class Replay:
    """A model that answers from recorded outputs (prompt -> text); an unknown prompt raises KeyError.

    Used to re-run a judge on recorded answers without a network, e.g. the bundled demo.

    Examples
    --------
    >>> from evalkit.models import Replay
    >>> Replay({"Is 2+2=4?": "PASS"}, model_id="recorded")("Is 2+2=4?")
    'PASS'
    """

    def __init__(self, responses: Mapping[str, str], *, model_id: str):
        self._responses = dict(responses)
        self.model_id = model_id
        self.params: dict = {}

    def __call__(self, prompt: str) -> str:
        try:
            return self._responses[prompt]
        except KeyError:
            raise KeyError(f"{self.model_id}: no recorded answer for this prompt ({prompt[:60]!r}...).") from None


def _openai_error(exc: BaseException, name: str) -> bool:
    """Whether ``exc`` is the official client's exception ``name`` (only when a caller's model imported it)."""
    openai = sys.modules.get("openai")
    return openai is not None and isinstance(exc, getattr(openai, name, ()))


def _is_unreachable(exc: BaseException) -> bool:
    """A failure to reach the server at all (connection refused or dropped, no reply in time)."""
    return isinstance(exc, (TimeoutError, ConnectionError)) or _openai_error(exc, "APIConnectionError")


def _is_transient(exc: BaseException) -> bool:
    """Timeouts, dropped connections, 408/409/429 and 5xx are retried; anything else is not."""
    if isinstance(exc, TransientError) or _is_unreachable(exc):
        return True
    status = getattr(exc, "status_code", None)  # an HTTP status error, of evalkit's client or another
    return isinstance(status, int) and (status in (408, 409, 429) or status >= 500)


def _retry_after(exc: BaseException) -> float | None:
    """Seconds the server asked to wait (Retry-After in seconds or as an HTTP date, or retry-after-ms)."""
    if isinstance(exc, TransientError):
        return exc.retry_after
    headers = getattr(exc, "headers", None)
    if headers is None:  # the official client keeps them on the response
        headers = getattr(getattr(exc, "response", None), "headers", None)
    return None if headers is None else _wire.retry_after(headers)


class CallCache:
    """An on-disk cache of model answers (SQLite), keyed by model id, parameters and prompt.

    Only successful answers are stored, with their usage, ``finish_reason`` and ``logprobs``, so a re-run retries
    what failed and re-uses the rest (a file an earlier version wrote is read as it is). Safe to
    share between threads of one process. :meth:`put_many` writes many answers in one transaction (what
    :func:`call_many` does, a batch at a time); each committed batch survives a killed process.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from evalkit.models import CallCache, Reply
    >>> cache = CallCache(pathlib.Path(tempfile.mkdtemp()) / "calls.sqlite")
    >>> key = CallCache.key("judge-1", {"temperature": 0}, "Is the sky green?")
    >>> cache.put(key, "judge-1", Reply("FAIL", 5, 1))
    >>> cache.get(key)
    Reply(text='FAIL', prompt_tokens=5, completion_tokens=1)
    """

    def __init__(self, path):
        if not isinstance(path, (str, os.PathLike)):
            raise TypeError(f"`path` must be a file path; got {type(path).__name__}.")
        self.path = Path(path)
        if self.path.is_dir():
            raise ValueError(f"`path` {str(self.path)!r} is a folder; give the cache's file name, e.g. {str(self.path / 'calls.sqlite')!r}.")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: safe against a killed process, one fsync per checkpoint
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, model TEXT, text TEXT, prompt_tokens INTEGER,"
            " completion_tokens INTEGER, created_at TEXT, finish_reason TEXT, logprobs TEXT)"
        )
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(calls)")}
        for column in ("finish_reason", "logprobs"):  # a file written before the reply kept them: read as it is
            if column not in columns:
                self._db.execute(f"ALTER TABLE calls ADD COLUMN {column} TEXT")

    def __repr__(self) -> str:
        return f"CallCache({str(self.path)!r}, {len(self)} answers)"

    @staticmethod
    def key(model_id: str, params: Mapping, prompt: str) -> str:
        """sha256 of the model id, its parameters and the prompt."""
        blob = json.dumps([model_id, dict(params), prompt], sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(blob.encode("utf-8", "surrogatepass")).hexdigest()  # a lone surrogate in a prompt too

    @staticmethod
    def _keys(model_id: str, params: Mapping, prompts) -> list[str]:
        """:meth:`key` of each prompt, the model id and parameters written once (the same bytes as ``key``)."""
        head = json.dumps([model_id, dict(params), ""], sort_keys=True, ensure_ascii=False, default=str)[:-3]
        return [hashlib.sha256(f"{head}{json.dumps(prompt, ensure_ascii=False)}]".encode("utf-8", "surrogatepass")).hexdigest()
                for prompt in prompts]

    def get(self, key: str) -> Reply | None:
        with self._lock:
            row = self._db.execute(f"SELECT {_REPLY_COLUMNS} FROM calls WHERE key = ?", (key,)).fetchone()
        return None if row is None else _stored_reply(*row)

    def _get_many(self, keys: list[str]) -> dict[str, Reply]:
        """The answers stored under any of ``keys``, by key: one query per 500 keys instead of one per key."""
        found = {}
        with self._lock:
            for first in range(0, len(keys), 500):
                chunk = keys[first:first + 500]
                query = f"SELECT key, {_REPLY_COLUMNS} FROM calls WHERE key IN ({','.join('?' * len(chunk))})"
                found.update((key, _stored_reply(*rest)) for key, *rest in self._db.execute(query, chunk))
        return found

    def put(self, key: str, model_id: str, reply: Reply) -> None:
        self.put_many([(key, model_id, reply)])

    def put_many(self, rows) -> None:
        """Store ``(key, model_id, reply)`` triples in one transaction."""
        now = _now()
        values = [(key, model_id, r.text, r.prompt_tokens, r.completion_tokens, now, r.finish_reason,
                   None if r.logprobs is None else json.dumps(r.logprobs)) for key, model_id, r in rows]
        if not values:
            return
        with self._lock:
            self._db.execute("BEGIN")
            try:
                self._db.executemany(f"INSERT OR REPLACE INTO calls ({_ALL_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                     values)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


_REPLY_COLUMNS = "text, prompt_tokens, completion_tokens, finish_reason, logprobs"
_ALL_COLUMNS = "key, model, text, prompt_tokens, completion_tokens, created_at, finish_reason, logprobs"


def _stored_reply(text, prompt_tokens, completion_tokens, finish_reason, logprobs) -> Reply:
    return Reply(text, prompt_tokens, completion_tokens, finish_reason=finish_reason,
                 logprobs=None if logprobs is None else tuple(json.loads(logprobs)))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def model_identity(model, *, model_id: str | None = None, params: Mapping | None = None, cache=None) -> tuple[str, dict]:
    """The model id and parameters that key a model's cached answers.

    The id is ``model_id``, else ``model.model_id``; without either, a cache is refused (its answers could
    not be matched to the model that gave them) and the callable's name is used. The parameters are
    ``model.params`` updated with ``params``.

    Examples
    --------
    >>> from evalkit.models import Replay, model_identity
    >>> model_identity(Replay({}, model_id="judge-1"), params={"attempt": 2})
    ('judge-1', {'attempt': 2})
    """
    if not callable(model):
        raise TypeError(f"`model` must be a callable prompt -> str; got {type(model).__name__}.")
    model_id = model_id or getattr(model, "model_id", None)
    if model_id is None:
        if cache is not None:
            raise ValueError("pass `model_id=` (or give the model a `model_id` attribute) so cached answers "
                             "can be matched to the model that gave them.")
        model_id = getattr(model, "__qualname__", type(model).__name__)
    merged = dict(getattr(model, "params", None) or {})
    merged.update(params or {})
    return str(model_id), merged


def _check_prompts(prompts) -> pd.Series:
    if not isinstance(prompts, pd.Series):
        hint = " (wrap a list in pandas.Series, indexed by case id)" if isinstance(prompts, (list, tuple)) else ""
        raise TypeError(f"`prompts` must be a Series of str{hint}; got {type(prompts).__name__}.")
    bad = [i for i, p in prompts.items() if not isinstance(p, str)]
    if bad:
        raise TypeError(f"`prompts` must hold strings; entry {bad[0]!r} is {type(prompts[bad[0]]).__name__}.")
    return prompts


def _approx_tokens(text: str) -> int:
    """Rough token count (4 characters per token, the common rule of thumb for English)."""
    return max(1, round(len(text) / 4))


def plan_calls(prompts: pd.Series, model=None, *, model_id: str | None = None, params=None, cache=None) -> pd.DataFrame:
    """Count the calls (and approximate prompt tokens) a run would make, without making any.

    Identical prompts are called once; answers already in ``cache`` cost nothing.

    Returns
    -------
    DataFrame
        One row: ``n_prompts, n_unique, n_cached, n_calls, approx_prompt_tokens``.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.models import plan_calls
    >>> plan_calls(pd.Series(["a" * 40, "a" * 40, "b" * 8]), model_id="m")
       n_prompts  n_unique  n_cached  n_calls  approx_prompt_tokens
    0          3         2         0        2                    12
    """
    _check_prompts(prompts)
    if model is None:
        model = Replay({}, model_id=model_id or "unknown")
    mid, merged = model_identity(model, model_id=model_id, params=params, cache=cache)
    unique = pd.unique(prompts.to_numpy())
    keys = {p: CallCache.key(mid, merged, p) for p in unique}
    cached = sum(1 for p in unique if cache is not None and cache.get(keys[p]) is not None)
    to_call = [p for p in unique if cache is None or cache.get(keys[p]) is None]
    return pd.DataFrame([{
        "n_prompts": len(prompts), "n_unique": len(unique), "n_cached": cached, "n_calls": len(to_call),
        "approx_prompt_tokens": int(sum(_approx_tokens(p) for p in to_call)),
    }])


# ------------------------------------------------------------------ the call engine
# call_many is four parts, each read (and tested) on its own: the retry policy decides whether to retry a failed
# attempt and after how long; the unreachable detector counts attempts that did not reach the server and stops
# the run; the cache writer stores answers from a thread of its own, at least once a second; the table builder
# turns the rows into the documented result. _attempts is one prompt's attempts, driven by _call in a thread or by
# _acall on an event loop; _in_threads and _on_event_loop run them. Workers share only these objects, each guarding
# its own state, and hand their rows back through a queue.
@dataclass(frozen=True)
class _RetryPolicy:
    """Exponential backoff with full jitter, at least what the server asked in Retry-After, capped."""

    max_retries: int
    backoff: float
    max_backoff: float

    def wait(self, exc: BaseException, attempt: int, uniform=random.uniform) -> float | None:
        """Seconds to wait after attempt number ``attempt`` failed with ``exc``, or None: do not retry."""
        if attempt > self.max_retries or not _is_transient(exc):
            return None
        wait = uniform(0, min(self.max_backoff, self.backoff * 2 ** (attempt - 1)))
        asked = _retry_after(exc)
        return wait if asked is None else min(self.max_backoff, max(wait, asked))


class _Unreachable:
    """Counts consecutive attempts that did not reach the server; the ``limit``-th sets ``stop``.

    Any attempt the server answered, even with an error, resets the count.
    """

    def __init__(self, limit: int, stop: threading.Event):
        self._limit, self._stop = limit, stop
        self._lock = threading.Lock()
        self._streak = 0
        self.tripped = False

    def record(self, exc: BaseException | None) -> None:
        """Called after every attempt, with the exception it raised or None."""
        if exc is None and not self._streak:  # the usual case, without the lock every thread would queue on
            return
        with self._lock:
            self._streak = self._streak + 1 if exc is not None and _is_unreachable(exc) else 0
            if self._streak >= self._limit and not self.tripped:
                self.tripped = True
                self._stop.set()


class _CacheWriter:
    """Stores answers in a :class:`CallCache` from a thread of its own: at least every ``every`` seconds, and as
    soon as ``batch`` answers wait, one transaction each, whatever the calls still in flight are doing.

    An answer the cache refuses (a locked or full database) is kept and tried again at the next flush;
    :meth:`close` flushes what is left and warns once about any answer that could still not be stored.
    """

    def __init__(self, cache: CallCache, *, every: float = 1.0, batch: int = 256):
        self._cache, self._every, self._batch = cache, every, batch
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._wake = threading.Event()
        self._closing = False
        self._unsaved = 0
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="evalkit-cache-writer", daemon=True)
        self._thread.start()

    def put(self, key: str, model_id: str, reply: Reply) -> None:
        self._queue.put((key, model_id, reply))
        if self._queue.qsize() >= self._batch:
            self._wake.set()

    def _run(self) -> None:
        pending: list = []  # this thread's own
        while True:
            self._wake.wait(self._every)
            self._wake.clear()
            closing = self._closing  # read before draining: a put before close() is always drained
            while True:
                try:
                    pending.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            if pending:
                try:
                    self._cache.put_many(pending)
                    pending = []
                except Exception as exc:  # noqa: BLE001 - kept for the next flush, reported at close
                    self._error = exc
            if closing:
                self._unsaved = len(pending)
                return

    def close(self) -> None:
        """Flush every answer put so far and stop the thread; warn if some could not be stored."""
        self._closing = True
        self._wake.set()
        self._thread.join()
        if self._unsaved:
            warn(f"could not store {self._unsaved} answers in the cache {self._cache.path} ({self._error}); "
                          "they are in this run's results, and a re-run would ask for them again.")


def _failure(error: str, attempts: int, latency: float) -> dict:
    return {"text": None, "error": error, "latency_s": latency, "cached": False, "attempts": attempts,
            "prompt_tokens": None, "completion_tokens": None, "finish_reason": None, "logprobs": None,
            "created_at": _now()}


def _answered(reply: Reply, *, latency: float, cached: bool, attempts: int) -> dict:
    """A call table's row for an answer, received now or read from the cache."""
    return {"text": reply.text, "error": None, "latency_s": latency, "cached": cached, "attempts": attempts,
            "prompt_tokens": reply.prompt_tokens, "completion_tokens": reply.completion_tokens,
            "finish_reason": reply.finish_reason, "logprobs": reply.logprobs, "created_at": _now()}


def _attempts(prompt: str, *, policy: _RetryPolicy, unreachable: _Unreachable, stop: threading.Event,
              redact: Callable, gave_up: str):
    """One prompt's attempts until an answer, a failure not worth retrying, or the run stopping, as steps for a
    driver (:func:`_call` in a thread, :func:`_acall` on an event loop): each ``None`` it yields asks for one call
    of the model (send back what it returned, or the exception it raised, and how many requests it sent beyond one:
    a model on evalkit's wire appends each request to :data:`evalkit._wire.SENT`, so ``attempts`` counts every
    request sent), each number a wait of that many seconds
    that ends early when the run stops (send back None). Returns the prompt's row, its Reply (None on failure) and
    how many lone surrogates its text had.
    """
    attempts = 0
    while True:
        if stop.is_set():
            return _failure(gave_up, attempts, 0.0), None, 0
        attempts += 1
        start = time.perf_counter()
        outcome, again = yield None
        attempts += again  # requests the model sent once more within the call (a connection lost as it went out)
        try:
            if isinstance(outcome, BaseException):
                raise outcome
            reply, replaced = _wire.checked_reply(outcome)
        except Exception as exc:  # noqa: BLE001 - every failure becomes an error row
            latency = time.perf_counter() - start
            unreachable.record(exc)
            wait = policy.wait(exc, attempts)
            if wait is not None and not stop.is_set():
                yield wait
                if not stop.is_set():
                    continue
            return _failure(redact(f"{type(exc).__name__}: {exc}"), attempts, latency), None, 0
        latency = time.perf_counter() - start
        unreachable.record(None)
        return _answered(reply, latency=latency, cached=False, attempts=attempts), reply, replaced


def _call(prompt: str, model: Callable, *, stop: threading.Event, **options) -> tuple[dict, Reply | None, int]:
    """:func:`_attempts` with the model called in this thread."""
    steps = _attempts(prompt, stop=stop, **options)
    try:
        wait = next(steps)
        while True:
            if wait is None:
                sent = []
                token = _wire.SENT.set(sent)  # a model on evalkit's wire appends every request it sends
                try:
                    outcome = model(prompt)
                except Exception as exc:  # noqa: BLE001 - handed to the steps, which make it a row
                    outcome = exc
                finally:
                    _wire.SENT.reset(token)
                wait = steps.send((outcome, max(0, len(sent) - 1)))
            else:
                stop.wait(wait)
                wait = steps.send(None)
    except StopIteration as done:
        return done.value


async def _acall(prompt: str, model, *, stop: threading.Event, **options) -> tuple[dict, Reply | None, int]:
    """:func:`_attempts` with the model's ``acall`` awaited on the running loop."""
    steps = _attempts(prompt, stop=stop, **options)
    try:
        wait = next(steps)
        while True:
            if wait is None:
                sent = []
                token = _wire.SENT.set(sent)
                try:
                    outcome = await model.acall(prompt)
                except Exception as exc:  # noqa: BLE001 - handed to the steps, which make it a row
                    outcome = exc
                finally:
                    _wire.SENT.reset(token)
                wait = steps.send((outcome, max(0, len(sent) - 1)))
            else:
                end = time.monotonic() + wait
                while not stop.is_set() and (left := end - time.monotonic()) > 0:
                    await asyncio.sleep(min(left, 0.05))  # the run stopping ends the wait within 50 ms
                wait = steps.send(None)
    except StopIteration as done:
        return done.value


def _in_threads(items: list, work: Callable, n_threads: int, stop: threading.Event):
    """``(item, work(item))`` for every item, in the order they finish, computed by ``n_threads`` threads.

    The threads take items from one queue and put results on another: no future, lock or condition per item
    (each costs CPU that, under the interpreter lock, a run at high concurrency waits for). When the caller
    stops iterating (Ctrl-C), ``stop`` is set (``work`` ends its waits), the items not started are dropped and
    the threads finish the one they hold.
    """
    todo: queue.SimpleQueue = queue.SimpleQueue()
    done: queue.SimpleQueue = queue.SimpleQueue()
    for item in items:
        todo.put(item)

    def run() -> None:
        while True:
            try:
                item = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((item, work(item), None))
            except BaseException as exc:  # noqa: BLE001 - raised again in the calling thread
                done.put((item, None, exc))

    threads = [threading.Thread(target=run, name="evalkit-call", daemon=True) for _ in range(min(n_threads, len(items)))]
    for thread in threads:
        thread.start()
    try:
        yield from _received(done, len(items))
    finally:
        stop.set()
        while True:  # nothing new is started
            try:
                todo.get_nowait()
            except queue.Empty:
                break
        for thread in threads:
            thread.join()


def _received(done: queue.SimpleQueue, n: int):
    """``(item, result)`` of the ``n`` items as the workers put them on ``done``; a worker's exception is raised here."""
    for _ in range(n):
        while True:  # short waits: a signal handler (Ctrl-C) runs between them
            try:
                item, result, exc = done.get(timeout=0.1)
                break
            except queue.Empty:
                pass
        if exc is not None:
            raise exc
        yield item, result


def _on_event_loop(items: list, work: Callable, concurrency: int, stop: threading.Event):
    """:func:`_in_threads` for a coroutine function ``work``: ``concurrency`` tasks on evalkit's call loop
    (:func:`evalkit._wire.call_loop`, a thread of its own) take the items in turn. When the caller stops iterating
    (Ctrl-C), ``stop`` is set, nothing new is started and the calls in flight are cancelled (their requests aborted):
    it returns within a second, not when their deadlines pass."""
    done: queue.SimpleQueue = queue.SimpleQueue()
    todo = iter(items)
    ended = threading.Event()

    async def worker() -> None:
        while True:
            item = next(todo, done)  # one iterator shared by the tasks of one thread; ``done`` marks its end
            if item is done:
                return
            try:
                done.put((item, await work(item), None))
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # noqa: BLE001 - raised again in the calling thread
                done.put((item, None, exc))

    async def main() -> None:
        try:
            await asyncio.gather(*(worker() for _ in range(min(concurrency, len(items)))))
        finally:
            ended.set()

    running = asyncio.run_coroutine_threadsafe(main(), _wire.call_loop())
    try:
        yield from _received(done, len(items))
    finally:
        stop.set()
        if not running.done():
            running.cancel()  # the calls in flight are cancelled on the loop
            ended.wait(1.0)
        elif running.exception() is not None:
            raise running.exception()


def _calls_table(prompts: pd.Series, rows: Mapping[str, dict], *, model_id: str, params: dict, n_replaced: int,
                 stopped: bool) -> pd.DataFrame:
    """The result of :func:`call_many`: one row per prompt (in its order and index) from one row per distinct prompt."""
    out, seen = [], set()
    for prompt in prompts:
        row = rows[prompt]
        if prompt in seen:  # a repeated prompt was answered once; its other rows cost nothing
            row = {**row, "cached": True, "attempts": 0, "latency_s": 0.0}
        seen.add(prompt)
        out.append(row)
    table = pd.DataFrame(out, index=prompts.index, columns=CALL_COLUMNS)
    for column in ("prompt_tokens", "completion_tokens", "attempts"):
        table[column] = pd.array(table[column], dtype="Int64")
    table["text"] = table["text"].astype("string")
    table["error"] = table["error"].astype("string")
    table["finish_reason"] = table["finish_reason"].astype("string")
    table["cached"] = table["cached"].astype(bool)
    table.attrs["model"] = model_id
    table.attrs["params"] = params
    table.attrs["n_calls"] = int(table.loc[~table["cached"], "attempts"].sum()) if len(table) else 0
    table.attrs["n_surrogates_replaced"] = n_replaced
    table.attrs["stopped"] = stopped
    return table


def call_many(
    prompts: pd.Series,
    model: Callable,
    *,
    model_id: str | None = None,
    params: Mapping | None = None,
    cache: CallCache | None = None,
    concurrency: int = 8,
    max_retries: int = 4,
    backoff: float = 0.5,
    max_backoff: float = 30.0,
    max_unreachable: int = 20,
    progress: bool = True,
    description: str = "model calls",
) -> pd.DataFrame:
    """Call a model on many prompts: cached, retried, concurrent, with a progress bar.

    Parameters
    ----------
    prompts : Series of str
        Indexed by whatever identifies each prompt (case id, item id); identical prompts are called once.
    model : callable
        ``prompt -> str`` or ``prompt -> Reply``. When it has a ``size_pool(n)`` method it is called with
        ``concurrency`` first, and a ``redact(text)`` method is applied to every error text stored.
    model_id : str, optional
        Identifies the model in the cache (default: ``model.model_id``).
    params : mapping, optional
        Extra parameters that change the answer (merged with ``model.params``); part of the cache key.
    cache : CallCache, optional
        Answers found there are not requested again (``cached=True``, zero calls). New answers are
        written by a thread of their own, one transaction per batch of up to 256 answers and at least once a
        second, whatever the calls still in flight are doing: a killed process loses at most the last second's
        answers. An answer the cache refuses (a locked database) is tried again at the next write; any left at
        the end are in the results table, with an :class:`~evalkit.EvalkitWarning`.
    concurrency : int, default 8
        Calls in flight at once: coroutines on an event loop in a thread of its own when ``model`` has an
        ``acall`` coroutine method (as :class:`OpenAIChat` has: one thread serves every connection, which at
        high concurrency costs a fraction of a thread per call), else threads.
    max_retries : int, default 4
        Retries after a transient failure (timeout, connection error, 408/409/429, 5xx, or
        :class:`TransientError`), with exponential backoff and full jitter: the k-th wait is uniform in
        ``[0, min(max_backoff, backoff * 2**k)]`` seconds, or what the server asked in Retry-After when
        that is longer (capped at ``max_backoff``). Other errors are not retried.
    backoff, max_backoff : float, default 0.5 and 30.0
        Seconds, as above.
    max_unreachable : int, default 20
        After this many consecutive attempts that could not reach the server (connection refused or
        dropped, or no reply in time; any reply from the server resets the count), the run stops calling:
        the calls in flight end, and every prompt not tried yet becomes an error row ``"not attempted:
        server unreachable"``. Errors are not cached, so a re-run resumes with them.
    progress : bool, default True
        Show a ``tqdm.auto`` progress bar.

    Returns
    -------
    DataFrame
        Indexed like ``prompts``: ``text`` (missing on failure), ``error`` (the last exception, or missing),
        ``latency_s`` (of the successful call; 0 when cached), ``cached`` (True when the answer came from the
        cache or from an identical prompt earlier in the same run), ``attempts`` (the requests sent: every retry,
        and a request :class:`OpenAIChat` sent again when a kept-alive connection lost it), ``prompt_tokens``,
        ``completion_tokens``, ``finish_reason`` (as the server sent it), ``logprobs`` (the reply's per-token
        alternatives when the model was asked for them, else missing), ``created_at``. A failure is a row, never an exception: nothing a model or
        server returns stops the run or loses the answers already received. Text is valid UTF-8: lone
        surrogates are replaced by U+FFFD and counted in ``attrs["n_surrogates_replaced"]``;
        ``attrs["stopped"]`` says whether the run stopped early because the server was unreachable.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.models import call_many
    >>> shout = lambda prompt: prompt.upper()
    >>> call_many(pd.Series({"a": "hi", "b": "ok"}), shout, model_id="shout", progress=False)["text"].tolist()
    ['HI', 'OK']
    """
    _check_prompts(prompts)
    concurrency = check_number(concurrency, "concurrency", low=1, integer=True)
    policy = _RetryPolicy(max_retries=check_number(max_retries, "max_retries", low=0, integer=True),
                          backoff=check_number(backoff, "backoff", low=0.0),
                          max_backoff=check_number(max_backoff, "max_backoff", low=0.0))
    max_unreachable = check_number(max_unreachable, "max_unreachable", low=1, integer=True)
    mid, merged = model_identity(model, model_id=model_id, params=params, cache=cache)
    redact = getattr(model, "redact", None)
    redact = redact if callable(redact) else (lambda text: text)

    rows: dict[str, dict] = {}  # the main thread's own: workers return their rows through their futures
    pending = []
    unique = pd.unique(prompts.to_numpy())
    keys = CallCache._keys(mid, merged, unique)
    stored = cache._get_many(keys) if cache is not None else {}
    for prompt, key in zip(unique, keys, strict=True):
        hit = stored.get(key)
        if hit is None:
            pending.append((prompt, key))
        else:
            rows[prompt] = _answered(hit, latency=0.0, cached=True, attempts=0)

    stop = threading.Event()  # set once the server looks unreachable, or when the run is interrupted
    unreachable = _Unreachable(max_unreachable, stop)
    replaced = 0
    if pending:
        from tqdm.auto import tqdm

        size_pool = getattr(model, "size_pool", None)
        if callable(size_pool):
            size_pool(min(concurrency, len(pending)))
        gave_up = (f"not attempted: server unreachable ({max_unreachable} consecutive connection failures or "
                   "timeouts)")
        writer = _CacheWriter(cache) if cache is not None else None

        options = {"policy": policy, "unreachable": unreachable, "stop": stop, "redact": redact, "gave_up": gave_up}

        def kept(key: str, row: dict, reply: Reply | None, n: int) -> tuple[dict, int]:
            if reply is not None and writer is not None:
                writer.put(key, mid, reply)  # on disk within a second, whatever the other calls do
            return row, n

        def task(item: tuple[str, str]) -> tuple[dict, int]:
            return kept(item[1], *_call(item[0], model, **options))

        async def atask(item: tuple[str, str]) -> tuple[dict, int]:
            return kept(item[1], *await _acall(item[0], model, **options))

        run = (_on_event_loop(pending, atask, concurrency, stop) if inspect.iscoroutinefunction(getattr(model, "acall", None))
               else _in_threads(pending, task, concurrency, stop))

        bar = tqdm(total=len(pending), desc=description, disable=not progress, leave=False)
        try:
            for (prompt, _), (row, n) in run:
                rows[prompt] = row
                replaced += n
                bar.update(1)
        finally:
            if writer is not None:
                writer.close()  # every answer received is kept, even when the run is interrupted
            bar.close()
    return _calls_table(prompts, rows, model_id=mid, params=merged, n_replaced=replaced, stopped=unreachable.tripped)


def call_and_parse(
    prompts: pd.Series,
    parse: Callable,
    model: Callable,
    *,
    model_id: str | None = None,
    params: Mapping | None = None,
    cache: CallCache | None = None,
    concurrency: int = 8,
    max_retries: int = 4,
    progress: bool = True,
    description: str = "model calls",
) -> pd.DataFrame:
    """Call a model on many prompts and parse every answer strictly, retrying an unparseable one once.

    An answer that ``parse`` rejects with :class:`ParseError` is asked for again with a fresh call (a
    separate cache entry, ``params["attempt"] = 2``, so a re-run resumes it like the first); a second
    failure is flagged in ``error``, never replaced by a default.

    Parameters
    ----------
    prompts : Series of str
        Indexed by a unique key per prompt (item id, document id).
    parse : callable
        ``parse(key, text) -> value``; raises :class:`ParseError` when ``text`` does not follow the format.
    model, model_id, params, cache, concurrency, max_retries, progress, description
        As in :func:`call_many`.

    Returns
    -------
    DataFrame
        Indexed like ``prompts``: ``value`` (what ``parse`` returned, or None), ``error`` (why there is no
        value: the call failed, or the answer was unparseable after the retry) and ``attempts`` (1 or 2).
        ``attrs`` holds the ``model`` id and ``params``.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.models import ParseError, call_and_parse
    >>> def parse(key, text):
    ...     if not text.isdigit():
    ...         raise ParseError(f"{text!r} is not a number")
    ...     return int(text)
    >>> answers = {"2+2": "4", "3+3": "six"}
    >>> out = call_and_parse(pd.Series({"a": "2+2", "b": "3+3"}), parse, answers.get, model_id="m", progress=False)
    >>> out[["value", "error", "attempts"]]
      value                                       error  attempts
    a     4                                        <NA>         1
    b  None  unparseable after retry: 'six' is not a number         2
    """
    _check_prompts(prompts)
    if not prompts.index.is_unique:
        raise ValueError("`prompts` must have a unique index (one key per prompt).")
    if not callable(parse):
        raise TypeError(f"`parse` must be a callable (key, text) -> value; got {type(parse).__name__}.")
    mid, merged = model_identity(model, model_id=model_id, params=params, cache=cache)
    options = dict(model_id=mid, cache=cache, concurrency=concurrency, max_retries=max_retries, progress=progress)
    values: dict = {}
    errors: dict = {}
    attempts = dict.fromkeys(prompts.index, 1)

    def collect(keys, calls, attempt):
        failed = []
        for key, text, error in zip(keys, calls["text"].astype(object), calls["error"].astype(object), strict=True):
            if isinstance(error, str):
                errors[key] = error
                continue
            try:
                values[key] = parse(key, text)
                errors.pop(key, None)
            except ParseError as exc:
                errors[key] = f"unparseable after retry: {exc}"
                failed.append(key)
        return failed

    first = call_many(prompts, model, params=merged, description=description, **options)
    retry = collect(prompts.index, first, 1)
    if retry:
        again = call_many(prompts.loc[retry], model, params={**merged, "attempt": 2},
                          description=f"{description} (retry)", **options)
        attempts.update(dict.fromkeys(retry, 2))
        collect(retry, again, 2)
    table = pd.DataFrame({
        "value": pd.Series([values.get(k) for k in prompts.index], index=prompts.index, dtype=object),
        "error": pd.array([errors.get(k) for k in prompts.index], dtype="string"),
        "attempts": pd.array([attempts[k] for k in prompts.index], dtype="Int64"),
    }, index=prompts.index)
    table.attrs.update({"model": mid, "params": merged})
    return table


def usage_summary(calls: pd.DataFrame, *, price_per_million: Mapping[str, float] | None = None,
                  batch_discount: float = 0.5) -> pd.DataFrame:
    """Total calls, tokens and (when prices are given) cost of a run.

    Parameters
    ----------
    calls : DataFrame
        Output of :func:`call_many`, or a results table with the same columns.
    price_per_million : mapping, optional
        ``{"prompt": usd, "completion": usd}`` per million tokens (the per-call price).
    batch_discount : float, default 0.5
        Rows whose optional ``batch`` column is True were answered through a provider's batch API
        (:mod:`evalkit.batch`) and cost ``batch_discount`` times the per-call price: OpenAI's and
        Anthropic's batch price is half the per-call price. Set it to your provider's ratio.

    Returns
    -------
    DataFrame
        One row: ``n, n_cached, n_errors, n_attempts, prompt_tokens, completion_tokens, cost_usd``. Tokens and
        cost count the calls this run made (not cached rows) and only what the model reported; cost is
        missing (NaN) without prices or usage, ``n_attempts`` without an ``attempts`` column.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.models import Reply, call_many, usage_summary
    >>> model = lambda prompt: Reply("ok", prompt_tokens=1000, completion_tokens=10)
    >>> calls = call_many(pd.Series(["a", "b"]), model, model_id="m", progress=False)
    >>> usage_summary(calls, price_per_million={"prompt": 1.0, "completion": 4.0})["cost_usd"].round(5).tolist()
    [0.00208]
    >>> usage_summary(calls.assign(batch=True), price_per_million={"prompt": 1.0, "completion": 4.0})["cost_usd"].round(5).tolist()
    [0.00104]
    """
    calls = check_dataframe(calls, "calls")
    check_columns(calls, ["cached", "error", "prompt_tokens", "completion_tokens"], "calls")
    batch_discount = check_number(batch_discount, "batch_discount", low=0.0, high=1.0)
    if price_per_million is not None:
        if not isinstance(price_per_million, Mapping):
            raise TypeError("`price_per_million` must be a mapping such as {'prompt': 1.0, 'completion': 4.0} (USD per "
                            f"million tokens); got {type(price_per_million).__name__}.")
        unknown = sorted(map(str, set(price_per_million) - {"prompt", "completion"}))
        if unknown:
            raise ValueError(f"`price_per_million` has key(s) {unknown}; its keys are 'prompt' and 'completion'.")
        for kind, price in price_per_million.items():
            check_number(price, f"price_per_million[{kind!r}]", low=0.0)
            if np.isinf(price):
                raise ValueError(f"`price_per_million[{kind!r}]` must be finite; got {price!r}.")
    for column in ("prompt_tokens", "completion_tokens"):
        values = calls[column]
        numeric = pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values)
        if not numeric:
            raise TypeError(f"`calls` column {column!r} must hold token counts (whole numbers >= 0, missing where the "
                            f"model reported none); got dtype {values.dtype}.")
        counts = values.to_numpy(dtype=float, na_value=np.nan)
        bad = ~(np.isnan(counts) | ((counts >= 0) & np.isfinite(counts) & (counts == np.round(counts))))
        if bad.any():
            raise ValueError(f"`calls` column {column!r} must hold token counts (whole numbers >= 0, missing where the "
                             f"model reported none); got {counts[bad][0]:g} at row {show(values.index[bad][0])}.")
    made = calls[~calls["cached"].astype(bool)]  # what this run paid for
    prompt_tokens = int(made["prompt_tokens"].fillna(0).sum())
    completion_tokens = int(made["completion_tokens"].fillna(0).sum())
    has_usage = made["prompt_tokens"].notna().any()
    cost = np.nan
    if price_per_million is not None and has_usage:
        batch = (pd.array(made["batch"], dtype="boolean").fillna(False).to_numpy(dtype=bool) if "batch" in made
                 else np.zeros(len(made), dtype=bool))
        rate = np.where(batch, batch_discount, 1.0)
        tokens = {kind: float(made[f"{kind}_tokens"].fillna(0).to_numpy(dtype=float) @ rate) for kind in ("prompt", "completion")}
        cost = sum(tokens[kind] / 1e6 * price_per_million.get(kind, 0.0) for kind in tokens)
    return pd.DataFrame([{
        "n": len(calls), "n_cached": int(calls["cached"].sum()), "n_errors": int(calls["error"].notna().sum()),
        "n_attempts": int(calls.loc[~calls["cached"], "attempts"].fillna(0).sum()) if "attempts" in calls else np.nan,
        "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens, "cost_usd": cost,
    }])
