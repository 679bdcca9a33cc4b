"""The ``evalkit`` command line: ``evalkit report [--out DIR] [--notebooks NB ...] [--param NAME=VALUE ...]``."""

from __future__ import annotations

import argparse
import importlib.util
import sys

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


def main(argv=None) -> int:
    """Entry point of the ``evalkit`` console script; returns the exit status."""
    parser, report_parser = _parsers()
    args, extra = parser.parse_known_args(argv)
    if extra:  # an option the subcommand does not know: its own usage, not the top-level one
        report_parser.error(f"unrecognized arguments: {' '.join(extra)}")
    missing = _missing_report_modules()
    if missing:
        print(f"evalkit report: needs the 'report' extra (missing {', '.join(missing)}): "
              "pip install 'evalkit[report]'", file=sys.stderr)
        return 2

    from evalkit.report import build_report, parse_params

    try:
        results = build_report(args.notebooks, args.out, params=parse_params(args.param), timeout=args.timeout)
    except (ValueError, FileNotFoundError) as exc:
        print(f"evalkit report: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"evalkit report: {r.notebook.name} failed in cell In [{r.cell}]: {r.error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
