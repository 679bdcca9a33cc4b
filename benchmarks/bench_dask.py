"""Benchmark: tcva.sweep and density.fd_star on dask (a LocalCluster of 2 workers, 2 GB each) against pandas.

Run on demand: ``python benchmarks/bench_dask.py [--claims 50000000] [--docs 1000000] [--repeat 3] [--tmp DIR]
[--general]``.

1. Writes ``--claims`` claims (items of 1 to 19 claims in ascending order of their string ids, an item possibly
   continuing in the next file) as partitioned Parquet in a temporary folder, one file at a time so memory stays
   bounded.
2. Sweeps them on the cluster (10 temperatures, the default none penalty) with ``presorted=True``: no shuffle,
   each partition completed by the rows carried from the ones before it. Its scores of a sample of complete items
   (the first ``--sample-claims`` claims) are compared with the pandas sweep of that sample, float for float.
   Beside it, the limit: one pass reading the same Parquet files and counting rows, both for the two columns a
   sweep needs (item_id, verdict) and for the three it reads (claim_idx too, for its check that each claim is
   there once). ``--general`` also times the plan for claims in any order (a hash-partitioned groupby and a range
   partitioning: two shuffles).
3. FD* of ``--docs`` documents with three claims each on average (claims in random order, so documents span
   partitions) on the cluster, against the pandas fd_star of the same tables: same bins, same z, exactly
   (``--docs 0`` skips it). Its plan shuffles the claims to their documents.

Wall times are medians of ``--repeat`` paired repetitions after a warm-up; peak worker memory is the largest
resident set size of the worker processes, sampled every 50 ms with psutil while a run is in progress. Each part
counts the WARNING lines the cluster logged while it ran (a P2P shuffle logs two per run). The load average is
printed before and after. The Parquet folder is deleted at the end (one given with ``--folder`` is kept, and reused by
the next run with the same sizes). Profile and figures: benchmarks/notes/dask.md.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd

from evalkit import density, tcva, verdicts

TEMPERATURES = np.round(np.linspace(0.1, 1.0, 10), 2)


def write_claims(folder: Path, n_claims: int, rows_per_file: int, rng: np.random.Generator) -> int:
    """Write the claim-verdict table file by file; return the number of files."""
    folder.mkdir()
    next_item, carry, written, n_files = 0, None, 0, 0
    while written < n_claims:
        rows = min(rows_per_file, n_claims - written)
        sizes = rng.integers(1, 20, rows // 5 + 20)
        item = np.repeat(np.arange(next_item, next_item + len(sizes)), sizes)
        claim_idx = np.arange(len(item)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        next_item += len(sizes)
        if carry is not None:
            item, claim_idx = np.concatenate([carry[0], item]), np.concatenate([carry[1], claim_idx])
        carry = (item[rows:], claim_idx[rows:])
        item, claim_idx = item[:rows], claim_idx[:rows]
        levels = rng.choice(5, size=rows, p=[0.1, 0.1, 0.2, 0.25, 0.35])
        pd.DataFrame({
            "item_id": [f"item{i:09d}" for i in item],
            "claim_idx": claim_idx,
            "verdict": pd.Categorical.from_codes(levels, dtype=verdicts.VERDICT_DTYPE),
        }).to_parquet(folder / f"part{n_files:04d}.parquet", engine="pyarrow", index=False)
        written += rows
        n_files += 1
    return n_files


def write_fd(folder: Path, n_docs: int, n_parts: int, rng: np.random.Generator) -> None:
    (folder / "docs").mkdir(parents=True)
    (folder / "claims").mkdir()
    ids = np.array([f"doc{i:08d}" for i in range(n_docs)], dtype=object)
    docs = pd.DataFrame({"doc_id": ids, "n_tokens": np.round(rng.lognormal(5.5, 0.8, n_docs)).astype(np.int64) + 5,
                         "source": rng.choice(["review", "trial", "news", "blog"], n_docs)})
    n_claims = 3 * n_docs
    claims = pd.DataFrame({"doc_id": ids[rng.integers(0, n_docs, n_claims)], "prob_fact": rng.random(n_claims)})
    for name, table, parts in (("docs", docs, n_parts), ("claims", claims, 3 * n_parts)):
        for k, rows in enumerate(np.array_split(np.arange(len(table)), parts)):
            table.iloc[rows].to_parquet(folder / name / f"part{k:03d}.parquet", engine="pyarrow", index=False)


class PeakRSS:
    """Largest resident set size of the given processes while the block runs (sampled every 50 ms)."""

    def __init__(self, pids):
        import psutil

        self.processes = [psutil.Process(pid) for pid in pids]
        self.peak = 0

    def _sample(self):
        while not self.done.wait(0.05):
            for process in self.processes:
                self.peak = max(self.peak, process.memory_info().rss)

    def __enter__(self):
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._sample, daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        self.thread.join()


class CountWarnings(logging.Handler):
    """Counts the WARNING (and worse) records of the ``distributed`` loggers in this process (the scheduler's)."""

    def __init__(self):
        super().__init__(logging.WARNING)
        self.count = 0

    def emit(self, record):
        self.count += 1

    def __enter__(self):
        logging.getLogger("distributed").addHandler(self)
        return self

    def __exit__(self, *exc):
        logging.getLogger("distributed").removeHandler(self)


def median_times(runs: dict, repeat: int, pids, warm_up: bool = True) -> tuple[dict, int, dict]:
    """Run each function once to warm up, then ``repeat`` paired rounds; medians, peak worker RSS, last results."""
    for func in runs.values() if warm_up else ():
        func()
    times = {name: [] for name in runs}
    results = {}
    peak = 0
    for _ in range(repeat):
        for name, func in runs.items():
            with PeakRSS(pids) as rss:
                start = time.perf_counter()
                results[name] = func()
                times[name].append(time.perf_counter() - start)
            peak = max(peak, rss.peak) if name.startswith("dask") else peak
    return {name: float(np.median(t)) for name, t in times.items()}, peak, results


def main() -> None:
    import dask
    import dask.dataframe as dd
    from dask.distributed import Client, LocalCluster

    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--claims", type=int, default=50_000_000)
    parser.add_argument("--sample-claims", type=int, default=5_000_000)
    parser.add_argument("--rows-per-file", type=int, default=1_000_000)
    parser.add_argument("--docs", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tmp", default=None, help="folder for the temporary Parquet files (default: the system's)")
    parser.add_argument("--general", action="store_true", help="also time the plan for claims in any order")
    parser.add_argument("--folder", default=None,
                        help="keep the claims' Parquet files in this folder: written when it has none, reused by a "
                             "later run with the same --claims and --rows-per-file (e.g. written while the machine is "
                             "busy, timed when it is idle); never deleted")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    rng = np.random.default_rng(0)
    kept = Path(args.folder) if args.folder else None
    root = kept or Path(tempfile.mkdtemp(prefix="evalkit-bench-dask-", dir=args.tmp))
    written = {"claims": args.claims, "rows_per_file": args.rows_per_file}
    try:
        marker = root / "claims.json"
        if kept is not None and marker.exists() and json.loads(marker.read_text()) == written:
            print(f"reusing the {args.claims:,} claims written in {root / 'claims'}")
        else:
            if kept is not None and (root / "claims").exists():
                raise SystemExit(f"{root / 'claims'} holds other claims than --claims {args.claims} --rows-per-file "
                                 f"{args.rows_per_file}: give an empty or new --folder")
            root.mkdir(parents=True, exist_ok=True)
            start = time.perf_counter()
            n_files = write_claims(root / "claims", args.claims, args.rows_per_file, rng)
            marker.write_text(json.dumps(written))
            print(f"wrote {args.claims:,} claims in {n_files} Parquet files in {time.perf_counter() - start:.0f} s")
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, memory_limit="2GB",
                          dashboard_address=None, scheduler_kwargs={"dashboard_address": "127.0.0.1:0"},  # a free port
                          host="127.0.0.1") as cluster, Client(cluster) as client:
            pids = list(client.run(os.getpid).values())
            claims = dd.read_parquet(root / "claims")

            n_sample_files = -(-args.sample_claims // args.rows_per_file)
            files = sorted((root / "claims").glob("*.parquet"))
            head = pd.read_parquet(files[:n_sample_files + 1])
            first = pd.read_parquet(files[:n_sample_files], columns=["item_id"])["item_id"]
            sample_items = pd.Index(first.unique()[:-1], name="item_id")  # the last may continue in the next file
            sample = head[head["item_id"].isin(sample_items)]
            start = time.perf_counter()
            expected = tcva.sweep(sample, TEMPERATURES)
            t_pandas = time.perf_counter() - start
            del head, first

            def count_rows(frame):  # every row is computed; only the count comes back
                return frame.map_partitions(len, meta=(None, "int64")).sum().compute()

            def read_floor(columns):  # read the columns, and only count rows
                return claims[columns].map_partitions(lambda part: pd.Series([len(part)]), meta=(None, "int64")).sum().compute()

            runs = {"dask sweep": lambda: count_rows(tcva.sweep(claims, TEMPERATURES, presorted=True)),
                    "read 2 columns": lambda: read_floor(["item_id", "verdict"]),
                    "read 3 columns": lambda: read_floor(["item_id", "claim_idx", "verdict"])}
            with CountWarnings() as logged:
                # The warm-up: the whole sweep once, keeping the sample's rows for the comparison with pandas.
                wanted = client.scatter(pd.Index(expected.index), broadcast=True)  # on the workers once, not in the graph
                scores = tcva.sweep(claims, TEMPERATURES, presorted=True)
                # get_indexer, not isin: pandas' isin on Arrow-backed string ids loops in Python
                got = scores.map_partitions(lambda part, ids: part[ids.get_indexer(part.index) >= 0], wanted,
                                            meta=scores._meta).compute()
                got = got.reindex(expected.index)
                diff = float(np.max(np.abs(got.to_numpy() - expected.to_numpy())))
                same = bool(np.array_equal(got.to_numpy(), expected.to_numpy()))
                for name, run in runs.items():
                    if name != "dask sweep":
                        run()
                medians, peak, results = median_times(runs, args.repeat, pids, warm_up=False)
            if args.general:  # on its own, after the paired runs: its shuffles log their own lines
                with CountWarnings() as logged_general:
                    general, _, _ = median_times({"general plan": lambda: count_rows(tcva.sweep(claims, TEMPERATURES))},
                                                 args.repeat, pids)
            n_items = int(results["dask sweep"])
            floor = medians["read 2 columns"]
            print(f"\nsweep of {args.claims:,} claims ({n_items:,} items, {len(TEMPERATURES)} temperatures, none penalty on, "
                  f"presorted=True) on 2 workers x 2 GB: {medians['dask sweep']:.1f} s (median of {args.repeat})")
            print(f"  limit, one pass over the same Parquet files counting rows: {floor:.1f} s reading item_id and "
                  f"verdict, {medians['read 3 columns']:.1f} s with claim_idx; sweep / limit = "
                  f"{medians['dask sweep'] / floor:.2f}x (target <= 3x), {medians['dask sweep'] / medians['read 3 columns']:.2f}x"
                  " of the three-column pass")
            if args.general:
                print(f"  the plan for claims in any order (two shuffles): {general['general plan']:.1f} s = "
                      f"{general['general plan'] / floor:.1f}x the limit; WARNING lines logged: {logged_general.count}")
            print(f"  peak worker memory (RSS, largest of the 2 workers): {peak / 2**30:.2f} GiB; WARNING lines logged "
                  f"by the cluster: {logged.count}")
            print(f"  pandas sweep of a sample of {len(sample):,} claims ({len(expected):,} complete items): "
                  f"{t_pandas:.1f} s; max |dask - pandas| = {diff:.3g} (required <= 1e-12), bit-identical: {same}")
            if diff > 1e-12:
                raise SystemExit("the dask sweep differs from the pandas sweep")
            del scores, got, sample, expected
            print(f"load average {os.getloadavg()[0]:.2f}")
            if not args.docs:
                return

            shutil.rmtree(root / "fd", ignore_errors=True)
            write_fd(root / "fd", args.docs, 8, rng)
            ddocs, dclaims = dd.read_parquet(root / "fd" / "docs"), dd.read_parquet(root / "fd" / "claims")
            pdocs, pclaims = dask.compute(ddocs, dclaims)
            runs = {"dask fd_star": lambda: density.fd_star(dclaims, ddocs).compute(),
                    "pandas fd_star": lambda: density.fd_star(pclaims, pdocs)}
            with CountWarnings() as logged:
                medians, peak, results = median_times(runs, args.repeat, pids)
            pd.testing.assert_frame_equal(results["dask fd_star"], results["pandas fd_star"], check_exact=True)
            same_bins = results["dask fd_star"]["length_bin"].equals(results["pandas fd_star"]["length_bin"])
            print(f"\nFD* of {args.docs:,} documents / {len(pclaims):,} claims (claims in 24 files, documents in 8): "
                  f"dask {medians['dask fd_star']:.1f} s (reading Parquet included), pandas {medians['pandas fd_star']:.1f} s "
                  f"(tables in memory); medians of {args.repeat}")
            print(f"  equal exactly (assert_frame_equal, check_exact): True; same bins: {same_bins}; "
                  f"peak worker memory {peak / 2**30:.2f} GiB; WARNING lines logged by the cluster: {logged.count}")
    finally:
        if kept is None:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
