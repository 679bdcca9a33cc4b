"""The labeller in a real JupyterLab, driven by headless Chromium: two clicks, two rows on disk."""

import json
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"

pytestmark = [pytest.mark.browser, pytest.mark.slow]

NOTEBOOK_CELL = """
import pandas as pd
from evalkit.widgets import Labeller
cases = pd.DataFrame({"case_id": ["c1", "c2", "c3"], "input": ["q1", "q2", "q3"],
                      "output": ["<script>alert(1)</script>", "second answer", "third answer"]})
Labeller(cases, "labels.jsonl", labeller="browser-test")
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
    deadline = time.monotonic() + timeout
    rows = []
    while time.monotonic() < deadline:
        if path.exists():
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
            if len(rows) >= want:
                break
        time.sleep(0.25)
    return rows


def test_labeller_clicks_in_jupyterlab(tmp_path):
    playwright = pytest.importorskip("playwright.sync_api", reason='needs the \'browser\' extra: pip install "evalkit[browser]"')
    if not Path(CHROMIUM).exists():
        pytest.skip("chromium is not installed and could not be installed here (.ci/run installs Debian's chromium)")
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(NOTEBOOK_CELL.strip())]
    nbformat.write(nb, tmp_path / "label.ipynb")
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "jupyter", "lab", "--no-browser", "--ip=127.0.0.1", f"--port={port}",
         "--IdentityProvider.token=", "--ServerApp.password=", "--allow-root", "--LabApp.news_url=None",
         "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
        cwd=tmp_path, stdout=(tmp_path / "jupyter.log").open("w"), stderr=subprocess.STDOUT)
    screenshot = tmp_path / "labeller.png"
    try:
        wait_for_port(port)
        with playwright.sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
                "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--no-first-run"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            try:
                page.goto(f"http://127.0.0.1:{port}/lab/tree/label.ipynb", timeout=60_000)
                page.wait_for_selector(".jp-Notebook", timeout=60_000)
                page.wait_for_function(
                    "() => (document.querySelector('#jp-main-statusbar')?.innerText || '').includes('Idle')",
                    timeout=60_000)
                page.click(".jp-Cell .cm-content")
                page.keyboard.press("Shift+Enter")
                page.wait_for_selector("button.jupyter-button:has-text('PASS')", timeout=60_000)
                page.wait_for_selector("text=0 / 3", timeout=30_000)
                # The untrusted output is shown as text, not run as markup.
                assert page.locator("pre:has-text('<script>alert(1)</script>')").count() == 1
                page.click("button.jupyter-button:has-text('PASS')")
                page.wait_for_selector("text=1 / 3", timeout=30_000)
                page.click("button.jupyter-button:has-text('FAIL')")
                page.wait_for_selector("text=2 / 3", timeout=30_000)
                # Keyboard shortcut (ipyevents): click the labeller's background (focus leaves the code editor
                # and the buttons), keep the pointer over it, and key 1 labels the first level.
                page.click("text=2 / 3")
                page.keyboard.press("1")
                page.wait_for_selector("text=3 / 3", timeout=30_000)
                page.screenshot(path=str(screenshot), full_page=True)
            except Exception:
                page.screenshot(path=str(screenshot), full_page=True)
                raise
            finally:
                browser.close()
        rows = read_rows(tmp_path / "labels.jsonl", 3)
        assert [(r["case_id"], r["label"]) for r in rows] == [("c1", "PASS"), ("c2", "FAIL"), ("c3", "PASS")]
        assert all(r["labeller"] == "browser-test" for r in rows)
        assert screenshot.stat().st_size > 10_000
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
