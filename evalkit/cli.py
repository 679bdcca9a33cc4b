"""The ``evalkit`` command line.

``evalkit report [--out DIR] [--notebooks NB ...] [--param NAME=VALUE ...]`` executes the notebooks and writes HTML
(the 'report' extra). The arguments are parsed, and the output folder checked, before anything heavy is imported:
``evalkit --version``, ``--help`` and every usage error answer at once. Exit status: 0 when every notebook ran, 1 when
a cell failed (the notebook and the cell are named), 2 for a usage error (one line on stderr naming the option and
the reason), 130 when interrupted (Ctrl-C: the kernel is stopped, no traceback).

``evalkit gate BASELINE CANDIDATE [--margin M] [--confidence-level L] [--labels FILE] [--junit FILE] [--summary
FILE]`` compares two judged runs for CI (:mod:`evalkit.gate`; the base install): exit 0 no regression, 1
regression, 2 inconclusive, 3 bad input or usage.
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
    _gate_arguments(sub.add_parser("gate", **_GATE_HELP))
    return parser, report


_GATE_EPILOG = """exit status:
  0  no regression: the whole interval lies above -MARGIN (the candidate is within the margin)
  1  regression: the whole interval lies below -MARGIN (worse than the margin, with the stated confidence)
  2  inconclusive: the interval holds -MARGIN: too few cases to tell (the output says about how many are needed)
  3  bad input or usage: a file missing or unreadable (named), runs judged by different judges, a run whose
     errors and unparseable answers exceed --max-broken, an unknown option

Repeats of a case (evalkit's repeats, a log's epochs) are one case: the gate pairs cases, never repeats. The
interval is two-sided at LEVEL, so an unchanged candidate is called a regression at most 1 - LEVEL of the time
(measured: 0.010-0.030 at 0.95 with a noisy judge, benchmarks/bench_gate.py). Parse failures and errors are
counted apart from FAILs."""

_GATE_HELP = {
    "help": "compare a candidate run with a baseline for CI (exit 0 no regression, 1 regression, 2 inconclusive, 3 bad input)",
    "description": "Is the candidate worse than the baseline by more than a margin? Two judged runs of the same cases "
                   "(evalkit's saved results, or another tool's log: inspect_ai, promptfoo, OpenAI evals, "
                   "lm-evaluation-harness), paired by case, repeats of a case clustered. Prints one verdict with the "
                   "figures behind it.",
    "epilog": _GATE_EPILOG,
    "formatter_class": argparse.RawDescriptionHelpFormatter,
}


def _gate_arguments(gate: argparse.ArgumentParser) -> argparse.ArgumentParser:
    gate.add_argument("baseline", metavar="BASELINE", help="the baseline run (a results file or log)")
    gate.add_argument("candidate", metavar="CANDIDATE", help="the candidate run, judged by the same judge")
    gate.add_argument("--margin", type=float, default=0.05,
                      help="the largest drop in pass rate that is not a regression (default: 0.05)")
    gate.add_argument("--confidence-level", type=float, default=0.95, metavar="LEVEL",
                      help="the two-sided interval's level (default: 0.95)")
    gate.add_argument("--labels", metavar="FILE",
                      help="human labels of both runs' outputs on a random subset of the cases: a CSV or JSONL with "
                           "case_id, baseline, candidate; the gate then judges the humans' pass rate (the judge calibrated on the labels)")
    gate.add_argument("--rubric", help="the rubric (a log's scorer, assertion or metric) to gate on, where a file holds several")
    gate.add_argument("--max-broken", type=float, default=0.05, metavar="SHARE",
                      help="the largest share of a run's rows that may be errors or unparseable (default: 0.05)")
    gate.add_argument("--junit", metavar="FILE", help="write JUnit XML (a regression is a failure)")
    gate.add_argument("--summary", metavar="FILE", help="write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)")
    return gate


class _GateParser(argparse.ArgumentParser):
    """The gate's own parser: a usage error exits 3 (2 means inconclusive here)."""

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(3, f"evalkit gate: {message}\n")


def _read_labels(path: str):
    import pandas as pd

    from evalkit._io import read_json_lines

    file = Path(path)
    if not file.is_file():
        raise FileNotFoundError(f"--labels {path}: no such file.")
    if file.suffix.lower() in (".jsonl", ".ndjson"):
        return pd.DataFrame.from_records([record for _, record in read_json_lines(file)[0]])
    if file.suffix.lower() == ".csv":
        try:
            return pd.read_csv(file, dtype={"case_id": str}, keep_default_na=False, na_values=[""])
        except (ValueError, pd.errors.ParserError) as exc:
            raise ValueError(f"--labels {path}: not a readable CSV ({exc}).") from None
    raise ValueError(f"--labels {path}: use a .csv or .jsonl file.")


def _write(path: str, text: str) -> None:
    Path(path).write_text(text, encoding="utf-8")


def gate_main(argv) -> int:
    """``evalkit gate``: returns the exit status (0 no regression, 1 regression, 2 inconclusive, 3 bad input)."""
    parser = _gate_arguments(_GateParser(prog="evalkit gate", **{k: v for k, v in _GATE_HELP.items() if k != "help"}))
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help (0) or a usage error (3)
        return int(exc.code or 0)
    from evalkit import gate

    try:
        baseline = gate.read_run(args.baseline, rubric=args.rubric)
        candidate = gate.read_run(args.candidate, rubric=args.rubric)
        labels = _read_labels(args.labels) if args.labels else None
        result = gate.decide(baseline, candidate, margin=args.margin, confidence_level=args.confidence_level,
                             labels=labels, max_broken=args.max_broken)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        message = str(exc).strip("'\"") if isinstance(exc, KeyError) else str(exc)
        print(f"evalkit gate: bad input: {message}", file=sys.stderr)
        try:
            if args.junit:
                _write(args.junit, gate.bad_input_junit(message))
            if args.summary:
                _write(args.summary, gate.bad_input_markdown(message))
        except OSError as write_error:
            print(f"evalkit gate: could not write a report: {write_error}", file=sys.stderr)
        return gate.EXIT_CODES["bad input"]
    print(result.message)
    print(result.counts.to_string(index=False))
    try:
        if args.junit:
            _write(args.junit, result.to_junit())
        if args.summary:
            _write(args.summary, result.to_markdown())
    except OSError as exc:
        print(f"evalkit gate: could not write {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return gate.EXIT_CODES["bad input"]
    return result.exit_code


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
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["gate"]:
        return gate_main(argv[1:])
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
