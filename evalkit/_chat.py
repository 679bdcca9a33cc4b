"""The OpenAI-compatible chat-completions wire: a lean HTTP client, its errors, and the reply checks of both lanes.

Live calls (:class:`evalkit.models.OpenAIChat`) and batch output lines (:mod:`evalkit.batch`) read a reply
through the same two functions: :func:`reply_from_json` (every shape a server may send that is not a chat
completion raises :class:`ReplyError` with a plain message) and :func:`checked_reply` (text, not anything
else, and valid UTF-8: lone surrogates replaced and counted).

The HTTP client is the standard library's ``http.client`` with a keep-alive pool, chosen by measurement:
against the bundled test server in its own process (2,000 calls at 50 ms latency, 128 threads, 2 cores), a
bare ``http.client`` loop costs about 0.15 ms of client CPU per call, urllib3's connection pool (which wraps
``http.client``) about 0.23 ms and the official ``openai`` client (httpx) 3 to 4.6 ms; ``http.client`` also
needs no dependency, so the base install makes live calls. The one thing it lacks is a wall-clock deadline
(a socket timeout bounds one read, so a server trickling bytes holds a call forever): here every blocking
step of a request (connect, TLS handshake, send, each read of the status line, headers and body) is given
only the time left before the request's deadline. Private floor: imports nothing from evalkit.
"""

from __future__ import annotations

import base64
import collections
import email.utils
import http.client
import io
import json
import math
import os
import select
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import unquote, urlsplit


# ------------------------------------------------------------------ replies
@dataclass(frozen=True)
class Reply:
    """A model's answer with the token usage it reported (None when not reported)."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def __post_init__(self):
        if not isinstance(self.text, str):
            raise TypeError(f"a model's Reply.text must be str; got {type(self.text).__name__}.")


class ReplyError(RuntimeError):
    """A server answered, but the reply holds no usable answer (no choices, no message, content that is not text)."""


def reply_from_bytes(body: bytes, content_type: str = "") -> Reply:
    """A chat-completions response body (bytes) as a Reply; anything else raises ReplyError."""
    try:
        data = json.loads(body)
    except ValueError:  # also bytes that are not UTF-8
        raise ReplyError(f"the server's reply is not JSON ({content_type or 'no content type'}, "
                         f"{len(body)} bytes)") from None
    return reply_from_json(data)


def reply_from_json(data) -> Reply:
    """A parsed chat-completions body as a Reply: the one check of a reply's shape, for live calls and batch lines."""
    if not isinstance(data, dict):
        raise ReplyError(f"the server's reply is a JSON {_json_type(data)}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ReplyError("the server returned no choices")
    message = choices[0].get("message") if isinstance(choices[0], dict) else None
    if not isinstance(message, dict):
        raise ReplyError("the server's first choice has no message")
    content = message.get("content")
    if content is None:
        refusal = message.get("refusal")
        raise ReplyError(f"the model refused: {refusal}" if isinstance(refusal, str) else "the message has no content")
    if not isinstance(content, str):
        raise ReplyError(f"content is not text (a JSON {_json_type(content)})")
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    count = lambda name: usage.get(name) if type(usage.get(name)) is int else None  # noqa: E731
    return Reply(text=content, prompt_tokens=count("prompt_tokens"), completion_tokens=count("completion_tokens"))


def _json_type(value) -> str:
    return {dict: "dict", list: "list", str: "string", bool: "boolean", type(None): "null"}.get(type(value),
                                                                                              type(value).__name__)


def clean_text(text: str) -> tuple[str, int]:
    """Replace lone surrogates (valid in JSON, not in UTF-8) by U+FFFD; return the text and how many."""
    try:
        text.encode("utf-8")
        return text, 0
    except UnicodeEncodeError:
        chars = ["\ufffd" if "\ud800" <= ch <= "\udfff" else ch for ch in text]
        return "".join(chars), sum(ch == "\ufffd" for ch in chars) - text.count("\ufffd")


def checked_reply(value) -> tuple[Reply, int]:
    """What a model returned (str or Reply) as a Reply with valid UTF-8 text, and how many surrogates were replaced.

    Raises TypeError for anything that is not text: the caller makes it an error row.
    """
    if isinstance(value, str):
        reply = Reply(value)
    elif isinstance(value, Reply):  # a Reply checks its own text when it is made
        reply = value
    else:
        raise TypeError(f"a model must return str or Reply; got {type(value).__name__}.")
    text, replaced = clean_text(reply.text)
    return (Reply(text, reply.prompt_tokens, reply.completion_tokens) if replaced else reply), replaced


# ------------------------------------------------------------------ errors
class APIConnectionError(ConnectionError):
    """The server could not be reached, or the connection broke before a whole reply arrived."""


class APIStatusError(RuntimeError):
    """The server answered with an HTTP error status; ``status_code`` and ``headers`` (e.g. Retry-After) are kept.

    Subclasses carry the names the official client gives them (``RateLimitError`` for 429, ...), so an error
    row reads the same whichever client made the call.
    """

    def __init__(self, message: str, *, status_code: int, headers=None):
        super().__init__(message)
        self.status_code = status_code
        self.headers = headers if headers is not None else {}


class BadRequestError(APIStatusError): ...
class AuthenticationError(APIStatusError): ...
class PermissionDeniedError(APIStatusError): ...
class NotFoundError(APIStatusError): ...
class ConflictError(APIStatusError): ...
class UnprocessableEntityError(APIStatusError): ...
class RateLimitError(APIStatusError): ...
class InternalServerError(APIStatusError): ...


_BY_STATUS = {400: BadRequestError, 401: AuthenticationError, 403: PermissionDeniedError, 404: NotFoundError,
              409: ConflictError, 422: UnprocessableEntityError, 429: RateLimitError}


def status_error(status: int, headers, body: bytes, redact=lambda text: text) -> APIStatusError:
    """The error for a reply with an HTTP error status: the server's own message when it sent one, redacted."""
    detail = body.decode("utf-8", "replace").strip()[:500]
    try:
        data = json.loads(body)
        error = data.get("error") if isinstance(data, dict) else None
        message = error.get("message") if isinstance(error, dict) else error
        if isinstance(message, str):
            detail = message
    except ValueError:
        pass
    cls = _BY_STATUS.get(status, InternalServerError if status >= 500 else APIStatusError)
    return cls(redact(f"Error code: {status} - {detail or http.client.responses.get(status, 'no message')}"),
               status_code=status, headers=headers)


def retry_after(headers) -> float | None:
    """Seconds a server asked to wait (``retry-after-ms``, or Retry-After in seconds or as an HTTP date)."""
    try:
        if headers.get("retry-after-ms") is not None:
            return max(0.0, float(headers["retry-after-ms"]) / 1000)
        value = headers.get("retry-after")
        if value is None:
            return None
        try:
            return max(0.0, float(value))
        except ValueError:
            when = email.utils.parsedate_to_datetime(value)
            return max(0.0, (when - datetime.now(UTC)).total_seconds())
    except (TypeError, ValueError, AttributeError):
        return None  # an unreadable header: the caller falls back to its backoff


# ------------------------------------------------------------------ the HTTP client
def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline has passed")
    return left


class _DeadlineIO(io.RawIOBase):
    """A socket's reads, each allowed only the time left before the deadline (so the whole reply is bounded).

    It reads through the socket's own raw file, which keeps the socket open until the reply is read even when
    the connection is closed first (a reply with ``Connection: close`` hands its socket over to the response).
    """

    def __init__(self, sock, deadline: float):
        self._sock, self._deadline = sock, deadline
        self._raw = sock.makefile("rb", buffering=0)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        self._sock.settimeout(_left(self._deadline))
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """What ``HTTPResponse`` reads its status line, headers and body from: the socket, through ``_DeadlineIO``."""

    def __init__(self, sock, deadline: float):
        self._sock, self._deadline = sock, deadline

    def makefile(self, mode: str):
        return io.BufferedReader(_DeadlineIO(self._sock, self._deadline))


class _Connection(http.client.HTTPConnection):
    """An HTTP connection whose every step is bounded by ``deadline`` (time.monotonic), set before each request."""

    deadline = math.inf

    def connect(self) -> None:
        self.timeout = _left(self.deadline)
        super().connect()  # TCP, and a proxy's CONNECT, within the time left
        self.sock.settimeout(_left(self.deadline))  # what is left then bounds a TLS handshake (ssl keeps one deadline)

    def response_class(self, sock, *args, method=None):  # what getresponse() builds: reads bounded by the deadline
        return http.client.HTTPResponse(_DeadlineSocket(sock, self.deadline), method=method)

    def _send_output(self, message_body=None, encode_chunked=False):
        # The request line, headers and a body of bytes in one write (http.client writes the body on its own): one
        # system call a request instead of two, a third of the client's CPU per call on a loopback server.
        if isinstance(message_body, bytes) and not encode_chunked:
            self._buffer.extend((b"", b""))
            message = b"\r\n".join(self._buffer) + message_body
            del self._buffer[:]
            self.send(message)
            return
        super()._send_output(message_body, encode_chunked)


class _TLSConnection(http.client.HTTPSConnection, _Connection):
    """HTTPS: ``HTTPSConnection.connect`` calls ``_Connection.connect`` (the MRO) before its handshake."""


class _Stale(Exception):
    """A reused connection was closed by the server before any byte of the reply."""


def _dropped(sock) -> bool:
    """An idle kept-alive socket that is readable has been closed by the server (or holds junk): do not reuse it."""
    try:
        poller = select.poll()
        poller.register(sock, select.POLLIN)
        return bool(poller.poll(0))
    except (AttributeError, ValueError, OSError):  # no poll() on this platform, or a closed socket
        try:
            return bool(select.select([sock], [], [], 0)[0])
        except (ValueError, OSError):
            return True


class Pool:
    """Keep-alive connections to one server, shared by the threads that post to it.

    Idle connections wait in a deque (``append``/``pop`` are atomic, so no lock); a thread takes one, or opens
    one, for each request and gives it back when the whole reply has been read. A proxy from the environment
    (``https_proxy``, ``http_proxy``, ``no_proxy``) is used as the official client would.
    """

    def __init__(self, base_url: str):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"`base_url` must be an http:// or https:// URL; got {base_url!r}.")
        self.tls = parts.scheme == "https"
        self.host, self.port = parts.hostname, parts.port or (443 if self.tls else 80)
        self.path = parts.path.rstrip("/")
        self._idle: collections.deque = collections.deque()
        self._pid = os.getpid()
        self._proxy = self._proxy_for(parts.scheme, self.host)

    @staticmethod
    def _proxy_for(scheme: str, host: str):
        import urllib.request

        proxy = urllib.request.getproxies().get(scheme)
        if not proxy or urllib.request.proxy_bypass(host):
            return None
        parts = urlsplit(proxy if "://" in proxy else f"http://{proxy}")
        auth = {}
        if parts.username is not None:
            token = base64.b64encode(f"{unquote(parts.username)}:{unquote(parts.password or '')}".encode()).decode()
            auth = {"Proxy-Authorization": f"Basic {token}"}
        return parts.hostname, parts.port or 8080, auth

    def _open(self) -> _Connection:
        if self._proxy is None:
            return (_TLSConnection if self.tls else _Connection)(self.host, self.port)
        host, port, auth = self._proxy
        if self.tls:  # a tunnel through the proxy, TLS end to end
            conn = _TLSConnection(host, port)
            conn.set_tunnel(self.host, self.port, headers=auth)
            return conn
        conn = _Connection(host, port)  # plain HTTP: the proxy gets the absolute URL
        conn.proxy_headers = auth
        return conn

    def _target(self, conn: _Connection, path: str) -> tuple[str, dict]:
        extra = getattr(conn, "proxy_headers", None)
        if extra is None:
            return self.path + path, {}
        return f"http://{self.host}:{self.port}{self.path}{path}", extra

    def _take(self) -> tuple[_Connection, bool]:
        if os.getpid() != self._pid:  # a forked process: the parent's connections are the parent's
            self._idle, self._pid = collections.deque(), os.getpid()
        while True:
            try:
                conn = self._idle.pop()
            except IndexError:
                return self._open(), False
            if conn.sock is not None and not _dropped(conn.sock):
                return conn, True
            conn.close()

    def post(self, path: str, body: bytes, headers: dict, timeout: float) -> tuple[int, object, bytes]:
        """POST ``body`` to ``base_url + path``: ``(status, headers, body)`` of the reply, all of it within ``timeout``.

        Raises TimeoutError when the whole reply has not arrived within ``timeout`` seconds of the call, and
        :class:`APIConnectionError` when the server cannot be reached or the connection breaks.
        """
        deadline = time.monotonic() + timeout
        try:
            conn, reused = self._take()
            try:
                return self._exchange(conn, reused, path, body, headers, deadline)
            except _Stale:  # the server closed this kept-alive connection as the request went out: once more
                return self._exchange(self._open(), False, path, body, headers, deadline)
        except TimeoutError:
            raise TimeoutError(f"no complete reply within the {timeout:g} s deadline") from None
        except (OSError, http.client.HTTPException) as exc:
            raise APIConnectionError(f"Connection error ({type(exc).__name__}: {exc})") from None

    def _exchange(self, conn: _Connection, reused: bool, path: str, body: bytes, headers: dict, deadline: float):
        """One request and its whole reply on ``conn``, which goes back to the pool only after a clean exchange."""
        conn.deadline = deadline
        target, extra = self._target(conn, path)
        try:
            try:
                if conn.sock is not None:
                    conn.sock.settimeout(_left(deadline))
                conn.request("POST", target, body, {**headers, **extra} if extra else headers)
                response = conn.getresponse()
            except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError):
                if reused:  # no byte of a reply came back: the request was not answered
                    raise _Stale from None
                raise
            data = response.read()
        except BaseException:
            conn.close()
            raise
        if conn.sock is not None and not response.will_close:
            self._idle.append(conn)
        else:
            conn.close()
        return response.status, response.headers, data

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()
