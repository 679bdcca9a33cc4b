"""Every interval and p-value evalkit reports is in the coverage harness, and the harness catches what fails.

Whether each default holds is checked area by area, in ``tests/test_coverage_<area>.py`` (one cell per default entry
in the fast tier, the rest with ``--run-slow``); the whole table, at every size, is
``python benchmarks/bench_coverage.py``.
"""

import importlib
import inspect
import types

import numpy as np
import pytest

import evalkit
from tests import harness

FAST_REPS = harness.FAST_REPS


def _inferential_public_functions() -> set[str]:
    """Public functions of public modules whose docstring reports an interval or a p-value."""
    modules = [getattr(evalkit, name) for name in evalkit.__all__ if isinstance(getattr(evalkit, name), types.ModuleType)]
    for optional in ("report", "widgets"):
        try:
            modules.append(importlib.import_module(f"evalkit.{optional}"))
        except ImportError:
            pass
    found = set()
    for module in modules:
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj) or inspect.isclass(obj):
                continue  # result containers are made by a registered function
            doc = inspect.getdoc(obj) or ""
            try:
                signature = inspect.signature(obj)
            except (TypeError, ValueError):
                signature = None
            params = set(signature.parameters) if signature else set()
            returned = getattr(module, str(signature.return_annotation), None) if signature else None
            if inspect.isclass(returned):  # a result container: what it holds is what the function reports
                doc += inspect.getdoc(returned) or ""
            if "confidence_level" in params or any(word in doc for word in ("ci_low", "p_val", "p_value")):
                found.add(f"{module.__name__.split('.')[-1]}.{name}")
    return found


def test_every_interval_and_p_value_is_registered():
    registered = {entry.function for entry in harness.ENTRIES}
    listed = registered | set(harness.EXEMPT)
    found = _inferential_public_functions()
    assert found <= listed, f"report an interval or p-value but are not in tests/harness.py: {sorted(found - listed)}"
    stale = set(harness.EXEMPT) - found
    assert not stale, f"listed in tests/harness.py but no longer public or inferential: {sorted(stale)}"
    assert not registered & set(harness.EXEMPT), f"registered and exempt: {sorted(registered & set(harness.EXEMPT))}"


def test_every_registered_function_has_a_default():
    functions = {entry.function for entry in harness.ENTRIES}
    with_default = {entry.function for entry in harness.ENTRIES if entry.default}
    assert functions == with_default, f"no default entry: {sorted(functions - with_default)}"


def test_measure_detects_an_interval_that_does_not_hold():
    """The harness itself: a Wald interval for p = 0.97 at n = 20 undercovers and is caught."""
    from evalkit._stats import z_value

    def wald(sample, level):
        x = sample["x"]
        p = x.mean()
        half = z_value(level) * (p * (1 - p) / len(x)) ** 0.5
        return p - half, p + half

    entry = harness.Entry("x.wald", "test", "interval", wald, (harness.bernoulli(0.97),))
    m = harness.measure(entry, entry.designs[0], 20, reps=FAST_REPS, seed=1)
    assert not m.holds and m.rate < 0.7


def test_measure_detects_a_test_that_rejects_too_often():
    """The harness itself: a Wald test of p = 0.97 at n = 20 rejects the true value far more often than 5%."""
    from scipy import stats

    def wald(sample, alpha):
        x = sample["x"]
        p = x.mean()
        se = (p * (1 - p) / len(x)) ** 0.5
        return 2 * stats.norm.sf(abs(p - 0.97) / se) if se > 0 else 0.0

    entry = harness.Entry("x.wald_test", "test", "test", wald, (harness.bernoulli(0.97),))
    m = harness.measure(entry, entry.designs[0], 20, reps=FAST_REPS, seed=1)
    assert m.nominal == pytest.approx(0.05) and not m.holds and m.rate > 0.3


def test_every_area_with_defaults_has_its_test_file():
    from pathlib import Path

    here = Path(__file__).resolve().parent
    missing = [area for area in harness.AREAS if harness.default_cells(area)
               and not (here / f"test_coverage_{area}.py").is_file()]
    assert not missing, f"areas of tests/harness/ whose defaults no test file checks: {missing}"


def _normal_mean_design(mu: float = 1.0, sigma: float = 2.0) -> harness.Design:
    def draw(rng, n):
        return {"x": rng.normal(mu, sigma, n), "truth": mu}

    return harness.Design(f"normal(mu={mu},sigma={sigma})", "n normal draws; the truth is their mean", draw)


def test_oracle_width_is_the_central_interval_of_the_estimates_sampling_distribution():
    """The mean of n normal draws is N(mu, sigma^2 / n): its central 95% is 2 z sigma / sqrt(n) wide, and the Wald
    interval with the known sigma is exactly that wide, so its width ratio is 1 (both within Monte Carlo error)."""
    from scipy import stats

    sigma, n, reps, level = 2.0, 25, 4000, 0.95
    z = stats.norm.ppf((1 + level) / 2)

    def wald(sample, level):
        m = sample["x"].mean()
        return m - z * sigma / n**0.5, m + z * sigma / n**0.5, m

    entry = harness.Entry("x.wald_known_sigma", "test", "interval", wald, (_normal_mean_design(sigma=sigma),))
    m = harness.measure(entry, entry.designs[0], n, reps=reps, seed=3)
    expected = 2 * z * sigma / n**0.5
    # the standard error of a difference of the 2.5% and 97.5% sample quantiles of R normal draws (asymptotic
    # variance p(1 - q) / (R f(x_p) f(x_q)) for each pair p <= q), in units of the estimate's standard error
    p = (1 - level) / 2
    se = np.sqrt((2 * p * (1 - p) - 2 * p * p) / reps) / stats.norm.pdf(z) * sigma / n**0.5
    assert abs(m.oracle_width - expected) < 4 * se
    assert m.width == pytest.approx(expected, rel=1e-12)
    assert abs(m.width_ratio - 1) < 4 * se / expected
    assert m.rate == pytest.approx(level, abs=4 * m.mc_se)


def test_oracle_width_is_that_of_the_estimator_not_of_the_interval():
    """A Wald interval with the estimated sd is about as wide as the oracle; one three times as wide has ratio 3; an
    interval around a noisier estimator (the median) has a wider oracle (by sqrt(pi / 2) for normal draws)."""
    from scipy import stats

    n, reps = 40, 3000
    z = stats.norm.ppf(0.975)

    def wald(factor, centre=np.mean):
        def run(sample, level):
            x = sample["x"]
            m, half = centre(x), factor * z * x.std(ddof=1) / len(x) ** 0.5
            return m - half, m + half, m

        return run

    design = _normal_mean_design()
    ratios = {}
    for name, run in (("wald", wald(1)), ("wide", wald(3)), ("median", wald(1, np.median))):
        entry = harness.Entry(f"x.{name}", "test", "interval", run, (design,))
        ratios[name] = harness.measure(entry, design, n, reps=reps, seed=4)
    assert ratios["wald"].width_ratio == pytest.approx(1, abs=0.07)
    assert ratios["wide"].width_ratio == pytest.approx(3, abs=0.2)
    assert ratios["median"].oracle_width / ratios["wald"].oracle_width == pytest.approx(np.sqrt(np.pi / 2), rel=0.08)


def test_oracle_width_equals_numpy_quantiles_and_is_blank_without_an_estimate():
    rng = np.random.default_rng(0)
    draws = rng.exponential(size=501)
    assert harness.oracle_width(np.r_[draws, np.nan], 0.9) == pytest.approx(
        np.quantile(draws, 0.95) - np.quantile(draws, 0.05), rel=1e-12)
    assert np.isnan(harness.oracle_width([np.nan], 0.95))

    def two_ends(sample, level):
        return -1.0, 1.0

    def simultaneous(sample, level):
        return np.array([-1.0, -1.0]), np.array([1.0, 1.0]), np.zeros(2)

    design = _normal_mean_design(mu=0.0)
    for run in (two_ends, simultaneous):
        entry = harness.Entry("x.blank", "test", "interval", run, (design,))
        m = harness.measure(entry, design, 10, reps=20, seed=0)
        assert np.isnan(m.oracle_width) and np.isnan(m.width_ratio)


def test_the_coverage_table_carries_the_oracle_columns():
    def wald(sample, level):
        m = sample["x"].mean()
        return m - 0.5, m + 0.5, m

    entry = harness.Entry("x.fixed", "test", "interval", wald, (_normal_mean_design(),), sizes=(16,))
    out = harness.table([entry], reps=200)
    assert {"width", "oracle_width", "width_ratio"} <= set(out.columns)
    row = out.iloc[0]
    assert row["width_ratio"] == pytest.approx(row["width"] / row["oracle_width"])


def test_a_bench_picks_designs_by_text_or_by_exact_name():
    from tests.harness import systems

    names = [d.name for d in systems.MEAN_DESIGNS]
    contains = [d.name for d in systems.MEAN_DESIGNS if d.picked_by(["pass-fail-0.03-6"])]
    assert contains == ["pass-fail-0.03-6-systems-shared", "pass-fail-0.03-6-systems-far-apart-own"]
    exact = [d.name for d in systems.MEAN_DESIGNS if d.picked_by(["pass-fail-0.03-6-systems-shared$"])]
    assert exact == ["pass-fail-0.03-6-systems-shared"]
    assert [d.name for d in systems.MEAN_DESIGNS if d.picked_by(None)] == names
    assert not any(d.picked_by(["pass-fail-0.03-6$"]) for d in systems.MEAN_DESIGNS)
