"""A judge -> label calibration learned from labels, cross-fitted, and the prediction-powered estimate it rectifies.

Several systems (or segments) judged on the same cases share one calibration: a monotone (isotonic) map from the
judge's score to the expected label, learned from every labelled response of every system, K-fold cross-fitted by
case (all labels of one case in one fold). Each system's estimate is its mean calibrated score over its cases,
rectified by the mean residual of its own labels (label minus the out-of-fold calibrated score): cross-prediction-
powered inference (Zrnic & Candes, PNAS 2024) with a calibrated predictor, the estimate CJE's direct mode makes
(Landesberg 2025). It is unbiased for the system's mean label whatever the calibration, which only changes the width.

Written here because scikit-learn (an optional dependency) is not needed for it: the isotonic fit is
``scipy.optimize.isotonic_regression`` on the distinct scores, predicted by linear interpolation between them and
clipped at the ends, as scikit-learn's ``IsotonicRegression(out_of_bounds="clip")`` does (tested against it).
"""

from __future__ import annotations

import numpy as np

#: Folds of the cross-fitted calibration (fewer when fewer cases are labelled).
FOLDS = 5


def isotonic_fit(x, y, *, increasing: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """The isotonic regression of ``y`` on ``x`` as knots ``(distinct x, fitted value)`` (ties in x pooled)."""
    from scipy import optimize

    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    knots, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    fitted = optimize.isotonic_regression(means, weights=counts.astype(float), increasing=increasing).x
    return knots, fitted


def isotonic_predict(knots: tuple[np.ndarray, np.ndarray], x) -> np.ndarray:
    """The fitted map at ``x``: linear between the knots, constant beyond the first and last."""
    xs, fitted = knots
    return np.interp(np.asarray(x, dtype=float), xs, fitted)


def folds_of(cases: np.ndarray, k: int, seed: int = 0) -> np.ndarray:
    """Fold numbers 0..k-1 of labelled cases, whole cases to a fold, round-robin over a seeded shuffle of the
    distinct case codes (so fold sizes differ by at most one case)."""
    distinct = np.unique(cases)
    order = np.random.default_rng(seed).permutation(len(distinct))
    fold_of = np.empty(len(distinct), dtype=np.int64)
    fold_of[order] = np.arange(len(distinct)) % k
    return fold_of[np.searchsorted(distinct, cases)]


def cross_fit(f_labelled, y, cases_labelled, f_all, *, folds: int = FOLDS, increasing: bool | None = None, seed: int = 0):
    """Cross-fitted calibration: each label's out-of-fold calibrated score, and every score's calibrated value under
    each fold's model (their mean is the calibrated score). ``increasing=None`` takes the direction of the labels'
    Spearman correlation with the scores. Returns ``(out_of_fold, by_fold (k, len(f_all)), increasing, k)``."""
    f_labelled, y = np.asarray(f_labelled, dtype=float), np.asarray(y, dtype=float)
    if increasing is None:
        from scipy import stats

        rho = stats.spearmanr(f_labelled, y).statistic if len(y) > 2 and np.ptp(y) > 0 and np.ptp(f_labelled) > 0 else 0.0
        increasing = not (np.isfinite(rho) and rho < 0)
    k = int(min(folds, len(np.unique(cases_labelled))))
    fold = folds_of(np.asarray(cases_labelled), k, seed)
    out_of_fold = np.empty(len(y))
    by_fold = np.empty((k, len(f_all)))
    for j in range(k):
        train = fold != j
        knots = isotonic_fit(f_labelled[train], y[train], increasing=increasing)
        out_of_fold[~train] = isotonic_predict(knots, f_labelled[~train])
        by_fold[j] = isotonic_predict(knots, f_all)
    return out_of_fold, by_fold, increasing, k


def calibrated_ppi(systems, cases, f, y, *, n_systems: int, folds: int = FOLDS, increasing: bool | None = None,
                   tuned: bool = True, seed: int = 0) -> dict:
    """The cross-fitted calibrated PPI of several systems judged on shared cases: what every estimate and contrast
    needs, per row (one row per system and case).

    ``systems`` and ``cases`` are integer codes, ``f`` the judge's scores, ``y`` the labels (NaN: unlabelled). Returns
    a dict: ``calibrated`` (every row's calibrated score), ``residual`` (label minus out-of-fold calibrated score,
    NaN unlabelled), ``labelled``, the per-system ``n`` (labels), ``rows`` (cases), ``pred_mean``, ``resid_mean`` and
    ``estimate`` (= pred_mean + resid_mean; the calibrated mean alone where a system has no label), and the
    calibration's ``increasing`` and ``folds``.

    ``tuned``: each system's calibrated score enters with a weight lam_s in [0, 1] (PPI++'s power tuning, Angelopoulos,
    Duchi & Zrnic 2023, for this estimate, whose calibrated mean runs over every case, the labelled ones included: the
    variance ``lam^2 V (1/n - 1/N) - 2 lam C (1/n - 1/N) + Var(label) / n`` is least at ``lam = C / V``, ``C`` the
    covariance of the labels with their out-of-fold calibrated scores, ``V`` the variance of the calibrated scores
    over the system's cases; PPI++'s ``1 + n / N`` belongs to a mean over the unlabelled cases only), so that a judge
    that tells little about a system's labels costs little over its labels alone (1 for a system whose labels are thin
    at their end, see ``_thin_ends``: there its own labels cannot measure it); ``lam`` holds them. Calibrated
    scores and residuals are then ``lam * g`` and ``label - lam * g``.
    """
    systems, cases = np.asarray(systems), np.asarray(cases)
    f, y = np.asarray(f, dtype=float), np.asarray(y, dtype=float)
    labelled = ~np.isnan(y)
    out_of_fold, by_fold, increasing, k = cross_fit(f[labelled], y[labelled], cases[labelled], f, folds=folds,
                                                    increasing=increasing, seed=seed)
    rows = np.bincount(systems, minlength=n_systems).astype(float)
    n = np.bincount(systems[labelled], minlength=n_systems).astype(float)
    unweighted = by_fold.mean(axis=0)
    against_calibration = np.full(len(y), np.nan)  # label minus out-of-fold calibrated score: the transport check's
    against_calibration[labelled] = y[labelled] - out_of_fold
    thin, pooled_off, floor, floor_labels = _thin_ends(systems[labelled], y[labelled], out_of_fold, n_systems)
    lam = _weights(systems, labelled, y, out_of_fold, unweighted, n, rows, n_systems) if tuned else np.ones(n_systems)
    lam[thin] = 1.0  # its labels are too thin at their end to measure lam (a label column of one value says lam = 0)
    by_fold = by_fold * lam[systems][None, :]
    out_of_fold = out_of_fold * lam[systems[labelled]]
    calibrated = by_fold.mean(axis=0)
    residual = np.full(len(y), np.nan)
    residual[labelled] = y[labelled] - out_of_fold
    with np.errstate(invalid="ignore", divide="ignore"):
        pred_mean = np.bincount(systems, weights=calibrated, minlength=n_systems) / rows
        resid_mean = np.bincount(systems[labelled], weights=residual[labelled], minlength=n_systems) / n
    estimate = pred_mean + np.where(n > 0, resid_mean, 0.0)
    # each fold model's own estimate (its calibration for every score, its residuals for every label): the
    # delete-one-fold jackknife of the calibration's uncertainty
    with np.errstate(invalid="ignore", divide="ignore"):
        jack = (np.stack([np.bincount(systems, weights=g, minlength=n_systems) for g in by_fold]) / rows
                + np.where(n > 0, np.stack([np.bincount(systems[labelled], weights=y[labelled] - g[labelled],
                                                        minlength=n_systems) for g in by_fold]) / n, 0.0))
    with np.errstate(invalid="ignore", divide="ignore"):
        label_mean = np.bincount(systems[labelled], weights=y[labelled], minlength=n_systems) / n
    return {"calibrated": calibrated, "residual": residual, "labelled": labelled, "n": n, "rows": rows, "jackknife": jack,
            "label_mean": label_mean,
            "pred_mean": pred_mean, "resid_mean": np.where(n > 0, resid_mean, np.nan), "estimate": estimate,
            "increasing": increasing, "folds": k, "systems": systems, "cases": cases, "lam": lam, "tuned": tuned,
            "calibrated_mean": np.bincount(systems, weights=unweighted, minlength=n_systems) / rows,
            "against_calibration": against_calibration, "thin": thin, "pooled_off": pooled_off, "floor": floor,
            "floor_labels": floor_labels}


#: The calibrated t needs this many of a system's labels off the end of the labels' range where most of them lie (the
#: rarer class of 0/1 labels; on a scale of more levels, labels not at its end): the textbook rule for the normal
#: approximation of a rate, n p >= 5 and n (1 - p) >= 5, for both. A system below it is "thin at its end": its own
#: residuals understate their spread, so their variance is floored (``_thin_ends``, ``_floor_added``); where every
#: system's labels together are below it too, nothing can measure the spread and the row is the humans-only interval
#: that holds at any n (``evalkit.infer.systems``). Measured (``python benchmarks/bench_systems.py --design pass-fail``
#: and ``--design summeval-consistency-1``): without the floor the calibrated t covered 0.47-0.93 on 0/1 labels at 3%
#: or 97% with 20-200 labels per system, the draws that missed holding no label or one or two of the rarer class;
#: SummEval consistency as one system (1-5, mean 4.6) at 30 labels covered 0.79 and 0.86 in the draws with 3 and 4
#: labels off the top (0.925 in all, 400 draws) when the rule for a scale was 3.
MIN_OFF_END = 5


def _thin_ends(systems, y, g, n_systems: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per system: whether its labels are thin at their end (fewer than ``MIN_OFF_END`` off the end of the pooled
    labels' range nearer their mean), how many of every system's labels are off that same end, and two floors on the
    variance of one of its residuals.

    ``floor`` is a variance model fitted on every label: ``Var(label | score) = kappa (g - lo) (hi - g)`` with ``g``
    the out-of-fold calibrated score, ``lo, hi`` the pooled labels' range and ``kappa`` the pooled ratio of squared
    residuals to ``(g - lo) (hi - g)`` (1 for 0/1 labels whose calibration is right; the Bhatia-Davis bound is
    ``kappa = 1``), averaged over the system's labelled cases. A residual ``label - lam g`` has at least this variance
    whatever ``lam``, where the calibration holds for the system. ``floor_labels`` (thin systems only) reads the
    system's own labels by Laplace's rule of succession: with ``k`` of its ``n`` labels off the end, the share
    ``p = (k + 1) / (n + 2)`` off it at the nearest step ``d`` from the end among the pooled labels, ``p (1 - p) d^2``;
    it holds where the calibration does not (a judge whose scores mean less for this system), which a thin
    system's labels cannot check. Only the labels and scores enter, never ``bounds``.
    """
    systems, y, g = np.asarray(systems), np.asarray(y, dtype=float), np.asarray(g, dtype=float)
    thin = np.zeros(n_systems, dtype=bool)
    pooled_off = np.zeros(n_systems, dtype=np.int64)
    floor = np.zeros(n_systems)
    floor_labels = np.zeros(n_systems)
    if not len(y) or np.ptp(y) == 0:  # every label at one value: nothing measures the spread
        thin[np.unique(systems)] = True
        return thin, pooled_off, floor, floor_labels
    lo, hi = float(y.min()), float(y.max())
    spread = np.clip(g - lo, 0, None) * np.clip(hi - g, 0, None)
    kappa = float(np.sum((y - g) ** 2) / np.sum(spread)) if np.sum(spread) > 0 else 0.0
    for s in range(n_systems):
        own = systems == s
        if not own.any():
            continue
        near = lo if y[own].mean() - lo < hi - y[own].mean() else hi
        off = int(np.sum(y[own] != near))
        thin[s] = off < MIN_OFF_END
        pooled_off[s] = int(np.sum(y != near))
        floor[s] = kappa * float(spread[own].mean())
        if thin[s]:
            share = (off + 1) / (own.sum() + 2)
            floor_labels[s] = share * (1 - share) * float(np.min(np.abs(y[y != near] - near))) ** 2
    return thin, pooled_off, floor, floor_labels


def _weights(systems, labelled, y, out_of_fold, calibrated, n, rows, n_systems) -> np.ndarray:
    """Each system's PPI++ weight on its calibrated scores, in [0, 1] (1 where it has fewer than 3 labels)."""
    lam = np.ones(n_systems)
    for s in range(n_systems):
        own = systems[labelled] == s
        if own.sum() < 3:
            continue
        g_all = calibrated[systems == s]
        var = np.var(g_all, ddof=1) if len(g_all) > 1 else 0.0
        cov = np.cov(y[labelled][own], out_of_fold[own])[0, 1]
        if var > 0 and np.isfinite(cov):
            lam[s] = float(np.clip(cov / var, 0.0, 1.0))
        else:
            lam[s] = 0.0
    return lam


#: Pseudo-residuals, this weight each, at the two ends of the label scale join every system's residuals (with a known
#: scale): a small-sample guard against labels that have not yet shown one end of the scale (a system whose labels
#: are almost all 5 on a 1-5 scale), whose residuals then understate their spread. It shrinks the correction toward
#: the middle of the scale by a twentieth of a label's weight, and vanishes as labels grow. On SummEval (6 systems x
#: 100 documents, 20-50 labels per system, 300 draws) it moved the 95% intervals of the skewed consistency scores from
#: 0.93-0.94 to 0.96-0.98 coverage at 1.01-1.05x the width of CJE's.
PSEUDO_WEIGHT = 0.05


def contrast_variance(fit: dict, weights: np.ndarray, *, bounds=None, pseudo: float = PSEUDO_WEIGHT
                      ) -> tuple[float, float, float]:
    """Estimate, variance and Welch-Satterthwaite degrees of freedom of ``sum_s weights[s] * theta_s``.

    The influence of case p is ``sum_s w_s [(g_sp - mean_s g) / rows_s + labelled_sp (r_sp - mean_s r) / n_s]``; its
    two parts are summed over cases separately, the calibrated scores' with G / (G - 1) (G: the contrast's cases) and
    the residuals' with n / (n - 1) (n: the fewest labels of a system in the contrast), plus their cross term: the
    cluster-robust (by case) variance of the estimate, shared cases counted once, so a paired difference keeps the
    cases' covariance; and the delete-one-fold jackknife of the calibration (CJE's oracle jackknife), the calibration's
    own uncertainty. The degrees of freedom weigh G - 1, n - 1 and folds - 1 by their parts' shares. With ``bounds``
    (the label scale), each system's residuals take ``pseudo`` pseudo-residuals at each end (see ``PSEUDO_WEIGHT``).
    """
    w = np.asarray(weights, dtype=float)
    s, c = fit["systems"], fit["cases"]
    involved = w[s] != 0
    rows, n = fit["rows"], fit["n"]
    with np.errstate(invalid="ignore", divide="ignore"):
        a = w[s] * (fit["calibrated"] - fit["pred_mean"][s]) / rows[s]
        lab = fit["labelled"] & involved
        b = np.where(lab, w[s] * (fit["residual"] - fit["resid_mean"][s]) / n[s], 0.0)
    codes, case_index = np.unique(c[involved], return_inverse=True)
    g = len(codes)
    per_a = np.bincount(case_index, weights=a[involved], minlength=g)
    per_b = np.bincount(case_index, weights=b[involved], minlength=g)
    n_min = float(np.min(n[w != 0])) if np.any(w != 0) else 0.0
    # the residual part's degrees of freedom are those of the system with the fewest labels, less the mean and the
    # weight lam where it was fitted (a system thin at its end has lam = 1, not fitted)
    fewest = (w != 0) & (n == n_min)
    fitted = 2.0 if fit.get("tuned") and not fit["thin"][fewest].all() else 1.0
    v_pred = g / (g - 1) * float(np.dot(per_a, per_a)) if g > 1 else np.nan
    v_res = n_min / (n_min - fitted) * float(np.dot(per_b, per_b)) if n_min > fitted else np.nan
    v_cross = 2 * float(np.dot(per_a, per_b))
    jack = fit["jackknife"] @ w
    k = len(jack)
    v_cal = (k - 1) / k * float(np.sum((jack - jack.mean()) ** 2)) if k > 1 else 0.0
    shift, v_pseudo = (_pseudo_residuals(fit, w, bounds, pseudo) if bounds is not None and pseudo > 0
                       and n_min > 0 else (0.0, 0.0))
    v_res += v_pseudo + _floor_added(fit, w, bounds, pseudo)
    variance = v_pred + v_res + v_cross + v_cal
    df = np.nan
    if g > 1 and n_min > fitted:
        parts = v_pred**2 / (g - 1) + v_res**2 / (n_min - fitted) + (v_cal**2 / (k - 1) if k > 1 else 0.0)
        df = (v_pred + v_res + v_cal) ** 2 / parts if parts > 0 else float(n_min - fitted)
    return float(np.dot(w, fit["estimate"])) + shift, max(variance, 0.0), float(df)


def _residual_mean(fit: dict, s: int, bounds, pseudo: float) -> tuple[float, float, float, float] | None:
    """A system's mean residual, that mean with ``pseudo`` pseudo-residuals at each end of the scale (``a - mean
    label`` and ``b - mean label``; without ``bounds`` or with ``pseudo = 0``, the same), and the variances of the
    two means; None below 2 labels."""
    r = fit["residual"][(fit["systems"] == s) & fit["labelled"]]
    n = len(r)
    if n < 2:
        return None
    plain = np.var(r, ddof=1) / n
    if bounds is None or pseudo <= 0:
        return r.mean(), r.mean(), plain, plain
    ends = np.array(bounds, dtype=float) - (fit["label_mean"][s] - r.mean())  # a label at either end, less its prediction
    m = (r.sum() + pseudo * ends.sum()) / (n + 2 * pseudo)
    v = (np.sum((r - m) ** 2) + pseudo * np.sum((ends - m) ** 2)) / (n + 2 * pseudo - 1) / (n + 2 * pseudo)
    return r.mean(), m, plain, v


def _pseudo_residuals(fit: dict, w: np.ndarray, bounds, pseudo: float) -> tuple[float, float]:
    """The shift of the estimate and the added variance from ``pseudo`` pseudo-residuals at each end of the scale
    among each system's residuals."""
    shift = added = 0.0
    for s in np.flatnonzero(w):
        found = _residual_mean(fit, s, bounds, pseudo)
        if found is None:
            continue
        plain_mean, mean, plain, variance = found
        shift += w[s] * (mean - plain_mean)
        added += w[s] ** 2 * (variance - plain)
    return shift, added


def _floor_added(fit: dict, w: np.ndarray, bounds, pseudo: float) -> float:
    """The variance added where the residual variance of the contrast's thin systems (``_thin_ends``) is below their
    floor: ``sum_s w_s^2 floor_s / n_s - sum_s w_s^2 own_s`` when positive, ``own_s`` a system's residuals' variance of
    the mean (with the pseudo-residuals).

    For a mean (weights not summing to 0), ``floor_s`` is the larger of the pooled variance model's and the system's
    own labels' (Laplace's rule of succession): a thin system's labels cannot check that the calibration holds for it,
    and on 0/1 labels at 1% beside a system at 9% (100 labels each) its mean covered 0.87 on the model's floor alone.

    A paired difference on a known scale takes none: the pseudo-residuals at the scale's ends are its guard. A floor
    added to it made the differences of 0/1 labels at 3% and 97% (6 systems, 20-50 labels each) 1.09-1.25x CJE's
    width where they held without it (``python benchmarks/bench_systems.py --design pass-fail``), and without it six
    systems from 1% to 9%, whose rarer systems often show no rare label, cover 0.96-0.98 at 20-200 labels
    (``python benchmarks/bench_coverage.py --function infer.system_differences --design 6-systems-far-apart``).
    Without a scale there are no pseudo-residuals, and a difference keeps the model's floor: without it, SummEval
    consistency's differences (1-5, mostly 5, 6 systems on their own documents) covered 0.92-0.94 at 20-100 labels
    over 100 draws, against 0.96-0.97 with it. The floor then holds for the thin systems together, not for each: each
    system's own variance is noisy, and flooring each would add the shortfalls of some without the excess of others."""
    difference = np.isclose(np.sum(w), 0.0)
    if difference and bounds is not None and pseudo > 0:
        return 0.0
    need = have = 0.0
    for s in np.flatnonzero(w):
        own = _residual_mean(fit, s, bounds, pseudo) if fit["thin"][s] else None
        if own is None:
            continue
        floor = fit["floor"][s] if difference else max(fit["floor"][s], fit["floor_labels"][s])
        have += w[s] ** 2 * own[3]
        need += w[s] ** 2 * floor / fit["n"][s]
    return max(0.0, need - have)
