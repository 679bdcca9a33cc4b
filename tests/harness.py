"""The coverage harness: every public function that reports an interval or a p-value, measured by simulation.

Exact is not valid: a formula can equal its reference library to the last digit and still claim more
certainty than it has at 50 labels on skewed data. Each :class:`Entry` names a public function (and the
variant of its options), the simulation :class:`Design` s it is judged on (resampled real data sets and
synthetic skewed, clustered and small-n processes), and how to call it on one simulated sample:

- an interval entry's ``run(sample, confidence_level)`` returns ``(low, high)`` (floats, or arrays for
  simultaneous intervals); it covers when ``low <= sample["truth"] <= high`` (everywhere, for arrays);
- a test entry's ``run(sample, alpha)`` returns a p-value on a sample drawn under the null; its size is the
  share of p-values at or below ``alpha``;
- a false-coverage entry (``kind="fcr"``) is a selective family: ``run(sample, confidence_level)`` returns
  ``(low, high, selected)`` arrays, one per parameter (``sample["truth"]`` an array); its rate is the false
  coverage-statement rate of Benjamini & Yekutieli (2005), the mean over samples of (selected intervals that
  miss) / max(selected, 1), which must stay at or below alpha = 1 - level.

NaN ends or a NaN p-value mean the function declined to give a number (a refusal, with its warning); they
are counted apart (``refused``) and coverage is measured over the intervals that were printed, which is
what a user who reads them relies on.

``benchmarks/bench_coverage.py`` prints the whole table (every entry, design and size, with Monte Carlo
standard errors); ``tests/test_coverage.py`` runs a fast fixed-seed subset asserting that every default
holds within 3 Monte Carlo standard errors, and that no public function reporting an interval or a p-value
is missing from the registry.
"""

from __future__ import annotations

import functools
import warnings
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
#: The real data sets, ``../shared/data`` from the repository root (where CI puts them); tests and designs that need
#: one skip, with the reason, where it is absent. The one definition of the path (tests/conftest.py imports it).
SHARED_DATA = ROOT.parent / "shared" / "data"
SIZES = (20, 50, 100, 200)


# ------------------------------------------------------------------------------------------- designs
@dataclass(frozen=True)
class Design:
    """A data-generating process: ``draw(rng, n)`` returns one sample (a dict holding at least ``truth``).

    ``data`` names the real data set under ``../shared/data`` the design resamples (None: synthetic); such
    designs are skipped, with the reason, where the data set is absent.
    """

    name: str
    description: str
    draw: Callable[[np.random.Generator, int], dict]
    data: str | None = None

    def available(self) -> bool:
        return self.data is None or (SHARED_DATA / self.data).is_dir()


def bernoulli(p: float) -> Design:
    """n independent 0/1 outcomes with success probability ``p``; the truth is ``p``."""

    def draw(rng, n):
        return {"x": (rng.random(n) < p).astype(float), "truth": p}

    return Design(f"bernoulli(p={p})", f"n independent pass/fail outcomes, pass rate {p}", draw)


def categorical(values, probs, name: str, description: str) -> Design:
    """n independent draws from a discrete distribution (e.g. 1-5 ratings piled at the top)."""
    values, probs = np.asarray(values, dtype=float), np.asarray(probs, dtype=float) / np.sum(probs)
    truth = float(values @ probs)

    def draw(rng, n):
        return {"x": rng.choice(values, size=n, p=probs), "truth": truth}

    return Design(name, description, draw)


#: 1-5 ratings piled at the top of the scale (mean 4.66, like SummEval's expert consistency ratings).
SKEWED_RATINGS = categorical([1, 2, 3, 4, 5], [0.01, 0.02, 0.04, 0.17, 0.76], "ratings-1to5-top",
                             "1-5 ratings piled at the top (P(5) = 0.76, mean 4.64)")


@functools.cache
def load_shared(loader: str, *args):
    """A real data set through an evalkit loader, read once per process (``datasets.<loader>(path, ...)``)."""
    from evalkit import datasets

    return getattr(datasets, loader)(*args)


# ------------------------------------------------------------------------------------------- entries
@dataclass(frozen=True)
class Entry:
    """One public function (and option variant) with the designs its interval or test is judged on."""

    function: str  # the public name, "module.function"
    variant: str  # which options, e.g. "method='ppi++' (default)"
    kind: str  # "interval" or "test"
    run: Callable[[dict, float], object]
    designs: tuple[Design, ...]
    default: bool = False  # the function's defaults: asserted in the test suite
    level: float = 0.95  # confidence level (intervals) or 1 - alpha (tests)
    sizes: tuple[int, ...] = SIZES
    test_sizes: tuple[int, ...] = (50,)  # the sizes the fast test suite checks
    notes: str = ""
    test_reps: int | None = None  # samples per cell in the fast test suite (None: its default, 500); fewer for heavy entries

    def __post_init__(self):
        if self.kind not in ("interval", "test", "fcr"):
            raise ValueError(f"`kind` must be 'interval', 'test' or 'fcr'; got {self.kind!r}.")

    @property
    def key(self) -> str:
        return f"{self.function} [{self.variant}]"


def _judge_pass_rate(sample, level):
    from evalkit import judge

    x = sample["x"]
    results = pd.DataFrame({"case_id": np.arange(len(x)).astype(str), "rubric": "r", "rubric_version": "v1",
                            "model": "m", "verdict": np.where(x > 0, "PASS", "FAIL"), "parsed": True, "error": None})
    row = judge.pass_rate(results, confidence_level=level).iloc[0]
    return row["ci_low"], row["ci_high"]


def clustered_epochs(mean: float, epochs: int, concentration: float) -> Design:
    """n cases, each graded ``epochs`` times: a case's pass probability is Beta(mean c, (1 - mean) c).

    Small ``concentration`` c makes the epochs of one case agree (strong clustering); large c makes them
    independent. The truth is ``mean``, the pass rate of the population of cases.
    """

    def draw(rng, n):
        p = rng.beta(mean * concentration, (1 - mean) * concentration, size=n)
        return {"passed": rng.random((n, epochs)) < p[:, None], "truth": mean}

    kind = "strongly clustered" if concentration < 10 else "independent"
    return Design(f"epochs(mean={mean}, epochs={epochs}, c={concentration:g})",
                  f"{epochs} graded epochs per case, {kind}, pass rate {mean}", draw)


def _logs_pass_rate(sample, level):
    from evalkit import logs

    passed = sample["passed"]
    n, epochs = passed.shape
    results = pd.DataFrame({"case_id": [f"c{i}_epoch_{e}" for i in range(n) for e in range(epochs)],
                            "sample_id": np.repeat(np.arange(n).astype(str), epochs), "rubric": "r",
                            "rubric_version": "v1", "model": "m", "verdict": np.where(passed.ravel(), "PASS", "FAIL"),
                            "error": None})
    row = logs.pass_rate(results, confidence_level=level).iloc[0]
    return row["ci_low"], row["ci_high"]


ENTRIES: list[Entry] = [
    Entry("judge.pass_rate", "Wilson (default)", "interval", _judge_pass_rate,
          (bernoulli(0.5), bernoulli(0.9), bernoulli(0.97)), default=True),
    # ----------------------------------------------------------------------------------------------- logs
    Entry("logs.pass_rate", "Clopper-Pearson on per-case means (default)", "interval", _logs_pass_rate,
          (clustered_epochs(0.9, 3, 1.0), clustered_epochs(0.9, 3, 1e6), clustered_epochs(0.5, 5, 1.0),
           clustered_epochs(0.97, 5, 1e6)), default=True),
]

#: Public functions whose docstrings mention an interval or a p-value but that report none of their own.
EXEMPT = {
    "plots.temperature_sweep": "draws the intervals of correlate.correlate",
    "plots.human_ceiling": "draws the intervals of agreement.human_ceiling",
    "infer.simulate": "is itself a coverage simulation on a fully labelled set",
}

#: Inferential public functions not yet registered; emptied as their entries land.
PENDING = {
    "agreement.krippendorff_alpha", "agreement.icc", "agreement.fleiss_kappa", "agreement.human_ceiling",
    "agreement.position_consistency", "agreement.first_slot_preference", "agreement.length_bias",
    "agreement.self_preference", "agreement.alternative_annotator_test", "calibrate.calibrate",
    "calibrate.corrected_pass_rate", "calibrate.agreement_drift", "compare.paired", "correlate.correlate",
    "correlate.compare_metrics", "correlate.paired_bootstrap_tcva_paper",
    "density.length_bias", "infer.mean", "infer.difference", "infer.pass_rate", "infer.expected_half_width",
    "infer.labels_needed", "retrieval.compare_conditions", "retrieval.coverage",
}


# =============================================================================== infer, judge.pass_rate, calibrate
# Rule for every default below (and the harness's one rule for discrete data): a default interval must cover at
# least its nominal level, within Monte Carlo error, at EVERY design and size, not on average. Coverage of 0/1
# rates is a saw-tooth in (n, p), so an interval whose average is nominal dips below it somewhere (Wilson: 0.933
# at p = 0.5 and 0.934 at p = 0.97, n = 50, 2,000 draws); hence Clopper-Pearson for rates and betting intervals
# (finite-sample, Waudby-Smith & Ramdas 2024) for bounded means and PPI. Large-sample intervals (clt, t, the
# cluster-robust t) are registered beside them for comparison, and not given below 30 labels or clusters.

SUMMEVAL_JUDGES = {"consistency": "CTC_D_CNNDM_Consistency", "fluency": "CTC_D_CNNDM_Consistency",
                   "relevance": "CTC_E_RoBERTa_Relevance", "coherence": "bart_score_cnn_src_hypo"}


def _summeval():
    table = load_shared("load_summeval", SHARED_DATA / "summeval")
    return table


def summeval_design(dimension: str, *, finite: bool = False) -> Design:
    """n expert ratings of one SummEval dimension drawn without replacement from the 1,600 summaries; the judge
    (an automatic metric mapped min-max to 1-5) scores all 1,600; the truth is the mean of the 1,600 ratings."""
    metric = SUMMEVAL_JUDGES[dimension]

    def draw(rng, n):
        table = _summeval()
        m = table[metric]
        judge = 1 + 4 * (m - m.min()) / (m.max() - m.min())
        picks = rng.choice(len(table), n, replace=False)
        return {"judge": judge, "human": table[dimension].iloc[picks], "truth": float(table[dimension].mean()),
                "bounds": (1, 5), "system": table["system"]}

    return Design(f"summeval-{dimension}{'-finite' if finite else ''}",
                  f"SummEval expert {dimension} (1-5, mean of 3), judge {metric} on 1-5; n of 1,600 labelled", draw,
                  data="summeval")


def skewed_ppi_design(n_cases: int = 1000) -> Design:
    """1-5 ratings piled at the top for n_cases cases drawn afresh; a judge = rating + N(0.3, 0.8) rounded into
    1-5; the truth is the population mean (4.64)."""
    values, probs = np.array([1, 2, 3, 4, 5.0]), np.array([0.01, 0.02, 0.04, 0.17, 0.76])

    def draw(rng, n):
        y = rng.choice(values, n_cases, p=probs)
        judge = np.clip(np.round(y + rng.normal(0.3, 0.8, n_cases)), 1, 5)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        picks = rng.choice(n_cases, n, replace=False)
        return {"judge": pd.Series(judge, index=ids), "human": pd.Series(y[picks], index=ids[picks]),
                "truth": float(values @ probs), "bounds": (1, 5)}

    return Design("ratings-1to5-top-ppi", "1-5 ratings piled at the top (mean 4.64), 1,000 cases, judge = rating "
                  "+ N(0.3, 0.8) rounded", draw)


def pass_fail_design(p: float = 0.9, agree: float = 0.85, n_cases: int = 500) -> Design:
    """Human PASS with probability p; the judge agrees with the human on a share ``agree``; truth p."""

    def draw(rng, n):
        human = rng.random(n_cases) < p
        judge = np.where(rng.random(n_cases) < agree, human, ~human)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        picks = rng.choice(n_cases, n, replace=False)
        return {"judge": pd.Series(judge.astype(float), index=ids), "human": pd.Series(human[picks].astype(float),
                index=ids[picks]), "truth": p, "bounds": (0, 1), "x": human[picks].astype(float)}

    return Design(f"pass-fail(p={p},agree={agree})", f"PASS/FAIL labels with pass rate {p}, a judge agreeing on "
                  f"{agree:.0%} of cases, {n_cases} cases", draw)


def clustered_design(size: int = 4, icc: float = 0.3, p: float = 0.85) -> Design:
    """Claims within items: n labelled claims come as n / size whole items of ``size`` claims whose pass
    probabilities share an item effect (intraclass correlation about ``icc``); the truth is the population rate."""

    def draw(rng, n):
        items = max(1, n // size)
        total_items = items * 5
        # beta item effects with mean p and intraclass correlation icc
        a = p * (1 - icc) / icc
        b = (1 - p) * (1 - icc) / icc
        q = rng.beta(a, b, total_items)
        x = (rng.random((total_items, size)) < q[:, None]).astype(float).ravel()
        groups = np.repeat(np.arange(total_items), size)
        judge = np.where(rng.random(len(x)) < 0.85, x, 1 - x)
        ids = pd.Index([f"c{i}" for i in range(len(x))])
        labelled_items = rng.choice(total_items, items, replace=False)
        mask = np.isin(groups, labelled_items)
        return {"judge": pd.Series(judge, index=ids), "human": pd.Series(x[mask], index=ids[mask]),
                "cluster": pd.Series(groups, index=ids), "truth": p, "bounds": (0, 1), "x": x[mask],
                "groups": groups[mask]}

    return Design(f"clustered(size={size},icc={icc},p={p})", f"PASS/FAIL claims, {size} per item, intraclass "
                  f"correlation {icc}, pass rate {p}; n labelled claims = n / {size} whole items", draw)


def per_system_design() -> Design:
    """Notebook 04's per-system design: 200 SummEval summaries labelled at random (7-19 per system), the judge on
    all 1,600; the truth is the 16 systems' mean relevance (all must hold together)."""

    def draw(rng, n):
        table = _summeval()
        m = table[SUMMEVAL_JUDGES["relevance"]]
        judge = 1 + 4 * (m - m.min()) / (m.max() - m.min())
        picks = rng.choice(len(table), n, replace=False)
        truth = table["relevance"].groupby(table["system"]).mean().sort_index()
        return {"judge": judge, "human": table["relevance"].iloc[picks], "system": table["system"],
                "truth": truth.to_numpy(), "bounds": (1, 5)}

    return Design("summeval-relevance-16-systems", "SummEval relevance, n of 1,600 labelled at random, one interval "
                  "per system (16)", draw, data="summeval")


def _mean(method="ppi++", interval="auto"):
    def run(sample, level):
        from evalkit import infer

        row = infer.mean(sample["judge"], sample["human"], method=method, interval=interval, confidence_level=level,
                         bounds=sample.get("bounds")).iloc[0]
        return row["ci_low"], row["ci_high"]

    return run


def _mean_clustered(interval="auto"):
    def run(sample, level):
        from evalkit import infer

        row = infer.mean(sample["judge"], sample["human"], method="classical", interval=interval,
                         confidence_level=level, cluster=sample["cluster"]).iloc[0]
        return row["ci_low"], row["ci_high"]

    return run


def _mean_finite(sample, level):
    from evalkit import infer

    row = infer.mean(sample["judge"], sample["human"], confidence_level=level, bounds=sample["bounds"],
                     finite_population=True).iloc[0]
    return row["ci_low"], row["ci_high"]


def _bootstrap_mean(sample, level):
    """Comparison only (not offered): scipy's BCa bootstrap of the labels' mean."""
    from scipy import stats

    y = sample["human"].to_numpy(dtype=float)
    if np.ptp(y) == 0:
        return y[0], y[0]
    ci = stats.bootstrap((y,), np.mean, confidence_level=level, n_resamples=999, method="BCa",
                         rng=np.random.default_rng(0)).confidence_interval
    return ci.low, ci.high


def _per_system(interval="auto", adjust="bonferroni"):
    def run(sample, level):
        from evalkit import infer

        table = infer.mean(sample["judge"], sample["human"], by=sample["system"], adjust=adjust, interval=interval,
                           confidence_level=level, bounds=sample["bounds"])
        table = table.set_index("system").sort_index()
        return table["ci_low"].to_numpy(), table["ci_high"].to_numpy()

    return run


def paired_design(shift: float = 0.0) -> Design:
    """Two systems rated 1-5 on the same 800 cases (ratings piled at the top, system A ``shift`` better on
    average); judges track each; the truth is the population difference."""
    values, probs = np.array([1, 2, 3, 4, 5.0]), np.array([0.02, 0.03, 0.05, 0.2, 0.7])

    def draw(rng, n):
        base = rng.choice(values, 800, p=probs)
        a = np.clip(base + (rng.random(800) < shift), 1, 5) if shift else base.copy()
        b = np.clip(base - (rng.random(800) < 0.3) + (rng.random(800) < 0.3), 1, 5)
        ids = pd.Index([f"c{i}" for i in range(800)])
        ja = pd.Series(np.clip(np.round(a + rng.normal(0, 0.7, 800)), 1, 5), index=ids)
        jb = pd.Series(np.clip(np.round(b + rng.normal(0, 0.7, 800)), 1, 5), index=ids)
        picks = rng.choice(800, n, replace=False)
        # the truth: the expected difference under this process, by simulation once (fixed seed)
        return {"ja": ja, "jb": jb, "ha": pd.Series(a[picks], index=ids[picks]), "hb": pd.Series(b[picks], index=ids[picks]),
                "truth": _paired_truth(shift), "bounds": (1, 5)}

    return Design(f"paired-1to5(shift={shift})", "two systems on the same cases, 1-5 ratings piled at the top", draw)


@functools.cache
def _paired_truth(shift: float) -> float:
    rng = np.random.default_rng(12345)
    values, probs = np.array([1, 2, 3, 4, 5.0]), np.array([0.02, 0.03, 0.05, 0.2, 0.7])
    base = rng.choice(values, 4_000_000, p=probs)
    a = np.clip(base + (rng.random(base.size) < shift), 1, 5) if shift else base
    b = np.clip(base - (rng.random(base.size) < 0.3) + (rng.random(base.size) < 0.3), 1, 5)
    return float((a - b).mean())


def _difference(interval="auto", kind="interval"):
    def run(sample, level):
        from evalkit import infer

        row = infer.difference(sample["ja"], sample["jb"], sample["ha"], sample["hb"], interval=interval,
                               confidence_level=level if kind == "interval" else 0.95, bounds=sample["bounds"]).iloc[0]
        return (row["ci_low"], row["ci_high"]) if kind == "interval" else row["p_val"]

    return run


def _infer_pass_rate(interval="auto"):
    def run(sample, level):
        from evalkit import infer

        judge = sample["judge"]
        results = pd.DataFrame({"case_id": judge.index, "rubric": "r", "rubric_version": "v1", "model": "m",
                                "verdict": np.where(judge.to_numpy() > 0, "PASS", "FAIL"), "parsed": True, "error": None})
        row = infer.pass_rate(results, sample["human"] > 0, interval=interval, confidence_level=level).iloc[0]
        return row["ci_low"], row["ci_high"]

    return run


def _judge_pass_rate_with(interval="clopper-pearson", clustered=False):
    def run(sample, level):
        from evalkit import judge

        x = sample["x"]
        results = pd.DataFrame({"case_id": np.arange(len(x)).astype(str), "rubric": "r", "rubric_version": "v1",
                                "model": "m", "verdict": np.where(x > 0, "PASS", "FAIL"), "parsed": True, "error": None})
        if clustered:
            results["item"] = sample["groups"]
        row = judge.pass_rate(results, confidence_level=level, interval=interval,
                              cluster="item" if clustered else None).iloc[0]
        return row["ci_low"], row["ci_high"]

    return run


def calibration_design(p_pass: float = 0.8, sensitivity: float = 0.9, specificity: float = 0.7) -> Design:
    """n labelled cases: human PASS with probability ``p_pass``; the judge PASSes a human PASS with probability
    ``sensitivity`` and FAILs a human FAIL with ``specificity``. Truths: every rate and kappa of the process."""
    po = p_pass * sensitivity + (1 - p_pass) * specificity
    judge_pass = p_pass * sensitivity + (1 - p_pass) * (1 - specificity)
    pe = p_pass * judge_pass + (1 - p_pass) * (1 - judge_pass)
    truths = {"agreement": po, "fail_recall": specificity, "false_flag_rate": 1 - sensitivity,
              "kappa": (po - pe) / (1 - pe)}

    def draw(rng, n):
        human = rng.random(n) < p_pass
        judge = np.where(human, rng.random(n) < sensitivity, rng.random(n) >= specificity)
        ids = [f"c{i}" for i in range(n)]
        return {"human": pd.Series(np.where(human, "PASS", "FAIL"), index=ids),
                "judge": pd.Series(np.where(judge, "PASS", "FAIL"), index=ids), "truths": truths, "truth": np.nan,
                "p_pass": p_pass, "sensitivity": sensitivity, "specificity": specificity}

    return Design(f"calibration(p={p_pass},se={sensitivity},sp={specificity})", f"human pass rate {p_pass}, judge "
                  f"sensitivity {sensitivity}, specificity {specificity}", draw)


def _calibrate_metric(metric: str, interval="clopper-pearson"):
    def run(sample, level):
        from evalkit import calibrate

        sample["truth"] = sample["truths"][metric]
        report = calibrate.calibrate(sample["judge"], sample["human"], confidence_level=level, interval=interval)
        row = report.table.loc[metric]
        return row["ci_low"], row["ci_high"]

    return run


def _kappa_large_sample(kind="fce"):
    """Comparison only (not offered): kappa's large-sample normal interval, with the variance of Fleiss, Cohen &
    Everitt (1969) (``"fce"``) or Cohen's (1960) ``po (1 - po) / (n (1 - pe)^2)`` (``"cohen"``, evalkit's before)."""

    def run(sample, level):
        from scipy import stats

        sample["truth"] = sample["truths"]["kappa"]
        h, j = (sample["human"] == "PASS").to_numpy(), (sample["judge"] == "PASS").to_numpy()
        n = len(h)
        p = np.array([[np.mean(h & j), np.mean(h & ~j)], [np.mean(~h & j), np.mean(~h & ~j)]])
        rows, cols = p.sum(1), p.sum(0)
        po, pe = p[0, 0] + p[1, 1], rows @ cols
        if pe >= 1:
            return np.nan, np.nan
        k = (po - pe) / (1 - pe)
        if kind == "cohen":
            var = po * (1 - po) / (n * (1 - pe) ** 2)
        else:
            a = sum(p[i, i] * (1 - (rows[i] + cols[i]) * (1 - k)) ** 2 for i in range(2))
            b = (1 - k) ** 2 * (p[0, 1] * (cols[0] + rows[1]) ** 2 + p[1, 0] * (cols[1] + rows[0]) ** 2)
            var = (a + b - (k - pe * (1 - k)) ** 2) / (n * (1 - pe) ** 2)
        half = stats.norm.ppf(0.5 + level / 2) * np.sqrt(max(var, 0.0))
        return max(-1.0, k - half), min(1.0, k + half)

    return run


def rogan_gladen_design(p_calibration: float, p_run: float, sensitivity: float, specificity: float,
                        n_run: int = 200) -> Design:
    """n calibration labels (human pass rate ``p_calibration``, the judge's sensitivity and specificity as in
    :func:`calibration_design`) and a separate run of ``n_run`` fresh judged cases at human pass rate ``p_run``,
    the judge erring there at the same rates; the truth is ``p_run`` (the run's population pass rate)."""

    def draw(rng, n):
        human = rng.random(n) < p_calibration
        judge = np.where(human, rng.random(n) < sensitivity, rng.random(n) >= specificity)
        truth_run = rng.random(n_run) < p_run
        run = np.where(truth_run, rng.random(n_run) < sensitivity, rng.random(n_run) >= specificity)
        ids = [f"c{i}" for i in range(n)]
        return {"human": pd.Series(np.where(human, "PASS", "FAIL"), index=ids),
                "judge": pd.Series(np.where(judge, "PASS", "FAIL"), index=ids),
                "run": pd.Series(np.where(run, "PASS", "FAIL"), index=[f"r{i}" for i in range(n_run)]), "truth": p_run}

    return Design(f"rogan-gladen(cal p={p_calibration},run p={p_run},se={sensitivity},sp={specificity},run={n_run})",
                  f"calibrate on n labels at pass rate {p_calibration}, correct a separate run of {n_run} at "
                  f"{p_run}; judge sensitivity {sensitivity}, specificity {specificity}", draw)


def _corrected_pass_rate(sample, level):
    """Calibrate on the n labelled cases, correct the separate run; truth: the run population's rate."""
    from evalkit import calibrate

    try:
        report = calibrate.calibrate(sample["judge"], sample["human"], confidence_level=level)
        row = calibrate.corrected_pass_rate(sample["run"], report, confidence_level=level).iloc[0]
    except ValueError:  # a calibration set without both labels: refused
        return np.nan, np.nan
    return row["ci_low"], row["ci_high"]


def _bootstrap_corrected(sample, level):
    """Comparison only (no longer offered): the percentile bootstrap of the run and the calibration cells that
    corrected_pass_rate gave before (1,000 resamples)."""
    human, judge = (sample["human"] == "PASS").to_numpy(), (sample["judge"] == "PASS").to_numpy()
    cells = np.array([(human & judge).sum(), (human & ~judge).sum(), (~human & ~judge).sum(), (~human & judge).sum()])
    if cells[:2].sum() == 0 or cells[2:].sum() == 0:
        return np.nan, np.nan
    run = (sample["run"] == "PASS").to_numpy()
    se, sp = cells[0] / cells[:2].sum(), cells[2] / cells[2:].sum()
    if se + sp - 1 <= 0:
        return np.nan, np.nan
    rng = np.random.default_rng(0)
    obs = rng.binomial(len(run), run.mean(), size=1000) / len(run)
    star = rng.multinomial(cells.sum(), cells / cells.sum(), size=1000).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        se_s, sp_s = star[:, 0] / star[:, :2].sum(1), star[:, 2] / star[:, 2:].sum(1)
        boot = (obs + sp_s - 1) / (se_s + sp_s - 1)
    boot = boot[np.isfinite(boot) & (se_s + sp_s - 1 > 0)]
    low, high = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(np.clip(low, 0, 1)), float(np.clip(high, 0, 1))


def clustered_calibration_design(size: int = 4, icc: float = 0.3, p_pass: float = 0.85, sensitivity: float = 0.9,
                                 specificity: float = 0.7) -> Design:
    """n labelled claims in items of ``size``: each item's pass probability is Beta with mean ``p_pass`` and intraclass
    correlation ``icc``, and its judge's sensitivity and specificity vary by item (Beta, mean as given), so both the
    labels and the judge's errors cluster. Truths: the population rates and kappa of a claim."""
    po = p_pass * sensitivity + (1 - p_pass) * specificity
    judge_pass = p_pass * sensitivity + (1 - p_pass) * (1 - specificity)
    pe = p_pass * judge_pass + (1 - p_pass) * (1 - judge_pass)
    truths = {"agreement": po, "fail_recall": specificity, "false_flag_rate": 1 - sensitivity,
              "kappa": (po - pe) / (1 - pe)}

    def beta(rng, mean, k):
        c = (1 - icc) / icc
        return rng.beta(mean * c, (1 - mean) * c, k)

    def draw(rng, n):
        items = max(1, n // size)
        p, se, sp = beta(rng, p_pass, items), beta(rng, sensitivity, items), beta(rng, specificity, items)
        human = rng.random((items, size)) < p[:, None]
        judge = np.where(human, rng.random((items, size)) < se[:, None], rng.random((items, size)) >= sp[:, None])
        ids = [f"c{i}" for i in range(items * size)]
        return {"human": pd.Series(np.where(human.ravel(), "PASS", "FAIL"), index=ids),
                "judge": pd.Series(np.where(judge.ravel(), "PASS", "FAIL"), index=ids),
                "cluster": pd.Series(np.repeat(np.arange(items), size), index=ids), "truths": truths, "truth": np.nan}

    return Design(f"clustered-calibration(size={size},icc={icc},p={p_pass},se={sensitivity},sp={specificity})",
                  f"claims in items of {size}, labels and judge errors clustered (icc {icc}), pass rate {p_pass}", draw)


def _calibrate_clustered(metric: str):
    def run(sample, level):
        from evalkit import calibrate

        sample["truth"] = sample["truths"][metric]
        report = calibrate.calibrate(sample["judge"], sample["human"], confidence_level=level, cluster=sample["cluster"])
        row = report.table.loc[metric]
        return row["ci_low"], row["ci_high"]

    return run


def drift_design(p: float = 0.8) -> Design:
    """n labels in order with a constant agreement rate p (no drift): the truth for each bin is p."""

    def draw(rng, n):
        human = rng.random(n) < 0.7
        agree = rng.random(n) < p
        judge = np.where(agree, human, ~human)
        ids = [f"c{i}" for i in range(n)]
        labels = pd.DataFrame({"case_id": ids, "label": np.where(human, "PASS", "FAIL"), "position": np.arange(n)})
        return {"judge": pd.Series(np.where(judge, "PASS", "FAIL"), index=ids), "labels": labels, "truth": p}

    return Design(f"no-drift(agreement={p})", f"labels in order, agreement {p} throughout", draw)


def _drift(kind="interval"):
    def run(sample, level):
        from evalkit import calibrate

        out = calibrate.agreement_drift(sample["judge"], sample["labels"], bins=4,
                                        confidence_level=level if kind == "interval" else 0.95)
        if kind == "interval":
            return out["ci_low"].iloc[0], out["ci_high"].iloc[0]  # one bin's interval (the first)
        return out.attrs.get("p_trend", np.nan)

    return run


def _sequence(stat="mean", peek=False, half=0.1):
    """Stop the first time the half-width is <= ``half`` (or at n labels): the interval at that moment."""

    def run(sample, level):
        from evalkit import infer

        human = sample["human"]
        if peek:  # the fixed-n clt interval read after every label, stopped by the same rule
            y = human.to_numpy(dtype=float)
            t = np.arange(1, len(y) + 1)
            m = np.cumsum(y) / t
            sd = np.sqrt(np.maximum(np.cumsum(y * y) / t - m**2, 0.0))
            from scipy import stats

            half_width = stats.norm.ppf(0.5 + level / 2) * sd / np.sqrt(t)
            ok = np.flatnonzero((half_width <= half) & (t >= 10))
            i = ok[0] if len(ok) else len(y) - 1
            return m[i] - half_width[i], m[i] + half_width[i]
        cs = infer.confidence_sequence(human, confidence_level=level)
        stop = infer.stopping_point(cs, half_width=half)
        row = cs.iloc[(stop or len(cs)) - 1]
        return row["cs_low"], row["cs_high"]

    return run


def stream_design(p: float = 0.9) -> Design:
    """n PASS/FAIL labels in a random order (a labeller's stream); the truth is the population pass rate p."""

    def draw(rng, n):
        x = (rng.random(n) < p).astype(float)
        return {"human": pd.Series(x, index=[f"c{i}" for i in range(n)]), "truth": p}

    return Design(f"stream(p={p})", f"a stream of PASS/FAIL labels, pass rate {p}, stopped at the first half-width "
                  "<= 0.1 (or at n)", draw)


def segments_design(k: int = 6, null: float = 0.9, away: float = 0.7, n_away: int = 2, agree: float = 0.85,
                    per_segment: int = 150) -> Design:
    """k segments of ``per_segment`` PASS/FAIL cases, pass rate ``null`` in all but ``n_away`` (``away`` there), a judge
    agreeing with the human on a share ``agree``; n labels drawn at random over all cases. The truth is each
    segment's population rate; a selective procedure tests each against ``null``."""
    rates = np.array([away] * n_away + [null] * (k - n_away))

    def draw(rng, n):
        seg = np.repeat(np.arange(k), per_segment)
        human = rng.random(seg.size) < rates[seg]
        judge = np.where(rng.random(seg.size) < agree, human, ~human)
        ids = pd.Index([f"c{i}" for i in range(seg.size)])
        picks = rng.choice(seg.size, n, replace=False)
        return {"judge": pd.Series(judge.astype(float), index=ids), "human": pd.Series(human[picks].astype(float),
                index=ids[picks]), "segment": pd.Series(seg, index=ids, name="segment"), "truth": rates, "null": null}

    return Design(f"segments(k={k},null={null},away={away}x{n_away})", f"{k} segments of PASS/FAIL cases at pass rate "
                  f"{null}, {n_away} of them at {away}; judge agreeing on {agree:.0%}; n labels over all", draw)


def per_system_null_design() -> Design:
    """Notebook 04's per-system design, each system tested against the mean relevance of all 1,600 summaries."""
    base = per_system_design()

    def draw(rng, n):
        sample = base.draw(rng, n)
        sample["segment"], sample["null"] = sample["system"], float(_summeval()["relevance"].mean())
        return sample

    return Design("summeval-relevance-16-systems-vs-mean", "SummEval relevance, n of 1,600 labelled at random; each "
                  "system tested against the mean of all 1,600", draw, data="summeval")


def _selective(adjust="bh", method="ppi++", interval="auto"):
    """FCR entries: the selected segments' intervals (BH or BY against sample["null"]), in segment order."""

    def run(sample, level):
        from evalkit import infer

        table = infer.mean(sample["judge"], sample["human"], by=sample["segment"], adjust=adjust, null=sample["null"],
                           method=method, interval=interval, confidence_level=level, bounds=sample.get("bounds"))
        table = table.set_index(table.columns[0]).sort_index()
        return table["ci_low"].to_numpy(), table["ci_high"].to_numpy(), table["selected"].to_numpy(dtype=bool)

    return run


SUMMEVAL_DESIGNS = tuple(summeval_design(d) for d in SUMMEVAL_JUDGES)
#: Kappa at skewed prevalence and judges of several qualities (the fast suite runs the first three).
KAPPA_DESIGNS = (calibration_design(0.9, 0.95, 0.6), calibration_design(0.9, 0.95, 0.9), calibration_design(0.95, 0.97, 0.7),
                 calibration_design(0.8, 0.9, 0.7), calibration_design(0.9, 0.8, 0.5), calibration_design(0.7, 0.95, 0.95),
                 calibration_design(0.5, 0.8, 0.8))
ROGAN_GLADEN_DESIGNS = (rogan_gladen_design(0.9, 0.9, 0.95, 0.6), rogan_gladen_design(0.8, 0.95, 0.9, 0.7),
                        rogan_gladen_design(0.8, 0.8, 0.9, 0.7), rogan_gladen_design(0.9, 0.9, 0.95, 0.9),
                        rogan_gladen_design(0.5, 0.5, 0.8, 0.8), rogan_gladen_design(0.95, 0.95, 0.97, 0.7),
                        rogan_gladen_design(0.9, 0.6, 0.9, 0.8), rogan_gladen_design(0.7, 0.7, 0.8, 0.5),
                        rogan_gladen_design(0.9, 0.9, 0.95, 0.8, n_run=1000))
CLUSTERED_CALIBRATION = (clustered_calibration_design(4, 0.3), clustered_calibration_design(8, 0.5, 0.9, 0.95, 0.6))
RATE_DESIGNS = (bernoulli(0.5), bernoulli(0.9), bernoulli(0.97))

ENTRIES += [
    # infer.mean: the default (betting) beside the large-sample intervals and a bootstrap, on the same designs
    Entry("infer.mean", "method='ppi++', interval='betting' (default)", "interval", _mean(),
          (summeval_design("consistency"), summeval_design("fluency"), skewed_ppi_design()), default=True,
          notes="finite-sample coverage; the test subset runs the two skewed SummEval dimensions and the synthetic one"),
    Entry("infer.mean", "method='ppi++', interval='betting' (all four SummEval dimensions)", "interval", _mean(),
          SUMMEVAL_DESIGNS + (pass_fail_design(),)),
    Entry("infer.mean", "method='classical', interval='betting'", "interval", _mean("classical", "betting"),
          SUMMEVAL_DESIGNS + (skewed_ppi_design(), pass_fail_design())),
    Entry("infer.mean", "method='classical', interval='auto' on 0/1 labels (Clopper-Pearson)", "interval",
          _mean("classical"), (pass_fail_design(0.9), pass_fail_design(0.97, 0.9), pass_fail_design(0.5, 0.8))),
    Entry("infer.mean", "method='ppi++', interval='clt' (ppi_py)", "interval", _mean("ppi++", "clt"),
          SUMMEVAL_DESIGNS + (skewed_ppi_design(), pass_fail_design())),
    Entry("infer.mean", "method='classical', interval='clt'", "interval", _mean("classical", "clt"),
          SUMMEVAL_DESIGNS + (skewed_ppi_design(), pass_fail_design())),
    Entry("infer.mean", "method='classical', interval='t'", "interval", _mean("classical", "t"),
          SUMMEVAL_DESIGNS + (skewed_ppi_design(),)),
    Entry("infer.mean", "scipy BCa bootstrap of the labels (comparison, not offered)", "interval", _bootstrap_mean,
          (summeval_design("consistency"), summeval_design("fluency"), skewed_ppi_design())),
    Entry("infer.mean", "finite_population=True (betting, without replacement)", "interval", _mean_finite,
          (summeval_design("consistency", finite=True), summeval_design("relevance", finite=True))),
    Entry("infer.mean", "cluster= (default: cluster-robust t, G - 1 df)", "interval", _mean_clustered(),
          (clustered_design(4, 0.3), clustered_design(8, 0.5), clustered_design(4, 0.3, 0.95)), default=True,
          sizes=(40, 80, 120, 200, 400),
          test_sizes=(400,), notes="fewer than 50 clusters: refused (NaN)"),
    Entry("infer.mean", "cluster=, interval='clt'", "interval", _mean_clustered("clt"),
          (clustered_design(4, 0.3), clustered_design(8, 0.5)), sizes=(40, 80, 120, 200, 400)),
    Entry("infer.mean", "by=system, adjust='bonferroni' (default betting): 16 hold together", "interval",
          _per_system(), (per_system_design(),), default=True, sizes=(200,), test_sizes=(200,), test_reps=200,
          notes="the fast suite runs 200 rounds (3 MC s.e. = 0.046); the benchmark 1,000"),
    Entry("infer.mean", "by=, adjust='bh', null= (default betting): false coverage-statement rate", "fcr",
          _selective(), (segments_design(), per_system_null_design()), default=True, sizes=(120, 300, 600),
          test_sizes=(300,), test_reps=150, notes="FCR <= alpha (Benjamini & Yekutieli 2005): the selected segments' "
          "intervals at 1 - R alpha / m; the fast suite runs 150 samples of each design"),
    Entry("infer.mean", "by=, adjust='by', null= (default betting)", "fcr", _selective("by"),
          (segments_design(), per_system_null_design()), sizes=(120, 300, 600)),
    Entry("infer.mean", "by=, adjust='bh', null=, method='classical' (Clopper-Pearson)", "fcr",
          _selective(method="classical"), (segments_design(), segments_design(12, 0.9, 0.75, 6)), sizes=(120, 300, 600)),
    Entry("infer.mean", "by=, adjust='bh', null=, interval='clt'", "fcr", _selective(interval="clt"),
          (segments_design(), segments_design(12, 0.9, 0.75, 6)), sizes=(120, 300, 600)),
    Entry("infer.mean", "by=system, adjust='bonferroni', interval='clt'", "interval", _per_system("clt"),
          (per_system_design(),), sizes=(200, 480)),
    Entry("infer.difference", "interval='betting' (default)", "interval", _difference(),
          (paired_design(0.0), paired_design(0.3)), default=True, test_sizes=(50,), test_reps=200,
          notes="the fast suite runs 200 samples (each call also finds the p-value)"),
    Entry("infer.difference", "interval='clt'", "interval", _difference("clt"), (paired_design(0.0), paired_design(0.3))),
    Entry("infer.difference", "p_val, interval='betting' (default), no difference", "test", _difference(kind="test"),
          (paired_design(0.0),), default=True, test_sizes=(50,), test_reps=300),
    Entry("infer.difference", "p_val, interval='clt', no difference", "test", _difference("clt", "test"),
          (paired_design(0.0),)),
    Entry("infer.pass_rate", "method='ppi++', interval='betting' (default)", "interval", _infer_pass_rate(),
          (pass_fail_design(0.9), pass_fail_design(0.97, 0.9), pass_fail_design(0.5, 0.8)), default=True),
    Entry("infer.pass_rate", "method='ppi++', interval='clt'", "interval", _infer_pass_rate("clt"),
          (pass_fail_design(0.9), pass_fail_design(0.97, 0.9), pass_fail_design(0.5, 0.8))),
    Entry("infer.confidence_sequence", "stopped at the first half-width <= 0.1 (default)", "interval", _sequence(),
          (stream_design(0.9), stream_design(0.7)), default=True, sizes=(100, 200, 400), test_sizes=(200,)),
    Entry("infer.confidence_sequence", "comparison: the fixed-n clt interval read after every label, same rule",
          "interval", _sequence(peek=True), (stream_design(0.9), stream_design(0.7)), sizes=(100, 200, 400)),
    Entry("judge.pass_rate", "cluster='item' (cluster-robust t)", "interval", _judge_pass_rate_with(clustered=True),
          (clustered_design(4, 0.3), clustered_design(8, 0.5), clustered_design(4, 0.3, 0.95)),
          sizes=(40, 80, 120, 200, 400)),
    Entry("judge.pass_rate", "interval='wilson'", "interval", _judge_pass_rate_with("wilson"), RATE_DESIGNS),
    Entry("calibrate.calibrate", "agreement, Clopper-Pearson (default)", "interval", _calibrate_metric("agreement"),
          (calibration_design(), calibration_design(0.9, 0.95, 0.6)), default=True),
    Entry("calibrate.calibrate", "fail_recall, Clopper-Pearson", "interval", _calibrate_metric("fail_recall"),
          (calibration_design(), calibration_design(0.9, 0.95, 0.6))),
    Entry("calibrate.calibrate", "false_flag_rate, Clopper-Pearson", "interval", _calibrate_metric("false_flag_rate"),
          (calibration_design(), calibration_design(0.9, 0.95, 0.6))),
    Entry("calibrate.calibrate", "agreement, interval='wilson'", "interval", _calibrate_metric("agreement", "wilson"),
          (calibration_design(), calibration_design(0.9, 0.95, 0.6))),
    Entry("calibrate.calibrate", "kappa, Clopper-Pearson fiducial (default)", "interval", _calibrate_metric("kappa"),
          KAPPA_DESIGNS[:3], default=True, test_sizes=(50,), notes="pass rates 0.9-0.95"),
    Entry("calibrate.calibrate", "kappa, Clopper-Pearson fiducial (default), more judges", "interval",
          _calibrate_metric("kappa"), KAPPA_DESIGNS[3:]),
    Entry("calibrate.calibrate", "kappa, large-sample, Fleiss-Cohen-Everitt variance (comparison, not offered)",
          "interval", _kappa_large_sample("fce"), KAPPA_DESIGNS),
    Entry("calibrate.calibrate", "kappa, large-sample, Cohen's 1960 variance (the interval before)", "interval",
          _kappa_large_sample("cohen"), KAPPA_DESIGNS),
    Entry("calibrate.calibrate", "cluster=, agreement (cluster-robust t)", "interval",
          _calibrate_clustered("agreement"), CLUSTERED_CALIBRATION, default=True, sizes=(40, 80, 120, 200, 400),
          test_sizes=(400,), notes="fewer than 50 clusters: refused (NaN)"),
    Entry("calibrate.calibrate", "cluster=, fail_recall (cluster-robust t)", "interval",
          _calibrate_clustered("fail_recall"), CLUSTERED_CALIBRATION, sizes=(40, 80, 120, 200, 400)),
    Entry("calibrate.calibrate", "cluster=, kappa (cluster-robust delta method)", "interval",
          _calibrate_clustered("kappa"), CLUSTERED_CALIBRATION, sizes=(40, 80, 120, 200, 400)),
    Entry("calibrate.corrected_pass_rate", "Clopper-Pearson fiducial (default), calibration disjoint from the run",
          "interval", _corrected_pass_rate, ROGAN_GLADEN_DESIGNS[:2], default=True, test_sizes=(100,), test_reps=300,
          notes="refused (NaN) where the calibration cannot rule out sensitivity + specificity <= 1"),
    Entry("calibrate.corrected_pass_rate", "Clopper-Pearson fiducial (default), more designs", "interval",
          _corrected_pass_rate, ROGAN_GLADEN_DESIGNS[2:]),
    Entry("calibrate.corrected_pass_rate", "percentile bootstrap (the interval before; comparison)", "interval",
          _bootstrap_corrected, ROGAN_GLADEN_DESIGNS),
    Entry("calibrate.agreement_drift", "first of 4 bins, Clopper-Pearson (default)", "interval", _drift(),
          (drift_design(0.8), drift_design(0.95)), default=True, test_sizes=(100,)),
    Entry("calibrate.agreement_drift", "p_trend (Spearman), no drift", "test", _drift("test"),
          (drift_design(0.8),), default=True, test_sizes=(100,)),
]
for _entry in ENTRIES:
    if _entry.function == "judge.pass_rate" and _entry.variant == "Wilson (default)":
        ENTRIES[ENTRIES.index(_entry)] = Entry("judge.pass_rate", "Clopper-Pearson (default)", "interval",
                                               _judge_pass_rate_with(), RATE_DESIGNS, default=True)
EXEMPT.update({
    "infer.expected_half_width": "a plan, not an interval: tests/test_infer.py::test_planned_labels_deliver_the_half_width "
                                 "checks by simulation that the planned n gives the half-width and the coverage",
    "infer.labels_needed": "a plan, not an interval: tests/test_infer.py::test_planned_labels_deliver_the_half_width",
})
PENDING -= {"infer.mean", "infer.difference", "infer.pass_rate", "infer.expected_half_width", "infer.labels_needed",
            "calibrate.calibrate", "calibrate.corrected_pass_rate", "calibrate.agreement_drift"}


# ------------------------------------------------------------------------------------------ measuring
def _seed(*parts) -> np.random.Generator:
    return np.random.default_rng([zlib.crc32(str(p).encode()) for p in parts])


@dataclass
class Measurement:
    function: str
    variant: str
    kind: str
    design: str
    n: int
    reps: int
    nominal: float
    rate: float  # coverage (intervals), size (tests) or false coverage-statement rate (fcr), over the samples with a number
    mc_se: float  # Monte Carlo standard error of ``rate`` at the nominal value (fcr: of the measured rate)
    refused: float  # share of samples where the function gave NaN (declined, with its warning)
    width: float = np.nan  # mean width of the printed intervals (NaN for tests and simultaneous sets)
    extra: dict = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        """Coverage >= nominal - 3 MC s.e. (intervals); size, or false coverage-statement rate, <= alpha + 3 MC s.e."""
        if self.kind == "interval":
            return self.rate >= self.nominal - 3 * self.mc_se
        return self.rate <= self.nominal + 3 * self.mc_se


def measure(entry: Entry, design: Design, n: int, *, reps: int, seed: int = 0) -> Measurement:
    """Coverage (or size) of ``entry`` on ``reps`` samples of size ``n`` from ``design`` (fixed seed)."""
    rng = _seed(seed, entry.key, design.name, n)
    hits, widths, refused = [], [], 0
    for _ in range(reps):
        sample = design.draw(rng, n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a refusal warns; it is counted below by its NaN
            out = entry.run(sample, 1 - entry.level if entry.kind == "test" else entry.level)
        if entry.kind == "fcr":  # the share of the selected intervals that miss (0 when none is selected)
            low, high, chosen = (np.asarray(v) for v in out)
            chosen = chosen.astype(bool)
            truth = np.asarray(sample["truth"], dtype=float)
            miss = chosen & ~((low <= truth) & (truth <= high))
            hits.append(miss.sum() / max(int(chosen.sum()), 1))
            widths.extend((high - low)[chosen].tolist())
            continue
        if entry.kind == "interval":
            low, high = (np.asarray(v, dtype=float) for v in out)
            if np.isnan(low).any() or np.isnan(high).any():
                refused += 1
                continue
            truth = np.asarray(sample["truth"], dtype=float)
            hits.append(bool(np.all((low <= truth) & (truth <= high))))
            if low.ndim == 0:
                widths.append(float(high - low))
        else:
            p = float(out)
            if np.isnan(p):
                refused += 1
                continue
            hits.append(p <= 1 - entry.level)
    counted = len(hits)
    q = entry.level if entry.kind == "interval" else 1 - entry.level
    se = np.sqrt(q * (1 - q) / counted) if counted else np.nan
    if entry.kind == "fcr" and counted > 1:  # a mean of shares, not of 0/1 outcomes
        se = float(np.std(hits, ddof=1) / np.sqrt(counted))
    return Measurement(
        function=entry.function, variant=entry.variant, kind=entry.kind, design=design.name, n=n, reps=reps,
        nominal=q, rate=float(np.mean(hits)) if counted else np.nan, mc_se=float(se),
        refused=refused / reps, width=float(np.mean(widths)) if widths else np.nan,
    )


def table(entries=None, *, sizes=None, reps: int = 1000, seed: int = 0, echo=None) -> pd.DataFrame:
    """Every entry x available design x size, measured: the coverage table."""
    rows = []
    for entry in ENTRIES if entries is None else entries:
        for design in entry.designs:
            if not design.available():
                continue
            for n in sizes or entry.sizes:
                m = measure(entry, design, n, reps=reps, seed=seed)
                rows.append({**{k: v for k, v in vars(m).items() if k != "extra"}, "holds": m.holds})
                if echo is not None:
                    echo(rows[-1])
    return pd.DataFrame(rows)
