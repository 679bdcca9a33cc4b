"""Axes-level matplotlib plots: each takes ``ax=None`` (the current Axes) and returns the Axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from evalkit import tcva as _tcva
from evalkit import verdicts as _verdicts
from evalkit._validation import check_columns, check_dataframe

__all__ = ["temperature_sweep", "verdict_distribution"]

_LEVEL_COLORS = dict(zip(_verdicts.LEVELS, ("#b2182b", "#ef8a62", "#fddbc7", "#92c5de", "#2166ac")))


def temperature_sweep(corr_table: pd.DataFrame, *, baselines=None, label=None, show_p=True, ax=None, **kwargs):
    """Correlation with human ratings against temperature, with its confidence band.

    Parameters
    ----------
    corr_table : DataFrame
        Output of :func:`evalkit.correlate.correlate` on a sweep: index = temperatures, columns ``r``,
        ``ci_low``, ``ci_high`` (the band is skipped when the CI is missing).
    baselines : mapping of str to float, optional
        Reference correlations of other metrics, drawn as labelled horizontal lines.
    label : str, optional
        Legend label of the curve (default: the method name).
    show_p : bool, default True
        Add a secondary x axis on top with the power-mean exponent p(T).
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ax.plot`` for the curve.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from evalkit import correlate, datasets, plots, tcva
    >>> verdicts, items = datasets.load_demo("tcva")
    >>> corr = correlate.correlate(tcva.sweep(verdicts, [0.1, 0.5, 1.0], items=items), items["human"], rng=0)
    >>> ax = plots.temperature_sweep(corr, baselines={"other metric": 0.5})
    >>> len(ax.lines)
    2
    """
    table = check_dataframe(corr_table, "corr_table")
    check_columns(table, ["r"], "corr_table")
    if ax is None:
        ax = plt.gca()
    t = np.asarray(table.index, dtype=float)
    order = np.argsort(t)
    t = t[order]
    method = table["method"].iloc[0] if "method" in table.columns else "r"
    kwargs.setdefault("marker", "o")
    (line,) = ax.plot(t, table["r"].to_numpy(float)[order], label=label or f"TCVA ({method})", **kwargs)
    if {"ci_low", "ci_high"} <= set(table.columns) and table["ci_low"].notna().any():
        ax.fill_between(t, table["ci_low"].to_numpy(float)[order], table["ci_high"].to_numpy(float)[order],
                        color=line.get_color(), alpha=0.2, linewidth=0, label="95% CI" if label is None else None)
    for i, (name, value) in enumerate((baselines or {}).items()):
        ax.axhline(value, linestyle="--", linewidth=1, color=f"C{i + 1}", label=name)
    ax.set_xlabel("temperature T")
    ax.set_ylabel(f"{method} correlation with humans")
    if show_p:
        top = ax.secondary_xaxis("top", functions=(_tcva._p_unchecked, _tcva.p_to_temperature))
        top.set_xlabel("power-mean exponent p(T)")
    ax.legend(loc="best", fontsize="small")
    return ax


def verdict_distribution(verdicts: pd.DataFrame, *, by=None, ax=None, **kwargs):
    """Share of each verdict level, as one stacked horizontal bar (or one per group of ``by``).

    Parameters
    ----------
    verdicts : DataFrame
        Claim-verdict table.
    by : str, optional
        A column of ``verdicts`` to group by (e.g. the system).
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ax.barh``.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from evalkit import datasets, plots
    >>> verdicts, items = datasets.load_demo("tcva")
    >>> ax = plots.verdict_distribution(verdicts)
    >>> len(ax.patches)
    5
    """
    table = _verdicts.validate(verdicts)
    if by is not None:
        check_columns(table, [by], "verdicts")
        groups = table[by].astype(str)
    else:
        groups = pd.Series("all claims", index=table.index)
    shares = pd.crosstab(groups, table["verdict"], normalize="index").reindex(columns=list(_verdicts.LEVELS), fill_value=0.0)
    if ax is None:
        ax = plt.gca()
    left = np.zeros(len(shares))
    y = np.arange(len(shares))
    for level in _verdicts.LEVELS:
        ax.barh(y, shares[level].to_numpy(), left=left, color=_LEVEL_COLORS[level], label=level, **kwargs)
        left += shares[level].to_numpy()
    ax.set_yticks(y, shares.index.tolist())
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of claims")
    ax.legend(ncols=5, loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize="small", frameon=False)
    return ax
