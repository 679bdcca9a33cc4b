"""Every notebook in notebooks/ is committed without outputs and executes top to bottom (as `evalkit report` runs it)."""

import pytest

nbformat = pytest.importorskip("nbformat", reason='needs the \'report\' extra: pip install "llm-evalkit[report]"')
pytest.importorskip("nbclient", reason='needs the \'report\' extra: pip install "llm-evalkit[report]"')
pytest.importorskip("ipywidgets", reason='the notebooks need the \'report\' extra: pip install "llm-evalkit[report]"')

from tests.conftest import NOTEBOOKS, real_data_params  # noqa: E402


def test_there_are_notebooks():
    assert [p.name for p in NOTEBOOKS] == ["00_labelling.ipynb", "01_calibrate_judge.ipynb",
                                           "02_tcva_temperature_sweep.ipynb", "03_factual_density.ipynb",
                                           "04_few_labels.ipynb", "05_human_ceiling.ipynb", "06_rankings.ipynb",
                                           "07_other_tools.ipynb", "08_label_where_it_counts.ipynb"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs_and_parameterised(path):
    nb = nbformat.read(path, as_version=4)
    code = [c for c in nb.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), f"{path.name} has stored outputs"
    assert "parameters" in code[0].metadata.get("tags", []), f"{path.name}: first code cell must be tagged 'parameters'"
    assert nb.metadata.get("kernelspec", {}).get("name") == "python3"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_executes(path, notebook_run):
    params = real_data_params()
    result = notebook_run(path)  # with each real data set present; each notebook takes the ones it declares
    assert result.ok, f"{path.name} failed in cell {result.cell}: {result.error}"
    assert result.html.exists() and result.html.stat().st_size > 10_000
    assert not (path.parent / "labels").exists(), "report mode must not write labels into the repository"
    page = result.html.read_text()
    assert not [name for name in params if f"skipped: <code>{name}</code>" in page], "a data section was skipped"
