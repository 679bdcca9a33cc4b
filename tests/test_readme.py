"""The README's snippets run as they stand and print what the README shows under them.

Every ``python`` block of README.md is followed by a ``text`` block: what the snippet prints. Each snippet runs on
its own, in a fresh namespace (a newcomer copies one job, not the page), and its standard output must match the
text block token by token: words and punctuation exactly, numbers to the rounding the README shows (a number
shown as 0.870 matches a printed 0.8704 but not 0.8716). Warnings are recorded, not compared: the README shows
standard output only.
"""

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _snippets(text):
    """(heading, code, shown output) for every python block, with the text block that must follow it."""
    blocks = [(match.group(1), match.group(2), match.start(), match.end()) for match in _BLOCK.finditer(text)]
    snippets = []
    for k, (kind, code, start, end) in enumerate(blocks):
        if kind != "python":
            continue
        heading = re.findall(r"^#+ (.+)$", text[:start], re.M)[-1]
        following = blocks[k + 1] if k + 1 < len(blocks) else None
        if following is None or following[0] != "text" or text[end:following[2]].strip():
            raise AssertionError(f"README.md: the python block under {heading!r} is not followed by a text block "
                                 "showing what it prints")
        snippets.append((heading, code, following[1]))
    return snippets


def _tokens(text):
    """Numbers (as their text) and the words between them, whitespace-insensitive."""
    numbers, tokens = _NUMBER.findall(text), []
    for position, piece in enumerate(_NUMBER.split(text)):
        tokens.extend(("word", word) for word in piece.split())
        if position < len(numbers):
            tokens.append(("number", numbers[position]))
    return tokens


def _mismatch(shown, printed):
    """None when ``printed`` reads as ``shown`` (numbers to the digits shown), else a message naming the first difference."""
    expected, actual = _tokens(shown), _tokens(printed)
    for k, ((kind_e, e), (kind_a, a)) in enumerate(zip(expected, actual, strict=False)):
        if kind_e != kind_a:
            return f"token {k}: the README shows {e!r}, the snippet printed {a!r}"
        if kind_e == "word" and e != a:
            return f"token {k}: the README shows {e!r}, the snippet printed {a!r}"
        if kind_e == "number":
            mantissa, _, exponent = e.lower().partition("e")
            decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
            half_unit = 0.5 * 10.0 ** (int(exponent or 0) - decimals)
            if abs(float(e) - float(a)) > half_unit * (1 + 1e-9):
                return f"token {k}: the README shows {e}, the snippet printed {a}"
    if len(expected) != len(actual):
        return f"the README shows {len(expected)} tokens, the snippet printed {len(actual)}:\n{printed}"
    return None


SNIPPETS = _snippets(README.read_text(encoding="utf-8"))


def test_the_readme_has_the_five_jobs_each_with_a_snippet():
    assert [heading for heading, _, _ in SNIPPETS] == [
        "Check my judge", "Few labels", "Is v2 better?", "Rank systems", "Read my tool's logs"]


@pytest.mark.parametrize(("heading", "code", "shown"), SNIPPETS, ids=[heading for heading, _, _ in SNIPPETS])
def test_a_readme_snippet_prints_what_the_readme_shows(heading, code, shown):
    printed = io.StringIO()
    with warnings.catch_warnings(record=True), contextlib.redirect_stdout(printed):
        warnings.simplefilter("always")
        exec(compile(code, f"README.md ({heading})", "exec"), {"__name__": "__readme__"})
    problem = _mismatch(shown, printed.getvalue())
    assert problem is None, f"README.md, {heading!r}: {problem}\nprinted:\n{printed.getvalue()}"


@pytest.mark.parametrize(("shown", "printed", "matches"), [
    ("agreement 0.870 [0.788, 0.929]", "agreement 0.8704 [0.7881, 0.9290]", True),
    ("agreement 0.870 [0.788, 0.929]", "agreement 0.8716 [0.788, 0.929]", False),  # rounds to 0.872
    ("rating 1137", "rating 1137.4", True),
    ("rating 1137", "rating 1138", False),
    ("p = 2.1e-05", "p = 2.13e-05", True),
    ("p = 2.1e-05", "p = 3.1e-05", False),
    ("system-a  0.609  1  2", "system-a 0.609 1 2", True),  # whitespace is layout
    ("system-a 0.609 1 2", "system-b 0.609 1 2", False),
    ("a b c", "a b", False),
    ("a b", "a b c", False),
    ("-0.020 [-0.116, +0.077]", "-0.020 [-0.116, +0.077]", True),
    ("-0.020", "+0.020", False),
])
def test_the_comparison_reads_numbers_to_the_rounding_shown(shown, printed, matches):
    assert (_mismatch(shown, printed) is None) is matches


def test_the_readme_keeps_the_two_commands_that_ci_runs():
    # .ci/run installs the dev extra and runs the README's test command, `pytest` (the fast tier), then the slow tier
    first = next(match.group(2) for match in _BLOCK.finditer(README.read_text(encoding="utf-8"))
                 if match.group(1) == "bash")
    assert first.splitlines() == ['pip install -e ".[dev]" && evalkit report', "pytest"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install --quiet -e ".[dev]"' in ci and "python -m pytest --durations" in ci
