"""Notebook widgets: labellers for human verdicts and pairwise votes, and explorers for temperature sweeps and FD* bins.

Widgets subclass an ipywidgets container, keep their state in traitlets and call only public evalkit
functions; plots are rendered to PNG in an ``Image`` widget. They need the ``widgets`` extra (``pip install
"evalkit[widgets]"``). Everything shown from cases or model outputs is HTML-escaped: it is data, never markup.
"""

from __future__ import annotations

import bisect
import html
import io
import json
import os
import warnings
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

try:
    import anywidget
    import ipywidgets as widgets
    import traitlets
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError('evalkit.widgets needs ipywidgets and anywidget: pip install "evalkit[widgets]"') from exc

from evalkit import _stats
from evalkit import calibrate as _calibrate
from evalkit import correlate as _correlate
from evalkit import density as _density
from evalkit import infer as _infer
from evalkit import plots as _plots
from evalkit import tcva as _tcva
from evalkit._coerce import as_pass, judge_verdicts
from evalkit._validation import (
    EvalkitWarning,
    check_columns,
    check_dataframe,
    check_number,
    check_option,
    check_rng,
    check_unique_column,
)
from evalkit.labels import ORDER_FIELDS, LabelsLockedError, LabelWriter, latest_labels, read_labels

__all__ = ["Labeller", "PairwiseLabeller", "AnnotatorError", "SweepExplorer", "FDBinExplorer"]

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


# ---------------------------------------------------------------------------------------------- labelling
# The keys line of a labeller. ipywidgets has no key events; ipyevents listens on the whole document while the
# pointer is over a widget, so it takes keys typed into a text field (and lets them reach JupyterLab once the
# pointer drifts off). This small front end listens only on the labeller's own areas, only while one of them
# has the focus, never for a key typed into a text field, and keeps every plain key it sees from JupyterLab
# (its command-mode shortcuts would insert or delete cells).
_KEYS_ESM = r"""
const TEXT = "input, textarea, select, [contenteditable]:not([contenteditable='false'])";
const isText = (node) => !!(node && node.closest && node.closest(TEXT));

function render({ model, el }) {
  el.classList.add("evalkit-keys-line");
  const state = document.createElement("span");
  const legend = document.createElement("span");
  state.className = "evalkit-keys-state";
  el.append(state, legend);
  let areas = [];
  const active = () => areas.some((a) => a.contains(document.activeElement)) && !isText(document.activeElement);
  const paint = () => {
    const on = active();
    for (const a of areas) a.classList.toggle("evalkit-keys-active", on);
    el.classList.toggle("evalkit-keys-on", on);
    state.textContent = on ? "\u2328 keys active" : "keys off: click the case or the buttons to use them";
    legend.textContent = " \u00b7 " + model.get("legend");
  };
  const onKey = (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing || isText(event.target)) return;
    if (event.key === "Enter" || event.key === " ") { event.stopPropagation(); return; }  // a focused button acts
    if (event.key.length !== 1) return;  // Tab, arrows, Escape: as everywhere
    event.preventDefault();
    event.stopPropagation();
    model.send({ key: event.key });
  };
  const onDown = (event) => {
    if (isText(event.target) || event.target.closest("button")) return;
    const area = event.currentTarget;
    setTimeout(() => area.focus({ preventScroll: true }), 0);
  };
  const onOut = () => setTimeout(paint, 0);
  const attach = () => {
    if (!el.isConnected) { requestAnimationFrame(attach); return; }
    const root = el.closest(".evalkit-labeller");
    areas = root ? Array.from(root.querySelectorAll(".evalkit-keyarea")) : [];
    for (const a of areas) {
      if (!a.hasAttribute("tabindex")) a.tabIndex = 0;
      a.addEventListener("keydown", onKey);
      a.addEventListener("mousedown", onDown);
      a.addEventListener("focusin", paint);
      a.addEventListener("focusout", onOut);
    }
    paint();
  };
  model.on("change:legend", paint);
  attach();
  return () => {
    model.off("change:legend", paint);
    for (const a of areas) {
      a.removeEventListener("keydown", onKey);
      a.removeEventListener("mousedown", onDown);
      a.removeEventListener("focusin", paint);
      a.removeEventListener("focusout", onOut);
    }
  };
}
export default { render };
"""

_KEYS_CSS = """
.evalkit-keyarea { border: 2px dashed #c8c8c8; border-radius: 4px; padding: 2px 6px; margin: 2px 0; outline: none; }
.evalkit-keyarea:focus { outline: none; }
.evalkit-keyarea.evalkit-keys-active { border: 2px solid #1a9850; background: #f6fbf7; }
.evalkit-keys-line { font-size: 0.92em; color: #555; padding: 2px 0; }
.evalkit-keys-line .evalkit-keys-state { font-weight: 600; color: #888; }
.evalkit-keys-line.evalkit-keys-on .evalkit-keys-state { color: #1a7a40; }
.evalkit-relabel { border-left: 6px solid #e66101; padding-left: 8px; }
"""

_BREAK_S = 600  # a gap longer than this between two labels is a break, not labelling time
_FIELD_BOX = ("max-height: {height}; overflow: auto; white-space: pre-wrap; word-break: normal; overflow-wrap: break-word; "
              "border: 1px solid #ddd; border-radius: 3px; padding: 4px 8px; margin: 2px 0 6px 0; background: #fcfcfc; "
              "font-family: {font}; font-size: 0.95em; line-height: 1.4")


class _Keys(anywidget.AnyWidget):
    """The keys line: the legend and whether the keys are live; sends ``{"key": ...}`` for a key typed there."""

    _esm = _KEYS_ESM
    _css = _KEYS_CSS
    legend = traitlets.Unicode("").tag(sync=True)


class AnnotatorError(ValueError):
    """The annotator is not named while the labels file or its folder holds other annotators' labels.

    In a notebook the refusal shows as its one-line message, not a traceback.
    """

    def _render_traceback_(self) -> list[str]:  # IPython shows these lines instead of the traceback
        return [f"{type(self).__name__}: {self}"]


def _now() -> datetime:
    return datetime.now(UTC)


def _duration(seconds: float, *, tenths: bool = False) -> str:
    seconds = max(0.0, float(seconds))
    if tenths and seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes = seconds / 60
    if minutes < 60:
        return f"{minutes:.0f} min"
    return f"{int(minutes // 60)} h {int(minutes % 60):02d} min"


def _blank(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or value is pd.NA


def _field_html(value, *, height: str = "14em") -> str:
    """An escaped field in a scroll box; JSON objects and arrays pretty-printed in a fixed-width font."""
    text = "" if _blank(value) else str(value)
    font = "inherit"
    stripped = text.strip()
    if stripped[:1] in "{[" and stripped:
        try:
            parsed = json.loads(stripped)
        except ValueError:
            parsed = None
        if isinstance(parsed, (dict, list)):
            text, font = json.dumps(parsed, indent=2, ensure_ascii=False), "var(--jp-code-font-family, monospace)"
    return f"<div style='{_FIELD_BOX.format(height=height, font=font)}'>{html.escape(text)}</div>"


def _default_name() -> str:
    return os.environ.get("USER") or "anonymous"


def _check_annotator(path: Path, labeller) -> tuple[str, bool]:
    """``(name, defaulted)``; a missing name is refused when the file or its folder holds other annotators' labels."""
    if labeller is not None:
        if not isinstance(labeller, str) or not labeller.strip():
            raise TypeError(f"`labeller` must be the annotator's name (a non-empty string); got {labeller!r}.")
        return labeller.strip(), False
    name = _default_name()
    others = []
    if path.parent.is_dir():
        for file in sorted(path.parent.glob("*.jsonl")):
            try:
                records = read_labels(file)
            except (ValueError, OSError):
                continue  # not a labels file
            named = records[records["label"].notna() & records["labeller"].notna()]
            same = file.resolve() == path.resolve()
            found = sorted(set(map(str, named["labeller"])) - ({name} if same else set()))
            others += [f"{who!r} ({file.name})" for who in found]
    if others:
        raise AnnotatorError(f"name the annotator: {path.parent}{os.sep} holds labels by {', '.join(others[:4])}"
                             f"{' and others' if len(others) > 4 else ''}; pass labeller='your name' (and a labels file "
                             "of your own) so that your labels are not merged with theirs.")
    return name, True


class _LabellerBase(_StaticFallback, widgets.VBox):
    """What every labeller shares: the labels file and its annotator, the key areas, notes, the unsure flag,
    skip/back/undo, blind rules, pacing and the end summary. Subclasses show a case and add record fields."""

    position = traitlets.Int(0)
    done = traitlets.Bool(False)

    _kind = "case"  # how the status line names one item
    _hidden = "the judge's verdict"  # what blind mode hides

    def _setup(self, ids: list[str], rows: list[int], path, *, levels, descriptions, labeller, rubric, rubric_version,
               blind: bool, relabel, rng, existing_records: pd.DataFrame | None = None) -> None:
        self.path = Path(path)
        self.levels = tuple(levels)
        self.blind = bool(blind)
        self.labeller, self._defaulted = _check_annotator(self.path, labeller)
        self._rubric_text, criterion = self._rubric_parts(rubric)
        self.rubric_version = rubric_version if rubric_version is not None else getattr(rubric, "version", None)
        if relabel is not None:
            relabel = check_number(relabel, "relabel", low=1, integer=True)
        records = read_labels(self.path) if existing_records is None else existing_records
        mine = records[records["labeller"].astype(object).eq(self.labeller) | records["labeller"].isna()]
        self._writer = LabelWriter(self.path, labeller=self.labeller)  # locks the file and repairs a torn tail
        try:
            self._build(ids, rows, records, mine, descriptions=descriptions, criterion=criterion, relabel=relabel, rng=rng)
        except BaseException:
            self._writer.close()  # a labeller that could not be built holds no lock
            raise

    def _build(self, ids, rows, records, mine, *, descriptions, criterion, relabel, rng) -> None:
        self.session = self._writer.session
        self._session_start = _now()
        latest = latest_labels(records)
        first = {str(case): {"label": label, "note": None if _blank(note) else note, "unsure": bool(unsure)}
                 for case, label, note, unsure in zip(latest.index, latest["label"], latest["note"], latest["unsure"],
                                                      strict=True)}
        ids_all = [str(c) for c in ids]
        self.mode = "label"
        if relabel is not None:
            labelled = [i for i, case in enumerate(ids_all) if case in first]
            if not labelled:
                raise ValueError(f"re-label mode needs already-labelled cases; {self.path} has none.")
            size = min(relabel, len(labelled))
            chosen = sorted(check_rng(rng).choice(labelled, size=size, replace=False).tolist())
            self.order = [rows[i] for i in chosen]
            self._ids = [ids_all[i] for i in chosen]
            self.mode = "relabel"
        else:
            self.order = list(rows)
            self._ids = ids_all
        self._at = {case: i for i, case in enumerate(self._ids)}  # position of each case id
        # The latest record per case in this mode, kept in step with the file so a click never re-reads it, and the
        # positions still open, sorted: a click updates both in O(log n) instead of rescanning every case.
        self._current: dict[str, dict] = {} if self.mode == "relabel" else {
            case: record for case, record in first.items() if case in self._at}
        self._open = [i for i, case in enumerate(self._ids) if case not in self._current]
        self._tally = Counter(str(r["label"]) for r in self._current.values())
        self._unsure = sum(bool(r.get("unsure")) for r in self._current.values())
        self._stack = self._undo_stack(mine) if self.mode == "label" else []
        self._revealed = set(map(str, mine.loc[mine["mode"].fillna("label") == "reveal", "case_id"])) & set(self._at)
        self._drafts: dict[str, tuple[str, bool]] = {}
        self._gaps = self._pacing(mine)
        self._last: datetime | None = None  # the time of the last label in this session
        self._others = sorted(set(map(str, records.loc[records["label"].notna(), "labeller"].dropna())) - {self.labeller})

        # ---- the view
        self.header = widgets.HTML(self._header_html())
        children = [self.header]
        if criterion:
            children.append(widgets.HTML(criterion))
        if self._rubric_text:
            self.rubric_panel = widgets.Accordion(children=[widgets.HTML(
                f"<div style='white-space: pre-wrap; word-break: normal; overflow-wrap: break-word; max-height: 18em; "
                f"overflow: auto'>{html.escape(self._rubric_text)}</div>")], titles=("rubric (click to show or hide)",),
                selected_index=None)
            children.append(self.rubric_panel)
        self.buttons = {level: widgets.Button(description=text, tooltip=f"label {level} (key {i + 1})" if i < 9 else f"label {level}",
                                              button_style=self._button_style(level))
                        for i, (level, text) in enumerate(zip(self.levels, descriptions, strict=True))}
        for level, button in self.buttons.items():
            button.on_click(lambda _, level=level: self.label(level))
        self.unsure_button = widgets.ToggleButton(value=False, description="unsure", icon="question",
                                                  tooltip="flag this label as unsure (key ?): saved beside the label")
        self.skip_button = widgets.Button(description="skip", tooltip="skip for now; it comes round again (key s)")
        self.back_button = widgets.Button(description="back", tooltip="previous case (key b)")
        self.undo_button = widgets.Button(description="undo", tooltip="undo the last label in this file (key u)")
        self.reveal_button = widgets.Button(description=f"show {self._hidden}", icon="eye",
                                            tooltip="blind labelling: this click is recorded in the labels file",
                                            layout=widgets.Layout(display="none", width="auto"))
        self.unsure_button.observe(self._on_unsure, names="value")
        self.skip_button.on_click(lambda _: self.skip())
        self.back_button.on_click(lambda _: self.back())
        self.undo_button.on_click(lambda _: self.undo())
        self.reveal_button.on_click(lambda _: self.reveal())
        self.keys_line = _Keys(legend=self._legend())
        self.keys_line.on_msg(lambda _widget, content, _buffers: self.handle_key(content if isinstance(content, dict) else {}))
        self.progress = widgets.IntProgress(min=0, max=max(len(self.order), 1), layout=widgets.Layout(width="14em"))
        self.progress_text = widgets.Label()
        self.pacing = widgets.HTML()  # the progress line: tally and pacing
        self.watch_view = widgets.HTML(layout=widgets.Layout(display="none"))  # the live interval, when one is watched
        self.status = widgets.HTML(layout=widgets.Layout(min_height="1.6em"))
        self.case_view = widgets.HTML()
        self.judge_view = widgets.HTML()
        self.note = widgets.Textarea(placeholder=f"note on this {self._kind} (optional): saved with its label; the keys are off "
                                     "while you type here", rows=2, layout=widgets.Layout(width="100%"))
        controls = widgets.HBox([*self.buttons.values(), self.unsure_button, self.skip_button, self.back_button,
                                 self.undo_button], layout=widgets.Layout(flex_flow="row wrap"))
        top = widgets.VBox([self.keys_line, widgets.HBox([self.progress, self.progress_text, self.pacing],
                                                    layout=widgets.Layout(align_items="center")),
                            self.watch_view, controls, self.status])
        bottom = widgets.VBox([self.case_view, widgets.HBox([self.judge_view, self.reveal_button],
                                                            layout=widgets.Layout(align_items="center"))])
        for area in (top, bottom):  # the case-and-buttons areas take the keys; the note box between them does not
            area.add_class("evalkit-keyarea")
        super().__init__(children + [top, self.note, bottom])
        self.add_class("evalkit-labeller")
        if self.mode == "relabel":
            self.add_class("evalkit-relabel")
        self._quiet = False
        self._start_watch(records)
        self._sync_progress()
        self.position = self._open[0] if self._open else len(self.order)
        self._ready = True
        self._enter()
        self._render()
        before = len(self.order) - len(self._open)
        if self.done:
            self._say(f"nothing left to label: {self._end_line()}")
        elif before:
            self._say(f"resumed: {before} of {len(self.order)} labelled before; the first open {self._kind} is "
                      f"{self._code(self.current_case)}")
        else:
            self._say(f"ready: {self._count(len(self.order))} to label")

    # ------------------------------------------------------------------ set-up helpers
    @staticmethod
    def _rubric_parts(rubric) -> tuple[str, str]:
        """(panel text, always-visible criterion line) from a Rubric (its criterion and levels) or a string."""
        if rubric is None:
            return "", ""
        if isinstance(rubric, str):
            first = rubric.strip().split("\n")[0]
            first = first if len(first) <= 240 else first[:240].rsplit(" ", 1)[0] + " …"
            return rubric, f"<div style='padding: 2px 0; line-height: 1.45'><b>rubric</b>: {html.escape(first)}</div>"
        criterion = getattr(rubric, "criterion", None)
        if not isinstance(criterion, str):
            raise TypeError(f"`rubric` must be an evalkit.judge.Rubric or its text (a string); got {type(rubric).__name__}.")
        passing = ", ".join(getattr(rubric, "pass_levels", ()) or ())
        line = (f"<div style='padding: 2px 0; line-height: 1.45'><b>{html.escape(passing or 'PASS')}</b> when: {html.escape(criterion)}</div>")
        text = (f"{rubric.name} (version {rubric.version})\n\nCriterion: {criterion}\n\nLevels: {', '.join(rubric.levels)}"
                f" (pass: {passing})\n\nThe judge's prompt:\n{rubric.template}")
        return text, line

    def _button_style(self, level: str) -> str:
        return "success" if level == "PASS" else "danger" if level == "FAIL" else ""

    def _legend(self) -> str:
        keys = [f"{i + 1} {self._shown_label(level)}" for i, level in enumerate(self.levels[:9])]
        return " · ".join([*keys, "s skip", "b back", "u undo", "? unsure"])

    def _undo_stack(self, mine: pd.DataFrame) -> list[int]:
        """Positions in the order their labels were last made, from this file: undo works across restarts."""
        rows = mine[mine["mode"].fillna("label") == "label"]
        last = rows.assign(case_id=rows["case_id"].astype(str)).drop_duplicates("case_id", keep="last")
        return [self._at[case] for case in last.loc[last["label"].notna(), "case_id"] if case in self._at]

    def _pacing(self, mine: pd.DataFrame) -> list[float]:
        """Seconds between consecutive labels within each earlier session (breaks left out), for the pace."""
        rows = mine[(mine["mode"].fillna("label") == self.mode) & mine["label"].notna()]
        times = pd.to_datetime(rows["timestamp"], errors="coerce", utc=True)
        gaps = []
        for _, group in times.groupby(rows["session"].fillna("").to_numpy()):
            diffs = group.dropna().sort_values().diff().dt.total_seconds().dropna()
            gaps += [float(d) for d in diffs if 0 < d <= _BREAK_S]
        return gaps

    def _header_html(self) -> str:
        name = f"<b>{html.escape(self.labeller)}</b>"
        if self._defaulted:
            name += (" <span style='color: #b35806'>(no name given, so the default: pass <code>labeller=</code> to "
                     "label under your own name)</span>")
        extra = ""
        if self._others:
            extra = f" · this file also holds labels by {html.escape(', '.join(map(repr, self._others[:4])))}"
        style = "background: #f3f3f3; border-left: 6px solid #999"
        badge = ""
        if self.mode == "relabel":
            style = "background: #fee0b6; border-left: 6px solid #e66101"
            badge = (f"<div><b>RE-LABEL MODE</b>: {self._count(len(self.order))} you labelled before, drawn at random, "
                     "blind to your earlier labels and to the judge; kept apart in the file as <code>mode=\"relabel\"</code> "
                     "(<code>self_agreement()</code> compares them)</div>")
        else:
            badge = self._mode_badge()
        return (f"<div style='{style}; padding: 4px 8px; border-radius: 3px; line-height: 1.45'>labelling as {name} → "
                f"<code>{html.escape(str(self.path))}</code>{extra}{badge}</div>")

    def _mode_badge(self) -> str:
        return ""

    # hooks for a live estimate (the Labeller's watch=): none by default
    def _start_watch(self, records: pd.DataFrame) -> None:
        pass

    def _watch_labelled(self, case: str, old: dict | None) -> None:
        pass

    def _watch_undone(self, case: str) -> None:
        pass

    def _show_watch(self) -> None:
        pass

    # ------------------------------------------------------------------ state
    @property
    def current_case(self) -> str | None:
        """The case id on screen (None when every case is done)."""
        return None if self.position >= len(self.order) else self._ids[self.position]

    @traitlets.observe("position")
    def _on_position(self, change) -> None:
        if getattr(self, "_ready", False):
            self._leave(change["old"])
            self._enter()
            self._render()

    def _leave(self, position: int) -> None:
        """Keep a note or flag typed for a case but not yet saved, for when it comes round again."""
        if not 0 <= position < len(self._ids):
            return
        case = self._ids[position]
        record = self._current.get(case) or {}
        typed = (self.note.value, bool(self.unsure_button.value))
        if typed != ((record.get("note") or ""), bool(record.get("unsure"))):
            self._drafts[case] = typed
        else:
            self._drafts.pop(case, None)

    def _enter(self) -> None:
        """Fill the note box and the unsure flag for the case on screen: a draft, else its label's, else empty."""
        case = self.current_case
        record = (self._current.get(case) or {}) if case is not None else {}
        note, unsure = self._drafts.get(case, ((record.get("note") or ""), bool(record.get("unsure"))))
        self._quiet = True
        self.note.value, self.unsure_button.value = note, unsure
        self._quiet = False

    def _sync_progress(self) -> None:
        n_done = len(self.order) - len(self._open)
        self.progress.value = n_done
        self.progress_text.value = f"{n_done} / {len(self.order)}"
        self.done = n_done == len(self.order)
        self.pacing.value = "".join(f" · {html.escape(part)}" for part in self._progress_segments())
        self._show_watch()

    def _progress_segments(self) -> list[str]:
        """The parts of the progress line after ``k / n``: the tally, then the pace."""
        parts = [" · ".join(f"{self._tally.get(level, 0)} {self._shown_label(level)}" for level in self.levels)]
        if self._unsure:
            parts.append(f"{self._unsure} unsure")
        parts.append(f"{_duration((_now() - self._session_start).total_seconds())} this session")
        if self._gaps:
            pace = float(np.median(self._gaps))
            parts.append(f"{_duration(pace, tenths=True)} per label")
            if self._open:
                parts.append(f"about {_duration(pace * len(self._open))} left")
        else:
            parts.append("pace after two labels")
        return parts

    def _count(self, n: int, adjective: str = "") -> str:
        """``"1 case"``, ``"3 skipped cases"``."""
        return f"{n} {adjective + ' ' if adjective else ''}{self._kind}{'' if n == 1 else 's'}"

    def _say(self, text: str) -> None:
        """The one-line status after an action (already escaped HTML)."""
        self.status.value = text

    def _code(self, case) -> str:
        return f"<code>{html.escape(str(case))}</code>"

    # ------------------------------------------------------------------ actions
    def _write(self, record: dict) -> bool:
        """Append a record; a refusal (a newer labeller took over, a full disk) says so and changes nothing."""
        try:
            self._writer.append(record)
        except (LabelsLockedError, OSError) as exc:
            self._say(f"<b style='color: #b2182b'>not saved</b>: {html.escape(str(exc))}")
            return False
        return True

    def _record(self, position: int, label, *, mode: str | None = None, note=None, unsure: bool = False) -> dict:
        return {"case_id": self._ids[position], "label": label, "labeller": self.labeller,
                "timestamp": _now().isoformat(timespec="milliseconds"), "position": self.order[position],
                "rubric_version": self.rubric_version, "note": note, "mode": mode or self.mode, "session": self.session,
                "unsure": bool(unsure)}

    def _extra_fields(self, position: int) -> dict:
        """Fields a subclass adds to a label record."""
        return {}

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

    def _forget(self, case: str) -> dict | None:
        """Take a case's current label out of the tally; returns its record."""
        old = self._current.pop(case, None)
        if old is not None:
            self._tally[str(old["label"])] -= 1
            self._unsure -= bool(old.get("unsure"))
        return old

    def label(self, level: str) -> None:
        """Record ``level`` for the case on screen (with the note and the unsure flag), then show the next case."""
        if level not in self.levels:
            raise ValueError(f"`level` must be one of {list(self.levels)}; got {level!r}.")
        case = self.current_case
        if case is None:
            self._say(f"nothing to label: {self._end_line()}")
            return
        note, unsure = self.note.value.strip() or None, bool(self.unsure_button.value)
        record = {**self._record(self.position, level, note=note, unsure=unsure), **self._extra_fields(self.position)}
        if not self._write(record):
            return
        now = _now()
        if self._last is not None and 0 < (now - self._last).total_seconds() <= _BREAK_S:
            self._gaps.append((now - self._last).total_seconds())
        self._last = now
        old = self._forget(case)
        self._current[case] = record
        self._tally[level] += 1
        self._unsure += unsure
        self._drafts.pop(case, None)
        self._mark(self.position, True)
        self._watch_labelled(case, old)
        if self.position in self._stack:
            self._stack.remove(self.position)
        self._stack.append(self.position)
        self._sync_progress()
        flags = ", ".join(x for x in ("unsure" if unsure else "", "with a note" if note else "") if x)
        self._say(f"labelled {self._code(case)} <b>{html.escape(self._shown_label(level))}</b>"
                  + (f" ({flags})" if flags else ""))
        self._advance()

    def _shown_label(self, level: str) -> str:
        return level

    def _advance(self) -> None:
        """Go to the next unlabelled case, wrapping around to skipped ones; past the end when none is left."""
        at = bisect.bisect_right(self._open, self.position)
        self.position = self._open[at] if at < len(self._open) else self._open[0] if self._open else len(self.order)

    def skip(self) -> None:
        """Leave the case unlabelled for now and show the next one (skipped cases come round again)."""
        if self.position < len(self.order):
            case = self.current_case
            self.position += 1
            self._say(f"skipped {self._code(case)}: it comes round again")
        elif self._open:
            self.position = self._open[0]
            self._say(f"back to the first {self._kind} still open, {self._code(self.current_case)}")
        else:
            self._say(f"nothing to skip: {self._end_line()}")

    def back(self) -> None:
        """Show the previous case (your label, if any, is shown and can be replaced)."""
        if self.position == 0:
            self._say(f"already at the first {self._kind}")
            return
        self.position -= 1
        record = self._current.get(self.current_case)
        self._say(f"back to {self._code(self.current_case)} · " + (
            f"current label: <b>{html.escape(self._shown_label(record['label']))}</b>" if record else "not labelled yet"))

    def undo(self) -> None:
        """Retract the last label made in this file (an undo record is appended; after a restart too) and return to
        that case, with its note and unsure flag back in place."""
        if not self._stack:
            where = "in this re-label session" if self.mode == "relabel" else f"by {self.labeller!r} in this file"
            self._say(f"nothing to undo: no label {html.escape(where)} is left")
            return
        position = self._stack[-1]
        case = self._ids[position]
        if not self._write(self._record(position, None, note="undo")):
            return
        self._stack.pop()
        old = self._forget(case) or {}
        self._mark(position, False)
        self._watch_undone(case)
        self._drafts[case] = ((old.get("note") or ""), bool(old.get("unsure")))
        self._sync_progress()
        if self.position == position:
            self._enter()
            self._render()
        else:
            self.position = position
        kept = " (its note is back in the note box)" if old.get("note") else ""
        self._say(f"undid {self._code(case)} <b>{html.escape(self._shown_label(str(old.get('label'))))}</b>{kept}")

    def reveal(self) -> None:
        """Show what blind mode hides for the case on screen (recorded in the labels file as ``mode="reveal"``)."""
        case = self.current_case
        if case is None or not self._may_reveal(case):
            self._say(f"label this {self._kind} first: {html.escape(self._hidden)} stays hidden until then")
            return
        if not self._write(self._record(self.position, None, mode="reveal")):
            return
        self._revealed.add(case)
        self._render()
        self._say(f"{html.escape(self._hidden)} shown for {self._code(case)} (the click is recorded in the labels file)")

    def _may_reveal(self, case: str) -> bool:
        return case in self._current

    def _visible(self, case: str) -> bool:
        """Whether blind mode lets the hidden information show for ``case``."""
        return not self.blind or case in self._revealed or self.done

    def _on_unsure(self, change) -> None:
        if self._quiet or self.current_case is None:
            return
        self._say(f"{self._code(self.current_case)} " + ("marked unsure: the flag is saved with its label"
                                                        if change["new"] else "no longer marked unsure"))

    def handle_key(self, event: dict) -> None:
        """Act on a key event (``{"key": ...}``) as the keyboard shortcuts do; any other key says so."""
        key = str(event.get("key", ""))
        if key.isdigit() and 1 <= int(key) <= min(len(self.levels), 9):
            self.label(self.levels[int(key) - 1])
        elif key == "s":
            self.skip()
        elif key == "b":
            self.back()
        elif key == "u":
            self.undo()
        elif key == "?":
            if self.current_case is None:
                self._say(f"nothing to flag: {self._end_line()}")
            else:
                self.unsure_button.value = not self.unsure_button.value
        else:
            self._say(f"key {html.escape(repr(key))} does nothing here; the keys are {html.escape(self._legend())}")

    # ------------------------------------------------------------------ display
    def _end_line(self) -> str:
        left = len(self._open)
        return (f"all {self._count(len(self.order))} are labelled" if not left
                else f"{self._count(left, 'skipped')} still unlabelled; s goes to the first of them")

    def _render(self) -> None:
        case = self.current_case
        at_end = case is None
        for button in self.buttons.values():
            button.disabled = at_end
        self.unsure_button.disabled = at_end
        self.note.disabled = at_end
        self.skip_button.disabled = at_end and not self._open
        self.back_button.disabled = self.position == 0
        self.undo_button.disabled = not self._stack
        if at_end:
            self.case_view.value = self._summary_html() if self.done else (
                f"<p style='line-height: 1.45'><b>End of the list</b>: {self._count(len(self._open), 'skipped')} still unlabelled; press "
                "<i>skip</i> (key s) to go to the first of them, or <i>back</i>.</p>")
            self.judge_view.value = ""
            self.reveal_button.layout.display = "none"
            return
        record = self._current.get(case)
        mine = ""
        if record is not None:
            mine = (f" · your label: <b>{html.escape(self._shown_label(record['label']))}</b>"
                    + (" (unsure)" if record.get("unsure") else ""))
        head = (f"<div style='margin: 2px 0 4px 0'><b>{self._kind}</b> {self._code(case)} · {self.position + 1} of "
                f"{len(self.order)}{mine}</div>")
        self.case_view.value = f"<div style='line-height: 1.45'>{head}{self._case_html(self.position)}</div>"
        hidden_line = self._hidden_html(case)
        self.judge_view.value = hidden_line
        show_button = self.blind and bool(hidden_line) and not self._visible(case) and self._may_reveal(case)
        self.reveal_button.layout.display = "" if show_button else "none"

    def _case_html(self, position: int) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def _hides(self) -> bool:
        """Whether blind mode has anything to hide."""
        return self.blind

    def _hidden_html(self, case: str) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def _next_step(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def _summary_html(self) -> str:
        n = len(self.order)
        tally = " · ".join(f"{self._tally.get(level, 0)} {html.escape(self._shown_label(level))}" for level in self.levels)
        notes = sum(bool(r.get("note")) for r in self._current.values())
        pace = f", {_duration(float(np.median(self._gaps)), tenths=True)} per label" if self._gaps else ""
        return (f"<div style='background: #e5f5e0; border-radius: 3px; padding: 6px 10px; line-height: 1.45'><p><b>All {self._count(n)} are "
                f"labelled</b>: {tally}; {self._unsure} marked unsure, {notes} with a note "
                f"({_duration((_now() - self._session_start).total_seconds())} in this session{pace}). The labels are in "
                f"<code>{html.escape(str(self.path))}</code>.</p><p><b>Next</b>: {self._next_step()}</p>"
                f"<p>Press <i>back</i> (key b) to review a {self._kind}"
                f"{'; ' + html.escape(self._hidden) + ' is shown now that the batch is done' if self._hides() else ''}.</p></div>")

    def _snapshot_html(self) -> str:
        return (f"<div>{self.header.value}<p>{type(self).__name__}: {html.escape(self.progress_text.value)} labelled "
                f"(labels file <code>{html.escape(str(self.path))}</code>){self.pacing.value}</p>"
                + (f"<p>{self.watch_view.value}</p>" if self.watch_view.value else "") +
                f"<p style='color: #555'>keys: {html.escape(self._legend())} (a live widget in JupyterLab; this page "
                f"shows a static snapshot)</p>{self.case_view.value}</div>")

    # ------------------------------------------------------------------ results
    def labels(self) -> pd.Series:
        """The latest label per case from the file: a Series by case id, as :func:`evalkit.calibrate.calibrate` takes."""
        return latest_labels(read_labels(self.path))["label"].rename("label")

    def records(self) -> pd.DataFrame:
        """The latest record per case from the file, every field (``case_id`` first), as
        :func:`evalkit.calibrate.agreement_drift` takes."""
        return latest_labels(read_labels(self.path)).reset_index()

# ---------------------------------------------------------------------------------------------- the live interval
#: What a Labeller can watch (``watch=``), as the name shown on the status line.
_WATCHED = {"pass_rate": "pass rate", "mean": "mean label", "agreement": "agreement with the judge",
           "fail_recall": "the judge's FAIL recall"}
_ORDERS = ("given", "random", "shuffle")
_RANDOM = ("random", "shuffled")  # the recorded orders that are random


class _LiveSequence:
    """:func:`evalkit.infer.confidence_sequence` of one statistic, kept up to date one label at a time.

    Each label is one row. :meth:`push` adds the next label's value in O(grid) (``used=False``: a row that leaves the
    statistic where it was, as a human PASS does for FAIL recall); :meth:`pop` takes the last one back; anything
    else replays the labels from :meth:`reset`. :meth:`frame` is the table infer returns for the same labels.
    """

    def __init__(self, statistic: str, lo: float, hi: float, confidence_level: float):  # statistic: infer's name
        self.statistic, self.lo, self.hi, self.level = statistic, float(lo), float(hi), confidence_level
        self.reset()

    def reset(self) -> None:
        self._stream = _stats.BettingStream(self.lo, self.hi, confidence_level=self.level, theta_range=(self.lo, self.hi))
        self._saved = None
        self._sum, self._used = 0.0, 0
        self.n_used, self.estimate, self.low, self.high = [], [], [], []

    def __len__(self) -> int:
        return len(self.n_used)

    def push(self, value: float, used: bool = True) -> None:
        self._saved = (self._stream.snapshot(), self._sum, self._used)
        if used:
            self._sum += value
            self._used += 1
            low, high = self._stream.update(value)
        else:  # the statistic has not moved: before its first value it is anywhere on the scale
            low, high = (self.low[-1], self.high[-1]) if self.low else (self.lo, self.hi)
        self.n_used.append(self._used)
        self.estimate.append(self._sum / self._used if self._used else np.nan)
        self.low.append(low)
        self.high.append(high)

    def pop(self) -> bool:
        """Take the last row back; False when that cannot be done without a replay."""
        if self._saved is None or not self.n_used:
            return False
        state, self._sum, self._used = self._saved
        self._stream.restore(state)
        self._saved = None
        for values in (self.n_used, self.estimate, self.low, self.high):
            values.pop()
        return True

    def half_width(self) -> float:
        return (self.high[-1] - self.low[-1]) / 2

    def frame(self) -> pd.DataFrame:
        out = pd.DataFrame({"n_labelled": np.arange(1, len(self) + 1), "n_used": np.asarray(self.n_used, dtype=int),
                            "estimate": np.asarray(self.estimate, dtype=float), "cs_low": np.asarray(self.low, dtype=float),
                            "cs_high": np.asarray(self.high, dtype=float)})
        out["half_width"] = (out["cs_high"] - out["cs_low"]) / 2
        out["statistic"], out["method"], out["interval"] = self.statistic, "classical", "betting-cs"
        out.attrs.update(confidence_level=self.level, population="superpopulation")
        return out


def _decimals(value: float) -> int:
    """Decimals needed to write ``value`` (at least 2, at most 4): 0.1 -> 2, 0.025 -> 3."""
    text = f"{value:.4f}".rstrip("0")
    return max(2, len(text.split(".")[1]) if "." in text else 0)


def _outward(low: float, high: float, digits: int) -> str:
    """``[low, high]`` rounded outwards to ``digits`` decimals, so that the interval shown holds whenever the exact one
    does (a tolerance of 1e-9 keeps 0.62 from showing as 0.63 through floating-point noise)."""
    scale = 10.0**digits
    return f"[{np.floor(low * scale + 1e-9) / scale:.{digits}f}, {np.ceil(high * scale - 1e-9) / scale:.{digits}f}]"


def _shown_against(half: float, limit: float | None, digits: int) -> int:
    """Digits at which the rounded half-width compares with the rounded limit as the exact values do, and differs
    from it unless they are equal ("±0.099 ≤ 0.10", not "±0.10 ≤ 0.10"; "±0.1004; stop at ±0.10")."""
    while limit is not None and digits < 6 and half != limit and (
            (round(half, digits) <= round(limit, digits)) != (half <= limit) or round(half, digits) == round(limit, digits)):
        digits += 1
    return digits


class Labeller(_LabellerBase):
    """Label cases one at a time; every label is on disk the moment it is made.

    The widget shows who labels into which file, the rubric, the keys (``1 PASS · 2 FAIL · s skip · b back · u undo
    · ? unsure``) and, after every action, one line saying what it did. Keys act only while the case-and-buttons
    area has the focus (click it; its outline turns green and the keys line says "keys active"), never while a
    text field has it, and JupyterLab's own shortcuts do not see them. Each field of a case sits in a scroll box
    of bounded height, so the buttons stay in view; JSON is pretty-printed. The progress line gives the tally,
    the time in this session, the pace and an estimate of the time left; the end shows a summary and the next
    step.

    Parameters
    ----------
    cases : DataFrame
        ``case_id`` and the fields to show.
    path : str or Path
        The labels file (append-only JSONL; see :mod:`evalkit.labels` for its records), one per annotator.
        Opening a labeller on an existing file resumes at the first unlabelled case. The labeller holds the
        file's lock while open (see :class:`evalkit.labels.LabelWriter`): a second labeller on the same file in
        another kernel is refused in one line naming who holds it; one opened again in the same kernel takes
        over. ``close()`` releases it.
    levels : sequence of str, optional
        One button per level (e.g. the five TCVA levels); default the rubric's levels, else PASS and FAIL.
        Keys 1 to 9 label with the first nine.
    show : sequence of str, default ("input", "output")
        Case fields shown, in order, as escaped text.
    judge : DataFrame or Series, optional
        The judge's verdicts (a results table or a Series by case id), shown beside the case.
    blind : bool, default True
        Hide the judge's verdict until the human has labelled the case, and on a labelled case (going back)
        until the human asks to see it (a click recorded in the labels file as ``mode="reveal"``) or the
        batch is done.
    labeller : str, optional
        Who labels, stored in every record and shown in the header ("labelling as NAME → FILE"). Without it the
        ``USER`` environment variable (or "anonymous") is used, and only while neither the file nor its folder
        holds another annotator's labels (else :class:`AnnotatorError`): several annotators of one case set
        each name themselves and use their own file; :mod:`evalkit.agreement` takes the files directly, e.g.
        ``agreement.krippendorff_alpha(["ann.jsonl", "bob.jsonl", "cy.jsonl"])``.
    rubric : evalkit.judge.Rubric or str, optional
        Shown in a collapsible panel; a Rubric's criterion is always in view and its version is stored with
        every label (unless ``rubric_version`` is given).
    rubric_version : str, optional
        Stored with every label.
    relabel : int, optional
        Re-label mode: show a random sample of this many already-labelled cases, blind to the earlier
        label and to the judge; :meth:`self_agreement` then reports how often the labeller agrees with themself.
    rng : None, int or numpy.random.Generator
        For the re-label sample, and the seed of ``order="shuffle"``.
    watch : {None, "pass_rate", "mean", "agreement", "fail_recall"}, default None
        Show a live interval of this number under the progress line, updated at every label: the humans'
        ``"pass_rate"`` (the share of labels in the rubric's pass levels, or PASS), the ``"mean"`` label
        (numeric levels such as "1" to "5"; PASS/FAIL count 1/0), the ``"agreement"`` of the labels with the
        judge's verdicts, or the judge's ``"fail_recall"`` (the share of the human FAILs the judge also fails).
        The last two need ``judge=`` with a verdict on every case. It is the anytime-valid confidence
        sequence of :func:`evalkit.infer.confidence_sequence` (betting, Waudby-Smith & Ramdas 2024) over the
        labels so far in the order the cases were first labelled, for the rate of the population the cases
        were drawn from: it holds at every number of labels at once, so it keeps ``confidence_level`` however
        you decide when to stop, provided the cases came in a random order (see ``order``) and skipping has
        nothing to do with the label. It never widens (it is the intersection of the intervals so far), so after
        an unusual start the estimate can sit near one of its ends. :meth:`sequence` returns the whole table;
        ``"pass_rate"`` and ``"mean"`` use the labels alone (no judge), so they show the annotator nothing new
        while labelling blind.
    stop_half_width : float, optional
        The stop rule "stop when the half-width is at most h": the line then says that the number is settled
        and the annotator may stop ("settled: ±0.09 ≤ 0.10 after 41 labels — you can stop"), at the first
        number of labels :func:`evalkit.infer.stopping_point` gives. Needs ``watch``.
    confidence_level : float, default 0.95
        Of the live interval.
    order : {"given", "random", "shuffle"}, default "given"
        The order of the cases, and what is recorded of it with every label (``case_order``, ``case_seed``):
        ``"given"``, the table's order, not known to be random (with ``watch``, a warning, and the line says
        that the interval holds only for a random order and never says "you can stop"); ``"random"``, the
        table is already in a random order (e.g. :func:`evalkit.infer.choose_cases` with
        ``strategy="random"`` or :func:`evalkit.cases.sample_cases`; the default stratified order of
        ``choose_cases`` is not random from one label to the next); ``"shuffle"``, the labeller draws a random
        order from ``rng`` (a seed; without one, the seed recorded in the file, else a new one) and records
        its seed, so it is reproduced on resume.

    Attributes
    ----------
    status : ipywidgets.HTML
        The line saying what the last action did, e.g. "undid case-056 PASS".
    watch_view : ipywidgets.HTML
        The live interval's line (hidden without ``watch``); :attr:`watch_text` is its text.

    Notes
    -----
    Blind labelling and the live interval: ``"agreement"`` and ``"fail_recall"`` compare the labels with the
    judge, so their estimate moves up or down with the judge's verdict on the case just labelled, which blind
    mode hides. With ``blind=True`` the line therefore shows only their half-width and the stop rule until the
    batch is done. The half-width never grows and moves little with any one label, so it reveals far less, but
    not nothing: on streams at an agreement of 0.85 the half-width shown (two decimals) would differ between an
    agreeing and a disagreeing verdict after about one label in six (0.17 of the first 200 labels,
    ``tests/test_widgets.py::test_blind_agreement_shows_only_the_half_width``); an annotator who must learn
    nothing of the judge watches ``"pass_rate"``. No live interval uses the judge's verdict on the case on
    screen.

    Examples
    --------
    >>> import pathlib, tempfile, pandas as pd
    >>> from evalkit.widgets import Labeller
    >>> cases = pd.DataFrame({"case_id": ["a", "b"], "input": ["q1", "q2"], "output": ["<b>x</b>", "y"]})
    >>> lab = Labeller(cases, pathlib.Path(tempfile.mkdtemp()) / "ann.jsonl", labeller="ann")
    >>> lab.note.value = "no source for the date"
    >>> lab.buttons["FAIL"].click()
    >>> lab.labels().to_dict()
    {'a': 'FAIL'}
    >>> lab.progress_text.value
    '1 / 2'
    >>> lab.undo()
    >>> lab.status.value
    'undid <code>a</code> <b>FAIL</b> (its note is back in the note box)'
    >>> lab.note.value
    'no source for the date'

    A live interval and a stop rule, on 60 cases drawn in a random order by the labeller:

    >>> many = pd.DataFrame({"case_id": [f"c{i}" for i in range(60)], "input": "q", "output": "a"})
    >>> live = Labeller(many, pathlib.Path(tempfile.mkdtemp()) / "bo.jsonl", labeller="bo", watch="pass_rate",
    ...                 stop_half_width=0.25, order="shuffle", rng=0)
    >>> live.watch_text
    'pass rate: no label yet · anytime-valid 95% interval from the first label; stop at ±0.25'
    >>> for level in ["PASS", "PASS", "FAIL", "PASS"]:
    ...     live.label(level)
    >>> live.watch_text
    'pass rate 0.75 [0.14, 1.00] (anytime-valid 95%), ±0.43; stop at ±0.25'
    >>> for level in ["PASS"] * 7:
    ...     live.label(level)
    >>> live.watch_text
    'pass rate 0.91 [0.52, 1.00] (anytime-valid 95%) · settled: ±0.24 ≤ 0.25 after 11 labels — you can stop'
    >>> live.sequence()[["n_labelled", "estimate", "cs_low", "cs_high", "half_width"]].tail(2).round(3)
        n_labelled  estimate  cs_low  cs_high  half_width
    9           10     0.900   0.484      1.0       0.258
    10          11     0.909   0.523      1.0       0.239
    """

    def __init__(self, cases: pd.DataFrame, path, *, levels=None, show=("input", "output"), judge=None,
                 blind: bool = True, labeller: str | None = None, rubric=None, rubric_version: str | None = None,
                 relabel: int | None = None, rng=None, watch: str | None = None, stop_half_width: float | None = None,
                 confidence_level: float = 0.95, order: str = "given"):
        cases = check_dataframe(cases, "cases")
        show = (show,) if isinstance(show, str) else tuple(show)
        check_columns(cases, ["case_id", *show], "cases")
        check_unique_column(cases, "case_id", "cases")
        if levels is None:
            levels = tuple(getattr(rubric, "levels", None) or ("PASS", "FAIL"))
        levels = (levels,) if isinstance(levels, str) else tuple(levels)
        if len(levels) < 2 or len(set(levels)) != len(levels) or not all(isinstance(lvl, str) and lvl for lvl in levels):
            raise ValueError(f"`levels` must hold at least two distinct labels; got {list(levels)}.")
        self.cases = cases.reset_index(drop=True)
        self.show = show
        self._judge = None if judge is None else judge_verdicts(judge)
        ids = self.cases["case_id"].astype(str).tolist()
        records = read_labels(path) if isinstance(path, (str, os.PathLike)) else None
        self._plan_watch(ids, levels, rubric, watch=watch, stop_half_width=stop_half_width,
                         confidence_level=confidence_level, relabel=relabel)
        rows = self._plan_order(order, rng, records)
        self._setup([ids[r] for r in rows], rows, path, levels=levels, descriptions=levels, labeller=labeller,
                    rubric=rubric, rubric_version=rubric_version, blind=blind, relabel=relabel, rng=rng,
                    existing_records=records)
        if self.watch is not None and self.case_order == "given":
            warnings.warn(f"watch={self.watch!r}: the live interval holds only if the cases come in a random order, and "
                          "order='given' says nothing of it; pass order='shuffle' (the labeller draws the order and "
                          "records its seed) or order='random' if the table is already in a random order.",
                          EvalkitWarning, stacklevel=2)

    # ------------------------------------------------------------------ the live interval
    def _plan_watch(self, ids, levels, rubric, *, watch, stop_half_width, confidence_level, relabel) -> None:
        """Check ``watch=`` and its options; the value of each level (and of each judge verdict) for the statistic."""
        check_option(watch, [None, *_WATCHED], "watch")
        self.watch = watch
        self.confidence_level = check_number(confidence_level, "confidence_level", low=0.0, high=1.0)
        if not 0 < self.confidence_level < 1:
            raise ValueError(f"`confidence_level` must be strictly between 0 and 1; got {confidence_level!r}.")
        self.stop_half_width = check_number(stop_half_width, "stop_half_width", low=0.0, allow_none=True)
        if self.stop_half_width is not None and self.stop_half_width <= 0:
            raise ValueError(f"`stop_half_width` must be a half-width above 0, e.g. 0.1; got {stop_half_width!r}.")
        self._live = None
        if watch is None:
            if self.stop_half_width is not None:
                raise ValueError("`stop_half_width` is a stop rule for the live interval: pass watch= too, e.g. "
                                 "watch='pass_rate'.")
            return
        if relabel is not None:
            raise ValueError(f"watch={watch!r} follows a first labelling; re-label mode measures self-agreement "
                             "(self_agreement()), so pass one of watch= and relabel=.")
        passing = tuple(getattr(rubric, "pass_levels", None) or ()) or (("PASS",) if "PASS" in levels else ())
        passing = tuple(lvl for lvl in passing if lvl in levels)
        try:
            numbers = {lvl: float(lvl) for lvl in levels}
        except ValueError:
            numbers = None
        self._watch_name = _WATCHED[watch]
        if watch == "mean" and numbers is not None:
            self._level_value = numbers
            lo, hi = min(numbers.values()), max(numbers.values())
        elif passing:
            self._level_value = {lvl: float(lvl in passing) for lvl in levels}
            lo, hi = 0.0, 1.0
            if watch == "mean":
                self._watch_name = _WATCHED["pass_rate"]
        else:
            want = "numeric levels (e.g. '1' to '5') or " if watch == "mean" else ""
            raise ValueError(f"watch={watch!r} needs {want}levels of which some pass: got levels {list(levels)} and no "
                             "pass level; give levels PASS/FAIL or a Rubric whose pass_levels are among them.")
        self._judge_pass = None
        if watch in ("agreement", "fail_recall"):
            if self._judge is None:
                raise ValueError(f"watch={watch!r} compares your labels with the judge's verdicts: pass judge= (a "
                                 "results table or a Series of verdicts by case id).")
            verdicts = self._judge.reindex(pd.Index(ids))
            missing = verdicts.index[verdicts.isna().to_numpy()]
            if len(missing):
                raise ValueError(f"watch={watch!r} needs the judge's verdict on every case; `judge` has none for "
                                 f"{len(missing)} case(s), e.g. {missing[:3].tolist()}.")
            judged = as_pass(verdicts, "judge", levels=levels, pass_levels=passing)
            self._judge_pass = dict(zip(ids, judged.to_numpy(dtype=bool), strict=True))
        statistic = watch if watch in ("agreement", "fail_recall") else "mean"
        self._live = _LiveSequence(statistic, lo, hi, self.confidence_level)

    def _plan_order(self, order, rng, records) -> list[int]:
        """The rows of ``cases`` in the order to label them, and what is recorded of that order."""
        check_option(order, list(_ORDERS), "order")
        self.case_order, self.case_seed = ("shuffled" if order == "shuffle" else order), None
        if order != "shuffle":
            return list(range(len(self.cases)))
        if rng is None:
            known = records is not None and {"case_order", "case_seed"} <= set(records.columns)
            seeds = records.loc[records["case_order"].eq("shuffled"), "case_seed"].dropna() if known else []
            seed = int(seeds.iloc[-1]) if len(seeds) else int(np.random.default_rng().integers(2**31))  # resumed, or new
        elif isinstance(rng, np.random.Generator):
            seed = int(rng.integers(2**31))
        else:
            seed = check_number(rng, "rng", low=0, integer=True)
        self.case_seed = seed
        return np.random.default_rng(seed).permutation(len(self.cases)).tolist()

    def _extra_fields(self, position: int) -> dict:
        return dict(zip(ORDER_FIELDS, (self.case_order, self.case_seed), strict=True))

    def _value(self, case: str, record: dict) -> tuple[float, bool]:
        """A label's value in the watched statistic, and whether the statistic uses it."""
        value = self._level_value[str(record["label"])]
        if self.watch == "agreement":
            return float(bool(value) == self._judge_pass[case]), True
        if self.watch == "fail_recall":
            return float(not self._judge_pass[case]), not value
        return value, True

    def _start_watch(self, records: pd.DataFrame) -> None:
        if self._live is None:
            return
        # Each labelled case keeps the place of its first label in the file; where that label came from an order
        # not known to be random ("given", or a file written before orders were recorded), the line says so.
        made = records[(records["mode"].fillna("label") == "label") & records["label"].notna()]
        ids = made["case_id"].astype(str)
        first = ~ids.duplicated()
        origins = made["case_order"] if "case_order" in made.columns else pd.Series(None, index=made.index, dtype=object)
        self._slot, self._origin = {}, {}
        for case, origin in zip(ids[first], origins[first], strict=True):
            if case in self._at:
                self._slot[case] = len(self._slot)
                self._origin[case] = origin in _RANDOM
        self._replay()

    def _replay(self) -> None:
        """Recompute the sequence from the current labels (after a change to an earlier one)."""
        self._live.reset()
        self._in_sequence = sorted(self._current, key=self._slot.__getitem__)
        for case in self._in_sequence:
            self._live.push(*self._value(case, self._current[case]))
        self._unknown_order = sum(not self._origin[case] for case in self._in_sequence)
        self._settled_at = (_infer.stopping_point(self._live.frame(), half_width=self.stop_half_width)
                            if self.stop_half_width is not None and len(self._live) else None)
        self._last_labelled = max((self._at[case] for case in self._current), default=-1)

    def _watch_labelled(self, case: str, old: dict | None) -> None:
        if self._live is None:
            return
        self._last_labelled = max(self._last_labelled, self._at[case])
        if case not in self._slot:
            self._slot[case] = len(self._slot)
            self._origin[case] = self.case_order in _RANDOM
        value = self._value(case, self._current[case])
        last = self._in_sequence[-1] if self._in_sequence else None
        if old is None and (last is None or self._slot[case] > self._slot[last]):  # the next label: O(grid)
            self._live.push(*value)
            self._in_sequence.append(case)
            self._unknown_order += not self._origin[case]
            if (self._settled_at is None and self.stop_half_width is not None
                    and self._live.half_width() <= self.stop_half_width):
                self._settled_at = len(self._live)
        elif old is None or self._value(case, old) != value:  # an earlier label changed
            self._replay()

    def _watch_undone(self, case: str) -> None:
        if self._live is None:
            return
        if self._in_sequence and self._in_sequence[-1] == case and self._live.pop():
            self._in_sequence.pop()
            self._unknown_order -= not self._origin[case]
            if self._settled_at is not None and self._settled_at > len(self._live):
                self._settled_at = None
            if self._at[case] == self._last_labelled:
                self._last_labelled = max((self._at[c] for c in self._current), default=-1)
        else:
            self._replay()

    @property
    def settled_at(self) -> int | None:
        """The number of labels at which the stop rule was first met (None: not yet, or no stop rule)."""
        return None if self._live is None else self._settled_at

    @property
    def watch_text(self) -> str:
        """The live interval's line as text ("" without ``watch``)."""
        return getattr(self, "_watch_text", "")

    def sequence(self) -> pd.DataFrame:
        """The confidence sequence of what the labeller watches, one row per label so far.

        The labels are taken in the order their cases were first labelled; the table equals
        :func:`evalkit.infer.confidence_sequence` on those labels (``statistic="mean"`` for a pass rate or a
        mean label, with the labels as 1/0 or as numbers and ``bounds`` the levels' range; the judge's verdicts
        as booleans for agreement and FAIL recall). It shows the estimate whatever ``blind`` says.
        """
        if self._live is None:
            raise ValueError("this labeller watches nothing: open it with watch=, e.g. watch='pass_rate'.")
        return self._live.frame()

    def _show_watch(self) -> None:
        if self._live is None:
            return
        text, tone = self._watch_line()
        self._watch_text = text
        colours = {"live": "#f3f3f3; border-left: 6px solid #4575b4", "settled": "#e5f5e0; border-left: 6px solid #1a9850",
                   "caveat": "#fee0b6; border-left: 6px solid #e66101"}
        self.watch_view.value = (f"<div style='background: {colours[tone]}; padding: 2px 8px; border-radius: 3px; "
                                 f"line-height: 1.45'>{html.escape(text)}</div>")
        self.watch_view.layout.display = ""

    def _watch_line(self) -> tuple[str, str]:
        """The line's text and its tone ("live", "settled" or "caveat")."""
        live, h = self._live, self.stop_half_width
        level = f"{self.confidence_level * 100:g}%"
        digits = _decimals(h) if h is not None else 2
        stop = f"; stop at ±{h:.{digits}f}" if h is not None else ""
        used = live.n_used[-1] if len(live) else 0
        if not used:
            first = "no human FAIL yet (it moves at each of your FAILs)" if self.watch == "fail_recall" and len(live) else \
                "no label yet"
            return f"{self._watch_name}: {first} · anytime-valid {level} interval from the first label{stop}", "live"
        half = live.half_width()
        shown = _shown_against(half, h, digits)
        over = f" over {used} human FAIL{'' if used == 1 else 's'}" if self.watch == "fail_recall" else ""
        hidden = self.blind and self.watch in ("agreement", "fail_recall") and not self.done
        if hidden:
            head = (f"{self._watch_name}{over} ±{half:.{shown}f} (anytime-valid {level}; the estimate stays hidden "
                    "while you label blind)")
        else:
            head = (f"{self._watch_name} {live.estimate[-1]:.{digits}f} {_outward(live.low[-1], live.high[-1], digits)}"
                    f"{over} (anytime-valid {level})")
        skipped = bisect.bisect_left(self._open, self._last_labelled)
        doubts = []
        if self._unknown_order:
            which = ("the labels so far" if self._unknown_order == len(live) else
                     f"{self._unknown_order} of the {len(live)} labels so far")
            doubts.append(f"{which} came in an order not known to be random (order='given'), so the interval may not hold")
        if skipped:
            doubts.append(f"{self._count(skipped, 'skipped')} before the last one labelled, still open: it assumes "
                          "skipping has nothing to do with the label")
        caveat = "".join(f" · {d}" for d in doubts)
        n = len(live)
        if self._settled_at is None:
            return (f"{head}{'' if hidden else f', ±{half:.{shown}f}'}{stop}{caveat}", "caveat" if doubts else "live")
        since = "" if self._settled_at == n else f" (first at {self._settled_at})"
        settled = f"settled: ±{half:.{shown}f} ≤ {h:.{digits}f} after {n} label{'' if n == 1 else 's'}{since}"
        if self._unknown_order:
            return f"{head} · {settled}, but {doubts[0]}" + (f" · {doubts[1]}" if skipped else ""), "caveat"
        if skipped:
            return (f"{head} · {settled} — label the {self._count(skipped, 'skipped')} still open before you stop: it "
                    "assumes skipping has nothing to do with the label"), "caveat"
        return f"{head} · {settled} — you can stop", "settled"

    def _case_html(self, position: int) -> str:
        row = self.cases.iloc[self.order[position]]
        height = "14em" if len(self.show) <= 2 else "10em"
        return "".join(f"<div style='font-weight: 600; margin-top: 2px'>{html.escape(str(name))}</div>"
                       f"{_field_html(row[name], height=height)}" for name in self.show)

    def _hides(self) -> bool:
        return self.blind and self._judge is not None

    def _hidden_html(self, case: str) -> str:
        if self._judge is None:
            return ""
        if self._visible(case):
            return f"judge: <b>{html.escape(str(self._judge.get(case)))}</b>"
        if case in self._current:
            return "<i>judge's verdict hidden (blind labelling): your label stands on its own</i>"
        return "<i>judge's verdict hidden until you label this case</i>"

    def _next_step(self) -> str:
        if self.mode == "relabel":
            return ("<code>self_agreement()</code> says how often you agree with your earlier labels; a judge cannot be "
                    "expected to agree with them more often than that.")
        return ("calibrate the judge on these labels, e.g. <code>calibrate.calibrate(results, labeller.labels())</code> "
                "(notebook 00 does this in its next cells); later, re-label a sample with <code>relabel=</code> to "
                "measure your own consistency.")

    def self_agreement(self) -> pd.DataFrame:
        """How often re-labels match the earlier labels (:func:`evalkit.calibrate.self_agreement` on this file)."""
        return _calibrate.self_agreement(read_labels(self.path))


class PairwiseLabeller(_LabellerBase):
    """Compare two answers side by side, blind to the systems, and record which is better.

    The same widget as :class:`Labeller` (annotator header, rubric panel, key areas and legend, notes, the unsure
    flag, skip/back/undo across restarts, pacing, end summary, blind rules), for pairwise votes: the two
    answers of each comparison are shown in a random left/right order, and the label says which side won.
    Keys: ``1`` the left answer (A), ``2`` the right one (B), ``3`` a tie.

    Parameters
    ----------
    comparisons : DataFrame
        One row per comparison: its id, the question and the two systems' answers and names (columns below).
    path : str or Path
        The labels file, as for :class:`Labeller`. Each label record (see :mod:`evalkit.labels`) has ``case_id``
        the comparison id, ``label`` ``"A"`` (the answer on the left is better), ``"B"`` (the right one) or
        ``"TIE"``, and ``system_left``, ``system_right`` (the systems as shown, left first) and ``order_seed``: a
        comparisons table is rebuilt with ``system_a = system_left`` (the system shown first).
    comparison_id, question : str, default "comparison_id", "input"
        Columns of the comparison id and of the question both systems answered.
    answers, systems : pair of str, default ("output_a", "output_b"), ("system_a", "system_b")
        Columns of the two answers and of the systems that gave them (first with first).
    blind : bool, default True
        Hide the systems: until the comparison is labelled, then until asked (a click recorded as
        ``mode="reveal"``) or the batch is done.
    labeller, rubric, rubric_version
        As for :class:`Labeller`.
    seed : int, optional
        Seed of the random left/right order, stored with every label so the order can be reproduced. Default:
        the seed recorded in the file (a restart shows the same order), else a fresh one. A comparison already
        labelled is shown as it was when labelled.

    Examples
    --------
    >>> import pathlib, tempfile, pandas as pd
    >>> from evalkit.widgets import PairwiseLabeller
    >>> table = pd.DataFrame({"comparison_id": ["q1"], "input": ["2+2?"], "output_a": ["4"], "output_b": ["5"],
    ...                       "system_a": ["small"], "system_b": ["large"]})
    >>> lab = PairwiseLabeller(table, pathlib.Path(tempfile.mkdtemp()) / "ann.jsonl", labeller="ann", seed=1)
    >>> left = lab.shown()["left"]
    >>> lab.buttons["A"].click()  # the answer on the left is better
    >>> record = lab.records().iloc[0]
    >>> record["label"], record["system_left"] == {"4": "small", "5": "large"}[left], int(record["order_seed"])
    ('A', True, 1)
    """

    _kind = "comparison"
    _hidden = "the systems"

    def __init__(self, comparisons: pd.DataFrame, path, *, comparison_id: str = "comparison_id", question: str = "input",
                 answers=("output_a", "output_b"), systems=("system_a", "system_b"), blind: bool = True,
                 labeller: str | None = None, rubric=None, rubric_version: str | None = None, seed: int | None = None):
        table = check_dataframe(comparisons, "comparisons")
        for name, pair in (("answers", answers), ("systems", systems)):
            if isinstance(pair, str) or len(pair) != 2:
                raise ValueError(f"`{name}` must name two columns (first system's, second system's); got {pair!r}.")
        check_columns(table, [comparison_id, question, *answers, *systems], "comparisons")
        check_unique_column(table, comparison_id, "comparisons")
        self.comparisons = table.reset_index(drop=True)
        self._columns = {"id": comparison_id, "question": question, "answers": tuple(answers), "systems": tuple(systems)}
        path = Path(path)
        records = read_labels(path)
        if seed is None:
            seeds = records["order_seed"].dropna() if "order_seed" in records.columns else pd.Series([], dtype=object)
            seed = int(seeds.iloc[-1]) if len(seeds) else int(np.random.SeedSequence().entropy % (2**32))
        self.seed = check_number(seed, "seed", low=0, integer=True)
        ids = self.comparisons[comparison_id].astype(str).tolist()
        # True where the second system's answer is shown on the left.
        self._swap = (np.random.default_rng(self.seed).random(len(ids)) < 0.5).tolist()
        if "system_left" in records.columns:
            shown = latest_labels(records)
            first_system = dict(zip(ids, self.comparisons[systems[0]].astype(str), strict=True))
            second_system = dict(zip(ids, self.comparisons[systems[1]].astype(str), strict=True))
            row_of = {case: i for i, case in enumerate(ids)}
            for case, left in shown["system_left"].items():
                case = str(case)
                if case in row_of and not _blank(left) and first_system[case] != second_system[case]:
                    if str(left) == first_system[case]:
                        self._swap[row_of[case]] = False
                    elif str(left) == second_system[case]:
                        self._swap[row_of[case]] = True
        self._setup(ids, list(range(len(ids))), path, levels=("A", "B", "TIE"),
                    descriptions=("A (left) is better", "B (right) is better", "tie"), labeller=labeller, rubric=rubric,
                    rubric_version=rubric_version, blind=blind, relabel=None, rng=None, existing_records=records)

    def _button_style(self, level: str) -> str:
        return "info" if level in ("A", "B") else ""

    def _shown_label(self, level: str) -> str:
        return {"A": "A (left)", "B": "B (right)", "TIE": "tie"}.get(level, level)

    def _mode_badge(self) -> str:
        blind = ", blind to the systems" if self.blind else ""
        return (f"<div>pairwise: which answer is better? The two answers are shown in a random left/right order "
                f"(seed {self.seed}, recorded with every label){blind}.</div>")

    def shown(self, position: int | None = None) -> dict:
        """The comparison at ``position`` (default: on screen) as shown: ``left``/``right`` answers and systems."""
        position = self.position if position is None else position
        row = self.comparisons.iloc[self.order[position]]
        (a, b), (sa, sb) = self._columns["answers"], self._columns["systems"]
        pairs = [(row[a], row[sa]), (row[b], row[sb])]
        if self._swap[self.order[position]]:
            pairs.reverse()
        return {"left": pairs[0][0], "right": pairs[1][0], "system_left": str(pairs[0][1]),
                "system_right": str(pairs[1][1])}

    def _extra_fields(self, position: int) -> dict:
        shown = self.shown(position)
        return {"system_left": shown["system_left"], "system_right": shown["system_right"], "order_seed": self.seed}

    def _case_html(self, position: int) -> str:
        row = self.comparisons.iloc[self.order[position]]
        shown = self.shown(position)
        column = ("<div style='flex: 1 1 0; min-width: 0'><div style='font-weight: 600; margin-top: 2px'>{title}</div>"
                  "{box}</div>")
        return (f"<div style='font-weight: 600; margin-top: 2px'>{html.escape(self._columns['question'])}</div>"
                f"{_field_html(row[self._columns['question']], height='8em')}"
                "<div style='display: flex; gap: 12px; align-items: flex-start'>"
                + column.format(title="A (left)", box=_field_html(shown["left"], height="20em"))
                + column.format(title="B (right)", box=_field_html(shown["right"], height="20em")) + "</div>")

    def _hidden_html(self, case: str) -> str:
        if self._visible(case):
            shown = self.shown(self._at[case])
            return (f"systems: A (left) = <b>{html.escape(shown['system_left'])}</b>, B (right) = "
                    f"<b>{html.escape(shown['system_right'])}</b>")
        if case in self._current:
            return "<i>systems hidden (blind labelling)</i>"
        return "<i>systems hidden until you label this comparison</i>"

    def _next_step(self) -> str:
        return ("read them as a comparisons table (<code>system_a</code> = <code>system_left</code>, the system shown "
                "first; winner a, b or tie for A, B, TIE) for Bradley–Terry ratings or prediction-powered rank-sets.")


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
