"""A chat-completions server on 127.0.0.1 that answers each case in a chosen HTTP form, byte for byte (interim 1xx
replies, odd header forms, encodings, connections closed or half-closed, keep-alive limits, truncated bodies), to check
that evalkit's client reads every form a real server, proxy or load balancer sends, or refuses it clearly, and that
every reply lands on its own case."""

from __future__ import annotations

import asyncio
import gzip
import json
import threading
from collections import Counter


def completion(case: str) -> bytes:
    return json.dumps({"choices": [{"message": {"role": "assistant", "content": f"answer to {case}"},
                                    "finish_reason": "stop"}]}).encode()


def head(body: bytes, *extra: str, status: str = "200 OK", sep: bytes = b"\r\n",
         length: str | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status}", "Content-Type: application/json", *extra,
             f"Content-Length: {length if length is not None else len(body)}"]
    return sep.join(line.encode("latin-1") for line in lines) + sep + sep


#: What the server writes for a case of each form (``body`` is the case's chat completion), and what it does with
#: the connection then: keep it, close it, half-close it (FIN, reading on), or answer the next request on it with a
#: 408 sent while it was idle.
def reply(form: str, body: bytes, attempt: int, auth: str = "") -> tuple[bytes, str]:
    ok = head(body) + body
    if form == "redirect":
        moved = json.dumps({"error": {"message": "moved"}}).encode()
        return head(moved, "Location: http://127.0.0.1:9/v1/chat/completions", status="307 Temporary Redirect") + moved, \
            "keep"
    if form == "echo-key":  # a hostile server: the key it was sent, in a header too long to read
        return head(body, f"X-Echo: {auth} " + "c" * 200_000) + body, "keep"
    if form == "plain":
        return ok, "keep"
    if form == "continue":
        return b"HTTP/1.1 100 Continue\r\n\r\n" + ok, "keep"
    if form == "early-hints":
        return b"HTTP/1.1 103 Early Hints\r\nLink: </style.css>; rel=preload\r\n\r\n" + ok, "keep"
    if form == "crlf-after":
        return ok + b"\r\n", "keep"
    if form == "idle-408":
        return ok, "408"
    if form == "length-twice":
        return head(body, length=f"{len(body)}, {len(body)}") + body, "keep"
    if form == "many-headers":
        return head(body, *(f"X-Trace-{i}: {i}" for i in range(150))) + body, "keep"
    if form == "huge-header":
        return head(body, "X-Cookie: " + "c" * 70_000) + body, "keep"
    if form == "giant-header":  # past evalkit's limit of 128 KiB a field
        return head(body, "X-Cookie: " + "c" * 200_000) + body, "keep"
    if form == "bare-lf":
        return head(body, sep=b"\n") + body, "keep"
    if form == "gzip":
        packed = gzip.compress(body)
        return head(packed, "Content-Encoding: gzip") + packed, "keep"
    if form == "false-gzip":
        return head(body, "Content-Encoding: gzip") + body, "keep"
    if form == "unknown-encoding":
        return head(body, "Content-Encoding: x-evalkit") + body, "keep"
    if form == "utf-16":
        wide = body.decode().encode("utf-16")
        return head(wide).replace(b"application/json", b"application/json; charset=utf-16") + wide, "keep"
    if form == "bad-charset":
        return head(body).replace(b"application/json", b"application/json; charset=klingon") + body, "keep"
    if form == "chunked":
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(body[i:i + 7]), body[i:i + 7]) for i in range(0, len(body), 7))
        return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks
                + b"0\r\nX-Trailer: yes\r\n\r\n"), "keep"
    if form == "until-close":  # HTTP/1.0 without a length: the body ends when the connection does
        return b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + body, "close"
    if form == "close":
        return head(body, "Connection: close") + body, "close"
    if form == "close-unannounced":
        return ok, "close"
    if form == "half-close":
        return ok, "half-close"
    if form == "truncated":
        return (head(body) + body[: len(body) // 2], "close") if attempt == 1 else (ok, "keep")
    raise ValueError(form)


class RawServer:
    """Serves ``POST .../chat/completions`` on 127.0.0.1; a prompt ``"<case> <form>"`` is answered by :func:`reply`.

    ``per_connection`` > 0 closes every connection after that many requests without saying so (a keep-alive limit).
    ``requests`` counts the requests received, ``connections`` the connections accepted.
    """

    def __init__(self, *, per_connection: int = 0):
        self.per_connection = per_connection
        self.requests = 0
        self.connections = 0
        self.attempts: Counter = Counter()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(asyncio.start_server(self._connection, "127.0.0.1", 0, backlog=512))
        self.url = f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}/v1"
        self._ready.set()
        self._loop.run_forever()

    async def _connection(self, reader, writer):
        self.connections += 1
        served = 0
        try:
            while True:
                line = await reader.readline()
                if not line:
                    return
                length, auth = 0, ""
                while (field := await reader.readline()) not in (b"\r\n", b""):
                    name, _, value = field.decode("latin-1").partition(":")
                    if name.strip().lower() == "content-length":
                        length = int(value)
                    if name.strip().lower() == "authorization":
                        auth = value.strip()
                request = json.loads(await reader.readexactly(length))
                case, form = request["messages"][-1]["content"].split()
                self.requests += 1
                self.attempts[case] += 1
                data, then = reply(form, completion(case), self.attempts[case], auth)
                writer.write(data)
                await writer.drain()
                served += 1
                if then == "close" or (self.per_connection and served >= self.per_connection):
                    return
                if then == "half-close":  # no more replies on this connection: what the client still sends is not read
                    writer.write_eof()
                    while await reader.read(65536):
                        pass
                    return
                if then == "408":  # a load balancer timing the idle connection out: 408, then close
                    await asyncio.sleep(0.05)
                    writer.write(b"HTTP/1.1 408 Request Timeout\r\nConnection: close\r\nContent-Length: 0\r\n\r\n")
                    await writer.drain()
                    return
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    def __enter__(self):
        self._thread.start()
        self._ready.wait(10)
        return self

    def __exit__(self, *exc):
        async def close():
            self._server.close()
            for task in [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]:
                task.cancel()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
