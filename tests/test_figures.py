"""Every figure of every executed notebook says what it shows: a title, and what it draws named in its legend, title or
axis labels (the rank-set method, the interval). Read from each figure's text form, which report.use_formatted gives."""

import re

import pytest

nbformat = pytest.importorskip("nbformat", reason='needs the \'report\' extra: pip install "llm-evalkit[report]"')

from tests.conftest import NOTEBOOKS  # noqa: E402


def parse(text: str) -> list[dict]:
    """The figure's Axes from its text form (evalkit._display.describe_figure), one dict per Axes."""
    axes, figure = {}, {"title": "", "legend": []}
    for line in text.splitlines()[1:]:
        if line.startswith("Figure title: "):
            figure["title"] = line.removeprefix("Figure title: ")
            continue
        if line.startswith("Figure legend: "):
            figure["legend"] += line.removeprefix("Figure legend: ").split(" | ")
            continue
        match = re.match(r"Axes (\d+)( \((colorbar|twin of Axes \d+)\))? (title|x label|y label|legend|drawn): ?(.*)$", line)
        assert match, f"unexpected line in a figure's description: {line!r}"
        number, _, role, key, value = match.groups()
        ax = axes.setdefault(int(number), {"role": role or "", "legend": [], "drawn": []})
        ax[key] = value.split(" | ") if key in ("legend", "drawn") and value else [] if key in ("legend", "drawn") else value
    return [dict(ax, figure=figure) for ax in axes.values()]


def figures(path, notebook_run):
    """(cell number, description) of every figure the executed notebook shows."""
    result = notebook_run(path)
    assert result.ok, f"{path.name} failed in cell {result.cell}: {result.error}"
    nb = nbformat.read(result.executed, as_version=4)
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data:
                text = data.get("text/plain", "")
                assert text.startswith("<Figure "), (f"{path.name} cell {index}: a figure without its description "
                                                     "(the notebook's setup cell calls report.use_formatted())")
                found.append((index, text))
    return found


def problems(text: str) -> list[str]:
    """What a figure fails to say: an Axes without a title (and no figure title), something drawn with a name that
    neither its legend, its title nor its axis labels name, a rank-set method its title does not name."""
    found = []
    axes = parse(text)
    primary = [ax for ax in axes if not ax["role"]]
    if not primary:
        return ["a figure without Axes"]
    found += ["an Axes without a title (and no figure title)" for ax in primary if not (ax["title"] or ax["figure"]["title"])]
    for ax in axes:
        if ax["role"] == "colorbar":
            continue
        words = " ".join([ax["title"], ax["figure"]["title"], ax.get("x label", ""), ax.get("y label", "")])
        shown = set(ax["legend"]) | set(ax["figure"]["legend"])
        for label in ax["drawn"]:  # what was drawn with a name is named where a reader looks
            if label not in shown and label not in words:
                found.append(f"{label!r} is drawn but not named")
            if label.startswith("rank-sets: ") and label.removeprefix("rank-sets: ") not in ax["title"]:
                found.append(f"title {ax['title']!r} does not name the method drawn, {label!r}")
    return found


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_figure_says_what_it_shows(path, notebook_run):
    for index, text in figures(path, notebook_run):
        assert not problems(text), f"{path.name} cell {index}: {problems(text)}\n{text}"


def test_a_title_naming_another_method_than_the_one_drawn_is_caught():
    plt = pytest.importorskip("matplotlib.pyplot")
    from evalkit import _display, datasets, pairwise, plots

    demo = datasets.load_demo("pairwise")
    sets = pairwise.rank_sets(demo["judge"], demo["comparisons"].sample(300, random_state=0), method="human")
    fig, ax = plt.subplots()
    plots.rank_sets(sets, ax=ax)
    assert problems(_display.describe_figure(fig)) == []
    ax.set_title("PPR rank-sets, one draw of 300 human votes + the judge")  # what notebook 06 used to say
    assert problems(_display.describe_figure(fig)) == [
        "'rank-sets: human votes only' is drawn but not named",
        "title 'PPR rank-sets, one draw of 300 human votes + the judge' does not name the method drawn, "
        "'rank-sets: human votes only'"]
    ax.set_title("")
    assert "an Axes without a title (and no figure title)" in problems(_display.describe_figure(fig))
    fig2, ax2 = plt.subplots()
    ax2.plot([1, 2], [0.9, 0.95], label="PPI++")  # a method drawn, named nowhere
    ax2.set_title("coverage")
    assert problems(_display.describe_figure(fig2)) == ["'PPI++' is drawn but not named"]
    plt.close("all")


def test_parse_reads_the_description():
    plt = pytest.importorskip("matplotlib.pyplot")
    from evalkit import _display

    fig, (a, b) = plt.subplots(1, 2)
    a.plot([0, 1], [0, 1], label="PPI++")
    a.legend()
    a.set_title("coverage")
    b.hlines([0], [1], [2], label="rank-sets: judge only")
    b.set_xlabel("rank")
    parsed = parse(_display.describe_figure(fig))
    assert parsed[0]["title"] == "coverage" and parsed[0]["legend"] == ["PPI++"] and parsed[0]["drawn"] == ["PPI++"]
    assert parsed[1]["title"] == "" and parsed[1]["drawn"] == ["rank-sets: judge only"] and parsed[1]["x label"] == "rank"
    plt.close(fig)
