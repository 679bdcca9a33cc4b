"""The README's snippets run as they stand and print what the README shows under them, and draw its figures.

Every ``python`` block of README.md is followed by a ``text`` block: what the snippet prints. Each snippet runs on
its own, in a fresh namespace (a newcomer copies one job, not the page), and its standard output must match the
text block token by token: words and punctuation exactly, numbers to the rounding the README shows (a number
shown as 0.870 matches a printed 0.8704 but not 0.8716). Warnings are recorded, not compared: the README shows
standard output only.

A snippet that draws is followed, after its text block, by the image of what it draws (``docs/_static/readme/``):
the test renders the snippet's figure again and compares it with the committed PNG (matplotlib's image comparison,
RMS difference at most ``FIGURE_TOLERANCE`` on 0-255). ``python tests/test_readme.py`` writes the PNGs afresh from
the snippets; run it when a snippet or the data under it changes, and look at the result.
"""

import contextlib
import io
import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"

FIGURE_TOLERANCE = 2.0
_IMAGE = re.compile(r"\A\s*!\[[^\]]*\]\((docs/_static/readme/[\w.-]+\.png)\)")
_BLOCK = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)
_NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")


def _snippets(text):
    """(heading, code, shown output, image or None) for every python block, with the text block that must follow it
    and the image that may follow that."""
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
        image = _IMAGE.match(text[following[3]:])
        snippets.append((heading, code, following[1], image.group(1) if image else None))
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
IDS = [f"{heading} ({k})" if [h for h, *_ in SNIPPETS].count(heading) > 1 else heading
       for k, (heading, *_) in enumerate(SNIPPETS)]


def test_the_readme_has_its_jobs_each_with_a_snippet():
    assert [heading for heading, *_ in SNIPPETS] == [
        "Score RAG answers claim by claim", "Find dense evidence in a corpus", "Label inline", "Check my judge",
        "Few labels", "Is v2 better?", "Rank systems", "Rank systems", "Read my tool's logs", "Gate a release"]
    assert [heading for heading, _, _, image in SNIPPETS if image] == [
        "Score RAG answers claim by claim", "Find dense evidence in a corpus"]


def _run(heading, code):
    """What the snippet prints, and the figure it leaves open (None when it draws nothing)."""
    import matplotlib.pyplot as plt

    plt.close("all")
    printed = io.StringIO()
    with warnings.catch_warnings(record=True), contextlib.redirect_stdout(printed):
        warnings.simplefilter("always")
        exec(compile(code, f"README.md ({heading})", "exec"), {"__name__": "__readme__"})
    return printed.getvalue(), (plt.gcf() if plt.get_fignums() else None)


def _save(figure, path):
    figure.savefig(path, dpi=100, bbox_inches="tight", metadata={"Software": None})


@pytest.mark.parametrize(("heading", "code", "shown", "image"), SNIPPETS, ids=IDS)
def test_a_readme_snippet_prints_what_the_readme_shows(heading, code, shown, image, tmp_path):
    printed, figure = _run(heading, code)
    problem = _mismatch(shown, printed)
    assert problem is None, f"README.md, {heading!r}: {problem}\nprinted:\n{printed}"
    assert (figure is None) == (image is None), (
        f"README.md, {heading!r}: " + ("the snippet draws a figure the README does not show" if image is None
                                       else f"the README shows {image}, but the snippet draws nothing"))
    if image is not None:
        from matplotlib.image import imread
        from matplotlib.testing.compare import compare_images

        drawn = tmp_path / "drawn.png"
        _save(figure, drawn)
        hint = "; `python tests/test_readme.py` writes it afresh from the snippet (then look at it)"
        assert (ROOT / image).is_file(), f"README.md, {heading!r}: {image} is missing{hint}"
        shapes = imread(ROOT / image).shape, imread(drawn).shape
        assert shapes[0] == shapes[1], f"README.md, {heading!r}: {image} is {shapes[0]}, the snippet draws {shapes[1]}{hint}"
        difference = compare_images(str(ROOT / image), str(drawn), tol=FIGURE_TOLERANCE)
        assert difference is None, f"README.md, {heading!r}: {image} is not what the snippet draws: {difference}{hint}"


def test_a_changed_figure_is_caught(tmp_path):
    """The comparison the figures go through tells a moved line from the same drawing."""
    import matplotlib.pyplot as plt
    from matplotlib.testing.compare import compare_images

    paths = []
    for k, shift in enumerate([0.0, 0.0, 0.05]):
        fig, ax = plt.subplots(figsize=(4, 3))
        ax.plot([0.1, 0.5, 0.9], [0.69 + shift, 0.72, 0.71], marker="o")
        paths.append(tmp_path / f"{k}.png")
        _save(fig, paths[-1])
        plt.close(fig)
    assert compare_images(str(paths[0]), str(paths[1]), tol=FIGURE_TOLERANCE) is None
    assert compare_images(str(paths[0]), str(paths[2]), tol=FIGURE_TOLERANCE) is not None


def write_figures() -> list[Path]:
    """Draw every README figure from its snippet into docs/_static/readme/ (the PNGs the test compares with)."""
    written = []
    for heading, code, _, image in SNIPPETS:
        if image is None:
            continue
        _, figure = _run(heading, code)
        if figure is None:
            raise SystemExit(f"README.md, {heading!r}: the snippet draws nothing, but the README shows {image}")
        (ROOT / image).parent.mkdir(parents=True, exist_ok=True)
        _save(figure, ROOT / image)
        written.append(ROOT / image)
    return written


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


def test_the_readme_reads_in_one_sitting():
    assert len(README.read_text(encoding="utf-8")) < 15_000


def test_the_readme_keeps_the_two_commands_that_ci_runs():
    # .ci/run installs the dev extra and runs the README's test command, `pytest` (the fast tier), then the slow tier
    first = next(match.group(2) for match in _BLOCK.finditer(README.read_text(encoding="utf-8"))
                 if match.group(1) == "bash")
    assert first.splitlines() == ['pip install -e ".[dev]" && evalkit report', "pytest"]
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert 'pip install --quiet -e ".[dev]"' in ci and "python -m pytest --durations" in ci


if __name__ == "__main__":
    import matplotlib

    matplotlib.use("Agg")
    for path in write_figures():
        print(f"wrote {path.relative_to(ROOT)}")
