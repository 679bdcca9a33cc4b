"""Benchmark: tcva.sweep against a per-temperature pandas loop and a groupby-apply with scipy.stats.pmean.

Run on demand: ``python benchmarks/bench_sweep.py [--items 200000]``. Prints times, ratios against the
baselines measured in the same run, and the sweep's peak memory against its output and input sizes.
"""

from __future__ import annotations

import argparse
import time
import tracemalloc

import numpy as np
import pandas as pd
from scipy import stats

from evalkit import tcva, verdicts


def make_table(n_items: int, rng: np.random.Generator) -> pd.DataFrame:
    n_claims = rng.integers(1, 20, n_items)
    item = np.repeat(np.arange(n_items), n_claims)
    claim_idx = np.arange(len(item)) - np.repeat(np.cumsum(n_claims) - n_claims, n_claims)
    levels = rng.choice(5, size=len(item), p=[0.1, 0.1, 0.2, 0.25, 0.35])
    return pd.DataFrame({
        "item_id": item,
        "claim_idx": claim_idx,
        "verdict": pd.Categorical.from_codes(levels, dtype=verdicts.VERDICT_DTYPE),
    })


def timed(func, repeat: int = 3):
    best = np.inf
    for _ in range(repeat):
        start = time.perf_counter()
        result = func()
        best = min(best, time.perf_counter() - start)
    return best, result


def pandas_loop(table: pd.DataFrame, temperatures: np.ndarray) -> pd.DataFrame:
    """Baseline (a): for each temperature, w**p, groupby mean, then **(1/p)."""
    w = table["verdict"].map(verdicts.get_scale()).astype(float)
    out = {}
    for t in temperatures:
        p = tcva.temperature_to_p(t)
        wp = (np.maximum(w, 1e-9) if p < 0 else w) ** p
        out[t] = wp.groupby(table["item_id"]).mean() ** (1 / p)
    return pd.DataFrame(out)


def apply_pmean(table: pd.DataFrame, temperatures: np.ndarray) -> pd.DataFrame:
    """Baseline (b): groupby().apply with scipy.stats.pmean per item."""
    w = table["verdict"].map(verdicts.get_scale()).astype(float)
    grouped = w.groupby(table["item_id"])

    def one(x: pd.Series, p: float) -> float:
        values = x.to_numpy()
        return stats.pmean(np.maximum(values, 1e-9) if p < 0 else values, p)

    return pd.DataFrame({t: grouped.apply(one, p=tcva.temperature_to_p(t)) for t in temperatures})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--subset", type=int, default=2_000, help="items for the slow groupby-apply baseline")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    table = make_table(args.items, rng)
    temperatures = np.round(np.linspace(0.1, 1.0, 19), 4)
    input_bytes = int(table.memory_usage(deep=True).sum())
    print(f"{args.items:,} items, {len(table):,} claims, {len(temperatures)} temperatures; input {input_bytes / 2**20:.1f} MiB")

    # The baselines compute the power mean only, so the comparison uses none_penalty=False.
    t_sweep, scores = timed(lambda: tcva.sweep(table, temperatures, none_penalty=False))
    t_default, _ = timed(lambda: tcva.sweep(table, temperatures))
    tracemalloc.start()
    tcva.sweep(table, temperatures, none_penalty=False)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    output_bytes = scores.to_numpy().nbytes

    t_loop, loop = timed(lambda: pandas_loop(table, temperatures), repeat=1)
    np.testing.assert_allclose(loop.to_numpy(), scores.to_numpy(), rtol=1e-9, atol=1e-12)

    subset = table[table["item_id"] < args.subset]
    t_apply_sub, applied = timed(lambda: apply_pmean(subset, temperatures), repeat=1)
    check = tcva.sweep(subset, temperatures, none_penalty=False)
    np.testing.assert_allclose(applied.to_numpy(), check.to_numpy(), rtol=1e-9, atol=1e-12)
    t_apply = t_apply_sub * args.items / args.subset

    print(f"tcva.sweep (power mean only)   {t_sweep:8.3f} s")
    print(f"tcva.sweep (default, penalty)  {t_default:8.3f} s")
    print(f"(a) pandas loop per T          {t_loop:8.3f} s   ratio {t_loop / t_sweep:6.1f}x  (target >= 8x)")
    print(f"(b) groupby-apply pmean        {t_apply:8.3f} s   ratio {t_apply / t_sweep:6.1f}x  "
          f"(measured on {args.subset:,} items: {t_apply_sub:.3f} s, scaled x{args.items / args.subset:g})")
    bound = 2 * output_bytes + input_bytes
    print(f"sweep peak memory {peak / 2**20:.1f} MiB; output {output_bytes / 2**20:.1f} MiB; "
          f"bound 2 x output + input = {bound / 2**20:.1f} MiB -> {'within' if peak <= bound else 'OVER'}")


if __name__ == "__main__":
    main()
