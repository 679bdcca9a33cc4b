"""Generated bad input for every public function: hypothesis draws the tables, the outcome must be defensible.

scikit-learn's ``sklearn/tests/test_public_functions.py`` habit, with property-based generation of bad tables
(``hypothesis.extra.pandas``: NaN, inf, empty, one row, constant columns, duplicate ids, misaligned indexes,
wrong dtypes) instead of hand-written cases, and an option now and then replaced by an object of no known type.
Each call may end in one of three ways only:

- a ``ValueError``, ``TypeError`` or ``KeyError`` whose message names one of the function's parameters;
- a result whose numbers are all finite;
- a result with NaN or inf, together with an :class:`~evalkit.EvalkitWarning` (which the docstring documents).

Anything else (another exception, a NaN or inf that nothing explains, a bad option accepted in silence)
fails. Every public function is either generated here (``GENERATED``) or listed in ``NOT_GENERATED`` with why (and
named with its test in test_public_api's registry); a new public function missing from both fails
:func:`test_every_public_function_is_here`.
Runs are deterministic (``derandomize``, no example database) and budgeted (``max_examples`` per function).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import re
import types
import warnings
from functools import partial

import numpy as np
import pandas as pd
import pytest

import evalkit
from evalkit import (
    EvalkitWarning,
    agreement,
    calibrate,
    cases,
    checks,
    claims,
    compare,
    correlate,
    density,
    infer,
    judge,
    labels,
    models,
    retrieval,
    tcva,
    verdicts,
)

try:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
    from hypothesis.extra import pandas as pdst
except ImportError:  # the 'test' extra
    st = None

pytestmark = pytest.mark.skipif(st is None, reason='generated bad input needs hypothesis: pip install "evalkit[test]"')

LEVELS = ["none", "minor", "partial", "mostly", "fully"]
IDS = list("abcdefgh")
ANNOTATORS = ["ann", "bob", "cy", "dee"]
TEXTS = ["", "The dose was 5 mg.", "Paris is in France. It rained.", "ok", "Results: 3 of 4 patients (75%) improved."]


class BadType:
    """An option of no type any function accepts."""

    def __repr__(self) -> str:
        return "<BadType>"


# ---------------------------------------------------------------------------------------- generation
class Gen:
    """Draws the inputs of one call from a hypothesis ``data`` object."""

    def __init__(self, data):
        self.data = data

    def draw(self, strategy):
        return self.data.draw(strategy)

    def pick(self, values):
        return self.draw(st.sampled_from(list(values)))

    def size(self, high: int = 12) -> int:
        """Table sizes, with empty and one-row tables as likely as any other."""
        return self.draw(st.sampled_from([n for n in (0, 1, 2, 3, 5, 8, 12) if n <= high]))

    # elements ---------------------------------------------------------------------------------
    def numbers(self, low: float = 0.0, high: float = 5.0):
        """An element strategy for a numeric column, in one mode per column (so a column can be constant)."""
        valid = st.one_of(st.integers(int(low), int(high)).map(float), st.floats(low, high))
        mode = self.pick(["valid", "valid", "valid", "nan", "inf", "constant", "wrong type", "extreme"])
        return mode, {
            "valid": valid,
            "nan": st.one_of(valid, st.just(np.nan)),
            "inf": st.one_of(valid, st.sampled_from([np.inf, -np.inf])),
            "constant": st.just(float(low + high) / 2),
            "wrong type": st.one_of(valid, st.text(max_size=3), st.none(), st.booleans()),
            "extreme": st.one_of(valid, st.sampled_from([1e12, -1e12, 1e-300])),  # large offsets, tiny values
        }[mode]

    def labels(self, good: list):
        """An element strategy for a label column: the given labels, with NaN, an unknown label or wrong types."""
        mode = self.pick(["valid", "valid", "valid", "missing", "unknown", "wrong type", "constant"])
        valid = st.sampled_from(good)
        return {
            "valid": valid,
            "missing": st.one_of(valid, st.none(), st.just(np.nan)),
            "unknown": st.one_of(valid, st.sampled_from(["great", "", " PASS "])),
            "wrong type": st.one_of(valid, st.integers(0, 2), st.floats(allow_nan=True)),
            "constant": st.just(good[0]),
        }[mode]

    # indexes and series -----------------------------------------------------------------------
    def index(self, n: int | None = None, pool=IDS):
        n = self.size(len(pool)) if n is None else n
        unique = self.draw(st.booleans()) if n > 1 else True
        if not unique:  # duplicate ids
            return self.draw(pdst.indexes(elements=st.sampled_from(pool), min_size=n, max_size=n, unique=False))
        return self.draw(pdst.indexes(elements=st.sampled_from(pool), min_size=min(n, len(pool)),
                                      max_size=min(n, len(pool)), unique=True))

    def series(self, index=None, elements=None, name=None):
        index = self.index() if index is None else index
        mode, numbers = self.numbers() if elements is None else ("labels", elements)
        dtype = object if mode in ("wrong type", "labels") else float
        return self.draw(pdst.series(elements=numbers, index=st.just(index), dtype=dtype, name=st.just(name)))

    def related(self, index: pd.Index) -> pd.Index:
        """Another index: the same, a subset, shuffled, overlapping or disjoint (misaligned)."""
        how = self.pick(["same", "same", "subset", "shuffled", "overlap", "disjoint", "empty"])
        if how == "same" or len(index) == 0:
            return index
        if how == "subset":
            return index[: self.draw(st.integers(0, len(index)))]
        if how == "shuffled":
            return pd.Index(self.draw(st.permutations(list(index))))
        if how == "empty":
            return index[:0]
        if how == "disjoint":
            return pd.Index([f"x{i}" for i in range(len(index))])
        return pd.Index(list(index[len(index) // 2:]) + ["zz"])

    def pair(self):
        """Scores on some cases and labels (or ratings) on related cases, each possibly bad."""
        scores = self.series()
        return scores, self.series(self.related(scores.index))

    def verdict_series(self, index=None, good=("PASS", "FAIL")):
        return self.series(index, self.labels(list(good)))

    # tables -----------------------------------------------------------------------------------
    def table(self, columns: dict, n: int | None = None) -> pd.DataFrame:
        n = self.size() if n is None else n
        frame = self.draw(pdst.data_frames([pdst.column(name, elements=elements) for name, elements in columns.items()],
                                           index=pdst.range_indexes(min_size=n, max_size=n)))
        if n and self.draw(st.booleans()):  # now and then a table that is not indexed 0..n-1
            frame.index = self.draw(pdst.indexes(elements=st.integers(0, 50), min_size=n, max_size=n, unique=True))
        return frame

    def verdict_table(self) -> pd.DataFrame:
        table = self.table({"item_id": st.sampled_from(IDS), "verdict": self.labels(LEVELS)})
        table["claim_idx"] = table.groupby("item_id").cumcount() if len(table) else []
        if self.draw(st.booleans()) and len(table) > 1:
            table["claim_idx"] = self.draw(st.lists(st.integers(0, 2), min_size=len(table), max_size=len(table)))
        return table

    def ratings(self, numeric: bool | None = None) -> pd.DataFrame:
        numeric = self.draw(st.booleans()) if numeric is None else numeric
        rating = self.numbers(1, 5)[1] if numeric else self.labels(["yes", "no", "maybe"])
        if self.draw(st.booleans()):  # every item rated by every annotator, as a grid
            items, who = self.index(self.pick([2, 3, 5, 8]), pool=IDS), self.pick([ANNOTATORS[:2], ANNOTATORS[:3], ANNOTATORS])
            grid = pd.MultiIndex.from_product([items, who], names=["item_id", "annotator"]).to_frame(index=False)
            values = self.draw(st.lists(rating, min_size=len(grid), max_size=len(grid)))
            return grid.assign(rating=pd.Series(values, dtype=object if not numeric else None))
        return self.table({"item_id": st.sampled_from(IDS), "annotator": st.sampled_from(ANNOTATORS), "rating": rating})

    def results(self, levels=("PASS", "FAIL")) -> pd.DataFrame:
        n = self.size()
        table = self.table({"case_id": st.sampled_from(IDS) if self.draw(st.booleans()) else st.text("abc", min_size=1, max_size=2),
                            "verdict": self.labels(list(levels)), "parsed": st.booleans(),
                            "error": st.one_of(st.none(), st.none(), st.none(), st.just("timeout"))}, n)
        table.insert(1, "rubric", "r")
        table.insert(2, "rubric_version", self.pick(["v1", "v1", "v2"]) if n else "v1")
        table.insert(3, "model", "m")
        if levels != ("PASS", "FAIL"):
            table.attrs["rubric"] = {"levels": list(levels), "fail_level": levels[-1]}
        return table

    def decisions(self) -> pd.DataFrame:
        table = self.table({"case_id": st.sampled_from(IDS), "order": self.labels(["original", "swapped"]),
                            "winner": self.labels(["1", "2"]), "label": self.labels(["1", "2"]),
                            "length_1": self.numbers(1, 400)[1], "length_2": self.numbers(1, 400)[1],
                            "judge": st.sampled_from(["m1", "m2"]), "model_1": st.sampled_from(["m1", "m2", "m3"]),
                            "model_2": st.sampled_from(["m1", "m2", "m3"])})
        return table

    def documents(self) -> pd.DataFrame:
        return self.table({"doc_id": st.sampled_from(IDS), "text": st.one_of(st.sampled_from(TEXTS), st.none()),
                           "n_tokens": self.numbers(0, 200)[1], "source": st.sampled_from(["review", "blog", "trial"])})

    def doc_claims(self) -> pd.DataFrame:
        return self.table({"doc_id": st.sampled_from(IDS), "claim": st.sampled_from(TEXTS),
                           "prob_fact": self.numbers(0, 1)[1]})

    def fd_table(self) -> pd.DataFrame:
        table = self.table({"doc_id": st.sampled_from(IDS), "source": st.sampled_from(["review", "blog"]),
                            "n_tokens": self.numbers(1, 200)[1], "fd_raw": self.numbers(0, 1)[1],
                            "fd_star": self.numbers(-2, 2)[1], "length_bin": st.sampled_from(["short", "medium", "long"])})
        return table.set_index("doc_id") if self.draw(st.booleans()) else table

    def runs(self) -> pd.DataFrame:
        return self.table({"query_id": st.sampled_from(["q1", "q2", "q3"]), "condition": st.sampled_from(["bm25", "cosine"]),
                           "rank": st.integers(1, 5), "doc_id": st.sampled_from(IDS)})

    def qrels(self) -> pd.DataFrame:
        return self.table({"query_id": st.sampled_from(["q1", "q2", "q3"]), "doc_id": st.sampled_from(IDS),
                           "relevance": self.numbers(0, 3)[1]})

    def metrics(self) -> pd.DataFrame:
        return self.table({"query_id": st.integers(0, 30), "condition": st.sampled_from(["bm25", "cosine", "hybrid"]),
                           "ndcg": self.numbers(0, 1)[1]})

    def cases_table(self) -> pd.DataFrame:
        return self.table({"case_id": st.sampled_from(IDS), "input": st.sampled_from(TEXTS),
                           "output": st.one_of(st.sampled_from(TEXTS + ['{"a": 1}', "[1, 2]"]), st.none(), st.integers()),
                           "day": st.sampled_from(["mon", "tue"])})

    def label_records(self) -> pd.DataFrame:
        return self.table({"case_id": st.sampled_from(IDS), "label": self.labels(["PASS", "FAIL"]),
                           "position": st.integers(0, 20), "mode": st.sampled_from(["label", "label", "relabel", "undo"]),
                           "labeller": st.sampled_from(ANNOTATORS)})

    def corr_table(self) -> pd.DataFrame:
        table = self.table({"r": self.numbers(-1, 1)[1], "ci_low": self.numbers(-1, 1)[1], "ci_high": self.numbers(-1, 1)[1],
                            "p_val": self.numbers(0, 1)[1], "method": st.just("spearman")})
        table.index = np.linspace(0.1, 1.0, len(table)) if self.draw(st.booleans()) else table.index
        return table

    def text(self):
        return self.draw(st.one_of(st.text(max_size=40), st.sampled_from(TEXTS + ["1. a\n2. b", "PASS\nfine", "FAIL", "1: fully\n2: none"]),
                                   st.none(), st.integers()))

    def option(self, value, bad_ok: bool = True):
        """An option as given, or now and then an object of no known type (which must be refused by name)."""
        return BadType() if bad_ok and self.draw(st.integers(0, 5)) == 0 else value


def _report(g: Gen):
    judge_, human = g.pair()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return calibrate.calibrate(judge_.astype(object), human.astype(object))
        except (ValueError, TypeError, KeyError):
            return calibrate.calibrate(pd.Series(["PASS", "FAIL", "PASS"]), pd.Series(["PASS", "FAIL", "FAIL"]))


RUBRIC = judge.Rubric("support", "Supported.", "Q: {input}\nA: {output}")
CHECKS = [checks.valid_json(), checks.max_length(20)]

# Each entry draws one call: a functools.partial of the public function, its inputs drawn by Gen.
GENERATED = {
    # agreement
    "agreement.ratings_from_labels": lambda g: partial(agreement.ratings_from_labels, g.label_records()),
    "agreement.krippendorff_alpha": lambda g: partial(
        agreement.krippendorff_alpha, g.ratings(), level=g.option(g.pick(agreement.LEVELS)), n_resamples=g.pick([0, 20]),
        rng=g.option(0)),
    "agreement.icc": lambda g: partial(agreement.icc, g.ratings(numeric=True), confidence_level=g.option(0.95)),
    "agreement.fleiss_kappa": lambda g: partial(agreement.fleiss_kappa, g.ratings(), n_resamples=g.pick([0, 20]),
                                                rng=g.option(0)),
    "agreement.cohen_kappa": lambda g: partial(agreement.cohen_kappa, g.ratings(), annotators=g.pick([None, ("ann", "bob")]),
                                               weights=g.option(g.pick([None, "linear"]))),
    "agreement.pairwise_agreement": lambda g: partial(agreement.pairwise_agreement, g.ratings(),
                                                      weights=g.option(g.pick([None, "quadratic"]))),
    "agreement.human_ceiling": lambda g: partial(agreement.human_ceiling, g.series(), g.ratings(numeric=True),
                                                 n_resamples=g.pick([0, 20]), rng=g.option(0)),
    "agreement.alternative_annotator_test": lambda g: partial(
        agreement.alternative_annotator_test, g.series(), g.ratings(), scoring=g.pick(["accuracy", "neg_rmse"]),
        epsilon=g.option(g.pick([0.0, 0.2])), min_items=g.pick([2, 3])),
    "agreement.position_consistency": lambda g: partial(agreement.position_consistency, g.decisions(),
                                                        by=g.pick([None, "judge"]), confidence_level=g.option(0.95)),
    "agreement.first_slot_preference": lambda g: partial(agreement.first_slot_preference, g.decisions(),
                                                         by=g.pick([None, "judge"]), confidence_level=g.option(0.95)),
    "agreement.length_bias": lambda g: partial(agreement.length_bias, g.decisions(), by=g.pick([None, "judge"]),
                                               confidence_level=g.option(0.95)),
    "agreement.self_preference": lambda g: partial(agreement.self_preference, g.decisions(),
                                                   confidence_level=g.option(0.95)),
    # calibrate
    "calibrate.calibrate": lambda g: partial(calibrate.calibrate, *(s.astype(object) for s in g.pair()),
                                             confidence_level=g.option(0.95)),
    "calibrate.cohen_kappa": lambda g: partial(calibrate.cohen_kappa, *(list(s) for s in g.pair()),
                                               weights=g.option(g.pick([None, "linear"]))),
    "calibrate.disagreements": lambda g: partial(calibrate.disagreements, g.results(), g.verdict_series()),
    "calibrate.corrected_pass_rate": lambda g: partial(calibrate.corrected_pass_rate, g.verdict_series(), _report(g),
                                                       n_resamples=g.pick([1, 50]), rng=g.option(0)),
    "calibrate.agreement_drift": lambda g: partial(calibrate.agreement_drift, g.verdict_series(), g.label_records(),
                                                   by=g.pick(["position", "labeller"]), bins=g.option(g.pick([1, 3]))),
    "calibrate.self_agreement": lambda g: partial(calibrate.self_agreement, g.label_records()),
    # cases, checks, claims, compare
    "cases.sample_cases": lambda g: partial(cases.sample_cases, g.cases_table(), g.pick([0, 1, 3, 20]),
                                            stratify=g.pick([None, "day"]), rng=g.option(0)),
    "checks.run_checks": lambda g: partial(checks.run_checks, g.cases_table(), g.option(CHECKS)),
    "claims.parse_claims": lambda g: partial(claims.parse_claims, g.text(), max_claims=g.option(3)),
    "claims.parse_claim_verdicts": lambda g: partial(claims.parse_claim_verdicts, g.text(), g.option(g.pick([0, 1, 2]))),
    "claims.parse_facts": lambda g: partial(claims.parse_facts, g.text(), max_claims=g.option(3)),
    "compare.paired": lambda g: partial(compare.paired, *(s.astype(object) for s in g.pair())),
    # correlate
    "correlate.correlate": lambda g: partial(correlate.correlate, *g.pair(), method=g.option(g.pick(correlate.METHODS)),
                                             n_resamples=g.pick([0, 30]), rng=g.option(0)),
    "correlate.mean_absolute_error": lambda g: partial(correlate.mean_absolute_error, *g.pair()),
    "correlate.compare_metrics": lambda g: partial(
        correlate.compare_metrics, *_three_series(g), test=g.option(g.pick(["williams", "bootstrap"])), n_resamples=30,
        rng=g.option(0)),
    "correlate.paired_bootstrap_tcva_paper": lambda g: partial(correlate.paired_bootstrap_tcva_paper, *_three_series(g),
                                                               n_resamples=g.option(30)),
    "correlate.select_temperature": lambda g: partial(correlate.select_temperature, g.verdict_table(), g.series(),
                                                      temperatures=g.option([0.2, 0.8]), folds=2, rng=g.option(0)),
    # density
    "density.whitespace_tokens": lambda g: partial(density.whitespace_tokens, g.text()),
    "density.fd_raw": lambda g: partial(density.fd_raw, g.doc_claims(), g.documents()),
    "density.length_bins": lambda g: partial(density.length_bins, g.series(), bins=g.option(g.pick([1, 3]))),
    "density.fd_star": lambda g: partial(density.fd_star, g.doc_claims(), g.documents(), bins=g.option(g.pick([1, 2, 3]))),
    "density.rescore": lambda g: partial(density.rescore, g.fd_table(), bins=g.option(2)),
    "density.length_bias": lambda g: partial(density.length_bias, g.fd_table(), confidence_level=g.option(0.95)),
    "density.tier_means": lambda g: partial(density.tier_means, g.fd_table(), column=g.pick(["fd_star", "fd_raw"])),
    "density.tier_spread": lambda g: partial(density.tier_spread, g.fd_table(), threshold=g.option(0.1)),
    "density.split_sentences": lambda g: partial(density.split_sentences, g.text()),
    "density.estimate_prob_fact": lambda g: partial(density.estimate_prob_fact, g.series(elements=st.one_of(
        st.sampled_from(TEXTS), st.none(), st.integers()))),
    "density.claims_from_text": lambda g: partial(density.claims_from_text, g.documents()),
    # infer
    "infer.mean": lambda g: partial(infer.mean, *g.pair(), method=g.option(g.pick([["ppi++", "classical", "judge"], "ppi"])),
                                    nan_policy=g.pick(["raise", "omit"])),
    "infer.difference": lambda g: partial(infer.difference, *_four_series(g), method=g.option(["ppi++", "classical"]),
                                          alternative=g.pick(["two-sided", "greater"])),
    "infer.pass_rate": lambda g: partial(infer.pass_rate, *_results_and_labels(g), method=g.option(["ppi++", "judge"])),
    "infer.expected_half_width": lambda g: partial(infer.expected_half_width, *g.pair(),
                                                   n_labelled=g.option(g.pick([2, [2, 3], 50]))),
    "infer.labels_needed": lambda g: partial(infer.labels_needed, *g.pair(), half_width=g.option(g.pick([0.1, 1.0]))),
    "infer.choose_cases": lambda g: partial(infer.choose_cases, g.series(), g.pick([1, 2, 5]), rng=g.option(0)),
    "infer.simulate": lambda g: partial(infer.simulate, *_same_cases(g), n_labelled=g.option(2), n_draws=20, rng=g.option(0)),
    # judge, labels, models
    "judge.parse_verdict": lambda g: partial(judge.parse_verdict, g.text()),
    "judge.render_prompts": lambda g: partial(judge.render_prompts, g.cases_table(), RUBRIC),
    "judge.plan": lambda g: partial(judge.plan, g.cases_table(), RUBRIC, model_id="m"),
    "judge.pass_rate": lambda g: partial(judge.pass_rate, g.results(g.pick([("PASS", "FAIL"), ("GOOD", "OK", "BAD")])),
                                         unparseable_alert=g.option(1.0), confidence_level=g.option(0.95)),
    "labels.latest_labels": lambda g: partial(labels.latest_labels, g.label_records(), mode=g.option("label"),
                                              by_labeller=g.pick([False, True])),
    "models.plan_calls": lambda g: partial(models.plan_calls, g.series(elements=st.one_of(st.sampled_from(TEXTS), st.none())),
                                           model_id="m"),
    "models.usage_summary": lambda g: partial(models.usage_summary, g.table({
        "cached": st.booleans(), "error": st.one_of(st.none(), st.just("boom")), "prompt_tokens": g.numbers(0, 100)[1],
        "completion_tokens": g.numbers(0, 100)[1]}), price_per_million=g.option({"prompt": 1.0, "completion": 2.0})),
    # plots (a drawing, or a clear error)
    "plots.temperature_sweep": lambda g: partial(_plot("temperature_sweep"), g.corr_table()),
    "plots.verdict_distribution": lambda g: partial(_plot("verdict_distribution"), g.verdict_table()),
    "plots.confusion": lambda g: partial(_plot("confusion"), _report(g)),
    "plots.calibration_rates": lambda g: partial(_plot("calibration_rates"), _report(g)),
    "plots.length_bias": lambda g: partial(_plot("length_bias"), g.fd_table()),
    "plots.fd_by_bin": lambda g: partial(_plot("fd_by_bin"), g.fd_table()),
    "plots.tier_share": lambda g: partial(_plot("tier_share"), g.table({
        "condition": st.sampled_from(["bm25", "hybrid"]), "share_review": g.numbers(0, 1)[1], "share_blog": g.numbers(0, 1)[1]})),
    "plots.label_budget": lambda g: partial(_plot("label_budget"), g.table({
        "n_labelled": st.integers(2, 200), "method": st.sampled_from(["ppi++", "classical"]),
        "half_width": g.numbers(0, 1)[1]}), half_width=g.option(g.pick([None, 0.05]))),
    "plots.human_ceiling": lambda g: partial(_plot("human_ceiling"), g.table({
        "kind": st.sampled_from(["annotator", "score"]), "name": st.sampled_from(["a", "b", "m"]), "r": g.numbers(-1, 1)[1],
        "ci_low": g.numbers(-1, 1)[1], "ci_high": g.numbers(-1, 1)[1], "n": st.integers(0, 50)})),
    # retrieval
    "retrieval.search": lambda g: _search(g),
    "retrieval.evaluate": lambda g: partial(retrieval.evaluate, g.runs(), g.qrels(), k=g.option(g.pick([1, 3]))),
    "retrieval.compare_conditions": lambda g: partial(retrieval.compare_conditions, g.metrics(), "bm25",
                                                      g.pick(["cosine", "hybrid"]), min_queries=g.option(0)),
    "retrieval.coverage": lambda g: _coverage(g),
    "retrieval.keywords": lambda g: partial(retrieval.keywords, g.text()),
    "retrieval.lsa_embeddings": lambda g: partial(retrieval.lsa_embeddings, list(g.series(elements=st.sampled_from(TEXTS))),
                                                  dim=g.option(2)),
    # tcva, verdicts
    "tcva.power_mean": lambda g: partial(tcva.power_mean, g.series().to_numpy(), g.option(g.pick([-8.0, 0.0, 1.0, 12.25, np.inf])),
                                         nan_policy=g.pick(["propagate", "omit"])),
    "tcva.temperature_to_p": lambda g: partial(tcva.temperature_to_p, g.option(g.pick([0.1, 0.5, 1.0, 1.5, np.nan]))),
    "tcva.p_to_temperature": lambda g: partial(tcva.p_to_temperature, g.option(g.pick([-8.0, 1.0, 12.25, 100.0, np.nan]))),
    "tcva.score": lambda g: partial(tcva.score, g.verdict_table(), g.option(g.pick([0.1, 0.5, 1.0]))),
    "tcva.sweep": lambda g: partial(tcva.sweep, g.verdict_table(), g.option([0.2, 0.9]), items=g.pick([None, IDS[:4]]),
                                    empty=g.pick([0.0, np.nan])),
    "verdicts.validate": lambda g: partial(verdicts.validate, g.verdict_table()),
    "verdicts.get_scale": lambda g: partial(verdicts.get_scale, g.option(g.pick(["default", "linear", {lvl: 0.5 for lvl in LEVELS}]))),
    "verdicts.level_counts": lambda g: partial(verdicts.level_counts, g.verdict_table(), items=g.pick([None, IDS[:4]])),
    "verdicts.items_index": lambda g: partial(verdicts.items_index, g.index()),
}


def _three_series(g: Gen):
    a = g.series()
    return a, g.series(g.related(a.index)), g.series(g.related(a.index))


def _four_series(g: Gen):
    a = g.series()
    human = g.series(g.related(a.index))
    return a, g.series(g.related(a.index)), human, g.series(g.related(human.index))


def _same_cases(g: Gen):
    judge_ = g.series()
    return judge_, g.series(g.related(judge_.index) if g.draw(st.booleans()) else judge_.index)


def _results_and_labels(g: Gen):
    results = g.results(g.pick([("PASS", "FAIL"), ("GOOD", "OK", "BAD")]))
    return results, g.verdict_series(g.related(pd.Index(results["case_id"].unique())))


def _plot(name: str):
    def draw(*args, **kwargs):
        import matplotlib.pyplot as plt

        from evalkit import plots

        try:
            return getattr(plots, name)(*args, **kwargs)
        finally:
            plt.close("all")

    draw.__wrapped__ = getattr(importlib.import_module("evalkit.plots"), name)
    return draw


def _search(g: Gen):
    documents, queries = g.documents(), g.table({"query_id": st.sampled_from(["q1", "q2"]),
                                                 "text": st.one_of(st.sampled_from(TEXTS), st.none())})
    condition = g.pick(["bm25", "cosine"])
    width = g.pick([2, 3])
    emb = lambda n: g.draw(st.lists(st.lists(g.numbers(-1, 1)[1], min_size=width, max_size=width), min_size=n, max_size=n))  # noqa: E731
    return partial(retrieval.search, documents, queries, condition=condition, k=g.option(g.pick([1, 2])),
                   doc_embeddings=emb(len(documents)), query_embeddings=emb(len(queries)))


def _coverage(g: Gen):
    claims_ = g.table({"claim_id": st.sampled_from(IDS), "text": st.sampled_from(TEXTS)})
    corpus = g.documents()
    emb = lambda n: g.draw(st.lists(st.lists(g.numbers(-1, 1)[1], min_size=2, max_size=2), min_size=n, max_size=n))  # noqa: E731
    return partial(retrieval.coverage, claims_, corpus, claim_embeddings=emb(len(claims_)), doc_embeddings=emb(len(corpus)),
                   sample_size=g.pick([None, 1, 3]), rng=g.option(0))


# Public callables not generated here: why, and where their bad input is tested (by name, in test_public_api).
NOT_GENERATED = {
    **dict.fromkeys(["checks.valid_json", "checks.required_fields", "checks.value_in", "checks.number_in_range",
                     "checks.max_length", "checks.regex"], "builds a Check from a few scalars (no table)"),
    **dict.fromkeys([
        "claims.extract_claims", "claims.judge_claims", "claims.extract_facts", "judge.run_judge", "models.call_many",
        "models.call_and_parse", "models.model_identity", "batch.submit", "batch.poll", "batch.collect", "batch.jobs",
        "batch.run_judge"], "calls a model or a provider: its bad input is tested with a fake model"),
    **dict.fromkeys([
        "cases.read_cases", "datasets.demo_path", "datasets.load_demo", "datasets.data_path", "datasets.load_tcva_release",
        "datasets.load_tcva_baseline", "datasets.load_llmbar", "datasets.load_summeval", "datasets.load_usr",
        "judge.save_results", "judge.load_results", "labels.read_labels", "labels.append_label", "labels.new_session_id"],
        "reads or writes files: its bad input is a bad file, tested with files"),
    **dict.fromkeys(["report.find_notebooks", "report.parse_params", "report.float_format", "report.run_notebook",
                     "report.build_report"], "runs notebooks (the 'report' extra)"),
}
# Public classes (result containers, exceptions, models, widgets) are constructed with checked fields, not fed
# tables: they are not generated here, and test_public_api's registry names the test of each.

# Defects the generated test found in code outside this change: name -> (the defect, a call that shows it). The
# generated test of these names may fail (a non-strict xfail); each call below is a strict xfail, so that fixing the
# defect fails its entry (remove it then) and the list only shrinks.
def _decisions(**columns):
    return pd.DataFrame(columns)


_GRID = pd.DataFrame({"item_id": [1, 1, 2, 2, 3, 3], "annotator": ["ann", "bob"] * 3, "rating": [3.0] * 6})
_METHOD = "`method` of another type than str or list ends in \"'int' object is not iterable\" (infer._methods)"
_SCORES = pd.Series([0.1, 0.4, 0.5, 0.9], index=list("abcd"))
KNOWN = {
    "agreement.icc": ("constant ratings give NaN ICCs (0/0) with numpy RuntimeWarnings and no EvalkitWarning",
                      partial(agreement.icc, _GRID)),
    "agreement.pairwise_agreement": (
        "a pair of annotators with no common item gets NaN agreement and kappa, documented but without a warning",
        partial(agreement.pairwise_agreement, pd.DataFrame({"item_id": [1, 1, 2, 2, 3], "annotator": ["ann", "bob", "ann", "bob", "cy"],
                                                             "rating": [1, 2, 2, 1, 1]}))),
    "agreement.human_ceiling": (
        "warns (correlate's warning) where a correlation is undefined, but its docstring does not say so",
        partial(agreement.human_ceiling, None, _GRID.assign(rating=[1.0, 2.0, 2.0, 1.0, 3.0, 3.0]).iloc[:4], n_resamples=0)),
    "agreement.position_consistency": (
        "a group with no case judged in both orders gets a NaN rate and interval without a warning",
        partial(agreement.position_consistency, _decisions(case_id=[1, 2], order=["original"] * 2, winner=["1", "2"]))),
    "agreement.first_slot_preference": (
        "an empty table, or a group without a parsed decision, gives a NaN rate, interval and p-value without a warning",
        partial(agreement.first_slot_preference, _decisions(order=["original"], winner=[None]))),
    "infer.mean": (_METHOD, partial(infer.mean, _SCORES, _SCORES[:3], method=5)),
    "infer.difference": (_METHOD, partial(infer.difference, _SCORES, _SCORES, _SCORES[:3], _SCORES[:3], method=5)),
    "infer.pass_rate": (_METHOD, partial(infer.pass_rate, pd.DataFrame({
        "case_id": list("abcd"), "rubric": "r", "rubric_version": "v", "model": "m", "verdict": ["PASS", "FAIL"] * 2,
        "error": None}), pd.Series(["PASS", "FAIL", "FAIL"], index=list("abc")), method=5)),
    "infer.expected_half_width": ("errors about `human_pilot` name `human` (infer._align)", partial(
        infer.expected_half_width, _SCORES, pd.Series([1.0, 2.0], index=["a", "a"]), n_labelled=[2])),
    "infer.labels_needed": ("errors about `human_pilot` name `human` (infer._align)", partial(
        infer.labels_needed, _SCORES, pd.Series([1.0, 2.0], index=["a", "a"]), half_width=0.1)),
    "labels.latest_labels": ("`mode` is not validated: an object of another type ends in pandas' NotImplementedError",
                             partial(labels.latest_labels, pd.DataFrame({"case_id": ["a"], "label": ["PASS"], "mode": ["label"]}),
                                     mode=BadType())),
    "models.usage_summary": ("`price_per_million` is not validated: a mapping is assumed (AttributeError otherwise)",
                             partial(models.usage_summary, pd.DataFrame({"cached": [False], "error": [None], "prompt_tokens": [10],
                                                                         "completion_tokens": [2]}), price_per_million=BadType())),
}

# Columns whose NaN is part of the documented result for every input (not a failure to explain), by call.
_NO_INTERVAL = lambda call: {"ci_low", "ci_high"} if call.keywords.get("n_resamples") == 0 else set()  # noqa: E731
NAN_BY_DESIGN = {
    "infer.mean": lambda call: {"lam"},  # NaN for the judge-only row: the judge gets no weight there
    "infer.difference": lambda call: {"lam"},
    "infer.pass_rate": lambda call: {"lam"},
    "correlate.correlate": _NO_INTERVAL,  # n_resamples=0 asks for no interval
    "agreement.krippendorff_alpha": _NO_INTERVAL,
    "agreement.fleiss_kappa": _NO_INTERVAL,
    "agreement.human_ceiling": _NO_INTERVAL,
}


# ------------------------------------------------------------------------------------------ checking
def _target(call: partial):
    func = call.func
    return getattr(func, "__wrapped__", func)


def _parameters(func) -> list[str]:
    sig = inspect.signature(func)
    return [p.name for p in sig.parameters.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]


def _names_a_parameter(message: str, params: list[str]) -> bool:
    for name in params:
        quoted = re.search(rf"[`'\"]{re.escape(name)}[`'\"\[=]", message)
        if quoted or (len(name) > 2 and re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", message)):
            return True
    return False


def _numbers(value, skip=frozenset()):
    """Every float the result holds (DataFrame float columns, Series, arrays, scalars, dataclass fields)."""
    if isinstance(value, pd.DataFrame):
        for column in value.columns:
            if column in skip:
                continue
            col = value[column]
            if pd.api.types.is_float_dtype(col) or (pd.api.types.is_extension_array_dtype(col) and
                                                     pd.api.types.is_float_dtype(col.dtype)):
                yield from (float(x) for x in col.to_numpy(dtype=float, na_value=np.nan))
    elif isinstance(value, (pd.Series, pd.Index)):
        if pd.api.types.is_float_dtype(value.dtype):
            yield from (float(x) for x in value.to_numpy(dtype=float, na_value=np.nan))
    elif isinstance(value, np.ndarray):
        if np.issubdtype(value.dtype, np.floating):
            yield from value.ravel().tolist()
    elif isinstance(value, (float, np.floating)):
        yield float(value)
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _numbers(item, skip)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            yield from _numbers(getattr(value, f.name), skip)


def check_outcome(name: str, call: partial) -> str:
    func = _target(call)
    params = _parameters(func)
    bad = [key for key, value in call.keywords.items() if isinstance(value, BadType)]
    bad += [params[i] for i, value in enumerate(call.args) if isinstance(value, BadType) and i < len(params)]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result = call()
        except (ValueError, TypeError, KeyError) as exc:
            message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
            if isinstance(exc, models.ParseError) and params[0] == "text":
                return "error"  # a parser's documented error: what is wrong with the text it was given
            assert _names_a_parameter(str(message), params), (
                f"{name} raised {type(exc).__name__} naming none of its parameters {params}: {message}")
            return "error"
        except Exception as exc:  # noqa: BLE001 - any other exception is the failure this test looks for
            raise AssertionError(f"{name} raised {type(exc).__name__}: {exc}") from exc
    assert not bad, f"{name} accepted {BadType()} for {bad} without an error"
    warned = [w for w in caught if issubclass(w.category, EvalkitWarning)]
    skip = NAN_BY_DESIGN[name](call) if name in NAN_BY_DESIGN else set()
    values = np.array(list(_numbers(result, skip)), dtype=float)
    if not np.isfinite(values).all():
        assert warned, (f"{name} returned {values[~np.isfinite(values)][:3].tolist()} with no EvalkitWarning "
                        f"(other warnings: {[str(w.message)[:80] for w in caught][:3]})")
    if warned:
        doc = (inspect.getdoc(func) or "") + (inspect.getdoc(inspect.getmodule(func)) or "")
        assert re.search(r"warn", doc, re.I), f"{name} warns ({warned[0].message}) but its docstring says nothing of it"
        return "warning"
    return "value"


# ---------------------------------------------------------------------------------------------- tests
def _public() -> set[str]:
    names = set()
    modules = [getattr(evalkit, n) for n in evalkit.__all__ if isinstance(getattr(evalkit, n), types.ModuleType)]
    for optional in ("report", "widgets"):
        try:
            modules.append(importlib.import_module(f"evalkit.{optional}"))
        except ImportError:
            pass
    for module in modules:
        names |= {f"{module.__name__.split('.')[-1]}.{n}" for n in module.__all__
                  if callable(getattr(module, n)) and not isinstance(getattr(module, n), type)}
    return names


def test_every_public_function_is_here():
    """Every public function (not class) is generated, or says why not and is named in test_public_api's registry."""
    from tests.test_public_api import ELSEWHERE, TAKES_JUDGE, TAKES_SCORES, TAKES_VERDICTS

    public = _public()
    here = set(GENERATED) | set(NOT_GENERATED)
    optional = {n for n in here if n.split(".")[0] in ("report", "widgets") and n not in public}  # extra not installed
    assert public == here - optional, f"not here: {sorted(public - here)}; stale: {sorted(here - optional - public)}"
    assert not set(GENERATED) & set(NOT_GENERATED)
    named = set(ELSEWHERE) | set(TAKES_VERDICTS) | set(TAKES_SCORES) | set(TAKES_JUDGE)
    missing = sorted(set(NOT_GENERATED) - named - optional)
    assert not missing, f"not generated and with no named test in test_public_api.ELSEWHERE: {missing}"


EXAMPLES = {"select_temperature": 10, "human_ceiling": 10, "length_bias": 10, "simulate": 10, "search": 10,
            "lsa_embeddings": 10, "alternative_annotator_test": 15}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=False, reason=KNOWN[n][0])) if n in KNOWN
                                  else n for n in sorted(GENERATED)])
def test_generated_bad_input(name):
    if name == "agreement.length_bias":
        pytest.importorskip("statsmodels.api", reason='length_bias needs the \'stats\' extra: pip install "evalkit[stats]"')
    spec = GENERATED[name]
    budget = EXAMPLES.get(name.split(".")[1], 25)

    # No shrinking: a failure reports the example as drawn, and the run stays within its budget.
    @settings(max_examples=budget, derandomize=True, database=None, deadline=None, print_blob=False,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        check_outcome(name, spec(Gen(data)))

    run()


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=KNOWN[n][0]))
                                  for n in KNOWN])
def test_known_defects_are_still_there(name):
    check_outcome(name, KNOWN[name][1])


def test_the_checker_refuses_what_it_should():
    """The three accepted outcomes, and the failures around them, on small stand-ins."""
    def quiet_nan(x):
        """Returns NaN."""
        return float("nan")

    def warned_nan(x):
        """Warns with an EvalkitWarning and returns NaN."""
        warnings.warn("undefined", EvalkitWarning, stacklevel=2)
        return float("nan")

    def unnamed(x):
        raise ValueError("something is wrong")

    def crash(x):
        return 1 / 0

    def ignores_option(x, *, level=1):
        return 1.0

    def refuses_option(x, *, level=1):
        if isinstance(level, BadType):
            raise TypeError("`level` must be an int")
        return 1.0

    assert check_outcome("warned", partial(warned_nan, 1)) == "warning"
    assert check_outcome("named", partial(refuses_option, 1, level=BadType())) == "error"
    assert check_outcome("finite", partial(refuses_option, 1)) == "value"
    for func, kwargs, message in ((quiet_nan, {}, "no EvalkitWarning"), (unnamed, {}, "naming none of its parameters"),
                                  (crash, {}, "ZeroDivisionError"), (ignores_option, {"level": BadType()}, "accepted")):
        with pytest.raises(AssertionError, match=message):
            check_outcome(func.__name__, partial(func, 1, **kwargs))
