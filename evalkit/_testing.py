"""A scripted chat-completions server on 127.0.0.1, for tests and benchmarks (no network, no mocks).

It speaks the OpenAI chat-completions protocol over real HTTP/1.1 (keep-alive), so the official client,
retries, timeouts and concurrency are exercised end to end. A *script* decides each answer from the prompt
and from how many times that prompt was asked before: return a string (the answer), a :class:`Fail` (an
HTTP error status, optionally with Retry-After), a :class:`Hang` (wait before answering, to provoke a client
timeout), a :class:`Trickle` (send the reply slowly, headers included if asked), a :class:`Drop` (close the
connection without answering), a :class:`Raw` (any body at all: malformed replies) or an :class:`Answer` (text with
a ``finish_reason`` and log probabilities).

The server is asyncio-based and runs in a background thread: waiting (latency, hangs) costs no thread, so
it keeps up with many concurrent clients, as a production server would. It is a test server that must
misbehave on purpose (trickle its status line a byte at a time, drop a connection after reading a request), which
a server library does not let a handler do, hence the small reader of requests below (Content-Length bodies only,
which is what a client sends); the client side, evalkit's, is aiohttp's.

:class:`BatchServer` adds the OpenAI Files and Batches APIs (upload, batch create / retrieve / list, file
download), answering each line of a batch with the same script; a :class:`Raw` answer becomes that line's
response body as it is, and a :class:`Line` the whole output line (odd output files).
"""

from __future__ import annotations

import asyncio
import itertools
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
    """Answer ``text``, sending the body one byte every ``interval`` seconds (with ``headers``, the status line and
    headers too, after ``padding`` extra header bytes: a server that holds a call before its reply begins)."""

    text: str
    interval: float
    headers: bool = False
    padding: int = 0


@dataclass(frozen=True)
class Answer:
    """Answer ``text`` (None: no content) with this ``finish_reason`` and, when given, ``logprobs``: one
    ``{token: logprob}`` per answer token, its first entry the chosen token and the others its top alternatives, sent
    as a chat completion's ``choices[0].logprobs.content`` is.

    Examples
    --------
    >>> from evalkit._testing import Answer, ChatServer
    >>> from evalkit.models import OpenAIChat
    >>> script = lambda prompt, attempt: Answer("PASS", logprobs=({"PASS": -0.1, "FAIL": -2.4},))
    >>> with ChatServer(script) as server:
    ...     OpenAIChat("m", base_url=server.url, logprobs=2)("Is it?").logprobs
    ({'PASS': -0.1, 'FAIL': -2.4},)
    >>> with ChatServer(lambda prompt, attempt: Answer("PA", finish_reason="length")) as server:
    ...     OpenAIChat("m", base_url=server.url)("Is it?")
    Traceback (most recent call last):
    ...
    evalkit._wire.ReplyError: the answer was cut at max_tokens (finish_reason 'length'); no verdict is read from it
    """

    text: str | None
    finish_reason: str = "stop"
    logprobs: tuple | None = None


@dataclass(frozen=True)
class Drop:
    """Close the connection after reading the request, without answering."""


@dataclass(frozen=True)
class Line:
    """In a batch output file, this request's whole line, exactly (``{custom_id}`` is replaced by its id)."""

    text: bytes | str


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
        ``script(prompt, attempt) -> str | Answer | Fail | Hang | Trickle | Drop | Raw``; ``attempt`` counts from 1
        per distinct prompt.
    latency : float, default 0.0
        Seconds added before every answer.
    port : int, default 0
        The port to listen on (0: any free port), e.g. to bring a server back where clients expect it.
    keep_alive : bool, default True
        False: every reply says ``Connection: close`` and the server closes the connection after it.

    Attributes
    ----------
    url : str
        Base URL for ``OpenAIChat(base_url=...)`` (ends in ``/v1``).
    requests : int
        Requests served so far (including failures).
    max_in_flight : int
        The most requests that were being answered at the same time.
    connections : int
        Connections accepted so far (a client that keeps its connections alive opens few).
    received : list of dict
        The body of every chat-completions request, in the order they arrived (what a client sent: ``seed``,
        ``logprobs``...).
    targets : Counter
        Requests per request target (path and query).
    """

    def __init__(self, script: Callable, *, latency: float = 0.0, port: int = 0, keep_alive: bool = True):
        self.script = script
        self.latency = latency
        self.port = port
        self.keep_alive = keep_alive
        self.requests = 0
        self.in_flight = 0
        self.max_in_flight = 0
        self.connections = 0
        self.attempts: Counter = Counter()
        self.received: list[dict] = []
        self.targets: Counter = Counter()
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
        self.connections += 1
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
                method, path = (request_line.decode("latin-1").split() + ["", ""])[:2]
                status, payload = await self._route(method, path, headers, body)
                if isinstance(payload, Drop):
                    break
                extra, interval, content_type, slow_head = "", 0.0, "application/json", False
                if isinstance(payload, bytes):  # file contents go out as they are
                    data, content_type = payload, "application/octet-stream"
                elif isinstance(payload, Raw):
                    data = payload.body.encode("utf-8", "surrogatepass") if isinstance(payload.body, str) else payload.body
                    content_type = payload.content_type
                else:
                    if isinstance(payload, Trickle):
                        interval, slow_head = payload.interval, payload.headers
                        extra = f"X-Padding: {'x' * payload.padding}\r\n" if payload.padding else ""
                        payload = self._completion(payload.text)
                    elif isinstance(payload, Fail):
                        extra = f"Retry-After: {payload.retry_after}\r\n" if payload.retry_after is not None else ""
                        payload = {"error": {"message": payload.message, "type": "scripted"}}
                    data = json.dumps(payload).encode()
                extra += "" if self.keep_alive else "Connection: close\r\n"
                head = (f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\nContent-Type: {content_type}\r\n"
                        f"{extra}Content-Length: {len(data)}\r\n\r\n").encode()
                if interval:
                    if not slow_head:
                        writer.write(head)
                    slow = head + data if slow_head else data
                    for i in range(len(slow)):
                        writer.write(slow[i:i + 1])
                        await writer.drain()
                        await asyncio.sleep(interval)
                else:
                    writer.write(head + data)
                await writer.drain()
                if not self.keep_alive:
                    break
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # client went away, or the server is shutting down: end this connection quietly
        finally:
            writer.close()

    async def _route(self, method: str, path: str, headers: dict, body: bytes) -> tuple[int, object]:
        return await self._answer(path, body)

    async def _answer(self, path: str, body: bytes) -> tuple[int, object]:
        self.targets[path] += 1
        if not path.partition("?")[0].endswith("/chat/completions"):
            return 404, {"error": {"message": f"no route {path}"}}
        request = json.loads(body or b"{}")
        prompt = request["messages"][-1]["content"]
        self.received.append(request)
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
        if isinstance(answer, (Trickle, Drop)):
            return 200, answer
        return 200, self._completion(answer, prompt, request.get("model", "scripted"))

    def _completion(self, answer, prompt: str = "", model: str = "scripted") -> dict:
        scripted = answer if isinstance(answer, Answer) else Answer(answer)
        usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": len(str(scripted.text or "").split())}
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
        choice = {"index": 0, "message": {"role": "assistant", "content": scripted.text},
                  "finish_reason": scripted.finish_reason}
        if scripted.logprobs is not None:
            choice["logprobs"] = {"content": [
                {"token": chosen, "logprob": alternatives[chosen], "bytes": list(chosen.encode()),
                 "top_logprobs": [{"token": token, "logprob": logprob, "bytes": list(token.encode())}
                                  for token, logprob in alternatives.items()]}
                for alternatives in scripted.logprobs for chosen in [next(iter(alternatives))]]}
        return {
            "id": f"chatcmpl-{self.requests}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [choice], "usage": usage,
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


# ------------------------------------------------------------------ the Files and Batches APIs
def _form_fields(content_type: str, body: bytes) -> dict[str, bytes]:
    """The fields of a multipart/form-data body (the file upload), parsed by the standard library's email parser."""
    from email.parser import BytesParser
    from email.policy import HTTP

    message = BytesParser(policy=HTTP).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + body)
    if not message.is_multipart():
        return {}
    return {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in message.iter_parts()}


class BatchServer(ChatServer):
    """A :class:`ChatServer` that also serves the OpenAI Files and Batches APIs on 127.0.0.1.

    ``POST /v1/files`` (multipart upload), ``GET /v1/files/{id}`` and ``/v1/files/{id}/content``;
    ``POST /v1/batches``, ``GET /v1/batches/{id}`` and ``GET /v1/batches`` (newest first, ``limit`` and
    ``after``). A batch validates its input file like the provider (JSON lines with ``custom_id``,
    ``method``, ``url``, ``body``; unique custom ids; one endpoint; one model) and fails as a whole when it
    is invalid; otherwise each line is answered by the same ``script(prompt, attempt)`` as a live call:
    a string goes to the output file, a :class:`Fail` to the error file (its status and message), a
    :class:`Hang` answers its text, a :class:`Raw` is that line's response body (and status) as it is, and a
    :class:`Line` the whole output line. A batch is complete when it is first looked at (retrieved or listed) at
    least ``batch_delay`` seconds after its creation; the delay is read then, so a test may change it.

    Parameters
    ----------
    script : callable
        As in :class:`ChatServer`.
    batch_delay : float, default 0.0
        Seconds between creating a batch and its completion (status ``in_progress`` until then).
        ``float("inf")`` keeps every batch running until the attribute is lowered.
    create_hang : float, default 0.0
        Seconds to wait before answering a batch creation that has already been recorded, to provoke a
        client timeout after the provider accepted the batch.

    Attributes
    ----------
    api_requests : int
        Requests to the files and batches routes (chat completions are counted in ``requests``).
    created : Counter
        Batch creations per input file id.
    submitted : Counter
        How often each ``custom_id`` was part of a created batch.
    downloads : Counter
        File contents served, per file id.
    fail_downloads : Counter
        Set ``fail_downloads[file_id] = n`` to answer the next ``n`` downloads of that file with a 500.
    """

    def __init__(self, script: Callable, *, latency: float = 0.0, batch_delay: float = 0.0, create_hang: float = 0.0):
        super().__init__(script, latency=latency)
        self.batch_delay = batch_delay
        self.create_hang = create_hang
        self.api_requests = 0
        self.created: Counter = Counter()
        self.submitted: Counter = Counter()
        self.downloads: Counter = Counter()
        self.fail_downloads: Counter = Counter()
        self.files: dict[str, dict] = {}
        self.contents: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self._lines: dict[str, tuple[float, list[dict]]] = {}  # creation time and requests of running batches
        self._ids = itertools.count(1)  # ids stay unique even when a test empties ``files`` or ``batches``

    async def _route(self, method: str, path: str, headers: dict, body: bytes) -> tuple[int, dict | bytes]:
        route, _, query = path.partition("?")
        parts = route.rstrip("/").split("/")
        if "files" not in parts and "batches" not in parts:
            return await super()._route(method, path, headers, body)
        self.api_requests += 1
        parts = parts[parts.index("files" if "files" in parts else "batches"):]
        if parts == ["files"] and method == "POST":
            return self._upload(headers.get("content-type", ""), body)
        if parts[0] == "files" and len(parts) >= 2 and method == "GET":
            if parts[1] not in self.files:
                return 404, {"error": {"message": f"no file {parts[1]}", "type": "invalid_request_error"}}
            if parts[2:] == ["content"] and self.fail_downloads[parts[1]] > 0:
                self.fail_downloads[parts[1]] -= 1
                return 500, {"error": {"message": "the file store is overloaded", "type": "scripted"}}
            if parts[2:] == ["content"]:
                self.downloads[parts[1]] += 1
                return 200, self.contents[parts[1]]
            return 200, self.files[parts[1]]
        if parts == ["batches"] and method == "POST":
            return await self._create(json.loads(body or b"{}"))
        if parts == ["batches"] and method == "GET":
            return 200, self._list(dict(p.partition("=")[::2] for p in query.split("&") if p))
        if parts[0] == "batches" and len(parts) == 2 and method == "GET":
            if parts[1] not in self.batches:
                return 404, {"error": {"message": f"no batch {parts[1]}", "type": "invalid_request_error"}}
            self._advance(parts[1])
            return 200, self.batches[parts[1]]
        return 404, {"error": {"message": f"no route {method} {path}"}}

    def _store(self, content: bytes, filename: str, purpose: str) -> dict:
        file_id = f"file-{next(self._ids)}"
        self.files[file_id] = {"id": file_id, "object": "file", "bytes": len(content), "created_at": int(time.time()),
                               "filename": filename, "purpose": purpose, "status": "processed"}
        self.contents[file_id] = content
        return self.files[file_id]

    def _upload(self, content_type: str, body: bytes) -> tuple[int, dict]:
        fields = _form_fields(content_type, body)
        if "file" not in fields or fields.get("purpose") != b"batch":
            return 400, {"error": {"message": "upload a 'file' with purpose 'batch'", "type": "invalid_request_error"}}
        return 200, self._store(fields["file"], "batch.jsonl", "batch")

    async def _create(self, request: dict) -> tuple[int, dict]:
        if request.get("input_file_id") not in self.files or request.get("completion_window") != "24h":
            return 400, {"error": {"message": "unknown input_file_id or completion_window", "type": "invalid_request_error"}}
        batch_id = f"batch_{next(self._ids)}"
        self.batches[batch_id] = {
            "id": batch_id, "object": "batch", "endpoint": request.get("endpoint"), "errors": None,
            "input_file_id": request["input_file_id"], "completion_window": "24h", "status": "in_progress",
            "output_file_id": None, "error_file_id": None, "created_at": int(time.time()),
            "in_progress_at": int(time.time()), "completed_at": None, "failed_at": None,
            "request_counts": {"total": 0, "completed": 0, "failed": 0}, "metadata": request.get("metadata"),
        }
        self.created[request["input_file_id"]] += 1
        lines = self._validate(self.batches[batch_id])
        if lines is not None:
            self.submitted.update(line["custom_id"] for line in lines)
            self.batches[batch_id]["request_counts"]["total"] = len(lines)
            self._lines[batch_id] = (time.monotonic(), lines)
        if self.create_hang:
            await asyncio.sleep(self.create_hang)
        return 200, self.batches[batch_id]

    def _validate(self, batch: dict) -> list[dict] | None:
        """The input file's lines, or None after failing the batch the way the provider does."""
        errors, lines = [], []
        for number, text in enumerate(self.contents[batch["input_file_id"]].decode("utf-8").splitlines(), start=1):
            try:
                line = json.loads(text)
            except json.JSONDecodeError:
                errors.append({"code": "invalid_json_line", "message": "not valid JSON", "line": number})
                continue
            if not isinstance(line, dict) or not {"custom_id", "method", "url", "body"} <= set(line):
                errors.append({"code": "missing_required_parameter", "message": "custom_id, method, url and body "
                               "are required", "line": number})
            elif line["url"] != batch["endpoint"] or line["method"] != "POST":
                errors.append({"code": "mismatched_endpoint", "message": "every line must POST to the batch's endpoint",
                               "line": number})
            else:
                lines.append(line)
        ids = Counter(line["custom_id"] for line in lines)
        if any(count > 1 for count in ids.values()):
            errors.append({"code": "duplicate_custom_id", "message": "custom_id values must be unique", "line": None})
        if len({line["body"].get("model") for line in lines}) > 1:
            errors.append({"code": "mismatched_model", "message": "every line must use the same model", "line": None})
        if not errors and lines:
            return lines
        errors = errors or [{"code": "empty_file", "message": "the input file has no requests", "line": None}]
        batch.update(status="failed", failed_at=int(time.time()), errors={"object": "list", "data": errors})
        return None

    def _advance(self, batch_id: str) -> None:
        """Complete a running batch once its delay has passed."""
        if batch_id in self._lines and time.monotonic() - self._lines[batch_id][0] >= self.batch_delay:
            lines = self._lines.pop(batch_id)[1]
            if batch_id in self.batches:  # a test may have removed it
                self._finish(batch_id, lines)

    def _finish(self, batch_id: str, lines: list[dict]) -> None:
        batch = self.batches[batch_id]
        output, failed = [], []
        for number, line in enumerate(lines, start=1):
            prompt = line["body"]["messages"][-1]["content"]
            self.attempts[prompt] += 1
            answer = self.script(prompt, self.attempts[prompt])
            if isinstance(answer, Hang):
                answer = answer.text
            head = {"id": f"{batch_id}_req_{number}", "custom_id": line["custom_id"]}
            if isinstance(answer, Line):  # the whole line, as given
                text = answer.text.encode("utf-8", "surrogatepass") if isinstance(answer.text, str) else answer.text
                output.append(text.replace(b"{custom_id}", line["custom_id"].encode()))
            elif isinstance(answer, Raw):  # the response body, as given
                body = answer.body.encode("utf-8", "surrogatepass") if isinstance(answer.body, str) else answer.body
                start = json.dumps({**head, "response": {"status_code": answer.status,
                                                         "request_id": f"req_{batch_id}_{number}", "body": None}})
                output.append(start[:start.rindex("null")].encode() + body + b"}, \"error\": null}")
            elif isinstance(answer, Fail):
                response = {"status_code": answer.status, "request_id": f"req_{batch_id}_{number}",
                            "body": {"error": {"message": answer.message, "type": "scripted"}}}
                failed.append(json.dumps({**head, "response": response, "error": None}).encode())
            else:
                response = {"status_code": 200, "request_id": f"req_{batch_id}_{number}",
                            "body": self._completion(answer, prompt, line["body"].get("model", "scripted"))}
                output.append(json.dumps({**head, "response": response, "error": None}).encode())
        for name, rows in (("output_file_id", output), ("error_file_id", failed)):
            if rows:
                content = b"".join(row + b"\n" for row in rows)
                batch[name] = self._store(content, f"{batch_id}_{name}.jsonl", "batch_output")["id"]
        batch.update(status="completed", completed_at=int(time.time()),
                     request_counts={"total": len(lines), "completed": len(output), "failed": len(failed)})

    def _list(self, query: dict) -> dict:
        for batch_id in list(self._lines):
            self._advance(batch_id)
        newest = sorted(self.batches, key=lambda b: int(b.split("_")[1]), reverse=True)
        if "after" in query and query["after"] in self.batches:
            newest = newest[newest.index(query["after"]) + 1:]
        limit = int(query.get("limit", 20))
        page = [self.batches[b] for b in newest[:limit]]
        return {"object": "list", "data": page, "first_id": page[0]["id"] if page else None,
                "last_id": page[-1]["id"] if page else None, "has_more": len(newest) > limit}
