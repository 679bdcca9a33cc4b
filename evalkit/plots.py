"""Axes-level matplotlib plots: each takes ``ax=None`` (the current Axes) and returns the Axes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from evalkit import calibrate as _calibrate
from evalkit import tcva as _tcva
from evalkit import verdicts as _verdicts
from evalkit._validation import check_columns, check_dataframe, check_number

__all__ = ["temperature_sweep", "verdict_distribution", "confusion", "calibration_rates", "length_bias", "fd_by_bin",
           "tier_share", "hybrid_weight", "label_budget", "human_ceiling", "ratings", "rank_sets", "win_rates",
           "system_estimates"]

def _rows(table: pd.DataFrame, name: str) -> pd.DataFrame:
    if table.empty:
        raise ValueError(f"`{name}` is empty: there is nothing to draw.")
    return table


def _numbers(table: pd.DataFrame, columns, name: str) -> pd.DataFrame:
    """``table`` with the listed columns as floats; TypeError naming ``name`` and the column where one holds
    something else than numbers (NaN allowed: a gap), ValueError for inf."""
    table = table.copy()
    for column in columns:
        values = table[column]
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            numeric = pd.to_numeric(values, errors="coerce")
            bad = numeric.isna() & values.notna()
            if bad.any() or pd.api.types.is_bool_dtype(values):
                raise TypeError(f"`{name}` column {column!r} must hold numbers; got {values[bad].iloc[0]!r}"
                                if bad.any() else f"`{name}` column {column!r} must hold numbers; got booleans.")
        if np.isinf(pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)).any():
            raise ValueError(f"`{name}` column {column!r} must hold finite numbers (NaN for a gap); got inf.")
        table[column] = pd.to_numeric(values, errors="coerce").astype(float)
    return table


def _interval_holds(table: pd.DataFrame, column: str, name_column: str) -> None:
    """ValueError naming the row where ``[ci_low, ci_high]`` does not hold ``column`` (NaN anywhere: not drawn)."""
    value, low, high = (table[c].to_numpy(float) for c in (column, "ci_low", "ci_high"))
    outside = (low > value) | (value > high)
    if outside.any():
        i = int(np.flatnonzero(outside)[0])
        raise ValueError(f"`table` row {i} ({_plain(table[name_column].iloc[i])!r}): its interval [{low[i]:g}, {high[i]:g}] "
                         f"does not hold its {column} = {value[i]:g}.")


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
    table = _rows(check_dataframe(corr_table, "corr_table"), "corr_table")
    check_columns(table, ["r"], "corr_table")
    table = _numbers(table, [c for c in ("r", "ci_low", "ci_high") if c in table.columns], "corr_table")
    t = pd.to_numeric(pd.Series(table.index), errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    if not np.isfinite(t).all():
        raise ValueError(f"`corr_table` must be indexed by temperature (finite numbers, as from correlate on a sweep); "
                         f"its index holds {table.index[~np.isfinite(t)][0]!r}.")
    if ax is None:
        ax = plt.gca()
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
    table = report.table.dropna(subset=["estimate"])
    if ax is None:
        ax = plt.gca()
    y = np.arange(len(table))[::-1]
    values = table["estimate"].to_numpy(float)
    err = np.vstack([values - table["ci_low"].to_numpy(float), table["ci_high"].to_numpy(float) - values])
    pct = int(round(report.confidence_level * 100))
    methods = list(dict.fromkeys(table["interval"].dropna().astype(str))) if "interval" in table.columns else []
    kwargs.setdefault("fmt", "o")
    kwargs.setdefault("capsize", 3)
    kwargs.setdefault("label", f"{pct}% intervals: {', '.join(methods)}" if methods else f"{pct}% intervals")
    ax.errorbar(values, y, xerr=err, **kwargs)
    ax.set_yticks(y, table.index.tolist())
    if "agreement" in table.index:  # the always-PASS reference belongs to the agreement row only
        row = y[table.index.get_loc("agreement")]
        ax.vlines(report.base_rate_agreement, row - 0.4, row + 0.4, linestyles=":", colors="grey",
                  label=f"always-PASS agreement {report.base_rate_agreement:.2f}")
    ax.set_xlim(min(0.0, float(np.nanmin(table["ci_low"]))) - 0.02, 1.02)
    ax.set_xlabel(f"value with {pct}% CI (n = {report.n})")
    # below the axis label, where it covers no row and leaves the title room
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), ncols=2, fontsize="small", frameon=False)
    if not ax.get_title():
        ax.set_title(f"Calibration: the judge's rates against human labels (n = {report.n})")
    return ax


def length_bias(table: pd.DataFrame, *, ax=None, **kwargs):
    """FD_raw against document length, coloured by length bin, with Spearman's rho before and after correction.

    Parameters
    ----------
    table : DataFrame
        :func:`evalkit.density.fd_star` output. The correlations are :func:`evalkit.density.length_bias`'s,
        with its warning where one is undefined (shown as ``rho = nan``).
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

    table = _rows(check_dataframe(table, "table"), "table")
    check_columns(table, ["n_tokens", "fd_raw", "length_bin", "fd_star"], "table")
    table = _numbers(table, ["n_tokens", "fd_raw", "fd_star"], "table")
    if ax is None:
        ax = plt.gca()
    kwargs.setdefault("s", 12)
    kwargs.setdefault("alpha", 0.6)
    for name, group in table.groupby("length_bin", observed=True, sort=True):
        ax.scatter(group["n_tokens"], group["fd_raw"], label=_plain(name), **kwargs)
    bias = _bias(table, n_resamples=0)  # the coefficients and p-values only
    before, after = bias.loc["fd_raw"], bias.loc["fd_star"]
    ax.set_title(f"length vs FD: Spearman rho = {before['r']:.2f} (p = {before['p_val']:.2g}) raw; "
                 f"rho = {after['r']:.2f} (p = {after['p_val']:.2g}) FD*", fontsize="medium")
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
    table = _rows(table.dropna(subset=["length_bin", by]), "table")
    table = _numbers(table, [column], "table")
    if ax is None:
        ax = plt.gca()
    categories = table["length_bin"].cat.categories if isinstance(table["length_bin"].dtype, pd.CategoricalDtype) else \
        sorted(pd.unique(table["length_bin"]), key=str)  # bins in their order, or sorted by name when not categorical
    bins = [b for b in categories if (table["length_bin"] == b).any()]
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
    if not ax.get_title():
        ax.set_title(f"{_plain(column)} by length bin and {_plain(by)}", pad=24)  # above the legend's row
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
    metrics = _numbers(_rows(metrics, "metrics"), share_columns, "metrics")
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
    if not ax.get_title():
        ax.set_title("Source tiers among the top k, per retrieval condition", pad=24)  # above the legend's row
    return ax


def hybrid_weight(metrics: pd.DataFrame, *, metric: str = "ndcg", default: float = 0.5, ax=None, **kwargs):
    """A retrieval metric against the hybrid's weight ``alpha``, with every other condition as a horizontal line.

    Parameters
    ----------
    metrics : DataFrame
        Per-query metrics from :func:`evalkit.retrieval.evaluate`, stacked: the ``"hybrid"`` rows of several
        weights, each with its weight in an ``alpha`` column (``evaluate(...).assign(alpha=a)``), and the rows of
        the conditions to compare with (``"cosine"``, ``"bm25"``; their ``alpha`` missing).
    metric : str, default "ndcg"
        The column to average over queries.
    default : float or None, default 0.5
        A weight marked by a dotted vertical line (the default of :func:`evalkit.retrieval.search`); None for none.
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ax.plot`` for the hybrid's curve.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> import pandas as pd
    >>> from evalkit import plots
    >>> metrics = pd.DataFrame({"query_id": ["q1", "q2"] * 3, "condition": ["hybrid"] * 4 + ["cosine"] * 2,
    ...                         "alpha": [0.0, 0.0, 1.0, 1.0, None, None], "ndcg": [0.2, 0.4, 0.6, 0.8, 0.5, 0.9]})
    >>> fig, ax = plt.subplots()
    >>> ax = plots.hybrid_weight(metrics, ax=ax)
    >>> [(line.get_label(), [round(float(y), 2) for y in line.get_ydata()]) for line in ax.lines]
    [('hybrid', [0.3, 0.7]), ('cosine', [0.7, 0.7]), ('default alpha = 0.5', [0.0, 1.0])]
    """
    metrics = check_dataframe(metrics, "metrics")
    check_columns(metrics, ["condition", "alpha", metric], "metrics")
    metrics = _numbers(_rows(metrics, "metrics"), ["alpha", metric], "metrics")
    hybrid = metrics[metrics["condition"] == "hybrid"]
    if hybrid.empty or hybrid["alpha"].isna().any():
        raise ValueError("`metrics` needs 'hybrid' rows, each with its weight in 'alpha' "
                         "(evaluate(search(..., condition='hybrid', alpha=a), ...).assign(alpha=a)).")
    others = metrics[metrics["condition"] != "hybrid"]
    if ax is None:
        ax = plt.gca()
    curve = hybrid.groupby("alpha")[metric].mean()
    kwargs.setdefault("marker", "o")
    ax.plot(curve.index.to_numpy(float), curve.to_numpy(float), label="hybrid", **kwargs)
    for i, (name, value) in enumerate(others.groupby("condition", sort=True)[metric].mean().items()):
        ax.axhline(value, linestyle="--", linewidth=1.2, color=f"C{i + 1}", label=_plain(name))
    if default is not None:
        ax.axvline(check_number(default, "default", low=0.0, high=1.0), linestyle=":", color="0.4", linewidth=1,
                   label=f"default alpha = {default:g}")
    ax.set_xlim(-0.03, 1.03)
    ax.set_xlabel("alpha: the cosine's weight in the hybrid (1 - alpha on FD*)")
    ax.set_ylabel(f"mean {_plain(metric)} over queries")
    _legend_above(ax)
    if not ax.get_title():
        ax.set_title(f"Mean {_plain(metric)} against the hybrid's weight", pad=24)  # above the legend's row
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
    table = _rows(check_dataframe(expected, "expected"), "expected")
    check_columns(table, ["n_labelled", "method", "half_width"], "expected")
    table = _numbers(table, ["n_labelled", "half_width"], "expected")
    half_width = check_number(half_width, "half_width", low=0.0, allow_none=True)
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
    """Each annotator's leave-one-out correlation and, on the same row, each score's against the same reference.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`evalkit.agreement.human_ceiling` (columns ``kind, name, r``, ``held_out`` for the score
        rows, and ``ci_low, ci_high`` when computed). One row of the plot per annotator left out: the annotator's
        correlation with the others' mean and each score's with that same mean. Dashed lines: the mean over
        annotators of each (the human ceiling, and each score's figure averaged the same way). Without a
        ``held_out`` column every table row is a row of the plot.
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
    >>> table = pd.DataFrame({"kind": ["annotator", "annotator", "score", "score"], "name": ["a", "b", "metric", "metric"],
    ...                       "held_out": ["a", "b", "a", "b"], "r": [0.6, 0.5, 0.3, 0.2],
    ...                       "ci_low": [0.5, 0.4, 0.1, 0.0], "ci_high": [0.7, 0.6, 0.5, 0.4]})
    >>> ax = plots.human_ceiling(table)
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['a left out', 'b left out']
    """
    table = _rows(check_dataframe(table, "table"), "table")
    check_columns(table, ["kind", "name", "r"], "table")
    has_ci = {"ci_low", "ci_high"} <= set(table.columns)
    table = _numbers(table, ["r", "ci_low", "ci_high"] if has_ci else ["r"], "table").reset_index(drop=True)
    if has_ci:
        _interval_holds(table, "r", "name")
    if ax is None:
        ax = plt.gca()
    paired = "held_out" in table.columns
    if paired:
        rows = list(dict.fromkeys(table["held_out"]))
        position = table["held_out"].map({name: len(rows) - 1 - i for i, name in enumerate(rows)}).to_numpy(float)
        labels = [f"{_plain(name)} left out" for name in rows]
    else:
        rows = list(range(len(table)))
        position = np.arange(len(table))[::-1].astype(float)
        labels = [_plain(name) for name in table["name"]]
    series = [("annotator", None)] + [("score", name) for name in dict.fromkeys(table.loc[table["kind"] == "score", "name"])]
    step = 0.6 / max(1, len(series))
    for i, (kind, name) in enumerate(series):
        rows_of = (table["kind"] == kind).to_numpy() & (True if name is None else (table["name"] == name).to_numpy())
        if not rows_of.any():
            continue
        part = table[rows_of]
        r = part["r"].to_numpy(float)
        err = np.vstack([r - part["ci_low"].to_numpy(float), part["ci_high"].to_numpy(float) - r]) if has_ci else None
        offset = (i - (len(series) - 1) / 2) * step if paired else 0.0
        label = "annotators (with the others' mean)" if kind == "annotator" else _plain(name)
        ax.errorbar(r, position[rows_of] - offset, xerr=err, fmt="o" if kind == "annotator" else "s", color=f"C{i}",
                    capsize=3, markersize=5, label=label, **kwargs)
        mean = float(np.nanmean(r))
        ax.axvline(mean, linestyle="--", color=f"C{i}", linewidth=1,
                   label=f"human ceiling (mean) {mean:.2f}" if kind == "annotator" else f"{_plain(name)} mean {mean:.2f}")
    ax.set_yticks(np.arange(len(rows))[::-1] if paired else position, labels)
    method = table["method"].iloc[0] if "method" in table.columns else "r"
    interval = f"; {int(round(100 * table.attrs['confidence_level']))}% intervals" if "confidence_level" in table.attrs else ""
    kind = table["interval"].dropna().iloc[0] if "interval" in table.columns and table["interval"].notna().any() else None
    ax.set_xlabel(f"{method} correlation with the other annotators' mean" + (f" ({kind})" if kind else "") + interval)
    ax.set_title("Human ceiling: every score against the same leave-one-out references" if paired and len(series) > 1
                 else "Human ceiling: each annotator against the others' mean")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)  # off the intervals
    return ax


def ratings(table: pd.DataFrame, *, ax=None, **kwargs):
    """A forest plot of Bradley-Terry ratings: each system's rating with its interval, best at the top.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`evalkit.pairwise.bradley_terry` (``system, rating``, and ``ci_low, ci_high``). The
        centre, 1000 (the mean rating, or the anchor's), is a dashed line. Its ``attrs`` name the interval on the
        axis (a sandwich interval with clusters is the cluster-robust one); an Axes without a title gets one.
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ax.errorbar``.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> from evalkit import datasets, pairwise, plots
    >>> ax = plots.ratings(pairwise.bradley_terry(datasets.load_demo("pairwise")["comparisons"]))
    >>> [t.get_text() for t in ax.get_yticklabels()][:2]
    ['system-a', 'system-b']
    """
    table = check_dataframe(table, "table")
    check_columns(table, ["system", "rating", "ci_low", "ci_high"], "table")
    table = _numbers(table, ["rating", "ci_low", "ci_high"], "table")
    _interval_holds(table, "rating", "system")
    if ax is None:
        ax = plt.gca()
    order = table.sort_values("rating", ascending=False, kind="stable", na_position="last")
    y = np.arange(len(order))[::-1]
    rating = order["rating"].to_numpy(float)
    err = np.vstack([rating - order["ci_low"].to_numpy(float), order["ci_high"].to_numpy(float) - rating])
    interval = _rating_interval(order.attrs)
    kwargs.setdefault("fmt", "o")
    kwargs.setdefault("capsize", 3)
    if interval:
        kwargs.setdefault("label", interval)
    ax.errorbar(rating, y, xerr=err, **kwargs)
    ax.axvline(1000.0, linestyle="--", color="grey", linewidth=1)  # the mean rating, or the anchor's
    ax.set_yticks(y, [_plain(name) for name in order["system"]])
    ax.set_xlabel("Bradley-Terry rating, Elo scale" + (f" ({interval})" if interval else ""))
    if not ax.get_title():
        ax.set_title(f"Bradley-Terry ratings of {len(order)} systems")
    return ax


def _rating_interval(attrs) -> str:
    """The interval of a ratings table in words, from its attrs: "95% cluster-robust interval, clusters: question_id"."""
    level, method, cluster = attrs.get("confidence_level"), attrs.get("interval"), attrs.get("cluster")
    if level is None or not method:
        return ""
    name = {"sandwich": "cluster-robust (sandwich)" if cluster is not None else "robust (sandwich)",
            "bootstrap": "cluster bootstrap" if cluster is not None else "bootstrap"}.get(method, str(method))
    clusters = f", clusters: {cluster if isinstance(cluster, str) else 'given'}" if cluster is not None else ""
    return f"{level:.0%} {name} interval{clusters}"


def rank_sets(table: pd.DataFrame, *, ax=None, **kwargs):
    """Rank-sets as intervals of ranks: each system's lowest to highest possible rank, best at the top.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`evalkit.pairwise.rank_sets` (``system, rank_low, rank_high``, optional ``estimate``). Its
        ``attrs`` (``method``, ``sets``, ``confidence_level``) name what is drawn: the sets are labelled with the
        method, and an Axes without a title gets one naming it.
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ax.hlines`` (one line per system, from rank_low to rank_high).

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import plots
    >>> table = pd.DataFrame({"system": ["x", "y", "z"], "estimate": [0.6, 0.5, 0.3], "rank_low": [1, 1, 2],
    ...                       "rank_high": [2, 3, 3]})
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> ax = plots.rank_sets(table, ax=ax)
    >>> [seg[:, 0].tolist() for seg in ax.collections[0].get_segments()]
    [[1.0, 2.0], [1.0, 3.0], [2.0, 3.0]]
    """
    table = check_dataframe(table, "table")
    check_columns(table, ["system", "rank_low", "rank_high"], "table")
    ranks = _numbers(table, ["rank_low", "rank_high"], "table")
    low, high = ranks["rank_low"].to_numpy(float), ranks["rank_high"].to_numpy(float)
    bad = ~((low >= 1) & (low == np.round(low)) & (high == np.round(high)) & (low <= high))  # NaN is bad too
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(f"`table` row {i} ({_plain(table['system'].iloc[i])!r}): ranks {low[i]:g} to {high[i]:g}; a "
                         "rank-set runs from a whole rank_low >= 1 to a whole rank_high >= rank_low.")
    if ax is None:
        ax = plt.gca()
    y = np.arange(len(table))[::-1]
    level, method, sets = (table.attrs.get(key) for key in ("confidence_level", "method", "sets"))
    what = _RANK_SET_METHODS.get(method, method)
    kwargs.setdefault("linewidth", 6)
    kwargs.setdefault("color", "C0")
    if what:
        kwargs.setdefault("label", f"rank-sets: {what}")
    ax.hlines(y, low, high, **kwargs)
    ax.plot(low, y, "|", color="black")
    ax.plot(high, y, "|", color="black")
    k = int(high.max()) if len(table) else 1
    ax.set_xticks(range(1, k + 1))
    ax.set_xlim(0.5, k + 0.5)
    ax.set_yticks(y, [_plain(name) for name in table["system"]])
    detail = f" ({level:.0%} simultaneous{f', {sets} sets' if sets else ''})" if level is not None else ""
    ax.set_xlabel(f"rank (1 = best){detail}")
    if not ax.get_title():
        ax.set_title(f"rank-sets: {what}" if what else "rank-sets")
    return ax


# How a rank-set's method reads in a title (the ``method`` attrs of :func:`evalkit.pairwise.rank_sets`).
_RANK_SET_METHODS = {"ppr": "PPR (human votes + judge)", "human": "human votes only", "judge": "judge only"}


def win_rates(matrix: pd.DataFrame, *, ax=None, cmap="RdBu", **kwargs):
    """A win-rate matrix: the share of the row system's wins against the column system, as a heat map.

    Parameters
    ----------
    matrix : DataFrame
        A square table of shares, as :func:`evalkit.pairwise.win_rates` returns (NaN where two systems never
        met: left blank). Each cell is written in.
    ax : matplotlib Axes, optional
    cmap : str, default "RdBu"
    **kwargs
        Passed to ``ax.imshow``.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import pairwise, plots
    >>> c = pd.DataFrame({"system_a": ["x", "y"], "system_b": ["y", "z"], "winner": ["a", "tie"]})
    >>> ax = plots.win_rates(pairwise.win_rates(c))
    >>> sorted(t.get_text() for t in ax.texts)
    ['0.00', '0.50', '0.50', '1.00']
    """
    matrix = check_dataframe(matrix, "matrix")
    if matrix.shape[0] != matrix.shape[1] or not matrix.index.equals(matrix.columns):
        raise ValueError(f"`matrix` must be square with the same systems as rows and columns (pairwise.win_rates); got "
                         f"{matrix.shape[0]} rows and {matrix.shape[1]} columns.")
    if matrix.index.has_duplicates:
        raise ValueError(f"`matrix` has system {_plain(matrix.index[matrix.index.duplicated()][0])!r} twice.")
    values = _numbers(matrix, list(matrix.columns), "matrix").to_numpy(dtype=float)
    outside = (values < 0) | (values > 1)  # NaN (never met) is left blank
    if outside.any():
        i, j = (int(v[0]) for v in np.nonzero(outside))
        raise ValueError(f"`matrix` row {_plain(matrix.index[i])!r}, column {_plain(matrix.columns[j])!r}: {values[i, j]:g} is "
                         "not a share of wins (0 to 1).")
    if ax is None:
        ax = plt.gca()
    image = ax.imshow(values, cmap=cmap, vmin=0.0, vmax=1.0, **kwargs)
    for i, j in zip(*np.nonzero(~np.isnan(values)), strict=True):
        ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize="small",
                color="white" if abs(values[i, j] - 0.5) > 0.3 else "black")
    names = [_plain(name) for name in matrix.index]
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right")
    ax.set_yticks(range(len(names)), names)
    ax.set_xlabel("opponent")
    ax.set_ylabel("system (share of its wins)")
    if not ax.get_title():
        ties = {"half": " (ties as half a win)", "drop": " (ties left out)"}.get(matrix.attrs.get("ties"), "")
        ax.set_title(f"Win rates of {len(names)} systems, head to head{ties}")
    ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return ax


def system_estimates(table: pd.DataFrame, *, ax=None, **kwargs):
    """A forest plot of several systems' estimates: each system's estimate and interval, the highest at the top, its
    joint rank set beside its name.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`evalkit.infer.systems` (its first column names the systems; ``estimate, ci_low, ci_high``,
        and ``rank_low, rank_high`` where present). A system without an interval (NaN) is drawn as its estimate
        alone, a hollow marker; a row replaced by the humans-only interval (``method`` ``"classical"``) is drawn
        in grey. The level rides in the axis label from ``attrs``.
    ax : matplotlib Axes, optional
    **kwargs
        Passed to ``ax.errorbar``.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit import infer, plots
    >>> rng = np.random.default_rng(0)
    >>> rows = [{"system": name, "case_id": i, "judge": q + rng.normal(0, 0.3), "human": q if i < 30 else np.nan}
    ...         for name, mu in (("a", 3.0), ("b", 3.8)) for i, q in enumerate(rng.normal(mu, 0.6, 200))]
    >>> ax = plots.system_estimates(infer.systems(pd.DataFrame(rows)))
    >>> [t.get_text() for t in ax.get_yticklabels()]
    ['b  (rank 1)', 'a  (rank 2)']
    """
    table = check_dataframe(table, "table")
    _rows(table, "table")
    check_columns(table, ["estimate", "ci_low", "ci_high"], "table")
    name = table.columns[0]
    table = _numbers(table, ["estimate", "ci_low", "ci_high"], "table")
    _interval_holds(table, "estimate", name)
    if ax is None:
        ax = plt.gca()
    order = table.sort_values("estimate", ascending=False, kind="stable", na_position="last")
    y = np.arange(len(order))[::-1].astype(float)
    estimate = order["estimate"].to_numpy(float)
    low, high = order["ci_low"].to_numpy(float), order["ci_high"].to_numpy(float)
    has = ~(np.isnan(low) | np.isnan(high))
    humans_only = (order["method"] == "classical").to_numpy() if "method" in order else np.zeros(len(order), bool)
    level = table.attrs.get("confidence_level")
    kwargs.setdefault("fmt", "o")
    kwargs.setdefault("capsize", 3)
    for mask, colour, label in ((has & ~humans_only, kwargs.pop("color", "C0"), "calibrated"),
                                (has & humans_only, "grey", "humans-only (too few labels off the end)")):
        if mask.any():
            err = np.vstack([estimate[mask] - low[mask], high[mask] - estimate[mask]])
            ax.errorbar(estimate[mask], y[mask], xerr=err, color=colour, label=label, **kwargs)
    if (~has).any():
        ax.plot(estimate[~has], y[~has], "o", mfc="none", color="C3", label="no interval")
    ticks = []
    for (_, row) in order.iterrows():
        text = _plain(row[name])
        if "rank_low" in order and pd.notna(row["rank_low"]):
            low_rank, high_rank = int(row["rank_low"]), int(row["rank_high"])
            text += f"  (rank {low_rank})" if low_rank == high_rank else f"  (ranks {low_rank}-{high_rank})"
        ticks.append(text)
    ax.set_yticks(y, ticks)
    ax.set_xlabel("estimate" + (f" ({level:.0%} interval)" if level else ""))
    if humans_only.any() or (~has).any():
        _legend_above(ax)
    if not ax.get_title():
        ax.set_title(f"{len(order)} systems, from the judge and the labels")
    return ax
