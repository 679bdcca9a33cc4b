"""Paired comparisons, measured: the pass-rate difference interval's coverage and the planners' power.

1. Coverage of the 95% interval for p_b - p_a (Newcombe's method 10, the default, and Tango's score interval)
   at n = 30, 50, 100, 200 on pass rates near 0.9 with 2-20% of cases flipping (tests/harness.py,
   PAIRED_PASS_GRID), by simulation with Monte Carlo standard errors, and exactly (summing each interval's
   coverage over every possible 2 x 2 table). The simulation draws the 2 x 2
   counts and calls the interval kernels that compare.paired calls (tests/test_compare.py checks that the
   two agree); the harness runs compare.paired itself on a subset.
2. ``cases_needed`` and ``detectable_difference``: at the planned n, the exact McNemar test's empirical
   power over simulated data sets (scipy's binomtest on each) beside the requested power.

    python benchmarks/bench_compare.py [--reps 4000] [--power-reps 4000]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy import stats
from scipy.special import gammaln, xlogy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit import compare  # noqa: E402
from evalkit._stats import newcombe_paired_interval, tango_interval  # noqa: E402
from tests import harness  # noqa: E402

SIZES = (30, 50, 100, 200)
PLANS = [(0.02, 0.1, 0.8), (0.05, 0.1, 0.8), (0.03, 0.05, 0.9), (0.1, 0.2, 0.8), (0.05, 0.2, 0.8)]
DETECT = [(100, 0.1, 0.8), (50, 0.2, 0.8), (200, 0.05, 0.9), (40, 0.3, 0.8)]


def _log_pmf(n, counts, probs):
    log = gammaln(n + 1) - sum(gammaln(c + 1) for c in counts)
    return log + sum(xlogy(c, p) for c, p in zip(counts, probs, strict=True))  # xlogy: 0 * log 0 = 0


def exact_tango_coverage(n: int, cells, level: float, cache: dict) -> float:
    """P(Tango's interval covers p01 - p10): it depends on (n10, n01) only, so sum over their trinomial law."""
    _, p10, p01, _ = cells
    if n not in cache:
        pairs = np.array([(a, b) for a in range(n + 1) for b in range(n + 1 - a)])
        cache[n] = pairs, np.array([tango_interval(int(a), int(b), n, level) for a, b in pairs])
    pairs, limits = cache[n]
    a, b = pairs[:, 0], pairs[:, 1]
    pmf = np.exp(_log_pmf(n, (a, b, n - a - b), (p10, p01, max(1 - p10 - p01, 0.0))))
    truth = p01 - p10
    return float(pmf[(limits[:, 0] <= truth) & (truth <= limits[:, 1])].sum())


def _wilson(k, n, z):
    """Wilson score limits, vectorised (the closed form of scipy's ``proportion_ci(method="wilson")``)."""
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * np.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return centre - half, centre + half


def newcombe_limits(n11, n10, n01, n, z):
    """Newcombe's method 10 for arrays of tables (the kernel's formula, vectorised; checked against it below)."""
    n00 = n - n11 - n10 - n01
    pb, pa = (n11 + n01) / n, (n11 + n10) / n
    lb, ub = _wilson(n11 + n01, n, z)
    la, ua = _wilson(n11 + n10, n, z)
    margins = (n11 + n01) * (n10 + n00) * (n11 + n10) * (n01 + n00) * 1.0
    cross = n11 * n00 - n01 * n10 * 1.0
    numerator = np.where(cross > 0, np.maximum(cross - n / 2, 0.0), cross)
    with np.errstate(divide="ignore", invalid="ignore"):
        phi = np.where(margins == 0, 0.0, numerator / np.sqrt(np.where(margins == 0, 1.0, margins)))
    d = pb - pa
    low = d - np.sqrt(np.maximum((pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2, 0.0))
    high = d + np.sqrt(np.maximum((pa - la) ** 2 - 2 * phi * (pa - la) * (ub - pb) + (ub - pb) ** 2, 0.0))
    return np.maximum(low, -1.0), np.minimum(high, 1.0)


def exact_newcombe_coverage(n: int, cells, level: float) -> float:
    """P(Newcombe's interval covers p01 - p10), summed over every 2 x 2 table of n cases."""
    p11, p10, p01, p00 = cells
    z = float(stats.norm.ppf(0.5 + level / 2))
    total = 0.0
    for n11 in range(n + 1):
        pairs = np.array([(a, b) for a in range(n - n11 + 1) for b in range(n - n11 + 1 - a)])
        a, b = pairs[:, 0], pairs[:, 1]
        low, high = newcombe_limits(n11, a, b, n, z)
        pmf = np.exp(_log_pmf(n, (np.full_like(a, n11), a, b, n - n11 - a - b), (p11, p10, p01, p00)))
        total += pmf[(low <= p01 - p10) & (p01 - p10 <= high)].sum()
    return float(total)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000, help="simulated data sets per coverage cell")
    parser.add_argument("--power-reps", type=int, default=4000, help="simulated data sets per planner setting")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()

    print("1. 95% interval for p_b - p_a: coverage, simulated (MC s.e.) and exact\n")
    rng = np.random.default_rng(args.seed)
    z = float(stats.norm.ppf(0.975))
    for _ in range(200):  # the vectorised Newcombe used for the exact sums is the kernel compare.paired calls
        t = rng.multinomial(60, [0.85, 0.05, 0.05, 0.05])
        assert np.allclose(newcombe_limits(*t[:3], 60, z), newcombe_paired_interval(*map(int, t), 0.95), atol=1e-12)
    cache: dict = {}
    kernels = {"newcombe": lambda c, n: newcombe_paired_interval(c[0], c[1], c[2], n - c[0] - c[1] - c[2], 0.95),
               "tango": lambda c, n: tango_interval(c[1], c[2], n, 0.95)}
    memo = {name: {} for name in kernels}
    print(f"{'design':44} {'n':>4} {'Newcombe':>9} {'exact':>7} {'width':>6} {'Tango':>7} {'exact':>7} {'width':>6}"
          f"   (MC s.e. {np.sqrt(0.95 * 0.05 / args.reps):.4f})")
    simulated = {name: [] for name in kernels}
    exact = {name: [] for name in kernels}
    widths = {name: [] for name in kernels}
    for (pass_a, flip, difference), design in zip(harness.compare.PAIRED_PASS_SETTINGS, harness.compare.PAIRED_PASS_GRID, strict=True):
        p10, p01 = (flip - difference) / 2, (flip + difference) / 2
        cells = np.clip([pass_a - p10, p10, p01, 1 - pass_a - p01], 0, None)  # the harness design's law, as counts
        cells = cells / cells.sum()
        for n in SIZES:
            counts = rng.multinomial(n, cells, size=args.reps)
            for name, kernel in kernels.items():
                limits = np.array([memo[name].setdefault((n, *c[:3]), kernel(tuple(int(v) for v in c), n))
                                   for c in map(tuple, counts)])
                simulated[name].append(np.mean((limits[:, 0] <= difference) & (difference <= limits[:, 1])))
                widths[name].append(np.mean(limits[:, 1] - limits[:, 0]))
            exact["newcombe"].append(exact_newcombe_coverage(n, cells, 0.95))
            exact["tango"].append(exact_tango_coverage(n, cells, 0.95, cache))
            print(f"{design.name:44.44} {n:4d} {simulated['newcombe'][-1]:9.4f} {exact['newcombe'][-1]:7.4f} "
                  f"{widths['newcombe'][-1]:6.3f} {simulated['tango'][-1]:7.4f} {exact['tango'][-1]:7.4f} "
                  f"{widths['tango'][-1]:6.3f}", flush=True)
    print()
    for name in kernels:
        for what, rates in (("simulated", np.array(simulated[name])), ("exact", np.array(exact[name]))):
            print(f"{name:9} {what:9} coverage: min {rates.min():.4f}, mean {rates.mean():.4f} over {rates.size} "
                  f"settings; every setting >= 0.93: {'yes' if rates.min() >= 0.93 else 'NO'}; mean >= 0.945: "
                  f"{'yes' if rates.mean() >= 0.945 else 'NO'}")
        print(f"{name:9} mean width {np.mean(widths[name]):.4f}")

    print(f"\n2. Planners: exact McNemar power at the planned n, {args.power_reps} simulated data sets each\n")
    print(f"{'planner':22} {'difference':>10} {'discordant':>10} {'target':>6} {'n':>6} {'exact':>7} "
          f"{'simulated':>9} {'± se':>6}  within [target - 2 se, target + 0.05]")
    ok = True
    for difference, discordant, power in PLANS:
        row = compare.cases_needed(difference, discordant=discordant, power=power).iloc[0]
        sim, se = harness.compare.simulated_mcnemar_power(int(row["n"]), difference, discordant, 0.05, reps=args.power_reps, rng=rng)
        good = power - 2 * se <= sim <= power + 0.05
        ok &= good
        print(f"{'cases_needed':22} {difference:10.3f} {discordant:10.3f} {power:6.2f} {int(row['n']):6d} "
              f"{row['power_at_n']:7.4f} {sim:9.4f} {se:6.4f}  {'yes' if good else 'NO'}")
    for n, discordant, power in DETECT:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            difference = compare.detectable_difference(n, discordant=discordant, power=power).iloc[0]["difference"]
        sim, se = harness.compare.simulated_mcnemar_power(n, difference, discordant, 0.05, reps=args.power_reps, rng=rng)
        good = power - 2 * se <= sim <= power + 0.05
        ok &= good
        print(f"{'detectable_difference':22} {difference:10.4f} {discordant:10.3f} {power:6.2f} {n:6d} {power:7.4f} "
              f"{sim:9.4f} {se:6.4f}  {'yes' if good else 'NO'}")
    print(f"\nall planner settings within bounds: {'yes' if ok else 'NO'}; {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
