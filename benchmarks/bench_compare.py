"""Paired comparisons, measured: the pass-rate difference interval's coverage and the planners' power.

1. Coverage of the 95% interval for p_b - p_a (Tango's score interval, the default, and Newcombe's method 10)
   at n = 30, 50, 100, 200 on pass rates near 0.9 with 2-20% of cases flipping (tests/harness.py,
   PAIRED_PASS_GRID), by simulation with Monte Carlo standard errors, and for Tango also exactly (summing
   the interval's coverage over every possible pair of discordant counts). The simulation draws the 2 x 2
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
from scipy.special import gammaln, xlogy

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit import compare  # noqa: E402
from evalkit._stats import newcombe_paired_interval, tango_interval  # noqa: E402
from tests import harness  # noqa: E402

SIZES = (30, 50, 100, 200)
PLANS = [(0.02, 0.1, 0.8), (0.05, 0.1, 0.8), (0.03, 0.05, 0.9), (0.1, 0.2, 0.8), (0.05, 0.2, 0.8)]
DETECT = [(100, 0.1, 0.8), (50, 0.2, 0.8), (200, 0.05, 0.9), (30, 0.2, 0.8)]


def exact_tango_coverage(n: int, cells: tuple[float, float], level: float, cache: dict) -> float:
    """P(the Tango interval covers p01 - p10), summed over the trinomial law of (n10, n01)."""
    p10, p01 = cells
    if n not in cache:
        pairs = np.array([(a, b) for a in range(n + 1) for b in range(n + 1 - a)])
        limits = np.array([tango_interval(int(a), int(b), n, level) for a, b in pairs])
        cache[n] = pairs, limits
    pairs, limits = cache[n]
    a, b = pairs[:, 0], pairs[:, 1]
    rest = max(1 - p10 - p01, 0.0)
    pmf = np.exp(gammaln(n + 1) - gammaln(a + 1) - gammaln(b + 1) - gammaln(n - a - b + 1)
                 + xlogy(a, p10) + xlogy(b, p01) + xlogy(n - a - b, rest))  # xlogy: 0 * log 0 = 0
    truth = p01 - p10
    return float(pmf[(limits[:, 0] <= truth) & (truth <= limits[:, 1])].sum())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=4000, help="simulated data sets per coverage cell")
    parser.add_argument("--power-reps", type=int, default=4000, help="simulated data sets per planner setting")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    start = time.perf_counter()

    print("1. 95% interval for p_b - p_a: coverage (simulated, MC s.e.; Tango also exact)\n")
    rng = np.random.default_rng(args.seed)
    cache: dict = {}
    kernels = {"tango": lambda c, n: tango_interval(c[1], c[2], n, 0.95),
               "newcombe": lambda c, n: newcombe_paired_interval(c[0], c[1], c[2], n - c[0] - c[1] - c[2], 0.95)}
    memo = {name: {} for name in kernels}
    print(f"{'design':48} {'n':>4} {'Tango sim':>10} {'± se':>6} {'exact':>7} {'width':>6} {'Newcombe':>9} {'width':>6}")
    simulated = {name: [] for name in kernels}
    exact = []
    for (pass_a, flip, difference), design in zip(harness.PAIRED_PASS_SETTINGS, harness.PAIRED_PASS_GRID, strict=True):
        p10, p01 = (flip - difference) / 2, (flip + difference) / 2
        cells = np.clip([pass_a - p10, p10, p01, 1 - pass_a - p01], 0, None)  # the harness design's law, as counts
        cells = cells / cells.sum()
        for n in SIZES:
            counts = rng.multinomial(n, cells, size=args.reps)
            line = {}
            for name, kernel in kernels.items():
                limits = np.array([memo[name].setdefault((n, *c[:3]), kernel(tuple(int(v) for v in c), n))
                                   for c in map(tuple, counts)])
                covered = (limits[:, 0] <= difference) & (difference <= limits[:, 1])
                simulated[name].append(covered.mean())
                line[name] = (covered.mean(), np.mean(limits[:, 1] - limits[:, 0]))
            exact.append(exact_tango_coverage(n, (p10, p01), 0.95, cache))
            se = np.sqrt(0.95 * 0.05 / args.reps)
            print(f"{design.name:48.48} {n:4d} {line['tango'][0]:10.4f} {se:6.4f} {exact[-1]:7.4f} "
                  f"{line['tango'][1]:6.3f} {line['newcombe'][0]:9.4f} {line['newcombe'][1]:6.3f}", flush=True)
    for name, rates in simulated.items():
        rates = np.array(rates)
        print(f"\n{name}: simulated coverage min {rates.min():.4f}, mean {rates.mean():.4f} over {rates.size} settings; "
              f"every setting >= 0.93: {'yes' if rates.min() >= 0.93 else 'NO'}; mean >= 0.945: "
              f"{'yes' if rates.mean() >= 0.945 else 'NO'}")
    exact = np.array(exact)
    print(f"tango, exact coverage: min {exact.min():.4f}, mean {exact.mean():.4f}; every setting >= 0.93: "
          f"{'yes' if exact.min() >= 0.93 else 'NO'}; mean >= 0.945: {'yes' if exact.mean() >= 0.945 else 'NO'}")

    print(f"\n2. Planners: exact McNemar power at the planned n, {args.power_reps} simulated data sets each\n")
    print(f"{'planner':22} {'difference':>10} {'discordant':>10} {'target':>6} {'n':>6} {'exact':>7} "
          f"{'simulated':>9} {'± se':>6}  within [target - 2 se, target + 0.05]")
    ok = True
    for difference, discordant, power in PLANS:
        row = compare.cases_needed(difference, discordant=discordant, power=power).iloc[0]
        sim, se = harness.simulated_mcnemar_power(int(row["n"]), difference, discordant, 0.05, reps=args.power_reps, rng=rng)
        good = power - 2 * se <= sim <= power + 0.05
        ok &= good
        print(f"{'cases_needed':22} {difference:10.3f} {discordant:10.3f} {power:6.2f} {int(row['n']):6d} "
              f"{row['power_at_n']:7.4f} {sim:9.4f} {se:6.4f}  {'yes' if good else 'NO'}")
    for n, discordant, power in DETECT:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            difference = compare.detectable_difference(n, discordant=discordant, power=power).iloc[0]["difference"]
        sim, se = harness.simulated_mcnemar_power(n, difference, discordant, 0.05, reps=args.power_reps, rng=rng)
        good = power - 2 * se <= sim <= power + 0.05
        ok &= good
        print(f"{'detectable_difference':22} {difference:10.4f} {discordant:10.3f} {power:6.2f} {n:6d} {power:7.4f} "
              f"{sim:9.4f} {se:6.4f}  {'yes' if good else 'NO'}")
    print(f"\nall planner settings within bounds: {'yes' if ok else 'NO'}; {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
