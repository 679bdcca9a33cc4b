"""evalkit: evaluate LLM systems with numbers that can be defended.

Calibrated LLM judges, temperature-controlled verdict aggregation (TCVA) and factual density (FD*),
as small DataFrame-in / DataFrame-out functions for notebooks.
"""

import importlib

from evalkit import (
    agreement,
    batch,
    calibrate,
    cases,
    checks,
    claims,
    compare,
    correlate,
    datasets,
    density,
    infer,
    judge,
    labels,
    logs,
    models,
    pairwise,
    retrieval,
    tcva,
    verdicts,
)
from evalkit._validation import EvalkitWarning
from evalkit._version import __version__

# Imported on first use (``evalkit.plots`` or ``from evalkit import plots``), so that ``import evalkit``
# does not pay for matplotlib.
_LAZY = ("plots",)

__all__ = [
    "EvalkitWarning",
    "agreement",
    "batch",
    "calibrate",
    "cases",
    "checks",
    "claims",
    "compare",
    "correlate",
    "datasets",
    "density",
    "infer",
    "judge",
    "labels",
    "logs",
    "models",
    "pairwise",
    "plots",
    "retrieval",
    "tcva",
    "verdicts",
    "__version__",
]


def __getattr__(name: str):
    if name in _LAZY:
        return importlib.import_module(f"evalkit.{name}")
    raise AttributeError(f"module 'evalkit' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
