"""Benchmark: Krippendorff's alpha with a 1,000-resample bootstrap, evalkit against the krippendorff package.

Run on demand: ``python benchmarks/bench_agreement.py [--items 100000 --annotators 5 --resamples 1000
--level interval --repeats 3]``. Needs the ``test`` extra (krippendorff).

The package has no bootstrap, so its bootstrap is the obvious loop: the same resamples (evalkit documents
how it draws them), one ``krippendorff.alpha`` call per resample on the resampled reliability matrix, then
the same percentile interval. Both are timed in full, as paired repetitions after a warm-up, and the
medians are compared; the two intervals must agree to 1e-9. The limit printed beside the ratio is the
part any item bootstrap pays: drawing the resample indices and counting how often each item occurs.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from evalkit import agreement


def ratings(n_items: int, n_annotators: int, rng: np.random.Generator) -> tuple[pd.DataFrame, np.ndarray]:
    """1-5 ratings: a latent item value plus annotator noise; long table and coders x items matrix."""
    truth = rng.integers(1, 6, n_items)
    coders = np.clip(truth + rng.integers(-1, 2, (n_annotators, n_items)), 1, 5).astype(float)
    long = pd.DataFrame({"item_id": np.tile(np.arange(n_items), n_annotators),
                         "annotator": np.repeat([f"a{i}" for i in range(n_annotators)], n_items),
                         "rating": coders.ravel()})
    return long, coders


def reference_bootstrap(coders: np.ndarray, level: str, n_resamples: int, seed: int) -> tuple[float, float]:
    import krippendorff

    n = coders.shape[1]
    gen = np.random.default_rng(seed)
    dist = [krippendorff.alpha(reliability_data=coders[:, gen.integers(0, n, n, dtype=np.int32)], level_of_measurement=level)
            for _ in range(n_resamples)]
    low, high = np.percentile(dist, [2.5, 97.5])
    return float(low), float(high)


def limit(n: int, n_resamples: int, seed: int) -> None:
    gen = np.random.default_rng(seed)
    batch = max(1, 5_000_000 // n)
    for start in range(0, n_resamples, batch):
        b = min(batch, n_resamples - start)
        idx = gen.integers(0, n, (b, n), dtype=np.int32).astype(np.intp) + n * np.arange(b)[:, None]
        np.bincount(idx.ravel(), minlength=b * n)


def timed(func):
    start = time.perf_counter()
    result = func()
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--annotators", type=int, default=5)
    parser.add_argument("--resamples", type=int, default=1000)
    parser.add_argument("--level", default="interval", choices=agreement.LEVELS)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import krippendorff

    long, coders = ratings(args.items, args.annotators, np.random.default_rng(0))
    print(f"{args.items:,} items x {args.annotators} annotators, ratings 1-5, level={args.level}, "
          f"{args.resamples:,} bootstrap resamples, {args.repeats} paired repetitions (medians)")

    # Warm-up: imports, BLAS threads, first-call overheads.
    agreement.krippendorff_alpha(long, level=args.level, n_resamples=10, rng=0)
    reference_bootstrap(coders, args.level, 3, 0)

    t_point_ours, ours = timed(lambda: agreement.krippendorff_alpha(long, level=args.level, n_resamples=0))
    t_point_ref, ref = timed(lambda: krippendorff.alpha(reliability_data=coders, level_of_measurement=args.level))
    print(f"point alpha           evalkit {t_point_ours:7.3f} s (from the long table)   krippendorff {t_point_ref:7.3f} s "
          f"(from the matrix)   alpha {ours['alpha'].iloc[0]:.6f} vs {ref:.6f}")

    t_ours, t_ref, t_limit = [], [], []
    for rep in range(args.repeats):
        seed = 100 + rep
        t, out = timed(lambda seed=seed: agreement.krippendorff_alpha(long, level=args.level, n_resamples=args.resamples,
                                                                      interval="percentile", rng=seed))
        t_ours.append(t)
        t, (low, high) = timed(lambda seed=seed: reference_bootstrap(coders, args.level, args.resamples, seed))
        t_ref.append(t)
        t_limit.append(timed(lambda seed=seed: limit(args.items, args.resamples, seed))[0])
        same = abs(out["ci_low"].iloc[0] - low) < 1e-9 and abs(out["ci_high"].iloc[0] - high) < 1e-9
        print(f"  repetition {rep + 1}: evalkit {t_ours[-1]:6.2f} s   krippendorff loop {t_ref[-1]:7.1f} s   "
              f"CI [{out['ci_low'].iloc[0]:.4f}, {out['ci_high'].iloc[0]:.4f}] vs [{low:.4f}, {high:.4f}]: "
              f"{'identical' if same else 'DIFFERENT'}")
    m_ours, m_ref, m_limit = np.median(t_ours), np.median(t_ref), np.median(t_limit)
    print(f"bootstrap ({args.resamples:,} resamples)   evalkit {m_ours:6.2f} s   krippendorff loop {m_ref:7.1f} s   "
          f"ratio {m_ref / m_ours:5.1f}x   limit (drawing and counting the resamples alone) {m_limit:5.2f} s")


if __name__ == "__main__":
    main()
