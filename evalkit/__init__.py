"""evalkit: evaluate LLM systems with numbers that can be defended.

Calibrated LLM judges, temperature-controlled verdict aggregation (TCVA) and factual density (FD*),
as small DataFrame-in / DataFrame-out functions for notebooks.
"""

import importlib

from evalkit._version import __version__

# Every module is imported on first use (``evalkit.tcva``, ``from evalkit import tcva``), so ``import evalkit``
# costs nothing and a name loads only what it needs: ``evalkit.models`` does not pay for scipy, and nothing
# pays for matplotlib before ``evalkit.plots``. ``evalkit.widgets`` and ``evalkit.report`` are imported by name.
_MODULES = ("agreement", "batch", "calibrate", "cases", "checks", "claims", "compare", "correlate", "datasets",
            "density", "gate", "infer", "judge", "labels", "logs", "models", "pairwise", "plots", "retrieval", "tcva", "verdicts")

__all__ = ["EvalkitWarning", *_MODULES, "__version__"]


def __getattr__(name: str):
    if name in _MODULES:
        return importlib.import_module(f"evalkit.{name}")
    if name == "EvalkitWarning":
        from evalkit._validation import EvalkitWarning

        return EvalkitWarning
    raise AttributeError(f"module 'evalkit' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
