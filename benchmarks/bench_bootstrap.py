"""Benchmark: bootstrap CIs of Spearman correlations (correlate.correlate) against scipy.stats.bootstrap.

Run on demand: ``python benchmarks/bench_bootstrap.py [--items 1600 --columns 19 --resamples 2000 --repeats 3]``.
Each contender runs once to warm up, then all run in turn within each repetition (paired, same process);
medians are printed with the range of the paired ratios. Contenders:

- evalkit at dataset level: one scipy.stats.bootstrap call over all columns, ranking by counting;
- scipy: ``scipy.stats.bootstrap`` per column, paired, vectorized, the statistic
  ``pearsonr(rankdata(x), rankdata(y))`` along the resample axis (how scipy's documentation builds it);
- the limit: a minimal hand-written counting-rank bootstrap (draw indices, count, cumsum, Pearson,
  quantiles), no checks and no scipy machinery;
- evalkit at summary level (items in groups of ``--group-size``) against a per-group scipy loop followed by
  scipy.stats.bootstrap over the groups.
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
import pandas as pd
from _timing import paired, ratio  # benchmarks/ is on sys.path when a benchmark runs as a script
from scipy import stats

from evalkit import correlate


def make_data(n: int, k: int, group_size: int, rng: np.random.Generator):
    human = pd.Series(rng.integers(1, 6, n).astype(float), index=[f"i{j}" for j in range(n)])
    noise = rng.normal(size=(n, k)) * np.linspace(0.5, 3.0, k)
    scores = pd.DataFrame(np.round(human.to_numpy()[:, None] * 0.3 + noise, 2), index=human.index,
                          columns=np.round(np.linspace(0.1, 1.0, k), 4))
    groups = pd.Series(np.arange(n) // group_size, index=human.index)
    return scores, human, groups


def scipy_bootstrap(scores: pd.DataFrame, human: pd.Series, n_resamples: int, seed: int):
    def spearman(x, y, axis=-1):
        return stats.pearsonr(stats.rankdata(x, axis=axis), stats.rankdata(y, axis=axis), axis=axis).statistic

    rng = np.random.default_rng(seed)
    h = human.to_numpy()
    out = []
    for column in scores.columns:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = stats.bootstrap((scores[column].to_numpy(), h), spearman, paired=True, vectorized=True,
                                  n_resamples=n_resamples, method="percentile", rng=rng)
        out.append((res.confidence_interval.low, res.confidence_interval.high))
    return np.array(out)


def counting_limit(scores: pd.DataFrame, human: pd.Series, n_resamples: int, seed: int, batch: int):
    """The limit: rank once, then per resample count (bincount), cumsum to mid-ranks, and correlate."""
    x = scores.to_numpy().T
    n = x.shape[1]
    code_x = np.stack([np.unique(column, return_inverse=True)[1] for column in x])
    code_y = np.unique(human.to_numpy(), return_inverse=True)[1]
    rng = np.random.default_rng(seed)

    def centred_midranks(codes):  # mid-ranks always average (n + 1) / 2
        flat = codes + (np.arange(len(codes)) * n)[:, None]
        count = np.bincount(flat.ravel(), minlength=flat.size)
        mid = count * -0.5
        mid += np.cumsum(count.reshape(len(codes), n), axis=1).ravel()
        mid += 0.5 - (n + 1) / 2
        return mid[flat]

    r = np.empty((len(code_x), n_resamples))
    for start in range(0, n_resamples, batch):
        idx = rng.integers(0, n, (min(batch, n_resamples - start), n))
        ry = centred_midranks(code_y[idx])
        yy = np.einsum("bn,bn->b", ry, ry)
        for j, codes in enumerate(code_x):  # a column at a time, in cache
            rx = centred_midranks(codes[idx])
            r[j, start:start + len(idx)] = np.einsum("bn,bn->b", rx, ry) / np.sqrt(np.einsum("bn,bn->b", rx, rx) * yy)
    return np.quantile(r, [0.025, 0.975], axis=1).T


def scipy_summary(scores, human, groups, n_resamples, seed):
    codes, labels = pd.factorize(groups)
    values, h = scores.to_numpy(), human.to_numpy()
    per_group = np.full((len(labels), values.shape[1]), np.nan)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for g in range(len(labels)):
            rows = codes == g
            for j in range(values.shape[1]):
                if np.ptp(values[rows, j]) > 0 and np.ptp(h[rows]) > 0:
                    per_group[g, j] = stats.spearmanr(values[rows, j], h[rows]).statistic
        res = stats.bootstrap((per_group,), lambda v, axis: np.nanmean(v, axis=axis), axis=0, n_resamples=n_resamples,
                              method="percentile", rng=np.random.default_rng(seed))
    return res.confidence_interval


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=1_600)
    parser.add_argument("--columns", type=int, default=19)
    parser.add_argument("--resamples", type=int, default=2_000)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    scores, human, groups = make_data(args.items, args.columns, args.group_size, np.random.default_rng(0))
    b = args.resamples
    batch = max(1, 2_000_000 // (args.items * args.columns))  # what correlate uses
    print(f"{args.items:,} items x {args.columns} score columns x {b:,} resamples (Spearman, percentile CI); "
          f"{args.repeats} paired repetitions after a warm-up")

    ours = correlate.correlate(scores, human, n_resamples=b, rng=1)
    limit = counting_limit(scores, human, b, 1, batch)
    np.testing.assert_allclose(ours[["ci_low", "ci_high"]].to_numpy(), limit, atol=1e-12)  # same draws, same CIs

    times = paired({
        "evalkit": lambda: correlate.correlate(scores, human, n_resamples=b, rng=1),
        "scipy": lambda: scipy_bootstrap(scores, human, b, 1),
        "limit": lambda: counting_limit(scores, human, b, 1, batch),
        "summary": lambda: correlate.correlate(scores, human, level="summary", by=groups, n_resamples=b, rng=1),
        "summary_scipy": lambda: scipy_summary(scores, human, groups, b, 1),
    }, args.repeats)
    med = {name: float(np.median(values)) for name, values in times.items()}
    print(f"evalkit correlate, dataset level          {med['evalkit']:7.3f} s")
    print(f"scipy.stats.bootstrap per column          {med['scipy']:7.3f} s   scipy / evalkit {ratio(times, 'scipy', 'evalkit')}"
          "  (target >= 8x)")
    print(f"limit: counting ranks, bare numpy         {med['limit']:7.3f} s   evalkit / limit {ratio(times, 'evalkit', 'limit')}"
          "  (target <= 1.5x)")
    print(f"evalkit correlate, summary level          {med['summary']:7.3f} s   ({args.items // args.group_size:,} groups "
          f"of {args.group_size})")
    print(f"per-group spearmanr + bootstrap (scipy)   {med['summary_scipy']:7.3f} s   scipy / evalkit "
          f"{ratio(times, 'summary_scipy', 'summary')}")
    spread = {name: f"{values.min():.3f}-{values.max():.3f}" for name, values in times.items()}
    print(f"spread over repetitions (s): {spread}")


if __name__ == "__main__":
    main()
