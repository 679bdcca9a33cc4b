"""A scripted chat-completions server on 127.0.0.1, for tests and benchmarks (no network, no mocks).

It speaks the OpenAI chat-completions protocol over real HTTP/1.1 (keep-alive), so the official client,
retries, timeouts and concurrency are exercised end to end. A *script* decides each answer from the prompt
and from how many times that prompt was asked before: return a string (the answer), a :class:`Fail` (an
HTTP error status, optionally with Retry-After), a :class:`Hang` (wait before answering, to provoke a client
timeout), a :class:`Trickle` (send the body slowly) or a :class:`Raw` (any body at all: malformed replies).

The server is asyncio-based and runs in a background thread: waiting (latency, hangs) costs no thread, so
it keeps up with many concurrent clients, as a production server would. The standard library has no
asyncio HTTP server, hence the small HTTP/1.1 reader below (Content-Length bodies only, which is what the
client sends).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus


@dataclass(frozen=True)
class Fail:
    """Answer with this HTTP status (e.g. 429, 500) and an OpenAI-style error body."""

    status: int
    message: str = "scripted failure"
    retry_after: str | None = None


@dataclass(frozen=True)
class Raw:
    """Answer with exactly this body, status and content type (a malformed or odd reply)."""

    body: bytes | str
    status: int = 200
    content_type: str = "application/json"


@dataclass(frozen=True)
class Trickle:
    """Answer ``text``, sending the body one byte every ``interval`` seconds."""

    text: str
    interval: float


@dataclass(frozen=True)
class Hang:
    """Wait this many seconds, then answer ``text``."""

    seconds: float
    text: str = ""


class ChatServer:
    """Serve ``POST .../chat/completions`` on 127.0.0.1 with scripted answers.

    Parameters
    ----------
    script : callable
        ``script(prompt, attempt) -> str | Fail | Hang``; ``attempt`` counts from 1 per distinct prompt.
    latency : float, default 0.0
        Seconds added before every answer.
    port : int, default 0
        The port to listen on (0: any free port), e.g. to bring a server back where clients expect it.

    Attributes
    ----------
    url : str
        Base URL for ``OpenAIChat(base_url=...)`` (ends in ``/v1``).
    requests : int
        Requests served so far (including failures).
    max_in_flight : int
        The most requests that were being answered at the same time.
    """

    def __init__(self, script: Callable, *, latency: float = 0.0, port: int = 0):
        self.script = script
        self.latency = latency
        self.port = port
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.attempts: Counter = Counter()
        self._loop = asyncio.new_event_loop()
        self._server = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"http://{host}:{port}/v1"

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", self.port, backlog=1024, reuse_address=True))
        self._ready.set()
        self._loop.run_forever()
        self._loop.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                request_line = await reader.readline()
                if not request_line:
                    break
                headers = {}
                while (line := await reader.readline()) not in (b"\r\n", b"\n", b""):
                    name, _, value = line.decode("latin-1").partition(":")
                    headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", 0)))
                path = request_line.split()[1].decode() if len(request_line.split()) > 1 else ""
                status, payload = await self._answer(path, body)
                extra, interval, content_type = "", 0.0, "application/json"
                if isinstance(payload, Raw):
                    data = payload.body.encode("utf-8", "surrogatepass") if isinstance(payload.body, str) else payload.body
                    content_type = payload.content_type
                else:
                    if isinstance(payload, Trickle):
                        interval, payload = payload.interval, self._completion(payload.text)
                    elif isinstance(payload, Fail):
                        extra = f"Retry-After: {payload.retry_after}\r\n" if payload.retry_after is not None else ""
                        payload = {"error": {"message": payload.message, "type": "scripted"}}
                    data = json.dumps(payload).encode()
                writer.write(f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: {content_type}\r\n"
                             f"{extra}Content-Length: {len(data)}\r\n\r\n".encode())
                if interval:
                    for i in range(len(data)):
                        writer.write(data[i:i + 1])
                        await writer.drain()
                        await asyncio.sleep(interval)
                else:
                    writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # client went away, or the server is shutting down: end this connection quietly
        finally:
            writer.close()

    async def _answer(self, path: str, body: bytes) -> tuple[int, object]:
        if not path.endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}"}}
        request = json.loads(body or b"{}")
        prompt = request["messages"][-1]["content"]
        self.requests += 1
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        self.attempts[prompt] += 1
        try:
            if self.latency:
                await asyncio.sleep(self.latency)
            answer = self.script(prompt, self.attempts[prompt])
            if isinstance(answer, Hang):
                await asyncio.sleep(answer.seconds)
                answer = answer.text
        finally:
            self.in_flight -= 1
        if isinstance(answer, Fail):
            return answer.status, answer
        if isinstance(answer, Raw):
            return answer.status, answer
        if isinstance(answer, Trickle):
            return 200, answer
        return 200, self._completion(answer, prompt, request.get("model", "scripted"))

    def _completion(self, answer, prompt: str = "", model: str = "scripted") -> dict:
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(str(answer).split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        return {
            "id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
            "usage": usage,
        }

    def __enter__(self) -> ChatServer:
        self._thread.start()
        self._ready.wait(timeout=10)
        return self

    def __exit__(self, *exc) -> None:
        async def close():
            self._server.close()
            others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in others:  # open keep-alive connections and pending answers
                task.cancel()
            await asyncio.gather(*others, return_exceptions=True)
            await self._server.wait_closed()

        asyncio.run_coroutine_threadsafe(close(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
