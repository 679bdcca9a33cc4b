"""Verdict and label coercion shared by the judge, calibration, comparison and labelling code.

Private floor: imports nothing from evalkit above ``_validation``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from evalkit._validation import check_columns, check_unique_index

# Spellings of the claim-verdict levels that mean the same level.
LEVEL_ALIASES = {"partially": "partial"}


def normalise_level(label):
    """Lower-case and strip a claim-verdict label and map its aliases (non-strings are returned as given)."""
    if not isinstance(label, str):
        return label
    label = label.strip().lower()
    return LEVEL_ALIASES.get(label, label)


DEFAULT_LEVELS = ("PASS", "FAIL")


def verdict_levels(data, *, levels=None, pass_levels=None) -> tuple[tuple | None, tuple]:
    """``(levels, pass_levels)`` for verdicts: as given, else a results table's rubric (``attrs["rubric"]``),
    else PASS/FAIL. ``levels`` is None when only the pass levels are known (then every other value fails).
    """
    rubric = (getattr(data, "attrs", None) or {}).get("rubric") or {}
    if pass_levels is None and levels is None and rubric.get("levels"):
        levels = rubric["levels"]
        fail = rubric.get("fail_level")
        pass_levels = rubric.get("pass_levels") or [lvl for lvl in levels if lvl != fail]
    if pass_levels is None:
        if levels is not None and tuple(levels) != DEFAULT_LEVELS:
            raise ValueError(f"`pass_levels` is needed with levels {list(levels)}: say which of them count as a pass.")
        pass_levels = ("PASS",)
    if isinstance(pass_levels, str) or not all(isinstance(p, str) for p in pass_levels) or not len(pass_levels):
        raise TypeError(f"`pass_levels` must be a non-empty sequence of verdict levels, e.g. ('PASS',); "
                        f"got {pass_levels!r}.")
    if levels is None and tuple(pass_levels) == ("PASS",):
        levels = DEFAULT_LEVELS
    return (None if levels is None else tuple(levels)), tuple(pass_levels)


def as_pass(values: pd.Series, name: str, *, levels=DEFAULT_LEVELS, pass_levels=("PASS",)) -> pd.Series:
    """Verdicts or labels -> nullable boolean (True = pass); missing stays missing.

    A value in ``pass_levels`` passes; any other value of ``levels`` fails (with ``levels=None`` every
    other value fails). PASS/FAIL in any case and booleans (True = pass) are always understood; anything
    else raises ValueError naming the case and the levels expected.
    """
    if values.dtype == bool or pd.api.types.is_bool_dtype(values):
        return values.astype("boolean")
    passing = set(pass_levels)
    failing = None if levels is None else set(levels) - passing
    codes, uniques = pd.factorize(values.to_numpy(dtype=object), use_na_sentinel=True)  # decide each value once
    decided = np.zeros(len(uniques), dtype=bool)
    for i, value in enumerate(uniques):
        if isinstance(value, (bool, np.bool_)):
            decided[i] = bool(value)
            continue
        label = str(value).strip()
        if label in passing:
            decided[i] = True
        elif failing is not None and label in failing:
            decided[i] = False
        elif label.upper() in DEFAULT_LEVELS:
            decided[i] = label.upper() == "PASS"
        elif failing is None:
            decided[i] = False
        else:
            key = values.index[int(np.flatnonzero(codes == i)[0])]
            expected = [*passing, *sorted(failing)]
            raise ValueError(f"`{name}` for case {key!r} is {value!r}; expected one of {expected}, PASS/FAIL or a "
                             "boolean (True = pass). For other levels pass `pass_levels=`.")
    result = pd.array(decided[np.maximum(codes, 0)] if len(uniques) else np.zeros(len(codes), dtype=bool), dtype="boolean")
    result[codes < 0] = pd.NA
    return pd.Series(result, index=values.index)


def judge_verdicts(judge, name: str = "judge") -> pd.Series:
    """The judge's verdicts as a Series indexed by case id (from a results table or a Series)."""
    if isinstance(judge, pd.DataFrame):
        check_columns(judge, ["case_id", "verdict"], name)
        keys = [c for c in ("rubric", "rubric_version", "model") if c in judge.columns]
        if keys and len(judge.drop_duplicates(keys)) > 1:
            raise ValueError(f"`{name}` holds several rubrics/versions/models; select one, e.g. "
                             f"results[results.rubric_version == '...'].")
        series = judge.set_index("case_id")["verdict"].astype(object)
    elif isinstance(judge, pd.Series):
        series = judge.astype(object)
    else:
        raise TypeError(f"`{name}` must be a results DataFrame or a Series of verdicts indexed by case id; "
                        f"got {type(judge).__name__}.")
    check_unique_index(series.index, name)
    return series
