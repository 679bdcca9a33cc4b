"""Agreement among annotators: Krippendorff, Fleiss, ICC, the alternative annotator test."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd

from tests.harness.core import (
    Design,
    Entry,
    _coefficient,
    _population_rng,
    _slow,
    _tcva_release,
    _usr,
)


# ---- agreement among annotators: n is the number of items
def _long(wide: np.ndarray, annotators) -> pd.DataFrame:
    """items x annotators (NaN = not rated) -> the long ratings table; item ids are row positions."""
    item, who = np.nonzero(~np.isnan(wide))
    return pd.DataFrame({"item_id": item, "annotator": np.asarray(annotators, dtype=object)[who], "rating": wide[item, who]})


@functools.cache
def _usr_wide(dimension: str) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    ratings, _ = _usr()
    wide = ratings[ratings["dimension"] == dimension].pivot(index="item_id", columns="annotator", values="rating")
    return wide.to_numpy(float), wide.columns.to_numpy(), wide.index


@functools.cache
def _usr_block(dimension: str) -> tuple[np.ndarray, np.ndarray]:
    """The 100 PersonaChat responses rated by the same three annotators (maxine, mckenna, shikib): a complete matrix."""
    wide, names, _ = _usr_wide(dimension)
    keep = [list(names).index(a) for a in ("maxine", "mckenna", "shikib")]
    block = wide[:, keep]
    return block[~np.isnan(block).any(axis=1)], names[keep]


def _ordinal_raters(name: str, n: int, k: int, *, noise=0.8, bias=(0.0, 0.25, -0.2, 0.1, 0.3), cuts=(-2.4, -1.8, -1.1, -0.25)):
    """n items x k raters: a latent quality seen through each rater's noise and bias, cut into 1-5 piled at the top."""
    rng = _population_rng(name)
    quality = rng.normal(size=n)
    return np.digitize(quality[:, None] + np.asarray(bias[:k]) + noise * rng.normal(size=(n, k)), cuts) + 1.0


def _categorical_raters(rng, n: int, k: int, priors, noise: float, gold=None) -> np.ndarray:
    """The alt-test authors' annotator model: the gold label, or with probability ``noise`` a draw from the priors."""
    priors = np.asarray(priors, dtype=float)
    if gold is None:
        gold = rng.choice(len(priors), size=n, p=priors)
    out = np.where(rng.random((n, k)) < noise, rng.choice(len(priors), size=(n, k), p=priors), gold[:, None])
    return out.astype(float)


SKEWED_PRIORS = (0.55, 0.25, 0.15, 0.05)


@functools.cache
def _categorical_population(k: int = 3, noise: float = 0.3) -> np.ndarray:
    return _categorical_raters(_population_rng(f"categorical {k} {noise}"), 20_000, k, SKEWED_PRIORS, noise)


@functools.cache
def _with_missing() -> np.ndarray:
    """20,000 items, 5 annotators on the 1-5 scale, each item rated by 2 to 4 of them at random."""
    wide = _ordinal_raters("with missing", 20_000, 5)
    rng = _population_rng("missing pattern")
    keep = np.argsort(rng.random(wide.shape), axis=1) < rng.integers(2, 5, len(wide))[:, None]
    return np.where(keep, wide, np.nan)


def _alpha_truth(wide: np.ndarray, level: str) -> float:
    """Krippendorff's alpha of the population the items are drawn from: ``1 - n D_o / D_e`` (the n -> infinity limit)."""
    from evalkit import agreement

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = _long(wide, [f"r{j}" for j in range(wide.shape[1])])
        alpha = agreement.krippendorff_alpha(table, level=level, n_resamples=0)["alpha"].iloc[0]
    counts = (~np.isnan(wide)).sum(axis=1)
    pairable = counts[counts >= 2].sum()
    return float(1 - (1 - alpha) * pairable / (pairable - 1))


def _rows_design(name, description, population, truth, *, data=None, permute=None) -> Design:
    """Items (rows of an items x annotators matrix) drawn with replacement. ``permute="columns"``: each annotator's
    column shuffled on its own (no item effect); ``"pooled"``: all ratings shuffled together (raters exchangeable,
    agreement by chance only)."""

    def draw(rng, n):
        wide, names = population()
        rows = wide[rng.integers(0, len(wide), n)]
        if permute == "columns":
            rows = np.column_stack([rows[rng.permutation(n), j] for j in range(rows.shape[1])])
        elif permute == "pooled":
            rows = rng.permutation(rows.ravel()).reshape(rows.shape)
        return {"ratings": _long(rows, names), "truth": 0.0 if permute else truth()}

    return Design(name, description, draw, data=data)


def _alpha_designs(level: str) -> tuple[Design, ...]:
    designs = []
    for dimension in ("Maintains Context", "Overall", "Understandable"):
        pop = functools.partial(lambda d: _usr_wide(d)[:2], dimension)
        designs.append(_rows_design(f"usr-{dimension.lower().replace(' ', '-')}-{level}",
                                    f"USR: {dimension}, 3 of 9 annotators per response", pop,
                                    functools.cache(functools.partial(lambda p: _alpha_truth(p()[0], level), pop)), data="usr"))
    synthetic = {
        "ordinal-3-raters": (lambda: (_ordinal_raters("alpha ordinal", 20_000, 3), ["a", "b", "c"]),
                             "3 raters, 1-5 ratings piled at the top"),
        "missing-2-to-4-of-5": (lambda: (_with_missing(), list("abcde")), "5 raters on 1-5, each item rated by 2 to 4"),
    }
    if level == "nominal":
        synthetic["categorical-skewed"] = (lambda: (_categorical_population(), ["a", "b", "c"]),
                                           "3 raters, 4 categories (priors 0.55/0.25/0.15/0.05), the alt-test authors' noise 0.3")
    for key, (pop, text) in synthetic.items():
        pop = functools.cache(pop)
        design = _rows_design(f"{key}-{level}", text, pop,
                              functools.cache(functools.partial(lambda p: _alpha_truth(p()[0], level), pop)))
        designs.append(design if key == "ordinal-3-raters" else _slow(design))
    return tuple(designs)


def _alpha(sample, level, *, measure="nominal", **options):
    from evalkit import agreement

    row = agreement.krippendorff_alpha(sample["ratings"], level=measure, confidence_level=level, **options).iloc[0]
    return row["ci_low"], row["ci_high"], row["alpha"]


# ICC: the n -> infinity limits of the six estimators for items drawn from a population rated by fixed raters.
def _icc_truth(wide: np.ndarray) -> dict:
    n, k = wide.shape
    rows, cols, grand = wide.mean(axis=1), wide.mean(axis=0), wide.mean()
    b = k * rows.var()
    w = ((wide - rows[:, None]) ** 2).sum(axis=1).mean() / (k - 1)
    e = ((wide - rows[:, None] - cols[None, :] + grand) ** 2).sum(axis=1).mean() / (k - 1)
    j = ((cols - grand) ** 2).sum() / (k - 1)
    return {"ICC1": (b - w) / (b + (k - 1) * w), "ICC2": (b - e) / (b + (k - 1) * e + k * j), "ICC3": (b - e) / (b + (k - 1) * e),
            "ICC1k": (b - w) / b, "ICC2k": (b - e) / (b + j), "ICC3k": (b - e) / b}


@functools.cache
def _normal_raters() -> np.ndarray:
    rng = _population_rng("normal raters")
    return rng.normal(size=(20_000, 1)) + np.array([0.0, 0.5, -0.3]) + rng.normal(scale=0.9, size=(20_000, 3))


@functools.cache
def _normal_raters_null() -> np.ndarray:
    rng = _population_rng("normal raters null")
    return np.array([0.0, 0.5, -0.3]) + rng.normal(size=(20_000, 3))


def _icc_designs(form: str, *, null: bool = False) -> tuple[Design, ...]:
    pops = {
        "usr-overall-complete": (lambda: _usr_block("Overall"), "USR: the 100 PersonaChat responses rated by the same 3 "
                                 "annotators, Overall (1-5)", "usr"),
        "usr-context-complete": (lambda: _usr_block("Maintains Context"), "USR: the same 100 responses, Maintains "
                                 "Context (1-3)", "usr"),
        "normal-3-raters": ((lambda: (_normal_raters(), ["a", "b", "c"])) if not null else
                            (lambda: (_normal_raters_null(), ["a", "b", "c"])), "the two-way normal model, 3 raters with "
                            "biases" + (" (no item effect)" if null else ""), None),
        "ordinal-3-raters": (lambda: (_ordinal_raters("icc ordinal", 20_000, 3), ["a", "b", "c"]),
                             "3 raters, 1-5 ratings piled at the top", None),
    }
    designs = []
    for key, (pop, text, data) in pops.items():
        pop = functools.cache(pop)
        permute = "columns" if null and key != "normal-3-raters" else None  # the normal null has no item effect
        design = _rows_design(f"{key}{'-null' if null else ''}", text + (" (columns shuffled: no item effect)" if permute else ""),
                              pop, functools.cache(functools.partial(lambda p: _icc_truth(p()[0])[form], pop)),
                              data=data, permute=permute)
        designs.append(design if key == ("normal-3-raters" if null else "ordinal-3-raters") else _slow(design))
    return tuple(designs)


def _icc(sample, level, *, form="ICC2", p_value=False, **options):
    from evalkit import agreement

    # the p-value (the F test of no item effect) does not depend on the interval: skip the bootstrap for it. The
    # bootstrap's seed comes from the sample, so that a cell's coverage is the same on every run.
    seed = int(pd.util.hash_pandas_object(sample["ratings"], index=False).sum() % 2**32)
    row = agreement.icc(sample["ratings"], **({"interval": "F"} if p_value else {"confidence_level": level, "rng": seed}),
                        **options).loc[form]
    return row["p_val"] if p_value else (row["ci_low"], row["ci_high"], row["icc"])


def _random_raters_design(form: str) -> Design:
    """Raters drawn at random, as ICC1 and ICC2 assume: items N(0, 1), rater biases N(0, 0.5**2), errors N(0, 0.9**2).

    ICC1 is the one-way model (each item rated by its own 3 raters); ICC2 and ICC3 the two-way model (3 raters
    drawn afresh for every sample, rating every item). The truth is the model's ICC: rater variance counts for
    ICC1 and ICC2, not for ICC3 (consistency).
    """
    items, raters, errors, k = 1.0, 0.25, 0.81, 3
    truth = {"ICC1": items / (items + raters + errors), "ICC2": items / (items + raters + errors),
             "ICC3": items / (items + errors), "ICC1k": items / (items + (raters + errors) / k),
             "ICC2k": items / (items + (raters + errors) / k), "ICC3k": items / (items + errors / k)}[form]
    one_way = form.startswith("ICC1")

    def draw(rng, n):
        bias = rng.normal(scale=0.5, size=(n, k) if one_way else (1, k))
        wide = rng.normal(size=(n, 1)) + bias + rng.normal(scale=0.9, size=(n, k))
        return {"ratings": _long(wide, ["a", "b", "c"]), "truth": truth}

    if one_way:
        return Design("normal-one-way-random", "the one-way random model: each item rated by its own 3 raters (rater SD "
                      "0.5, error SD 0.9)", draw, slow=True)
    return Design("normal-two-way-random", "the two-way random model: 3 raters drawn afresh for every sample (rater SD "
                  "0.5, error SD 0.9)", draw, slow=True)


# Fleiss' kappa: the limit of the estimator is its formula on the population (no small-sample correction).
def _fleiss_truth(wide: np.ndarray) -> float:
    codes = pd.factorize(pd.Series(wide.ravel()))[0].reshape(wide.shape)
    m, k = wide.shape[1], codes.max() + 1
    counts = np.stack([(codes == c).sum(axis=1) for c in range(k)], axis=1)
    agree = (counts * (counts - 1)).sum(axis=1) / (m * (m - 1))
    p = counts.sum(axis=0) / counts.sum()
    return float((agree.mean() - (p**2).sum()) / (1 - (p**2).sum()))


@functools.cache
def _binary_raters() -> np.ndarray:
    return _categorical_raters(_population_rng("binary raters"), 20_000, 3, (0.85, 0.15), 0.3)


def _fleiss_designs(*, null: bool = False) -> tuple[Design, ...]:
    pops = {
        "usr-maintains-context": (lambda: _usr_any3("Maintains Context"), "USR: Maintains Context (1-3), 3 ratings per response", "usr"),
        "usr-understandable": (lambda: _usr_any3("Understandable"), "USR: Understandable (0/1, 80% ones)", "usr"),
        "categorical-skewed": (lambda: (_categorical_population(), ["a", "b", "c"]),
                               "3 raters, 4 categories (priors 0.55/0.25/0.15/0.05), the alt-test authors' noise 0.3", None),
        "binary-skewed": (lambda: (_binary_raters(), ["a", "b", "c"]), "3 raters, PASS/FAIL with 85% PASS, noise 0.3", None),
    }
    designs = []
    for key, (pop, text, data) in pops.items():
        pop = functools.cache(pop)
        design = _rows_design(f"{key}{'-null' if null else ''}", text + (" (all ratings shuffled: chance agreement "
                              "only)" if null else ""), pop, functools.cache(functools.partial(lambda p: _fleiss_truth(p()[0]), pop)),
                              data=data, permute="pooled" if null else None)
        designs.append(_slow(design) if key == "binary-skewed" else design)
    return tuple(designs)


@functools.cache
def _usr_any3(dimension: str) -> tuple[np.ndarray, np.ndarray]:
    """USR responses as 3 ratings each, the annotators' names dropped (Fleiss' kappa lets raters differ by item)."""
    wide, _, _ = _usr_wide(dimension)
    return wide[~np.isnan(wide)].reshape(-1, 3), np.array(["first", "second", "third"])


def _fleiss(sample, level, *, p_value=False, **options):
    from evalkit import agreement

    row = agreement.fleiss_kappa(sample["ratings"], **({"n_resamples": 0} if p_value else {"confidence_level": level}),
                                 **options).iloc[0]
    return row["p_val"] if p_value else (row["ci_low"], row["ci_high"], row["kappa"])


# The human ceiling: a score's and an annotator's correlation with the others.
@functools.cache
def _usr_scored() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The 198 USR responses the TCVA release scored: Maintains Context ratings (3 of 9 annotators) and TCVA T=0.9."""
    wide, names, index = _usr_wide("Maintains Context")
    scores = _tcva_release("usr")["tcva"]
    keep = index.get_indexer(scores.index)
    return wide[keep[keep >= 0]], names, scores.to_numpy()[keep >= 0]


@functools.cache
def _ceiling_population() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = _population_rng("ceiling")
    quality = rng.normal(size=20_000)
    wide = np.digitize(quality[:, None] + 0.8 * rng.normal(size=(20_000, 3)), (-2.4, -1.8, -1.1, -0.25)) + 1.0
    return wide, np.array(["a", "b", "c"]), quality + 0.6 * rng.normal(size=20_000)


def _ceiling_design(name, description, population, row: str, *, data=None) -> Design:
    def held_out():
        """The annotator whose row is checked: ``row``, or for a score the annotator who rated the most items (the
        score's row against that annotator's leave-one-out reference, on the items they rated)."""
        wide, names, _ = population()
        return row if row != "score" else str(names[int(np.argmax((~np.isnan(wide)).sum(axis=0)))])

    @functools.cache
    def truth():
        wide, names, score = population()
        j = list(names).index(held_out())
        own = ~np.isnan(wide[:, j])
        reference = np.nanmean(np.delete(wide[own], j, axis=1), axis=1)
        return _coefficient(score[own] if row == "score" else wide[own, j], reference, "spearman")

    def draw(rng, n):
        wide, names, score = population()
        i = rng.integers(0, len(wide), n)
        return {"ratings": _long(wide[i], names), "score": score[i], "row": row, "truth": truth(), "held_out": held_out()}

    return Design(name, description, draw, data=data)


def _ceiling(sample, level):
    from evalkit import agreement

    score = pd.Series(sample["score"], name="score")
    table = agreement.human_ceiling(score, sample["ratings"], confidence_level=level)
    row = table[(table["name"] == sample["row"]) & (table["held_out"] == sample["held_out"])]
    if row.empty:  # the annotator left out rated none of the items drawn
        return np.nan, np.nan, np.nan
    row = row.iloc[0]
    return row["ci_low"], row["ci_high"], row["r"]


# The alternative annotator test, on the authors' simulation model: a gold label, annotators and a judge that
# report it or, with probability `noise`, a draw from the priors.
def _alt_gap(noise_h: float, noise_f: float, priors=SKEWED_PRIORS) -> float:
    """E[W_h - W_f] for one left-out annotator with 2 remaining annotators under accuracy scoring (exact sum)."""
    from itertools import product

    priors = np.asarray(priors)
    k = len(priors)

    def channel(noise):
        return (1 - noise) * np.eye(k) + noise * priors[None, :]  # P(label | gold)

    ch, cf = channel(noise_h), channel(noise_f)
    gap = 0.0
    for g, h, f, o1, o2 in product(range(k), repeat=5):
        p = priors[g] * ch[g, h] * cf[g, f] * ch[g, o1] * ch[g, o2]
        score_h, score_f = (h == o1) + (h == o2), (f == o1) + (f == o2)
        gap += p * (float(score_h >= score_f) - float(score_f >= score_h))
    return gap


@functools.cache
def _judge_noise_at(epsilon: float, noise_h: float = 0.3) -> float:
    """The judge's noise that makes it exactly ``epsilon`` worse than an annotator (the alt-test's null boundary)."""
    from scipy import optimize

    return float(optimize.brentq(lambda f: _alt_gap(noise_h, f) - epsilon, noise_h, 1.0, xtol=1e-12))


def _alt_design(name, description, *, epsilon: float, scoring: str = "accuracy") -> Design:
    def draw(rng, n):
        if scoring == "accuracy":
            gold = rng.choice(len(SKEWED_PRIORS), size=n, p=SKEWED_PRIORS)
            wide = _categorical_raters(rng, n, 3, SKEWED_PRIORS, 0.3, gold=gold)
            judge = _categorical_raters(rng, n, 1, SKEWED_PRIORS, _judge_noise_at(epsilon) if epsilon else 0.3, gold=gold)[:, 0]
        else:  # exchangeable: the judge is a fourth rater of the same kind
            quality = rng.normal(size=n)
            both = np.digitize(quality[:, None] + 0.8 * rng.normal(size=(n, 4)), (-2.4, -1.8, -1.1, -0.25)) + 1.0
            wide, judge = both[:, :3], both[:, 3]
        return {"ratings": _long(wide, ["a", "b", "c"]), "judge": judge, "epsilon": epsilon, "scoring": scoring, "truth": 0.0}

    return Design(name, description, draw)


ALT_DESIGNS = (
    _alt_design("authors-model-equal-noise-eps0", "the authors' simulation (4 categories, priors 0.55/0.25/0.15/0.05, "
                "3 annotators, noise 0.3); the judge has the annotators' noise: as good as one, tested at epsilon = 0",
                epsilon=0.0),
    _alt_design("authors-model-boundary-eps0.2", "the authors' simulation; the judge's noise set so that it is exactly "
                "epsilon = 0.2 worse than an annotator (the null's boundary)", epsilon=0.2),
    _alt_design("ordinal-exchangeable-neg-rmse-eps0", "1-5 ratings piled at the top, the judge a fourth rater of the same "
                "kind, neg_rmse, epsilon = 0", epsilon=0.0, scoring="neg_rmse"),
)


def _alt(sample, alpha, *, decision=False):
    from evalkit import agreement

    try:
        res = agreement.alternative_annotator_test(pd.Series(sample["judge"]), sample["ratings"], scoring=sample["scoring"],
                                                   epsilon=sample["epsilon"], fdr_level=alpha)
    except ValueError:  # fewer than min_items (30) items for every annotator: the test declines
        return np.nan
    if not decision:
        return res.annotators["p_val"].iloc[0]
    # passed <=> at least half of the tested annotators have a BY-adjusted p-value <= fdr_level
    adjusted = np.sort(res.annotators["p_adjusted"].dropna().to_numpy())
    return adjusted[int(np.ceil(len(adjusted) / 2)) - 1] if len(adjusted) else np.nan


ENTRIES = [
    Entry("agreement.krippendorff_alpha", "nominal, studentized bootstrap over items (default)", "interval", _alpha,
          _alpha_designs("nominal"), default=True),
    Entry("agreement.krippendorff_alpha", "nominal, percentile bootstrap over items", "interval",
          functools.partial(_alpha, interval="percentile"), _alpha_designs("nominal")),
    Entry("agreement.krippendorff_alpha", "nominal, BCa bootstrap over items", "interval",
          functools.partial(_alpha, interval="BCa"), _alpha_designs("nominal"), slow=True),
    Entry("agreement.krippendorff_alpha", "ordinal, studentized bootstrap over items", "interval",
          functools.partial(_alpha, measure="ordinal"), _alpha_designs("ordinal")),
    Entry("agreement.krippendorff_alpha", "interval, studentized bootstrap over items", "interval",
          functools.partial(_alpha, measure="interval"), _alpha_designs("interval")),
    # interval="auto": the studentized bootstrap over items for ICC1, ICC3 and their k forms ...
    *[Entry("agreement.icc", f"{form}, studentized bootstrap over items (default)", "interval",
            functools.partial(_icc, form=form), tuple(d for d in _icc_designs(form) if d.name == "normal-3-raters")
            + (_random_raters_design(form),), default=True, slow=form != "ICC3") for form in ("ICC1", "ICC3", "ICC1k", "ICC3k")],
    # ... which runs a little short on coarse scales: ICC1 on USR Overall 0.917, 0.935, 0.950 and 0.950 over 1,000,
    # 1,000, 1,000 and 500 draws at 50 items (0.936 pooled); ICC3k on 1-5 ratings piled at the top 0.922-0.934. On
    # coarse ratings (at most 7 values) the rows say so in note; those designs are measured here beside the default.
    *[Entry("agreement.icc", f"{form}, studentized bootstrap over items (default) on coarse ratings (note says so)",
            "interval", functools.partial(_icc, form=form),
            tuple(d for d in _icc_designs(form) if d.name != "normal-3-raters"),
            notes="0.89-0.94 at 50 items on some 1-5 scales; the rows carry a note on coarse ratings")
      for form in ("ICC1", "ICC3", "ICC1k", "ICC3k")],
    # ... and the F interval for ICC2 and ICC2k, which holds on normal ratings and says it does not on coarse ones.
    *[Entry("agreement.icc", f"{form}, F interval (default)", "interval", functools.partial(_icc, form=form),
            tuple(d for d in _icc_designs(form) if d.name in ("normal-3-raters", "usr-overall-complete"))
            + (_random_raters_design(form),), default=True, slow=form != "ICC2") for form in ("ICC2", "ICC2k")],
    *[Entry("agreement.icc", f"{form}, F interval on coarse ratings (note and a warning say so)", "interval",
            functools.partial(_icc, form=form), tuple(d for d in _icc_designs(form) if d.name == "ordinal-3-raters"),
            default=True, slow=True, invalid="F intervals assume normal ratings; no interval measured holds for ICC2 on "
            "a 1-5 scale piled at the top") for form in ("ICC2", "ICC2k")],
    *[Entry("agreement.icc", f"{form}, F interval", "interval", functools.partial(_icc, form=form, interval="F"),
            _icc_designs(form) + (_random_raters_design(form),)) for form in ("ICC1", "ICC3", "ICC1k", "ICC3k")],
    *[Entry("agreement.icc", f"{form}, studentized bootstrap over items", "interval",
            functools.partial(_icc, form=form, interval="studentized"), _icc_designs(form) + (_random_raters_design(form),))
      for form in ("ICC2", "ICC2k")],
    Entry("agreement.icc", "ICC1 F-test p-value (default)", "test", functools.partial(_icc, form="ICC1", p_value=True),
          _icc_designs("ICC1", null=True), default=True),
    Entry("agreement.icc", "ICC2/ICC3 F-test p-value (default)", "test", functools.partial(_icc, form="ICC3", p_value=True),
          _icc_designs("ICC3", null=True), default=True),
    Entry("agreement.fleiss_kappa", "studentized bootstrap over items (default)", "interval", _fleiss, _fleiss_designs(),
          default=True),
    Entry("agreement.fleiss_kappa", "percentile bootstrap over items", "interval",
          functools.partial(_fleiss, interval="percentile"), _fleiss_designs()),
    Entry("agreement.fleiss_kappa", "p-value of kappa = 0 (default)", "test", functools.partial(_fleiss, p_value=True),
          _fleiss_designs(null=True), default=True),
    Entry("agreement.human_ceiling", "score vs an annotator's leave-one-out reference, percentile bootstrap (default)",
          "interval", _ceiling,
          (_ceiling_design("tcva-usr-maintains-context", "USR: TCVA T=0.9 against the mean of the other 2 of 3 annotators "
                           "where the annotator with the most ratings rated, on the 198 responses the release scored",
                           _usr_scored, "score", data=("usr", "tcva")),
           _ceiling_design("synthetic-3-raters", "a score against 2 raters' mean (the third left out), 1-5 ratings piled "
                           "at the top", _ceiling_population, "score")), default=True, slow=True,
          notes="its intervals are correlate.correlate's on the annotators' and the score's targets"),
    Entry("agreement.human_ceiling", "annotator vs the others' mean, percentile bootstrap", "interval", _ceiling,
          (_ceiling_design("usr-annotator-sm", "USR Maintains Context: annotator sm (rated all 360 Topical-Chat responses) "
                           "against the other two", lambda: _usr_wide("Maintains Context")[:2] + (np.zeros(660),), "sm",
                           data="usr"),
           _ceiling_design("synthetic-annotator-a", "rater a against the other two, 1-5 ratings piled at the top",
                           _ceiling_population, "a"))),
    Entry("agreement.alternative_annotator_test", "per-annotator t-test p-value (default)", "test", _alt, ALT_DESIGNS,
          default=True, test_sizes=(50,)),
    Entry("agreement.alternative_annotator_test", "passed (winning rate >= 0.5 after BY at fdr_level)", "test",
          functools.partial(_alt, decision=True), ALT_DESIGNS),
]
