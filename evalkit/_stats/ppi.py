"""Prediction-powered betting intervals: the labels' mean from labelled pairs and the judge's unlabelled scores."""

from __future__ import annotations

import numpy as np

from evalkit._stats.betting import BET_TRUNCATION, betting_interval, betting_sequence, empirical_bernstein_interval

#: Above this many unlabelled cases the judge-only row's interval is empirical Bernstein instead of betting.
BETTING_MAX_UNLABELLED = 20_000


#: PPI++'s betting rectifier clips a judge with more than two distinct scores to these quantiles of its scores
#: (and 1 - this): a rare extreme score widens the range every bet must survive far more than it helps the variance.
JUDGE_CLIP_QUANTILE = 0.05


#: The share of the unlabelled cases set aside to choose that clipping range (population estimand), so that the
#: clipped scores of the other cases stay independent draws.
CLIP_HOLDOUT = 0.1


def _tuned_weights(y, yhat, judge_var, inflate):
    """Predictable PPI++ weights: lam_t from the first t-1 labelled pairs, ``Cov(y, yhat) / (inflate * Var(judge))``."""
    n = y.shape[-1]
    lam = np.zeros(y.shape)
    if n < 3:
        return lam
    t = np.arange(1, n + 1, dtype=float)
    sy, sh, syh = np.cumsum(y, axis=-1), np.cumsum(yhat, axis=-1), np.cumsum(y * yhat, axis=-1)
    cov = syh / t - (sy / t) * (sh / t)  # population covariance of the first t pairs
    with np.errstate(invalid="ignore", divide="ignore"):
        tuned = np.clip(cov[..., 1:-1] / (np.asarray(inflate)[..., None] * np.asarray(judge_var)[..., None]), 0.0, 1.0)
    lam[..., 2:] = np.nan_to_num(tuned)  # lam_t uses pairs 1..t-1 (t >= 3)
    return lam


#: Above this many (candidate weight, step) pairs :func:`_width_weights` loops over the candidates.
WEIGHT_GRID_AT_ONCE = 2_000_000


def _width_weights(y, g, *, judge_var, horizon: int, alpha: float, bounds, spread, grid: int = 21, start: int = 3):
    """Predictable weights lam_t in [0, 1] that minimise the predicted width of the betting interval for the mean of
    ``y_t - lam * g_t + (a term with mean lam * E[g])``, from the pairs before t (lam_t = 0 for the first ``start``).

    The prediction follows the plug-in bets of :func:`_bets` in the scale of the labels: a bettor whose null mean lies
    a distance D from the bound it must survive bets ``b = min(sqrt(2 L / (n s2)), c / D)`` (L = log(2 / alpha),
    c = ``BET_TRUNCATION``) and excludes a mean about ``L / (n b) + b s2 / 2`` away from the truth. The judge lowers the
    variance ``s2(lam) = Var(y) - 2 lam Cov(y, g) + lam^2 judge_var`` but widens the range by ``lam * spread`` on each
    side, which at few labels costs more than it gains: there lam_t stays near 0, the human-only interval.
    ``judge_var`` and ``spread`` broadcast against the leading axes of ``y``.
    """
    a, b = map(float, bounds)
    n = y.shape[-1]
    lam = np.zeros(y.shape)
    if n <= start:
        return lam
    scale = b - a
    t = np.arange(1, n + 1, dtype=float)
    yc, gc = y - a, g - np.mean(g, axis=-1, keepdims=True)  # centred sums stay well conditioned
    my, mg = np.cumsum(yc, axis=-1) / t, np.cumsum(gc, axis=-1) / t
    vy = np.maximum(np.cumsum(yc * yc, axis=-1) / t - my**2, 0.0)
    cov = np.cumsum(yc * gc, axis=-1) / t - my * mg
    # step t (0-based index t) uses the pairs before it: the running values at index t - 1
    my, vy, cov = (v[..., start - 1:-1] for v in (my, vy, cov))
    theta = np.clip(my, 0.0, scale)
    level = np.log(2 / alpha)
    jv = np.asarray(judge_var, dtype=float)[..., None]
    extra = np.asarray(spread, dtype=float)[..., None]
    floor = 1e-12 * scale**2

    def predicted(weight):  # the predicted width at each candidate weight (leading axis), each step
        s2 = np.maximum(vy - 2 * weight * cov + weight**2 * jv, floor)
        width = 0.0
        for distance in (theta + weight * extra, scale - theta + weight * extra):
            bet = np.minimum(np.sqrt(2 * level / (horizon * s2)), BET_TRUNCATION / np.maximum(distance, 1e-9 * scale))
            width = width + level / (horizon * bet) + bet * s2 / 2
        return width

    weights = np.linspace(0.0, 1.0, grid)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if vy.size * grid <= WEIGHT_GRID_AT_ONCE:  # all candidates at once; in a loop where that would take much memory
            best = weights[np.argmin(predicted(weights.reshape((-1,) + (1,) * vy.ndim)), axis=0)]
        else:
            best, best_width = np.zeros(vy.shape), np.full(vy.shape, np.inf)
            for weight in weights:
                width = predicted(weight)
                better = width < best_width
                best, best_width = np.where(better, weight, best), np.where(better, width, best_width)
    lam[..., start:] = best
    return lam


def _block_means(values, k: int):
    """Means of k consecutive blocks of the last axis whose sizes differ by at most one (k <= its length)."""
    m = values.shape[-1]
    edges = np.linspace(0, m, k + 1).round().astype(int)
    sums = np.concatenate([np.zeros(values.shape[:-1] + (1,)), np.cumsum(values, axis=-1)], axis=-1)
    return (sums[..., edges[1:]] - sums[..., edges[:-1]]) / np.diff(edges)


def _clip_range(scores, judge_bounds):
    """The judge's clipping range for PPI++'s rectifier: quantiles of ``scores`` (last axis), or the judge's bounds
    for a judge with at most two distinct scores (verdicts), which clipping would only blind (their smallest and
    largest where the judge's scale is not known)."""
    if scores.shape[-1] == 0 or np.unique(scores).size <= 2:
        shape = scores.shape[:-1]
        ja, jb = map(float, judge_bounds) if judge_bounds is not None else (np.min(scores), np.max(scores))
        return np.full(shape, float(ja)), np.full(shape, float(jb))
    low, high = np.quantile(scores, [JUDGE_CLIP_QUANTILE, 1 - JUDGE_CLIP_QUANTILE], axis=-1)
    return low, high


def ppi_betting(y, yhat, yhat_rest, *, weight, bounds, judge_bounds, confidence_level: float,
                finite_population: bool = False, sequence: bool = False, tol: float = 1e-10, null=None):
    """Finite-sample (or anytime-valid) interval for the humans' mean from labelled pairs and unlabelled judge scores.

    The labelled pairs are taken in the order given, with a weight ``lam_t`` on the judge fixed (``weight`` a number:
    0 is the humans alone, 1 is PPI) or chosen from the pairs before t (``weight="tuned"``, PPI++), so every bet is
    predictable.

    ``finite_population=False`` (the population the cases were drawn from): the unlabelled scores, in a fixed
    pseudo-random order, are cut into one block per label, and step t bets on
    ``w_t = y_t - lam_t * g(yhat_t) + lam_t * mean(g over block t)``, whose mean is the humans' mean whatever the judge
    does (the labelled pairs and the blocks are independent draws), so a single betting interval at the full level
    carries the judge's own uncertainty (no union bound), and each w_t lies in
    ``[a - lam_t * r, b + lam_t * r]`` (r: the range of g). For ``"tuned"``, g clips the judge to its
    ``JUDGE_CLIP_QUANTILE`` quantiles, read off ``CLIP_HOLDOUT`` of the unlabelled cases set aside for it, and lam_t
    minimises the predicted width (:func:`_width_weights`), so the judge is used only where it narrows the interval;
    a fixed ``weight`` uses the raw scores. With fewer unlabelled cases than labels, the steps without a block have
    lam_t = 0.

    ``finite_population=True`` (the mean over exactly these cases, labels a random sample without replacement): the
    mean of every judge score is known, step t bets on ``y_t - lam_t * g(yhat_t)`` against the mean of the cases not
    yet labelled (Waudby-Smith & Ramdas 2020), and the interval is intersected with what the labels already fix, so
    it has width 0 once every case is labelled. ``sequence=True`` (confidence sequences, finite populations only)
    keeps the raw scores and PPI++'s covariance weights, tuned on the pairs before each step.

    ``bounds`` are the labels' (and theta's) ends; ``judge_bounds`` the judge scores'. Arrays may carry leading
    batch axes (labelled pairs (..., n), unlabelled scores (..., N)). Returns (low, high), or for
    ``sequence=True`` arrays with the confidence sequence after every label; with ``null`` (fixed-n only), where
    the interval leaves that value, ``(below, above)`` (as :func:`betting_interval`).
    """
    y, yhat, rest = (np.asarray(v, dtype=float) for v in (y, yhat, yhat_rest))
    a, b = map(float, bounds)
    n, n_rest = y.shape[-1], rest.shape[-1]
    if judge_bounds is None and finite_population:  # the pool is the population: its scores' range is known
        everything = np.concatenate([yhat, rest], axis=-1)
        judge_bounds = (float(everything.min()), float(everything.max()))
    alpha = 1 - confidence_level
    total = n + n_rest
    if sequence and not finite_population:
        raise ValueError("a prediction-powered confidence sequence is made for a finite population of cases.")
    uses_judge = not (isinstance(weight, (int, float)) and weight == 0) and n_rest > 0
    if not uses_judge and not finite_population:
        return betting_interval(y, a, b, confidence_level=confidence_level, theta_range=(a, b), tol=tol, null=null)
    tuned = uses_judge and weight == "tuned"
    if finite_population:
        ja, jb = map(float, judge_bounds)
        everything = np.concatenate([yhat, rest], axis=-1)
        if sequence or not tuned:
            g, g_all, g_low, g_high = yhat, everything, np.full(y.shape[:-1], ja), np.full(y.shape[:-1], jb)
        else:
            g_low, g_high = _clip_range(everything, judge_bounds)
            clip = lambda v: np.clip(v, g_low[..., None], g_high[..., None])  # noqa: E731
            g, g_all = clip(yhat), clip(everything)
        if not uses_judge:
            lam = np.zeros(y.shape)
        elif not tuned:
            lam = np.full(y.shape, float(weight))
        elif sequence:
            lam = _tuned_weights(y, g, everything.var(axis=-1), 1.0)
        else:
            lam = _width_weights(y, g, judge_var=g_all.var(axis=-1), horizon=n, alpha=alpha, bounds=(a, b),
                                 spread=g_high - g_low)
        z = y - lam * g
        lo, hi = a - lam * g_high[..., None], b - lam * g_low[..., None]
        remaining = total - np.arange(n, dtype=float)
        before = lambda v: np.concatenate([np.zeros(v.shape[:-1] + (1,)), np.cumsum(v, axis=-1)[..., :-1]], axis=-1)  # noqa: E731
        offset = (-before(y) - lam * (g_all.sum(axis=-1)[..., None] - before(g))) / remaining
        kwargs = dict(slope=total / remaining, offset=offset, confidence_level=confidence_level, theta_range=(a, b))
        if null is not None:
            known, left = y.sum(axis=-1), total - n
            below, above = betting_interval(z, lo, hi, tol=tol, null=null, **kwargs)
            return below | (null < (known + left * a) / total), above | (null > (known + left * b) / total)
        low, high = betting_sequence(z, lo, hi, **kwargs) if sequence else betting_interval(z, lo, hi, tol=tol, **kwargs)
        return _known_part(low, high, y, total, a, b, sequence)
    if n_rest >= SPLIT_MIN_RATIO * n:
        return _split_population(y, yhat, rest, weight=weight, tuned=tuned, bounds=(a, b), judge_bounds=judge_bounds,
                                 confidence_level=confidence_level, tol=tol, null=null)
    # the population estimand: one block of unlabelled scores per label
    order = np.random.default_rng(n_rest).permutation(n_rest)
    rest = rest[..., order]
    g, rest, g_low, g_high = _clipped(yhat, rest, judge_bounds, tuned)
    k = min(n, rest.shape[-1])
    blocks = np.zeros(y.shape)
    blocks[..., :k] = _block_means(rest, k)
    size = rest.shape[-1] / k
    if tuned:
        lam = _width_weights(y, g, judge_var=rest.var(axis=-1) * (1 + 1 / size), horizon=n, alpha=alpha,
                             bounds=(a, b), spread=2 * (g_high - g_low))
    else:
        lam = np.full(y.shape, float(weight))
    lam[..., k:] = 0.0
    spread = (g_high - g_low)[..., None]
    w = y - lam * g + lam * blocks
    return betting_interval(w, a - lam * spread, b + lam * spread, confidence_level=confidence_level,
                            theta_range=(a, b), tol=tol, null=null)


#: With at least this many unlabelled cases per label, the population interval splits its error rate: a share
#: ``JUDGE_MEAN_SHARE`` of it bounds the judge's mean over the population (from the unlabelled cases alone), the rest
#: bets on the labels' rectified values, whose range then widens by the judge's spread once, not twice as in one
#: block of unlabelled scores per label. The split adds the two widths, so it pays only where the judge's mean is
#: nearly known: on 1-5 scores with a judge at r = 0.9 and 10,000 cases, its label gain is 1.24 and 1.58 at 50 and
#: 100 labels against the blocks' 1.10 and 1.39, equal at 200, and below from 400 on (1.97 against 2.78).
#: Chosen from the counts alone, before any label is seen.
SPLIT_MIN_RATIO = 100
#: The share of the error rate the split interval spends on the judge's mean.
JUDGE_MEAN_SHARE = 0.1


def _split_population(y, yhat, rest, *, weight, tuned: bool, bounds, judge_bounds, confidence_level: float, tol: float,
                      null):
    """The population interval with the error rate split between the judge's mean and the rectified labels.

    The judge's population mean mu (of its clipped scores g) lies in ``[m_lo, m_hi]``, the betting interval of the
    unlabelled scores at level ``1 - share * alpha``; step t bets on ``z_t = y_t - lam_t g(yhat_t)``, whose mean is
    ``theta - lam_t mu``, each bettor taking the end of ``[m_lo, m_hi]`` least favourable to it, at level
    ``1 - (1 - share) alpha``. By the union bound the interval holds with probability at least ``confidence_level``;
    z_t lies in ``[a - lam_t g_hi, b - lam_t g_lo]``.
    """
    a, b = bounds
    alpha = 1 - confidence_level
    n_rest = rest.shape[-1]
    order = np.random.default_rng(n_rest).permutation(n_rest)
    rest = rest[..., order]
    g, rest, g_low, g_high = _clipped(yhat, rest, judge_bounds, tuned)
    judge_level = 1 - JUDGE_MEAN_SHARE * alpha
    label_level = 1 - (1 - JUDGE_MEAN_SHARE) * alpha
    if rest.shape[-1] <= BETTING_MAX_UNLABELLED:
        m_lo, m_hi = betting_interval(rest, g_low[..., None], g_high[..., None], confidence_level=judge_level,
                                      theta_range=(float(np.min(g_low)), float(np.max(g_high))))
    else:
        m_lo, m_hi = _bernstein_rows(rest, g_low, g_high, judge_level)
    if tuned:
        lam = _width_weights(y, g, judge_var=rest.var(axis=-1), horizon=y.shape[-1], alpha=1 - label_level,
                             bounds=(a, b), spread=g_high - g_low)
    else:
        lam = np.full(y.shape, float(weight))
    z = y - lam * g
    return betting_interval(z, a - lam * g_high[..., None], b - lam * g_low[..., None], offset=-lam * m_lo[..., None],
                            offset_upper=-lam * m_hi[..., None], confidence_level=label_level, theta_range=(a, b),
                            tol=tol, null=null)


def _bernstein_rows(values, low, high, level: float):
    """Empirical Bernstein intervals of each row's mean (values in [low, high] per row): a closed form where a
    betting interval over very many values would cost too much and is no tighter."""
    rows = values.reshape(-1, values.shape[-1])
    lows, highs = np.broadcast_to(low, values.shape[:-1]).ravel(), np.broadcast_to(high, values.shape[:-1]).ravel()
    ends = [empirical_bernstein_interval(row, float(lo), float(hi), level) for row, lo, hi in zip(rows, lows, highs, strict=True)]
    m_lo, m_hi = (np.array(v).reshape(values.shape[:-1]) for v in zip(*ends, strict=True))
    return m_lo, m_hi


def _clipped(yhat, rest, judge_bounds, tuned: bool):
    """The judge's scores g as the population intervals bet with them, and their range ``[g_low, g_high]``, which a
    bet must be able to rely on before any label is seen: the judge's known scale (``judge_bounds``), used as it is;
    or, for PPI++ on a judge of many distinct scores and for any judge whose scale is not known (None), the range a
    holdout of the unlabelled cases (``CLIP_HOLDOUT``, in their fixed pseudo-random order, set aside) gives, every
    other score clipped to it. Returns ``(g of the labelled cases, g of the other unlabelled cases, g_low, g_high)``."""
    shape = yhat.shape[:-1]
    n_rest = rest.shape[-1]
    hold = 0
    if judge_bounds is None or (tuned and np.unique(rest).size > 2):
        hold = max(1, min(n_rest - 1, int(round(CLIP_HOLDOUT * n_rest))))
    if hold == 0 or n_rest < 2:
        if judge_bounds is None:  # one unlabelled case: nothing to set aside; its range is its own
            judge_bounds = (float(np.min(rest)), float(np.max(rest))) if n_rest else (0.0, 0.0)
        return yhat, rest, np.full(shape, float(judge_bounds[0])), np.full(shape, float(judge_bounds[1]))
    g_low, g_high = _clip_range(rest[..., :hold], judge_bounds)
    clip = lambda v: np.clip(v, g_low[..., None], g_high[..., None])  # noqa: E731
    return clip(yhat), clip(rest[..., hold:]), g_low, g_high


def _known_part(low, high, y, total: int, a: float, b: float, sequence: bool):
    """Intersect a finite-population interval with what the labels fix: the unlabelled labels lie within [a, b]."""
    n = y.shape[-1]
    known = np.cumsum(y, axis=-1) if sequence else y.sum(axis=-1)
    left = total - (np.arange(1, n + 1) if sequence else n)
    return np.maximum(low, (known + left * a) / total), np.minimum(high, (known + left * b) / total)
