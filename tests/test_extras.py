"""Optional dependencies: every import of one names its extra, and `pip install "llm-evalkit[report]"` runs every page.

The import rule is read from the source (every import of a module that is neither the standard library nor a
core dependency); the install is tried for real: a wheel, a fresh virtual environment outside the source
tree, the `report` extra, then `evalkit report` on the bundled notebooks.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest

from evalkit._optional import DISTRIBUTION
from tests.conftest import ROOT

pytestmark = pytest.mark.base  # CI runs these in the base install too: what they check differs without the extras

PACKAGE = ROOT / "evalkit"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _name(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement).group(0).lower().replace("_", "-")


CORE = {_name(r) for r in PYPROJECT["dependencies"]}
# Imports of an optional module that can only run once the user holds that module's objects: the guard that
# names the extra comes first (the file must name it), or (None) the value passed in proves the module is there.
REACHED_ONLY_WITH = {
    ("_dask.py", "dask"): "dask",  # is_dask imports it only when dask.dataframe is already imported
    ("density.py", "dask"): "dask",  # the dask path of fd_star: a dask table was passed in
    ("verdicts.py", "dask"): "dask",  # the dask path of level_counts
    ("models.py", "httpx"): "openai",  # OpenAIChat's constructor checks for openai (which brings httpx) first
    ("models.py", "openai"): "openai",
    ("batch.py", "openai"): "openai",  # batch jobs take a models.OpenAIChat, checked when it was made
    ("_coerce.py", "pyarrow"): None,  # reached only with strings pandas holds in pyarrow: pyarrow is there
}
# Known places whose ImportError does not name the extra yet: a strict xfail, so that fixing one fails the list.
UNNAMED: dict[str, str] = {}


def _top(module: str) -> str:
    return module.split(".")[0]


def _third_party(module: str) -> bool:
    top = _top(module)
    return top not in sys.stdlib_module_names and top != "evalkit" and top.lower().replace("_", "-") not in CORE


def _names_extra(handler: ast.ExceptHandler) -> bool:
    """An ImportError handler that raises naming an extra, or falls back without raising."""
    raises = [node for node in ast.walk(handler) if isinstance(node, ast.Raise)]
    if not raises:
        return True
    return all(_names_hint(ast.unparse(node)) for node in raises if node.exc is not None)


def _names_hint(source: str, extra: str = r"\w+") -> bool:
    """``source`` names the install command of ``extra``: written out, or built by ``install_hint``."""
    return re.search(rf"{re.escape(DISTRIBUTION)}\[{extra}\]|install_hint\(['\"]{extra}['\"]\)", source) is not None


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    caught = handler.type
    names = [caught] if not isinstance(caught, ast.Tuple) else list(caught.elts)
    return any(isinstance(n, ast.Name) and n.id in ("ImportError", "ModuleNotFoundError") for n in names)


def unnamed_optional_imports(path: Path) -> list[str]:
    """``line: module`` for each import of an optional module in ``path`` whose failure would not name an extra."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    guarded = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) and _names_extra(h) for h in node.handlers):
            guarded |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules = [node.module]
        else:
            continue
        for module in modules:
            if not _third_party(module) or id(node) in guarded:
                continue
            key = (path.name, _top(module))
            extra = REACHED_ONLY_WITH.get(key)
            if key in REACHED_ONLY_WITH and (extra is None or any(_names_hint(p.read_text(encoding="utf-8"), extra)
                                                                  for p in PACKAGE.glob("*.py"))):
                continue  # the guard that names the extra exists, or nothing can reach the import without the module
            found.append(f"{node.lineno}: {module}")
    return found


@pytest.mark.parametrize("path", sorted(PACKAGE.glob("*.py")), ids=lambda p: p.name)
def test_every_optional_import_names_its_extra(path):
    if path.name in UNNAMED:
        pytest.xfail(UNNAMED[path.name])
    found = unnamed_optional_imports(path)
    assert not found, (f"{path.name} imports optional modules whose ImportError names no extra: {found}; use "
                       "evalkit._optional.require(module, extra=..., purpose=...)")


def test_unnamed_list_is_current():
    """Each entry of UNNAMED still has an import to fix (otherwise the entry goes)."""
    for name in UNNAMED:
        assert unnamed_optional_imports(PACKAGE / name), f"{name} names its extras now: remove it from UNNAMED"


def test_the_rule_catches_a_bare_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("def f():\n    import statsmodels.api as sm\n    return sm\n\n"
                   "try:\n    import ipywidgets\nexcept ImportError:\n    raise ImportError('no widgets')\n\n"
                   "try:\n    import ipyevents\nexcept ImportError:\n    ipyevents = None\n"
                   "try:\n    import nbformat\nexcept ImportError as e:\n    raise ImportError('pip install \"llm-evalkit[report]\"') from e\n")
    assert unnamed_optional_imports(bad) == ["2: statsmodels.api", "6: ipywidgets"]


def _without(modules: list[str], code: str) -> str:
    """Run ``code`` in a fresh interpreter where ``modules`` cannot be imported; its stdout."""
    blocked = "".join(f"sys.modules[{name!r}] = None; " for name in modules)
    done = subprocess.run([sys.executable, "-c", f"import sys; {blocked}\n{code}"], capture_output=True, text=True,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_length_bias_without_statsmodels_names_the_extra():
    """Run where statsmodels cannot be imported: the error names the 'stats' extra, not a bare module."""
    out = _without(["statsmodels", "statsmodels.api"], (
        "import pandas as pd\nfrom evalkit import pairwise\n"
        "d = pd.DataFrame({'case_id': [1, 1], 'order': ['original', 'swapped'], 'winner': ['1', '2'], 'label': ['1', '1'],"
        " 'length_1': [10, 20], 'length_2': [20, 10]})\n"
        "for f in (pairwise.length_bias,):\n"
        "    try:\n        f(d)\n    except ImportError as exc:\n        print(exc)\n"))
    assert out.count('pairwise.length_bias needs statsmodels, from the \'stats\' extra: pip install "llm-evalkit[stats]"') == 1


def test_an_eval_log_without_zstandard_names_the_extra():
    out = _without(["zstandard"], (
        "from evalkit import datasets, logs\n"
        "try:\n    logs.read_inspect(datasets.demo_path() / 'logs' / 'inspect_v1.eval')\n"
        "except ImportError as exc:\n    print(exc)\n"))
    assert 'needs the zstandard package' in out and 'pip install "llm-evalkit[logs]"' in out


@pytest.mark.parametrize("module", ["nbformat", "nbclient", "nbconvert"])
def test_report_without_its_extra_names_it(module, tmp_path):
    """A direct call of run_notebook or build_report (not through the command line, which checks first)."""
    pytest.importorskip("nbformat", reason='writes a notebook: needs the \'report\' extra: pip install "llm-evalkit[report]"')
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    nbformat.write(nb, tmp_path / "one.ipynb")
    out = _without([module], (
        "from evalkit import report\n"
        f"for call in (lambda: report.run_notebook({str(tmp_path / 'one.ipynb')!r}, {str(tmp_path)!r}),\n"
        f"             lambda: report.build_report([{str(tmp_path / 'one.ipynb')!r}], {str(tmp_path / 'out')!r}, "
        "echo=lambda *a, **k: None)):\n"
        "    try:\n        call()\n    except ImportError as exc:\n        print(exc)\n"))
    lines = out.splitlines()
    assert len(lines) == 2 and all(f"evalkit.report needs {module}, from the 'report' extra: "
                                   'pip install "llm-evalkit[report]"' == line for line in lines), out


# --------------------------------------------------------------------------------- what `report` must bring
def notebook_imports(path: Path) -> set[str]:
    """Top-level modules a notebook imports (imports under an ``if ... find_spec(...)`` guard are optional)."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = set()
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        tree = ast.parse("\n".join(line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))))
        optional = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and "find_spec" in ast.unparse(node.test):
                optional |= {id(inner) for inner in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in optional:
                continue
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                found.add(node.module)
                if node.module == "evalkit":
                    found |= {f"evalkit.{alias.name}" for alias in node.names}
    return found


def module_needs(name: str) -> set[str]:
    """Optional modules an evalkit module may need: every import and ``require(...)`` in it, except imports with a
    fallback (an ImportError handler that does not raise) and those reached only with the module's own objects."""
    path = PACKAGE / f"{name}.py"
    if not path.is_file():
        return set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    fallback = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) and not any(isinstance(n, ast.Raise) for n in ast.walk(h))
                                             for h in node.handlers):
            fallback |= {id(inner) for stmt in node.body for inner in ast.walk(stmt)}
    needs = set()
    for node in ast.walk(tree):
        if id(node) in fallback:
            continue
        if isinstance(node, ast.Import):
            needs |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            needs.add(node.module)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", None) == "require" and node.args:
            needs.add(ast.literal_eval(node.args[0]))
    return {m for m in needs if _third_party(m) and (path.name, _top(m)) not in REACHED_ONLY_WITH}


def installed_by(requirements: list[str]) -> set[str]:
    """Distribution names pip installs for ``requirements`` (read from the metadata installed here)."""
    from packaging.requirements import Requirement

    seen, todo = set(), [(r, ()) for r in requirements]
    while todo:
        text, extras = todo.pop()
        req = Requirement(text)
        if req.marker is not None and not any(req.marker.evaluate({"extra": e}) for e in (extras or ("",))):
            continue
        name = req.name.lower().replace("_", "-")
        key = (name, tuple(sorted(req.extras)))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            pytest.skip(f"the metadata of {name} is not installed here (it comes with the 'report' extra)")
        todo += [(r, tuple(req.extras)) for r in dist.requires or []]
    return {name for name, _ in seen}


def test_report_extra_brings_what_the_bundled_notebooks_import():
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    provided = installed_by(PYPROJECT["dependencies"] + PYPROJECT["optional-dependencies"]["report"])
    owners = metadata.packages_distributions()
    missing = {}
    for path in notebooks:
        imported = notebook_imports(path)
        needed = {m for m in imported if _third_party(m)}
        for module in imported:
            if module.startswith("evalkit."):
                needed |= module_needs(module.split(".")[1])
        for module in needed:
            dists = {d.lower().replace("_", "-") for d in owners.get(_top(module), [])}
            if not dists & provided:
                missing.setdefault(path.name, set()).add(module)
    assert not missing, f"the 'report' extra does not install what these notebooks import: {missing}"


@pytest.mark.slow
def test_wheel_with_the_report_extra_builds_every_page(demo_report):
    """From a wheel, in a fresh virtual environment outside the source tree: every bundled notebook becomes a page."""
    assert demo_report.bundled == sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    assert demo_report.returncode == 0, demo_report.stdout[-3000:] + demo_report.stderr[-3000:]
    where = demo_report.evalkit_file
    assert "venv" in where and str(ROOT) not in where  # the installed copy ran, not the source
    pages = sorted(p.stem for p in demo_report.out.glob("*.html") if p.name != "index.html")
    assert pages == demo_report.bundled, demo_report.stdout
    assert "FAILED" not in demo_report.stdout and "failed" not in demo_report.stderr, demo_report.stdout + demo_report.stderr
    index = (demo_report.out / "index.html").read_text()
    assert all(f"{name}.html" in index for name in demo_report.bundled)


# --------------------------------------------------------------------------------- the distribution's name
# Every file a user reads a command from: the package (its messages and docstrings), the docs, the README, the
# notebooks, the benchmarks, CI and the tests (their skip reasons are install hints too).
HINT_FILES = [ROOT / "README.md", ROOT / "pyproject.toml", ROOT / "conftest.py", ROOT / ".ci" / "run",
              *sorted(p for folder in ("evalkit", "docs", "notebooks", "benchmarks", "tests")
                      for p in (ROOT / folder).rglob("*") if p.suffix in (".py", ".md", ".rst", ".ipynb", ".sh", ".toml")
                      and "_build" not in p.parts and "gallery" not in p.parts and not p.is_relative_to(ROOT / "tests" / "data"))]
# An extra of a distribution called "evalkit", a pip command installing a distribution of that name, or its metadata
# read by that name: on PyPI "evalkit" is another project.
OTHER_EXTRA = re.compile(r"(?<![\w./-])evalkit\[")
PIP_INSTALL = re.compile(r"pip install((?:[ \t]+[^\s;&|`,)]+)+)")  # the words of one command, up to where it ends
OTHER_METADATA = re.compile(r"metadata\.(?:version|distribution|metadata)\(\s*(['\"])evalkit\1")


def wrong_install_hints(text: str) -> list[str]:
    found = [m.group(0) for m in OTHER_EXTRA.finditer(text)] + [m.group(0) for m in OTHER_METADATA.finditer(text)]
    for command in PIP_INSTALL.finditer(text):
        names = [re.split(r"[\[<>=!~ ]", word.strip("'\"\\"))[0] for word in command.group(1).split()]
        found += [f"pip install {name}" for name in names if name.lower() == "evalkit"]
    return found


def test_the_rule_finds_an_install_hint_with_another_name():
    other = "evalkit"  # written apart, so that this file passes its own check
    assert wrong_install_hints(f'pip install "{other}[stats]"; pip install -U {other}>=0.1; metadata.version("{other}")') == [
        f"{other}[", f'metadata.version("{other}"', f"pip install {other}", f"pip install {other}"]
    assert wrong_install_hints(f'pip install "{DISTRIBUTION}[stats]"; pip install {DISTRIBUTION}; pip install -e ".[dev]" '
                               "&& evalkit report; import evalkit; pip install ppi-python, in evalkit's test extra") == []


def test_every_install_hint_names_the_distribution():
    """``DISTRIBUTION`` is the name in pyproject.toml and its self-referencing extras, and no install hint anywhere
    names another distribution (``evalkit`` on PyPI is an unrelated project)."""
    assert PYPROJECT["name"] == DISTRIBUTION
    for extra in ("docs", "dev"):
        assert any(r.startswith(f"{DISTRIBUTION}[") for r in PYPROJECT["optional-dependencies"][extra])
    assert len(HINT_FILES) > 100
    found = {str(p.relative_to(ROOT)): hits for p in HINT_FILES if (hits := wrong_install_hints(p.read_text(encoding="utf-8")))}
    assert not found, f"install hints naming another distribution than {DISTRIBUTION!r}: {found}"


def test_the_import_error_hint_names_the_distribution():
    from evalkit._optional import install_hint, require

    assert install_hint("stats") == f'pip install "{DISTRIBUTION}[stats]"'
    with pytest.raises(ImportError, match=re.escape(f'pip install "{DISTRIBUTION}[stats]"')):
        require("no_such_module_here", extra="stats", purpose="a test")
