"""The chat-completions wire on an event loop: many calls in flight from one thread.

At high concurrency a thread per call costs more than the call. Against the bundled test server in its own process
(2,000 calls at 50 ms latency, 128 in flight, 2 cores; the latency bound is 0.78 s), 128 threads each blocked in
``http.client`` took 1.0 to 1.7 s, 0.2 to 0.5 ms of client CPU per call (waking the threads and handing the
interpreter lock between them), and one thread multiplexing the 128 sockets 0.86 s, 0.03 ms per call. So when
:func:`evalkit.models.call_many` runs a model that has an ``acall`` coroutine (:class:`evalkit.models.OpenAIChat`
does), the calls run as coroutines on an asyncio loop in one thread, and :class:`LoopPool` is their connection pool.

It keeps the thread pool's contract (:meth:`evalkit._chat.Pool.post`): the whole reply within the call's deadline
(connect, TLS handshake, send, status line, headers and body under one ``asyncio.timeout``), a body read only up to
``max_reply_bytes`` (from its Content-Length, chunk by chunk, or as it arrives), a status line and headers of at most
64 KiB, a kept-alive connection the server closed replaced once without a failed attempt, and the same errors
(TimeoutError, :class:`~evalkit._chat.APIConnectionError`, :class:`~evalkit._chat.ReplyTooLarge`). Direct
connections only: with a proxy from the environment the calls go through the thread pool (its CONNECT tunnels and TLS
inside TLS), on the loop's executor threads. Private floor: imports nothing from evalkit above ``_chat``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import http.client
import io
import os
import ssl
import threading

from evalkit._chat import APIConnectionError, Pool, ReplyTooLarge

# The longest status line plus headers read (asyncio's StreamReader limit): a reply's head is a few hundred bytes.
HEAD_LIMIT = 2 ** 16
# Statuses whose reply has no body, whatever its headers say (RFC 9112, 6.3).
_NO_BODY = frozenset({204, 304})


#: Threads of the loop's executor, for calls that block (through a proxy): made as they are needed.
EXECUTOR_THREADS = 256

_running: dict = {}  # the process's call loop, by process id
_starting = threading.Lock()


def call_loop() -> asyncio.AbstractEventLoop:
    """The process's event loop for model calls, running in a daemon thread of its own (started on first use, and
    again in a forked process): one loop for every run, so that kept-alive connections serve the next run too, and
    never the thread's own loop, so that a notebook's running loop is never in the way."""
    pid = os.getpid()
    with _starting:
        loop = _running.get(pid)
        if loop is None:
            _running.clear()  # a forked process: the parent's loop has no thread here
            loop = asyncio.new_event_loop()
            loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(EXECUTOR_THREADS,
                                                                            thread_name_prefix="evalkit-call"))
            threading.Thread(target=loop.run_forever, name="evalkit-calls", daemon=True).start()
            _running[pid] = loop
        return loop


class _Stale(Exception):
    """A reused connection was closed by the server before any byte of the reply."""


class LoopPool:
    """Keep-alive connections to the server of a thread :class:`~evalkit._chat.Pool`, for coroutines on one loop.

    Idle connections are kept for the loop they were opened on (:func:`call_loop`); on another loop they are dropped.
    """

    def __init__(self, pool: Pool):
        self._pool = pool
        self._idle: list = []
        self._loop = None
        self._pid = os.getpid()
        self._context = ssl.create_default_context() if pool.tls else None
        default_port = 443 if pool.tls else 80
        host = f"[{pool.host}]" if ":" in pool.host else pool.host
        self._host = (host if pool.port == default_port else f"{host}:{pool.port}").encode("idna")

    async def post(self, path: str, body: bytes, headers: dict, timeout: float) -> tuple[int, object, bytes]:
        """POST ``body`` to ``base_url + path``: ``(status, headers, body)`` of the reply, all of it within ``timeout``."""
        try:
            async with asyncio.timeout(timeout):
                reader, writer, reused = await self._take()
                try:
                    return await self._exchange(reader, writer, reused, path, body, headers)
                except _Stale:  # the server closed this kept-alive connection as the request went out: once more
                    reader, writer = await self._open()
                    return await self._exchange(reader, writer, False, path, body, headers)
        except TimeoutError:
            raise TimeoutError(f"no complete reply within the {timeout:g} s deadline") from None
        except (OSError, EOFError, ValueError, asyncio.LimitOverrunError, http.client.HTTPException) as exc:
            raise APIConnectionError(f"Connection error ({type(exc).__name__}: {exc})") from None

    async def _take(self):
        loop = asyncio.get_running_loop()
        if loop is not self._loop or os.getpid() != self._pid:  # another run's loop, or a forked process
            self._idle, self._loop, self._pid = [], loop, os.getpid()
        while self._idle:
            reader, writer = self._idle.pop()
            if not writer.is_closing() and not reader.at_eof():
                return reader, writer, True
            writer.transport.abort()
        return *await self._open(), False

    async def _open(self):
        pool = self._pool
        return await asyncio.open_connection(pool.host, pool.port, ssl=self._context, limit=HEAD_LIMIT,
                                             server_hostname=pool.host if self._context is not None else None)

    async def _exchange(self, reader, writer, reused: bool, path: str, body: bytes, headers: dict):
        """One request and its whole reply; the connection goes back to the pool only after a clean exchange."""
        head = [b"POST " + (self._pool.path + path).encode("ascii") + b" HTTP/1.1", b"Host: " + self._host,
                b"Accept-Encoding: identity"]
        head += [f"{name}: {value}".encode("latin-1") for name, value in headers.items()]
        head.append(b"Content-Length: " + str(len(body)).encode("ascii"))
        try:
            try:
                writer.write(b"\r\n".join(head) + b"\r\n\r\n" + body)  # one write: request line, headers and body
                await writer.drain()
                lines = await reader.readuntil(b"\r\n\r\n")
            except asyncio.IncompleteReadError as exc:
                if reused and not exc.partial:  # no byte of a reply came back: the request was not answered
                    raise _Stale from None
                raise http.client.RemoteDisconnected("the server closed the connection without a reply") from None
            except (BrokenPipeError, ConnectionResetError):
                if reused:
                    raise _Stale from None
                raise
            status, reply_headers, will_close = _head(lines)
            data = await self._body(reader, status, reply_headers)
        except BaseException:
            writer.transport.abort()
            raise
        if will_close:
            writer.transport.abort()  # nothing more comes on it
        else:
            self._idle.append((reader, writer))
        return status, reply_headers, data

    async def _body(self, reader, status: int, headers) -> bytes:
        limit = self._pool.max_reply_bytes
        url = self._pool.url
        if status in _NO_BODY or 100 <= status < 200:
            return b""
        if "chunked" in headers.get("transfer-encoding", "").lower():
            chunks, size = [], 0
            while True:
                line = await reader.readuntil(b"\r\n")
                length = int(line.split(b";", 1)[0].strip(), 16)
                if length == 0:
                    while await reader.readuntil(b"\r\n") != b"\r\n":  # trailers, read and dropped
                        pass
                    return b"".join(chunks)
                size += length
                if size > limit:
                    raise ReplyTooLarge.arriving(url, limit)
                chunks.append(await reader.readexactly(length))
                await reader.readexactly(2)
        length = headers.get("content-length")
        if length is not None:
            length = int(length)
            if length < 0:
                raise ValueError(f"a negative Content-Length ({length})")
            if length > limit:
                raise ReplyTooLarge.declared(url, length, limit)
            return await reader.readexactly(length)
        chunks, size = [], 0  # no length: the body ends when the server closes the connection
        while chunk := await reader.read(min(1 << 16, limit + 1 - size)):
            size += len(chunk)
            if size > limit:
                raise ReplyTooLarge.arriving(url, limit)
            chunks.append(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        """Close the idle connections (on their loop's thread, when it runs)."""
        loop = self._loop
        if loop is not None and loop.is_running() and os.getpid() == self._pid:
            loop.call_soon_threadsafe(self._drop)
        else:
            self._idle = []

    def _drop(self) -> None:
        while self._idle:
            _, writer = self._idle.pop()
            writer.transport.abort()


def _head(lines: bytes) -> tuple[int, object, bool]:
    """Status, headers (an ``http.client.HTTPMessage``: case-insensitive ``get``) and whether the server closes."""
    status_line, _, rest = lines.partition(b"\r\n")
    version, _, tail = status_line.decode("latin-1").partition(" ")
    code = tail.split(" ", 1)[0]
    if not version.startswith("HTTP/1.") or len(code) != 3 or not code.isdigit():
        raise http.client.BadStatusLine(status_line.decode("latin-1")[:80])
    headers = http.client.parse_headers(io.BytesIO(rest))
    connection = headers.get("connection", "").lower()
    framed = headers.get("content-length") is not None or "chunked" in headers.get("transfer-encoding", "").lower()
    status = int(code)
    will_close = ("close" in connection or (version == "HTTP/1.0" and "keep-alive" not in connection)
                  or not (framed or status in _NO_BODY or 100 <= status < 200))
    return status, headers, will_close
