"""Benchmark: a judge run against the local chat-completions server with a fixed latency.

Run on demand: ``python benchmarks/bench_judge.py [--calls 2000 --concurrency 32 --latency 0.05]``.
The server runs in its own process (as a real server would), so its threads do not share the client's
interpreter lock. Prints the wall time beside the bound ``calls x latency / concurrency`` and a second
run from the cache, which must make no call.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import tempfile
import time
from pathlib import Path

import pandas as pd

from evalkit import judge, models
from evalkit._testing import ChatServer


def answer(prompt: str, attempt: int) -> str:
    return "PASS\nSupported." if hash(prompt) % 4 else "FAIL\nUnsupported."


def serve(latency: float, urls: mp.Queue, stop: mp.Event) -> None:
    with ChatServer(answer, latency=latency) as server:
        urls.put((server.url, None))
        stop.wait()
        urls.put((None, server.requests))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()

    urls, stop = mp.Queue(), mp.Event()
    process = mp.Process(target=serve, args=(args.latency, urls, stop), daemon=True)
    process.start()
    url, _ = urls.get(timeout=30)
    cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(args.calls)], "input": "q", "source": "s",
                          "output": [f"answer number {i}" for i in range(args.calls)]})
    try:
        with tempfile.TemporaryDirectory() as folder:
            cache = models.CallCache(Path(folder) / "calls.sqlite")
            model = models.OpenAIChat("bench-judge", base_url=url)
            start = time.perf_counter()
            first = judge.run_judge(cases, judge.UNSUPPORTED_CLAIMS, model, cache=cache,
                                    concurrency=args.concurrency, progress=False)
            wall = time.perf_counter() - start
            start = time.perf_counter()
            second = judge.run_judge(cases, judge.UNSUPPORTED_CLAIMS, model, cache=cache,
                                     concurrency=args.concurrency, progress=False)
            cached_wall = time.perf_counter() - start
    finally:
        stop.set()
        _, served = urls.get(timeout=30)
        process.join(timeout=30)

    bound = args.calls * args.latency / args.concurrency
    print(f"{args.calls} calls, concurrency {args.concurrency}, server latency {args.latency * 1000:.0f} ms")
    print(f"first run   {wall:7.2f} s   bound {bound:.2f} s   ratio {wall / bound:.2f}x  (target <= 1.5x); "
          f"errors {int(first['error'].notna().sum())}")
    print(f"cached run  {cached_wall:7.2f} s   cached rows {int(second['cached'].sum())}/{len(second)}; "
          f"server saw {served} requests in all ({served - args.calls} during the cached run)")


if __name__ == "__main__":
    main()
