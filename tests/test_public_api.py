"""Bad-input behaviour checked across the public API, generated from each module's ``__all__``.

The registry: every public callable is generated with bad tables in tests/test_bad_input.py, or checked here
by kind (TAKES_*), or names the test that checks it (ELSEWHERE); a name in none of them fails.
"""

import inspect
import types

import pandas as pd
import pytest

import evalkit
from evalkit import calibrate, compare, correlate, datasets, density, judge, models, plots, retrieval, tcva, verdicts
from tests._extras import needs

pytestmark = pytest.mark.base  # CI runs these in the base install too: what they check differs without the extras

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
    "calibrate.CalibrationReport": "test_public_api.py::test_result_containers_are_frozen",
    "calibrate.corrected_pass_rate": "test_calibrate_compare.py::test_corrected_pass_rate_warns_on_a_chance_judge",
    "compare.PairedComparison": "test_public_api.py::test_result_containers_are_frozen",
    "compare.detectable_difference": "test_compare.py::test_planners_take_a_pilot_and_refuse_what_they_cannot_plan",
    "compare.cases_needed": "test_compare.py::test_planners_take_a_pilot_and_refuse_what_they_cannot_plan",
    "compare.against_baseline": "test_compare.py::test_against_baseline_scores_and_bad_input",
    "compare.adjust_p_values": "test_calibrate_compare.py::test_adjust_p_values_equals_statsmodels_and_checks_its_input",
    "cases.read_cases": "test_cases_checks.py::test_read_jsonl_errors_name_file_and_line",
    "cases.sample_cases": "test_cases_checks.py::test_sample_cases_bad_input",
    "checks.Check": "test_public_api.py::test_small_constructors_validate",
    "checks.valid_json": "test_public_api.py::test_text_helpers_on_non_text",
    "checks.required_fields": "test_cases_checks.py::test_run_checks_table",
    "checks.value_in": "test_cases_checks.py::test_checks_on_plain_text_and_lists",
    "checks.number_in_range": "test_cases_checks.py::test_checks_on_plain_text_and_lists",
    "checks.max_length": "test_cases_checks.py::test_run_checks_from_cases_table_and_bad_input",
    "checks.regex": "test_cases_checks.py::test_checks_on_plain_text_and_lists",
    "checks.run_checks": "test_cases_checks.py::test_run_checks_from_cases_table_and_bad_input",
    "claims.Prompt": "test_public_api.py::test_small_constructors_validate",
    "claims.ParseError": "test_claims.py::test_parse_claims_is_strict",
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
    "judge.results_from_verdicts": "test_models_judge.py::test_results_from_verdicts_feeds_every_consumer_of_a_results_table",
    "judge.identity": "test_judge_noise.py::test_identity_rides_in_the_saved_file_and_a_judge_change_is_named",
    "judge.identity_changes": "test_judge_noise.py::test_identity_rides_in_the_saved_file_and_a_judge_change_is_named",
    "judge.verdict_score": "test_judge_noise.py::test_verdict_score_from_logprobs",
    "judge.consistency": "test_judge_noise.py::test_consistency_bad_input",
    "judge.Consistency": "test_judge_noise.py::test_consistency_by_hand",
    "judge.rejudge": "test_judge_noise.py::test_rejudge_a_saved_baseline_with_the_current_judge",
    "gate.GateResult": "test_public_api.py::test_result_containers_are_frozen",
    "gate.decide": "test_gate.py::test_a_broken_run_is_refused_not_counted_as_fails",
    "gate.check": "test_gate.py::test_the_pytest_helper_raises_with_the_figures",
    "gate.read_run": "test_gate.py::test_an_unreadable_file_is_named",
    "models.Reply": "test_public_api.py::test_small_constructors_validate",
    "models.TransientError": "test_public_api.py::test_transient_error_is_retried_and_others_are_not",
    "models.OpenAIChat": "test_models_judge.py::test_key_comes_from_the_environment_only",
    "models.Replay": "test_public_api.py::test_replay_unknown_prompt",
    "models.CallCache": "test_public_api.py::test_small_constructors_validate",
    "models.call_many": "test_models_judge.py::test_plain_callable_needs_model_id_with_cache",
    "models.plan_calls": "test_models_judge.py::test_cache_resumes_with_zero_calls_and_keeps_no_key",
    "models.usage_summary": "test_public_api.py::test_call_tables_bad_input",
    "plots.confusion": "test_public_api.py::test_report_plots_need_a_report",
    "plots.calibration_rates": "test_public_api.py::test_report_plots_need_a_report",
    "datasets.load_llmbar": "test_public_api.py::test_results_files_bad_input",
    "density.whitespace_tokens": "test_public_api.py::test_text_helpers_on_non_text",
    "datasets.data_path": "test_datasets.py::test_data_path_names_the_parameter_and_the_missing_file",
    "density.fd_raw": "test_density.py::test_fd_bad_input",
    "density.fd_star": "test_density.py::test_fd_bad_input (fd_star calls fd_raw)",
    "density.length_bins": "test_density.py::test_length_bins_errors",
    "density.rescore": "test_widgets.py::test_fd_bin_explorer (edges outside the data)",
    "report.NotebookResult": "test_public_api.py::test_result_containers_are_frozen",
    "report.find_notebooks": "test_report.py::test_unknown_parameter_is_refused",
    "report.parse_params": "test_report.py::test_parse_params",
    "report.float_format": "test_report.py::test_float_format",
    "report.formatted": "test_display.py::test_formatted_bad_input",
    "report.use_formatted": "test_display.py::test_use_formatted_registers_with_ipython",
    "report.run_notebook": "test_report.py::test_failure_names_notebook_and_cell",
    "report.build_report": "test_report.py::test_unknown_parameter_is_refused",
    "widgets.Labeller": "test_widgets.py::test_labeller_bad_input",
    "widgets.PairwiseLabeller": "test_widgets.py::test_pairwise_bad_input",
    "widgets.ClaimLabeller": "test_widgets.py::test_claim_labeller_bad_input",
    "widgets.AnnotatorError": "test_widgets.py::test_two_annotators_with_the_default_name_are_refused",
    "labels.read_labels": "test_widgets.py::test_killed_kernel_loses_nothing_but_the_partial_line",
    "widgets.SweepExplorer": "test_widgets.py::test_sweep_explorer_bad_input",
    "widgets.FDBinExplorer": "test_public_api.py::test_tables_need_their_columns",
    "density.length_bias": "test_public_api.py::test_tables_need_their_columns",
    "density.tier_means": "test_public_api.py::test_tables_need_their_columns",
    "density.tier_spread": "test_public_api.py::test_tables_need_their_columns",
    "density.split_sentences": "test_public_api.py::test_text_helpers_on_non_text",
    "density.estimate_prob_fact": "test_public_api.py::test_text_helpers_on_non_text",
    "density.claims_from_text": "test_public_api.py::test_tables_need_their_columns",
    "claims.parse_facts": "test_claims.py::test_extract_facts_strict_with_retry",
    "claims.extract_facts": "test_claims.py::test_extract_facts_strict_with_retry",
    "retrieval.search": "test_retrieval.py::test_search_bad_input",
    "retrieval.evaluate": "test_public_api.py::test_tables_need_their_columns",
    "retrieval.compare_conditions": "test_retrieval.py::test_compare_conditions_family_bad_input",
    "retrieval.coverage": "test_public_api.py::test_tables_need_their_columns",
    "retrieval.CoverageResult": "test_public_api.py::test_result_containers_are_frozen",
    "retrieval.keywords": "test_public_api.py::test_text_helpers_on_non_text",
    "retrieval.lsa_embeddings": "test_public_api.py::test_lsa_needs_words",
    "plots.length_bias": "test_public_api.py::test_tables_need_their_columns",
    "plots.fd_by_bin": "test_public_api.py::test_tables_need_their_columns",
    "plots.tier_share": "test_public_api.py::test_tables_need_their_columns",
    "tcva.power_mean": "test_tcva.py::test_power_mean_bad_input",
    "tcva.temperature_to_p": "test_tcva.py::test_temperature_out_of_range",
    "tcva.p_to_temperature": "test_public_api.py::test_p_to_temperature_bad_input",
    "verdicts.get_scale": "test_verdicts.py::test_user_scale_accepts_alias_and_validates",
    "verdicts.items_index": "test_verdicts.py::test_level_counts_rejects_items_not_listed",
    "plots.temperature_sweep": "test_plots.py::test_temperature_sweep_bad_input",
    "datasets.load_demo": "test_datasets.py::test_load_demo_unknown_name",
    "datasets.load_tcva_release": "test_datasets.py::test_release_loader_errors",
    "datasets.load_tcva_baseline": "test_public_api.py::test_results_files_bad_input",
    "datasets.demo_path": "test_public_api.py::test_demo_path_names_where_it_looked",
    "correlate.TemperatureSelection": "test_public_api.py::test_result_containers_are_frozen",
    "calibrate.self_agreement": "test_floor.py::test_self_agreement_bad_input",
    "judge.plan": "test_floor.py::test_plan_bad_input",
    "labels.append_label": "test_floor.py::test_label_storage_without_widgets",
    "labels.LabelWriter": "test_labels.py::test_the_same_process_takes_over_and_the_old_writer_stops",
    "labels.LabelsLockedError": "test_labels.py::test_a_second_writer_is_refused_naming_the_holder_until_it_dies",
    "labels.new_session_id": "test_labels.py::test_session_ids_are_unique",
    "labels.latest_labels": "test_floor.py::test_label_storage_without_widgets",
    "models.ParseError": "test_floor.py::test_call_and_parse_engine",
    "models.ReplyError": "test_judge_robust.py::test_fault_injection_every_case_one_row_no_verdict_from_a_malformed_reply",
    "models.APIStatusError": "test_call_engine.py::test_status_errors_carry_their_names_headers_and_no_key",
    "models.APIConnectionError": "test_call_engine.py::test_an_unreachable_server_is_a_connection_error_and_the_run_stops",
    "models.call_and_parse": "test_floor.py::test_call_and_parse_engine",
    "models.model_identity": "test_floor.py::test_call_and_parse_engine",
    "datasets.load_summeval": "test_datasets.py::test_load_summeval_errors",
    "datasets.load_healthfc": "test_datasets.py::test_load_healthfc_refuses_what_does_not_parse",
    "infer.mean": "test_infer.py::test_types_options_and_no_mutation",
    "infer.difference": "test_infer.py::test_difference_bad_input",
    "infer.pass_rate": "test_infer.py::test_pass_rate_by_column_and_bad_input",
    "infer.expected_half_width": "test_infer.py::test_labels_needed_unreachable_and_bad_input",
    "infer.labels_needed": "test_infer.py::test_labels_needed_unreachable_and_bad_input",
    "infer.choose_cases": "test_infer.py::test_choose_cases_exclude_random_and_labeller",
    "infer.simulate": "test_infer.py::test_types_options_and_no_mutation",
    "infer.systems": "test_infer_systems.py::test_bad_input",
    "infer.system_differences": "test_infer_systems.py::test_bad_input",
    "infer.confidence_sequence": "test_infer.py::test_confidence_sequence_bad_input",
    "infer.stopping_point": "test_infer.py::test_confidence_sequence_bad_input",
    "plots.label_budget": "test_infer.py::test_label_budget_plot",
    "datasets.load_usr": "test_agreement.py::test_load_usr_matches_its_readme_and_the_tcva_release",
    "plots.human_ceiling": "test_public_api.py::test_tables_need_their_columns",
    "agreement.ratings_from_labels": "test_agreement.py::test_ratings_from_labels_keeps_the_latest_label_per_annotator",
    "agreement.krippendorff_alpha": "test_agreement.py::test_unknown_level_and_other_bad_arguments",
    "agreement.icc": "test_agreement.py::test_one_annotator_only",
    "agreement.fleiss_kappa": "test_agreement.py::test_fleiss_kappa_matches_statsmodels",
    "agreement.cohen_kappa": "test_agreement.py::test_unknown_level_and_other_bad_arguments",
    "agreement.pairwise_agreement": "test_agreement.py::test_unknown_level_and_other_bad_arguments",
    "agreement.human_ceiling": "test_agreement.py::test_human_ceiling_summary_level_and_bad_input",
    "agreement.AltTestResult": "test_public_api.py::test_result_containers_are_frozen",
    "agreement.alternative_annotator_test": "test_agreement.py::test_alternative_annotator_test_bad_input",
    "pairwise.validate": "test_pairwise.py::test_validate_names_the_row_and_what_was_expected",
    "pairwise.comparisons_from_llmbar": "test_pairwise.py::test_comparisons_from_llmbar_orients_by_what_was_shown_first",
    "pairwise.comparisons_from_labels": "test_pairwise.py::test_comparisons_from_labels_latest_label_per_labeller_undo_and_several_files",
    "pairwise.win_rates": "test_pairwise.py::test_win_rates_by_hand",
    "pairwise.bradley_terry": "test_pairwise.py::test_bradley_terry_bad_input",
    "pairwise.bradley_terry_effects": "test_pairwise.py::test_bradley_terry_bad_input",
    "pairwise.rank_sets": "test_pairwise.py::test_rank_sets_methods_and_bad_input",
    "pairwise.position_consistency": "test_pairwise.py::test_first_slot_preference_is_the_sign_test_on_flips (shared checks)",
    "pairwise.first_slot_preference": "test_pairwise.py::test_first_slot_preference_is_the_sign_test_on_flips",
    "pairwise.length_bias": "test_pairwise.py::test_length_bias_clusters_by_instance_as_statsmodels",
    "pairwise.self_preference": "test_pairwise.py::test_self_preference_counts_by_hand",
    "datasets.load_arena": "test_pairwise.py::test_load_arena_errors",
    "plots.ratings": "test_plots.py::test_pairwise_plots_draw_what_the_tables_hold",
    "plots.rank_sets": "test_plots.py::test_pairwise_plots_draw_what_the_tables_hold",
    "plots.system_estimates": "test_plots.py::test_system_estimates_draws_each_systems_interval_and_its_rank_set",
    "plots.win_rates": "test_plots.py::test_pairwise_plots_draw_what_the_tables_hold",
    "judge.render_prompts": "test_batch.py::test_bad_input",
    "batch.BatchError": "test_batch.py::test_kernel_killed_while_polling_resumes_without_resubmitting",
    "batch.submit": "test_batch.py::test_bad_input",
    "batch.poll": "test_batch.py::test_bad_input",
    "batch.collect": "test_batch.py::test_bad_input",
    "batch.jobs": "test_batch.py::test_bad_input",
    "batch.run_judge": "test_batch.py::test_bad_input",
    "logs.read_inspect": "test_logs.py::test_readers_bad_input",
    "logs.read_promptfoo": "test_logs.py::test_promptfoo_csv_is_refused_with_the_reason",
    "logs.read_lm_eval": "test_logs.py::test_truncated_files_are_refused",
    "logs.read_openai_evals": "test_logs.py::test_truncated_files_are_refused",
    "logs.from_deepeval": "test_logs.py::test_wrong_contents_are_refused",
    "logs.from_ragas": "test_logs.py::test_wrong_contents_are_refused",
}


def test_every_public_function_is_covered():
    """Every public callable has its bad input tested: generated (tests/test_bad_input.py), here, or in a named test."""
    import importlib

    from tests.test_bad_input import GENERATED

    public = set()
    modules = [getattr(evalkit, name) for name in evalkit.__all__ if isinstance(getattr(evalkit, name), types.ModuleType)]
    covered = set(TAKES_VERDICTS) | set(TAKES_SCORES) | set(TAKES_JUDGE) | set(ELSEWHERE)
    covered |= {name.split(" (")[0] for name in GENERATED}  # "infer.mean (jury)": a variant of infer.mean
    for optional in ("report", "widgets"):  # modules behind an extra: checked where the extra is installed
        try:
            modules.append(importlib.import_module(f"evalkit.{optional}"))
        except ImportError:
            covered = {name for name in covered if not name.startswith(f"{optional}.")}
    for module in modules:
        for name in module.__all__:
            if callable(getattr(module, name)):
                public.add(f"{module.__name__.split('.')[-1]}.{name}")
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
    with pytest.raises(FileNotFoundError, match="baseline.json: no such file"):
        datasets.load_tcva_baseline(tmp_path / "baseline.json")


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
        lambda t: plots.human_ceiling(t),
        pytest.param(lambda t: __import__("evalkit.widgets", fromlist=["FDBinExplorer"]).FDBinExplorer(t),
                     marks=needs("ipywidgets", "widgets")),
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


def test_prose_is_not_coverage():
    """Every registry entry names a test that exists, so no public name is covered by a sentence."""
    import ast
    from pathlib import Path

    here = Path(__file__).parent
    for name, where in ELSEWHERE.items():
        test_file, _, test_name = where.partition("::")
        assert test_file.endswith(".py") and test_name, f"{name}: {where!r} is not a test reference"
        path = here / test_file
        defined = {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)} \
            if path.is_file() else set()
        assert test_name.split(" ")[0] in defined, f"{name}: {where} does not exist"


def test_result_containers_are_frozen():
    import dataclasses

    from evalkit import report

    report_ = calibrate.calibrate(JUDGE, JUDGE)
    paired = compare.paired(JUDGE, JUDGE)
    for obj in (report_, paired):
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.n = 0
    from evalkit import agreement, gate

    for cls in (calibrate.CalibrationReport, compare.PairedComparison, report.NotebookResult, retrieval.CoverageResult,
                correlate.TemperatureSelection, agreement.AltTestResult, gate.GateResult):
        assert dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen, cls
        with pytest.raises(TypeError):
            cls()  # every field is required: a container is built by its function, never half-filled


def test_small_constructors_validate(tmp_path):
    from evalkit import checks, claims

    with pytest.raises(TypeError, match="`func` must be a callable"):
        checks.Check("short", 5)
    with pytest.raises(TypeError, match="`name` must be a non-empty string"):
        checks.Check("", len)
    with pytest.raises(KeyError, match=r"prompt 'extract_claims' needs the field 'max_claims'; its fields are \['answer', 'max_claims'\]"):
        claims.EXTRACT_CLAIMS.render(answer="x")
    with pytest.raises(TypeError, match="Reply.text must be str; got NoneType"):
        models.Reply(None)
    with pytest.raises(ValueError, match="is a folder; give the cache's file name"):
        models.CallCache(tmp_path)
    with pytest.raises(TypeError, match="`path` must be a file path"):
        models.CallCache(5)


def test_transient_error_is_retried_and_others_are_not():
    attempts = {"flaky": 0, "broken": 0}

    def model(prompt):
        attempts[prompt] += 1
        if prompt == "flaky" and attempts[prompt] < 3:
            raise models.TransientError("rate limited")
        if prompt == "broken":
            raise RuntimeError("bad request")
        return "ok"

    calls = models.call_many(pd.Series({"a": "flaky", "b": "broken"}), model, model_id="m", backoff=0.0, progress=False)
    assert calls["text"].tolist()[0] == "ok" and attempts == {"flaky": 3, "broken": 1}
    assert calls.loc["b", "error"] == "RuntimeError: bad request"


def test_call_tables_bad_input():
    with pytest.raises(KeyError, match=r"`calls` is missing column\(s\) \['cached'"):
        models.usage_summary(pd.DataFrame({"text": ["a"]}))
    with pytest.raises(TypeError, match="`calls` must be a pandas DataFrame"):
        models.usage_summary([1])
    with pytest.raises(TypeError, match=r"`prompts` must be a Series of str \(wrap a list in pandas.Series"):
        models.plan_calls(["a"], model_id="m")


def test_report_plots_need_a_report():
    for plot in (plots.confusion, plots.calibration_rates):
        with pytest.raises(TypeError, match="`report` must be a CalibrationReport .*got str"):
            plot("x")


def test_text_helpers_on_non_text():
    from evalkit import checks

    assert checks.valid_json()(5) is False and checks.valid_json()(None) is False  # not JSON text: the check fails
    with pytest.raises(TypeError, match="`text` must be str; got int"):
        density.whitespace_tokens(5)
    assert density.split_sentences(None) == [] and density.split_sentences(float("nan")) == []  # missing text
    assert retrieval.keywords(None) == set()
    scores = density.estimate_prob_fact(pd.Series([None, "", "Dose was 5 mg."]))
    assert scores.iloc[0] == scores.iloc[1] == 0.2 and scores.iloc[2] > 0.2  # missing text scores like empty text
    with pytest.raises(TypeError, match="`claims` must be a Series or sequence of str; got int"):
        density.estimate_prob_fact(5)
    with pytest.raises(TypeError, match="`claims` must be a Series or sequence of str; got str"):
        density.estimate_prob_fact("one sentence")


def test_p_to_temperature_bad_input():
    assert float(tcva.p_to_temperature(1.0)) == 0.5
    assert float(tcva.p_to_temperature(tcva.temperature_to_p(0.3))) == pytest.approx(0.3)
    with pytest.raises(TypeError, match="`p` must be a number or an array of numbers; got 'x'"):
        tcva.p_to_temperature("x")


def test_demo_path_names_where_it_looked(monkeypatch, tmp_path):
    assert (datasets.demo_path() / "tcva_items.csv").is_file()
    monkeypatch.setattr(datasets, "__file__", str(tmp_path / "evalkit" / "datasets.py"))
    monkeypatch.setattr(datasets.resources, "files", lambda package: tmp_path / "nowhere")
    with pytest.raises(FileNotFoundError, match="demo data was not found in .*nowhere.* nor in .*data.demo"):
        datasets.demo_path()


def test_one_name_per_option():
    """`interval=` is the one name of the interval option: the old `ci_method=` is refused, not translated; and
    confidence_sequence takes (judge, human) like every other function."""
    import warnings

    import numpy as np

    from evalkit import EvalkitWarning, agreement, infer

    gen = np.random.default_rng(0)
    ids = [f"i{k}" for k in range(40)]
    human = pd.Series(gen.integers(1, 6, 40).astype(float), index=ids)
    scores = pd.DataFrame({"m": human + gen.normal(0, 1, 40)}, index=ids)
    ratings = pd.DataFrame({"item_id": ids * 2, "annotator": ["a"] * 40 + ["b"] * 40,
                            "rating": np.r_[human.to_numpy(), np.clip(human.to_numpy() + gen.integers(-1, 2, 40), 1, 5)]})
    fd = density.fd_star(*(lambda c: (c["claims"], c["documents"]))(datasets.load_demo("fd")))
    calls = [(correlate.correlate, (scores, human), {"n_resamples": 99, "rng": 1}, "percentile"),
             (agreement.krippendorff_alpha, (ratings,), {"n_resamples": 99, "rng": 1}, "percentile"),
             (agreement.fleiss_kappa, (ratings,), {"n_resamples": 99, "rng": 1}, "percentile"),
             (agreement.icc, (ratings,), {"n_resamples": 99, "rng": 1}, "F"),
             (density.length_bias, (fd,), {"n_resamples": 99, "rng": 1}, "fisher")]
    for func, args, kwargs, value in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", EvalkitWarning)  # ICC's note on coarse ratings, beside the point here
            func(*args, interval=value, **kwargs)
        with pytest.raises(TypeError, match="unexpected keyword argument 'ci_method'"):
            func(*args, ci_method=value, **kwargs)
    labels = pd.Series(gen.random(60) < 0.8, index=[f"c{k}" for k in range(60)])
    with pytest.raises(TypeError, match=r"needs `human`, the labels so far"):
        infer.confidence_sequence(labels)
    verdicts = pd.Series(gen.random(100) < 0.8, index=[f"c{k}" for k in range(100)])
    with pytest.raises(ValueError, match=r"the order is confidence_sequence\(judge, human\)"):
        infer.confidence_sequence(labels, verdicts)  # the order before: labels first


def test_no_public_name_is_an_alias_of_another():
    """One public name per function: no two names in the modules' ``__all__`` are the same object (a re-export or a
    deprecated alias), and no public function is a shim that warns of an old name ("deprecated", "renamed")."""
    import importlib
    import re

    seen = {}
    for module_name in [name for name in evalkit.__all__ if not name.startswith("_") and name not in ("EvalkitWarning",)]:
        try:
            module = importlib.import_module(f"evalkit.{module_name}")
        except ImportError:  # a module behind an extra that is not installed
            continue
        if not isinstance(module, types.ModuleType):
            continue
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if not callable(obj) or isinstance(obj, type) and issubclass(obj, BaseException):
                continue
            key = id(inspect.unwrap(obj)) if inspect.isfunction(obj) or inspect.isclass(obj) else None
            if key is not None:
                assert key not in seen, f"{module_name}.{name} is the same object as {seen[key]}"
                seen[key] = f"{module_name}.{name}"
            if module_name != "infer":  # infer's options are settled on their own
                doc = inspect.getdoc(obj) or ""
                assert not re.search(r"\bdeprecated\b|since evalkit", doc, re.IGNORECASE), f"{module_name}.{name}: {doc[:80]}"


def test_warnings_point_at_the_callers_line():
    """A warning names the line that called evalkit (warning.filename is this file), not a line inside evalkit nor
    `sys:1`, however deep the function that raised it."""
    import warnings

    import numpy as np

    from evalkit import EvalkitWarning, agreement

    ids = [f"i{k}" for k in range(10)]
    calls = {
        "compare.adjust_p_values": lambda: compare.adjust_p_values(pd.DataFrame({"p_val": [0.01, np.nan]})),
        "calibrate.calibrate": lambda: calibrate.calibrate(pd.Series(["PASS", "FAIL"]), pd.Series(["PASS", "PASS"])),
        "correlate.correlate": lambda: correlate.correlate(pd.Series(1.0, index=ids), pd.Series(np.arange(10.0), index=ids),
                                                           n_resamples=0),
        "compare.paired": lambda: compare.paired(pd.Series([1.0, 2.0, 3.0], index=list("abc")),
                                                 pd.Series([1.0, 2.0], index=list("ab"))),
        "agreement.cohen_kappa": lambda: agreement.cohen_kappa(pd.DataFrame({"item_id": ["a", "b"], "annotator": ["x", "y"],
                                                                            "rating": [1, 2]})),
        "tcva.sweep": lambda: tcva.sweep(pd.DataFrame({"item_id": ["a"], "verdict": ["fully"]}), [0.5],
                                         items=pd.DataFrame({"error": [None, "timeout"]}, index=["a", "b"])),
    }
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        ours = [w for w in caught if issubclass(w.category, EvalkitWarning)]
        assert ours, f"{name} did not warn"
        assert all(w.filename == __file__ for w in ours), (name, [(w.filename, w.lineno) for w in ours])
