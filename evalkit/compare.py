"""Paired comparison of two judge runs on the same cases (two prompts, models or rubric versions)."""

from __future__ import annotations

import html
from dataclasses import dataclass, field

import pandas as pd
from scipy import stats

from evalkit._coerce import as_pass, judge_verdicts, verdict_levels
from evalkit._stats import ADJUSTMENTS
from evalkit._stats import adjust_p_values as _adjust
from evalkit._validation import check_columns, check_dataframe, check_option
from evalkit.calibrate import cohen_kappa

__all__ = ["PairedComparison", "paired", "adjust_p_values"]


@dataclass(frozen=True)
class PairedComparison:
    """Result of :func:`paired`.

    Attributes
    ----------
    n : int
        Cases with a verdict in both runs.
    table : DataFrame
        Counts of verdict pairs (rows: run a, columns: run b); 2 x 2 for PASS/FAIL.
    p_value : float
        Exact McNemar test (two-sided binomial test on the cases that went from pass to fail or back),
        with the rubric's pass levels deciding what passes.
    flips : DataFrame
        The cases whose verdict changed: ``case_id, a, b`` and, from results tables, ``reason_a, reason_b``.
    agreement, kappa : float
        Share of unchanged verdicts and Cohen's kappa between the runs.
    rate_a, rate_b : float
        Share of passing verdicts in each run.
    """

    n: int
    table: pd.DataFrame
    p_value: float
    agreement: float
    kappa: float
    rate_a: float
    rate_b: float
    flips: pd.DataFrame = field(repr=False)

    def __repr__(self) -> str:
        return (f"PairedComparison(n={self.n}, flips={len(self.flips)}, agreement={self.agreement:.3f}, "
                f"kappa={self.kappa:.3f}, pass rate {self.rate_a:.3f} -> {self.rate_b:.3f}, "
                f"McNemar exact p={self.p_value:.4g})")

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(repr(self))}</p>" + self.table.to_html()


def paired(a, b, *, labels=None, pass_levels=None) -> PairedComparison:
    """Compare two runs on the same cases, aligned by case id.

    Parameters
    ----------
    a, b : DataFrame or Series
        Results tables (one rubric and model each) or verdicts indexed by case id. Cases missing from
        either run, and error rows, are left out.
    labels : sequence, optional
        The verdict levels, in table order (default: the rubric's from ``a.attrs``, else PASS, FAIL);
        other values found are appended.
    pass_levels : sequence of str, optional
        The verdicts that count as a pass (default: the rubric's from ``a.attrs``, else PASS).

    Returns
    -------
    PairedComparison

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.compare import paired
    >>> a = pd.Series(["PASS"] * 8 + ["FAIL"] * 2, index=range(10))
    >>> b = pd.Series(["FAIL"] * 6 + ["PASS"] * 2 + ["FAIL"] * 2, index=range(10))
    >>> res = paired(a, b)
    >>> len(res.flips), round(res.p_value, 4)
    (6, 0.0312)
    """
    levels_a, passing = verdict_levels(a, levels=labels, pass_levels=pass_levels)
    levels_b, passing_b = verdict_levels(b, levels=labels, pass_levels=pass_levels)
    if set(passing) != set(passing_b):
        raise ValueError(f"the runs count different verdicts as a pass ({list(passing)} in a, {list(passing_b)} in "
                         "b); pass `pass_levels=` to compare them on one definition.")
    labels = labels if labels is not None else (levels_a or ("PASS", "FAIL"))
    va, vb = judge_verdicts(a, "a"), judge_verdicts(b, "b")
    common = va.index.intersection(vb.index, sort=False)
    both = pd.DataFrame({"a": va.loc[common], "b": vb.loc[common]}).dropna()
    if both.empty:
        raise ValueError("the two runs share no case with a verdict in both; compare runs on the same cases.")
    levels = list(labels) + sorted({*both["a"], *both["b"]} - set(labels), key=str)
    table = pd.crosstab(pd.Categorical(both["a"], levels), pd.Categorical(both["b"], levels), dropna=False,
                        rownames=["a"], colnames=["b"])
    pass_a = as_pass(both["a"], "a", levels=levels_a, pass_levels=passing).to_numpy(dtype=bool)
    pass_b = as_pass(both["b"], "b", levels=levels_b, pass_levels=passing).to_numpy(dtype=bool)
    discordant_ab, discordant_ba = int((pass_a & ~pass_b).sum()), int((~pass_a & pass_b).sum())
    total = discordant_ab + discordant_ba
    p_value = 1.0 if total == 0 else float(stats.binomtest(discordant_ab, total, 0.5).pvalue)
    changed = both[both["a"] != both["b"]]
    flips = pd.DataFrame({"case_id": changed.index.to_numpy(), "a": changed["a"].to_numpy(), "b": changed["b"].to_numpy()})
    for name, run in (("a", a), ("b", b)):
        if isinstance(run, pd.DataFrame) and "reason" in run.columns:
            flips[f"reason_{name}"] = run.set_index("case_id")["reason"].reindex(flips["case_id"]).to_numpy()
    return PairedComparison(
        n=len(both), table=table, p_value=p_value, agreement=float((both["a"] == both["b"]).mean()),
        kappa=cohen_kappa(both["a"].to_numpy(), both["b"].to_numpy()), rate_a=float(pass_a.mean()),
        rate_b=float(pass_b.mean()),
        flips=flips,
    )


def adjust_p_values(table: pd.DataFrame, *, method: str = "holm", column: str = "p_val") -> pd.DataFrame:
    """Adjust a family of p-values for multiplicity: the table with ``p_adjusted`` and ``adjust`` columns added.

    When several tests are read together (one McNemar test per judge and subset, one Wilcoxon test per
    pair of conditions and metric), some come out small by chance; the adjusted p-values keep the chance
    of any false finding (``"holm"``, ``"bonferroni"``: the family-wise error rate) or the expected share of
    false findings among those claimed (``"bh"``, ``"by"``: the false discovery rate) at the level they are
    compared with. Every row of ``table`` is one test of the family.

    Parameters
    ----------
    table : DataFrame
        One row per test, holding the raw p-values in ``column``; NaN p-values stay NaN and are not counted.
    method : {"holm", "bonferroni", "bh", "by"}, default "holm"
        Holm's step-down, Bonferroni, Benjamini-Hochberg (independent or positively dependent tests) or
        Benjamini-Yekutieli (any dependence). The values equal statsmodels' ``multipletests``.
    column : str, default "p_val"
        The column of raw p-values (kept as it is).

    Returns
    -------
    DataFrame
        A copy of ``table`` with ``p_adjusted`` (the adjusted p-value) and ``adjust`` (the method's name).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.compare import adjust_p_values
    >>> tests = pd.DataFrame({"test": ["a", "b", "c"], "p_val": [0.01, 0.04, 0.03]})
    >>> adjust_p_values(tests, method="holm")
      test  p_val  p_adjusted adjust
    0    a   0.01        0.03   holm
    1    b   0.04        0.06   holm
    2    c   0.03        0.06   holm
    """
    table = check_dataframe(table, "table")
    check_option(method, ADJUSTMENTS, "method")
    check_columns(table, [column], "table")
    values = pd.to_numeric(table[column], errors="coerce")
    bad = table[column][values.isna() & table[column].notna()]
    if len(bad) or ((values < 0) | (values > 1)).any():
        example = bad.iloc[0] if len(bad) else values[(values < 0) | (values > 1)].iloc[0]
        raise ValueError(f"`table` column {column!r} must hold p-values in [0, 1] (or NaN); got {example!r}.")
    out = table.copy()
    out["p_adjusted"] = _adjust(values.to_numpy(dtype=float), method)
    out["adjust"] = method
    return out
