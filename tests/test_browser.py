"""The labellers in a real JupyterLab, driven by headless Chromium: clicks, keys, notes, blind mode, whose labels,
keys that stay live, a dead kernel, pacing, and what a graded labeller looks like at 800 px.

One JupyterLab server and one browser serve every test of the module; each test writes its own notebook
into the server's folder and its own labels file. Every state a test reaches is saved as a screenshot
(``snap``) in the server's folder, ``screens/<test>-<n>-<state>.png``, to be looked at.
"""

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
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
        playwright = pytest.importorskip("playwright.sync_api", reason='needs the \'browser\' extra: pip install "llm-evalkit[browser]"')
        if not Path(CHROMIUM).exists():
            pytest.skip("chromium is not installed and could not be installed here (.ci/run installs Debian's chromium)")
        self.folder = folder
        self.port = free_port()
        settings = folder / ".settings" / "@jupyterlab" / "apputils-extension"
        settings.mkdir(parents=True)  # no news toast over the screenshots
        (settings / "notification.jupyterlab-settings").write_text('{"fetchNews": "false", "checkForUpdates": false}')
        env = {**__import__("os").environ, "JUPYTERLAB_SETTINGS_DIR": str(folder / ".settings")}
        self.server = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
             "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root", "--LabApp.news_url=None",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=folder, stdout=(folder / "jupyter.log").open("w"), stderr=subprocess.STDOUT, env=env)
        try:
            wait_for_port(self.port)
            self._playwright = playwright.sync_playwright().start()
            self.browser = self._playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"])
        except BaseException:
            self.server.terminate()
            raise

    def open(self, name: str, code: str, *more: str, viewport=VIEWPORT, wait=".evalkit-labeller .evalkit-keys-line"):
        """A new page on a new notebook holding ``code`` (and the cells ``more``, not run), with the first cell run
        and the labeller rendered (``wait``: the selector to wait for)."""
        import nbformat

        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        nb.cells = [nbformat.v4.new_code_cell(cell.strip()) for cell in (code, *more)]
        nbformat.write(nb, self.folder / f"{name}.ipynb")
        page = self.browser.new_page(viewport=viewport)
        # A workspace of its own, reset: the page shows this notebook alone, not the tabs of earlier tests.
        page.goto(f"http://127.0.0.1:{self.port}/lab/workspaces/{name}/tree/{name}.ipynb?reset", timeout=60_000)
        page.wait_for_selector(".jp-Notebook", timeout=60_000)
        page.wait_for_function(
            "() => (document.querySelector('#jp-main-statusbar')?.innerText || '').includes('Idle')", timeout=60_000)
        page.click(".jp-Cell .cm-content")
        page.keyboard.press("Shift+Enter")
        page.wait_for_selector(wait, timeout=60_000)
        return page

    def snap(self, page, test: str, state: str) -> Path:
        """A screenshot of the page in ``state``, numbered in the order taken."""
        folder = self.folder / "screens"
        folder.mkdir(exist_ok=True)
        path = folder / f"{test}-{len(list(folder.glob(test + '-*'))):02d}-{state}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

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


@pytest.fixture
def snap(request, lab):
    """``snap(page, state)``: a screenshot of this state, kept in the server's folder (screens/)."""
    return lambda page, state: lab.snap(page, request.node.name.replace("[", "-").replace("]", ""), state)


def keys_live(page, timeout=10_000) -> None:
    """Wait until the keys line says the keys act, with the focus in a key area."""
    page.wait_for_selector(".evalkit-keys-line.evalkit-keys-on", timeout=timeout)
    assert page.evaluate("() => !!document.activeElement.closest('.evalkit-keyarea')")
    assert "keys active" in page.inner_text(".evalkit-keys-line")


def settled(page) -> None:
    """Wait until the kernel has answered every key and click sent (each keys line's data-evalkit-pending is 0): what
    the screen shows then is what the kernel did, as an annotator sees before their next key. A key pressed before
    is made on the case still on screen, which the labeller then refuses as made on another case."""
    page.wait_for_function("() => Array.from(document.querySelectorAll('.evalkit-keys-line'))"
                           ".every((line) => (line.dataset.evalkitPending || '0') === '0')", timeout=30_000)


def press(page, key: str) -> None:
    """Press ``key`` and wait until the kernel has answered it."""
    page.keyboard.press(key)
    settled(page)


def click(page, selector: str) -> None:
    """Click ``selector`` and wait until the kernel has answered the click."""
    page.click(selector)
    settled(page)


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
    assert ("1 PASS · 2 FAIL · s skip · b back · u undo · i ignore · ? unsure · / find"
            in page.inner_text(".evalkit-keys-line"))
    click(page, "button.jupyter-button:has-text('PASS')")
    page.wait_for_selector("text=1 / 3", timeout=30_000)
    page.wait_for_selector("text=labelled c1 PASS", timeout=30_000)
    click(page, "button.jupyter-button:has-text('FAIL')")
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
    press(page, "b")
    page.wait_for_selector("text=back to c1", timeout=30_000)
    page.keyboard.press("x")  # not a shortcut: said so, and not a cut cell
    page.wait_for_selector("text=does nothing here", timeout=30_000)
    assert cells(page) == before and count_rows(path) == 1


def test_going_back_blind_shows_no_judge_verdict(lab, shot):
    path = lab.folder / "blind.jsonl"
    page = lab.open("blind", CASES + f'Labeller(cases, "{path.name}", labeller="browser-test", judge=judge)')
    shot.append(page)
    page.wait_for_selector("text=judge's verdict hidden until you label this case", timeout=30_000)
    click(page, "button.jupyter-button:has-text('PASS')")  # c1, whose judge said FAIL
    page.wait_for_selector("text=1 / 3", timeout=30_000)
    click(page, "button.jupyter-button:has-text('back')")
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
    page.wait_for_selector("text=pass rate in the population these 3 cases come from: between 3% and 100% (estimate 100%; anytime-valid 95%) — too wide to stop: "
                           "±48 points now, stop at ±40 points", timeout=30_000)
    page.click("button.jupyter-button:has-text('PASS')")
    page.wait_for_selector("text=— you can stop: ±36 ≤ 40 points after 3 labels", timeout=30_000)
    assert [r["label"] for r in read_rows(path, 3)] == ["PASS"] * 3


# ------------------------------------------------------------------ keys that never go dead without a word
def rows_of(path: Path, want: int) -> list:
    return [(r["case_id"], r["label"], r["mode"]) for r in read_rows(path, want)]


def test_keys_stay_live_after_the_cell_run_and_after_each_click_that_disables_or_hides_its_button(lab, shot, snap):
    path = lab.folder / "live-keys.jsonl"
    page = lab.open("live-keys", CASES + f'Labeller(cases, "{path.name}", labeller="browser-test", judge=judge)')
    shot.append(page)
    keys_live(page)  # the cell run: the keys act at once, no click needed
    snap(page, "keys-live-after-the-cell-run")
    press(page, "1")
    assert rows_of(path, 1) == [("c1", "PASS", "label")]
    click(page, "button.jupyter-button:has-text('back')")  # back onto the first case: back is disabled now
    page.wait_for_selector("text=back to c1", timeout=30_000)
    assert page.locator("button.jupyter-button:has-text('back')").is_disabled()
    keys_live(page)
    snap(page, "keys-live-after-back-onto-the-first-case")
    press(page, "2")
    assert rows_of(path, 2)[-1] == ("c1", "FAIL", "label")
    press(page, "b")
    click(page, "button.jupyter-button:has-text(\"show the judge's verdict\")")  # the button hides itself
    page.wait_for_selector("text=judge: FAIL", timeout=30_000)
    assert not page.locator("button.jupyter-button:has-text(\"show the judge's verdict\")").is_visible()
    keys_live(page)
    snap(page, "keys-live-after-show-the-judges-verdict")
    press(page, "2")
    assert rows_of(path, 4)[-2:] == [("c1", None, "reveal"), ("c1", "FAIL", "label")]
    click(page, "button.jupyter-button:has-text('undo')")  # the last label that can be undone: undo is disabled now
    page.wait_for_selector("text=undid c1 FAIL", timeout=30_000)
    assert page.locator("button.jupyter-button:has-text('undo')").is_disabled()
    keys_live(page)
    snap(page, "keys-live-after-the-last-undo")
    press(page, "1")
    assert rows_of(path, 6)[-2:] == [("c1", None, "label"), ("c1", "PASS", "label")]
    press(page, "1")  # c2
    click(page, "button.jupyter-button:has-text('FAIL')")  # c3, the last of the batch: every label button is disabled
    page.wait_for_selector("text=All 3 cases are labelled", timeout=30_000)
    keys_live(page)
    snap(page, "keys-live-after-the-last-label-of-the-batch")
    page.keyboard.press("b")  # the end summary says "Press back (key b)": it works
    page.wait_for_selector("text=back to c3 · current label: FAIL", timeout=30_000)
    # From command mode, the key area is a few Tab presses away (the notebook's toolbars come first).
    page.click(".jp-Cell .cm-content")
    page.keyboard.press("Escape")
    tabs = 0
    while not page.evaluate("() => !!document.activeElement.closest('.evalkit-keyarea')") and tabs < 40:
        page.keyboard.press("Tab")
        tabs += 1
    print(f"Tab presses from command mode to the key area: {tabs}")
    assert tabs <= 12, tabs
    # Run the cell again (from command mode): the new labeller takes the focus too.
    page.click(".jp-Cell .cm-content")
    page.keyboard.press("Shift+Enter")
    page.wait_for_selector("text=nothing left to label", timeout=60_000)
    keys_live(page)
    page.keyboard.press("b")
    page.wait_for_selector("text=back to c3 · current label: FAIL", timeout=30_000)
    snap(page, "keys-live-after-the-cell-is-run-again")
    assert count_rows(path) == 8


def test_a_dead_kernel_is_said_in_place_of_keys_active_and_the_unsaved_note_kept(lab, shot, snap):
    path = lab.folder / "dead.jsonl"
    page = lab.open("dead", CASES + f'Labeller(cases, "{path.name}", labeller="browser-test")',
                    "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)  # the kernel dies (as when out of memory)")
    shot.append(page)
    keys_live(page)
    page.keyboard.press("1")
    assert rows_of(path, 1) == [("c1", "PASS", "label")]
    page.click(".evalkit-labeller textarea")
    page.keyboard.type("wrong date, check the source", delay=10)
    page.locator(".jp-Cell").nth(1).locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_selector(".evalkit-keys-line.evalkit-keys-dead", timeout=60_000)
    dialog = page.locator(".jp-Dialog button.jp-mod-accept")  # JupyterLab's own "the kernel appears to have died"
    dialog.wait_for(timeout=30_000)
    dialog.click()
    state = page.inner_text(".evalkit-keys-line")
    assert "the kernel is gone (stopped or restarted)" in state and "dead.jsonl" in state and "keys active" not in state
    assert "The note in the box below was NOT saved: copy it before you run the cell." in state
    assert page.locator(".evalkit-labeller textarea").input_value() == "wrong date, check the source"
    snap(page, "dead-kernel-with-an-unsaved-note")
    page.click(".evalkit-labeller div:text-is('second answer')")
    page.keyboard.press("2")  # nothing can reach the kernel: nothing is written, and the line still says why
    time.sleep(1.5)
    assert count_rows(path) == 1 and "the kernel is gone" in page.inner_text(".evalkit-keys-line")


def test_a_key_the_kernel_does_not_answer_is_said_and_the_line_clears_once_it_does(lab, shot, snap):
    """A kernel that cannot answer (its process stopped, as a machine swapping hard or a debugger would): the key
    is said to be perhaps unrecorded; once the kernel goes on, the key acts, is answered and the line clears."""
    import os
    import signal

    path, pid = lab.folder / "frozen.jsonl", lab.folder / "frozen.pid"
    page = lab.open("frozen", CASES + f'Labeller(cases, "{path.name}", labeller="browser-test")',
                    f"import os, signal\nopen({pid.name!r}, 'w').write(str(os.getpid()))\nos.kill(os.getpid(), signal.SIGSTOP)")
    shot.append(page)
    keys_live(page)
    page.locator(".jp-Cell").nth(1).locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    deadline = time.monotonic() + 30
    while not (pid.exists() and pid.read_text().strip()) and time.monotonic() < deadline:
        time.sleep(0.2)
    kernel = int(pid.read_text())
    try:
        time.sleep(1)  # stopped now
        page.click(".evalkit-labeller div:text-is('q1')")
        keys_live(page)
        page.keyboard.press("1")
        page.wait_for_selector("text=no answer from the kernel for 4 s: the last key may not have been recorded",
                               timeout=10_000)
        assert count_rows(path) == 0
        snap(page, "a-key-not-answered")
    finally:
        os.kill(kernel, signal.SIGCONT)
    page.wait_for_selector("text=labelled c1 PASS", timeout=30_000)  # the kernel goes on: the key acts, is answered
    page.wait_for_selector(".evalkit-keys-line:not(.evalkit-keys-dead)", timeout=10_000)
    assert rows_of(path, 1) == [("c1", "PASS", "label")]
    keys_live(page)
    snap(page, "answered-once-the-kernel-goes-on")


# ------------------------------------------------------------------ pacing
MANY = """
import pandas as pd
from evalkit.widgets import Labeller
cases = pd.DataFrame({"case_id": [f"k{i:02d}" for i in range(30)], "input": "what is it?", "output": "a short answer"})
"""


@pytest.mark.parametrize("pace", ["0.6 s per label", "12 labels in a second"])
def test_a_pacing_warning_when_labels_come_faster_than_the_case_can_be_read(lab, shot, snap, pace):
    name = "pace-steady" if pace.startswith("0.6") else "pace-burst"
    path = lab.folder / f"{name}.jsonl"
    page = lab.open(name, MANY + f'Labeller(cases, "{path.name}", labeller="browser-test")')
    shot.append(page)
    keys_live(page)
    n, gap = (3, 0.6) if pace.startswith("0.6") else (12, 0)
    pressed = []
    for _ in range(n):  # each key once the screen shows the next case: the burst as fast as the screen follows
        press(page, "1")
        pressed.append(time.monotonic())
        time.sleep(gap)
    # the burst's keys come faster than a skim of the case (1 s): each gap, not the whole burst, is what the warning reads
    assert gap or max(np.diff(pressed)) < 1.0
    page.wait_for_selector("text=too fast to read", timeout=30_000)
    warning = page.inner_text(".evalkit-labeller :text('too fast to read')")
    assert "of your last" in warning and "sooner than the 1.0 s a skim of it takes" in warning
    rows = read_rows(path, n)  # each label on the case shown at its keydown
    assert [r["case_id"] for r in rows] == [f"k{i:02d}" for i in range(n)]
    snap(page, "pacing-warning")


# ------------------------------------------------------------------ readable at a glance, at 800 px
GRADED = """
import pandas as pd
from evalkit.widgets import Labeller
cases = pd.DataFrame({"case_id": [f"case-{i:03d}" for i in range(1000)], "input": "Rate the answer.",
                      "output": [f"answer number {i}" for i in range(1000)]})
levels = {"1": "very poor", "2": "poor", "3": "fair", "4": "good", "5": "excellent"}
"""


def counter_whole(page) -> str:
    """The k / N counter's text, asserting that none of it is cut off."""
    box = page.locator(".evalkit-labeller .evalkit-counter")
    assert box.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), "the k / N counter is cut"
    return box.inner_text()


@pytest.mark.parametrize("width", [800, 1000])
def test_a_graded_labeller_reads_right_at_800_and_1000_px(lab, shot, snap, width):
    name = f"graded-{width}"
    path = lab.folder / f"{name}.jsonl"
    page = lab.open(name, GRADED + f'Labeller(cases, "{path.name}", labeller="browser-test", levels=levels, '
                    'watch="mean", stop_half_width=0.5, order="random")', viewport={"width": width, "height": 1000})
    shot.append(page)
    keys_live(page)
    legend = page.inner_text(".evalkit-keys-line")
    assert "1 (very poor) · 2 (poor) · 3 (fair) · 4 (good) · 5 (excellent) · s skip" in legend and "1 1" not in legend
    assert counter_whole(page) == "0 / 1000"
    button = page.locator("button.jupyter-button:has-text('very poor')")
    top = button.bounding_box()["y"]
    for i, key in enumerate("5455431"):
        press(page, key)
        assert counter_whole(page) == f"{i + 1} / 1000"
        assert button.bounding_box()["y"] == top, "the buttons moved"  # the lines that change sit below them
    assert counter_whole(page) == "7 / 1000"
    text = page.inner_text(".evalkit-labeller")
    assert "5 (excellent): 3 labels" in text and "1 (very poor): 1 label" in text and "2 (poor): 0 labels" in text
    assert "mean label in the population these 1000 cases come from: between " in text and "— too wide to stop:" in text
    snap(page, "graded-after-seven-labels")
    press(page, "b")
    page.wait_for_selector("text=back to case-006 · current label: 1 (very poor)", timeout=30_000)
    current = page.locator("button.jupyter-button.evalkit-current")
    assert current.count() == 1 and "very poor" in current.inner_text()
    page.keyboard.press("?")
    page.wait_for_selector("button.jupyter-button.mod-warning:has-text('unsure')", timeout=30_000)
    snap(page, "graded-back-current-label-marked-and-unsure")
    status = page.locator(".evalkit-labeller .evalkit-status")
    assert status.get_attribute("role") == "status" and status.get_attribute("aria-live") == "polite"
    page.locator(".jp-FileBrowser [title*='Refresh']").first.click()  # the lock file is hidden from the file browser
    page.wait_for_function(f"() => document.querySelector('.jp-DirListing-content').innerText.includes('{name}.jsonl')",
                           timeout=30_000)
    assert (lab.folder / f".{name}.jsonl.lock").exists() and ".lock" not in page.inner_text(".jp-DirListing-content")


def test_numbered_levels_without_descriptions_say_level_and_count(lab, shot, snap):
    path = lab.folder / "numbered.jsonl"
    page = lab.open("numbered", GRADED + f'Labeller(cases.head(20), "{path.name}", labeller="browser-test", '
                    'levels=("1", "2", "3", "4", "5"))', viewport={"width": 800, "height": 900})
    shot.append(page)
    keys_live(page)
    assert "1–5 the level · s skip" in page.inner_text(".evalkit-keys-line")
    for key in "53":
        press(page, key)
    page.wait_for_selector("text=3: 1 label", timeout=30_000)
    assert "1: 0 labels · 2: 0 labels · 3: 1 label · 4: 0 labels · 5: 1 label" in page.inner_text(".evalkit-labeller")
    snap(page, "numbered-levels")


# ------------------------------------------------------------------ whose labels, claims, find, ignore, both bad
def test_a_second_annotator_on_the_same_file_starts_from_their_own_labels(lab, shot, snap):
    path = lab.folder / "shared.jsonl"
    code = CASES + f'''
from evalkit.labels import append_label
for case in ("c1", "c2", "c3"):  # ann labelled every case before, into the same file
    append_label("{path.name}", {{"case_id": case, "label": "PASS", "labeller": "ann", "mode": "label"}})
Labeller(cases, "{path.name}", labeller="bob", judge=judge)
'''
    page = lab.open("shared", code)
    shot.append(page)
    keys_live(page)
    text = page.inner_text(".evalkit-labeller")
    assert "0 / 3" in text and "ready: 3 cases to label" in text and "also holds labels by 'ann'" in text
    assert "your label" not in text
    press(page, "2")
    press(page, "b")
    page.wait_for_selector("text=back to c1 · current label: FAIL", timeout=30_000)
    assert "your label: FAIL" in page.inner_text(".evalkit-labeller")
    snap(page, "bob-sees-his-own-label")
    rows = read_rows(path, 4)
    assert [(r["labeller"], r["case_id"], r["label"]) for r in rows] == [
        ("ann", "c1", "PASS"), ("ann", "c2", "PASS"), ("ann", "c3", "PASS"), ("bob", "c1", "FAIL")]


CLAIMS = """
import pandas as pd
from evalkit.widgets import ClaimLabeller
claims = pd.DataFrame({"item_id": ["a1", "a1", "a2", "a3"], "claim_idx": [0, 1, 0, 0],
                       "claim": ["The drug cut deaths by 20%.", "It was tested on <b>4,000</b> people.",
                                 "Rain fell on Monday.", "The bridge opened in 1932."],
                       "verdict": ["fully", "mostly", "partial", "fully"]})
answers = pd.DataFrame({"item_id": ["a1", "a2", "a3"], "input": ["q1", "q2", "q3"],
                        "output": ["A trial of 4,000 people found 20% fewer deaths.", "It rained.", "It opened in 1932."]})
"""


def test_claims_find_and_ignore_in_jupyterlab(lab, shot, snap):
    path = lab.folder / "claims.jsonl"
    page = lab.open("claims", CLAIMS + f'ClaimLabeller(claims, "{path.name}", answers=answers, question="input", '
                    'labeller="browser-test")')
    shot.append(page)
    keys_live(page)
    text = page.inner_text(".evalkit-labeller")
    assert "1 none · 2 minor · 3 partial · 4 mostly · 5 fully" in text and "It was tested on <b>4,000</b> people." in text
    assert page.locator("ol.evalkit-claims").get_attribute("start") == "1"  # numbered from 1
    snap(page, "claim-labeller")
    press(page, "5")
    page.keyboard.press("/")  # to the find box; Enter finds and gives the keys back
    assert page.evaluate("() => !!document.activeElement.closest('.evalkit-find')")
    page.keyboard.type("bridge")
    press(page, "Enter")
    page.wait_for_selector("text=found 'bridge' in a3#0", timeout=30_000)
    keys_live(page)
    press(page, "3")  # a3#0; then round to the first claim still open, a1#1
    page.wait_for_selector("text=claim a1#1 · 2 of 4", timeout=30_000)
    page.keyboard.press("i")  # ignored: recorded as an answer that is not a label
    page.wait_for_selector("text=ignored a1#1", timeout=30_000)
    snap(page, "claims-found-and-ignored")
    rows = read_rows(path, 3)
    assert [(r["case_id"], r["label"], r.get("ignored", False)) for r in rows] == [
        ("a1#0", "fully", False), ("a3#0", "partial", False), ("a1#1", None, True)]
    assert rows[0]["item_id"] == "a1" and rows[0]["claim_idx"] == 0 and rows[0]["claim"] == "The drug cut deaths by 20%."


PAIRS = """
import pandas as pd
from evalkit.widgets import PairwiseLabeller
pairs = pd.DataFrame({"comparison_id": ["p1", "p2"], "input": ["q1", "q2"], "output_a": ["a1", "a2"],
                      "output_b": ["b1", "b2"], "system_a": "alpha", "system_b": "beta"})
"""


def test_pairwise_both_bad_in_jupyterlab(lab, shot, snap):
    path = lab.folder / "pairs.jsonl"
    page = lab.open("pairs", PAIRS + f'PairwiseLabeller(pairs, "{path.name}", labeller="browser-test", seed=0)')
    shot.append(page)
    keys_live(page)
    assert "3 tie · 4 both bad" in page.inner_text(".evalkit-keys-line")
    page.keyboard.press("4")
    page.wait_for_selector("text=labelled p1 both bad", timeout=30_000)
    snap(page, "pairwise-both-bad")
    assert [r["label"] for r in read_rows(path, 1)] == ["BOTH_BAD"]


# ------------------------------------------------------------------ every key on the case the annotator saw
SLOW = CASES.replace('"c1", "c2", "c3"]', '"c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8"]').replace(
    '"input": ["q1", "q2", "q3"]', '"input": [f"q{i}" for i in range(1, 9)]').replace(
    '"output": ["<script>alert(1)</script>", "second answer", "third answer"]', '"output": "an answer"') + """
import time
lab = Labeller(cases, PATH, labeller="browser-test")
_label = lab.label
def slow_label(level):  # a kernel slower than the keys: each label takes 0.8 s
    time.sleep(0.8)
    _label(level)
lab.label = slow_label
lab
"""
SEEN = """() => { window.evalkitSeen = [];  // the case on screen at each keydown, read before the labeller's own handler
  document.addEventListener("keydown", () => { const shown = document.querySelector("[data-evalkit-case]");
    window.evalkitSeen.push(shown ? shown.getAttribute("data-evalkit-case") : null); }, true); }"""


def test_key_race_keys_tapped_faster_than_a_slow_kernel_label_only_the_cases_on_screen(lab, shot, snap):
    path = lab.folder / "race.jsonl"
    page = lab.open("race", SLOW.replace("PATH", repr(path.name)))
    shot.append(page)
    keys_live(page)
    page.evaluate(SEEN)
    for _ in range(6):  # "111111" with no wait: far faster than the kernel answers
        page.keyboard.press("1")
    page.wait_for_selector("text=not applied", timeout=30_000)
    time.sleep(6 * 0.8 + 2)  # every key answered
    seen = page.evaluate("() => window.evalkitSeen")
    rows = read_rows(path, 1)
    labelled = [r["case_id"] for r in rows if r["label"] is not None]
    print(f"cases on screen at the 6 keydowns: {seen}; labelled: {labelled}")
    assert len(seen) == 6 and rows and all(r["label"] == "PASS" for r in rows)
    for case in set(labelled):  # each label on a case that was on screen at a keydown, at most once per such keydown
        assert labelled.count(case) <= seen.count(case), (case, seen, labelled)
    assert labelled == sorted(set(labelled)) and len(labelled) < 6  # the stale keys were refused, not applied
    text = status(page)
    assert "not applied" in text and "is on screen now" in text
    snap(page, "stale-keys-refused")
    # keys 0.3 s apart: slower than the screen draws, faster than this kernel labels
    page.evaluate("() => { window.evalkitSeen = []; }")
    before = len(labelled)
    for _ in range(6):
        page.keyboard.press("1")
        time.sleep(0.3)
    time.sleep(6 * 0.8 + 2)
    seen = page.evaluate("() => window.evalkitSeen")
    rows = read_rows(path, before + 1)
    labelled = [r["case_id"] for r in rows if r["label"] is not None]
    print(f"keys 0.3 s apart, cases on screen at the keydowns: {seen}; labelled now: {labelled[before:]}")
    for case in set(labelled[before:]):
        assert labelled[before:].count(case) <= seen.count(case), (case, seen, labelled)
    assert len(labelled) - before < 6 and len(set(labelled)) == len(labelled)
    # a double click on a button: the second is made on the case the first labels, and is refused the same way
    before = len(labelled)
    button = page.locator("button.jupyter-button:has-text('FAIL')")
    button.click()
    button.click()
    page.wait_for_selector("text=the click on FAIL not applied", timeout=30_000)
    time.sleep(2 * 0.8 + 1)
    rows = read_rows(path, before + 1)
    assert [r["label"] for r in rows].count("FAIL") == 1
    snap(page, "stale-click-refused")


def test_a_labeller_taken_over_in_the_same_kernel_says_so_at_once(lab, shot, snap):
    path = lab.folder / "taken.jsonl"
    code = CASES + f'first = Labeller(cases, "{path.name}", labeller="browser-test")\nfirst'
    page = lab.open("taken", code, f'second = Labeller(cases, "{path.name}", labeller="browser-test")\nsecond')
    shot.append(page)
    keys_live(page)
    page.locator(".jp-Cell").nth(1).locator(".cm-content").click()
    page.keyboard.press("Shift+Enter")
    page.wait_for_function("() => document.querySelectorAll('.evalkit-labeller').length === 2", timeout=60_000)
    first = page.locator(".evalkit-keys-line").first
    page.wait_for_function("() => document.querySelector('.evalkit-keys-line').innerText.includes('taken over')",
                           timeout=10_000)  # no key pressed
    assert "keys active" not in first.inner_text() and "saves nothing more" in first.inner_text()
    assert "evalkit-keys-dead" in (first.get_attribute("class") or "")
    snap(page, "first-labeller-taken-over")
    second = page.locator(".evalkit-labeller").nth(1)
    second.locator("button.jupyter-button:has-text('unsure')").click()  # a toggle's click goes by the case too
    page.wait_for_selector("text=c1 marked unsure: the flag is saved with its label", timeout=30_000)
    second.locator("div:text-is('q1')").click()
    page.keyboard.press("2")
    assert rows_of(path, 1) == [("c1", "FAIL", "label")] and read_rows(path, 1)[0]["unsure"] is True


ACTIVE = """
import numpy as np, pandas as pd
from evalkit import infer
from evalkit.widgets import Labeller
rng = np.random.default_rng(3)
p = pd.Series(rng.beta(0.5, 0.5, 40), index=[f"a{i:02d}" for i in range(40)])
cases = pd.DataFrame({"case_id": p.index, "input": "is it right?", "output": [f"answer {i}" for i in range(40)]})
q = infer.sampling_probabilities(p)
Labeller(cases, PATH, labeller="browser-test", order="active", probabilities=q, rng=1, watch="pass_rate",
         stop_half_width=0.45, blind=False)
"""


def test_skip_and_ignore_under_the_active_order_leave_the_line_live(lab, shot, snap):
    path = lab.folder / "active.jsonl"
    page = lab.open("active", ACTIVE.replace("PATH", repr(path.name)))
    shot.append(page)
    keys_live(page)
    page.wait_for_selector("text=pass rate of these 40 cases: no label yet", timeout=30_000)
    done = 0

    def answer(key):  # one key, answered by the kernel before the next (a key made before would be refused)
        nonlocal done
        shown = page.get_attribute("[data-evalkit-case]", "data-evalkit-case")
        press(page, key)
        done += key != "s"
        assert counter_whole(page) == f"{done} / 40"
        assert page.get_attribute("[data-evalkit-case]", "data-evalkit-case") != shown

    for key in "1212":
        answer(key)
    answer("i")  # the 5th drawn case cannot be labelled
    answer("s")  # and the 6th is put off
    for key in "1121":
        answer(key)
    line = page.locator(".evalkit-labeller").inner_text()
    assert "pass rate of 38 of these 40 cases (1 ignored, 1 skipped: left out): between" in line, line
    assert "the 1 skipped case counts once labelled, in its place in the draw order" in line
    snap(page, "active-line-after-an-ignore-and-a-skip")
    while "you can stop" not in page.locator(".evalkit-labeller").inner_text() and done < 39:
        answer("1")  # label on until the line says the annotator can stop
    line = page.locator(".evalkit-labeller").inner_text()
    assert "— you can stop:" in line and "of 38 of these 40 cases (1 ignored, 1 skipped: left out)" in line, line
    snap(page, "active-line-you-can-stop")


# ------------------------------------------------------------------ each labeller and explorer on the demo data
DEMO_LABELLERS = {
    "demo-labeller": ("""
from evalkit import datasets, judge, models
from evalkit.widgets import Labeller
demo = datasets.load_demo("judge")
cases, outputs = demo["cases"], demo["outputs"]
answers = outputs[outputs["rubric"] == "v1"].set_index("case_id")["raw"]
replay = models.Replay({judge.UNSUPPORTED_CLAIMS.render(r): answers[r["case_id"]] for r in cases.to_dict("records")},
                       model_id="demo-judge")
results = judge.run_judge(cases, judge.UNSUPPORTED_CLAIMS, replay, progress=False)
Labeller(cases, "demo-labeller.jsonl", labeller="browser-test", show=("input", "source", "output"), judge=results,
         rubric=judge.UNSUPPORTED_CLAIMS, order="shuffle", rng=0, watch="pass_rate", stop_half_width=0.15)
""", ".evalkit-labeller .evalkit-keys-line", "1"),
    "demo-pairwise": ("""
from evalkit import datasets
from evalkit.widgets import PairwiseLabeller
demo = datasets.load_demo("pairwise")
comparisons = demo["comparisons"].join(demo["texts"]).reset_index()
PairwiseLabeller(comparisons.head(50), "demo-pairwise.jsonl", labeller="browser-test", seed=0)
""", ".evalkit-labeller .evalkit-keys-line", "3"),
    "demo-claims": ("""
from evalkit import datasets
from evalkit.widgets import ClaimLabeller
demo = datasets.load_demo("tcva")
ClaimLabeller(demo["claims"], "demo-claims.jsonl", answers=demo["answers"], question="input", source="source",
              labeller="browser-test")
""", ".evalkit-labeller .evalkit-keys-line", "4"),
    "demo-sweep": ("""
from evalkit import datasets
from evalkit.widgets import SweepExplorer
demo = datasets.load_demo("tcva")
SweepExplorer(demo["verdicts"], demo["items"]["human"], items=demo["items"])
""", "img.widget-image", None),
    "demo-fd-bins": ("""
from evalkit import datasets, density
from evalkit.widgets import FDBinExplorer
corpus = datasets.load_demo("fd")
explorer = FDBinExplorer(density.fd_star(corpus["claims"], corpus["documents"]))
explorer
""", "img.widget-image", None),
}


@pytest.mark.parametrize("name", list(DEMO_LABELLERS))
def test_each_labeller_and_explorer_on_the_demo_data(lab, shot, snap, name):
    code, ready, key = DEMO_LABELLERS[name]
    page = lab.open(name, code, wait=ready)
    shot.append(page)
    if key is not None:
        keys_live(page)
        page.keyboard.press(key)
        page.wait_for_selector("text=1 / ", timeout=30_000)
        assert read_rows(lab.folder / f"{name}.jsonl", 1)
    if name == "demo-claims":
        text = page.locator(".evalkit-labeller").inner_text()
        assert "source (the source)" in text and "how well does the source above support it?" in text
    if name == "demo-fd-bins":  # the tier weights named whole, and no plot under an error
        text = page.locator(".jp-OutputArea").first.inner_text()
        assert "general_abstract" in text and "systematic_review" in text
        for label in page.locator(".widget-inline-hbox .widget-label").all():
            assert label.evaluate("el => el.scrollWidth <= el.clientWidth + 1"), label.inner_text()
        page.locator(".jp-OutputArea input[type='text']").first.fill("200, 300")
        page.keyboard.press("Enter")
        page.wait_for_selector("text=cannot bin:", timeout=30_000)
        assert not page.locator("img.widget-image").first.is_visible()
        snap(page, "fd-bins-error-without-a-plot")
        page.locator(".jp-OutputArea input[type='text']").first.fill("")
        page.keyboard.press("Enter")
        page.wait_for_selector("text=Spearman rho", timeout=30_000)
    snap(page, name)
