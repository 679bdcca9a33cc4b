"""Prediction-powered inference: infer.mean, difference, pass_rate, confidence_sequence."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from tests.harness.core import (
    CLUSTERED,
    SHARED_DATA,
    Design,
    Entry,
    clustered_design,
    load_shared,
    stream_design,
)

SUMMEVAL_JUDGES = {"consistency": "CTC_D_CNNDM_Consistency", "fluency": "CTC_D_CNNDM_Consistency",
                   "relevance": "CTC_E_RoBERTa_Relevance", "coherence": "bart_score_cnn_src_hypo"}


def _summeval():
    table = load_shared("load_summeval", SHARED_DATA / "summeval")
    return table


def summeval_design(dimension: str, *, finite: bool = False) -> Design:
    """n expert ratings of one SummEval dimension drawn without replacement from the 1,600 summaries; the judge
    (an automatic metric mapped min-max to 1-5) scores all 1,600; the truth is the mean of the 1,600 ratings."""
    metric = SUMMEVAL_JUDGES[dimension]

    def draw(rng, n):
        table = _summeval()
        m = table[metric]
        judge = 1 + 4 * (m - m.min()) / (m.max() - m.min())
        picks = rng.choice(len(table), n, replace=False)
        return {"judge": judge, "human": table[dimension].iloc[picks], "truth": float(table[dimension].mean()),
                "bounds": (1, 5), "system": table["system"]}

    return Design(f"summeval-{dimension}{'-finite' if finite else ''}",
                  f"SummEval expert {dimension} (1-5, mean of 3), judge {metric} on 1-5; n of 1,600 labelled", draw,
                  data="summeval")


def skewed_ppi_design(n_cases: int = 1000) -> Design:
    """1-5 ratings piled at the top for n_cases cases drawn afresh; a judge = rating + N(0.3, 0.8) rounded into
    1-5; the truth is the population mean (4.64)."""
    values, probs = np.array([1, 2, 3, 4, 5.0]), np.array([0.01, 0.02, 0.04, 0.17, 0.76])

    def draw(rng, n):
        y = rng.choice(values, n_cases, p=probs)
        judge = np.clip(np.round(y + rng.normal(0.3, 0.8, n_cases)), 1, 5)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        picks = rng.choice(n_cases, n, replace=False)
        return {"judge": pd.Series(judge, index=ids), "human": pd.Series(y[picks], index=ids[picks]),
                "truth": float(values @ probs), "bounds": (1, 5)}

    return Design("ratings-1to5-top-ppi", "1-5 ratings piled at the top (mean 4.64), 1,000 cases, judge = rating "
                  "+ N(0.3, 0.8) rounded", draw)


def pass_fail_design(p: float = 0.9, agree: float = 0.85, n_cases: int = 500) -> Design:
    """Human PASS with probability p; the judge agrees with the human on a share ``agree``; truth p."""

    def draw(rng, n):
        human = rng.random(n_cases) < p
        judge = np.where(rng.random(n_cases) < agree, human, ~human)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        picks = rng.choice(n_cases, n, replace=False)
        return {"judge": pd.Series(judge.astype(float), index=ids), "human": pd.Series(human[picks].astype(float),
                index=ids[picks]), "truth": p, "bounds": (0, 1), "x": human[picks].astype(float)}

    return Design(f"pass-fail(p={p},agree={agree})", f"PASS/FAIL labels with pass rate {p}, a judge agreeing on "
                  f"{agree:.0%} of cases, {n_cases} cases", draw)




def per_system_design() -> Design:
    """Notebook 04's per-system design: 200 SummEval summaries labelled at random (7-19 per system), the judge on
    all 1,600; the truth is the 16 systems' mean relevance (all must hold together)."""

    def draw(rng, n):
        table = _summeval()
        m = table[SUMMEVAL_JUDGES["relevance"]]
        judge = 1 + 4 * (m - m.min()) / (m.max() - m.min())
        picks = rng.choice(len(table), n, replace=False)
        truth = table["relevance"].groupby(table["system"]).mean().sort_index()
        return {"judge": judge, "human": table["relevance"].iloc[picks], "system": table["system"],
                "truth": truth.to_numpy(), "bounds": (1, 5)}

    return Design("summeval-relevance-16-systems", "SummEval relevance, n of 1,600 labelled at random, one interval "
                  "per system (16)", draw, data="summeval")


def _mean(method="ppi++", interval="auto"):
    def run(sample, level):
        from evalkit import infer

        row = infer.mean(sample["judge"], sample["human"], method=method, interval=interval, confidence_level=level,
                         bounds=sample.get("bounds")).iloc[0]
        return row["ci_low"], row["ci_high"], row["estimate"]

    return run


def _mean_clustered(interval="auto"):
    def run(sample, level):
        from evalkit import infer

        row = infer.mean(sample["judge"], sample["human"], method="classical", interval=interval,
                         confidence_level=level, cluster=sample["cluster"]).iloc[0]
        return row["ci_low"], row["ci_high"], row["estimate"]

    return run


def _mean_finite(sample, level):
    from evalkit import infer

    row = infer.mean(sample["judge"], sample["human"], confidence_level=level, bounds=sample["bounds"],
                     finite_population=True).iloc[0]
    return row["ci_low"], row["ci_high"], row["estimate"]


def _bootstrap_mean(sample, level):
    """Comparison only (not offered): scipy's BCa bootstrap of the labels' mean."""
    from scipy import stats

    y = sample["human"].to_numpy(dtype=float)
    if np.ptp(y) == 0:
        return y[0], y[0], y[0]
    ci = stats.bootstrap((y,), np.mean, confidence_level=level, n_resamples=999, method="BCa",
                         rng=np.random.default_rng(0)).confidence_interval
    return ci.low, ci.high, y.mean()


def _per_system(interval="auto", adjust="bonferroni"):
    def run(sample, level):
        from evalkit import infer

        table = infer.mean(sample["judge"], sample["human"], by=sample["system"], adjust=adjust, interval=interval,
                           confidence_level=level, bounds=sample["bounds"])
        table = table.set_index("system").sort_index()
        return table["ci_low"].to_numpy(), table["ci_high"].to_numpy()

    return run


def paired_design(shift: float = 0.0) -> Design:
    """Two systems rated 1-5 on the same 800 cases (ratings piled at the top, system A ``shift`` better on
    average); judges track each; the truth is the population difference."""
    values, probs = np.array([1, 2, 3, 4, 5.0]), np.array([0.02, 0.03, 0.05, 0.2, 0.7])

    def draw(rng, n):
        base = rng.choice(values, 800, p=probs)
        a = np.clip(base + (rng.random(800) < shift), 1, 5) if shift else base.copy()
        b = np.clip(base - (rng.random(800) < 0.3) + (rng.random(800) < 0.3), 1, 5)
        ids = pd.Index([f"c{i}" for i in range(800)])
        ja = pd.Series(np.clip(np.round(a + rng.normal(0, 0.7, 800)), 1, 5), index=ids)
        jb = pd.Series(np.clip(np.round(b + rng.normal(0, 0.7, 800)), 1, 5), index=ids)
        picks = rng.choice(800, n, replace=False)
        # the truth: the expected difference under this process, by simulation once (fixed seed)
        return {"ja": ja, "jb": jb, "ha": pd.Series(a[picks], index=ids[picks]), "hb": pd.Series(b[picks], index=ids[picks]),
                "truth": _paired_truth(shift), "bounds": (1, 5)}

    return Design(f"paired-1to5(shift={shift})", "two systems on the same cases, 1-5 ratings piled at the top", draw)


@functools.cache
def _paired_truth(shift: float) -> float:
    rng = np.random.default_rng(12345)
    values, probs = np.array([1, 2, 3, 4, 5.0]), np.array([0.02, 0.03, 0.05, 0.2, 0.7])
    base = rng.choice(values, 4_000_000, p=probs)
    a = np.clip(base + (rng.random(base.size) < shift), 1, 5) if shift else base
    b = np.clip(base - (rng.random(base.size) < 0.3) + (rng.random(base.size) < 0.3), 1, 5)
    return float((a - b).mean())


def _difference(interval="auto", kind="interval", method="ppi++"):
    def run(sample, level):
        from evalkit import infer

        row = infer.difference(sample["ja"], sample["jb"], sample["ha"], sample["hb"], interval=interval, method=method,
                               confidence_level=level if kind == "interval" else 0.95, bounds=sample["bounds"]).iloc[0]
        return (row["ci_low"], row["ci_high"], row["estimate"]) if kind == "interval" else row["p_val"]

    return run


def _infer_pass_rate(interval="auto", method="ppi++"):
    def run(sample, level):
        from evalkit import infer

        judge = sample["judge"]
        results = pd.DataFrame({"case_id": judge.index, "rubric": "r", "rubric_version": "v1", "model": "m",
                                "verdict": np.where(judge.to_numpy() > 0, "PASS", "FAIL"), "parsed": True, "error": None})
        row = infer.pass_rate(results, sample["human"] > 0, interval=interval, method=method,
                              confidence_level=level).iloc[0]
        return row["ci_low"], row["ci_high"], row["estimate"]

    return run




def _sequence(stat="mean", peek=False, half=0.1):
    """Stop the first time the half-width is <= ``half`` (or at n labels): the interval at that moment."""

    def run(sample, level):
        from evalkit import infer

        human = sample["human"]
        if peek:  # the fixed-n clt interval read after every label, stopped by the same rule
            y = human.to_numpy(dtype=float)
            t = np.arange(1, len(y) + 1)
            m = np.cumsum(y) / t
            sd = np.sqrt(np.maximum(np.cumsum(y * y) / t - m**2, 0.0))
            from scipy import stats

            half_width = stats.norm.ppf(0.5 + level / 2) * sd / np.sqrt(t)
            ok = np.flatnonzero((half_width <= half) & (t >= 10))
            i = ok[0] if len(ok) else len(y) - 1
            return m[i] - half_width[i], m[i] + half_width[i], m[i]
        cs = infer.confidence_sequence(human=human, confidence_level=level)
        stop = infer.stopping_point(cs, half_width=half)
        row = cs.iloc[(stop or len(cs)) - 1]
        return row["cs_low"], row["cs_high"], row["estimate"]

    return run




def segments_design(k: int = 6, null: float = 0.9, away: float = 0.7, n_away: int = 2, agree: float = 0.85,
                    per_segment: int = 150) -> Design:
    """k segments of ``per_segment`` PASS/FAIL cases, pass rate ``null`` in all but ``n_away`` (``away`` there), a judge
    agreeing with the human on a share ``agree``; n labels drawn at random over all cases. The truth is each
    segment's population rate; a selective procedure tests each against ``null``."""
    rates = np.array([away] * n_away + [null] * (k - n_away))

    def draw(rng, n):
        seg = np.repeat(np.arange(k), per_segment)
        human = rng.random(seg.size) < rates[seg]
        judge = np.where(rng.random(seg.size) < agree, human, ~human)
        ids = pd.Index([f"c{i}" for i in range(seg.size)])
        picks = rng.choice(seg.size, n, replace=False)
        return {"judge": pd.Series(judge.astype(float), index=ids), "human": pd.Series(human[picks].astype(float),
                index=ids[picks]), "segment": pd.Series(seg, index=ids, name="segment"), "truth": rates, "null": null}

    return Design(f"segments(k={k},null={null},away={away}x{n_away})", f"{k} segments of PASS/FAIL cases at pass rate "
                  f"{null}, {n_away} of them at {away}; judge agreeing on {agree:.0%}; n labels over all", draw)


def per_system_null_design() -> Design:
    """Notebook 04's per-system design, each system tested against the mean relevance of all 1,600 summaries."""
    base = per_system_design()

    def draw(rng, n):
        sample = base.draw(rng, n)
        sample["segment"], sample["null"] = sample["system"], float(_summeval()["relevance"].mean())
        return sample

    return Design("summeval-relevance-16-systems-vs-mean", "SummEval relevance, n of 1,600 labelled at random; each "
                  "system tested against the mean of all 1,600", draw, data="summeval")


def _selective(adjust="bh", method="ppi++", interval="auto"):
    """FCR entries: the selected segments' intervals (BH or BY against sample["null"]), in segment order."""

    def run(sample, level):
        from evalkit import infer

        table = infer.mean(sample["judge"], sample["human"], by=sample["segment"], adjust=adjust, null=sample["null"],
                           method=method, interval=interval, confidence_level=level, bounds=sample.get("bounds"))
        table = table.set_index(table.columns[0]).sort_index()
        return table["ci_low"].to_numpy(), table["ci_high"].to_numpy(), table["selected"].to_numpy(dtype=bool)

    return run

SUMMEVAL_DESIGNS = tuple(summeval_design(d) for d in SUMMEVAL_JUDGES)


ENTRIES = [
    # the default of infer.mean, difference and pass_rate: the calibrated estimator of infer.systems, one segment
    Entry("infer.mean", "method='calibrated' (default; infer.systems' estimator, one segment)", "interval",
          _mean("calibrated"), (skewed_ppi_design(), summeval_design("consistency"), summeval_design("fluency"),
                                summeval_design("relevance"), pass_fail_design(0.9), pass_fail_design(0.97, 0.9),
                                pass_fail_design(0.5, 0.8)),
          default=True, sizes=(20, 30, 50, 100, 200), test_sizes=(30,),
          notes="large-sample with a measured switch: too few labels off the end of the scale, even pooled, "
                "give the humans-only exact row"),
    Entry("infer.difference", "method='calibrated' (default; infer.system_differences' estimator)", "interval",
          _difference(method=None), (paired_design(0.0), paired_design(0.3)), default=True,
          sizes=(20, 30, 50, 100, 200), test_sizes=(30,)),
    Entry("infer.pass_rate", "method='calibrated' (default)", "interval", _infer_pass_rate(method=None),
          (pass_fail_design(0.9), pass_fail_design(0.97, 0.9), pass_fail_design(0.5, 0.8)), default=True,
          sizes=(20, 30, 50, 100, 200), test_sizes=(30,)),
    # infer.mean: the betting interval by name beside the large-sample intervals and a bootstrap, on the same designs
    Entry("infer.mean", "method='ppi++', interval='auto' (betting, by name: finite-sample)", "interval", _mean(),
          (summeval_design("consistency"), summeval_design("fluency"), skewed_ppi_design()), default=True,
          notes="finite-sample coverage; the test subset runs the two skewed SummEval dimensions and the synthetic one"),
    Entry("infer.mean", "method='ppi++', interval='betting' (all four SummEval dimensions)", "interval", _mean(),
          SUMMEVAL_DESIGNS + (pass_fail_design(),)),
    Entry("infer.mean", "method='classical', interval='betting'", "interval", _mean("classical", "betting"),
          SUMMEVAL_DESIGNS + (skewed_ppi_design(), pass_fail_design())),
    Entry("infer.mean", "method='classical', interval='auto' on 0/1 labels (Clopper-Pearson)", "interval",
          _mean("classical"), (pass_fail_design(0.9), pass_fail_design(0.97, 0.9), pass_fail_design(0.5, 0.8))),
    Entry("infer.mean", "method='ppi++', interval='clt' (ppi_py)", "interval", _mean("ppi++", "clt"),
          SUMMEVAL_DESIGNS + (skewed_ppi_design(), pass_fail_design())),
    Entry("infer.mean", "method='classical', interval='clt'", "interval", _mean("classical", "clt"),
          SUMMEVAL_DESIGNS + (skewed_ppi_design(), pass_fail_design())),
    Entry("infer.mean", "method='classical', interval='t'", "interval", _mean("classical", "t"),
          SUMMEVAL_DESIGNS + (skewed_ppi_design(),)),
    Entry("infer.mean", "scipy BCa bootstrap of the labels (comparison, not offered)", "interval", _bootstrap_mean,
          (summeval_design("consistency"), summeval_design("fluency"), skewed_ppi_design())),
    Entry("infer.mean", "finite_population=True (betting, without replacement)", "interval", _mean_finite,
          (summeval_design("consistency", finite=True), summeval_design("relevance", finite=True))),
    Entry("infer.mean", "cluster= (default: betting over whole clusters)", "interval", _mean_clustered(),
          CLUSTERED, default=True, sizes=(20, 50, 100, 200, 400), test_sizes=(40, 400),
          notes="finite-sample: holds at any number of clusters (5 clusters of 4 at n = 20 give a wide interval)"),
    Entry("infer.mean", "cluster=, interval='t' (cluster-robust t, G - 1 df)", "interval", _mean_clustered("t"),
          CLUSTERED, sizes=(40, 80, 120, 200, 400), notes="fewer than 50 clusters: refused (NaN)"),
    Entry("infer.mean", "cluster=, interval='clt'", "interval", _mean_clustered("clt"),
          (clustered_design(4, 0.3), clustered_design(8, 0.5)), sizes=(40, 80, 120, 200, 400)),
    Entry("infer.mean", "by=system, adjust='bonferroni' (default betting): 16 hold together", "interval",
          _per_system(), (per_system_design(),), default=True, sizes=(200,), test_sizes=(200,), test_reps=200,
          notes="the fast suite runs 200 rounds (3 MC s.e. = 0.046); the benchmark 1,000"),
    Entry("infer.mean", "by=, adjust='bh', null= (default betting): false coverage-statement rate", "fcr",
          _selective(), (segments_design(), per_system_null_design()), default=True, sizes=(120, 300, 600),
          test_sizes=(300,), test_reps=150, slow=True, notes="FCR <= alpha (Benjamini & Yekutieli 2005): the selected "
          "segments' intervals at 1 - R alpha / m; checked with the slow tests (150 samples of each design)"),
    Entry("infer.mean", "by=, adjust='by', null= (default betting)", "fcr", _selective("by"),
          (segments_design(), per_system_null_design()), sizes=(120, 300, 600)),
    Entry("infer.mean", "by=, adjust='bh', null=, method='classical' (Clopper-Pearson)", "fcr",
          _selective(method="classical"), (segments_design(), segments_design(12, 0.9, 0.75, 6)), sizes=(120, 300, 600)),
    Entry("infer.mean", "by=, adjust='bh', null=, interval='clt'", "fcr", _selective(interval="clt"),
          (segments_design(), segments_design(12, 0.9, 0.75, 6)), sizes=(120, 300, 600)),
    Entry("infer.mean", "by=system, adjust='bonferroni', interval='clt'", "interval", _per_system("clt"),
          (per_system_design(),), sizes=(200, 480)),
    Entry("infer.difference", "method='ppi++', interval='betting' (by name: finite-sample)", "interval", _difference(),
          (paired_design(0.0), paired_design(0.3)), default=True, test_sizes=(50,), test_reps=200,
          notes="the fast suite runs 200 samples (each call also finds the p-value)"),
    Entry("infer.difference", "interval='clt'", "interval", _difference("clt"), (paired_design(0.0), paired_design(0.3))),
    Entry("infer.difference", "p_val, method='ppi++', interval='betting' (by name), no difference", "test", _difference(kind="test"),
          (paired_design(0.0),), default=True, test_sizes=(50,), test_reps=300, slow=True,
          notes="the dual of the betting interval of the difference (checked in the fast tier); checked with the slow "
                "tests"),
    Entry("infer.difference", "p_val, interval='clt', no difference", "test", _difference("clt", "test"),
          (paired_design(0.0),)),
    Entry("infer.pass_rate", "method='ppi++', interval='betting' (by name: finite-sample)", "interval", _infer_pass_rate(),
          (pass_fail_design(0.9), pass_fail_design(0.97, 0.9), pass_fail_design(0.5, 0.8)), default=True),
    Entry("infer.pass_rate", "method='ppi++', interval='clt'", "interval", _infer_pass_rate("clt"),
          (pass_fail_design(0.9), pass_fail_design(0.97, 0.9), pass_fail_design(0.5, 0.8))),
    Entry("infer.confidence_sequence", "stopped at the first half-width <= 0.1 (default)", "interval", _sequence(),
          (stream_design(0.9), stream_design(0.7)), default=True, sizes=(100, 200, 400), test_sizes=(200,)),
    Entry("infer.confidence_sequence", "comparison: the fixed-n clt interval read after every label, same rule",
          "interval", _sequence(peek=True), (stream_design(0.9), stream_design(0.7)), sizes=(100, 200, 400)),
]

EXEMPT = {
    "infer.expected_half_width": "a plan, not an interval: tests/test_infer.py::test_planned_labels_deliver_the_half_width "
                                 "checks by simulation that the planned n gives the half-width and the coverage",
    "infer.labels_needed": "a plan, not an interval: tests/test_infer.py::test_planned_labels_deliver_the_half_width",
}


def unbounded_design(n_cases: int = 2611) -> Design:
    """Normal scores with no known scale (a metric, a log-probability): the human score N(0, 1), the judge the human
    score plus N(0, 0.5); 2,611 cases drawn afresh; the truth is 0. With no scale, mean's default is the t interval."""

    def draw(rng, n):
        y = rng.normal(0.0, 1.0, n_cases)
        judge = y + rng.normal(0.0, 0.5, n_cases)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        picks = rng.choice(n_cases, n, replace=False)
        return {"judge": pd.Series(judge, index=ids), "human": pd.Series(y[picks], index=ids[picks]), "truth": 0.0,
                "bounds": None}

    return Design("normal-scores-no-scale", "normal scores with no known scale, 2,611 cases, a judge at r = 0.89", draw)


def beta_design(a: float = 8.0, b: float = 2.0, n_cases: int = 2000) -> Design:
    """Labels Beta(a, b) on [0, 1] (skewed toward 1 for 8, 2), a judge = label + N(0, 0.1) clipped; truth a / (a + b)."""

    def draw(rng, n):
        y = rng.beta(a, b, n_cases)
        judge = np.clip(y + rng.normal(0.0, 0.1, n_cases), 0, 1)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        picks = rng.choice(n_cases, n, replace=False)
        return {"judge": pd.Series(judge, index=ids), "human": pd.Series(y[picks], index=ids[picks]),
                "truth": a / (a + b), "bounds": (0, 1)}

    return Design(f"beta({a:g},{b:g})-ppi", f"labels Beta({a:g}, {b:g}) on [0, 1], a judge = label + N(0, 0.1)", draw)


ENTRIES += [
    Entry("infer.mean", "method='calibrated' (default) on scores with no known scale", "interval", _mean("calibrated"),
          (unbounded_design(), beta_design()), default=True, sizes=(20, 30, 50, 100, 200), test_sizes=(30,)),
    Entry("infer.mean", "method='ppi++' on scores with no known scale: the t interval", "interval", _mean(),
          (unbounded_design(),), default=True, sizes=(30, 50, 100, 200), test_sizes=(50,),
          notes="no bounds given and the labels not 0/1: betting needs a scale, so the default is Student's t "
                "(refused below 30 labels)"),
    Entry("infer.mean", "method='classical' on scores with no known scale: the t interval", "interval",
          _mean("classical"), (unbounded_design(),), sizes=(30, 50, 100, 200)),
    Entry("infer.mean", "interval='t-pseudo', method='ppi++' (opt-in, approximate)", "interval", _mean("ppi++", "t-pseudo"),
          SUMMEVAL_DESIGNS + (skewed_ppi_design(), beta_design(), pass_fail_design(0.98, 0.9), pass_fail_design(0.9)),
          sizes=(20, 50, 100, 200), notes="large-sample; refused (NaN) where fewer than 5 labels' worth lie toward the "
          "far end of the scale"),
    Entry("infer.mean", "interval='t-pseudo', method='classical' (opt-in, approximate)", "interval",
          _mean("classical", "t-pseudo"),
          SUMMEVAL_DESIGNS + (skewed_ppi_design(), beta_design(), pass_fail_design(0.98, 0.9), pass_fail_design(0.9)),
          sizes=(20, 50, 100, 200)),
]
