"""Shared fixtures: a seeded rng, figures closed after every test, and the real data sets when present."""

from __future__ import annotations

import os
from pathlib import Path

os.environ.setdefault("MPLBACKEND", "Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from tests.harness import ROOT, SHARED_DATA  # noqa: E402, F401 - the one definition of the data path


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


def shared_dataset(name: str) -> Path:
    """Path of a real data set under ../shared/data, or skip the test with the reason."""
    path = SHARED_DATA / name
    if not path.is_dir():
        pytest.skip(f"real data set {name!r} not found at {path} (CI provides ../shared/data)")
    return path


@pytest.fixture
def random_verdicts(rng):
    """A random verdict table over 60 items (some with no claims), with its items index."""
    import pandas as pd

    from evalkit.verdicts import LEVELS

    rows = []
    items = [f"i{k:02d}" for k in range(60)]
    for item in items:
        for idx in range(int(rng.integers(0, 9))):
            rows.append({"item_id": item, "claim_idx": idx, "verdict": LEVELS[int(rng.integers(0, 5))]})
    return pd.DataFrame(rows), pd.Index(items, name="item_id")
