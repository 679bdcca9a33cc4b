"""Benchmark: how small rank-sets are at their simultaneous guarantee, on the Chatbot Arena votes.

Run on demand: ``python benchmarks/bench_rank_sets.py [--human 1000] [--draws 200] [--judge gpt-4] [--level 0.95]
[--seed 0] [--repeat 20] [--jury]``; it reads ``../shared/data/arena`` from the repository root (the harness's arena design,
``tests/harness/pairwise.py``).

The design is Chatzi et al.'s: their 12 systems (the 14,947 comparisons among them), GPT-4's verdict on every
comparison, and in each draw ``--human`` of the human votes, drawn without replacement; the truth is the ranking
by every human vote (the full-data human win rates). For each draw and construction (``sets=``: the step-down
default, the single-step max-t band, Bonferroni over the 66 pairs, the paper's chi-square ellipsoid; with the judge
(``method="ppr"``) and without it (``method="human"``)) it records whether every system's set holds its full-data rank
at once, and the mean set size. Printed per construction: coverage with its Monte Carlo standard error (at the
nominal level), whether it holds (coverage >= nominal - 2 MC s.e.), the mean size, and the paired mean difference
in size from prediction-powered Bonferroni (the default before) with its standard error over draws, and the mean
critical value of the first round (the standardised gap a pair needs to be ordered).

The limit printed beside them is the oracle band: the single-step band whose critical value is the nominal quantile,
over these draws, of the largest |estimated - true difference| / its standard error over the 66 pairs, the
narrowest band with these standard errors that held the truth in the nominal share of the draws (it knows the
truth; no procedure computed from one sample does). A step-down can go below it, as it tests fewer hypotheses after
each round.

``--jury`` measures juries instead (``pairwise.rank_sets`` with a dict of judges, ``sets="stepdown"``): on the
coverage harness's jury designs (``tests/harness/active.py``: synthetic Bradley-Terry systems with three judges of
unequal accuracy, and the arena's GPT-4, Claude 3 Opus and GPT-3.5 on the same comparisons), ``--human`` human votes
per draw, the jury beside each of its judges alone and the human votes alone, on the same draws: coverage (every
system's set holds its true rank at once) with its Monte Carlo standard error, and the mean set size with the paired
difference from the best single judge's (the one that agrees with the human votes most often).

Timing: one call of each construction on the same draw, paired repetitions after a warm-up, medians; the ratio is
to ``sets="bonferroni"``, whose critical value is one normal quantile (the limit of what a construction costs).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
sys.path.insert(0, str(ROOT))
from _timing import paired, ratio  # noqa: E402

from evalkit import pairwise  # noqa: E402
from tests.harness.pairwise import arena_votes  # noqa: E402

CONSTRUCTIONS = [("ppr", "stepdown"), ("ppr", "max-t"), ("ppr", "bonferroni"), ("ppr", "ellipsoid"),
                 ("human", "stepdown"), ("human", "bonferroni")]
BASELINE = ("ppr", "bonferroni")


def oracle_sets(draws: list[dict], truth_gap: np.ndarray, level: float) -> tuple[float, float, float]:
    """The oracle band's critical value, its coverage over the draws and its mean set size."""
    k = len(truth_gap)
    i, j = np.triu_indices(k, 1)
    worst = []
    for d in draws:
        sd = np.sqrt(np.maximum(d["var"], 0.0))
        error = (d["gap"] - truth_gap[i, j]) / sd
        worst.append(np.max(np.abs(error)))
    c = float(np.quantile(worst, level))
    covered, sizes = [], []
    for d in draws:
        sd = np.sqrt(np.maximum(d["var"], 0.0))
        above, below = d["gap"] - c * sd > 0, -d["gap"] - c * sd > 0
        better = np.bincount(j[above], minlength=k) + np.bincount(i[below], minlength=k)
        worse = np.bincount(i[above], minlength=k) + np.bincount(j[below], minlength=k)
        low, high = 1 + better, k - worse
        covered.append(bool(((low <= d["rank"]) & (d["rank"] <= high)).all()))
        sizes.append(float((high - low + 1).mean()))
    return c, float(np.mean(covered)), float(np.mean(sizes))


def jury_sets(human_votes: int, draws: int, level: float, seed: int) -> None:
    """Coverage and mean set size of the jury, each judge alone and the humans alone, on the harness's jury designs."""
    from tests.harness import active

    se = np.sqrt(level * (1 - level) / draws)
    print(f"Rank-sets with a jury (sets='stepdown', {human_votes:,} human votes per draw, {draws} draws, confidence "
          f"level {level}); 'vs best' is the paired mean difference in set size from the best single judge's.")
    print(f"\n{'design':34} {'judges':22} {'coverage':>8} {'± se':>6} {'holds':>5} {'mean size':>9} {'vs best':>8} "
          f"{'± se':>6}")
    for design in (*active.RANK_JURY, active.RANK_ARENA_JURY):
        if not design.available():
            print(f"{design.name:34} skipped: data set {design.data!r} absent")
            continue
        rng = np.random.default_rng(seed)
        rows = []
        for draw in range(draws):
            sample = design.draw(rng, human_votes)
            truth = pd.Series(sample["truth"], index=sample["systems"])
            contenders = {"jury": (sample["judge"], "ppr"), **{name: (table, "ppr")
                          for name, table in sample["judge"].items()}, "humans alone": (sample["human"], "human")}
            for name, (judge, method) in contenders.items():
                out = pairwise.rank_sets(judge if method == "ppr" else next(iter(sample["judge"].values())),
                                         sample["human"], method=method, confidence_level=level)
                rank = truth.loc[out["system"]].to_numpy()
                rows.append({"draw": draw, "judges": name + (" (best)" if name == sample["best"] else ""),
                             "covered": bool(((out["rank_low"] <= rank) & (rank <= out["rank_high"])).all()),
                             "size": float((out["rank_high"] - out["rank_low"] + 1).mean())})
        table = pd.DataFrame(rows)
        best = table[table["judges"].str.endswith("(best)")].set_index("draw")["size"]
        for name, group in table.groupby("judges", sort=False):
            coverage = group["covered"].mean()
            diff = group.set_index("draw")["size"] - best
            print(f"{design.name:34.34} {name:22.22} {coverage:8.3f} {se:6.3f} "
                  f"{'yes' if coverage >= level - 2 * se else 'NO':>5} {group['size'].mean():9.3f} {diff.mean():+8.3f} "
                  f"{diff.std(ddof=1) / np.sqrt(len(diff)):6.3f}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--human", type=int, default=1000, help="human votes per draw (default 1000)")
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--judge", choices=["gpt-4", "claude-3-opus", "gpt-3.5-turbo"], default="gpt-4")
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=20, help="paired timing repetitions")
    parser.add_argument("--jury", action="store_true", help="juries on the harness's jury designs (see above)")
    args = parser.parse_args(argv)
    if args.jury:
        jury_sets(args.human, args.draws, args.level, args.seed)
        return 0
    judge, human, systems = arena_votes(args.judge)
    full = pairwise.rank_sets(judge, human, method="human")  # every human vote: the ranking to cover
    truth = pd.Series(np.arange(1, len(systems) + 1), index=systems)
    rate = full.set_index("system")["estimate"].loc[systems].to_numpy()
    truth_gap = rate[:, None] - rate[None, :]
    print(f"Chatbot Arena: {len(systems)} systems, {len(human):,} comparisons, {args.judge} as the judge on all, "
          f"{args.human:,} human votes per draw, {args.draws} draws, confidence level {args.level}.")
    print("Truth: the ranking by every human vote: " + ", ".join(f"{s} {r:.3f}" for s, r in zip(systems, rate, strict=True)))
    rng = np.random.default_rng(args.seed)
    rows, oracle_draws = [], []
    i, j = np.triu_indices(len(systems), 1)
    for draw in range(args.draws):
        ids = rng.choice(human.index.to_numpy(), args.human, replace=False)
        for method, sets in CONSTRUCTIONS:
            out = pairwise.rank_sets(judge, human.loc[ids], method=method, sets=sets, confidence_level=args.level)
            rank = truth.loc[out["system"]].to_numpy()
            rows.append({"draw": draw, "method": method, "sets": sets, "lam": out.attrs["lam"],
                         "critical": out.attrs["critical_values"][0],
                         "covered": bool(((out["rank_low"] <= rank) & (rank <= out["rank_high"])).all()),
                         "size": float((out["rank_high"] - out["rank_low"] + 1).mean())})
            if (method, sets) == BASELINE:  # the prediction-powered estimates and covariance, for the oracle band
                by = out.set_index("system").loc[systems]
                cov = out.attrs["covariance"].loc[systems, systems].to_numpy()
                est = by["estimate"].to_numpy()
                oracle_draws.append({"gap": est[i] - est[j], "var": cov[i, i] + cov[j, j] - 2 * cov[i, j],
                                     "rank": np.arange(1, len(systems) + 1)})
    table = pd.DataFrame(rows)
    se = np.sqrt(args.level * (1 - args.level) / args.draws)
    base = table[(table["method"] == BASELINE[0]) & (table["sets"] == BASELINE[1])].set_index("draw")["size"]
    print(f"\n{'method':7} {'sets':11} {'coverage':>8} {'± se':>6} {'holds':>5} {'mean size':>9} {'vs ppr bonferroni':>18} "
          f"{'± se':>6} {'lambda':>6} {'critical':>8}")
    for (method, sets), group in table.groupby(["method", "sets"], sort=False):
        coverage = group["covered"].mean()
        diff = group.set_index("draw")["size"] - base
        print(f"{method:7} {sets:11} {coverage:8.3f} {se:6.3f} {'yes' if coverage >= args.level - 2 * se else 'NO':>5} "
              f"{group['size'].mean():9.3f} {diff.mean():+18.3f} {diff.std(ddof=1) / np.sqrt(len(diff)):6.3f} "
              f"{group['lam'].mean():6.3f} {group['critical'].mean():8.3f}")
    c, covered, size = oracle_sets(oracle_draws, truth_gap, args.level)
    print(f"limit: oracle band (critical value {c:.3f} on the prediction-powered estimates) covers {covered:.3f}, "
          f"mean size {size:.3f}")
    ids = rng.choice(human.index.to_numpy(), args.human, replace=False)
    contenders = {f"{method} {sets}": (lambda m=method, s=sets: pairwise.rank_sets(judge, human.loc[ids], method=m, sets=s))
                  for method, sets in CONSTRUCTIONS if method == "ppr"}
    times = paired(contenders, args.repeat)
    print(f"\nOne call on one draw, medians of {args.repeat} paired repetitions after a warm-up:")
    for name, values in times.items():
        print(f"  {name:20s} {np.median(values) * 1000:8.1f} ms   / bonferroni {ratio(times, name, 'ppr bonferroni')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
