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
