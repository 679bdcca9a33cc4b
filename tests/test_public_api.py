"""Bad-input behaviour checked across the public API, generated from each module's ``__all__``."""

import inspect
import types

import pandas as pd
import pytest

import evalkit
from evalkit import calibrate, compare, correlate, datasets, density, judge, models, plots, retrieval, tcva, verdicts

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
# Public functions taking judge verdicts (a results table or a Series) and human labels or a second run.
JUDGE = pd.Series(["PASS", "FAIL"], index=["a", "b"])
REPORT = calibrate.calibrate(JUDGE, pd.Series(["PASS", "FAIL"], index=["a", "b"]))
LABELS = pd.DataFrame({"case_id": ["x"], "label": ["PASS"], "position": [0]})
TAKES_JUDGE = {
    "calibrate.calibrate": lambda j, other: calibrate.calibrate(j, other),
    "calibrate.disagreements": lambda j, other: calibrate.disagreements(
        j if not isinstance(j, pd.Series) else pd.DataFrame({"case_id": j.index, "verdict": j.to_numpy()}), other),
    "calibrate.agreement_drift": lambda j, other: calibrate.agreement_drift(j, LABELS.assign(case_id=other.index[:1])),
    "compare.paired": lambda j, other: compare.paired(j, other),
}
# Everything else public, with the test that covers its bad input.
ELSEWHERE = {
    "calibrate.CalibrationReport": "a result container",
    "calibrate.cohen_kappa": "test_calibrate_compare.py::test_cohen_kappa_reference",
    "calibrate.corrected_pass_rate": "test_calibrate_compare.py::test_corrected_pass_rate_refuses_a_chance_judge",
    "compare.PairedComparison": "a result container",
    "cases.read_cases": "test_cases_checks.py::test_read_jsonl_errors_name_file_and_line",
    "cases.sample_cases": "test_cases_checks.py::test_sample_cases_bad_input",
    "checks.Check": "a named function",
    "checks.valid_json": "takes no data",
    "checks.required_fields": "test_cases_checks.py::test_run_checks_table",
    "checks.value_in": "test_cases_checks.py::test_checks_on_plain_text_and_lists",
    "checks.number_in_range": "test_cases_checks.py::test_checks_on_plain_text_and_lists",
    "checks.max_length": "test_cases_checks.py::test_run_checks_from_cases_table_and_bad_input",
    "checks.regex": "test_cases_checks.py::test_checks_on_plain_text_and_lists",
    "checks.run_checks": "test_cases_checks.py::test_run_checks_from_cases_table_and_bad_input",
    "claims.Prompt": "a template container",
    "claims.ParseError": "an exception",
    "claims.parse_claims": "test_claims.py::test_parse_claims_is_strict",
    "claims.parse_claim_verdicts": "test_claims.py::test_parse_claim_verdicts_rules",
    "claims.extract_claims": "test_claims.py::test_judge_claims_bad_input",
    "claims.judge_claims": "test_claims.py::test_judge_claims_bad_input",
    "judge.Rubric": "test_models_judge.py::test_rubric_render_keeps_case_text_verbatim",
    "judge.parse_verdict": "test_models_judge.py::test_parse_verdict_other_levels",
    "judge.run_judge": "test_models_judge.py::test_run_judge_bad_input",
    "judge.pass_rate": "test_models_judge.py::test_pass_rate_counts_unparseable_checks_and_errors",
    "judge.save_results": "test_public_api.py::test_results_files_bad_input",
    "judge.load_results": "test_public_api.py::test_results_files_bad_input",
    "models.Reply": "a result container",
    "models.TransientError": "an exception",
    "models.OpenAIChat": "test_models_judge.py::test_key_comes_from_the_environment_only",
    "models.Replay": "test_public_api.py::test_replay_unknown_prompt",
    "models.CallCache": "stores what call_many gives it",
    "models.call_many": "test_models_judge.py::test_plain_callable_needs_model_id_with_cache",
    "models.plan_calls": "test_models_judge.py::test_cache_resumes_with_zero_calls_and_keeps_no_key",
    "models.usage_summary": "takes call_many's output",
    "plots.confusion": "takes a CalibrationReport",
    "plots.calibration_rates": "takes a CalibrationReport",
    "datasets.load_llmbar": "test_public_api.py::test_results_files_bad_input",
    "density.whitespace_tokens": "takes a string",
    "density.fd_raw": "test_density.py::test_fd_bad_input",
    "density.fd_star": "test_density.py::test_fd_bad_input (fd_star calls fd_raw)",
    "density.length_bins": "test_density.py::test_length_bins_errors",
    "density.rescore": "test_widgets.py::test_fd_bin_explorer (edges outside the data)",
    "report.NotebookResult": "a result container",
    "report.find_notebooks": "test_report.py::test_unknown_parameter_is_refused",
    "report.parse_params": "test_report.py::test_parse_params",
    "report.run_notebook": "test_report.py::test_failure_names_notebook_and_cell",
    "report.build_report": "test_report.py::test_unknown_parameter_is_refused",
    "widgets.Labeller": "test_widgets.py::test_labeller_bad_input",
    "labels.read_labels": "test_widgets.py::test_killed_kernel_loses_nothing_but_the_partial_line",
    "widgets.SweepExplorer": "takes what tcva.sweep and correlate.correlate take (their tests)",
    "widgets.FDBinExplorer": "test_public_api.py::test_tables_need_their_columns",
    "density.length_bias": "test_public_api.py::test_tables_need_their_columns",
    "density.tier_means": "test_public_api.py::test_tables_need_their_columns",
    "density.tier_spread": "test_public_api.py::test_tables_need_their_columns",
    "density.split_sentences": "takes a string; non-strings give []",
    "density.estimate_prob_fact": "takes strings; missing values score like empty text",
    "density.claims_from_text": "test_public_api.py::test_tables_need_their_columns",
    "claims.parse_facts": "test_claims.py::test_extract_facts_strict_with_retry",
    "claims.extract_facts": "test_claims.py::test_extract_facts_strict_with_retry",
    "retrieval.search": "test_retrieval.py::test_search_bad_input",
    "retrieval.evaluate": "test_public_api.py::test_tables_need_their_columns",
    "retrieval.compare_conditions": "test_retrieval.py::test_compare_conditions_warnings_and_ties",
    "retrieval.coverage": "test_public_api.py::test_tables_need_their_columns",
    "retrieval.CoverageResult": "a result container",
    "retrieval.keywords": "takes a string",
    "retrieval.lsa_embeddings": "test_public_api.py::test_lsa_needs_words",
    "plots.length_bias": "test_public_api.py::test_tables_need_their_columns",
    "plots.fd_by_bin": "test_public_api.py::test_tables_need_their_columns",
    "plots.tier_share": "test_public_api.py::test_tables_need_their_columns",
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
    "calibrate.self_agreement": "test_floor.py::test_self_agreement_bad_input",
    "judge.plan": "test_floor.py::test_plan_bad_input",
    "labels.append_label": "test_floor.py::test_label_storage_without_widgets",
    "labels.latest_labels": "test_floor.py::test_label_storage_without_widgets",
    "models.ParseError": "an exception",
    "models.call_and_parse": "test_floor.py::test_call_and_parse_engine",
    "models.model_identity": "test_floor.py::test_call_and_parse_engine",
    "judge.render_prompts": "test_batch.py::test_bad_input",
    "batch.BatchError": "an exception",
    "batch.submit": "test_batch.py::test_bad_input",
    "batch.poll": "test_batch.py::test_bad_input",
    "batch.collect": "test_batch.py::test_bad_input",
    "batch.jobs": "test_batch.py::test_bad_input",
    "batch.run_judge": "test_batch.py::test_bad_input",
}


def test_every_public_function_is_covered():
    public = set()
    from evalkit import report, widgets

    modules = [getattr(evalkit, name) for name in evalkit.__all__ if isinstance(getattr(evalkit, name), types.ModuleType)]
    for module in [*modules, report, widgets]:
        for name in module.__all__:
            if callable(getattr(module, name)):
                public.add(f"{module.__name__.split('.')[-1]}.{name}")
    covered = set(TAKES_VERDICTS) | set(TAKES_SCORES) | set(TAKES_JUDGE) | set(ELSEWHERE)
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


@pytest.mark.parametrize("name", sorted(TAKES_JUDGE))
def test_judge_inputs_type_and_alignment(name):
    call = TAKES_JUDGE[name]
    with pytest.raises(TypeError):
        call(["PASS", "FAIL"], JUDGE)
    with pytest.raises(ValueError, match="share no case"):
        call(JUDGE, JUDGE.set_axis(["x", "y"]))


def test_results_files_bad_input(tmp_path):
    with pytest.raises(ValueError, match=r"run.csv: use a .parquet or .jsonl"):
        judge.save_results(pd.DataFrame({"case_id": ["a"]}), tmp_path / "run.csv")
    bad = tmp_path / "run.jsonl"
    bad.write_text('{"case_id": "a"}\n{"case_id": \n')
    with pytest.raises(ValueError, match=r"run.jsonl, line 2: not valid JSON"):
        judge.load_results(bad)
    with pytest.raises(FileNotFoundError, match="no <subset>/evaluators"):
        datasets.load_llmbar(tmp_path)


def test_replay_unknown_prompt():
    with pytest.raises(KeyError, match="no recorded answer"):
        models.Replay({"a": "PASS"}, model_id="r")("b")


@pytest.mark.parametrize(
    "call",
    [
        lambda t: density.length_bias(t),
        lambda t: density.tier_means(t),
        lambda t: density.tier_spread(t),
        lambda t: density.claims_from_text(t),
        lambda t: retrieval.evaluate(t, t),
        lambda t: retrieval.coverage(t, t, claim_embeddings=[[1.0]], doc_embeddings=[[1.0]]),
        lambda t: plots.length_bias(t),
        lambda t: plots.fd_by_bin(t),
        lambda t: plots.tier_share(t),
        lambda t: __import__("evalkit.widgets", fromlist=["FDBinExplorer"]).FDBinExplorer(t),
    ],
)
def test_tables_need_their_columns(call):
    table = pd.DataFrame({"doc_id": ["a"], "unrelated": [1.0]})
    with pytest.raises(KeyError, match="it has"):
        call(table)
    with pytest.raises(TypeError, match="DataFrame"):
        call("table.csv")


def test_lsa_needs_words():
    with pytest.raises(ValueError, match="fewer than two distinct words"):
        retrieval.lsa_embeddings(["the", "a"])
