"""Shared pieces of the widgets: the key handling in the browser, the labels file's store, the case view and
the small formatting helpers."""

from __future__ import annotations

import bisect
import html
import io
import json
import os
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import anywidget
import ipywidgets as widgets
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import traitlets

from evalkit import verdicts as _verdict_table
from evalkit.labels import LabelWriter, read_labels

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
# Its line carries data-evalkit-pending, the number of keys and clicks the kernel has not answered yet: a script
# driving the page waits for 0 before its next key, as an annotator waits for the screen.
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
  const onScreen = () => {  // the case the annotator sees now (null on the end summary), read from the page itself
    const shown = root && root.querySelector("[data-evalkit-case]");
    return shown ? shown.getAttribute("data-evalkit-case") : null;
  };
  const pending = new Map();  // keys and clicks sent, not answered yet (each with its ACK_MS timer)
  const count = () => { el.dataset.evalkitPending = String(pending.size); };
  count();
  const active = () => !gone && !model.get("taken") && areas.some((a) => a.contains(document.activeElement)) && !isText(document.activeElement);
  const unsaved = () => {  // a note typed in the box that its case's saved record does not hold
    const box = root && root.querySelector(".evalkit-note textarea");
    const typed = box ? box.value.trim() : "";
    return typed !== "" && typed !== (model.get("saved_note") || "").trim();
  };
  const paint = () => {
    const on = active();
    for (const a of areas) a.classList.toggle("evalkit-keys-active", on);
    el.classList.toggle("evalkit-keys-on", on);
    const taken = !!model.get("taken");
    el.classList.toggle("evalkit-keys-dead", gone || taken || silent !== "");
    if (root) root.classList.toggle("evalkit-dead", gone || taken);
    if (model.get("taken")) {
      state.textContent = "\u26a0 taken over: " + model.get("taken") + " This one saves nothing more.";
    } else if (gone) {
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
      silent = "\u26a0 no answer from the kernel for " + ACK_MS / 1000 + " s: the last key may not have been recorded " +
        "(is the kernel busy, or gone?)";
      paint();
    }, ACK_MS));
    count();
  };
  const onAck = (msg) => {
    if (!msg || msg.ack === undefined) return;
    clearTimeout(pending.get(msg.ack));
    pending.delete(msg.ack);
    count();
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
    send({ key: event.key, case: onScreen() });  // the case on screen at the keydown: the kernel acts on it only
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
  const onAct = (event) => {  // a click on an action button goes to the kernel with the case on screen, as a key does
    const button = event.target.closest && event.target.closest("button");
    const act = button && Array.from(button.classList).find((c) => c.startsWith("evalkit-act-"));
    if (!act || !areas.some((a) => a.contains(button))) return;
    event.preventDefault();
    event.stopPropagation();  // capture phase, above the button: its own handler never sees this click
    if (button.disabled) return;
    home(areas.find((a) => a.contains(button)));
    send({ click: act.slice("evalkit-act-".length), case: onScreen() });
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
    root.addEventListener("click", onAct, true);
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
  model.on("change:taken", paint);
  model.on("msg:custom", onAck);
  model.on("comm_live_update", onLive);
  attach();
  return () => {
    model.off("change:legend", paint);
    model.off("change:taken", paint);
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
    if (root) {
      root.removeEventListener("keydown", onTextKey, true);
      root.removeEventListener("click", onAct, true);
    }
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
    """The keys line: the legend and whether the keys are live; sends ``{"key": ..., "case": ..., "seq": n}`` for a key
    typed in a key area and ``{"click": ..., "case": ..., "seq": n}`` for a click on an action button (``case``: the
    case on screen then, read from the page; ``{"find": ...}`` for Enter in the find box) and gets ``{"ack": n}`` back
    once it is handled. ``taken`` set says the labeller was taken over, at once, without waiting for a key."""

    _esm = _KEYS_ESM
    _css = _KEYS_CSS
    legend = traitlets.Unicode("").tag(sync=True)
    file = traitlets.Unicode("").tag(sync=True)  # named in the message shown once the kernel is gone
    saved_note = traitlets.Unicode("").tag(sync=True)  # the note the case on screen has saved, to tell a typed one
    autofocus = traitlets.Bool(True).tag(sync=True)  # take the focus when first shown (then cleared by the page)
    taken = traitlets.Unicode("").tag(sync=True)  # why this labeller no longer writes (a newer one took its file over)


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
        self.taken_over = None  # set (called with no argument) by the labeller: a newer writer took the file over
        self.writer = LabelWriter(self.path, labeller=self.labeller,  # locks the file and repairs a torn tail
                                  on_takeover=lambda: self.taken_over() if self.taken_over is not None else None)
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
        for i, (level, button) in enumerate(self.buttons.items()):
            button.on_click(lambda _, level=level: owner.label(level))
            button.add_class(f"evalkit-act-level-{i}")
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
        for name in ("unsure", "ignore", "skip", "back", "undo"):  # the page sends their clicks with the case on screen
            getattr(self, f"{name}_button").add_class(f"evalkit-act-{name}")
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
            elif "click" in content:
                self.owner.handle_click(content)
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
        self.reveal_button.add_class("evalkit-act-reveal")
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
        # the case id on the page itself: a key or click sends the case the annotator saw, not the one the kernel has
        self.case_view.value = (f"<div style='line-height: 1.45' data-evalkit-case='{html.escape(case, quote=True)}'>"
                                f"{head}{owner._case_html(position)}</div>")
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


