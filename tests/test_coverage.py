"""Every interval and p-value evalkit reports is in the coverage harness, and the harness catches what fails.

Whether each default holds is checked area by area, in ``tests/test_coverage_<area>.py`` (one cell per default entry
in the fast tier, the rest with ``--run-slow``); the whole table, at every size, is
``python benchmarks/bench_coverage.py``.
"""

import importlib
import inspect
import types

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
