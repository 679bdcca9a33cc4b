"""Label budgets (expected half-widths, labels needed), which cases to label, and coverage by simulation."""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy import stats

from evalkit import _stats
from evalkit._validation import (
    check_level,
    check_number,
    check_option,
    check_rng,
    check_unique_index,
    warn,
)
from evalkit.infer._active import draw_cases
from evalkit.infer._engine import (
    _WEIGHT,
    METHODS,
    _align,
    _as_scores,
    _betting_order,
    _bounds,
    _estimate,
    _finite_estimate,
    _in_id_order,
    _interval,
    _judge_scale,
    _methods,
    _resolve_interval,
)


def _planning_inputs(judge, human_pilot):
    judge, human = _as_scores(judge, "judge"), _as_scores(human_pilot, "human_pilot")
    # the cases and the pilot's labels in the fixed order of their ids: the plan's draws never follow the rows' order
    judge, human = _in_id_order(judge, None, None)[0], _in_id_order(human, None, None)[0]
    y, positions, _, values = _align(judge, human, "raise", name="human_pilot")
    if len(y) < 2:
        raise ValueError(f"`human_pilot` must hold at least 2 labels; got {len(y)}.")
    return y, positions, values


def _planning_moments(y, positions, values):
    yhat = values[positions]
    vy = float(np.var(y))
    cyh = float(np.mean((y - y.mean()) * (yhat - yhat.mean())))
    vj = float(np.var(values))  # every case's judge score: the planned labelled set is a random subset of them
    return vy, cyh, vj, len(values), len(y)


def _half_width(n, vy, cyh, vj, total, z, finite_population=False):
    """Expected PPI++ and classical half-widths with n labels and total - n unlabelled cases (ppi_py's formulas).

    With ``finite_population`` the estimand is the mean over the ``total`` cases: the variances carry the
    finite-population correction ``1 - n / total`` (half-width 0 at n = total) and lam is the regression
    coefficient ``Cov / Var(judge)`` of the difference estimator (as :func:`mean` with ``finite_population=True``).
    ``z`` is a number or an array of quantiles, one per n.
    """
    n = np.asarray(n, dtype=float)
    big_n = total - n
    with np.errstate(divide="ignore", invalid="ignore"):
        if finite_population:
            fpc = 1 - n / total
            lam = np.where(vj > 0, np.clip(cyh / vj, 0.0, 1.0), 0.0) * np.ones_like(n)
            var = fpc * np.maximum(vy + lam**2 * vj - 2 * lam * cyh, 0.0) / n
            return z * np.sqrt(var), z * np.sqrt(fpc * vy / n), lam
        lam = np.clip(cyh / ((1 + n / big_n) * vj * total / (total - 1)), 0.0, 1.0)
        lam = np.where((big_n <= 0) | (vj == 0) | np.isnan(lam), 0.0, lam)
        var = np.where(lam > 0, lam**2 * vj / big_n, 0.0) + np.maximum(vy + lam**2 * vj - 2 * lam * cyh, 0.0) / n
    return z * np.sqrt(var), z * np.sqrt(vy / n), lam


#: Pilot cases whose judge scores are nearest a case's give its planned label (at least 3, about sqrt(pilot)).
def _donors(size: int) -> int:
    return int(min(size, max(3, round(np.sqrt(size)))))


class _Planner:
    """The half-widths :func:`mean`'s betting (or exact) interval will have at planned numbers of labels, by simulation.

    The pilot stands in for the labels not yet made: every other case gets the label of a pilot case among the
    ``_donors`` whose judge scores are nearest its own (ties all count; one draw, seeded), so the planned population
    keeps every case's real judge score and the pilot's relation between judge and label. Each of ``n_draws``
    draws then labels the pilot and, for n labels in all, the first n - pilot cases of its own random order of the
    others (nested draws, so the half-width falls smoothly with n; below the pilot's size, a random n of the
    pilot), and computes the interval :func:`mean` would
    print: PPI++ and classical betting intervals (Clopper-Pearson for classical on 0/1 labels). The plan is the
    median half-width over the draws.
    """

    def __init__(self, y, positions, values, *, bounds, confidence_level, finite_population, n_draws, rng, exact):
        gen = check_rng(rng)
        self.total, self.pilot = len(values), len(y)
        self.values, self.level, self.finite = values, confidence_level, finite_population
        self.scale = bounds  # resolved by _plan: a known scale
        self.judge_bounds = _judge_scale(values, finite_population)
        self.exact = exact and self.scale == (0.0, 1.0) and bool(np.isin(y, (0.0, 1.0)).all()) and not finite_population
        labels = np.empty(self.total)
        labels[positions] = y
        others = np.setdiff1d(np.arange(self.total), positions)
        pilot_scores, k = values[positions], _donors(len(y))
        for chunk in np.array_split(others, max(1, len(others) // 5000 + 1)):
            distance = np.abs(values[chunk][:, None] - pilot_scores[None, :])
            kth = np.partition(distance, k - 1, axis=1)[:, k - 1: k]
            keys = np.where(distance <= kth, gen.random(distance.shape), -1.0)
            labels[chunk] = y[np.argmax(keys, axis=1)]
        self.labels, self.positions, self.others = labels, positions, others
        self.order = np.argsort(gen.random((n_draws, len(others))), axis=1)  # each draw's order of the other cases
        self.pilot_order = np.argsort(gen.random((n_draws, len(positions))), axis=1)  # for plans below the pilot
        self.keys = gen.random((n_draws, self.total))  # each draw's order of its labels (random, nested in n)

    def draws(self, n: int):
        """Labelled case positions (n_draws, n), in a random order of each draw, and unlabelled ones
        (n_draws, total - n) by case, of every draw at n labels. (The betting interval depends on the order of the
        labels, which :func:`mean` fixes by case; a plan averages over it.)"""
        if n >= self.pilot:
            extra = self.others[self.order[:, : n - self.pilot]]
            labelled = np.concatenate([np.broadcast_to(self.positions, (len(extra), self.pilot)), extra], axis=1)
            rest = self.others[self.order[:, n - self.pilot:]]
        else:  # fewer than the pilot: a random n of the pilot cases
            chosen = self.positions[self.pilot_order]
            labelled = chosen[:, :n]
            rest = np.concatenate([chosen[:, n:], np.broadcast_to(self.others, (len(chosen), len(self.others)))], axis=1)
        keys = np.take_along_axis(self.keys, labelled, axis=1)
        return np.take_along_axis(labelled, np.argsort(keys, axis=1), axis=1), np.sort(rest, axis=1)

    def half_widths(self, n: int) -> dict:
        labelled, rest = self.draws(n)
        y, yhat = self.labels[labelled], self.values[labelled]
        out = {}
        for method, weight in (("ppi++", "tuned"), ("classical", 0.0)):
            if method == "classical" and self.exact:
                low, high = _stats.clopper_pearson(y.sum(axis=1), float(n), self.level)
            elif rest.shape[1] == 0 and not self.finite:  # every case labelled: nothing for the judge to add
                low, high = _stats.betting_interval(y, *self.scale, confidence_level=self.level,
                                                    theta_range=self.scale, tol=1e-5 * (self.scale[1] - self.scale[0]))
            else:
                low, high = _stats.ppi_betting(y, yhat, self.values[rest], weight=weight, bounds=self.scale,
                                               judge_bounds=self.judge_bounds, confidence_level=self.level,
                                               finite_population=self.finite,
                                               tol=1e-5 * (self.scale[1] - self.scale[0]))
            out[method] = (np.asarray(high) - np.asarray(low)) / 2
        # mean's PPI++ row falls back to the humans-only interval where that is narrower
        out["ppi++"] = float(np.median(np.minimum(out["ppi++"], out["classical"])))
        out["classical"] = float(np.median(out["classical"]))
        out["interval"] = "betting"
        out["classical interval"] = "clopper-pearson" if self.exact else "betting"
        return out


PLAN_INTERVALS = ("auto", "betting", "clt", "t")


def _plan(judge, human_pilot, *, interval, confidence_level, finite_population, bounds, n_draws, rng):
    """A function n -> {"ppi++": half-width, "classical": half-width, "lam": ..., intervals} and the number of cases."""
    check_option(interval, list(PLAN_INTERVALS), "interval")
    confidence_level = check_level(confidence_level)  # "auto" plans what mean prints: betting on a known scale, else t
    n_draws = check_number(n_draws, "n_draws", low=1, integer=True)
    y, positions, values = _planning_inputs(judge, human_pilot)
    vy, cyh, vj, total, _ = _planning_moments(y, positions, values)
    finite_population = bool(finite_population)
    scale = _bounds(bounds, y, values)
    resolved, _ = _resolve_interval("betting" if interval == "betting" else interval if interval != "auto" else "auto",
                                    scale)
    exact = interval == "auto"
    interval = resolved
    planner = None
    if interval == "betting":
        planner = _Planner(y, positions, values, bounds=scale, confidence_level=confidence_level,
                           finite_population=finite_population, n_draws=n_draws, rng=rng, exact=exact)

    def at(n: int) -> dict:
        if planner is not None:
            out = planner.half_widths(int(n))
        else:
            z = stats.norm.ppf(0.5 + confidence_level / 2) if interval == "clt" else \
                stats.t.ppf(0.5 + confidence_level / 2, max(int(n) - 1, 1))
            ppi, classical, _ = _half_width(n, vy, cyh, vj, total, z, finite_population)
            out = {"ppi++": float(ppi), "classical": float(classical), "interval": interval, "classical interval": interval}
        out["lam"] = float(_half_width(n, vy, cyh, vj, total, 1.0, finite_population)[2])
        return out

    return at, total


def expected_half_width(judge: pd.Series, human_pilot: pd.Series, *, n_labelled, interval: str = "auto",
                        confidence_level: float = 0.95, finite_population: bool = False, bounds=None,
                        n_draws: int = 200, rng=0) -> pd.DataFrame:
    """The half-width of PPI++'s and the classical interval at planned numbers of labels, from a pilot.

    By default the plan is for the interval :func:`mean` prints by default (``interval="auto"``: betting; the
    exact Clopper-Pearson interval for classical on 0/1 labels), found by simulation from the pilot: every
    unlabelled case gets the label of a pilot case whose judge score is among the nearest to its own, and
    ``n_draws`` random labelled sets of each planned size (the pilot and random other cases) give the
    intervals; the plan is their median half-width (half the width: betting intervals need not be
    symmetric). ``interval="clt"`` or ``"t"`` plans the large-sample interval by its formula: the pilot's
    labels estimate the humans' variance and their covariance with the judge, every case the judge's
    variance, and with n labels and N unlabelled cases PPI++'s variance is ``lam^2 Var(judge) / N +
    Var(human - lam judge) / n`` at the lam PPI++ would choose. Either way the pilot's estimates carry its
    own sampling error: a pilot of 50 labels can be off by a fifth in the number of labels (label a little
    more).

    Parameters
    ----------
    judge : Series
        Scores of every case (as in :func:`mean`).
    human_pilot : Series
        Labels of a random pilot subset.
    n_labelled : int or sequence of int
        Planned total numbers of labels (the pilot's included), each in [2, number of cases].
    interval : {"auto", "betting", "clt", "t"}, default "auto"
        The interval of :func:`mean` to plan for (as its ``interval``).
    confidence_level : float, default 0.95
    finite_population : bool, default False
        False plans for the mean of the population the cases were drawn from; True for the mean over exactly
        these cases (labels drawn without replacement): the half-width is 0 at n = N, where the truth is known.
    bounds : (float, float), optional
        The labels' scale, as in :func:`mean` (the betting interval relies on it).
    n_draws : int, default 200
        Simulated label sets per planned number (betting plans).
    rng : None, int or numpy.random.Generator, default 0
        The simulation's randomness (seeded by default, so a plan is reproducible).

    Returns
    -------
    DataFrame
        One row per planned number and method: ``n_labelled, method, half_width, lam, interval``; ``lam`` is
        the weight PPI++'s estimate would give the judge (its large-sample formula), ``interval`` the interval
        planned.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.normal(3.0, 1.0, 2000).clip(0, 6)
    >>> judge = pd.Series(truth + rng.normal(0, 0.5, 2000))
    >>> infer.expected_half_width(judge, pd.Series(truth[:50]), n_labelled=[50, 200], bounds=(0, 6)).round(3)
       n_labelled     method  half_width    lam interval
    0          50      ppi++       0.347  0.658  betting
    1          50  classical       0.347  0.000  betting
    2         200      ppi++       0.125  0.607  betting
    3         200  classical       0.149  0.000  betting
    >>> infer.expected_half_width(judge, pd.Series(truth[:50]), n_labelled=[50, 200], interval="clt").round(3)
       n_labelled     method  half_width    lam interval
    0          50      ppi++       0.148  0.658      clt
    1          50  classical       0.253  0.000      clt
    2         200      ppi++       0.079  0.607      clt
    3         200  classical       0.126  0.000      clt
    """
    at, total = _plan(judge, human_pilot, interval=interval, confidence_level=confidence_level,
                      finite_population=finite_population, bounds=bounds, n_draws=n_draws, rng=rng)
    planned = np.atleast_1d(np.asarray(n_labelled))
    if planned.ndim != 1 or not np.issubdtype(planned.dtype, np.integer) or (planned < 2).any() or (planned > total).any():
        raise ValueError(f"`n_labelled` must be integers in [2, {total}] (the number of cases); got {n_labelled!r}.")
    rows = []
    for n in planned.tolist():
        plan = at(n)
        rows.append({"n_labelled": n, "method": "ppi++", "half_width": plan["ppi++"], "lam": plan["lam"],
                     "interval": plan["interval"]})
        rows.append({"n_labelled": n, "method": "classical", "half_width": plan["classical"], "lam": 0.0,
                     "interval": plan["classical interval"]})
    return pd.DataFrame(rows)


def labels_needed(judge: pd.Series, human_pilot: pd.Series, *, half_width: float, interval: str = "auto",
                  confidence_level: float = 0.95, finite_population: bool = False, bounds=None, n_draws: int = 200,
                  rng=0) -> pd.DataFrame:
    """How many human labels PPI++ and classical need for an interval of a given half-width, from a pilot.

    The smallest number of labels (the pilot's included) at which :func:`expected_half_width`'s plan reaches
    the target: by default the median half-width of :func:`mean`'s default interval, by simulation from the
    pilot. The pilot's estimates carry its own error, so the count is an estimate too: label a little more.

    Parameters
    ----------
    judge : Series
        Scores of every case.
    human_pilot : Series
        Labels of a random pilot subset (at least 2).
    half_width : float
        The target half-width, on the scale of the labels.
    interval, confidence_level, finite_population, bounds, n_draws, rng
        As in :func:`expected_half_width`: ``finite_population=True`` when the estimand is the mean over exactly
        these cases, which every target reaches at the latest when every case is labelled.

    Returns
    -------
    DataFrame
        Two rows (``ppi++``, ``classical``): ``method, labels_needed, half_width, n_cases, interval``;
        ``labels_needed`` is missing (with a warning) when even labelling every case would not reach the target.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> truth = rng.normal(3.0, 1.0, 2000).clip(0, 6)
    >>> judge = pd.Series(truth + rng.normal(0, 0.5, 2000))
    >>> infer.labels_needed(judge, pd.Series(truth[:50]), half_width=0.15, bounds=(0, 6)).round(3)
          method  labels_needed  half_width  n_cases interval
    0      ppi++            158        0.15     2000  betting
    1  classical            199        0.15     2000  betting
    """
    half_width = check_number(half_width, "half_width", low=0.0)
    if half_width == 0:
        raise ValueError("`half_width` must be positive; got 0.")
    at, total = _plan(judge, human_pilot, interval=interval, confidence_level=confidence_level,
                      finite_population=finite_population, bounds=bounds, n_draws=n_draws, rng=rng)
    cache = {}

    def plan(n):
        if n not in cache:
            cache[n] = at(n)
        return cache[n]

    rows = []
    for method in ("ppi++", "classical"):
        name = plan(total)["interval" if method == "ppi++" else "classical interval"]
        if plan(total)[method] > half_width:
            warn(f"{method}: even {total} labels (every case) give a half-width of {plan(total)[method]:.3g}, "
                          f"above the target {half_width:.3g}.")
            rows.append({"method": method, "labels_needed": pd.NA, "half_width": np.nan, "n_cases": total,
                         "interval": name})
            continue
        low, high = 2, total  # the half-width falls with n: bisect for the smallest n that reaches the target
        while low < high:
            mid = (low + high) // 2
            low, high = (mid + 1, high) if plan(mid)[method] > half_width else (low, mid)
        rows.append({"method": method, "labels_needed": low, "half_width": plan(low)[method], "n_cases": total,
                     "interval": name})
    out = pd.DataFrame(rows)
    out["labels_needed"] = out["labels_needed"].astype("Int64")
    return out



def _strata(values: np.ndarray, n_strata: int) -> np.ndarray:
    distinct = np.unique(values)
    if len(distinct) <= n_strata:
        return np.searchsorted(distinct, values)
    ranks = stats.rankdata(values, method="average")
    return np.minimum(((ranks - 1) * n_strata // len(values)).astype(int), n_strata - 1)


def choose_cases(judge: pd.Series, n: int, *, strategy: str = "stratified", n_strata: int = 5, exclude=None,
                 rng=None, probabilities: pd.Series | None = None) -> pd.Index:
    """Which cases to send to a human next: a random order, optionally balanced over the judge's verdicts.

    ``"stratified"`` splits the cases by judge verdict (or, for scores with more than ``n_strata`` distinct
    values, into ``n_strata`` equal-count score bins) and interleaves a random order of each stratum so that
    every prefix of the list holds the strata in proportion: stopping early still leaves a balanced sample,
    and every case has the same chance of being chosen, so :func:`mean` stays valid. ``"random"`` is a plain
    random order. ``"active"`` draws by ``probabilities`` (:func:`sampling_probabilities`: more often where the
    judge is unsure), one case at a time without replacement, each with a chance proportional to its probability
    among the cases left; :func:`mean` with the same ``probabilities`` gives the valid interval.

    Parameters
    ----------
    judge : Series
        Judge scores or verdicts indexed by case id.
    n : int
        How many cases to choose.
    strategy : {"stratified", "random", "active"}, default "stratified"
    n_strata : int, default 5
    exclude : sequence of case ids, optional
        Cases already labelled (chosen from the rest).
    rng : None, int or numpy.random.Generator
    probabilities : Series, optional
        With ``strategy="active"`` (required there): the draw probabilities by case id.

    Returns
    -------
    Index
        ``n`` case ids (named ``case_id``) in the order to label them. Hand them to
        :class:`evalkit.widgets.Labeller` by ordering its cases table:
        ``cases.set_index("case_id").loc[ids].reset_index()``.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import infer
    >>> judge = pd.Series(["PASS"] * 80 + ["FAIL"] * 20, index=[f"c{i}" for i in range(100)])
    >>> ids = infer.choose_cases(judge, 10, rng=0)
    >>> len(ids), judge[ids].value_counts().to_dict()
    (10, {'PASS': 8, 'FAIL': 2})
    """
    check_option(strategy, ["stratified", "random", "active"], "strategy")
    if (strategy == "active") != (probabilities is not None):
        raise ValueError("`probabilities` goes with strategy='active' (and strategy='active' needs it: "
                         f"infer.sampling_probabilities); got strategy={strategy!r} and probabilities="
                         f"{'a ' + type(probabilities).__name__ if probabilities is not None else 'None'}.")
    if strategy == "active":

        index = judge.index if isinstance(judge, pd.DataFrame) else _as_scores(judge, "judge").index
        check_unique_index(index, "judge")
        return draw_cases(index, probabilities, n, exclude=exclude, rng=rng)
    scores = _as_scores(judge, "judge")
    check_unique_index(scores.index, "judge")
    if exclude is not None:
        scores = scores[~scores.index.isin(pd.Index(exclude))]
    scores = scores.dropna()
    n = check_number(n, "n", low=1, high=len(scores), integer=True)
    n_strata = check_number(n_strata, "n_strata", low=1, integer=True)
    gen = check_rng(rng)
    if strategy == "random":
        chosen = gen.permutation(len(scores))[:n]
    else:
        strata = _strata(scores.to_numpy(), n_strata)
        key = np.empty(len(scores))
        for s in np.unique(strata):
            members = np.flatnonzero(strata == s)
            # the k-th case of a stratum of size m sits at (k + u) / m: each stratum spread evenly over the order
            key[gen.permutation(members)] = (np.arange(len(members)) + gen.random()) / len(members)
        chosen = np.lexsort((gen.random(len(scores)), key))[:n]
    return pd.Index(scores.index[chosen], name="case_id")


def simulate(judge: pd.Series, human: pd.Series, *, n_labelled, n_draws: int = 1000, method=METHODS,
             interval: str = "clt", confidence_level: float = 0.95, bounds=None, finite_population: bool = False,
             rng=None) -> pd.DataFrame:
    """How the estimators would have done: repeat :func:`mean` on random labelled subsets of a fully labelled set.

    With a human label on every case, the truth is the human mean over all cases. Each draw labels a random
    subset of ``n`` cases (without replacement) and leaves the rest unlabelled; the estimates and intervals
    are those of :func:`mean` (equal up to rounding), computed for all draws at once from sums over a
    draws x cases matrix. Use it to see how PPI would have done on a fully labelled pilot before trusting
    it with fewer labels.

    Parameters
    ----------
    judge, human : Series
        Judge scores and human labels of the same cases (same case ids, no missing values).
    n_labelled : int or sequence of int
        Numbers of labels to draw (each at least 2 and below the number of cases).
    n_draws : int, default 1000
    method : str or list of str, default all four
    interval : {"clt", "betting"}, default "clt"
        The interval of :func:`mean` to measure (``"betting"`` is :func:`mean`'s default; ``"clt"`` is
        faster: one pass over the draws).
    confidence_level : float, default 0.95
    bounds : (float, float), optional
        The labels' scale, for the betting interval (as in :func:`mean`).
    finite_population : bool, default False
        Measure the intervals for the mean over exactly these cases (the truth here), with the
        finite-population correction, instead of the population they were drawn from.
    rng : None, int or numpy.random.Generator

    Returns
    -------
    DataFrame
        One row per number of labels and method: ``n_labelled, method, interval, n_draws, coverage`` (share of
        intervals holding the truth), ``width`` (mean interval width), ``median_width`` (what
        :func:`expected_half_width` plans, doubled), ``bias`` (mean estimate - truth), ``rmse`` and ``truth``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> human = pd.Series(rng.normal(3.0, 1.0, 1000))
    >>> judge = human + 0.3 + rng.normal(0, 0.5, 1000)
    >>> sim = infer.simulate(judge, human, n_labelled=100, n_draws=500, method=["ppi++", "judge"], rng=0)
    >>> sim[["n_labelled", "method", "coverage"]]
       n_labelled method  coverage
    0         100  ppi++     0.974
    1         100  judge     0.000
    """
    methods = _methods(method)
    check_option(interval, ["clt", "betting"], "interval")
    confidence_level = check_level(confidence_level)
    n_draws = check_number(n_draws, "n_draws", low=1, integer=True)
    judge, human = _as_scores(judge, "judge"), _as_scores(human, "human")
    check_unique_index(judge.index, "judge")
    check_unique_index(human.index, "human")
    if len(judge) != len(human) or not human.index.isin(judge.index).all():
        raise ValueError("`simulate` needs a human label for every judged case: `judge` and `human` must have the same "
                         f"case ids; they differ, e.g. {judge.index.symmetric_difference(human.index)[:3].tolist()}.")
    human = human.reindex(judge.index)
    yhat_all, y_all = judge.to_numpy(float), human.to_numpy(float)
    if np.isnan(yhat_all).any() or np.isnan(y_all).any():
        raise ValueError("`simulate` needs complete data: `judge` or `human` has missing values.")
    total = len(y_all)
    planned = np.atleast_1d(np.asarray(n_labelled))
    if planned.ndim != 1 or not np.issubdtype(planned.dtype, np.integer) or (planned < 2).any() or (planned >= total).any():
        raise ValueError(f"`n_labelled` must be integers in [2, {total - 1}]; got {n_labelled!r}.")
    gen = check_rng(rng)
    truth = float(y_all.mean())
    level = confidence_level
    if interval == "betting":
        scale = _bounds(bounds, y_all, yhat_all)
        if scale is None:
            raise ValueError("`interval='betting'` rests on the labels' scale, which is not known: pass "
                             "bounds=(low, high), e.g. (1, 5) for 1-5 ratings.")
        judge_bounds = _judge_scale(yhat_all, finite_population)
    rows = []
    for size in planned.tolist():
        picks = np.argsort(gen.random((n_draws, total)), axis=1)[:, :size]
        m = _draw_moments(y_all, yhat_all, picks)
        if interval == "betting":  # the labels of each draw in mean()'s order: by case, then the fixed permutation
            ordered = np.sort(picks, axis=1)[:, _betting_order(size)]
            keep = np.ones((n_draws, total), dtype=bool)
            np.put_along_axis(keep, picks, False, axis=1)
            rest = np.nonzero(keep)[1].reshape(n_draws, total - size)
        for name in methods:
            est, se, _ = (_finite_estimate if finite_population else _estimate)(m, name)
            if interval == "clt":
                low, high = _interval(est, se, level)
            elif name == "judge":
                low, high = _interval(est, se, level)  # the judge-only row: as in mean(), from every score
                if not finite_population and judge_bounds is not None:
                    low, high = (np.full(n_draws, v) for v in _stats.betting_interval(
                        yhat_all, *judge_bounds, confidence_level=level, theta_range=judge_bounds))
            else:
                low, high = _stats.ppi_betting(y_all[ordered], yhat_all[ordered], yhat_all[rest], weight=_WEIGHT[name],
                                               bounds=scale, judge_bounds=judge_bounds, confidence_level=level,
                                               finite_population=finite_population)
            rows.append({"n_labelled": size, "method": name, "interval": interval, "n_draws": n_draws,
                         "coverage": float(np.mean((low <= truth) & (truth <= high))),
                         "width": float(np.mean(high - low)), "median_width": float(np.median(high - low)),
                         "bias": float(np.mean(est) - truth),
                         "rmse": float(np.sqrt(np.mean((est - truth) ** 2))), "truth": truth})
    return pd.DataFrame(rows)


def _draw_moments(y_all: np.ndarray, yhat_all: np.ndarray, picks: np.ndarray) -> dict:
    """The labelled and unlabelled moments :func:`_estimate` needs, for every draw at once (``picks``: the labelled
    cases of each draw, a row per draw), from sums over a draws x cases mask."""
    n_draws, size = picks.shape
    total = len(y_all)
    # centre both variables: (co)variances are shift-invariant and the sums of squares below stay well conditioned
    cy, ch = y_all.mean(), yhat_all.mean()
    y, h = y_all - cy, yhat_all - ch
    mask = np.zeros((n_draws, total))
    np.put_along_axis(mask, picks, 1.0, axis=1)
    n, big_n = np.full(n_draws, float(size)), np.full(n_draws, float(total - size))
    sy, sh, syy, shh, syh = mask @ y, mask @ h, mask @ (y * y), mask @ (h * h), mask @ (y * h)
    my, mh, mu = sy / n, sh / n, (h.sum() - sh) / big_n
    # one-pass variances: rounding can take them a hair below 0 when one score dwarfs the rest; they are >= 0
    return {"n": n, "N": big_n, "my": my + cy, "mh": mh + ch, "mu": mu + ch, "vy": np.maximum(syy / n - my**2, 0.0),
            "vh": np.maximum(shh / n - mh**2, 0.0), "cyh": syh / n - my * mh,
            "vu": np.maximum(((h * h).sum() - shh) / big_n - mu**2, 0.0)}
