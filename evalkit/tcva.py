"""Temperature-controlled verdict aggregation (TCVA).

Each claim of an item carries a verdict weight ``w`` in [0, 1]. An item's score at temperature ``T`` is

.. math::

    \\mathrm{score}_T = M_{p(T)}(w) \\cdot (1 - n_0 / n)^{1.5 - T}, \\qquad
    p(T) = -8 + \\frac{T - 0.1}{0.9} \\cdot 20.25

where :math:`M_p` is the power mean, :math:`n` the number of claims and :math:`n_0` the number of
claims whose weight is 0 (the ``none`` verdicts under every shipped scale; under ``binary`` also
``partial`` and ``minor``). Low T is strict (p -> -8, close to the minimum), T = 0.5 is the arithmetic
mean, high T is lenient (p -> 12.25). For p < 0 the weights are clamped to ``eps`` first, and
``|p| < 1e-12`` uses the geometric mean, exactly as the reference implementation does.

Because a scale has five weights, an item is fully described by its five level counts: :func:`sweep`
counts once and then scores every temperature with one (items x 5) @ (5 x temperatures) product.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalkit import _dask
from evalkit import verdicts as _verdicts
from evalkit._validation import check_number, check_option, warn

__all__ = ["power_mean", "temperature_to_p", "p_to_temperature", "score", "sweep"]

T_MIN, T_MAX = 0.1, 1.0
P_MIN, P_SPAN = -8.0, 20.25


def power_mean(x, p, *, axis=-1, weights=None, nan_policy="propagate"):
    """Weighted power (generalized) mean of non-negative values.

    Computed in log space, ``exp(log(sum(w * x**p) / sum(w)) / p)``, so large ``|p|`` neither
    overflows nor underflows. Agrees with :func:`scipy.stats.pmean` for finite non-zero ``p`` and
    extends it to the limits: ``p = 0`` is the geometric mean, ``p = inf`` the maximum and
    ``p = -inf`` the minimum; with ``p <= 0`` a zero among the values gives 0 (the limit), without the
    division-by-zero warning.

    Parameters
    ----------
    x : array_like
        Non-negative values.
    p : float
        The exponent (any real, or ``±inf``).
    axis : int or None, default -1
        Axis along which to average; ``None`` flattens.
    weights : array_like, optional
        Non-negative weights broadcastable to ``x``; default equal weights.
    nan_policy : {"propagate", "omit", "raise"}, default "propagate"
        ``"propagate"``: a NaN in a slice makes its mean NaN. ``"omit"``: NaNs (and their weights) are
        left out; an all-NaN slice gives NaN. ``"raise"``: a NaN raises ValueError.

    Returns
    -------
    float or ndarray
        A mean that is NaN (by ``nan_policy``, or a slice with no value of positive weight) comes with an
        :class:`~evalkit.EvalkitWarning` counting them.

    Examples
    --------
    >>> from evalkit.tcva import power_mean
    >>> float(power_mean([1.0, 0.9, 0.7], 1))
    0.8666...
    >>> [round(float(power_mean([1.0, 0.9, 0.7], p)), 3) for p in (-10, -5, 0, 5, 10)]
    [0.773, 0.809, 0.857, 0.899, 0.925]
    """
    check_option(nan_policy, ("propagate", "omit", "raise"), "nan_policy")
    if isinstance(p, bool) or not isinstance(p, (int, float, np.integer, np.floating)):
        raise TypeError(f"`p` must be a number or ±inf; got {type(p).__name__}.")
    p = float(p)
    if np.isnan(p):
        raise ValueError("`p` must be a number or ±inf; got NaN.")
    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise TypeError("`x` must be an array of non-negative numbers; got values that are not numbers.") from None
    if np.isinf(x).any():
        raise ValueError("`x` must hold finite non-negative numbers; got inf.")
    if axis is None:
        x, axis = x.ravel(), -1
        if weights is not None:
            weights = np.broadcast_to(np.asarray(weights, dtype=float), x.shape).ravel()
    w = np.ones_like(x) if weights is None else np.broadcast_to(np.asarray(weights, dtype=float), x.shape)
    if (w < 0).any() or np.isnan(w).any():
        raise ValueError("`weights` must be non-negative numbers.")
    nan = np.isnan(x)
    if nan.any():
        if nan_policy == "raise":
            raise ValueError("`x` contains NaN (nan_policy='raise').")
    if (x[~nan] < 0).any():
        raise ValueError(f"`x` must be non-negative; got a minimum of {np.nanmin(x)!r}.")
    if nan_policy == "omit":
        w = np.where(nan, 0.0, w)
        x = np.where(nan, 1.0, x)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        total = w.sum(axis=axis)
        if np.isinf(p):
            filled = np.where(w > 0, x, -np.inf if p > 0 else np.inf)
            out = filled.max(axis=axis, initial=-np.inf) if p > 0 else filled.min(axis=axis, initial=np.inf)
            if nan_policy != "omit":
                out = np.where(nan.any(axis=axis), np.nan, out)
            out = np.where(total > 0, out, np.nan)
        else:
            logx = np.log(x)
            if p == 0:
                out = np.exp(np.sum(np.where(w > 0, w * logx, 0.0), axis=axis) / total)
            else:
                plog = np.where(w > 0, p * logx, -np.inf if p > 0 else np.inf)
                finite = np.abs(plog[np.isfinite(plog)])
                if finite.size == 0 or finite.max() <= 1.0:
                    # Small |p log x|: expm1/log1p keep full precision as p -> 0 (the geometric limit).
                    mean = np.sum(np.where(w > 0, w * np.expm1(plog), 0.0), axis=axis) / total
                    out = np.exp(np.log1p(mean) / p)
                else:
                    # Large |p log x|: log-sum-exp avoids overflow of x**p.
                    from scipy.special import logsumexp  # imported here: the sweep never needs it

                    lse = logsumexp(np.where(w > 0, p * logx, -np.inf), b=w, axis=axis)
                    out = np.exp((lse - np.log(total)) / p)
            out = np.where(total > 0, out, np.nan)
    undefined = int(np.isnan(out).sum())
    if undefined:
        warn(f"{undefined} of {np.size(out)} power mean(s) are NaN: their slice holds NaN "
             f"(nan_policy={nan_policy!r}) or no value with a positive weight.")
    return out[()] if isinstance(out, np.ndarray) else out


def _check_temperatures(temperatures, name: str = "temperatures") -> np.ndarray:
    try:
        t = np.atleast_1d(np.asarray(temperatures, dtype=float))
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a number or a 1-D sequence of numbers; got {temperatures!r}.") from None
    if t.ndim != 1 or t.size == 0:
        raise ValueError(f"`{name}` must be a number or a non-empty 1-D sequence of numbers; got {temperatures!r}.")
    bad = np.isnan(t) | (t < T_MIN) | (t > T_MAX)
    if bad.any():
        raise ValueError(
            f"`{name}` must lie in [{T_MIN}, {T_MAX}]; got {float(t[bad][0])!r}. (The reference implementation "
            "clips silently; evalkit refuses, because a temperature outside the range is usually a mistake.)"
        )
    return t


def temperature_to_p(temperature, *, check: bool = True):
    """Map temperature(s) in [0.1, 1.0] to the power-mean exponent ``p = -8 + (T - 0.1) / 0.9 * 20.25``.

    ``check=False`` evaluates the formula outside [0.1, 1] too (e.g. for a plot's secondary axis); by
    default a temperature outside the range raises.

    Examples
    --------
    >>> from evalkit.tcva import temperature_to_p
    >>> float(temperature_to_p(0.5)), float(temperature_to_p(0.1)), float(temperature_to_p(1.0))
    (1.0, -8.0, 12.25)
    """
    if not check:
        return P_MIN + (np.asarray(temperature, dtype=float) - T_MIN) / (T_MAX - T_MIN) * P_SPAN
    scalar = np.ndim(temperature) == 0
    p = temperature_to_p(_check_temperatures(temperature, "temperature"), check=False)
    return float(p[0]) if scalar else p


def p_to_temperature(p):
    """Inverse of :func:`temperature_to_p` (no range check; used for secondary plot axes).

    Examples
    --------
    >>> from evalkit.tcva import p_to_temperature
    >>> float(p_to_temperature(1.0))
    0.5
    """
    try:
        p = np.asarray(p, dtype=float)
    except (TypeError, ValueError):
        raise TypeError(f"`p` must be a number or an array of numbers; got {p!r}.") from None
    if np.isnan(p).any():
        raise ValueError("`p` must be a number or ±inf; got NaN.")
    return T_MIN + (p - P_MIN) / P_SPAN * (T_MAX - T_MIN)


def _round_exact(values: np.ndarray, decimals: int) -> None:
    """Round in place as Python's ``round`` does, which is how the reference stores its scores.

    ``numpy.round`` scales by ``10**decimals`` first, so a value such as 0.54375 (stored in binary as
    0.54374999...) rounds up to 0.5438, while the correctly rounded result is 0.5437. numpy does the
    bulk; the few values within a hair of a tie are redone with Python's exact decimal rounding.
    """
    scaled = values * 10.0**decimals
    ties = np.nonzero(np.abs(np.abs(scaled - np.trunc(scaled)) - 0.5) < 1e-6)
    originals = values[ties]
    np.round(values, decimals, out=values)
    values[ties] = [round(float(v), decimals) for v in originals]


def sweep(
    verdicts: pd.DataFrame,
    temperatures,
    *,
    items=None,
    scale="default",
    none_penalty: bool = True,
    eps: float = 1e-9,
    empty: float = 0.0,
    p=None,
    decimals: int | None = None,
    presorted: bool = False,
) -> pd.DataFrame:
    """Score every item at every temperature.

    Parameters
    ----------
    verdicts : DataFrame
        Claim-verdict table (``item_id``, ``verdict``, optional ``claim_idx``); see
        :func:`evalkit.verdicts.validate`.
    temperatures : float or sequence of float
        Temperatures in [0.1, 1.0]; they name the output columns. One within 1e-12 of a number of 10 decimals is
        that number (floating-point noise), so the column of ``np.linspace(0.1, 0.9, 9)``'s third temperature is
        ``scores[0.3]``.
    items : Index, DataFrame or list-like, optional
        Every item to score, including those without claims (scored ``empty``); the output follows
        its order. Default: the items in ``verdicts``. A table with an ``error`` column (as
        :func:`evalkit.datasets.load_tcva_release` gives) marks failed runs: an item whose ``error`` is not missing
        was never judged, so it scores NaN at every temperature (never ``empty``), with an
        :class:`~evalkit.EvalkitWarning` that counts them and names the first few.
    scale : str or mapping, default "default"
        Verdict weights; see :func:`evalkit.verdicts.get_scale`.
    none_penalty : bool, default True
        Multiply by ``(1 - n_zero / n) ** (1.5 - T)``; False for the ablation without it.
    eps : float, default 1e-9
        Zero weights are clamped to ``eps`` (> 0) when ``p < 0``.
    empty : float, default 0.0
        Score of an item with no claims (the reference gives 0.0); pass ``np.nan`` to mark them.
    p : float, optional
        Use this exponent at every temperature instead of ``p(T)`` (the penalty still uses ``T``);
        ``p=1`` is the paper's "arithmetic mean" ablation.
    decimals : int, optional
        Round the scores, e.g. ``4`` as the reference stores them. Default: full precision.
    presorted : bool, default False
        The claims are in ascending order of ``item_id`` (checked); a dask table is then scored without a
        shuffle. See :func:`evalkit.verdicts.level_counts`.

    Returns
    -------
    DataFrame
        Index ``item_id``, one float column per temperature (columns named by T).

        A dask ``verdicts`` gives a lazy dask DataFrame, partitioned as
        :func:`evalkit.verdicts.level_counts` partitions its counts, whose ``.compute()`` equals this function
        on the whole table, float for float: each partition's counts are scored by the kernel that scores the
        whole table, and an item's score depends on its counts alone. ``items`` stays a pandas list-like. An
        empty dask table gives an empty result (pandas raises).

    Notes
    -----
    Verdicts given as strings (e.g. read from a CSV) are coded on every call: one hash of each label, on every
    core, so that a sweep of string verdicts takes about 1.6 times that of the same verdicts as a categorical on
    two cores (``benchmarks/bench_sweep.py``). A table swept many times is cheaper validated once:
    :func:`evalkit.verdicts.validate` returns its verdicts as a categorical, whose codes are read for free.

    Examples
    --------
    >>> from evalkit import datasets, tcva
    >>> demo = datasets.load_demo("tcva")
    >>> verdicts, items = demo["verdicts"], demo["items"]
    >>> scores = tcva.sweep(verdicts, [0.2, 0.5, 0.9], items=items)
    >>> scores.shape
    (120, 3)
    >>> bool((scores[0.2] <= scores[0.9]).all())
    True
    """
    t, weights, options = _sweep_options(temperatures, scale=scale, none_penalty=none_penalty, eps=eps, empty=empty,
                                         p=p, decimals=decimals)
    counts = _verdicts.level_counts(verdicts, items=items, presorted=presorted)
    failed = _failed_items(items)
    if _dask.is_dask(counts):
        meta = pd.DataFrame(np.empty((0, len(t))), index=counts._meta.index, columns=pd.Index(t, name="temperature"))
        return counts.map_partitions(_sweep_counts, t, weights, meta=meta, failed=failed, **options)
    if counts.empty:
        raise ValueError("`verdicts` is empty and no `items` were given: there is nothing to score.")
    return _sweep_counts(counts, t, weights, failed=failed, **options)


def _failed_items(items) -> pd.Index | None:
    """The items of an ``items`` table whose run failed (a non-missing ``error``), said in a warning; else None."""
    if not isinstance(items, pd.DataFrame) or "error" not in items.columns:
        return None
    failed = items.index[items["error"].notna().to_numpy()]
    if len(failed) == 0:
        return None
    warn(f"{len(failed)} of the {len(items)} items have an `error` (a failed run), e.g. {failed[:3].tolist()}: they "
         "score NaN, not a score (a correlation leaves them out).")
    return failed


def _sweep_options(temperatures, *, scale, none_penalty, eps, empty, p, decimals) -> tuple[np.ndarray, np.ndarray, dict]:
    """sweep's arguments, checked: the temperatures, the scale's weights and the kernel's options."""
    t = _check_temperatures(temperatures)
    clean = np.round(t, 10)
    t = np.where(np.abs(t - clean) < 1e-12, clean, t)  # np.linspace's 0.30000000000000004 names column 0.3
    eps = check_number(eps, "eps", low=0.0, high=1.0)
    if eps == 0.0:
        raise ValueError("`eps` must be in (0, 1]: a zero weight raised to p < 0 is infinite, so every item with a "
                         "'none' claim would score NaN; got 0.0.")
    if not (isinstance(empty, (float, np.floating)) and np.isnan(empty)):
        check_number(empty, "empty")
    if p is not None:
        p = check_number(p, "p")
    weights = _verdicts.get_scale(scale).to_numpy()
    decimals = None if decimals is None else check_number(decimals, "decimals", low=0, integer=True)
    return t, weights, {"none_penalty": none_penalty, "eps": eps, "empty": empty, "p": p, "decimals": decimals}


def _sweep_counts(counts: pd.DataFrame, t: np.ndarray, weights: np.ndarray, *, failed=None, **options) -> pd.DataFrame:
    """The scores table from a level-count table (:func:`evalkit.verdicts.level_counts`), on checked arguments;
    the ``failed`` items (an Index, or None) score NaN.

    An item's score depends only on its five level counts, and items share count vectors (at most
    42,504 distinct ones for up to 19 claims): the distinct vectors are scored, then handed back out.
    """
    if counts.empty:  # a dask partition without items
        return pd.DataFrame(np.empty((0, len(t))), index=counts.index, columns=pd.Index(t, name="temperature"))
    distinct, inverse = _distinct_rows(counts[list(_verdicts.LEVELS)].to_numpy(dtype=np.int64))
    out = np.take(_scores_from_counts(distinct, t, weights, **options), inverse, axis=1)  # (temperatures, items)
    if failed is not None:
        out[:, counts.index.isin(failed)] = np.nan
    return pd.DataFrame(out.T, index=counts.index, columns=pd.Index(t, name="temperature"), copy=False)


def _distinct_rows(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct rows of a non-negative (items, 5) count array and each item's row among them.

    Rows are packed into one int64 key (base = largest count + 1) and factorized by hashing; when the
    key would overflow (an item with thousands of claims), ``np.unique`` over the rows does it instead.
    """
    base = int(counts.max(initial=0)) + 1
    if base ** counts.shape[1] >= 2**63:
        distinct, inverse = np.unique(counts, axis=0, return_inverse=True)
        return distinct, inverse.ravel()
    key = counts[:, 0].copy()
    for j in range(1, counts.shape[1]):
        key *= base
        key += counts[:, j]
    inverse, keys = pd.factorize(key)
    distinct = np.empty((len(keys), counts.shape[1]), dtype=np.int64)
    for j in range(counts.shape[1] - 1, -1, -1):
        keys, distinct[:, j] = np.divmod(keys, base)
    return distinct, inverse


def _scores_from_counts(counts: np.ndarray, t: np.ndarray, weights: np.ndarray, *, none_penalty: bool, eps: float,
                        empty: float, p: float | None, decimals: int | None) -> np.ndarray:
    """Scores (temperatures, rows) from level counts (rows, 5): the sweep's kernel, on checked arguments."""
    c = counts.astype(float)
    n = c.sum(axis=1)
    exps = np.full_like(t, p) if p is not None else temperature_to_p(t, check=False)
    geometric = np.abs(exps) < 1e-12
    # (5, temperatures): w**p with zeros clamped to eps where p < 0; log weights for the geometric branch.
    clamped = np.where(exps[None, :] < 0, np.maximum(weights[:, None], eps), weights[:, None])
    with np.errstate(divide="ignore"):
        powered = np.where(geometric[None, :], np.log(np.maximum(clamped, eps)), clamped ** np.where(geometric, 1.0, exps)[None, :])

    # (temperatures, rows): sum over claims of w**p (or of log w), level by level in a fixed order, so that a row's
    # score never depends on the other rows beside it (a matrix product may sum in another order for another shape)
    out = np.zeros((len(t), len(c)))
    for level in range(c.shape[1]):
        out += powered[level][:, None] * c[:, level][None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        out /= n[None, :]
        for j, (e, geo) in enumerate(zip(exps, geometric, strict=True)):
            row = out[j]
            if geo:
                np.exp(row, out=row)
            else:
                np.power(row, 1.0 / e, out=row)
        if none_penalty:
            base = 1.0 - (c @ (weights == 0.0).astype(float)) / n
            for j, temp in enumerate(t):
                out[j] *= base ** (1.5 - temp)
    out[:, n == 0] = empty
    if decimals is not None:
        _round_exact(out, decimals)
    return out


def score(verdicts: pd.DataFrame, temperature: float, **options) -> pd.Series:
    """Score every item at one temperature.

    Takes the same options as :func:`sweep` (``items``, ``scale``, ``none_penalty``, ``eps``,
    ``empty``, ``p``, ``decimals``, ``presorted``).

    Returns
    -------
    Series
        Indexed by ``item_id``, named by the temperature.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import tcva
    >>> table = pd.DataFrame({"item_id": ["a"] * 3, "verdict": ["fully", "mostly", "partial"]})
    >>> round(float(tcva.score(table, 0.5)["a"]), 4)
    0.8667
    >>> round(float(tcva.score(table, 0.1)["a"]), 4)  # strict: close to the weakest claim
    0.7856
    """
    if np.ndim(temperature) != 0:
        raise TypeError(f"`temperature` must be a single number (use sweep for several); got {temperature!r}.")
    _check_temperatures(temperature, "temperature")
    return sweep(verdicts, [temperature], **options).iloc[:, 0]
