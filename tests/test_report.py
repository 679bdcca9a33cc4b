"""`evalkit report`: parameters, progress, HTML output and failures that name the notebook and cell."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason='needs the \'report\' extra: pip install "llm-evalkit[report]"')

import evalkit  # noqa: E402
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


def test_params_must_be_finite_and_readable(tmp_path):
    for value in ("1e999", "-1e999", "[1, 2e400]", "{'a': 1e999}", "1e999j"):
        with pytest.raises(ValueError, match=r"--param X=.*: a number that is not finite"):
            report.parse_params([f"X={value}"])
    with pytest.raises(ValueError, match=r"--param X: the value \(100,001 characters\) nests too deeply"):
        report.parse_params(["X=" + "-" * 100_000 + "1"])
    assert report.parse_params(["X='1e999'", "Y=1e300", "Z=nan"]) == {"X": "1e999", "Y": 1e300, "Z": "nan"}
    nb = notebook(tmp_path / "p.ipynb", "print(X)")
    for value in ("1e999", "-" * 100_000 + "1"):
        result = run_cli("report", "--out", str(tmp_path / "o"), "--notebooks", str(nb), "--param", f"X={value}")
        assert result.returncode == 2 and "Traceback" not in result.stderr and "NameError" not in result.stderr
        assert len(result.stderr.strip().splitlines()) == 1 and result.stderr.startswith("evalkit report: --param X")
    assert not (tmp_path / "o").exists()  # refused before anything ran


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
    assert "bad.ipynb failed in cell In [4]: RuntimeError: <b>boom</b>" in captured.err
    assert "[2/2] bad.ipynb ... FAILED in cell In [4]" in captured.out
    index = (tmp_path / "out" / "index.html").read_text()
    assert "&lt;b&gt;boom&lt;/b&gt;" in index and "<b>boom</b>" not in index
    assert (tmp_path / "out" / "bad.html").exists(), "the partial notebook is written too, to debug it"
    # The number printed is the one the page shows beside the failing cell.
    page = (tmp_path / "out" / "bad.html").read_text()
    prompts = re.findall(r"In\s\[(\d+)\]", page[:page.index('<span class="k">raise')])
    assert prompts[-1] == "4"


def test_unknown_parameter_is_refused(tmp_path, capsys):
    nb = notebook(tmp_path / "a.ipynb", "pass")
    assert cli.main(["report", "--out", str(tmp_path / "o"), "--notebooks", str(nb), "--param", "TYPO=1"]) == 2
    assert "no notebook declares parameter(s) ['TYPO']" in capsys.readouterr().err
    assert cli.main(["report", "--notebooks", str(tmp_path / "missing.ipynb")]) == 2


def test_console_script_is_installed(tmp_path):
    result = subprocess.run([sys.executable, "-m", "evalkit.cli", "report", "--help"], capture_output=True, text=True)
    assert result.returncode == 0 and "--param NAME=VALUE" in result.stdout


def test_widgets_appear_as_static_snapshots(tmp_path):
    pytest.importorskip("ipywidgets", reason='needs the \'widgets\' extra: pip install "llm-evalkit[widgets]"')
    nb = notebook(tmp_path / "w.ipynb", "import pandas as pd\nfrom evalkit.widgets import Labeller\n"
                  "Labeller(pd.DataFrame({'case_id': ['a'], 'input': ['q'], 'output': ['<i>o</i>']}), 'l.jsonl')")
    result = report.run_notebook(nb, tmp_path)
    assert result.ok
    page = result.html.read_text()
    assert "0 / 1 labelled" in page and "&lt;i&gt;o&lt;/i&gt;" in page
    assert not (tmp_path / "l.jsonl").exists()


def run_cli(*args, cwd=None, prelude=""):
    code = f"import sys\n{prelude}\nfrom evalkit.cli import main\nsys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd)


def test_folder_argument_runs_its_notebooks_and_index_lists_every_page(tmp_path, capsys):
    folder = tmp_path / "nbs"
    folder.mkdir()
    notebook(folder / "a.ipynb", "print('a')")
    notebook(folder / "b.ipynb", "print('b')")
    out = tmp_path / "out"
    assert cli.main(["report", "--out", str(out), "--notebooks", str(folder)]) == 0
    assert "[2/2] b.ipynb ... ok" in capsys.readouterr().out
    # A later run of one notebook keeps the other page in the index, marked as from an earlier run.
    assert cli.main(["report", "--out", str(out), "--notebooks", str(folder / "b.ipynb")]) == 0
    index = (out / "index.html").read_text()
    assert "href='a.html'" in index and "href='b.html'" in index
    row_a = re.search(r"<tr><td><a href='a.html'>.*?</tr>", index).group(0)
    assert "not run this time" in row_a and "<td>t</td>" in row_a
    assert "not run this time" not in re.search(r"<tr><td><a href='b.html'>.*?</tr>", index).group(0)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert cli.main(["report", "--out", str(out), "--notebooks", str(empty)]) == 2
    assert "holds no .ipynb file" in capsys.readouterr().err


def test_usage_errors_version_and_missing_extra(tmp_path):
    typo = run_cli("report", "--outt", "x")
    assert typo.returncode == 2
    assert "usage: evalkit report" in typo.stderr and "unrecognized arguments: --outt x" in typo.stderr
    version = run_cli("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"evalkit {evalkit.__version__}"
    # Installed without the 'report' extra: one line that names it, no traceback.
    missing = run_cli("report", "--out", str(tmp_path / "o"), prelude="sys.modules['nbformat'] = None")
    assert missing.returncode == 2
    assert missing.stderr.strip().splitlines() == [
        "evalkit report: needs the 'report' extra (missing nbformat): pip install \"llm-evalkit[report]\""]
    assert not (tmp_path / "o").exists()


def test_kernel_noise_stays_out_of_the_progress_lines(tmp_path):
    nb = notebook(tmp_path / "a.ipynb", "import sys\nprint('to the page', file=sys.stderr)")
    result = run_cli("report", "--out", str(tmp_path / "out"), "--notebooks", str(nb))
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("[1/1] a.ipynb ... ok (") and lines[1].startswith("report written to")
    assert len(lines) == 2 and result.stderr == ""
    assert "to the page" in (tmp_path / "out" / "a.html").read_text()


def test_pages_fetch_nothing_and_store_no_widget_state(tmp_path):
    pytest.importorskip("ipywidgets")
    nb = notebook(tmp_path / "w.ipynb", "import ipywidgets\nipywidgets.IntSlider(3)")
    result = report.run_notebook(nb, tmp_path)
    assert result.ok
    page = result.html.read_text()
    assert re.findall(r"<script[^>]*\bsrc=", page) == []
    assert re.findall(r"<link[^>]*\bhref=", page) == []
    assert not re.search(r"https?://(?!www\.w3\.org)", " ".join(re.findall(r"<script.*?</script>", page, re.S)))
    assert "widget-state+json" not in page


def test_figures_reach_the_page_whatever_the_callers_backend(tmp_path, monkeypatch):
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = notebook(tmp_path / "fig.ipynb", "import matplotlib.pyplot as plt\nplt.plot([1, 2], [3, 4]);")
    result = report.run_notebook(nb, tmp_path)
    assert result.ok
    assert len(re.findall(r"<img[^>]*src=\"data:image/png;base64,", result.html.read_text())) == 1


def test_printed_text_wraps_between_words_not_inside_them(tmp_path):
    nb = notebook(tmp_path / "w.ipynb", "import warnings\nwarnings.warn('the segment has too few labels: no interval ' * 8)")
    result = report.run_notebook(nb, tmp_path)
    assert result.ok
    page = result.html.read_text()
    # JupyterLab's rule for output text (two classes) loses to ours (three), wherever each stands in the page
    assert re.search(r"\n\.jp-OutputArea-output pre \{[^}]*word-break: break-all", page)
    assert ".jp-OutputArea .jp-OutputArea-output pre {word-break: normal; overflow-wrap: break-word}" in page
    assert "no interval " in page


def test_float_format():
    fmt = report.float_format(4)
    assert [fmt(v) for v in (0.8, 0.12345, 0.00012, 0.00004, float("nan"))] == ["0.8000", "0.1235", "0.0001", "4e-05", "nan"]
    for bad in (-1, 2.5, True, "3"):
        with pytest.raises(ValueError, match="`decimals` must be a non-negative integer"):
            report.float_format(bad)


def one_line_error(result) -> str:
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


def test_an_out_folder_that_cannot_take_the_pages_is_a_usage_error(tmp_path):
    nb = notebook(tmp_path / "a.ipynb", "print('ran')")
    existing = tmp_path / "taken.html"
    existing.write_text("keep me")
    cases = [(existing, r"--out '.*taken.html' is a file, not a folder"),
             (existing / "sub", r"--out '.*taken.html/sub' cannot be made: '.*taken.html' is a file")]
    if sys.platform.startswith("linux"):  # a folder nobody may write into, not even root
        cases += [(Path("/proc/self"), r"--out '/proc/self' is not writable: "),
                  (Path("/proc/self/report"), r"--out '/proc/self/report' is not writable \(the folder would be made "
                                              r"in '/proc/self'\): ")]
    if os.geteuid() != 0:  # permissions bind everyone but root
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        cases += [(locked, r"--out '.*locked' is not writable: Permission denied"),
                  (locked / "new", r"--out '.*locked/new' is not writable \(the folder would be made in .*\): "
                                   "Permission denied")]
    for out, message in cases:
        result = run_cli("report", "--out", str(out), "--notebooks", str(nb))
        assert result.returncode == 2, (out, result.stderr)
        assert re.fullmatch("evalkit report: " + message + ".*", one_line_error(result)), result.stderr
        assert result.stdout == ""  # refused before any notebook ran
    assert existing.read_text() == "keep me"


SLOW = "import os, pathlib, time\npathlib.Path('kernel.pid').write_text(str(os.getpid()))\ntime.sleep(120)"


def test_ctrl_c_stops_the_kernel_and_exits_130_without_a_traceback(tmp_path):
    nb = notebook(tmp_path / "slow.ipynb", SLOW)
    code = f"import sys\nfrom evalkit.cli import main\nsys.exit(main({['report', '--out', str(tmp_path / 'out'), '--notebooks', str(nb)]!r}))"
    # SIGINT as a terminal sends it (the handler restored: a shell may start tests with SIGINT ignored)
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    pid_file = tmp_path / "kernel.pid"
    deadline = time.monotonic() + 120
    while not pid_file.exists() and child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pid_file.exists(), child.communicate()
    time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 130, err
    assert err.strip().splitlines() == [f"evalkit report: interrupted; the pages written so far are in {str(tmp_path / 'out')!r}"]
    assert out.startswith("[1/1] slow.ipynb ... ")
    kernel = int(pid_file.read_text())
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(kernel, 0)
        except ProcessLookupError:
            break
        time.sleep(0.05)
    else:
        pytest.fail(f"the kernel (pid {kernel}) still runs after the interrupt")


def test_exit_codes_ok_failed_cell_and_usage(tmp_path):
    good = notebook(tmp_path / "good.ipynb", "print('fine')")
    bad = notebook(tmp_path / "bad.ipynb", "1 / 0")
    assert run_cli("report", "--out", str(tmp_path / "o1"), "--notebooks", str(good)).returncode == 0
    failed = run_cli("report", "--out", str(tmp_path / "o2"), "--notebooks", str(bad))
    assert failed.returncode == 1 and "bad.ipynb failed in cell In [2]: ZeroDivisionError" in one_line_error(failed)
    for usage in (["report", "--timeout", "soon"], ["nothing"], ["report", "--param", "X"]):
        result = run_cli(*usage)
        assert result.returncode == 2 and "Traceback" not in result.stderr, usage


def test_the_command_answers_before_importing_the_numeric_stack():
    code = ("import sys\nfrom evalkit.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m for m in ('numpy', 'pandas', 'scipy', 'nbclient', 'evalkit.models') if m in sys.modules),"
            " file=sys.stderr)")
    for args in (["--version"], ["report", "--help"], ["report", "--outt", "x"]):
        result = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
        assert result.stderr.strip().splitlines()[-1] == "[]", (args, result.stderr)
    modules = ("import sys, evalkit\nfrom evalkit import EvalkitWarning, models, judge\n"
               "print('numpy' in sys.modules, 'scipy.stats' in sys.modules, 'matplotlib' in sys.modules)")
    assert subprocess.run([sys.executable, "-c", "import sys, evalkit\nprint('numpy' in sys.modules)"],
                          capture_output=True, text=True, check=True).stdout.split() == ["False"]
    assert subprocess.run([sys.executable, "-c", modules], capture_output=True, text=True,
                          check=True).stdout.split() == ["True", "False", "False"]


def test_index_marks_a_page_whose_earlier_run_failed(tmp_path, capsys):
    folder = tmp_path / "nbs"
    folder.mkdir()
    notebook(folder / "a.ipynb", "raise ValueError('<broken>')")
    notebook(folder / "b.ipynb", "print('b')")
    out = tmp_path / "out"
    assert cli.main(["report", "--out", str(out), "--notebooks", str(folder)]) == 1
    assert cli.main(["report", "--out", str(out), "--notebooks", str(folder / "b.ipynb")]) == 0
    capsys.readouterr()
    index = (out / "index.html").read_text()
    row_a = re.search(r"<tr><td><a href='a.html'>.*?</tr>", index).group(0)
    assert "FAILED in cell In [2]: ValueError: &lt;broken&gt; (in an earlier run: not run this time; page written" in row_a
    assert "<broken>" not in index
    row_b = re.search(r"<tr><td><a href='b.html'>.*?</tr>", index).group(0)
    assert "<td>ok</td>" in row_b
    notebook(folder / "a.ipynb", "print('fixed')")  # fixed and run alone: b is now the earlier page, and it was ok
    assert cli.main(["report", "--out", str(out), "--notebooks", str(folder / "a.ipynb")]) == 0
    index = (out / "index.html").read_text()
    assert "FAILED" not in index and "not run this time (page written" in re.search(
        r"<tr><td><a href='b.html'>.*?</tr>", index).group(0)
