"""Benchmark: the labeller's click-to-next-case time (with the fsynced write), and `evalkit report` wall time.

Run on demand: ``python benchmarks/bench_widgets.py [--clicks 500] [--skip-report]``. The baseline for the
click is the bare labels-file write (open, append, flush, fsync) measured in the same run, so the ratio
shows what the widget adds on top of making the label durable.
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

from evalkit.widgets import Labeller


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clicks", type=int, default=500)
    parser.add_argument("--skip-report", action="store_true")
    args = parser.parse_args()
    n = args.clicks
    cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(n)], "input": [f"question {i}" for i in range(n)],
                          "output": [f"<b>answer</b> {i} " * 20 for i in range(n)]})
    judge = pd.Series(np.where(np.arange(n) % 3, "PASS", "FAIL"), index=cases["case_id"])
    with tempfile.TemporaryDirectory() as folder:
        lab = Labeller(cases, Path(folder) / "labels.jsonl", judge=judge)
        clicks = []
        for i in range(n):
            button = lab.buttons["PASS" if i % 4 else "FAIL"]
            start = time.perf_counter()
            button.click()  # write + fsync + render the next case
            clicks.append(time.perf_counter() - start)
        assert lab.done and len(lab.labels()) == n
        writes = []
        path = Path(folder) / "bare.jsonl"
        for i in range(n):
            record = {"case_id": f"c{i}", "label": "PASS"}
            start = time.perf_counter()
            with path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps(record) + "\n")
                handle.flush()
                os.fsync(handle.fileno())
            writes.append(time.perf_counter() - start)
    clicks_ms, writes_ms = np.array(clicks) * 1000, np.array(writes) * 1000
    print(f"{n} clicks: median {np.median(clicks_ms):.2f} ms, p95 {np.percentile(clicks_ms, 95):.2f} ms, "
          f"max {clicks_ms.max():.2f} ms  (target: median < 20 ms)")
    print(f"bare fsynced write: median {np.median(writes_ms):.2f} ms; click / write = "
          f"{np.median(clicks_ms) / np.median(writes_ms):.1f}x")
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
