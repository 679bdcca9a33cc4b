"""The coverage table: every registered interval and test, on every design, at n = 20, 50, 100 and 200.

Coverage (intervals) or size (tests) with its Monte Carlo standard error, the share of samples where the
function declined to give a number, the mean width, and the width against the oracle: ``oracle`` is the
central interval (at the entry's level: the 2.5%-97.5% quantiles at 95%) of the estimator's own sampling
distribution over the cell's draws, the narrowest fixed-width interval that would cover at the nominal rate
there, and ``ratio`` is the mean width over it (1: as tight as coverage allows; 2: twice as wide as needed).
Entries without a point estimate, simultaneous sets, selective families and tests have none (blank). The
registry is the package tests/harness/.

    python benchmarks/bench_coverage.py [--reps 1000] [--function infer.mean] [--variant BCa] [--design summeval]
                                        [--defaults] [--sizes 20 50] [--csv coverage.csv]
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import harness  # noqa: E402


def _number(value: float, width: int, digits: int) -> str:
    """A fixed-width number, blank where there is none (NaN)."""
    return " " * width if value != value else f"{value:{width}.{digits}f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=1000, help="samples per cell (default 1000)")
    parser.add_argument("--function", action="append", help="only these public functions (repeatable)")
    parser.add_argument("--variant", action="append", help="only variants containing this text (repeatable)")
    parser.add_argument("--design", action="append", help="only designs whose name contains this text, or is it with a trailing $ (repeatable)")
    parser.add_argument("--defaults", action="store_true", help="only the entries of the functions' defaults")
    parser.add_argument("--sizes", type=int, nargs="+", help="override the sizes")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--csv", type=Path, help="also write the table as CSV")
    args = parser.parse_args(argv)
    entries = [e for e in harness.ENTRIES if (not args.function or e.function in args.function)
               and (not args.variant or any(v in e.variant for v in args.variant)) and (e.default or not args.defaults)]
    if args.design:
        entries = [dataclasses.replace(e, designs=tuple(d for d in e.designs if d.picked_by(args.design)))
                   for e in entries]
    header = (f"{'function [variant]':96} {'design':36} {'n':>4} {'rate':>6} {'± se':>6} {'nominal':>7} {'refused':>7} "
              f"{'width':>7} {'oracle':>7} {'ratio':>6}  holds")
    print(header)
    print("-" * len(header))
    start = time.perf_counter()

    def echo(row):
        print(f"{row['function'] + ' [' + row['variant'] + ']':96.96} {row['design']:36.36} {row['n']:4d} {row['rate']:6.3f} "
              f"{row['mc_se']:6.3f} {row['nominal']:7.3f} {row['refused']:7.3f} {_number(row['width'], 7, 3)} "
              f"{_number(row['oracle_width'], 7, 3)} {_number(row['width_ratio'], 6, 2)}  "
              f"{'yes' if row['holds'] else 'NO'}", flush=True)

    out = harness.table(entries, sizes=args.sizes, reps=args.reps, seed=args.seed, echo=echo)
    skipped = sorted({d.name for e in entries for d in e.designs if not d.available()})
    print(f"\n{len(out)} cells, {int((~out['holds']).sum()) if len(out) else 0} not holding; {args.reps} samples each; "
          f"{time.perf_counter() - start:.0f} s. 'rate' is coverage for intervals, size (share of p <= alpha) for tests, the false coverage-statement rate for fcr; 'ratio' is width / oracle.")
    if skipped:
        print(f"skipped (data set absent under {harness.SHARED_DATA}): {', '.join(skipped)}")
    if args.csv:
        out.to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
