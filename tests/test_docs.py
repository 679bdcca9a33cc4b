"""The documentation site: every public name in the API reference, and a clean offline build with no broken link."""

import html.parser
import importlib
import os
import re
import subprocess
import sys
import types
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

import evalkit
from tests._extras import needs

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SPHINX_MESSAGE = re.compile(r"(?:^|: )(?:WARNING|ERROR|CRITICAL|SEVERE): ")


def _public_modules() -> list[str]:
    names = [name for name in evalkit.__all__ if isinstance(getattr(evalkit, name), types.ModuleType)]
    return sorted(names + ["widgets", "report"])


def _listed(rst: Path) -> set[str]:
    """Names listed under the autosummary directives of an API page."""
    names, inside = set(), False
    for line in rst.read_text(encoding="utf-8").splitlines():
        if line.startswith(".. autosummary::"):
            inside = True
        elif inside and re.match(r"^   [A-Za-z_][\w.]*$", line):
            names.add(line.strip())
        elif inside and line and not line.startswith("   "):
            inside = False
    return names


@pytest.mark.parametrize("module", _public_modules())
def test_every_public_name_is_in_the_api_reference(module):
    page = DOCS / "api" / f"{module}.rst"
    assert page.is_file(), f"docs/api/{module}.rst is missing: every public module has an API page"
    public = set(importlib.import_module(f"evalkit.{module}").__all__) if module not in ("widgets", "report") else None
    if public is None:
        try:
            public = set(importlib.import_module(f"evalkit.{module}").__all__)
        except ImportError:
            pytest.skip(f"evalkit.{module} needs an extra that is not installed")
    listed = _listed(page)
    assert public == listed, f"docs/api/{module}.rst: missing {sorted(public - listed)}, not public {sorted(listed - public)}"


def test_every_module_page_is_in_the_api_index():
    index = (DOCS / "api" / "index.rst").read_text(encoding="utf-8")
    missing = [m for m in _public_modules() if not re.search(rf"^   {m}$", index, flags=re.M)]
    assert not missing, f"docs/api/index.rst does not list {missing}"
    assert "EvalkitWarning" in _listed(DOCS / "api" / "index.rst")


class _Links(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.links, self.ids = [], set()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if "id" in attrs:
            self.ids.add(attrs["id"])
        for key in ("href", "src"):
            if tag in ("a", "img", "script", "link", "iframe") and attrs.get(key):
                self.links.append((tag, attrs[key]))


@pytest.mark.slow
@needs("sphinx", "docs")
@needs("myst_nb", "docs")
def test_docs_build_offline_with_no_warning_and_no_broken_link(tmp_path, notebook_run):
    # The gallery renders the notebooks as the session executed them (each notebook runs once per test session).
    for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
        result = notebook_run(notebook)
        assert result.ok, f"{notebook.name} failed in cell {result.cell}: {result.error}"
    out = tmp_path / "html"
    env = {**os.environ, "EVALKIT_DOCS_NOTEBOOKS": str(notebook_run.folder)}
    build = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html", str(DOCS),
                            str(out)], capture_output=True, text=True, cwd=ROOT, env=env)
    # Sphinx's own messages ("file:line: WARNING: message", "ERROR: message"). Python's default log format from the
    # kernel clients' libraries ("ERROR:tornado.general:...", a ZMQ callback racing a kernel's shutdown) is not
    # one: a cell that fails stops the build itself (nb_execution_raise_on_error), which the return code shows.
    warnings = [line for line in build.stderr.splitlines() if SPHINX_MESSAGE.search(line)]
    assert build.returncode == 0 and not warnings, "\n".join(warnings) or build.stderr[-3000:]
    # the pages; not the theme's assets (pydata-sphinx-theme ships a Jinja macro file, _static/webpack-macros.html)
    pages = sorted(page for page in out.rglob("*.html") if "_static" not in page.relative_to(out).parts)
    parsed = {}
    for page in pages:
        parser = _Links()
        parser.feed(page.read_text(encoding="utf-8"))
        parsed[page.resolve()] = parser
    broken, fetched = [], []
    for page, parser in parsed.items():
        for tag, link in parser.links:
            parts = urlsplit(link)
            if parts.scheme in ("http", "https") or link.startswith("//"):
                if tag != "a":
                    fetched.append((page.name, link))  # a page loads nothing from the network
                continue
            if parts.scheme in ("mailto", "data", "javascript"):
                continue
            target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
            if not target.exists():
                broken.append((str(page.relative_to(out.resolve())), link))
            elif parts.fragment and target.suffix == ".html" and target in parsed and parts.fragment not in parsed[target].ids:
                broken.append((str(page.relative_to(out.resolve())), link))
    assert not broken, f"broken internal links: {broken[:20]}"
    assert not fetched, f"pages load from the network: {fetched[:10]}"
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "mathjax" in index.lower() and "cdn.jsdelivr" not in index
    # A notebook that draws shows its figures, whatever MPLBACKEND the build ran under (Agg in the test suite and CI)
    blank = [nb.name for nb in sorted((ROOT / "notebooks").glob("*.ipynb"))
             if re.search(r"\b(plots|plt)\.", nb.read_text(encoding="utf-8"))
             and not any(tag == "img" and "_images/" in link
                         for tag, link in parsed[(out / "gallery" / f"{nb.stem}.html").resolve()].links)]
    assert not blank, f"gallery pages without a figure although their notebooks draw: {blank}"
    # Getting started and every guide page show what their code printed: they run even when the gallery is given
    # executed notebooks, as here. Each page's code cells all have an output.
    for page in [out / "getting_started.html", *sorted((out / "guide").glob("*.html"))]:
        text = page.read_text(encoding="utf-8")
        cells, outputs = text.count('class="cell docutils container"'), text.count('class="cell_output docutils')
        assert cells == 0 or outputs == cells, f"{page.name}: {cells - outputs} of its {cells} code cells show no output"
    # A gallery page whose notebook leaves a data set out (a data-path parameter defaulting to None) says so under its
    # title, naming the parameter.
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        left_out = re.findall(r"^\s*\"([A-Z_]+_(?:DIR|CSV)) = None(?![^\n]*bundled)", nb.read_text(encoding="utf-8"), re.M)
        page = (out / "gallery" / f"{nb.stem}.html").read_text(encoding="utf-8")
        note = re.search(r"<p><strong>This page was built on the bundled synthetic data.</strong>(.*?)</p>", page, re.S)
        assert bool(note) == bool(left_out), f"{nb.stem}: data left out {left_out}, the page says so: {bool(note)}"
        named = re.findall(r'<span class="pre">([A-Z_]+)</span>', note.group(1)) if note else []
        assert all(name in named for name in left_out), f"{nb.stem}: the note names {named}, left out are {left_out}"


def _gate_runs(folder: Path, n: int, fails: dict) -> None:
    """Saved results of one judge on ``n`` cases for each run name: case i fails where ``fails[name](i)``."""
    import pandas as pd

    from evalkit import judge

    rubric = judge.Rubric("correct", "The answer is correct.", "{criterion}\n{output}\nAnswer {levels}.")
    folder.mkdir(exist_ok=True)
    for name, fail in fails.items():
        cases = pd.DataFrame({"case_id": [f"c{i}" for i in range(n)], "output": [f"answer {i}" for i in range(n)]})
        verdict = {f"answer {i}": "FAIL" if fail(i) else "PASS" for i in range(n)}
        model = lambda prompt, verdict=verdict: verdict[prompt.split("\n")[1]]  # noqa: E731
        judge.save_results(judge.run_judge(cases, rubric, model, model_id="judge", progress=False), folder / f"{name}.jsonl")


def test_the_gate_pages_ci_script_runs_as_written(tmp_path):
    """The script of docs/guide/gate.md ("In CI"), run by bash as written, with an `evalkit` command as pip installs
    it (pyproject's [project.scripts]): no change passes, a regression fails, an inconclusive gate passes with a
    warning, a missing file fails with exit 3; the JUnit file and the job summary are written."""
    import shutil

    page = (DOCS / "guide" / "gate.md").read_text(encoding="utf-8")
    script = re.search(r"## In CI\n.*?```bash\n(.*?)```", page, flags=re.S).group(1)
    (tmp_path / "gate.sh").write_text(script, encoding="utf-8")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "evalkit").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m evalkit.cli "$@"\n', encoding="utf-8")
    (bin_dir / "evalkit").chmod(0o755)
    store = tmp_path / "store"
    _gate_runs(store, 400, {"baseline": lambda i: i % 10 == 0, "same": lambda i: i % 10 == 0,
                            "worse": lambda i: i % 3 == 0})
    _gate_runs(store / "small", 20, {"baseline": lambda i: i % 10 == 0, "candidate": lambda i: i % 5 == 0})
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "PYTHONPATH": str(ROOT),
           "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    runs = tmp_path / "runs"
    for baseline, candidate, expected in [(store / "baseline.jsonl", store / "same.jsonl", 0),
                                          (store / "baseline.jsonl", store / "worse.jsonl", 1),
                                          (store / "small" / "baseline.jsonl", store / "small" / "candidate.jsonl", 0),
                                          (store / "baseline.jsonl", None, 3)]:
        shutil.rmtree(runs, ignore_errors=True)
        runs.mkdir()
        shutil.copy(baseline, runs / "baseline.jsonl")
        if candidate is not None:
            shutil.copy(candidate, runs / "candidate.jsonl")
        (tmp_path / "gate.xml").unlink(missing_ok=True)
        done = subprocess.run(["bash", "-e", "gate.sh"], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode == expected, done.stdout + done.stderr
        assert (tmp_path / "gate.xml").is_file()
        if "small" in str(baseline):
            assert "::warning::evalkit gate: inconclusive" in done.stdout
    summary = (tmp_path / "summary.md").read_text(encoding="utf-8")
    for verdict in ("no regression", "regression", "inconclusive", "bad input"):
        assert f"## evalkit gate: {verdict}" in summary
