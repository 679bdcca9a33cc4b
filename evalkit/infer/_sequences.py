"""Confidence sequences for what a labeller watches, and the stop rule read off them."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from evalkit import _stats
from evalkit._validation import (
    EvalkitWarning,
    check_columns,
    check_dataframe,
    check_level,
    check_number,
    check_option,
    check_unique_index,
    warn,
)
from evalkit.infer._active import active_sequence
from evalkit.infer._engine import _WEIGHT, _as_scores, _bounds
from evalkit.infer._estimate import mean

STATISTICS = ("mean", "agreement", "fail_recall")


def confidence_sequence(judge: pd.Series | None = None, human: pd.Series | None = None, *, statistic: str = "mean",
                        method="ppi++", confidence_level: float = 0.95, bounds=None,
                        probabilities: pd.Series | None = None) -> pd.DataFrame:
    """A live interval for what a labeller watches, valid however they decide when to stop: one row per label so far.

    A fixed-n interval read after every label, and acted on ("stop when it looks settled"), holds far less often
    than its level; a confidence sequence holds at every number of labels at once, so the interval at the
    moment the labeller stops, whenever and however that moment is chosen, keeps ``confidence_level``. These
    are betting confidence sequences (Waudby-Smith & Ramdas 2024, with bets shrinking like 1 / sqrt(t log t)),
    computed in the order the labels were given (the order they were made), which must be a random order of
    the cases, as :func:`choose_cases` with ``strategy="random"`` gives it, or, with ``probabilities``, the order
    the cases were drawn in by those probabilities (:func:`choose_cases` with ``strategy="active"``, or
    :class:`evalkit.widgets.Labeller` with ``order="active"``).

    With ``probabilities`` the sequence is of the mean over the cases (``judge``'s, or without a judge those
    ``probabilities`` names and the pilot's): each label gives Des Raj's (1956) estimate of that mean, whose mean
    given the labels before is the mean over the cases whatever the draw probabilities (the ``estimate`` column is
    their running mean, pulled into the sequence where it falls outside it: the sequence also uses what the labels
    fix, so once every case is labelled both are the mean itself), and the sequence bets on
    these values, with the weight of the line through the earlier labels on the judge's scores (``"ppi++"``; none
    for ``"classical"``; chosen for a width at as many labels as there are cases) and every bet fixed before the
    case is drawn. So the sequence at n labels is the first n
    rows of that at n + k, and it holds at every number of labels at once, however the stop is chosen; the
    narrower of the PPI++ and the labels-only interval, which :func:`mean` reports, is not picked here (that
    choice would look at the labels).

    Parameters
    ----------
    judge : Series or None
        The judge on every case of the pool (scores or verdicts by case id); needed for ``"agreement"``,
        ``"fail_recall"`` and for ``"mean"`` with PPI. None: the humans alone.
    human : Series
        The labels so far, in the order they were made (with ``probabilities``: the order the cases were drawn in,
        the uniform pilot first), indexed by case id (numbers, PASS/FAIL or booleans). The
        order is ``(judge, human)``, as in :func:`mean` and :func:`evalkit.calibrate.calibrate`; the labels given
        alone in the first place (the order before) still work for one release, with a FutureWarning.
    statistic : {"mean", "agreement", "fail_recall"}, default "mean"
        ``"mean"``: the humans' mean (their pass rate, for PASS/FAIL labels). With ``judge``, it is the mean over
        the judge's cases (the pool the labels are drawn from without replacement), estimated with ``method``;
        without, the mean of the population the labels come from. ``"agreement"``: the share of cases where
        judge and human give the same verdict; ``"fail_recall"``: the share of human FAILs the judge also fails
        (its rows count every label; the sequence moves at each human FAIL). Both are rates of the population
        the cases come from.
    method : {"ppi++", "ppi", "classical"}, default "ppi++"
        For ``"mean"`` with ``judge``: the estimator, as in :func:`mean` (lam tuned only on earlier labels).
    confidence_level : float, default 0.95
    bounds : (float, float), optional
        The labels' scale (as in :func:`mean`); rates are on [0, 1].
    probabilities : Series, optional
        The draw probabilities the cases were drawn with, one at a time without replacement, by case id, as
        :func:`sampling_probabilities` gives them; the labelled cases it does not name are a uniform pilot,
        labelled first. ``statistic="mean"`` only, on a known scale (``bounds``, or 0/1 labels); ``method="ppi"``
        is not offered (as in :func:`mean`).

    Returns
    -------
    DataFrame
        One row per label so far: ``n_labelled, n_used, estimate, cs_low, cs_high, half_width, statistic, method,
        interval`` (``"betting-cs"``); ``n_used`` counts the labels the statistic rests on (the human FAILs for
        ``"fail_recall"``). :func:`stopping_point` applies a stop rule to it. Without ``bounds``, when every
        label (and judge score) is the same number, the scale's ends are unknown: the sequence is NaN, with an
        :class:`~evalkit.EvalkitWarning`.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer
    >>> rng = np.random.default_rng(0)
    >>> labels = pd.Series(rng.random(400) < 0.8, index=[f"c{i}" for i in range(400)])
    >>> cs = infer.confidence_sequence(human=labels)
    >>> cs.iloc[[49, 199, 399]][["n_labelled", "estimate", "cs_low", "cs_high"]].round(3)
         n_labelled  estimate  cs_low  cs_high
    49           50     0.760   0.491    0.918
    199         200     0.725   0.585    0.862
    399         400     0.752   0.631    0.846
    >>> infer.stopping_point(cs, half_width=0.15)
    148

    Labels drawn where a judge is unsure (its stated probability of a pass), in the order they were drawn:

    >>> p = pd.Series(rng.beta(0.5, 0.5, 1000), index=[f"d{i}" for i in range(1000)])
    >>> truth = pd.Series((rng.random(1000) < p).astype(float), index=p.index)
    >>> q = infer.sampling_probabilities(p)
    >>> drawn = infer.choose_cases(p, 300, strategy="active", probabilities=q, rng=1)
    >>> live = infer.confidence_sequence(p, truth[drawn], probabilities=q)
    >>> live.iloc[[99, 299]][["n_labelled", "estimate", "cs_low", "cs_high"]].round(3)
         n_labelled  estimate  cs_low  cs_high
    99          100     0.487   0.394    0.672
    299         300     0.490   0.441    0.586
    """
    if human is None:
        raise TypeError("confidence_sequence() needs `human`, the labels so far, after the judge's scores (or "
                        "confidence_sequence(human=labels) without a judge).")
    check_option(statistic, list(STATISTICS), "statistic")
    confidence_level = check_level(confidence_level)
    check_option(method, ["ppi++", "ppi", "classical"], "method")
    if probabilities is not None:
        return _active_sequence_frame(judge, human, statistic, method, bounds, confidence_level, probabilities)
    labels, scores = _sequence_inputs(judge, human, statistic)
    used_method = "classical" if (statistic != "mean" or scores is None) else method
    if statistic == "mean":
        estimate, n_used, low, high = _mean_sequence(labels, scores, used_method, bounds, confidence_level)
    else:
        estimate, n_used, low, high = _rate_sequence(labels, scores, statistic, confidence_level)
    n = len(labels)
    out = pd.DataFrame({"n_labelled": np.arange(1, n + 1), "n_used": np.asarray(n_used, dtype=int), "estimate": estimate,
                        "cs_low": low, "cs_high": high})
    out["half_width"] = (out["cs_high"] - out["cs_low"]) / 2
    out["statistic"], out["method"], out["interval"] = statistic, used_method, "betting-cs"
    out.attrs.update(confidence_level=confidence_level, population="finite" if (statistic == "mean" and scores is not None)
                     else "superpopulation")
    return out


def _active_sequence_frame(judge, human, statistic, method, bounds, confidence_level, probabilities):
    """:func:`confidence_sequence`'s table for labels drawn with ``probabilities`` (successive sampling)."""
    if statistic != "mean":
        raise ValueError(f"statistic={statistic!r} is not offered with `probabilities`: it is a rate of the population "
                         "the cases come from, and cases drawn with unequal probabilities are not a random sample of "
                         "it; use statistic='mean' (the mean over the cases) or label in a random order.")
    labels = _as_scores(human, "human")
    if len(labels) == 0:
        raise ValueError("`human` holds no label yet.")
    estimate, low, high, used = active_sequence(judge, labels, probabilities, method=method, bounds=bounds,
                                                        confidence_level=confidence_level)
    n = len(labels)
    out = pd.DataFrame({"n_labelled": np.arange(1, n + 1), "n_used": np.arange(1, n + 1), "estimate": estimate,
                        "cs_low": low, "cs_high": high})
    out["half_width"] = (out["cs_high"] - out["cs_low"]) / 2
    out["statistic"], out["method"], out["interval"] = statistic, used, "betting-cs"
    out.attrs.update(confidence_level=confidence_level, population="finite", design="successive")
    return out


def _sequence_inputs(judge, human, statistic):
    """The labels (floats by case id, none missing) and the judge's scores (or None), checked against each other."""
    labels = _as_scores(human, "human")
    check_unique_index(labels.index, "human")
    if labels.isna().any():
        raise ValueError(f"`human` has {int(labels.isna().sum())} missing label(s); drop them first.")
    if len(labels) == 0:
        raise ValueError("`human` holds no label yet.")
    if judge is None:
        if statistic != "mean":
            raise ValueError(f"statistic={statistic!r} compares judge and human: pass `judge`.")
        return labels, None
    scores = _as_scores(judge, "judge")
    check_unique_index(scores.index, "judge")
    missing = labels.index[~labels.index.isin(scores.index)]
    if len(missing):
        raise ValueError(f"`human` has {len(missing)} case id(s) that `judge` does not score, e.g. {missing[:3].tolist()} "
                         "(the order is confidence_sequence(judge, human)).")
    return labels, scores


def _mean_sequence(labels, scores, method, bounds, confidence_level):
    """The running mean (PPI on the judge's pool when ``scores`` is given) and its betting sequence."""
    y = labels.to_numpy(dtype=float)
    n = len(y)
    n_used = np.arange(1, n + 1)
    scale = _bounds(bounds, y, scores.to_numpy(dtype=float) if scores is not None else np.array([]))
    if scale is None:  # a betting sequence rests on the scale's ends: the data's smallest and largest are not
        warn("confidence_sequence: the labels are not 0/1 and `bounds` is not given, so the scale's ends "
                      "are unknown: the sequence is NaN. Pass bounds=(low, high), the labels' scale.")
        return np.cumsum(y) / n_used, n_used, np.full(n, np.nan), np.full(n, np.nan)
    a, b = scale
    if scores is None:
        low, high = _stats.betting_sequence(y, a, b, confidence_level=confidence_level, theta_range=(a, b))
        return np.cumsum(y) / n_used, n_used, low, high
    values = scores.to_numpy(dtype=float)
    if np.isnan(values).any():
        raise ValueError("`judge` has missing scores; a confidence sequence over its cases needs every score.")
    labelled = scores.index.get_indexer(labels.index)
    rest = np.ones(len(values), dtype=bool)
    rest[labelled] = False
    low, high = _stats.ppi_betting(y, values[labelled], values[rest], weight=_WEIGHT[method], bounds=(a, b),
                                   judge_bounds=(float(values.min()), float(values.max())),
                                   confidence_level=confidence_level, finite_population=True, sequence=True)
    if method == "classical":
        return np.cumsum(y) / n_used, n_used, low, high
    with warnings.catch_warnings():  # the running PPI++ estimate on the pool: only the estimate is used, the clt
        warnings.simplefilter("ignore", EvalkitWarning)  # interval's notes do not apply
        estimate = np.array([mean(scores, labels.iloc[: t + 1], method=method, finite_population=True,
                                  interval="clt").iloc[0]["estimate"] if t >= 1 else y[0] for t in range(n)])
    return estimate, n_used, low, high


def _rate_sequence(labels, scores, statistic, confidence_level):
    """The running agreement or FAIL recall of PASS/FAIL verdicts and its betting sequence over the labels it rests on."""
    y = labels.to_numpy(dtype=float)
    n = len(y)
    if not (np.isin(y, (0.0, 1.0)).all() and np.isin(scores.to_numpy(dtype=float)[~scores.isna().to_numpy()], (0.0, 1.0)).all()):
        raise ValueError(f"statistic={statistic!r} needs PASS/FAIL (or boolean) labels and verdicts.")
    j = scores.loc[labels.index].to_numpy(dtype=float)
    if np.isnan(j).any():
        raise ValueError("`judge` has no verdict for some labelled case; drop those labels first.")
    if statistic == "agreement":
        hits, counts = (j == y).astype(float), np.ones(n)
    else:
        counts = (y == 0).astype(float)
        hits = ((j == 0) & (y == 0)).astype(float)
    used = counts > 0
    n_used = np.cumsum(counts).astype(int)
    low, high = np.full(n, 0.0), np.full(n, 1.0)
    if used.any():
        seq_low, seq_high = _stats.betting_sequence(hits[used], 0.0, 1.0, confidence_level=confidence_level,
                                                    theta_range=(0.0, 1.0))
        step = np.maximum(n_used - 1, 0)
        seen = n_used > 0
        low[seen], high[seen] = seq_low[step[seen]], seq_high[step[seen]]
    with np.errstate(invalid="ignore", divide="ignore"):
        estimate = np.cumsum(hits) / n_used
    return estimate, n_used, low, high


def stopping_point(sequence: pd.DataFrame, *, half_width: float) -> int | None:
    """The stop rule "stop when the half-width is below h": the first number of labels at which it holds (None: not yet).

    On a :func:`confidence_sequence` this rule keeps the sequence's level at the stopping point; on intervals
    made for a fixed number of labels it does not (the coverage harness measures both).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import infer
    >>> cs = pd.DataFrame({"n_labelled": [1, 2, 3], "half_width": [0.5, 0.2, 0.05]})
    >>> infer.stopping_point(cs, half_width=0.1)
    3
    """
    sequence = check_dataframe(sequence, "sequence")
    check_columns(sequence, ["n_labelled", "half_width"], "sequence")
    half_width = check_number(half_width, "half_width", low=0.0)
    for column in ("n_labelled", "half_width"):
        if pd.api.types.is_bool_dtype(sequence[column]) or not pd.api.types.is_numeric_dtype(sequence[column]):
            raise TypeError(f"`sequence` column {column!r} must hold numbers, as confidence_sequence gives them; got "
                            f"dtype {sequence[column].dtype}.")
    below = np.flatnonzero(sequence["half_width"].to_numpy(dtype=float) <= half_width)  # NaN: not yet known
    if not len(below):
        return None
    n = float(sequence["n_labelled"].iloc[below[0]])
    if not (n >= 1 and n.is_integer()):
        raise ValueError(f"`sequence` column 'n_labelled' must hold whole numbers of labels; got {n!r} at row {below[0]}.")
    return int(n)
