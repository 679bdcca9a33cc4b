"""Paired timing shared by the benchmarks: warm up every contender, then time them in turn in each repetition."""

import time

import numpy as np


def paired(contenders: dict, repeats: int) -> dict:
    """Warm up every contender, then time them in turn ``repeats`` times; returns name -> array of seconds."""
    for func in contenders.values():
        func()
    times = {name: [] for name in contenders}
    for _ in range(repeats):
        for name, func in contenders.items():
            start = time.perf_counter()
            func()
            times[name].append(time.perf_counter() - start)
    return {name: np.array(values) for name, values in times.items()}


def ratio(times: dict, slow: str, fast: str) -> str:
    """The median of the paired ratios ``slow / fast``, with their range."""
    r = times[slow] / times[fast]
    return f"{np.median(r):6.2f}x (paired range {r.min():.2f}-{r.max():.2f})"
