r"""Estimates from few human labels and many judge labels: one calibrated route, and prediction-powered inference.

The default of :func:`mean`, :func:`pass_rate`, :func:`difference`, :func:`systems` and :func:`system_differences`
is one estimator: the judge's score calibrated to the labels by one cross-fitted isotonic map learned from every
label of every system, each system's mean calibrated score rectified by its own labels, with the calibrated t
interval (see :func:`systems`); one system is its one-segment case, a difference comes from the same fit. The PPI
estimators below and the betting interval (finite-sample, anytime-valid) are there by name.

A judge (an LLM verdict, a TCVA score, any automatic metric) scores every case; humans label a random
subset. Prediction-powered inference (Angelopoulos et al., Science 2023) estimates the humans' mean over
all cases as

.. math::

    \hat\theta(\lambda) = \lambda \, \bar f_{\mathrm{unlabelled}} + \overline{(y - \lambda f)}_{\mathrm{labelled}}

where :math:`f` is the judge's score and :math:`y` the human label: ``lam`` (:math:`\lambda`) times the
judge's mean on the unlabelled cases, plus the mean of ``human - lam * judge`` on the labelled ones. The
second term rectifies the judge's bias with the labels, so the estimate is unbiased whatever the judge does;
the judge only changes the width. ``lam = 1`` is PPI, ``lam = 0`` the classical human-only mean, and
PPI++ (Angelopoulos, Duchi, Zrnic 2023) chooses ``lam`` from the data to minimise the variance, clipped
to [0, 1]. Where the tuned interval still comes out wider than the classical one in the same table, the
classical interval is reported in its place and the note says so: PPI++ is never wider than the humans-only
interval. The point estimates are ``ppi_py``'s (``ppi_mean_pointestimate``). On a known scale (``bounds=``, 0/1
labels, a rubric's levels) the default intervals are betting intervals (Waudby-Smith & Ramdas 2024), whose
coverage holds at every number of labels; without one the default is Student's t, since a betting interval
needs bounds that were not read from the data. :func:`systems` and :func:`system_differences` learn one
cross-fitted calibration from every system's labels at once. The normal
(CLT) intervals with population (``ddof=0``) variances, exactly as ``ppi_py`` (``ppi_mean_ci``) computes them,
are ``interval="clt"``, with the classical interval on the same convention so that widths compare like with
like.

evalkit computes these from a handful of per-group moments (counts, means, variances, one covariance) rather
than calling ``ppi_py``: that keeps the library out of the runtime dependencies and lets segments, paired
differences and thousands of simulated label draws share one vectorised kernel. The tests check every
method against ``ppi_py`` to 1e-10.

Labels must be a random sample of the cases (as :func:`choose_cases` draws them); labels chosen because
the judge looked wrong do not give valid intervals. Labels drawn more often where the judge is unsure are
valid when the draw probabilities are known: :func:`sampling_probabilities`, ``choose_cases(...,
strategy="active")`` and ``mean(..., probabilities=)`` (Des Raj's estimator, a bounded martingale). Several
judges at once are a DataFrame ``judge`` (a cross-fitted line through all of them; :func:`jury` shows each
judge's weight beside its agreement with the labels).
"""

# the option names and table contracts callers read (infer.METHODS, infer.COLUMNS, ...) ride beside the functions
from evalkit.infer._active import FLOOR, sampling_probabilities  # noqa: F401
from evalkit.infer._engine import ADJUST, COLUMNS, INTERVALS, METHODS, MIN_CLUSTERS, MIN_LARGE_SAMPLE  # noqa: F401
from evalkit.infer._estimate import difference, mean, pass_rate  # noqa: F401
from evalkit.infer._jury import jury  # noqa: F401
from evalkit.infer._planning import PLAN_INTERVALS, choose_cases, expected_half_width, labels_needed, simulate  # noqa: F401
from evalkit.infer._sequences import STATISTICS, confidence_sequence, stopping_point  # noqa: F401
from evalkit.infer._systems import MIN_SYSTEM_LABELS, SYSTEM_INTERVALS, system_differences, systems  # noqa: F401

__all__ = ["mean", "difference", "pass_rate", "systems", "system_differences", "confidence_sequence", "stopping_point",
           "expected_half_width", "labels_needed", "choose_cases", "simulate", "sampling_probabilities", "jury"]
