"""The explorers of a TCVA temperature sweep and of FD* bins."""

from __future__ import annotations

import html

import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import traitlets

from evalkit import correlate as _correlate
from evalkit import density as _density
from evalkit import plots as _plots
from evalkit import tcva as _tcva
from evalkit._validation import (
    check_columns,
    check_dataframe,
)
from evalkit.widgets._common import _image_html, _png, _StaticFallback


class SweepExplorer(_StaticFallback, widgets.VBox):
    """Explore a TCVA temperature sweep against human ratings.

    A temperature slider shows the item score distribution at that T and marks it on the correlation
    curve; a second temperature lists the items whose rank moves most between the two.

    Parameters
    ----------
    verdicts : DataFrame
        Claim-verdict table.
    human : Series
        Human ratings by item id.
    items : optional
        All item ids (see :func:`evalkit.tcva.sweep`).
    temperatures : sequence of float, optional
        Default 0.1 to 1.0 in steps of 0.05.
    method : str, default "spearman"
    top : int, default 10
        Items listed as movers.

    Examples
    --------
    >>> from evalkit import datasets
    >>> from evalkit.widgets import SweepExplorer
    >>> demo = datasets.load_demo("tcva")
    >>> verdicts, items = demo["verdicts"], demo["items"]
    >>> explorer = SweepExplorer(verdicts, items["human"], items=items)
    >>> explorer.temperature = 0.2
    >>> explorer.movers.columns.tolist()
    ['rank_at_T', 'rank_at_compare', 'rank_change', 'human']
    """

    temperature = traitlets.Float(0.5)
    compare_to = traitlets.Float(0.9)

    def __init__(self, verdicts, human: pd.Series, *, items=None, temperatures=None, method: str = "spearman", top: int = 10):
        temps = np.round(np.arange(0.1, 1.0001, 0.05), 2) if temperatures is None else np.asarray(temperatures, dtype=float)
        self.scores = _tcva.sweep(verdicts, temps, items=items)
        self.human = human
        self.correlations = _correlate.correlate(self.scores, human, method=method, n_resamples=300, rng=0)
        self.top = top
        options = [float(t) for t in self.scores.columns]
        self.slider = widgets.SelectionSlider(options=options, value=min(options, key=lambda t: abs(t - 0.5)),
                                              description="T", continuous_update=False)
        self.compare_slider = widgets.SelectionSlider(options=options, value=options[-1], description="compare T",
                                                      continuous_update=False)
        self.summary = widgets.HTML()
        self.figure = widgets.Image(format="png")
        self.movers_view = widgets.HTML()
        traitlets.link((self.slider, "value"), (self, "temperature"))
        traitlets.link((self.compare_slider, "value"), (self, "compare_to"))
        super().__init__([widgets.HBox([self.slider, self.compare_slider]), self.summary, self.figure, self.movers_view])
        self.temperature = self.slider.value
        self.compare_to = self.compare_slider.value
        self.redraw()

    @traitlets.validate("temperature", "compare_to")
    def _snap(self, proposal):
        options = self.scores.columns.to_numpy(dtype=float)
        return float(options[np.argmin(np.abs(options - proposal["value"]))])

    @traitlets.observe("temperature", "compare_to")
    def _changed(self, change) -> None:
        if hasattr(self, "movers_view"):
            self.redraw()

    def _snapshot_html(self) -> str:
        return f"<div><p>{self.summary.value}</p>{_image_html(self.figure.value)}{self.movers_view.value}</div>"

    @property
    def movers(self) -> pd.DataFrame:
        """Items whose rank changes most between ``temperature`` and ``compare_to`` (rank 1 = best score)."""
        a = self.scores[self.temperature].rank(ascending=False, method="average")
        b = self.scores[self.compare_to].rank(ascending=False, method="average")
        table = pd.DataFrame({"rank_at_T": a, "rank_at_compare": b, "rank_change": b - a,
                              "human": self.human.reindex(self.scores.index)})
        return table.reindex(table["rank_change"].abs().sort_values(ascending=False, kind="stable").index).head(self.top)

    def redraw(self) -> None:
        row = self.correlations.loc[self.temperature]
        self.summary.value = (f"T = {self.temperature:g} (p = {_tcva.temperature_to_p(self.temperature):.2f}): "
                              f"{html.escape(str(row['method']))} r = {row['r']:.3f} "
                              f"[{row['ci_low']:.3f}, {row['ci_high']:.3f}], n = {int(row['n'])}")
        fig, axes = plt.subplots(1, 2, figsize=(11, 3.5))
        axes[0].hist(self.scores[self.temperature], bins=20, color="C0", alpha=0.8)
        axes[0].set_xlabel(f"item score at T = {self.temperature:g}")
        axes[0].set_ylabel("items")
        _plots.temperature_sweep(self.correlations, ax=axes[1])
        axes[1].axvline(self.temperature, color="k", linestyle=":")
        fig.tight_layout()
        self.figure.value = _png(fig)
        self.movers_view.value = (f"<p><b>largest rank changes between T = {self.temperature:g} and T = {self.compare_to:g}</b></p>"
                                  + self.movers.to_html(formatters={  # ranks as written: 57, 52.5
                                      "rank_at_T": "{:g}".format, "rank_at_compare": "{:g}".format,
                                      "rank_change": "{:+g}".format, "human": "{:.2f}".format}))


class FDBinExplorer(_StaticFallback, widgets.VBox):
    """Explore FD*'s length-bin correction: number of bins or explicit edges, and authority per tier.

    Redraws the length-bias and per-bin plots and shows Spearman's rho between length and density before and
    after the correction (:func:`evalkit.density.length_bias`), and the tier spread, with
    :func:`evalkit.density.rescore` (no model call). Edges that do not bin every claim, or a tier weight that is
    not a number >= 0, are named in the summary line and the plot is taken away until they are fixed (it would
    show the last setting that worked, not the one in the boxes).

    Parameters
    ----------
    table : DataFrame
        :func:`evalkit.density.fd_star` output.

    Examples
    --------
    >>> from evalkit import datasets, density
    >>> from evalkit.widgets import FDBinExplorer
    >>> corpus = datasets.load_demo("fd")
    >>> explorer = FDBinExplorer(density.fd_star(corpus["claims"], corpus["documents"]))
    >>> explorer.bins = 5
    >>> explorer.table["length_bin"].nunique()
    5
    """

    bins = traitlets.Int(3)
    edges = traitlets.Unicode("")

    def __init__(self, table: pd.DataFrame):
        table = check_dataframe(table, "table")
        check_columns(table, ["source", "n_tokens", "fd_raw"], "table")
        self.base = table
        self.table = table
        self.tiers = sorted(map(str, table["source"].unique()))
        self.bins_slider = widgets.IntSlider(value=3, min=2, max=8, description="bins", continuous_update=False)
        self.edges_text = widgets.Text(placeholder="or edges, e.g. 0, 150, 300, 1000", description="edges",
                                       continuous_update=False)
        self.weights = {t: widgets.FloatText(value=1.0, description=t, step=0.1, tooltip=t,
                                             style={"description_width": "initial"},
                                             layout=widgets.Layout(width="auto", min_width="14em", flex="0 0 auto"))
                        for t in self.tiers}  # the whole tier name shown: "general_article", never "general_a…"
        self.summary = widgets.HTML()
        self.figure = widgets.Image(format="png")
        traitlets.link((self.bins_slider, "value"), (self, "bins"))
        traitlets.link((self.edges_text, "value"), (self, "edges"))
        for box in self.weights.values():
            box.observe(lambda change: self.redraw(), names="value")
        super().__init__([widgets.HBox([self.bins_slider, self.edges_text]),
                          widgets.HBox([widgets.HTML("<b>tier weights</b>"), *self.weights.values()],
                                       layout=widgets.Layout(flex_flow="row wrap", align_items="center")),
                          self.summary, self.figure])
        self.redraw()

    def _snapshot_html(self) -> str:
        shown = self.figure.layout.display != "none"
        return f"<div><p>{self.summary.value}</p>{_image_html(self.figure.value) if shown else ''}</div>"

    @property
    def authority(self) -> dict:
        return {t: float(box.value) for t, box in self.weights.items()}

    @traitlets.observe("bins", "edges")
    def _changed(self, change) -> None:
        if hasattr(self, "figure"):
            self.redraw()

    def _refuse(self, text: str) -> None:
        """Say what is wrong in the summary line and take the plot away (it shows the last setting that worked)."""
        self.summary.value = (f"<span style='color: #b2182b'>{text}</span> (the plot is hidden until this is fixed; "
                              "<code>table</code> still holds the last setting that worked)")
        self.figure.layout.display = "none"

    def redraw(self) -> None:
        edges = None
        if self.edges.strip():
            try:
                edges = [float(x) for x in self.edges.replace(";", ",").split(",") if x.strip()]
            except ValueError:
                self._refuse(f"<b>edges</b> must be numbers separated by commas; got {html.escape(self.edges)!s}")
                return
        bad = {tier: weight for tier, weight in self.authority.items() if not (np.isfinite(weight) and weight >= 0)}
        if bad:
            tier, weight = next(iter(bad.items()))
            self._refuse(f"<b>tier weight</b> of {html.escape(tier)} must be a number &gt;= 0; got {weight:g}")
            return
        try:
            self.table = _density.rescore(self.base, bins=self.bins, edges=edges, authority=self.authority)
        except ValueError as exc:
            self._refuse(f"<b>cannot bin:</b> {html.escape(str(exc))}")
            return
        self.figure.layout.display = ""
        bias = _density.length_bias(self.table, n_resamples=0)  # the coefficients and p-values only
        spread = _density.tier_spread(self.table).iloc[0]
        self.summary.value = (f"length vs FD: Spearman rho = {bias.loc['fd_raw', 'r']:.3f} "
                              f"(p = {bias.loc['fd_raw', 'p_val']:.2g}) raw, rho = {bias.loc['fd_star', 'r']:.3f} (p = {bias.loc['fd_star', 'p_val']:.2g}) FD*; "
                              f"tier spread {spread['spread']:.3f} ({'collapsed' if spread['collapsed'] else 'kept'})")
        fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
        _plots.length_bias(self.table, ax=axes[0])
        _plots.fd_by_bin(self.table, column="fd_star", ax=axes[1])
        fig.tight_layout()
        self.figure.value = _png(fig)
