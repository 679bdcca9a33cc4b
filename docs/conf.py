"""Sphinx configuration: the user guide, the API reference from numpydoc docstrings, the notebooks executed.

The build needs no network: MathJax is served from the build (sphinx-mathjax-offline), the theme bundles
its assets, intersphinx is off (no inventory to fetch), and widget pages use their static snapshots.
"""

from __future__ import annotations

import ast
import atexit
import json
import os
import shutil
import tempfile
from pathlib import Path

import evalkit

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent

project = "evalkit"
author = "evalkit developers"
copyright = "evalkit developers"
release = version = evalkit.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",
    "numpydoc",
    "myst_nb",
]

# --- the gallery: the notebooks of notebooks/, copied in at every build and executed on the demo data. With
# EVALKIT_DOCS_NOTEBOOKS naming a folder of those notebooks already executed (evalkit.report.run_notebook with
# save_notebook=True, as the test suite runs them), the build renders their outputs instead of running them again.
GALLERY = HERE / "gallery"
EXECUTED = os.environ.get("EVALKIT_DOCS_NOTEBOOKS")
#
# Each gallery page opens with what its run left out: the copy gets, under its title, a note naming the data-path
# parameters that were not given (a parameter defaulting to None skips its section) and how to supply them. A cell
# that is mostly function definitions (the helpers a notebook needs before its first result) is folded: its code
# behind a toggle ("hide-input"), its output shown.


def _data_parameters(cells) -> list[str]:
    """The parameters of a notebook's ``parameters`` cell that default to None: each one's data is left out."""
    for cell in cells:
        if cell["cell_type"] == "code" and "parameters" in cell.get("metadata", {}).get("tags", []):
            lines = "".join(cell["source"]).splitlines()
            return [node.targets[0].id for node in ast.parse("\n".join(lines)).body if isinstance(node, ast.Assign)
                    and isinstance(node.targets[0], ast.Name) and isinstance(node.value, ast.Constant)
                    and node.value.value is None and node.targets[0].id.endswith(("_DIR", "_CSV"))
                    and "bundled" not in lines[node.lineno - 1]]  # None may mean the bundled files (07's logs)
    return []


def _mostly_definitions(source: str) -> bool:
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a cell magic: not Python to read
        return False
    defined = sum(node.end_lineno - node.lineno + 1 for node in tree.body
                  if isinstance(node, (ast.FunctionDef, ast.ClassDef)))
    return defined * 2 >= len(source.splitlines()) > 0


def _gallery_copy(source: Path, target: Path) -> None:
    book = json.loads(source.read_text(encoding="utf-8"))
    cells = book["cells"]
    for cell in cells:
        if cell["cell_type"] == "code" and _mostly_definitions("".join(cell["source"])):
            tags = cell.setdefault("metadata", {}).setdefault("tags", [])
            if "hide-input" not in tags:
                tags.append("hide-input")
    skipped = _data_parameters(cells)
    if skipped:
        names = [f"`{name}`" for name in skipped]
        names = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        example = " ".join(f"--param {name}=PATH" for name in skipped)
        note = (f"**This page was built on the bundled synthetic data.** The sections that read {names} were "
                "left out and say so where they stand; run them with "
                f"`evalkit report --notebooks notebooks/{source.name} {example}`. "
                "[Which sections, and the data each reads](../reference.md#sections-that-need-a-real-data-set).")
        cells.insert(1, {"cell_type": "markdown", "id": "gallery-data-note", "metadata": {}, "source": [note]})
    target.write_text(json.dumps(book, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


for stale in GALLERY.glob("*.ipynb"):
    stale.unlink()
for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
    source = Path(EXECUTED) / notebook.name if EXECUTED else notebook
    if not source.is_file():
        raise FileNotFoundError(f"EVALKIT_DOCS_NOTEBOOKS={EXECUTED!r} lacks the executed {notebook.name}")
    _gallery_copy(source, GALLERY / notebook.name)

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints", "jupyter_execute"]
templates_path = ["_templates"]

# The notebooks' kernels inherit this process's environment, where MPLBACKEND=Agg (the test suite's, CI's) would
# draw every figure nowhere: give them the inline backend, as `evalkit report` gives its kernels.
os.environ["MPLBACKEND"] = "module://matplotlib_inline.backend_inline"
# The guide pages' tables and figures shown as the notebooks show theirs (each column rounded as its quantity, notes
# whole, figures described): every kernel of the build calls evalkit.report.use_formatted() when it starts.
_IPYTHON = Path(tempfile.mkdtemp(prefix="evalkit-docs-ipython-"))
(_IPYTHON / "profile_default" / "startup").mkdir(parents=True)
(_IPYTHON / "profile_default" / "startup" / "00-evalkit.py").write_text(
    "from evalkit.report import use_formatted\n\nuse_formatted()\n")
os.environ["IPYTHONDIR"] = str(_IPYTHON)
# The guide pages' sections on real data sets (the TCVA paper's release, HealthFC) read them from EVALKIT_DOCS_DATA,
# by default ../shared/data beside the repository, where the test suite finds them; where a data set is absent, its
# section says only that.
os.environ.setdefault("EVALKIT_DOCS_DATA", str(ROOT.parent / "shared" / "data"))
atexit.register(shutil.rmtree, _IPYTHON, True)
# The guide pages and "Getting started" always run (their outputs are part of the page); with EVALKIT_DOCS_NOTEBOOKS
# only the gallery's notebooks are taken as executed.
nb_execution_mode = "force"
nb_execution_excludepatterns = ["gallery/*"] if EXECUTED else []
nb_execution_timeout = 1200
nb_execution_raise_on_error = True
nb_execution_in_temp = True  # notebook 00 writes a labels file: keep it out of the source tree
nb_execution_show_tb = True
nb_ipywidgets_js = {}  # no widget manager from a CDN: widgets show their static snapshot (text/html)
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_typehints = "none"  # numpydoc's Parameters sections say the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

nitpicky = True
nitpick_ignore_regex = [
    # types named in prose by numpydoc docstrings and signatures, documented by their own projects
    (r"py:.*", r"(pandas|numpy|np|pd|matplotlib|scipy|dask|ipywidgets|openai|sqlite3|pathlib|os|bm25s)\..*"),
]

html_theme = "pydata_sphinx_theme"
html_title = f"evalkit {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "navbar_align": "left",
    "footer_start": ["copyright"],
    "footer_end": [],
}
html_static_path = ["_static"]
html_css_files = ["evalkit.css"]  # local, like every asset: the build needs no network
html_show_sourcelink = False
html_sidebars = {"getting_started": [], "schemas": [], "changelog": []}  # single pages: no empty section navigation
