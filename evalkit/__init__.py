"""evalkit: evaluate LLM systems with numbers that can be defended.

Calibrated LLM judges, temperature-controlled verdict aggregation (TCVA) and factual density (FD*),
as small DataFrame-in / DataFrame-out functions for notebooks.
"""

from evalkit import (
    agreement,
    calibrate,
    cases,
    checks,
    claims,
    compare,
    correlate,
    datasets,
    density,
    judge,
    models,
    plots,
    retrieval,
    tcva,
    verdicts,
)
from evalkit._validation import EvalkitWarning

__version__ = "0.1.0"

__all__ = [
    "EvalkitWarning",
    "agreement",
    "calibrate",
    "cases",
    "checks",
    "claims",
    "compare",
    "correlate",
    "datasets",
    "density",
    "judge",
    "models",
    "plots",
    "retrieval",
    "tcva",
    "verdicts",
    "__version__",
]
