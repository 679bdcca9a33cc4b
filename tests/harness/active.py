"""Active labelling and juries of judges: infer.mean with ``probabilities=`` (cases drawn by the judge's
uncertainty, one at a time without replacement) and with a DataFrame judge (several judges, cross-fitted).

An active design draws the labelled cases itself, as a user would: a uniform pilot (where the uncertainty is read
from labels), :func:`infer.sampling_probabilities`, then :func:`infer.choose_cases` with ``strategy="active"``; the
truth is the mean over exactly the cases given (the active estimand). A jury design labels a uniform random sample
and the truth is the population mean.
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from evalkit import infer
from tests.harness.core import SHARED_DATA, Design, Entry, load_shared

#: the least pilot that sampling_probabilities reads an uncertainty from
MIN_PILOT = 8


def pilot_size(n: int) -> int:
    """The uniform pilot of an n-label active design: a fifth of the labels, at least ``MIN_PILOT``."""
    return max(MIN_PILOT, n // 5)


def _active_sample(rng, n, judge: pd.Series | pd.DataFrame, truth: pd.Series, bounds, *, pilot: bool) -> dict:
    """n labels drawn actively from ``judge``'s cases (after a uniform pilot when ``pilot``)."""
    seed = int(rng.integers(2**31))
    first = infer.choose_cases(truth, pilot_size(n), strategy="random", rng=seed) if pilot else pd.Index([])
    q = infer.sampling_probabilities(judge, human_pilot=truth[first] if pilot else None, bounds=bounds)
    drawn = infer.choose_cases(truth, n - len(first), strategy="active", probabilities=q, rng=seed + 1)
    order = first.append(drawn)
    return {"judge": judge, "human": truth[order], "probabilities": q, "truth": float(truth.mean()), "bounds": bounds}


def probability_judge_design(n_cases: int = 1000) -> Design:
    """A judge's stated probability p of a pass (Beta(0.5, 0.5): often sure), the human verdict PASS with
    probability p; the probabilities from sqrt(p (1 - p)), no pilot; a new population of n_cases each sample."""

    def draw(rng, n):
        p = rng.beta(0.5, 0.5, n_cases)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        truth = pd.Series((rng.random(n_cases) < p).astype(float), index=ids)
        return _active_sample(rng, n, pd.Series(p, index=ids), truth, (0.0, 1.0), pilot=False)

    return Design("active-probability-judge", f"0/1 verdicts, a judge's probability p ~ Beta(0.5, 0.5), {n_cases} "
                  "cases; drawn by sqrt(p(1-p)), floor 0.5", draw)


def heteroscedastic_design(n_cases: int = 1000) -> Design:
    """1-5 ratings whose spread about the judge grows with the judge's score: rating = clip(round(judge + N(0, s)),
    1, 5), s from 0.1 at judge 1 to 1.5 at judge 5; a uniform pilot reads the spread."""

    def draw(rng, n):
        judge = rng.uniform(1, 5, n_cases)
        y = np.clip(np.round(judge + rng.normal(0, 0.1 + 0.35 * (judge - 1), n_cases)), 1, 5)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        return _active_sample(rng, n, pd.Series(judge, index=ids), pd.Series(y, index=ids), (1.0, 5.0), pilot=True)

    return Design("active-heteroscedastic-1to5", f"1-5 ratings, spread about the judge 0.1 to 1.5, {n_cases} cases; "
                  "uniform pilot of n/5 (at least 8), then drawn by the pilot's residual spread", draw)


@functools.cache
def _summeval_pool(dimension: str, metric: str):
    table = load_shared("load_summeval", SHARED_DATA / "summeval")
    m = table[metric]
    ids = pd.Index([f"s{i}" for i in range(len(table))])
    return (pd.Series((1 + 4 * (m - m.min()) / (m.max() - m.min())).to_numpy(), index=ids),
            pd.Series(table[dimension].to_numpy(dtype=float), index=ids))


def summeval_active_design(dimension: str = "consistency", metric: str = "CTC_D_CNNDM_Consistency") -> Design:
    """SummEval's 1,600 summaries, expert ratings (1-5, mean of 3), the judge an automatic metric on 1-5: a uniform
    pilot, then drawn by the pilot's residual spread; the truth is the mean of the 1,600 ratings."""

    def draw(rng, n):
        judge, truth = _summeval_pool(dimension, metric)
        return _active_sample(rng, n, judge, truth, (1.0, 5.0), pilot=True)

    return Design(f"summeval-{dimension}-active", f"SummEval expert {dimension}, judge {metric}; pilot n/5, then "
                  "active", draw, data="summeval")


def _jury_population(rng, n_cases, truth, accuracies):
    """Judges that agree with the 0/1 truth on a share ``accuracies[k]`` of the cases."""
    return pd.DataFrame({f"judge-{k}": np.where(rng.random(n_cases) < a, truth, 1 - truth)
                         for k, a in enumerate(accuracies)})


def jury_verdicts_design(p: float = 0.7, accuracies=(0.85, 0.75, 0.7), n_cases: int = 1000) -> Design:
    """PASS with probability p; three judges agreeing with the human on 85%, 75% and 70% of the cases, each wrong
    independently; n of n_cases labelled uniformly; the truth is p."""

    def draw(rng, n):
        truth = (rng.random(n_cases) < p).astype(float)
        judges = _jury_population(rng, n_cases, truth, accuracies)
        judges.index = [f"c{i}" for i in range(n_cases)]
        picks = rng.choice(n_cases, n, replace=False)
        return {"judge": judges, "human": pd.Series(truth[picks], index=judges.index[picks]), "truth": p,
                "bounds": (0.0, 1.0)}

    return Design(f"jury-verdicts(p={p})", f"PASS/FAIL, pass rate {p}, three judges agreeing on "
                  f"{', '.join(f'{a:.0%}' for a in accuracies)}; {n_cases} cases", draw)


def jury_ratings_design(n_cases: int = 1000) -> Design:
    """1-5 ratings piled at the top (mean 4.13); three judges: rating + N(0.3, 0.7), 0.5 rating + N(0, 0.9), and
    one that is noise; rounded into 1-5; the truth is the population mean."""
    values, probs = np.array([1, 2, 3, 4, 5.0]), np.array([0.03, 0.05, 0.12, 0.35, 0.45])

    def draw(rng, n):
        y = rng.choice(values, n_cases, p=probs)
        judges = pd.DataFrame({"close": np.clip(np.round(y + rng.normal(0.3, 0.7, n_cases)), 1, 5),
                               "loose": np.clip(np.round(0.5 * y + 1.5 + rng.normal(0, 0.9, n_cases)), 1, 5),
                               "noise": rng.integers(1, 6, n_cases).astype(float)},
                              index=[f"c{i}" for i in range(n_cases)])
        picks = rng.choice(n_cases, n, replace=False)
        return {"judge": judges, "human": pd.Series(y[picks], index=judges.index[picks]), "truth": float(values @ probs),
                "bounds": (1.0, 5.0)}

    return Design("jury-ratings-1to5", "1-5 ratings (mean 4.13), three judges (close, loose, noise) rounded to 1-5, "
                  f"{n_cases} cases", draw)


def _paired_active_sample(rng, n, ja: pd.Series, jb: pd.Series, ha: pd.Series, hb: pd.Series, bounds) -> dict:
    """n cases labelled for both systems, drawn actively on the judges' difference after a uniform pilot (the pilot's
    spread of the labels' difference about the judges'); the truth is the mean difference over the cases."""
    seed = int(rng.integers(2**31))
    diff, truth = ja - jb, ha - hb
    first = infer.choose_cases(truth, pilot_size(n), strategy="random", rng=seed)
    scale = (bounds[0] - bounds[1], bounds[1] - bounds[0])
    q = infer.sampling_probabilities(diff, human_pilot=truth[first], bounds=scale)
    order = first.append(infer.choose_cases(truth, n - len(first), strategy="active", probabilities=q, rng=seed + 1))
    return {"ja": ja, "jb": jb, "ha": ha[order], "hb": hb[order], "probabilities": q, "truth": float(truth.mean()),
            "bounds": bounds}


def paired_ratings_design(n_cases: int = 1000) -> Design:
    """Two systems rated 1-5 on the same cases, both piled at the top (A a quarter point above B where the case is
    easy, level where it is hard); each judge = rating + N(0, s) rounded into 1-5, s from 0.2 on easy to 1.2 on hard
    cases; a uniform pilot, then drawn by the pilot's spread of the labels' difference about the judges'."""

    def draw(rng, n):
        hard = rng.random(n_cases)
        base = rng.choice([3.0, 4.0, 5.0], n_cases, p=[0.1, 0.3, 0.6])
        ha = np.clip(base + (rng.random(n_cases) < 0.25 * (1 - hard)) - (rng.random(n_cases) < 0.3 * hard), 1, 5)
        hb = np.clip(base - (rng.random(n_cases) < 0.3 * hard), 1, 5)
        spread = 0.2 + hard
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        ja = np.clip(np.round(ha + rng.normal(0, spread)), 1, 5)
        jb = np.clip(np.round(hb + rng.normal(0, spread)), 1, 5)
        return _paired_active_sample(rng, n, *(pd.Series(v, index=ids) for v in (ja, jb, ha, hb)), (1.0, 5.0))

    return Design("active-paired-1to5", f"two systems' 1-5 ratings on {n_cases} cases, judges' spread 0.2 to 1.2; "
                  "pilot n/5, then drawn by the pilot's spread of the difference", draw)


def summeval_paired_design(dimension: str = "consistency", metric: str = "CTC_D_CNNDM_Consistency") -> Design:
    """SummEval's 16 systems on 100 documents as 800 pairs: system k against system k + 8 on one document (the
    expert ratings and the metric on 1-5); a uniform pilot, then drawn actively; the truth is the mean of the 800
    differences."""

    def draw(rng, n):
        ja, jb, ha, hb = _summeval_pairs(dimension, metric)
        return _paired_active_sample(rng, n, ja, jb, ha, hb, (1.0, 5.0))

    return Design(f"summeval-{dimension}-paired-active", f"SummEval expert {dimension}, systems 1-8 against 9-16 on "
                  f"each document (800 pairs), judge {metric}; pilot n/5, then active", draw, data="summeval")


@functools.cache
def _summeval_pairs(dimension: str, metric: str):
    table = load_shared("load_summeval", SHARED_DATA / "summeval").copy()
    m = table[metric]
    table["_judge"] = 1 + 4 * (m - m.min()) / (m.max() - m.min())
    systems = sorted(table["system"].unique())
    first, second = systems[: len(systems) // 2], systems[len(systems) // 2:]
    a = table[table["system"].isin(first)].copy()
    b = table[table["system"].isin(second)].copy()
    a["slot"], b["slot"] = a["system"].map(first.index), b["system"].map(second.index)
    key = [c for c in table.columns if c in ("doc_id", "document_id", "id")][:1] or ["text"]
    pairs = a.merge(b, on=[*key, "slot"], suffixes=("_a", "_b"))
    ids = pd.Index([f"p{i}" for i in range(len(pairs))])
    return tuple(pd.Series(pairs[f"{c}_{s}"].to_numpy(dtype=float), index=ids)
                 for c, s in (("_judge", "a"), ("_judge", "b"), (dimension, "a"), (dimension, "b")))


def _verdict_results(verdict: pd.Series) -> pd.DataFrame:
    """A PASS/FAIL judge results table of 0/1 verdicts (as run_judge gives it)."""
    return pd.DataFrame({"case_id": verdict.index, "rubric": "r", "rubric_version": "v1", "model": "m",
                         "verdict": np.where(verdict.to_numpy() == 1, "PASS", "FAIL"), "parsed": True, "error": None})


def verdict_judge_design(p: float = 0.85, sensitivity: float = 0.95, specificity: float = 0.6,
                         n_cases: int = 1000) -> Design:
    """PASS/FAIL: human PASS with probability p; the judge's verdict says PASS for a share ``sensitivity`` of the
    passes and FAIL for a share ``specificity`` of the fails (lenient, as LLM judges are); a uniform pilot, then drawn
    by how often each verdict is wrong in it; the truth is the pass rate over the n_cases cases."""

    def draw(rng, n):
        truth = (rng.random(n_cases) < p).astype(float)
        verdict = np.where(truth == 1, rng.random(n_cases) < sensitivity, rng.random(n_cases) > specificity)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        sample = _active_sample(rng, n, pd.Series(verdict.astype(float), index=ids), pd.Series(truth, index=ids),
                                (0.0, 1.0), pilot=True)
        return {**sample, "results": _verdict_results(sample["judge"])}

    return Design(f"active-verdicts(p={p})", f"PASS/FAIL, pass rate {p}, a lenient judge (sensitivity "
                  f"{sensitivity:.0%}, specificity {specificity:.0%}), {n_cases} cases; pilot n/5, then drawn by each "
                  "verdict's error rate in it", draw)


def probability_verdict_design(n_cases: int = 1000) -> Design:
    """The probability-judge design as a results table: the verdict is PASS where the judge's probability is above
    0.5, the cases drawn by ``sqrt(p (1 - p))`` (``uncertainty=``), no pilot."""

    def draw(rng, n):
        p = rng.beta(0.5, 0.5, n_cases)
        ids = pd.Index([f"c{i}" for i in range(n_cases)])
        truth = pd.Series((rng.random(n_cases) < p).astype(float), index=ids)
        verdict = pd.Series((p > 0.5).astype(float), index=ids)
        q = infer.sampling_probabilities(verdict, uncertainty=pd.Series(np.sqrt(p * (1 - p)), index=ids))
        drawn = infer.choose_cases(truth, n, strategy="active", probabilities=q, rng=int(rng.integers(2**31)))
        return {"results": _verdict_results(verdict), "human": truth[drawn], "probabilities": q,
                "truth": float(truth.mean())}

    return Design("active-probability-verdicts", f"PASS/FAIL verdicts (the judge's p > 0.5), p ~ Beta(0.5, 0.5), "
                  f"{n_cases} cases; drawn by sqrt(p(1-p)) given as the uncertainty", draw)


def summeval_verdict_design(dimension: str = "consistency", metric: str = "CTC_D_CNNDM_Consistency") -> Design:
    """SummEval's 1,600 summaries as PASS/FAIL: PASS where the experts' mean rating is 5 (0.63 of them for
    consistency), the judge's verdict PASS where the metric is above its own share of passes' quantile; a uniform
    pilot, then drawn by each verdict's error rate in it; the truth is the pass rate of the 1,600."""

    def draw(rng, n):
        judge, truth = _summeval_pool(dimension, metric)
        passed = (truth >= 5).astype(float)
        verdict = (judge > judge.quantile(1 - passed.mean())).astype(float)
        sample = _active_sample(rng, n, verdict, passed, (0.0, 1.0), pilot=True)
        return {**sample, "results": _verdict_results(verdict)}

    return Design(f"summeval-{dimension}-verdicts-active", f"SummEval expert {dimension} = 5 as PASS, judge {metric} "
                  "above its quantile; pilot n/5, then active", draw, data="summeval")


def jury_results_design(p: float = 0.7, accuracies=(0.85, 0.75, 0.7), n_cases: int = 1000) -> Design:
    """:func:`jury_verdicts_design` as three judges' results tables (a dict by judge name), the labels PASS/FAIL;
    n of n_cases labelled uniformly; the truth is p."""
    verdicts = jury_verdicts_design(p, accuracies, n_cases)

    def draw(rng, n):
        sample = verdicts.draw(rng, n)
        return {**sample, "results": {name: _verdict_results(sample["judge"][name]) for name in sample["judge"]}}

    return Design(f"jury-results(p={p})", f"PASS/FAIL results tables of three judges agreeing on "
                  f"{', '.join(f'{a:.0%}' for a in accuracies)}, pass rate {p}; {n_cases} cases", draw)


def rank_jury_design(name: str, description: str, *, strengths, agree: dict, n_all: int = 4000, tie: float = 0.2
                     ) -> Design:
    """Judges on n_all comparisons of systems with log-strengths ``strengths`` (best first, every ordered pair equally
    often, ties 20%), humans on n of them; judge ``k`` agrees with the human vote with probability ``agree[k]``, else
    votes for the first slot 60% of the time (each judge independently); the truth is the order of the strengths."""
    from tests.harness.pairwise import _comparisons

    strengths = np.asarray(strengths, dtype=float)
    k = len(strengths)

    def draw(rng, n):
        table = _comparisons(rng, n_all, strengths, tie=tie)
        judges = {name: table.assign(winner=np.where(rng.random(n_all) < a, table["winner"],
                                                     np.where(rng.random(n_all) < 0.6, "a", "b")))
                  for name, a in agree.items()}
        labelled = rng.choice(n_all, n, replace=False)
        return {"judge": judges, "human": table.iloc[labelled], "truth": np.arange(1, k + 1),
                "systems": [f"s{i}" for i in range(k)], "best": max(agree, key=agree.get)}

    return Design(name, description, draw)


RANK_JURY = (
    rank_jury_design("ranks-5-close-jury-0.8-0.65-0.5", "5 systems 0.1 log-odds apart, three judges agreeing with the "
                     "human vote 80%, 65% and 50% of the time (else biased to the first slot), 4,000 comparisons",
                     strengths=0.1 * np.arange(2, -3, -1), agree={"strong": 0.8, "middling": 0.65, "weak": 0.5}),
    rank_jury_design("ranks-6-pairs-jury-0.7-0.7-0.6", "6 systems in three pairs 0.1 log-odds apart, the pairs 0.6 "
                     "apart, three judges agreeing 70%, 70% and 60% of the time, 4,000 comparisons",
                     strengths=[0.9, 0.8, 0.2, 0.1, -0.5, -0.6], agree={"one": 0.7, "two": 0.7, "three": 0.6}),
)


@functools.cache
def _arena_jury():
    """The arena comparisons among the harness's 12 systems with every judge's verdict (GPT-4, Claude 3 Opus,
    GPT-3.5), indexed by comparison id, the human votes, the ranking by every human vote, and the judge that agrees
    with the human votes most often (the best single judge)."""
    from tests.harness.pairwise import arena_votes

    judges = {}
    for judge in ("gpt-4", "claude-3-opus", "gpt-3.5-turbo"):
        verdicts, human, order = arena_votes(judge)
        judges[judge] = verdicts
    common = judges["gpt-4"].index
    for verdicts in judges.values():
        common = common.intersection(verdicts.index, sort=False)
    judges = {k: v.loc[common] for k, v in judges.items()}
    human = human.loc[common]
    best = max(judges, key=lambda k: float((judges[k]["winner"] == human["winner"]).mean()))
    return judges, human, order, best


def _arena_jury_draw(rng, n):
    judges, human, order, best = _arena_jury()
    picks = rng.choice(len(human), n, replace=False)
    return {"judge": judges, "human": human.iloc[picks], "truth": np.arange(1, len(order) + 1), "systems": order,
            "best": best}


RANK_ARENA_JURY = Design("arena-12-systems-jury", "Chatbot Arena: GPT-4's, Claude 3 Opus's and GPT-3.5's verdicts on "
                         "the comparisons of Chatzi et al.'s 12 systems, n human votes drawn without replacement; the "
                         "truth is the ranking by every human vote", _arena_jury_draw, data="arena")


def _rank_sets(*, alone: bool = False):
    """rank_sets with every judge (a dict: the jury), or with the design's best judge alone (``alone``)."""

    def run(sample, level):
        from evalkit import pairwise

        judge = sample["judge"][sample["best"]] if alone else sample["judge"]
        out = pairwise.rank_sets(judge, sample["human"], confidence_level=level)
        order = out.set_index("system").loc[sample["systems"]]
        return order["rank_low"].to_numpy(float), order["rank_high"].to_numpy(float)

    return run


def _difference(interval: str = "auto"):
    def run(sample, level):
        row = infer.difference(sample["ja"], sample["jb"], sample["ha"], sample["hb"], interval=interval,
                               probabilities=sample["probabilities"], confidence_level=level,
                               bounds=sample["bounds"]).iloc[0]
        return row["ci_low"], row["ci_high"], row["estimate"]

    return run


def _pass_rate(interval: str = "auto"):
    def run(sample, level):
        human = sample["human"].map({1.0: "PASS", 0.0: "FAIL"})
        row = infer.pass_rate(sample["results"], human, probabilities=sample.get("probabilities"), interval=interval,
                              confidence_level=level).iloc[0]
        return row["ci_low"], row["ci_high"], row["estimate"]

    return run


def _mean(interval: str = "auto", method: str = "ppi++"):
    def run(sample, level):
        row = infer.mean(sample["judge"], sample["human"], probabilities=sample.get("probabilities"), method=method,
                         interval=interval, confidence_level=level, bounds=sample["bounds"]).iloc[0]
        return row["ci_low"], row["ci_high"], row["estimate"]

    return run


#: The stop rule of the sequence entries: stop at the first number of labels whose half-width is at most this share of
#: the labels' scale (0.15 on 0/1 labels, 0.6 on 1-5 ratings), or at n.
STOP_SHARE = 0.15


def _sequence(rule: str = "every step"):
    """infer.confidence_sequence(probabilities=) on the labels in the order drawn. ``"every step"``: the intersection
    of the intervals after labels 1..n (it covers when every one of them does: time-uniform coverage); ``"stopped"``:
    the interval where the stop rule first holds (or at n)."""

    def run(sample, level):
        cs = infer.confidence_sequence(sample["judge"], sample["human"], probabilities=sample["probabilities"],
                                       confidence_level=level, bounds=sample["bounds"])
        if rule == "every step":
            return float(cs["cs_low"].max()), float(cs["cs_high"].min()), float(cs["estimate"].iloc[-1])
        a, b = sample["bounds"]
        stop = infer.stopping_point(cs, half_width=STOP_SHARE * (b - a)) or len(cs)
        row = cs.iloc[stop - 1]
        return row["cs_low"], row["cs_high"], row["estimate"]

    return run


# ------------------------------------------------------------------ the Labeller's line under skips and ignores
def _leaving_sample(rng, n, judge: pd.Series, truth: pd.Series, bounds, *, pilot: bool, leave: dict) -> dict:
    """The whole draw order of an active design (a uniform pilot first when ``pilot``), and which cases the annotator
    ignores or skips (each a property of the case, drawn once, more often for a low label); they label the others
    in that order until n labels are made."""
    seed = int(rng.integers(2**31))
    first = infer.choose_cases(truth, pilot_size(n), strategy="random", rng=seed) if pilot else pd.Index([])
    q = infer.sampling_probabilities(judge, human_pilot=truth[first] if pilot else None, bounds=bounds)
    rest = infer.choose_cases(truth.drop(first), int((q > 0).sum()), strategy="active", probabilities=q, rng=seed + 1)
    order = first.append(rest)
    low = (truth < truth.median()).to_numpy() if bounds != (0.0, 1.0) else (truth == 0).to_numpy()
    u = rng.random((2, len(truth)))
    ignore = pd.Series(u[0] < np.where(low, *leave["ignore"]), index=truth.index)
    skip = pd.Series(u[1] < np.where(low, *leave["skip"]), index=truth.index) & ~ignore
    return {"truth_all": truth, "order": order, "pilot": len(first), "probabilities": q, "ignore": ignore, "skip": skip,
            "bounds": bounds, "n": n, "truth": np.nan}  # the truth is set by the entry: it depends on where it stops


def leaving_design(base: str = "probability", *, ignore=(0.15, 0.03), skip=(0.05, 0.05)) -> Design:
    """An active design (:func:`probability_judge_design` or :func:`heteroscedastic_design`'s population) labelled by
    an annotator who ignores a case (it cannot be labelled) or skips it (it stays open) with the chances ``ignore``
    and ``skip``, (for a low label, for a high one): below the median rating, or a FAIL."""
    leave = {"ignore": ignore, "skip": skip}

    def draw(rng, n):
        if base == "probability":
            p = rng.beta(0.5, 0.5, 1000)
            ids = pd.Index([f"c{i}" for i in range(1000)])
            truth = pd.Series((rng.random(1000) < p).astype(float), index=ids)
            return _leaving_sample(rng, n, pd.Series(p, index=ids), truth, (0.0, 1.0), pilot=False,
                                   leave=leave)
        judge = rng.uniform(1, 5, 1000)
        y = np.clip(np.round(judge + rng.normal(0, 0.1 + 0.35 * (judge - 1), 1000)), 1, 5)
        ids = pd.Index([f"c{i}" for i in range(1000)])
        return _leaving_sample(rng, n, pd.Series(judge, index=ids), pd.Series(y, index=ids), (1.0, 5.0), pilot=True,
                                leave=leave)

    what = ("0/1 verdicts, a judge's probability p ~ Beta(0.5, 0.5)" if base == "probability" else
            "1-5 ratings, spread about the judge 0.1 to 1.5, a uniform pilot of n/5")
    tag = f"ignore{ignore[0]:g}-{ignore[1]:g}-skip{skip[0]:g}-{skip[1]:g}"
    return Design(f"active-{base}-{tag}", f"{what}, 1000 cases; ignored with chance {ignore[0]:g} (low label) or "
                  f"{ignore[1]:g} (high), skipped (left open) {skip[0]:g} or {skip[1]:g}", draw)


def _labeller_line(target: str = "named", rule: str = "stopped"):
    """widgets.Labeller(order='active')'s live line (the inputs it gives infer.confidence_sequence, from
    evalkit.widgets._labeller._drawn_inputs, which tests/test_infer_active_sequence.py checks against the widget)
    after an annotator who ignores and skips: at the first number of labels where its half-width is at most
    STOP_SHARE of the scale, or at n (``"stopped"``), or at n (``"at n"``). The truth: ``"named"``, the mean over
    the cases the line names (every case less those ignored or skipped so far); ``"labellable"``, the mean over
    every case the annotator would not ignore (those not drawn yet included), less those skipped so far."""

    def run(sample, level):
        from evalkit.widgets._labeller import _drawn_inputs  # the 'widgets' extra (the entries' requires)

        order, q, n_pilot = list(sample["order"]), sample["probabilities"], sample["pilot"]
        weights = np.r_[np.full(n_pilot, np.nan), q.reindex(order[n_pilot:]).to_numpy(dtype=float)]
        truth, ignore, skip = sample["truth_all"], sample["ignore"], sample["skip"]
        a, b = sample["bounds"]
        labelled, fresh = [], []  # the cases labelled, in order; whether a skip or an ignore came before each
        gap = False
        for case in order:  # the annotator's walk through the draw order, until n labels
            if len(labelled) == sample["n"]:
                break
            if ignore[case] or skip[case]:
                gap = True
                continue
            labelled.append(case)
            fresh.append(gap)
            gap = False
        at = {case: i for i, case in enumerate(order)}
        ignored = [case for case in order if ignore[case]]

        def line(t):  # the line after t labels: what the widget gives infer, and what it leaves out
            last = at[labelled[t - 1]]
            seen = {case for case in ignored if at[case] < last}
            human, probabilities, out_i, out_s = _drawn_inputs(order, weights, {c: truth[c] for c in labelled[:t]}, seen)
            cs = infer.confidence_sequence(human=human, probabilities=probabilities, bounds=(a, b),
                                           confidence_level=level)
            return cs, set(out_i), set(out_s)

        ends = [t for t in range(1, len(labelled)) if fresh[t]] + [len(labelled)]  # the left-out set is fixed between
        if rule == "at n":
            ends = ends[-1:]
        start, chosen = 0, None
        for end in ends:
            cs, out_i, out_s = line(end)
            half = cs["half_width"].to_numpy()[start:end]
            settled = np.flatnonzero(half <= STOP_SHARE * (b - a)) if rule == "stopped" else []
            if len(settled):
                t = start + int(settled[0]) + 1
                chosen = (cs.iloc[t - 1], out_i, out_s)
                break
            start = end
        if chosen is None:
            chosen = (cs.iloc[-1], out_i, out_s)
        row, out_i, out_s = chosen
        if target == "named":
            sample["truth"] = float(truth.drop(list(out_i | out_s)).mean())
        else:
            sample["truth"] = float(truth[~ignore.to_numpy()].drop(list(out_s)).mean())
        return row["cs_low"], row["cs_high"], row["estimate"]

    return run


#: Ignores tied to the label (a FAIL, or a rating below the median, ignored five times as often), skips not.
LEAVING = (leaving_design("probability"), leaving_design("heteroscedastic"),
           leaving_design("probability", ignore=(0.05, 0.05), skip=(0.05, 0.05)))
#: Both tied to the label: 28% of the low labels left out against 8% of the high ones.
LEAVING_HARSH = (leaving_design("probability", skip=(0.15, 0.05)), leaving_design("heteroscedastic", skip=(0.15, 0.05)))


ACTIVE = (probability_judge_design(), heteroscedastic_design(), summeval_active_design())
JURY = (jury_verdicts_design(), jury_ratings_design(), jury_verdicts_design(0.95, (0.9, 0.8, 0.8)))
PAIRED = (paired_ratings_design(), summeval_paired_design())
JURY_RESULTS = (jury_results_design(), jury_results_design(0.95, (0.9, 0.8, 0.8)), jury_results_design(0.85, (0.9, 0.65, 0.6)))
VERDICTS = (probability_verdict_design(), verdict_judge_design(), summeval_verdict_design())

ENTRIES = [
    Entry("infer.mean", "probabilities= (active labelling), interval='betting' (default)", "interval", _mean(),
          ACTIVE, default=True, sizes=(20, 50, 100, 200), test_sizes=(50, 200), test_reps=200,
          notes="finite-sample: Des Raj's estimator with the line refitted as labels arrive is a bounded martingale; "
                "the fast suite runs 200 samples"),
    Entry("infer.mean", "probabilities= (active labelling), interval='t' (large-sample)", "interval", _mean("t"),
          ACTIVE, sizes=(100, 200), notes="Student's t on Des Raj's martingale standard error with Hall's skewness "
          "correction; refused below 100 labels (plain t ran short at 50-100 on SummEval consistency: 0.895, 0.917)"),
    Entry("infer.mean", "probabilities=, method='classical' (the labels' Des Raj mean), interval='betting'",
          "interval", _mean(method="classical"), ACTIVE, sizes=(20, 50, 100, 200)),
    Entry("infer.confidence_sequence", "probabilities= (active labelling), every step 1..n at once (default)",
          "interval", _sequence(), ACTIVE, default=True, sizes=(20, 50, 100, 200), test_sizes=(50, 200),
          test_reps=200, notes="time-uniform: covers when the interval after every number of labels up to n covers; "
                               "the live interval of widgets.Labeller(order='active')"),
    Entry("infer.confidence_sequence", f"probabilities=, stopped at half-width <= {STOP_SHARE:g} of the scale (or n) "
          "(default)", "interval", _sequence("stopped"), ACTIVE, default=True, sizes=(20, 50, 100, 200),
          test_sizes=(50, 200), test_reps=200, notes="the interval at the stopping time of stop_half_width"),
    Entry("widgets.Labeller", "order='active', watch: the line when it first says you can stop (half-width <= "
          f"{STOP_SHARE:g} of the scale) or at n, an annotator ignoring and skipping; truth: the cases it names (default)",
          "interval", _labeller_line(), LEAVING, default=True, sizes=(20, 50, 100, 200), test_sizes=(50, 200),
          test_reps=200, slow=True, notes="ignored and skipped cases left out of what the line estimates; the "
          "estimand named on the line (these cases less those left out); leaving out more often at a low label",
          requires=("ipywidgets", "widgets")),
    Entry("widgets.Labeller", "order='active', watch: the line at n labels, an annotator ignoring and skipping; "
          "truth: the cases it names", "interval", _labeller_line(rule="at n"), LEAVING, sizes=(20, 50, 100, 200),
          requires=("ipywidgets", "widgets")),
    Entry("widgets.Labeller", "order='active', watch: the line when it first says you can stop, or at n, skips "
          "tied to the label too; truth: the cases it names", "interval", _labeller_line(), LEAVING_HARSH,
          sizes=(20, 50, 100, 200),
          notes="the awkward design: what leaving out that depends on the label costs", requires=("ipywidgets", "widgets")),
    Entry("widgets.Labeller", "order='active', watch: the line when it says you can stop, or at n; truth: every "
          "case the annotator would not ignore (those not drawn yet too), less those skipped", "interval",
          _labeller_line("labellable"), (*LEAVING, *LEAVING_HARSH), sizes=(20, 50, 100, 200),
          notes="the estimand once every ignore is known: the cases the annotator would ignore but has not met "
                "yet are still in the line's cases", requires=("ipywidgets", "widgets")),
    Entry("infer.mean", "a jury (DataFrame judge), method='ppi++', interval='auto' (default)", "interval", _mean(),
          JURY, default=True, sizes=(20, 50, 100, 200), test_sizes=(50, 200),
          notes="betting on the line through the earlier labels; on 0/1 labels the narrower of it and Clopper-Pearson"),
    Entry("infer.mean", "a jury (DataFrame judge), interval='betting'", "interval", _mean("betting"), JURY,
          sizes=(20, 50, 100, 200)),
    Entry("infer.mean", "a jury (DataFrame judge), interval='t' (cross-PPI, large-sample)", "interval", _mean("t"),
          JURY, sizes=(100, 200), notes="cross-fitted line, Student's t with Hall's skewness correction; refused "
          "below 100 labels (plain t ran short on a pass rate of 0.95: 0.896 at 50, 0.882 at 100); no fallback to "
          "the humans-only t"),
    Entry("infer.difference", "probabilities= (active labelling), interval='betting' (default)", "interval",
          _difference(), PAIRED, default=True, sizes=(20, 50, 100, 200), test_sizes=(50, 200), test_reps=200,
          slow=True, notes="Des Raj's estimator on the per-case differences, the line refitted as labels arrive; "
                           "checked with the slow tests (200 samples a cell)"),
    Entry("infer.difference", "probabilities= (active labelling), interval='t' (large-sample)", "interval",
          _difference("t"), PAIRED, sizes=(100, 200), notes="Hall's skewness-corrected t; refused below 100 labels"),
    Entry("infer.pass_rate", "probabilities= (active labelling), interval='betting' (default)", "interval",
          _pass_rate(), VERDICTS, default=True, sizes=(20, 50, 100, 200), test_sizes=(50, 200), test_reps=200,
          slow=True, notes="mean's active table on the verdicts; checked with the slow tests (200 samples a cell)"),
    Entry("infer.pass_rate", "probabilities= (active labelling), interval='t' (large-sample)", "interval",
          _pass_rate("t"), VERDICTS, sizes=(100, 200), notes="Hall's skewness-corrected t; refused below 100 labels"),
    Entry("infer.pass_rate", "a jury (dict of results tables), interval='auto' (default)", "interval", _pass_rate(),
          JURY_RESULTS, default=True, sizes=(20, 50, 100, 200), test_sizes=(50, 200),
          notes="mean's jury on the judges' 0/1 verdicts: betting on the line through the earlier labels, or "
                "Clopper-Pearson where that is narrower"),
    Entry("infer.pass_rate", "a jury (dict of results tables), interval='t' (cross-PPI, large-sample)", "interval",
          _pass_rate("t"), JURY_RESULTS, sizes=(100, 200), notes="Hall's skewness-corrected t; refused below 100 labels"),
    Entry("pairwise.rank_sets", "a jury (dict of judges), method='ppr', sets='stepdown' (default), simultaneous",
          "interval", _rank_sets(), (*RANK_JURY, RANK_ARENA_JURY), default=True, sizes=(200, 500, 1000),
          test_sizes=(200, 1000), slow=True, test_reps=300,
          notes="every system's rank-set holds its true rank at once; n = human votes; checked with the slow tests "
                "(300 samples: MC s.e. 0.0126)"),
    Entry("pairwise.rank_sets", "the jury designs' best single judge, method='ppr', sets='stepdown' (default)",
          "interval", _rank_sets(alone=True), (*RANK_JURY, RANK_ARENA_JURY), sizes=(200, 500, 1000),
          notes="beside the jury: the same draws with its most accurate judge alone"),
]
