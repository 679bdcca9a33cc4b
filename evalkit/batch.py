"""Provider batch APIs: a judge run's prompts as batch jobs, at the batch price, resumable after a killed kernel.

The OpenAI Batch API shape (also served by other OpenAI-compatible providers): the prompts go into JSONL files
(one request per line, ``custom_id`` = the call-cache key), each file is uploaded and becomes one batch job,
the jobs are polled until they end, and their output and error files are read back by ``custom_id``.

* :func:`submit` uploads the prompts that are neither cached nor already in an open job;
* :func:`poll` follows the open jobs until they end;
* :func:`collect` reads the finished jobs' files: every answer goes into the :class:`~evalkit.models.CallCache`
  under the key :func:`evalkit.models.call_many` uses, so a later ``judge.run_judge(..., cache=cache)`` reads
  it with zero calls; a failed line is kept as that request's error and is not cached, so the next run
  submits it again;
* :func:`run_judge` does all four steps for a rubric and returns the usual results table.

The jobs are recorded in two tables of the cache's own SQLite file, ``batch_jobs`` (batch id, input file id,
status, counts, times) and ``batch_requests`` (which keys each job covers, and each key's error). A job is
recorded as soon as its file is uploaded and before the batch is created (the batch carries the job id in
its metadata), so a kernel killed at any point resumes the same jobs: nothing is submitted twice. One
process submits to a cache at a time (two kernels submitting the same prompts at once could both send them).
The API key stays in the environment (see :class:`~evalkit.models.OpenAIChat`); it is never written anywhere.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from contextlib import closing, contextmanager
from datetime import UTC, datetime

import numpy as np
import pandas as pd

from evalkit import _wire
from evalkit import judge as _judge
from evalkit import models as _models
from evalkit._repeats import repeat_model
from evalkit._validation import check_number, warn

__all__ = ["BatchError", "submit", "poll", "collect", "jobs", "run_judge"]

ENDPOINT = "/v1/chat/completions"
FINAL = ("completed", "failed", "expired", "cancelled")
MAX_REQUESTS_PER_FILE = 50_000  # the OpenAI Batch API's limit per input file
MAX_BYTES_PER_FILE = 200_000_000  # and its size limit (200 MB)
JOB_COLUMNS = ["job_id", "model", "base_url", "batch_id", "input_file_id", "status", "n_requests", "n_completed",
               "n_failed", "submitted_at", "completed_at", "collected_at", "message"]
ANSWER_COLUMNS = ["key", "job_id", "text", "error", "cached", "attempts", "prompt_tokens", "completion_tokens",
                  "created_at", "batch"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS batch_jobs (
    job_id TEXT PRIMARY KEY, model TEXT NOT NULL, base_url TEXT NOT NULL, batch_id TEXT, input_file_id TEXT NOT NULL,
    output_file_id TEXT, error_file_id TEXT, status TEXT NOT NULL, n_requests INTEGER NOT NULL, n_completed INTEGER,
    n_failed INTEGER, submitted_at TEXT NOT NULL, completed_at TEXT, collected_at TEXT, message TEXT);
CREATE TABLE IF NOT EXISTS batch_requests (job_id TEXT NOT NULL, key TEXT NOT NULL, error TEXT, PRIMARY KEY (job_id, key));
CREATE INDEX IF NOT EXISTS batch_requests_key ON batch_requests (key);
"""


class BatchError(RuntimeError):
    """A request of a batch job got no answer (its line failed, or the job failed, expired or was cancelled)."""


# ------------------------------------------------------------------ storage
def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _iso(seconds) -> str | None:
    return None if seconds is None else datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


def _connect(cache) -> sqlite3.Connection:
    """A connection of our own to the cache's SQLite file (WAL: it shares the file with the cache's connection)."""
    db = sqlite3.connect(cache.path, isolation_level=None, timeout=60.0)
    db.executescript(_SCHEMA)
    return db


@contextmanager
def _transaction(db: sqlite3.Connection):
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _jobs_table(db: sqlite3.Connection, where: str = "", args: tuple = ()) -> pd.DataFrame:
    rows = db.execute(f"SELECT {', '.join(JOB_COLUMNS)} FROM batch_jobs {where} ORDER BY submitted_at, job_id", args)
    table = pd.DataFrame(rows.fetchall(), columns=JOB_COLUMNS)
    for column in ("n_requests", "n_completed", "n_failed"):
        table[column] = pd.array(table[column], dtype="Int64")
    return table


def _record(db: sqlite3.Connection, job_id: str, batch, redact) -> None:
    """Store what the provider says about a job's batch (its messages redacted)."""
    counts = batch.request_counts
    errors = [e.message for e in (batch.errors.data or [])] if batch.errors is not None else []
    ended = batch.completed_at or batch.failed_at or batch.expired_at or batch.cancelled_at
    db.execute(
        "UPDATE batch_jobs SET batch_id = ?, status = ?, n_completed = ?, n_failed = ?, output_file_id = ?,"
        " error_file_id = ?, completed_at = ?, message = ? WHERE job_id = ?",
        (batch.id, batch.status, getattr(counts, "completed", None), getattr(counts, "failed", None),
         batch.output_file_id, batch.error_file_id, _iso(ended) if batch.status in FINAL else None,
         redact("; ".join(str(e) for e in errors if e)) or None, job_id),
    )


# ------------------------------------------------------------------ arguments
def _check_model(model):
    """The official client, the server's address as the jobs record it, and the model's redaction of its key."""
    if not isinstance(model, _models.OpenAIChat):
        raise TypeError(f"`model` must be a models.OpenAIChat (batch jobs go through the provider's Batch API); "
                        f"got {type(model).__name__}.")
    return model.client, str(model.client.base_url), model.redact


def _check_cache(cache) -> None:
    if not isinstance(cache, _models.CallCache):
        raise TypeError(f"`cache` must be a models.CallCache (it holds the answers and the batch jobs); "
                        f"got {type(cache).__name__}.")


def _check_prompts(prompts) -> pd.Series:
    if not isinstance(prompts, pd.Series):
        raise TypeError(f"`prompts` must be a Series of str; got {type(prompts).__name__}.")
    bad = [i for i, p in prompts.items() if not isinstance(p, str)]
    if bad:
        raise TypeError(f"`prompts` must hold strings; entry {bad[0]!r} is {type(prompts[bad[0]]).__name__}.")
    return prompts


# ------------------------------------------------------------------ submitting
def _files(todo: dict, model, max_requests: int):
    """Split the requests into input files within the provider's limits: (keys, JSONL bytes) per file."""
    keys, lines, size = [], [], 0
    for key, prompt in todo.items():
        line = (json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": model.request_body(prompt)},
                           ensure_ascii=False) + "\n").encode("utf-8")
        if keys and (len(keys) == max_requests or size + len(line) > MAX_BYTES_PER_FILE):
            yield keys, b"".join(lines)
            keys, lines, size = [], [], 0
        keys.append(key)
        lines.append(line)
        size += len(line)
    if keys:
        yield keys, b"".join(lines)


def _close_refused(db: sqlite3.Connection, job_id: str, message: str) -> None:
    """The provider refused to create the batch: the job ends, and its requests are errors (free to retry)."""
    with _transaction(db):
        db.execute("UPDATE batch_jobs SET status = 'failed', message = ?, completed_at = ?, collected_at = ?"
                   " WHERE job_id = ?", (message, _now(), _now(), job_id))
        db.execute("UPDATE batch_requests SET error = ? WHERE job_id = ?", (f"batch refused: {message}", job_id))


def _create(db: sqlite3.Connection, client, job_id: str, file_id: str, redact) -> None:
    import openai

    try:
        batch = client.batches.create(input_file_id=file_id, endpoint=ENDPOINT, completion_window="24h",
                                      metadata={"evalkit_job": job_id})
    except (openai.BadRequestError, openai.NotFoundError) as exc:
        _close_refused(db, job_id, redact(f"{type(exc).__name__}: {exc}"))
        return
    # Any other failure (timeout, dropped connection, 5xx) propagates: the provider may have created the batch,
    # so the job stays 'uploaded' and the next submit or poll looks for its batch before creating one.
    _record(db, job_id, batch, redact)


def _resume_uploaded(db: sqlite3.Connection, client, base_url: str, redact) -> None:
    """Jobs whose file was uploaded but whose batch creation was not recorded: adopt the batch, or create it."""
    pending = db.execute("SELECT job_id, input_file_id, submitted_at FROM batch_jobs WHERE status = 'uploaded'"
                         " AND base_url = ?", (base_url,)).fetchall()
    if not pending:
        return
    by_file = {file_id: job_id for job_id, file_id, _ in pending}
    oldest = min(datetime.fromisoformat(s).timestamp() for _, _, s in pending) - 3600  # generous clock skew
    for batch in client.batches.list(limit=100):  # newest first; stop before the oldest pending upload
        if batch.created_at < oldest or not by_file:
            break
        job_id = by_file.pop(batch.input_file_id, None)
        if job_id is not None:
            _record(db, job_id, batch, redact)
    for file_id, job_id in by_file.items():
        _create(db, client, job_id, file_id, redact)


def submit(prompts: pd.Series, model, *, cache, max_requests_per_file: int = MAX_REQUESTS_PER_FILE) -> pd.DataFrame:
    """Submit the prompts that are neither cached nor in an open job as batch jobs (one per input file).

    Parameters
    ----------
    prompts : Series of str
        Identical prompts are submitted once.
    model : models.OpenAIChat
        Its model, parameters, system message and server; each file line's ``body`` is exactly the request a
        live call sends (:meth:`~evalkit.models.OpenAIChat.request_body`).
    cache : models.CallCache
        Where the answers will go and where the jobs are recorded (tables ``batch_jobs``, ``batch_requests``).
    max_requests_per_file : int, default 50000
        Requests per input file, hence per job (the provider's limit is 50,000 requests and 200 MB per file;
        files are also split before 200 MB).

    Returns
    -------
    DataFrame
        The jobs created now, one row each: ``job_id, model, base_url, batch_id, input_file_id, status,
        n_requests, n_completed, n_failed, submitted_at, completed_at, collected_at, message``. Empty when
        every prompt is cached or already submitted.

    Examples
    --------
    >>> import pandas as pd, pathlib, tempfile
    >>> from evalkit import batch, models
    >>> from evalkit._testing import BatchServer
    >>> cache = models.CallCache(pathlib.Path(tempfile.mkdtemp()) / "calls.sqlite")
    >>> with BatchServer(lambda prompt, attempt: "PASS", batch_delay=float("inf")) as server:
    ...     judge = models.OpenAIChat("judge-1", base_url=server.url)
    ...     first = batch.submit(pd.Series(["a", "b", "c"]), judge, cache=cache, max_requests_per_file=2)
    ...     again = batch.submit(pd.Series(["a", "b", "c"]), judge, cache=cache)
    >>> first[["n_requests", "status"]], len(again)
    (   n_requests       status
    0           2  in_progress
    1           1  in_progress, 0)
    """
    _check_prompts(prompts)
    client, base_url, redact = _check_model(model)
    _check_cache(cache)
    max_requests = check_number(max_requests_per_file, "max_requests_per_file", low=1, high=MAX_REQUESTS_PER_FILE,
                                integer=True)
    mid, params = _models.model_identity(model, cache=cache)
    with closing(_connect(cache)) as db:
        _resume_uploaded(db, client, base_url, redact)
        in_open_jobs = {key for (key,) in db.execute(
            "SELECT r.key FROM batch_requests r JOIN batch_jobs j USING (job_id) WHERE j.collected_at IS NULL")}
        todo = {}
        for prompt in pd.unique(prompts.to_numpy()):
            key = _models.CallCache.key(mid, params, prompt)
            if key not in in_open_jobs and key not in todo and cache.get(key) is None:
                todo[key] = prompt
        created = []
        for keys, data in _files(todo, model, max_requests):
            job_id = uuid.uuid4().hex
            upload = client.files.create(file=(f"evalkit-{job_id}.jsonl", data, "application/jsonl"), purpose="batch")
            with _transaction(db):  # recorded before the batch exists: a kill from here on resumes this job
                db.execute("INSERT INTO batch_jobs (job_id, model, base_url, input_file_id, status, n_requests,"
                           " submitted_at) VALUES (?, ?, ?, ?, 'uploaded', ?, ?)",
                           (job_id, mid, base_url, upload.id, len(keys), _now()))
                db.executemany("INSERT INTO batch_requests (job_id, key) VALUES (?, ?)", [(job_id, k) for k in keys])
            created.append(job_id)
            _create(db, client, job_id, upload.id, redact)
        return _jobs_table(db, f"WHERE job_id IN ({', '.join('?' * len(created))})", tuple(created))


# ------------------------------------------------------------------ polling
def poll(model, *, cache, wait: bool = True, interval: float = 30.0, timeout: float | None = None) -> pd.DataFrame:
    """Follow the open batch jobs on ``model``'s server until they end (or look once with ``wait=False``).

    Safe to call from a fresh kernel: the jobs come from the cache's database, and a job whose batch creation
    was interrupted is matched to the provider's batch (by its input file) or created, never duplicated.

    Parameters
    ----------
    model : models.OpenAIChat
        Gives the server and the client (its key from the environment).
    cache : models.CallCache
    wait : bool, default True
        Poll every ``interval`` seconds until every job has ended (completed, failed, expired or cancelled).
    interval : float, default 30.0
        Seconds between polls.
    timeout : float, optional
        Give up waiting after this many seconds with ``TimeoutError`` (the jobs keep running; poll again later).

    Returns
    -------
    DataFrame
        The jobs not yet collected, with the columns of :func:`submit`.

    Examples
    --------
    >>> import pandas as pd, pathlib, tempfile
    >>> from evalkit import batch, models
    >>> from evalkit._testing import BatchServer
    >>> cache = models.CallCache(pathlib.Path(tempfile.mkdtemp()) / "calls.sqlite")
    >>> with BatchServer(lambda prompt, attempt: "PASS", batch_delay=0.2) as server:
    ...     judge = models.OpenAIChat("judge-1", base_url=server.url)
    ...     _ = batch.submit(pd.Series(["a", "b"]), judge, cache=cache)
    ...     jobs = batch.poll(judge, cache=cache, interval=0.05)
    >>> jobs[["status", "n_requests", "n_completed", "n_failed"]]
          status  n_requests  n_completed  n_failed
    0  completed           2            2         0
    """
    client, base_url, redact = _check_model(model)
    _check_cache(cache)
    interval = check_number(interval, "interval", low=0.0)
    timeout = check_number(timeout, "timeout", low=0.0, allow_none=True)
    deadline = None if timeout is None else time.monotonic() + timeout
    open_jobs = "WHERE base_url = ? AND collected_at IS NULL"
    with closing(_connect(cache)) as db:
        _resume_uploaded(db, client, base_url, redact)
        while True:
            running = db.execute(f"SELECT job_id, batch_id FROM batch_jobs {open_jobs} AND batch_id IS NOT NULL"
                                 f" AND status NOT IN ({', '.join('?' * len(FINAL))})", (base_url, *FINAL)).fetchall()
            for job_id, batch_id in running:
                _record(db, job_id, client.batches.retrieve(batch_id), redact)
            table = _jobs_table(db, open_jobs, (base_url,))
            left = int((~table["status"].isin(FINAL)).sum())
            if not wait or not left:
                return table
            if deadline is not None and time.monotonic() + interval > deadline:
                raise TimeoutError(f"{left} batch job(s) still running after {timeout:g} s; they keep running at the "
                                   "provider: poll again later (nothing is submitted twice).")
            time.sleep(interval)


# ------------------------------------------------------------------ collecting
def _error_text(error) -> str:
    """A provider's error object (``{"code", "message"}``, or anything else) as one line of text."""
    if isinstance(error, dict):
        return f"{error.get('code')}: {error.get('message')}"
    return str(error)[:500]


def _parse_line(raw: bytes) -> tuple[object, str | None]:
    """A file line as JSON, and what is wrong with it when its bytes are not UTF-8 (read leniently then, so that
    its custom_id still names the request it answers)."""
    try:
        return json.loads(raw), None
    except UnicodeDecodeError:
        try:
            return json.loads(raw.decode("utf-8", "replace")), "ReplyError: the output line is not valid UTF-8"
        except ValueError:
            return None, None
    except ValueError:
        return None, None


def _line_result(raw: bytes) -> tuple[str | None, _models.Reply | None, str | None, int]:
    """(custom_id, reply, error, surrogates replaced) of one line of an output or error file; never raises.

    The response body goes through the live lane's own checks (:class:`~evalkit.models.OpenAIChat` reads its
    replies with the same two functions): null, dict or list content is an error, as a live call's would be, and
    lone surrogates are replaced and counted. A line that names no request (not JSON, no custom_id) gives
    ``custom_id`` None: its request then has no result.
    """
    custom_id = None
    try:
        line, problem = _parse_line(raw)
        custom_id = line.get("custom_id") if isinstance(line, dict) else None
        if not isinstance(custom_id, str):
            return None, None, None, 0
        if problem:
            return custom_id, None, problem, 0
        if line.get("error"):
            return custom_id, None, _error_text(line["error"]), 0
        response = line.get("response")
        if not isinstance(response, dict):
            return custom_id, None, "ReplyError: the output line has no response", 0
        body, status = response.get("body"), response.get("status_code")
        if status != 200:
            error = body.get("error") if isinstance(body, dict) else body
            message = error.get("message") if isinstance(error, dict) else error
            return custom_id, None, f"HTTP {status}: {message if isinstance(message, str) else 'no message'}", 0
        reply, replaced = _wire.checked_reply(_wire.reply_from_json(body))
        return custom_id, reply, None, replaced
    except _wire.ReplyError as exc:
        return custom_id, None, f"ReplyError: {exc}", 0
    except Exception as exc:  # noqa: BLE001 - nothing in one line may stop its job from being collected
        return custom_id, None, f"unreadable output line ({type(exc).__name__}: {exc})", 0


def _results(contents) -> dict:
    """custom_id -> (reply, error, surrogates replaced) over a job's files; an answer wins over an error."""
    results: dict = {}
    for content in contents:
        for raw in content.split(b"\n"):
            if not raw.strip():
                continue
            custom_id, reply, error, replaced = _line_result(raw)
            if custom_id is not None and (custom_id not in results or results[custom_id][0] is None and reply is not None):
                results[custom_id] = (reply, error, replaced)
    return results


def _download(client, file_ids) -> tuple[list[bytes], str | None]:
    """The contents of a job's files; a file the provider no longer has (404, 410) is an empty one, with why."""
    contents, gone = [], None
    for file_id in file_ids:
        if file_id is None:
            continue
        try:
            contents.append(client.files.content(file_id).content)
        except Exception as exc:
            if getattr(exc, "status_code", None) not in (404, 410):
                raise  # a failure worth retrying: the job stays open
            gone = f"the provider no longer has file {file_id} ({type(exc).__name__})"
    return contents, gone


def collect(model, *, cache) -> pd.DataFrame:
    """Read the ended jobs' output and error files into the cache; one row per request collected.

    An answer is stored under its request's cache key (unless the cache already holds one for that key), so
    ``judge.run_judge`` or ``models.call_many`` with the same cache read it with zero calls. A failed line, or a
    request with no line (a failed, expired or cancelled job), is an error row and is not cached: the next
    :func:`submit` of that prompt sends it again. Every line is read through the live lane's reply checks, so
    no line can stop its job from being collected: content that is null, a dict or a list, a line that is not
    JSON or not UTF-8 are error rows, lone surrogates are replaced (counted in ``attrs["n_surrogates_replaced"]``),
    and every error text is redacted (:meth:`~evalkit.models.OpenAIChat.redact`) before it is stored. A job is
    marked collected only after its answers are stored; a job whose files cannot be read now (a dropped
    connection, a server error, a locked cache) stays open, with an :class:`~evalkit.EvalkitWarning`, and the
    next call collects it, after the other jobs were collected by this one.

    Returns
    -------
    DataFrame
        ``key, job_id, text, error, cached, attempts, prompt_tokens, completion_tokens, created_at, batch``;
        ``cached`` is False and ``batch`` True, so :func:`evalkit.models.usage_summary` prices the rows at the
        batch price.

    Examples
    --------
    >>> import pandas as pd, pathlib, tempfile
    >>> from evalkit import batch, models
    >>> from evalkit._testing import BatchServer, Fail
    >>> cache = models.CallCache(pathlib.Path(tempfile.mkdtemp()) / "calls.sqlite")
    >>> script = lambda prompt, attempt: Fail(500, "overloaded") if prompt == "b" else "PASS"
    >>> with BatchServer(script) as server:
    ...     judge = models.OpenAIChat("judge-1", base_url=server.url)
    ...     _ = batch.submit(pd.Series(["a", "b"]), judge, cache=cache)
    ...     _ = batch.poll(judge, cache=cache, interval=0.05)
    ...     answers = batch.collect(judge, cache=cache)
    >>> answers.sort_values("text")[["text", "error", "prompt_tokens"]].reset_index(drop=True)
       text                 error  prompt_tokens
    0  PASS                  <NA>              1
    1  <NA>  HTTP 500: overloaded           <NA>
    >>> models.usage_summary(answers, price_per_million={"prompt": 2.0})[["n", "n_errors", "cost_usd"]]
       n  n_errors  cost_usd
    0  2         1  0.000001
    """
    client, base_url, redact = _check_model(model)
    _check_cache(cache)
    rows, replaced = [], 0
    with closing(_connect(cache)) as db:
        ended = db.execute(f"SELECT job_id, model, status, message, output_file_id, error_file_id FROM batch_jobs"
                           f" WHERE base_url = ? AND collected_at IS NULL AND status IN ({', '.join('?' * len(FINAL))})",
                           (base_url, *FINAL)).fetchall()
        for job_id, mid, status, message, *file_ids in ended:
            try:
                contents, gone = _download(client, file_ids)
                job_rows, job_replaced = _collect_job(db, cache, job_id, mid, status, message, contents, gone, redact)
            except Exception as exc:  # noqa: BLE001 - this job stays open; the others are collected
                warn(f"could not collect batch job {job_id} now ({redact(f'{type(exc).__name__}: {exc}')}); "
                              "it stays open, and the next collect reads it.")
                continue
            rows += job_rows
            replaced += job_replaced
    table = pd.DataFrame(rows, columns=ANSWER_COLUMNS)
    table["cached"] = False
    table["attempts"] = pd.array(np.ones(len(table), dtype=int), dtype="Int64")
    table["batch"] = True
    for column in ("prompt_tokens", "completion_tokens"):
        table[column] = pd.array(table[column], dtype="Int64")
    for column in ("text", "error"):
        table[column] = table[column].astype("string")
    table.attrs["n_surrogates_replaced"] = replaced
    return table


def _collect_job(db, cache, job_id: str, mid: str, status: str, message, contents, gone, redact) -> tuple[list, int]:
    """Store one ended job's answers and errors, then mark it collected (a kill before that re-collects it)."""
    results = _results(contents)
    why = "; ".join(m for m in (message, gone) if m)
    missing = f"no result for this request (batch {status}{': ' + why if why else ''})"
    stamp = _now()
    keys = [k for (k,) in db.execute("SELECT key FROM batch_requests WHERE job_id = ?", (job_id,))]
    rows, errors, answers, replaced = [], [], [], 0
    for key in keys:
        reply, error, n = results.get(key, (None, missing, 0))
        error = None if error is None else redact(error)
        if reply is not None:
            replaced += n
            if cache.get(key) is None:
                answers.append((key, mid, reply))
        errors.append((error, job_id, key))
        rows.append({"key": key, "job_id": job_id, "text": None if reply is None else reply.text, "error": error,
                     "prompt_tokens": getattr(reply, "prompt_tokens", None),
                     "completion_tokens": getattr(reply, "completion_tokens", None), "created_at": stamp})
    cache.put_many(answers)  # one transaction per job
    with _transaction(db):  # after the answers are in the cache
        db.executemany("UPDATE batch_requests SET error = ? WHERE job_id = ? AND key = ?", errors)
        db.execute("UPDATE batch_jobs SET collected_at = ? WHERE job_id = ?", (stamp, job_id))
    return rows, replaced


def jobs(cache) -> pd.DataFrame:
    """Every batch job recorded in the cache's database, oldest first, with the columns of :func:`submit`.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from evalkit import batch, models
    >>> batch.jobs(models.CallCache(pathlib.Path(tempfile.mkdtemp()) / "calls.sqlite")).columns.tolist()[:4]
    ['job_id', 'model', 'base_url', 'batch_id']
    """
    _check_cache(cache)
    with closing(_connect(cache)) as db:
        return _jobs_table(db)


# ------------------------------------------------------------------ a judge run
class _BatchAnswers:
    """Stands in for the model while ``judge.run_judge`` reads a batch run back from the cache.

    Same ``model_id`` and ``params`` as the real model, so the cache keys match (:meth:`replace` gives a repeat's, as
    the real model's does); it is only called for a prompt the cache lacks, and then raises that request's batch
    error (an error row, with no call made).
    """

    def __init__(self, model_id: str, params: dict, errors: dict):
        self.model_id, self.params, self._errors = model_id, params, errors

    def replace(self, **changes) -> _BatchAnswers:
        return _BatchAnswers(self.model_id, {**self.params, **changes}, self._errors)

    def __call__(self, prompt: str):
        key = _models.CallCache.key(self.model_id, self.params, prompt)
        raise BatchError(self._errors.get(key, "no answer: the request is in no collected batch job"))


def run_judge(cases: pd.DataFrame, rubric, model, *, cache, max_requests_per_file: int = MAX_REQUESTS_PER_FILE,
              interval: float = 30.0, timeout: float | None = None, price_per_million=None,
              batch_discount: float = 0.5, repeats: int = 1, progress: bool = False) -> pd.DataFrame:
    """:func:`evalkit.judge.run_judge` through the provider's Batch API: submit, poll, collect, then read the cache.

    Renders the prompts exactly as ``judge.run_judge`` does (:func:`evalkit.judge.render_prompts`), submits
    those that are neither cached nor already in an open job, waits for the jobs, stores their answers, then
    returns ``judge.run_judge``'s results table, read from the cache with zero calls. Re-running after a killed
    kernel resumes the same jobs; re-running after it finished makes no request at all, except to submit
    again the requests that failed.

    Parameters
    ----------
    cases, rubric
        As in :func:`evalkit.judge.run_judge`.
    model : models.OpenAIChat
    cache : models.CallCache
    max_requests_per_file : int, default 50000
        See :func:`submit`.
    interval, timeout
        See :func:`poll`.
    price_per_million : mapping, optional
        Per-call prices, for ``attrs["usage"]["cost_usd"]`` (see :func:`evalkit.models.usage_summary`).
    batch_discount : float, default 0.5
        The batch price as a share of the per-call price.
    repeats : int, default 1
        Judge each case this many times, as :func:`evalkit.judge.run_judge` does: repeat ``r`` is the model with
        ``seed = (its seed or 0) + r - 1`` (repeat 1 the model as given), each repeat's requests in the same jobs,
        cached under their own keys; the table has a row per case and repeat (``sample_id``, ``repeat``).
    progress : bool, default False
        Progress bar while reading the cache.

    Returns
    -------
    DataFrame
        The results table of :func:`evalkit.judge.run_judge`, one row per case. A request whose batch line
        failed is an error row (``error`` starts with ``BatchError``) and is sent again by the next run.
        ``attrs["usage"]`` counts what this call collected from the batch jobs as calls made (at the batch
        price), and everything else as cached.

    Examples
    --------
    >>> import pandas as pd, pathlib, tempfile
    >>> from evalkit import batch, judge, models
    >>> from evalkit._testing import BatchServer
    >>> cases = pd.DataFrame({"case_id": ["c1", "c2"], "output": ["Paris", "Lyon"]})
    >>> rubric = judge.Rubric("capital", "Names the capital of France.", "{criterion}\\n{output}\\n{levels}?")
    >>> cache = models.CallCache(pathlib.Path(tempfile.mkdtemp()) / "calls.sqlite")
    >>> script = lambda prompt, attempt: "PASS\\nit does" if "Paris" in prompt else "FAIL\\nit does not"
    >>> with BatchServer(script, batch_delay=0.1) as server:
    ...     judge_model = models.OpenAIChat("judge-1", base_url=server.url)
    ...     res = batch.run_judge(cases, rubric, judge_model, cache=cache, interval=0.05)
    ...     before = server.api_requests + server.requests
    ...     again = batch.run_judge(cases, rubric, judge_model, cache=cache, interval=0.05)
    ...     requests = server.api_requests + server.requests - before
    >>> res[["case_id", "verdict", "reason"]]
      case_id verdict       reason
    0      c1    PASS      it does
    1      c2    FAIL  it does not
    >>> res.attrs["usage"]["n_cached"], again.attrs["usage"]["n_cached"], requests
    (0, 2, 0)
    """
    prompts = _judge.render_prompts(cases, rubric)
    _check_model(model)
    _check_cache(cache)
    check_number(interval, "interval", low=0.0)  # every option is checked before anything is sent
    check_number(timeout, "timeout", low=0.0, allow_none=True)
    check_number(batch_discount, "batch_discount", low=0.0, high=1.0)
    repeats = check_number(repeats, "repeats", low=1, integer=True)
    mid, params = _models.model_identity(model, cache=cache)
    drawn = [repeat_model(model, params, r)[0] for r in range(1, repeats + 1)]
    keys = pd.Series([_models.CallCache.key(mid, _models.model_identity(m, cache=cache)[1], p)
                      for m in drawn for p in prompts])
    for m in drawn:  # each repeat's requests under its own seed (its own cache keys), in files of their own
        submit(prompts, m, cache=cache, max_requests_per_file=max_requests_per_file)
    poll(model, cache=cache, wait=True, interval=interval, timeout=timeout)
    answers = collect(model, cache=cache)
    with closing(_connect(cache)) as db:  # the latest error of each key, for the prompts the cache lacks
        failed = dict(db.execute("SELECT r.key, r.error FROM batch_requests r JOIN batch_jobs j USING (job_id)"
                                 " WHERE j.collected_at IS NOT NULL AND r.error IS NOT NULL ORDER BY j.collected_at"))
        failed.update(db.execute("SELECT r.key, 'in batch job ' || j.job_id || ' (' || j.status || '), not collected"
                                 " yet: run again to collect it' FROM batch_requests r JOIN batch_jobs j USING (job_id)"
                                 " WHERE j.collected_at IS NULL"))
    errors = {key: failed[key] for key in keys if key in failed}
    results = _judge.run_judge(cases, rubric, _BatchAnswers(mid, params, errors), cache=cache, max_retries=0,
                               repeats=repeats, progress=progress)
    if repeats > 1:  # the results' rows run case by case, each case's repeats in turn
        keys = pd.Series(keys.to_numpy().reshape(repeats, len(prompts)).T.ravel())

    fresh = answers.drop_duplicates("key", keep="last").set_index("key")
    first = ~keys.duplicated().to_numpy()
    made = keys.isin(fresh.index).to_numpy() & first  # answered or failed in a job this call collected
    calls = pd.DataFrame({
        "cached": ~made & results["error"].isna().to_numpy(),
        "error": results["error"].to_numpy(),
        "attempts": pd.array(made.astype(int), dtype="Int64"),
        "prompt_tokens": fresh["prompt_tokens"].reindex(keys).where(made).to_numpy(),
        "completion_tokens": fresh["completion_tokens"].reindex(keys).where(made).to_numpy(),
        "batch": True,
    })
    results.attrs["usage"] = _models.usage_summary(calls, price_per_million=price_per_million,
                                                   batch_discount=batch_discount).to_dict("records")[0]
    results.attrs["n_surrogates_replaced"] = answers.attrs["n_surrogates_replaced"]
    return results
