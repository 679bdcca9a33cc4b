"""The harness's building blocks: designs, entries, shared data loaders, and measuring coverage or size."""

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

ROOT = Path(__file__).resolve().parents[2]
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

    def picked_by(self, texts) -> bool:
        """Whether a bench's ``--design`` texts pick this design: a text ending in ``$`` names one design exactly
        (``pass-fail-0.03-6-systems-shared$``), other text picks every design whose name contains it; no text picks
        every design."""
        return not texts or any(self.name == t[:-1] if t.endswith("$") else t in self.name for t in texts)

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




def stream_design(p: float = 0.9) -> Design:
    """n PASS/FAIL labels in a random order (a labeller's stream); the truth is the population pass rate p."""

    def draw(rng, n):
        x = (rng.random(n) < p).astype(float)
        return {"human": pd.Series(x, index=[f"c{i}" for i in range(n)]), "truth": p}

    return Design(f"stream(p={p})", f"a stream of PASS/FAIL labels, pass rate {p}, stopped at the first half-width "
                  "<= 0.1 (or at n)", draw)




CLUSTERED = (clustered_design(4, 0.3), clustered_design(8, 0.5), clustered_design(4, 0.3, 0.95))


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
    oracle_width: float = np.nan  # width of the central ``nominal`` interval of the estimates over the draws (see measure)
    width_ratio: float = np.nan  # width / oracle_width: 1 is as narrow as a fixed-width interval can be and still cover
    extra: dict = field(default_factory=dict)

    @property
    def holds(self) -> bool:
        """Coverage >= nominal - 3 MC s.e. (intervals); size, or false coverage-statement rate, <= alpha + 3 MC s.e."""
        if self.kind == "interval":
            return self.rate >= self.nominal - 3 * self.mc_se
        return self.rate <= self.nominal + 3 * self.mc_se  # for a test, nominal is alpha


def oracle_width(estimates, level: float) -> float:
    """The width of the central ``level`` interval of an estimator's sampling distribution: the distance between
    the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of its estimates over independent draws of one design
    at one size (numpy's default, linearly interpolated quantiles). NaN without a finite estimate.

    It is the oracle an interval's width is judged against: a fixed-width interval placed on the estimate's
    sampling distribution that still holds ``level`` of it, which no interval computed from one sample knows.
    Its Monte Carlo error comes from the two tails: at 95% and ``R`` draws each end rests on about ``0.025 R``
    draws, and for a normal estimator its standard error is ``sqrt(0.0475 / R) / phi(1.96)`` standard errors of
    the estimate (about 2.7% of the width at R = 1000, 5% at R = 300).
    """
    x = np.asarray(estimates, dtype=float)
    x = x[np.isfinite(x)]
    if not len(x):
        return np.nan
    low, high = np.quantile(x, [(1 - level) / 2, (1 + level) / 2])
    return float(high - low)


def measure(entry: Entry, design: Design, n: int, *, reps: int, seed: int = 0) -> Measurement:
    """Coverage (or size) of ``entry`` on ``reps`` samples of size ``n`` from ``design`` (fixed seed).

    For an interval entry whose ``run`` also returns its point estimate (``(low, high, estimate)``, one interval)
    the measurement carries ``oracle_width``, the :func:`oracle_width` of the estimates over every draw that gave
    one (refused intervals included: the estimator's sampling distribution is the design's, not the printed
    intervals'), and ``width_ratio``, the mean width of the printed intervals over it. Entries without an estimate,
    simultaneous intervals (arrays), selective families and tests leave both NaN.
    """
    rng = _seed(seed, entry.key, design.name, n)
    hits, widths, estimates, refused = [], [], [], 0
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
            low, high, *estimate = (np.asarray(v, dtype=float) for v in out)
            if estimate and low.ndim == 0:
                estimates.append(float(estimate[0]))
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
    width = float(np.mean(widths)) if widths else np.nan
    oracle = oracle_width(estimates, entry.level) if entry.kind == "interval" else np.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = float(np.float64(width) / oracle)
    return Measurement(
        function=entry.function, variant=entry.variant, kind=entry.kind, design=design.name, n=n, reps=reps,
        nominal=q, rate=float(np.mean(hits)) if counted else np.nan, mc_se=float(se),
        refused=refused / reps, width=width, oracle_width=oracle, width_ratio=ratio,
    )


def table(entries=None, *, sizes=None, reps: int = 1000, seed: int = 0, echo=None) -> pd.DataFrame:
    """Every entry x available design x size, measured: the coverage table, one row per cell with the fields of
    :class:`Measurement` (``width``, ``oracle_width``, ``width_ratio`` among them) and ``holds``."""
    if entries is None:
        from tests import harness

        entries = harness.ENTRIES
    rows = []
    for entry in entries:
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
