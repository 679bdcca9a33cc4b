"""Labels saved by active labelling and by a jury of judges: labels needed for a target half-width, per strategy.

On four real data sets (the pool: every case with a human label, so the truth is known), for each strategy and each
number of labels n, ``--reps`` label draws; each draw gives infer.mean's PPI++ interval (the default, betting on the
labels' known scale, and the large-sample t). Printed: the median half-width and the coverage (with its Monte Carlo
standard error) per cell, then the labels each strategy needs to reach the target half-width (uniform labelling's
median half-width at ``--reference`` labels), read off the measured grid (log-log interpolation between the two
sizes that bracket it; "> n" where the largest size does not reach it: never extrapolated), and the share of labels
it saves against uniform. The limit beside them, computed from every label of the pool (the best known way, large
sample): the share of labels the optimal active probabilities (proportional to the labels' residual sd given the
judge, Zrnic & Candès) save, with and without the floor, and the share a jury saves against the best single judge
(from the in-sample R^2 of the line through every judge); the t columns are the large-sample reference a
finite-sample interval cannot beat.

Strategies (the estimand is the mean over the pool's cases, so every row uses ``finite_population=True``):

- ``uniform``: a simple random sample of n, PPI++ on the best single judge;
- ``stratified``: infer.choose_cases' default (balanced over the judge's score bins), the same estimate;
- ``active``: a uniform pilot of n/5 (at least 8), then n - pilot cases drawn by infer.sampling_probabilities from
  the pilot's residual spread about the judge (floor 0.5), infer.mean(probabilities=);
- ``jury``: uniform labels, infer.mean with every judge (a DataFrame: the cross-fitted line);
- ``jury+active``: the jury with active draws (the pilot's residual spread about the jury's line).

The best single judge is the one with the highest correlation with the labels over the whole pool (an oracle choice,
which flatters the single judge against the jury). Data sets (../shared/data): SummEval consistency (1,600 summaries,
judges: four automatic metrics on 1-5), USR overall (660 responses, the first annotator's 1-5 rating; judges: the
other two annotators), LLMBar (419 instances, gold 0/1 "output 1 is better"; judges: ChatGPT, GPT-4, LLaMA2, each the
mean of its verdicts in both orders), the arena (a fixed random 5,000 of the 26,919 comparisons, the human's "A wins"
= 1, tie 0.5; judges: gpt-4, claude-3-opus, gpt-3.5-turbo on the same scale), and a synthetic pool where the
judge is sure and right on most cases (where active labelling is built to pay).

    python benchmarks/bench_active.py [--reps 40] [--sizes 50 100 200 400] [--reference 200] [--data summeval ...]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evalkit import datasets, infer  # noqa: E402

SHARED = ROOT.parent / "shared" / "data"
STRATEGIES = ("uniform", "stratified", "active", "jury", "jury+active")
INTERVALS = ("auto", "t")
ARENA_CASES = 5000


def pilot_size(n: int) -> int:
    return max(8, n // 5)


def summeval():
    table = datasets.load_summeval(SHARED / "summeval")
    metrics = ["CTC_D_CNNDM_Consistency", "CTC_D_XSUM_Consistency", "bart_score_cnn_src_hypo", "bert_score_f"]
    ids = pd.Index([f"s{i}" for i in range(len(table))])
    judges = pd.DataFrame({m: (1 + 4 * (table[m] - table[m].min()) / (table[m].max() - table[m].min())).to_numpy()
                           for m in metrics}, index=ids)
    return judges, pd.Series(table["consistency"].to_numpy(dtype=float), index=ids), (1.0, 5.0)


def usr():
    ratings, _ = datasets.load_usr(SHARED / "usr")
    overall = ratings[ratings["dimension"] == "Overall"].copy()
    overall["seat"] = overall.groupby("item_id").cumcount()
    wide = overall.pivot(index="item_id", columns="seat", values="rating").astype(float).dropna()
    judges = wide[[1, 2]].set_axis(["annotator-2", "annotator-3"], axis=1)
    return judges, wide[0].rename(None), (1.0, 5.0)


def llmbar():
    table = datasets.load_llmbar(SHARED / "llmbar").dropna(subset=["winner"])
    table["first"] = (table["winner"].astype(int) == 1).astype(float)
    judges = table.pivot_table(index="case_id", columns="judge", values="first", aggfunc="mean").dropna()
    gold = (table.groupby("case_id")["label"].first().astype(int) == 1).astype(float)
    return judges, gold.reindex(judges.index), (0.0, 1.0)


def arena():
    table = datasets.load_arena(SHARED / "arena")
    table["a_wins"] = table["winner"].map({"a": 1.0, "b": 0.0, "tie": 0.5})
    wide = table.pivot_table(index="comparison_id", columns="rater", values="a_wins", aggfunc="first").dropna()
    wide = wide.loc[np.random.default_rng(0).permutation(wide.index)[:ARENA_CASES]]
    judges = wide[["gpt-4", "claude-3-opus", "gpt-3.5-turbo"]]
    return judges.set_axis([str(i) for i in judges.index]), wide["human"].set_axis([str(i) for i in wide.index]), (0.0, 1.0)


def synthetic():
    """2,000 cases; the judge states a probability of a pass: 0.99 or 0.01 on 80% of the cases (and is right with
    that probability), 0.5 on the rest; the person's verdict is PASS with the stated probability. A second judge
    is the first one's verdict flipped on 20% of the cases."""
    rng = np.random.default_rng(1)
    n = 2000
    sure = rng.random(n) < 0.8
    p = np.where(sure, np.where(rng.random(n) < 0.5, 0.99, 0.01), 0.5)
    y = (rng.random(n) < p).astype(float)
    ids = pd.Index([f"c{i}" for i in range(n)])
    flipped = np.where(rng.random(n) < 0.2, 1 - np.round(p), np.round(p))
    return pd.DataFrame({"stated": p, "flipped": flipped}, index=ids), pd.Series(y, index=ids), (0.0, 1.0)


DATA = {"summeval": summeval, "usr": usr, "llmbar": llmbar, "arena": arena, "synthetic": synthetic}


def limits(judges: pd.DataFrame, best: str, y: pd.Series, bounds) -> str:
    """The best known way, from every label of the pool (large-sample): the labels active labelling saves at most,
    with the draw probabilities proportional to the residual sd given the judge's prediction (Zrnic & Candès's
    optimum; ``1 - E[sd]^2 / E[sd^2]``) and with the floor of 0.5, and those a jury saves against the best judge
    (``1 - (1 - R^2 jury) / (1 - R^2 best)``, the PPI variance's residual share)."""
    from evalkit.infer._active import _residual_spread  # the estimator sampling_probabilities uses, on every label

    X, labels = judges[[best]].to_numpy(dtype=float), y.to_numpy(dtype=float)
    sd = np.sqrt(_residual_spread(X, np.arange(len(labels)), labels, bounds))
    ratio = np.mean(sd) ** 2 / np.mean(sd**2)
    share = sd / sd.mean()
    floored = 0.5 * share + 0.5
    ratio_floor = np.mean(sd**2 / floored) / np.mean(sd**2)

    def r2(columns):
        design = np.column_stack([np.ones(len(labels)), judges[columns].to_numpy(dtype=float)])
        fitted = design @ np.linalg.lstsq(design, labels, rcond=None)[0]
        return 1 - np.var(labels - fitted) / np.var(labels)

    best_r2, jury_r2 = r2([best]), r2(list(judges.columns))
    return (f"limit (every label, large-sample): active saves at most {1 - ratio:.0%} of labels with probabilities "
            f"proportional to the residual sd ({1 - ratio_floor:.0%} with the floor of 0.5), before its pilot; the jury "
            f"saves at most {1 - (1 - jury_r2) / (1 - best_r2):.0%} against {best} (R^2 {jury_r2:.3f} vs {best_r2:.3f})")


def one_draw(strategy, n, judges, best, y, bounds, interval, rng):
    """The PPI++ row's half-width and whether it covers, for one label draw."""
    judge = judges if strategy.startswith("jury") else judges[best]
    seed = int(rng.integers(2**31))
    options = {"interval": interval, "bounds": bounds}
    if strategy.endswith("active"):
        pilot = infer.choose_cases(y, pilot_size(n), strategy="random", rng=seed)
        q = infer.sampling_probabilities(judge, human_pilot=y[pilot], bounds=bounds)
        drawn = infer.choose_cases(y, n - len(pilot), strategy="active", probabilities=q, rng=seed + 1)
        row = infer.mean(judge, y[pilot.append(drawn)], probabilities=q, **options).iloc[0]
    else:
        picks = infer.choose_cases(judges[best], n, strategy="stratified" if strategy == "stratified" else "random",
                                   rng=seed)
        row = infer.mean(judge, y[picks], finite_population=True, **options).iloc[0]
    return (row["ci_high"] - row["ci_low"]) / 2, bool(row["ci_low"] <= y.mean() <= row["ci_high"])


def labels_for(widths: dict, target: float) -> tuple[str, float]:
    """The labels needed for ``target`` from median half-widths by size, read off the grid (never extrapolated)."""
    sizes = sorted(widths)
    for k, n in enumerate(sizes):
        if widths[n] <= target:
            if k == 0:
                return (f"<= {n}", np.nan) if widths[n] < target else (f"{n}", float(n))
            lo, hi = sizes[k - 1], n
            w_lo, w_hi = widths[lo], widths[hi]
            frac = np.log(w_lo / target) / np.log(w_lo / w_hi) if w_lo > w_hi else 1.0
            value = float(np.exp(np.log(lo) + frac * (np.log(hi) - np.log(lo))))
            return f"{value:.0f}", value
    return f"> {sizes[-1]}", np.nan


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=40, help="label draws per cell (default 40)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[50, 100, 200, 400])
    parser.add_argument("--reference", type=int, default=200, help="uniform's labels that set the target half-width")
    parser.add_argument("--data", nargs="+", default=list(DATA), choices=list(DATA))
    parser.add_argument("--limits", action="store_true", help="print each data set's limits only (no label draws)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    if args.reference not in args.sizes:
        parser.error("--reference must be one of --sizes")
    start = time.perf_counter()
    for name in args.data:
        judges, y, bounds = DATA[name]()
        judges = judges.loc[y.index]
        r = judges.corrwith(y)
        best = str(r.idxmax())
        if args.limits:
            print(f"{name}: {limits(judges, best, y, bounds)}")
            continue
        print(f"\n== {name}: {len(y)} cases, truth {y.mean():.4f}; judges (r with the labels): "
              + ", ".join(f"{c} {v:.2f}" for c, v in r.items()) + f"; best single: {best}")
        print(limits(judges, best, y, bounds))
        print(f"{'strategy':12} {'n':>4} | {'half-width':>10} {'coverage':>9} {'± se':>5} | {'t half-w':>9} {'t cover':>8}")
        widths = {iv: {s: {} for s in STRATEGIES} for iv in INTERVALS}
        for strategy in STRATEGIES:
            for n in args.sizes:
                rng = np.random.default_rng([args.seed, n, STRATEGIES.index(strategy)])
                cells = {}
                for interval in INTERVALS:
                    draws = []
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        for _ in range(args.reps):
                            draws.append(one_draw(strategy, n, judges, best, y, bounds, interval, rng))
                    half, covers = np.array(draws, dtype=float).T
                    given = np.isfinite(half)  # a refused interval (NaN row: too few labels for it) is not a miss
                    widths[interval][strategy][n] = float(np.median(half[given])) if given.any() else np.nan
                    rate = covers[given].mean() if given.any() else np.nan
                    cells[interval] = (widths[interval][strategy][n], rate, np.sqrt(rate * (1 - rate) / given.sum())
                                       if given.any() else np.nan)
                (wa, ca, sa), (wt, ct, _) = cells["auto"], cells["t"]
                t_cells = f"{wt:9.4f} {ct:8.3f}" if np.isfinite(wt) else "  refused (too few labels for it)"
                print(f"{strategy:12} {n:4d} | {wa:10.4f} {ca:9.3f} {sa:5.3f} | {t_cells}", flush=True)
        for interval in INTERVALS:
            target = widths[interval]["uniform"][args.reference]
            base = labels_for(widths[interval]["uniform"], target)[1]
            print(f"labels for half-width {target:.4f} (uniform's at {args.reference}), interval={interval!r}: "
                  + "; ".join(f"{s} {text}" + (f" ({1 - value / base:+.0%} saved)" if np.isfinite(value) else "")
                              for s in STRATEGIES for text, value in [labels_for(widths[interval][s], target)]))
    print(f"\n{args.reps} draws per cell; {time.perf_counter() - start:.0f} s. Half-widths are medians over the draws; "
          "coverage is of the mean over the pool's cases at 0.95.")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
