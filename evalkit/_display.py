"""How evalkit shows numbers: display rounding that follows the quantity, and the small table every result prints.

Only the display: stored values are never rounded (tests compare them with references). Ratings on the Elo scale
show no decimals, rates, proportions and correlations three, temperatures as given, p-values in scientific form
below 1e-3 and ``< 1e-16`` where they underflow (0, or below the float epsilon: no digit of them is meaningful).
A result's table has the columns ``quantity, estimate, interval, method, note``; a note is never cut.
"""

from __future__ import annotations

import html
import math
import re

import numpy as np

#: Below this a p-value has no meaningful digit left (the float epsilon): it prints as "< 1e-16".
P_FLOOR = float(np.finfo(float).eps)
KINDS = ("p", "rating", "temperature", "count", "number")
RESULT_COLUMNS = ("quantity", "estimate", "interval", "method", "note")


def _missing(value) -> bool:
    try:
        return value is None or bool(np.isnan(value))
    except TypeError:
        return False


def p_value(value) -> str:
    """A p-value: three decimals from 1e-3 up, two significant digits in scientific form below, ``< 1e-16`` at
    underflow (p = 0 or below the float epsilon)."""
    if _missing(value):
        return "NaN"
    value = float(value)
    if value < P_FLOOR:
        return "< 1e-16"
    return f"{value:.1e}" if value < 1e-3 else f"{value:.3f}"


def rating(value) -> str:
    """A rating on the Elo scale, to the nearest point (its interval is tens of points wide)."""
    return "NaN" if _missing(value) else f"{float(value):.0f}"


def temperature(value) -> str:
    """A temperature as it was given: 0.1, not 0.1000."""
    return "NaN" if _missing(value) else f"{float(value):g}"


def number(value, decimals: int = 3, *, sign: bool = False) -> str:
    """A rate, proportion, correlation or other estimate: ``decimals`` places; a non-zero value too small for them
    keeps two significant digits (so it does not read as 0)."""
    if _missing(value):
        return "NaN"
    value = float(value)
    if math.isinf(value):
        return ("+" if sign and value > 0 else "") + ("inf" if value > 0 else "-inf")
    if value != 0 and abs(value) < 0.5 * 10.0 ** -decimals:
        return f"{value:+.2g}" if sign else f"{value:.2g}"
    return f"{value:+.{decimals}f}" if sign else f"{value:.{decimals}f}"


def _tokens(name) -> list[str]:
    return [t for t in re.split(r"[\s_()\-/,]+", str(name).lower()) if t]


def column_kind(name, columns=(), attrs=None) -> str:
    """What a table column holds, from its name and its table: ``"p"``, ``"rating"``, ``"temperature"`` or
    ``"number"``. An interval's bounds (``ci_low``, ``ci_high``) follow the estimate they bound; in a table whose
    ``attrs["scale"]`` is ``"elo"`` every number but a p-value is a rating."""
    attrs = attrs or {}
    tokens = _tokens(name)
    if ("p" in tokens and str(name) != "p") or "pvalue" in tokens:
        return "p"  # p_val, p_adjusted, p_trend, "McNemar p (Holm)"; a bare "p" is a power-mean exponent
    if "temperature" in tokens or str(name) == "T":
        return "temperature"
    if str(attrs.get("scale", "")).lower() == "elo":  # a table of ratings: every number in it is on the Elo scale
        return "rating"
    if tokens[:1] in (["rating"], ["elo"]) or ("rating" in columns and str(name) in ("ci_low", "ci_high", "estimate", "se")):
        return "rating"
    return "number"


def format_value(value, kind: str = "number", decimals: int = 3) -> str:
    """``value`` shown as a quantity of ``kind`` (one of :data:`KINDS`)."""
    if kind == "p":
        return p_value(value)
    if kind == "rating":
        return rating(value)
    if kind == "temperature":
        return temperature(value)
    if kind == "count":
        return "NaN" if _missing(value) else f"{int(value)}"
    return number(value, decimals)


def interval(low, high, kind: str = "number", *, level=None, sign: bool = False) -> str:
    """``[low, high]`` in the estimate's rounding, prefixed by the level (``95% [0.41, 0.62]``); empty when both
    bounds are missing."""
    if _missing(low) and _missing(high):
        return ""
    show = (lambda v: number(v, sign=sign)) if kind == "number" else (lambda v: format_value(v, kind))
    prefix = f"{level:.0%} CI " if level is not None and not _missing(level) else ""
    return f"{prefix}[{show(low)}, {show(high)}]"


def _text(value) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def _cells(rows, columns) -> tuple[list[str], list[list[str]]]:
    keep = [c for c in columns if any(_text(r.get(c)) for r in rows)]
    return keep, [[_text(r.get(c)) for c in keep] for r in rows]


def result_text(title: str, rows, columns=RESULT_COLUMNS) -> str:
    """``title`` over an aligned table of ``rows`` (dicts keyed by ``columns``); empty columns are left out and the
    last column (the note) is printed whole, never cut."""
    keep, cells = _cells(rows, columns)
    if not keep:
        return title
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(keep)]
    right = {"estimate"}

    def line(values):
        parts = [(v.rjust(w) if keep[i] in right else v.ljust(w)) if i < len(keep) - 1 else v
                 for i, (v, w) in enumerate(zip(values, widths, strict=True))]
        return ("  " + "  ".join(parts)).rstrip()

    return "\n".join([title, line(keep), *(line(row) for row in cells)])


def result_html(title: str, rows, columns=RESULT_COLUMNS) -> str:
    """The same table as :func:`result_text` in HTML, every cell escaped (notes and labels can hold untrusted text)."""
    keep, cells = _cells(rows, columns)
    head = "".join(f"<th style='text-align: {'right' if c == 'estimate' else 'left'}'>{html.escape(c)}</th>" for c in keep)
    body = "".join("<tr>" + "".join(f"<td style='text-align: {'right' if keep[i] == 'estimate' else 'left'}'>"
                                    f"{html.escape(v)}</td>" for i, v in enumerate(row)) + "</tr>" for row in cells)
    table = f"<table class='dataframe'><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>" if keep else ""
    return f"<p><b>{html.escape(title)}</b></p>{table}"


def has_notes(table) -> bool:
    """Whether a table has a column of notes (``note``, ``ci_note``, ``caveat``, ``warning``, or ``interval``, whose
    text may carry a caveat: "percentile bootstrap over clusters (124 of 1000 resamples...)"): text never cut."""
    return any({"note", "notes", "caveat", "warning", "interval"} & set(_tokens(column)) for column in table.columns)


def format_frame(table, decimals: int = 3):
    """A copy of ``table`` for display: every float column as text, rounded as its quantity (:func:`column_kind`).
    Integer, text and other columns are kept as they are; the index is kept."""
    import pandas as pd

    out = table.copy()
    columns = [str(c) for c in table.columns]
    for position, column in enumerate(table.columns):
        series = table.iloc[:, position]
        if not pd.api.types.is_float_dtype(series.dtype):
            continue
        kind = column_kind(column, columns, table.attrs)
        out.isetitem(position, series.map(lambda v, kind=kind: format_value(v, kind, decimals)))
    return out


# ------------------------------------------------------------------ figures
def _drawn_labels(ax) -> list[str]:
    """The labels of what was drawn on ``ax`` (lines, collections, error bars, bars), those matplotlib would put in
    a legend: not the ``_``-prefixed ones it makes up."""
    artists = [*ax.containers, *ax.lines, *ax.collections, *ax.patches]
    return list(dict.fromkeys(str(a.get_label()) for a in artists if a.get_label() and not str(a.get_label()).startswith("_")))


def describe_figure(fig) -> str:
    """A matplotlib figure in words: its title, and for each Axes its title, axis labels, legend and what was drawn
    with a label. The text a reader gets without the image (and that tests read from an executed notebook)."""
    width, height = (int(round(v)) for v in fig.get_size_inches() * fig.dpi)
    lines = [f"<Figure {width}x{height} with {len(fig.axes)} Axes>"]
    suptitle = getattr(fig, "_suptitle", None)
    if suptitle is not None and suptitle.get_text():
        lines.append(f"Figure title: {suptitle.get_text()}")
    for legend in fig.legends:
        lines.append("Figure legend: " + " | ".join(t.get_text() for t in legend.get_texts()))
    boxes = []
    for i, ax in enumerate(fig.axes, 1):
        box = tuple(np.round(ax.get_position().bounds, 3))
        kind = " (colorbar)" if ax.get_label() == "<colorbar>" else f" (twin of Axes {boxes.index(box) + 1})" \
            if box in boxes else ""
        boxes.append(box)
        name = f"Axes {i}{kind}"
        title = " / ".join(t for t in (ax.get_title("left"), ax.get_title(), ax.get_title("right")) if t)
        lines.append(f"{name} title: {title}")
        lines.append(f"{name} x label: {ax.get_xlabel()}")
        lines.append(f"{name} y label: {ax.get_ylabel()}")
        legend = ax.get_legend()
        if legend is not None:
            lines.append(f"{name} legend: " + " | ".join(t.get_text() for t in legend.get_texts()))
        drawn = _drawn_labels(ax)
        if drawn:
            lines.append(f"{name} drawn: " + " | ".join(drawn))
    return "\n".join(lines)
