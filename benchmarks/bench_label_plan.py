"""Do the label plans deliver? labels_needed's count, checked on fully labelled data.

For each design, repeatedly: draw a random pilot, ask ``infer.labels_needed`` for the labels the default interval
needs to reach a target half-width, then label that many cases at random from the fully labelled set (the pilot
and others) many times and take the median half-width of ``infer.mean``'s default interval there
(``infer.simulate(..., interval="betting")``). A plan that delivers gives a median half-width at most the target
and not far below it; the spread over pilots is the pilot's own sampling error.

    python benchmarks/bench_label_plan.py [--pilots 10] [--draws 200] [--csv plans.csv]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit import infer  # noqa: E402
from tests import harness  # noqa: E402


def designs():
    """(name, judge scores, human labels on every case, bounds, target half-width, pilot size)."""
    rng = np.random.default_rng(0)
    out = []
    if (harness.SHARED_DATA / "summeval").is_dir():
        table = harness.infer._summeval()
        for dimension, metric in harness.infer.SUMMEVAL_JUDGES.items():
            m = table[metric]
            judge = 1 + 4 * (m - m.min()) / (m.max() - m.min())
            out.append((f"summeval-{dimension}", judge, table[dimension], (1, 5), 0.1, 50))
    ids = pd.Index([f"c{i}" for i in range(2000)])
    human = rng.random(2000) < 0.85
    judge = np.where(rng.random(2000) < 0.9, human, ~human)
    out.append(("pass-fail(p=0.85,agree=0.9)", pd.Series(judge.astype(float), index=ids),
                pd.Series(human.astype(float), index=ids), (0, 1), 0.05, 50))
    truth = rng.choice([1.0, 2, 3, 4, 5], 2000, p=[0.01, 0.02, 0.04, 0.17, 0.76])
    judge = np.clip(np.round(truth + rng.normal(0.3, 0.8, 2000)), 1, 5)
    out.append(("ratings-1to5-top", pd.Series(judge, index=ids), pd.Series(truth, index=ids), (1, 5), 0.1, 50))
    truth = rng.normal(3, 0.8, 2000).clip(1, 5)
    out.append(("strong-judge", pd.Series(truth + rng.normal(0, 0.3, 2000), index=ids), pd.Series(truth, index=ids),
                (1, 5), 0.05, 50))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pilots", type=int, default=10)
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--csv", type=Path)
    args = parser.parse_args(argv)
    rows = []
    start = time.perf_counter()
    print(f"{'design':30} {'estimand':11} {'method':9} {'pilot':>5} {'n':>5} {'target':>6} {'median hw':>9} {'ratio':>6}")
    for name, judge, human, bounds, target, size in designs():
        for finite in (False, True):
            for pilot_seed in range(args.pilots):
                pilot = infer.choose_cases(judge, size, strategy="random", rng=pilot_seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    plan = infer.labels_needed(judge, human[pilot], half_width=target, bounds=bounds,
                                               finite_population=finite).set_index("method")
                for method in ("ppi++", "classical"):
                    n, interval = plan.loc[method, "labels_needed"], plan.loc[method, "interval"]
                    if pd.isna(n) or int(n) >= len(judge) or interval != "betting":
                        continue  # every case, or Clopper-Pearson (exact; simulate measures betting)
                    sim = infer.simulate(judge, human, n_labelled=int(n), n_draws=args.draws, method=method,
                                         interval="betting", bounds=bounds, finite_population=finite,
                                         rng=1000 + pilot_seed).iloc[0]
                    half = sim["median_width"] / 2
                    rows.append({"design": name, "estimand": "finite" if finite else "population", "method": method,
                                 "pilot": pilot_seed, "n": int(n), "target": target, "median_half_width": half,
                                 "ratio": half / target, "coverage": sim["coverage"]})
                    r = rows[-1]
                    print(f"{name:30.30} {r['estimand']:11} {method:9} {pilot_seed:5d} {r['n']:5d} {target:6.3f} "
                          f"{half:9.4f} {r['ratio']:6.3f}", flush=True)
    out = pd.DataFrame(rows)
    summary = out.groupby(["design", "estimand", "method"]).agg(
        pilots=("ratio", "size"), n_median=("n", "median"), ratio_median=("ratio", "median"),
        ratio_low=("ratio", "min"), ratio_high=("ratio", "max"), at_most_target=("ratio", lambda r: float((r <= 1).mean())))
    print()
    print(summary.round(3).to_string())
    print(f"\nmedian half-width at the planned n over the target (ratio), {args.pilots} pilots per design, "
          f"{args.draws} label sets each; {time.perf_counter() - start:.0f} s")
    if args.csv:
        out.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
