"""The ``evalkit`` command line: ``evalkit report [--out DIR] [--notebooks NB ...] [--param NAME=VALUE ...]``.

The arguments are parsed, and the output folder checked, before anything heavy is imported: ``evalkit --version``,
``--help`` and every usage error answer at once. Exit status: 0 when every notebook ran, 1 when a cell failed
(the notebook and the cell are named), 2 for a usage error (one line on stderr naming the option and the
reason), 130 when interrupted (Ctrl-C: the kernel is stopped, no traceback).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
from pathlib import Path

from evalkit._optional import install_hint
from evalkit._version import __version__

# What `evalkit report` needs beyond the core install: the modules of the 'report' extra.
REPORT_MODULES = ("nbformat", "nbclient", "nbconvert", "ipykernel")


def _parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    parser = argparse.ArgumentParser(prog="evalkit", description="Evaluate LLM systems with numbers that can be defended.")
    parser.add_argument("--version", action="version", version=f"evalkit {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    report = sub.add_parser("report", help="execute the notebooks headless and write HTML reports",
                            description="Execute notebooks (default: notebooks/*.ipynb, on the bundled demo data) and "
                                        "write one HTML file per notebook plus index.html, which lists every page in "
                                        "the output folder. Needs the 'report' extra.")
    report.add_argument("--out", default="report", help="output folder (default: report/)")
    report.add_argument("--notebooks", nargs="+", metavar="NB",
                        help="notebooks or folders of notebooks to run (default: notebooks/*.ipynb)")
    report.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="set a parameter in the notebooks' parameters cell (repeatable); a relative path is "
                             "read from the notebook's folder")
    report.add_argument("--timeout", type=int, default=1200, help="seconds allowed per cell (default: 1200)")
    return parser, report


def _missing_report_modules() -> list[str]:
    missing = []
    for name in REPORT_MODULES:
        try:
            if importlib.util.find_spec(name) is None:
                missing.append(name)
        except (ImportError, ValueError):  # a module set to None in sys.modules, or without a spec
            missing.append(name)
    return missing


def _out_problem(out: str) -> str | None:
    """Why the pages cannot be written into the folder ``out`` (None when they can); nothing is created."""
    path = Path(out)
    if path.exists() and not path.is_dir():
        return f"--out {out!r} is a file, not a folder"
    existing = path
    while not existing.exists():  # the folder is made later, inside its nearest existing parent
        existing = existing.parent
    if not existing.is_dir():
        return f"--out {out!r} cannot be made: {str(existing)!r} is a file"
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as exc:
        where = "" if existing == path else f" (the folder would be made in {str(existing)!r})"
        return f"--out {out!r} is not writable{where}: {exc.strerror or exc}"
    return None


def main(argv=None) -> int:
    """Entry point of the ``evalkit`` console script; returns the exit status."""
    parser, report_parser = _parsers()
    args, extra = parser.parse_known_args(argv)
    if extra:  # an option the subcommand does not know: its own usage, not the top-level one
        report_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    from evalkit.report import build_report, parse_params  # light: the notebook runner is imported when it runs

    try:
        params = parse_params(args.param)
    except ValueError as exc:  # a usage error, answered before anything runs
        print(f"evalkit report: {exc}", file=sys.stderr)
        return 2
    missing = _missing_report_modules()
    if missing:
        print(f"evalkit report: needs the 'report' extra (missing {', '.join(missing)}): "
              f"{install_hint('report')}", file=sys.stderr)
        return 2
    problem = _out_problem(args.out)
    if problem:
        print(f"evalkit report: {problem}", file=sys.stderr)
        return 2

    try:
        results = build_report(args.notebooks, args.out, params=params, timeout=args.timeout)
    except (ValueError, FileNotFoundError) as exc:
        print(f"evalkit report: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(flush=True)  # ends the progress line
        print(f"evalkit report: interrupted; the pages written so far are in {os.fspath(args.out)!r}", file=sys.stderr)
        return 130
    except OSError as exc:  # e.g. the disk filled up while writing a page
        print(f"evalkit report: could not write the report into --out {args.out!r}: {exc}", file=sys.stderr)
        return 1
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"evalkit report: {r.notebook.name} failed in cell In [{r.cell}]: {r.error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
