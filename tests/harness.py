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


ENTRIES: list[Entry] = [
    Entry("judge.pass_rate", "Wilson (default)", "interval", _judge_pass_rate,
          (bernoulli(0.5), bernoulli(0.9), bernoulli(0.97)), default=True),
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
    "calibrate.corrected_pass_rate", "calibrate.agreement_drift", "correlate.correlate",
    "correlate.compare_metrics", "correlate.paired_bootstrap_tcva_paper",
    "density.length_bias", "infer.mean", "infer.difference", "infer.pass_rate", "infer.expected_half_width",
    "infer.labels_needed", "retrieval.compare_conditions", "retrieval.coverage",
}



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
