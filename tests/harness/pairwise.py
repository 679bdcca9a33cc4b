"""Pairwise judgments: Bradley-Terry, rank-sets and the judge diagnostics."""

from __future__ import annotations

import functools

import numpy as np
import pandas as pd

from tests.harness.core import (
    Design,
    Entry,
)

ELO = 400 / np.log(10)


def _comparisons(rng, n, strengths, *, tie=0.15, first_slot=0.0, weights=None, per_question=1, question_sd=0.0):
    """n comparisons of systems with known log-strengths; ``per_question`` votes share a question whose random
    effect (sd ``question_sd``) shifts every vote on it toward system_a (dependent votes)."""
    k = len(strengths)
    pairs = np.array([(i, j) for i in range(k) for j in range(k) if i != j])
    w = np.ones(len(pairs)) if weights is None else np.asarray(weights, dtype=float)
    pick = pairs[rng.choice(len(pairs), n, p=w / w.sum())]
    question = np.arange(n) // per_question
    shift = rng.normal(0.0, question_sd, question.max() + 1)[question] if question_sd else 0.0
    p = 1 / (1 + np.exp(-(strengths[pick[:, 0]] - strengths[pick[:, 1]] + first_slot + shift)))
    winner = np.where(rng.random(n) < tie, "tie", np.where(rng.random(n) < p, "a", "b"))
    names = np.array([f"s{i}" for i in range(k)])
    return pd.DataFrame({"system_a": names[pick[:, 0]], "system_b": names[pick[:, 1]], "winner": winner,
                         "question_id": question})


def _expected(strengths, tie, weights=None, question_sd=0.0, first_slot=0.0) -> pd.DataFrame:
    """The design's expected outcomes as a comparisons table (2 million comparisons in the expected shares):
    what an estimate converges to is the fit to it. With ties as half a win that depends on how often each pair
    meets; a question effect averages the win probability over questions (attenuating every gap, as in any
    marginal logit model)."""
    k = len(strengths)
    nodes, node_weights = np.polynomial.hermite_e.hermegauss(41)  # E over the question effect ~ N(0, question_sd)
    node_weights = node_weights / node_weights.sum()
    pairs = [(i, j) for i in range(k) for j in range(k) if i != j]
    w = np.ones(len(pairs)) if weights is None else np.asarray(weights, dtype=float)
    rows = []
    for (i, j), share in zip(pairs, w / w.sum(), strict=True):
        p = float(node_weights @ (1 / (1 + np.exp(-(strengths[i] - strengths[j] + first_slot + question_sd * nodes)))))
        for winner, part in (("a", (1 - tie) * p), ("b", (1 - tie) * (1 - p)), ("tie", tie)):
            rows += [(f"s{i}", f"s{j}", winner)] * int(round(share * part * 2_000_000))
    return pd.DataFrame(rows, columns=["system_a", "system_b", "winner"])


_BT_STRENGTHS = np.array([0.6, 0.2, -0.1, -0.7])


def bt_design(name, description, *, weights=None, tie=0.15, per_question=1, question_sd=0.0, first_slot=0.0):
    """Comparisons of four systems; the truth is the weakest system's centred rating, or with ``first_slot``
    the first-slot term, each fitted to the design's expected outcomes (computed once, when first drawn)."""

    @functools.cache
    def truth():
        from evalkit import pairwise

        expected = _expected(_BT_STRENGTHS, tie, weights, question_sd, first_slot)
        rating = float(pairwise.bradley_terry(expected).set_index("system").loc["s3", "rating"])
        return rating, float(pairwise.bradley_terry_effects(expected).iloc[0]["coef"])

    def draw(rng, n):
        table = _comparisons(rng, n, _BT_STRENGTHS, tie=tie, weights=weights, per_question=per_question,
                             question_sd=question_sd, first_slot=first_slot)
        rating, position = truth()
        return {"comparisons": table, "truth": rating, "first_slot": position}

    return Design(name, description, draw)


# pair weights: s3 (the weakest) meets the others rarely, neighbours meet often
_UNEVEN = [1 / (abs(i - j) * (3 if 3 in (i, j) else 1)) for i in range(4) for j in range(4) if i != j]
BT_EVEN = bt_design("bt-4-systems-even", "4 systems (Elo gaps 170, 130, 260), every ordered pair equally often, 15% ties")
BT_UNEVEN = bt_design("bt-4-systems-uneven", "4 systems, uneven pair counts (the weakest system in ~1/8 of comparisons), "
                      "15% ties", weights=_UNEVEN)
BT_CLUSTERED = bt_design("bt-4-systems-questions", "4 systems, uneven pairs, 4 votes per question sharing a question "
                         "effect (sd 1 log-odds toward the first slot)", weights=_UNEVEN, per_question=4, question_sd=1.0)


def _bt_rating(**options):
    def run(sample, level):
        from evalkit import pairwise

        row = pairwise.bradley_terry(sample["comparisons"], confidence_level=level, **options).set_index("system")
        if "s3" not in row.index:
            return np.nan, np.nan, np.nan
        return row.loc["s3", "ci_low"], row.loc["s3", "ci_high"], row.loc["s3", "rating"]

    return run


def _position_design(name, description, **kwargs):
    base = bt_design(name, description, **kwargs)

    def draw(rng, n):
        sample = base.draw(rng, n)
        return {**sample, "truth": sample["first_slot"]}

    return Design(name, description, draw)


POSITION_UNEVEN = _position_design("bt-position-0.5", "4 systems, uneven pairs, a first-slot advantage of 0.5 log-odds, "
                                   "15% ties", weights=_UNEVEN, first_slot=0.5, tie=0.0)
POSITION_CLUSTERED = _position_design("bt-position-questions", "as bt-position-0.5 with 4 votes per question sharing a "
                                      "question effect (sd 1)", weights=_UNEVEN, first_slot=0.5, tie=0.0, per_question=4,
                                      question_sd=1.0)


def _bt_position(**options):
    def run(sample, level):
        from evalkit import pairwise

        row = pairwise.bradley_terry_effects(sample["comparisons"], confidence_level=level, **options).iloc[0]
        return row["ci_low"], row["ci_high"], row["coef"]

    return run


def rank_set_design(name, description, *, strengths, agree, n_all=4000, tie=0.2):
    """A judge on n_all comparisons of systems with log-strengths ``strengths`` (best first), humans on n of them; the
    judge agrees with the human vote with probability ``agree``, else votes for the first slot 60% of the time. The
    truth is the ranking of the systems' win probabilities (every pair equally often: the order of the strengths)."""
    strengths = np.asarray(strengths, dtype=float)
    k = len(strengths)

    def draw(rng, n):
        table = _comparisons(rng, n_all, strengths, tie=tie)
        judge = table.assign(winner=np.where(rng.random(n_all) < agree, table["winner"],
                                             np.where(rng.random(n_all) < 0.6, "a", "b")))
        labelled = rng.choice(n_all, n, replace=False)
        return {"judge": judge, "human": table.iloc[labelled], "truth": np.arange(1, k + 1),
                "systems": [f"s{i}" for i in range(k)]}

    return Design(name, description, draw)


RANK_CLOSE = rank_set_design("ranks-5-close-judge-0.7", "5 systems 0.1 log-odds apart, a judge agreeing with the human "
                             "vote 70% of the time (else biased to the first slot), 4,000 comparisons",
                             strengths=0.1 * np.arange(2, -3, -1), agree=0.7)
RANK_APART = rank_set_design("ranks-5-apart-judge-0.5", "5 systems 0.3 log-odds apart, a judge agreeing 50% of the time, "
                             "4,000 comparisons", strengths=0.3 * np.arange(2, -3, -1), agree=0.5)
RANK_PAIRS = rank_set_design("ranks-6-in-close-pairs-judge-0.7", "6 systems in three pairs 0.1 log-odds apart, the "
                             "pairs 0.6 apart (ordered pairs beside near ties), a judge agreeing 70% of the time, 4,000 "
                             "comparisons", strengths=[0.9, 0.8, 0.2, 0.1, -0.5, -0.6], agree=0.7)
RANK_MANY = rank_set_design("ranks-10-close-judge-0.7", "10 systems 0.1 log-odds apart (45 pairs, most of them close), "
                            "a judge agreeing 70% of the time, 4,000 comparisons", strengths=0.1 * np.arange(5, -5, -1),
                            agree=0.7)

#: The systems of Chatzi et al.'s arena experiments (their ``filter_data``): 12 of the 20, with every pair compared.
ARENA_SYSTEMS = ("vicuna-13b", "koala-13b", "gpt-3.5-turbo", "gpt-4", "oasst-pythia-12b", "alpaca-13b", "claude-v1",
                 "RWKV-4-Raven-14B", "chatglm-6b", "fastchat-t5-3b", "palm-2", "claude-instant-v1")


@functools.cache
def arena_votes(judge: str = "gpt-4") -> tuple[pd.DataFrame, pd.DataFrame, list]:
    """The arena comparisons among ``ARENA_SYSTEMS`` (14,947): the judge's verdicts and the human votes, both indexed
    by comparison id, and the systems in the order of their win rate over every human vote (the ranking to cover)."""
    from evalkit import pairwise
    from tests.harness.core import SHARED_DATA, load_shared

    votes = load_shared("load_arena", str(SHARED_DATA / "arena"))
    keep = votes["system_a"].isin(ARENA_SYSTEMS) & votes["system_b"].isin(ARENA_SYSTEMS)
    human = votes[keep & (votes["rater"] == "human")].set_index("comparison_id")
    verdicts = votes[keep & (votes["rater"] == judge)].set_index("comparison_id").loc[human.index]
    order = pairwise.rank_sets(verdicts, human, method="human")["system"].tolist()
    return verdicts, human, order


def _arena_draw(rng, n):
    judge, human, order = arena_votes()
    picks = rng.choice(len(human), n, replace=False)
    return {"judge": judge, "human": human.iloc[picks], "truth": np.arange(1, len(order) + 1), "systems": order}


RANK_ARENA = Design("arena-12-systems-gpt-4", "Chatbot Arena: GPT-4's verdicts on the 14,947 comparisons of Chatzi et "
                    "al.'s 12 systems, n human votes drawn without replacement; the truth is the ranking by every human "
                    "vote", _arena_draw, data="arena")


def _rank_sets(**options):
    def run(sample, level):
        from evalkit import pairwise

        out = pairwise.rank_sets(sample["judge"], sample["human"], confidence_level=level, **options)
        order = out.set_index("system").loc[sample["systems"]]
        return order["rank_low"].to_numpy(float), order["rank_high"].to_numpy(float)

    return run


def paired_design(name, description, *, p_first, p_second, gold_effect=0.0):
    """n instances judged in both orders: each flips toward the first slot with p_first, toward the second
    with p_second, else picks the same output both times (the gold one)."""

    def draw(rng, n):
        u = rng.random(n)
        kind = np.where(u < p_first, "first", np.where(u < p_first + p_second, "second", "same"))
        gold = np.where(rng.random(n) < 0.5, "1", "2")
        original = np.where(kind == "first", "1", np.where(kind == "second", "2", gold))
        swapped = np.where(kind == "first", "2", np.where(kind == "second", "1", gold))
        d = pd.DataFrame({"case_id": np.repeat(np.arange(n), 2), "order": np.tile(["original", "swapped"], n),
                          "winner": np.ravel(np.column_stack([original, swapped])), "label": np.repeat(gold, 2)})
        return {"decisions": d, "truth": 0.5 + (p_first - p_second) / 2, "consistency": 1 - p_first - p_second}

    return Design(name, description, draw)


FLIPS_BIASED = paired_design("pairs-flips-0.2-first-0.05-second", "instances in both orders: 20% flip toward the first "
                             "slot, 5% toward the second", p_first=0.2, p_second=0.05)
FLIPS_RARE = paired_design("pairs-flips-0.03-first-0.01-second", "few flips: 3% toward the first slot, 1% toward the "
                           "second", p_first=0.03, p_second=0.01)
FLIPS_NULL = paired_design("pairs-flips-0.15-each-way", "no position bias: 15% flip each way", p_first=0.15, p_second=0.15)
FLIPS_NULL_RARE = paired_design("pairs-flips-0.03-each-way", "no position bias, few flips: 3% each way", p_first=0.03,
                                p_second=0.03)


def _first_slot_interval(sample, level):
    from evalkit import pairwise

    row = pairwise.first_slot_preference(sample["decisions"], confidence_level=level).iloc[0]
    return row["ci_low"], row["ci_high"], row["rate"]


def _first_slot_test(sample, alpha):
    from evalkit import pairwise

    return pairwise.first_slot_preference(sample["decisions"]).iloc[0]["p_val"]


def _consistency_interval(sample, level):
    from evalkit import pairwise

    row = pairwise.position_consistency(sample["decisions"], confidence_level=level).iloc[0]
    return row["ci_low"], row["ci_high"], row["rate"]


def _with_consistency_truth(design):
    def draw(rng, n):
        sample = design.draw(rng, n)
        return {**sample, "truth": sample["consistency"]}

    return Design(design.name, design.description + " (truth: the consistency rate)", draw)


def _consistency_test(sample, alpha):
    from evalkit import pairwise

    return pairwise.position_consistency(sample["decisions"]).iloc[0]["p_val"]


def length_design(name, description, *, instance_sd, coef=0.5):
    """n instances judged in both orders; the judge's log-odds of picking output 1: gold + position + coef x
    log2 length ratio + an instance effect shared by both decisions (sd ``instance_sd``). The truth is the
    population-averaged coefficient the (marginal) logistic fit estimates: attenuated from ``coef`` by the
    instance effect, computed once from 400,000 simulated instances."""

    def simulate(rng, n):
        gold = np.where(rng.random(n) < 0.5, "1", "2")
        length_1, length_2 = rng.integers(20, 400, n), rng.integers(20, 400, n)
        effect = rng.normal(0.0, instance_sd, n)
        rows = []
        for order, first in (("original", 1.0), ("swapped", 0.0)):
            logit = 1.5 * (gold == "1") - 0.75 + 0.3 * first + coef * np.log2(length_1 / length_2) + effect
            winner = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "1", "2")
            rows.append(pd.DataFrame({"case_id": np.arange(n), "order": order, "winner": winner, "label": gold,
                                      "length_1": length_1, "length_2": length_2}))
        return pd.concat(rows, ignore_index=True)

    @functools.cache
    def truth():
        from evalkit import pairwise

        return float(pairwise.length_bias(simulate(np.random.default_rng(0), 400_000), cluster=None).iloc[0]["coef"])

    def draw(rng, n):
        return {"decisions": simulate(rng, n), "truth": truth()}

    return Design(name, description, draw)


LENGTH_SHARED = length_design("length-instance-sd-1.5", "both orders of each instance share an instance effect (sd 1.5 "
                              "log-odds); length coefficient 0.5 per doubling within an instance", instance_sd=1.5)
LENGTH_INDEPENDENT = length_design("length-no-instance-effect", "no instance effect; length coefficient 0.5",
                                   instance_sd=0.0)


def _length_bias(**options):
    def run(sample, level):
        from evalkit import pairwise

        row = pairwise.length_bias(sample["decisions"], confidence_level=level, **options).iloc[0]
        return row["ci_low"], row["ci_high"], row["coef"]

    return run


def self_design(name, description, *, own, gold):
    """n decisions where the judge's own output is one of the two: own picked with probability ``own``,
    gold favouring it with ``gold`` (independent); the truth is own - gold."""

    def draw(rng, n):
        own_slot = np.where(rng.random(n) < 0.5, "1", "2")
        other = np.where(own_slot == "1", "2", "1")
        picks = np.where(rng.random(n) < own, own_slot, other)
        labels = np.where(rng.random(n) < gold, own_slot, other)
        d = pd.DataFrame({"judge": "m", "model_1": np.where(own_slot == "1", "m", "o"),
                          "model_2": np.where(own_slot == "2", "m", "o"), "winner": picks, "label": labels})
        return {"decisions": d, "truth": own - gold}

    return Design(name, description, draw)


SELF_BIASED = self_design("self-own-0.7-gold-0.5", "own output picked 70%, gold favours it 50%", own=0.7, gold=0.5)
SELF_NULL = self_design("self-own-0.6-gold-0.6", "no self-preference: own 60%, gold 60%", own=0.6, gold=0.6)


def _self_interval(sample, level):
    from evalkit import pairwise

    row = pairwise.self_preference(sample["decisions"], confidence_level=level).iloc[0]
    return row["ci_low"], row["ci_high"], row["difference"]


def _self_test(sample, alpha):
    from evalkit import pairwise

    return pairwise.self_preference(sample["decisions"]).iloc[0]["p_val"]


RANK_DESIGNS = (RANK_CLOSE, RANK_PAIRS, RANK_APART, RANK_MANY, RANK_ARENA)
RANK_SIZES = (50, 100, 200, 500, 1000)

# The fast suite checks each default on one demanding design; bench_coverage also runs the "other designs" entries.
ENTRIES = [
    Entry("pairwise.bradley_terry", "interval='sandwich' (default)", "interval", _bt_rating(), (BT_UNEVEN,),
          default=True, sizes=(50, 100, 200, 500), test_sizes=(100,),
          notes="the weakest (least compared) system's centred rating; n = comparisons"),
    Entry("pairwise.bradley_terry", "interval='sandwich' (default), other designs", "interval", _bt_rating(),
          (BT_EVEN,), sizes=(50, 100, 200, 500)),
    Entry("pairwise.bradley_terry", "interval='sandwich', cluster='question_id'", "interval",
          _bt_rating(cluster="question_id"), (BT_CLUSTERED,), sizes=(100, 200, 500)),
    Entry("pairwise.bradley_terry", "interval='sandwich', no cluster, dependent votes", "interval", _bt_rating(),
          (BT_CLUSTERED,), sizes=(100, 200, 500), notes="what ignoring the questions costs"),
    Entry("pairwise.bradley_terry", "interval='bootstrap', n_resamples=200", "interval",
          _bt_rating(interval="bootstrap", n_resamples=200, rng=0), (BT_EVEN, BT_UNEVEN), sizes=(50, 100, 200, 500)),
    Entry("pairwise.bradley_terry", "interval='bootstrap', cluster='question_id', n_resamples=200", "interval",
          _bt_rating(interval="bootstrap", cluster="question_id", n_resamples=200, rng=0), (BT_CLUSTERED,),
          sizes=(100, 200, 500)),
    Entry("pairwise.bradley_terry_effects", "position=True, sandwich (default)", "interval", _bt_position(),
          (POSITION_UNEVEN,), default=True, sizes=(50, 100, 200, 500), test_sizes=(100,)),
    Entry("pairwise.bradley_terry_effects", "position=True, cluster='question_id'", "interval",
          _bt_position(cluster="question_id"), (POSITION_CLUSTERED,), sizes=(100, 200, 500)),
    Entry("pairwise.rank_sets", "method='ppr', sets='stepdown' (default), simultaneous", "interval", _rank_sets(),
          (RANK_CLOSE, RANK_PAIRS, RANK_MANY, RANK_ARENA), default=True, sizes=RANK_SIZES, test_sizes=(50, 1000),
          notes="n = human votes among 4,000 judged comparisons (arena: 14,947)"),
    Entry("pairwise.rank_sets", "method='ppr', sets='stepdown' (default), other designs", "interval", _rank_sets(),
          (RANK_APART,), sizes=RANK_SIZES),
    Entry("pairwise.rank_sets", "method='ppr', sets='max-t', simultaneous", "interval", _rank_sets(sets="max-t"),
          RANK_DESIGNS, sizes=RANK_SIZES),
    Entry("pairwise.rank_sets", "method='ppr', sets='bonferroni', simultaneous", "interval",
          _rank_sets(sets="bonferroni"), RANK_DESIGNS, sizes=RANK_SIZES),
    Entry("pairwise.rank_sets", "sets='ellipsoid' (the paper's), simultaneous", "interval", _rank_sets(sets="ellipsoid"),
          RANK_DESIGNS, sizes=RANK_SIZES),
    Entry("pairwise.rank_sets", "method='human', sets='stepdown', simultaneous", "interval", _rank_sets(method="human"),
          RANK_DESIGNS, sizes=RANK_SIZES),
    Entry("pairwise.rank_sets", "method='human', sets='bonferroni', simultaneous", "interval",
          _rank_sets(method="human", sets="bonferroni"), RANK_DESIGNS, sizes=RANK_SIZES),
    Entry("pairwise.first_slot_preference", "paired interval for the rate (default)", "interval", _first_slot_interval,
          (FLIPS_BIASED,), default=True, notes="n = instances (2n decisions)"),
    Entry("pairwise.first_slot_preference", "paired interval for the rate (default), other designs", "interval",
          _first_slot_interval, (FLIPS_RARE, FLIPS_NULL)),
    Entry("pairwise.first_slot_preference", "exact sign test on flips (default)", "test", _first_slot_test,
          (FLIPS_NULL,), default=True),
    Entry("pairwise.first_slot_preference", "exact sign test on flips (default), other designs", "test",
          _first_slot_test, (FLIPS_NULL_RARE,)),
    Entry("pairwise.position_consistency", "Wilson interval for the rate (default)", "interval", _consistency_interval,
          (_with_consistency_truth(FLIPS_BIASED),), default=True),
    Entry("pairwise.position_consistency", "Wilson interval for the rate (default), other designs", "interval",
          _consistency_interval, (_with_consistency_truth(FLIPS_RARE),)),
    Entry("pairwise.position_consistency", "exact sign test on flips (default)", "test", _consistency_test,
          (FLIPS_NULL,), default=True),
    Entry("pairwise.position_consistency", "exact sign test on flips (default), other designs", "test",
          _consistency_test, (FLIPS_NULL_RARE,)),
    Entry("pairwise.length_bias", "cluster='case_id' (default)", "interval", _length_bias(), (LENGTH_SHARED,),
          default=True, sizes=(50, 100, 200, 500), notes="n = instances (2n decisions)", requires=("statsmodels", "stats")),
    Entry("pairwise.length_bias", "cluster='case_id' (default), other designs", "interval", _length_bias(),
          (LENGTH_INDEPENDENT,), sizes=(50, 100, 200, 500), requires=("statsmodels", "stats")),
    Entry("pairwise.length_bias", "cluster=None (decisions as independent)", "interval", _length_bias(cluster=None),
          (LENGTH_SHARED, LENGTH_INDEPENDENT), sizes=(50, 100, 200, 500), requires=("statsmodels", "stats")),
    Entry("pairwise.self_preference", "Wald interval for the difference (default)", "interval", _self_interval,
          (SELF_BIASED,), default=True),
    Entry("pairwise.self_preference", "Wald interval for the difference (default), other designs", "interval",
          _self_interval, (SELF_NULL,)),
    Entry("pairwise.self_preference", "exact McNemar test (default)", "test", _self_test, (SELF_NULL,), default=True),
]
