"""Benchmark: Bradley-Terry ratings on 1 million comparisons of 100 systems, and their 1,000-resample bootstrap.

Run on demand: ``python benchmarks/bench_pairwise.py [--comparisons 1000000] [--systems 100] [--resamples 1000]
[--fastchat PATH] [--repeat 5]``.

Contenders, timed as paired repetitions on the same table after a warm-up:

- ``pairwise.bradley_terry`` (validation, factorizing the names, collapsing to ordered-pair counts, Newton's
  method, the sandwich interval) and ``interval="bootstrap"`` (multinomial draws of the counts of each pair and
  outcome, both orders of a pair as one, the next batch drawn on a second thread while Newton's method, started at
  the estimate, solves all resamples of the current one at once; each resample's graph checked);
- FastChat's ``compute_bt`` / ``compute_bootstrap_bt`` (``fastchat/serve/monitor/rating_systems.py``: the unique
  (pair, outcome) rows, scipy's L-BFGS-B per fit, a multiprocessing pool over bootstrap rounds), imported from a
  FastChat checkout given with ``--fastchat`` (the folder holding ``rating_systems.py``; FastChat is not a
  dependency of evalkit and none of its code ships here);
- the limit, written out here with no checks: for the fit, the names factorized, the collapsed counts (one
  bincount) and Newton's method on the (k - 1)-dimensional system (and the same from integer codes made
  beforehand); for the bootstrap, the same draws over the
  unordered pairs' outcomes and Newton's method from the estimate, batched, on one thread. Beside it, the draws
  alone: numpy's multinomial over those categories, which any exact resampler of the counts pays.

Ratings are checked to agree (after centring) before timing. The load average is printed before and after.
Profile: benchmarks/notes/pairwise.md.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import paired, ratio  # noqa: E402

from evalkit import pairwise  # noqa: E402

ELO = 400 / np.log(10)


def make_table(n: int, k: int, rng) -> pd.DataFrame:
    strength = rng.normal(0, 1, k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    p = expit(strength[a] - strength[b])
    winner = np.where(rng.random(n) < 0.2, "tie", np.where(rng.random(n) < p, "a", "b"))
    names = np.array([f"model-{i:03d}" for i in range(k)])
    return pd.DataFrame({"system_a": names[a], "system_b": names[b], "winner": winner})


def newton(counts: np.ndarray, first: np.ndarray, second: np.ndarray, k: int, start=None) -> np.ndarray:
    """Ties as half: (B, cells, 3) counts over distinct unordered pairs -> (B, k) log-strengths with system 0 at 0,
    by Newton's method from ``start`` (default zeros)."""
    y = counts[..., 0] + 0.5 * counts[..., 2]
    total = counts.sum(axis=-1)
    theta = np.zeros((counts.shape[0], k)) if start is None else np.tile(start, (counts.shape[0], 1))
    b, idx = counts.shape[0], np.arange(1, k)
    for _ in range(50):
        prob = expit(theta[:, first] - theta[:, second])
        resid, weight = y - total * prob, total * prob * (1 - prob)
        grad = np.zeros((b, k))
        for j in range(b):  # bincount per resample: no unbuffered np.add.at
            grad[j] = np.bincount(first, resid[j], k) - np.bincount(second, resid[j], k)
        hess = np.zeros((b, k * k))
        hess[:, first * k + second] = -weight  # each unordered pair once: plain assignment
        hess[:, second * k + first] = -weight
        hess = hess.reshape(b, k, k)
        hess[:, np.arange(k), np.arange(k)] = -hess.sum(axis=2)
        step = np.linalg.solve(hess[:, 1:, 1:], grad[:, 1:, None])[..., 0]
        theta[:, idx] += step
        if np.abs(step).max() < 1e-10:
            break
    return theta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comparisons", type=int, default=1_000_000)
    parser.add_argument("--systems", type=int, default=100)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5, help="paired repetitions of the single fit")
    parser.add_argument("--boot-repeat", type=int, default=2, help="paired repetitions of the bootstrap")
    parser.add_argument("--fastchat", type=Path, help="folder holding FastChat's rating_systems.py")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    table = make_table(args.comparisons, args.systems, rng)
    k = args.systems
    codes = table["system_a"].str[6:].astype(int).to_numpy(), table["system_b"].str[6:].astype(int).to_numpy()
    outcome = table["winner"].map({"a": 0, "b": 1, "tie": 2}).to_numpy()
    cells = np.unique(codes[0] * k + codes[1])
    low, high = np.minimum(codes[0], codes[1]), np.maximum(codes[0], codes[1])
    mirrored_outcome = np.where(codes[0] > codes[1], np.array([1, 0, 2])[outcome], outcome)
    pairs = np.unique(low * k + high)
    pair_first, pair_second = pairs // k, pairs % k
    pair_flat = np.searchsorted(pairs, low * k + high) * 3 + mirrored_outcome

    def limit_fit():  # both orders of a pair as one cell: the likelihood is the same without a position term
        merged = np.bincount(pair_flat, minlength=3 * len(pairs)).reshape(1, -1, 3)
        return newton(merged.astype(float), pair_first, pair_second, k)[0]

    def limit_table_fit():  # what a fit from the table needs at least: the names factorized, then limit_fit's work
        both = pd.factorize(pd.concat([table["system_a"], table["system_b"]], ignore_index=True), sort=True)[0]
        a, b = both[:len(table)], both[len(table):]
        won = pd.factorize(table["winner"])  # three labels: map them through their codes
        result = np.array([{"a": 0, "b": 1, "tie": 2}[w] for w in won[1]])[won[0]]
        lo, hi = np.minimum(a, b), np.maximum(a, b)
        flat = np.searchsorted(pairs, lo * k + hi) * 3 + np.where(a > b, np.array([1, 0, 2])[result], result)
        merged = np.bincount(flat, minlength=3 * len(pairs)).reshape(1, -1, 3)
        return newton(merged.astype(float), pair_first, pair_second, k)[0]

    def draws():
        probs = np.bincount(pair_flat, minlength=3 * len(pairs)) / args.comparisons
        gen = np.random.default_rng(1)
        return [gen.multinomial(args.comparisons, probs, size=min(250, args.resamples - s))
                for s in range(0, args.resamples, 250)]

    def limit_bootstrap():
        start = limit_fit()
        out = [newton(d.reshape(len(d), len(pairs), 3).astype(float), pair_first, pair_second, k, start)
               for d in draws()]
        return np.concatenate(out)

    contenders = {"evalkit bradley_terry (sandwich)": lambda: pairwise.bradley_terry(table),
                  "limit: names factorized, bincount + Newton": limit_table_fit,
                  "limit from integer codes: bincount + Newton": limit_fit}
    boot = {f"evalkit bootstrap ({args.resamples})": lambda: pairwise.bradley_terry(
        table, interval="bootstrap", n_resamples=args.resamples, rng=0),
        f"limit: multinomial counts + batched Newton ({args.resamples})": limit_bootstrap,
        f"the draws alone ({args.resamples} multinomials)": draws}
    print(f"load average {os.getloadavg()[0]:.2f} (1 min), {os.cpu_count()} cores")
    ours = pairwise.bradley_terry(table).set_index("system")["rating"]
    theta = limit_fit()
    assert np.allclose(limit_table_fit(), theta, atol=1e-9)
    limit = pd.Series(ELO * (theta - theta.mean()) + 1000, index=[f"model-{i:03d}" for i in range(k)])
    print(f"{args.comparisons:,} comparisons of {k} systems ({len(cells):,} ordered pairs), 20% ties; "
          f"evalkit vs the limit: max |rating difference| {np.abs(ours - limit.loc[ours.index]).max():.2e} Elo")
    if args.fastchat is not None:
        sys.path.insert(0, str(args.fastchat.resolve()))  # importable by name: its bootstrap pickles fit_bt for a Pool
        fastchat = importlib.import_module("rating_systems")
        battles = pd.DataFrame({"model_a": table["system_a"], "model_b": table["system_b"],
                                "winner": table["winner"].map({"a": "model_a", "b": "model_b", "tie": "tie"})})
        theirs = fastchat.compute_bt(battles)
        print(f"FastChat compute_bt vs evalkit: max |rating difference| after centring "
              f"{np.abs(theirs - theirs.mean() + 1000 - ours.loc[theirs.index]).max():.4f} Elo")
        contenders["FastChat compute_bt"] = lambda: fastchat.compute_bt(battles)
        boot[f"FastChat compute_bootstrap_bt ({args.resamples})"] = lambda: fastchat.compute_bootstrap_bt(
            battles, num_round=args.resamples)
    else:
        print("FastChat not given (--fastchat PATH): evalkit and the limit only.")
    times = paired(contenders, args.repeat)
    print(f"\nOne fit, medians of {args.repeat} paired repetitions after a warm-up:")
    for name, values in times.items():
        print(f"  {name:55s} {np.median(values):8.3f} s")
    evalkit_name = "evalkit bradley_terry (sandwich)"
    if "FastChat compute_bt" in times:
        print(f"  FastChat / evalkit: {ratio(times, 'FastChat compute_bt', evalkit_name)}")
    print(f"  evalkit / limit:    {ratio(times, evalkit_name, 'limit: names factorized, bincount + Newton')} (from "
          f"the table); {ratio(times, evalkit_name, 'limit from integer codes: bincount + Newton')} (from integer codes)")
    times = paired(boot, args.boot_repeat)
    print(f"\nBootstrap, medians of {args.boot_repeat} paired repetitions after a warm-up:")
    for name, values in times.items():
        print(f"  {name:55s} {np.median(values):8.3f} s")
    names = list(boot)
    if len(names) == 4:
        print(f"  FastChat / evalkit: {ratio(times, names[3], names[0])}")
    print(f"  evalkit / limit:    {ratio(times, names[0], names[1])}; evalkit / the draws alone: "
          f"{ratio(times, names[0], names[2])} (target: evalkit under 5 s)")
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
