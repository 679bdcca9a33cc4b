"""Shared fixtures: a seeded rng, figures closed after every test, the real data sets when present, and the notebooks
executed once per test session (for the notebook tests, the documentation build and the report's pages)."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from evalkit._optional import DISTRIBUTION  # noqa: E402 - the wheel is named after it
from tests.harness import ROOT, SHARED_DATA  # noqa: E402, F401 - the one definition of the data path


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def full_tier(request) -> bool:
    """Whether a test that scales its work runs at full strength: in the slow tier, or with ``--run-slow`` (CI); the
    fast tier (the README's ``pytest``) runs a smaller budget of the same checks (fewer coverage samples, fewer
    generated bad inputs)."""
    return bool(request.config.getoption("--run-slow") or request.node.get_closest_marker("slow"))


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


#: Fixtures that read a real data set (the fast tier gives the same answer with or without ../shared/data beside the
#: clone) or start a Dask cluster: a test using one is in the slow tier (``pytest --run-slow``).
SLOW_FIXTURES = {"usr", "arena", "llmbar", "release", "client"}


#: Session fixtures that start something costly, and the pytest-xdist group of the tests that use them: such tests run
#: on one worker, so that each notebook runs once per test session and one Dask cluster serves every Dask test.
SHARED_FIXTURE_GROUPS = {"notebook_run": "notebooks", "demo_report": "notebooks", "client": "dask"}


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist's hook on a worker, which reads the group marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if SLOW_FIXTURES & fixtures and item.path.parent.name == "tests":
            item.add_marker(pytest.mark.slow)
        group = next((SHARED_FIXTURE_GROUPS[name] for name in sorted(fixtures) if name in SHARED_FIXTURE_GROUPS), None)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))


def shared_dataset(name: str) -> Path:
    """Path of a real data set under ../shared/data, or skip the test with the reason (a test that calls this
    directly is marked ``slow``; one that takes it through a fixture of ``SLOW_FIXTURES`` is marked for it)."""
    path = SHARED_DATA / name
    if not path.is_dir():
        pytest.skip(f"real data set {name!r} not found at {path} (CI provides ../shared/data)")
    return path


@pytest.fixture
def random_verdicts(rng):
    """A random verdict table over 60 items (some with no claims), with its items index."""
    import pandas as pd

    from evalkit.verdicts import LEVELS

    rows = []
    items = [f"i{k:02d}" for k in range(60)]
    for item in items:
        for idx in range(int(rng.integers(0, 9))):
            rows.append({"item_id": item, "claim_idx": idx, "verdict": LEVELS[int(rng.integers(0, 5))]})
    return pd.DataFrame(rows), pd.Index(items, name="item_id")


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def real_data_params() -> dict:
    """The notebooks' data-path parameters, pointed at ../shared/data where those data sets exist."""
    paths = {"LLMBAR_DIR": SHARED_DATA / "llmbar", "TCVA_DIR": SHARED_DATA / "tcva",
             "HEALTHFC_CSV": SHARED_DATA / "healthfc" / "Datensatz.csv", "SUMMEVAL_DIR": SHARED_DATA / "summeval",
             "USR_DIR": SHARED_DATA / "usr", "ARENA_DIR": SHARED_DATA / "arena"}
    return {name: str(path) for name, path in paths.items() if path.exists()}


@pytest.fixture(scope="session")
def notebook_run(tmp_path_factory):
    """``run(path)``: the notebook executed with every real data set that is present, once per test session (later
    calls return the first run): its HTML page and its executed notebook, which the docs build renders."""
    pytest.importorskip("nbclient", reason='notebook runs need the \'report\' extra: pip install "llm-evalkit[report]"')
    pytest.importorskip("ipywidgets", reason='the notebooks need the \'report\' extra: pip install "llm-evalkit[report]"')
    from evalkit import report

    out = tmp_path_factory.mktemp("executed-notebooks")
    runs = {}

    def run(path: Path):
        if path.name not in runs:
            runs[path.name] = report.run_notebook(path, out, params=real_data_params(), save_notebook=True)
        return runs[path.name]

    run.folder = out
    return run


@pytest.fixture(scope="session")
def demo_report(tmp_path_factory):
    """``evalkit report`` as a new user runs it: from a wheel installed with its ``report`` extra into a fresh virtual
    environment, in a folder with no ../shared above it, on the demo data only. Every notebook runs once here; the
    wheel test and the page checks read the result (a namespace: ``out``, ``wheel``, ``stdout``, ``stderr``,
    ``evalkit_file``)."""
    import re
    import subprocess
    import sys
    import types
    import zipfile

    pytest.importorskip("nbclient", reason='runs where the \'report\' extra is installed: pip install "llm-evalkit[report]"')
    tmp = tmp_path_factory.mktemp("demo-report")

    def run(*args, **kwargs):
        done = subprocess.run([str(a) for a in args], capture_output=True, text=True, **kwargs)
        assert done.returncode == 0, f"{' '.join(map(str, args[:4]))} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        return done

    run(sys.executable, "-m", "pip", "wheel", ROOT, "--no-deps", "--quiet", "-w", tmp / "dist")
    wheel = next((tmp / "dist").glob(f"{DISTRIBUTION.replace('-', '_')}-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        bundled = sorted(Path(n).stem for n in archive.namelist() if re.fullmatch(r"evalkit/_notebooks/[^/]+\.ipynb", n))
    base = getattr(sys, "_base_executable", sys.executable)  # a venv made from the interpreter, not from this venv
    run(base, "-m", "venv", tmp / "venv")
    python = tmp / "venv" / "bin" / "python"
    run(python, "-m", "pip", "install", "--quiet", f"{wheel}[report]")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["MPLBACKEND"] = "Agg"
    elsewhere = tmp / "elsewhere"  # no ../shared anywhere above it, as in a user's folder
    elsewhere.mkdir()
    assert not any((folder / "shared").exists() for folder in elsewhere.parents if folder != folder.parent)
    done = subprocess.run([str(tmp / "venv" / "bin" / "evalkit"), "report", "--out", str(tmp / "report")],
                          capture_output=True, text=True, cwd=elsewhere, env=env)
    where = run(python, "-c", "import evalkit; print(evalkit.__file__)", cwd=elsewhere, env=env).stdout.strip()
    return types.SimpleNamespace(out=tmp / "report", wheel=wheel, bundled=bundled, returncode=done.returncode,
                                 stdout=done.stdout, stderr=done.stderr, evalkit_file=where)
