"""Benchmark: infer.mean (PPI++) on 10 million judge scores against ppi_py on the same data, and the bare reductions.

Run on demand: ``python benchmarks/bench_infer.py [--cases 10000000] [--labels 1000] [--repeat 7]``.

For each kind of case id (int64, then strings), every repetition times, back to back on the same data:
``infer.mean`` from the two Series (aligning labels to scores by case id, checking the ids, estimate and
interval); ``ppi_py.ppi_mean_pointestimate`` + ``ppi_py.ppi_mean_ci`` (lam=None) on numpy arrays that are
already split into labelled and unlabelled (ppi_py does no alignment); and the limit, the few numpy
reductions PPI++ needs on those pre-split arrays. ``infer.mean`` gets a new Series with a new index in
every repetition, so no index hash table is reused between repetitions (a repeated call on the same Series
is also shown: pandas caches the index's uniqueness and hash table). Medians after one warm-up round.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from evalkit import infer


def reductions(y: np.ndarray, yhat: np.ndarray, yhat_u: np.ndarray) -> tuple[float, float]:
    """The limit: PPI++'s estimate and standard error from a handful of reductions on pre-split arrays."""
    n, big_n = len(y), len(yhat_u)
    mu, vu = yhat_u.mean(), yhat_u.var()
    my, mh = y.mean(), yhat.mean()
    cyh = np.mean((y - my) * (yhat - mh))
    vh, vy = yhat.var(), y.var()
    total = n + big_n
    mean_all = (n * mh + big_n * mu) / total
    var_all = (n * vh + big_n * vu + n * (mh - mean_all) ** 2 + big_n * (mu - mean_all) ** 2) / (total - 1)
    lam = min(max(cyh / ((1 + n / big_n) * var_all), 0.0), 1.0)
    se = np.sqrt(lam**2 * vu / big_n + (vy + lam**2 * vh - 2 * lam * cyh) / n)
    return my + lam * (mu - mh), se


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cases", type=int, default=10_000_000)
    parser.add_argument("--labels", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    import ppi_py  # the reference implementation (pip install ppi-python, in evalkit's "test" extra)

    rng = np.random.default_rng(0)
    truth = rng.normal(3.0, 1.0, args.cases)
    scores = truth + 0.4 + rng.normal(0, 0.7, args.cases)
    labelled = np.sort(rng.choice(args.cases, args.labels, replace=False))
    mask = np.zeros(args.cases, dtype=bool)
    mask[labelled] = True
    y, yhat, yhat_u = truth[labelled], scores[mask], scores[~mask]
    print(f"{args.cases:,} judge scores, {args.labels:,} human labels; medians of {args.repeat} paired repetitions "
          "after a warm-up")

    for kind in ("int64", "str"):
        base_ids = np.arange(args.cases) if kind == "int64" else pd.Series(np.arange(args.cases)).map("case{:08d}".format).to_numpy()
        rows = {"infer.mean (new Series)": [], "infer.mean (same Series again)": [], "ppi_py (pre-split arrays)": [],
                "limit: bare reductions": []}
        for rep in range(args.repeat + 1):
            index = pd.Index(base_ids.copy())  # a new index object: nothing cached from the previous repetition
            judge = pd.Series(scores, index=index, copy=False)
            human = pd.Series(y, index=index[labelled])
            start = time.perf_counter()
            table = infer.mean(judge, human)
            t_new = time.perf_counter() - start
            start = time.perf_counter()
            infer.mean(judge, human)
            t_again = time.perf_counter() - start
            start = time.perf_counter()
            point = ppi_py.ppi_mean_pointestimate(y, yhat, yhat_u)
            low, high = ppi_py.ppi_mean_ci(y, yhat, yhat_u, alpha=0.05)
            t_ref = time.perf_counter() - start
            start = time.perf_counter()
            reductions(y, yhat, yhat_u)
            t_limit = time.perf_counter() - start
            if rep == 0:  # warm-up; also check that all agree
                row = table.iloc[0]
                assert abs(row["estimate"] - float(np.squeeze(point))) < 1e-10
                assert abs(row["ci_low"] - float(np.squeeze(low))) < 1e-10 and abs(row["ci_high"] - float(np.squeeze(high))) < 1e-10
                continue
            for key, value in zip(rows, (t_new, t_again, t_ref, t_limit), strict=True):
                rows[key].append(value)
        med = {key: float(np.median(values)) for key, values in rows.items()}
        print(f"\ncase ids: {kind}")
        for key, value in med.items():
            print(f"  {key:<34} {value * 1000:9.1f} ms")
        ratio = med["infer.mean (new Series)"] / med["ppi_py (pre-split arrays)"]
        print(f"  infer.mean / ppi_py: {ratio:.2f}x (infer.mean also aligns labels by case id and checks the ids); "
              f"limit (bare reductions, no alignment): {med['limit: bare reductions'] * 1000:.1f} ms")


if __name__ == "__main__":
    main()
