"""Benchmark: a judge run against the local chat-completions server, beside the bare official client.

Run on demand: ``python benchmarks/bench_judge.py [--calls 2000 --concurrency 32 128 --latency 0.05 --repeats 3]``.

The server runs in its own process (as a real server would), so it does not share the client's interpreter
lock. After a warm-up, every repetition runs, at each concurrency and in the same order, three clients on the
same prompts: evalkit's ``run_judge`` (with a fresh call cache, as a real run has: ``OpenAIChat``'s calls as
coroutines on evalkit's call loop, over aiohttp's kept-alive connections, with evalkit's deadline, size cap, checks
and cache), the bare official ``openai`` client in as many threads (connection pool sized to the concurrency), and
the limit, a bare aiohttp loop in one thread (one session, as many requests in flight; no deadline, no checks, no
cache). Medians of the paired repetitions are quoted with their range,
beside the latency bound ``calls x latency / concurrency`` (and the rounds of ``concurrency`` calls it takes at the
latency, a bound no client beats) and the client CPU per call (the interpreter runs one
thread's Python at a time, so the client's CPU work does not spread over cores). The targets are printed
beside the figures: evalkit at the highest concurrency within 1.5x of the latency bound and at least 2x faster
than at the lowest, at most 0.8 ms of client CPU per call. A last run re-reads every answer from the cache and
must make no call. Profile: benchmarks/notes/judge.md.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit import judge, models
from evalkit._testing import ChatServer


def answer(prompt: str, attempt: int) -> str:
    return "PASS\nSupported." if hash(prompt) % 4 else "FAIL\nUnsupported."


def serve(latency: float, requests: mp.Queue, urls: mp.Queue, stop: mp.Event) -> None:
    with ChatServer(answer, latency=latency) as server:
        urls.put(server.url)
        while not stop.wait(0.05):
            while not requests.empty():
                requests.get()
                urls.put(server.requests)


def cpu_seconds() -> float:
    usage = os.times()
    return usage.user + usage.system


def run_evalkit(url: str, cases: pd.DataFrame, concurrency: int, folder: Path) -> tuple[float, float, pd.DataFrame]:
    cache = models.CallCache(folder / f"calls-{time.monotonic_ns()}.sqlite")
    model = models.OpenAIChat("bench-judge", base_url=url)
    start, cpu = time.perf_counter(), cpu_seconds()
    res = judge.run_judge(cases, judge.UNSUPPORTED_CLAIMS, model, cache=cache, concurrency=concurrency, progress=False)
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    if res["error"].notna().any():
        raise RuntimeError(f"evalkit run had errors: {res['error'].dropna().iloc[0]}")
    return wall, cpu, res


def run_bare(url: str, prompts: list[str], concurrency: int) -> tuple[float, float]:
    import httpx
    import openai

    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    client = openai.OpenAI(api_key="unused", base_url=url, max_retries=0, http_client=httpx.Client(limits=limits))

    def one(prompt: str) -> str:
        response = client.chat.completions.create(model="bench-judge", messages=[{"role": "user", "content": prompt}],
                                                  temperature=0.0)
        return response.choices[0].message.content

    start, cpu = time.perf_counter(), cpu_seconds()
    with ThreadPoolExecutor(concurrency) as pool:
        texts = list(pool.map(one, prompts))
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    client.close()
    assert all(texts)
    return wall, cpu


def run_aiohttp(url: str, prompts: list[str], concurrency: int) -> tuple[float, float]:
    """The limit: a bare aiohttp loop in one thread, ``concurrency`` requests in flight over one session's kept-alive
    connections (no deadline, no size cap, no checks, no cache): what evalkit's wire costs without its policies."""
    import asyncio

    import aiohttp

    async def all_of_them() -> list[str]:
        gate = asyncio.Semaphore(concurrency)
        async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency)) as session:
            async def one(prompt: str) -> str:
                body = {"model": "bench-judge", "messages": [{"role": "user", "content": prompt}], "temperature": 0.0}
                async with gate, session.post(url + "/chat/completions", json=body) as response:
                    return (await response.json())["choices"][0]["message"]["content"]

            return await asyncio.gather(*(one(prompt) for prompt in prompts))

    start, cpu = time.perf_counter(), cpu_seconds()
    texts = asyncio.run(all_of_them())
    wall, cpu = time.perf_counter() - start, cpu_seconds() - cpu
    assert len(texts) == len(prompts) and all(texts)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[32, 128])
    parser.add_argument("--latency", type=float, default=0.05)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    requests, urls, stop = mp.Queue(), mp.Queue(), mp.Event()
    process = mp.Process(target=serve, args=(args.latency, requests, urls, stop), daemon=True)
    process.start()
    url = urls.get(timeout=30)

    def served() -> int:
        requests.put(None)
        return urls.get(timeout=30)

    print(f"load average before: {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores; {args.calls} calls, "
          f"server latency {args.latency * 1000:.0f} ms, {args.repeats} paired repetitions after a warm-up")
    times: dict = {}
    try:
        with tempfile.TemporaryDirectory() as folder:
            folder = Path(folder)
            for rep in range(-1, args.repeats):  # rep -1 is the warm-up, on a tenth of the calls
                n = max(50, args.calls // 10) if rep < 0 else args.calls
                cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(n)], "input": "q", "source": "s",
                                      "output": [f"answer number {i} of repetition {rep}" for i in range(n)]})
                prompts = [judge.UNSUPPORTED_CLAIMS.render(row) for row in cases.to_dict("records")]
                for concurrency in args.concurrency:
                    for name, run in (("evalkit", lambda c, t, _: run_evalkit(url, t, c, folder)[:2]),
                                      ("bare", lambda c, _, p: run_bare(url, p, c)),
                                      ("aiohttp", lambda c, _, p: run_aiohttp(url, p, c))):
                        wall, cpu = run(concurrency, cases, prompts)
                        if rep >= 0:
                            times.setdefault((name, concurrency), []).append((wall, cpu))
            before = served()
            cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(args.calls)], "input": "q", "source": "s",
                                  "output": [f"answer number {i} of repetition 0" for i in range(args.calls)]})
            cache = models.CallCache(folder / "resume.sqlite")
            model = models.OpenAIChat("bench-judge", base_url=url)
            judge.run_judge(cases, judge.UNSUPPORTED_CLAIMS, model, cache=cache, concurrency=32, progress=False)
            first = served() - before
            start = time.perf_counter()
            again = judge.run_judge(cases, judge.UNSUPPORTED_CLAIMS, model, cache=cache, concurrency=32, progress=False)
            cached_wall = time.perf_counter() - start
            second = served() - before - first
    finally:
        stop.set()
        process.join(timeout=30)

    print(f"load average after: {os.getloadavg()[0]:.2f}")
    fmt = lambda values: f"{np.median(values):6.2f} s [{min(values):.2f}-{max(values):.2f}]"  # noqa: E731
    walls = {key: [w for w, _ in value] for key, value in times.items()}
    for concurrency in args.concurrency:
        cpu = {name: np.median([c for _, c in times[(name, concurrency)]]) / args.calls * 1000
               for name in ("evalkit", "bare", "aiohttp")}
        latency_bound = args.calls * args.latency / concurrency
        rounds = -(-args.calls // concurrency) * args.latency  # whole rounds of `concurrency` calls at the latency
        ratios = [e / b for e, b in zip(walls[("evalkit", concurrency)], walls[("bare", concurrency)], strict=True)]
        to_bound = [e / latency_bound for e in walls[("evalkit", concurrency)]]
        print(f"\nconcurrency {concurrency}: latency bound {latency_bound:.2f} s ({rounds:.2f} s in whole rounds of "
              f"{concurrency} calls)")
        print(f"  evalkit run_judge   {fmt(walls[('evalkit', concurrency)])}   CPU {cpu['evalkit']:.2f} ms per call "
              "(target <= 0.80)")
        print(f"  bare openai client  {fmt(walls[('bare', concurrency)])}   CPU {cpu['bare']:.2f} ms per call")
        print(f"  limit: bare aiohttp {fmt(walls[('aiohttp', concurrency)])}   CPU {cpu['aiohttp']:.2f} ms per call "
              "(one loop, no policies)")
        print(f"  evalkit / latency bound {np.median(to_bound):.2f}x [{min(to_bound):.2f}-{max(to_bound):.2f}]"
              f"{' (target <= 1.5x)' if concurrency == max(args.concurrency) else ''}; evalkit / bare openai: median "
              f"of paired ratios {np.median(ratios):.3f}x [{min(ratios):.3f}-{max(ratios):.3f}]; limit / latency bound "
              f"{np.median(walls[('aiohttp', concurrency)]) / latency_bound:.2f}x; evalkit / limit "
              f"{np.median(walls[('evalkit', concurrency)]) / np.median(walls[('aiohttp', concurrency)]):.2f}x")
    if len(args.concurrency) > 1:
        low, high = min(args.concurrency), max(args.concurrency)
        paired = [lo / h for h, lo in zip(walls[("evalkit", high)], walls[("evalkit", low)], strict=True)]
        print(f"\nevalkit at {low} / at {high}: median of paired ratios {np.median(paired):.2f}x "
              f"[{min(paired):.2f}-{max(paired):.2f}] (target >= 2x; the latency bounds differ {high / low:.1f}x)")
    print(f"cached re-run: {cached_wall:.2f} s, {int(again['cached'].sum())}/{len(again)} rows from the cache, "
          f"{second} server requests (first run {first})")


if __name__ == "__main__":
    main()
