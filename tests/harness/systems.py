"""Several systems at once: infer.systems and infer.system_differences, one calibration from every system's labels.

A draw is a whole evaluation: S systems answer P cases (resampled from a real data set's cases, or drawn from a fixed
synthetic population), the judge scores every response, and n responses of each system are labelled (``n`` is the
labels per system): on the same cases for every system (``shared``), or on cases of each system's own (the usual
case). The entry reports one system's interval (or one pair's), drawn at random in each draw, against that system's
population mean label (the mean over every case of the data set, or of the synthetic population).
"""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from tests.harness.core import SHARED_DATA, Design, Entry, _summeval_table, _usr, load_shared

SYSTEM_SIZES = (20, 30, 50, 100, 200)


def _labels(rng, systems: int, cases: int, n: int, shared: bool) -> np.ndarray:
    """Which responses (systems x cases) are labelled: n per system, on shared cases or each system's own."""
    n = min(n, cases)
    labelled = np.zeros((systems, cases), dtype=bool)
    if shared:
        labelled[:, rng.choice(cases, n, replace=False)] = True
    else:
        for s in range(systems):
            labelled[s, rng.choice(cases, n, replace=False)] = True
    return labelled


def _table(y: np.ndarray, f: np.ndarray, labelled: np.ndarray) -> pd.DataFrame:
    """The long responses table of a systems x cases draw."""
    systems, cases = y.shape
    return pd.DataFrame({"system": np.repeat([f"s{k}" for k in range(systems)], cases),
                         "case_id": np.tile(np.arange(cases), systems), "judge": f.ravel(),
                         "human": np.where(labelled, y, np.nan).ravel()})


def _matrix_design(name: str, description: str, population, *, cases: int | None, shared: bool, bounds, data=None
                   ) -> Design:
    """Systems x cases from ``population()`` -> (labels Y, judge F), both (systems, all cases): each draw resamples
    ``cases`` of its cases with replacement (default: as many as there are)."""

    @functools.cache
    def truth():
        y, _ = population()
        return np.nanmean(y, axis=1)

    def draw(rng, n):
        y, f = population()
        picks = rng.integers(0, y.shape[1], cases or y.shape[1])
        y, f = y[:, picks], f[:, picks]
        keep = ~np.isnan(y).any(axis=0)  # a case every system answered
        y, f = y[:, keep], f[:, keep]
        labelled = _labels(rng, y.shape[0], y.shape[1], n, shared)
        target = int(rng.integers(0, y.shape[0]))
        others = [s for s in range(y.shape[0]) if s != target]
        other = int(rng.choice(others)) if others else target
        t = truth()
        return {"table": _table(y, f, labelled), "bounds": bounds, "target": target, "other": other,
                "truth": t[target], "truth_difference": t[target] - t[other] if others else np.nan}

    return Design(name + ("-shared" if shared else "-own"), description + (", the same cases labelled for every system"
                  if shared else ", each system's labels on cases of its own"), draw, data=data)


SUMMEVAL_SYSTEM_JUDGES = {"consistency": "CTC_D_CNNDM_Consistency", "relevance": "CTC_E_RoBERTa_Relevance",
                          "fluency": "CTC_D_CNNDM_Consistency", "coherence": "bart_score_cnn_src_hypo"}


@functools.cache
def _summeval_matrix(dimension: str, systems: int = 6):
    table = _summeval_table()
    names = sorted(table["system"].unique())
    chosen = [names[i] for i in np.linspace(0, len(names) - 1, systems).round().astype(int)]
    docs = sorted(table["doc_id"].unique())
    wide = {c: table.pivot(index="system", columns="doc_id", values=c).loc[chosen, docs].to_numpy(float)
            for c in (dimension, SUMMEVAL_SYSTEM_JUDGES[dimension])}
    return wide[dimension], wide[SUMMEVAL_SYSTEM_JUDGES[dimension]]


def summeval_systems(dimension: str, *, shared: bool) -> Design:
    return _matrix_design(f"summeval-{dimension}-6-systems", f"SummEval {dimension}: 6 systems x 100 documents resampled, "
                          f"the judge {SUMMEVAL_SYSTEM_JUDGES[dimension]}", functools.partial(_summeval_matrix, dimension),
                          cases=None, shared=shared, bounds=(1, 5), data="summeval")


@functools.cache
def _usr_matrix():
    """USR Topical-Chat: 6 systems x 60 dialogue contexts; the label is the mean Overall rating of the second and third
    annotators, the judge the first annotator's (a noisy rater standing in for a judge)."""
    ratings, items = _usr()
    overall = ratings[ratings["dimension"] == "Overall"]
    wide = overall.pivot_table(index="item_id", columns="annotator", values="rating", aggfunc="first")
    topical = items[items["corpus"] == "topicalchat"]
    first, rest = [], []
    for item in topical.index:
        values = wide.loc[item].dropna().to_numpy(float)
        first.append(values[0])
        rest.append(values[1:].mean())
    frame = topical.assign(judge=first, human=rest)
    y = frame.pivot(index="system", columns="context_id", values="human").to_numpy(float)
    f = frame.pivot(index="system", columns="context_id", values="judge").to_numpy(float)
    return y, f


def usr_systems(*, shared: bool) -> Design:
    return _matrix_design("usr-topicalchat-6-systems", "USR Topical-Chat Overall (1-5): 6 systems x 60 contexts resampled, "
                          "the first annotator as the judge of the other two's mean", _usr_matrix, cases=None,
                          shared=shared, bounds=(1, 5), data="usr")


@functools.cache
def _synthetic_matrix(skew: bool):
    """6 systems x 20,000 cases: 1-5 ratings (piled at the top when ``skew``), a judge on [0, 1] that rounds and
    blurs them, with a system-specific offset (the same calibration does not fit every system exactly)."""
    rng = np.random.default_rng(20261202 + skew)
    quality = np.array([2.6, 3.0, 3.4, 3.8, 4.2, 4.6]) if skew else np.array([2.5, 2.8, 3.0, 3.2, 3.5, 3.8])
    hardness = rng.normal(0, 0.6, 20_000)
    latent = quality[:, None] + hardness[None, :] + rng.normal(0, 0.7, (6, 20_000))
    y = np.clip(np.round(latent), 1, 5)
    f = np.clip((latent - 1) / 4 + np.linspace(-0.05, 0.05, 6)[:, None] + rng.normal(0, 0.12, (6, 20_000)), 0, 1)
    return y, f


def synthetic_systems(*, skew: bool, shared: bool) -> Design:
    kind = "piled at the top" if skew else "spread"
    return _matrix_design(f"synthetic-6-systems-{'top' if skew else 'spread'}", f"6 systems x 200 cases of 1-5 ratings "
                          f"{kind}, a judge on [0, 1] with a system-specific offset",
                          functools.partial(_synthetic_matrix, skew), cases=200, shared=shared, bounds=(1, 5))


@functools.cache
def _arena_population():
    """The arena comparisons rated by humans and by GPT-4, as each system's outcome in each comparison it took part
    in (1 won, 0.5 tie, 0 lost)."""
    votes = load_shared("load_arena", str(SHARED_DATA / "arena"))
    human = votes[votes["rater"] == "human"].set_index("comparison_id")
    judge = votes[votes["rater"] == "gpt-4"].set_index("comparison_id").loc[human.index]
    outcome = {"a": 1.0, "b": 0.0, "tie": 0.5}
    rows = []
    for side in ("system_a", "system_b"):
        flip = side == "system_b"
        y = human["winner"].map(outcome).to_numpy(float)
        f = judge["winner"].map(outcome).to_numpy(float)
        rows.append(pd.DataFrame({"system": human[side].to_numpy(), "case_id": human.index.to_numpy(),
                                  "human": 1 - y if flip else y, "judge": 1 - f if flip else f}))
    long = pd.concat(rows, ignore_index=True).dropna()
    return long, long.groupby("system")["human"].mean()


def arena_systems() -> Design:
    """Chatbot Arena: 1,500 comparisons drawn from the 26,919 that humans and GPT-4 both rated; 12 x n / 2 of them
    labelled (each labels two systems: about n labels per system)."""

    def draw(rng, n):
        long, truth = _arena_population()
        comparisons = long["case_id"].unique()
        picks = rng.choice(comparisons, 1500, replace=False)
        sample = long[long["case_id"].isin(picks)].copy()
        systems = sorted(sample["system"].unique())
        labelled_cases = rng.choice(picks, min(len(picks), len(systems) * n // 2), replace=False)
        sample.loc[~sample["case_id"].isin(labelled_cases), "human"] = np.nan
        target, other = rng.choice(len(systems), 2, replace=False)
        return {"table": sample, "bounds": (0, 1), "target": int(target), "other": int(other),
                "truth": float(truth[systems[target]]),
                "truth_difference": float(truth[systems[target]] - truth[systems[other]])}

    return Design("arena-12-systems-gpt4", "Chatbot Arena: each system's outcome in 1,500 comparisons drawn from the "
                  "human votes, GPT-4's verdicts as the judge, about n labelled comparisons per system", draw, data="arena")


@functools.cache
def _summeval_one_system(dimension: str):
    """SummEval as one system: all 1,600 summaries (16 systems x 100 documents) judged, one population."""
    table = _summeval_table()
    return (table[dimension].to_numpy(float)[None, :], table[SUMMEVAL_SYSTEM_JUDGES[dimension]].to_numpy(float)[None, :])


def summeval_one_system(dimension: str) -> Design:
    return _matrix_design(f"summeval-{dimension}-1-system", f"SummEval {dimension} as one system: 1,600 summaries "
                          f"resampled, the judge {SUMMEVAL_SYSTEM_JUDGES[dimension]}",
                          functools.partial(_summeval_one_system, dimension), cases=None, shared=False, bounds=(1, 5),
                          data="summeval")


@functools.cache
def _top_matrix(systems: int):
    """1-5 ratings piled at the top (mean about 4.6, like SummEval's consistency), a judge on [0, 1] at r about 0.6."""
    rng = np.random.default_rng(20261205 + systems)
    quality = np.linspace(4.75, 4.95, systems) if systems > 1 else np.array([4.85])
    hardness = rng.normal(0, 0.5, 20_000)
    latent = quality[:, None] + hardness[None, :] + rng.normal(0, 0.6, (systems, 20_000))
    y = np.clip(np.round(latent), 1, 5)
    f = np.clip((latent - 1) / 4 + rng.normal(0, 0.15, (systems, 20_000)), 0, 1)
    return y, f


def top_systems(systems: int, *, shared: bool = False) -> Design:
    return _matrix_design(f"top-1to5-{systems}-system{'s' if systems > 1 else ''}", f"{systems} system(s) x 1,000 "
                          "cases of 1-5 ratings piled at the top (mean about 4.6), a judge on [0, 1]",
                          functools.partial(_top_matrix, systems), cases=1000, shared=shared, bounds=(1, 5))


@functools.cache
def _binary_matrix(rate: float, systems: int, spread: float = 0.3):
    """0/1 labels at about ``rate`` (each system off it by up to ``spread`` on the logit scale), a judge's P(pass) on
    [0, 1] that separates the classes at an AUC of about 0.85, prompts that are harder for every system (a shared
    prompt effect)."""
    from scipy import optimize, special

    rng = np.random.default_rng(int(rate * 1000) + 97 * systems)
    hardness = rng.normal(0, 0.8, 20_000)
    offsets = np.linspace(-spread, spread, systems) if systems > 1 else np.zeros(1)
    base = optimize.brentq(lambda b: special.expit(b + hardness).mean() - rate, -12, 12)
    p = special.expit(base + offsets[:, None] + hardness[None, :])
    y = (rng.random(p.shape) < p).astype(float)
    f = special.expit(special.logit(p) + 2.0 * (y - 0.5) + rng.normal(0, 1.0, p.shape))
    return y, f


def binary_systems(rate: float, systems: int, *, shared: bool = False, spread: float = 0.3) -> Design:
    """0/1 labels; with a ``spread`` above the default, the systems' rates far apart (2 systems at ``spread`` 1.2:
    about 1% and 9% when ``rate`` is 0.03, a pair whose labels often show no rare label at all)."""
    apart = "-far-apart" if spread > 0.3 else ""
    return _matrix_design(f"pass-fail-{rate:g}-{systems}-system{'s' if systems > 1 else ''}{apart}", f"{systems} "
                          f"system(s) x 1,000 cases of 0/1 labels at a rate about {rate:g}"
                          f"{f' (logit offsets within +-{spread:g})' if apart else ''}, a judge's P(pass)",
                          functools.partial(_binary_matrix, rate, systems, spread), cases=1000, shared=shared,
                          bounds=(0, 1))


@functools.cache
def _prompt_matrix():
    """6 systems whose ratings move together by prompt (a strong prompt effect: intraclass correlation about 0.6)."""
    rng = np.random.default_rng(20261206)
    quality = np.array([2.8, 3.0, 3.2, 3.3, 3.5, 3.7])
    hardness = rng.normal(0, 1.1, 20_000)
    latent = quality[:, None] + hardness[None, :] + rng.normal(0, 0.6, (6, 20_000))
    y = np.clip(np.round(latent), 1, 5)
    f = np.clip((latent - 1) / 4 + rng.normal(0, 0.12, (6, 20_000)), 0, 1)
    return y, f


def prompt_clustered_systems(*, shared: bool) -> Design:
    return _matrix_design("prompt-clustered-6-systems", "6 systems x 150 prompts whose ratings move together by prompt "
                          "(intraclass correlation about 0.6)", _prompt_matrix, cases=150, shared=shared, bounds=(1, 5))



def _systems(kind: str = "mean"):
    """Run the entry on one draw: its interval and estimate less the truth (the draw's target differs from draw to
    draw, so the oracle is the central interval of the estimate's error, the truth then 0)."""

    def run(sample, level):
        from evalkit import infer

        table = sample["table"]
        names = sorted(table["system"].unique())
        if kind == "mean":
            out = infer.systems(table, bounds=sample["bounds"], confidence_level=level)
            row = out.set_index("system").loc[names[sample["target"]]]
        else:
            out = infer.system_differences(table, baseline=names[sample["other"]], bounds=sample["bounds"],
                                           confidence_level=level)
            row = out.set_index("system_a").loc[names[sample["target"]]]
        centre = sample["centre"]
        return row["ci_low"] - centre, row["ci_high"] - centre, row["estimate"] - centre

    return run


def _centred(design: Design, kind: str = "mean") -> Design:
    """The same draws, the truth (a system's mean, or a pair's difference) moved to ``centre`` and 0 in its place."""
    import dataclasses

    def draw(rng, n):
        sample = design.draw(rng, n)
        return {**sample, "truth": 0.0, "centre": sample["truth" if kind == "mean" else "truth_difference"]}

    return dataclasses.replace(design, draw=draw)


MEAN_DESIGNS = (synthetic_systems(skew=True, shared=False), synthetic_systems(skew=False, shared=True),
                summeval_systems("consistency", shared=False), summeval_systems("consistency", shared=True),
                summeval_systems("relevance", shared=False), summeval_systems("fluency", shared=True),
                summeval_systems("coherence", shared=False), usr_systems(shared=False), usr_systems(shared=True),
                arena_systems(), top_systems(6), top_systems(1), summeval_one_system("consistency"),
                binary_systems(0.03, 1), binary_systems(0.97, 1), binary_systems(0.03, 6, shared=True),
                binary_systems(0.97, 6), binary_systems(0.03, 2, shared=True, spread=1.2),
                binary_systems(0.03, 6, spread=1.2),
                prompt_clustered_systems(shared=True), prompt_clustered_systems(shared=False))
#: the designs with two or more systems: a pair's difference
PAIR_DESIGNS = tuple(d for d in MEAN_DESIGNS if "-1-system" not in d.name)

ENTRIES = [
    Entry("infer.systems", "calibrated PPI, t with pseudo-residuals (default)", "interval", _systems(),
          tuple(_centred(d) for d in MEAN_DESIGNS),
          default=True, sizes=SYSTEM_SIZES, test_sizes=(30,), test_reps=300,
          notes="large-sample; one system's interval per draw (a random one), against its population mean"),
    Entry("infer.system_differences", "calibrated PPI, t with pseudo-residuals (default)", "interval", _systems("difference"),
          tuple(_centred(d, "difference") for d in PAIR_DESIGNS), default=True, sizes=SYSTEM_SIZES, test_sizes=(30,),
          test_reps=300, notes="one pair per draw, against its population difference"),
]
