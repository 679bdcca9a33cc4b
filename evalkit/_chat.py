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
only the time left before the request's deadline. A reply's body is read only up to a size limit (from its
Content-Length, and as it arrives), an API key is checked before it is sent, and :class:`Secrets` removes a key or a
proxy's credentials from any text in every form they take. Proxies are found in the environment and chosen as the
official client's httpx chooses them; an ``https://`` proxy is spoken to over TLS. Many calls at once from one
thread go through :mod:`evalkit._chat_loop` instead, the same contract on an event loop. Private floor: imports
nothing from evalkit.
"""

from __future__ import annotations

import base64
import collections
import email.utils
import http.client
import io
import ipaddress
import json
import math
import os
import re
import select
import socket
import ssl
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import quote, quote_plus, unquote, urlsplit


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


# ------------------------------------------------------------------ secrets
def checked_key(value: str, variable: str) -> str | None:
    """An API key from the environment variable ``variable``, as it will be sent: the whitespace around it (a key pasted
    from a file often ends in a newline) stripped; None when nothing is left. A key with a space, a control character
    or a character outside printable ASCII inside it is refused in one line that does not show it (an HTTP header
    could not carry it, and the error a client raises then holds the whole key)."""
    key = value.strip()
    if not key:
        return None
    bad = next((i for i, ch in enumerate(key) if not ("!" <= ch <= "~")), None)
    if bad is not None:
        kind = "a space" if key[bad].isspace() else "a control character" if not key[bad].isprintable() else \
            "a character outside printable ASCII"
        raise ValueError(f"the environment variable {variable} holds an API key with {kind} at position {bad + 1} of "
                         f"{len(key)}; an API key is printable ASCII without spaces: set it again (the key is not shown).")
    return key


#: Forms of a secret shorter than this are not searched for (they would match ordinary text); a short password is
#: still found inside the longer forms it is part of (a proxy's ``user:password``, and that in base64).
MIN_SECRET = 4


def _forms(secret: str) -> set[str]:
    """Every form a secret takes in a message: as is, stripped, escaped (repr, JSON, bytes), URL-quoted and base64."""
    raw = secret.encode("utf-8", "surrogatepass")
    forms = {secret, secret.strip(), repr(secret)[1:-1], json.dumps(secret)[1:-1], repr(raw)[2:-1],
             secret.encode("unicode_escape").decode("ascii"), quote(secret, safe=""), quote_plus(secret)}
    encoded = {base64.b64encode(raw).decode("ascii"), base64.urlsafe_b64encode(raw).decode("ascii")}
    return {f for f in forms | encoded | {f.rstrip("=") for f in encoded} if len(f) >= MIN_SECRET}


class Secrets:
    """Removes secrets (an API key, a proxy's credentials) from text, in every form :func:`_forms` lists.

    Examples
    --------
    >>> from evalkit._chat import Secrets
    >>> hide = Secrets("sk-abc123\\n")
    >>> hide("Invalid header value b'Bearer sk-abc123\\\\n'")
    "Invalid header value b'Bearer [redacted]'"
    """

    def __init__(self, *secrets: str | None):
        forms = set().union(*(_forms(secret) for secret in secrets if secret))
        self._forms = sorted(forms, key=len, reverse=True)  # the longest first: a form inside another goes with it

    def __bool__(self) -> bool:
        return bool(self._forms)

    def __call__(self, text: str) -> str:
        for form in self._forms:
            if form in text:
                text = text.replace(form, "[redacted]")
        return text

    def found(self, text: str) -> bool:
        return any(form in text for form in self._forms)

    def scrub(self, exc: BaseException) -> BaseException:
        """``exc`` (and the exceptions chained to it) with its message's secrets removed, in place."""
        seen = set()
        first = exc
        while exc is not None and id(exc) not in seen:
            seen.add(id(exc))
            exc.args = tuple(self(a) if isinstance(a, str) else a for a in exc.args)
            exc = exc.__cause__ or exc.__context__
        return first


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


class _TunnelledTLS:
    """TLS with the server inside a TLS connection with a proxy (a CONNECT tunnel through an ``https://`` proxy).

    The standard library cannot wrap a TLS socket in another, so the inner TLS runs over memory buffers
    (``ssl.MemoryBIO``) and its records go through the outer socket: what ``HTTPResponse`` and the pool use of a
    socket (``sendall``, ``makefile``, ``settimeout``, ``fileno``, ``close``) is here, the reads bounded by the
    timeouts the caller sets on the outer socket.
    """

    def __init__(self, sock, context: ssl.SSLContext, server_hostname: str, deadline: float):
        self._sock = sock
        self._incoming, self._outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        self._tls = context.wrap_bio(self._incoming, self._outgoing, server_hostname=server_hostname)
        self._run(self._tls.do_handshake, deadline=deadline)

    def _run(self, step, *args, deadline: float | None = None):
        while True:
            try:
                result = step(*args)
            except ssl.SSLWantReadError:
                self._flush()
                if deadline is not None:
                    self._sock.settimeout(_left(deadline))
                data = self._sock.recv(65536)
                if data:
                    self._incoming.write(data)
                else:
                    self._incoming.write_eof()
                continue
            self._flush()
            return result

    def _flush(self) -> None:
        data = self._outgoing.read()
        if data:
            self._sock.sendall(data)

    def sendall(self, data) -> None:
        view = memoryview(data).cast("B")
        while view:
            view = view[self._run(self._tls.write, view):]

    def recv_into(self, buffer, nbytes: int = 0) -> int:
        try:
            return self._run(self._tls.read, nbytes or len(buffer), buffer)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            return 0

    def makefile(self, mode: str = "rb", buffering=None):
        return _TunnelReader(self)

    def settimeout(self, timeout) -> None:
        self._sock.settimeout(timeout)

    def fileno(self) -> int:
        return self._sock.fileno()

    def close(self) -> None:
        self._sock.close()


class _TunnelReader(io.RawIOBase):
    """The raw reads of a :class:`_TunnelledTLS` (what ``socket.makefile("rb", buffering=0)`` gives of a socket)."""

    def __init__(self, tunnel: _TunnelledTLS):
        self._tunnel = tunnel

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        return self._tunnel.recv_into(buffer)


class _ProxyTLSConnection(_TLSConnection):
    """HTTPS to a server through an ``https://`` proxy: TLS with the proxy, CONNECT over it, then TLS with the server
    inside the tunnel (:class:`_TunnelledTLS`); every step within the request's deadline."""

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), _left(self.deadline), self.source_address)
        sock.settimeout(_left(self.deadline))
        self.sock = self._context.wrap_socket(sock, server_hostname=self.host)  # TLS with the proxy
        self._tunnel()  # http.client's CONNECT, over that TLS connection
        self.sock = _TunnelledTLS(self.sock, self._context, self._tunnel_host, self.deadline)


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


_PROXY_PORTS = {"http": 80, "https": 443}


@dataclass(frozen=True)
class Proxy:
    """A proxy from the environment: its scheme (``http`` or ``https``), host, port and credentials (None without)."""

    scheme: str
    host: str
    port: int
    username: str | None = None
    password: str | None = None

    @property
    def headers(self) -> dict:
        if self.username is None:
            return {}
        return {"Proxy-Authorization": f"Basic {base64.b64encode(self.credentials.encode()).decode()}"}

    @property
    def credentials(self) -> str | None:
        return None if self.username is None else f"{self.username}:{self.password or ''}"

    def __str__(self) -> str:  # never the credentials
        return f"{self.scheme}://{self.host}:{self.port}"


def _no_proxy_matches(entry: str, scheme: str, host: str, port: int | None) -> bool:
    """Whether one ``NO_PROXY`` entry covers the URL, as httpx reads it (``get_environment_proxies`` and
    ``URLPattern``): ``*`` everything; ``scheme://host[:port]`` that pattern; an IP address (an IPv6 one with or
    without brackets) exactly; ``localhost`` exactly; any other name with its subdomains (``.name`` its subdomains
    only), with a ``:port`` that one port. ``port`` is None for the scheme's default port, as httpx's URL gives it,
    so an entry naming a default port matches nothing, as with httpx. One difference: httpx reads a CIDR range
    (``10.0.0.0/8``) as its network address alone, evalkit as every address in it (curl's rule), which is what the
    entry says."""
    if entry == "*":
        return True
    pattern_scheme, pattern = "", entry
    if "://" in entry:
        pattern_scheme, pattern = entry.split("://", 1)
        pattern_scheme = "" if pattern_scheme == "all" else pattern_scheme.lower()
    if pattern_scheme and pattern_scheme != scheme:
        return False
    address = pattern.strip("[]") if "://" not in entry else None
    if address is not None:
        try:
            network = ipaddress.ip_network(address, strict=False)
        except ValueError:
            network = None
        if network is not None:
            try:
                return ipaddress.ip_address(host.strip("[]")) in network
            except ValueError:
                return False
        if address.lower() == "localhost":
            return host.lower() == "localhost"
        pattern = "*" + pattern
    match = re.fullmatch(r"(?P<host>\[[^\]]*\]|[^:/]*)(?::(?P<port>\d+))?(?:/.*)?", pattern)
    if match is None:
        return False
    want, want_port = match["host"].strip("[]").lower(), match["port"]
    if want_port is not None and int(want_port) != port:
        return False
    host = host.lower()
    if want in ("", "*"):
        return True
    if want.startswith("*."):
        return host.endswith(want[1:]) and len(host) > len(want) - 1
    if want.startswith("*"):
        return host == want[1:] or host.endswith("." + want[1:])
    return host == want


def proxy_for(scheme: str, host: str, port: int) -> Proxy | None:
    """The proxy the official client (httpx) would use for a URL, from the environment (``HTTPS_PROXY``,
    ``HTTP_PROXY``, ``ALL_PROXY``, ``NO_PROXY``, lower or upper case), or None.

    The scheme's own variable comes before ``ALL_PROXY``; a ``NO_PROXY`` entry that covers the URL
    (:func:`_no_proxy_matches`) means no proxy; a proxy given without a scheme is ``http://``, without a port on
    its scheme's default (80, 443). A proxy evalkit cannot speak to (``socks5://``) is refused, naming it.
    """
    import urllib.request

    found = urllib.request.getproxies()  # as httpx reads them: the environment (and a system's settings)
    default_port = None if port == _PROXY_PORTS[scheme] else port
    if any(_no_proxy_matches(e.strip(), scheme, host, default_port) for e in found.get("no", "").split(",") if e.strip()):
        return None
    url = found.get(scheme) or found.get("all")
    if not url:
        return None
    parts = urlsplit(url if "://" in url else f"http://{url}")
    if parts.scheme not in _PROXY_PORTS or not parts.hostname:
        shown = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        raise ValueError(f"the proxy for {scheme}:// URLs in the environment is {shown}: evalkit's client speaks to "
                         "http:// and https:// proxies only; use one of those, or exempt the host with NO_PROXY.")
    return Proxy(parts.scheme, parts.hostname, parts.port or _PROXY_PORTS[parts.scheme],
                 None if parts.username is None else unquote(parts.username),
                 None if parts.password is None else unquote(parts.password))


#: The largest reply body read by default (16 MiB): a chat completion is a few kilobytes.
MAX_REPLY_BYTES = 16 * 2 ** 20


class ReplyTooLarge(ReplyError):
    """A reply's body is larger than the limit: refused, as its Content-Length says or as it arrives."""

    @classmethod
    def declared(cls, url: str, length: int, limit: int) -> ReplyTooLarge:
        return cls(f"the reply from {url} declares {length:,} bytes, more than the max_reply_bytes limit of "
                   f"{limit:,}; it was not read.")

    @classmethod
    def arriving(cls, url: str, limit: int) -> ReplyTooLarge:
        return cls(f"the reply from {url} is larger than the max_reply_bytes limit of {limit:,} bytes; it was not "
                   "read further.")


class Pool:
    """Keep-alive connections to one server, shared by the threads that post to it.

    Idle connections wait in a deque (``append``/``pop`` are atomic, so no lock); a thread takes one, or opens
    one, for each request and gives it back when the whole reply has been read. A proxy from the environment is
    used as the official client (httpx) would use it (:func:`proxy_for`), over TLS when it is an ``https://`` one.
    A reply's body is read up to ``max_reply_bytes``.
    """

    def __init__(self, base_url: str, *, max_reply_bytes: int = MAX_REPLY_BYTES):
        parts = urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"`base_url` must be an http:// or https:// URL; got {base_url!r}.")
        self.tls = parts.scheme == "https"
        self.host, self.port = parts.hostname, parts.port or (443 if self.tls else 80)
        self.path = parts.path.rstrip("/")
        self.url = f"{parts.scheme}://{self.host}:{self.port}{self.path}"  # never the credentials of a URL
        self.max_reply_bytes = max_reply_bytes
        self._idle: collections.deque = collections.deque()
        self._pid = os.getpid()
        self.proxy = proxy_for(parts.scheme, self.host, self.port)

    @property
    def secrets(self) -> tuple:
        """What a message must never hold: the proxy's password and its ``user:password``."""
        return () if self.proxy is None or self.proxy.username is None else (self.proxy.password, self.proxy.credentials)

    def _open(self) -> _Connection:
        proxy = self.proxy
        if proxy is None:
            return (_TLSConnection if self.tls else _Connection)(self.host, self.port)
        if self.tls:  # a tunnel through the proxy, TLS end to end (and with an https:// proxy, TLS with it too)
            conn = (_ProxyTLSConnection if proxy.scheme == "https" else _TLSConnection)(proxy.host, proxy.port)
            conn.set_tunnel(self.host, self.port, headers=proxy.headers)
            return conn
        # plain HTTP to the server: the proxy gets the absolute URL, over TLS when it is an https:// proxy
        conn = (_TLSConnection if proxy.scheme == "https" else _Connection)(proxy.host, proxy.port)
        conn.proxy_headers = proxy.headers
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
            through = f" through the proxy {self.proxy}" if self.proxy is not None else ""
            raise APIConnectionError(f"Connection error{through} ({type(exc).__name__}: {exc})") from None

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
            data = self._body(response)
        except BaseException:
            conn.close()
            raise
        if conn.sock is not None and not response.will_close:
            self._idle.append(conn)
        else:
            conn.close()
        return response.status, response.headers, data

    def _body(self, response) -> bytes:
        """The reply's body, refused past ``max_reply_bytes``: at once when its Content-Length says so, else (a chunked
        body, or one without a length) as it arrives, so an endless or huge body costs at most the limit."""
        limit = self.max_reply_bytes
        if response.length is not None and response.length <= limit:
            return response.read()  # the usual reply: one read of its declared length
        if response.length is not None:
            raise ReplyTooLarge.declared(self.url, response.length, limit)
        chunks, size = [], 0
        while chunk := response.read(min(1 << 16, limit + 1 - size)):
            size += len(chunk)
            if size > limit:
                raise ReplyTooLarge.arriving(self.url, limit)
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()
