"""Benchmark: the labellers' click-to-next-case time (with the fsynced write) at 500 and 100,000 cases (cases
for `Labeller`, comparisons for `PairwiseLabeller`), and `evalkit report` wall time.

Run on demand: ``python benchmarks/bench_widgets.py [--clicks 500] [--sizes 500 100000] [--skip-report]``.
The limit is the bare labels-file write (open, append, flush, fsync) of the same record: each click is
paired with one bare write timed right after it in the same run (after a warm-up), so the medians compare
like with like and a click that costs the same at 100,000 cases as at 500 shows the same ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit.widgets import Labeller, PairwiseLabeller


def bare_write(path: Path, record: dict) -> None:
    with path.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def clicks_vs_writes(n: int, clicks: int, warmup: int = 20, *, pairwise: bool = False) -> tuple[np.ndarray, np.ndarray]:
    ids = [f"c{i}" for i in range(n)]
    with tempfile.TemporaryDirectory() as folder:
        if pairwise:
            table = pd.DataFrame({"comparison_id": ids, "input": [f"question {i}" for i in range(n)],
                                  "output_a": [f"<b>first answer</b> {i} " * 20 for i in range(n)],
                                  "output_b": [f"second answer {i} " * 20 for i in range(n)],
                                  "system_a": "alpha", "system_b": "beta"})
            lab = PairwiseLabeller(table, Path(folder) / "labels.jsonl", labeller="bench", seed=0)
            levels = ("A", "B", "TIE", "A")
        else:
            cases = pd.DataFrame({"case_id": ids, "input": [f"question {i}" for i in range(n)],
                                  "output": [f"<b>answer</b> {i} " * 20 for i in range(n)]})
            judge = pd.Series(np.where(np.arange(n) % 3, "PASS", "FAIL"), index=cases["case_id"])
            lab = Labeller(cases, Path(folder) / "labels.jsonl", judge=judge, labeller="bench")
            levels = ("FAIL", "PASS", "PASS", "PASS")
        bare = Path(folder) / "bare.jsonl"
        click_times, write_times = [], []
        for i in range(warmup + clicks):
            button = lab.buttons[levels[i % 4]]
            start = time.perf_counter()
            button.click()  # write + fsync + render the next case
            click = time.perf_counter() - start
            record = {"case_id": f"c{i}", "label": "PASS", "labeller": "bench", "timestamp": "2026-01-01T00:00:00.000+00:00",
                      "position": i, "rubric_version": None, "note": None, "mode": "label", "session": lab.session,
                      "unsure": False}
            if pairwise:
                record.update(system_left="alpha", system_right="beta", order_seed=0)
            start = time.perf_counter()
            bare_write(bare, record)
            write = time.perf_counter() - start
            if i >= warmup:
                click_times.append(click)
                write_times.append(write)
        assert len(lab.labels()) == warmup + clicks
        lab.close()
    return np.array(click_times) * 1000, np.array(write_times) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clicks", type=int, default=500)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 100_000])
    parser.add_argument("--skip-report", action="store_true")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} cores")
    q = lambda a: np.percentile(a, [25, 50, 75])  # noqa: E731
    for pairwise, n in [(p, n) for p in (False, True) for n in args.sizes]:
        clicks_ms, writes_ms = clicks_vs_writes(n, min(args.clicks, n - 20), pairwise=pairwise)
        c25, c50, c75 = q(clicks_ms)
        w25, w50, w75 = q(writes_ms)
        kind = "comparisons (PairwiseLabeller)" if pairwise else "cases (Labeller)"
        print(f"{n:>7} {kind}, {len(clicks_ms)} clicks: click median {c50:.2f} ms (IQR {c25:.2f}-{c75:.2f}); "
              f"limit, the bare fsynced write: median {w50:.2f} ms (IQR {w25:.2f}-{w75:.2f}); "
              f"click / write {c50 / w50:.2f}x, what the widget adds {c50 - w50:.2f} ms")
    if not args.skip_report:
        with tempfile.TemporaryDirectory() as out:
            start = time.perf_counter()
            status = subprocess.run([sys.executable, "-m", "evalkit.cli", "report", "--out", out],
                                    capture_output=True, text=True)
            wall = time.perf_counter() - start
        print(f"evalkit report on the demo data: {wall:.1f} s wall, exit status {status.returncode}")
        print(status.stdout.strip())


if __name__ == "__main__":
    main()
