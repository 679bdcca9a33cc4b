"""Rates of results tables and calibration: judge.pass_rate, calibrate.*."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tests.harness.core import (
    Design,
    Entry,
    bernoulli,
    clustered_design,
)


def clustered_epochs(mean: float, epochs: int, concentration: float) -> Design:
    """n cases, each graded ``epochs`` times: a case's pass probability is Beta(mean c, (1 - mean) c).

    Small ``concentration`` c makes the epochs of one case agree (strong clustering); large c makes them
    independent. The truth is ``mean``, the pass rate of the population of cases.
    """

    def draw(rng, n):
        p = rng.beta(mean * concentration, (1 - mean) * concentration, size=n)
        return {"passed": rng.random((n, epochs)) < p[:, None], "truth": mean}

    kind = "strongly clustered" if concentration < 10 else "independent"
    return Design(f"epochs(mean={mean}, epochs={epochs}, c={concentration:g})",
                  f"{epochs} graded epochs per case, {kind}, pass rate {mean}", draw)


def _epochs_pass_rate(interval="auto"):
    """judge.pass_rate on a table read as a log would be: each case graded in several epochs (``sample_id``)."""

    def run(sample, level):
        from evalkit import judge

        passed = sample["passed"]
        n, epochs = passed.shape
        results = pd.DataFrame({"case_id": [f"c{i}_epoch_{e}" for i in range(n) for e in range(epochs)],
                                "sample_id": np.repeat(np.arange(n).astype(str), epochs), "rubric": "r",
                                "rubric_version": "v1", "model": "m", "verdict": np.where(passed.ravel(), "PASS", "FAIL"),
                                "parsed": True, "error": None})
        row = judge.pass_rate(results, confidence_level=level, interval=interval).iloc[0]
        return row["ci_low"], row["ci_high"], row["pass_rate"]

    return run



# =============================================================================== infer, judge.pass_rate, calibrate
# Rule for every default below (and the harness's one rule for discrete data): a default interval must cover at
# least its nominal level, within Monte Carlo error, at EVERY design and size, not on average. Coverage of 0/1
# rates is a saw-tooth in (n, p), so an interval whose average is nominal dips below it somewhere (Wilson: 0.933
# at p = 0.5 and 0.934 at p = 0.97, n = 50, 2,000 draws); hence Clopper-Pearson for rates and betting intervals
# (finite-sample, Waudby-Smith & Ramdas 2024) for bounded means and PPI. Large-sample intervals (clt, t, the
# cluster-robust t) are registered beside them for comparison, and not given below 30 labels or 50 clusters; with
# clusters, the default is the betting interval over whole clusters (finite-sample too).



def _judge_pass_rate_with(interval="auto", clustered=False):
    def run(sample, level):
        from evalkit import judge

        x = sample["x"]
        results = pd.DataFrame({"case_id": np.arange(len(x)).astype(str), "rubric": "r", "rubric_version": "v1",
                                "model": "m", "verdict": np.where(x > 0, "PASS", "FAIL"), "parsed": True, "error": None})
        if clustered:
            results["item"] = sample["groups"]
        row = judge.pass_rate(results, confidence_level=level, interval=interval,
                              cluster="item" if clustered else None).iloc[0]
        return row["ci_low"], row["ci_high"], row["pass_rate"]

    return run


def calibration_design(p_pass: float = 0.8, sensitivity: float = 0.9, specificity: float = 0.7) -> Design:
    """n labelled cases: human PASS with probability ``p_pass``; the judge PASSes a human PASS with probability
    ``sensitivity`` and FAILs a human FAIL with ``specificity``. Truths: every rate and kappa of the process."""
    po = p_pass * sensitivity + (1 - p_pass) * specificity
    judge_pass = p_pass * sensitivity + (1 - p_pass) * (1 - specificity)
    pe = p_pass * judge_pass + (1 - p_pass) * (1 - judge_pass)
    truths = {"agreement": po, "fail_recall": specificity, "false_flag_rate": 1 - sensitivity,
              "kappa": (po - pe) / (1 - pe)}

    def draw(rng, n):
        human = rng.random(n) < p_pass
        judge = np.where(human, rng.random(n) < sensitivity, rng.random(n) >= specificity)
        ids = [f"c{i}" for i in range(n)]
        return {"human": pd.Series(np.where(human, "PASS", "FAIL"), index=ids),
                "judge": pd.Series(np.where(judge, "PASS", "FAIL"), index=ids), "truths": truths, "truth": np.nan,
                "p_pass": p_pass, "sensitivity": sensitivity, "specificity": specificity}

    return Design(f"calibration(p={p_pass},se={sensitivity},sp={specificity})", f"human pass rate {p_pass}, judge "
                  f"sensitivity {sensitivity}, specificity {specificity}", draw)


def _calibrate_metric(metric: str, interval="auto"):
    def run(sample, level):
        from evalkit import calibrate

        sample["truth"] = sample["truths"][metric]
        report = calibrate.calibrate(sample["judge"], sample["human"], confidence_level=level, interval=interval)
        row = report.table.loc[metric]
        return row["ci_low"], row["ci_high"], row["estimate"]

    return run


def _kappa_large_sample(kind="fce"):
    """Comparison only (not offered): kappa's large-sample normal interval, with the variance of Fleiss, Cohen &
    Everitt (1969) (``"fce"``) or Cohen's (1960) ``po (1 - po) / (n (1 - pe)^2)`` (``"cohen"``, evalkit's before)."""

    def run(sample, level):
        from scipy import stats

        sample["truth"] = sample["truths"]["kappa"]
        h, j = (sample["human"] == "PASS").to_numpy(), (sample["judge"] == "PASS").to_numpy()
        n = len(h)
        p = np.array([[np.mean(h & j), np.mean(h & ~j)], [np.mean(~h & j), np.mean(~h & ~j)]])
        rows, cols = p.sum(1), p.sum(0)
        po, pe = p[0, 0] + p[1, 1], rows @ cols
        if pe >= 1:
            return np.nan, np.nan, np.nan
        k = (po - pe) / (1 - pe)
        if kind == "cohen":
            var = po * (1 - po) / (n * (1 - pe) ** 2)
        else:
            a = sum(p[i, i] * (1 - (rows[i] + cols[i]) * (1 - k)) ** 2 for i in range(2))
            b = (1 - k) ** 2 * (p[0, 1] * (cols[0] + rows[1]) ** 2 + p[1, 0] * (cols[1] + rows[0]) ** 2)
            var = (a + b - (k - pe * (1 - k)) ** 2) / (n * (1 - pe) ** 2)
        half = stats.norm.ppf(0.5 + level / 2) * np.sqrt(max(var, 0.0))
        return max(-1.0, k - half), min(1.0, k + half), k

    return run


def rogan_gladen_design(p_calibration: float, p_run: float, sensitivity: float, specificity: float,
                        n_run: int = 200) -> Design:
    """n calibration labels (human pass rate ``p_calibration``, the judge's sensitivity and specificity as in
    :func:`calibration_design`) and a separate run of ``n_run`` fresh judged cases at human pass rate ``p_run``,
    the judge erring there at the same rates; the truth is ``p_run`` (the run's population pass rate)."""

    def draw(rng, n):
        human = rng.random(n) < p_calibration
        judge = np.where(human, rng.random(n) < sensitivity, rng.random(n) >= specificity)
        truth_run = rng.random(n_run) < p_run
        run = np.where(truth_run, rng.random(n_run) < sensitivity, rng.random(n_run) >= specificity)
        ids = [f"c{i}" for i in range(n)]
        return {"human": pd.Series(np.where(human, "PASS", "FAIL"), index=ids),
                "judge": pd.Series(np.where(judge, "PASS", "FAIL"), index=ids),
                "run": pd.Series(np.where(run, "PASS", "FAIL"), index=[f"r{i}" for i in range(n_run)]), "truth": p_run}

    return Design(f"rogan-gladen(cal p={p_calibration},run p={p_run},se={sensitivity},sp={specificity},run={n_run})",
                  f"calibrate on n labels at pass rate {p_calibration}, correct a separate run of {n_run} at "
                  f"{p_run}; judge sensitivity {sensitivity}, specificity {specificity}", draw)


def _corrected_pass_rate(sample, level):
    """Calibrate on the n labelled cases, correct the separate run; truth: the run population's rate."""
    from evalkit import calibrate

    try:
        report = calibrate.calibrate(sample["judge"], sample["human"], confidence_level=level)
        row = calibrate.corrected_pass_rate(sample["run"], report, confidence_level=level).iloc[0]
    except ValueError:  # a calibration set without both labels: refused
        return np.nan, np.nan, np.nan
    return row["ci_low"], row["ci_high"], row["estimate"]


def _bootstrap_corrected(sample, level):
    """Comparison only (no longer offered): the percentile bootstrap of the run and the calibration cells that
    corrected_pass_rate gave before (1,000 resamples)."""
    human, judge = (sample["human"] == "PASS").to_numpy(), (sample["judge"] == "PASS").to_numpy()
    cells = np.array([(human & judge).sum(), (human & ~judge).sum(), (~human & ~judge).sum(), (~human & judge).sum()])
    if cells[:2].sum() == 0 or cells[2:].sum() == 0:
        return np.nan, np.nan, np.nan
    run = (sample["run"] == "PASS").to_numpy()
    se, sp = cells[0] / cells[:2].sum(), cells[2] / cells[2:].sum()
    if se + sp - 1 <= 0:
        return np.nan, np.nan, np.nan
    rng = np.random.default_rng(0)
    obs = rng.binomial(len(run), run.mean(), size=1000) / len(run)
    star = rng.multinomial(cells.sum(), cells / cells.sum(), size=1000).astype(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        se_s, sp_s = star[:, 0] / star[:, :2].sum(1), star[:, 2] / star[:, 2:].sum(1)
        boot = (obs + sp_s - 1) / (se_s + sp_s - 1)
    boot = boot[np.isfinite(boot) & (se_s + sp_s - 1 > 0)]
    low, high = np.quantile(boot, [(1 - level) / 2, (1 + level) / 2])
    return float(np.clip(low, 0, 1)), float(np.clip(high, 0, 1)), (run.mean() + sp - 1) / (se + sp - 1)


def clustered_calibration_design(size: int = 4, icc: float = 0.3, p_pass: float = 0.85, sensitivity: float = 0.9,
                                 specificity: float = 0.7) -> Design:
    """n labelled claims in items of ``size``: each item's pass probability is Beta with mean ``p_pass`` and intraclass
    correlation ``icc``, and its judge's sensitivity and specificity vary by item (Beta, mean as given), so both the
    labels and the judge's errors cluster. Truths: the population rates and kappa of a claim."""
    po = p_pass * sensitivity + (1 - p_pass) * specificity
    judge_pass = p_pass * sensitivity + (1 - p_pass) * (1 - specificity)
    pe = p_pass * judge_pass + (1 - p_pass) * (1 - judge_pass)
    truths = {"agreement": po, "fail_recall": specificity, "false_flag_rate": 1 - sensitivity,
              "kappa": (po - pe) / (1 - pe)}

    def beta(rng, mean, k):
        c = (1 - icc) / icc
        return rng.beta(mean * c, (1 - mean) * c, k)

    def draw(rng, n):
        items = max(1, n // size)
        p, se, sp = beta(rng, p_pass, items), beta(rng, sensitivity, items), beta(rng, specificity, items)
        human = rng.random((items, size)) < p[:, None]
        judge = np.where(human, rng.random((items, size)) < se[:, None], rng.random((items, size)) >= sp[:, None])
        ids = [f"c{i}" for i in range(items * size)]
        return {"human": pd.Series(np.where(human.ravel(), "PASS", "FAIL"), index=ids),
                "judge": pd.Series(np.where(judge.ravel(), "PASS", "FAIL"), index=ids),
                "cluster": pd.Series(np.repeat(np.arange(items), size), index=ids), "truths": truths, "truth": np.nan}

    return Design(f"clustered-calibration(size={size},icc={icc},p={p_pass},se={sensitivity},sp={specificity})",
                  f"claims in items of {size}, labels and judge errors clustered (icc {icc}), pass rate {p_pass}", draw)


def _calibrate_clustered(metric: str, interval: str = "auto"):
    def run(sample, level):
        from evalkit import calibrate

        sample["truth"] = sample["truths"][metric]
        report = calibrate.calibrate(sample["judge"], sample["human"], confidence_level=level, cluster=sample["cluster"],
                                     interval=interval)
        row = report.table.loc[metric]
        return row["ci_low"], row["ci_high"], row["estimate"]

    return run


def drift_design(p: float = 0.8) -> Design:
    """n labels in order with a constant agreement rate p (no drift): the truth for each bin is p."""

    def draw(rng, n):
        human = rng.random(n) < 0.7
        agree = rng.random(n) < p
        judge = np.where(agree, human, ~human)
        ids = [f"c{i}" for i in range(n)]
        labels = pd.DataFrame({"case_id": ids, "label": np.where(human, "PASS", "FAIL"), "position": np.arange(n)})
        return {"judge": pd.Series(np.where(judge, "PASS", "FAIL"), index=ids), "labels": labels, "truth": p}

    return Design(f"no-drift(agreement={p})", f"labels in order, agreement {p} throughout", draw)


def _drift(kind="interval"):
    def run(sample, level):
        from evalkit import calibrate

        out = calibrate.agreement_drift(sample["judge"], sample["labels"], bins=4,
                                        confidence_level=level if kind == "interval" else 0.95)
        if kind == "interval":
            return out["ci_low"].iloc[0], out["ci_high"].iloc[0], out["agreement"].iloc[0]  # the first bin's
        return out.attrs.get("p_trend", np.nan)

    return run




#: Kappa at skewed prevalence and judges of several qualities (the fast suite runs the first three).
KAPPA_DESIGNS = (calibration_design(0.9, 0.95, 0.6), calibration_design(0.9, 0.95, 0.9), calibration_design(0.95, 0.97, 0.7),
                 calibration_design(0.8, 0.9, 0.7), calibration_design(0.9, 0.8, 0.5), calibration_design(0.7, 0.95, 0.95),
                 calibration_design(0.5, 0.8, 0.8))
ROGAN_GLADEN_DESIGNS = (rogan_gladen_design(0.9, 0.9, 0.95, 0.6), rogan_gladen_design(0.8, 0.95, 0.9, 0.7),
                        rogan_gladen_design(0.8, 0.8, 0.9, 0.7), rogan_gladen_design(0.9, 0.9, 0.95, 0.9),
                        rogan_gladen_design(0.5, 0.5, 0.8, 0.8), rogan_gladen_design(0.95, 0.95, 0.97, 0.7),
                        rogan_gladen_design(0.9, 0.6, 0.9, 0.8), rogan_gladen_design(0.7, 0.7, 0.8, 0.5),
                        rogan_gladen_design(0.9, 0.9, 0.95, 0.8, n_run=1000))
CLUSTERED_CALIBRATION = (clustered_calibration_design(4, 0.3), clustered_calibration_design(8, 0.5, 0.9, 0.95, 0.6))
RATE_DESIGNS = (bernoulli(0.5), bernoulli(0.9), bernoulli(0.97))
EPOCH_DESIGNS = (clustered_epochs(0.9, 3, 1.0), clustered_epochs(0.9, 3, 1e6), clustered_epochs(0.5, 5, 1.0),
                 clustered_epochs(0.97, 5, 1e6))


ENTRIES = [
    Entry("judge.pass_rate", "epochs of a log: betting over whole cases (default)", "interval", _epochs_pass_rate(),
          EPOCH_DESIGNS, default=True),
    Entry("judge.pass_rate", "epochs of a log: interval='clopper-pearson' on the per-case means", "interval",
          _epochs_pass_rate("clopper-pearson"), EPOCH_DESIGNS),
    Entry("judge.pass_rate", "cluster='item' (default: betting over whole clusters)", "interval",
          _judge_pass_rate_with(clustered=True),
          (clustered_design(4, 0.3), clustered_design(8, 0.5), clustered_design(4, 0.3, 0.95)),
          default=True, sizes=(20, 40, 80, 120, 200, 400), test_sizes=(40, 400)),
    Entry("judge.pass_rate", "cluster='item', interval='t' (cluster-robust t)", "interval",
          _judge_pass_rate_with("t", clustered=True),
          (clustered_design(4, 0.3), clustered_design(8, 0.5), clustered_design(4, 0.3, 0.95)),
          sizes=(40, 80, 120, 200, 400)),
    Entry("judge.pass_rate", "interval='wilson'", "interval", _judge_pass_rate_with("wilson"), RATE_DESIGNS),
    Entry("calibrate.calibrate", "agreement, Clopper-Pearson (default)", "interval", _calibrate_metric("agreement"),
          (calibration_design(), calibration_design(0.9, 0.95, 0.6)), default=True),
    Entry("calibrate.calibrate", "fail_recall, Clopper-Pearson", "interval", _calibrate_metric("fail_recall"),
          (calibration_design(), calibration_design(0.9, 0.95, 0.6))),
    Entry("calibrate.calibrate", "false_flag_rate, Clopper-Pearson", "interval", _calibrate_metric("false_flag_rate"),
          (calibration_design(), calibration_design(0.9, 0.95, 0.6))),
    Entry("calibrate.calibrate", "agreement, interval='wilson'", "interval", _calibrate_metric("agreement", "wilson"),
          (calibration_design(), calibration_design(0.9, 0.95, 0.6))),
    Entry("calibrate.calibrate", "kappa, Clopper-Pearson fiducial (default)", "interval", _calibrate_metric("kappa"),
          KAPPA_DESIGNS[:3], default=True, test_sizes=(50,), notes="pass rates 0.9-0.95"),
    Entry("calibrate.calibrate", "kappa, Clopper-Pearson fiducial (default), more judges", "interval",
          _calibrate_metric("kappa"), KAPPA_DESIGNS[3:]),
    Entry("calibrate.calibrate", "kappa, large-sample, Fleiss-Cohen-Everitt variance (comparison, not offered)",
          "interval", _kappa_large_sample("fce"), KAPPA_DESIGNS),
    Entry("calibrate.calibrate", "kappa, large-sample, Cohen's 1960 variance (the interval before)", "interval",
          _kappa_large_sample("cohen"), KAPPA_DESIGNS),
    Entry("calibrate.calibrate", "cluster=, agreement (default: betting over whole clusters)", "interval",
          _calibrate_clustered("agreement"), CLUSTERED_CALIBRATION, default=True, sizes=(20, 50, 100, 200, 400),
          test_sizes=(40, 400), notes="finite-sample: holds at any number of clusters"),
    Entry("calibrate.calibrate", "cluster=, fail_recall (default: betting over whole clusters)", "interval",
          _calibrate_clustered("fail_recall"), CLUSTERED_CALIBRATION, sizes=(20, 50, 100, 200, 400)),
    Entry("calibrate.calibrate", "cluster=, false_flag_rate (default: betting over whole clusters)", "interval",
          _calibrate_clustered("false_flag_rate"), CLUSTERED_CALIBRATION, sizes=(20, 50, 100, 200, 400)),
    Entry("calibrate.calibrate", "cluster=, agreement, interval='t' (cluster-robust t)", "interval",
          _calibrate_clustered("agreement", "t"), CLUSTERED_CALIBRATION, sizes=(40, 80, 120, 200, 400),
          notes="fewer than 50 clusters: refused (NaN)"),
    Entry("calibrate.calibrate", "cluster=, fail_recall, interval='t' (cluster-robust t)", "interval",
          _calibrate_clustered("fail_recall", "t"), CLUSTERED_CALIBRATION, sizes=(40, 80, 120, 200, 400)),
    Entry("calibrate.calibrate", "cluster=, kappa (cluster-robust delta method)", "interval",
          _calibrate_clustered("kappa"), CLUSTERED_CALIBRATION, sizes=(40, 80, 120, 200, 400)),
    Entry("calibrate.corrected_pass_rate", "Clopper-Pearson fiducial (default), calibration disjoint from the run",
          "interval", _corrected_pass_rate, ROGAN_GLADEN_DESIGNS[:2], default=True, test_sizes=(100,), test_reps=300,
          notes="refused (NaN) where the calibration cannot rule out sensitivity + specificity <= 1"),
    Entry("calibrate.corrected_pass_rate", "Clopper-Pearson fiducial (default), more designs", "interval",
          _corrected_pass_rate, ROGAN_GLADEN_DESIGNS[2:]),
    Entry("calibrate.corrected_pass_rate", "percentile bootstrap (the interval before; comparison)", "interval",
          _bootstrap_corrected, ROGAN_GLADEN_DESIGNS),
    Entry("calibrate.agreement_drift", "first of 4 bins, Clopper-Pearson (default)", "interval", _drift(),
          (drift_design(0.8), drift_design(0.95)), default=True, test_sizes=(100,)),
    Entry("calibrate.agreement_drift", "p_trend (Spearman), no drift", "test", _drift("test"),
          (drift_design(0.8),), default=True, test_sizes=(100,)),
]
ENTRIES.insert(0, Entry("judge.pass_rate", "Clopper-Pearson (default)", "interval", _judge_pass_rate_with(), RATE_DESIGNS,
                        default=True))


# ======================================================================================= judge.consistency, repeats
def _repeats_table(passed: np.ndarray, prefix: str = "c") -> pd.DataFrame:
    """A results table of ``passed`` (cases x repeats) as run_judge(..., repeats=k) writes it."""
    n, k = passed.shape
    ids = np.repeat([f"{prefix}{i}" for i in range(n)], k)
    repeat = np.tile(np.arange(1, k + 1), n)
    return pd.DataFrame({"case_id": [f"{c}_repeat_{r}" for c, r in zip(ids, repeat, strict=True)], "sample_id": ids,
                         "repeat": repeat, "rubric": "r", "rubric_version": "v1", "model": "m",
                         "verdict": np.where(passed.ravel(), "PASS", "FAIL"), "parsed": True, "error": None})


def unsure_judge(share_unsure: float, repeats: int, *, good: float = 0.8, low: float = 0.2, high: float = 0.8) -> Design:
    """A judge sure of most cases (PASS on a share ``good`` of them, FAIL on the rest, every call) and unsure of a share
    ``share_unsure``, where its pass probability is U(low, high) and each of ``repeats`` calls is a fresh draw. The truth
    is the flip rate, the chance two calls on a case disagree: ``share_unsure * 2 E[p (1 - p)]``."""
    second = (high**3 - low**3) / (3 * (high - low))
    truth = share_unsure * 2 * ((low + high) / 2 - second)

    def draw(rng, n):
        unsure = rng.random(n) < share_unsure
        p = np.where(unsure, rng.uniform(low, high, n), (rng.random(n) < good).astype(float))
        return {"passed": rng.random((n, repeats)) < p[:, None], "truth": truth}

    return Design(f"unsure-judge(share={share_unsure}, repeats={repeats})",
                  f"{share_unsure:.0%} of cases judged by a coin of U({low}, {high}), the rest always PASS ({good:.0%}) "
                  f"or FAIL; {repeats} repeats; flip rate {truth:.4f}", draw)


def beta_judge(mean: float, repeats: int, concentration: float) -> Design:
    """Each case's pass probability Beta(mean c, (1 - mean) c), each of ``repeats`` calls a fresh draw; the truth is the
    flip rate ``2 E[p (1 - p)] = 2 mean (1 - mean) c / (c + 1)``."""
    truth = 2 * mean * (1 - mean) * concentration / (concentration + 1)

    def draw(rng, n):
        p = rng.beta(mean * concentration, (1 - mean) * concentration, size=n)
        return {"passed": rng.random((n, repeats)) < p[:, None], "truth": truth}

    return Design(f"beta-judge(mean={mean}, repeats={repeats}, c={concentration:g})",
                  f"pass probability Beta with mean {mean}, concentration {concentration:g}; {repeats} repeats; "
                  f"flip rate {truth:.4f}", draw)


def _flip_rate(sample, level):
    from evalkit import judge

    summary = judge.consistency(_repeats_table(sample["passed"]), confidence_level=level).summary.set_index("quantity")
    row = summary.loc["flip rate"]
    return row["ci_low"], row["ci_high"], row["estimate"]


#: The awkward ones first: rare flips (3% and 1.3%), two repeats only, and a judge unsure of everything.
FLIP_DESIGNS = (unsure_judge(0.05, 3), unsure_judge(0.02, 2), unsure_judge(0.2, 3), unsure_judge(0.2, 5),
                beta_judge(0.85, 3, 2.0), beta_judge(0.5, 2, 1.0))

ENTRIES.append(Entry("judge.consistency", "flip rate, betting over cases (default)", "interval", _flip_rate,
                     FLIP_DESIGNS, default=True, sizes=(20, 50, 100, 200, 400), test_sizes=(50,),
                     notes="n = cases, each judged `repeats` times"))
