"""Does the judge's P(PASS) from token log-probabilities narrow the few-labels interval, against its verdict alone?

No data set here has a judge's log-probabilities, so this is a simulation, and its answer depends on its design. Each
case has a human label y ~ Bernoulli(pass rate). The judge's probability of PASS is
``p = sigmoid(strength * (2y - 1) + spread * e)``, e standard normal per case: ``strength`` is how well the judge
separates PASS from FAIL, ``spread`` how much its confidence varies between cases of one label. Its verdict is the
greedy one, PASS when p > 0.5 (what temperature 0 returns); its score is p (what ``judge.verdict_score`` reads from
the logprobs). Humans label a random subset of n cases; :func:`evalkit.infer.mean` (PPI++, the default interval)
estimates the humans' pass rate over all cases from the judge on every case and the labels, once with the verdict
(0/1) as the judge's score and once with p. Printed: the mean width of each interval, the ratio, and each one's
coverage of the true mean of the labels over all cases, over ``--reps`` draws.

Designs: an overconfident judge (large strength and spread: p near 0 or 1, the score adds little to the verdict), a
graded judge (moderate strength: p carries how sure it is), and a skewed pass rate (0.9).

    python benchmarks/bench_logprob_score.py [--reps 100] [--cases 1000] [--labels 20 50 200] [--intervals betting t]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit import infer  # noqa: E402
from evalkit._validation import EvalkitWarning  # noqa: E402

DESIGNS = {"overconfident": (0.7, 4.0, 4.0), "graded": (0.7, 1.2, 1.0), "graded, skewed": (0.9, 1.2, 1.0)}


def draw(n_cases: int, pass_rate: float, strength: float, spread: float, rng):
    y = (rng.random(n_cases) < pass_rate).astype(float)
    p = 1 / (1 + np.exp(-(strength * (2 * y - 1) + spread * rng.normal(size=n_cases))))
    return y, (p > 0.5).astype(float), p


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--labels", type=int, nargs="+", default=[20, 50, 200])
    parser.add_argument("--intervals", nargs="+", default=["betting", "t"], choices=["betting", "t", "auto"],
                        help="'auto' is infer.mean's default without bounds: betting or Clopper-Pearson for the verdict, "
                             "t for the score (not like for like)")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(20261205)
    rows = []
    ids = pd.Index([f"c{i}" for i in range(args.cases)])
    for name, (pass_rate, strength, spread) in DESIGNS.items():
        for n in args.labels:
            for interval in args.intervals:
                if interval == "t" and n < infer.MIN_LARGE_SAMPLE:
                    continue
                found = {"verdict": [], "score": []}
                for _ in range(args.reps):
                    y, verdict, p = draw(args.cases, pass_rate, strength, spread, rng)
                    truth = y.mean()
                    labelled = rng.choice(args.cases, n, replace=False)
                    human = pd.Series(y[labelled], index=ids[labelled])
                    for kind, judge in (("verdict", verdict), ("score", p)):
                        with warnings.catch_warnings():
                            warnings.simplefilter("ignore", EvalkitWarning)
                            bounds = {} if interval == "auto" else {"bounds": (0, 1)}
                            row = infer.mean(pd.Series(judge, index=ids), human, interval=interval, **bounds).iloc[0]
                        found[kind].append((row["ci_high"] - row["ci_low"], row["ci_low"] <= truth <= row["ci_high"]))
                width = {k: float(np.mean([w for w, _ in v])) for k, v in found.items()}
                cover = {k: float(np.mean([c for _, c in v])) for k, v in found.items()}
                rows.append({"design": name, "labels": n, "interval": interval, "width_verdict": round(width["verdict"], 4),
                             "width_score": round(width["score"], 4),
                             "ratio": round(width["score"] / width["verdict"], 3),
                             "coverage_verdict": round(cover["verdict"], 3), "coverage_score": round(cover["score"], 3)})
    print(f"{args.cases} cases, {args.reps} draws per row; PPI++ with the row's interval for the verdict and the score "
          "('auto': infer.mean's own choice for each); ratio = score width / verdict width")
    print(pd.DataFrame(rows).to_string(index=False))


if __name__ == "__main__":
    main()
