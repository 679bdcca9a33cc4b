"""The release gate, measured: how often it cries regression when nothing changed, and how often it catches a real one.

A noisy judge: each case's output is good (with probability ``--good``, 0.85) or bad; the judge passes a good output
with probability 0.95 per call and a bad one with 0.05, except on ambiguous cases (``--ambiguous``, 20%), where its
per-call pass probability is drawn uniform in [0.3, 0.7] once per case: there it flips from call to call. Every call
is an independent draw: a run with k repeats judges each case k times.

- **No change**: the candidate's outputs are the baseline's, judged again (fresh judge noise). The gate's false-alarm
  rate is the share of runs it calls a regression; the claim is at most the level, ``1 - level`` (one side of the
  interval aims at ``(1 - level) / 2``).
- **A regression of the planned size**: each good output turns bad with the probability that lowers the expected
  judge pass rate by ``--drop`` (0.10). The cases are ``compare.cases_needed(drop, discordant=D, power=0.8,
  alpha=1 - level)``, with D the share of cases whose single verdict differs between the two runs (computed from the
  design); the gate with margin 0 should call a regression at least as often as the plan promised (0.8).
- **No change with a margin**: at the cases ``compare.cases_needed`` plans for a change of the margin's size (from the
  design's discordance), the share of runs that end "no regression" (exit 0).
- **The gate's own plan**: a pilot of ``--pilot`` cases (100) with no change ends inconclusive and names about how many
  cases would tell (its interval's half-width scaled as 1 / sqrt(n), 80% power); a fresh run of that many cases then
  ends "no regression" this often (a pilot that already decided counts as its own outcome).

Each setting runs with one verdict per case (Newcombe's interval) and with 3 repeats (the betting interval of the
per-case mean change). The statistics are the kernel :func:`evalkit.gate.decide` calls; a few draws per setting are
run through ``decide`` itself on results tables and must agree.

    python benchmarks/bench_gate.py [--reps 1000] [--level 0.95] [--drop 0.10] [--margin 0.05]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit import compare, gate  # noqa: E402
from evalkit.gate import _cases_needed, _judge_difference  # noqa: E402

GOOD_PASS, BAD_PASS = 0.95, 0.05


def case_probabilities(n: int, rng, *, good: float, ambiguous: float) -> tuple[np.ndarray, np.ndarray]:
    """Each case's output quality (good: True) and the judge's per-call pass probability for it."""
    is_good = rng.random(n) < good
    mu = np.where(is_good, GOOD_PASS, BAD_PASS)
    unsure = rng.random(n) < ambiguous
    mu[unsure] = rng.uniform(0.3, 0.7, unsure.sum())
    return is_good, mu


def regressed(is_good: np.ndarray, mu: np.ndarray, rng, flip: float) -> np.ndarray:
    """The candidate's per-call pass probabilities: each good, unambiguous output turns bad with probability ``flip``."""
    turn = is_good & (mu == GOOD_PASS) & (rng.random(len(mu)) < flip)
    return np.where(turn, BAD_PASS, mu)


def flip_for(drop: float, good: float, ambiguous: float) -> float:
    """The probability of turning a good output bad that lowers the expected judge pass rate by ``drop``."""
    return drop / (good * (1 - ambiguous) * (GOOD_PASS - BAD_PASS))


def discordant(good: float, ambiguous: float, flip: float, draws: int = 400_000) -> float:
    """The expected share of cases whose single verdict differs between the runs (by a large draw of the design)."""
    rng = np.random.default_rng(0)
    is_good, mu_a = case_probabilities(draws, rng, good=good, ambiguous=ambiguous)
    mu_b = regressed(is_good, mu_a, rng, flip) if flip else mu_a
    return float(np.mean(mu_a * (1 - mu_b) + mu_b * (1 - mu_a)))


def judged(mu: np.ndarray, k: int, rng) -> np.ndarray:
    """Each case's mean pass over k judge calls."""
    return (rng.random((len(mu), k)) < mu[:, None]).mean(axis=1)


def status(found: dict, margin: float) -> str:
    return "regression" if found["ci_high"] < -margin else "no regression" if found["ci_low"] > -margin else "inconclusive"


def run_setting(n: int, k: int, flip: float, margin: float, reps: int, level: float, args, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    cases = pd.Index([f"c{i:05d}" for i in range(n)])
    outcomes = []
    for _ in range(reps):
        is_good, mu_a = case_probabilities(n, rng, good=args.good, ambiguous=args.ambiguous)
        mu_b = regressed(is_good, mu_a, rng, flip) if flip else mu_a
        x_a, x_b = judged(mu_a, k, rng), judged(mu_b, k, rng)
        outcomes.append(status(_judge_difference(x_a, x_b, cases, k, level), margin))
    outcomes = np.array(outcomes)
    return {share: float(np.mean(outcomes == share)) for share in ("regression", "no regression", "inconclusive")}


def run_plan(pilot: int, k: int, margin: float, reps: int, level: float, args, seed: int) -> tuple[float, float]:
    """The share of no-change gates that end "no regression" at the size the pilot's inconclusive gate named, and the
    median size named."""
    rng = np.random.default_rng(seed)
    ends, sizes = [], []
    for _ in range(reps):
        _, mu = case_probabilities(pilot, rng, good=args.good, ambiguous=args.ambiguous)
        found = _judge_difference(judged(mu, k, rng), judged(mu, k, rng), pd.Index([f"c{i:05d}" for i in range(pilot)]),
                                  k, level)
        first = status(found, margin)
        if first != "inconclusive":
            ends.append(first)
            continue
        n = _cases_needed(found, margin, pilot, 0.8, level)
        n = min(n, 50_000) if n is not None else 50_000
        sizes.append(n)
        _, mu = case_probabilities(n, rng, good=args.good, ambiguous=args.ambiguous)
        ends.append(status(_judge_difference(judged(mu, k, rng), judged(mu, k, rng),
                                             pd.Index([f"c{i:05d}" for i in range(n)]), k, level), margin))
    return float(np.mean(np.array(ends) == "no regression")), float(np.median(sizes)) if sizes else float("nan")


def check_against_decide(n: int, k: int, flip: float, margin: float, level: float, args, draws: int = 3) -> None:
    """A few draws through gate.decide on results tables: the same status as the kernel."""
    rng = np.random.default_rng(99)
    for _ in range(draws):
        is_good, mu_a = case_probabilities(n, rng, good=args.good, ambiguous=args.ambiguous)
        mu_b = regressed(is_good, mu_a, rng, flip) if flip else mu_a
        passes = [rng.random((n, k)) < mu[:, None] for mu in (mu_a, mu_b)]
        tables = []
        for p in passes:
            ids = np.repeat([f"c{i:05d}" for i in range(n)], k)
            table = pd.DataFrame({"case_id": [f"{c}_repeat_{r + 1}" for c, r in zip(ids, np.tile(range(k), n), strict=True)],
                                  "sample_id": ids, "repeat": np.tile(range(1, k + 1), n),
                                  "verdict": np.where(p.ravel(), "PASS", "FAIL"), "error": None})
            table.attrs["clusters"] = {"column": "sample_id", "within": "repeat"}
            tables.append(table if k > 1 else table.assign(case_id=ids).drop(columns=["sample_id", "repeat"]))
        result = gate.decide(*tables, margin=margin, confidence_level=level)
        kernel = _judge_difference(p_mean(passes[0]), p_mean(passes[1]), pd.Index(sorted(f"c{i:05d}" for i in range(n))),
                                   k, level)
        assert result.status == status(kernel, margin), (result, kernel)


def p_mean(passes: np.ndarray) -> np.ndarray:
    return passes.mean(axis=1)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--drop", type=float, default=0.10)
    parser.add_argument("--margin", type=float, default=0.05)
    parser.add_argument("--good", type=float, default=0.85)
    parser.add_argument("--ambiguous", type=float, default=0.20)
    parser.add_argument("--repeats", type=int, nargs="+", default=[1, 3])
    parser.add_argument("--pilot", type=int, default=100)
    args = parser.parse_args(argv)
    alpha = 1 - args.level
    flip = flip_for(args.drop, args.good, args.ambiguous)
    d_regression = discordant(args.good, args.ambiguous, flip)
    d_same = discordant(args.good, args.ambiguous, 0.0)
    n_drop = int(compare.cases_needed(args.drop, discordant=d_regression, power=0.8, alpha=alpha)["n"].iloc[0])
    n_margin = int(compare.cases_needed(args.margin, discordant=max(d_same, args.margin), power=0.8,
                                        alpha=alpha)["n"].iloc[0])
    print(f"noisy judge: {args.good:.0%} good outputs, {args.ambiguous:.0%} ambiguous cases (per-call pass "
          f"probability U[0.3, 0.7]); level {args.level}, {args.reps} runs per setting")
    print(f"single-verdict discordance: {d_same:.3f} with no change, {d_regression:.3f} with a drop of {args.drop}")
    print(f"plans (cases_needed, power 0.8, alpha {alpha:.2f}): drop {args.drop} -> {n_drop} cases; "
          f"margin {args.margin} -> {n_margin} cases\n")
    rows = []
    settings = [("no change, margin 0", n_drop, 0.0, 0.0, "regression", f"<= {alpha:.3f} (level)"),
                (f"no change, margin {args.margin}", n_drop, 0.0, args.margin, "regression", f"<= {alpha:.3f} (level)"),
                (f"drop {args.drop}, margin 0", n_drop, flip, 0.0, "regression", ">= 0.80 (planned)"),
                (f"no change, margin {args.margin}", n_margin, 0.0, args.margin, "no regression", ">= 0.80 (planned)")]
    for k in args.repeats:
        for i, (name, n, fl, margin, outcome, claim) in enumerate(settings):
            found = run_setting(n, k, fl, margin, args.reps, args.level, args, seed=1000 * k + i)
            se = np.sqrt(found[outcome] * (1 - found[outcome]) / args.reps)
            rows.append({"setting": name, "repeats": k, "n": n, "outcome": outcome, "rate": round(found[outcome], 3),
                         "mc_se": round(se, 3), "claim": claim})
            check_against_decide(min(n, 300), k, fl, margin, args.level, args)
        share, size = run_plan(args.pilot, k, args.margin, args.reps, args.level, args, seed=1000 * k + 99)
        rows.append({"setting": f"no change, margin {args.margin}, the gate's plan from {args.pilot} cases", "repeats": k,
                     "n": f"{size:.0f} (median)", "outcome": "no regression", "rate": round(share, 3),
                     "mc_se": round(np.sqrt(share * (1 - share) / args.reps), 3), "claim": ">= 0.80 (planned)"})
    table = pd.DataFrame(rows)
    print(table.to_string(index=False))
    print("\nthe kernel agreed with gate.decide on results tables in every draw checked")


if __name__ == "__main__":
    main()
