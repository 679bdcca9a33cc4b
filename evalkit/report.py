"""Execute the notebooks headless and write them as HTML reports, with an index page.

Parameters reach a notebook through its ``parameters``-tagged cell: a new cell that assigns the given
values is inserted right after it (the papermill convention), and only in notebooks whose parameters cell
assigns that name. Values are read as Python literals when they parse as one (``ast.literal_eval``, never
``eval``), else as strings. A notebook runs in its own folder, so a relative path in a value is read from
there; the notebooks check the data paths they are given and fail naming the parameter and the missing file.

Pages are self-contained: no script is fetched from a CDN (require.js, MathJax, Mermaid and the widget
manager are left out, and no widget state is stored), so a page opened from a file with no network looks
the same and requests nothing. Widgets show the static snapshot they carry. Each page records its run's status
in a ``<meta name="evalkit-status">`` tag; the index lists every page in the output folder: the notebooks of
this run with their status, and pages left by earlier runs marked so, a page whose run failed as failed.

A notebook runs in a thread of its own, so that Ctrl-C reaches the caller (nbclient would otherwise take the
signal): the kernel is then killed at once, with whatever it started, and ``KeyboardInterrupt`` propagates.
"""

from __future__ import annotations

import ast
import html
import os
import re
import signal
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from evalkit import _display
from evalkit._optional import require
from evalkit._version import __version__

__all__ = ["NotebookResult", "find_notebooks", "parse_params", "float_format", "formatted", "use_formatted", "run_notebook",
           "build_report"]


@dataclass(frozen=True)
class NotebookResult:
    """Outcome of one notebook: where its HTML went, how long it ran and, on failure, which cell failed."""

    notebook: Path
    html: Path
    seconds: float
    error: str | None = None
    cell: int | None = None  # execution count of the failing cell: the page shows it as In [cell]
    title: str = ""
    executed: Path | None = None  # the executed notebook, when run_notebook(save_notebook=True) wrote it

    @property
    def ok(self) -> bool:
        return self.error is None

    def _rows(self) -> tuple[str, list[dict]]:
        status = "ok" if self.ok else f"FAILED in cell In [{self.cell}]"
        row = {"notebook": self.notebook.name, "status": status, "seconds": f"{self.seconds:.1f}",
               "page": str(self.html), "error": self.error or ""}
        return f"NotebookResult: {self.title or self.notebook.name}", [row]

    def __repr__(self) -> str:
        return _display.result_text(*self._rows(), columns=("notebook", "status", "seconds", "page", "error"))

    def _repr_html_(self) -> str:
        return _display.result_html(*self._rows(), columns=("notebook", "status", "seconds", "page", "error"))


def find_notebooks(folder=None) -> list[Path]:
    """The notebooks in ``folder``; by default ``./notebooks/*.ipynb`` in a source tree, else the packaged copies.

    Examples
    --------
    >>> from evalkit.report import find_notebooks
    >>> [p.name for p in find_notebooks()][:1]
    ['00_labelling.ipynb']
    """
    candidates = [Path(folder)] if folder else [Path.cwd() / "notebooks", Path(__file__).resolve().parent / "_notebooks",
                                              Path(__file__).resolve().parent.parent / "notebooks"]
    for candidate in candidates:
        found = sorted(candidate.glob("*.ipynb"))
        if found:
            return found
    raise FileNotFoundError(f"no notebooks found in {', '.join(map(str, candidates))}; pass --notebooks.")


def parse_params(pairs) -> dict:
    """``["NAME=VALUE", ...]`` to a dict; values are Python literals when they parse as one, else strings.

    A number must be finite (``1e999`` reads as an infinity, which the notebook could not be given), and a value
    nested too deeply to read (thousands of brackets or signs) is refused: both with a ValueError naming the
    parameter. Quote a value to pass it as text.

    Examples
    --------
    >>> from evalkit.report import parse_params
    >>> parse_params(["K=5", "DATA=/tmp/x.csv", "FLAG=True"])
    {'K': 5, 'DATA': '/tmp/x.csv', 'FLAG': True}
    """
    params = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name.isidentifier():
            raise ValueError(f"--param must look like NAME=VALUE with a Python name; got {pair!r}.")
        try:
            params[name] = ast.literal_eval(value)
        except (ValueError, SyntaxError, TypeError):
            params[name] = value
        except (RecursionError, MemoryError):
            raise ValueError(f"--param {name}: the value ({len(value):,} characters) nests too deeply to read as a "
                             "Python literal; quote it to pass it as text.") from None
        if not _finite(params[name]):
            raise ValueError(f"--param {name}={value[:40]}: a number that is not finite; give a finite number, or "
                             "quote the value to pass it as text.")
    return params


def _finite(value) -> bool:
    """Whether every number in a literal (inside lists, tuples, sets and dicts too) is finite."""
    import math

    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, complex):
        return math.isfinite(value.real) and math.isfinite(value.imag)
    if isinstance(value, dict):
        return all(_finite(k) and _finite(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return all(_finite(v) for v in value)
    return True


def float_format(decimals: int = 3):
    """The report's one number format for tables, as a pandas ``display.float_format``.

    Every float shows ``decimals`` places, so an estimate and its confidence interval line up at the same
    precision (0.800 beside 0.490, not 0.8 beside 0.490162); a value too small for that many places (a
    p-value) shows two significant digits. Integers are not floats and print as integers.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.report import float_format
    >>> fmt = float_format(3)
    >>> [fmt(v) for v in (0.8, 0.490162, 4.77e-74, 0.0, -0.0196)]
    ['0.800', '0.490', '4.8e-74', '0.000', '-0.020']
    >>> pd.set_option("display.float_format", float_format(3))  # in a notebook: every table from here on
    >>> pd.reset_option("display.float_format")
    """
    if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
        raise ValueError(f"`decimals` must be a non-negative integer; got {decimals!r}.")
    smallest = 0.5 * 10.0 ** -decimals

    def fmt(value) -> str:
        if value != 0 and abs(value) < smallest:
            return f"{value:.2g}"
        return f"{value:.{decimals}f}"

    return fmt


def formatted(table, *, decimals: int = 3):
    """A copy of ``table`` for display, each float column rounded as the quantity it holds; stored values untouched.

    Ratings on the Elo scale (``rating``, ``elo``, the interval bounds of a table with a ``rating`` column, and
    every number but a p-value in a table with ``attrs["scale"] == "elo"``) show no decimals; temperatures show
    as given (0.1, not 0.100); p-values (``p_val``, ``p_adjusted``, ``McNemar p``...) show three decimals from
    1e-3 up, scientific form below and ``< 1e-16`` where they underflow (0, or below the float epsilon); every
    other float shows ``decimals`` places (two significant digits when that would read as 0). Columns that are
    not floats are kept as they are.

    Parameters
    ----------
    table : DataFrame
    decimals : int, default 3

    Returns
    -------
    DataFrame
        The same index and columns, float columns as text.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.report import formatted
    >>> table = pd.DataFrame({"system": ["a", "b"], "rating": [1237.435, 962.1], "ci_low": [1190.2, 910.0],
    ...                       "p_val": [0.0, 0.0312], "temperature": [0.1, 1.25], "share": [0.8, 0.49016]})
    >>> formatted(table)
      system rating ci_low    p_val temperature  share
    0      a   1237   1190  < 1e-16         0.1  0.800
    1      b    962    910    0.031        1.25  0.490
    """
    import pandas as pd

    if not isinstance(table, pd.DataFrame):
        raise TypeError(f"`table` must be a pandas DataFrame; got {type(table).__name__}.")
    if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
        raise ValueError(f"`decimals` must be a non-negative integer; got {decimals!r}.")
    return _display.format_frame(table, decimals)


def use_formatted(*, decimals: int = 3) -> None:
    """Show every DataFrame of the running IPython session through :func:`formatted`, its text never cut, and say
    in words what every figure shows.

    A notebook calls it once, in its setup cell: each table it displays from then on rounds each column as its
    quantity, and a table with a note column (``note``, ``ci_note``, a caveat, a warning, or an ``interval``
    column, which can carry one) is shown with no column cut (``display.max_colwidth`` does not apply to it).
    The tables themselves are not changed. Each matplotlib figure's text form (what a reader gets without the
    image, kept beside the image in the notebook) lists its titles, axis labels, legends and the labels of what
    was drawn. Outside IPython it does nothing.

    Parameters
    ----------
    decimals : int, default 3
        As in :func:`formatted`.

    Examples
    --------
    >>> from evalkit.report import use_formatted
    >>> use_formatted()  # outside IPython: nothing to register
    """
    import pandas as pd

    if isinstance(decimals, bool) or not isinstance(decimals, int) or decimals < 0:
        raise ValueError(f"`decimals` must be a non-negative integer; got {decimals!r}.")
    try:
        from IPython import get_ipython
    except ImportError:  # no IPython: nothing displays tables
        return
    shell = get_ipython()
    if shell is None:
        return

    def shown(table, render):
        width = None if _display.has_notes(table) else pd.get_option("display.max_colwidth")
        with pd.option_context("display.max_colwidth", width):  # a note or caveat is never cut
            return render(_display.format_frame(table, decimals))

    formatters = shell.display_formatter.formatters
    formatters["text/html"].for_type(pd.DataFrame, lambda t: shown(t, lambda f: f._repr_html_()))
    formatters["text/plain"].for_type(pd.DataFrame, lambda t, printer, cycle: printer.text(shown(t, repr)))
    try:
        from matplotlib import pyplot
    except ImportError:  # no matplotlib: no figures to describe
        return
    # Load the backend now: the inline backend resets every formatter of figures when it loads (at the first figure).
    pyplot.switch_backend(pyplot.get_backend())
    formatters["text/plain"].for_type_by_name("matplotlib.figure", "Figure", lambda fig, printer, cycle: printer.text(
        _display.describe_figure(fig)))


def _parameter_names(cell_source: str) -> set[str]:
    tree = ast.parse(cell_source)
    return {t.id for node in tree.body if isinstance(node, ast.Assign) for t in node.targets if isinstance(t, ast.Name)}


def _inject(nb, params: dict) -> set[str]:
    """Insert the parameters this notebook declares after its parameters cell; return the names used."""
    nbformat = require("nbformat", extra="report", purpose="evalkit.report")

    index = next((i for i, c in enumerate(nb.cells) if "parameters" in c.get("metadata", {}).get("tags", [])), None)
    if index is None or not params:
        return set()
    used = {k: v for k, v in params.items() if k in _parameter_names(nb.cells[index].source)}
    if used:
        source = "# Parameters injected by evalkit report\n" + "\n".join(f"{k} = {v!r}" for k, v in used.items())
        cell = nbformat.v4.new_code_cell(source)
        cell.metadata["tags"] = ["injected-parameters"]
        nb.cells.insert(index + 1, cell)
    return set(used)


def _static_widgets(nb) -> None:
    """Drop live-widget views that carry a static snapshot, and any widget state: a static page has no kernel."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "application/vnd.jupyter.widget-view+json" in data and "text/html" in data:
                del data["application/vnd.jupyter.widget-view+json"]


# JupyterLab's page template without the scripts it would fetch from CDNs (require.js, MathJax, Mermaid,
# the widget manager): evalkit's pages need none of them, and a page must look the same offline. JupyterLab's
# `word-break: break-all` on output text would cut a warning mid-word ("no interv al"): a more specific rule (it
# comes first in the page) breaks lines between words.
_TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{% block jupyter_widgets %}{% endblock jupyter_widgets %}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{% block extra_css %}<style>.jp-OutputArea-output {overflow-x: auto}
.jp-OutputArea .jp-OutputArea-output pre {word-break: normal; overflow-wrap: break-word}</style>{% endblock extra_css %}
"""


def _exporter():
    jinja2 = require("jinja2", extra="report", purpose="evalkit.report")
    nbconvert = require("nbconvert", extra="report", purpose="evalkit.report")

    return nbconvert.HTMLExporter(template_name="lab", extra_loaders=[jinja2.DictLoader({"evalkit.html.j2": _TEMPLATE})],
                        template_file="evalkit.html.j2")


def _kernel_manager(kernel_name: str, stderr_path: Path):
    """A kernel over IPC sockets where the platform has them (TCP without encryption is what the kernel
    warns about); its own stderr goes to a file, so kernel noise stays out of the progress lines."""
    manager = require("jupyter_client.manager", extra="report", purpose="evalkit.report")

    km = manager.KernelManager(kernel_name=kernel_name)
    if os.name == "posix":
        km.transport = "ipc"
        km.ip = str(stderr_path.with_suffix(".ipc"))
    return km


def run_notebook(path, out_dir, *, params=None, timeout: int = 1200, kernel_name: str = "python3",
                 save_notebook: bool = False) -> NotebookResult:
    """Execute one notebook in its own folder and write ``<name>.html`` into ``out_dir`` (also on failure).

    ``save_notebook=True`` also writes the executed notebook, with its outputs (widgets as their static snapshots,
    no widget state), as ``<name>.ipynb`` into ``out_dir`` (``NotebookResult.executed``): a documentation build can
    render it without running it again.

    Examples
    --------
    >>> import pathlib, tempfile, nbformat
    >>> from evalkit.report import run_notebook
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 / 0")])
    >>> nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    >>> nbformat.write(nb, folder / "broken.ipynb")
    >>> result = run_notebook(folder / "broken.ipynb", folder)
    >>> result.ok, result.cell, result.error
    (False, 1, 'ZeroDivisionError: division by zero')
    >>> "cdn" in result.html.read_text().lower()
    False
    """
    nbformat = require("nbformat", extra="report", purpose="evalkit.report")
    nbclient = require("nbclient", extra="report", purpose="evalkit.report")
    exceptions = require("nbclient.exceptions", extra="report", purpose="evalkit.report")
    exporter = _exporter()  # before the notebook runs: a missing nbconvert fails now, not after every cell

    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    _inject(nb, params or {})
    # Widget state is not stored: a static report cannot run widget JavaScript offline, so evalkit's widgets
    # show their static HTML snapshot there instead (see _static_widgets).
    start = time.perf_counter()
    error, cell = None, None
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "kernel.log"
        client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name=kernel_name, store_widget_state=False,
                                         km=_kernel_manager(kernel_name, log), resources={"metadata": {"path": str(path.parent)}})
        try:
            # Figures go to the page whatever backend the calling environment chose (MPLBACKEND=Agg in a
            # test run or on a server would otherwise draw them nowhere).
            env = {**os.environ, "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
            with log.open("w") as stderr:
                _execute(client, stderr=stderr, env=env)
        except exceptions.CellExecutionError as exc:
            failing = next((c for c in nb.cells if c.cell_type == "code"
                            and any(o.get("output_type") == "error" for o in c.get("outputs", []))), None)
            cell = failing.get("execution_count") if failing is not None else None  # the page's In [cell]
            error = f"{exc.ename}: {exc.evalue}" if getattr(exc, "ename", None) else str(exc).strip().splitlines()[-1]
        except exceptions.DeadKernelError as exc:
            tail = log.read_text(errors="replace").strip().splitlines()[-3:]
            error = f"the kernel died ({exc}){': ' + ' | '.join(tail) if tail else ''}"
    seconds = time.perf_counter() - start
    _static_widgets(nb)
    out = Path(out_dir) / f"{path.stem}.html"
    body, _ = exporter.from_notebook_node(nb, resources={"metadata": {"name": path.stem}})
    status = "ok" if error is None else f"FAILED in cell In [{cell}]: {error}"
    body = body.replace("<head>", f'<head>\n<meta name="evalkit-status" content="{html.escape(status)}">', 1)
    out.write_text(body, encoding="utf-8")
    executed = None
    if save_notebook:
        executed = Path(out_dir) / f"{path.stem}.ipynb"
        nbformat.write(nb, executed)
    title = next((re.sub(r"\\(.)", r"\1", line.lstrip("#").strip()) for c in nb.cells if c.cell_type == "markdown"
                  for line in c.source.splitlines() if line.startswith("#")), path.stem)  # markdown escapes removed
    return NotebookResult(notebook=path, html=out, seconds=seconds, error=error, cell=cell, title=title, executed=executed)


def _execute(client, **kwargs) -> None:
    """``client.execute(**kwargs)`` in a thread of its own; Ctrl-C here kills the kernel and is raised again."""
    outcome: dict = {}  # written by the worker, read after it has ended

    def work():
        try:
            client.execute(**kwargs)
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            outcome["error"] = exc

    worker = threading.Thread(target=work, name="evalkit-notebook", daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.1)
    except KeyboardInterrupt:
        pid = getattr(getattr(client.km, "provisioner", None), "pid", None)
        if pid is not None:  # the kernel leads a process group of its own: it and what it started
            try:
                os.killpg(pid, signal.SIGKILL) if hasattr(os, "killpg") else os.kill(pid, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass  # already gone
        worker.join(10)
        raise
    if "error" in outcome:
        raise outcome["error"]


def _page_title(page_text: str) -> str:
    match = re.search(r"<h1[^>]*>(.*?)</h1>", page_text, re.S)
    return html.unescape(re.sub(r"<[^>]+>", "", match.group(1))).replace("\u00b6", "").strip() if match else ""


def _page_status(page_text: str) -> str | None:
    """The status a page recorded when it was written ("ok" or "FAILED in cell ..."), None for a page without one."""
    match = re.search(r'<meta name="evalkit-status" content="([^"]*)">', page_text[:4000])
    return html.unescape(match.group(1)) if match else None


def _index(results: list[NotebookResult], out_dir: Path, params: dict) -> Path:
    rows = "".join(
        f"<tr><td><a href='{html.escape(r.html.name)}'>{html.escape(r.notebook.stem)}</a></td><td>{html.escape(r.title)}</td>"
        f"<td>{'ok' if r.ok else 'FAILED in cell In [' + html.escape(str(r.cell)) + ']: ' + html.escape(r.error)}</td>"
        f"<td>{r.seconds:.1f} s</td></tr>"
        for r in results)
    # Pages in the folder that this run did not write (an earlier run of other notebooks): listed, marked.
    written = {r.html.name for r in results}
    earlier = sorted(p for p in out_dir.glob("*.html") if p.name != "index.html" and p.name not in written)
    for p in earlier:
        text = p.read_text(encoding="utf-8", errors="replace")
        status = _page_status(text)
        when = f"page written {time.strftime('%Y-%m-%d %H:%M', time.localtime(p.stat().st_mtime))}"
        shown = (f"{status} (in an earlier run: not run this time; {when})" if status and status != "ok"
                 else f"not run this time ({when})")
        rows += (f"<tr><td><a href='{html.escape(p.name)}'>{html.escape(p.stem)}</a></td>"
                 f"<td>{html.escape(_page_title(text))}</td><td>{html.escape(shown)}</td><td></td></tr>")
    shown = "".join(f"<li><code>{html.escape(k)} = {html.escape(repr(v))}</code></li>" for k, v in params.items())
    style = ("body{font-family:system-ui,sans-serif;margin:2em;max-width:60em}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:.4em .8em;text-align:left}th{background:#f3f3f3}")
    page = (f"<!doctype html><html><head><meta charset='utf-8'><title>evalkit report</title><style>{style}</style>"
            f"</head><body><h1>evalkit report</h1><p>evalkit {html.escape(__version__)}, generated "
            f"{html.escape(time.strftime('%Y-%m-%d %H:%M:%S %Z'))}.</p>"
            f"<table><tr><th>notebook</th><th>title</th><th>status</th><th>time</th></tr>{rows}</table>"
            + (f"<p>parameters:</p><ul>{shown}</ul>" if shown else "") + "</body></html>")
    index = out_dir / "index.html"
    index.write_text(page, encoding="utf-8")
    return index


def build_report(notebooks=None, out_dir="report", *, params=None, timeout: int = 1200, echo=print) -> list[NotebookResult]:
    """Run every notebook, write its HTML and an ``index.html`` into ``out_dir``; report progress with ``echo``.

    ``notebooks`` lists notebook files or folders (a folder stands for the ``*.ipynb`` files in it); the
    default is :func:`find_notebooks`. The index lists every page in ``out_dir``, including pages an
    earlier run left there (marked "not run this time", and those whose run failed marked "FAILED").

    Raises
    ------
    ValueError
        A parameter that no notebook's parameters cell declares (probably a typo).

    Examples
    --------
    >>> import pathlib, tempfile, nbformat
    >>> from evalkit.report import build_report
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> params = nbformat.v4.new_code_cell("N = 1")
    >>> params.metadata["tags"] = ["parameters"]
    >>> nb = nbformat.v4.new_notebook(cells=[params, nbformat.v4.new_code_cell("print(N * 2)")])
    >>> nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    >>> nbformat.write(nb, folder / "double.ipynb")
    >>> results = build_report([folder / "double.ipynb"], folder / "out", params={"N": 21}, echo=lambda *a, **k: None)
    >>> results[0].ok, "42" in results[0].html.read_text()
    (True, True)
    """
    nbformat = require("nbformat", extra="report", purpose="evalkit.report")
    require("nbclient", extra="report", purpose="evalkit.report")  # what run_notebook needs, checked before any notebook runs
    require("nbconvert", extra="report", purpose="evalkit.report")

    paths = []
    for given in notebooks or []:
        given = Path(given)
        if given.is_dir():
            found = sorted(given.glob("*.ipynb"))
            if not found:
                raise FileNotFoundError(f"the folder {str(given)!r} given in `notebooks` holds no .ipynb file.")
            paths.extend(found)
        elif given.is_file():
            paths.append(given)
        else:
            raise FileNotFoundError(f"notebook {str(given)!r} not found (give notebook files or folders).")
    paths = paths or find_notebooks()
    params = dict(params or {})
    declared = set()
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        cell = next((c for c in nb.cells if "parameters" in c.get("metadata", {}).get("tags", [])), None)
        if cell is not None:
            declared |= _parameter_names(cell.source)
    unknown = sorted(set(params) - declared)
    if unknown:
        raise ValueError(f"no notebook declares parameter(s) {unknown}; declared: {sorted(declared)}.")
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    results = []
    for i, p in enumerate(paths, start=1):
        echo(f"[{i}/{len(paths)}] {p.name} ...", end=" ", flush=True)
        result = run_notebook(p, out_dir, params=params, timeout=timeout)
        echo(f"ok ({result.seconds:.1f} s)" if result.ok else f"FAILED in cell In [{result.cell}] ({result.seconds:.1f} s)")
        results.append(result)
    index = _index(results, out_dir, params)
    echo(f"report written to {index}")
    return results
