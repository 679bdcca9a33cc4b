"""The report as a user without the real data sets builds it (``evalkit report`` from the installed wheel, the
session's ``demo_report``): pages that state only what they show, a mistyped data path that fails the run, and pages
that request nothing from the network."""

import html
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("nbclient", reason="the report needs the 'report' extra")

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = pytest.mark.slow

# Figures that only the real data sets produce, as the notebooks used to print them without the data: the TCVA
# paper's bootstrap p-values and main-table correlations, LLMBar's judge accuracies, HealthFC's MRRs and size.
# (0.883, once among them, is also an interval end of the synthetic demo's leave-one-out rows in 05)
REAL_DATA_FIGURES = ["0.7593", "0.0412", "0.4795", "0.6415", "0.6669", "0.6762", "0.272", "0.574", "0.848",
                     "0.757", "750 claims", "30 of the 30", "84 of the 84", "24 of the 24",
                     "170-200 items", "p near 0.06", "about 0.41", "fall below chance", "clearly *hurts*",
                     "release found", "LLMBar found", "HealthFC found"]
DATA_PARAMETERS = ["LLMBAR_DIR", "TCVA_DIR", "HEALTHFC_CSV"]


def page_text(page: Path) -> str:
    """What a reader sees: the page without its styles, scripts and embedded images, tags removed."""
    source = page.read_text(encoding="utf-8")
    source = re.sub(r"<(style|script)\b.*?</\1>", " ", source, flags=re.S)
    source = re.sub(r"<img[^>]*>", " ", source)
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", source)))


def run_report(*args, cwd):
    return subprocess.run([sys.executable, "-m", "evalkit.cli", "report", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """The notebooks in a folder with no ``../shared`` anywhere above them, as in a user's clone."""
    folder = tmp_path_factory.mktemp("clone")
    shutil.copytree(ROOT / "notebooks", folder / "notebooks")
    assert not (folder.parent / "shared").exists() and not (folder / "shared").exists()
    return folder


@pytest.fixture(scope="module")
def demo_pages(demo_report):
    assert demo_report.returncode == 0, demo_report.stdout + demo_report.stderr
    return demo_report.out


def test_pages_built_without_the_data_show_no_real_data_figure(demo_pages):
    pages = sorted(p for p in demo_pages.glob("*.html") if p.name != "index.html")
    assert [p.stem for p in pages] == [p.stem for p in sorted((ROOT / "notebooks").glob("*.ipynb"))]
    texts = {p.name: page_text(p) for p in pages}
    for page in pages:  # a notebook that draws with evalkit.plots shows its figures
        if "plots." in (ROOT / "notebooks" / f"{page.stem}.ipynb").read_text():
            assert re.search(r'<img[^>]*src="data:image/png;base64,', page.read_text()), f"{page.name} shows no figure"
    for name, text in texts.items():
        shown = [figure for figure in REAL_DATA_FIGURES if figure in text]
        assert not shown, f"{name} shows {shown} although no real data set was given"
    # Each data section says that it was skipped and how to supply the data.
    skipped = " ".join(texts.values())
    for parameter in DATA_PARAMETERS:
        assert f"This section is skipped: {parameter} is not set" in skipped
        assert f"--param {parameter}=" in skipped
    index = (demo_pages / "index.html").read_text()
    assert all(f"href='{p.name}'" in index for p in pages) and index.count("<td>ok</td>") == len(pages)


def test_a_wrong_data_path_fails_the_report_naming_the_parameter(clone, tmp_path):
    (tmp_path / "results").mkdir()  # a folder, but not the release
    result = run_report("--out", str(tmp_path / "out"), "--notebooks", "notebooks/02_tcva_temperature_sweep.ipynb",
                        "--param", f"TCVA_DIR={tmp_path}", cwd=clone)
    assert result.returncode == 1
    assert "02_tcva_temperature_sweep.ipynb failed in cell In [" in result.stderr
    assert f"FileNotFoundError: `TCVA_DIR`='{tmp_path}' lacks results/summeval_tcva_scores.json" in result.stderr
    assert "FAILED" in (tmp_path / "out" / "index.html").read_text()


@pytest.mark.browser
def test_pages_request_nothing_from_the_network(demo_pages, tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason="the browser test needs playwright (the 'browser' extra)")
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed (.ci/run installs Debian's chromium)")
    requested = []

    def block(route):
        url = route.request.url
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            requested.append(url)
            route.abort()

    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
            "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
            "--disable-sync", "--no-first-run"])
        try:
            context = browser.new_context(viewport={"width": 1280, "height": 900}, offline=True)
            context.route("**/*", block)
            for page_file in sorted(demo_pages.glob("*.html")):
                page = context.new_page()
                page.goto(page_file.resolve().as_uri(), wait_until="load")
                page.wait_for_timeout(300)
                # Every figure is embedded and drawn; wide tables scroll inside their output, not off the page.
                assert page.evaluate("() => [...document.images].every(i => i.complete && i.naturalWidth > 0)"), page_file.name
                assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth"), page_file.name
                page.screenshot(path=str(tmp_path / f"{page_file.stem}.png"), full_page=True)
                page.close()
        finally:
            browser.close()
    assert requested == []
