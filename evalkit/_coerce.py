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


def as_pass(values: pd.Series, name: str) -> pd.Series:
    """PASS/FAIL strings (any case) or booleans -> nullable boolean (True = PASS); missing stays missing."""
    if values.dtype == bool or pd.api.types.is_bool_dtype(values):
        return values.astype("boolean")
    out = pd.Series(pd.NA, index=values.index, dtype="boolean")
    for key, value in values.items():
        if value is None or (not isinstance(value, str) and pd.isna(value)):
            continue
        if isinstance(value, (bool, np.bool_)):
            out[key] = bool(value)
            continue
        label = str(value).strip().upper()
        if label not in ("PASS", "FAIL"):
            raise ValueError(f"`{name}` for case {key!r} is {value!r}; expected PASS, FAIL or a boolean (True = PASS).")
        out[key] = label == "PASS"
    return out


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
