"""The pairwise labeller: which of two answers is better."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from evalkit._validation import (
    check_columns,
    check_dataframe,
    check_number,
    check_unique_column,
)
from evalkit.labels import latest_labels
from evalkit.widgets._base import _LabellerBase
from evalkit.widgets._common import _blank, _field_html, _LabelStore, _text

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


