"""Several systems, one labelling budget: evalkit's calibrated PPI beside CJE and ppi_py on the same draws.

Each draw is a whole evaluation from the coverage harness's several-system designs (tests/harness/systems.py:
SummEval's 6 systems x 100 documents, USR's 6 systems x 60 contexts, the arena's 12 systems with GPT-4 as the judge,
and two synthetic ones), with n labels per system on shared cases or on each system's own. On the same draw it runs

- ``evalkit``: ``infer.systems`` and ``infer.system_differences`` (the default: one cross-fitted isotonic calibration
  from every system's labels, the calibrated t);
- ``cje``: cje-eval's ``analyze_dataset`` (its default direct mode: cross-fitted calibration, cluster-robust
  variance plus the oracle jackknife, t intervals), with the label scale declared;
- ``ppi_py``: ``ppi_mean_ci`` (PPI++ with the judge's raw scores, one system at a time, and its CLT interval), and for
  a difference PPI++ on the per-case differences where both systems are labelled;
- ``classical``: Student's t on each system's labels alone;

and reports, for every system's mean and every pair's difference, coverage (with its Monte Carlo standard error over
the draws), the mean width, its ratio to CJE's (on the draws both answered: CJE refuses some that evalkit answers
with a wide interval) and to the oracle, and the share of draws refused (NaN). The oracle is
the central interval of evalkit's own estimation error, the narrowest fixed width that covers; it is taken from
``--oracle-reps`` further draws of the same design (evalkit's estimates alone, default 2,000), since on skewed labels
the errors have heavy tails whose 2.5% and 97.5% points the few hundred draws of the intervals place badly (0 takes
it from those draws). The target ("Done when") is coverage at least nominal - 2 MC s.e., a width at most 1.1x CJE's
where CJE holds and at most 1.25x the oracle from 100 labels on. cje-eval and ppi-python are the ``bench`` extra.

    python benchmarks/bench_systems.py [--reps 300] [--sizes 20 30 50 100 200] [--design summeval]
                                       [--oracle-reps 2000] [--csv systems.csv]
    python benchmarks/bench_systems.py --markdown systems.csv [more.csv ...]   # the few-labels guide's table
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
import warnings
import zlib
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evalkit import infer  # noqa: E402
from tests.harness import systems as designs  # noqa: E402

METHODS = ("evalkit", "cje", "ppi_py", "classical")


def _cje(table: pd.DataFrame, bounds, level: float):
    import cje

    data = {name: [{"prompt_id": str(row.case_id), "judge_score": float(row.judge),
                    "oracle_label": None if np.isnan(row.human) else float(row.human)} for row in group.itertuples()]
            for name, group in table.groupby("system")}
    result = cje.analyze_dataset(fresh_draws_data=data, fresh_oracle_scale=tuple(bounds))
    names = list(result.metadata.get("target_policies", sorted(data)))
    means = {name: (*tuple(result.ci(alpha=1 - level)[i]), float(result.estimates[i])) for i, name in enumerate(names)}

    def difference(a, b):
        c = result.compare_policies(a, b, alpha=1 - level)
        return c.get("ci_lower", np.nan), c.get("ci_upper", np.nan), c.get("difference", np.nan)

    return means, difference


def _ppi_py(table: pd.DataFrame, level: float):
    from ppi_py import ppi_mean_ci

    out = {}
    for name, group in table.groupby("system"):
        labelled = group["human"].notna().to_numpy()
        if labelled.sum() < 2 or labelled.all():  # ppi_py needs unlabelled cases
            out[name] = (np.nan, np.nan, np.nan)
            continue
        low, high = ppi_mean_ci(group["human"].to_numpy()[labelled], group["judge"].to_numpy()[labelled],
                                group["judge"].to_numpy()[~labelled], alpha=1 - level)
        low, high = float(np.ravel(low)[0]), float(np.ravel(high)[0])
        out[name] = (low, high, (low + high) / 2)

    def difference(a, b):
        wide = table.pivot(index="case_id", columns="system", values=["judge", "human"])
        both = wide["human"][a].notna() & wide["human"][b].notna()
        d_y = (wide["human"][a] - wide["human"][b])[both].to_numpy()
        d_f = (wide["judge"][a] - wide["judge"][b]).dropna()
        unlabelled = ~both[d_f.index]
        if len(d_y) < 2 or not unlabelled.any():  # ppi_py needs cases the judge scored for both and no human did
            return np.nan, np.nan, np.nan
        low, high = ppi_mean_ci(d_y, d_f[~unlabelled].to_numpy(), d_f[unlabelled].to_numpy(), alpha=1 - level)
        low, high = float(np.ravel(low)[0]), float(np.ravel(high)[0])
        return low, high, (low + high) / 2

    return out, difference


def _classical(table: pd.DataFrame, level: float):
    out = {}
    for name, group in table.groupby("system"):
        y = group["human"].dropna().to_numpy()
        if len(y) < 2 or np.ptp(y) == 0:
            out[name] = (np.nan, np.nan, np.nan)
            continue
        ci = stats.ttest_1samp(y, 0).confidence_interval(level)
        out[name] = (float(ci.low), float(ci.high), float(y.mean()))
    return out


def _evalkit_errors(design, n: int, reps: int, level: float, seed: int) -> dict[str, np.ndarray]:
    """evalkit's estimation errors (estimate - truth) of the target's mean and of its difference from the other
    system, over ``reps`` draws from a stream of their own (not the draws whose intervals are judged)."""
    rng = np.random.default_rng([seed, n, zlib.crc32(design.name.encode()), 1])
    errors = {"mean": [], "difference": []}
    for _ in range(reps):
        sample = design.draw(rng, n)
        table, bounds = sample["table"], sample["bounds"]
        names = sorted(table["system"].unique())
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = infer.systems(table, bounds=bounds, confidence_level=level).set_index("system")
            errors["mean"].append(ours.loc[names[sample["target"]], "estimate"] - sample["truth"])
            if len(names) > 1:
                ours_d = infer.system_differences(table, baseline=names[sample["other"]], bounds=bounds,
                                                  confidence_level=level).set_index("system_a")
                errors["difference"].append(ours_d.loc[names[sample["target"]], "estimate"]
                                            - sample["truth_difference"])
    return {kind: np.array(values, dtype=float) for kind, values in errors.items()}


def _oracle(errors: np.ndarray, level: float) -> float:
    """The central ``level`` interval's width of the finite errors."""
    errors = errors[np.isfinite(errors)]
    return float(np.subtract(*np.quantile(errors, [(1 + level) / 2, (1 - level) / 2]))) if len(errors) else np.nan


def run_design(design, n: int, reps: int, level: float, seed: int, oracle_reps: int = 2000) -> list[dict]:
    rng = np.random.default_rng([seed, n, zlib.crc32(design.name.encode())])
    records = {m: {"mean": [], "difference": []} for m in METHODS}
    for _ in range(reps):
        sample = design.draw(rng, n)
        table, bounds = sample["table"], sample["bounds"]
        names = sorted(table["system"].unique())
        target, other = names[sample["target"]], names[sample["other"]]
        truth, truth_d = sample["truth"], sample["truth_difference"]
        pairs = len(names) > 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ours = infer.systems(table, bounds=bounds, confidence_level=level).set_index("system")
            cje_means, cje_difference = _cje(table, bounds, level)
            ppi_means, ppi_difference = _ppi_py(table, level)
            classical = _classical(table, level)
            found = {"evalkit": [tuple(ours.loc[target, ["ci_low", "ci_high", "estimate"]])],
                     "cje": [cje_means[target]], "ppi_py": [ppi_means[target]], "classical": [classical[target]]}
            if pairs:
                ours_d = infer.system_differences(table, baseline=other, bounds=bounds, confidence_level=level
                                                  ).set_index("system_a")
                found["evalkit"].append(tuple(ours_d.loc[target, ["ci_low", "ci_high", "estimate"]]))
                found["cje"].append(cje_difference(target, other))
                found["ppi_py"].append(ppi_difference(target, other))
                found["classical"].append((np.nan, np.nan, np.nan))
        for method, intervals in found.items():
            kinds = ("mean", "difference")[:len(intervals)]  # one system: no difference
            for kind, (low, high, estimate), t in zip(kinds, intervals, (truth, truth_d)[:len(intervals)], strict=True):
                records[method][kind].append((low - t, high - t, estimate - t))
    further = _evalkit_errors(design, n, oracle_reps, level, seed) if oracle_reps else None
    rows = []
    for method, kinds in records.items():
        for kind, values in kinds.items():
            if not values:
                continue
            v = np.array(values, dtype=float)
            ok = ~np.isnan(v[:, 0]) & ~np.isnan(v[:, 1])
            if not ok.any():
                continue
            hit = (v[ok, 0] <= 0) & (0 <= v[ok, 1])
            oracle = _oracle(further[kind] if further is not None else v[:, 2], level)
            peer = np.array(records["cje"][kind], dtype=float)
            both = ok & ~np.isnan(peer[:, 0]) & ~np.isnan(peer[:, 1])  # the draws both answered: a paired ratio
            x_cje = (float(np.mean(v[both, 1] - v[both, 0]) / np.mean(peer[both, 1] - peer[both, 0]))
                     if both.any() else np.nan)
            rows.append({"design": design.name, "n": n, "kind": kind, "method": method, "coverage": hit.mean(),
                         "mc_se": np.sqrt(level * (1 - level) / ok.sum()), "width": float(np.mean(v[ok, 1] - v[ok, 0])),
                         "x_cje": x_cje, "oracle": float(oracle), "refused": 1 - ok.mean()})
    return rows


def _report(rows: list[dict], level: float) -> None:
    """Print one design and size: each method's coverage, width, width over CJE's and over the oracle (the central
    interval of evalkit's own estimation error), and the share refused."""
    table = pd.DataFrame(rows)
    for row in rows:
        peer = table[(table.kind == row["kind"]) & (table.method == "cje")]
        cje_holds = len(peer) and peer["coverage"].iloc[0] >= level - 2 * peer["mc_se"].iloc[0]
        oracle = table[(table.kind == row["kind"]) & (table.method == "evalkit")]["oracle"].iloc[0]
        ratio = row["x_cje"]
        met = ""
        if row["method"] == "evalkit":
            holds = row["coverage"] >= level - 2 * row["mc_se"]
            met = f"{'holds' if holds else 'SHORT'}"
            met += (f", {'<=' if ratio <= 1.1 else '>'}1.1x cje" if cje_holds else ", cje short")
            if row["n"] >= 100:
                met += f", {'<=' if row['width'] / oracle <= 1.25 else '>'}1.25x oracle"
        print(f"{row['design']:38.38} {row['n']:3d} {row['kind']:10} {row['method']:9} {row['coverage']:8.3f} "
              f"{row['mc_se']:6.3f} {row['width']:7.3f} {ratio:6.2f} {row['width'] / oracle:7.2f} "
              f"{row['refused']:7.2f}  {met}", flush=True)


def markdown(rows: pd.DataFrame, level: float) -> str:
    """The few-labels guide's table of evalkit's rows: per design and kind (rows) and labels per system (columns),
    coverage, width over CJE's on the draws both answered (``*`` where CJE's own coverage is below nominal - 2 MC s.e.) and, from 100 labels on,
    over the oracle; the share of draws refused where there are any; coverage in bold below nominal - 2 MC s.e."""
    rows = rows.drop_duplicates(["design", "kind", "n", "method"])  # runs whose --design filters overlap
    ours = rows[rows.method == "evalkit"].set_index(["design", "kind", "n"])
    cje = rows[rows.method == "cje"].set_index(["design", "kind", "n"])
    sizes = sorted(ours.index.get_level_values("n").unique())
    lines = ["| design | kind | " + " | ".join(f"{n} labels" for n in sizes) + " |",
             "|---|---|" + "---|" * len(sizes)]
    for (design, kind), group in ours.groupby(level=["design", "kind"], sort=False):
        cells = []
        for n in sizes:
            if (design, kind, n) not in group.index:
                cells.append("")
                continue
            row = group.loc[(design, kind, n)]
            cover = f"{row.coverage:.2f}"
            cell = f"**{cover}**" if row.coverage < level - 2 * row.mc_se else cover
            if (design, kind, n) in cje.index:
                peer = cje.loc[(design, kind, n)]
                short = "\\*" if peer.coverage < level - 2 * peer.mc_se else ""  # escaped: a Markdown table
                cell += f" · {row.x_cje:.2f}x{short}"
            if n >= 100:
                cell += f" · {row.width / row.oracle:.2f}x"
            if row.refused > 0:
                cell += f" · refused {row.refused:.2f}"
            cells.append(cell)
        lines.append(f"| {design} | {kind} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=300)
    parser.add_argument("--sizes", type=int, nargs="+", default=[20, 30, 50, 100, 200])
    parser.add_argument("--design", action="append", help="only designs whose name contains this text, or is it with a trailing $ (repeatable)")
    parser.add_argument("--level", type=float, default=0.95)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--oracle-reps", type=int, default=2000,
                        help="further draws for the oracle (evalkit's estimates alone); 0: the judged draws")
    parser.add_argument("--csv", type=Path)
    parser.add_argument("--markdown", type=Path, nargs="+", metavar="CSV",
                        help="print the guide's table from these --csv files instead of running")
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown(pd.concat([pd.read_csv(path) for path in args.markdown], ignore_index=True), args.level))
        return 0
    logging.disable(logging.WARNING)  # cje-eval logs its gates at WARNING
    chosen = [d for d in designs.MEAN_DESIGNS if d.available() and d.picked_by(args.design)]
    rows = []
    print(f"{'design':38} {'n':>3} {'kind':10} {'method':9} {'coverage':>8} {'± se':>6} {'width':>7} {'x cje':>6} "
          f"{'x oracle':>7} {'refused':>7}  target")
    for design in chosen:
        for n in args.sizes:
            start = time.perf_counter()
            found = run_design(design, n, args.reps, args.level, args.seed, args.oracle_reps)
            rows += found
            _report(found, args.level)
            print(f"  ({time.perf_counter() - start:.0f} s)", flush=True)
            if args.csv:  # after every cell: a long run stopped early keeps what it measured
                pd.DataFrame(rows).to_csv(args.csv, index=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
