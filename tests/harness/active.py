"""Active labelling and juries of judges: infer.mean with ``probabilities=`` (cases drawn by the judge's
uncertainty, one at a time without replacement) and with a DataFrame judge (several judges, cross-fitted).

An active design draws the labelled cases itself, as a user would: a uniform pilot (where the uncertainty is read
from labels), :func:`infer.sampling_probabilities`, then :func:`infer.choose_cases` with ``strategy="active"``; the
truth is the mean over exactly the cases given (the active estimand). A jury design labels a uniform random sample
and the truth is the population mean.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from evalkit import infer
from tests.harness.core import SHARED_DATA, Design, Entry, load_shared

#: the least pilot that sampling_probabilities reads an uncertainty from
MIN_PILOT = 8


def pilot_size(n: int) -> int:
    """The uniform pilot of an n-label active design: a fifth of the labels, at least ``MIN_PILOT``."""
    return max(MIN_PILOT, n // 5)


def _active_sample(rng, n, judge: pd.Series | pd.DataFrame, truth: pd.Series, bounds, *, pilot: bool) -> dict:
    """n labels drawn actively from ``judge``'s cases (after a uniform pilot when ``pilot``)."""
    seed = int(rng.integers(2**31))
    first = infer.choose_cases(truth, pilot_size(n), strategy="random", rng=seed) if pilot else pd.Index([])
    q = infer.sampling_probabilities(judge, human_pilot=truth[first] if pilot else None, bounds=bounds)
    drawn = infer.choose_cases(truth, n - len(first), strategy="active", probabilities=q, rng=seed + 1)
    order = first.append(drawn)
    return {"judge": judge, "human": truth[order], "probabilities": q, "truth": float(truth.mean()), "bounds": bounds}


def probability_judge_design(n_cases: int = 1000) -> Design:
    """A judge's stated probability p of a pass (Beta(0.5, 0.5): often sure), the human verdict PASS with
    probability p; the probabilities from sqrt(p (1 - p)), no pilot; a new population of n_cases each sample."""

    def draw(rng, n):
        p = rng.beta(0.5, 0.5, n_cases)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        truth = pd.Series((rng.random(n_cases) < p).astype(float), index=ids)
        return _active_sample(rng, n, pd.Series(p, index=ids), truth, (0.0, 1.0), pilot=False)

    return Design("active-probability-judge", f"0/1 verdicts, a judge's probability p ~ Beta(0.5, 0.5), {n_cases} "
                  "cases; drawn by sqrt(p(1-p)), floor 0.5", draw)


def heteroscedastic_design(n_cases: int = 1000) -> Design:
    """1-5 ratings whose spread about the judge grows with the judge's score: rating = clip(round(judge + N(0, s)),
    1, 5), s from 0.1 at judge 1 to 1.5 at judge 5; a uniform pilot reads the spread."""

    def draw(rng, n):
        judge = rng.uniform(1, 5, n_cases)
        y = np.clip(np.round(judge + rng.normal(0, 0.1 + 0.35 * (judge - 1), n_cases)), 1, 5)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        return _active_sample(rng, n, pd.Series(judge, index=ids), pd.Series(y, index=ids), (1.0, 5.0), pilot=True)

    return Design("active-heteroscedastic-1to5", f"1-5 ratings, spread about the judge 0.1 to 1.5, {n_cases} cases; "
                  "uniform pilot of n/5 (at least 8), then drawn by the pilot's residual spread", draw)


@functools.cache
def _summeval_pool(dimension: str, metric: str):
    table = load_shared("load_summeval", SHARED_DATA / "summeval")
    m = table[metric]
    ids = pd.Index([f"s{i}" for i in range(len(table))])
    return (pd.Series((1 + 4 * (m - m.min()) / (m.max() - m.min())).to_numpy(), index=ids),
            pd.Series(table[dimension].to_numpy(dtype=float), index=ids))


def summeval_active_design(dimension: str = "consistency", metric: str = "CTC_D_CNNDM_Consistency") -> Design:
    """SummEval's 1,600 summaries, expert ratings (1-5, mean of 3), the judge an automatic metric on 1-5: a uniform
    pilot, then drawn by the pilot's residual spread; the truth is the mean of the 1,600 ratings."""

    def draw(rng, n):
        judge, truth = _summeval_pool(dimension, metric)
        return _active_sample(rng, n, judge, truth, (1.0, 5.0), pilot=True)

    return Design(f"summeval-{dimension}-active", f"SummEval expert {dimension}, judge {metric}; pilot n/5, then "
                  "active", draw, data="summeval")


def _jury_population(rng, n_cases, truth, accuracies):
    """Judges that agree with the 0/1 truth on a share ``accuracies[k]`` of the cases."""
    return pd.DataFrame({f"judge-{k}": np.where(rng.random(n_cases) < a, truth, 1 - truth)
                         for k, a in enumerate(accuracies)})


def jury_verdicts_design(p: float = 0.7, accuracies=(0.85, 0.75, 0.7), n_cases: int = 1000) -> Design:
    """PASS with probability p; three judges agreeing with the human on 85%, 75% and 70% of the cases, each wrong
    independently; n of n_cases labelled uniformly; the truth is p."""

    def draw(rng, n):
        truth = (rng.random(n_cases) < p).astype(float)
        judges = _jury_population(rng, n_cases, truth, accuracies)
        judges.index = [f"c{i}" for i in range(n_cases)]
        picks = rng.choice(n_cases, n, replace=False)
        return {"judge": judges, "human": pd.Series(truth[picks], index=judges.index[picks]), "truth": p,
                "bounds": (0.0, 1.0)}

    return Design(f"jury-verdicts(p={p})", f"PASS/FAIL, pass rate {p}, three judges agreeing on "
                  f"{', '.join(f'{a:.0%}' for a in accuracies)}; {n_cases} cases", draw)


def jury_ratings_design(n_cases: int = 1000) -> Design:
    """1-5 ratings piled at the top (mean 4.13); three judges: rating + N(0.3, 0.7), 0.5 rating + N(0, 0.9), and
    one that is noise; rounded into 1-5; the truth is the population mean."""
    values, probs = np.array([1, 2, 3, 4, 5.0]), np.array([0.03, 0.05, 0.12, 0.35, 0.45])

    def draw(rng, n):
        y = rng.choice(values, n_cases, p=probs)
        judges = pd.DataFrame({"close": np.clip(np.round(y + rng.normal(0.3, 0.7, n_cases)), 1, 5),
                               "loose": np.clip(np.round(0.5 * y + 1.5 + rng.normal(0, 0.9, n_cases)), 1, 5),
                               "noise": rng.integers(1, 6, n_cases).astype(float)},
                              index=[f"c{i}" for i in range(n_cases)])
        picks = rng.choice(n_cases, n, replace=False)
        return {"judge": judges, "human": pd.Series(y[picks], index=judges.index[picks]), "truth": float(values @ probs),
                "bounds": (1.0, 5.0)}

    return Design("jury-ratings-1to5", "1-5 ratings (mean 4.13), three judges (close, loose, noise) rounded to 1-5, "
                  f"{n_cases} cases", draw)


def _mean(interval: str = "auto", method: str = "ppi++"):
    def run(sample, level):
        row = infer.mean(sample["judge"], sample["human"], probabilities=sample.get("probabilities"), method=method,
                         interval=interval, confidence_level=level, bounds=sample["bounds"]).iloc[0]
        return row["ci_low"], row["ci_high"], row["estimate"]

    return run


#: The stop rule of the sequence entries: stop at the first number of labels whose half-width is at most this share of
#: the labels' scale (0.15 on 0/1 labels, 0.6 on 1-5 ratings), or at n.
STOP_SHARE = 0.15


def _sequence(rule: str = "every step"):
    """infer.confidence_sequence(probabilities=) on the labels in the order drawn. ``"every step"``: the intersection
    of the intervals after labels 1..n (it covers when every one of them does: time-uniform coverage); ``"stopped"``:
    the interval where the stop rule first holds (or at n)."""

    def run(sample, level):
        cs = infer.confidence_sequence(sample["judge"], sample["human"], probabilities=sample["probabilities"],
                                       confidence_level=level, bounds=sample["bounds"])
        if rule == "every step":
            return float(cs["cs_low"].max()), float(cs["cs_high"].min()), float(cs["estimate"].iloc[-1])
        a, b = sample["bounds"]
        stop = infer.stopping_point(cs, half_width=STOP_SHARE * (b - a)) or len(cs)
        row = cs.iloc[stop - 1]
        return row["cs_low"], row["cs_high"], row["estimate"]

    return run


ACTIVE = (probability_judge_design(), heteroscedastic_design(), summeval_active_design())
JURY = (jury_verdicts_design(), jury_ratings_design(), jury_verdicts_design(0.95, (0.9, 0.8, 0.8)))

ENTRIES = [
    Entry("infer.mean", "probabilities= (active labelling), interval='betting' (default)", "interval", _mean(),
          ACTIVE, default=True, sizes=(20, 50, 100, 200), test_sizes=(50, 200), test_reps=200,
          notes="finite-sample: Des Raj's estimator with the line refitted as labels arrive is a bounded martingale; "
                "the fast suite runs 200 samples"),
    Entry("infer.mean", "probabilities= (active labelling), interval='t' (large-sample)", "interval", _mean("t"),
          ACTIVE, sizes=(50, 100, 200), notes="Student's t on Des Raj's martingale standard error; refused below 30 "
          "labels; runs short on skewed labels at 50 (0.885 on SummEval consistency, 200 samples)"),
    Entry("infer.mean", "probabilities=, method='classical' (the labels' Des Raj mean), interval='betting'",
          "interval", _mean(method="classical"), ACTIVE, sizes=(20, 50, 100, 200)),
    Entry("infer.confidence_sequence", "probabilities= (active labelling), every step 1..n at once (default)",
          "interval", _sequence(), ACTIVE, default=True, sizes=(20, 50, 100, 200), test_sizes=(50, 200),
          test_reps=200, notes="time-uniform: covers when the interval after every number of labels up to n covers; "
                               "the live interval of widgets.Labeller(order='active')"),
    Entry("infer.confidence_sequence", f"probabilities=, stopped at half-width <= {STOP_SHARE:g} of the scale (or n) "
          "(default)", "interval", _sequence("stopped"), ACTIVE, default=True, sizes=(20, 50, 100, 200),
          test_sizes=(50, 200), test_reps=200, notes="the interval at the stopping time of stop_half_width"),
    Entry("infer.mean", "a jury (DataFrame judge), method='ppi++', interval='auto' (default)", "interval", _mean(),
          JURY, default=True, sizes=(20, 50, 100, 200), test_sizes=(50, 200),
          notes="betting on the line through the earlier labels; on 0/1 labels the narrower of it and Clopper-Pearson"),
    Entry("infer.mean", "a jury (DataFrame judge), interval='betting'", "interval", _mean("betting"), JURY,
          sizes=(20, 50, 100, 200)),
    Entry("infer.mean", "a jury (DataFrame judge), interval='t' (cross-PPI, large-sample)", "interval", _mean("t"),
          JURY, sizes=(50, 100, 200), notes="cross-fitted line, Student's t; refused below 30 labels; runs short on a "
          "pass rate of 0.95 at 50 labels (0.895, 200 samples)"),
]
