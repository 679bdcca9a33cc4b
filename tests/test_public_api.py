"""Bad-input behaviour checked across every public function that takes a verdict table."""

import inspect

import pandas as pd
import pytest

import evalkit
from evalkit import correlate, datasets, plots, tcva, verdicts

HUMAN = pd.Series([1.0, 2.0], index=["a", "b"])

# Public functions taking a claim-verdict table first, called with `table` in that place.
TAKES_VERDICTS = {
    "verdicts.validate": lambda table: verdicts.validate(table),
    "verdicts.level_counts": lambda table: verdicts.level_counts(table),
    "tcva.sweep": lambda table: tcva.sweep(table, [0.5]),
    "tcva.score": lambda table: tcva.score(table, 0.5),
    "correlate.select_temperature": lambda table: correlate.select_temperature(table, HUMAN, temperatures=[0.5]),
    "plots.verdict_distribution": lambda table: plots.verdict_distribution(table),
}
# Public functions taking scores (Series/DataFrame) and human ratings.
TAKES_SCORES = {
    "correlate.correlate": lambda s, h: correlate.correlate(s, h, n_resamples=0),
    "correlate.mean_absolute_error": lambda s, h: correlate.mean_absolute_error(s, h),
    "correlate.compare_metrics": lambda s, h: correlate.compare_metrics(s, s, h),
    "correlate.paired_bootstrap_tcva_paper": lambda s, h: correlate.paired_bootstrap_tcva_paper(s, s, h, n_resamples=10),
}
# Everything else public, with the test that covers its bad input.
ELSEWHERE = {
    "tcva.power_mean": "test_tcva.py::test_power_mean_bad_input",
    "tcva.temperature_to_p": "test_tcva.py::test_temperature_out_of_range",
    "tcva.p_to_temperature": "an unchecked inverse used for plot axes",
    "verdicts.get_scale": "test_verdicts.py::test_user_scale_accepts_alias_and_validates",
    "verdicts.items_index": "test_verdicts.py::test_level_counts_rejects_items_not_listed",
    "plots.temperature_sweep": "test_plots.py::test_temperature_sweep_bad_input",
    "datasets.load_demo": "test_datasets.py::test_load_demo_unknown_name",
    "datasets.load_tcva_release": "test_datasets.py::test_release_loader_errors",
    "datasets.load_tcva_baseline": "reads the same files as load_tcva_release",
    "datasets.demo_path": "takes no input",
    "correlate.TemperatureSelection": "a result container",
}


def test_every_public_function_is_covered():
    public = set()
    for module in (verdicts, tcva, correlate, plots, datasets):
        for name in module.__all__:
            if callable(getattr(module, name)):
                public.add(f"{module.__name__.split('.')[-1]}.{name}")
    covered = set(TAKES_VERDICTS) | set(TAKES_SCORES) | set(ELSEWHERE)
    assert public == covered, f"not covered: {sorted(public - covered)}; stale: {sorted(covered - public)}"
    assert evalkit.__version__


@pytest.mark.parametrize("name", sorted(TAKES_VERDICTS))
def test_verdict_table_type_and_columns(name):
    call = TAKES_VERDICTS[name]
    with pytest.raises(TypeError, match="`verdicts` must be a pandas DataFrame.*got a path"):
        call("verdicts.csv")
    with pytest.raises(KeyError, match=r"missing column\(s\) \['verdict'\]; it has columns \['item_id', 'label'\]"):
        call(pd.DataFrame({"item_id": ["a"], "label": ["fully"]}))
    with pytest.raises(ValueError, match="verdict 'great' is not one of"):
        call(pd.DataFrame({"item_id": ["a"], "verdict": ["great"]}))


@pytest.mark.parametrize("name", sorted(TAKES_VERDICTS))
def test_verdict_table_not_mutated(name):
    table = pd.DataFrame({"item_id": ["a", "a", "b", "b", "c"], "verdict": ["Fully", "partially", "none", "mostly", "minor"]})
    before = table.copy()
    try:
        TAKES_VERDICTS[name](table)
    except ValueError:
        pass  # select_temperature refuses so few items; the point is that nothing was changed
    pd.testing.assert_frame_equal(table, before)


@pytest.mark.parametrize("name", sorted(TAKES_SCORES))
def test_scores_must_align_by_index(name):
    call = TAKES_SCORES[name]
    scores = pd.Series([0.1, 0.2, 0.3, 0.4], index=["w", "x", "y", "z"], name="m")
    with pytest.raises(ValueError, match="share no index labels"):
        call(scores, HUMAN)
    with pytest.raises(TypeError):
        call(scores, [1, 2, 3, 4])


def test_options_are_keyword_only():
    for func in (tcva.sweep, tcva.score, correlate.correlate, correlate.compare_metrics, correlate.select_temperature,
                 plots.temperature_sweep, plots.verdict_distribution, verdicts.level_counts):
        params = list(inspect.signature(func).parameters.values())
        positional = [p.name for p in params if p.kind is p.POSITIONAL_OR_KEYWORD]
        assert len(positional) <= 3, (func.__name__, positional)
