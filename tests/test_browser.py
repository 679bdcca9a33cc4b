"""The labellers in a real JupyterLab, driven by headless Chromium: clicks, keys, notes and blind mode.

One JupyterLab server and one browser serve every test of the module; each test writes its own notebook
into the server's folder and its own labels file.
"""

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
VIEWPORT = {"width": 1400, "height": 1000}

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.xdist_group("jupyterlab")]  # one server per run

CASES = """
import pandas as pd
from evalkit.widgets import Labeller
cases = pd.DataFrame({"case_id": ["c1", "c2", "c3"], "input": ["q1", "q2", "q3"],
                      "output": ["<script>alert(1)</script>", "second answer", "third answer"]})
judge = pd.Series({"c1": "FAIL", "c2": "PASS", "c3": "FAIL"})
"""


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.25)
    raise TimeoutError(f"JupyterLab did not listen on port {port} within {timeout} s")


def read_rows(path: Path, want: int, timeout: float = 20) -> list:
    """The records of a labels file once it has ``want`` of them (or what it has after ``timeout``)."""
    deadline = time.monotonic() + timeout
    rows = []
    while time.monotonic() < deadline:
        if path.exists():
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            if len(rows) >= want:
                break
        time.sleep(0.25)
    return rows


def count_rows(path: Path) -> int:
    return len([line for line in path.read_text().splitlines() if line.strip()]) if path.exists() else 0


class Lab:
    """A JupyterLab server in a folder and a headless Chromium; :meth:`open` runs a one-cell notebook."""

    def __init__(self, folder: Path):
        playwright = pytest.importorskip("playwright.sync_api", reason='needs the \'browser\' extra: pip install "evalkit[browser]"')
        if not Path(CHROMIUM).exists():
            pytest.skip("chromium is not installed and could not be installed here (.ci/run installs Debian's chromium)")
        self.folder = folder
        self.port = free_port()
        self.server = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
             "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root", "--LabApp.news_url=None",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=folder, stdout=(folder / "jupyter.log").open("w"), stderr=subprocess.STDOUT)
        try:
            wait_for_port(self.port)
            self._playwright = playwright.sync_playwright().start()
            self.browser = self._playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"])
        except BaseException:
            self.server.terminate()
            raise

    def open(self, name: str, code: str):
        """A new page on a new notebook holding ``code``, with the cell run and the labeller rendered."""
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbformat.v4.new_code_cell(code.strip())]
        nbformat.write(nb, self.folder / f"{name}.ipynb")
        page = self.browser.new_page(viewport=VIEWPORT)
        # A workspace of its own, reset: the page shows this notebook alone, not the tabs of earlier tests.
        page.goto(f"http://127.0.0.1:{self.port}/lab/workspaces/{name}/tree/{name}.ipynb?reset", timeout=60_000)
        page.wait_for_selector(".jp-Notebook", timeout=60_000)
        page.wait_for_function(
            "() => (document.querySelector('#jp-main-statusbar')?.innerText || '').includes('Idle')", timeout=60_000)
        page.click(".jp-Cell .cm-content")
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector(".evalkit-labeller .evalkit-keys-line", timeout=60_000)
        return page

    def close(self) -> None:
        try:
            self.browser.close()
            self._playwright.stop()
        finally:
            self.server.terminate()
            try:
                self.server.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.server.kill()


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    server = Lab(tmp_path_factory.mktemp("jupyterlab"))
    yield server
    server.close()


@pytest.fixture
def shot(request, lab):
    """Pages opened by a test; each is saved as a screenshot when the test fails, to show what it looked like."""
    pages = []
    yield pages
    for i, page in enumerate(pages):
        page.screenshot(path=str(lab.folder / f"{request.node.name}-{i}.png"), full_page=True)
        page.close()


def cells(page) -> int:
    return page.locator(".jp-Notebook .jp-Cell").count()


def status(page) -> str:
    return page.locator(".evalkit-labeller .evalkit-keyarea").first.inner_text()


def test_labeller_clicks_and_keys_in_jupyterlab(lab, shot):
    page = lab.open("clicks", CASES + 'Labeller(cases, "clicks.jsonl", labeller="browser-test")')
    shot.append(page)
    page.wait_for_selector("text=0 / 3", timeout=30_000)
    # The untrusted output is shown as text, not run as markup.
    assert page.locator(".evalkit-labeller div:text-is('<script>alert(1)</script>')").count() == 1
    assert "labelling as browser-test → clicks.jsonl" in page.inner_text(".evalkit-labeller")
    assert "1 PASS · 2 FAIL · s skip · b back · u undo · ? unsure" in page.inner_text(".evalkit-keys-line")
    page.click("button.jupyter-button:has-text('PASS')")
    page.wait_for_selector("text=1 / 3", timeout=30_000)
    page.wait_for_selector("text=labelled c1 PASS", timeout=30_000)
    page.click("button.jupyter-button:has-text('FAIL')")
    page.wait_for_selector("text=2 / 3", timeout=30_000)
    # Keys: click the case (the keys line says they are live), then key 1 labels the first level.
    assert "keys off" in page.inner_text(".evalkit-keys-line") or "keys active" in page.inner_text(".evalkit-keys-line")
    page.click(".evalkit-labeller div:text-is('third answer')")
    page.wait_for_selector(".evalkit-keys-line.evalkit-keys-on", timeout=10_000)
    assert "keys active" in page.inner_text(".evalkit-keys-line")
    page.keyboard.press("1")
    page.wait_for_selector("text=3 / 3", timeout=30_000)
    page.wait_for_selector("text=All 3 cases are labelled", timeout=30_000)
    rows = read_rows(lab.folder / "clicks.jsonl", 3)
    assert [(r["case_id"], r["label"]) for r in rows] == [("c1", "PASS"), ("c2", "FAIL"), ("c3", "PASS")]
    assert all(r["labeller"] == "browser-test" for r in rows)
    assert page.locator("button.jupyter-button:has-text('PASS')").is_disabled()  # the end state does nothing


NOTE = "wrong years, source says 5; sub 12 ok? but unsure"  # every shortcut: 1 2 s b u ?


@pytest.mark.parametrize("pointer", ["on the widget", "off the widget"])
def test_typing_a_note_writes_nothing_and_the_next_label_carries_it(lab, shot, pointer):
    name = "note-on" if pointer == "on the widget" else "note-off"
    path = lab.folder / f"{name}.jsonl"
    page = lab.open(name, CASES + f'Labeller(cases, "{path.name}", labeller="browser-test")')
    shot.append(page)
    page.wait_for_selector("text=0 / 3", timeout=30_000)
    before = cells(page)
    page.click(".evalkit-labeller textarea")
    if pointer == "off the widget":
        box = page.locator(".evalkit-labeller").bounding_box()
        page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] + 150)  # the empty notebook below
        text = NOTE + " a x d d m"  # and JupyterLab's command-mode keys: insert above, cut, delete, to markdown
    else:
        page.hover(".evalkit-labeller div:text-is('q1')")  # the pointer back over the case, the box still focused
        text = NOTE
    page.keyboard.type(text, delay=20)
    time.sleep(2)  # give a stray key every chance to reach the kernel
    assert count_rows(path) == 0, "typing a note wrote a record"
    assert page.locator(".evalkit-labeller textarea").input_value() == text
    assert cells(page) == before, "a key typed into the note box reached JupyterLab"
    assert "0 / 3" in page.inner_text(".evalkit-labeller")
    page.click("button.jupyter-button:has-text('FAIL')")
    rows = read_rows(path, 1)
    assert [(r["case_id"], r["label"], r["note"]) for r in rows] == [("c1", "FAIL", text)]
    page.wait_for_selector("text=1 / 3", timeout=30_000)
    # the cleared box reaches the page in its own widget message, possibly after the counter: wait for it
    page.wait_for_function("() => document.querySelector('.evalkit-labeller textarea').value === ''", timeout=10_000)
    assert page.locator(".evalkit-labeller textarea").input_value() == ""
    # Keys in the case area still act with the pointer off the widget (the focus holds them), and never
    # reach JupyterLab: b goes back, no cell inserted.
    page.click(".evalkit-labeller div:text-is('q2')")
    page.wait_for_selector(".evalkit-keys-line.evalkit-keys-on", timeout=10_000)
    box = page.locator(".evalkit-labeller").bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] + 150)
    page.keyboard.press("b")
    page.wait_for_selector("text=back to c1", timeout=30_000)
    page.keyboard.press("x")  # not a shortcut: said so, and not a cut cell
    page.wait_for_selector("text=does nothing here", timeout=30_000)
    assert cells(page) == before and count_rows(path) == 1


def test_going_back_blind_shows_no_judge_verdict(lab, shot):
    path = lab.folder / "blind.jsonl"
    page = lab.open("blind", CASES + f'Labeller(cases, "{path.name}", labeller="browser-test", judge=judge)')
    shot.append(page)
    page.wait_for_selector("text=judge's verdict hidden until you label this case", timeout=30_000)
    page.click("button.jupyter-button:has-text('PASS')")  # c1, whose judge said FAIL
    page.wait_for_selector("text=1 / 3", timeout=30_000)
    page.click("button.jupyter-button:has-text('back')")
    page.wait_for_selector("text=back to c1", timeout=30_000)
    page.wait_for_selector("text=your label: PASS", timeout=30_000)
    text = page.inner_text(".jp-Notebook")
    assert "judge:" not in text and "judge's verdict hidden (blind labelling)" in text
    # Asking is a recorded click, and only then does the verdict show.
    page.click("button.jupyter-button:has-text(\"show the judge's verdict\")")
    page.wait_for_selector("text=judge: FAIL", timeout=30_000)
    rows = read_rows(path, 2)
    assert [(r["case_id"], r["mode"]) for r in rows] == [("c1", "label"), ("c1", "reveal")]


def test_live_interval_updates_and_says_settled(lab, shot):
    """The live pass rate under the progress line moves with a click, and says "settled" at the stop rule."""
    path = lab.folder / "live.jsonl"
    code = CASES + f'''
import json
with open("{path.name}", "w") as handle:  # two labels made before, in the labeller's (declared random) order
    for case in ("c1", "c2"):
        handle.write(json.dumps({{"case_id": case, "label": "PASS", "labeller": "browser-test", "mode": "label",
                                  "case_order": "random"}}) + "\\n")
Labeller(cases, "{path.name}", labeller="browser-test", watch="pass_rate", stop_half_width=0.4, order="random")
'''
    page = lab.open("live", code)
    shot.append(page)
    page.wait_for_selector("text=pass rate 1.00 [0.03, 1.00] (anytime-valid 95%), ±0.48; stop at ±0.40", timeout=30_000)
    page.click("button.jupyter-button:has-text('PASS')")
    page.wait_for_selector("text=settled: ±0.36 ≤ 0.40 after 3 labels — you can stop", timeout=30_000)
    assert [r["label"] for r in read_rows(path, 3)] == ["PASS"] * 3
