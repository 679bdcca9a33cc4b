"""Deterministic, named code checks on outputs. They never go to a model.

Each factory returns a :class:`Check`: a name and a function of the output text (and its parsed JSON,
computed once per output). :func:`run_checks` applies a list of them and returns one boolean column per
check plus ``all_passed``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import pandas as pd

from evalkit._validation import check_columns

__all__ = [
    "Check",
    "valid_json",
    "required_fields",
    "value_in",
    "number_in_range",
    "max_length",
    "regex",
    "run_checks",
]

_NOT_JSON = object()


@dataclass(frozen=True)
class Check:
    """A named deterministic check: ``func(text, parsed_json) -> bool``."""

    name: str
    func: Callable[[str, object], bool]
    description: str = ""

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"`name` must be a non-empty string; got {self.name!r}.")
        if not callable(self.func):
            raise TypeError(f"`func` must be a callable (text, parsed_json) -> bool; got {type(self.func).__name__}.")

    def __call__(self, text: str) -> bool:
        return bool(self.func(text, _parse(text)))


def _parse(text):
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return _NOT_JSON


def _field(parsed, field):
    """Value of ``field`` (dotted path allowed) in a parsed JSON object, or _NOT_JSON."""
    value = parsed
    for part in field.split("."):
        if not isinstance(value, dict) or part not in value:
            return _NOT_JSON
        value = value[part]
    return value


def valid_json(*, name: str = "valid_json") -> Check:
    """The output parses as JSON.

    Examples
    --------
    >>> from evalkit import checks
    >>> checks.valid_json()('{"a": 1}'), checks.valid_json()("{'a': 1}")
    (True, False)
    """
    return Check(name, lambda text, parsed: parsed is not _NOT_JSON, "output is valid JSON")


def required_fields(fields: Sequence[str], *, name: str = "required_fields") -> Check:
    """The output is a JSON object holding every field (dotted paths reach nested objects).

    Examples
    --------
    >>> from evalkit import checks
    >>> checks.required_fields(["answer", "meta.source"])('{"answer": 1, "meta": {"source": "x"}}')
    True
    """
    fields = list(fields)
    return Check(name, lambda text, parsed: all(_field(parsed, f) is not _NOT_JSON for f in fields),
                 f"JSON object with fields {fields}")


def value_in(allowed: Iterable, *, field: str | None = None, name: str = "value_in") -> Check:
    """The JSON ``field`` (or, without ``field``, the stripped output text) is one of ``allowed``.

    Examples
    --------
    >>> from evalkit import checks
    >>> check = checks.value_in({"yes", "no"}, field="label")
    >>> check('{"label": "yes"}'), check('{"label": "maybe"}')
    (True, False)
    """
    allowed = frozenset(allowed)

    def func(text, parsed):
        value = text.strip() if field is None else _field(parsed, field)
        try:
            return value is not _NOT_JSON and value in allowed
        except TypeError:  # unhashable JSON value (list or object)
            return False

    return Check(name, func, f"{field or 'output'} in {sorted(map(str, allowed))}")


def number_in_range(low: float, high: float, *, field: str | None = None, name: str = "number_in_range") -> Check:
    """The JSON ``field`` (or the whole output) is a finite number within [low, high].

    Examples
    --------
    >>> from evalkit import checks
    >>> check = checks.number_in_range(1, 5, field="score")
    >>> check('{"score": 4}'), check('{"score": 7}'), check('{"score": "4"}')
    (True, False, False)
    """

    def func(text, parsed):
        value = parsed if field is None else _field(parsed, field)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        return math.isfinite(value) and low <= value <= high

    return Check(name, func, f"{field or 'output'} in [{low}, {high}]")


def max_length(limit: int, *, unit: str = "chars", name: str = "max_length") -> Check:
    """The output has at most ``limit`` characters (``unit="chars"``) or whitespace-separated words.

    Examples
    --------
    >>> from evalkit import checks
    >>> checks.max_length(3, unit="words")("one two three four")
    False
    """
    if unit not in ("chars", "words"):
        raise ValueError(f"`unit` must be one of ['chars', 'words']; got {unit!r}.")
    count = len if unit == "chars" else (lambda text: len(text.split()))
    return Check(name, lambda text, parsed: count(text) <= limit, f"at most {limit} {unit}")


def regex(pattern: str, *, must_match: bool = True, flags: int = 0, name: str = "regex") -> Check:
    """The output matches (``re.search``) the pattern, or, with ``must_match=False``, does not.

    Examples
    --------
    >>> from evalkit import checks
    >>> no_email = checks.regex(r"[\\w.]+@[\\w.]+", must_match=False, name="no_email")
    >>> no_email("write to me@example.com")
    False
    """
    compiled = re.compile(pattern, flags)
    return Check(name, lambda text, parsed: (compiled.search(text) is not None) == must_match,
                 f"{'matches' if must_match else 'does not match'} /{pattern}/")


def run_checks(outputs, checks: Sequence[Check], *, column: str = "output") -> pd.DataFrame:
    """Apply named checks to every output.

    Parameters
    ----------
    outputs : Series or DataFrame
        Output texts indexed by case id, or a cases table with ``case_id`` and ``column``.
    checks : sequence of Check
        Names must be unique; they become the columns.
    column : str, default "output"
        The output column when ``outputs`` is a table.

    Returns
    -------
    DataFrame
        Index ``case_id``; one bool column per check and ``all_passed``. A missing output fails every check.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import checks
    >>> outputs = pd.Series({"c1": '{"label": "yes"}', "c2": "yes"})
    >>> checks.run_checks(outputs, [checks.valid_json(), checks.value_in({"yes"}, field="label", name="label_ok")])
             valid_json  label_ok  all_passed
    case_id
    c1             True      True        True
    c2            False     False       False
    """
    if isinstance(outputs, pd.DataFrame):
        check_columns(outputs, ["case_id", column], "outputs")
        outputs = outputs.set_index("case_id")[column]
    elif not isinstance(outputs, pd.Series):
        raise TypeError(f"`outputs` must be a Series indexed by case id or a cases DataFrame; got {type(outputs).__name__}.")
    checks = list(checks) if isinstance(checks, (list, tuple)) else [checks] if isinstance(checks, Check) else None
    if not checks or not all(isinstance(c, Check) for c in checks):
        raise TypeError("`checks` must be a non-empty sequence of Check objects (see evalkit.checks).")
    names = [c.name for c in checks]
    if len(set(names)) != len(names):
        raise ValueError(f"`checks`: check names must be unique; got {names}.")
    if "all_passed" in names:
        raise ValueError("`checks`: 'all_passed' is reserved for the combined column; rename that check.")
    rows = []
    for text in outputs:
        if not isinstance(text, str):
            rows.append([False] * len(checks))
            continue
        parsed = _parse(text)
        rows.append([bool(c.func(text, parsed)) for c in checks])
    table = pd.DataFrame(rows, index=outputs.index.rename("case_id"), columns=names, dtype=bool)
    table["all_passed"] = table.all(axis=1)
    return table
