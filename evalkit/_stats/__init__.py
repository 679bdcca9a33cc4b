"""The interval layer under every lane (judge, calibration, inference, comparisons, agreement, density, retrieval).

Private floor: imports nothing from evalkit above ``_validation``. One module per family, each statistic written once:

- ``binomial``: every 0/1 rate's interval behind :func:`rate_interval` (Clopper-Pearson, Wilson, and for clusters the
  betting interval over whole clusters, the cluster-robust t and Clopper-Pearson on cluster means), ``MIN_CLUSTERS``,
  fiducial intervals of functions of several rates;
- ``paired``: two runs on the same cases (exact McNemar, Newcombe, Tango, the sign-flip test);
- ``betting`` and ``ppi``: betting intervals and sequences for bounded means, and the prediction-powered ones;
- ``means``: one-sample mean intervals; ``resample``: the bootstrap over items; ``kappa``: Cohen's kappa;
- ``multiplicity``: Holm, Bonferroni, BH and BY; ``normal``: the normal quantile, the cluster-robust variance and Hall's skewness-corrected t.

The lanes call these as ``_stats.<name>``; scipy.stats (about a second to import) is imported when an interval is
computed, not when a module that may compute one is imported.
"""

from evalkit._stats.betting import (
    BET_TRUNCATION,
    BettingStream,
    betting_interval,
    betting_p_value,
    betting_sequence,
    cluster_betting_interval,
    empirical_bernstein_interval,
)
from evalkit._stats.binomial import (
    CLUSTER_METHODS,
    COUNT_METHODS,
    MIN_CLUSTERS,
    RATE_INTERVALS,
    clopper_pearson,
    cluster_rate_interval,
    cp_fiducial_interval,
    rate_interval,
    rate_method,
    wilson,
)
from evalkit._stats.kappa import KAPPA_DRAWS, cohen_kappa, kappa_cluster_interval, kappa_from_rates, kappa_interval
from evalkit._stats.means import MEAN_METHODS, mean_interval
from evalkit._stats.multiplicity import ADJUSTMENTS, adjust_p_values
from evalkit._stats.normal import (
    cluster_variance,
    skew_corrected_interval,
    skew_corrected_p_value,
    z_value,
    z_variance_factor,
)
from evalkit._stats.paired import (
    cluster_difference_interval,
    first_slot_rate_interval,
    integer_sign_flip_p,
    mcnemar_exact_p,
    mcnemar_power,
    mcnemar_rejection_bounds,
    newcombe_paired_interval,
    sign_flip_p,
    tango_interval,
)
from evalkit._stats.ppi import BETTING_MAX_UNLABELLED, CLIP_HOLDOUT, JUDGE_CLIP_QUANTILE, ppi_betting
from evalkit._stats.resample import (
    MIN_RESAMPLED_CLUSTERS,
    bca_over_items,
    percentile_over_items,
    resample_weights,
    studentized_over_items,
)

__all__ = [
    "ADJUSTMENTS", "BETTING_MAX_UNLABELLED", "BET_TRUNCATION", "BettingStream", "CLIP_HOLDOUT", "CLUSTER_METHODS",
    "COUNT_METHODS", "JUDGE_CLIP_QUANTILE", "KAPPA_DRAWS", "MEAN_METHODS", "MIN_CLUSTERS", "MIN_RESAMPLED_CLUSTERS", "RATE_INTERVALS", "adjust_p_values",
    "bca_over_items", "betting_interval", "betting_p_value", "betting_sequence", "clopper_pearson",
    "cluster_betting_interval", "cluster_difference_interval", "cluster_rate_interval", "cluster_variance", "cohen_kappa", "cp_fiducial_interval",
    "empirical_bernstein_interval", "first_slot_rate_interval", "integer_sign_flip_p", "kappa_cluster_interval", "kappa_from_rates", "kappa_interval", "mcnemar_exact_p",
    "mcnemar_power", "mcnemar_rejection_bounds", "mean_interval", "newcombe_paired_interval", "percentile_over_items",
    "ppi_betting", "rate_interval", "rate_method", "resample_weights", "sign_flip_p", "skew_corrected_interval", "skew_corrected_p_value", "studentized_over_items", "tango_interval",
    "wilson", "z_value", "z_variance_factor",
]
