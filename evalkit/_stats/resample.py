"""The bootstrap over items: resample weights drawn as per-item counts, and percentile, studentized and BCa intervals of
statistics that are functions of sums over items."""

from __future__ import annotations

import warnings

import numpy as np

#: A bootstrap over clusters is not given with fewer clusters: its 95% interval then covers less than claimed,
#: 0.73-0.93 with 4 to 9 clusters against 0.94-0.95 with 17 and 34 (the coverage harness, clustered designs of
#: correlate.correlate).
MIN_RESAMPLED_CLUSTERS = 15


def resample_weights(n: int, n_resamples: int, rng):
    """Batches of (resamples x items) counts of how often each item occurs in each resample.

    Resample r takes the items at ``rng.integers(0, n, n, dtype=np.int32)``. Drawn here rather than through
    scipy.stats.bootstrap: 32-bit indices turned into per-item counts directly are several times faster
    at 100,000 items, and every sum over items becomes one matrix product with the counts.
    """
    batch = max(1, 5_000_000 // n)
    for start in range(0, n_resamples, batch):
        b = min(batch, n_resamples - start)
        idx = rng.integers(0, n, (b, n), dtype=np.int32).astype(np.intp) + n * np.arange(b)[:, None]
        yield np.bincount(idx.ravel(), minlength=b * n).reshape(b, n).astype(float)


def percentile_over_items(statistic, n: int, n_resamples: int, confidence_level: float, rng) -> tuple[float, float]:
    """Percentile interval of ``statistic(weights)`` over resamples of n items (see :func:`resample_weights`)."""
    dist = np.concatenate([statistic(w) for w in resample_weights(n, n_resamples, rng)])
    tail = 100 * (1 - confidence_level) / 2
    low, high = np.percentile(dist, [tail, 100 - tail], axis=0)
    return (float(low), float(high)) if dist.ndim == 1 else (low, high)


def studentized_over_items(of_sums, per_item: np.ndarray, n_resamples: int, confidence_level: float, rng):
    """Studentized (bootstrap-t) interval over items, each standard error by the jackknife over items.

    The statistic is a function of sums over items: ``of_sums(S)`` for a stack ``S`` (rows, m) of
    ``weights @ per_item``, giving (rows,) or (rows, q) for q statistics at once. For the data and for
    every resample (drawn as in :func:`resample_weights`) the jackknife leaves out one draw at a time,
    which only subtracts that item's row from the sums, so the n leave-one-out values of a resample cost
    one vectorized call. The interval is ``(theta - q_hi * se, theta - q_lo * se)`` with ``q`` the
    quantiles of ``(theta* - theta) / se*`` (Efron & Tibshirani 1993, ch. 12). Written out here because
    scipy.stats.bootstrap has no studentized method. Returns ``(low, high)``, floats or (q,) arrays; NaN
    where some resample's statistic is undefined.
    """
    n, m = per_item.shape
    total = per_item.sum(axis=0)
    theta = np.asarray(of_sums(total[None, :]), dtype=float)[0]
    loo = np.asarray(of_sums(total[None, :] - per_item), dtype=float)  # (n,) or (n, q)
    se = np.sqrt((n - 1) / n * ((loo - loo.mean(axis=0)) ** 2).sum(axis=0))
    ts = []
    q = 1 if theta.ndim == 0 else theta.shape[0]
    for weights in resample_weights(n, n_resamples, rng):
        for w in np.array_split(weights, max(1, len(weights) * n * m * q // 4_000_000)):
            sums = w @ per_item
            star = np.asarray(of_sums(sums), dtype=float).reshape(len(w), -1)
            with np.errstate(invalid="ignore", divide="ignore"):
                left = np.asarray(of_sums((sums[:, None, :] - per_item[None, :, :]).reshape(-1, m)), dtype=float)
                left = np.where((w > 0)[:, :, None], left.reshape(len(w), n, -1), 0.0)
                mean = (w[:, :, None] * left).sum(axis=1) / n
                se_star = np.sqrt((n - 1) / n * (w[:, :, None] * (left - mean[:, None, :]) ** 2).sum(axis=1))
                centred = star - np.atleast_1d(theta)
                t = np.where(centred == 0, 0.0, centred / se_star)
            ts.append(np.where(np.isnan(star), np.nan, t))
    t = np.concatenate(ts)
    tail = (1 - confidence_level) / 2
    q_low, q_high = np.quantile(t, [tail, 1 - tail], axis=0)
    undefined = np.isnan(t).any(axis=0)
    low = np.where(undefined, np.nan, np.atleast_1d(theta) - q_high * np.atleast_1d(se))
    high = np.where(undefined, np.nan, np.atleast_1d(theta) - q_low * np.atleast_1d(se))
    if theta.ndim == 0:
        return float(low[0]), float(high[0])
    return low, high


def bca_over_items(of_sums, per_item: np.ndarray, n_resamples: int, confidence_level: float, rng) -> tuple[float, float]:
    """BCa interval over items: scipy.stats.bootstrap (method="BCa") of ``of_sums(weights @ per_item)``."""
    from scipy import stats

    n = len(per_item)

    def statistic(idx, axis=-1):
        idx = np.asarray(idx, dtype=np.intp)
        flat = idx.reshape(-1, idx.shape[-1])
        rows = flat + n * np.arange(len(flat))[:, None]
        weights = np.bincount(rows.ravel(), minlength=len(flat) * n).reshape(len(flat), n).astype(float)
        values = np.asarray(of_sums(weights @ per_item))
        return values.reshape(idx.shape[:-1]) if values.ndim == 1 else values.T.reshape(-1, *idx.shape[:-1])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        res = stats.bootstrap((np.arange(n),), statistic, vectorized=True, n_resamples=n_resamples, method="BCa",
                              confidence_level=confidence_level, rng=rng, batch=max(1, 2_000_000 // n))
    low, high = res.confidence_interval
    return (float(low), float(high)) if np.ndim(low) == 0 else (np.asarray(low), np.asarray(high))
