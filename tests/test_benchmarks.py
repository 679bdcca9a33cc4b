"""The speed benchmarks of the sweep, the Bradley-Terry bootstrap, dask and the judge run end to end at small sizes.

Each benchmark checks its own results before it times anything (evalkit against the pandas loop, the bare numpy
limit, the pandas path on dask, FastChat-free ratings against the limit, a cached re-run that makes no call), so
a benchmark that no longer runs, or whose contenders no longer agree, is found here rather than on the day it is
needed. Nothing here asserts a time: the figures are read from the benchmarks' own output, on demand.
"""

import subprocess
import sys
from pathlib import Path

import pytest

from tests._extras import needs, needs_openai, needs_parquet

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


def run(script: str, *args) -> str:
    out = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), *map(str, args)], capture_output=True,
                         text=True, timeout=900, cwd=ROOT)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-3000:]
    return out.stdout


@needs_parquet
def test_bench_sweep_checks_its_contenders_and_prints_the_limit():
    out = run("bench_sweep.py", "--items", 3000, "--repeats", 1, "--floor")
    assert "limit: distinct vectors" in out and "strings / categorical" in out and "load average" in out
    assert "limit for strings / categorical" in out and out.count("ns/row") == 5


def test_bench_pairwise_checks_the_limit_and_prints_the_draws_alone():
    out = run("bench_pairwise.py", "--comparisons", 20000, "--systems", 12, "--resamples", 60, "--repeat", 1,
              "--boot-repeat", 1)
    assert "evalkit / limit" in out and "the draws alone" in out


@needs("dask", "dask")
@needs_parquet
def test_bench_dask_is_bit_identical_to_pandas_and_logs_no_warning(tmp_path):
    out = run("bench_dask.py", "--claims", 400_000, "--sample-claims", 100_000, "--rows-per-file", 50_000, "--docs", 0,
              "--repeat", 1, "--tmp", tmp_path, "--general")
    assert "bit-identical: True" in out and "WARNING lines logged by the cluster: 0" in out
    assert not list(tmp_path.iterdir())  # the Parquet folder is deleted


@needs_openai
def test_bench_judge_prints_the_latency_bound_and_its_cached_rerun_calls_nothing():
    out = run("bench_judge.py", "--calls", 120, "--concurrency", 4, 16, "--latency", 0.01, "--repeats", 1)
    assert "latency bound" in out and "whole rounds" in out and "0 server requests" in out


def test_bench_active_prints_labels_to_the_target_for_every_strategy():
    if not (ROOT.parent / "shared" / "data" / "llmbar").is_dir():
        pytest.skip("the LLMBar data set is not under ../shared/data (CI provides it)")
    out = run("bench_active.py", "--reps", 2, "--sizes", 50, 100, "--reference", 50, "--data", "llmbar")
    summary = [line for line in out.splitlines() if line.startswith("labels for half-width")]
    assert len(summary) == 2  # the default interval and the t
    assert all(f"; {s} " in line for line in summary for s in ("stratified", "active", "jury", "jury+active"))


def test_bench_gate_runs_its_settings_and_agrees_with_decide():
    out = run("bench_gate.py", "--reps", 4, "--pilot", 60)
    assert "the kernel agreed with gate.decide on results tables in every draw checked" in out
    assert out.count("no change, margin 0 ") == 2 and "the gate's plan from 60 cases" in out


def test_bench_logprob_score_prints_both_widths():
    out = run("bench_logprob_score.py", "--reps", 2, "--cases", 300, "--labels", 30)
    assert "width_verdict" in out and "graded, skewed" in out
