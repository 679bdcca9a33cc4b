"""widgets.Labeller: the live interval an annotator watches."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tests.harness.core import (
    Design,
    Entry,
    stream_design,
)


# An annotator watching the Labeller's live interval (watch=) stops the first time its line says "settled"
# (half-width <= 0.1; at the latest after n cases); the interval is the one on screen then. The widget is driven
# for real (its labels file in memory), so these are measured by bench_coverage only; the fast check is
# tests/test_widgets.py::test_stopping_when_the_labeller_says_settled_keeps_its_level. The comparisons read a
# fixed-n interval after every label and stop by the same rule, or stop as soon as the lower end clears a bar
# that equals the truth (an annotator who stops when the number looks as good as hoped).
def _labelling_folder():
    import tempfile

    return tempfile.TemporaryDirectory(dir="/dev/shm" if Path("/dev/shm").is_dir() else None)


def _labeller(watch="pass_rate", rule="settled", half=0.1):
    def run(sample, level):
        from evalkit.widgets import Labeller

        human = sample["human"]
        ids = [f"c{i}" for i in range(len(human))]
        cases = pd.DataFrame({"case_id": ids, "input": "q", "output": "a"})
        judge = None if "judge" not in sample else pd.Series(np.where(sample["judge"] > 0, "PASS", "FAIL"), index=ids)
        with _labelling_folder() as folder:
            lab = Labeller(cases, Path(folder) / "sim.jsonl", labeller="sim", judge=judge, watch=watch, blind=False,
                           stop_half_width=half if rule == "settled" else None, confidence_level=level, order="random")
            for y in human:
                lab.label("PASS" if y > 0 else "FAIL")
                row = lab.sequence().iloc[-1] if rule == "bar" else None
                if (rule == "settled" and lab.settled_at is not None) or (rule == "bar" and row["cs_low"] > sample["truth"]):
                    break
            row = lab.sequence().iloc[-1]
            lab.close()
        return row["cs_low"], row["cs_high"], row["estimate"]

    return run


def _fixed_n_peeked(method="beta", rule="settled", half=0.1, first=1):
    """statsmodels' fixed-n interval for a rate (Clopper-Pearson "beta", normal "normal"), read after every label."""

    def run(sample, level):
        from statsmodels.stats.proportion import proportion_confint

        x = np.asarray(sample["human"], dtype=float)
        t = np.arange(1, len(x) + 1)
        low, high = (np.nan_to_num(v, nan=fill) for v, fill in
                     zip(proportion_confint(np.cumsum(x), t, alpha=1 - level, method=method), (0.0, 1.0), strict=True))
        stop = ((high - low) / 2 <= half) if rule == "settled" else (low > sample["truth"])
        stop = np.flatnonzero(stop & (t >= first))
        i = stop[0] if len(stop) else len(x) - 1
        return low[i], high[i], x[: i + 1].mean()

    return run


def agreement_stream_design(rate: float = 0.85, pass_rate: float = 0.8) -> Design:
    """Human PASS/FAIL labels in a random order (pass rate ``pass_rate``) and a judge agreeing with each at ``rate``;
    the truth is the agreement rate."""

    def draw(rng, n):
        human = (rng.random(n) < pass_rate).astype(float)
        agree = rng.random(n) < rate
        return {"human": human, "judge": np.where(agree, human, 1 - human), "truth": rate}

    return Design(f"agreement-stream(rate={rate})", f"PASS/FAIL labels and a judge agreeing with them at {rate}, stopped "
                  "when settled (or at n)", draw)


LABELLER_SIZES = (100, 200, 400)
ENTRIES = [
    Entry("widgets.Labeller", "watch='pass_rate', stop_half_width=0.1: the interval when it says settled (default)",
          "interval", _labeller(), (stream_design(0.9), stream_design(0.7)), default=True, sizes=LABELLER_SIZES,
          test_sizes=(), notes="drives the widget: bench_coverage only; fast check in tests/test_widgets.py"),
    Entry("widgets.Labeller", "watch='agreement', stop_half_width=0.1", "interval", _labeller("agreement"),
          (agreement_stream_design(),), sizes=LABELLER_SIZES, test_sizes=()),
    Entry("widgets.Labeller", "watch='pass_rate', stopped when the lower end clears the truth (or at n)", "interval",
          _labeller(rule="bar"), (stream_design(0.9), stream_design(0.7)), sizes=LABELLER_SIZES, test_sizes=()),
    Entry("widgets.Labeller", "comparison: fixed-n Clopper-Pearson read after every label, stopped when settled",
          "interval", _fixed_n_peeked(), (stream_design(0.9), stream_design(0.7)), sizes=LABELLER_SIZES),
    Entry("widgets.Labeller", "comparison: fixed-n normal interval from 30 labels, stopped when settled", "interval",
          _fixed_n_peeked("normal", first=30), (stream_design(0.9), stream_design(0.7)), sizes=LABELLER_SIZES),
    Entry("widgets.Labeller", "comparison: fixed-n Clopper-Pearson, stopped when the lower end clears the truth",
          "interval", _fixed_n_peeked(rule="bar"), (stream_design(0.9), stream_design(0.7)), sizes=LABELLER_SIZES),
]
