"""Table contracts: the fixed columns of the tables evalkit passes between lanes (column names are the contract)."""

#: The results table, one row per case x rubric (DESIGN: results). Tables read from other tools' logs add
#: ``sample_id`` (the case, when one case is graded several times), ``epoch`` and ``score``.
RESULT_COLUMNS = ["case_id", "rubric", "rubric_version", "model", "verdict", "parsed", "raw", "reason", "error",
                  "latency_s", "cached", "created_at"]
#: What identifies a run in a results table: one pass rate per group.
RUN_KEYS = ["rubric", "rubric_version", "model"]
#: ``judge.pass_rate``'s columns, in order (``n_clusters`` and ``mean_score`` are added where they apply).
PASS_RATE_COLUMNS = ["rubric", "rubric_version", "model", "n", "n_judged", "n_pass", "pass_rate", "ci_low", "ci_high",
                     "interval", "n_unparseable", "unparseable_rate", "n_check_failed", "n_error"]


def epoch_column(results) -> str | None:
    """The column whose repeats are epochs of one case (``attrs["clusters"]["column"]``, as the readers of
    :mod:`evalkit.logs` set it, else ``sample_id``), where some case is graded more than once in a run; else None.
    What :func:`evalkit.judge.pass_rate`, :func:`evalkit.calibrate.calibrate` and :func:`evalkit.compare.paired` take
    as the clusters of a log's table when they are given none."""
    clusters = results.attrs.get("clusters")
    column = clusters.get("column", "sample_id") if isinstance(clusters, dict) else "sample_id"
    if not isinstance(column, str) or column not in results.columns:
        return None
    keys = [key for key in RUN_KEYS if key in results.columns]
    return column if results.duplicated([*keys, column]).any() else None
