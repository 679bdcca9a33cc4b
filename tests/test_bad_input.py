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
Runs are deterministic (``derandomize``, no example database) and budgeted (``max_examples`` per function: the budgets
below with ``--run-slow``, as CI runs, ``FAST_TIER_EXAMPLES`` in the fast tier);
``EVALKIT_BAD_INPUT_EXAMPLES=500 pytest tests/test_bad_input.py`` searches longer, on demand.
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import os
import re
import types
import warnings
from functools import partial
from pathlib import Path

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
    gate,
    infer,
    judge,
    labels,
    logs,
    models,
    pairwise,
    report,
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

pytestmark = pytest.mark.skipif(st is None, reason='generated bad input needs hypothesis: pip install "llm-evalkit[test]"')

LEVELS = ["none", "minor", "partial", "mostly", "fully"]
IDS = list("abcdefgh")
ANNOTATORS = ["ann", "bob", "cy", "dee"]
SYSTEMS = ["sys-a", "sys-b", "sys-c", "sys-d"]
COMPARISON_IDS = [f"c{i}" for i in range(12)]
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

    def comparisons(self) -> pd.DataFrame:
        """A comparisons table: ``system_a`` (shown first), ``system_b``, ``winner`` (a/b/tie), with a question, a rater,
        an order and a covariate; now and then an unknown or missing winner, a missing system, a system compared with
        itself, one system only, a system that never wins (no finite maximum) or a system of another type."""
        n = self.size()
        k = self.pick([1, 2, 3, 3, 4, 4])
        pool = SYSTEMS[:k]
        first = self.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n))
        shift = self.draw(st.lists(st.integers(1, max(k - 1, 1)), min_size=n, max_size=n))
        a = [pool[i] for i in first]
        b = [pool[(i + s) % k] for i, s in zip(first, shift, strict=True)]  # one system only: compared with itself
        winner = self.draw(st.lists(self.labels(["a", "b", "tie"]), min_size=n, max_size=n))
        mode = self.pick(["valid"] * 5 + ["never wins", "missing system", "self", "other type"])
        if mode == "never wins" and k > 1:  # the last system loses every comparison it is in
            winner = ["b" if x == pool[-1] else "a" if y == pool[-1] else w for x, y, w in zip(a, b, winner, strict=True)]
        elif mode in ("missing system", "self", "other type") and n:
            row = self.draw(st.integers(0, n - 1))
            a[row] = {"missing system": None, "self": b[row], "other type": 3}[mode]
        table = pd.DataFrame({"system_a": pd.Series(a, dtype=object), "system_b": pd.Series(b, dtype=object),
                              "winner": pd.Series(winner, dtype=object)})
        extra = self.table({"question_id": self.labels(["q1", "q2", "q3"]), "rater": st.sampled_from(["judge", "ann"]),
                            "order": st.sampled_from(["original", "swapped"]), "length_diff": self.numbers(-2, 2)[1]}, n)
        table = pd.concat([table, extra.reset_index(drop=True)], axis=1)
        ids = self.index(n, pool=COMPARISON_IDS)  # unique, or duplicate comparison ids
        table.insert(0, "comparison_id", list(ids))
        if self.draw(st.booleans()):
            table.index = ids
        return table

    def pairwise_labels(self) -> pd.DataFrame:
        """Label records of the labeller's pairwise mode: A (left), B (right) or TIE, and the systems as shown."""
        table = self.table({"case_id": st.sampled_from(COMPARISON_IDS[:4]), "label": self.labels(["A", "B", "TIE"]),
                            "labeller": st.sampled_from(ANNOTATORS[:2]), "system_left": self.labels(SYSTEMS[:3]),
                            "system_right": self.labels(SYSTEMS[:3]), "position": st.integers(0, 20),
                            "mode": st.sampled_from(["label", "label", "relabel"])})
        return table

    def runs_long(self) -> pd.DataFrame:
        """Several runs on the same cases, long (one row per case and run): verdicts or scores, by segment."""
        cases = IDS[: self.pick([0, 1, 3, 6, 8])]
        names = self.pick([["v1"], ["v1", "v2"], ["v1", "v2", "v3"]])
        grid = pd.MultiIndex.from_product([cases, names], names=["case_id", "run"]).to_frame(index=False)
        if len(grid) and self.draw(st.booleans()):  # some cases missing from some runs, or one twice
            keep = self.draw(st.lists(st.booleans(), min_size=len(grid), max_size=len(grid)))
            grid = grid[keep] if self.draw(st.booleans()) else pd.concat([grid, grid.iloc[:1]])
        n = len(grid)
        value = self.numbers(0, 1)[1] if self.draw(st.booleans()) else self.labels(["PASS", "FAIL"])
        values = self.draw(st.lists(value, min_size=n, max_size=n))
        segment = self.draw(st.lists(st.sampled_from(["en", "de"]), min_size=n, max_size=n))
        return grid.reset_index(drop=True).assign(verdict=pd.Series(values, dtype=object if n else float).infer_objects(),
                                                  segment=segment)

    def deepeval_result(self):
        """A deepeval EvaluationResult as its model_dump() dict: test results with metrics data, some fields odd."""
        good = self.pick(["valid", "valid", "valid", "odd"]) == "valid"
        number = st.floats(0, 1) if good else st.one_of(st.floats(0, 1), st.none(), st.just(np.nan), st.just(np.inf),
                                                         st.text(max_size=3), st.booleans())
        metric = st.fixed_dictionaries({
            "name": st.sampled_from(["Exact", "Relevancy"]) if good else st.one_of(st.sampled_from(["Exact"]), st.none(), st.integers()),
            "threshold": number, "success": st.booleans() if good else st.one_of(st.booleans(), st.none(), st.text(max_size=2)),
            "score": number, "reason": st.one_of(st.none(), st.sampled_from(TEXTS)),
            "evaluation_model": st.sampled_from([None, "gpt-4o"]), "error": st.sampled_from([None, None, None, "boom"])})
        test = st.fixed_dictionaries({
            "name": st.sampled_from(["t1", "t2", "t3"]) if good else st.one_of(st.sampled_from(["t1", "t1"]), st.none(), st.integers()),
            "input": st.sampled_from(TEXTS), "actual_output": st.one_of(st.sampled_from(TEXTS), st.none()),
            "expected_output": st.one_of(st.sampled_from(TEXTS), st.none()),
            "metrics_data": st.lists(metric, max_size=2) if good else st.one_of(st.lists(metric, max_size=2), st.none())})
        result = {"test_results": self.draw(st.lists(test, max_size=4))}
        return self.option(result) if good else self.draw(st.sampled_from([result, result, [result], None, {"other": 1}]))

    def ragas_frame(self) -> pd.DataFrame:
        """A ragas result table: the sample fields and one or two metric columns."""
        return self.table({"user_input": st.sampled_from(TEXTS), "response": st.one_of(st.sampled_from(TEXTS), st.none()),
                           "reference": st.sampled_from(TEXTS), "faithfulness": self.numbers(0, 1)[1],
                           **({"answer_relevancy": self.numbers(0, 1)[1]} if self.draw(st.booleans()) else {})})

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
    # calibrate
    "calibrate.calibrate": lambda g: partial(calibrate.calibrate, *(s.astype(object) for s in g.pair()),
                                             confidence_level=g.option(0.95)),
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
    "compare.paired": lambda g: _paired(g),
    "compare.detectable_difference": lambda g: partial(compare.detectable_difference, _plan_values(g, [1, 20, 100], integer=True),
                                                       discordant=_discordant(g), power=g.option(g.pick([0.8, 0.99, 0.01])),
                                                       alpha=g.option(g.pick([0.05, 0.5]))),
    "compare.cases_needed": lambda g: partial(compare.cases_needed, _plan_values(g, [0.05, -0.1, 0.3], integer=False),
                                              discordant=_discordant(g), power=g.option(g.pick([0.8, 0.5])),
                                              alpha=g.option(g.pick([0.05, 0.2]))),
    "compare.adjust_p_values": lambda g: partial(
        compare.adjust_p_values, pd.DataFrame({"p_val": g.series(index=pd.RangeIndex(g.size()))}),
        method=g.option(g.pick(["holm", "bonferroni", "bh", "by"]))),
    "compare.against_baseline": lambda g: partial(
        compare.against_baseline, g.runs_long(), baseline=g.pick(["v1", "v1", "v9"]), value="verdict",
        by=g.pick([None, "segment"]), adjust=g.option(g.pick(["holm", "bh"])), confidence_level=g.option(0.95),
        interval=g.option(g.pick([None, None, "tango", "t"])), smallest_change=g.option(g.pick([None, 0.1])),
        power=g.option(0.8), rng=g.option(0)),
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
    "density.length_bias": lambda g: partial(density.length_bias, g.fd_table(), confidence_level=g.option(0.95),
                                             method=g.option(g.pick(["spearman", "pearson"])),
                                             interval=g.pick(["studentized", "fisher"]), n_resamples=50, rng=0),
    "density.tier_means": lambda g: partial(density.tier_means, g.fd_table(), column=g.pick(["fd_star", "fd_raw"])),
    "density.tier_spread": lambda g: partial(density.tier_spread, g.fd_table(), threshold=g.option(0.1)),
    "density.split_sentences": lambda g: partial(density.split_sentences, g.text()),
    "density.estimate_prob_fact": lambda g: partial(density.estimate_prob_fact, g.series(elements=st.one_of(
        st.sampled_from(TEXTS), st.none(), st.integers()))),
    "density.claims_from_text": lambda g: partial(density.claims_from_text, g.documents()),
    # infer
    "infer.mean": lambda g: partial(infer.mean, *g.pair(), method=g.option(g.pick([["ppi++", "classical", "judge"], "ppi"])),
                                    nan_policy=g.pick(["raise", "omit"])),
    "infer.mean (jury)": lambda g: partial(infer.mean, _judges(g), g.series(g.related(pd.Index(IDS))),
                                           method=g.option(g.pick(["ppi++", ["ppi++", "classical", "judge"]])),
                                           interval=g.pick(["auto", "t", "betting"])),
    "infer.mean (probabilities)": lambda g: _active_mean(g, method=g.option(g.pick(["ppi++", "classical"])),
                                                    interval=g.pick(["auto", "t", "betting"])),
    "infer.sampling_probabilities": lambda g: partial(
        infer.sampling_probabilities, _judges(g) if g.draw(st.booleans()) else g.series(),
        human_pilot=g.pick([None, g.series(g.related(pd.Index(IDS)))]), floor=g.option(g.pick([0.5, 1.0, 0.0, 2.0]))),
    "infer.jury": lambda g: partial(infer.jury, _judges(g), g.series(g.related(pd.Index(IDS))),
                                    folds=g.option(g.pick([2, 5, 1]))),
    "infer.difference": lambda g: partial(infer.difference, *_four_series(g), method=g.option(["ppi++", "classical"]),
                                          alternative=g.pick(["two-sided", "greater"])),
    "infer.pass_rate": lambda g: partial(infer.pass_rate, *_results_and_labels(g), method=g.option(["ppi++", "judge"])),
    "infer.pass_rate (jury)": lambda g: _jury_pass_rate(g),
    "infer.expected_half_width": lambda g: partial(infer.expected_half_width, *g.pair(),
                                                   n_labelled=g.option(g.pick([2, [2, 3], 50]))),
    "infer.labels_needed": lambda g: partial(infer.labels_needed, *g.pair(), half_width=g.option(g.pick([0.1, 1.0]))),
    "infer.confidence_sequence": lambda g: _confidence_sequence(g),
    "infer.confidence_sequence (probabilities)": lambda g: _active_sequence(g),
    "infer.stopping_point": lambda g: partial(infer.stopping_point, g.table({
        "n_labelled": st.integers(1, 50), "half_width": g.numbers(0, 1)[1]}), half_width=g.option(g.pick([0.05, 0.5, -1.0]))),
    "infer.choose_cases": lambda g: partial(infer.choose_cases, g.series(), g.pick([1, 2, 5]), rng=g.option(0)),
    "infer.simulate": lambda g: partial(infer.simulate, *_same_cases(g), n_labelled=g.option(2), n_draws=20, rng=g.option(0)),
    "infer.systems": lambda g: partial(infer.systems, _responses(g), bounds=g.pick([None, (0.0, 5.0), (1.0, 0.0)]),
                                       confidence_level=g.option(0.95)),
    "infer.system_differences": lambda g: partial(infer.system_differences, _responses(g),
                                                  baseline=g.pick([None, "s0", "nope"]), adjust=g.option(None)),
    # judge, labels, models
    "judge.parse_verdict": lambda g: partial(judge.parse_verdict, g.text()),
    "judge.render_prompts": lambda g: partial(judge.render_prompts, g.cases_table(), RUBRIC),
    "judge.plan": lambda g: partial(judge.plan, g.cases_table(), RUBRIC, model_id="m"),
    "judge.results_from_verdicts": lambda g: partial(
        judge.results_from_verdicts,
        g.table({"case_id": st.sampled_from(IDS) if g.draw(st.booleans()) else st.text("abc", min_size=1, max_size=2),
                 "verdict": g.labels(["PASS", "FAIL"]), "score": g.numbers(0, 1)[1]}),
        rubric=g.option(g.pick(["faithful", judge.UNSUPPORTED_CLAIMS])), model=g.option("my-judge")),
    "judge.consistency": lambda g: partial(judge.consistency, _log_table(g), confidence_level=g.option(0.95)),
    "judge.identity": lambda g: partial(judge.identity, g.results()),
    "judge.identity_changes": lambda g: partial(judge.identity_changes, g.results(), g.results()),
    "gate.decide": lambda g: partial(gate.decide, _log_table(g), _log_table(g), margin=g.option(g.pick([0.0, 0.05])),
                                     confidence_level=g.option(0.95), max_broken=g.option(g.pick([0.05, 1.0]))),
    "judge.pass_rate": lambda g: partial(judge.pass_rate, _log_table(g), unparseable_alert=g.option(1.0),
                                         confidence_level=g.option(0.95),
                                         interval=g.option(g.pick(["auto", "clopper-pearson", "wilson", "betting", "t"])),
                                         pass_levels=g.pick([None, None, ["PASS"], ["GOOD", "OK"]])),
    "labels.latest_labels": lambda g: partial(labels.latest_labels, g.label_records(), mode=g.option("label"),
                                              by_labeller=g.pick([False, True])),
    # logs (the readers of in-memory results, and the clustered pass rate)
    "logs.from_deepeval": lambda g: partial(logs.from_deepeval, g.deepeval_result(), model=g.option("m")),
    "logs.from_ragas": lambda g: partial(logs.from_ragas, g.ragas_frame(), model=g.option("m"), threshold=g.option(
        g.pick([0.5, 0.8, {"faithfulness": 0.7}, {"faithfulness": 0.7, "answer_relevancy": 0.5}, np.nan]))),
    "models.plan_calls": lambda g: partial(models.plan_calls, g.series(elements=st.one_of(st.sampled_from(TEXTS), st.none())),
                                           model_id="m"),
    "models.usage_summary": lambda g: partial(models.usage_summary, g.table({
        "cached": st.booleans(), "error": st.one_of(st.none(), st.just("boom")), "prompt_tokens": g.numbers(0, 100)[1],
        "completion_tokens": g.numbers(0, 100)[1]}), price_per_million=g.option({"prompt": 1.0, "completion": 2.0})),
    # pairwise
    "pairwise.validate": lambda g: partial(pairwise.validate, g.comparisons()),
    "pairwise.comparisons_from_llmbar": lambda g: partial(pairwise.comparisons_from_llmbar, g.decisions()),
    "pairwise.comparisons_from_labels": lambda g: partial(pairwise.comparisons_from_labels, g.pairwise_labels()),
    "pairwise.win_rates": lambda g: partial(pairwise.win_rates, g.comparisons(), ties=g.option(g.pick(["half", "drop"]))),
    "pairwise.bradley_terry": lambda g: partial(pairwise.bradley_terry, g.comparisons(), **_bt_options(g),
                                                anchor=g.pick([None, None, "sys-a", "sys-z"])),
    "pairwise.bradley_terry_effects": lambda g: partial(pairwise.bradley_terry_effects, g.comparisons(), **_bt_options(g)),
    "pairwise.rank_sets": lambda g: _rank_sets(g),
    "pairwise.position_consistency": lambda g: partial(pairwise.position_consistency, g.decisions(),
                                                       by=g.pick([None, "judge"]), confidence_level=g.option(0.95)),
    "pairwise.first_slot_preference": lambda g: partial(pairwise.first_slot_preference, g.decisions(),
                                                        by=g.pick([None, "judge"]), confidence_level=g.option(0.95)),
    "pairwise.length_bias": lambda g: partial(pairwise.length_bias, g.decisions(), by=g.pick([None, "judge"]),
                                              cluster=g.option(g.pick(["case_id", None])), confidence_level=g.option(0.95)),
    "pairwise.self_preference": lambda g: partial(pairwise.self_preference, g.decisions(),
                                                  by=g.pick([None, "judge", ["judge", "model_1"]]),
                                                  confidence_level=g.option(0.95)),
    # plots (a drawing, or a clear error)
    "plots.temperature_sweep": lambda g: partial(_plot("temperature_sweep"), g.corr_table()),
    "plots.verdict_distribution": lambda g: partial(_plot("verdict_distribution"), g.verdict_table()),
    "plots.confusion": lambda g: partial(_plot("confusion"), _report(g)),
    "plots.calibration_rates": lambda g: partial(_plot("calibration_rates"), _report(g)),
    "plots.length_bias": lambda g: partial(_plot("length_bias"), g.fd_table()),
    "plots.fd_by_bin": lambda g: partial(_plot("fd_by_bin"), g.fd_table()),
    "plots.tier_share": lambda g: partial(_plot("tier_share"), g.table({
        "condition": st.sampled_from(["bm25", "hybrid"]), "share_review": g.numbers(0, 1)[1], "share_blog": g.numbers(0, 1)[1]})),
    "plots.hybrid_weight": lambda g: partial(_plot("hybrid_weight"), g.table({
        "condition": st.sampled_from(["hybrid", "cosine"]), "alpha": g.numbers(0, 1)[1], "ndcg": g.numbers(0, 1)[1]}),
        default=g.option(g.pick([None, 0.5]))),
    "plots.label_budget": lambda g: partial(_plot("label_budget"), g.table({
        "n_labelled": st.integers(2, 200), "method": st.sampled_from(["ppi++", "classical"]),
        "half_width": g.numbers(0, 1)[1]}), half_width=g.option(g.pick([None, 0.05]))),
    "plots.human_ceiling": lambda g: partial(_plot("human_ceiling"), g.table({
        "kind": st.sampled_from(["annotator", "score"]), "name": st.sampled_from(["a", "b", "m"]), "r": g.numbers(-1, 1)[1],
        "ci_low": g.numbers(-1, 1)[1], "ci_high": g.numbers(-1, 1)[1], "n": st.integers(0, 50),
        **({"held_out": st.sampled_from(["a", "b"])} if g.draw(st.booleans()) else {})})),
    "plots.ratings": lambda g: partial(_plot("ratings"), _ratings_table(g)),
    "plots.rank_sets": lambda g: partial(_plot("rank_sets"), g.table({
        "system": st.sampled_from(SYSTEMS), "estimate": g.numbers(0, 1)[1], "rank_low": g.numbers(1, 4)[1],
        "rank_high": g.numbers(1, 4)[1]})),
    "plots.win_rates": lambda g: partial(_plot("win_rates"), _win_matrix(g)),
    "plots.system_estimates": lambda g: partial(_plot("system_estimates"), g.table({
        "system": st.sampled_from(SYSTEMS), "estimate": g.numbers(0, 1)[1], "ci_low": g.numbers(0, 1)[1],
        "ci_high": g.numbers(0, 1)[1]})),
    # retrieval
    "retrieval.search": lambda g: _search(g),
    "retrieval.evaluate": lambda g: partial(retrieval.evaluate, g.runs(), g.qrels(), k=g.option(g.pick([1, 3]))),
    "retrieval.compare_conditions": lambda g: partial(retrieval.compare_conditions, g.metrics(), "bm25",
                                                      g.pick(["cosine", "hybrid"]), min_queries=g.option(0)),
    "report.formatted": lambda g: partial(report.formatted, _ratings_table(g), decimals=g.pick([0, 3])),
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


def _paired(g: Gen):
    """Two runs, now and then with clusters: a Series of cluster ids (by case id, some cases missing), a sequence (of
    the right length or not), or an object of no known type."""
    a, b = (s.astype(object) for s in g.pair())
    how = g.pick([None, None, "series", "series", "sequence", "bad"])
    ids = pd.Index(pd.unique(a.index))
    if how == "series":
        cluster = pd.Series(g.draw(st.lists(st.sampled_from(["q1", "q2", "q3"]), min_size=len(ids), max_size=len(ids))),
                            index=ids, dtype=object)
        cluster = cluster.iloc[: g.draw(st.integers(0, len(cluster)))] if g.draw(st.booleans()) else cluster
    elif how == "sequence":
        cluster = g.draw(st.lists(st.integers(0, 2), max_size=len(ids) + 1))
    else:
        cluster = BadType() if how == "bad" else None
    return partial(compare.paired, a, b, cluster=cluster, interval=g.option(g.pick([None, None, "newcombe", "betting"])))


def _three_series(g: Gen):
    a = g.series()
    return a, g.series(g.related(a.index)), g.series(g.related(a.index))


def _four_series(g: Gen):
    a = g.series()
    human = g.series(g.related(a.index))
    return a, g.series(g.related(a.index)), human, g.series(g.related(human.index))


def _judges(g: Gen) -> pd.DataFrame:
    """Several judges' scores of the same cases (a jury), each column possibly bad, the index possibly repeated."""
    index = g.index()
    frame = pd.DataFrame({name: g.series(index) for name in g.pick([["a"], ["a", "b"], ["a", "b", "c"]])})
    if g.draw(st.booleans()) and frame.shape[1] > 1:
        frame.columns = ["a"] * frame.shape[1]  # a judge named twice
    return frame


def _drawn(g: Gen):
    """Judge scores, labels and draw probabilities (each possibly bad or misaligned) for active labelling."""
    judge_, human = g.pair()
    probabilities = g.series(g.related(judge_.index))
    return judge_, human, g.option(probabilities)


def _active_mean(g: Gen, **options):
    judge_, human, probabilities = _drawn(g)
    return partial(infer.mean, judge_, human, probabilities=probabilities, **options)


def _same_cases(g: Gen):
    judge_ = g.series()
    return judge_, g.series(g.related(judge_.index) if g.draw(st.booleans()) else judge_.index)


def _responses(g: Gen) -> pd.DataFrame:
    """A several-system responses table: system, case, judge score, label (NaN: unlabelled), each possibly bad."""
    n = g.size()
    table = g.table({"system": st.sampled_from(["s0", "s1", "s2"]), "case_id": st.sampled_from(IDS),
                     "judge": g.numbers(0, 1)[1], "human": st.one_of(g.numbers(0, 5)[1], st.just(np.nan))}, n)
    return table.drop_duplicates(["system", "case_id"]) if g.draw(st.booleans()) else table


def _results_and_labels(g: Gen):
    results = g.results(g.pick([("PASS", "FAIL"), ("GOOD", "OK", "BAD")]))
    return results, g.verdict_series(g.related(pd.Index(results["case_id"].unique())))


def _jury_pass_rate(g: Gen):
    """Several judges' results tables (a dict, now and then a list or an empty one), each possibly bad, on cases that
    may differ between them, and labels of some of them."""
    results, human = _results_and_labels(g)
    tables = {"first": results}
    for name in g.pick([[], ["second"], ["second", "third"]]):
        tables[name] = g.pick([results.assign(verdict=results["verdict"].sample(frac=1, random_state=0).to_numpy()),
                               g.results(), results.iloc[1:], results.assign(model=name)])
    form = g.pick(["dict", "dict", "list", "empty"])
    given = tables if form == "dict" else list(tables.values()) if form == "list" else {}
    return partial(infer.pass_rate, given, human, method=g.option(g.pick(["ppi++", ["ppi++", "classical", "judge"]])),
                   interval=g.pick(["auto", "t", "betting"]))


def _plan_values(g: Gen, good: list, *, integer: bool):
    """A planner's n or difference: one value, a list, or an odd one (NaN, inf, zero, negative, text, empty)."""
    odd = [np.nan, np.inf, 0, -3, "10", [], [good[0], np.nan], True] + ([2.5] if integer else [2.0])
    return g.pick(good + [good[:2]] * 2 + odd) if g.draw(st.integers(0, 2)) else g.pick(good)


def _discordant(g: Gen):
    """The share of flipping cases: a number (now and then out of range), or a pilot comparison."""
    if g.draw(st.integers(0, 3)) == 0:
        a, b = g.pair()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return compare.paired(a.astype(object), b.astype(object))
            except (ValueError, TypeError, KeyError):
                pass
    return g.option(g.pick([0.1, 0.3, 0.05, 1.0, 0.0, -0.2, 1.5, np.nan]))


def _confidence_sequence(g: Gen):
    numeric = g.draw(st.booleans())
    judge_ = g.pick([None, g.series() if numeric else g.verdict_series()])
    index = g.related(judge_.index) if judge_ is not None else None
    human = g.series(index) if numeric else g.verdict_series(index)
    return partial(infer.confidence_sequence, judge_, human, statistic=g.option(g.pick(list(infer.STATISTICS))),
                   method=g.option(g.pick(["ppi++", "classical"])), confidence_level=g.option(0.95),
                   bounds=g.pick([None, None, (0.0, 1.0), (0.0, 5.0), (1.0, 0.0)]))


def _active_sequence(g: Gen):
    judge_, human, probabilities = _drawn(g)
    return partial(infer.confidence_sequence, g.pick([judge_, None]), human, probabilities=probabilities,
                   statistic=g.option("mean"), method=g.option(g.pick(["ppi++", "classical", "ppi"])),
                   bounds=g.pick([None, (0.0, 1.0), (0.0, 5.0), (1.0, 0.0)]))


def _log_table(g: Gen) -> pd.DataFrame:
    """A results table as a log reader returns it: epochs of one case share a sample_id, with a score."""
    table = g.results(g.pick([("PASS", "FAIL"), ("GOOD", "OK", "BAD")]))
    if g.draw(st.booleans()):
        table["sample_id"] = g.draw(st.lists(g.labels(IDS[:3]), min_size=len(table), max_size=len(table)))
    if g.draw(st.booleans()):
        table["score"] = g.draw(st.lists(g.numbers(0, 1)[1], min_size=len(table), max_size=len(table)))
    return table


def _bt_options(g: Gen) -> dict:
    return {"ties": g.option(g.pick(["half", "drop"])), "position": g.option(g.pick([False, True])),
            "covariates": g.pick([None, None, "length_diff"]), "interval": g.option(g.pick(["sandwich", "bootstrap"])),
            "cluster": g.pick([None, "question_id"]), "confidence_level": g.option(0.95), "n_resamples": 20,
            "rng": g.option(0)}


def _rank_sets(g: Gen):
    """The judge on every comparison, humans on some (a subset, or misaligned ids), as a table or a Series."""
    judge_ = g.comparisons().drop(columns="comparison_id")
    judge_.index = g.index(len(judge_), pool=COMPARISON_IDS)
    ids = g.related(judge_.index)
    human = pd.Series(g.draw(st.lists(g.labels(["a", "b", "tie"]), min_size=len(ids), max_size=len(ids))), index=ids,
                      name="winner", dtype=object)
    if g.draw(st.booleans()) and judge_.index.is_unique and ids.is_unique:
        human = judge_.reindex(ids)[["system_a", "system_b"]].assign(winner=human)
    return partial(pairwise.rank_sets, judge_, human, confidence_level=g.option(0.95),
                   method=g.option(g.pick(["ppr", "human", "judge"])), sets=g.option(g.pick(["stepdown", "max-t", "bonferroni", "ellipsoid"])))


def _ratings_table(g: Gen) -> pd.DataFrame:
    if g.draw(st.booleans()):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                return pairwise.bradley_terry(g.comparisons())
            except (ValueError, TypeError, KeyError):
                pass
    return g.table({"system": st.sampled_from(SYSTEMS), "rating": g.numbers(900, 1100)[1], "ci_low": g.numbers(800, 1000)[1],
                    "ci_high": g.numbers(1000, 1200)[1]})


def _win_matrix(g: Gen) -> pd.DataFrame:
    if g.draw(st.booleans()):
        try:
            return pairwise.win_rates(g.comparisons())
        except (ValueError, TypeError, KeyError):
            pass
    k = g.pick([0, 1, 2, 3])
    rows = g.draw(st.lists(st.lists(g.numbers(0, 1)[1], min_size=k, max_size=k), min_size=k, max_size=k))
    names = SYSTEMS[:k]
    return pd.DataFrame(rows, index=names, columns=names if g.draw(st.integers(0, 4)) else names[::-1], dtype=object)


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
    "gate.check": "gate.decide with an exception on a regression (by design); decide is generated here",
    "judge.verdict_score": "a kernel on one reply's log-probabilities, NaN by design when no alternative names a level",
    **dict.fromkeys(["checks.valid_json", "checks.required_fields", "checks.value_in", "checks.number_in_range",
                     "checks.max_length", "checks.regex"], "builds a Check from a few scalars (no table)"),
    **dict.fromkeys([
        "claims.extract_claims", "claims.judge_claims", "claims.extract_facts", "judge.run_judge", "models.call_many",
        "models.call_and_parse", "models.model_identity", "batch.submit", "batch.poll", "batch.collect", "batch.jobs",
        "batch.run_judge", "judge.rejudge"], "calls a model or a provider: its bad input is tested with a fake model"),
    **dict.fromkeys([
        "cases.read_cases", "datasets.demo_path", "datasets.load_demo", "datasets.data_path", "datasets.load_tcva_release",
        "datasets.load_tcva_baseline", "datasets.load_llmbar", "datasets.load_summeval", "datasets.load_usr",
        "datasets.load_healthfc",
        "judge.save_results", "judge.load_results", "gate.read_run", "labels.read_labels", "labels.append_label",
        "labels.new_session_id"],
        "reads or writes files: its bad input is a bad file, tested with files"),
    **dict.fromkeys(["logs.read_inspect", "logs.read_promptfoo", "logs.read_lm_eval", "logs.read_openai_evals",
                     "datasets.load_arena"], "reads a tool's log or a data set's files: its bad input is a bad file, tested "
                                             "with files"),
    **dict.fromkeys(["report.find_notebooks", "report.parse_params", "report.float_format", "report.run_notebook",
                     "report.build_report"], "runs notebooks (the 'report' extra)"),
    "report.use_formatted": "sets how the running IPython session shows tables (no table in)",
}
# Public classes (result containers, exceptions, models, widgets) are constructed with checked fields, not fed
# tables: they are not generated here, and test_public_api's registry names the test of each.

# Defects the generated test found and that are not fixed yet: name -> (the defect, a call that shows it, whether the
# default budget meets it). Where it does, the generated test of that name may fail (a non-strict xfail); a defect
# met only by a longer search (EVALKIT_BAD_INPUT_EXAMPLES) leaves it strict. Each call below is a strict xfail, so
# that fixing the defect fails its entry (move it to FOUND then) and the list only shrinks.
KNOWN: dict = {}


def _decisions(**columns):
    return pd.DataFrame(columns)


def _comparisons(system_a, system_b, winner, **columns):
    return pd.DataFrame({"system_a": pd.Series(system_a, dtype=object), "system_b": system_b, "winner": winner, **columns})


_GRID = pd.DataFrame({"item_id": [1, 1, 2, 2, 3, 3], "annotator": ["ann", "bob"] * 3, "rating": [3.0] * 6})
_SCORES = pd.Series([0.1, 0.4, 0.5, 0.9], index=list("abcd"))
_RESULTS = pd.DataFrame({"case_id": list("abcd"), "rubric": "r", "rubric_version": "v", "model": "m",
                         "verdict": ["PASS", "FAIL"] * 2, "error": None})
_MIXED = _comparisons(["x", 3, "y", "x", 3, "y"], ["y", "x", 3, 3, "y", "x"], ["a", "b", "tie", "a", "b", "a"])
# the same comparisons three times: every system in 12, enough human votes (MIN_RANK_VOTES) for a rank-set
_MIXED_3 = pd.concat([_MIXED] * 3, ignore_index=True)
_DEEPEVAL = {"test_results": [{"name": "t1", "metrics_data": [{"name": "Exact", "threshold": 0.5, "success": True,
                                                               "score": 1.0, "error": None}]}]}
_METRIC = _DEEPEVAL["test_results"][0]["metrics_data"][0]
_CALLS = pd.DataFrame({"cached": [False], "error": [None], "prompt_tokens": [10], "completion_tokens": [2]})
# Defects the generated test found, fixed: (name, the defect, a call that showed it, the outcome it has now). Each
# call is checked as the generated calls are and must end in that outcome, so that none comes back.
FOUND = [
    ("infer.simulate", "scores of 1e12 beside small ones: one-pass variances rounded below 0 and their root was NaN "
     "(numpy's 'invalid value encountered in sqrt', no EvalkitWarning)",
     partial(infer.simulate, pd.Series([3.0, 0.0, 4.0, 1e12, 2.0], index=list("chdbe")),
             pd.Series([-1e12, 1e-300, 5.0, 3.0, 5.0], index=list("chdbe")), n_labelled=2, n_draws=20, rng=0), "value"),
    ("agreement.icc", "constant ratings gave NaN ICCs (0/0) with numpy RuntimeWarnings and no EvalkitWarning",
     partial(agreement.icc, _GRID), "warning"),
    ("agreement.icc", "exact agreement gave ICC intervals of inf / inf (NaN) and an infinite F without a warning",
     partial(agreement.icc, _GRID.assign(rating=[1.0, 1.0, 2.0, 2.0, 3.0, 3.0])), "warning"),
    ("agreement.pairwise_agreement", "a pair of annotators with no common item got NaN agreement and kappa without a warning",
     partial(agreement.pairwise_agreement, pd.DataFrame({"item_id": [1, 1, 2, 2, 3], "annotator": ["ann", "bob", "ann", "bob", "cy"],
                                                          "rating": [1, 2, 2, 1, 1]})), "warning"),
    ("agreement.human_ceiling", "warned (correlate's warning) where a correlation is undefined; its docstring did not say so",
     partial(agreement.human_ceiling, None, _GRID.assign(rating=[1.0, 2.0, 2.0, 1.0, 3.0, 3.0]).iloc[:4], n_resamples=0),
     "warning"),
    ("pairwise.position_consistency", "a group with no case judged in both orders got a NaN rate and interval without a warning",
     partial(pairwise.position_consistency, _decisions(case_id=[1, 2], order=["original"] * 2, winner=["1", "2"])), "warning"),
    ("pairwise.first_slot_preference", "a group without a decision parsed in both orders got a NaN rate, interval and "
     "p-value without a warning", partial(pairwise.first_slot_preference, _decisions(
         case_id=[1, 1, 2, 2], order=["original", "swapped"] * 2, winner=[None, "1", "2", None], judge=["m1", "m1", "m2", "m2"]),
         by="judge"), "warning"),
    ("pairwise.self_preference", "warned on decisions where the judge's own model wrote neither output (a NaN row); its "
     "docstring did not say so", partial(pairwise.self_preference, _decisions(
         judge=["m1"], model_1=["m2"], model_2=["m3"], winner=["1"], label=["1"])), "warning"),
    ("pairwise.win_rates", "system names of mixed types (3 beside 'x') ended in \"'<' not supported\"",
     partial(pairwise.win_rates, _MIXED), "value"),
    ("pairwise.rank_sets", "system names of mixed types ended in \"'<' not supported\"",
     partial(pairwise.rank_sets, _MIXED_3, _MIXED_3["winner"]), "value"),
    ("pairwise.validate", "a system_b held by pyarrow beside a system_a of objects with a number ended in pyarrow's "
     "ArrowTypeError", partial(pairwise.validate, _comparisons(["x", 1.5], ["y", "x"], ["a", "b"])), "value"),
    ("compare.against_baseline", "warned for a run that shares no case with the baseline; its docstring did not say so",
     partial(compare.against_baseline, pd.DataFrame({"case_id": ["a", "b", "c"], "run": ["v1", "v1", "v2"],
                                                     "verdict": ["PASS", "FAIL", "PASS"]}), baseline="v1"), "warning"),
    ("infer.mean", "`method` of another type than str or list ended in \"'int' object is not iterable\"",
     partial(infer.mean, _SCORES, _SCORES[:3], method=5), "error"),
    ("infer.difference", "`method` of another type ended in \"'int' object is not iterable\"",
     partial(infer.difference, _SCORES, _SCORES, _SCORES[:3], _SCORES[:3], method=5), "error"),
    ("infer.pass_rate", "`method` of another type ended in \"'int' object is not iterable\"",
     partial(infer.pass_rate, _RESULTS, pd.Series(["PASS", "FAIL", "FAIL"], index=list("abc")), method=5), "error"),
    ("infer.expected_half_width", "errors about `human_pilot` named `human`",
     partial(infer.expected_half_width, _SCORES, pd.Series([1.0, 2.0], index=["a", "a"]), n_labelled=[2]), "error"),
    ("infer.labels_needed", "errors about `human_pilot` named `human`",
     partial(infer.labels_needed, _SCORES, pd.Series([1.0, 2.0], index=["a", "a"]), half_width=0.1), "error"),
    ("infer.confidence_sequence", "labels all equal, without bounds, gave a NaN sequence without a warning",
     partial(infer.confidence_sequence, human=pd.Series([3.0, 3.0], index=["a", "b"])), "warning"),
    ("infer.stopping_point", "a half_width column of text ended in \"could not convert string to float\"",
     partial(infer.stopping_point, pd.DataFrame({"n_labelled": [1, 2], "half_width": ["0.4", ""]}), half_width=0.1), "error"),
    ("labels.latest_labels", "`mode` was not validated: an object of another type ended in pandas' NotImplementedError",
     partial(labels.latest_labels, pd.DataFrame({"case_id": ["a"], "label": ["PASS"], "mode": ["label"]}), mode=BadType()),
     "error"),
    ("logs.from_deepeval", "an infinite score was kept as a score, quietly (then refused for every metric; now that "
     "metric's error row, with a warning)",
     partial(logs.from_deepeval, {"test_results": [{**_DEEPEVAL["test_results"][0], "metrics_data": [{**_METRIC, "score": np.inf}]}]}),
     "warning"),
    ("logs.from_deepeval", "a score of text ended in \"could not convert string to float\" (now its error row)",
     partial(logs.from_deepeval, {"test_results": [{**_DEEPEVAL["test_results"][0], "metrics_data": [{**_METRIC, "score": "high"}]}]}),
     "warning"),
    ("logs.from_deepeval", "a success of text refused the whole result (now that metric's error row)",
     partial(logs.from_deepeval, {"test_results": [{**_DEEPEVAL["test_results"][0], "metrics_data": [{**_METRIC, "success": "yes"}]}]}),
     "warning"),
    ("logs.from_deepeval", "two test results of one name were two rows of one case, quietly",
     partial(logs.from_deepeval, {"test_results": [_DEEPEVAL["test_results"][0]] * 2}), "error"),
    ("logs.from_ragas", "one value of text in a metric column dropped the whole metric, quietly (now its error row)",
     partial(logs.from_ragas, pd.DataFrame({"user_input": ["q1", "q2", "q3"], "faithfulness": [0.9, "n/a", 0.4]}),
             threshold=0.5), "warning"),
    ("logs.from_ragas", "an infinite score passed every threshold, quietly",
     partial(logs.from_ragas, pd.DataFrame({"faithfulness": [0.9, np.inf]}), threshold=0.5), "warning"),
    ("judge.pass_rate", "a score column of text ended in \"dtype 'str' does not support operation 'mean'\"",
     partial(judge.pass_rate, _RESULTS.assign(score=["1", "0", "1", "0"])), "error"),
    ("models.usage_summary", "`price_per_million` was not validated: a mapping was assumed (AttributeError otherwise)",
     partial(models.usage_summary, _CALLS, price_per_million=BadType()), "error"),
    ("models.usage_summary", "token counts of text ended in a TypeError naming nothing",
     partial(models.usage_summary, _CALLS.assign(prompt_tokens=["10"])), "error"),
    ("pairwise.bradley_terry_effects", "warned where no finite maximum exists (NaN terms); its docstring did not say so",
     partial(pairwise.bradley_terry_effects, _comparisons(["x", "x", "y"], ["y", "y", "z"], ["a", "a", "a"])), "warning"),
    ("infer.difference", "fewer than 2 cases labelled for both systems: an error naming no argument",
     partial(infer.difference, _SCORES, _SCORES, _SCORES[:1], _SCORES[:1]), "error"),
    ("infer.difference", "labels of a case neither judge scores: an error about `human` and `judge`, which it does not "
     "take (now left out with a warning naming `judge_a` and `human_a`)",
     partial(infer.difference, _SCORES, _SCORES, _SCORES.set_axis(list("abcz")), _SCORES.set_axis(list("abcz"))), "warning"),
    ("infer.pass_rate", "a case judged twice for one rubric: an error about `judge`, which it does not take",
     partial(infer.pass_rate, pd.concat([_RESULTS, _RESULTS.iloc[:1]]), pd.Series(["PASS", "FAIL"], index=list("ab"))),
     "error"),
    ("infer.pass_rate", "an empty results table ended in pandas' 'No objects to concatenate'",
     partial(infer.pass_rate, _RESULTS.iloc[:0], pd.Series([], dtype=object)), "error"),
    ("infer.pass_rate", "warned as infer.mean does (e.g. every case labelled); its docstring did not say so",
     partial(infer.pass_rate, _RESULTS, pd.Series(["PASS", "FAIL", "PASS", "FAIL"], index=list("abcd"))), "warning"),
    ("judge.pass_rate", "a rubric whose every row is an error row got a NaN rate and interval without a warning",
     partial(judge.pass_rate, _RESULTS.assign(verdict=None, error="timeout", parsed=False)), "warning"),
    ("agreement.cohen_kappa", "two annotators with no common item got NaN agreement and kappa without a warning",
     partial(agreement.cohen_kappa, pd.DataFrame({"item_id": [1, 2], "annotator": ["ann", "bob"], "rating": [1, 2]})),
     "warning"),
    ("correlate.correlate", "3 items: a correlation with a NaN bootstrap interval (resamples where it is undefined), "
     "without a warning", partial(correlate.correlate, pd.Series([1.0, 2.0, 3.0], index=list("abc")),
                                  pd.Series([1.0, 3.0, 2.0], index=list("abc")), n_resamples=30, rng=1), "warning"),
    ("correlate.mean_absolute_error", "an infinite score gave an infinite error, quietly",
     partial(correlate.mean_absolute_error, pd.Series([-np.inf, 1.0], index=list("ab")), pd.Series([3.0, 1.0], index=list("ab"))),
     "error"),
    ("correlate.paired_bootstrap_tcva_paper", "constant human ratings: NaN correlations with scipy's warning, and p = 0",
     partial(correlate.paired_bootstrap_tcva_paper, _SCORES, _SCORES[::-1].set_axis(_SCORES.index), pd.Series(2.5, index=_SCORES.index),
             n_resamples=30), "warning"),
    ("correlate.select_temperature", "a fold whose held-out items give no correlation got a NaN r_test without a warning",
     partial(correlate.select_temperature, pd.DataFrame({"item_id": list("afgfaefb"), "verdict": [
         "partial", "fully", "none", "mostly", "minor", "mostly", "none", "partial"]}),
         pd.Series([2.08, 1.0, np.nan, 2.02, np.nan, 4.0, 3.0, 1.0], index=list("cdebhgaf")), temperatures=[0.2, 0.8], folds=2,
         rng=0), "warning"),
    ("retrieval.evaluate", "a tiny positive relevance (2e-309): its gain 2 ** rel - 1 rounded to 0 and nDCG was 0 / 0",
     partial(retrieval.evaluate, pd.DataFrame({"query_id": ["q3"], "condition": ["bm25"], "rank": [1], "doc_id": ["g"]}),
             pd.DataFrame({"query_id": ["q3"], "doc_id": ["g"], "relevance": [2.225073858507203e-309]})), "value"),
    ("retrieval.lsa_embeddings", "documents without two distinct words: an error naming no argument",
     partial(retrieval.lsa_embeddings, ["", ""], dim=2), "error"),
    ("plots.ratings", "an interval that does not hold its rating ended in matplotlib's \"'xerr' must not contain negative values\"",
     partial(_plot("ratings"), pd.DataFrame({"system": ["x"], "rating": [1000.0], "ci_low": [1010.0], "ci_high": [1020.0]})),
     "error"),
    ("plots.rank_sets", "ranks of text ended in \"could not convert string to float\"",
     partial(_plot("rank_sets"), pd.DataFrame({"system": ["x"], "rank_low": [1], "rank_high": [""]})), "error"),
    ("plots.win_rates", "a matrix of text ended in \"could not convert string to float\"",
     partial(_plot("win_rates"), pd.DataFrame([[None, "high"], ["low", None]], index=["x", "y"], columns=["x", "y"])), "error"),
]

class _Every:
    def __contains__(self, column) -> bool:
        return True


EVERY_COLUMN = _Every()
# Columns whose NaN is part of the documented result for every input (not a failure to explain), by call; they may
# hold NaN, never an infinity.
_NO_INTERVAL = lambda call: {"ci_low", "ci_high"} if call.keywords.get("n_resamples") == 0 else set()  # noqa: E731
NAN_BY_DESIGN = {
    "infer.mean": lambda call: {"lam"},  # NaN for the judge-only row: the judge gets no weight there
    "infer.difference": lambda call: {"lam"},
    "infer.pass_rate": lambda call: {"lam"},
    "correlate.correlate": _NO_INTERVAL,  # n_resamples=0 asks for no interval
    "agreement.krippendorff_alpha": _NO_INTERVAL,
    "agreement.fleiss_kappa": _NO_INTERVAL,
    "agreement.human_ceiling": _NO_INTERVAL,
    # empty=np.nan asks for NaN as the score of an item without claims
    "tcva.sweep": lambda call: EVERY_COLUMN if np.isnan(call.keywords.get("empty", 0.0)) else set(),
    "pairwise.win_rates": lambda call: EVERY_COLUMN,  # the diagonal, and two systems that never met
    "logs.from_deepeval": lambda call: {"latency_s", "score", "threshold"},  # what deepeval did not record
    "logs.from_ragas": lambda call: {"latency_s", "score"},  # no latency recorded; no score: an error row
    "judge.pass_rate": lambda call: {"mean_score"},  # a table without scores
    "judge.results_from_verdicts": lambda call: {"latency_s", "score"},  # no latency recorded; a score not given
    "models.usage_summary": lambda call: {"cost_usd", "n_attempts"},  # no prices or usage; no attempts column
}

# Functions that return the table they were given (checked) or some of its rows: the numbers are the caller's, as given.
RETURNS_ITS_INPUT = {"pairwise.validate", "cases.sample_cases"}


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
    """Every float the result holds (DataFrame float columns, Series, arrays, scalars, dataclass fields); in the
    columns named in ``skip``, every float but NaN."""
    if isinstance(value, pd.DataFrame):
        for column in value.columns:
            col = value[column]
            if pd.api.types.is_float_dtype(col) or (pd.api.types.is_extension_array_dtype(col) and
                                                     pd.api.types.is_float_dtype(col.dtype)):
                numbers = col.to_numpy(dtype=float, na_value=np.nan)
                # a column whose NaN is documented may hold NaN, never +-inf
                yield from (float(x) for x in (numbers[~np.isnan(numbers)] if column in skip else numbers))
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
    function = name.split(" (")[0]  # a variant's function
    skip = NAN_BY_DESIGN[function](call) if function in NAN_BY_DESIGN else set()
    values = np.array([] if name in RETURNS_ITS_INPUT else list(_numbers(result, skip)), dtype=float)
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
    here = {n.split(" (")[0] for n in set(GENERATED) | set(NOT_GENERATED)}  # "infer.mean (jury)": a variant of mean
    optional = {n for n in here if n.split(".")[0] in ("report", "widgets") and n not in public}  # extra not installed
    assert public == here - optional, f"not here: {sorted(public - here)}; stale: {sorted(here - optional - public)}"
    assert not set(GENERATED) & set(NOT_GENERATED)
    named = set(ELSEWHERE) | set(TAKES_VERDICTS) | set(TAKES_SCORES) | set(TAKES_JUDGE)
    missing = sorted(set(NOT_GENERATED) - named - optional)
    assert not missing, f"not generated and with no named test in test_public_api.ELSEWHERE: {missing}"


#: Examples per function in the fast tier (the README's ``pytest``); ``--run-slow`` (CI) draws the budgets above.
FAST_TIER_EXAMPLES = 8
EXAMPLES = {"select_temperature": 10, "human_ceiling": 10, "length_bias": 10, "simulate": 10, "search": 10,
            "lsa_embeddings": 10, "alternative_annotator_test": 15}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=False, reason=KNOWN[n][0]))
                                  if n in KNOWN and KNOWN[n][2] else n for n in sorted(GENERATED)])
def test_generated_bad_input(name, full_tier):
    if name == "pairwise.length_bias":
        pytest.importorskip("statsmodels.api", reason='length_bias needs the \'stats\' extra: pip install "llm-evalkit[stats]"')
    spec = GENERATED[name]
    _run_generated(lambda gen: check_outcome(name, spec(gen)), EXAMPLES.get(name.split(".")[1], 25), full_tier)


def _run_generated(check, examples: int, full_tier: bool) -> None:
    """``check(Gen(data))`` on ``examples`` drawn examples (``EVALKIT_BAD_INPUT_EXAMPLES`` overrides it; the fast
    tier draws at most ``FAST_TIER_EXAMPLES``). No shrinking: a failure reports the example as drawn, and the run
    stays within its budget."""
    budget = int(os.environ.get("EVALKIT_BAD_INPUT_EXAMPLES", 0)) or examples
    if not full_tier and "EVALKIT_BAD_INPUT_EXAMPLES" not in os.environ:
        budget = min(budget, FAST_TIER_EXAMPLES)

    @settings(max_examples=budget, derandomize=True, database=None, deadline=None, print_blob=False,
              phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
    @given(st.data())
    def run(data):
        check(Gen(data))

    run()


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=KNOWN[n][0]))
                                  for n in KNOWN])
def test_known_defects_are_still_there(name):
    check_outcome(name, KNOWN[name][1])


@pytest.mark.parametrize(("name", "defect", "call", "outcome"), FOUND, ids=[f"{f[0]}-{i}" for i, f in enumerate(FOUND)])
def test_found_defects_stay_fixed(name, defect, call, outcome):
    assert check_outcome(name, call) == outcome, defect


# ------------------------------------------------------------------------------------------- bad log files
# The file readers of evalkit.logs take a file someone handed over: their bad input is a file. Each example takes a
# log the tool itself wrote, changes one value somewhere in it (to null, text, an infinity, NaN, a list, an object, a
# negative or a boolean), deletes it, or repeats a record, and reads the file. The outcome must be a ValueError naming
# the file, or a results table that holds no infinity, whose every row without a verdict says why (``error``), and
# whose pass rate is computed (one bad value never blocks the others).
_LOGS = Path(__file__).resolve().parent / "data" / "logs"
LOG_FILES = {
    "inspect_ai": (logs.read_inspect, _LOGS / "inspect" / "inspect_small.json"),
    "promptfoo": (logs.read_promptfoo, Path(evalkit.datasets.demo_path()) / "logs" / "promptfoo_v1.json"),
    "promptfoo-jsonl": (logs.read_promptfoo, _LOGS / "promptfoo" / "promptfoo_v1.jsonl"),
    "openai-evals": (logs.read_openai_evals, _LOGS / "openai_evals" / "closedqa.jsonl"),
    "lm-evaluation-harness": (logs.read_lm_eval, _LOGS / "lm_eval" / "out"),
}
#: Parts of a log that no reader reads (a sample's transcript, its events): a change there proves nothing.
_UNREAD = {"messages", "events", "attachments", "store", "model_usage", "role_usage", "plan", "stats", "history",
           "doc", "resps", "metadata", "configs", "config", "versions", "higher_is_better", "n-shot"}
_ODD_VALUES = [None, "high", "", float("inf"), float("nan"), [], {}, [1, 0], {"a": 1}, -1, True, "2", 1e308]


def _nodes(value, path=(), depth=0):
    """Every place in a JSON value (a tuple of keys and indexes) a reader may look at."""
    yield path
    if depth >= 6:
        return
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        if key not in _UNREAD:
            yield from _nodes(child, (*path, key), depth + 1)


def _mutated(document, path, how, odd):
    """``document`` with the value at ``path`` replaced by ``odd``, deleted, or (a list item) repeated."""
    import copy

    document = copy.deepcopy(document)
    if not path:
        return odd
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if how == "delete":
        del parent[path[-1]]
    elif how == "repeat" and isinstance(parent, list):
        parent.insert(path[-1], copy.deepcopy(parent[path[-1]]))
    else:
        parent[path[-1]] = odd
    return document


def _bad_log(g: Gen, tool: str, folder: Path) -> Path:
    """A copy of the tool's log in ``folder`` with one change drawn by ``g``."""
    import json
    import shutil

    source = LOG_FILES[tool][1]
    if source.is_dir():  # lm-evaluation-harness: change the results file or one samples file
        target = folder / "out"
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target)
        path = g.pick(sorted(p for p in target.rglob("*.json*")))
    else:
        path = folder / source.name
        path.write_bytes(source.read_bytes())
    text = path.read_text(encoding="utf-8")
    if path.suffix == ".jsonl":
        records = [json.loads(line) for line in text.splitlines() if line.strip()]
        line = g.draw(st.integers(0, len(records) - 1))
        if g.draw(st.integers(0, 5)) == 0:  # a record twice
            records.insert(line, records[line])
        else:
            node = g.pick(list(_nodes(records[line])))
            records[line] = _mutated(records[line], node, g.pick(["replace"] * 4 + ["delete", "repeat"]),
                                     g.pick(_ODD_VALUES))
        path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    else:
        document = json.loads(text)
        node = g.pick(list(_nodes(document)))
        path.write_text(json.dumps(_mutated(document, node, g.pick(["replace"] * 4 + ["delete", "repeat"]),
                                            g.pick(_ODD_VALUES))), encoding="utf-8")
    return target if source.is_dir() else path


def check_log_outcome(reader, path: Path, *, rows: int | None = None) -> str:
    """A ValueError naming the file, or a table with no infinity, a reason for every missing verdict, and a pass rate
    (and, given ``rows``, that many rows: nothing dropped)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        try:
            table = reader(path)
        except ValueError as exc:
            assert path.name in str(exc) or "max_bytes" in str(exc), f"{reader.__name__} refused naming no file: {exc}"
            return "error"
        except Exception as exc:  # noqa: BLE001 - any other exception is the failure this test looks for
            raise AssertionError(f"{reader.__name__} raised {type(exc).__name__}: {exc}") from exc
        scores = table["score"].to_numpy(dtype=float) if "score" in table else np.array([])
        assert not np.isinf(scores).any(), f"{reader.__name__} kept an infinite score"
        unexplained = table["verdict"].isna() & table["error"].isna()
        assert not unexplained.any(), f"{reader.__name__} left {int(unexplained.sum())} row(s) without a verdict or a reason"
        rates = judge.pass_rate(table, unparseable_alert=1.0)
    assert len(rates) == table.groupby(["rubric", "rubric_version", "model"], dropna=False).ngroups
    assert rows is None or len(table) == rows, f"{reader.__name__} read {len(table)} rows of the log's {rows}"
    return "value"


@pytest.mark.parametrize("tool", sorted(LOG_FILES))
def test_generated_bad_log_files(tool, tmp_path, full_tier):
    if tool == "inspect_ai":
        pytest.importorskip("zstandard")  # not needed for .json; kept so the tier's skips are the same
    _run_generated(lambda gen: check_log_outcome(LOG_FILES[tool][0], _bad_log(gen, tool, tmp_path)), 40, full_tier)


#: The log faults found before, each a change to a log the tool wrote (``records`` (``jsonl``) or the document, the place,
#: how, the value) and the outcome it has now: a ValueError naming the file, or a table read around one error row.
FOUND_LOGS = [
    ("inspect_ai", "a sample given twice was read twice, quietly", ("samples", 0), "repeat", None, "error"),
    ("inspect_ai", "a sample without an id ended in KeyError", ("samples", 0, "id"), "delete", None, "error"),
    ("inspect_ai", "an epoch of null ended in TypeError", ("samples", 0, "epoch"), "replace", None, "error"),
    ("inspect_ai", "an epoch of text (\"1\", which inspect_ai reads) ended in a traceback", ("samples", 0, "epoch"),
     "replace", "1", "value"),
    ("inspect_ai", "a list-shaped sample ended in AttributeError", ("samples", 0), "replace", [1], "error"),
    ("inspect_ai", "an infinite score blocked the pass rate of every other sample", ("samples", 0, "scores", "match",
     "value"), "replace", float("inf"), "value"),
    ("inspect_ai", "a dict score was dropped without a warning", ("samples", 0, "scores", "match", "value"), "replace",
     {"a": 1}, "value"),
    ("promptfoo", "a testIdx of null ended in TypeError", ("results", "results", 0, "testIdx"), "replace", None, "error"),
    ("promptfoo", "a score \"high\" ended in \"could not convert string to float\"", ("results", "results", 0, "score"),
     "replace", "high", "value"),
]


@pytest.mark.parametrize(("tool", "defect", "where", "how", "odd", "outcome"), FOUND_LOGS,
                         ids=[f"{f[0]}-{i}" for i, f in enumerate(FOUND_LOGS)])
def test_found_log_defects_stay_fixed(tool, defect, where, how, odd, outcome, tmp_path):
    import json

    reader, source = LOG_FILES[tool]
    path = tmp_path / source.name
    path.write_text(json.dumps(_mutated(json.loads(source.read_text()), where, how, odd)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        rows = len(reader(source))
    assert check_log_outcome(reader, path, rows=rows) == outcome, defect


def test_found_lm_eval_and_evals_defects_stay_fixed(tmp_path):
    """One document's NaN or text metric turned its metric's every row into a false "not a 0/1 metric" error; an
    evals score "Y" ended in "could not convert string to float": now each is its own error row."""
    import json
    import shutil

    folder = tmp_path / "out"
    shutil.copytree(LOG_FILES["lm-evaluation-harness"][1], folder)
    samples = next(folder.rglob("samples_capitals_mc_*.jsonl"))
    records = [json.loads(line) for line in samples.read_text().splitlines()]
    records[0]["acc"], records[1]["acc"] = float("nan"), "high"
    samples.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    assert check_log_outcome(logs.read_lm_eval, folder) == "value"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        table = logs.read_lm_eval(folder)
    assert not table["error"].str.contains("not a 0/1 metric", na=False).any()  # the metric is still 0/1
    evals = tmp_path / "evals.jsonl"
    lines = [json.loads(line) for line in LOG_FILES["openai-evals"][1].read_text().splitlines()]
    next(e for e in lines if e.get("type") == "metrics")["data"]["score"] = "Y"
    evals.write_text("\n".join(json.dumps(e) for e in lines) + "\n")
    assert check_log_outcome(logs.read_openai_evals, evals) == "value"


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
