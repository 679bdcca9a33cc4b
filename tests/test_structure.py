"""The import graph: one private floor, no lane reaching into another's private names, no arrow up to the root."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.base  # CI runs these in the base install too: what they check differs without the extras

PACKAGE = Path(__file__).resolve().parent.parent / "evalkit"
#: Every module file, the private packages' (``_stats/``) and the public packages' modules too.
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name != "__init__.py" or p.parent != PACKAGE)


def _is_module(name: str) -> bool:
    """A module or package of evalkit (``evalkit.<name>``)."""
    return (PACKAGE / f"{name}.py").is_file() or (PACKAGE / name / "__init__.py").is_file()


def _private_part(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def _on_floor(path: Path) -> bool:
    """A file of the private floor: a private module of the package, or any file of a private package. The private
    modules of a public package (``widgets/_base.py``) are that package's own: they may import the lanes below it,
    and no other module may import them (:func:`_owner`)."""
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    return _private_part(parts[0]) if len(parts) == 1 else any(_private_part(part) for part in parts[:-1])


def _owner(module: str) -> str | None:
    """The public package a module is a private module of (``evalkit.widgets._base`` -> ``widgets``), or None."""
    parts = module.split(".")[1:]
    if len(parts) >= 2 and not _private_part(parts[0]) and _private_part(parts[1]):
        return parts[0]
    return None


def _evalkit_imports(path: Path):
    """(imported module, imported name or None, line) for every evalkit import in a file, at any depth."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    aliases = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "evalkit":
            for alias in node.names:
                yield node.module, alias.name, node.lineno
                if node.module == "evalkit":
                    aliases[alias.asname or alias.name] = f"evalkit.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "evalkit":
                    yield alias.name, None, node.lineno
    for node in ast.walk(tree):  # module_alias._private attribute access, e.g. _models._model_identity
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            yield aliases[node.value.id], node.attr, node.lineno


def _is_private(module: str) -> bool:
    """A name on the private floor: a private module, or a module inside a private package."""
    return any(part.startswith("_") and not part.startswith("__") for part in module.split(".")[1:])


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_private_name_crosses_modules(path):
    """A module uses another module's underscore names only when that module is on the private floor."""
    for module, name, line in _evalkit_imports(path):
        if module == "evalkit":
            assert name is not None and _is_module(name), (
                f"{path.name}:{line} imports {name!r} from the package root; import it from its own module")
            continue
        owner = _owner(module)
        if owner is not None:
            assert path.parent == PACKAGE / owner, (
                f"{path.name}:{line} imports {module}, a private module of the public package {owner}/")
        if name and name.startswith("_") and not name.startswith("__"):
            assert _is_private(module) or (PACKAGE / module.split(".")[-1] / f"{name}.py").is_file() and \
                path.parent == PACKAGE / module.split(".")[-1], \
                f"{path.name}:{line} uses {module}.{name}, a private name of a public module"


@pytest.mark.parametrize("path", [p for p in MODULES if _on_floor(p)], ids=lambda p: str(p.relative_to(PACKAGE)))
def test_floor_imports_nothing_above_it(path):
    for module, name, line in _evalkit_imports(path):
        target = f"evalkit.{name}" if module == "evalkit" else module
        assert _is_private(target), f"{path.name}:{line} is on the private floor but imports {target}"


def test_the_rule_catches_a_private_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("from evalkit.calibrate import _wilson\nfrom evalkit import models as _m\nx = _m._secret\n"
                   "from evalkit import __version__\n")
    found = list(_evalkit_imports(bad))
    assert ("evalkit.calibrate", "_wilson", 1) in found and ("evalkit.models", "_secret", 3) in found
    assert ("evalkit", "__version__", 4) in found and not (PACKAGE / "__version__.py").is_file()


def test_import_evalkit_leaves_matplotlib_and_widgets_unloaded():
    import subprocess
    import sys

    code = "import sys, evalkit; print(sorted(m for m in ('matplotlib', 'ipywidgets', 'evalkit.plots') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"


def test_a_public_packages_private_modules_are_its_own():
    assert _owner("evalkit.widgets._base") == "widgets" and _owner("evalkit.infer._engine") == "infer"
    assert _owner("evalkit._stats.ppi") is None and _owner("evalkit.infer") is None and _owner("evalkit._wire") is None
    assert _on_floor(PACKAGE / "_stats" / "ppi.py") and _on_floor(PACKAGE / "_wire.py")
    assert not _on_floor(PACKAGE / "widgets" / "_base.py") and not _on_floor(PACKAGE / "judge.py")
