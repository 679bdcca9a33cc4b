"""Doctest collection: a module whose optional extra is not installed is skipped with the extra named.

The unit tests in tests/ skip themselves the same way (tests/_extras.py); this covers the doctests that
``--doctest-modules`` collects from evalkit/ itself.
"""

import importlib.util

import pytest

# The scripts that made the fixture logs run with the tools installed, not with evalkit's tests.
collect_ignore_glob = ["tests/data/*"]

# module file -> (what it imports, the extra that installs it)
OPTIONAL_MODULES = {
    "widgets.py": ("ipywidgets", "widgets"),
    "report.py": ("nbclient", "report"),
    "cli.py": ("nbclient", "report"),
}


# doctests (by name prefix: a module or an object in it) that need an extra their module does not
OPTIONAL_DOCTESTS = {
    "evalkit.batch.": ("openai", "openai"),
    "evalkit.pairwise.length_bias": ("statsmodels", "stats"),
    "evalkit.logs.read_inspect": ("zstandard", "logs"),
    "evalkit.logs.pass_rate": ("zstandard", "logs"),
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        needed = next((extra for prefix, extra in OPTIONAL_DOCTESTS.items() if item.name.startswith(prefix)), None)
        if needed and importlib.util.find_spec(needed[0]) is None:
            item.add_marker(pytest.mark.skip(reason=f"this doctest needs {needed[0]}, from the '{needed[1]}' extra: "
                                                    f"pip install \"evalkit[{needed[1]}]\""))


class _NeedsExtra(pytest.File):
    def collect(self):
        module, extra = OPTIONAL_MODULES[self.path.name]
        pytest.skip(f"doctests of evalkit/{self.path.name} need {module}, from the '{extra}' extra: "
                    f"pip install \"evalkit[{extra}]\"")


@pytest.hookimpl(wrapper=True)
def pytest_collect_file(file_path, parent):
    collected = yield
    if file_path.parent.name == "evalkit" and file_path.name in OPTIONAL_MODULES:
        module, _ = OPTIONAL_MODULES[file_path.name]
        if importlib.util.find_spec(module) is None:
            return [_NeedsExtra.from_parent(parent, path=file_path)]
    return collected
