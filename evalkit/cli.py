"""The ``evalkit`` command line: ``evalkit report [--out DIR] [--notebooks NB ...] [--param NAME=VALUE ...]``."""

from __future__ import annotations

import argparse
import sys


def main(argv=None) -> int:
    """Entry point of the ``evalkit`` console script; returns the exit status."""
    parser = argparse.ArgumentParser(prog="evalkit", description="Evaluate LLM systems with numbers that can be defended.")
    sub = parser.add_subparsers(dest="command", required=True)
    report = sub.add_parser("report", help="execute the notebooks headless and write HTML reports",
                            description="Execute notebooks (default: notebooks/*.ipynb, on the bundled demo data) and "
                                        "write one HTML file per notebook plus index.html.")
    report.add_argument("--out", default="report", help="output folder (default: report/)")
    report.add_argument("--notebooks", nargs="+", metavar="NB", help="notebooks to run (default: notebooks/*.ipynb)")
    report.add_argument("--param", action="append", default=[], metavar="NAME=VALUE",
                        help="set a parameter in the notebooks' parameters cell (repeatable)")
    report.add_argument("--timeout", type=int, default=1200, help="seconds allowed per cell (default: 1200)")
    args = parser.parse_args(argv)

    from evalkit.report import build_report, parse_params

    try:
        results = build_report(args.notebooks, args.out, params=parse_params(args.param), timeout=args.timeout)
    except (ValueError, FileNotFoundError) as exc:
        print(f"evalkit report: {exc}", file=sys.stderr)
        return 2
    failed = [r for r in results if not r.ok]
    for r in failed:
        print(f"evalkit report: {r.notebook.name} failed in cell {r.cell}: {r.error}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
