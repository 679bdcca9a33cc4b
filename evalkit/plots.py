"""Axes-level matplotlib plots: each takes ``ax=None`` (the current Axes) and returns the Axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from evalkit import tcva as _tcva
from evalkit import verdicts as _verdicts
from evalkit._validation import check_columns, check_dataframe

__all__ = ["temperature_sweep", "verdict_distribution", "confusion", "calibration_rates"]

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
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plots.temperature_sweep(corr, baselines={"other metric": 0.5}, ax=ax)
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
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plots.verdict_distribution(verdicts, ax=ax)
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


def confusion(report, *, ax=None, cmap="Blues", **kwargs):
    """The 2 x 2 table of a :class:`evalkit.calibrate.CalibrationReport` as an annotated heatmap.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import calibrate, plots
    >>> report = calibrate.calibrate(pd.Series(["FAIL", "PASS", "PASS"]), pd.Series(["FAIL", "FAIL", "PASS"]))
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plots.confusion(report, ax=ax)
    >>> [t.get_text() for t in ax.texts]
    ['1', '1', '0', '1']
    """
    table = report.confusion
    if ax is None:
        ax = plt.gca()
    counts = table.to_numpy()
    image = ax.imshow(counts, cmap=cmap, vmin=0, **kwargs)
    for (i, j), value in np.ndenumerate(counts):
        dark = value > counts.max() / 2
        ax.text(j, i, str(value), ha="center", va="center", color="white" if dark else "black")
    ax.set_xticks(range(2), [f"judge {c}" for c in table.columns])
    ax.set_yticks(range(2), [f"human {r}" for r in table.index])
    ax.set_title(f"caught {report.caught} of {report.human_fails} human FAILs")
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def calibration_rates(report, *, ax=None, **kwargs):
    """Every rate of a calibration report with its confidence interval (kappa on the same axis).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import calibrate, plots
    >>> report = calibrate.calibrate(pd.Series(["FAIL", "PASS", "PASS", "FAIL"]), pd.Series(["FAIL", "FAIL", "PASS", "PASS"]))
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plots.calibration_rates(report, ax=ax)
    >>> [t.get_text() for t in ax.get_yticklabels()][:2]
    ['agreement', 'fail_recall']
    """
    table = report.table.dropna(subset=["value"])
    if ax is None:
        ax = plt.gca()
    y = np.arange(len(table))[::-1]
    values = table["value"].to_numpy(float)
    err = np.vstack([values - table["ci_low"].to_numpy(float), table["ci_high"].to_numpy(float) - values])
    kwargs.setdefault("fmt", "o")
    kwargs.setdefault("capsize", 3)
    ax.errorbar(values, y, xerr=err, **kwargs)
    ax.set_yticks(y, table.index.tolist())
    if "base_rate_agreement" in table.index:
        ax.axvline(report.base_rate_agreement, linestyle=":", color="grey", label="always-PASS agreement")
        ax.legend(loc="lower right", fontsize="small")
    ax.set_xlim(min(0.0, float(np.nanmin(table["ci_low"]))) - 0.02, 1.02)
    pct = int(round(report.confidence_level * 100))
    ax.set_xlabel(f"value with {pct}% CI (n = {report.n})")
    return ax
