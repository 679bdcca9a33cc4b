"""Other tools' result logs read into evalkit's results table.

inspect_ai, promptfoo, lm-evaluation-harness and OpenAI evals write their results to files; deepeval and
ragas hand them back as Python objects. Each reader here turns one of them into the table
:func:`evalkit.judge.run_judge` returns, so that :func:`evalkit.judge.pass_rate`,
:func:`evalkit.calibrate.calibrate`, :func:`evalkit.calibrate.disagreements`, :mod:`evalkit.infer`,
:func:`evalkit.compare.paired` and the :class:`evalkit.widgets.Labeller` take it as it is. None of the tools
needs to be installed to read its files (a ``.eval`` log needs the ``zstandard`` package:
``pip install "llm-evalkit[logs]"``).

Every table has one row per graded output and rubric (a scorer, an assertion, a metric): ``case_id,
rubric, rubric_version, model, verdict, parsed, raw, reason, error, latency_s, cached, created_at``, then
``sample_id`` (the tool's own id of the test case), ``epoch`` or ``repeat`` where the tool runs a case
more than once, ``score`` (the tool's number), and the case's ``input``, ``output`` and ``target`` where
the tool records them. ``case_id`` is unique within one rubric: it is the ``sample_id`` when every case
ran once, else ``<sample_id>_epoch_<n>`` (inspect_ai's own name for an epoch's sample) or
``<sample_id>_repeat_<n>``, because each epoch graded another output. ``model`` is the model the tool
evaluated; the grading model, where the tool names one, is in ``grader``. A number the tool did not
record is NaN: ``latency_s`` always (no tool records a grading call's latency), ``score`` and
``threshold`` where the tool gave none.

Rules that hold for every reader:

- A failed check or assertion is a FAIL, never an error. An output the tool could not produce or grade
  (a provider error, an exception, a grader reply without a grade) is an error row: no verdict, the
  tool's message in ``error``; :func:`evalkit.judge.pass_rate` leaves it out and counts it.
- Nothing is dropped silently: what a reader could not turn into rows is counted, with the reason, in
  ``attrs["skipped"]``.
- One bad value is one error row: a score, a verdict or a metric value that is not what the tool writes (text
  where a number belongs, an infinity, a list or a dict) makes that row an error row saying what was found, with
  one :class:`~evalkit.EvalkitWarning` for the table; it never drops a metric or blocks the other rows. What
  leaves no row to make (a sample without an id, an epoch that is not a whole number, a file that is not the
  tool's) is refused with a ValueError naming the file, the place in it and the field.
- A case is read once: a log that holds one case twice (a duplicated archive member, a sample id, document id
  or test name given twice, or two ids such as ``1`` and ``"1"`` that are one case id as text) is refused,
  naming the file and both places, since which copy the tool meant cannot be known and keeping either would
  miscount.
- A file is read only up to ``max_bytes`` (256 MiB by default; each file, and each member of an archive once
  expanded): a larger one is refused, naming it, before it is parsed, so a small file made to expand to
  gigabytes costs no more memory than the limit. deepeval's and ragas' results are already in memory and have no
  limit.
- ``attrs["source"]`` names the tool, its version, the file and the run; ``attrs["rubric"]`` the verdict
  levels and which of them pass; ``attrs["tool_metrics"]`` the tool's own summary numbers, to check
  against; ``attrs["clusters"]`` the column that groups the epochs or repeats of one case.

Epochs and repeats of one case are not independent: :func:`evalkit.judge.pass_rate` treats them as one cluster
(found from ``attrs["clusters"]``).

Each tool's reader is a module of its own (``evalkit/logs/_inspect.py``, ``_promptfoo.py``, ...), listed in
``READERS``; the rules above are written once, in ``evalkit/logs/_shared.py``.
"""

from __future__ import annotations

from evalkit.logs._deepeval import from_deepeval
from evalkit.logs._inspect import read_inspect
from evalkit.logs._lm_eval import read_lm_eval
from evalkit.logs._openai_evals import read_openai_evals
from evalkit.logs._promptfoo import read_promptfoo
from evalkit.logs._ragas import from_ragas

__all__ = ["read_inspect", "read_promptfoo", "read_lm_eval", "read_openai_evals", "from_deepeval", "from_ragas"]

#: The readers, by tool: one module each (``evalkit/logs/_<tool>.py``), every one following the rules of
#: ``evalkit/logs/_shared.py``. A new tool is a new module and a line here.
READERS = {"inspect_ai": read_inspect, "promptfoo": read_promptfoo, "lm-evaluation-harness": read_lm_eval,
           "openai-evals": read_openai_evals, "deepeval": from_deepeval, "ragas": from_ragas}
