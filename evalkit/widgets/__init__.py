"""Notebook widgets: labellers for human verdicts, pairwise votes and claim verdicts, and explorers for temperature
sweeps and FD* bins.

Widgets subclass an ipywidgets container, keep their state in traitlets and call only public evalkit
functions; plots are rendered to PNG in an ``Image`` widget. They need the ``widgets`` extra (``pip install
"llm-evalkit[widgets]"``). Everything shown from cases or model outputs is HTML-escaped: it is data, never markup.

One module per widget (``_labeller``, ``_pairwise``, ``_claims``, ``_explorers``) on what they share: ``_common``
(the keys in the browser, the labels file's store, the case view) and ``_base`` (the labellers' layout, pacing,
undo and skip).
"""

from evalkit._optional import install_hint

try:
    import anywidget  # noqa: F401
    import ipywidgets  # noqa: F401
    import traitlets  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(f"evalkit.widgets needs ipywidgets and anywidget: {install_hint('widgets')}") from exc

from evalkit.widgets._claims import ClaimLabeller  # noqa: E402 - after the check of the extra
from evalkit.widgets._common import AnnotatorError  # noqa: E402
from evalkit.widgets._explorers import FDBinExplorer, SweepExplorer  # noqa: E402
from evalkit.widgets._labeller import Labeller  # noqa: E402
from evalkit.widgets._pairwise import PairwiseLabeller  # noqa: E402

__all__ = ["Labeller", "PairwiseLabeller", "ClaimLabeller", "AnnotatorError", "SweepExplorer", "FDBinExplorer"]

for _public in (Labeller, PairwiseLabeller, ClaimLabeller, AnnotatorError, SweepExplorer, FDBinExplorer):
    _public.__module__ = __name__  # documented, shown and pickled as evalkit.widgets.<name>
del _public
