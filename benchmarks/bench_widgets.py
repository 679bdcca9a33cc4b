"""Benchmark: the labellers' click-to-next-case time (with the fsynced write) at 500 and 100,000 cases (cases
for `Labeller`, comparisons for `PairwiseLabeller`), the cost of the live interval (``watch=``) per click at 50,
500 and 5,000 labels, and `evalkit report` wall time.

Run on demand: ``python benchmarks/bench_widgets.py [--clicks 500] [--sizes 500 100000] [--labelled 50 500 5000]
[--skip-report]``. The limit is the bare labels-file write (open, append, flush, fsync) of the same record: each
click is paired with one bare write timed right after it in the same run (after a warm-up), so the medians compare
like with like and a click that costs the same at 100,000 cases as at 500 shows the same ratio.

The live interval: two labellers on the same cases with the same labels already made (each timed click is undone,
untimed, so that every click is timed at that number of labels), one with
``watch="pass_rate", stop_half_width=0.05`` and one without, clicked in turn (which goes first alternates), with
their labels files in memory (/dev/shm, where fsync costs nothing, so that the disk's noise does not drown what
the widget adds; the disk's own cost is the first section's); each pair is timed beside the
alternative design, recomputing the whole sequence with ``infer.confidence_sequence`` and
``infer.stopping_point`` after every label (what the widget would pay per click without its O(grid) update), and
beside the bare update of the sequence (``_stats.BettingStream.update``), the limit of the incremental design.
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

from evalkit import _stats, infer
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


def watch_clicks(labelled: int, clicks: int, warmup: int = 10) -> dict[str, np.ndarray]:
    """Per-click times (ms) with and without the live interval after ``labelled`` labels, and the alternatives."""
    n = labelled + 10
    ids = [f"c{i}" for i in range(n)]
    cases = pd.DataFrame({"case_id": ids, "input": [f"question {i}" for i in range(n)],
                          "output": [f"<b>answer</b> {i} " * 20 for i in range(n)]})
    gen = np.random.default_rng(0)
    made = np.where(gen.random(labelled) < 0.8, "PASS", "FAIL")
    times = {"without": [], "with": [], "recompute": [], "update": []}
    memory = "/dev/shm" if Path("/dev/shm").is_dir() else None
    with tempfile.TemporaryDirectory(dir=memory) as folder:
        labs = {}
        for name, options in (("without", {}), ("with", {"watch": "pass_rate", "stop_half_width": 0.05})):
            path = Path(folder) / f"{name}.jsonl"
            with path.open("w", encoding="utf-8") as handle:  # the labels made before, as the labeller writes them
                for i, label in enumerate(made):
                    handle.write(json.dumps({"case_id": ids[i], "label": str(label), "labeller": "bench", "mode": "label",
                                             "position": i, "session": "before", "case_order": "random"}) + "\n")
            labs[name] = Labeller(cases, path, labeller="bench", order="random", **options)
        stream = _stats.BettingStream(0.0, 1.0, confidence_level=0.95, theta_range=(0.0, 1.0))
        for value in made == "PASS":
            stream.update(float(value))
        so_far = list(made)
        for i in range(warmup + clicks):
            level = "PASS" if gen.random() < 0.8 else "FAIL"
            so_far.append(level)
            spent = {}
            for name in (("without", "with") if i % 2 else ("with", "without")):
                start = time.perf_counter()
                labs[name].buttons[level].click()
                spent[name] = time.perf_counter() - start
            start = time.perf_counter()
            cs = infer.confidence_sequence(human=pd.Series(so_far, index=ids[: len(so_far)]))
            infer.stopping_point(cs, half_width=0.05)
            spent["recompute"] = time.perf_counter() - start
            state = stream.snapshot()
            start = time.perf_counter()
            stream.update(float(level == "PASS"))
            spent["update"] = time.perf_counter() - start
            if i >= warmup:
                for name, value in spent.items():
                    times[name].append(value * 1000)
            row = cs.iloc[-1]
            assert labs["with"].sequence().iloc[-1][["cs_low", "cs_high"]].tolist() == [row["cs_low"], row["cs_high"]]
            for lab in labs.values():  # untimed: back to ``labelled`` labels, so every click is timed at that size
                lab.undo()
            so_far.pop()
            stream.restore(state)
        for lab in labs.values():
            lab.close()
    return {name: np.array(values) for name, values in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--clicks", type=int, default=500)
    parser.add_argument("--sizes", type=int, nargs="+", default=[500, 100_000])
    parser.add_argument("--labelled", type=int, nargs="+", default=[50, 500, 5000])
    parser.add_argument("--watch-clicks", type=int, default=200)
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
    for labelled in args.labelled:
        t = watch_clicks(labelled, args.watch_clicks)
        med = {name: float(np.median(v)) for name, v in t.items()}
        # one pair = two consecutive clicks, one in each order, so that going first or second cancels out
        pairs = len(t["with"]) // 2 * 2
        w, wo = t["with"][:pairs].reshape(-1, 2).sum(axis=1), t["without"][:pairs].reshape(-1, 2).sum(axis=1)
        ratio, added = w / wo, (w - wo) / 2
        print(f"live interval after {labelled:>5} labels, {len(t['with'])} clicks (labels file in memory): click with watch= "
              f"median {med['with']:.2f} ms, without {med['without']:.2f} ms (paired ratio {np.median(ratio):.2f}x, IQR "
              f"{np.percentile(ratio, 25):.2f}-{np.percentile(ratio, 75):.2f}; watch= adds {np.median(added):.2f} ms); "
              f"recomputing the sequence instead {med['recompute']:.1f} ms per click; limit, the bare update "
              f"{med['update'] * 1000:.0f} us")
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
