"""A scripted chat-completions server on 127.0.0.1, for tests and benchmarks (no network, no mocks).

It speaks the OpenAI chat-completions protocol over real HTTP, so the official client, retries, timeouts
and concurrency are exercised end to end. A *script* decides each answer from the prompt and from how many
times that prompt was asked before: return a string (the answer), a :class:`Fail` (an HTTP error status)
or a :class:`Hang` (sleep before answering, to provoke a client timeout).
"""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass(frozen=True)
class Fail:
    """Answer with this HTTP status (e.g. 429, 500) and an OpenAI-style error body."""

    status: int
    message: str = "scripted failure"


@dataclass(frozen=True)
class Hang:
    """Sleep this many seconds, then answer ``text``."""

    seconds: float
    text: str = ""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # the default of 5 drops connections when many clients connect at once


class ChatServer:
    """Serve ``POST .../chat/completions`` on 127.0.0.1 with scripted answers.

    Parameters
    ----------
    script : callable
        ``script(prompt, attempt) -> str | Fail | Hang``; ``attempt`` counts from 1 per distinct prompt.
    latency : float, default 0.0
        Seconds added before every answer.

    Attributes
    ----------
    url : str
        Base URL for ``OpenAIChat(base_url=...)`` (ends in ``/v1``).
    requests : int
        Requests served so far (including failures).
    max_in_flight : int
        The most requests that were being answered at the same time.
    """

    def __init__(self, script: Callable, *, latency: float = 0.0):
        self.script = script
        self.latency = latency
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.attempts: Counter = Counter()
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                if not self.path.endswith("/chat/completions"):
                    return self._send(404, {"error": {"message": f"no route {self.path}"}})
                prompt = body["messages"][-1]["content"]
                with server._lock:
                    server.requests += 1
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                    server.attempts[prompt] += 1
                    attempt = server.attempts[prompt]
                try:
                    if server.latency:
                        time.sleep(server.latency)
                    answer = server.script(prompt, attempt)
                    if isinstance(answer, Hang):
                        time.sleep(answer.seconds)
                        answer = answer.text
                finally:
                    with server._lock:
                        server.in_flight -= 1
                if isinstance(answer, Fail):
                    return self._send(answer.status, {"error": {"message": answer.message, "type": "scripted"}})
                usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(str(answer).split())}
                usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
                self._send(200, {
                    "id": f"chatcmpl-{server.requests}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "scripted"),
                    "choices": [{"index": 0, "message": {"role": "assistant", "content": answer}, "finish_reason": "stop"}],
                    "usage": usage,
                })

            def _send(self, status, payload):
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ChatServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
