"""Benchmark: a judge run through the Batch API of the local test server, beside the call cache's own cost.

Run on demand: ``python benchmarks/bench_batch.py [--prompts 10000 --repeats 3]``. The server runs in its own
process (as a provider would) and completes each batch as soon as it is polled. Each repetition runs, on a
fresh cache, ``batch.run_judge`` end to end (render, submit, poll, collect, read back with ``judge.run_judge``)
and, paired with it, the limit: what storing and reading the same answers costs through the cache alone
(one miss, one put and one hit per prompt). Medians after one warm-up repetition.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import statistics
import tempfile
import time
import warnings
from pathlib import Path

import pandas as pd

from evalkit import batch, judge, models
from evalkit._testing import BatchServer


def answer(prompt: str, attempt: int) -> str:
    return "PASS\nSupported." if hash(prompt) % 4 else "FAIL\nUnsupported."


def serve(urls: mp.Queue, stop: mp.Event) -> None:
    with BatchServer(answer) as server:
        urls.put(server.url)
        stop.wait()


def batch_run(cases: pd.DataFrame, url: str, folder: Path) -> float:
    cache = models.CallCache(folder / "batch.sqlite")
    model = models.OpenAIChat("bench-judge", base_url=url)
    start = time.perf_counter()
    results = batch.run_judge(cases, judge.UNSUPPORTED_CLAIMS, model, cache=cache, interval=0.01)
    wall = time.perf_counter() - start
    if results["error"].notna().any() or len(results) != len(cases):
        raise RuntimeError("the batch run lost answers")
    return wall


def cache_floor(cases: pd.DataFrame, folder: Path) -> float:
    cache = models.CallCache(folder / "floor.sqlite")
    prompts = judge.render_prompts(cases, judge.UNSUPPORTED_CLAIMS)
    start = time.perf_counter()
    keys = [models.CallCache.key("bench-judge", {"temperature": 0.0}, p) for p in prompts]
    for key in keys:
        if cache.get(key) is None:
            cache.put(key, "bench-judge", models.Reply("PASS\nSupported.", 10, 2))
    for key in keys:
        cache.get(key)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--prompts", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # the progress-free run emits none; keep the table clean regardless

    urls, stop = mp.Queue(), mp.Event()
    process = mp.Process(target=serve, args=(urls, stop), daemon=True)
    process.start()
    url = urls.get(timeout=30)
    cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(args.prompts)], "input": "What does the source say?",
                          "source": "A short source text.", "output": [f"answer number {i}" for i in range(args.prompts)]})
    runs, floors = [], []
    try:
        for repeat in range(args.repeats + 1):  # the first is a warm-up
            with tempfile.TemporaryDirectory() as folder:
                wall = batch_run(cases, url, Path(folder))
                floor = cache_floor(cases, Path(folder))
            if repeat:
                runs.append(wall)
                floors.append(floor)
    finally:
        stop.set()
        process.join(timeout=30)

    run, limit = statistics.median(runs), statistics.median(floors)
    print(f"{args.prompts} prompts, median of {args.repeats} paired repetitions after a warm-up")
    print(f"batch.run_judge end to end  {run:6.2f} s   ({run / args.prompts * 1e6:.0f} us per prompt)")
    print(f"limit: the cache alone      {limit:6.2f} s   (miss + put + hit per prompt)   ratio {run / limit:.2f}x")


if __name__ == "__main__":
    main()
