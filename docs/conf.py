"""Sphinx configuration: the user guide, the API reference from numpydoc docstrings, the notebooks executed.

The build needs no network: MathJax is served from the build (sphinx-mathjax-offline), the theme bundles
its assets, intersphinx is off (no inventory to fetch), and widget pages use their static snapshots.
"""

from __future__ import annotations

import atexit
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
for stale in GALLERY.glob("*.ipynb"):
    stale.unlink()
for notebook in sorted((ROOT / "notebooks").glob("*.ipynb")):
    source = Path(EXECUTED) / notebook.name if EXECUTED else notebook
    if not source.is_file():
        raise FileNotFoundError(f"EVALKIT_DOCS_NOTEBOOKS={EXECUTED!r} lacks the executed {notebook.name}")
    shutil.copy2(source, GALLERY / notebook.name)

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
atexit.register(shutil.rmtree, _IPYTHON, True)
nb_execution_mode = "off" if EXECUTED else "force"
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
