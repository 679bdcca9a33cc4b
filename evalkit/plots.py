"""Axes-level matplotlib plots: each takes ``ax=None`` (the current Axes) and returns the Axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from evalkit import calibrate as _calibrate
from evalkit import tcva as _tcva
from evalkit import verdicts as _verdicts
from evalkit._validation import check_columns, check_dataframe

__all__ = ["temperature_sweep", "verdict_distribution", "confusion", "calibration_rates", "length_bias", "fd_by_bin",
           "tier_share", "label_budget", "human_ceiling"]

def _plain(value) -> str:
    """A label taken from the data, shown as written: ``$`` would otherwise start matplotlib mathtext."""
    return str(value).replace("$", r"\$")


def _legend_above(ax, **kwargs) -> None:
    """A legend in a row above the Axes, where it cannot cover a point, an interval or a whisker."""
    kwargs.setdefault("ncols", max(1, len(ax.get_legend_handles_labels()[1])))
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize="small", frameon=False, **kwargs)


_LEVEL_COLORS = dict(zip(_verdicts.LEVELS, ("#b2182b", "#ef8a62", "#fddbc7", "#92c5de", "#2166ac"), strict=True))


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
    >>> demo = datasets.load_demo("tcva")
    >>> verdicts, items = demo["verdicts"], demo["items"]
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
        top = ax.secondary_xaxis("top", functions=(lambda t: _tcva.temperature_to_p(t, check=False), _tcva.p_to_temperature))
        top.set_xlabel("power-mean exponent p(T)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)  # off the band
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
    >>> demo = datasets.load_demo("tcva")
    >>> verdicts, items = demo["verdicts"], demo["items"]
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
    ax.set_yticks(y, [_plain(g) for g in shares.index])
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of claims")
    ax.legend(ncols=5, loc="lower center", bbox_to_anchor=(0.5, 1.0), fontsize="small", frameon=False)
    return ax


def _check_report(report) -> None:
    if not isinstance(report, _calibrate.CalibrationReport):
        raise TypeError(f"`report` must be a CalibrationReport (from evalkit.calibrate.calibrate); got {type(report).__name__}.")


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
    _check_report(report)
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
    _check_report(report)
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
        _legend_above(ax)
    ax.set_xlim(min(0.0, float(np.nanmin(table["ci_low"]))) - 0.02, 1.02)
    pct = int(round(report.confidence_level * 100))
    ax.set_xlabel(f"value with {pct}% CI (n = {report.n})")
    return ax


def length_bias(table: pd.DataFrame, *, ax=None, **kwargs):
    """FD_raw against document length, coloured by length bin, with Pearson r before and after correction.

    Parameters
    ----------
    table : DataFrame
        :func:`evalkit.density.fd_star` output.
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ax.scatter``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from evalkit import datasets, density, plots
    >>> corpus = datasets.load_demo("fd")
    >>> fig, ax = plt.subplots()
    >>> ax = plots.length_bias(density.fd_star(corpus["claims"], corpus["documents"]), ax=ax)
    >>> len(ax.collections)
    3
    """
    from evalkit.density import length_bias as _bias

    table = check_dataframe(table, "table")
    check_columns(table, ["n_tokens", "fd_raw", "length_bin", "fd_star"], "table")
    if ax is None:
        ax = plt.gca()
    kwargs.setdefault("s", 12)
    kwargs.setdefault("alpha", 0.6)
    for name, group in table.groupby("length_bin", observed=True, sort=True):
        ax.scatter(group["n_tokens"], group["fd_raw"], label=_plain(name), **kwargs)
    bias = _bias(table)
    before, after = bias.loc["fd_raw"], bias.loc["fd_star"]
    ax.set_title(f"length vs FD: r = {before['r']:.2f} (p = {before['p_val']:.2g}) raw; "
                 f"r = {after['r']:.2f} (p = {after['p_val']:.2g}) FD*", fontsize="medium")
    ax.set_xlabel("tokens")
    ax.set_ylabel("FD_raw (sum of prob_fact per token)")
    ax.legend(title="length bin", fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    return ax


def fd_by_bin(table: pd.DataFrame, *, column: str = "fd_raw", by: str = "source", ax=None, **kwargs):
    """Box plots of a density column per length bin, one box per source tier within each bin.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> from evalkit import datasets, density, plots
    >>> corpus = datasets.load_demo("fd")
    >>> fig, ax = plt.subplots()
    >>> ax = plots.fd_by_bin(density.fd_star(corpus["claims"], corpus["documents"]), ax=ax)
    >>> [t.get_text() for t in ax.get_xticklabels()]
    ['short', 'medium', 'long']
    """
    table = check_dataframe(table, "table")
    check_columns(table, ["length_bin", column, by], "table")
    if ax is None:
        ax = plt.gca()
    bins = [b for b in table["length_bin"].cat.categories if (table["length_bin"] == b).any()]
    tiers = sorted(table[by].unique(), key=str)
    width = 0.8 / len(tiers)
    for j, tier in enumerate(tiers):
        data = [table.loc[(table["length_bin"] == b) & (table[by] == tier), column].to_numpy() for b in bins]
        positions = np.arange(len(bins)) - 0.4 + width * (j + 0.5)
        parts = ax.boxplot(data, positions=positions, widths=width * 0.9, patch_artist=True, manage_ticks=False, **kwargs)
        for box in parts["boxes"]:
            box.set_facecolor(f"C{j}")
            box.set_alpha(0.7)
        parts["boxes"][0].set_label(_plain(tier))
    ax.set_xticks(range(len(bins)), [_plain(b) for b in bins])
    ax.set_xlabel("length bin")
    ax.set_ylabel(column)
    _legend_above(ax)
    return ax


def tier_share(metrics: pd.DataFrame, *, ax=None, **kwargs):
    """Stacked share of source tiers among the top k, per retrieval condition.

    Parameters
    ----------
    metrics : DataFrame
        :func:`evalkit.retrieval.evaluate` output with ``share_<tier>`` columns.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> import pandas as pd
    >>> from evalkit import plots
    >>> m = pd.DataFrame({"condition": ["a", "b"], "share_x": [0.2, 0.6], "share_y": [0.8, 0.4]})
    >>> fig, ax = plt.subplots()
    >>> [round(float(p.get_width()), 1) for p in plots.tier_share(m, ax=ax).patches]
    [0.2, 0.6, 0.8, 0.4]
    """
    metrics = check_dataframe(metrics, "metrics")
    share_columns = [c for c in metrics.columns if c.startswith("share_")]
    if "condition" not in metrics.columns or not share_columns:
        raise KeyError("`metrics` needs 'condition' and share_<tier> columns (evaluate(..., documents=...)); "
                       f"it has {list(metrics.columns)}.")
    shares = metrics.groupby("condition", sort=True)[share_columns].mean()
    if ax is None:
        ax = plt.gca()
    left = np.zeros(len(shares))
    y = np.arange(len(shares))
    for j, column in enumerate(share_columns):
        ax.barh(y, shares[column].to_numpy(), left=left, color=f"C{j}", label=_plain(column.removeprefix("share_")), **kwargs)
        left += shares[column].to_numpy()
    ax.set_yticks(y, [_plain(c) for c in shares.index])
    ax.set_xlim(0, 1)
    ax.set_xlabel("mean share of the top k")
    ax.legend(fontsize="small", ncols=len(share_columns), loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    return ax


def label_budget(expected: pd.DataFrame, *, half_width=None, ax=None, **kwargs):
    """Expected interval half-width against the number of human labels, one line per method.

    Parameters
    ----------
    expected : DataFrame
        :func:`evalkit.infer.expected_half_width` output (``n_labelled, method, half_width``, and ``interval``,
        named on the y axis).
    half_width : float, optional
        A target half-width, drawn as a horizontal line; where each method's curve first reaches it is marked.
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ax.plot`` for each curve.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> import pandas as pd
    >>> from evalkit import plots
    >>> curve = pd.DataFrame({"n_labelled": [50, 50, 200, 200], "method": ["ppi++", "classical"] * 2,
    ...                       "half_width": [0.15, 0.25, 0.08, 0.13]})
    >>> fig, ax = plt.subplots()
    >>> ax = plots.label_budget(curve, half_width=0.1, ax=ax)
    >>> ax.get_legend_handles_labels()[1]
    ['ppi++', 'classical', 'target 0.1']
    """
    table = check_dataframe(expected, "expected")
    check_columns(table, ["n_labelled", "method", "half_width"], "expected")
    if ax is None:
        ax = plt.gca()
    for method, curve in table.groupby("method", sort=False):
        curve = curve.sort_values("n_labelled")
        (line,) = ax.plot(curve["n_labelled"], curve["half_width"], label=_plain(method), **kwargs)
        if half_width is not None:
            reached = curve[curve["half_width"] <= half_width]
            if len(reached):
                ax.plot(reached["n_labelled"].iloc[0], reached["half_width"].iloc[0], "o", color=line.get_color(),
                        label="_nolegend_")
    if half_width is not None:
        ax.axhline(half_width, color="grey", linestyle="--", linewidth=1, label=f"target {half_width:g}")
    ax.set_xlabel("human labels")
    planned = list(dict.fromkeys(table["interval"])) if "interval" in table.columns else []
    ax.set_ylabel(f"planned half-width ({', '.join(map(str, planned))})" if planned else "expected interval half-width")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)  # off the curves
    return ax


def human_ceiling(table: pd.DataFrame, *, ax=None, **kwargs):
    """Each annotator's leave-one-out correlation and each score's, as points with intervals.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`evalkit.agreement.human_ceiling` (columns ``kind, name, r``, and ``ci_low,
        ci_high`` when computed). The mean annotator correlation, the human ceiling, is a dashed line.
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ax.errorbar``.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import plots
    >>> table = pd.DataFrame({"kind": ["annotator", "annotator", "score"], "name": ["a", "b", "metric"],
    ...                       "r": [0.6, 0.5, 0.3], "ci_low": [0.5, 0.4, 0.1], "ci_high": [0.7, 0.6, 0.5]})
    >>> ax = plots.human_ceiling(table)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['a', 'b', 'metric']
    """
    table = check_dataframe(table, "table")
    check_columns(table, ["kind", "name", "r"], "table")
    if ax is None:
        ax = plt.gca()
    y = np.arange(len(table))[::-1]
    r = table["r"].to_numpy(float)
    has_ci = {"ci_low", "ci_high"} <= set(table.columns)
    for i, kind in enumerate(("annotator", "score")):
        rows = (table["kind"] == kind).to_numpy()
        if not rows.any():
            continue
        err = None
        if has_ci:
            err = np.vstack([r[rows] - table["ci_low"].to_numpy(float)[rows], table["ci_high"].to_numpy(float)[rows] - r[rows]])
        ax.errorbar(r[rows], y[rows], xerr=err, fmt="o", color=f"C{i}", capsize=3, label=f"{kind}s", **kwargs)
    annotators = table["kind"] == "annotator"
    if annotators.any():
        ceiling = float(np.nanmean(r[annotators.to_numpy()]))
        ax.axvline(ceiling, linestyle="--", color="C0", linewidth=1, label=f"human ceiling (mean) {ceiling:.2f}")
    ax.set_yticks(y, [_plain(name) for name in table["name"]])
    method = table["method"].iloc[0] if "method" in table.columns else "r"
    ax.set_xlabel(f"{method} correlation (annotators: with the others' mean; scores: with all annotators' mean)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)  # off the intervals
    return ax
