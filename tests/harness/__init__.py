"""The coverage harness: every public function that reports an interval or a p-value, measured by simulation.

Exact is not valid: a formula can equal its reference library to the last digit and still claim more
certainty than it has at 50 labels on skewed data. Each :class:`Entry` names a public function (and the
variant of its options), the simulation :class:`Design` s it is judged on (resampled real data sets and
synthetic skewed, clustered and small-n processes), and how to call it on one simulated sample:

- an interval entry's ``run(sample, confidence_level)`` returns ``(low, high)`` (floats, or arrays for
  simultaneous intervals), or ``(low, high, estimate)`` with the point estimate the interval is built around;
  it covers when ``low <= sample["truth"] <= high`` (everywhere, for arrays);
- a test entry's ``run(sample, alpha)`` returns a p-value on a sample drawn under the null; its size is the
  share of p-values at or below ``alpha``;
- a false-coverage entry (``kind="fcr"``) is a selective family: ``run(sample, confidence_level)`` returns
  ``(low, high, selected)`` arrays, one per parameter (``sample["truth"]`` an array); its rate is the false
  coverage-statement rate of Benjamini & Yekutieli (2005), the mean over samples of (selected intervals that
  miss) / max(selected, 1), which must stay at or below alpha = 1 - level.

NaN ends or a NaN p-value mean the function declined to give a number (a refusal, with its warning); they
are counted apart (``refused``) and coverage is measured over the intervals that were printed, which is
what a user who reads them relies on.

Width is measured against the **oracle**: the central interval, at the entry's level, of the estimator's own
sampling distribution over the design's draws at that size (the 2.5% and 97.5% quantiles of the estimates at
95%), the narrowest fixed-width interval that would cover at the nominal rate there
(:func:`core.oracle_width`). ``width_ratio`` is the mean width over it: about 1 for an interval that is as
tight as its coverage allows (a Wald interval where the normal approximation holds), 2 for one twice as wide
as it needs to be. Only entries that return their estimate with a single interval have one; simultaneous
sets, selective (fcr) families and tests report none.

The registry is split by area, one module each (``rates``, ``infer``, ``systems``, ``compare``, ``pairwise``, ``labeller``,
``correlate``, ``agreement``, ``density``, ``retrieval``, ``active``); ``core`` holds what they share. ``ENTRIES`` is every
area's entries in that order.

``benchmarks/bench_coverage.py`` prints the whole table (every entry, design and size, with Monte Carlo
standard errors). ``tests/test_coverage.py`` checks that no public function reporting an interval or a p-value
is missing from the registry, and ``tests/test_coverage_<area>.py`` that every default holds within 3 Monte Carlo
standard errors on fixed seeds (:func:`default_cells`): in the fast tier one cell per default entry (its first
design without real data at its first test size, ``FAST_TIER_REPS`` samples); in the slow tier
(``pytest --run-slow``) every design and size of its ``test_sizes`` at ``FAST_REPS`` samples.
"""

from __future__ import annotations

from tests.harness import (
    active,
    agreement,
    compare,
    core,
    correlate,
    density,
    infer,
    labeller,
    pairwise,
    rates,
    retrieval,
    systems,
)
from tests.harness.core import ROOT, SHARED_DATA, SIZES, Design, Entry, Measurement, bernoulli, measure, oracle_width, table

__all__ = ["AREAS", "ENTRIES", "EXEMPT", "ROOT", "SHARED_DATA", "SIZES", "Design", "Entry", "Measurement", "bernoulli",
           "check_default", "core", "default_cells", "measure", "oracle_width", "table"]

#: area name -> its module of entries, in the order of ``ENTRIES``
AREAS = {module.__name__.rsplit(".", 1)[-1]: module
         for module in (rates, infer, systems, compare, pairwise, labeller, correlate, agreement, density, retrieval, active)}
ENTRIES: list[Entry] = [entry for module in AREAS.values() for entry in module.ENTRIES]

#: Public functions whose docstrings mention an interval or a p-value but that report none of their own.
EXEMPT = {
    "plots.temperature_sweep": "draws the intervals of correlate.correlate",
    "plots.human_ceiling": "draws the intervals of agreement.human_ceiling",
    "report.formatted": "shows a table's numbers rounded (its p_val and ci_low among them); computes none",
    "infer.simulate": "is itself a coverage simulation on a fully labelled set",
    "plots.ratings": "draws the intervals of pairwise.bradley_terry",
    "plots.system_estimates": "draws the intervals and rank sets of infer.systems",
    "gate.check": "is gate.decide with an exception on a regression (gate.decide is registered)",
    "compare.adjust_p_values": "adjusts p-values it is given (Holm, Bonferroni, BH, BY: equal to statsmodels' multipletests)",
    **infer.EXEMPT,
}

#: Samples per cell in the slow tier (an entry's ``test_reps`` lowers it for the heaviest): 3 Monte Carlo standard
#: errors are then about 0.03 at 95%.
FAST_REPS = 500
#: Samples per cell in the fast tier, a check before every commit: 3 Monte Carlo standard errors are about 0.046 at
#: 95%, which catches an interval that has broken (a Wald interval at a skewed rate covers 0.7) but not a shortfall of
#: a point or two; the slow tier (every cell, ``FAST_REPS``) is the measurement.
FAST_TIER_REPS = 200
#: The seed of every test-suite cell.
TEST_SEED = 20261201


def default_cells(area: str) -> list:
    """pytest parameters ``(entry, design, n)`` for the default entries of one area: the first cell of each entry
    (its first design without real data, at its first test size) in the fast tier, the others marked ``slow``."""
    import pytest

    params = []
    for entry in AREAS[area].ENTRIES:
        if not entry.default:
            continue
        cells = [(design, n) for design in entry.designs for n in entry.test_sizes]
        fast = next(((d, n) for d, n in cells if not d.slow and d.data is None and not entry.slow), None)
        for design, n in cells:
            marks = [] if (design, n) == fast else [pytest.mark.slow]
            params.append(pytest.param(entry, design, n, id=f"{entry.function}[{entry.variant}]-{design.name}-n{n}",
                                       marks=marks))
    return params


def check_default(entry: Entry, design: Design, n: int, *, full: bool = True) -> None:
    """Assert that a default holds on one cell (or, for a documented failure, that it fails), skipping where the
    function's extra or the design's data set is absent; ``full=False`` (the fast tier) draws ``FAST_TIER_REPS``."""
    import pytest

    if not entry.available():
        pytest.skip(f"{entry.function} needs {entry.requires[0]}, from the '{entry.requires[1]}' extra: "
                    f"pip install \"llm-evalkit[{entry.requires[1]}]\"")
    if not design.available():
        pytest.skip(f"real data set {design.data!r} not found under {SHARED_DATA} (CI provides ../shared/data)")
    reps = entry.test_reps or FAST_REPS
    m = measure(entry, design, n, reps=reps if full else min(reps, FAST_TIER_REPS), seed=TEST_SEED)
    assert m.refused < 1, f"{entry.key} refused every sample of {design.name} at n={n}"
    what = f"{entry.key} on {design.name} at n={n}: {'coverage' if m.kind == 'interval' else 'size'} {m.rate:.3f}"
    if entry.invalid:  # a published method reproduced as is: its documented failure must be real
        assert not m.holds, f"{what} holds, but the entry says it does not ({entry.invalid}); update the docs"
        return
    assert m.holds, f"{what} against nominal {m.nominal} (MC s.e. {m.mc_se:.3f}, refused {m.refused:.2f})"
