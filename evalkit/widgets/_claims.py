"""The claim labeller: a five-level verdict per atomic claim."""

from __future__ import annotations

import html

import numpy as np
import pandas as pd

from evalkit import verdicts as _verdict_table
from evalkit._validation import (
    check_columns,
    check_dataframe,
    check_unique_column,
    show,
)
from evalkit.widgets._base import _JudgeVerdict, _LabellerBase
from evalkit.widgets._common import _VERDICT_LEVELS, _field_html, _LabelStore, _text, _words


def _native(value):
    """A table value as JSON writes it (a numpy integer as an int)."""
    return value.item() if isinstance(value, np.generic) else value


class ClaimLabeller(_JudgeVerdict, _LabellerBase):
    """Label the claims of a claim-verdict table one at a time, on the table's own levels, beside the answer they
    come from: human claim verdicts, to calibrate the claim judge as case labels calibrate a case judge.

    The same widget as :class:`Labeller` (annotator header, key areas, notes, unsure, ignore, skip/back/undo
    across restarts, find, pacing, end summary, blind rules, only its annotator's labels), for claims: it shows
    the answer (and its question, and the source it rests on), the answer's claims in order, numbered from 1, with
    the one to label marked and your verdicts on the others, and one button per level of the verdict scale, ``none`` to ``fully`` (keys ``1`` to ``5``).
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
    source : str, optional
        A column of ``answers`` holding the source the answer rests on (the retrieved passages, the document),
        shown below the answer: the verdict asks how well the source supports each claim. Without it the
        labeller says that the source is not shown.
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
    >>> answers = pd.DataFrame({"item_id": ["q1"], "output": ["Paris, in France, has 9 million people."],
    ...                         "context": ["Paris, the capital of France, has 2.1 million inhabitants."]})
    >>> lab = ClaimLabeller(table, pathlib.Path(tempfile.mkdtemp()) / "ann.jsonl", answers=answers, source="context",
    ...                     labeller="ann")
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
                 question: str | None = None, source: str | None = None, blind: bool = True, labeller: str | None = None, rubric=None,
                 rubric_version: str | None = None):
        self.claims = self._claim_table(verdicts)
        if source is not None and answers is None:
            raise ValueError(f"`source`={source!r} names a column of `answers`: pass answers= too (one row per item).")
        self._answers = self._answer_table(answers, answer, question, source)
        self._answer, self._question, self._source = answer, question, source
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
    def _answer_table(answers, answer: str, question, source) -> pd.DataFrame | None:
        if answers is None:
            return None
        table = check_dataframe(answers, "answers")
        check_columns(table, ["item_id", answer, *(c for c in (question, source) if c is not None)], "answers")
        check_unique_column(table, "item_id", "answers")
        return table.set_index(table["item_id"].astype(str))

    def _button_style(self, level: str) -> str:
        return "success" if level == "fully" else "danger" if level == "none" else ""

    def _item_fields(self, position: int) -> tuple[str, str, str]:
        """(question, answer, source) of the claim's item, "" where there is none."""
        item = str(self._item[self.order[position]])
        if self._answers is None or item not in self._answers.index:
            return "", "", ""
        row = self._answers.loc[item]
        return tuple(_text(row[column]) if column else "" for column in (self._question, self._answer, self._source))

    def _search_text(self, position: int) -> str:
        return "\n".join((_text(self._claim[self.order[position]]), *self._item_fields(position)))

    def _reading_words(self, position: int) -> int:
        """The claim; and the answer and its source too for an item's first claim, where the annotator first reads
        them."""
        fields = self._item_fields(position)
        opens = self._opens_item[self.order[position]]
        return _words(self._claim[self.order[position]], *(fields if opens else ()))

    def _extra_fields(self, position: int) -> dict:
        row = self.order[position]
        return {"item_id": _native(self._item[row]), "claim_idx": int(self.claims["claim_idx"].iat[row]),
                "claim": _text(self._claim[row])}

    def _case_html(self, position: int) -> str:
        row, item = self.order[position], self._item[self.order[position]]
        question, answer, source = self._item_fields(position)
        parts = []
        if question:
            parts.append(f"<div style='font-weight: 600; margin-top: 2px'>{html.escape(self._question)}</div>"
                         f"{_field_html(question, height='6em')}")
        if answer or self._answers is not None:
            parts.append(f"<div style='font-weight: 600; margin-top: 2px'>{html.escape(self._answer)}</div>"
                         f"{_field_html(answer, height='10em')}")
        if self._source is not None:
            parts.append(f"<div style='font-weight: 600; margin-top: 2px'>{html.escape(self._source)} (the source)</div>"
                         f"{_field_html(source, height='10em')}")
            ask = "how well does the source above support it?"
        else:
            ask = ("how well does the answer's source support it? The source is not shown here: open the labeller with "
                   "<code>source=</code>, a column of <code>answers</code>")
        items = []
        for at in self._item_rows[str(item)]:
            mine = self._current.get(self.claim_ids[at])
            you = f" <span style='color: #555'>· your verdict: {html.escape(str(mine['label']))}</span>" if mine else ""
            now = at == row
            items.append(f"<li class='{'evalkit-claim-now' if now else ''}'>{'▶ ' if now else ''}"
                         f"{html.escape(_text(self._claim[at]))}{you}</li>")
        parts.append(f"<div style='font-weight: 600; margin-top: 2px'>claims of {html.escape(str(item))} "
                     f"(label the marked one: {ask})</div>"
                     f"<ol class='evalkit-claims' start='1' style='margin: 2px 0 6px 0; line-height: 1.45'>{''.join(items)}</ol>")
        return "".join(parts)

    def _next_step(self) -> str:
        name = self._name_in_notebook()
        return (f"calibrate the claim judge on these verdicts, e.g. <code>calibrate.calibrate({name}.judge_verdicts(), "
                f"{name}.labels(), pass_levels=[\"fully\", \"mostly\"])</code>; compare annotators with "
                "<code>agreement.krippendorff_alpha([\"ann.jsonl\", \"bob.jsonl\"])</code>; re-aggregate your verdicts "
                f"with <code>tcva.sweep({name}.verdicts(), ...)</code>.")

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


