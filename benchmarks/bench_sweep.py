"""Benchmark: tcva.sweep against a competent per-temperature pandas loop, beside the distinct-vector limit.

Run on demand: ``python benchmarks/bench_sweep.py [--items 200000 --repeats 7]``. Every contender runs once
to warm up, then all of them run in turn within each repetition (paired, in the same process), and the
medians of those repetitions are printed, with the ratio of each repetition's pair summarised by its
median and range. Both sides compute the default score, none penalty included. The "limit" is a minimal
hand-written numpy version of what the sweep does (factorize, count, score the distinct count vectors,
scatter back) with no input checking: the best known way, printed beside evalkit's time. For verdicts
given as strings (held by pyarrow, as pandas reads a CSV), its limit dictionary-encodes the first chunk, looks
the other chunks up among its labels on every core, and normalises the distinct labels. The load average is
printed before and after: the strings' encoding (on one thread while another factorizes the item ids) uses both
cores of a 2-core machine only when they are free. Profile: benchmarks/notes/sweep.md.
"""

from __future__ import annotations

import argparse
import io
import os
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pandas as pd
import pyarrow.compute as pc
from _timing import paired, ratio  # benchmarks/ is on sys.path when a benchmark runs as a script

from evalkit import tcva, verdicts


def make_table(n_items: int, rng: np.random.Generator) -> pd.DataFrame:
    n_claims = rng.integers(1, 20, n_items)
    item = np.repeat(np.arange(n_items), n_claims)
    claim_idx = np.arange(len(item)) - np.repeat(np.cumsum(n_claims) - n_claims, n_claims)
    levels = rng.choice(5, size=len(item), p=[0.1, 0.1, 0.2, 0.25, 0.35])
    return pd.DataFrame({
        "item_id": item,
        "claim_idx": claim_idx,
        "verdict": pd.Categorical.from_codes(levels, dtype=verdicts.VERDICT_DTYPE),
    })


def as_csv_strings(table: pd.DataFrame, rng: np.random.Generator) -> pd.DataFrame:
    """The same table as a user's CSV gives it: verdicts as plain strings, in mixed case and spacing."""
    spellings = {"none": ["none", "None"], "minor": ["minor", " Minor"], "partial": ["partial", "partially", "Partial "],
                 "mostly": ["mostly", "Mostly"], "fully": ["fully", "FULLY", "Fully"]}
    codes = table["verdict"].cat.codes.to_numpy()
    text = np.empty(len(table), dtype=object)
    for code, level in enumerate(verdicts.LEVELS):
        rows = np.flatnonzero(codes == code)
        text[rows] = np.asarray(spellings[level], dtype=object)[rng.integers(0, len(spellings[level]), len(rows))]
    buffer = io.StringIO()
    table.assign(verdict=text).to_csv(buffer, index=False)
    buffer.seek(0)
    return pd.read_csv(buffer, keep_default_na=False)  # else read_csv turns the text "None" into a missing value


def pandas_loop(table: pd.DataFrame, temperatures: np.ndarray) -> pd.DataFrame:
    """Baseline: per temperature, w**p and a groupby mean, then **(1/p) and the none penalty."""
    weights = verdicts.get_scale().to_numpy()
    w = pd.Series(weights[table["verdict"].cat.codes.to_numpy()], index=table.index)
    items = table["item_id"]
    zero_share = (w == 0.0).groupby(items, sort=False).mean()
    out = {}
    for t in temperatures:
        p = tcva.temperature_to_p(t)
        wp = (w.clip(lower=1e-9) if p < 0 else w) ** p
        out[t] = wp.groupby(items, sort=False).mean() ** (1 / p) * (1.0 - zero_share) ** (1.5 - t)
    return pd.DataFrame(out)


def label_codes(labels: pd.Series) -> np.ndarray:
    """Level codes of string labels, normalising the distinct labels only (the limit for strings): pyarrow's
    dictionary encoding of the first chunk, the other chunks looked up among its labels on every core (every
    chunk here holds every label)."""
    chunks = labels.array.__arrow_array__().chunks
    first = chunks[0].dictionary_encode()
    names = [str(u).strip().lower() for u in first.dictionary.to_pylist()]
    lookup = np.array([verdicts.LEVELS.index("partial" if n == "partially" else n) for n in names], dtype=np.int8)
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        rest = pool.map(lambda chunk: lookup[pc.index_in(chunk, value_set=first.dictionary).to_numpy()], chunks[1:])
        return np.concatenate([lookup[first.indices.to_numpy()], *rest])


def string_floor(labels: pd.Series, repeats: int) -> None:
    """Time, paired, the ways to give each string label a code (none normalises more than the distinct labels): what
    a string column costs beyond a categorical one, whose codes are read for free."""
    chunks = labels.array.__arrow_array__().chunks
    seen = pc.unique(chunks[0].slice(0, 4096))
    rows = len(labels)

    def words() -> list:  # numpy's cheapest exact start: each string's first 8 bytes (and length), before any matching
        out = []
        for chunk in chunks:
            _, offsets, data = chunk.buffers()
            width = np.int64 if str(chunk.type) == "large_string" else np.int32
            offsets = np.frombuffer(offsets, dtype=width)[chunk.offset:chunk.offset + len(chunk) + 1]
            data = np.frombuffer(data, dtype=np.uint8)
            word = np.ndarray((len(data) - 7,), dtype="<u8", buffer=data, strides=(1,))
            out.append((word[np.minimum(offsets[:-1], len(data) - 8)], np.diff(offsets)))
        return out

    with ThreadPoolExecutor(os.cpu_count()) as pool:
        times = paired({
            "index_in, one thread": lambda: [pc.index_in(c, value_set=seen) for c in chunks],
            "index_in, every core": lambda: list(pool.map(lambda c: pc.index_in(c, value_set=seen), chunks)),
            "dictionary_encode, one thread": lambda: [c.dictionary_encode() for c in chunks],
            "pandas.factorize": lambda: pd.factorize(labels),
            "numpy: first 8 bytes + length": words,
        }, repeats)
    print(f"coding {rows:,} string labels ({len(chunks)} pyarrow chunks), medians:")
    for name, values in times.items():
        print(f"  {name:32s} {np.median(values) * 1e3:7.1f} ms  {np.median(values) / rows * 1e9:5.1f} ns/row")


def distinct_limit(table: pd.DataFrame, temperatures: np.ndarray, levels=None) -> pd.DataFrame:
    """The limit: count levels per item, score each distinct count vector once, scatter back. No checks."""
    weights = verdicts.get_scale().to_numpy()
    codes, ids = pd.factorize(table["item_id"])
    levels = table["verdict"].cat.codes.to_numpy() if levels is None else levels
    counts = np.bincount(codes * 5 + levels, minlength=5 * len(ids)).reshape(-1, 5)
    key = counts[:, 0] * 20**4 + counts[:, 1] * 20**3 + counts[:, 2] * 20**2 + counts[:, 3] * 20 + counts[:, 4]
    inverse, keys = pd.factorize(key)  # at most 19 claims per item here, so base 20 packs a vector
    distinct = ((keys[:, None] // 20 ** np.arange(4, -1, -1)) % 20).astype(float)
    n = distinct.sum(axis=1)
    p = tcva.temperature_to_p(temperatures)
    powered = np.where(p < 0, np.maximum(weights[:, None], 1e-9), weights[:, None]) ** p
    scores = (powered.T @ distinct.T / n) ** (1 / p)[:, None]
    scores *= (1.0 - distinct[:, 0] / n)[None, :] ** (1.5 - temperatures)[:, None]
    return pd.DataFrame(np.take(scores, inverse, axis=1).T, index=ids, columns=temperatures, copy=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--floor", action="store_true",
                        help="also time the ways to code the string labels, per row (what a string column costs)")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    table = make_table(args.items, rng)
    strings = as_csv_strings(table, rng)
    temperatures = np.round(np.linspace(0.1, 1.0, 19), 4)
    input_bytes = int(table.memory_usage(deep=True).sum())
    print(f"{args.items:,} items, {len(table):,} claims, {len(temperatures)} temperatures, default none penalty on "
          f"every side; input {input_bytes / 2**20:.1f} MiB; {args.repeats} paired repetitions after a warm-up; "
          f"load average {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")

    scores = tcva.sweep(table, temperatures)
    np.testing.assert_allclose(pandas_loop(table, temperatures).to_numpy(), scores.to_numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(distinct_limit(table, temperatures).to_numpy(), scores.to_numpy(), rtol=1e-9, atol=1e-12)
    pd.testing.assert_frame_equal(tcva.sweep(strings, temperatures), scores)
    np.testing.assert_array_equal(label_codes(strings["verdict"]), table["verdict"].cat.codes.to_numpy())

    times = paired({
        "evalkit": lambda: tcva.sweep(table, temperatures),
        "loop": lambda: pandas_loop(table, temperatures),
        "limit": lambda: distinct_limit(table, temperatures),
        "strings": lambda: tcva.sweep(strings, temperatures),
        "strings_limit": lambda: distinct_limit(strings, temperatures, label_codes(strings["verdict"])),
    }, args.repeats)
    med = {name: float(np.median(values)) for name, values in times.items()}
    print(f"tcva.sweep (categorical verdicts)       {med['evalkit']:7.3f} s")
    print(f"per-T pandas loop                       {med['loop']:7.3f} s   loop / evalkit {ratio(times, 'loop', 'evalkit')}"
          "  (target >= 15x)")
    print(f"limit: distinct vectors, bare numpy     {med['limit']:7.3f} s   evalkit / limit {ratio(times, 'evalkit', 'limit')}"
          "  (target <= 1.3x)")
    print(f"tcva.sweep (string verdicts from CSV)   {med['strings']:7.3f} s   strings / categorical "
          f"{ratio(times, 'strings', 'evalkit')}  (target <= 1.3x)")
    print(f"limit for strings: encode + limit       {med['strings_limit']:7.3f} s   evalkit strings / limit "
          f"{ratio(times, 'strings', 'strings_limit')}; limit for strings / categorical "
          f"{ratio(times, 'strings_limit', 'evalkit')}")
    spread = {name: f"{values.min():.3f}-{values.max():.3f}" for name, values in times.items()}
    print(f"spread over repetitions (s): {spread}; load average {os.getloadavg()[0]:.2f}")

    if args.floor:
        string_floor(strings["verdict"], args.repeats)

    tracemalloc.start()
    tcva.sweep(table, temperatures)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    output_bytes = scores.to_numpy().nbytes
    bound = 2 * output_bytes + input_bytes
    print(f"sweep peak memory {peak / 2**20:.1f} MiB; output {output_bytes / 2**20:.1f} MiB; "
          f"bound 2 x output + input = {bound / 2**20:.1f} MiB -> {'within' if peak <= bound else 'OVER'}")


if __name__ == "__main__":
    main()
