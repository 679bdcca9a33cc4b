"""What every labeller shares: the layout, the keys, the pacing, undo and skip, the summary."""

from __future__ import annotations

import bisect
import html
import statistics

import ipywidgets as widgets
import numpy as np
import pandas as pd
import traitlets

from evalkit._validation import (
    check_number,
    check_rng,
)
from evalkit.labels import LabelsLockedError, LabelWriter, latest_labels, read_labels
from evalkit.widgets import _common
from evalkit.widgets._common import (
    _FAST_LAST,
    _FAST_MANY,
    _MIN_READ_S,
    _SKIM_WPM,
    _CaseView,
    _duration,
    _KeyArea,
    _LabelStore,
    _numeric,
    _StaticFallback,
    _words,
)


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
        self._session_start = _common._now()
        self._shown_at = _common._now()
        self._recent: list[tuple[float, float]] = []  # (seconds on screen, seconds a skim takes) of the last labels
        self._found: tuple[str, list[int]] | None = None  # the last search and its matches
        self._haystacks: dict[int, str] = {}  # the lower-cased text of each case searched
        self._keys = keys = _KeyArea(self, self.levels, self._texts)
        store.taken_over = self._taken_over
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

    def _watch_ignored(self, case: str, old: dict | None) -> None:
        if old is not None:  # a label cleared by the ignore
            self._watch_undone(case)

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
        self._shown_at = _common._now()

    def _sync_progress(self) -> None:
        n_done = len(self.order) - len(self._open)
        self.progress.value = n_done
        self.progress_text.value = f"{n_done} / {len(self.order)}"
        self.done = n_done == len(self.order)
        self.pacing.value = "".join(f" · {html.escape(part)}" for part in self._progress_segments())
        warning = "" if self.done else self._fast_warning()  # the end summary is no place to be told to slow down
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
        parts.append(f"{_duration((_common._now() - self._session_start).total_seconds())} this session")
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

    def _taken_over(self) -> None:
        """A newer labeller (or writer) of this file in this kernel took it over: say so now, on the keys line and
        the status line, without waiting for a key."""
        why = (f"a newer labeller of {self.path} in this kernel took the file over (its cell was run again, or "
               "another was opened on it).")
        self._keys.keys_line.taken = why
        self._say(f"<b style='color: #b2182b'>taken over</b>: {html.escape(why)} This one saves nothing more; use the "
                  "newer one.")

    def close(self) -> None:
        """Release the labels file (its lock) and close the widget."""
        store = getattr(self, "_store", None)  # None when the constructor stopped early
        if store is not None:
            store.close()
        super().close()

    def _pace(self, position: int) -> None:
        """Note how long the case just labelled was on screen against how long a skim of it takes."""
        seen = (_common._now() - self._shown_at).total_seconds()
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
        self._watch_ignored(case, old)
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
        if not self._write(store.envelope(position, None)):  # no label, not ignored: an undo (the record says it)
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

    def _stale(self, event: dict, what: str) -> bool:
        """Whether ``event`` was made on another case than the one on screen now (``event["case"]``, the case the page
        showed at the keydown or click; None on the end summary); if so, the status line says it was not applied."""
        if "case" not in event:
            return False
        seen = event["case"]
        seen = None if seen is None else str(seen)
        if seen == self.current_case:
            return False
        where = lambda case: self._code(case) if case is not None else "the end summary"  # noqa: E731
        self._say(f"<b style='color: #b2182b'>{html.escape(what)} not applied</b>: it was made on {where(seen)}, but "
                  f"{where(self.current_case)} is on screen now (the screen had not caught up with the last action); "
                  "read it, then press again")
        return True

    def handle_click(self, event: dict) -> None:
        """Act on a click the page sends (``{"click": name, "case": id}``): ``level-<i>`` labels with the i-th level,
        ``unsure``, ``ignore``, ``skip``, ``back``, ``undo``, ``reveal``; only if ``case`` is the case on screen."""
        name = str(event.get("click", ""))
        actions = {"ignore": self.ignore, "skip": self.skip, "back": self.back, "undo": self.undo, "reveal": self.reveal,
                   "unsure": lambda: setattr(self.unsure_button, "value", not self.unsure_button.value)}
        what = f"the click on {name!r}"
        if name.startswith("level-") and name[6:].isdigit() and int(name[6:]) < len(self.levels):
            level = self.levels[int(name[6:])]
            if not self._stale(event, f"the click on {self._shown_label(level)}"):
                self.label(level)
        elif name in actions:
            if not self._stale(event, what):
                if name == "unsure" and self.current_case is None:
                    self._say(f"nothing to flag: {self._end_line()}")
                else:
                    actions[name]()
        else:
            self._say(f"{html.escape(what)} does nothing here")

    def handle_key(self, event: dict) -> None:
        """Act on a key event (``{"key": ...}``) as the keyboard shortcuts do; any other key says so. With ``"case"``
        (the case the page showed at the keydown), a key made on another case than the one on screen now is not
        applied, and the status line says so."""
        key = str(event.get("key", ""))
        if key not in ("/",) and self._stale(event, f"key {key!r}"):
            return
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

    def _name_in_notebook(self) -> str:
        """The labeller as the notebook names it: the variable that holds it, when exactly one does, else a neutral
        stand-in (``<i>the labeller</i>``), already HTML."""
        try:
            from IPython import get_ipython

            shell = get_ipython()
        except ImportError:  # pragma: no cover - IPython comes with ipywidgets
            shell = None
        names = [] if shell is None else [name for name, value in shell.user_ns.items()
                                          if value is self and not name.startswith("_") and name.isidentifier()]
        return html.escape(names[0]) if len(names) == 1 else "<i>the labeller</i>"

    def _summary_html(self) -> str:
        n, store = len(self.order), self._store
        notes = sum(bool(r.get("note")) for r in store.current.values())
        pace = f", {_duration(float(np.median(store.gaps)), tenths=True)} per label" if store.gaps else ""
        head = f"All {self._count(n)} are labelled" if not store.ignored else f"All {self._count(n)} are done"
        ignored = f", {len(store.ignored)} ignored" if store.ignored else ""
        return (f"<div style='background: #e5f5e0; border-radius: 3px; padding: 6px 10px; line-height: 1.45'><p><b>{head}"
                f"</b>: {html.escape(self._tally_text())}{ignored}; {store.unsure} marked unsure, {notes} with a note "
                f"({_duration((_common._now() - self._session_start).total_seconds())} in this session{pace}). The labels are in "
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
