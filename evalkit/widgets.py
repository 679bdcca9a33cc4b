"""Notebook widgets: labellers for human verdicts, pairwise votes and claim verdicts, and explorers for temperature
sweeps and FD* bins.

Widgets subclass an ipywidgets container, keep their state in traitlets and call only public evalkit
functions; plots are rendered to PNG in an ``Image`` widget. They need the ``widgets`` extra (``pip install
"llm-evalkit[widgets]"``). Everything shown from cases or model outputs is HTML-escaped: it is data, never markup.
"""

from __future__ import annotations

import bisect
import html
import io
import json
import os
import statistics
import warnings
from collections import Counter
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from evalkit._optional import install_hint

try:
    import anywidget
    import ipywidgets as widgets
    import traitlets
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"evalkit.widgets needs ipywidgets and anywidget: {install_hint('widgets')}") from exc

from evalkit import _stats
from evalkit import calibrate as _calibrate
from evalkit import correlate as _correlate
from evalkit import density as _density
from evalkit import infer as _infer
from evalkit import plots as _plots
from evalkit import tcva as _tcva
from evalkit import verdicts as _verdict_table
from evalkit._coerce import as_pass, judge_verdicts
from evalkit._stats import successive as _successive
from evalkit._validation import (
    EvalkitWarning,
    check_columns,
    check_dataframe,
    check_number,
    check_option,
    check_rng,
    check_unique_column,
    check_unique_index,
    show,
)
from evalkit.labels import ORDER_FIELDS, LabelsLockedError, LabelWriter, latest_labels, read_labels

__all__ = ["Labeller", "PairwiseLabeller", "ClaimLabeller", "AnnotatorError", "SweepExplorer", "FDBinExplorer"]

_VERDICT_LEVELS = _verdict_table.LEVELS  # the claim-verdict scale, none to fully

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
# (its command-mode shortcuts would insert or delete cells). It also keeps the keys from going dead without a
# word: the focus goes back to the key area after every click on a button (a button that a click disables or
# hides would drop it to the page) and when the labeller is first shown (its cell just run), and a labeller whose
# kernel is gone, or does not answer a key, says so in place of "keys active".
_KEYS_ESM = r"""
const TEXT = "input, textarea, select, [contenteditable]:not([contenteditable='false'])";
const isText = (node) => !!(node && node.closest && node.closest(TEXT));
const ACK_MS = 4000;  // a key the kernel has not answered by then may not have been recorded

function render({ model, el }) {
  el.classList.add("evalkit-keys-line");
  const state = document.createElement("span");
  const legend = document.createElement("span");
  state.className = "evalkit-keys-state";
  el.append(state, legend);
  let root = null, areas = [], gone = false, silent = "", seq = 0, tries = 0;
  const pending = new Map();
  const active = () => !gone && areas.some((a) => a.contains(document.activeElement)) && !isText(document.activeElement);
  const unsaved = () => {  // a note typed in the box that its case's saved record does not hold
    const box = root && root.querySelector(".evalkit-note textarea");
    const typed = box ? box.value.trim() : "";
    return typed !== "" && typed !== (model.get("saved_note") || "").trim();
  };
  const paint = () => {
    const on = active();
    for (const a of areas) a.classList.toggle("evalkit-keys-active", on);
    el.classList.toggle("evalkit-keys-on", on);
    el.classList.toggle("evalkit-keys-dead", gone || silent !== "");
    if (root) root.classList.toggle("evalkit-dead", gone);
    if (gone) {
      state.textContent = "\u26a0 the kernel is gone (stopped or restarted): this labeller is not connected and saves " +
        "nothing more; every label it said it saved is in " + model.get("file") + ". Run its cell again to go on." +
        (unsaved() ? " The note in the box below was NOT saved: copy it before you run the cell." : "");
    } else if (silent) {
      state.textContent = silent;
    } else {
      state.textContent = on ? "\u2328 keys active" : "keys off: click the case or the buttons (or Tab to them) to use them";
    }
    legend.textContent = gone ? "" : " \u00b7 " + model.get("legend");
  };
  const home = (area) => setTimeout(() => {  // the focus back on a key area, where the keys act
    const target = area || areas[0];
    if (target && !gone) target.focus({ preventScroll: true });
    paint();
  }, 0);
  const send = (content) => {
    if (gone) { paint(); return; }
    const id = ++seq;
    try {
      model.send({ ...content, seq: id });
    } catch (error) {
      gone = true;
      paint();
      return;
    }
    pending.set(id, setTimeout(() => {
      pending.delete(id);
      silent = "\u26a0 no answer from the kernel for " + ACK_MS / 1000 + " s: the last key may not have been recorded " +
        "(is the kernel busy, or gone?)";
      paint();
    }, ACK_MS));
  };
  const onAck = (msg) => {
    if (!msg || msg.ack === undefined) return;
    clearTimeout(pending.get(msg.ack));
    pending.delete(msg.ack);
    if (silent && pending.size === 0) { silent = ""; paint(); }
  };
  const onLive = () => setTimeout(() => {  // ipywidgets marks every view of a disconnected kernel
    if (el.closest(".jupyter-widgets-disconnected")) { gone = true; paint(); }
  }, 0);
  const onKey = (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || event.isComposing || isText(event.target)) return;
    if (event.key === "Enter" || event.key === " ") { event.stopPropagation(); return; }  // a focused button acts
    if (event.key.length !== 1) return;  // Tab, arrows, Escape: as everywhere
    event.preventDefault();
    event.stopPropagation();
    if (event.repeat) return;  // a key held down labels once, not once per repeat
    if (event.key === "/") {
      const find = root && root.querySelector(".evalkit-find input");
      if (find && !gone) { find.focus(); return; }
    }
    send({ key: event.key });
  };
  const onTextKey = (event) => {  // Escape leaves a text field for the key area; Enter in the find box finds
    if (!isText(event.target) || event.ctrlKey || event.metaKey || event.altKey || event.isComposing) return;
    if (event.key === "Escape") {
      event.preventDefault();
      event.stopPropagation();
      home();
    } else if (event.key === "Enter" && event.target.closest(".evalkit-find")) {
      event.preventDefault();
      event.stopPropagation();
      send({ find: event.target.value });
      home();
    }
  };
  const onClick = (event) => {
    const button = event.target.closest && event.target.closest("button");
    const area = button && areas.find((a) => a.contains(button));
    if (area) home(area);
  };
  const onDown = (event) => {
    if (isText(event.target) || event.target.closest("button")) return;
    const area = event.currentTarget;
    setTimeout(() => area.focus({ preventScroll: true }), 0);
  };
  const onOut = () => setTimeout(paint, 0);
  const attach = () => {
    root = el.closest(".evalkit-labeller");
    const found = root ? Array.from(root.querySelectorAll(".evalkit-keyarea")) : [];
    if (!el.isConnected || (found.length < 2 && tries++ < 600)) { requestAnimationFrame(attach); return; }
    areas = found;
    for (const a of areas) {
      if (!a.hasAttribute("tabindex")) a.tabIndex = 0;
      a.addEventListener("keydown", onKey);
      a.addEventListener("mousedown", onDown);
      a.addEventListener("click", onClick);
      a.addEventListener("focusin", paint);
      a.addEventListener("focusout", onOut);
    }
    root.addEventListener("keydown", onTextKey, true);  // capture: ipywidgets' text fields stop a key going further
    const status = root.querySelector(".evalkit-status");
    if (status) { status.setAttribute("role", "status"); status.setAttribute("aria-live", "polite"); }
    if (model.get("autofocus")) {  // first shown (its cell just run): the keys act at once
      model.set("autofocus", false);
      model.save_changes();
      home();
    }
    paint();
  };
  model.on("change:legend", paint);
  model.on("msg:custom", onAck);
  model.on("comm_live_update", onLive);
  attach();
  return () => {
    model.off("change:legend", paint);
    model.off("msg:custom", onAck);
    model.off("comm_live_update", onLive);
    for (const timer of pending.values()) clearTimeout(timer);
    for (const a of areas) {
      a.removeEventListener("keydown", onKey);
      a.removeEventListener("mousedown", onDown);
      a.removeEventListener("click", onClick);
      a.removeEventListener("focusin", paint);
      a.removeEventListener("focusout", onOut);
    }
    if (root) root.removeEventListener("keydown", onTextKey, true);
  };
}
export default { render };
"""

_KEYS_CSS = """
.evalkit-keyarea { border: 2px dashed #c8c8c8; border-radius: 4px; padding: 2px 6px; margin: 2px 0; outline: none; }
.evalkit-keyarea:focus { outline: none; }
.evalkit-keyarea.evalkit-keys-active { border: 2px solid #1a9850; background: #f6fbf7; }
.evalkit-labeller.evalkit-dead .evalkit-keyarea { border: 2px solid #b2182b; background: #fdf3f3; }
.evalkit-labeller .widget-html-content { line-height: 1.45; }
.evalkit-keys-line { font-size: 0.92em; color: #555; padding: 2px 0; line-height: 1.45; }
.evalkit-keys-line .evalkit-keys-state { font-weight: 600; color: #888; }
.evalkit-keys-line.evalkit-keys-on .evalkit-keys-state { color: #1a7a40; }
.evalkit-keys-line.evalkit-keys-dead .evalkit-keys-state { color: #b2182b; }
.evalkit-labeller .jupyter-button.evalkit-current { outline: 3px solid #252525; outline-offset: 1px; font-weight: 700; }
.evalkit-labeller .jupyter-button.evalkit-current::before { content: "\\2713\\00a0"; }
.evalkit-labeller .widget-label.evalkit-counter { white-space: nowrap; overflow: visible; font-weight: 600; }
.evalkit-relabel { border-left: 6px solid #e66101; padding-left: 8px; }
.evalkit-claims li.evalkit-claim-now { background: #fff7bc; font-weight: 600; }
"""

_BREAK_S = 600  # a gap longer than this between two labels is a break, not labelling time
# Pacing: a label made sooner after its case appeared than a skim of the case's text takes is "fast". Skimming runs at
# about 600-700 words a minute, with comprehension well below that of reading at 200-400 (Rayner, Schotter, Masson,
# Potter & Treiman 2016, "So much to read, so little time", Psychological Science in the Public Interest 17(1)); a
# second is about the least it takes to see a short case and reach a key. Two fast labels among the last three say so.
_SKIM_WPM = 700
_MIN_READ_S = 1.0
_FAST_LAST = 3
_FAST_MANY = 2
_FIELD_BOX = ("max-height: {height}; overflow: auto; white-space: pre-wrap; word-break: normal; overflow-wrap: break-word; "
              "border: 1px solid #ddd; border-radius: 3px; padding: 4px 8px; margin: 2px 0 6px 0; background: #fcfcfc; "
              "font-family: {font}; font-size: 0.95em; line-height: 1.4")


class _Keys(anywidget.AnyWidget):
    """The keys line: the legend and whether the keys are live; sends ``{"key": ..., "seq": n}`` for a key typed in
    a key area (``{"find": ...}`` for Enter in the find box) and gets ``{"ack": n}`` back once it is handled."""

    _esm = _KEYS_ESM
    _css = _KEYS_CSS
    legend = traitlets.Unicode("").tag(sync=True)
    file = traitlets.Unicode("").tag(sync=True)  # named in the message shown once the kernel is gone
    saved_note = traitlets.Unicode("").tag(sync=True)  # the note the case on screen has saved, to tell a typed one
    autofocus = traitlets.Bool(True).tag(sync=True)  # take the focus when first shown (then cleared by the page)


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


def _text(value) -> str:
    return "" if _blank(value) else str(value)


def _words(*values) -> int:
    return sum(len(_text(v).split()) for v in values)


def _numeric(level: str) -> bool:
    try:
        float(level)
    except ValueError:
        return False
    return True


def _field_html(value, *, height: str = "14em") -> str:
    """An escaped field in a scroll box; JSON objects and arrays pretty-printed in a fixed-width font."""
    text = _text(value)
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


def _clean(record: dict) -> dict:
    """A record read back from the file, with its missing values as the labeller writes them (None, False)."""
    out = {key: (None if _blank(value) else value) for key, value in record.items()}
    out["case_id"] = str(out["case_id"])
    out["unsure"], out["ignored"] = bool(out.get("unsure")), bool(out.get("ignored"))
    return out


class _LabelStore:
    """The label-store handle: one annotator's labels in one labels file, as a labeller shows them.

    Opening reads the file once, every annotator's records; only this annotator's are resumed, shown, counted
    and undone (another annotator's record of the same case is theirs, and records without a name are no
    one's). :meth:`start` takes the file's writer (its lock). Every record goes through :meth:`append`, durable
    before it returns; :meth:`labelled`, :meth:`ignore` and :meth:`undone` then keep in step what the labeller
    shows, so that a click never re-reads the file: the current record of each case, the positions still open
    (sorted, updated in O(log n)), the tally, the undo stack, the reveals and the gaps between labels. No widget
    here.
    """

    def __init__(self, path, labeller):
        self.path = Path(path)
        self.labeller, self.defaulted = _check_annotator(self.path, labeller)
        self.records = read_labels(self.path)
        own = self.records["labeller"].astype(object).eq(self.labeller).fillna(False).to_numpy(dtype=bool)
        self.mine = self.records[own]
        theirs = self.records[~own & self.records["label"].notna().to_numpy()]
        self.others = sorted(set(map(str, theirs["labeller"].dropna())))
        self.unnamed = int(theirs["labeller"].isna().sum())
        self.writer = None

    def mine_in(self, mode: str) -> pd.DataFrame:
        return self.mine[(self.mine["mode"].fillna("label") == mode).to_numpy()]

    def latest(self, mode: str) -> dict[str, dict]:
        """This annotator's latest record of each case in ``mode`` (a label, an ignore or an undo), in file order."""
        rows = self.mine_in(mode)
        rows = rows.assign(case_id=rows["case_id"].astype(str)).drop_duplicates("case_id", keep="last")
        return {record["case_id"]: record for record in map(_clean, rows.to_dict("records"))}

    def start(self, ids: list[str], rows: list[int], *, mode: str, rubric_version) -> None:
        """Take the writer and the state of the cases ``ids`` (by position; ``rows``: their rows in the table)."""
        self.ids, self.rows, self.mode, self.rubric_version = ids, rows, mode, rubric_version
        self.at = {case: i for i, case in enumerate(ids)}  # position of each case id
        latest = {} if mode == "relabel" else {c: r for c, r in self.latest("label").items() if c in self.at}
        self.current = {c: r for c, r in latest.items() if r["label"] is not None}
        self.ignored = {c for c, r in latest.items() if r["label"] is None and r["ignored"]}
        self.open = [i for i, case in enumerate(ids) if case not in self.current and case not in self.ignored]
        self.tally = Counter(str(r["label"]) for r in self.current.values())
        self.unsure = sum(r["unsure"] for r in self.current.values())
        self.stack = [self.at[c] for c, r in latest.items() if r["label"] is not None or r["ignored"]]
        reveals = self.mine.loc[(self.mine["mode"] == "reveal").to_numpy(), "case_id"]
        self.revealed = set(map(str, reveals)) & set(self.at)
        self.gaps = self._gaps(mode)
        self.last: datetime | None = None  # the time of the last label in this session
        self.writer = LabelWriter(self.path, labeller=self.labeller)  # locks the file and repairs a torn tail
        self.session = self.writer.session

    def _gaps(self, mode: str) -> list[float]:
        """Seconds between consecutive labels within each earlier session (breaks left out), for the pace."""
        rows = self.mine_in(mode)
        rows = rows[rows["label"].notna().to_numpy()]
        times = pd.to_datetime(rows["timestamp"], errors="coerce", utc=True)
        gaps = []
        for _, group in times.groupby(rows["session"].fillna("").to_numpy()):
            diffs = group.dropna().sort_values().diff().dt.total_seconds().dropna()
            gaps += [float(d) for d in diffs if 0 < d <= _BREAK_S]
        return gaps

    def envelope(self, position: int, label, *, mode: str | None = None, note=None, unsure: bool = False,
                 ignored: bool = False) -> dict:
        record = {"case_id": self.ids[position], "label": label, "labeller": self.labeller,
                  "timestamp": _now().isoformat(timespec="milliseconds"), "position": self.rows[position],
                  "rubric_version": self.rubric_version, "note": note, "mode": mode or self.mode,
                  "session": self.session, "unsure": bool(unsure)}
        if ignored:
            record["ignored"] = True
        return record

    def append(self, record: dict) -> None:
        """Write a record durably (LabelsLockedError: another labeller took over; OSError: e.g. a full disk)."""
        self.writer.append(record)

    def labelled(self, position: int, record: dict) -> dict | None:
        """Take a new label of the case at ``position`` into the state; returns the record it replaces."""
        case = self.ids[position]
        old = self._forget(case)
        self.ignored.discard(case)
        self.current[case] = {**record, "ignored": False}
        self.tally[str(record["label"])] += 1
        self.unsure += bool(record["unsure"])
        self._mark(position, opened=False)
        self._push(position)
        now = _now()
        if self.last is not None and 0 < (now - self.last).total_seconds() <= _BREAK_S:
            self.gaps.append((now - self.last).total_seconds())
        self.last = now
        return old

    def ignore(self, position: int) -> dict | None:
        """Take an ignore record of the case at ``position`` into the state; returns the label it clears."""
        case = self.ids[position]
        old = self._forget(case)
        self.ignored.add(case)
        self._mark(position, opened=False)
        self._push(position)
        return old

    def undone(self, position: int) -> tuple[dict, bool]:
        """Take an undo of the last label or ignore (at ``position``) into the state: (its record, whether ignored)."""
        case = self.ids[position]
        self.stack.pop()
        was_ignored = case in self.ignored
        self.ignored.discard(case)
        old = self._forget(case) or {}
        self._mark(position, opened=True)
        return old, was_ignored

    def _forget(self, case: str) -> dict | None:
        """Take a case's current label out of the tally; returns its record."""
        old = self.current.pop(case, None)
        if old is not None:
            self.tally[str(old["label"])] -= 1
            self.unsure -= bool(old.get("unsure"))
        return old

    def _mark(self, position: int, *, opened: bool) -> None:
        """Keep the sorted list of open positions in step with a label, an ignore or an undo."""
        at = bisect.bisect_left(self.open, position)
        present = at < len(self.open) and self.open[at] == position
        if not opened and present:
            del self.open[at]
        elif opened and not present:
            self.open.insert(at, position)

    def _push(self, position: int) -> None:
        if position in self.stack:
            self.stack.remove(position)
        self.stack.append(position)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class _KeyArea:
    """The key area: the keys line (the legend, and whether the keys are live), the buttons, the status line, the
    progress lines and the find box; what each key does.

    Built for a labeller (``owner``), whose actions the buttons and keys call. The front end sends a key typed in
    a key area as ``{"key": ..., "seq": n}`` (Enter in the find box as ``{"find": ...}``) and gets ``{"ack": n}``
    back once the labeller has acted on it.
    """

    def __init__(self, owner, levels: tuple, texts: tuple):
        self.owner = owner
        kind = owner._kind
        self.buttons = {level: widgets.Button(
            description=text, button_style=owner._button_style(level), layout=widgets.Layout(width="auto", min_width="6em"),
            tooltip=f"label {owner._shown_label(level)} (key {i + 1})" if i < 9 else f"label {owner._shown_label(level)}")
            for i, (level, text) in enumerate(zip(levels, texts, strict=True))}
        for level, button in self.buttons.items():
            button.on_click(lambda _, level=level: owner.label(level))
        small = widgets.Layout(width="auto", min_width="5.5em")
        self.unsure_button = widgets.ToggleButton(value=False, description="unsure", icon="question", layout=small,
                                                  tooltip="flag this label as unsure (key ?): saved beside the label")
        self.ignore_button = widgets.Button(description="ignore", icon="ban", layout=small, tooltip=(
            f"this {kind} cannot or should not be labelled (key i): recorded as your answer, never as a label"))
        self.skip_button = widgets.Button(description="skip", layout=small, tooltip="skip for now; it comes round again (key s)")
        self.back_button = widgets.Button(description="back", layout=small, tooltip=f"previous {kind} (key b)")
        self.undo_button = widgets.Button(description="undo", layout=small, tooltip="undo your last label in this file (key u)")
        self.unsure_button.observe(owner._on_unsure, names="value")
        self.ignore_button.on_click(lambda _: owner.ignore())
        self.skip_button.on_click(lambda _: owner.skip())
        self.back_button.on_click(lambda _: owner.back())
        self.undo_button.on_click(lambda _: owner.undo())
        self.find = widgets.Text(placeholder=f"find a {kind}: its id, or words in it (Enter; key / to get here)",
                                 continuous_update=False, layout=widgets.Layout(width="auto", flex="0 1 28em", min_width="10em"))
        self.find.add_class("evalkit-find")
        self.find_button = widgets.Button(description="find next", icon="search",
                                          layout=widgets.Layout(width="auto", flex="0 0 auto"),
                                          tooltip=f"show the next {kind} whose id is this, or whose text holds it")
        self.find_button.on_click(lambda _: owner.go_to(self.find.value))
        self.keys_line = _Keys(legend=self.legend(), file=str(owner.path))
        self.keys_line.on_msg(self._on_msg)
        self.status = widgets.HTML(layout=widgets.Layout(min_height="2.9em"))  # two lines kept, so less moves below
        self.status.add_class("evalkit-status")
        self.progress = widgets.IntProgress(min=0, max=max(len(owner.order), 1), layout=widgets.Layout(width="12em",
                                                                                                      flex="0 0 auto"))
        self.progress_text = widgets.Label(layout=widgets.Layout(width="auto", flex="0 0 auto", margin="0 4px"))
        self.progress_text.add_class("evalkit-counter")
        self.pacing = widgets.HTML(layout=widgets.Layout(flex="1 1 36em", min_width="0"))  # tally and pace; own row if narrow
        self.pace_warning = widgets.HTML(layout=widgets.Layout(display="none"))
        self.watch_view = widgets.HTML(layout=widgets.Layout(display="none"))  # the live interval, when one is watched
        controls = widgets.HBox([*self.buttons.values(), self.unsure_button, self.ignore_button, self.skip_button,
                                 self.back_button, self.undo_button], layout=widgets.Layout(flex_flow="row wrap"))
        row = widgets.HBox([self.progress, self.progress_text, self.pacing],
                           layout=widgets.Layout(align_items="center", flex_flow="row wrap"))
        # Buttons first, then lines that change length: a line that wraps moves what is below it, never the buttons.
        self.box = widgets.VBox([self.keys_line, controls, self.status, row, self.pace_warning, self.watch_view,
                                 widgets.HBox([self.find, self.find_button], layout=widgets.Layout(align_items="center"))])
        self.box.add_class("evalkit-keyarea")

    def legend(self) -> str:
        """``1 PASS · 2 FAIL · s skip · …``; a level that is its own key is named once (``1 (very poor)``, never
        ``1 1``), and numbered levels without descriptions read ``1–5 the level``."""
        owner, levels = self.owner, self.owner.levels[:9]
        own = [level == str(i + 1) for i, level in enumerate(levels)]
        if all(own) and not owner._descriptions:
            keys = [f"1–{len(levels)} the level"]
        else:
            keys = [owner._shown_label(level) if same else f"{i + 1} {owner._shown_label(level)}"
                    for i, (level, same) in enumerate(zip(levels, own, strict=True))]
        return " · ".join([*keys, "s skip", "b back", "u undo", "i ignore", "? unsure", "/ find"])

    def _on_msg(self, _widget, content, _buffers) -> None:
        content = content if isinstance(content, dict) else {}
        try:
            if "find" in content:
                self.owner.go_to(str(content["find"]))
            else:
                self.owner.handle_key(content)
        finally:
            if "seq" in content:
                self.keys_line.send({"ack": content["seq"]})

    def render(self, *, case, at_end: bool, record: dict | None, state) -> None:
        """Enable what can act on the case on screen and mark its current label."""
        for level, button in self.buttons.items():
            button.disabled = at_end
            if record is not None and record.get("label") == level:
                button.add_class("evalkit-current")
            else:
                button.remove_class("evalkit-current")
        self.unsure_button.disabled = at_end
        self.ignore_button.disabled = at_end
        self.skip_button.disabled = at_end and not state.open
        self.back_button.disabled = self.owner.position == 0
        self.undo_button.disabled = not state.stack
        self.ignore_button.button_style = "warning" if case in state.ignored else ""
        self.keys_line.saved_note = _text((record or {}).get("note"))


class _CaseView:
    """The case view: the header (who labels into which file), the rubric, the case on screen with the annotator's
    own label and what blind mode hides, the note box, and the end summary."""

    def __init__(self, owner, rubric):
        self.owner = owner
        text, criterion = self._rubric_parts(rubric)
        self.header = widgets.HTML()
        self.top = [self.header]
        if criterion:
            self.top.append(widgets.HTML(criterion))
        self.rubric_panel = None
        if text:
            self.rubric_panel = widgets.Accordion(children=[widgets.HTML(
                f"<div style='white-space: pre-wrap; word-break: normal; overflow-wrap: break-word; max-height: 18em; "
                f"overflow: auto'>{html.escape(text)}</div>")], titles=("rubric (click to show or hide)",),
                selected_index=None)
            self.top.append(self.rubric_panel)
        self.case_view = widgets.HTML()
        self.judge_view = widgets.HTML()
        self.reveal_button = widgets.Button(description=f"show {owner._hidden}", icon="eye",
                                            tooltip="blind labelling: this click is recorded in the labels file",
                                            layout=widgets.Layout(display="none", width="auto"))
        self.reveal_button.on_click(lambda _: owner.reveal())
        self.note = widgets.Textarea(placeholder=f"note on this {owner._kind} (optional): saved with its label; the keys are "
                                     "off while you type here (Esc goes back to them)", rows=2,
                                     layout=widgets.Layout(width="100%"))
        self.note.add_class("evalkit-note")
        self.box = widgets.VBox([self.case_view, widgets.HBox([self.judge_view, self.reveal_button],
                                                              layout=widgets.Layout(align_items="center"))])
        self.box.add_class("evalkit-keyarea")
        self.drafts: dict[str, tuple[str, bool]] = {}  # notes and flags typed for a case, not saved yet

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

    def header_html(self) -> str:
        owner, store = self.owner, self.owner._store
        name = f"<b>{html.escape(store.labeller)}</b>"
        if store.defaulted:
            name += (" <span style='color: #b35806'>(no name given, so the default: pass <code>labeller=</code> to "
                     "label under your own name)</span>")
        extra = ""
        if store.others:
            extra = (f" · this file also holds labels by {html.escape(', '.join(map(repr, store.others[:4])))}: "
                     "theirs, never shown or counted as yours")
        if store.unnamed:
            extra += f" · and {store.unnamed} label record(s) without an annotator's name, no one's"
        style = "background: #f3f3f3; border-left: 6px solid #999"
        if owner.mode == "relabel":
            style = "background: #fee0b6; border-left: 6px solid #e66101"
            badge = (f"<div><b>RE-LABEL MODE</b>: {owner._count(len(owner.order))} you labelled before, drawn at random, "
                     "blind to your earlier labels and to the judge; kept apart in the file as <code>mode=\"relabel\"</code> "
                     "(<code>self_agreement()</code> compares them)</div>")
        else:
            badge = owner._mode_badge()
        return (f"<div style='{style}; padding: 4px 8px; border-radius: 3px; line-height: 1.45'>labelling as {name} → "
                f"<code>{html.escape(str(owner.path))}</code>{extra}{badge}</div>")

    def leave(self, case: str, record: dict | None) -> None:
        """Keep a note or flag typed for a case but not yet saved, for when it comes round again."""
        record = record or {}
        typed = (self.note.value, bool(self.owner.unsure_button.value))
        if typed != ((record.get("note") or ""), bool(record.get("unsure"))):
            self.drafts[case] = typed
        else:
            self.drafts.pop(case, None)

    def enter(self, case: str | None, record: dict | None) -> tuple[str, bool]:
        """The note and unsure flag for the case on screen: a draft, else its label's, else empty."""
        record = record or {}
        return self.drafts.get(case, ((record.get("note") or ""), bool(record.get("unsure"))))

    def show(self, position: int, case: str, record: dict | None, ignored: bool) -> None:
        owner = self.owner
        mine = ""
        if record is not None:
            mine = (f" · your label: <b>{html.escape(owner._shown_label(record['label']))}</b>"
                    + (" (unsure)" if record.get("unsure") else ""))
        elif ignored:
            mine = " · <b>you ignored it</b> (not a label; label it to replace that, or undo)"
        head = (f"<div style='margin: 2px 0 4px 0'><b>{owner._kind}</b> {owner._code(case)} · {position + 1} of "
                f"{len(owner.order)}{mine}</div>")
        self.case_view.value = f"<div style='line-height: 1.45'>{head}{owner._case_html(position)}</div>"
        hidden_line = owner._hidden_html(case)
        self.judge_view.value = hidden_line
        shown = owner.blind and bool(hidden_line) and not owner._visible(case) and owner._may_reveal(case)
        self.reveal_button.layout.display = "" if shown else "none"

    def show_end(self) -> None:
        owner = self.owner
        self.case_view.value = owner._summary_html() if owner.done else (
            f"<p style='line-height: 1.45'><b>End of the list</b>: {owner._count(len(owner._open), 'skipped')} still "
            "unlabelled; press <i>skip</i> (key s) to go to the first of them, or <i>back</i>.</p>")
        self.judge_view.value = ""
        self.reveal_button.layout.display = "none"


class _LabellerBase(_StaticFallback, widgets.VBox):
    """What every labeller shares, in three parts: the label-store handle (:class:`_LabelStore`: the annotator's
    labels in the file), the key area (:class:`_KeyArea`: keys, buttons, status and progress lines) and the case
    view (:class:`_CaseView`: header, rubric, the case, the note box). This class holds the position and acts:
    label, ignore, skip, back, undo, reveal, find; blind rules, pacing and the end summary. Subclasses show a case
    and add record fields."""

    position = traitlets.Int(0)
    done = traitlets.Bool(False)

    _kind = "case"  # how the status line names one item
    _hidden = "the judge's verdict"  # what blind mode hides
    _descriptions: dict = {}  # level -> what it means, shown beside it

    def _setup(self, store: _LabelStore, ids: list[str], rows: list[int], *, levels, texts, rubric, rubric_version,
               blind: bool, relabel, rng) -> None:
        self._store = store
        self.path, self.labeller = store.path, store.labeller
        self.levels, self._texts = tuple(levels), tuple(texts)
        self.blind = bool(blind)
        self.rubric_version = rubric_version if rubric_version is not None else getattr(rubric, "version", None)
        if relabel is not None:
            relabel = check_number(relabel, "relabel", low=1, integer=True)
        self.mode, self.order, ids = self._plan_cases(ids, rows, relabel, rng)
        self._view = _CaseView(self, rubric)  # before the lock: a bad rubric is refused holding nothing
        store.start(ids, self.order, mode=self.mode, rubric_version=self.rubric_version)
        try:
            self._build()
        except BaseException:
            store.close()  # a labeller that could not be built holds no lock
            raise

    def _plan_cases(self, ids, rows, relabel, rng) -> tuple[str, list[int], list[str]]:
        """(mode, rows in the order shown, their case ids): every case, or in re-label mode a sample of labelled ones."""
        if relabel is None:
            return "label", list(rows), [str(c) for c in ids]
        first = {case for case, r in self._store.latest("label").items() if r["label"] is not None}
        labelled = [i for i, case in enumerate(ids) if str(case) in first]
        if not labelled:
            raise ValueError(f"re-label mode needs already-labelled cases; {self.path} has none by {self.labeller!r}.")
        chosen = sorted(check_rng(rng).choice(labelled, size=min(relabel, len(labelled)), replace=False).tolist())
        return "relabel", [rows[i] for i in chosen], [str(ids[i]) for i in chosen]

    def _build(self) -> None:
        store = self._store
        self.session = store.session
        self._session_start = _now()
        self._shown_at = _now()
        self._recent: list[tuple[float, float]] = []  # (seconds on screen, seconds a skim takes) of the last labels
        self._found: tuple[str, list[int]] | None = None  # the last search and its matches
        self._haystacks: dict[int, str] = {}  # the lower-cased text of each case searched
        self._keys = keys = _KeyArea(self, self.levels, self._texts)
        view = self._view
        for name in ("buttons", "unsure_button", "ignore_button", "skip_button", "back_button", "undo_button", "find",
                     "find_button", "keys_line", "progress", "progress_text", "pacing", "pace_warning", "watch_view",
                     "status"):
            setattr(self, name, getattr(keys, name))
        for name in ("header", "rubric_panel", "case_view", "judge_view", "reveal_button", "note"):
            setattr(self, name, getattr(view, name))
        view.header.value = view.header_html()
        super().__init__([*view.top, keys.box, view.note, view.box])
        self.add_class("evalkit-labeller")
        if self.mode == "relabel":
            self.add_class("evalkit-relabel")
        self._quiet = False
        self._start_watch(store.mine)
        self._sync_progress()
        self.position = store.open[0] if store.open else len(self.order)
        self._ready = True
        self._enter()
        self._render()
        self._say(self._opening_line())

    def _opening_line(self) -> str:
        before = len(self.order) - len(self._open)
        if self.done:
            return f"nothing left to label: {self._end_line()}"
        if before:
            return (f"resumed: {before} of {len(self.order)} {'labelled' if not self._store.ignored else 'done'} before by "
                    f"{html.escape(repr(self.labeller))}; the first open {self._kind} is {self._code(self.current_case)}")
        return f"ready: {self._count(len(self.order))} to label"

    # ------------------------------------------------------------------ hooks and texts
    def _button_style(self, level: str) -> str:
        return "success" if level == "PASS" else "danger" if level == "FAIL" else ""

    def _shown_label(self, level) -> str:
        """A level as the annotator reads it: with its description, if it has one ("4 (good)")."""
        level = str(level)
        return f"{level} ({self._descriptions[level]})" if level in self._descriptions else level

    def _tally_text(self) -> str:
        """``3 PASS · 2 FAIL``; for numbered levels ``1: 3 labels · 2: 0 labels``, which "1 3" would not say."""
        tally = self._store.tally
        return " · ".join(f"{self._shown_label(level)}: {tally.get(level, 0)} label{'' if tally.get(level, 0) == 1 else 's'}"
                          if _numeric(level) else f"{tally.get(level, 0)} {self._shown_label(level)}"
                          for level in self.levels)

    def _mode_badge(self) -> str:
        return ""

    def _case_html(self, position: int) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def _search_text(self, position: int) -> str:
        """The text of the case at ``position`` a search looks in (what is shown of it)."""
        return ""

    def _reading_words(self, position: int) -> int:
        """How many words the annotator reads to label the case at ``position``."""
        return _words(self._search_text(position))

    def _hidden_html(self, case: str) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def _next_step(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def _extra_fields(self, position: int) -> dict:
        """Fields a subclass adds to a label record."""
        return {}

    def _hides(self) -> bool:
        """Whether blind mode has anything to hide."""
        return self.blind

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
    def _open(self) -> list[int]:
        return self._store.open

    @property
    def _at(self) -> dict[str, int]:
        return self._store.at

    @property
    def _current(self) -> dict[str, dict]:
        return self._store.current

    @property
    def _writer(self) -> LabelWriter:
        return self._store.writer

    @property
    def _ids(self) -> list[str]:
        return self._store.ids

    @property
    def current_case(self) -> str | None:
        """The case id on screen (None when every case is done)."""
        return None if self.position >= len(self.order) else self._ids[self.position]

    @traitlets.observe("position")
    def _on_position(self, change) -> None:
        if getattr(self, "_ready", False):
            if 0 <= change["old"] < len(self._ids):
                case = self._ids[change["old"]]
                self._view.leave(case, self._current.get(case))
            self._enter()
            self._render()

    def _enter(self) -> None:
        """Fill the note box and the unsure flag for the case on screen, and note when it came on screen."""
        case = self.current_case
        note, unsure = self._view.enter(case, self._current.get(case) if case is not None else None)
        self._quiet = True
        self.note.value, self.unsure_button.value = note, unsure
        self._quiet = False
        self._shown_at = _now()

    def _sync_progress(self) -> None:
        n_done = len(self.order) - len(self._open)
        self.progress.value = n_done
        self.progress_text.value = f"{n_done} / {len(self.order)}"
        self.done = n_done == len(self.order)
        self.pacing.value = "".join(f" · {html.escape(part)}" for part in self._progress_segments())
        warning = self._fast_warning()
        self.pace_warning.value = (f"<div style='background: #fee0b6; border-left: 6px solid #e66101; padding: 2px 8px; "
                                   f"border-radius: 3px; line-height: 1.45'>{html.escape(warning)}</div>") if warning else ""
        self.pace_warning.layout.display = "" if warning else "none"
        self._show_watch()

    def _progress_segments(self) -> list[str]:
        """The parts of the progress line after ``k / n``: the tally, then the pace."""
        store = self._store
        parts = [self._tally_text()]
        if store.ignored:
            parts.append(f"{len(store.ignored)} ignored")
        if store.unsure:
            parts.append(f"{store.unsure} unsure")
        parts.append(f"{_duration((_now() - self._session_start).total_seconds())} this session")
        if store.gaps:
            pace = float(np.median(store.gaps))
            parts.append(f"{_duration(pace, tenths=True)} per label")
            if self._open:
                parts.append(f"about {_duration(pace * len(self._open))} left")
        else:
            parts.append("pace after two labels")
        return parts

    def _fast_warning(self) -> str:
        """The pacing warning: labels coming sooner than their cases can be read (see the class docstring)."""
        fast = [(seen, need) for seen, need in self._recent if seen < need]
        if len(fast) < _FAST_MANY:
            return ""
        seen = statistics.median(s for s, _ in fast)
        need = statistics.median(n for _, n in fast)
        return (f"⚠ too fast to read: {len(fast)} of your last {len(self._recent)} labels came {seen:.1f} s after their "
                f"{self._kind} appeared, sooner than the {need:.1f} s a skim of it takes (at {_SKIM_WPM} words a minute, "
                f"{_MIN_READ_S:g} s at the least). Slow down, or go back (key b) and check them.")

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
            self._store.append(record)
        except (LabelsLockedError, OSError) as exc:
            self._say(f"<b style='color: #b2182b'>not saved</b>: {html.escape(str(exc))}")
            return False
        return True

    def close(self) -> None:
        """Release the labels file (its lock) and close the widget."""
        store = getattr(self, "_store", None)  # None when the constructor stopped early
        if store is not None:
            store.close()
        super().close()

    def _pace(self, position: int) -> None:
        """Note how long the case just labelled was on screen against how long a skim of it takes."""
        seen = (_now() - self._shown_at).total_seconds()
        need = max(_MIN_READ_S, self._reading_words(position) / (_SKIM_WPM / 60))
        self._recent = [*self._recent, (seen, need)][-_FAST_LAST:]

    def label(self, level: str) -> None:
        """Record ``level`` for the case on screen (with the note and the unsure flag), then show the next case."""
        if level not in self.levels:
            raise ValueError(f"`level` must be one of {list(self.levels)}; got {level!r}.")
        case = self.current_case
        if case is None:
            self._say(f"nothing to label: {self._end_line()}")
            return
        note, unsure = self.note.value.strip() or None, bool(self.unsure_button.value)
        record = {**self._store.envelope(self.position, level, note=note, unsure=unsure), **self._extra_fields(self.position)}
        if not self._write(record):
            return
        self._pace(self.position)
        old = self._store.labelled(self.position, record)
        self._view.drafts.pop(case, None)
        self._watch_labelled(case, old)
        self._sync_progress()
        flags = ", ".join(x for x in ("unsure" if unsure else "", "with a note" if note else "") if x)
        self._say(f"labelled {self._code(case)} <b>{html.escape(self._shown_label(level))}</b>"
                  + (f" ({flags})" if flags else ""))
        self._advance()

    def ignore(self) -> None:
        """Record that the case on screen cannot or should not be labelled (an ignore record: never a label, with the
        note as its reason) and show the next one; undo takes it back."""
        case = self.current_case
        if case is None:
            self._say(f"nothing to ignore: {self._end_line()}")
            return
        note = self.note.value.strip() or None
        record = {**self._store.envelope(self.position, None, note=note, ignored=True), **self._extra_fields(self.position)}
        if not self._write(record):
            return
        old = self._store.ignore(self.position)
        self._view.drafts.pop(case, None)
        if old is not None:
            self._watch_undone(case)
        self._sync_progress()
        self._say(f"ignored {self._code(case)}: recorded as your answer, not a label"
                  + (" (with the note as its reason)" if note else "") + "; undo takes it back")
        self._advance()

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
        self._say(f"back to {self._code(self.current_case)} · {self._your_label(self.current_case)}")

    def _your_label(self, case: str) -> str:
        record = self._current.get(case)
        if record is not None:
            return f"current label: <b>{html.escape(self._shown_label(record['label']))}</b>"
        return "ignored by you (not a label)" if case in self._store.ignored else "not labelled yet"

    def undo(self) -> None:
        """Retract your last label or ignore in this file (an undo record is appended; after a restart too) and return
        to that case, with its note and unsure flag back in place."""
        store = self._store
        if not store.stack:
            where = "in this re-label session" if self.mode == "relabel" else f"by {self.labeller!r} in this file"
            self._say(f"nothing to undo: no label {html.escape(where)} is left")
            return
        position = store.stack[-1]
        case = self._ids[position]
        if not self._write(store.envelope(position, None, note="undo")):
            return
        old, was_ignored = store.undone(position)
        self._watch_undone(case)
        self._view.drafts[case] = ((old.get("note") or ""), bool(old.get("unsure")))
        self._sync_progress()
        if self.position == position:
            self._enter()
            self._render()
        else:
            self.position = position
        kept = " (its note is back in the note box)" if old.get("note") else ""
        what = "your ignore of" if was_ignored else ""
        if was_ignored:
            self._say(f"undid {what} {self._code(case)}: open again{kept}")
        else:
            self._say(f"undid {self._code(case)} <b>{html.escape(self._shown_label(str(old.get('label'))))}</b>{kept}")

    def reveal(self) -> None:
        """Show what blind mode hides for the case on screen (recorded in the labels file as ``mode="reveal"``)."""
        case = self.current_case
        if case is None or not self._may_reveal(case):
            self._say(f"label this {self._kind} first: {html.escape(self._hidden)} stays hidden until then")
            return
        if not self._write(self._store.envelope(self.position, None, mode="reveal")):
            return
        self._store.revealed.add(case)
        self._render()
        self._say(f"{html.escape(self._hidden)} shown for {self._code(case)} (the click is recorded in the labels file)")

    def go_to(self, query: str) -> None:
        """Show the case whose id is ``query``; else the next one (after the one on screen, wrapping round) whose
        shown text holds it, ignoring case. Asking again with the same words goes on to the next match."""
        if not isinstance(query, str):
            raise TypeError(f"`query` must be a case id or words to find (a string); got {type(query).__name__}.")
        text = query.strip()
        if not text:
            self._say(f"type a {self._kind} id, or words in one, in the find box")
            return
        if text in self._at:
            self.position = self._at[text]
            self._say(f"found {self._code(text)} by its id · {self._your_label(text)}")
            return
        if self._found is None or self._found[0] != text.lower():
            needle = text.lower()
            self._found = (needle, [i for i in range(len(self.order)) if needle in self._haystack(i)])
        matches = self._found[1]
        if not matches:
            self._say(f"no {self._kind} has the id {html.escape(repr(text))} or holds it in its text")
            return
        at = bisect.bisect_right(matches, self.position if self.position < len(self.order) else -1)
        self.position = matches[at % len(matches)]
        self._say(f"found {html.escape(repr(text))} in {self._code(self.current_case)} (match "
                  f"{matches.index(self.position) + 1} of {len(matches)}; Enter again for the next) · "
                  f"{self._your_label(self.current_case)}")

    def _haystack(self, position: int) -> str:
        if position not in self._haystacks:
            self._haystacks[position] = f"{self._ids[position]}\n{self._search_text(position)}".lower()
        return self._haystacks[position]

    def _may_reveal(self, case: str) -> bool:
        return case in self._current

    def _visible(self, case: str) -> bool:
        """Whether blind mode lets the hidden information show for ``case``."""
        return not self.blind or case in self._store.revealed or self.done

    def _on_unsure(self, change) -> None:
        self.unsure_button.button_style = "warning" if change["new"] else ""  # a clear state, not a darker grey
        self.unsure_button.description = "unsure ✓" if change["new"] else "unsure"
        if self._quiet or self.current_case is None:
            return
        self._say(f"{self._code(self.current_case)} " + ("marked unsure: the flag is saved with its label"
                                                        if change["new"] else "no longer marked unsure"))

    def handle_key(self, event: dict) -> None:
        """Act on a key event (``{"key": ...}``) as the keyboard shortcuts do; any other key says so."""
        key = str(event.get("key", ""))
        actions = {"s": self.skip, "b": self.back, "u": self.undo, "i": self.ignore}
        if key.isdigit() and 1 <= int(key) <= min(len(self.levels), 9):
            self.label(self.levels[int(key) - 1])
        elif key in actions:
            actions[key]()
        elif key == "?":
            if self.current_case is None:
                self._say(f"nothing to flag: {self._end_line()}")
            else:
                self.unsure_button.value = not self.unsure_button.value
        elif key == "/":
            self._say(f"type a {self._kind} id, or words in one, in the find box, then Enter")
        else:
            self._say(f"key {html.escape(repr(key))} does nothing here; the keys are {html.escape(self._keys.legend())}")

    # ------------------------------------------------------------------ display
    def _end_line(self) -> str:
        left, ignored = len(self._open), len(self._store.ignored)
        if left:
            return f"{self._count(left, 'skipped')} still unlabelled; s goes to the first of them"
        return (f"all {self._count(len(self.order))} are labelled" if not ignored else
                f"all {self._count(len(self.order))} are done ({ignored} ignored)")

    def _render(self) -> None:
        case = self.current_case
        record = self._current.get(case) if case is not None else None
        self._keys.render(case=case, at_end=case is None, record=record, state=self._store)
        self.note.disabled = case is None
        if case is None:
            self._view.show_end()
        else:
            self._view.show(self.position, case, record, case in self._store.ignored)

    def _summary_html(self) -> str:
        n, store = len(self.order), self._store
        notes = sum(bool(r.get("note")) for r in store.current.values())
        pace = f", {_duration(float(np.median(store.gaps)), tenths=True)} per label" if store.gaps else ""
        head = f"All {self._count(n)} are labelled" if not store.ignored else f"All {self._count(n)} are done"
        ignored = f", {len(store.ignored)} ignored" if store.ignored else ""
        return (f"<div style='background: #e5f5e0; border-radius: 3px; padding: 6px 10px; line-height: 1.45'><p><b>{head}"
                f"</b>: {html.escape(self._tally_text())}{ignored}; {store.unsure} marked unsure, {notes} with a note "
                f"({_duration((_now() - self._session_start).total_seconds())} in this session{pace}). The labels are in "
                f"<code>{html.escape(str(self.path))}</code>.</p><p><b>Next</b>: {self._next_step()}</p>"
                f"<p>Press <i>back</i> (key b) to review a {self._kind}"
                f"{'; ' + html.escape(self._hidden) + ' is shown now that the batch is done' if self._hides() else ''}.</p></div>")

    def _snapshot_html(self) -> str:
        return (f"<div>{self.header.value}<p>{type(self).__name__}: {html.escape(self.progress_text.value)} labelled "
                f"(labels file <code>{html.escape(str(self.path))}</code>){self.pacing.value}</p>"
                + (f"<p>{self.watch_view.value}</p>" if self.watch_view.value else "") +
                f"<p style='color: #555'>keys: {html.escape(self._keys.legend())} (a live widget in JupyterLab; this page "
                f"shows a static snapshot)</p>{self.case_view.value}</div>")

    # ------------------------------------------------------------------ results
    def labels(self) -> pd.Series:
        """Your latest label per case, from the file (another annotator's labels in it are theirs, left out): a
        Series by case id, as :func:`evalkit.calibrate.calibrate` takes."""
        return self.records().set_index("case_id")["label"].rename("label")

    def records(self) -> pd.DataFrame:
        """Your latest label record per case from the file, every field (``case_id`` first), as
        :func:`evalkit.calibrate.agreement_drift` takes."""
        return latest_labels(read_labels(self.path), labeller=self.labeller).reset_index()

# ---------------------------------------------------------------------------------------------- the live interval
#: What a Labeller can watch (``watch=``), as the name shown on the status line.
_WATCHED = {"pass_rate": "pass rate", "mean": "mean label", "agreement": "agreement with the judge",
           "fail_recall": "the judge's FAIL recall"}
_ORDERS = ("given", "random", "shuffle", "active")
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


class _DrawnSequence:
    """The live interval of cases drawn by probabilities (``order="active"``): :func:`evalkit.infer.confidence_sequence`
    with ``probabilities=`` on the labels at the start of the draw order, recomputed from them after every change, so
    that an undo, a relabel or a resume leaves it exactly what the public function gives (a few milliseconds per label
    at a thousand cases; the sequence's every weight and bet is fixed before its case is drawn, so the rows already
    shown never move).

    ``ids`` are the cases in draw order, ``weights`` their draw probabilities (NaN: the uniform pilot, first; 0: never
    drawn, last). While the pilot is not all labelled its labels are uniform draws from every case, given as equal
    probabilities over all of them (the same values, step for step, as the pilot within the whole design)."""

    statistic = "mean"

    def __init__(self, ids, weights, lo: float, hi: float, confidence_level: float):
        self.ids, self.bounds, self.level = list(ids), (float(lo), float(hi)), confidence_level
        weights = np.asarray(weights, dtype=float)
        self.pilot = int(np.isnan(weights).sum())
        self.drawable = int(self.pilot + (weights[self.pilot:] > 0).sum())
        self.probabilities = pd.Series(weights[self.pilot:], index=self.ids[self.pilot:], name="probability")
        self.uniform = pd.Series(1.0, index=self.ids, name="probability")
        self.update([])

    def update(self, values) -> None:
        k = len(values)
        if not k:
            self._frame = None
            self.n_used = self.estimate = self.low = self.high = np.array([])
            return
        human = pd.Series(np.asarray(values, dtype=float), index=self.ids[:k])
        self._frame = _infer.confidence_sequence(human=human, probabilities=self.probabilities if k >= self.pilot
                                                 else self.uniform, bounds=self.bounds, confidence_level=self.level)
        self.n_used = self._frame["n_used"].to_numpy()
        self.estimate, self.low, self.high = (self._frame[c].to_numpy() for c in ("estimate", "cs_low", "cs_high"))

    def __len__(self) -> int:
        return len(self.n_used)

    def half_width(self) -> float:
        return (self.high[-1] - self.low[-1]) / 2

    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            return _infer.confidence_sequence(human=pd.Series([0.0], index=self.ids[:1]), probabilities=self.uniform,
                                              bounds=self.bounds, confidence_level=self.level).iloc[:0]
        return self._frame.copy()


def _ordinal(n: int) -> str:
    """"st", "nd", "rd" or "th" for n."""
    return "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")


def _decimals(value: float) -> int:
    """Decimals needed to write ``value`` (at least 2, at most 4): 0.1 -> 2, 0.025 -> 3."""
    text = f"{value:.4f}".rstrip("0")
    return max(2, len(text.split(".")[1]) if "." in text else 0)


def _outward(low: float, high: float, digits: int) -> tuple[str, str]:
    """``low, high`` rounded outwards to ``digits`` decimals, so that the range shown holds whenever the exact one
    does (a tolerance of 1e-9 keeps 0.62 from showing as 0.63 through floating-point noise)."""
    scale = 10.0**digits
    return (f"{np.floor(low * scale + 1e-9) / scale:.{digits}f}", f"{np.ceil(high * scale - 1e-9) / scale:.{digits}f}")


def _shown_against(half: float, limit: float | None, digits: int) -> int:
    """Digits at which the rounded half-width compares with the rounded limit as the exact values do, and differs
    from it unless they are equal ("±0.099 ≤ 0.10", not "±0.10 ≤ 0.10"; "±0.1004; stop at ±0.10")."""
    while limit is not None and digits < 6 and half != limit and (
            (round(half, digits) <= round(limit, digits)) != (half <= limit) or round(half, digits) == round(limit, digits)):
        digits += 1
    return digits


class _JudgeVerdict:
    """The judge's verdict of a case (``self._judge``, a mapping or None), hidden in blind mode until the case is
    labelled: what :class:`Labeller` and :class:`ClaimLabeller` share. ``_LABEL`` names what the annotator gives,
    the labeller's ``_kind`` what they label."""

    _LABEL = "label"

    def _hides(self) -> bool:
        return self.blind and self._judge is not None

    def _hidden_html(self, case: str) -> str:
        if self._judge is None:
            return ""
        if self._visible(case):
            return f"judge: <b>{html.escape(str(self._judge.get(case)))}</b>"
        if case in self._current:
            return f"<i>judge's verdict hidden (blind labelling): your {self._LABEL} stands on its own</i>"
        return f"<i>judge's verdict hidden until you label this {self._kind}</i>"


class Labeller(_JudgeVerdict, _LabellerBase):
    """Label cases one at a time; every label is on disk the moment it is made.

    The widget shows who labels into which file, the rubric, the keys (``1 PASS · 2 FAIL · s skip · b back · u undo
    · i ignore · ? unsure · / find``) and, after every action, one line saying what it did (a ``role="status"``
    line that screen readers announce). Keys act only while the case-and-buttons area has the focus (its outline
    turns green and the keys line says "keys active"), never while a text field has it (Esc leaves one), and
    JupyterLab's own shortcuts do not see them. The area takes the focus when the labeller is first shown (its cell
    just run) and again after every click on a button, so that a button the click disables or hides (back onto the
    first case, the last undo, the last label of the batch, "show the judge's verdict") never leaves the keys dead;
    a key held down labels once. If the kernel goes (stopped, restarted, killed), the keys line says so in place of
    "keys active", names the labels file, and says whether the note in the box was saved; a key the kernel does not
    answer within 4 s is said to be perhaps unrecorded.

    Each field of a case sits in a scroll box of bounded height, so the buttons stay in view; JSON is
    pretty-printed. The buttons come first, above every line whose length changes, so they never move; the
    current label's button is outlined and ticked, and *unsure* turns orange when set. The progress line gives the
    tally ("3 PASS · 1 FAIL"; numbered levels read "1: 3 labels · 2: 0 labels"), the time in this session, the
    pace and an estimate of the time left; the end shows a summary and the next step.

    **Whose labels**: the labeller resumes, shows ("your label"), counts, undoes and returns (``labels()``,
    ``records()``) only the labels of its annotator (``labeller``). A file several annotators share is read
    whole, and the others' labels stay theirs: never shown as yours, never replaced by yours (each label is
    keyed by case and annotator, see :func:`evalkit.labels.latest_labels`). One file per annotator is still the
    layout for labelling at the same time, as a file has one writer at a time.

    **Ignore** (key i) records that a case cannot or should not be labelled (broken, not applicable, beyond
    the annotator): the case is done, and the record is never a label (``ignored``, see :mod:`evalkit.labels`);
    the note, if any, is its reason. *Skip* (key s) only puts a case off, and records nothing. **Find** (key /,
    or the find box): a case id shows that case; other words show the next case whose shown text holds them
    (Enter again for the one after).

    **Pacing**: a label made sooner after its case appeared than a skim of the case's text takes, at 700 words a
    minute and 1 s at the least, is fast; when two of the last three labels are fast, an orange line says so under
    the progress line (at 0.6 s per label on short cases, or twelve keys in a second, it shows from the second
    label). Skimming runs at about 600 to 700 words a minute, with comprehension well below that of reading at 200
    to 400 (Rayner et al. 2016, "So much to read, so little time", Psychological Science in the Public Interest
    17(1)); a second is about the least it takes to see a short case and reach a key. The words counted are
    those of the fields shown.

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
    levels : sequence of str, or mapping, optional
        One button per level (e.g. the five TCVA levels); default the rubric's levels, else PASS and FAIL.
        Keys 1 to 9 label with the first nine. A mapping from each level to what it means (``{"1": "very poor",
        ..., "5": "excellent"}``) shows that beside the level on its button, in the legend and the tally.
    show : sequence of str, default ("input", "output")
        Case fields shown, in order, as escaped text.
    judge : DataFrame or Series, optional
        The judge's verdicts (a results table or a Series by case id), shown beside the case.
    blind : bool, default True
        Hide the judge's verdict until the human has labelled the case, and on a labelled case (going back)
        until the human asks to see it (a click recorded in the labels file as ``mode="reveal"``) or the
        batch is done.
    labeller : str, optional
        Who labels, stored in every record and shown in the header ("labelling as NAME → FILE"); only this
        annotator's labels are resumed and shown. Without it the ``USER`` environment variable (or "anonymous") is
        used, and only while neither the file nor its folder holds another annotator's labels (else
        :class:`AnnotatorError`): several annotators of one case set each name themselves (and label at the same
        time in files of their own); :mod:`evalkit.agreement` takes the files directly, e.g.
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
        The stop rule "stop when the half-width is at most h" (a rate's h in points: 0.1 is ±10 points). The line
        says the range in plain words, then whether it is narrow enough ("pass rate: between 30% and 88%
        (estimate 59%; anytime-valid 95%) — too wide to stop: ±29 points now, stop at ±10 points"; "... between 81% and
        88% ... — you can stop: ±4 ≤ 5 points after 190 labels"), from the first number of labels
        :func:`evalkit.infer.stopping_point` gives. Needs ``watch``.
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
        its seed, so it is reproduced on resume; ``"active"``, the labeller draws the order by ``probabilities``
        (:func:`evalkit.infer.sampling_probabilities`: more often where the judge is unsure), one case at a time
        without replacement, each with a chance proportional to its probability among the cases left, after the
        cases ``probabilities`` does not name (a uniform pilot, in the table's order, which must then be random),
        and records its seed (``case_order="active"``, reproduced on resume); give the labels and the same
        ``probabilities`` to :func:`evalkit.infer.mean` for the interval. With ``watch="pass_rate"`` or ``"mean"``
        the live interval is :func:`evalkit.infer.confidence_sequence` with ``probabilities=`` on the labels in
        draw order (the mean over every case of the table, Des Raj's estimator; exact after an undo, a relabel or
        a resume), valid at every number of labels. A case skipped or ignored while later ones are labelled is a
        label missing not at random: the interval then stops at the labels drawn before it, and the line names
        the case and how many labels wait for it. ``"agreement"`` and ``"fail_recall"`` are refused with this
        order (rates of the population the cases come from, which unequal draws are not a random sample of).
    probabilities : Series, optional
        With ``order="active"`` (required there): the draw probabilities by case id.

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
    'pass rate: no label yet · an anytime-valid 95% range from the first label; you can stop at ±25 points'
    >>> for level in ["PASS", "PASS", "FAIL", "PASS"]:
    ...     live.label(level)
    >>> live.watch_text
    'pass rate: between 14% and 100% (estimate 75%; anytime-valid 95%) — too wide to stop: ±43 points now, stop at ±25 points'
    >>> for level in ["PASS"] * 7:
    ...     live.label(level)
    >>> live.watch_text
    'pass rate: between 52% and 100% (estimate 91%; anytime-valid 95%) — you can stop: ±24 ≤ 25 points after 11 labels'
    >>> live.sequence()[["n_labelled", "estimate", "cs_low", "cs_high", "half_width"]].tail(2).round(3)
        n_labelled  estimate  cs_low  cs_high  half_width
    9           10     0.900   0.484      1.0       0.258
    10          11     0.909   0.523      1.0       0.239
    """

    def __init__(self, cases: pd.DataFrame, path, *, levels=None, show=("input", "output"), judge=None,
                 blind: bool = True, labeller: str | None = None, rubric=None, rubric_version: str | None = None,
                 relabel: int | None = None, rng=None, watch: str | None = None, stop_half_width: float | None = None,
                 confidence_level: float = 0.95, order: str = "given", probabilities: pd.Series | None = None):
        cases = check_dataframe(cases, "cases")
        show = (show,) if isinstance(show, str) else tuple(show)
        check_columns(cases, ["case_id", *show], "cases")
        check_unique_column(cases, "case_id", "cases")
        levels = self._check_levels(levels, rubric)
        self.cases = cases.reset_index(drop=True)
        self.show = show
        self._fields = [self.cases[name].to_numpy(dtype=object) for name in show]  # by row, without a pandas row per click
        self._judge = None if judge is None else judge_verdicts(judge)
        ids = self.cases["case_id"].astype(str).tolist()
        if order == "active" and watch in ("agreement", "fail_recall"):
            raise ValueError(f"watch={watch!r} is not offered with order='active': it is a rate of the population the "
                             "cases come from, and cases drawn with unequal probabilities are not a random sample of it. "
                             "Watch 'pass_rate' or 'mean' (the mean over these cases), or label in a random order "
                             "(order='shuffle').")
        if (order == "active") != (probabilities is not None):
            raise ValueError("`probabilities` goes with order='active' (and order='active' needs it: "
                             f"infer.sampling_probabilities); got order={order!r} and probabilities="
                             f"{'a ' + type(probabilities).__name__ if probabilities is not None else 'None'}.")
        self._plan_watch(ids, levels, rubric, watch=watch, stop_half_width=stop_half_width,
                         confidence_level=confidence_level, relabel=relabel)
        store = _LabelStore(path, labeller)
        rows = self._plan_order(order, rng, store.mine, probabilities)
        if order == "active" and self._live is not None:
            self._live = _DrawnSequence([ids[r] for r in rows], self._draw_weights(probabilities)[rows],
                                        *self._watch_bounds, self.confidence_level)
        self._setup(store, [ids[r] for r in rows], rows, levels=levels, texts=self._level_texts(levels), rubric=rubric,
                    rubric_version=rubric_version, blind=blind, relabel=relabel, rng=rng)
        if self.watch is not None and self.case_order == "given":
            warnings.warn(f"watch={self.watch!r}: the live interval holds only if the cases come in a random order, and "
                          "order='given' says nothing of it; pass order='shuffle' (the labeller draws the order and "
                          "records its seed) or order='random' if the table is already in a random order.",
                          EvalkitWarning, stacklevel=2)

    def _check_levels(self, levels, rubric) -> tuple:
        """The levels as a tuple; a mapping gives each level's description too."""
        if levels is None:
            levels = tuple(getattr(rubric, "levels", None) or ("PASS", "FAIL"))
        if isinstance(levels, Mapping):
            described = {str(k): v for k, v in levels.items()}
            bad = [v for v in described.values() if not isinstance(v, str)]
            if bad:
                raise TypeError(f"`levels` as a mapping gives each level its description (a string); got {bad[0]!r}.")
            self._descriptions = {k: v.strip() for k, v in described.items() if v.strip()}
            levels = tuple(levels)
        levels = (levels,) if isinstance(levels, str) else tuple(levels)
        if len(levels) < 2 or len(set(levels)) != len(levels) or not all(isinstance(lvl, str) and lvl for lvl in levels):
            raise ValueError(f"`levels` must hold at least two distinct labels; got {list(levels)}.")
        return levels

    def _level_texts(self, levels) -> tuple:
        """Button texts: the level, then its description ("4 · good")."""
        return tuple(f"{lvl} · {self._descriptions[lvl]}" if lvl in self._descriptions else lvl for lvl in levels)

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
        self._watch_bounds = (lo, hi)
        self._live = _LiveSequence(statistic, lo, hi, self.confidence_level)

    def _plan_order(self, order, rng, records, probabilities=None) -> list[int]:
        """The rows of ``cases`` in the order to label them, and what is recorded of that order."""
        check_option(order, list(_ORDERS), "order")
        self.case_order, self.case_seed = ("shuffled" if order == "shuffle" else order), None
        if order not in ("shuffle", "active"):
            return list(range(len(self.cases)))
        weights = None
        if order == "active":
            weights = self._draw_weights(probabilities)
        if rng is None:
            known = records is not None and {"case_order", "case_seed"} <= set(records.columns)
            seeds = records.loc[records["case_order"].eq(self.case_order), "case_seed"].dropna() if known else []
            seed = int(seeds.iloc[-1]) if len(seeds) else int(np.random.default_rng().integers(2**31))  # resumed, or new
        elif isinstance(rng, np.random.Generator):
            seed = int(rng.integers(2**31))
        else:
            seed = check_number(rng, "rng", low=0, integer=True)
        self.case_seed = seed
        if weights is None:
            return np.random.default_rng(seed).permutation(len(self.cases)).tolist()
        pilot = np.flatnonzero(np.isnan(weights))
        drawn = np.flatnonzero(~np.isnan(weights))
        order = _successive.successive_draws(weights[drawn], len(drawn), np.random.default_rng(seed))
        return pilot.tolist() + drawn[order].tolist()  # probability 0: drawn last (never, in a successive sample)

    def _draw_weights(self, probabilities) -> np.ndarray:
        """Each row's draw probability (NaN: not named, a pilot case labelled first), checked."""
        if not isinstance(probabilities, pd.Series):
            raise TypeError("`probabilities` must be a pandas Series of draw probabilities by case id (as "
                            f"infer.sampling_probabilities returns it); got {type(probabilities).__name__}.")
        if not pd.api.types.is_numeric_dtype(probabilities) or pd.api.types.is_bool_dtype(probabilities):
            raise TypeError(f"`probabilities` must hold numbers; got dtype {probabilities.dtype}.")
        check_unique_index(probabilities.index, "probabilities")
        keyed = probabilities.set_axis(probabilities.index.astype(str))
        unknown = ~keyed.index.isin(self.cases["case_id"].astype(str))
        if unknown.any():
            raise ValueError(f"`probabilities` has {int(unknown.sum())} case id(s) that `cases` does not hold, e.g. "
                             f"{keyed.index[unknown][:3].tolist()}.")
        weights = keyed.reindex(self.cases["case_id"].astype(str)).to_numpy(dtype=float)
        named = weights[~np.isnan(weights)]
        if (~np.isfinite(named) | (named < 0)).any() or not (named > 0).any():
            raise ValueError("`probabilities` must be finite, non-negative and positive somewhere; got "
                             f"{named[~np.isfinite(named) | (named < 0)][:3].tolist() or 'all zero'}.")
        return weights

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
        drawn = isinstance(self._live, _DrawnSequence)  # order="active": labels made in that order are the design's
        for case, origin in zip(ids[first], origins[first], strict=True):
            if case in self._at:
                self._slot[case] = len(self._slot)
                self._origin[case] = origin == "active" if drawn else origin in _RANDOM
        self._replay()

    def _replay(self) -> None:
        """Recompute the sequence from the current labels (after a change to an earlier one)."""
        if isinstance(self._live, _DrawnSequence):
            self._replay_drawn()
            return
        self._live.reset()
        self._in_sequence = sorted(self._current, key=self._slot.__getitem__)
        for case in self._in_sequence:
            self._live.push(*self._value(case, self._current[case]))
        self._unknown_order = sum(not self._origin[case] for case in self._in_sequence)
        self._settled_at = (_infer.stopping_point(self._live.frame(), half_width=self.stop_half_width)
                            if self.stop_half_width is not None and len(self._live) else None)
        self._last_labelled = max((self._at[case] for case in self._current), default=-1)

    def _replay_drawn(self) -> None:
        """order="active": the sequence of the labels at the start of the draw order up to its first case not
        labelled; a later case labelled (or this one ignored) means that case was left out of the draw."""
        live, ids = self._live, self._live.ids
        k = 0
        while k < live.drawable and ids[k] in self._current:
            k += 1
        live.update([self._value(case, self._current[case])[0] for case in ids[:k]])
        self._in_sequence = list(ids[:k])
        after = sum(self._at[case] > self._at[ids[k]] for case in self._current) if k < live.drawable else 0
        ignored = k < live.drawable and ids[k] in self._store.ignored
        self._gap = (ids[k], k, after, ignored) if (after or ignored) else None
        self._unknown_order = sum(not self._origin.get(case, True) for case in self._in_sequence)
        self._settled_at = (_infer.stopping_point(live.frame(), half_width=self.stop_half_width)
                            if self.stop_half_width is not None and len(live) else None)
        self._last_labelled = max((self._at[case] for case in self._current), default=-1)

    def _watch_labelled(self, case: str, old: dict | None) -> None:
        if self._live is None:
            return
        if isinstance(self._live, _DrawnSequence):
            self._origin.setdefault(case, True)
            self._replay_drawn()
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
        if isinstance(self._live, _DrawnSequence):
            self._replay_drawn()
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
        as booleans for agreement and FAIL recall). With ``order="active"`` the labels are those at the start of
        the draw order, up to its first case not labelled, and the table equals ``confidence_sequence`` with the
        same ``probabilities`` (while the pilot is not all labelled: equal probabilities over every case, which
        gives the same values). It shows the estimate whatever ``blind`` says.
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
        """The line's text and its tone ("live", "settled" or "caveat"): the range in plain words ("between 30% and
        88%"), then whether it is narrow enough to stop; a rate's widths in points (0.1 is ±10 points)."""
        live, h = self._live, self.stop_half_width
        level = f"{self.confidence_level * 100:g}%"
        rate = self._watch_name != _WATCHED["mean"]
        scale, unit, pct = (100.0, " points", "%") if rate else (1.0, "", "")
        digits = (_decimals(h) if h is not None else 2) - (2 if rate else 0)
        stop = f"±{h * scale:.{digits}f}" if h is not None else None
        used = live.n_used[-1] if len(live) else 0
        if not used:
            first = "no human FAIL yet (it moves at each of your FAILs)" if self.watch == "fail_recall" and len(live) else \
                "no label yet"
            return (f"{self._watch_name}: {first} · an anytime-valid {level} range from the first label"
                    + (f"; you can stop at {stop}{unit}" if stop else "")), "live"
        half = live.half_width() * scale
        shown = _shown_against(half, None if h is None else h * scale, digits)
        over = f" over {used} human FAIL{'' if used == 1 else 's'}" if self.watch == "fail_recall" else ""
        width = f"±{half:.{shown}f}{unit}"
        if self.blind and self.watch in ("agreement", "fail_recall") and not self.done:
            head = f"{self._watch_name}{over}: within {width} (anytime-valid {level}; the estimate stays hidden while you label blind)"
            now = ""
        else:
            low, high = _outward(live.low[-1] * scale, live.high[-1] * scale, digits)
            head = (f"{self._watch_name}{over}: between {low}{pct} and {high}{pct} (estimate "
                    f"{live.estimate[-1] * scale:.{digits}f}{pct}; anytime-valid {level})")
            now = f" {width} now,"
        doubts = self._watch_doubts()
        caveat = "".join(f" · {d}" for d in doubts)
        n = len(live)
        if self._settled_at is None:
            if stop is None:
                return f"{head}, {width}{caveat}" if now else f"{head}{caveat}", "caveat" if doubts else "live"
            return f"{head} — too wide to stop:{now} stop at {stop}{unit}{caveat}", "caveat" if doubts else "live"
        since = "" if self._settled_at == n else f" (first at {self._settled_at})"
        settled = f"±{half:.{shown}f} ≤ {stop[1:]}{unit} after {n} label{'' if n == 1 else 's'}{since}"
        skipped = self._skipped_before_last()
        if self._unknown_order or (doubts and not skipped):
            return f"{head} — settled ({settled}), but {doubts[0]}" + "".join(f" · {d}" for d in doubts[1:]), "caveat"
        if skipped:
            return (f"{head} — settled ({settled}): label the {self._count(skipped, 'skipped')} still open before you "
                    "stop: it assumes skipping has nothing to do with the label" + "".join(f" · {d}" for d in doubts[1:]),
                    "caveat")
        return f"{head} — you can stop: {settled}", "settled"

    def _skipped_before_last(self) -> int:
        if isinstance(self._live, _DrawnSequence):  # a case left out of the draw: its own doubt (_drawn_doubts)
            return 0
        return bisect.bisect_left(self._open, self._last_labelled)

    def _drawn_doubts(self) -> list[str]:
        """order="active": labels made in another order, and the first case left out of the draw order."""
        doubts = []
        if self._unknown_order:
            doubts.append(f"{self._unknown_order} of the {len(self._live)} labels were made in another order than "
                          "order='active', so the interval may not hold")
        if self._gap is not None:
            case, k, after, ignored = self._gap
            how = "ignored" if ignored else "skipped"
            waiting = (f"; the {after} label{'' if after == 1 else 's'} after it count once you label it" if after else
                       "; label it to go on")
            doubts.append(f"case {case} (drawn {k + 1}{_ordinal(k + 1)}) is {how}: the cases are drawn by "
                          f"probabilities, so a case left out biases the interval, which stops at the {k} label"
                          f"{'' if k == 1 else 's'} before it{waiting}")
        return doubts

    def _watch_doubts(self) -> list[str]:
        """What may keep the interval from holding: an order not known to be random, skipped or ignored cases."""
        if isinstance(self._live, _DrawnSequence):
            return self._drawn_doubts()
        live, doubts = self._live, []
        if self._unknown_order:
            which = ("the labels so far" if self._unknown_order == len(live) else
                     f"{self._unknown_order} of the {len(live)} labels so far")
            doubts.append(f"{which} came in an order not known to be random (order='given'), so the interval may not hold")
        skipped = self._skipped_before_last()
        if skipped:
            doubts.append(f"{self._count(skipped, 'skipped')} before the last one labelled, still open: it assumes "
                          "skipping has nothing to do with the label")
        ignored = len(self._store.ignored)
        if ignored:
            doubts.append(f"{self._count(ignored, 'ignored')} left out: it assumes ignoring has nothing to do with the "
                          "label")
        return doubts

    def _search_text(self, position: int) -> str:
        row = self.order[position]
        return "\n".join(_text(values[row]) for values in self._fields)

    def _case_html(self, position: int) -> str:
        row = self.order[position]
        height = "14em" if len(self.show) <= 2 else "10em"
        return "".join(f"<div style='font-weight: 600; margin-top: 2px'>{html.escape(str(name))}</div>"
                       f"{_field_html(values[row], height=height)}" for name, values in zip(self.show, self._fields, strict=True))

    def _next_step(self) -> str:
        if self.mode == "relabel":
            return ("<code>self_agreement()</code> says how often you agree with your earlier labels; a judge cannot be "
                    "expected to agree with them more often than that.")
        return ("calibrate the judge on these labels, e.g. <code>calibrate.calibrate(results, labeller.labels())</code> "
                "(notebook 00 does this in its next cells); later, re-label a sample with <code>relabel=</code> to "
                "measure your own consistency.")

    def self_agreement(self) -> pd.DataFrame:
        """How often your re-labels match your earlier labels (:func:`evalkit.calibrate.self_agreement` on your records
        in this file)."""
        records = read_labels(self.path)
        return _calibrate.self_agreement(records[records["labeller"].eq(self.labeller).fillna(False).to_numpy(dtype=bool)])


#: The pairwise labels: button text and how the label reads, in key order.
_PAIR_TEXTS = {"A": ("A (left) is better", "A (left)"), "B": ("B (right) is better", "B (right)"), "TIE": ("tie", "tie"),
               "BOTH_BAD": ("both bad", "both bad")}


class PairwiseLabeller(_LabellerBase):
    """Compare two answers side by side, blind to the systems, and record which is better.

    The same widget as :class:`Labeller` (annotator header, rubric panel, key areas and legend, notes, the unsure
    flag, ignore, skip/back/undo across restarts, find, pacing, end summary, blind rules, only its annotator's
    labels), for pairwise votes: the two answers of each comparison are shown in a random left/right order, and
    the label says which side won. Keys: ``1`` the left answer (A), ``2`` the right one (B), ``3`` a tie (both
    equally good), ``4`` both bad (neither acceptable: a tie for the ratings, as Chatbot Arena counts its "tie
    (bothbad)", kept apart in the labels file).

    Parameters
    ----------
    comparisons : DataFrame
        One row per comparison: its id, the question and the two systems' answers and names (columns below).
    path : str or Path
        The labels file, as for :class:`Labeller`. Each label record (see :mod:`evalkit.labels`) has ``case_id``
        the comparison id, ``label`` ``"A"`` (the answer on the left is better), ``"B"`` (the right one),
        ``"TIE"`` or ``"BOTH_BAD"``, and ``system_left``, ``system_right`` (the systems as shown, left first) and
        ``order_seed``: :func:`evalkit.pairwise.comparisons_from_labels` rebuilds the comparisons table, with
        ``system_a = system_left`` (the system shown first).
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
        the seed recorded in your labels in the file (a restart shows the same order), else a fresh one. A
        comparison you labelled already is shown as it was when you labelled it.

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
        self._values = {name: self.comparisons[name].to_numpy(dtype=object)  # by row, without a pandas row per click
                        for name in (question, *answers, *systems)}
        store = _LabelStore(path, labeller)
        records = store.mine
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
        self._setup(store, ids, list(range(len(ids))), levels=tuple(_PAIR_TEXTS),
                    texts=tuple(text for text, _ in _PAIR_TEXTS.values()), rubric=rubric, rubric_version=rubric_version,
                    blind=blind, relabel=None, rng=None)

    def _button_style(self, level: str) -> str:
        return "info" if level in ("A", "B") else "danger" if level == "BOTH_BAD" else ""

    def _shown_label(self, level) -> str:
        return _PAIR_TEXTS[level][1] if level in _PAIR_TEXTS else str(level)

    def _search_text(self, position: int) -> str:
        shown = self.shown(position)
        question = self._values[self._columns["question"]][self.order[position]]
        return "\n".join(_text(v) for v in (question, shown["left"], shown["right"]))

    def _mode_badge(self) -> str:
        blind = ", blind to the systems" if self.blind else ""
        return (f"<div>pairwise: which answer is better? The two answers are shown in a random left/right order "
                f"(seed {self.seed}, recorded with every label){blind}.</div>")

    def shown(self, position: int | None = None) -> dict:
        """The comparison at ``position`` (default: on screen) as shown: ``left``/``right`` answers and systems."""
        position = self.position if position is None else position
        row, values = self.order[position], self._values
        (a, b), (sa, sb) = self._columns["answers"], self._columns["systems"]
        pairs = [(values[a][row], values[sa][row]), (values[b][row], values[sb][row])]
        if self._swap[row]:
            pairs.reverse()
        return {"left": pairs[0][0], "right": pairs[1][0], "system_left": str(pairs[0][1]),
                "system_right": str(pairs[1][1])}

    def _extra_fields(self, position: int) -> dict:
        shown = self.shown(position)
        return {"system_left": shown["system_left"], "system_right": shown["system_right"], "order_seed": self.seed}

    def _case_html(self, position: int) -> str:
        question = self._values[self._columns["question"]][self.order[position]]
        shown = self.shown(position)
        column = ("<div style='flex: 1 1 0; min-width: 0'><div style='font-weight: 600; margin-top: 2px'>{title}</div>"
                  "{box}</div>")
        return (f"<div style='font-weight: 600; margin-top: 2px'>{html.escape(self._columns['question'])}</div>"
                f"{_field_html(question, height='8em')}"
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
        return ("read them as a comparisons table, <code>pairwise.comparisons_from_labels(\"file.jsonl\")</code> "
                "(<code>system_a</code> = <code>system_left</code>, the system shown first; winner a, b or tie for A, B, "
                "TIE, and both bad as a tie) for Bradley–Terry ratings or prediction-powered rank-sets.")


def _native(value):
    """A table value as JSON writes it (a numpy integer as an int)."""
    return value.item() if isinstance(value, np.generic) else value


class ClaimLabeller(_JudgeVerdict, _LabellerBase):
    """Label the claims of a claim-verdict table one at a time, on the table's own levels, beside the answer they
    come from: human claim verdicts, to calibrate the claim judge as case labels calibrate a case judge.

    The same widget as :class:`Labeller` (annotator header, key areas, notes, unsure, ignore, skip/back/undo
    across restarts, find, pacing, end summary, blind rules, only its annotator's labels), for claims: it shows
    the answer (and its question), the answer's claims in order with the one to label marked and your verdicts
    on the others, and one button per level of the verdict scale, ``none`` to ``fully`` (keys ``1`` to ``5``).
    Blind, the judge's verdict on a claim (the table's ``verdict``) stays hidden until you have labelled it.

    Each label is one record per claim (see :mod:`evalkit.labels`): ``case_id`` the claim's id
    ``"<item_id>#<claim_idx>"``, ``label`` the level, and :data:`evalkit.labels.CLAIM_FIELDS` (``item_id``,
    ``claim_idx``, ``claim``). ``labels()`` gives your verdicts by claim id and :meth:`judge_verdicts` the
    judge's by the same ids, which :func:`evalkit.calibrate.calibrate` takes with the levels that pass (e.g.
    ``pass_levels=["fully", "mostly"]``); :meth:`verdicts` gives them as a claim-verdict table (what
    :func:`evalkit.tcva.sweep` takes). The files of several annotators go to :mod:`evalkit.agreement` as they are
    (each claim an item).

    Parameters
    ----------
    verdicts : DataFrame
        The claim-verdict table: ``item_id``, ``claim`` (the text shown), optional ``claim_idx`` (numbered in row
        order within each item when absent) and optional ``verdict``, the judge's (see :mod:`evalkit.verdicts`).
    path : str or Path
        The labels file, as for :class:`Labeller`.
    answers : DataFrame, optional
        What the claims come from, one row per item: ``item_id`` and the ``answer`` column (and ``question``).
    answer : str, default "output"
        The column of ``answers`` shown as the answer.
    question : str, optional
        A column of ``answers`` shown above the answer (e.g. ``"input"``).
    blind : bool, default True
        Hide the judge's verdict on a claim until you have labelled it, then until asked (a recorded click) or
        the batch is done.
    labeller, rubric, rubric_version
        As for :class:`Labeller`.

    Attributes
    ----------
    claims : DataFrame
        The claim-verdict table as labelled (validated; ``claim_idx`` numbered where it was absent).
    claim_ids : Index
        The claim id of each row of ``claims``, the ``case_id`` of its labels.

    Examples
    --------
    >>> import pathlib, tempfile, pandas as pd
    >>> from evalkit.widgets import ClaimLabeller
    >>> table = pd.DataFrame({"item_id": ["q1", "q1"], "claim_idx": [0, 1], "claim": ["Paris is in France.",
    ...                       "It has 9 million people."], "verdict": ["fully", "minor"]})
    >>> answers = pd.DataFrame({"item_id": ["q1"], "output": ["Paris, in France, has 9 million people."]})
    >>> lab = ClaimLabeller(table, pathlib.Path(tempfile.mkdtemp()) / "ann.jsonl", answers=answers, labeller="ann")
    >>> lab.keys_line.legend
    '1 none · 2 minor · 3 partial · 4 mostly · 5 fully · s skip · b back · u undo · i ignore · ? unsure · / find'
    >>> lab.label("fully")
    >>> lab.label("partial")
    >>> lab.labels().to_dict()
    {'q1#0': 'fully', 'q1#1': 'partial'}
    >>> lab.judge_verdicts().to_dict()
    {'q1#0': 'fully', 'q1#1': 'minor'}
    """

    _kind = "claim"

    _LABEL = "verdict"

    def __init__(self, verdicts: pd.DataFrame, path, *, answers: pd.DataFrame | None = None, answer: str = "output",
                 question: str | None = None, blind: bool = True, labeller: str | None = None, rubric=None,
                 rubric_version: str | None = None):
        self.claims = self._claim_table(verdicts)
        self._answers = self._answer_table(answers, answer, question)
        self._answer, self._question = answer, question
        ids = (self.claims["item_id"].astype(str) + "#" + self.claims["claim_idx"].astype(str)).tolist()
        repeated = pd.Index(ids)[pd.Index(ids).duplicated()]
        if len(repeated):
            raise ValueError(f"`verdicts`: claims of items that read alike share the id {repeated[0]!r} (item_id as "
                             "text, '#', claim_idx); give every item an id of its own.")
        self.claim_ids = pd.Index(ids, name="claim_id")
        self._judge = (pd.Series(self.claims["verdict"].astype(str).to_numpy(), index=self.claim_ids)
                       if "verdict" in self.claims.columns else None)
        # by row, without a pandas row per click: the item, the claim's text, the claims of each item
        self._item = self.claims["item_id"].to_numpy(dtype=object)
        self._claim = self.claims["claim"].to_numpy(dtype=object)
        self._item_rows = {str(item): rows for item, rows in
                           self.claims.groupby(self.claims["item_id"].astype(str), sort=False).indices.items()}
        self._opens_item = (~self.claims["item_id"].duplicated()).to_numpy()
        store = _LabelStore(path, labeller)
        self._setup(store, ids, list(range(len(ids))), levels=_VERDICT_LEVELS, texts=_VERDICT_LEVELS, rubric=rubric,
                    rubric_version=rubric_version, blind=blind, relabel=None, rng=None)

    @staticmethod
    def _claim_table(verdicts) -> pd.DataFrame:
        table = check_dataframe(verdicts, "verdicts")
        check_columns(table, ["item_id", "claim"], "verdicts")
        if "verdict" in table.columns:
            table = _verdict_table.validate(table)  # its levels, claim_idx and one row per claim checked there
        else:
            table = table.copy()
            if "claim_idx" not in table.columns:
                table["claim_idx"] = table.groupby("item_id", sort=False).cumcount()
            repeated = table.duplicated(["item_id", "claim_idx"])
            if repeated.any():
                row = table[repeated].iloc[0]
                raise ValueError(f"`verdicts` has the claim ({show(row['item_id'])}, {show(row['claim_idx'])}) twice; "
                                 "each claim must appear once.")
        return table.reset_index(drop=True)

    @staticmethod
    def _answer_table(answers, answer: str, question) -> pd.DataFrame | None:
        if answers is None:
            return None
        table = check_dataframe(answers, "answers")
        check_columns(table, ["item_id", answer, *([question] if question is not None else [])], "answers")
        check_unique_column(table, "item_id", "answers")
        return table.set_index(table["item_id"].astype(str))

    def _button_style(self, level: str) -> str:
        return "success" if level == "fully" else "danger" if level == "none" else ""

    def _item_fields(self, position: int) -> tuple[str, str]:
        """(question, answer) of the claim's item, "" where there is none."""
        item = str(self._item[self.order[position]])
        if self._answers is None or item not in self._answers.index:
            return "", ""
        row = self._answers.loc[item]
        return (_text(row[self._question]) if self._question else ""), _text(row[self._answer])

    def _search_text(self, position: int) -> str:
        return "\n".join((_text(self._claim[self.order[position]]), *self._item_fields(position)))

    def _reading_words(self, position: int) -> int:
        """The claim; and the answer too for an item's first claim, where the annotator first reads it."""
        question, answer = self._item_fields(position)
        opens = self._opens_item[self.order[position]]
        return _words(self._claim[self.order[position]], *((question, answer) if opens else ()))

    def _extra_fields(self, position: int) -> dict:
        row = self.order[position]
        return {"item_id": _native(self._item[row]), "claim_idx": int(self.claims["claim_idx"].iat[row]),
                "claim": _text(self._claim[row])}

    def _case_html(self, position: int) -> str:
        row, item = self.order[position], self._item[self.order[position]]
        question, answer = self._item_fields(position)
        parts = []
        if question:
            parts.append(f"<div style='font-weight: 600; margin-top: 2px'>{html.escape(self._question)}</div>"
                         f"{_field_html(question, height='6em')}")
        if answer or self._answers is not None:
            parts.append(f"<div style='font-weight: 600; margin-top: 2px'>{html.escape(self._answer)}</div>"
                         f"{_field_html(answer, height='12em')}")
        items = []
        for at in self._item_rows[str(item)]:
            mine = self._current.get(self.claim_ids[at])
            you = f" <span style='color: #555'>· your verdict: {html.escape(str(mine['label']))}</span>" if mine else ""
            now = at == row
            items.append(f"<li class='{'evalkit-claim-now' if now else ''}'>{'▶ ' if now else ''}"
                         f"{html.escape(_text(self._claim[at]))}{you}</li>")
        parts.append(f"<div style='font-weight: 600; margin-top: 2px'>claims of {html.escape(str(item))} "
                     f"(label the marked one: how well does the answer's source support it?)</div>"
                     f"<ol class='evalkit-claims' start='0' style='margin: 2px 0 6px 0; line-height: 1.45'>{''.join(items)}</ol>")
        return "".join(parts)

    def _next_step(self) -> str:
        return ("calibrate the claim judge on these verdicts, e.g. <code>calibrate.calibrate(labeller.judge_verdicts(), "
                "labeller.labels(), pass_levels=[\"fully\", \"mostly\"])</code>; compare annotators with "
                "<code>agreement.krippendorff_alpha([\"ann.jsonl\", \"bob.jsonl\"])</code>; re-aggregate your verdicts "
                "with <code>tcva.sweep(labeller.verdicts(), ...)</code>.")

    def judge_verdicts(self) -> pd.Series:
        """The judge's verdicts (the table's ``verdict``) by claim id, the index of ``labels()``."""
        if self._judge is None:
            raise ValueError("`verdicts` has no 'verdict' column: there is no judge's verdict to compare with.")
        return self._judge.rename("verdict")

    def verdicts(self) -> pd.DataFrame:
        """Your latest verdict per claim as a claim-verdict table (``item_id, claim_idx, claim, verdict``), in the
        table's order: what :func:`evalkit.tcva.sweep` and :func:`evalkit.verdicts.level_counts` take."""
        mine = self.labels()
        kept = self.claim_ids.isin(mine.index)
        out = self.claims.loc[kept, ["item_id", "claim_idx", "claim"]].assign(
            verdict=mine.reindex(self.claim_ids[kept]).to_numpy())
        return _verdict_table.validate(out.reset_index(drop=True))


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
