"""The case labeller, with its live interval."""

from __future__ import annotations

import bisect
import html
from collections.abc import Mapping

import numpy as np
import pandas as pd

from evalkit import _stats
from evalkit import calibrate as _calibrate
from evalkit import infer as _infer
from evalkit._coerce import as_pass, judge_verdicts
from evalkit._stats import successive as _successive
from evalkit._validation import (
    check_columns,
    check_dataframe,
    check_number,
    check_option,
    check_unique_column,
    check_unique_index,
    warn,
)
from evalkit.labels import ORDER_FIELDS, read_labels
from evalkit.widgets._base import _JudgeVerdict, _LabellerBase
from evalkit.widgets._common import _field_html, _LabelStore, _text

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


def _drawn_inputs(ids, weights, values: dict, ignored) -> tuple[pd.Series, pd.Series, list[str], list[str]]:
    """What the live interval of ``order="active"`` rests on: ``(human, probabilities, ignored, skipped)``, the
    arguments of :func:`evalkit.infer.confidence_sequence` and the cases it leaves out.

    ``ids`` are the cases in draw order, ``weights`` their draw probabilities (NaN: the uniform pilot, first; 0: never
    drawn), ``values`` the labelled cases' values, ``ignored`` the ignored cases. The design: a case ignored, or
    skipped (still open while a case drawn after it is labelled), is left out of the cases the interval is about,
    and the labels are the others' in draw order. Drawn one at a time by exponential clocks, the draw order of any
    set of cases chosen by what they are (not by where they fell in the order) is itself a draw of that set by the
    same probabilities, so the interval is the design's own for the mean over the cases left in. A skipped case
    labelled later goes back into its place in the draw order (the line is recomputed). While the last label is a
    pilot case, the labels are uniform draws from every case left in (equal probabilities); a case of
    probability 0 (never drawn) labelled by hand is not one of the draws and is left out of the labels."""
    weights = np.asarray(weights, dtype=float)
    pilot = np.isnan(weights)
    drawable = pilot | (weights > 0)
    last = max((k for k, case in enumerate(ids) if case in values and drawable[k]), default=-1)
    ignored_out = [case for case in ids if case in ignored and case not in values]
    skipped = [case for case in ids[:max(last, 0)] if case not in values and case not in ignored]
    out = set(ignored_out) | set(skipped)
    kept = [k for k, case in enumerate(ids) if case not in out]
    used = [k for k in kept if ids[k] in values and drawable[k]]
    human = pd.Series([float(values[ids[k]]) for k in used], index=[ids[k] for k in used], dtype=float)
    if last >= 0 and pilot[last]:  # the pilot not done: uniform draws from every case left in
        probabilities = pd.Series(1.0, index=[ids[k] for k in kept], name="probability")
    else:
        drawn = [k for k in kept if not pilot[k]]
        probabilities = pd.Series(weights[drawn], index=[ids[k] for k in drawn], name="probability")
    return human, probabilities, ignored_out, skipped


class _DrawnSequence:
    """The live interval of cases drawn by probabilities (``order="active"``): :func:`evalkit.infer.confidence_sequence`
    with ``probabilities=`` on the inputs :func:`_drawn_inputs` makes of the labels so far, recomputed after every
    change, so that an undo, a relabel, an ignore or a resume leaves it exactly what the public function gives (a
    few milliseconds per label at a thousand cases). It is of the mean over the cases of the table less those
    ignored or skipped (the line names them)."""

    statistic = "mean"

    def __init__(self, ids, weights, lo: float, hi: float, confidence_level: float):
        self.ids, self.bounds, self.level = list(ids), (float(lo), float(hi)), confidence_level
        self.weights = np.asarray(weights, dtype=float)
        self.ignored, self.skipped = [], []
        self.update({}, set())

    def update(self, values: dict, ignored) -> None:
        human, probabilities, self.ignored, self.skipped = _drawn_inputs(self.ids, self.weights, values, ignored)
        self.n_cases = len(self.ids) - len(self.ignored) - len(self.skipped)
        self.in_sequence = list(human.index)
        if not len(human):
            self._frame = None
            self.n_used = self.estimate = self.low = self.high = np.array([])
            return
        self._frame = _infer.confidence_sequence(human=human, probabilities=probabilities, bounds=self.bounds,
                                                 confidence_level=self.level)
        self.n_used = self._frame["n_used"].to_numpy()
        self.estimate, self.low, self.high = (self._frame[c].to_numpy() for c in ("estimate", "cs_low", "cs_high"))

    def __len__(self) -> int:
        return len(self.n_used)

    def half_width(self) -> float:
        return (self.high[-1] - self.low[-1]) / 2

    def frame(self) -> pd.DataFrame:
        if self._frame is None:
            return _infer.confidence_sequence(human=pd.Series([0.0], index=self.ids[:1]),
                                              probabilities=pd.Series(1.0, index=self.ids), bounds=self.bounds,
                                              confidence_level=self.level).iloc[:0]
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
        says what it estimates, the range in plain words, then whether it is narrow enough ("pass rate in the
        population these 200 cases come from: between 30% and 88%
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
        draw order: the mean over these cases (every case of the table; Des Raj's estimator, pulled into its
        range where it falls outside, so that it is exact once every case is labelled; exact after an undo, a
        relabel or a resume), valid at every number of labels; its line says "of these N cases". A case ignored
        is left out of what the line estimates ("of 49 of these 50 cases (1 ignored: left out)"); a case skipped
        while a later one is labelled is left out until it is labelled, then counted in its place in the draw
        order. Drawn one at a time by exponential clocks, the cases left in are still a draw by their
        probabilities, so the line never freezes and "you can stop" stays reachable; it estimates the mean over
        the cases left in, which differs from that over all of them when ignoring has to do with the label.
        ``"agreement"`` and ``"fail_recall"`` are refused with this
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
    'pass rate in the population these 60 cases come from: no label yet · an anytime-valid 95% range from the first label; you can stop at ±25 points'
    >>> for level in ["PASS", "PASS", "FAIL", "PASS"]:
    ...     live.label(level)
    >>> live.watch_text
    'pass rate in the population these 60 cases come from: between 14% and 100% (estimate 75%; anytime-valid 95%) — too wide to stop: ±43 points now, stop at ±25 points'
    >>> for level in ["PASS"] * 7:
    ...     live.label(level)
    >>> live.watch_text
    'pass rate in the population these 60 cases come from: between 52% and 100% (estimate 91%; anytime-valid 95%) — you can stop: ±24 ≤ 25 points after 11 labels'
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
            warn(f"watch={self.watch!r}: the live interval holds only if the cases come in a random order, and "
                          "order='given' says nothing of it; pass order='shuffle' (the labeller draws the order and "
                          "records its seed) or order='random' if the table is already in a random order.")

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
        """order="active": the sequence of the labels in draw order, leaving out the cases ignored or skipped
        (:func:`_drawn_inputs`)."""
        live = self._live
        live.update({case: self._value(case, record)[0] for case, record in self._current.items()}, self._store.ignored)
        self._in_sequence = live.in_sequence
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

    def _watch_ignored(self, case: str, old: dict | None) -> None:
        if isinstance(self._live, _DrawnSequence):  # one case fewer in what the line is about
            self._replay_drawn()
        elif old is not None:
            self._watch_undone(case)

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
        as booleans for agreement and FAIL recall). With ``order="active"`` the labels are in draw order, the
        cases ignored, or skipped while a later one is labelled, left out of the labels and of ``probabilities``,
        and the table equals ``confidence_sequence`` with those (while the last label is a pilot case: equal
        probabilities over every case left in). It shows the estimate whatever ``blind`` says.
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

    def _about(self) -> str:
        """What the line estimates: the mean over these cases (order="active", less those left out), or a rate of
        the population the cases come from."""
        n = len(self.order)
        if isinstance(self._live, _DrawnSequence):
            live = self._live
            if not live.ignored and not live.skipped:
                return f" of these {self._count(n)}"
            out = ", ".join(part for part in (f"{len(live.ignored)} ignored" if live.ignored else "",
                                               f"{len(live.skipped)} skipped" if live.skipped else "") if part)
            return f" of {live.n_cases} of these {self._count(n)} ({out}: left out)"
        return f" in the population these {self._count(n)} come from"

    def _watch_notes(self) -> list[str]:
        """What the line leaves out under order="active", and why the interval still holds for the rest."""
        live = self._live
        if not isinstance(live, _DrawnSequence) or not (live.ignored or live.skipped):
            return []
        notes = []
        if live.ignored:
            notes.append(f"an ignored {self._kind} is not one the line is about")
        if live.skipped:
            k = len(live.skipped)
            notes.append(f"the {self._count(k, 'skipped')} {'counts' if k == 1 else 'count'} once labelled, in "
                         f"{'its' if k == 1 else 'their'} place in the draw order")
        return [f"{' and '.join(notes)} (drawn one at a time, the cases left in are still a draw by their "
                "probabilities, so the range is theirs)"]

    def _watch_line(self) -> tuple[str, str]:
        """The line's text and its tone ("live", "settled" or "caveat"): what it estimates, the range in plain words
        ("between 30% and 88%"), then whether it is narrow enough to stop; a rate's widths in points (0.1 is ±10
        points)."""
        live, h = self._live, self.stop_half_width
        level = f"{self.confidence_level * 100:g}%"
        rate = self._watch_name != _WATCHED["mean"]
        scale, unit, pct = (100.0, " points", "%") if rate else (1.0, "", "")
        digits = (_decimals(h) if h is not None else 2) - (2 if rate else 0)
        stop = f"±{h * scale:.{digits}f}" if h is not None else None
        used = live.n_used[-1] if len(live) else 0
        over = f" over {live.n_used[-1]} human FAIL{'' if live.n_used[-1] == 1 else 's'}" if (
            self.watch == "fail_recall" and len(live) and live.n_used[-1]) else ""
        name = f"{self._watch_name}{over}{self._about()}"
        notes = "".join(f" · {note}" for note in self._watch_notes())
        if not used:
            first = "no human FAIL yet (it moves at each of your FAILs)" if self.watch == "fail_recall" and len(live) else \
                "no label yet"
            return (f"{name}: {first} · an anytime-valid {level} range from the first label"
                    + (f"; you can stop at {stop}{unit}" if stop else "") + notes), "live"
        half = live.half_width() * scale
        shown = _shown_against(half, None if h is None else h * scale, digits)
        width = f"±{half:.{shown}f}{unit}"
        if self.blind and self.watch in ("agreement", "fail_recall") and not self.done:
            head = f"{name}: within {width} (anytime-valid {level}; the estimate stays hidden while you label blind)"
            now = ""
        else:
            low, high = _outward(live.low[-1] * scale, live.high[-1] * scale, digits)
            estimate = live.estimate[-1]
            outside = ""
            if not live.low[-1] - 1e-12 <= estimate <= live.high[-1] + 1e-12:  # the running mean, off to one side
                outside = ("; the estimate, the labels' mean, lies outside the range: the range never widens (it is "
                           "where every range so far overlaps), and an unusual start left it to one side")
            head = (f"{name}: between {low}{pct} and {high}{pct} (estimate "
                    f"{estimate * scale:.{digits}f}{pct}; anytime-valid {level}{outside})")
            now = f" {width} now,"
        doubts = self._watch_doubts()
        caveat = "".join(f" · {d}" for d in doubts) + notes
        n = len(live)
        if self._settled_at is None:
            if stop is None:
                return f"{head}, {width}{caveat}" if now else f"{head}{caveat}", "caveat" if doubts else "live"
            return f"{head} — too wide to stop:{now} stop at {stop}{unit}{caveat}", "caveat" if doubts else "live"
        since = "" if self._settled_at == n else f" (first at {self._settled_at})"
        settled = f"±{half:.{shown}f} ≤ {stop[1:]}{unit} after {n} label{'' if n == 1 else 's'}{since}"
        skipped = self._skipped_before_last()
        if self._unknown_order or (doubts and not skipped):
            return (f"{head} — settled ({settled}), but {doubts[0]}" + "".join(f" · {d}" for d in doubts[1:]) + notes,
                    "caveat")
        if skipped:
            return (f"{head} — settled ({settled}): label the {self._count(skipped, 'skipped')} still open before you "
                    "stop: it assumes skipping has nothing to do with the label" + "".join(f" · {d}" for d in doubts[1:]),
                    "caveat")
        return f"{head} — you can stop: {settled}{notes}", "settled"

    def _skipped_before_last(self) -> int:
        if isinstance(self._live, _DrawnSequence):  # a skipped case is left out of what the line is about
            return 0
        return bisect.bisect_left(self._open, self._last_labelled)

    def _drawn_doubts(self) -> list[str]:
        """order="active": labels made in another order than the draw."""
        if not self._unknown_order:
            return []
        return [f"{self._unknown_order} of the {len(self._live)} labels were made in another order than order='active', "
                "so the interval may not hold"]

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
        return (f"calibrate the judge on these labels, e.g. <code>calibrate.calibrate(results, "
                f"{self._name_in_notebook()}.labels())</code> "
                "(notebook 00 does this in its next cells); later, re-label a sample with <code>relabel=</code> to "
                "measure your own consistency.")

    def self_agreement(self) -> pd.DataFrame:
        """How often your re-labels match your earlier labels (:func:`evalkit.calibrate.self_agreement` on your records
        in this file)."""
        records = read_labels(self.path)
        return _calibrate.self_agreement(records[records["labeller"].eq(self.labeller).fillna(False).to_numpy(dtype=bool)])


