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

import dataclasses
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

    ``data`` names the real data set under ``../shared/data`` the design resamples (None: synthetic), or a
    tuple of them; such designs are skipped, with the reason, where a data set is absent. The test suite runs
    them only with the slow tests, as they do designs marked ``slow``.
    """

    name: str
    description: str
    draw: Callable[[np.random.Generator, int], dict]
    data: str | tuple[str, ...] | None = None
    slow: bool = False  # heavy to draw or to run: checked with the slow tests only (like every real-data design)

    def available(self) -> bool:
        names = (self.data,) if isinstance(self.data, str) else self.data or ()
        return all((SHARED_DATA / name).is_dir() for name in names)


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
    requires: tuple[str, ...] = ()  # (module, extra) the function needs beyond the base install, e.g. ("statsmodels", "stats")
    slow: bool = False  # heavy: the test suite checks it with the slow tests only
    invalid: str = ""  # a documented failure (a published method reproduced as is): why; its check asserts the failure
    test_reps: int | None = None  # samples per cell in the fast test suite (None: its default, 500); fewer for heavy entries

    def __post_init__(self):
        if self.kind not in ("interval", "test", "fcr"):
            raise ValueError(f"`kind` must be 'interval', 'test' or 'fcr'; got {self.kind!r}.")

    @property
    def key(self) -> str:
        return f"{self.function} [{self.variant}]"

    def available(self) -> bool:
        """False where the module the function needs (``requires``) is not installed."""
        import importlib.util

        return not self.requires or importlib.util.find_spec(self.requires[0]) is not None


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
    "agreement.position_consistency": "deprecated alias of pairwise.position_consistency",
    "agreement.first_slot_preference": "deprecated alias of pairwise.first_slot_preference",
    "agreement.length_bias": "deprecated alias of pairwise.length_bias",
    "agreement.self_preference": "deprecated alias of pairwise.self_preference",
    "plots.ratings": "draws the intervals of pairwise.bradley_terry",
    "compare.adjust_p_values": "adjusts p-values it is given (Holm, Bonferroni, BH, BY: equal to statsmodels' multipletests)",
}



# =============================================================================== infer, judge.pass_rate, calibrate
# Rule for every default below (and the harness's one rule for discrete data): a default interval must cover at
# least its nominal level, within Monte Carlo error, at EVERY design and size, not on average. Coverage of 0/1
# rates is a saw-tooth in (n, p), so an interval whose average is nominal dips below it somewhere (Wilson: 0.933
# at p = 0.5 and 0.934 at p = 0.97, n = 50, 2,000 draws); hence Clopper-Pearson for rates and betting intervals
# (finite-sample, Waudby-Smith & Ramdas 2024) for bounded means and PPI. Large-sample intervals (clt, t, the
# cluster-robust t) are registered beside them for comparison, and not given below 30 labels or 50 clusters; with
# clusters, the default is the betting interval over whole clusters (finite-sample too).

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


def _calibrate_clustered(metric: str, interval: str = "clopper-pearson"):
    def run(sample, level):
        from evalkit import calibrate

        sample["truth"] = sample["truths"][metric]
        report = calibrate.calibrate(sample["judge"], sample["human"], confidence_level=level, cluster=sample["cluster"],
                                     interval=interval)
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
CLUSTERED = (clustered_design(4, 0.3), clustered_design(8, 0.5), clustered_design(4, 0.3, 0.95))
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
    Entry("infer.mean", "cluster= (default: betting over whole clusters)", "interval", _mean_clustered(),
          CLUSTERED, default=True, sizes=(20, 50, 100, 200, 400), test_sizes=(40, 400),
          notes="finite-sample: holds at any number of clusters (5 clusters of 4 at n = 20 give a wide interval)"),
    Entry("infer.mean", "cluster=, interval='t' (cluster-robust t, G - 1 df)", "interval", _mean_clustered("t"),
          CLUSTERED, sizes=(40, 80, 120, 200, 400), notes="fewer than 50 clusters: refused (NaN)"),
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
    Entry("judge.pass_rate", "cluster='item' (default: betting over whole clusters)", "interval",
          _judge_pass_rate_with(clustered=True),
          (clustered_design(4, 0.3), clustered_design(8, 0.5), clustered_design(4, 0.3, 0.95)),
          default=True, sizes=(20, 40, 80, 120, 200, 400), test_sizes=(40, 400)),
    Entry("judge.pass_rate", "cluster='item', interval='t' (cluster-robust t)", "interval",
          _judge_pass_rate_with("t", clustered=True),
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
    Entry("calibrate.calibrate", "cluster=, agreement (default: betting over whole clusters)", "interval",
          _calibrate_clustered("agreement"), CLUSTERED_CALIBRATION, default=True, sizes=(20, 50, 100, 200, 400),
          test_sizes=(40, 400), notes="finite-sample: holds at any number of clusters"),
    Entry("calibrate.calibrate", "cluster=, fail_recall (default: betting over whole clusters)", "interval",
          _calibrate_clustered("fail_recall"), CLUSTERED_CALIBRATION, sizes=(20, 50, 100, 200, 400)),
    Entry("calibrate.calibrate", "cluster=, false_flag_rate (default: betting over whole clusters)", "interval",
          _calibrate_clustered("false_flag_rate"), CLUSTERED_CALIBRATION, sizes=(20, 50, 100, 200, 400)),
    Entry("calibrate.calibrate", "cluster=, agreement, interval='t' (cluster-robust t)", "interval",
          _calibrate_clustered("agreement", "t"), CLUSTERED_CALIBRATION, sizes=(40, 80, 120, 200, 400),
          notes="fewer than 50 clusters: refused (NaN)"),
    Entry("calibrate.calibrate", "cluster=, fail_recall, interval='t' (cluster-robust t)", "interval",
          _calibrate_clustered("fail_recall", "t"), CLUSTERED_CALIBRATION, sizes=(40, 80, 120, 200, 400)),
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


# ------------------------------------------------------------------------------------------- compare
# Two runs on the same cases. Pass/fail pairs: each case passes run a with probability ``pass_a`` and flips
# with probability ``flip``; ``difference = p_b - p_a`` (so p(pass a, fail b) = (flip - difference) / 2).
def paired_pass(pass_a: float, flip: float, difference: float) -> Design:
    """Paired pass/fail verdicts of two runs; the truth is the change in pass rate ``p_b - p_a``."""
    p10, p01 = (flip - difference) / 2, (flip + difference) / 2
    cells = np.array([pass_a - p10, p10, p01, 1 - pass_a - p01])  # pass-pass, pass-fail, fail-pass, fail-fail
    if (cells < -1e-12).any():
        raise ValueError(f"no paired design with pass rate {pass_a}, flip rate {flip} and difference {difference}")
    cells = np.clip(cells, 0, None) / np.clip(cells, 0, None).sum()

    def draw(rng, n):
        cell = rng.choice(4, size=n, p=cells)
        return {"a": cell <= 1, "b": (cell == 0) | (cell == 2), "truth": difference}

    return Design(f"paired-pass(p_a={pass_a}, flip={flip}, diff={difference:+g})",
                  f"pass rate {pass_a} in run a, {flip:.0%} of cases flip, p_b - p_a = {difference:+g}", draw)


def paired_ratings(change: float, steps, step_probs, name: str, *, values=(1, 2, 3, 4, 5),
                   probs=(0.01, 0.02, 0.04, 0.17, 0.76)) -> Design:
    """1-5 ratings of run a piled at the top; with probability ``change`` run b moves by a step (clipped to
    the scale). The truth, the exact mean of b - a, is summed over the joint distribution."""
    values, probs = np.asarray(values, dtype=float), np.asarray(probs, dtype=float) / np.sum(probs)
    steps, step_probs = np.asarray(steps, dtype=float), np.asarray(step_probs, dtype=float) / np.sum(step_probs)
    moved = np.clip(values[:, None] + steps[None, :], values.min(), values.max()) - values[:, None]
    truth = float(change * (probs @ moved @ step_probs))

    def draw(rng, n):
        a = rng.choice(values, size=n, p=probs)
        step = rng.choice(steps, size=n, p=step_probs) * (rng.random(n) < change)
        return {"a": a, "b": np.clip(a + step, values.min(), values.max()), "truth": truth, "bounds": (1.0, 5.0)}

    return Design(name, f"1-5 ratings piled at the top; {change:.0%} of cases move by {steps.tolist()} "
                        f"(probabilities {np.round(step_probs, 2).tolist()}); mean change {truth:+.4f}", draw)


def paired_tcva(keep: float = 0.7) -> Design:
    """TCVA-like scores in [0, 1]: run a ~ Beta(5, 1.5); run b keeps a's score with probability ``keep``, else
    draws afresh from Beta(4, 2). The truth is ``(1 - keep) * (2/3 - 5/6.5)``."""
    truth = (1 - keep) * (4 / 6 - 5 / 6.5)

    def draw(rng, n):
        a = rng.beta(5, 1.5, n)
        b = np.where(rng.random(n) < keep, a, rng.beta(4, 2, n))
        return {"a": a, "b": b, "truth": truth, "bounds": (0.0, 1.0)}

    return Design(f"paired-tcva(keep={keep})", f"scores in [0, 1]; {1 - keep:.0%} of cases re-scored lower on "
                                               f"average; mean change {truth:+.4f}", draw)


def exchangeable_ratings(change: float) -> Design:
    """Null for paired scores: with probability ``change`` run b is an independent draw from a's distribution,
    else equal to a, so (a, b) is exchangeable within each case and the mean change is 0."""
    base = SKEWED_RATINGS

    def draw(rng, n):
        a = base.draw(rng, n)["x"]
        b = np.where(rng.random(n) < change, base.draw(rng, n)["x"], a)
        return {"a": a, "b": b, "truth": 0.0, "bounds": (1.0, 5.0)}

    return Design(f"exchangeable-ratings(change={change})", f"1-5 ratings; {change:.0%} of cases re-drawn from the "
                                                            "same distribution (no change)", draw)


def several_runs(pass_a: float, flip: float, differences, name: str) -> Design:
    """A baseline and ``len(differences)`` runs on the same cases, each as :func:`paired_pass` against it."""
    for difference in differences:
        paired_pass(pass_a, flip, difference)  # refuses impossible cells

    def draw(rng, n):
        base = rng.random(n) < pass_a
        frames, truth = [pd.DataFrame({"case_id": np.arange(n), "run": "base", "verdict": base})], []
        for i, difference in enumerate(differences):
            p10, p01 = (flip - difference) / 2, (flip + difference) / 2
            u = rng.random(n)  # flip a pass with probability p10 / pass_a, a fail with p01 / (1 - pass_a)
            other = np.where(base, u >= p10 / pass_a, u < p01 / (1 - pass_a))
            frames.append(pd.DataFrame({"case_id": np.arange(n), "run": f"r{i}", "verdict": other}))
            truth.append(difference)
        return {"runs": pd.concat(frames, ignore_index=True), "truth": np.array(truth),
                "null": np.array(differences) == 0}

    return Design(name, f"a baseline at pass rate {pass_a} and {len(differences)} runs, {flip:.0%} flipping, "
                        f"differences {list(differences)}", draw)


def _pass_series(x):
    return pd.Series(np.where(x, "PASS", "FAIL"))


def _compare_rate(method=None):
    def run(sample, level):
        from evalkit import compare

        res = compare.paired(_pass_series(sample["a"]), _pass_series(sample["b"]), method=method,
                             confidence_level=level)
        return res.ci_low, res.ci_high

    return run


def _compare_mcnemar(sample, alpha):
    from evalkit import compare

    return compare.paired(_pass_series(sample["a"]), _pass_series(sample["b"])).p_value


def _compare_score(method=None, known_bounds=False):
    def run(sample, level):
        from evalkit import compare

        res = compare.paired(pd.Series(sample["a"]), pd.Series(sample["b"]), method=method, confidence_level=level,
                             bounds=sample["bounds"] if known_bounds else None, rng=0)
        return res.ci_low, res.ci_high

    return run


def _compare_sign_flip(sample, alpha):
    from evalkit import compare

    return compare.paired(pd.Series(sample["a"]), pd.Series(sample["b"]), rng=0).p_value


def _against_joint(adjust="holm"):
    def run(sample, level):
        from evalkit import compare

        table = compare.against_baseline(sample["runs"], baseline="base", adjust=adjust, confidence_level=level)
        return table["joint_low"].to_numpy(), table["joint_high"].to_numpy()

    return run


def _against_family(adjust="holm"):
    """The smallest adjusted p-value among the true nulls: at or below alpha exactly when the table makes a
    false claim, so its 'size' is the family-wise error rate (under the global null also the FDR)."""
    def run(sample, alpha):
        from evalkit import compare

        table = compare.against_baseline(sample["runs"], baseline="base", adjust=adjust, confidence_level=1 - alpha)
        return float(table["p_adjusted"].to_numpy()[sample["null"]].min())

    return run


def simulated_mcnemar_power(n: int, difference: float, discordant: float, alpha: float, *, reps: int,
                            rng: np.random.Generator) -> tuple[float, float]:
    """Empirical power of the exact McNemar test (``scipy.stats.binomtest`` on the flips) over ``reps`` paired
    data sets of ``n`` cases drawn cell by cell, and its Monte Carlo standard error: the planners' check,
    independent of the exact power sums they use."""
    from scipy import stats

    p10, p01 = (discordant - difference) / 2, (discordant + difference) / 2
    counts = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=reps)[:, :2]
    cache = {}
    rejected = 0
    for n10, n01 in map(tuple, counts):
        key = (min(n10, n01), n10 + n01)
        if key not in cache:
            cache[key] = key[1] > 0 and stats.binomtest(key[0], key[1], 0.5).pvalue <= alpha
        rejected += cache[key]
    rate = rejected / reps
    return rate, float(np.sqrt(rate * (1 - rate) / reps))


#: Pass rates near 0.9 with 2-20% of cases flipping: the settings the paired interval must hold at.
PAIRED_PASS_SETTINGS = tuple((0.9, flip, diff) for flip in (0.02, 0.05, 0.1, 0.2)
                             for diff in (0.0, -flip / 2, *((flip / 2,) if flip <= 0.1 else ())))
PAIRED_PASS_GRID = tuple(paired_pass(*setting) for setting in PAIRED_PASS_SETTINGS)
_PAIRED_PASS_FAST = (paired_pass(0.9, 0.02, 0.0), paired_pass(0.9, 0.05, -0.025), paired_pass(0.9, 0.1, 0.05),
                     paired_pass(0.9, 0.2, -0.1))
PAIRED_SCORE_DESIGNS = (
    paired_ratings(0.1, (-1, 1), (0.7, 0.3), "paired-ratings(10% move, mostly down)"),
    paired_ratings(0.05, (-1, 1), (0.5, 0.5), "paired-ratings(5% move, either way)"),
    paired_ratings(0.3, (-2, -1, 1), (0.2, 0.5, 0.3), "paired-ratings(30% move)"),
    paired_tcva(0.7),
)
_PAIR_SIZES = (20, 30, 50, 100, 200)

ENTRIES += [
    Entry("compare.paired", "pass-rate difference, Newcombe method 10 (default)", "interval", _compare_rate(),
          _PAIRED_PASS_FAST, default=True, sizes=_PAIR_SIZES,
          notes="the whole grid (PAIRED_PASS_GRID) at n = 30-200: python benchmarks/bench_compare.py"),
    Entry("compare.paired", "pass-rate difference, Tango score", "interval", _compare_rate("tango"),
          _PAIRED_PASS_FAST, sizes=_PAIR_SIZES),
    Entry("compare.paired", "exact McNemar (size)", "test", _compare_mcnemar,
          (paired_pass(0.9, 0.1, 0.0), paired_pass(0.9, 0.2, 0.0)), default=True, sizes=_PAIR_SIZES),
    Entry("compare.paired", "mean score difference, betting, observed range (default)", "interval",
          _compare_score(), PAIRED_SCORE_DESIGNS, default=True, sizes=_PAIR_SIZES),
    Entry("compare.paired", "mean score difference, betting, known bounds", "interval",
          _compare_score(known_bounds=True), PAIRED_SCORE_DESIGNS, sizes=_PAIR_SIZES),
    Entry("compare.paired", "mean score difference, Student t", "interval", _compare_score("t"),
          PAIRED_SCORE_DESIGNS, sizes=_PAIR_SIZES),
    Entry("compare.paired", "mean score difference, BCa bootstrap", "interval", _compare_score("bootstrap"),
          PAIRED_SCORE_DESIGNS, sizes=_PAIR_SIZES),
    Entry("compare.paired", "sign-flip permutation test (size)", "test", _compare_sign_flip,
          (exchangeable_ratings(0.1), exchangeable_ratings(0.5)), default=True, sizes=_PAIR_SIZES),
    Entry("compare.against_baseline", "joint intervals (Bonferroni), holm (default)", "interval", _against_joint(),
          (several_runs(0.9, 0.1, (0.0, -0.05, 0.05, 0.0, -0.025), "five-runs(mixed)"),), default=True,
          notes="all five joint intervals cover together"),
    Entry("compare.against_baseline", "family-wise error, holm (default)", "test", _against_family(),
          (several_runs(0.9, 0.2, (0.0, -0.1, -0.05, 0.0, 0.0), "five-runs(three nulls)"),), default=True,
          notes="'size' = P(some true null rejected at the adjusted level)"),
    Entry("compare.against_baseline", "family-wise error, holm, global null", "test", _against_family(),
          (several_runs(0.9, 0.2, (0.0,) * 5, "five-runs(global null, 20% flip)"),)),
    Entry("compare.against_baseline", "false claims under the global null, bh", "test", _against_family("bh"),
          (several_runs(0.9, 0.2, (0.0,) * 5, "five-runs(global null, 20% flip)"),),
          notes="under the global null the FDR equals the family-wise error"),
]


# ------------------------------------------------------------------------------------ evalkit.pairwise
ELO = 400 / np.log(10)


def _comparisons(rng, n, strengths, *, tie=0.15, first_slot=0.0, weights=None, per_question=1, question_sd=0.0):
    """n comparisons of systems with known log-strengths; ``per_question`` votes share a question whose random
    effect (sd ``question_sd``) shifts every vote on it toward system_a (dependent votes)."""
    k = len(strengths)
    pairs = np.array([(i, j) for i in range(k) for j in range(k) if i != j])
    w = np.ones(len(pairs)) if weights is None else np.asarray(weights, dtype=float)
    pick = pairs[rng.choice(len(pairs), n, p=w / w.sum())]
    question = np.arange(n) // per_question
    shift = rng.normal(0.0, question_sd, question.max() + 1)[question] if question_sd else 0.0
    p = 1 / (1 + np.exp(-(strengths[pick[:, 0]] - strengths[pick[:, 1]] + first_slot + shift)))
    winner = np.where(rng.random(n) < tie, "tie", np.where(rng.random(n) < p, "a", "b"))
    names = np.array([f"s{i}" for i in range(k)])
    return pd.DataFrame({"system_a": names[pick[:, 0]], "system_b": names[pick[:, 1]], "winner": winner,
                         "question_id": question})


def _expected(strengths, tie, weights=None, question_sd=0.0, first_slot=0.0) -> pd.DataFrame:
    """The design's expected outcomes as a comparisons table (2 million comparisons in the expected shares):
    what an estimate converges to is the fit to it. With ties as half a win that depends on how often each pair
    meets; a question effect averages the win probability over questions (attenuating every gap, as in any
    marginal logit model)."""
    k = len(strengths)
    nodes, node_weights = np.polynomial.hermite_e.hermegauss(41)  # E over the question effect ~ N(0, question_sd)
    node_weights = node_weights / node_weights.sum()
    pairs = [(i, j) for i in range(k) for j in range(k) if i != j]
    w = np.ones(len(pairs)) if weights is None else np.asarray(weights, dtype=float)
    rows = []
    for (i, j), share in zip(pairs, w / w.sum(), strict=True):
        p = float(node_weights @ (1 / (1 + np.exp(-(strengths[i] - strengths[j] + first_slot + question_sd * nodes)))))
        for winner, part in (("a", (1 - tie) * p), ("b", (1 - tie) * (1 - p)), ("tie", tie)):
            rows += [(f"s{i}", f"s{j}", winner)] * int(round(share * part * 2_000_000))
    return pd.DataFrame(rows, columns=["system_a", "system_b", "winner"])


_BT_STRENGTHS = np.array([0.6, 0.2, -0.1, -0.7])


def bt_design(name, description, *, weights=None, tie=0.15, per_question=1, question_sd=0.0, first_slot=0.0):
    """Comparisons of four systems; the truth is the weakest system's centred rating, or with ``first_slot``
    the first-slot term, each fitted to the design's expected outcomes (computed once, when first drawn)."""

    @functools.cache
    def truth():
        from evalkit import pairwise

        expected = _expected(_BT_STRENGTHS, tie, weights, question_sd, first_slot)
        rating = float(pairwise.bradley_terry(expected).set_index("system").loc["s3", "rating"])
        return rating, float(pairwise.bradley_terry_effects(expected).iloc[0]["coef"])

    def draw(rng, n):
        table = _comparisons(rng, n, _BT_STRENGTHS, tie=tie, weights=weights, per_question=per_question,
                             question_sd=question_sd, first_slot=first_slot)
        rating, position = truth()
        return {"comparisons": table, "truth": rating, "first_slot": position}

    return Design(name, description, draw)


# pair weights: s3 (the weakest) meets the others rarely, neighbours meet often
_UNEVEN = [1 / (abs(i - j) * (3 if 3 in (i, j) else 1)) for i in range(4) for j in range(4) if i != j]
BT_EVEN = bt_design("bt-4-systems-even", "4 systems (Elo gaps 170, 130, 260), every ordered pair equally often, 15% ties")
BT_UNEVEN = bt_design("bt-4-systems-uneven", "4 systems, uneven pair counts (the weakest system in ~1/8 of comparisons), "
                      "15% ties", weights=_UNEVEN)
BT_CLUSTERED = bt_design("bt-4-systems-questions", "4 systems, uneven pairs, 4 votes per question sharing a question "
                         "effect (sd 1 log-odds toward the first slot)", weights=_UNEVEN, per_question=4, question_sd=1.0)


def _bt_rating(**options):
    def run(sample, level):
        from evalkit import pairwise

        row = pairwise.bradley_terry(sample["comparisons"], confidence_level=level, **options).set_index("system")
        if "s3" not in row.index:
            return np.nan, np.nan
        return row.loc["s3", "ci_low"], row.loc["s3", "ci_high"]

    return run


def _position_design(name, description, **kwargs):
    base = bt_design(name, description, **kwargs)

    def draw(rng, n):
        sample = base.draw(rng, n)
        return {**sample, "truth": sample["first_slot"]}

    return Design(name, description, draw)


POSITION_UNEVEN = _position_design("bt-position-0.5", "4 systems, uneven pairs, a first-slot advantage of 0.5 log-odds, "
                                   "15% ties", weights=_UNEVEN, first_slot=0.5, tie=0.0)
POSITION_CLUSTERED = _position_design("bt-position-questions", "as bt-position-0.5 with 4 votes per question sharing a "
                                      "question effect (sd 1)", weights=_UNEVEN, first_slot=0.5, tie=0.0, per_question=4,
                                      question_sd=1.0)


def _bt_position(**options):
    def run(sample, level):
        from evalkit import pairwise

        row = pairwise.bradley_terry_effects(sample["comparisons"], confidence_level=level, **options).iloc[0]
        return row["ci_low"], row["ci_high"]

    return run


def rank_set_design(name, description, *, spacing, agree, k=5, n_all=1000, tie=0.2):
    """A judge on n_all comparisons of k systems, humans on n of them; the truth is the ranking of the
    systems' win probabilities (every pair equally often, so it is the order of the strengths)."""
    strengths = spacing * np.arange(k // 2, k // 2 - k, -1)

    def draw(rng, n):
        table = _comparisons(rng, n_all, strengths, tie=tie)
        judge = table.assign(winner=np.where(rng.random(n_all) < agree, table["winner"],
                                             np.where(rng.random(n_all) < 0.6, "a", "b")))
        labelled = rng.choice(n_all, n, replace=False)
        return {"judge": judge, "human": table.iloc[labelled], "truth": np.arange(1, k + 1)}

    return Design(name, description, draw)


RANK_CLOSE = rank_set_design("ranks-5-close-judge-0.7", "5 systems 0.1 log-odds apart, a judge agreeing with the human "
                             "vote 70% of the time (else biased to the first slot), 1,000 comparisons", spacing=0.1, agree=0.7)
RANK_APART = rank_set_design("ranks-5-apart-judge-0.5", "5 systems 0.3 log-odds apart, a judge agreeing 50% of the time",
                             spacing=0.3, agree=0.5)


def _rank_sets(**options):
    def run(sample, level):
        from evalkit import pairwise

        out = pairwise.rank_sets(sample["judge"], sample["human"], confidence_level=level, **options)
        order = out.set_index("system").loc[[f"s{i}" for i in range(len(out))]]
        return order["rank_low"].to_numpy(float), order["rank_high"].to_numpy(float)

    return run


def paired_design(name, description, *, p_first, p_second, gold_effect=0.0):
    """n instances judged in both orders: each flips toward the first slot with p_first, toward the second
    with p_second, else picks the same output both times (the gold one)."""

    def draw(rng, n):
        u = rng.random(n)
        kind = np.where(u < p_first, "first", np.where(u < p_first + p_second, "second", "same"))
        gold = np.where(rng.random(n) < 0.5, "1", "2")
        original = np.where(kind == "first", "1", np.where(kind == "second", "2", gold))
        swapped = np.where(kind == "first", "2", np.where(kind == "second", "1", gold))
        d = pd.DataFrame({"case_id": np.repeat(np.arange(n), 2), "order": np.tile(["original", "swapped"], n),
                          "winner": np.ravel(np.column_stack([original, swapped])), "label": np.repeat(gold, 2)})
        return {"decisions": d, "truth": 0.5 + (p_first - p_second) / 2, "consistency": 1 - p_first - p_second}

    return Design(name, description, draw)


FLIPS_BIASED = paired_design("pairs-flips-0.2-first-0.05-second", "instances in both orders: 20% flip toward the first "
                             "slot, 5% toward the second", p_first=0.2, p_second=0.05)
FLIPS_RARE = paired_design("pairs-flips-0.03-first-0.01-second", "few flips: 3% toward the first slot, 1% toward the "
                           "second", p_first=0.03, p_second=0.01)
FLIPS_NULL = paired_design("pairs-flips-0.15-each-way", "no position bias: 15% flip each way", p_first=0.15, p_second=0.15)
FLIPS_NULL_RARE = paired_design("pairs-flips-0.03-each-way", "no position bias, few flips: 3% each way", p_first=0.03,
                                p_second=0.03)


def _first_slot_interval(sample, level):
    from evalkit import pairwise

    row = pairwise.first_slot_preference(sample["decisions"], confidence_level=level).iloc[0]
    return row["ci_low"], row["ci_high"]


def _first_slot_test(sample, alpha):
    from evalkit import pairwise

    return pairwise.first_slot_preference(sample["decisions"]).iloc[0]["p_val"]


def _consistency_interval(sample, level):
    from evalkit import pairwise

    row = pairwise.position_consistency(sample["decisions"], confidence_level=level).iloc[0]
    return row["ci_low"], row["ci_high"]


def _with_consistency_truth(design):
    def draw(rng, n):
        sample = design.draw(rng, n)
        return {**sample, "truth": sample["consistency"]}

    return Design(design.name, design.description + " (truth: the consistency rate)", draw)


def _consistency_test(sample, alpha):
    from evalkit import pairwise

    return pairwise.position_consistency(sample["decisions"]).iloc[0]["p_val"]


def length_design(name, description, *, instance_sd, coef=0.5):
    """n instances judged in both orders; the judge's log-odds of picking output 1: gold + position + coef x
    log2 length ratio + an instance effect shared by both decisions (sd ``instance_sd``). The truth is the
    population-averaged coefficient the (marginal) logistic fit estimates: attenuated from ``coef`` by the
    instance effect, computed once from 400,000 simulated instances."""

    def simulate(rng, n):
        gold = np.where(rng.random(n) < 0.5, "1", "2")
        length_1, length_2 = rng.integers(20, 400, n), rng.integers(20, 400, n)
        effect = rng.normal(0.0, instance_sd, n)
        rows = []
        for order, first in (("original", 1.0), ("swapped", 0.0)):
            logit = 1.5 * (gold == "1") - 0.75 + 0.3 * first + coef * np.log2(length_1 / length_2) + effect
            winner = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "1", "2")
            rows.append(pd.DataFrame({"case_id": np.arange(n), "order": order, "winner": winner, "label": gold,
                                      "length_1": length_1, "length_2": length_2}))
        return pd.concat(rows, ignore_index=True)

    @functools.cache
    def truth():
        from evalkit import pairwise

        return float(pairwise.length_bias(simulate(np.random.default_rng(0), 400_000), cluster=None).iloc[0]["coef"])

    def draw(rng, n):
        return {"decisions": simulate(rng, n), "truth": truth()}

    return Design(name, description, draw)


LENGTH_SHARED = length_design("length-instance-sd-1.5", "both orders of each instance share an instance effect (sd 1.5 "
                              "log-odds); length coefficient 0.5 per doubling within an instance", instance_sd=1.5)
LENGTH_INDEPENDENT = length_design("length-no-instance-effect", "no instance effect; length coefficient 0.5",
                                   instance_sd=0.0)


def _length_bias(**options):
    def run(sample, level):
        from evalkit import pairwise

        row = pairwise.length_bias(sample["decisions"], confidence_level=level, **options).iloc[0]
        return row["ci_low"], row["ci_high"]

    return run


def self_design(name, description, *, own, gold):
    """n decisions where the judge's own output is one of the two: own picked with probability ``own``,
    gold favouring it with ``gold`` (independent); the truth is own - gold."""

    def draw(rng, n):
        own_slot = np.where(rng.random(n) < 0.5, "1", "2")
        other = np.where(own_slot == "1", "2", "1")
        picks = np.where(rng.random(n) < own, own_slot, other)
        labels = np.where(rng.random(n) < gold, own_slot, other)
        d = pd.DataFrame({"judge": "m", "model_1": np.where(own_slot == "1", "m", "o"),
                          "model_2": np.where(own_slot == "2", "m", "o"), "winner": picks, "label": labels})
        return {"decisions": d, "truth": own - gold}

    return Design(name, description, draw)


SELF_BIASED = self_design("self-own-0.7-gold-0.5", "own output picked 70%, gold favours it 50%", own=0.7, gold=0.5)
SELF_NULL = self_design("self-own-0.6-gold-0.6", "no self-preference: own 60%, gold 60%", own=0.6, gold=0.6)


def _self_interval(sample, level):
    from evalkit import pairwise

    row = pairwise.self_preference(sample["decisions"], confidence_level=level).iloc[0]
    return row["ci_low"], row["ci_high"]


def _self_test(sample, alpha):
    from evalkit import pairwise

    return pairwise.self_preference(sample["decisions"]).iloc[0]["p_val"]


# The fast suite checks each default on one demanding design; bench_coverage also runs the "other designs" entries.
ENTRIES += [
    Entry("pairwise.bradley_terry", "interval='sandwich' (default)", "interval", _bt_rating(), (BT_UNEVEN,),
          default=True, sizes=(50, 100, 200, 500), test_sizes=(100,),
          notes="the weakest (least compared) system's centred rating; n = comparisons"),
    Entry("pairwise.bradley_terry", "interval='sandwich' (default), other designs", "interval", _bt_rating(),
          (BT_EVEN,), sizes=(50, 100, 200, 500)),
    Entry("pairwise.bradley_terry", "interval='sandwich', cluster='question_id'", "interval",
          _bt_rating(cluster="question_id"), (BT_CLUSTERED,), sizes=(100, 200, 500)),
    Entry("pairwise.bradley_terry", "interval='sandwich', no cluster, dependent votes", "interval", _bt_rating(),
          (BT_CLUSTERED,), sizes=(100, 200, 500), notes="what ignoring the questions costs"),
    Entry("pairwise.bradley_terry", "interval='bootstrap', n_resamples=200", "interval",
          _bt_rating(interval="bootstrap", n_resamples=200, rng=0), (BT_EVEN, BT_UNEVEN), sizes=(50, 100, 200, 500)),
    Entry("pairwise.bradley_terry", "interval='bootstrap', cluster='question_id', n_resamples=200", "interval",
          _bt_rating(interval="bootstrap", cluster="question_id", n_resamples=200, rng=0), (BT_CLUSTERED,),
          sizes=(100, 200, 500)),
    Entry("pairwise.bradley_terry_effects", "position=True, sandwich (default)", "interval", _bt_position(),
          (POSITION_UNEVEN,), default=True, sizes=(50, 100, 200, 500), test_sizes=(100,)),
    Entry("pairwise.bradley_terry_effects", "position=True, cluster='question_id'", "interval",
          _bt_position(cluster="question_id"), (POSITION_CLUSTERED,), sizes=(100, 200, 500)),
    Entry("pairwise.rank_sets", "method='ppr', sets='bonferroni' (default), simultaneous", "interval", _rank_sets(),
          (RANK_CLOSE,), default=True, notes="n = human votes among 1,000 judged comparisons"),
    Entry("pairwise.rank_sets", "method='ppr', sets='bonferroni' (default), other designs", "interval", _rank_sets(),
          (RANK_APART,)),
    Entry("pairwise.rank_sets", "sets='ellipsoid' (the paper's), simultaneous", "interval", _rank_sets(sets="ellipsoid"),
          (RANK_CLOSE, RANK_APART)),
    Entry("pairwise.rank_sets", "method='human', simultaneous", "interval", _rank_sets(method="human"),
          (RANK_CLOSE, RANK_APART)),
    Entry("pairwise.first_slot_preference", "paired interval for the rate (default)", "interval", _first_slot_interval,
          (FLIPS_BIASED,), default=True, notes="n = instances (2n decisions)"),
    Entry("pairwise.first_slot_preference", "paired interval for the rate (default), other designs", "interval",
          _first_slot_interval, (FLIPS_RARE, FLIPS_NULL)),
    Entry("pairwise.first_slot_preference", "exact sign test on flips (default)", "test", _first_slot_test,
          (FLIPS_NULL,), default=True),
    Entry("pairwise.first_slot_preference", "exact sign test on flips (default), other designs", "test",
          _first_slot_test, (FLIPS_NULL_RARE,)),
    Entry("pairwise.position_consistency", "Wilson interval for the rate (default)", "interval", _consistency_interval,
          (_with_consistency_truth(FLIPS_BIASED),), default=True),
    Entry("pairwise.position_consistency", "Wilson interval for the rate (default), other designs", "interval",
          _consistency_interval, (_with_consistency_truth(FLIPS_RARE),)),
    Entry("pairwise.position_consistency", "exact sign test on flips (default)", "test", _consistency_test,
          (FLIPS_NULL,), default=True),
    Entry("pairwise.position_consistency", "exact sign test on flips (default), other designs", "test",
          _consistency_test, (FLIPS_NULL_RARE,)),
    Entry("pairwise.length_bias", "cluster='case_id' (default)", "interval", _length_bias(), (LENGTH_SHARED,),
          default=True, sizes=(50, 100, 200, 500), notes="n = instances (2n decisions)", requires=("statsmodels", "stats")),
    Entry("pairwise.length_bias", "cluster='case_id' (default), other designs", "interval", _length_bias(),
          (LENGTH_INDEPENDENT,), sizes=(50, 100, 200, 500), requires=("statsmodels", "stats")),
    Entry("pairwise.length_bias", "cluster=None (decisions as independent)", "interval", _length_bias(cluster=None),
          (LENGTH_SHARED, LENGTH_INDEPENDENT), sizes=(50, 100, 200, 500), requires=("statsmodels", "stats")),
    Entry("pairwise.self_preference", "Wald interval for the difference (default)", "interval", _self_interval,
          (SELF_BIASED,), default=True),
    Entry("pairwise.self_preference", "Wald interval for the difference (default), other designs", "interval",
          _self_interval, (SELF_NULL,)),
    Entry("pairwise.self_preference", "exact McNemar test (default)", "test", _self_test, (SELF_NULL,), default=True),
]


# ------------------------------------------------------------------------- widgets.Labeller: the live interval
# An annotator watching the Labeller's live interval (watch=) stops the first time its line says "settled"
# (half-width <= 0.1; at the latest after n cases); the interval is the one on screen then. The widget is driven
# for real (its labels file in memory), so these are measured by bench_coverage only; the fast check is
# tests/test_widgets.py::test_stopping_when_the_labeller_says_settled_keeps_its_level. The comparisons read a
# fixed-n interval after every label and stop by the same rule, or stop as soon as the lower end clears a bar
# that equals the truth (an annotator who stops when the number looks as good as hoped).
def _labelling_folder():
    import tempfile

    return tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None)


def _labeller(watch="pass_rate", rule="settled", half=0.1):
    def run(sample, level):
        from evalkit.widgets import Labeller

        human = sample["human"]
        ids = [f"c{i}" for i in range(len(human))]
        cases = pd.DataFrame({"case_id": ids, "input": "q", "output": "a"})
        judge = None if "judge" not in sample else pd.Series(np.where(sample["judge"] > 0, "PASS", "FAIL"), index=ids)
        with _labelling_folder() as folder:
            lab = Labeller(cases, Path(folder) / "sim.jsonl", labeller="sim", judge=judge, watch=watch, blind=False,
                           stop_half_width=half if rule == "settled" else None, confidence_level=level, order="random")
            for y in human:
                lab.label("PASS" if y > 0 else "FAIL")
                row = lab.sequence().iloc[-1] if rule == "bar" else None
                if (rule == "settled" and lab.settled_at is not None) or (rule == "bar" and row["cs_low"] > sample["truth"]):
                    break
            row = lab.sequence().iloc[-1]
            lab.close()
        return row["cs_low"], row["cs_high"]

    return run


def _fixed_n_peeked(method="beta", rule="settled", half=0.1, first=1):
    """statsmodels' fixed-n interval for a rate (Clopper-Pearson "beta", normal "normal"), read after every label."""

    def run(sample, level):
        from statsmodels.stats.proportion import proportion_confint

        x = np.asarray(sample["human"], dtype=float)
        t = np.arange(1, len(x) + 1)
        low, high = (np.nan_to_num(v, nan=fill) for v, fill in
                     zip(proportion_confint(np.cumsum(x), t, alpha=1 - level, method=method), (0.0, 1.0), strict=True))
        stop = ((high - low) / 2 <= half) if rule == "settled" else (low > sample["truth"])
        stop = np.flatnonzero(stop & (t >= first))
        i = stop[0] if len(stop) else len(x) - 1
        return low[i], high[i]

    return run


def agreement_stream_design(rate: float = 0.85, pass_rate: float = 0.8) -> Design:
    """Human PASS/FAIL labels in a random order (pass rate ``pass_rate``) and a judge agreeing with each at ``rate``;
    the truth is the agreement rate."""

    def draw(rng, n):
        human = (rng.random(n) < pass_rate).astype(float)
        agree = rng.random(n) < rate
        return {"human": human, "judge": np.where(agree, human, 1 - human), "truth": rate}

    return Design(f"agreement-stream(rate={rate})", f"PASS/FAIL labels and a judge agreeing with them at {rate}, stopped "
                  "when settled (or at n)", draw)


LABELLER_SIZES = (100, 200, 400)
ENTRIES += [
    Entry("widgets.Labeller", "watch='pass_rate', stop_half_width=0.1: the interval when it says settled (default)",
          "interval", _labeller(), (stream_design(0.9), stream_design(0.7)), default=True, sizes=LABELLER_SIZES,
          test_sizes=(), notes="drives the widget: bench_coverage only; fast check in tests/test_widgets.py"),
    Entry("widgets.Labeller", "watch='agreement', stop_half_width=0.1", "interval", _labeller("agreement"),
          (agreement_stream_design(),), sizes=LABELLER_SIZES, test_sizes=()),
    Entry("widgets.Labeller", "watch='pass_rate', stopped when the lower end clears the truth (or at n)", "interval",
          _labeller(rule="bar"), (stream_design(0.9), stream_design(0.7)), sizes=LABELLER_SIZES, test_sizes=()),
    Entry("widgets.Labeller", "comparison: fixed-n Clopper-Pearson read after every label, stopped when settled",
          "interval", _fixed_n_peeked(), (stream_design(0.9), stream_design(0.7)), sizes=LABELLER_SIZES),
    Entry("widgets.Labeller", "comparison: fixed-n normal interval from 30 labels, stopped when settled", "interval",
          _fixed_n_peeked("normal", first=30), (stream_design(0.9), stream_design(0.7)), sizes=LABELLER_SIZES),
    Entry("widgets.Labeller", "comparison: fixed-n Clopper-Pearson, stopped when the lower end clears the truth",
          "interval", _fixed_n_peeked(rule="bar"), (stream_design(0.9), stream_design(0.7)), sizes=LABELLER_SIZES),
]


# ===================================================================================================
# correlation, agreement, FD* length bias and retrieval: the intervals and tests outside the inference lane
# ===================================================================================================
# Real data sets are resampled with replacement (n independent draws from the set's empirical distribution),
# so the truth is exactly the coefficient computed on the whole set; synthetic designs draw from a fixed
# finite population of 20,000 (or an infinite process), seeded so that their truth is fixed too.
def _slow(design: Design) -> Design:
    """The same design, checked with the slow tests only (the fast suite keeps one cheap design per entry)."""
    return dataclasses.replace(design, slow=True)


def _coefficient(x, y, method: str) -> float:
    from scipy import stats

    func = {"spearman": stats.spearmanr, "kendall": stats.kendalltau, "pearson": stats.pearsonr}[method]
    return float(func(x, y).statistic)


def _population_rng(name: str) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(name.encode()))


@functools.cache
def _summeval_table() -> pd.DataFrame:
    return load_shared("load_summeval", str(SHARED_DATA / "summeval"))


@functools.cache
def _tcva_release(dataset: str) -> pd.DataFrame:
    """The release's rated, error-free items: human, TCVA at T = 0.9 (as stored) and the RAGAS / DeepEval scores."""
    _, items = load_shared("load_tcva_release", str(SHARED_DATA / "tcva" / "results" / f"{dataset}_tcva_scores.json"))
    items = items[items["error"].isna()]
    out = pd.DataFrame({"human": items["human"], "tcva": items["stored_T0.9"]})
    for name in ("ragas", "deepeval"):
        out[name] = load_shared("load_tcva_baseline", str(SHARED_DATA / "tcva" / "results" / f"{dataset}_{name}_scores.json"))
    return out.dropna().astype(float)


@functools.cache
def _usr() -> tuple[pd.DataFrame, pd.DataFrame]:
    return load_shared("load_usr", str(SHARED_DATA / "usr"))


@functools.cache
def _synthetic_scores() -> pd.DataFrame:
    """20,000 items: 1-5 human ratings piled at the top, a bounded score with ties at 0 and 1, a skewed score."""
    from scipy import stats

    rng = _population_rng("synthetic scores")
    n = 20_000
    quality = rng.normal(size=n)
    human = np.digitize(quality + 0.7 * rng.normal(size=n), [-2.6, -2.1, -1.5, -0.55]) + 1.0  # P(5) ~ 0.7
    bounded = np.clip(np.round(stats.norm.cdf(0.9 * quality + 0.8 * rng.normal(size=n) + 0.6) * 1.25 - 0.1, 1), 0, 1)
    skewed = np.exp(0.5 * quality + 0.6 * rng.normal(size=n))
    other = np.clip(np.round(stats.norm.cdf(0.9 * quality + 0.8 * rng.normal(size=n) + 0.6) * 1.25 - 0.1, 1), 0, 1)
    return pd.DataFrame({"human": human, "bounded": bounded, "skewed": skewed, "other": other})


@functools.cache
def _synthetic_clustered() -> pd.DataFrame:
    """3,000 clusters of 6 items (like the 5-6 responses to one USR dialogue): a shared cluster effect."""
    rng = _population_rng("synthetic clustered")
    clusters, size = 3_000, 6
    effect = np.repeat(rng.normal(size=clusters), size)
    human = np.digitize(0.9 * effect + 0.5 * rng.normal(size=clusters * size), [-1.6, -0.9, -0.2, 0.6]) + 1.0
    score = 0.9 * effect + 0.7 * rng.normal(size=clusters * size)
    return pd.DataFrame({"cluster": np.repeat(np.arange(clusters), size), "human": human, "score": score})


def _pairs_design(name, description, population, x: str, y: str, method: str, *, null=False, data=None) -> Design:
    """Pairs (x, y) drawn from a table; ``null``: x and y drawn independently (true correlation 0)."""

    @functools.cache
    def truth():
        table = population()
        return _coefficient(table[x].to_numpy(float), table[y].to_numpy(float), method)

    def draw(rng, n):
        table = population()
        xs, ys = table[x].to_numpy(float), table[y].to_numpy(float)
        i = rng.integers(0, len(table), n)
        j = rng.integers(0, len(table), n) if null else i
        return {"x": xs[i], "y": ys[j], "truth": 0.0 if null else truth()}

    suffix = " (independent draws of each: no correlation)" if null else ""
    return Design(f"{name}{'-null' if null else ''}-{method}", description + suffix, draw, data=data)


def _clustered_design(method: str) -> Design:
    @functools.cache
    def truth():
        t = _synthetic_clustered()
        return _coefficient(t["score"].to_numpy(), t["human"].to_numpy(), method)

    def draw(rng, n):
        t = _synthetic_clustered()
        picked = rng.integers(0, t["cluster"].iat[-1] + 1, -(-n // 6))
        rows = (picked[:, None] * 6 + np.arange(6)).ravel()[:n]
        return {"x": t["score"].to_numpy()[rows], "y": t["human"].to_numpy()[rows], "cluster": t["cluster"].to_numpy()[rows],
                "truth": truth()}

    return Design(f"clustered-6-{method}", "whole clusters of 6 items sharing a cluster effect (dialogues, documents)",
                  draw)


def _correlation_designs(method: str, *, null: bool = False) -> tuple[Design, ...]:
    summeval = lambda: _summeval_table()  # noqa: E731
    designs = [
        _pairs_design("summeval-consistency", "SummEval: CTC consistency score vs the experts' consistency (piled at 5)",
                      summeval, "CTC_D_CNNDM_Consistency", "consistency", method, null=null, data="summeval"),
        _pairs_design("summeval-relevance", "SummEval: BERTScore vs the experts' relevance", summeval, "bert_score_f",
                      "relevance", method, null=null, data="summeval"),
        _pairs_design("tcva-usr", "TCVA release, USR: TCVA T=0.9 (ties at 0 and 1) vs Maintains Context",
                      lambda: _tcva_release("usr"), "tcva", "human", method, null=null, data="tcva"),
        _pairs_design("synthetic-bounded", "bounded score tied at 0 and 1 vs 1-5 ratings piled at the top",
                      _synthetic_scores, "bounded", "human", method, null=null),
        _slow(_pairs_design("synthetic-skewed", "log-normal score vs 1-5 ratings piled at the top", _synthetic_scores,
                            "skewed", "human", method, null=null)),
    ]
    return tuple(designs)


def _correlate(sample, level, *, method="spearman", clustered=False, **options):
    from evalkit import correlate

    index = [f"i{k}" for k in range(len(sample["x"]))]
    if clustered:
        options["cluster"] = pd.Series(sample["cluster"], index=index)
    row = correlate.correlate(pd.Series(sample["x"], index=index, name="score"), pd.Series(sample["y"], index=index),
                              method=method, confidence_level=level, **options).iloc[0]
    return row["ci_low"], row["ci_high"]


@functools.cache
def _usr_dialogues() -> pd.DataFrame:
    """The TCVA release's 198 USR responses with TCVA T=0.9, the Maintains Context mean and their dialogue."""
    _, items = _usr()
    table = _tcva_release("usr")
    return table.assign(cluster=items["context_id"].reindex(table.index).to_numpy()).dropna()


def _usr_dialogue_design(method: str) -> Design:
    """Whole dialogues drawn with replacement until n responses: the responses to one context stay together."""

    @functools.cache
    def truth():
        t = _usr_dialogues()
        return _coefficient(t["tcva"].to_numpy(), t["human"].to_numpy(), method)

    def draw(rng, n):
        t = _usr_dialogues()
        groups = [g.index for _, g in t.groupby("cluster", sort=True)]
        rows = []
        while sum(map(len, rows)) < n:
            rows.append(groups[rng.integers(0, len(groups))])
        picked = t.loc[np.concatenate(rows)]
        labels = np.concatenate([[i] * len(r) for i, r in enumerate(rows)])
        return {"x": picked["tcva"].to_numpy(), "y": picked["human"].to_numpy(), "cluster": labels, "truth": truth()}

    return Design(f"tcva-usr-dialogues-{method}", "TCVA release, USR: whole dialogues (their 1-6 scored responses) drawn "
                  "until n responses", draw, data=("tcva", "usr"))


def _correlate_p(sample, alpha, *, method="spearman"):
    from evalkit import correlate

    index = [f"i{k}" for k in range(len(sample["x"]))]
    row = correlate.correlate(pd.Series(sample["x"], index=index, name="score"), pd.Series(sample["y"], index=index),
                              method=method, n_resamples=0).iloc[0]
    return row["p_val"]


# ---- summary and system level: n is the number of groups (documents, systems)
def _draw_documents(rng, n, docs, *, null: bool, truth):
    """n documents drawn with replacement, their items stacked with the document as ``by`` (shuffled within it if null)."""
    xs, ys, by = [], [], []
    for k, d in enumerate(rng.integers(0, len(docs), n)):
        x, y = docs[d]
        if null:
            y = y[rng.permutation(len(y))]
        xs.append(x), ys.append(y), by.append(np.full(len(x), k))
    return {"x": np.concatenate(xs), "y": np.concatenate(ys), "by": np.concatenate(by), "truth": 0.0 if null else truth()}


def _summary_design(method: str, *, null: bool = False) -> Design:
    """SummEval by source document: n documents drawn from the 100, each with its 16 system summaries."""

    @functools.cache
    def groups():
        t = _summeval_table()
        return [(g["CTC_D_CNNDM_Consistency"].to_numpy(), g["consistency"].to_numpy()) for _, g in t.groupby("doc_id", sort=True)]

    @functools.cache
    def truth():
        values = [_coefficient(x, y, method) for x, y in groups() if np.ptp(x) > 0 and np.ptp(y) > 0]
        return float(np.mean(values))

    def draw(rng, n):
        return _draw_documents(rng, n, groups(), null=null, truth=truth)

    return Design(f"summeval-by-document{'-null' if null else ''}-{method}",
                  "SummEval: n source documents with their 16 summaries, CTC consistency vs experts"
                  + (" (shuffled within document)" if null else ""), draw, data="summeval")


@functools.cache
def _synthetic_groups() -> list:
    """5,000 documents of 4-12 items whose within-document correlation varies (mean about 0.35)."""
    rng = _population_rng("synthetic groups")
    out = []
    for _ in range(5_000):
        m = int(rng.integers(4, 13))
        rho = float(np.clip(rng.normal(0.35, 0.25), -0.9, 0.95))
        z = rng.normal(size=m)
        h = np.digitize(rho * z + np.sqrt(1 - rho**2) * rng.normal(size=m), [-1.5, -0.7, 0.0, 0.8]) + 1.0
        out.append((np.round(z, 1), h))
    return out


def _synthetic_summary_design(method: str, *, null: bool = False) -> Design:
    @functools.cache
    def truth():
        values = [_coefficient(x, y, method) for x, y in _synthetic_groups() if np.ptp(x) > 0 and np.ptp(y) > 0]
        return float(np.mean(values))

    def draw(rng, n):
        return _draw_documents(rng, n, _synthetic_groups(), null=null, truth=truth)

    return Design(f"synthetic-documents{'-null' if null else ''}-{method}",
                  "documents of 4-12 items, within-document correlation varying around 0.35, 1-5 ratings"
                  + (" (shuffled within document)" if null else ""), draw)


@functools.cache
def _synthetic_systems() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """5,000 systems with 30 items each: per-item metric and human scores; truth on the per-system means."""
    rng = _population_rng("synthetic systems")
    systems, m = 5_000, 30
    quality, bias = rng.normal(size=systems), rng.normal(size=systems)
    metric = (0.8 * quality + 0.6 * bias)[:, None] + rng.normal(size=(systems, m))
    human = np.clip(np.round(3.5 + 0.5 * quality[:, None] + rng.normal(size=(systems, m))), 1, 5)
    return metric, human, np.arange(systems)


def _system_design(method: str, *, null: bool = False) -> Design:
    @functools.cache
    def truth():
        metric, human, _ = _synthetic_systems()
        return _coefficient(metric.mean(axis=1), human.mean(axis=1), method)

    def draw(rng, n):
        metric, human, _ = _synthetic_systems()
        i = rng.integers(0, len(metric), n)
        j = rng.integers(0, len(metric), n) if null else i
        m = metric.shape[1]
        return {"x": metric[i].ravel(), "y": human[j].ravel(), "by": np.repeat(np.arange(n), m), "truth": 0.0 if null else truth()}

    return Design(f"synthetic-systems{'-null' if null else ''}-{method}",
                  "n systems drawn from 5,000, 30 items each (1-5 human ratings), a system-specific metric bias"
                  + (" (metric and human from different systems)" if null else ""), draw)


def _grouped(sample, level, *, kind, method="spearman", p_value=False, **options):
    from evalkit import correlate

    index = [f"i{k}" for k in range(len(sample["x"]))]
    row = correlate.correlate(pd.Series(sample["x"], index=index, name="score"), pd.Series(sample["y"], index=index),
                              method=method, level=kind, by=pd.Series(sample["by"], index=index),
                              n_resamples=0 if p_value else 1000, **({} if p_value else {"confidence_level": level}),
                              **options).iloc[0]
    return row["p_val"] if p_value else (row["ci_low"], row["ci_high"])


# ---- two metrics against the same humans
def _triple_design(name, description, population, a: str, b: str, h: str, *, null: bool, data=None) -> Design:
    """(a, b, h) drawn from a table. ``null``: a and b swapped at random per item, so both correlate equally with h.

    Both scores are first turned into percentile ranks over the table (Spearman's coefficients do not change),
    so that swapping mixes values on one scale.
    """

    @functools.cache
    def ranked():
        t = population()
        return (t[a].rank(pct=True).to_numpy(), t[b].rank(pct=True).to_numpy(), t[h].to_numpy(float))

    @functools.cache
    def truth():
        x, y, z = ranked()
        return _coefficient(x, z, "spearman") - _coefficient(y, z, "spearman")

    def draw(rng, n):
        x, y, z = ranked()
        i = rng.integers(0, len(z), n)
        xa, xb = x[i], y[i]
        if null:
            swap = rng.random(n) < 0.5
            xa, xb = np.where(swap, xb, xa), np.where(swap, xa, xb)
        return {"a": xa, "b": xb, "h": z[i], "truth": 0.0 if null else truth()}

    return Design(f"{name}{'-null' if null else ''}", description + (" (a and b swapped at random per item: equal "
                  "correlations)" if null else ""), draw, data=data)


@functools.cache
def _gaussian_triple() -> pd.DataFrame:
    rng = _population_rng("gaussian triple")
    n = 20_000
    cov = np.array([[1.0, 0.6, 0.45], [0.6, 1.0, 0.45], [0.45, 0.45, 1.0]])
    x = rng.multivariate_normal(np.zeros(3), cov, size=n)
    return pd.DataFrame({"a": x[:, 0], "b": x[:, 1], "h": x[:, 2]})


def _two_metric_designs(*, null: bool) -> tuple[Design, ...]:
    return (
        _triple_design("tcva-usr-vs-ragas", "TCVA release, USR: TCVA T=0.9 vs RAGAS against Maintains Context",
                       lambda: _tcva_release("usr"), "tcva", "ragas", "human", null=null, data="tcva"),
        _triple_design("tcva-summeval-vs-ragas", "TCVA release, SummEval: TCVA T=0.9 vs RAGAS against consistency",
                       lambda: _tcva_release("summeval"), "tcva", "ragas", "human", null=null, data="tcva"),
        _triple_design("summeval-ctc-vs-bartscore", "SummEval: CTC consistency vs BARTScore against the experts' consistency",
                       _summeval_table, "CTC_D_CNNDM_Consistency", "bart_score_cnn_src_hypo", "consistency", null=null,
                       data="summeval"),
        _triple_design("synthetic-bounded-pair", "two bounded scores tied at 0 and 1 against 1-5 ratings piled at the top",
                       _synthetic_scores, "bounded", "other", "human", null=null),
        _triple_design("gaussian-pair", "trivariate normal: r(a, h) = r(b, h) = 0.45, r(a, b) = 0.6", _gaussian_triple,
                       "a", "b", "h", null=null),
    )


def _compare(sample, level, *, test="williams", kind="interval", method="spearman"):
    from evalkit import correlate

    index = [f"i{k}" for k in range(len(sample["h"]))]
    row = correlate.compare_metrics(pd.Series(sample["a"], index=index), pd.Series(sample["b"], index=index),
                                    pd.Series(sample["h"], index=index), method=method, test=test,
                                    **({"confidence_level": level} if kind == "interval" else {})).iloc[0]
    return (row["ci_low"], row["ci_high"]) if kind == "interval" else row["p_val"]


def _paper(sample, alpha):
    from evalkit import correlate

    index = [f"i{k}" for k in range(len(sample["h"]))]
    return correlate.paired_bootstrap_tcva_paper(pd.Series(sample["a"], index=index), pd.Series(sample["b"], index=index),
                                                 pd.Series(sample["h"], index=index)).iloc[0]["p_val"]


ENTRIES += [
    Entry("correlate.correlate", "spearman, dataset level, percentile bootstrap (default)", "interval", _correlate,
          _correlation_designs("spearman"), default=True),
    Entry("correlate.correlate", "kendall, dataset level, percentile bootstrap", "interval",
          functools.partial(_correlate, method="kendall"), _correlation_designs("kendall"), slow=True),
    Entry("correlate.correlate", "pearson, dataset level, percentile bootstrap", "interval",
          functools.partial(_correlate, method="pearson"), _correlation_designs("pearson")),
    Entry("correlate.correlate", "spearman, dataset level, BCa bootstrap", "interval",
          functools.partial(_correlate, ci_method="BCa"), _correlation_designs("spearman")),
    Entry("correlate.correlate", "spearman, dataset level, percentile bootstrap over items, clustered items", "interval",
          _correlate, (_clustered_design("spearman"), _usr_dialogue_design("spearman"))),
    Entry("correlate.correlate", "spearman, dataset level, percentile bootstrap over clusters (cluster=)", "interval",
          functools.partial(_correlate, clustered=True), (_clustered_design("spearman"), _usr_dialogue_design("spearman"))),
    Entry("correlate.correlate", "spearman p-value, dataset level (default)", "test", _correlate_p,
          _correlation_designs("spearman", null=True), default=True),
    Entry("correlate.correlate", "kendall p-value, dataset level", "test", functools.partial(_correlate_p, method="kendall"),
          _correlation_designs("kendall", null=True)),
    Entry("correlate.correlate", "pearson p-value, dataset level", "test", functools.partial(_correlate_p, method="pearson"),
          _correlation_designs("pearson", null=True)),
    Entry("correlate.correlate", "spearman, summary level, t interval over documents (ci_method='auto')", "interval",
          functools.partial(_grouped, kind="summary"), (_summary_design("spearman"), _synthetic_summary_design("spearman"))),
    Entry("correlate.correlate", "spearman, summary level, percentile bootstrap over documents", "interval",
          functools.partial(_grouped, kind="summary", ci_method="percentile"),
          (_summary_design("spearman"), _synthetic_summary_design("spearman"))),
    Entry("correlate.correlate", "spearman p-value, summary level (t-test over documents)", "test",
          lambda s, a: _grouped(s, a, kind="summary", p_value=True),
          (_summary_design("spearman", null=True), _synthetic_summary_design("spearman", null=True))),
    Entry("correlate.correlate", "spearman, system level, percentile bootstrap over systems", "interval",
          functools.partial(_grouped, kind="system"), (_system_design("spearman"),)),
    Entry("correlate.correlate", "spearman p-value, system level", "test", lambda s, a: _grouped(s, a, kind="system", p_value=True),
          (_system_design("spearman", null=True),)),
    Entry("correlate.compare_metrics", "Williams test (default)", "test", functools.partial(_compare, kind="test"),
          _two_metric_designs(null=True), default=True),
    Entry("correlate.compare_metrics", "Zou interval for the difference (default)", "interval", _compare,
          _two_metric_designs(null=False) + _two_metric_designs(null=True), default=True),
    Entry("correlate.compare_metrics", "paired bootstrap test", "test", functools.partial(_compare, test="bootstrap", kind="test"),
          _two_metric_designs(null=True), slow=True),
    Entry("correlate.compare_metrics", "paired bootstrap percentile interval", "interval",
          functools.partial(_compare, test="bootstrap"), _two_metric_designs(null=False), slow=True),
    Entry("correlate.paired_bootstrap_tcva_paper", "the TCVA paper's p-value, reproduced as published (default)", "test",
          _paper, _two_metric_designs(null=True), default=True, slow=True,
          invalid="a one-sided tail measured from minus the observed difference, not a test of a zero difference"),
]


# ---- agreement among annotators: n is the number of items
def _long(wide: np.ndarray, annotators) -> pd.DataFrame:
    """items x annotators (NaN = not rated) -> the long ratings table; item ids are row positions."""
    item, who = np.nonzero(~np.isnan(wide))
    return pd.DataFrame({"item_id": item, "annotator": np.asarray(annotators, dtype=object)[who], "rating": wide[item, who]})


@functools.cache
def _usr_wide(dimension: str) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    ratings, _ = _usr()
    wide = ratings[ratings["dimension"] == dimension].pivot(index="item_id", columns="annotator", values="rating")
    return wide.to_numpy(float), wide.columns.to_numpy(), wide.index


@functools.cache
def _usr_block(dimension: str) -> tuple[np.ndarray, np.ndarray]:
    """The 100 PersonaChat responses rated by the same three annotators (maxine, mckenna, shikib): a complete matrix."""
    wide, names, _ = _usr_wide(dimension)
    keep = [list(names).index(a) for a in ("maxine", "mckenna", "shikib")]
    block = wide[:, keep]
    return block[~np.isnan(block).any(axis=1)], names[keep]


def _ordinal_raters(name: str, n: int, k: int, *, noise=0.8, bias=(0.0, 0.25, -0.2, 0.1, 0.3), cuts=(-2.4, -1.8, -1.1, -0.25)):
    """n items x k raters: a latent quality seen through each rater's noise and bias, cut into 1-5 piled at the top."""
    rng = _population_rng(name)
    quality = rng.normal(size=n)
    return np.digitize(quality[:, None] + np.asarray(bias[:k]) + noise * rng.normal(size=(n, k)), cuts) + 1.0


def _categorical_raters(rng, n: int, k: int, priors, noise: float, gold=None) -> np.ndarray:
    """The alt-test authors' annotator model: the gold label, or with probability ``noise`` a draw from the priors."""
    priors = np.asarray(priors, dtype=float)
    if gold is None:
        gold = rng.choice(len(priors), size=n, p=priors)
    out = np.where(rng.random((n, k)) < noise, rng.choice(len(priors), size=(n, k), p=priors), gold[:, None])
    return out.astype(float)


SKEWED_PRIORS = (0.55, 0.25, 0.15, 0.05)


@functools.cache
def _categorical_population(k: int = 3, noise: float = 0.3) -> np.ndarray:
    return _categorical_raters(_population_rng(f"categorical {k} {noise}"), 20_000, k, SKEWED_PRIORS, noise)


@functools.cache
def _with_missing() -> np.ndarray:
    """20,000 items, 5 annotators on the 1-5 scale, each item rated by 2 to 4 of them at random."""
    wide = _ordinal_raters("with missing", 20_000, 5)
    rng = _population_rng("missing pattern")
    keep = np.argsort(rng.random(wide.shape), axis=1) < rng.integers(2, 5, len(wide))[:, None]
    return np.where(keep, wide, np.nan)


def _alpha_truth(wide: np.ndarray, level: str) -> float:
    """Krippendorff's alpha of the population the items are drawn from: ``1 - n D_o / D_e`` (the n -> infinity limit)."""
    from evalkit import agreement

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = _long(wide, [f"r{j}" for j in range(wide.shape[1])])
        alpha = agreement.krippendorff_alpha(table, level=level, n_resamples=0)["alpha"].iloc[0]
    counts = (~np.isnan(wide)).sum(axis=1)
    pairable = counts[counts >= 2].sum()
    return float(1 - (1 - alpha) * pairable / (pairable - 1))


def _rows_design(name, description, population, truth, *, data=None, permute=None) -> Design:
    """Items (rows of an items x annotators matrix) drawn with replacement. ``permute="columns"``: each annotator's
    column shuffled on its own (no item effect); ``"pooled"``: all ratings shuffled together (raters exchangeable,
    agreement by chance only)."""

    def draw(rng, n):
        wide, names = population()
        rows = wide[rng.integers(0, len(wide), n)]
        if permute == "columns":
            rows = np.column_stack([rows[rng.permutation(n), j] for j in range(rows.shape[1])])
        elif permute == "pooled":
            rows = rng.permutation(rows.ravel()).reshape(rows.shape)
        return {"ratings": _long(rows, names), "truth": 0.0 if permute else truth()}

    return Design(name, description, draw, data=data)


def _alpha_designs(level: str) -> tuple[Design, ...]:
    designs = []
    for dimension in ("Maintains Context", "Overall", "Understandable"):
        pop = functools.partial(lambda d: _usr_wide(d)[:2], dimension)
        designs.append(_rows_design(f"usr-{dimension.lower().replace(' ', '-')}-{level}",
                                    f"USR: {dimension}, 3 of 9 annotators per response", pop,
                                    functools.cache(functools.partial(lambda p: _alpha_truth(p()[0], level), pop)), data="usr"))
    synthetic = {
        "ordinal-3-raters": (lambda: (_ordinal_raters("alpha ordinal", 20_000, 3), ["a", "b", "c"]),
                             "3 raters, 1-5 ratings piled at the top"),
        "missing-2-to-4-of-5": (lambda: (_with_missing(), list("abcde")), "5 raters on 1-5, each item rated by 2 to 4"),
    }
    if level == "nominal":
        synthetic["categorical-skewed"] = (lambda: (_categorical_population(), ["a", "b", "c"]),
                                           "3 raters, 4 categories (priors 0.55/0.25/0.15/0.05), the alt-test authors' noise 0.3")
    for key, (pop, text) in synthetic.items():
        pop = functools.cache(pop)
        design = _rows_design(f"{key}-{level}", text, pop,
                              functools.cache(functools.partial(lambda p: _alpha_truth(p()[0], level), pop)))
        designs.append(design if key == "ordinal-3-raters" else _slow(design))
    return tuple(designs)


def _alpha(sample, level, *, measure="nominal", **options):
    from evalkit import agreement

    row = agreement.krippendorff_alpha(sample["ratings"], level=measure, confidence_level=level, **options).iloc[0]
    return row["ci_low"], row["ci_high"]


# ICC: the n -> infinity limits of the six estimators for items drawn from a population rated by fixed raters.
def _icc_truth(wide: np.ndarray) -> dict:
    n, k = wide.shape
    rows, cols, grand = wide.mean(axis=1), wide.mean(axis=0), wide.mean()
    b = k * rows.var()
    w = ((wide - rows[:, None]) ** 2).sum(axis=1).mean() / (k - 1)
    e = ((wide - rows[:, None] - cols[None, :] + grand) ** 2).sum(axis=1).mean() / (k - 1)
    j = ((cols - grand) ** 2).sum() / (k - 1)
    return {"ICC1": (b - w) / (b + (k - 1) * w), "ICC2": (b - e) / (b + (k - 1) * e + k * j), "ICC3": (b - e) / (b + (k - 1) * e),
            "ICC1k": (b - w) / b, "ICC2k": (b - e) / (b + j), "ICC3k": (b - e) / b}


@functools.cache
def _normal_raters() -> np.ndarray:
    rng = _population_rng("normal raters")
    return rng.normal(size=(20_000, 1)) + np.array([0.0, 0.5, -0.3]) + rng.normal(scale=0.9, size=(20_000, 3))


@functools.cache
def _normal_raters_null() -> np.ndarray:
    rng = _population_rng("normal raters null")
    return np.array([0.0, 0.5, -0.3]) + rng.normal(size=(20_000, 3))


def _icc_designs(form: str, *, null: bool = False) -> tuple[Design, ...]:
    pops = {
        "usr-overall-complete": (lambda: _usr_block("Overall"), "USR: the 100 PersonaChat responses rated by the same 3 "
                                 "annotators, Overall (1-5)", "usr"),
        "usr-context-complete": (lambda: _usr_block("Maintains Context"), "USR: the same 100 responses, Maintains "
                                 "Context (1-3)", "usr"),
        "normal-3-raters": ((lambda: (_normal_raters(), ["a", "b", "c"])) if not null else
                            (lambda: (_normal_raters_null(), ["a", "b", "c"])), "the two-way normal model, 3 raters with "
                            "biases" + (" (no item effect)" if null else ""), None),
        "ordinal-3-raters": (lambda: (_ordinal_raters("icc ordinal", 20_000, 3), ["a", "b", "c"]),
                             "3 raters, 1-5 ratings piled at the top", None),
    }
    designs = []
    for key, (pop, text, data) in pops.items():
        pop = functools.cache(pop)
        permute = "columns" if null and key != "normal-3-raters" else None  # the normal null has no item effect
        design = _rows_design(f"{key}{'-null' if null else ''}", text + (" (columns shuffled: no item effect)" if permute else ""),
                              pop, functools.cache(functools.partial(lambda p: _icc_truth(p()[0])[form], pop)),
                              data=data, permute=permute)
        designs.append(design if key == ("normal-3-raters" if null else "ordinal-3-raters") else _slow(design))
    return tuple(designs)


def _icc(sample, level, *, form="ICC2", p_value=False, **options):
    from evalkit import agreement

    # the p-value (the F test of no item effect) does not depend on the interval: skip the bootstrap for it
    row = agreement.icc(sample["ratings"], **({"ci_method": "F"} if p_value else {"confidence_level": level}), **options).loc[form]
    return row["p_val"] if p_value else (row["ci_low"], row["ci_high"])


def _random_raters_design(form: str) -> Design:
    """Raters drawn at random, as ICC1 and ICC2 assume: items N(0, 1), rater biases N(0, 0.5**2), errors N(0, 0.9**2).

    ICC1 is the one-way model (each item rated by its own 3 raters); ICC2 and ICC3 the two-way model (3 raters
    drawn afresh for every sample, rating every item). The truth is the model's ICC: rater variance counts for
    ICC1 and ICC2, not for ICC3 (consistency).
    """
    items, raters, errors, k = 1.0, 0.25, 0.81, 3
    truth = {"ICC1": items / (items + raters + errors), "ICC2": items / (items + raters + errors),
             "ICC3": items / (items + errors), "ICC1k": items / (items + (raters + errors) / k),
             "ICC2k": items / (items + (raters + errors) / k), "ICC3k": items / (items + errors / k)}[form]
    one_way = form.startswith("ICC1")

    def draw(rng, n):
        bias = rng.normal(scale=0.5, size=(n, k) if one_way else (1, k))
        wide = rng.normal(size=(n, 1)) + bias + rng.normal(scale=0.9, size=(n, k))
        return {"ratings": _long(wide, ["a", "b", "c"]), "truth": truth}

    if one_way:
        return Design("normal-one-way-random", "the one-way random model: each item rated by its own 3 raters (rater SD "
                      "0.5, error SD 0.9)", draw, slow=True)
    return Design("normal-two-way-random", "the two-way random model: 3 raters drawn afresh for every sample (rater SD "
                  "0.5, error SD 0.9)", draw, slow=True)


# Fleiss' kappa: the limit of the estimator is its formula on the population (no small-sample correction).
def _fleiss_truth(wide: np.ndarray) -> float:
    codes = pd.factorize(pd.Series(wide.ravel()))[0].reshape(wide.shape)
    m, k = wide.shape[1], codes.max() + 1
    counts = np.stack([(codes == c).sum(axis=1) for c in range(k)], axis=1)
    agree = (counts * (counts - 1)).sum(axis=1) / (m * (m - 1))
    p = counts.sum(axis=0) / counts.sum()
    return float((agree.mean() - (p**2).sum()) / (1 - (p**2).sum()))


@functools.cache
def _binary_raters() -> np.ndarray:
    return _categorical_raters(_population_rng("binary raters"), 20_000, 3, (0.85, 0.15), 0.3)


def _fleiss_designs(*, null: bool = False) -> tuple[Design, ...]:
    pops = {
        "usr-maintains-context": (lambda: _usr_any3("Maintains Context"), "USR: Maintains Context (1-3), 3 ratings per response", "usr"),
        "usr-understandable": (lambda: _usr_any3("Understandable"), "USR: Understandable (0/1, 80% ones)", "usr"),
        "categorical-skewed": (lambda: (_categorical_population(), ["a", "b", "c"]),
                               "3 raters, 4 categories (priors 0.55/0.25/0.15/0.05), the alt-test authors' noise 0.3", None),
        "binary-skewed": (lambda: (_binary_raters(), ["a", "b", "c"]), "3 raters, PASS/FAIL with 85% PASS, noise 0.3", None),
    }
    designs = []
    for key, (pop, text, data) in pops.items():
        pop = functools.cache(pop)
        design = _rows_design(f"{key}{'-null' if null else ''}", text + (" (all ratings shuffled: chance agreement "
                              "only)" if null else ""), pop, functools.cache(functools.partial(lambda p: _fleiss_truth(p()[0]), pop)),
                              data=data, permute="pooled" if null else None)
        designs.append(_slow(design) if key == "binary-skewed" else design)
    return tuple(designs)


@functools.cache
def _usr_any3(dimension: str) -> tuple[np.ndarray, np.ndarray]:
    """USR responses as 3 ratings each, the annotators' names dropped (Fleiss' kappa lets raters differ by item)."""
    wide, _, _ = _usr_wide(dimension)
    return wide[~np.isnan(wide)].reshape(-1, 3), np.array(["first", "second", "third"])


def _fleiss(sample, level, *, p_value=False, **options):
    from evalkit import agreement

    row = agreement.fleiss_kappa(sample["ratings"], **({"n_resamples": 0} if p_value else {"confidence_level": level}),
                                 **options).iloc[0]
    return row["p_val"] if p_value else (row["ci_low"], row["ci_high"])


# The human ceiling: a score's and an annotator's correlation with the others.
@functools.cache
def _usr_scored() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 198 USR responses the TCVA release scored: Maintains Context ratings (3 of 9 annotators) and TCVA T=0.9."""
    wide, names, index = _usr_wide("Maintains Context")
    scores = _tcva_release("usr")["tcva"]
    keep = index.get_indexer(scores.index)
    return wide[keep[keep >= 0]], names, scores.to_numpy()[keep >= 0]


@functools.cache
def _ceiling_population() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = _population_rng("ceiling")
    quality = rng.normal(size=20_000)
    wide = np.digitize(quality[:, None] + 0.8 * rng.normal(size=(20_000, 3)), (-2.4, -1.8, -1.1, -0.25)) + 1.0
    return wide, np.array(["a", "b", "c"]), quality + 0.6 * rng.normal(size=20_000)


def _ceiling_design(name, description, population, row: str, *, data=None) -> Design:
    @functools.cache
    def truth():
        wide, names, score = population()
        if row == "score":
            return _coefficient(score, np.nanmean(wide, axis=1), "spearman")
        j = list(names).index(row)
        own = ~np.isnan(wide[:, j])
        return _coefficient(wide[own, j], np.nanmean(np.delete(wide[own], j, axis=1), axis=1), "spearman")

    def draw(rng, n):
        wide, names, score = population()
        i = rng.integers(0, len(wide), n)
        return {"ratings": _long(wide[i], names), "score": score[i], "row": row, "truth": truth()}

    return Design(name, description, draw, data=data)


def _ceiling(sample, level):
    from evalkit import agreement

    score = pd.Series(sample["score"], name="score")
    table = agreement.human_ceiling(score, sample["ratings"], confidence_level=level)
    row = table[table["name"] == sample["row"]].iloc[0]
    return row["ci_low"], row["ci_high"]


# The alternative annotator test, on the authors' simulation model: a gold label, annotators and a judge that
# report it or, with probability `noise`, a draw from the priors.
def _alt_gap(noise_h: float, noise_f: float, priors=SKEWED_PRIORS) -> float:
    """E[W_h - W_f] for one left-out annotator with 2 remaining annotators under accuracy scoring (exact sum)."""
    from itertools import product

    priors = np.asarray(priors)
    k = len(priors)

    def channel(noise):
        return (1 - noise) * np.eye(k) + noise * priors[None, :]  # P(label | gold)

    ch, cf = channel(noise_h), channel(noise_f)
    gap = 0.0
    for g, h, f, o1, o2 in product(range(k), repeat=5):
        p = priors[g] * ch[g, h] * cf[g, f] * ch[g, o1] * ch[g, o2]
        score_h, score_f = (h == o1) + (h == o2), (f == o1) + (f == o2)
        gap += p * (float(score_h >= score_f) - float(score_f >= score_h))
    return gap


@functools.cache
def _judge_noise_at(epsilon: float, noise_h: float = 0.3) -> float:
    """The judge's noise that makes it exactly ``epsilon`` worse than an annotator (the alt-test's null boundary)."""
    from scipy import optimize

    return float(optimize.brentq(lambda f: _alt_gap(noise_h, f) - epsilon, noise_h, 1.0, xtol=1e-12))


def _alt_design(name, description, *, epsilon: float, scoring: str = "accuracy") -> Design:
    def draw(rng, n):
        if scoring == "accuracy":
            gold = rng.choice(len(SKEWED_PRIORS), size=n, p=SKEWED_PRIORS)
            wide = _categorical_raters(rng, n, 3, SKEWED_PRIORS, 0.3, gold=gold)
            judge = _categorical_raters(rng, n, 1, SKEWED_PRIORS, _judge_noise_at(epsilon) if epsilon else 0.3, gold=gold)[:, 0]
        else:  # exchangeable: the judge is a fourth rater of the same kind
            quality = rng.normal(size=n)
            both = np.digitize(quality[:, None] + 0.8 * rng.normal(size=(n, 4)), (-2.4, -1.8, -1.1, -0.25)) + 1.0
            wide, judge = both[:, :3], both[:, 3]
        return {"ratings": _long(wide, ["a", "b", "c"]), "judge": judge, "epsilon": epsilon, "scoring": scoring, "truth": 0.0}

    return Design(name, description, draw)


ALT_DESIGNS = (
    _alt_design("authors-model-equal-noise-eps0", "the authors' simulation (4 categories, priors 0.55/0.25/0.15/0.05, "
                "3 annotators, noise 0.3); the judge has the annotators' noise: as good as one, tested at epsilon = 0",
                epsilon=0.0),
    _alt_design("authors-model-boundary-eps0.2", "the authors' simulation; the judge's noise set so that it is exactly "
                "epsilon = 0.2 worse than an annotator (the null's boundary)", epsilon=0.2),
    _alt_design("ordinal-exchangeable-neg-rmse-eps0", "1-5 ratings piled at the top, the judge a fourth rater of the same "
                "kind, neg_rmse, epsilon = 0", epsilon=0.0, scoring="neg_rmse"),
)


def _alt(sample, alpha, *, decision=False):
    from evalkit import agreement

    try:
        res = agreement.alternative_annotator_test(pd.Series(sample["judge"]), sample["ratings"], scoring=sample["scoring"],
                                                   epsilon=sample["epsilon"], fdr_level=alpha)
    except ValueError:  # fewer than min_items (30) items for every annotator: the test declines
        return np.nan
    if not decision:
        return res.annotators["p_val"].iloc[0]
    # passed <=> at least half of the tested annotators have a BY-adjusted p-value <= fdr_level
    adjusted = np.sort(res.annotators["p_adjusted"].dropna().to_numpy())
    return adjusted[int(np.ceil(len(adjusted) / 2)) - 1] if len(adjusted) else np.nan


ENTRIES += [
    Entry("agreement.krippendorff_alpha", "nominal, studentized bootstrap over items (default)", "interval", _alpha,
          _alpha_designs("nominal"), default=True),
    Entry("agreement.krippendorff_alpha", "nominal, percentile bootstrap over items", "interval",
          functools.partial(_alpha, ci_method="percentile"), _alpha_designs("nominal")),
    Entry("agreement.krippendorff_alpha", "nominal, BCa bootstrap over items", "interval",
          functools.partial(_alpha, ci_method="BCa"), _alpha_designs("nominal"), slow=True),
    Entry("agreement.krippendorff_alpha", "ordinal, studentized bootstrap over items", "interval",
          functools.partial(_alpha, measure="ordinal"), _alpha_designs("ordinal")),
    Entry("agreement.krippendorff_alpha", "interval, studentized bootstrap over items", "interval",
          functools.partial(_alpha, measure="interval"), _alpha_designs("interval")),
    # ci_method="auto": the studentized bootstrap over items for ICC1, ICC3 and their k forms ...
    *[Entry("agreement.icc", f"{form}, studentized bootstrap over items (default)", "interval",
            functools.partial(_icc, form=form), tuple(d for d in _icc_designs(form) if d.name == "normal-3-raters")
            + (_random_raters_design(form),), default=True, slow=form != "ICC3") for form in ("ICC1", "ICC3", "ICC1k", "ICC3k")],
    # ... which runs a little short on coarse scales: ICC1 on USR Overall 0.917, 0.935, 0.950 and 0.950 over 1,000,
    # 1,000, 1,000 and 500 draws at 50 items (0.936 pooled); ICC3k on 1-5 ratings piled at the top 0.922-0.934. On
    # coarse ratings (at most 7 values) the rows say so in ci_note; those designs are measured here beside the default.
    *[Entry("agreement.icc", f"{form}, studentized bootstrap over items (default) on coarse ratings (ci_note says so)",
            "interval", functools.partial(_icc, form=form),
            tuple(d for d in _icc_designs(form) if d.name != "normal-3-raters"),
            notes="0.92-0.94 at 50 items on some 1-5 scales; the rows carry a ci_note on coarse ratings")
      for form in ("ICC1", "ICC3", "ICC1k", "ICC3k")],
    # ... and the F interval for ICC2 and ICC2k, which holds on normal ratings and says it does not on coarse ones.
    *[Entry("agreement.icc", f"{form}, F interval (default)", "interval", functools.partial(_icc, form=form),
            tuple(d for d in _icc_designs(form) if d.name in ("normal-3-raters", "usr-overall-complete"))
            + (_random_raters_design(form),), default=True, slow=form != "ICC2") for form in ("ICC2", "ICC2k")],
    *[Entry("agreement.icc", f"{form}, F interval on coarse ratings (ci_note and a warning say so)", "interval",
            functools.partial(_icc, form=form), tuple(d for d in _icc_designs(form) if d.name == "ordinal-3-raters"),
            default=True, slow=True, invalid="F intervals assume normal ratings; no interval measured holds for ICC2 on "
            "a 1-5 scale piled at the top") for form in ("ICC2", "ICC2k")],
    *[Entry("agreement.icc", f"{form}, F interval", "interval", functools.partial(_icc, form=form, ci_method="F"),
            _icc_designs(form) + (_random_raters_design(form),)) for form in ("ICC1", "ICC3", "ICC1k", "ICC3k")],
    *[Entry("agreement.icc", f"{form}, studentized bootstrap over items", "interval",
            functools.partial(_icc, form=form, ci_method="studentized"), _icc_designs(form) + (_random_raters_design(form),))
      for form in ("ICC2", "ICC2k")],
    Entry("agreement.icc", "ICC1 F-test p-value (default)", "test", functools.partial(_icc, form="ICC1", p_value=True),
          _icc_designs("ICC1", null=True), default=True),
    Entry("agreement.icc", "ICC2/ICC3 F-test p-value (default)", "test", functools.partial(_icc, form="ICC3", p_value=True),
          _icc_designs("ICC3", null=True), default=True),
    Entry("agreement.fleiss_kappa", "studentized bootstrap over items (default)", "interval", _fleiss, _fleiss_designs(),
          default=True),
    Entry("agreement.fleiss_kappa", "percentile bootstrap over items", "interval",
          functools.partial(_fleiss, ci_method="percentile"), _fleiss_designs()),
    Entry("agreement.fleiss_kappa", "p-value of kappa = 0 (default)", "test", functools.partial(_fleiss, p_value=True),
          _fleiss_designs(null=True), default=True),
    Entry("agreement.human_ceiling", "score vs the consensus, percentile bootstrap (default)", "interval", _ceiling,
          (_ceiling_design("tcva-usr-maintains-context", "USR: TCVA T=0.9 against the mean of 3 of 9 annotators on the "
                           "198 responses the release scored", _usr_scored, "score", data=("usr", "tcva")),
           _ceiling_design("synthetic-3-raters", "a score against 3 raters' mean, 1-5 ratings piled at the top",
                           _ceiling_population, "score")), default=True, slow=True,
          notes="its intervals are correlate.correlate's on the annotators' and the score's targets"),
    Entry("agreement.human_ceiling", "annotator vs the others' mean, percentile bootstrap", "interval", _ceiling,
          (_ceiling_design("usr-annotator-sm", "USR Maintains Context: annotator sm (rated all 360 Topical-Chat responses) "
                           "against the other two", lambda: _usr_wide("Maintains Context")[:2] + (np.zeros(660),), "sm",
                           data="usr"),
           _ceiling_design("synthetic-annotator-a", "rater a against the other two, 1-5 ratings piled at the top",
                           _ceiling_population, "a"))),
    Entry("agreement.alternative_annotator_test", "per-annotator t-test p-value (default)", "test", _alt, ALT_DESIGNS,
          default=True, test_sizes=(50,)),
    Entry("agreement.alternative_annotator_test", "passed (winning rate >= 0.5 after BY at fdr_level)", "test",
          functools.partial(_alt, decision=True), ALT_DESIGNS),
]


# ---- FD* length bias: Spearman (default) or Pearson between length and density
@functools.cache
def _fd_demo() -> pd.DataFrame:
    from evalkit import datasets, density

    corpus = datasets.load_demo("fd")
    return density.fd_star(corpus["claims"], corpus["documents"])[["n_tokens", "fd_raw"]].astype(float)


@functools.cache
def _fd_healthfc() -> pd.DataFrame:
    from evalkit import density

    hfc = pd.read_csv(SHARED_DATA / "healthfc" / "Datensatz.csv", encoding="utf-8-sig")
    passages = pd.DataFrame({"doc_id": [f"h{i:03d}" for i in range(len(hfc))],
                             "text": (hfc["en_top_sentences"].fillna("") + " " + hfc["en_explanation"].fillna("")).str.strip(),
                             "source": "medizin-transparent"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = density.fd_star(density.claims_from_text(passages), passages)
    return table[["n_tokens", "fd_raw"]].astype(float)


@functools.cache
def _fd_synthetic() -> pd.DataFrame:
    rng = _population_rng("fd synthetic")
    length = np.round(np.exp(rng.normal(5.0, 0.8, 20_000)))
    fd = np.exp(-0.35 * np.log(length) + 0.6 * rng.normal(size=20_000))
    return pd.DataFrame({"n_tokens": length, "fd_raw": fd})


@functools.cache
def _fd_synthetic_zeros(scale: float) -> pd.DataFrame:
    """The log-normal population where some documents have no claim (fd_raw = 0), short ones more often."""
    table = _fd_synthetic()
    rng = _population_rng(f"fd synthetic zeros {scale}")
    none = rng.random(len(table)) < scale / (1 + np.exp(1.5 * (np.log(table["n_tokens"].to_numpy()) - 4.3)))
    return table.assign(fd_raw=np.where(none, 0.0, table["fd_raw"].to_numpy()))


def _length_designs(method: str = "spearman", *, null: bool = False) -> tuple[Design, ...]:
    """Length and fd_raw pairs; the fast suite checks the demo corpus, log-normal lengths and 15% zeros."""
    zeros = [_pairs_design(f"lognormal-zeros{share}", f"the log-normal population with {share}% of documents at "
                           "fd_raw = 0 (no claim; short ones more often): ties",
                           functools.partial(_fd_synthetic_zeros, share / 30), "n_tokens", "fd_raw", method, null=null)
             for share in (15, 30)]
    return (
        _pairs_design("fd-demo", "the demo corpus: 600 segments of three evidence tiers", _fd_demo, "n_tokens", "fd_raw",
                      method, null=null),
        _pairs_design("healthfc", "HealthFC: 750 evidence passages, prob_fact by the offline heuristic", _fd_healthfc,
                      "n_tokens", "fd_raw", method, null=null, data="healthfc"),
        _pairs_design("lognormal-length", "log-normal lengths, density falling with length and heavy-tailed",
                      _fd_synthetic, "n_tokens", "fd_raw", method, null=null),
        zeros[0],
        _slow(zeros[1]),
    )


def _fd_length_bias(sample, level, *, p_value=False, **options):
    from evalkit import density

    table = pd.DataFrame({"n_tokens": sample["x"], "fd_raw": sample["y"]})
    row = density.length_bias(table, columns=("fd_raw",), **({"n_resamples": 0} if p_value else {"confidence_level": level}),
                              **options).loc["fd_raw"]
    return row["p_val"] if p_value else (row["ci_low"], row["ci_high"])


# ---- retrieval: per-query comparisons and coverage
@functools.cache
def _demo_metrics() -> pd.DataFrame:
    from evalkit import datasets, density, retrieval

    corpus = datasets.load_demo("fd")
    table = density.fd_star(corpus["claims"], corpus["documents"])
    options = dict(doc_embeddings=corpus["doc_embeddings"], query_embeddings=corpus["query_embeddings"], fd=table)
    runs = pd.concat([retrieval.search(corpus["documents"], corpus["queries"], condition=c, k=10, **options)
                      for c in ("cosine", "bm25", "hybrid")])
    return retrieval.evaluate(runs, corpus["qrels"], k=10, documents=corpus["documents"])


@functools.cache
def _healthfc_metrics() -> pd.DataFrame:
    from evalkit import density, retrieval

    hfc = pd.read_csv(SHARED_DATA / "healthfc" / "Datensatz.csv", encoding="utf-8-sig")
    passages = pd.DataFrame({"doc_id": [f"h{i:03d}" for i in range(len(hfc))],
                             "text": (hfc["en_top_sentences"].fillna("") + " " + hfc["en_explanation"].fillna("")).str.strip(),
                             "source": "medizin-transparent"})
    queries = pd.DataFrame({"query_id": [f"c{i:03d}" for i in range(len(hfc))], "text": hfc["en_claim"]})
    qrels = pd.DataFrame({"query_id": queries["query_id"], "doc_id": passages["doc_id"], "relevance": 1})
    doc_vec, query_vec = retrieval.lsa_embeddings(passages["text"], queries["text"], dim=128)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = density.fd_star(density.claims_from_text(passages), passages)
    runs = pd.concat([retrieval.search(passages, queries, condition=c, k=10, doc_embeddings=doc_vec,
                                       query_embeddings=query_vec, fd=table) for c in ("cosine", "bm25", "hybrid")])
    return retrieval.evaluate(runs, qrels, k=10)


def _paired_queries(name, description, population, a: str, b: str, metric: str, *, data=None) -> Design:
    """Queries drawn with replacement, the two conditions' values swapped at random per query (no difference)."""

    @functools.cache
    def pairs():
        wide = population().pivot_table(index="query_id", columns="condition", values=metric, aggfunc="first")[[a, b]].dropna()
        return wide.to_numpy(float)

    def draw(rng, n):
        values = pairs()[rng.integers(0, len(pairs()), n)]
        swap = rng.random(n) < 0.5
        return {"a": np.where(swap, values[:, 1], values[:, 0]), "b": np.where(swap, values[:, 0], values[:, 1]), "truth": 0.0}

    return Design(name, description + " (conditions swapped at random per query: no difference)", draw, data=data)


def _tied_queries(rng, n):
    """nDCG-like values with ties: a third of the queries score 0 under both, the rest on a coarse grid."""
    base = rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=n, p=[0.3, 0.1, 0.2, 0.2, 0.2])
    other = np.where(rng.random(n) < 0.5, base, rng.choice([0.0, 0.25, 0.5, 0.75, 1.0], size=n))
    other = np.where(base == 0, np.where(rng.random(n) < 0.7, 0.0, other), other)
    swap = rng.random(n) < 0.5
    return {"a": np.where(swap, other, base), "b": np.where(swap, base, other), "truth": 0.0}


RETRIEVAL_NULLS = (
    _paired_queries("demo-hybrid-vs-cosine-ndcg", "the demo corpus's 50 queries: nDCG@10 of hybrid and cosine",
                    _demo_metrics, "hybrid", "cosine", "ndcg"),
    _paired_queries("demo-hybrid-vs-cosine-precision", "the demo corpus's 50 queries: precision@10 (steps of 0.1, ties)",
                    _demo_metrics, "hybrid", "cosine", "precision"),
    _paired_queries("healthfc-bm25-vs-cosine-mrr", "HealthFC's 750 claims: MRR of BM25 and LSA cosine (ties at 1 and 0)",
                    _healthfc_metrics, "bm25", "cosine", "mrr", data="healthfc"),
    Design("tied-grid", "per-query scores on a 5-point grid, 30% of queries at 0, many ties (no difference)", _tied_queries),
)


def _compare_conditions(sample, alpha, **options):
    from evalkit import retrieval

    n = len(sample["a"])
    metrics = pd.DataFrame({"query_id": np.tile(np.arange(n), 2), "condition": np.repeat(["a", "b"], n),
                            "ndcg": np.concatenate([sample["a"], sample["b"]])})
    return retrieval.compare_conditions(metrics, "a", "b", **options).iloc[0]["p_val"]


def _coverage(sample, level):
    from evalkit import retrieval

    covered = sample["x"] > 0
    n = len(covered)
    claims = pd.DataFrame({"claim_id": np.arange(n), "text": np.where(covered, "vitamin migraine dose", "unrelated words")})
    corpus = pd.DataFrame({"doc_id": ["d0", "d1"], "text": ["vitamin migraine dose trial", "other text here"]})
    embeddings = np.where(covered[:, None], [[1.0, 0.0]], [[0.0, 1.0]])
    row = retrieval.coverage(claims, corpus, claim_embeddings=embeddings, doc_embeddings=np.eye(2)[[0, 0]],
                             confidence_level=level).summary.iloc[0]
    return row["ci_low"], row["ci_high"]


ENTRIES += [
    Entry("density.length_bias", "Spearman, studentized bootstrap on Fisher z (default)", "interval", _fd_length_bias,
          _length_designs(), default=True),
    Entry("density.length_bias", "Spearman, Fisher z with the Bonett-Wright variance", "interval",
          functools.partial(_fd_length_bias, ci_method="fisher"), _length_designs()),
    Entry("density.length_bias", "Spearman p-value (default)", "test", functools.partial(_fd_length_bias, p_value=True),
          _length_designs(null=True), default=True),
    Entry("density.length_bias", "method='pearson', studentized bootstrap on Fisher z", "interval",
          functools.partial(_fd_length_bias, method="pearson"), _length_designs("pearson"),
          notes="ci_note and a warning say it may not hold (0.91-0.93 at 20-100 log-normal lengths)"),
    Entry("density.length_bias", "method='pearson', Fisher-z interval (normal theory)", "interval",
          functools.partial(_fd_length_bias, method="pearson", ci_method="fisher"), _length_designs("pearson"),
          notes="ci_note and a warning say it may not hold (0.90-0.92 on the demo corpus)"),
    Entry("density.length_bias", "method='pearson' p-value", "test",
          functools.partial(_fd_length_bias, p_value=True, method="pearson"), _length_designs("pearson", null=True),
          notes="0.076 at 50 log-normal lengths; the ci_note of a Pearson row says so"),
    Entry("retrieval.compare_conditions", "Wilcoxon signed-rank p-value (default)", "test", _compare_conditions,
          RETRIEVAL_NULLS, default=True),
    Entry("retrieval.coverage", "Wilson interval (default)", "interval", _coverage,
          (bernoulli(0.665), bernoulli(0.9), bernoulli(0.97)), default=True),
]


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
        return self.rate <= self.nominal + 3 * self.mc_se  # for a test, nominal is alpha


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
        if not entry.available():
            continue
        for design in entry.designs:
            if not design.available():
                continue
            for n in sizes or entry.sizes:
                m = measure(entry, design, n, reps=reps, seed=seed)
                rows.append({**{k: v for k, v in vars(m).items() if k != "extra"}, "holds": m.holds})
                if echo is not None:
                    echo(rows[-1])
    return pd.DataFrame(rows)
