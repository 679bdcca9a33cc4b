"""The coverage harness: every public function that reports an interval or a p-value, measured by simulation.

Exact is not valid: a formula can equal its reference library to the last digit and still claim more
certainty than it has at 50 labels on skewed data. Each :class:`Entry` names a public function (and the
variant of its options), the simulation :class:`Design` s it is judged on (resampled real data sets and
synthetic skewed, clustered and small-n processes), and how to call it on one simulated sample:

- an interval entry's ``run(sample, confidence_level)`` returns ``(low, high)`` (floats, or arrays for
  simultaneous intervals); it covers when ``low <= sample["truth"] <= high`` (everywhere, for arrays);
- a test entry's ``run(sample, alpha)`` returns a p-value on a sample drawn under the null; its size is the
  share of p-values at or below ``alpha``.

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

    def __post_init__(self):
        if self.kind not in ("interval", "test"):
            raise ValueError(f"`kind` must be 'interval' or 'test'; got {self.kind!r}.")

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
    Entry("logs.pass_rate", "Wilson on per-case means (default)", "interval", _logs_pass_rate,
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
    rate: float  # coverage (intervals) or size (tests), over the samples with a number
    mc_se: float  # Monte Carlo standard error of ``rate`` at the nominal value
    refused: float  # share of samples where the function gave NaN (declined, with its warning)
    width: float = np.nan  # mean width of the printed intervals (NaN for tests and simultaneous sets)
    extra: dict = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        """Coverage >= nominal - 3 MC s.e. (intervals); size <= alpha + 3 MC s.e. (tests)."""
        if self.kind == "interval":
            return self.rate >= self.nominal - 3 * self.mc_se
        return self.rate <= (1 - self.nominal) + 3 * self.mc_se


def measure(entry: Entry, design: Design, n: int, *, reps: int, seed: int = 0) -> Measurement:
    """Coverage (or size) of ``entry`` on ``reps`` samples of size ``n`` from ``design`` (fixed seed)."""
    rng = _seed(seed, entry.key, design.name, n)
    hits, widths, refused = [], [], 0
    for _ in range(reps):
        sample = design.draw(rng, n)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a refusal warns; it is counted below by its NaN
            out = entry.run(sample, entry.level if entry.kind == "interval" else 1 - entry.level)
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
    return Measurement(
        function=entry.function, variant=entry.variant, kind=entry.kind, design=design.name, n=n, reps=reps,
        nominal=entry.level if entry.kind == "interval" else 1 - entry.level,
        rate=float(np.mean(hits)) if counted else np.nan,
        mc_se=float(np.sqrt(q * (1 - q) / counted)) if counted else np.nan,
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
