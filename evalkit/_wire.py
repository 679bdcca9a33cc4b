"""The OpenAI-compatible chat-completions wire: evalkit's policies on aiohttp's HTTP client, and the reply checks of
both lanes.

Live calls (:class:`evalkit.models.OpenAIChat`) and batch output lines (:mod:`evalkit.batch`) read a reply
through the same two functions: :func:`reply_from_json` (every shape a server may send that is not a chat
completion, and a completion cut by ``max_tokens`` or a content filter, raises :class:`ReplyError` with a plain
message) and :func:`checked_reply` (text, not anything else, and valid UTF-8: lone surrogates replaced and counted).

HTTP itself is aiohttp's (framing, interim 1xx replies, keep-alive, chunked and compressed bodies, TLS, proxies'
CONNECT tunnels); :class:`Wire` writes evalkit's policies on top of one ``aiohttp.ClientSession``: one deadline over
the whole reply (``ClientTimeout(total=)``), a body read only up to a size limit (refused at once when its
Content-Length says so, else as it arrives), idle connections dropped after :data:`KEEPALIVE` seconds, a request that
a kept-alive connection lost before any reply sent once more at once (and counted), no redirects followed, TLS
verified against the system's (or ``SSL_CERT_FILE``'s) certificates, a proxy chosen from the environment as the
official client's httpx chooses it (:func:`proxy_for`), and errors that name what went wrong without the key
(:class:`Secrets`). Every session lives on :func:`call_loop`, an event loop in a daemon thread of evalkit's own, so a
call from a thread, from a notebook whose loop is running, or from :func:`evalkit.models.call_many` goes through the
same connections. Private floor: imports nothing from evalkit.
"""

from __future__ import annotations

import asyncio
import base64
import concurrent.futures
import contextvars
import email.utils
import inspect
import ipaddress
import json
import os
import re
import ssl
import threading
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from http import HTTPStatus
from urllib.parse import quote, quote_plus, unquote, urlsplit


# ------------------------------------------------------------------ replies
@dataclass(frozen=True)
class Reply:
    """A model's answer with the token usage it reported (None when not reported).

    ``finish_reason`` is the server's (``"stop"``...; None when not reported); ``logprobs``, when the call asked for
    them, holds one dict per token of the answer, in order: ``{token: logprob}`` of the top alternatives, the chosen
    token included. The repr leaves out what is None.

    Examples
    --------
    >>> from evalkit.models import Reply
    >>> Reply("PASS", 12, 1)
    Reply(text='PASS', prompt_tokens=12, completion_tokens=1)
    >>> Reply("PASS", finish_reason="stop", logprobs=({"PASS": -0.01, "FAIL": -4.6},))
    Reply(text='PASS', finish_reason='stop', logprobs=({'PASS': -0.01, 'FAIL': -4.6},))
    """

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    logprobs: tuple | None = None

    def __post_init__(self):
        if not isinstance(self.text, str):
            raise TypeError(f"a model's Reply.text must be str; got {type(self.text).__name__}.")

    def __repr__(self) -> str:
        shown = [f"text={self.text!r}"] + [f"{name}={getattr(self, name)!r}" for name in
                                           ("prompt_tokens", "completion_tokens", "finish_reason", "logprobs")
                                           if getattr(self, name) is not None]
        return f"Reply({', '.join(shown)})"


class ReplyError(RuntimeError):
    """A server answered, but the reply holds no usable answer (no choices, no message, content that is not text, an
    answer cut by ``max_tokens`` or a content filter, a body that cannot be decoded)."""


#: finish_reason values that mean the text is not the model's whole answer: an error, never a verdict.
CUT = {"length": "the answer was cut at max_tokens", "content_filter": "the answer was withheld by a content filter"}


def reply_from_bytes(body: bytes, content_type: str = "", content_encoding: str = "") -> Reply:
    """A chat-completions response body (bytes) as a Reply; anything else raises ReplyError naming what it is.

    A body is decoded by the charset its content type declares (JSON's UTF-8 when it declares none); a charset Python
    does not know, or that does not decode the body, is named in the error, and so is a content encoding the body was
    left in (one the client could not undo).
    """
    charset = _charset(content_type)
    described = ", ".join(filter(None, [content_type or "no content type",
                                        content_encoding and f"content-encoding {content_encoding}"]))
    if charset is not None and charset.replace("_", "-") not in ("utf-8", "utf8"):
        try:
            body = body.decode(charset).encode("utf-8")
        except LookupError:
            raise ReplyError(f"the server's reply declares the charset {charset!r}, which has no decoder here "
                             f"({described}, {len(body)} bytes)") from None
        except UnicodeDecodeError as exc:
            raise ReplyError(f"the server's reply does not decode as its declared charset {charset!r} (byte "
                             f"{exc.start}; {described}, {len(body)} bytes)") from None
    try:
        data = json.loads(body)
    except UnicodeDecodeError as exc:
        raise ReplyError(f"the server's reply is not UTF-8 (byte {exc.start}; {described}, {len(body)} bytes)") from None
    except ValueError:
        raise ReplyError(f"the server's reply is not JSON ({described}, {len(body)} bytes)") from None
    return reply_from_json(data)


def _charset(content_type: str) -> str | None:
    for part in content_type.split(";")[1:]:
        name, _, value = part.strip().partition("=")
        if name.strip().lower() == "charset":
            return value.strip().strip('"').lower() or None
    return None


def reply_from_json(data) -> Reply:
    """A parsed chat-completions body as a Reply: the one check of a reply's shape, for live calls and batch lines.

    A ``finish_reason`` of ``"length"`` or ``"content_filter"`` raises :class:`ReplyError` naming it: the text (if
    any) is not the whole answer.
    """
    if not isinstance(data, dict):
        raise ReplyError(f"the server's reply is a JSON {_json_type(data)}, not an object")
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ReplyError("the server returned no choices")
    choice = choices[0] if isinstance(choices[0], dict) else {}
    finish = choice.get("finish_reason")
    finish = finish if isinstance(finish, str) else None
    if finish in CUT:
        raise ReplyError(f"{CUT[finish]} (finish_reason {finish!r}); no verdict is read from it")
    message = choice.get("message")
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
    return Reply(text=content, prompt_tokens=count("prompt_tokens"), completion_tokens=count("completion_tokens"),
                 finish_reason=finish, logprobs=_logprobs(choice.get("logprobs")))


def _logprobs(value) -> tuple | None:
    """``choices[0].logprobs`` as one ``{token: logprob}`` per answer token (its top alternatives and itself)."""
    if value is None:
        return None
    content = value.get("content") if isinstance(value, dict) else None
    if content is None:
        return None
    if not isinstance(content, list):
        raise ReplyError(f"logprobs.content is a JSON {_json_type(content)}, not a list")
    tokens = []
    for i, item in enumerate(content):
        entries = [item] + (item.get("top_logprobs") or []) if isinstance(item, dict) else [None]
        found = {}
        for entry in entries:
            if (not isinstance(entry, dict) or not isinstance(entry.get("token"), str)
                    or type(entry.get("logprob")) not in (int, float)):
                raise ReplyError(f"logprobs.content[{i}] is not a token with its logprob")
            found.setdefault(entry["token"], float(entry["logprob"]))
        tokens.append(found)
    return tuple(tokens)


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
    return (replace(reply, text=text) if replaced else reply), replaced


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
    >>> from evalkit._wire import Secrets
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
    return cls(redact(f"Error code: {status} - {detail or _phrase(status)}"),
               status_code=status, headers=headers)


def _phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "no message"


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




# ------------------------------------------------------------------ the wire: aiohttp under evalkit's policies
#: Seconds an idle kept-alive connection is kept (httpx's default): after a longer pause, in which a NAT or a load
#: balancer may have forgotten it, a call opens a new one instead of waiting for a reply that never comes.
KEEPALIVE = 5.0
#: The longest status line or header field read, and the most header fields (aiohttp's defaults are 8,190 bytes and
#: 128): a load balancer's 64 KiB cookie or a few hundred tracing headers are read; more is refused, naming it.
MAX_FIELD = 2 ** 17
MAX_HEADERS = 1024

#: The requests sent for the call being made in this context: the call engine sets a fresh list before each attempt
#: and the wire appends one entry per request it sends, so a request sent again counts as the attempt it is.
SENT: contextvars.ContextVar = contextvars.ContextVar("evalkit_requests_sent", default=None)

_loops: dict = {}  # the process's call loop and its thread, by process id
_starting = threading.Lock()
_left_behind: list = []  # a forked process's copies of the parent's loop and sessions: kept, never closed from here


def call_loop() -> asyncio.AbstractEventLoop:
    """The process's event loop for model calls, in a daemon thread of its own (started on first use, and again in a
    forked process): every session lives on it, so kept-alive connections serve every call and every run, and a
    notebook's running loop is never in the way."""
    pid = os.getpid()
    with _starting:
        if pid not in _loops:
            _left_behind.extend(_loops.values())  # a forked process: the parent's loop (its epoll is the parent's too)
            _loops.clear()
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="evalkit-calls", daemon=True)
            thread.start()
            _loops[pid] = loop, thread
        return _loops[pid][0]


def _on_call_loop() -> bool:
    """Whether this thread is the call loop's (where a blocking wait for the loop would never end)."""
    entry = _loops.get(os.getpid())
    return entry is not None and entry[1] is threading.current_thread()


def run(coroutine):
    """Run ``coroutine`` on :func:`call_loop` and wait for it; Ctrl-C (or any exception while waiting) cancels it."""
    loop = call_loop()
    if _on_call_loop():
        coroutine.close()
        raise RuntimeError("a blocking model call from a coroutine on evalkit's call loop; await `acall` instead.")
    future = asyncio.run_coroutine_threadsafe(coroutine, loop)
    try:
        while not future.done():  # short waits: a signal handler (Ctrl-C) runs between them, whichever thread got it
            concurrent.futures.wait([future], timeout=0.1)
        return future.result()
    except BaseException:
        future.cancel()  # the request in flight is aborted on the loop: the caller does not wait for its deadline
        raise


async def _reused(session, context, params) -> None:
    if isinstance(context.trace_request_ctx, dict):
        context.trace_request_ctx["reused"] = True


class Wire:
    """POSTs to one OpenAI-compatible server through one aiohttp session on :func:`call_loop`, under evalkit's policies.

    ``base_url`` keeps its query (Azure's ``?api-version=...``): a request goes to ``base_url``'s path, the route,
    then that query. A proxy from the environment is chosen by :func:`proxy_for`; an ``https://`` one is spoken to
    over TLS. A reply's body is read up to ``max_reply_bytes``.
    """

    def __init__(self, base_url: str, *, max_reply_bytes: int = MAX_REPLY_BYTES):
        parts = urlsplit(base_url)
        try:
            port = parts.port
        except ValueError:
            port = -1
        if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
            raise ValueError(f"`base_url` must be an http:// or https:// URL; got {base_url!r}.")
        self.tls = parts.scheme == "https"
        self.scheme, self.host, self.port = parts.scheme, parts.hostname, port or (443 if self.tls else 80)
        host = f"[{self.host}]" if ":" in self.host else self.host
        self.path = parts.path.rstrip("/")
        self.query = parts.query
        self.url = f"{parts.scheme}://{host}:{self.port}{self.path}"  # in messages: never a URL's credentials or query
        self._origin = f"{parts.scheme}://{host}:{self.port}"
        self.max_reply_bytes = max_reply_bytes
        self.proxy = proxy_for(parts.scheme, self.host, self.port)
        # The proxy's credentials: on the CONNECT of a tunnel to an https:// server (aiohttp's proxy_headers), on the
        # request itself to an http:// server (it goes to the proxy, which forwards it).
        self._proxy = {} if self.proxy is None else {"proxy": str(self.proxy), "proxy_headers": self.proxy.headers}
        self._proxy_request_headers = self.proxy.headers if self.proxy is not None and not self.tls else {}
        # Certificates as the system (or SSL_CERT_FILE, SSL_CERT_DIR) has them when the model is made.
        needs_tls = self.tls or (self.proxy is not None and self.proxy.scheme == "https")
        self._context = ssl.create_default_context() if needs_tls else None
        self._session = None
        self._pid = os.getpid()

    @property
    def secrets(self) -> tuple:
        """What a message must never hold: the proxy's password and its ``user:password``."""
        return () if self.proxy is None or self.proxy.username is None else (self.proxy.password, self.proxy.credentials)

    def _session_here(self):
        """The session of this process, made on the running loop (:func:`call_loop`) on first use."""
        if self._session is None or self._pid != os.getpid():
            import aiohttp

            if self._session is not None:
                _left_behind.append(self._session)  # the parent's: never closed from a forked process
            trace = aiohttp.TraceConfig()
            trace.on_connection_reuseconn.append(_reused)
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE,
                                             ssl=self._context if self._context is not None else True)
            limits = {"max_line_size": MAX_FIELD, "max_field_size": MAX_FIELD, "max_headers": MAX_HEADERS}
            accepted = inspect.signature(aiohttp.ClientSession).parameters  # max_headers: aiohttp 3.12 and later
            self._session = aiohttp.ClientSession(
                connector=connector, trace_configs=[trace], auto_decompress=True, timeout=aiohttp.ClientTimeout(),
                **{name: value for name, value in limits.items() if name in accepted})
            self._pid = os.getpid()
        return self._session

    async def post(self, route: str, body: bytes, headers: dict, timeout: float, sent: list | None = None):
        """POST ``body`` to the server's ``route``: ``(status, headers, body)`` of the reply, all of it within ``timeout``.

        Raises TimeoutError when the whole reply has not arrived within ``timeout`` seconds of the call,
        :class:`APIConnectionError` when the server cannot be reached or the connection breaks,
        :class:`ReplyTooLarge` past ``max_reply_bytes`` and :class:`ReplyError` for a reply that is not HTTP aiohttp
        reads or whose content encoding it cannot undo. A request a kept-alive connection lost before any byte of a
        reply (the server closed it as the request went out) is sent once more at once, on a new connection, and
        both are appended to ``sent``.
        """
        import aiohttp

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        session = self._session_here()
        url = f"{self._origin}{self.path}{route}" + (f"?{self.query}" if self.query else "")
        if self._proxy_request_headers:
            headers = {**headers, **self._proxy_request_headers}
        through = f" through the proxy {self.proxy}" if self.proxy is not None else ""
        try:
            async with asyncio.timeout_at(deadline):
                for last in (False, True):
                    context: dict = {}
                    if sent is not None:
                        sent.append(1)
                    try:
                        response = await session.post(
                            url, data=body, headers=headers, allow_redirects=False, trace_request_ctx=context,
                            timeout=aiohttp.ClientTimeout(total=max(deadline - loop.time(), 1e-3)), **self._proxy)
                        break
                    except (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError):
                        if last or not context.get("reused"):
                            raise
                try:
                    data = await self._body(response)
                except BaseException:
                    response.close()  # the connection is not reused: its state is unknown
                    raise
                response.release()
                return response.status, response.headers, data
        except TimeoutError:
            raise TimeoutError(f"no complete reply within the {timeout:g} s deadline") from None
        except ReplyError:
            raise
        except aiohttp.ClientPayloadError as exc:
            cause = exc.__cause__ or exc.__context__
            if "content-encoding" in str(exc).lower() or "encoding" in type(cause).__name__.lower():
                raise ReplyError(f"the reply from {self.url} could not be decoded ({_described(exc)})") from None
            raise APIConnectionError(f"Connection error{through}: the reply broke off ({_described(exc)})") from None
        except aiohttp.ClientResponseError as exc:  # the reply's head is not HTTP aiohttp reads
            raise ReplyError(f"the reply from {self.url} is not valid HTTP/1.1 ({_described(exc)})") from None
        except (aiohttp.ClientError, OSError) as exc:
            raise APIConnectionError(f"Connection error{through} ({_described(exc)})") from None

    async def _body(self, response) -> bytes:
        """The reply's body, refused past ``max_reply_bytes``: at once when its Content-Length says so, else as it
        arrives (decoded: the limit is on what is kept), so an endless or huge body costs at most the limit."""
        limit = self.max_reply_bytes
        length = response.content_length
        if length is not None and length > limit:
            raise ReplyTooLarge.declared(self.url, length, limit)
        chunks, size = [], 0
        while chunk := await response.content.readany():
            size += len(chunk)
            if size > limit:
                raise ReplyTooLarge.arriving(self.url, limit)
            chunks.append(chunk)
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)

    def close(self) -> None:
        """Close the session's connections (a later call opens new ones)."""
        session, self._session = self._session, None
        if session is None or self._pid != os.getpid() or session.closed:
            return
        loop, _ = _loops.get(os.getpid(), (None, None))
        if loop is None or not loop.is_running():
            return
        future = asyncio.run_coroutine_threadsafe(session.close(), loop)
        if not _on_call_loop():
            try:
                future.result(timeout=2)
            except Exception:  # noqa: BLE001 - closing is best effort; the connections expire anyway
                pass


def _described(exc: BaseException) -> str:
    """``Name: message`` of an aiohttp error on one line, with the error it wraps (its parser's) when that says more."""
    import aiohttp

    parsed = isinstance(exc, aiohttp.ClientResponseError)  # its message is the parser's
    text = f"{type(exc).__name__}: " + (f"{exc.status}, {exc.message}" if parsed else str(exc))
    cause = exc.__cause__ or exc.__context__
    if not parsed and cause is not None and str(cause) and " ".join(str(cause).split()) not in " ".join(text.split()):
        text += f" ({type(cause).__name__}: {cause})"
    return " ".join(text.split())
