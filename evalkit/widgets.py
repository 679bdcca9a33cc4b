"""Notebook widgets: a labeller for human verdicts, and explorers for temperature sweeps and FD* bins.

Widgets subclass an ipywidgets container, keep their state in traitlets and call only public evalkit
functions; plots are rendered to PNG in an ``Image`` widget. They need the ``widgets`` extra (``pip install
"evalkit[widgets]"``). Everything shown from cases or model outputs is HTML-escaped: it is data, never markup.
"""

from __future__ import annotations

import bisect
import html
import io
import os
from datetime import UTC, datetime
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

try:
    import ipywidgets as widgets
    import traitlets
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError('evalkit.widgets needs ipywidgets: pip install "evalkit[widgets]"') from exc

from evalkit import calibrate as _calibrate
from evalkit import correlate as _correlate
from evalkit import density as _density
from evalkit import plots as _plots
from evalkit import tcva as _tcva
from evalkit._coerce import judge_verdicts
from evalkit._validation import check_columns, check_dataframe, check_rng, check_unique_column
from evalkit.labels import LabelsLockedError, LabelWriter, latest_labels, read_labels

__all__ = ["Labeller", "SweepExplorer", "FDBinExplorer"]

def _png(fig) -> bytes:
    """Render a figure to PNG bytes and close it (widgets show images, so nothing leaks into cell output)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    plt.close(fig)
    return buffer.getvalue()


class _StaticFallback:
    """Adds a static HTML snapshot to a widget's display data, for viewers without a live kernel.

    JupyterLab renders the live widget (its mimetype ranks first); an exported HTML report, which has no
    widget JavaScript, shows the snapshot instead of an empty box.
    """

    def _snapshot_html(self) -> str:  # pragma: no cover - overridden
        return ""

    def _repr_mimebundle_(self, **kwargs):
        bundle = super()._repr_mimebundle_(**kwargs)
        if isinstance(bundle, dict):
            bundle["text/html"] = self._snapshot_html()
        return bundle


def _image_html(png: bytes) -> str:
    import base64

    return f"<img src='data:image/png;base64,{base64.b64encode(png).decode()}' style='max-width: 100%'>" if png else ""


class Labeller(_StaticFallback, widgets.VBox):
    """Label cases one at a time; every label is on disk the moment it is made.

    Parameters
    ----------
    cases : DataFrame
        ``case_id`` and the fields to show.
    path : str or Path
        The labels file (append-only JSONL). Opening a labeller on an existing file resumes at the first
        unlabelled case. The labeller holds the file's lock while open (see :class:`evalkit.labels.LabelWriter`):
        a second labeller on the same file in another kernel is refused, naming who holds it; one opened
        again in the same kernel takes over. :meth:`close` releases it.
    levels : sequence of str, default ("PASS", "FAIL")
        One button per level (e.g. the five TCVA levels).
    show : sequence of str, default ("input", "output")
        Case fields shown, in order, as escaped text.
    judge : DataFrame or Series, optional
        The judge's verdicts (a results table or a Series by case id), shown beside the case.
    blind : bool, default True
        Hide the judge's verdict until the human has labelled the case.
    labeller : str, optional
        Who labels (default: the ``USER`` environment variable); stored in every record. Several annotators
        of one case set each use their own labels file (one writer per file); :mod:`evalkit.agreement` takes
        the files directly, e.g. ``agreement.krippendorff_alpha(["ann.jsonl", "bob.jsonl", "cy.jsonl"])``.
    rubric_version : str, optional
        Stored with every label.
    relabel : int, optional
        Re-label mode: show a random sample of this many already-labelled cases, blind to the earlier
        label; :meth:`self_agreement` then reports how often the labeller agrees with themself.
    rng : None, int or numpy.random.Generator
        For the re-label sample.

    Examples
    --------
    >>> import pathlib, tempfile, pandas as pd
    >>> from evalkit.widgets import Labeller
    >>> cases = pd.DataFrame({"case_id": ["a", "b"], "input": ["q1", "q2"], "output": ["<b>x</b>", "y"]})
    >>> lab = Labeller(cases, pathlib.Path(tempfile.mkdtemp()) / "labels.jsonl", labeller="ann")
    >>> lab.buttons["PASS"].click()
    >>> lab.labels().to_dict()
    {'a': 'PASS'}
    >>> lab.progress_text.value
    '1 / 2'
    """

    position = traitlets.Int(0)
    done = traitlets.Bool(False)

    def __init__(self, cases: pd.DataFrame, path, *, levels=("PASS", "FAIL"), show=("input", "output"), judge=None,
                 blind: bool = True, labeller: str | None = None, rubric_version: str | None = None,
                 relabel: int | None = None, rng=None):
        cases = check_dataframe(cases, "cases")
        check_columns(cases, ["case_id", *show], "cases")
        check_unique_column(cases, "case_id", "cases")
        if len(levels) < 2 or len(set(levels)) != len(levels):
            raise ValueError(f"`levels` must hold at least two distinct labels; got {list(levels)}.")
        self.cases = cases.reset_index(drop=True)
        self.path = Path(path)
        self.levels = tuple(levels)
        self.show = tuple(show)
        self.blind = blind
        self.labeller = labeller or os.environ.get("USER", "anonymous")
        self.rubric_version = rubric_version
        self._writer = LabelWriter(self.path, labeller=self.labeller)  # locks the file and repairs a torn tail
        self.session = self._writer.session
        self._judge = None if judge is None else judge_verdicts(judge)
        self._history: list[int] = []  # positions labelled in this session, for undo
        existing = latest_labels(read_labels(self.path))["label"]
        done = set(existing.index)
        self.mode = "label"
        if relabel is not None:
            labelled = [i for i, c in enumerate(self.cases["case_id"]) if c in done]
            if not labelled:
                self._writer.close()
                raise ValueError(f"re-label mode needs already-labelled cases; {self.path} has none.")
            size = min(int(relabel), len(labelled))
            self.order = sorted(check_rng(rng).choice(labelled, size=size, replace=False).tolist())
            self.mode = "relabel"
        else:
            self.order = list(range(len(self.cases)))
        self._ids = [str(self.cases.at[row, "case_id"]) for row in self.order]  # case id at each position
        # Latest label per case in this mode, kept in step with the file so a click never re-reads it, and the
        # positions still open, sorted: a click updates both in O(log n) instead of rescanning every case.
        self._current: dict[str, str] = {} if self.mode == "relabel" else {str(k): v for k, v in existing.items()}
        self._open = [i for i, case in enumerate(self._ids) if case not in self._current]

        self.case_view = widgets.HTML()
        self.judge_view = widgets.HTML()
        self.buttons = {lvl: widgets.Button(description=lvl, tooltip=f"label {lvl} (key {i + 1})",
                                            button_style="success" if lvl == "PASS" else "danger" if lvl == "FAIL" else "")
                        for i, lvl in enumerate(self.levels)}
        for level, button in self.buttons.items():
            button.on_click(lambda _, level=level: self.label(level))
        self.note = widgets.Textarea(placeholder="optional note, saved with the next label", layout=widgets.Layout(width="100%"))
        self.skip_button = widgets.Button(description="skip", tooltip="skip (key s)")
        self.back_button = widgets.Button(description="back", tooltip="previous case (key b)")
        self.undo_button = widgets.Button(description="undo", tooltip="undo the last label (key u)")
        self.skip_button.on_click(lambda _: self.skip())
        self.back_button.on_click(lambda _: self.back())
        self.undo_button.on_click(lambda _: self.undo())
        self.progress = widgets.IntProgress(min=0, max=len(self.order))
        self.progress_text = widgets.Label()
        self.status = widgets.HTML()
        controls = widgets.HBox([*self.buttons.values(), self.skip_button, self.back_button, self.undo_button])
        super().__init__([widgets.HBox([self.progress, self.progress_text]), self.case_view, self.judge_view,
                          controls, self.note, self.status])
        self._keyboard()
        start = self._open[0] if self._open else len(self.order)
        self._sync_progress()
        self.position = start
        self._render()

    # ------------------------------------------------------------------ state
    @property
    def current_case(self) -> str | None:
        """The case id on screen (None when every case is done)."""
        return None if self.position >= len(self.order) else self._ids[self.position]

    @traitlets.observe("position")
    def _on_position(self, change) -> None:
        self._render()

    def _sync_progress(self) -> None:
        n_done = len(self.order) - len(self._open)
        self.progress.value = n_done
        self.progress_text.value = f"{n_done} / {len(self.order)}"
        self.done = n_done == len(self.order)

    # ------------------------------------------------------------------ actions
    def _write(self, record: dict) -> bool:
        """Append a record; a labeller replaced by a newer one on the same file says so and writes nothing."""
        try:
            self._writer.append(record)
        except LabelsLockedError as exc:
            self.status.value = f"<b>not saved</b>: {html.escape(str(exc))}"
            return False
        return True

    def close(self) -> None:
        """Release the labels file (its lock) and close the widget."""
        writer = getattr(self, "_writer", None)  # None when the constructor stopped early
        if writer is not None:
            writer.close()
        super().close()

    def _mark(self, position: int, labelled: bool) -> None:
        """Keep the sorted list of open positions in step with a label or an undo."""
        at = bisect.bisect_left(self._open, position)
        present = at < len(self._open) and self._open[at] == position
        if labelled and present:
            del self._open[at]
        elif not labelled and not present:
            self._open.insert(at, position)

    def label(self, level: str) -> None:
        """Record ``level`` for the case on screen, then show the next case."""
        if level not in self.levels:
            raise ValueError(f"`level` must be one of {list(self.levels)}; got {level!r}.")
        case = self.current_case
        if case is None:
            return
        if not self._write({"case_id": case, "label": level, "labeller": self.labeller,
                            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds"),
                            "position": self.order[self.position], "rubric_version": self.rubric_version,
                            "note": self.note.value or None, "mode": self.mode, "session": self.session}):
            return
        self._current[case] = level
        self._mark(self.position, True)
        self._history.append(self.position)
        self.note.value = ""
        self._sync_progress()
        self._advance()

    def _advance(self) -> None:
        """Go to the next unlabelled case, wrapping around to skipped ones; past the end when none is left."""
        at = bisect.bisect_right(self._open, self.position)
        self.position = self._open[at] if at < len(self._open) else self._open[0] if self._open else len(self.order)

    def skip(self) -> None:
        """Leave the case unlabelled for now and show the next one (skipped cases come round again)."""
        if self.position < len(self.order):
            self.position += 1

    def back(self) -> None:
        """Show the previous case (its label, if any, is shown and can be replaced)."""
        if self.position > 0:
            self.position -= 1

    def undo(self) -> None:
        """Retract the last label of this session (an undo record is appended) and return to that case."""
        if not self._history:
            self.status.value = "<i>nothing to undo in this session</i>"
            return
        position = self._history.pop()
        case = self._ids[position]
        if not self._write({"case_id": case, "label": None, "labeller": self.labeller,
                            "timestamp": datetime.now(UTC).isoformat(timespec="milliseconds"),
                            "position": self.order[position], "rubric_version": self.rubric_version, "note": "undo",
                            "mode": self.mode, "session": self.session}):
            self._history.append(position)
            return
        self._current.pop(case, None)
        self._mark(position, False)
        self._sync_progress()
        self.position = position
        self._render()

    def _keyboard(self) -> None:
        """Keys 1..n label, s skips, b goes back, u undoes (needs ipyevents; buttons work without it).

        In JupyterLab the keys reach the labeller once its background has been clicked (focus out of the
        code editor and the buttons) and while the pointer is over it.
        """
        try:
            from ipyevents import Event
        except ImportError:
            self._events = None
            return
        # prevent_default_action stops JupyterLab from also acting on the key (e.g. "1" = heading in command mode).
        self._events = Event(source=self, watched_events=["keydown"], prevent_default_action=True)
        self._events.on_dom_event(self.handle_key)

    def handle_key(self, event: dict) -> None:
        """Act on a key event (``{"key": ...}``) as the keyboard shortcuts do."""
        key = str(event.get("key", ""))
        if key.isdigit() and 1 <= int(key) <= len(self.levels):
            self.label(self.levels[int(key) - 1])
        elif key == "s":
            self.skip()
        elif key == "b":
            self.back()
        elif key == "u":
            self.undo()

    # ------------------------------------------------------------------ display
    def _render(self) -> None:
        case = self.current_case
        if case is None:
            left = len(self.order) - self.progress.value
            self.case_view.value = ("<p><b>All cases are labelled.</b> Call <code>.labels()</code> for the labels.</p>"
                                    if left == 0 else f"<p><b>End of the list</b>: {left} skipped case(s) are still "
                                    "unlabelled; press <i>back</i> to return to them.</p>")
            self.judge_view.value = ""
            self.status.value = ""
            return
        row = self.cases.iloc[self.order[self.position]]
        parts = [f"<p><b>case</b> <code>{html.escape(case)}</code></p>"]
        for name in self.show:
            value = row[name]
            text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
            parts.append(f"<p><b>{html.escape(str(name))}</b></p><pre style='white-space: pre-wrap'>{html.escape(text)}</pre>")
        self.case_view.value = "".join(parts)
        previous = self._current.get(case)
        self.status.value = f"current label: <b>{html.escape(str(previous))}</b>" if previous else ""
        if self._judge is None:
            self.judge_view.value = ""
        elif self.blind and previous is None:
            self.judge_view.value = "<i>judge verdict hidden until you label this case</i>"
        else:
            verdict = self._judge.get(case)
            self.judge_view.value = f"judge: <b>{html.escape(str(verdict))}</b>"

    def _snapshot_html(self) -> str:
        return (f"<div><p>Labeller: {html.escape(self.progress_text.value)} labelled "
                f"(labels file <code>{html.escape(str(self.path))}</code>)</p>{self.case_view.value}</div>")

    # ------------------------------------------------------------------ results
    def labels(self) -> pd.Series:
        """The latest label per case from the file: a Series by case id, as :func:`evalkit.calibrate.calibrate` takes."""
        return latest_labels(read_labels(self.path))["label"].rename("label")

    def records(self) -> pd.DataFrame:
        """The latest record per case from the file, every field (``case_id`` first), as
        :func:`evalkit.calibrate.agreement_drift` takes."""
        return latest_labels(read_labels(self.path)).reset_index()

    def self_agreement(self) -> pd.DataFrame:
        """How often re-labels match the earlier labels (:func:`evalkit.calibrate.self_agreement` on this file)."""
        return _calibrate.self_agreement(read_labels(self.path))


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

    Redraws the length-bias and per-bin plots and shows Pearson r between length and density before and
    after the correction, and the tier spread, with :func:`evalkit.density.rescore` (no model call).

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
        self.weights = {t: widgets.FloatText(value=1.0, description=t[:18], step=0.1) for t in self.tiers}
        self.summary = widgets.HTML()
        self.figure = widgets.Image(format="png")
        traitlets.link((self.bins_slider, "value"), (self, "bins"))
        traitlets.link((self.edges_text, "value"), (self, "edges"))
        for box in self.weights.values():
            box.observe(lambda change: self.redraw(), names="value")
        super().__init__([widgets.HBox([self.bins_slider, self.edges_text]), widgets.HBox(list(self.weights.values())),
                          self.summary, self.figure])
        self.redraw()

    def _snapshot_html(self) -> str:
        return f"<div><p>{self.summary.value}</p>{_image_html(self.figure.value)}</div>"

    @property
    def authority(self) -> dict:
        return {t: float(box.value) for t, box in self.weights.items()}

    @traitlets.observe("bins", "edges")
    def _changed(self, change) -> None:
        if hasattr(self, "figure"):
            self.redraw()

    def redraw(self) -> None:
        edges = None
        if self.edges.strip():
            try:
                edges = [float(x) for x in self.edges.replace(";", ",").split(",") if x.strip()]
            except ValueError:
                self.summary.value = f"<b>edges</b> must be numbers separated by commas; got {html.escape(self.edges)!s}"
                return
        try:
            self.table = _density.rescore(self.base, bins=self.bins, edges=edges, authority=self.authority)
        except ValueError as exc:
            self.summary.value = f"<b>cannot bin:</b> {html.escape(str(exc))}"
            return
        bias = _density.length_bias(self.table)
        spread = _density.tier_spread(self.table).iloc[0]
        self.summary.value = (f"length vs FD: r = {bias.loc['fd_raw', 'r']:.3f} (p = {bias.loc['fd_raw', 'p_val']:.2g}) raw, "
                              f"r = {bias.loc['fd_star', 'r']:.3f} (p = {bias.loc['fd_star', 'p_val']:.2g}) FD*; "
                              f"tier spread {spread['spread']:.3f} ({'collapsed' if spread['collapsed'] else 'kept'})")
        fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
        _plots.length_bias(self.table, ax=axes[0])
        _plots.fd_by_bin(self.table, column="fd_star", ax=axes[1])
        fig.tight_layout()
        self.figure.value = _png(fig)
