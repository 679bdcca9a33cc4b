"""No result depends on row order: every public function that returns numbers gives the same numbers when the rows of
its input tables are shuffled (scikit-learn's ``check_methods_sample_order_invariance``, run over a list of public
functions with small demo inputs, as ``sklearn/metrics/tests/test_common.py`` lists its metrics).

Each entry calls the function with ``sh`` applied to every table it takes (``sh`` is the identity, or a shuffle of the
rows that keeps each row's index label); the outputs are compared as numbers after putting their rows in a canonical
order (an output that lists one row per input row follows the input's order, as pandas does). Functions whose answer
is, by design, about the order (a confidence sequence over the labels in the order they came) are listed in
``ORDERED`` with why.
"""

from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pandas as pd
import pytest

from evalkit import (
    EvalkitWarning,
    agreement,
    calibrate,
    compare,
    correlate,
    datasets,
    density,
    infer,
    judge,
    models,
    pairwise,
    retrieval,
    tcva,
    verdicts,
)


@pytest.fixture(scope="module")
def demo():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        jd, td, pw, fd = (datasets.load_demo(name) for name in ("judge", "tcva", "pairwise", "fd"))
        rubric = judge.UNSUPPORTED_CLAIMS

        def run(version):
            replies = jd["outputs"].query("rubric == @version").set_index("case_id")["raw"]
            model = models.Replay({rubric.render(c): replies[c["case_id"]] for c in jd["cases"].to_dict("records")},
                                  model_id=f"demo-{version}")
            return judge.run_judge(jd["cases"], rubric, model, progress=False)

        r1, r2 = run("v1"), run("v2")
        fd_table = density.fd_star(fd["claims"], fd["documents"])
    gen = np.random.default_rng(7)
    ids = list(td["items"].index)
    ratings = pd.DataFrame({"item_id": ids * 2, "annotator": ["ann"] * 120 + ["bob"] * 120,
                            "rating": np.r_[np.clip(np.round(td["items"]["human"].to_numpy() * 4 + 1), 1, 5),
                                            gen.integers(1, 6, 120)].astype(float)})
    judge_scores = r1.set_index("case_id")["verdict"].eq("PASS").astype(float)
    pass_labels = jd["labels"].set_index("case_id")["label"].eq("PASS").astype(float)
    runs = pd.concat([r1, r2])
    scores = tcva.sweep(td["verdicts"], [0.3, 0.7], items=td["items"])
    return {"r1": r1, "r2": r2, "runs": runs, "human": jd["labels"].set_index("case_id")["label"],
            "labels": jd["labels"], "td": td, "pw": pw, "fd": fd, "fd_table": fd_table, "scores": scores,
            "ratings": ratings, "judge_scores": judge_scores, "pass_labels": pass_labels}


def _scored_runs(d):
    """Two runs of 1-5 scores on the same 120 items (a long table), for against_baseline."""
    items = d["td"]["items"]
    a = np.clip(np.round(items["human"].to_numpy() * 4 + 1), 1, 5)
    b = np.clip(a + np.where(np.arange(len(a)) % 3 == 0, -1, 0), 1, 5)
    return pd.DataFrame({"case_id": list(items.index) * 2, "run": ["a"] * len(a) + ["b"] * len(a),
                         "score": np.r_[a, b]})


def _calls():
    """Each public function that returns numbers, called with ``sh`` on every table it takes."""
    return {
        "calibrate.calibrate": lambda d, sh: calibrate.calibrate(sh(d["r1"]), sh(d["human"])),
        "calibrate.disagreements": lambda d, sh: calibrate.disagreements(sh(d["r1"]), sh(d["human"])),
        "calibrate.corrected_pass_rate": lambda d, sh: calibrate.corrected_pass_rate(
            sh(d["r2"]), calibrate.calibrate(sh(d["r1"]), sh(d["human"]))),
        "calibrate.agreement_drift": lambda d, sh: calibrate.agreement_drift(sh(d["r1"]), sh(d["labels"])),
        "compare.paired (verdicts)": lambda d, sh: compare.paired(sh(d["r1"]), sh(d["r2"])),
        "compare.paired (scores)": lambda d, sh: compare.paired(sh(d["scores"][0.3]), sh(d["scores"][0.7]), bounds=(0, 1)),
        "compare.against_baseline (verdicts)": lambda d, sh: compare.against_baseline(sh(d["runs"]), baseline="demo-v1",
                                                                                       run="model"),
        "compare.against_baseline (scores)": lambda d, sh: compare.against_baseline(
            sh(_scored_runs(d)), baseline="a", value="score", bounds=(1, 5)),
        "compare.adjust_p_values": lambda d, sh: compare.adjust_p_values(
            sh(pd.DataFrame({"test": list("abcdef"), "p_val": [0.01, 0.04, 0.03, 0.2, 0.5, 0.001]}))),
        "judge.pass_rate": lambda d, sh: judge.pass_rate(sh(d["runs"]), unparseable_alert=1.0),
        "judge.results_from_verdicts": lambda d, sh: judge.results_from_verdicts(
            sh(pd.DataFrame({"case_id": d["r1"]["case_id"], "verdict": d["r1"]["verdict"].astype(str)})),
            rubric="faithful", model="mine").drop(columns="created_at"),
        "verdicts.level_counts": lambda d, sh: verdicts.level_counts(sh(d["td"]["verdicts"])),
        "tcva.sweep": lambda d, sh: tcva.sweep(sh(d["td"]["verdicts"]), [0.2, 0.5, 0.9], items=sh(d["td"]["items"])),
        "correlate.correlate": lambda d, sh: correlate.correlate(sh(d["scores"]), sh(d["td"]["items"]["human"]),
                                                                 n_resamples=200, rng=0),
        "correlate.correlate (summary)": lambda d, sh: correlate.correlate(
            sh(d["scores"].assign(doc=d["td"]["items"]["document"]).set_index("doc", append=True)),
            sh(d["td"]["items"]["human"].to_frame().assign(doc=d["td"]["items"]["document"]).set_index(
                "doc", append=True)["human"]), level="summary", by="doc", n_resamples=200, rng=0),
        "correlate.mean_absolute_error": lambda d, sh: correlate.mean_absolute_error(sh(d["scores"]),
                                                                                     sh(d["td"]["items"]["human"])),
        "correlate.compare_metrics": lambda d, sh: correlate.compare_metrics(
            sh(d["scores"][0.3]), sh(d["scores"][0.7]), sh(d["td"]["items"]["human"]), n_resamples=200, rng=0),
        "correlate.select_temperature": lambda d, sh: correlate.select_temperature(
            sh(d["td"]["verdicts"]), sh(d["td"]["items"]["human"]), temperatures=[0.2, 0.5, 0.9],
            items=sh(d["td"]["items"]), rng=0),
        "agreement.krippendorff_alpha": lambda d, sh: agreement.krippendorff_alpha(sh(d["ratings"]), level="interval",
                                                                                  n_resamples=200, rng=0),
        "agreement.icc": lambda d, sh: agreement.icc(sh(d["ratings"]), n_resamples=200, rng=0),
        "agreement.fleiss_kappa": lambda d, sh: agreement.fleiss_kappa(sh(d["ratings"]), n_resamples=200, rng=0),
        "agreement.cohen_kappa": lambda d, sh: agreement.cohen_kappa(sh(d["ratings"])),
        "agreement.pairwise_agreement": lambda d, sh: agreement.pairwise_agreement(sh(d["ratings"])),
        "agreement.human_ceiling": lambda d, sh: agreement.human_ceiling(sh(d["scores"]), sh(d["ratings"]),
                                                                         n_resamples=200, rng=0),
        "density.fd_star": lambda d, sh: density.fd_star(sh(d["fd"]["claims"]), sh(d["fd"]["documents"])),
        "density.length_bias": lambda d, sh: density.length_bias(sh(d["fd_table"]), n_resamples=200, rng=0),
        "density.tier_means": lambda d, sh: density.tier_means(sh(d["fd_table"])),
        "density.tier_spread": lambda d, sh: density.tier_spread(sh(d["fd_table"])),
        "pairwise.win_rates": lambda d, sh: pairwise.win_rates(sh(d["pw"]["comparisons"])),
        "pairwise.bradley_terry": lambda d, sh: pairwise.bradley_terry(sh(d["pw"]["comparisons"])),
        "pairwise.rank_sets": lambda d, sh: pairwise.rank_sets(sh(d["pw"]["comparisons"]), sh(d["pw"]["judge"]["winner"])),
        "retrieval.evaluate": lambda d, sh: retrieval.evaluate(
            sh(d["fd"]["qrels"].rename(columns={"relevance": "r"}).assign(
                condition="gold", rank=lambda t: t.groupby("query_id").cumcount() + 1).drop(columns="r")),
            sh(d["fd"]["qrels"])),
        "infer.mean": lambda d, sh: infer.mean(sh(d["judge_scores"]), sh(d["pass_labels"].iloc[:40])),
        "infer.mean (betting)": lambda d, sh: infer.mean(sh(d["judge_scores"]), sh(d["pass_labels"].iloc[:40]),
                                                         interval="betting", bounds=(0, 1)),
        "infer.pass_rate": lambda d, sh: infer.pass_rate(sh(d["r1"]), sh(d["human"].iloc[:40])),
        "infer.difference": lambda d, sh: infer.difference(
            sh(d["judge_scores"]), sh(d["r2"].set_index("case_id")["verdict"].eq("PASS").astype(float)),
            sh(d["pass_labels"].iloc[:40]), sh(d["pass_labels"].iloc[:40])),
        "infer.labels_needed": lambda d, sh: infer.labels_needed(sh(d["judge_scores"]), sh(d["pass_labels"].iloc[:40]),
                                                                 half_width=0.1, n_draws=50),
    }


#: Functions whose answer is about the order of the rows, by design.
ORDERED = {
    "infer.confidence_sequence": "an anytime-valid interval after each label, in the order the labels came",
    "correlate.paired_bootstrap_tcva_paper": "the TCVA paper's own bootstrap, reproduced draw for draw on its file order",
}


def _canonical(result) -> list[np.ndarray]:
    """The numbers of a result with its rows in a canonical order: tables sorted by their text columns and index."""
    if dataclasses.is_dataclass(result):
        parts = []
        for f in dataclasses.fields(result):
            value = getattr(result, f.name)
            if isinstance(value, (pd.DataFrame, pd.Series)):
                parts += _canonical(value)
            elif isinstance(value, (int, float, np.number)) and not isinstance(value, bool):
                parts.append(np.array([float(value)]))
        return parts
    if isinstance(result, pd.Series):
        result = result.to_frame()
    positional = isinstance(result.index, pd.RangeIndex) or (result.index.name is None and result.index.dtype.kind == "i")
    frame = result.reset_index(drop=positional)  # a row's position is not a result
    frame.columns = [str(c) for c in frame.columns]
    keys = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c]) or pd.api.types.is_bool_dtype(frame[c])]
    numeric = [c for c in frame.columns if c not in keys]
    order = frame.assign(**{c: frame[c].astype(str) for c in keys}).sort_values(keys + numeric, kind="stable").index
    frame = frame.loc[order]
    return [frame[c].to_numpy(dtype=float, na_value=np.nan) for c in numeric] + [frame[keys].astype(object).map(str).to_numpy()]


def _shuffle(seed):
    def sh(x):
        if isinstance(x, (pd.DataFrame, pd.Series)):
            return x.sample(frac=1.0, random_state=seed)
        return x
    return sh


def _quiet(call):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return call()


@pytest.mark.parametrize("name", sorted(_calls()))
def test_shuffled_rows_give_the_same_numbers(name, demo):
    call = _calls()[name]
    first = _canonical(_quiet(lambda: call(demo, lambda x: x)))
    for seed in (1, 2):
        again = _canonical(_quiet(lambda seed=seed: call(demo, _shuffle(seed))))
        assert len(again) == len(first)
        for x, y in zip(first, again, strict=True):
            if x.dtype == object:
                assert (x == y).all(), f"{name}: the rows differ after a shuffle"
            else:
                np.testing.assert_allclose(y, x, rtol=1e-9, atol=1e-12, equal_nan=True,
                                           err_msg=f"{name}: another answer for the same rows in another order")


def test_every_public_function_that_returns_numbers_is_listed_or_ordered():
    """The list covers the lanes' estimators: a new one lands in ``_calls`` or in ``ORDERED`` with why."""
    listed = {name.split(" (")[0] for name in _calls()} | set(ORDERED)
    for must in ("calibrate.calibrate", "compare.paired", "compare.against_baseline", "judge.pass_rate", "tcva.sweep",
                 "correlate.correlate", "agreement.krippendorff_alpha", "pairwise.bradley_terry", "infer.mean",
                 "infer.pass_rate", "density.fd_star", "retrieval.evaluate"):
        assert must in listed, must
