"""`evalkit report`: parameters, progress, HTML output and failures that name the notebook and cell."""

import subprocess
import sys

import pytest

nbformat = pytest.importorskip("nbformat", reason='needs the \'report\' extra: pip install "evalkit[report]"')

from evalkit import cli, report  # noqa: E402


def notebook(path, *cells, params="X = 1"):
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    first = nbformat.v4.new_code_cell(params)
    first.metadata["tags"] = ["parameters"]
    nb.cells = [nbformat.v4.new_markdown_cell("# t"), first] + [nbformat.v4.new_code_cell(c) for c in cells]
    nbformat.write(nb, path)
    return path


def test_parse_params():
    assert report.parse_params(["A=3", "B='x'", "C=/data/x.csv", "D=[1, 2]"]) == {"A": 3, "B": "x", "C": "/data/x.csv", "D": [1, 2]}
    with pytest.raises(ValueError, match="NAME=VALUE"):
        report.parse_params(["novalue"])
    with pytest.raises(ValueError, match="NAME=VALUE"):
        report.parse_params(["1x=2"])


def test_report_injects_parameters_and_writes_index(tmp_path, capsys):
    nb = notebook(tmp_path / "a.ipynb", "print('value is', X * 2)")
    status = cli.main(["report", "--out", str(tmp_path / "out"), "--notebooks", str(nb), "--param", "X=21"])
    assert status == 0
    out = capsys.readouterr().out
    assert "[1/1] a.ipynb ... ok" in out and "index.html" in out
    page = (tmp_path / "out" / "a.html").read_text()
    assert "value is 42" in page and "Parameters injected by evalkit report" in page
    index = (tmp_path / "out" / "index.html").read_text()
    assert "a.html" in index and "X = 21" in index and "<td>t</td>" in index  # the title from the first heading


def test_failure_names_notebook_and_cell(tmp_path, capsys):
    good = notebook(tmp_path / "good.ipynb", "print('fine')")
    bad = notebook(tmp_path / "bad.ipynb", "y = 1", "raise RuntimeError('<b>boom</b>')")
    status = cli.main(["report", "--out", str(tmp_path / "out"), "--notebooks", str(good), str(bad), "--param", "X=2"])
    assert status == 1
    captured = capsys.readouterr()
    assert "bad.ipynb failed in cell 4: RuntimeError: <b>boom</b>" in captured.err
    assert "[2/2] bad.ipynb ... FAILED in cell 4" in captured.out
    index = (tmp_path / "out" / "index.html").read_text()
    assert "&lt;b&gt;boom&lt;/b&gt;" in index and "<b>boom</b>" not in index
    assert (tmp_path / "out" / "bad.html").exists(), "the partial notebook is written too, to debug it"


def test_unknown_parameter_is_refused(tmp_path, capsys):
    nb = notebook(tmp_path / "a.ipynb", "pass")
    assert cli.main(["report", "--out", str(tmp_path / "o"), "--notebooks", str(nb), "--param", "TYPO=1"]) == 2
    assert "no notebook declares parameter(s) ['TYPO']" in capsys.readouterr().err
    assert cli.main(["report", "--notebooks", str(tmp_path / "missing.ipynb")]) == 2


def test_console_script_is_installed(tmp_path):
    result = subprocess.run([sys.executable, "-m", "evalkit.cli", "report", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "--param NAME=VALUE" in result.stdout


def test_widgets_appear_as_static_snapshots(tmp_path):
    pytest.importorskip("ipywidgets", reason='needs the \'widgets\' extra: pip install "evalkit[widgets]"')
    nb = notebook(tmp_path / "w.ipynb", "import pandas as pd\nfrom evalkit.widgets import Labeller\n"
                  "Labeller(pd.DataFrame({'case_id': ['a'], 'input': ['q'], 'output': ['<i>o</i>']}), 'l.jsonl')")
    result = report.run_notebook(nb, tmp_path)
    assert result.ok
    page = result.html.read_text()
    assert "0 / 1 labelled" in page and "&lt;i&gt;o&lt;/i&gt;" in page
    assert not (tmp_path / "l.jsonl").exists()
