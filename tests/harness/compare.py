"""Two runs on the same cases: compare.paired, compare.against_baseline."""

from __future__ import annotations

import numpy as np
import pandas as pd

from tests.harness.core import (
    SKEWED_RATINGS,
    Design,
    Entry,
)


# Two runs on the same cases. Pass/fail pairs: each case passes run a with probability ``pass_a`` and flips
# with probability ``flip``; ``difference = p_b - p_a`` (so p(pass a, fail b) = (flip - difference) / 2).
def paired_pass(pass_a: float, flip: float, difference: float) -> Design:
    """Paired pass/fail verdicts of two runs; the truth is the change in pass rate ``p_b - p_a``."""
    p10, p01 = (flip - difference) / 2, (flip + difference) / 2
    cells = np.array([pass_a - p10, p10, p01, 1 - pass_a - p01])  # pass-pass, pass-fail, fail-pass, fail-fail
    if (cells < -1e-12).any():
        raise ValueError(f"no paired design with pass rate {pass_a}, flip rate {flip} and difference {difference}")
    cells = np.clip(cells, 0, None) / np.clip(cells, 0, None).sum()

    def draw(rng, n):
        cell = rng.choice(4, size=n, p=cells)
        return {"a": cell <= 1, "b": (cell == 0) | (cell == 2), "truth": difference}

    return Design(f"paired-pass(p_a={pass_a}, flip={flip}, diff={difference:+g})",
                  f"pass rate {pass_a} in run a, {flip:.0%} of cases flip, p_b - p_a = {difference:+g}", draw)


def paired_ratings(change: float, steps, step_probs, name: str, *, values=(1, 2, 3, 4, 5),
                   probs=(0.01, 0.02, 0.04, 0.17, 0.76)) -> Design:
    """1-5 ratings of run a piled at the top; with probability ``change`` run b moves by a step (clipped to
    the scale). The truth, the exact mean of b - a, is summed over the joint distribution."""
    values, probs = np.asarray(values, dtype=float), np.asarray(probs, dtype=float) / np.sum(probs)
    steps, step_probs = np.asarray(steps, dtype=float), np.asarray(step_probs, dtype=float) / np.sum(step_probs)
    moved = np.clip(values[:, None] + steps[None, :], values.min(), values.max()) - values[:, None]
    truth = float(change * (probs @ moved @ step_probs))

    def draw(rng, n):
        a = rng.choice(values, size=n, p=probs)
        step = rng.choice(steps, size=n, p=step_probs) * (rng.random(n) < change)
        return {"a": a, "b": np.clip(a + step, values.min(), values.max()), "truth": truth, "bounds": (1.0, 5.0)}

    return Design(name, f"1-5 ratings piled at the top; {change:.0%} of cases move by {steps.tolist()} "
                        f"(probabilities {np.round(step_probs, 2).tolist()}); mean change {truth:+.4f}", draw)


def paired_tcva(keep: float = 0.7) -> Design:
    """TCVA-like scores in [0, 1]: run a ~ Beta(5, 1.5); run b keeps a's score with probability ``keep``, else
    draws afresh from Beta(4, 2). The truth is ``(1 - keep) * (2/3 - 5/6.5)``."""
    truth = (1 - keep) * (4 / 6 - 5 / 6.5)

    def draw(rng, n):
        a = rng.beta(5, 1.5, n)
        b = np.where(rng.random(n) < keep, a, rng.beta(4, 2, n))
        return {"a": a, "b": b, "truth": truth, "bounds": (0.0, 1.0)}

    return Design(f"paired-tcva(keep={keep})", f"scores in [0, 1]; {1 - keep:.0%} of cases re-scored lower on "
                                               f"average; mean change {truth:+.4f}", draw)


def exchangeable_ratings(change: float) -> Design:
    """Null for paired scores: with probability ``change`` run b is an independent draw from a's distribution,
    else equal to a, so (a, b) is exchangeable within each case and the mean change is 0."""
    base = SKEWED_RATINGS

    def draw(rng, n):
        a = base.draw(rng, n)["x"]
        b = np.where(rng.random(n) < change, base.draw(rng, n)["x"], a)
        return {"a": a, "b": b, "truth": 0.0, "bounds": (1.0, 5.0)}

    return Design(f"exchangeable-ratings(change={change})", f"1-5 ratings; {change:.0%} of cases re-drawn from the "
                                                            "same distribution (no change)", draw)


def paired_clustered(pass_a: float, changed: float, difference: float, *, epochs=3, concentration: float = 2.0
                     ) -> Design:
    """Two runs on the epochs of ``n`` questions (clusters). A question's pass probability in run a is
    Beta(pass_a * c, (1 - pass_a) * c) (small c: a question is hard or easy in every epoch); with probability
    ``changed`` run b grades the question anew, its epochs passing with a probability drawn from the Beta of mean
    ``pass_a + difference / changed``, else each epoch keeps run a's verdict. ``epochs`` is a number, or a pair
    (low, high): each question's epochs drawn uniformly in it. The truth, the per-case mean of b - a, is
    ``difference``; with ``difference = 0`` the runs are exchangeable within each question (the tests' null)."""
    pass_b = pass_a + difference / changed
    if not 0 < pass_b < 1:
        raise ValueError(f"no clustered paired design with pass rate {pass_a}, {changed} changed, difference {difference}")
    low, high = (epochs, epochs) if np.ndim(epochs) == 0 else epochs

    def draw(rng, n):
        sizes = rng.integers(low, high + 1, size=n)
        groups = np.repeat(np.arange(n), sizes)
        p_a = rng.beta(pass_a * concentration, (1 - pass_a) * concentration, n)[groups]
        p_b = rng.beta(pass_b * concentration, (1 - pass_b) * concentration, n)[groups]
        renew = (rng.random(n) < changed)[groups]
        a = rng.random(len(groups)) < p_a
        b = np.where(renew, rng.random(len(groups)) < p_b, a)
        return {"a": a, "b": b, "cluster": groups, "truth": difference}

    size = f"{low}-{high}" if high > low else f"{low}"
    return Design(f"paired-clustered(p_a={pass_a}, changed={changed}, diff={difference:+g}, epochs={size})",
                  f"{size} epochs of each question, questions Beta-clustered (c={concentration}); {changed:.0%} of "
                  f"questions graded anew in run b; per-case change {difference:+g}", draw)


def several_runs(pass_a: float, flip: float, differences, name: str) -> Design:
    """A baseline and ``len(differences)`` runs on the same cases, each as :func:`paired_pass` against it."""
    for difference in differences:
        paired_pass(pass_a, flip, difference)  # refuses impossible cells

    def draw(rng, n):
        base = rng.random(n) < pass_a
        frames, truth = [pd.DataFrame({"case_id": np.arange(n), "run": "base", "verdict": base})], []
        for i, difference in enumerate(differences):
            p10, p01 = (flip - difference) / 2, (flip + difference) / 2
            u = rng.random(n)  # flip a pass with probability p10 / pass_a, a fail with p01 / (1 - pass_a)
            other = np.where(base, u >= p10 / pass_a, u < p01 / (1 - pass_a))
            frames.append(pd.DataFrame({"case_id": np.arange(n), "run": f"r{i}", "verdict": other}))
            truth.append(difference)
        return {"runs": pd.concat(frames, ignore_index=True), "truth": np.array(truth),
                "null": np.array(differences) == 0}

    return Design(name, f"a baseline at pass rate {pass_a} and {len(differences)} runs, {flip:.0%} flipping, "
                        f"differences {list(differences)}", draw)


def _pass_series(x):
    return pd.Series(np.where(x, "PASS", "FAIL"))


def _compare_rate(method=None):
    def run(sample, level):
        from evalkit import compare

        res = compare.paired(_pass_series(sample["a"]), _pass_series(sample["b"]), interval=method,
                             confidence_level=level)
        return res.ci_low, res.ci_high, res.difference

    return run


def _compare_mcnemar(sample, alpha):
    from evalkit import compare

    return compare.paired(_pass_series(sample["a"]), _pass_series(sample["b"])).p_val


def _compare_score(method=None, known_bounds=False):
    def run(sample, level):
        from evalkit import compare

        res = compare.paired(pd.Series(sample["a"]), pd.Series(sample["b"]), interval=method, confidence_level=level,
                             bounds=sample["bounds"] if known_bounds else None, rng=0)
        return res.ci_low, res.ci_high, res.difference

    return run


def _compare_sign_flip(sample, alpha):
    from evalkit import compare

    return compare.paired(pd.Series(sample["a"]), pd.Series(sample["b"]), rng=0).p_val


def _compare_clustered(independent: bool = False):
    """``cluster=`` the questions (the default with clusters); or, ``independent``, the cases taken as independent."""
    def run(sample, level):
        from evalkit import compare

        cluster = None if independent else pd.Series(sample["cluster"])
        res = compare.paired(_pass_series(sample["a"]), _pass_series(sample["b"]), cluster=cluster,
                             confidence_level=level)
        return res.ci_low, res.ci_high

    return run


def _compare_clustered_test(sample, alpha):
    from evalkit import compare

    return compare.paired(_pass_series(sample["a"]), _pass_series(sample["b"]),
                          cluster=pd.Series(sample["cluster"])).p_val


def _against_joint(adjust="holm"):
    def run(sample, level):
        from evalkit import compare

        table = compare.against_baseline(sample["runs"], baseline="base", adjust=adjust, confidence_level=level)
        return table["joint_low"].to_numpy(), table["joint_high"].to_numpy()

    return run


def _against_family(adjust="holm"):
    """The smallest adjusted p-value among the true nulls: at or below alpha exactly when the table makes a
    false claim, so its 'size' is the family-wise error rate (under the global null also the FDR)."""
    def run(sample, alpha):
        from evalkit import compare

        table = compare.against_baseline(sample["runs"], baseline="base", adjust=adjust, confidence_level=1 - alpha)
        return float(table["p_adjusted"].to_numpy()[sample["null"]].min())

    return run


def simulated_mcnemar_power(n: int, difference: float, discordant: float, alpha: float, *, reps: int,
                            rng: np.random.Generator) -> tuple[float, float]:
    """Empirical power of the exact McNemar test (``scipy.stats.binomtest`` on the flips) over ``reps`` paired
    data sets of ``n`` cases drawn cell by cell, and its Monte Carlo standard error: the planners' check,
    independent of the exact power sums they use."""
    from scipy import stats

    p10, p01 = (discordant - difference) / 2, (discordant + difference) / 2
    counts = rng.multinomial(n, [p10, p01, 1 - p10 - p01], size=reps)[:, :2]
    cache = {}
    rejected = 0
    for n10, n01 in map(tuple, counts):
        key = (min(n10, n01), n10 + n01)
        if key not in cache:
            cache[key] = key[1] > 0 and stats.binomtest(key[0], key[1], 0.5).pvalue <= alpha
        rejected += cache[key]
    rate = rejected / reps
    return rate, float(np.sqrt(rate * (1 - rate) / reps))


#: Pass rates near 0.9 with 2-20% of cases flipping: the settings the paired interval must hold at.
PAIRED_PASS_SETTINGS = tuple((0.9, flip, diff) for flip in (0.02, 0.05, 0.1, 0.2)
                             for diff in (0.0, -flip / 2, *((flip / 2,) if flip <= 0.1 else ())))
PAIRED_PASS_GRID = tuple(paired_pass(*setting) for setting in PAIRED_PASS_SETTINGS)
_PAIRED_PASS_FAST = (paired_pass(0.9, 0.02, 0.0), paired_pass(0.9, 0.05, -0.025), paired_pass(0.9, 0.1, 0.05),
                     paired_pass(0.9, 0.2, -0.1))
PAIRED_SCORE_DESIGNS = (
    paired_ratings(0.1, (-1, 1), (0.7, 0.3), "paired-ratings(10% move, mostly down)"),
    paired_ratings(0.05, (-1, 1), (0.5, 0.5), "paired-ratings(5% move, either way)"),
    paired_ratings(0.3, (-2, -1, 1), (0.2, 0.5, 0.3), "paired-ratings(30% move)"),
    paired_tcva(0.7),
)
_PAIR_SIZES = (20, 30, 50, 100, 200)
#: Epochs of questions (clusters): pass rates 0.6-0.9, a quarter to a half of the questions graded anew.
PAIRED_CLUSTERED_DESIGNS = (
    paired_clustered(0.8, 0.3, -0.1),
    paired_clustered(0.9, 0.2, -0.05, epochs=5, concentration=1.0),
    paired_clustered(0.6, 0.5, 0.1, epochs=(1, 5)),
    paired_clustered(0.8, 0.3, 0.0, epochs=2, concentration=0.5),
)
PAIRED_CLUSTERED_NULLS = (paired_clustered(0.8, 0.3, 0.0), paired_clustered(0.7, 0.5, 0.0, epochs=(1, 5), concentration=1.0))

ENTRIES = [
    Entry("compare.paired", "pass-rate difference, Newcombe method 10 (default)", "interval", _compare_rate(),
          _PAIRED_PASS_FAST, default=True, sizes=_PAIR_SIZES,
          notes="the whole grid (PAIRED_PASS_GRID) at n = 30-200: python benchmarks/bench_compare.py"),
    Entry("compare.paired", "pass-rate difference, Tango score", "interval", _compare_rate("tango"),
          _PAIRED_PASS_FAST, sizes=_PAIR_SIZES),
    Entry("compare.paired", "exact McNemar (size)", "test", _compare_mcnemar,
          (paired_pass(0.9, 0.1, 0.0), paired_pass(0.9, 0.2, 0.0)), default=True, sizes=_PAIR_SIZES),
    Entry("compare.paired", "mean score difference, betting, observed range (default)", "interval",
          _compare_score(), PAIRED_SCORE_DESIGNS, default=True, sizes=_PAIR_SIZES),
    Entry("compare.paired", "mean score difference, betting, known bounds", "interval",
          _compare_score(known_bounds=True), PAIRED_SCORE_DESIGNS, sizes=_PAIR_SIZES),
    Entry("compare.paired", "mean score difference, Student t", "interval", _compare_score("t"),
          PAIRED_SCORE_DESIGNS, sizes=_PAIR_SIZES),
    Entry("compare.paired", "mean score difference, BCa bootstrap", "interval", _compare_score("bootstrap"),
          PAIRED_SCORE_DESIGNS, sizes=_PAIR_SIZES),
    Entry("compare.paired", "sign-flip permutation test (size)", "test", _compare_sign_flip,
          (exchangeable_ratings(0.1), exchangeable_ratings(0.5)), default=True, sizes=_PAIR_SIZES),
    Entry("compare.paired", "pass-rate difference, clusters: betting over whole clusters (default with cluster=)",
          "interval", _compare_clustered(), PAIRED_CLUSTERED_DESIGNS, default=True, sizes=(20, 50, 100, 200),
          notes="n = questions (clusters), each of 1-5 epochs"),
    Entry("compare.paired", "pass-rate difference, clustered cases taken as independent (Newcombe)", "interval",
          _compare_clustered(independent=True), PAIRED_CLUSTERED_DESIGNS, sizes=(20, 50, 100, 200),
          notes="what ignoring the questions gives: not a default"),
    Entry("compare.paired", "exact sign-flip over clusters (size)", "test", _compare_clustered_test,
          PAIRED_CLUSTERED_NULLS, default=True, sizes=(20, 50, 100, 200), notes="n = questions (clusters)"),
    Entry("compare.against_baseline", "joint intervals (Bonferroni), holm (default)", "interval", _against_joint(),
          (several_runs(0.9, 0.1, (0.0, -0.05, 0.05, 0.0, -0.025), "five-runs(mixed)"),), default=True,
          notes="all five joint intervals cover together"),
    Entry("compare.against_baseline", "family-wise error, holm (default)", "test", _against_family(),
          (several_runs(0.9, 0.2, (0.0, -0.1, -0.05, 0.0, 0.0), "five-runs(three nulls)"),), default=True,
          notes="'size' = P(some true null rejected at the adjusted level)"),
    Entry("compare.against_baseline", "family-wise error, holm, global null", "test", _against_family(),
          (several_runs(0.9, 0.2, (0.0,) * 5, "five-runs(global null, 20% flip)"),)),
    Entry("compare.against_baseline", "false claims under the global null, bh", "test", _against_family("bh"),
          (several_runs(0.9, 0.2, (0.0,) * 5, "five-runs(global null, 20% flip)"),),
          notes="under the global null the FDR equals the family-wise error"),
]


# ============================================================================================ gate.decide
def _results(passed: np.ndarray) -> pd.DataFrame:
    """One verdict per case (a vector) or repeats (cases x repeats), as a results table of run_judge."""
    from tests.harness.rates import _repeats_table

    if passed.ndim == 2:
        return _repeats_table(passed)
    ids = [f"c{i}" for i in range(len(passed))]
    return pd.DataFrame({"case_id": ids, "rubric": "r", "rubric_version": "v1", "model": "m",
                         "verdict": np.where(passed, "PASS", "FAIL"), "parsed": True, "error": None})


def _gate(kind="interval"):
    def run(sample, level):
        from evalkit import gate

        res = gate.decide(_results(np.asarray(sample["a"])), _results(np.asarray(sample["b"])), margin=0.0,
                          confidence_level=level if kind == "interval" else 0.95)
        return (res.ci_low, res.ci_high, res.estimate) if kind == "interval" else res.p_val

    return run


def gate_repeats(drop: float, repeats: int, *, share_unsure: float = 0.15, good: float = 0.8) -> Design:
    """A noisy judge on two versions: each case is sure PASS (a share ``good`` of the sure ones), sure FAIL, or unsure
    (a share ``share_unsure``: pass probability U(0.2, 0.8)); the candidate breaks a share ``drop`` of the cases (pass
    probability 0). Each run judges every case ``repeats`` times. The truth is the change in the mean pass probability,
    ``-drop E[p]``."""
    mean = share_unsure * 0.5 + (1 - share_unsure) * good
    truth = -drop * mean

    def draw(rng, n):
        unsure = rng.random(n) < share_unsure
        p = np.where(unsure, rng.uniform(0.2, 0.8, n), (rng.random(n) < good).astype(float))
        q = np.where(rng.random(n) < drop, 0.0, p)
        return {"a": rng.random((n, repeats)) < p[:, None], "b": rng.random((n, repeats)) < q[:, None], "truth": truth}

    return Design(f"gate-repeats(drop={drop}, repeats={repeats}, unsure={share_unsure})",
                  f"{share_unsure:.0%} of cases judged by a coin, the candidate breaks {drop:.0%}; {repeats} repeats per "
                  f"run; change {truth:+.4f}", draw)


GATE_REPEAT_DESIGNS = (gate_repeats(0.0, 3), gate_repeats(0.05, 3), gate_repeats(0.1, 2, share_unsure=0.3),
                       gate_repeats(0.02, 5, share_unsure=0.05, good=0.97))

ENTRIES += [
    Entry("gate.decide", "one verdict per case: Newcombe (default)", "interval", _gate(), _PAIRED_PASS_FAST,
          default=True, sizes=_PAIR_SIZES),
    Entry("gate.decide", "one verdict per case: exact McNemar (size)", "test", _gate("test"),
          (paired_pass(0.9, 0.1, 0.0), paired_pass(0.9, 0.2, 0.0)), default=True, sizes=_PAIR_SIZES),
    Entry("gate.decide", "repeats: betting over whole cases (default with repeats)", "interval", _gate(),
          GATE_REPEAT_DESIGNS, default=True, sizes=(20, 50, 100, 200, 400), test_sizes=(50,),
          notes="n = cases, each judged 2-5 times in each run"),
]
