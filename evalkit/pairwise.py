"""Pairwise judgments: the comparisons table, Bradley-Terry ratings, prediction-powered rank-sets, judge bias.

A **comparisons** table has one row per judgment of two systems: ``system_a``, ``system_b`` and ``winner``
(``"a"``, ``"b"`` or ``"tie"``), where ``system_a`` is the one shown first; optional ``comparison_id``,
``question_id`` (what clusters votes), ``rater`` (a judge or an annotator) and ``order`` (how the pair was
presented, e.g. ``"original"``/``"swapped"``), and any other columns (style covariates, say).

Which numbers come from where:

- :func:`bradley_terry` is the maximum-likelihood Bradley-Terry model (a logistic regression on system
  contrasts), solved by Newton's method on the collapsed counts of each ordered pair, so its cost grows
  with the number of pairs, not of comparisons; bootstrap resamples are drawn as counts of those cells
  and solved together, one batched Newton step for all of them. Ratings equal ``choix.ilsr_pairwise``
  (no ties) and FastChat's ``compute_bt`` (ties as half a win) after centring; the robust (sandwich)
  covariance is the one lmarena's arena-rank computes; the cluster-robust one equals statsmodels'
  ``cov_type="cluster"`` on the same design.
- :func:`rank_sets` is prediction-powered ranking (Chatzi, Straitouri, Thejaswi & Gomez-Rodriguez, NeurIPS
  2024): the estimates equal the authors' code; the covariance is the delta-method covariance of those
  estimates (see its Notes for why it differs from theirs).
- The judge-bias diagnostics (:func:`position_consistency`, :func:`first_slot_preference`,
  :func:`length_bias`, :func:`self_preference`) take LLMBar-style decisions (each instance judged in both
  orders, the winner in the original numbering) and test on the instances, not on the decisions:
  the two decisions on one instance are not independent. ``length_bias`` uses statsmodels (the ``stats``
  extra), imported when called.
"""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import sparse, stats
from scipy.special import expit

from evalkit import _stats
from evalkit._optional import require
from evalkit._stats import z_value
from evalkit._validation import (
    as_clusters,
    check_columns,
    check_dataframe,
    check_level,
    check_number,
    check_option,
    check_rng,
    check_unique_index,
    show,
    warn,
)
from evalkit.labels import latest_labels, read_labels

__all__ = [
    "validate",
    "comparisons_from_llmbar",
    "comparisons_from_labels",
    "win_rates",
    "bradley_terry",
    "bradley_terry_effects",
    "rank_sets",
    "position_consistency",
    "first_slot_preference",
    "length_bias",
    "self_preference",
]

COLUMNS = ["system_a", "system_b", "winner"]
WINNERS = ("a", "b", "tie")
RATING_COLUMNS = ["system", "rating", "ci_low", "ci_high", "n", "wins", "losses", "ties", "rank"]
EFFECT_COLUMNS = ["term", "coef", "ci_low", "ci_high", "p_val", "elo"]
RANK_SET_COLUMNS = ["system", "estimate", "rank_low", "rank_high"]
ELO = 400.0 / np.log(10.0)  # Elo points per unit of log-strength: P(a beats b) = 1 / (1 + 10 ** (-(R_a - R_b) / 400))
CENTRE = 1000.0


# ------------------------------------------------------------------------------------------ the table
def validate(comparisons, *, name: str = "comparisons") -> pd.DataFrame:
    """Check a comparisons table and return a copy with ``winner`` as plain strings.

    Parameters
    ----------
    comparisons : DataFrame
        ``system_a``, ``system_b`` (the two systems, ``system_a`` shown first) and ``winner`` (``"a"``, ``"b"``
        or ``"tie"``); other columns are kept.
    name : str
        The argument's name, for messages.

    Returns
    -------
    DataFrame

    Raises
    ------
    TypeError, KeyError, ValueError
        Not a DataFrame; a column missing (the message lists those present); a missing system, a system
        compared with itself, or a winner outside ``"a"``, ``"b"``, ``"tie"`` (the message names the row).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import pairwise
    >>> pairwise.validate(pd.DataFrame({"system_a": ["x"], "system_b": ["y"], "winner": ["a"]}))
      system_a system_b winner
    0        x        y      a
    >>> pairwise.validate(pd.DataFrame({"system_a": ["x"], "system_b": ["y"], "winner": ["model_a"]}))
    Traceback (most recent call last):
    ...
    ValueError: `comparisons` row 0: winner 'model_a' is not one of ['a', 'b', 'tie'] (system_a shown first wins: 'a').
    """
    table = check_dataframe(comparisons, name)
    check_columns(table, COLUMNS, name)
    table = table.copy()
    for column in ("system_a", "system_b"):
        missing = table[column].isna().to_numpy()
        if missing.any():
            raise ValueError(f"`{name}` row {show(table.index[missing][0])}: {column} is missing; every comparison "
                             "names both systems.")
    # as objects: a column of strings held by pyarrow cannot be compared with one that mixes in numbers
    same = table["system_a"].to_numpy(dtype=object) == table["system_b"].to_numpy(dtype=object)
    if same.any():
        row = table.index[same][0]
        raise ValueError(f"`{name}` row {show(row)}: system {show(table.loc[row, 'system_a'])} is compared with itself.")
    codes = _winner_codes(table["winner"])
    bad = codes < 0
    if bad.any():
        row = table.index[bad][0]
        raise ValueError(f"`{name}` row {show(row)}: winner {show(table.loc[row, 'winner'])} is not one of {list(WINNERS)} "
                         "(system_a shown first wins: 'a').")
    return table


def _winner_codes(winner: pd.Series) -> np.ndarray:
    """0 for "a", 1 for "b", 2 for "tie", -1 for anything else (missing included)."""
    return np.asarray(pd.Index(list(WINNERS)).get_indexer(pd.Index(winner)), dtype=np.intp)


def comparisons_from_llmbar(decisions) -> pd.DataFrame:
    """LLMBar's judge decisions (:func:`evalkit.datasets.load_llmbar`) as a comparisons table.

    Each decision becomes one comparison of the instance's two outputs as the judge saw them: ``system_a``
    is the output shown first (``"<case_id>/1"`` in the original order, ``"<case_id>/2"`` swapped).
    Unparseable decisions are left out.

    Returns
    -------
    DataFrame
        ``system_a, system_b, winner, comparison_id`` (``"<case_id>/<order>/<judge>"``), ``question_id``
        (the instance), ``rater`` (the judge), ``order``, and ``gold`` (``"a"``/``"b"``: which shown output
        the gold label prefers).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import pairwise
    >>> d = pd.DataFrame({"case_id": ["N/0", "N/0"], "judge": "GPT-4", "order": ["original", "swapped"],
    ...                   "winner": ["1", "1"], "label": "1"})
    >>> pairwise.comparisons_from_llmbar(d)[["system_a", "system_b", "winner", "order", "gold"]]
      system_a system_b winner     order gold
    0    N/0/1    N/0/2      a  original    a
    1    N/0/2    N/0/1      b   swapped    b
    """
    table = check_dataframe(decisions, "decisions")
    check_columns(table, ["case_id", "judge", "order", "winner", "label"], "decisions")
    table, _ = _decisions(table, ["case_id", "judge", "order", "winner", "label"], None)
    parsed = table[table["winner"].notna()]
    case = parsed["case_id"].astype(str)
    original = (parsed["order"] == "original").to_numpy()
    one, two = (case + "/1").to_numpy(), (case + "/2").to_numpy()
    first_is_1 = original
    picked_1 = (parsed["winner"].astype(str) == "1").to_numpy()
    gold_1 = (parsed["label"].astype(str) == "1").to_numpy()
    return pd.DataFrame({
        "system_a": np.where(first_is_1, one, two), "system_b": np.where(first_is_1, two, one),
        "winner": np.where(picked_1 == first_is_1, "a", "b"),
        "comparison_id": (case + "/" + parsed["order"].astype(str) + "/" + parsed["judge"].astype(str)).to_numpy(),
        "question_id": case.to_numpy(), "rater": parsed["judge"].astype(str).to_numpy(),
        "order": parsed["order"].astype(str).to_numpy(), "gold": np.where(gold_1 == first_is_1, "a", "b"),
    })


def _label_files(value) -> bool:
    paths = [value] if isinstance(value, (str, os.PathLike)) else value if isinstance(value, (list, tuple)) else []
    return bool(paths) and all(isinstance(p, (str, os.PathLike)) for p in paths)


def comparisons_from_labels(labels) -> pd.DataFrame:
    """Pairwise labels (the labeller's pairwise mode) as a comparisons table.

    Parameters
    ----------
    labels : str, Path, list of paths, or DataFrame
        Labels files (read with :func:`evalkit.labels.read_labels`) or their records. Each record: ``case_id``
        (the comparison), ``label`` (``"A"``: the answer shown on the left, ``"B"``: on the right, ``"TIE"``, or
        ``"BOTH_BAD"``: neither acceptable, a tie here, as Chatbot Arena counts its "tie (bothbad)"),
        ``system_left`` and ``system_right`` (the systems as they were shown) and ``labeller``. The latest
        label per labeller and case counts; an undo or ignore (a record without a label) clears it; re-labels
        (``mode="relabel"``) are left out.

    Returns
    -------
    DataFrame
        ``system_a`` (shown on the left, first), ``system_b``, ``winner`` (``"a"``, ``"b"``, ``"tie"``),
        ``rater`` (the labeller) and ``comparison_id`` (the case id), one row per labeller and case.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> from evalkit import pairwise
    >>> from evalkit.labels import append_label
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "labels.jsonl"
    >>> for label in ("A", "B"):  # the second label replaces the first
    ...     append_label(path, {"case_id": "c1", "label": label, "labeller": "ann", "system_left": "x",
    ...                         "system_right": "y", "mode": "label"})
    >>> pairwise.comparisons_from_labels(path)
      system_a system_b winner rater comparison_id
    0        x        y      b   ann            c1
    """
    if isinstance(labels, pd.DataFrame):
        records = labels
    elif _label_files(labels):
        paths = [labels] if isinstance(labels, (str, os.PathLike)) else list(labels)
        missing = [str(p) for p in paths if not Path(p).is_file()]
        if missing:
            raise FileNotFoundError(f"{missing[0]}: no such labels file.")
        records = read_labels(paths)
    else:
        raise TypeError("`labels` must be a labels file path, a list of them, or a DataFrame of label records; "
                        f"got {type(labels).__name__}.")
    check_columns(records, ["case_id", "label", "labeller", "system_left", "system_right"], "labels")
    latest = latest_labels(records, by_labeller=True)
    label = latest["label"].astype(str).str.upper()
    bad = ~label.isin(["A", "B", "TIE", "BOTH_BAD"]).to_numpy()
    if bad.any():
        row = latest[bad].iloc[0]
        raise ValueError(f"`labels`: case {show(row['case_id'])} by {show(row['labeller'])} has label "
                         f"{show(row['label'])}; a pairwise label is 'A' (left), 'B' (right), 'TIE' or 'BOTH_BAD'.")
    out = pd.DataFrame({"system_a": latest["system_left"].to_numpy(), "system_b": latest["system_right"].to_numpy(),
                        "winner": label.map({"A": "a", "B": "b", "TIE": "tie", "BOTH_BAD": "tie"}).to_numpy(),
                        "rater": latest["labeller"].to_numpy(), "comparison_id": latest["case_id"].to_numpy()})
    out = out.sort_values(["comparison_id", "rater"], kind="stable").reset_index(drop=True)
    return validate(out, name="labels")


def win_rates(comparisons, *, ties: str = "half") -> pd.DataFrame:
    """Each system's share of wins against each other system (rows beat columns), in either slot.

    Parameters
    ----------
    comparisons : DataFrame
    ties : {"half", "drop"}
        A tie counts as half a win for each (``"half"``) or is left out.

    Returns
    -------
    DataFrame
        Square, systems by systems (sorted by name): the share of row's wins over column; NaN where the two
        never met. ``attrs["ties"]`` names how ties counted; ``attrs["counts"]`` is not set; the number of comparisons
        is :func:`bradley_terry`'s ``n``.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit import pairwise
    >>> c = pd.DataFrame({"system_a": ["x", "y", "x"], "system_b": ["y", "x", "z"], "winner": ["a", "tie", "b"]})
    >>> pairwise.win_rates(c)
          x     y    z
    x   NaN  0.75  0.0
    y  0.25   NaN  NaN
    z  1.00   NaN  NaN
    """
    check_option(ties, ["half", "drop"], "ties")
    table = validate(comparisons)
    if ties == "drop":
        table = table[table["winner"] != "tie"]
    # the order bradley_terry uses: names of mixed types (3 beside "x") sort too, where sorted() would raise
    systems = list(pd.factorize(pd.concat([table["system_a"], table["system_b"]], ignore_index=True), sort=True)[1])
    score_a = table["winner"].map({"a": 1.0, "b": 0.0, "tie": 0.5}).to_numpy()
    rows = pd.DataFrame({"row": np.r_[table["system_a"], table["system_b"]], "col": np.r_[table["system_b"], table["system_a"]],
                         "score": np.r_[score_a, 1.0 - score_a]})
    out = rows.pivot_table(index="row", columns="col", values="score", aggfunc="mean").reindex(
        index=systems, columns=systems).rename_axis(index=None, columns=None)
    out.attrs["ties"] = ties
    return out


# ------------------------------------------------------------------------------------ the BT kernel
class _Cells:
    """Ordered-pair cells (first, second, extra features) with counts of first-wins, second-wins and ties.

    ``rows`` maps each comparison to its cell (for cluster-robust scores); ``outcome`` is 0 (first wins),
    1 (second wins) or 2 (tie) per comparison.
    """

    def __init__(self, first, second, features, outcome, k, collapse: bool):
        self.k, self.p = k, features.shape[1]
        n = len(first)
        if collapse:
            key = first.astype(np.int64) * k + second
            if k * k <= 50_000_000:  # a lookup table over every ordered pair: one bincount instead of a sort
                cell_key = np.flatnonzero(np.bincount(key, minlength=k * k))
                lookup = np.zeros(k * k, dtype=np.intp)
                lookup[cell_key] = np.arange(len(cell_key))
                rows = lookup[key]
            else:
                cell_key, rows = np.unique(key, return_inverse=True)
            self.first, self.second = (cell_key // k).astype(np.intp), (cell_key % k).astype(np.intp)
            self.features = np.ones((len(cell_key), self.p)) if self.p else np.zeros((len(cell_key), 0))
        else:
            rows = np.arange(n)
            self.first, self.second, self.features = first, second, features
        self.rows, self.outcome = rows, outcome
        c = len(self.first)
        counts = np.bincount(rows * 3 + outcome, minlength=3 * c).reshape(c, 3).astype(float)
        self.counts = counts  # (cells, 3): first wins, second wins, ties
        i, j, cell = self.first * k, self.second * k, np.arange(c)
        # (k * k, cells): where each cell's weight lands in the flattened k x k Laplacian (e_i - e_j)(e_i - e_j)^T
        self.laplacian = sparse.csr_matrix((np.r_[np.ones(2 * c), -np.ones(2 * c)], (
            np.r_[i + self.first, j + self.second, i + self.second, j + self.first], np.tile(cell, 4))), shape=(k * k, c))
        self.incidence = sparse.csr_matrix((np.r_[np.ones(c), -np.ones(c)], (np.r_[np.arange(c), np.arange(c)],
                                            np.r_[self.first, self.second])), shape=(c, k))


def _pair_matrix(values: np.ndarray, cells: _Cells) -> np.ndarray:
    """(B, cells) weights -> (B, k, k) Laplacian-like sums: sum_c w_c (e_i - e_j)(e_i - e_j)^T.

    Cells of distinct unordered pairs (``cells.unordered``, the bootstrap's) are written into place, each matrix
    contiguous; others go through one sparse product over the cells, laid out (k, k, B) and returned as a
    (B, k, k) view of it.
    """
    k = cells.k
    if getattr(cells, "unordered", False):
        out = np.zeros((len(values), k * k))
        out[:, cells.first * k + cells.second] = -values
        out[:, cells.second * k + cells.first] = -values
        out = out.reshape(-1, k, k)
        out[:, np.arange(k), np.arange(k)] = -out.sum(axis=2)
        return out
    sums = cells.laplacian @ np.ascontiguousarray(values.T)  # (k * k, B)
    return np.moveaxis(sums.reshape(k, k, -1), -1, 0)


def _information(weights: np.ndarray, cells: _Cells) -> np.ndarray:
    """(B, cells) weights -> (B, k + p, k + p): sum_c w_c x_c x_c^T with x_c = (e_i - e_j, features_c)."""
    k, p = cells.k, cells.p
    if not p:
        return _pair_matrix(weights, cells)
    out = np.zeros((weights.shape[0], k + p, k + p))
    out[:, :k, :k] = _pair_matrix(weights, cells)
    for q in range(p):
        cross = np.asarray((cells.incidence.T @ (weights * cells.features[:, q]).T).T)
        out[:, :k, k + q] = cross
        out[:, k + q, :k] = cross
    out[:, k:, k:] = np.einsum("bc,cp,cq->bpq", weights, cells.features, cells.features)
    return out


def _fit(cells: _Cells, counts: np.ndarray, ties: str, free: np.ndarray, *, max_iter: int = 100, tol: float = 1e-11,
         start: np.ndarray | None = None):
    """Newton's method for (B, cells, 3) counts at once: parameters (B, k + p) with the reference held at 0.

    ``start`` (k + p parameters) is where every fit starts (default zeros). Returns the parameters and a boolean
    array: converged (a finite maximum exists and was reached).
    """
    k, p = cells.k, cells.p
    wins, losses, tie_counts = counts[..., 0], counts[..., 1], counts[..., 2]
    if ties == "half":
        y, total = wins + 0.5 * tie_counts, wins + losses + tie_counts
    else:
        y, total = wins, wins + losses
    b = counts.shape[0]
    theta = np.zeros((b, k + p)) if start is None else np.tile(start, (b, 1))
    done = np.zeros(b, dtype=bool)
    converged = np.zeros(b, dtype=bool)
    for _ in range(max_iter):
        active = ~done
        if not active.any():
            break
        every = active.all()  # then views, not copies, of the resamples still being solved
        t = theta if every else theta[active]
        y_t, total_t = (y, total) if every else (y[active], total[active])
        eta = t[:, cells.first] - t[:, cells.second]
        if p:
            eta += t[:, k:] @ cells.features.T
        prob = expit(eta, out=eta)
        resid = total_t * prob
        np.subtract(y_t, resid, out=resid)
        grad = np.zeros((len(t), k + p))
        grad[:, :k] = np.asarray((cells.incidence.T @ resid.T).T)
        if p:
            grad[:, k:] = resid @ cells.features
        weight = np.subtract(1.0, prob)
        weight *= prob
        weight *= total_t
        info = _information(weight, cells)
        g = grad[:, free]
        h = info[:, free][:, :, free]
        try:
            step = np.linalg.solve(h, g[..., None])[..., 0]
            singular = np.flatnonzero(~np.isfinite(step).all(axis=1))  # LU went through a zero pivot
        except np.linalg.LinAlgError:
            step, singular = np.empty_like(g), np.arange(len(g))
        for r in singular:  # the least-squares step: a system without comparisons stays, the others move
            step[r] = np.linalg.lstsq(h[r], g[r], rcond=None)[0]
        step = np.where(np.isfinite(step), step, 0.0)
        big = np.abs(step).max(axis=1, initial=0.0)
        step = step * np.minimum(1.0, 5.0 / np.maximum(big, 1e-300))[:, None]  # at most 5 log-odds per step
        t[:, free] += step
        if not every:
            theta[active] = t
        finished = big < tol
        diverged = np.abs(t).max(axis=1) > 40.0  # a gap of 40 log-odds: no finite maximum (a separated design)
        idx = np.flatnonzero(active)
        converged[idx[finished & ~diverged]] = True
        done[idx[finished | diverged]] = True
    return theta, converged


def _design(comparisons, ties, position, covariates, anchor, cluster):
    table = validate(comparisons)
    check_option(ties, ["half", "drop"], "ties")
    if not isinstance(position, bool):
        raise TypeError(f"`position` must be True or False; got {position!r}.")
    covariates = [] if covariates is None else [covariates] if isinstance(covariates, str) else list(covariates)
    check_columns(table, covariates, "comparisons")
    for column in covariates:
        values = table[column]
        if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values) or not np.isfinite(
                values.to_numpy(dtype=float)).all():
            raise ValueError(f"`comparisons` column {column!r} (a covariate) must hold finite numbers (the value for "
                             f"system_a minus the value for system_b, e.g. a length difference); got dtype {values.dtype}.")
    groups = None if cluster is None else as_clusters(cluster, table.index, table=table, key=None,
                                                      table_name="comparisons")[0]
    _warn_pooled_votes(table, groups)
    if ties == "drop":
        keep = (table["winner"] != "tie").to_numpy()
        table, groups = table[keep], None if groups is None else pd.factorize(groups[keep])[0]
    if table.empty:
        raise ValueError("`comparisons` has no comparison to rate" + (" once ties are dropped." if ties == "drop" else "."))
    codes, systems = pd.factorize(pd.concat([table["system_a"], table["system_b"]], ignore_index=True), sort=True)
    n = len(table)
    first, second = codes[:n].astype(np.intp), codes[n:].astype(np.intp)
    if anchor is not None and anchor not in set(systems):
        raise ValueError(f"`anchor` {show(anchor)} is not a system of `comparisons`; systems include "
                         f"{list(map(str, systems[:5]))}.")
    outcome = _winner_codes(table["winner"])
    features = [np.ones(n)] if position else []
    features += [table[c].to_numpy(dtype=float) for c in covariates]
    features = np.column_stack(features) if features else np.zeros((n, 0))
    names = (["first_slot"] if position else []) + covariates
    cells = _Cells(first, second, features, outcome, len(systems), collapse=not covariates)
    return table, list(systems), names, cells, groups


def _warn_pooled_votes(table: pd.DataFrame, groups: np.ndarray | None) -> None:
    """Warn where one fit would pool what should be apart: several raters (humans beside LLM judges), or a comparison
    given in several rows (its raters' votes, or repeats) that the intervals would take as independent."""
    problems = []
    if "rater" in table.columns and table["rater"].nunique() > 1:
        raters = list(map(str, pd.unique(table["rater"].dropna())))
        problems.append(f"the votes of {len(raters)} raters ({', '.join(raters[:4])}{', ...' if len(raters) > 4 else ''}) "
                        f"are pooled into one rating, as if they were one rater; rate each apart "
                        f"(comparisons[comparisons['rater'] == {raters[0]!r}]), or drop the 'rater' column to pool "
                        "them on purpose")
    ids = table["comparison_id"] if "comparison_id" in table.columns else \
        pd.Series(table.index, index=table.index) if table.index.name == "comparison_id" else None
    if ids is not None and ids.duplicated().any():
        nested = groups is not None and pd.Series(groups).groupby(ids.to_numpy()).nunique().max() <= 1
        if not nested:
            first = ids[ids.duplicated()].iloc[0]
            problems.append(f"comparison_id {show(first)} is in {int((ids == first).sum())} rows ({int(ids.duplicated().sum())} "
                            "repeated rows in all): the intervals take every row as independent; pass "
                            "cluster='comparison_id' (or a column that holds each comparison in one cluster, such as "
                            "the question) to count a comparison's votes together")
    if problems:
        warn("bradley_terry: " + "; and ".join(problems) + ".")


def _connected(cells: _Cells, ties: str, counts: np.ndarray | None = None) -> bool:
    """A finite maximum needs every split of the systems to have a win (or tie) across it both ways.

    ``counts`` (cells, 3) replaces the cells' own counts (a resample's).
    """
    from scipy.sparse.csgraph import connected_components

    k = cells.k
    counts = cells.counts if counts is None else counts
    won = counts[:, 0] + (counts[:, 2] if ties == "half" else 0)
    lost = counts[:, 1] + (counts[:, 2] if ties == "half" else 0)
    rows = np.r_[cells.first[won > 0], cells.second[lost > 0]]
    cols = np.r_[cells.second[won > 0], cells.first[lost > 0]]
    graph = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(k, k))
    return connected_components(graph, directed=True, connection="strong")[0] == 1


def _covariance(theta, cells: _Cells, ties: str, free, groups):
    """Robust (sandwich) covariance of the free parameters; cluster-robust when ``groups`` is given."""
    k = cells.k
    eta = theta[cells.first] - theta[cells.second] + cells.features @ theta[k:]
    prob = expit(eta)
    wins, losses, tie_counts = cells.counts.T
    total = wins + losses + (tie_counts if ties == "half" else 0)
    bread = _information((total * prob * (1 - prob))[None], cells)[0][np.ix_(free, free)]
    if groups is None:
        # sum over comparisons of (y_i - p)^2, per cell: wins at y = 1, losses at 0, ties at 1/2
        second_moment = wins * (1 - prob) ** 2 + losses * prob**2 + (tie_counts * (0.5 - prob) ** 2 if ties == "half" else 0)
        meat = _information(second_moment[None], cells)[0][np.ix_(free, free)]
        correction = 1.0
    else:
        resid = np.array([1.0, 0.0, 0.5])[cells.outcome] - prob[cells.rows]  # each comparison's y_i - p_i
        n_groups = int(groups.max()) + 1
        g = sparse.csr_matrix((resid, (groups, cells.rows)), shape=(n_groups, len(cells.first)))
        x = sparse.hstack([cells.incidence, sparse.csr_matrix(cells.features)]).tocsr()
        sums = (g @ x)[:, free]
        meat = np.asarray((sums.T @ sums).todense())
        n_obs = len(cells.rows)
        correction = n_groups / (n_groups - 1) * (n_obs - 1) / (n_obs - len(free)) if n_groups > 1 else np.nan
    try:
        left = np.linalg.solve(bread, meat)
        return np.linalg.solve(bread, left.T).T * correction  # bread^-1 meat bread^-1 (the bread is symmetric)
    except np.linalg.LinAlgError:
        inv = np.linalg.pinv(bread)
        return inv @ meat @ inv * correction


def _resample_space(cells: _Cells) -> tuple[_Cells, np.ndarray]:
    """The cells a resample is drawn over and fitted on, and where each (cell, outcome) category of ``cells`` goes.

    Without a position term or covariates the likelihood cannot tell a comparison of ``j`` with ``i`` shown first
    from one of ``i`` with ``j`` with the outcome mirrored: both orders of a pair are one cell (half as many
    categories to draw and cells to fit). With them, the cells as they are.
    """
    if cells.p:
        return cells, np.arange(3 * len(cells.first))
    k = cells.k
    low, high = np.minimum(cells.first, cells.second), np.maximum(cells.first, cells.second)
    pairs, pair = np.unique(low * k + high, return_inverse=True)
    mirrored = cells.first > cells.second
    outcome = np.where(mirrored[:, None], [1, 0, 2], [0, 1, 2])  # first wins <-> second wins; a tie stays a tie
    category = (pair[:, None] * 3 + outcome).ravel()
    m = len(pairs)
    space = _Cells((pairs // k).astype(np.intp), (pairs % k).astype(np.intp), np.zeros((m, 0)),
                   np.zeros(m, dtype=np.intp), k, collapse=False)
    space.unordered = True  # each pair once: its Hessian is written into place (_pair_matrix)
    return space, category


def _resamples_connected(space: _Cells, ties: str, counts: np.ndarray) -> np.ndarray:
    """:func:`_connected` of each resample's (B, cells, 3) counts over the cells of a design that is connected.

    A resample with a win and a loss in every cell has the design's graph, so is connected too; the others
    (few, where every pair was compared often) get the graph search.
    """
    won, lost = counts[..., 0], counts[..., 1]
    if ties == "half":
        won, lost = won + counts[..., 2], lost + counts[..., 2]
    out = ((won > 0) & (lost > 0)).all(axis=1)
    for b in np.flatnonzero(~out):
        out[b] = _connected(space, ties, counts[b])
    return out


def _bootstrap(cells: _Cells, ties: str, free, groups, n_resamples: int, rng, start) -> tuple[np.ndarray, int]:
    """Parameters (n_resamples, k + p) refitted on resamples of the comparisons (of the clusters when given).

    A resample of the n comparisons counts how many fall in each (cell, outcome) category: a multinomial draw
    of n over the categories' shares, the same law as drawing n comparisons with replacement and counting them,
    at a cost that grows with the categories instead of n (:func:`_resample_space` halves them where it can). A
    cluster resample adds up the categories of the clusters drawn. The resamples come in batches, each from its
    own child generator of ``rng`` (spawned in order, so the draws do not depend on the threads); the next batch
    is drawn on another thread (numpy releases the interpreter lock) while Newton's method, started at the
    estimate ``start``, solves the current one. Without a position term or covariates a resample has a finite
    maximum exactly when its wins connect the systems both ways (:func:`_connected`), which is checked on each:
    Newton's method alone can stall on a separated resample once the logistic saturates in floating point.
    """
    from concurrent.futures import ThreadPoolExecutor

    space, category = _resample_space(cells)
    n_cells = len(space.first)
    flat = category[cells.rows * 3 + cells.outcome]  # each comparison's category
    n = len(flat)
    if groups is not None:
        n_groups = int(groups.max()) + 1
        membership = sparse.csr_matrix((np.ones(n), (groups, flat)), shape=(n_groups, 3 * n_cells))
    else:
        probs = np.bincount(flat, minlength=3 * n_cells) / n
    per_batch = max(1, 4_000_000 // (3 * n_cells + (0 if groups is None else n_groups)))
    sizes = [min(per_batch, n_resamples - first) for first in range(0, n_resamples, per_batch)]
    generators = rng.spawn(len(sizes))

    def draw(batch: int) -> np.ndarray:
        b, gen = sizes[batch], generators[batch]
        if groups is None:
            counts = gen.multinomial(n, probs, size=b).astype(float)
        else:
            weights = gen.multinomial(n_groups, np.full(n_groups, 1.0 / n_groups), size=b).astype(float)
            counts = np.asarray((membership.T @ weights.T).T)
        return counts.reshape(b, n_cells, 3)

    out, failed = [], 0
    with ThreadPoolExecutor(1) as pool:
        pending = pool.submit(draw, 0)
        for batch in range(len(sizes)):
            counts = pending.result()
            if batch + 1 < len(sizes):
                pending = pool.submit(draw, batch + 1)
            # Newton's convergence is quadratic: after a step below 1e-6 the error is near 1e-12 or less (on 1M
            # comparisons of 100 systems, within 3e-15 of a solve to 1e-13), one solve of every resample fewer than
            # the estimate's own tolerance (1e-11) takes
            theta, converged = _fit(space, counts, ties, free, start=start, tol=1e-6)
            if not space.p:  # a separated resample can stall where the logistic saturates: its graph says so exactly
                converged &= _resamples_connected(space, ties, counts)
            theta[~converged] = np.nan
            failed += int((~converged).sum())
            out.append(theta)
    return np.concatenate(out), failed


def _percentiles(draws: np.ndarray, failed: int, confidence_level: float):
    """Percentile interval ends over all resamples, counting those without a finite maximum as lying beyond
    every finite value on either side (they may): an end whose tail reaches them is NaN."""
    b = len(draws)
    finite = draws[~np.isnan(draws).any(axis=1)]
    beyond = (1 - confidence_level) / 2 * b - failed  # finite resamples left in each tail
    if beyond < 0 or len(finite) == 0:
        return np.full(draws.shape[1], np.nan), np.full(draws.shape[1], np.nan)
    share = 100 * beyond / len(finite) if failed else 100 * (1 - confidence_level) / 2
    return np.percentile(finite, share, axis=0), np.percentile(finite, 100 - share, axis=0)


def _bt(comparisons, *, ties, position, covariates, anchor, interval, cluster, confidence_level, n_resamples, rng):
    check_option(interval, ["sandwich", "bootstrap"], "interval")
    confidence_level = check_level(confidence_level)
    n_resamples = check_number(n_resamples, "n_resamples", low=1, integer=True)
    rng = check_rng(rng)
    table, systems, names, cells, groups = _design(comparisons, ties, position, covariates, anchor, cluster)
    k, p = cells.k, cells.p
    anchor_index = systems.index(anchor) if anchor is not None else None
    reference = anchor_index if anchor_index is not None else 0
    free = np.array([i for i in range(k + p) if i != reference])
    counts = {"n": np.zeros(k), "wins": np.zeros(k), "losses": np.zeros(k), "ties": np.zeros(k)}
    for column, (a_col, b_col) in (("wins", (0, 1)), ("losses", (1, 0)), ("ties", (2, 2))):
        counts[column] = (np.bincount(cells.first, cells.counts[:, a_col], minlength=k)
                          + np.bincount(cells.second, cells.counts[:, b_col], minlength=k))
    counts["n"] = counts["wins"] + counts["losses"] + counts["ties"]
    nan = np.full(k + p, np.nan)
    # with clusters, Wald intervals and tests use Student's t with (clusters - 1) degrees of freedom (the usual
    # small-sample rule for cluster-robust standard errors; Cameron & Miller 2015): a few dozen questions are few
    df = int(groups.max()) if groups is not None and interval == "sandwich" else None
    result = {"systems": systems, "names": names, "counts": counts, "anchor_index": anchor_index,
              "theta": nan, "low": nan, "high": nan, "se": nan, "df": df}
    if not _connected(cells, ties):
        warn("bradley_terry: the comparisons split the systems into groups where one group won (or tied) "
             "every comparison with the other, so no finite rating separates them; ratings are NaN. "
             "Add comparisons across the groups.")
        return result
    theta, converged = _fit(cells, cells.counts[None], ties, free)
    theta = theta[0]
    if not converged[0]:
        warn("bradley_terry: the fit did not converge to a finite maximum (a covariate or the position "
             "separates the outcomes); ratings are NaN.")
        return result
    # linear map from the parameters to the reported quantities: centred (or anchored) ratings, then terms
    transform = np.zeros((k + p, k + p))
    transform[:k, :k] = ELO * (np.eye(k) - (np.eye(k)[anchor_index] if anchor_index is not None else np.full((k, k), 1.0 / k)))
    transform[k:, k:] = np.eye(p)
    point = transform @ theta
    point[:k] += CENTRE
    if interval == "sandwich":
        cov = np.zeros((k + p, k + p))
        cov[np.ix_(free, free)] = _covariance(theta, cells, ties, free, groups)
        se = np.sqrt(np.maximum(np.diag(transform @ cov @ transform.T), 0.0))
        z = z_value(confidence_level) if df is None else float(stats.t.ppf(0.5 + confidence_level / 2, df))
        low, high = point - z * se, point + z * se
    else:
        draws, failed = _bootstrap(cells, ties, free, groups, n_resamples, rng, theta)
        reported = draws @ transform.T
        reported[:, :k] += CENTRE
        if failed:
            warn(f"bradley_terry: {failed} of {n_resamples} bootstrap resamples have no finite maximum (a "
                 "system won or lost every comparison in them); intervals that reach them are NaN.")
        low, high = _percentiles(reported, failed, confidence_level)
        se = np.nanstd(reported, axis=0, ddof=1)
    result.update(theta=point, low=low, high=high, se=se)
    return result


def bradley_terry(comparisons, *, ties: str = "half", position: bool = False, covariates=None, anchor=None,
                  interval: str = "sandwich", cluster=None, confidence_level: float = 0.95, n_resamples: int = 1000,
                  rng=None) -> pd.DataFrame:
    """Bradley-Terry ratings on the Elo scale, with robust or bootstrap intervals.

    ``P(system_a beats system_b) = 1 / (1 + 10 ** (-(R_a - R_b + first_slot) / 400))``, fitted by maximum
    likelihood (400 / ln 10 Elo points per unit of log-strength).

    Parameters
    ----------
    comparisons : DataFrame
        ``system_a`` (shown first), ``system_b``, ``winner`` (``"a"``, ``"b"``, ``"tie"``), see :func:`validate`.
    ties : {"half", "drop"}, default "half"
        ``"half"``: a tie is half a win for each (FastChat's convention; the intervals treat it as an outcome
        of 1/2); ``"drop"``: ties are left out.
    position : bool, default False
        Estimate a first-slot advantage jointly, as one more parameter (the ratings are then those of a
        system in either slot); its estimate is :func:`bradley_terry_effects`'s ``first_slot`` row.
    covariates : str or list of str, optional
        Numeric columns holding the value for ``system_a`` minus the value for ``system_b`` (e.g. the difference
        in length or in markdown headers, as FastChat's style control uses): the ratings are controlled for them.
    anchor : str, optional
        A system whose rating is fixed at 1000 (its interval is then zero wide and the others' are relative to
        it); by default the mean rating is 1000 and each interval is for a system's rating relative to that mean.
    interval : {"sandwich", "bootstrap"}, default "sandwich"
        ``"sandwich"``: the robust (Huber-White) covariance of the maximum-likelihood estimate, as the Arena
        paper and lmarena's arena-rank compute it, Wald intervals; ``"bootstrap"``: percentile intervals of
        ``n_resamples`` refits on resampled comparisons.
    cluster : str or sequence, optional
        Dependent comparisons (votes on one question, both orders of one instance): a column of ``comparisons``
        whose equal values mark them, or a sequence of cluster ids, one per comparison: the sandwich becomes cluster-robust (with statsmodels' small-sample factor, and Student's t
        with clusters - 1 degrees of freedom for the interval) and the bootstrap resamples whole clusters.
    confidence_level : float, default 0.95
    n_resamples : int, default 1000
    rng : None, int or numpy.random.Generator
        For the bootstrap.

    Returns
    -------
    DataFrame
        One row per system, best first: ``system, rating, ci_low, ci_high, n, wins, losses, ties, rank`` (counts
        in either slot; ``rank`` 1 is the highest rating, equal ratings share the better rank).
        ``attrs``: ``interval``, ``cluster``, ``ties``, ``confidence_level``, ``anchor``. NaN ratings with an
        :class:`~evalkit.EvalkitWarning` where no finite maximum exists (some group of systems won every
        comparison with the rest).

    Warns
    -----
    EvalkitWarning
        When the table would be pooled without a word: a ``rater`` column naming several raters (humans beside
        LLM judges: one rating of them all), or a comparison given in several rows (a ``comparison_id`` column,
        or index, that repeats: several raters' votes, or repeats) that no ``cluster`` holds together, so the
        intervals would take each row as an independent comparison.

    Examples
    --------
    >>> from evalkit import datasets, pairwise
    >>> votes = datasets.load_demo("pairwise")["comparisons"]
    >>> pairwise.bradley_terry(votes)[["system", "rating", "ci_low", "ci_high", "n", "rank"]].round(1)
         system  rating  ci_low  ci_high    n  rank
    0  system-a  1136.6  1108.3   1164.9  425     1
    1  system-b  1079.8  1055.9   1103.7  539     2
    2  system-c  1012.0   990.1   1034.0  602     3
    3  system-d   980.4   959.1   1001.7  634     4
    4  system-e   911.4   887.5    935.4  568     5
    5  system-f   879.8   852.4    907.1  432     6
    """
    fit = _bt(comparisons, ties=ties, position=position, covariates=covariates, anchor=anchor, interval=interval,
              cluster=cluster, confidence_level=confidence_level, n_resamples=n_resamples, rng=rng)
    k = len(fit["systems"])
    counts = fit["counts"]
    out = pd.DataFrame({"system": fit["systems"], "rating": fit["theta"][:k], "ci_low": fit["low"][:k],
                        "ci_high": fit["high"][:k], "n": counts["n"].astype(int), "wins": counts["wins"].astype(int),
                        "losses": counts["losses"].astype(int), "ties": counts["ties"].astype(int)})
    out["rank"] = out["rating"].rank(ascending=False, method="min").astype("Int64")
    out = out.sort_values(["rating", "system"], ascending=[False, True], kind="stable", na_position="last")
    out = out.reset_index(drop=True)
    out.attrs.update(interval=interval, cluster=cluster, ties=ties, confidence_level=confidence_level, anchor=anchor,
                     terms=fit["names"])
    return out


def bradley_terry_effects(comparisons, *, ties: str = "half", position: bool = True, covariates=None,
                          interval: str = "sandwich", cluster=None, confidence_level: float = 0.95,
                          n_resamples: int = 1000, rng=None) -> pd.DataFrame:
    """The non-system terms of a Bradley-Terry fit: the first-slot advantage and style covariates.

    Fitted jointly with the system ratings exactly as :func:`bradley_terry` fits them (same options).

    Returns
    -------
    DataFrame
        One row per term (``"first_slot"`` first, then the covariates): ``term, coef`` (log-odds that the first
        system wins, per unit of the term), ``ci_low, ci_high`` (of ``coef``), ``p_val`` (two-sided Wald test
        of ``coef = 0`` with the sandwich standard error, on Student's t with clusters - 1 degrees of freedom when
        ``cluster`` is given, or with the bootstrap's standard deviation when ``interval="bootstrap"``), ``elo``
        (``coef`` in Elo points: 400 / ln 10 per unit). ``attrs`` as for :func:`bradley_terry`. NaN, with an
        :class:`~evalkit.EvalkitWarning`, where no finite maximum exists, as for :func:`bradley_terry`.

    Examples
    --------
    >>> from evalkit import datasets, pairwise
    >>> votes = datasets.load_demo("pairwise")["comparisons"]
    >>> pairwise.bradley_terry_effects(votes).round(3)
             term   coef  ci_low  ci_high  p_val     elo
    0  first_slot  0.104   0.011    0.197  0.028  18.037
    """
    if not position and not covariates:
        raise ValueError("bradley_terry_effects needs `position=True` or `covariates` (there is no other term).")
    fit = _bt(comparisons, ties=ties, position=position, covariates=covariates, anchor=None, interval=interval,
              cluster=cluster, confidence_level=confidence_level, n_resamples=n_resamples, rng=rng)
    k = len(fit["systems"])
    coef, low, high, se = (fit[key][k:] for key in ("theta", "low", "high", "se"))
    with np.errstate(invalid="ignore", divide="ignore"):
        tail = stats.norm if fit["df"] is None else stats.t(fit["df"])
        p_val = 2 * tail.sf(np.abs(coef / se))
    out = pd.DataFrame({"term": fit["names"], "coef": coef, "ci_low": low, "ci_high": high, "p_val": p_val,
                        "elo": coef * ELO})
    out.attrs.update(interval=interval, cluster=cluster, ties=ties, confidence_level=confidence_level)
    return out


# --------------------------------------------------------------------------------------- rank-sets
def _winner_series(values, name: str) -> pd.Series:
    if isinstance(values, pd.DataFrame):
        check_columns(values, ["winner"], name)
        values = values["winner"]
    if not isinstance(values, pd.Series):
        raise TypeError(f"`{name}` must be a comparisons DataFrame (or a Series of winners) indexed by comparison; "
                        f"got {type(values).__name__}.")
    bad = ~values.astype(object).isin(WINNERS).to_numpy()
    if bad.any():
        raise ValueError(f"`{name}` comparison {show(values.index[bad][0])}: winner {show(values[bad].iloc[0])} is not "
                         f"one of {list(WINNERS)}.")
    return values.astype(str)


def _system_means(first, second, w_first, w_second, k):
    """Per-system count and mean of the win indicators over the comparisons the system took part in."""
    count = np.bincount(first, minlength=k) + np.bincount(second, minlength=k)
    total = np.bincount(first, w_first, minlength=k) + np.bincount(second, w_second, minlength=k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return count, total / count


def _deviations(first, second, w_first, w_second, means, k):
    """(k, comparisons) sparse: each comparison's deviation from its systems' means, in their rows."""
    m = len(first)
    cols = np.r_[np.arange(m), np.arange(m)]
    return sparse.csr_matrix((np.r_[w_first - means[first], w_second - means[second]], (np.r_[first, second], cols)),
                             shape=(k, m))


def _mean_covariance(first, second, w_first, w_second, means, count, k):
    """Delta-method covariance of the per-system means: sum_i d_mi d_li / (n_m n_l)."""
    d = _deviations(first, second, w_first, w_second, means, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        return (d @ d.T).toarray() / np.outer(count, count)


#: Rank-set constructions of :func:`rank_sets` (``sets=``).
RANK_SET_METHODS = ("stepdown", "max-t", "bonferroni", "ellipsoid")
#: A system needs this many comparisons (human votes, for ``method="ppr"`` and ``"human"``) to be ordered: with
#: fewer, votes that all agree give a variance of 0 and any gap looks certain. On the arena votes (12 systems, 50
#: human votes, some systems with 2-3) the step-down sets held the ranking in 0.914 of 500 draws without the rule.
MIN_RANK_VOTES = 5
#: log2 of the normal draws behind a max-t critical value: 2**15 scrambled Sobol points (randomised quasi-Monte Carlo,
#: scipy.stats.qmc, from one fixed seed, so the same data give the same sets). The quantile's error is then about
#: 0.003 (standard deviation over seeds, k = 5 independent estimates, against scipy.stats.studentized_range), as
#: plain Monte Carlo would give with some 200,000 draws; it moves the level by about 0.0005.
MAX_T_DRAWS_LOG2 = 15
_MAX_T_SEED = 20240229


@functools.lru_cache(maxsize=8)
def _standard_normal_points(k: int) -> np.ndarray:
    """(k, 2**MAX_T_DRAWS_LOG2) scrambled-Sobol standard normal points from the fixed seed (read-only, kept per k)."""
    from scipy.stats import qmc

    points = qmc.MultivariateNormalQMC(np.zeros(k), seed=_MAX_T_SEED).random(2**MAX_T_DRAWS_LOG2).T.copy()
    points.setflags(write=False)
    return points


def _max_t_draws(cov: np.ndarray) -> np.ndarray:
    """(k, 2**MAX_T_DRAWS_LOG2) draws of N(0, cov), one per column, from the fixed points; through the
    eigendecomposition, as cov may be singular."""
    values, vectors = np.linalg.eigh((cov + cov.T) / 2)
    return (vectors * np.sqrt(np.clip(values, 0.0, None))) @ _standard_normal_points(len(cov))


def _max_t_quantile(z: np.ndarray, i, j, scale, up, down, level: float) -> float:
    """The ``level`` quantile over the draws ``z`` (k x draws) of the largest one-sided statistic still tested:
    ``(z_i - z_j) / sd_ij`` for the pairs in ``up`` (H: theta_i <= theta_j), ``(z_j - z_i) / sd_ij`` for those in
    ``down``; both for a pair in both, so its |difference|."""
    maxima, d = np.full(z.shape[1], -np.inf), np.empty(z.shape[1])
    for p in np.flatnonzero(up | down):  # one pair at a time, in place: rows of z are contiguous
        np.subtract(z[i[p]], z[j[p]], out=d)
        d *= scale[p] if up[p] else -scale[p]
        if up[p] and down[p]:
            np.abs(d, out=d)
        np.maximum(maxima, d, out=maxima)
    return float(np.quantile(maxima, level))


def _ordered_pairs(estimate, cov, confidence_level: float, how: str):
    """Which pairs (i < j of ``np.triu_indices``) a simultaneous procedure orders: ``above`` (i above j) and
    ``below`` (j above i), controlling at 1 - confidence_level the chance of ordering any pair the wrong way, and
    the critical value of each round (one for the single-step constructions).

    ``"bonferroni"`` and ``"ellipsoid"``: a pair is ordered when its interval at the Bonferroni (all k(k-1)/2 pairs)
    or the chi-square(k) ellipsoid's critical value excludes 0. ``"max-t"``: the critical value is the
    confidence_level quantile of the largest |standardised difference| under N(0, cov) (a studentized-maximum,
    Tukey-type band for correlated, unequal-variance estimates). ``"stepdown"``: the max-t step-down over the
    k(k-1) one-sided hypotheses theta_i <= theta_j (Romano & Wolf 2005; the ranks' version of Mogstad, Romano,
    Shaikh & Wilhelm 2024): after each round the critical value is recomputed over the hypotheses not yet
    rejected, until none is added. Every max-t critical value is capped at the Bonferroni one for the same
    hypotheses (the true quantile never exceeds it), so the sets are never larger than Bonferroni's or Holm's.
    """
    k = len(estimate)
    i, j = np.triu_indices(k, 1)
    sd = np.sqrt(np.maximum(cov[i, i] + cov[j, j] - 2 * cov[i, j], 0.0))
    gap = estimate[i] - estimate[j]
    alpha = 1 - confidence_level
    if how in ("bonferroni", "ellipsoid"):
        q = np.sqrt(stats.chi2.ppf(1 - alpha, k)) if how == "ellipsoid" else stats.norm.ppf(1 - alpha / (k * (k - 1)))
        return gap - sd * q > 0, -gap - sd * q > 0, [float(q)]
    with np.errstate(divide="ignore", invalid="ignore"):
        t = np.where(sd > 0, gap / sd, np.where(gap == 0, 0.0, np.sign(gap) * np.inf))  # a known difference: ordered
        scale = np.where(sd > 0, 1 / sd, 0.0)
    z = _max_t_draws(cov)
    up, down = np.ones(len(i), dtype=bool), np.ones(len(i), dtype=bool)  # not yet rejected
    critical = []
    while up.any() or down.any():
        tested = int(up.sum() + down.sum())
        c = min(_max_t_quantile(z, i, j, scale, up, down, confidence_level), stats.norm.ppf(1 - alpha / tested))
        critical.append(c)
        new_up, new_down = up & (t > c), down & (-t > c)
        up, down = up & ~new_up, down & ~new_down
        if how == "max-t" or not (new_up.any() or new_down.any()):
            break
    return ~up, ~down, critical


def _sets(estimate, cov, confidence_level: float, how: str):
    """Rank-sets (best rank 1) from estimates and their covariance: rank_low is 1 + the systems ordered above,
    rank_high k - those ordered below, by :func:`_ordered_pairs`; and its critical values."""
    k = len(estimate)
    i, j = np.triu_indices(k, 1)
    above, below, critical = _ordered_pairs(np.asarray(estimate, dtype=float), np.asarray(cov, dtype=float),
                                            confidence_level, how)
    better = np.bincount(j[above], minlength=k) + np.bincount(i[below], minlength=k)  # systems certainly above
    worse = np.bincount(i[above], minlength=k) + np.bincount(j[below], minlength=k)
    return 1 + better, k - worse, critical


def rank_sets(judge, human, *, confidence_level: float = 0.95, method: str = "ppr", sets: str = "stepdown"
              ) -> pd.DataFrame:
    """Prediction-powered rank-sets: the ranks each system can hold, from many judge votes and a few human ones.

    Each system's win probability (the chance it wins a comparison it takes part in; a tie is a win for
    neither side, as Chatzi et al. define it) is estimated from the judge's verdicts on every comparison,
    rectified with the human votes on a random subset (prediction-powered inference, with the power-tuned
    weight lambda); a rank-set holds every rank consistent with the pairs a simultaneous procedure orders.

    Parameters
    ----------
    judge : DataFrame or dict of DataFrame
        The judge's verdicts as a comparisons table (``system_a, system_b, winner``), one row per comparison,
        indexed by a unique comparison id. A dict ``{name: table}`` is a jury: several judges' verdicts on the same
        comparisons (the same ids, systems and order). Their verdicts are combined, per comparison, as
        ``sum_k w_k verdict_k`` (for "A won" and for "B won" alike), the weights ``w`` the least-squares fit of the
        human outcome (+1 A won, -1 B won, 0 tie) on each judge's (``attrs["weights"]``), and the combination is
        the judge of the prediction-powered estimate (its ``lam`` tuned on top). The weights are learned on the
        same human votes as ``lam``, as PPI++ with several predictors learns its vector of weights: the k weights
        add no more than lam does to the estimate's large-sample law, on which these sets rest anyway.
        ``method="judge"`` then uses the judges' plain average.
    human : DataFrame or Series
        Human votes (``winner``, or a Series of winners) on a random subset of the comparisons, indexed by
        those ids (a subset of ``judge``'s index, as :func:`evalkit.infer.mean` takes its labels); where it
        carries ``system_a``/``system_b`` they must match the judge's.
    confidence_level : float, default 0.95
        The probability that every system's rank-set holds its true rank at once.
    method : {"ppr", "human", "judge"}, default "ppr"
        ``"ppr"``: judge and humans combined; ``"human"``: the human votes alone; ``"judge"``: the judge's
        verdicts alone, as if they were human (valid only for a judge that agrees with people exactly).
    sets : {"stepdown", "max-t", "bonferroni", "ellipsoid"}, default "stepdown"
        How pairs are ordered, each with the same simultaneous guarantee (asymptotically, every system's set holds
        its true rank at once with probability >= ``confidence_level``), from the smallest sets to the largest:
        ``"stepdown"``: the max-t step-down of Mogstad, Romano, Shaikh & Wilhelm (2024) over the k(k-1) one-sided
        hypotheses "system i is not above system j": a pair is ordered when its standardised difference exceeds
        the ``confidence_level`` quantile of the largest one still tested, under the estimates' joint normal
        law, and the quantile is recomputed over the hypotheses left until no pair is added; ``"max-t"``: that
        first round only (a studentized-maximum, Tukey-type band for every difference); ``"bonferroni"``: each
        of the k(k-1)/2 differences gets a two-sided 1 - alpha / (k(k-1)/2) interval; ``"ellipsoid"``: the
        paper's construction (a pair is ordered when the chi-square(k) confidence ellipsoid of all win
        probabilities orders it). Each gives sets no larger than the next: the max-t critical values are never
        above Bonferroni's, and Bonferroni's never above the ellipsoid's.

    Returns
    -------
    DataFrame
        One row per system, highest estimate first: ``system, estimate, rank_low, rank_high`` (rank 1 is
        the best). ``attrs``: ``lam`` (the judge's weight: 0 human-only, 1 judge-only), ``n_labelled``,
        ``n_unlabelled``, ``method``, ``sets``, ``confidence_level``, ``covariance`` (k x k, of the estimates),
        ``critical_values`` (the standardised gap a pair needed to be ordered, one per round of the step-down, one
        for the other constructions; empty with fewer than two systems to order); with a jury, ``weights`` (each
        judge's weight).
        A system without a comparison in a sample the method needs gets a NaN estimate, the ranks 1 to k and
        an :class:`~evalkit.EvalkitWarning`, and every other system's worst rank moves down by one for it; so
        does one with fewer than ``MIN_RANK_VOTES`` (5) such comparisons, but for its estimate, which is kept.

    Notes
    -----
    The estimates, lambda (the trace-minimising weight, with the judge's variance estimated on the
    unlabelled comparisons) and the rank-set rule (``sets="ellipsoid"``) are those of the authors' code
    (Networks-Learning/prediction-powered-ranking, ``src/estimate.py``, ``src/ranksets.py``); lambda equals
    theirs when each system takes part in equally many comparisons, as in their experiments. The covariance
    is not theirs: their code divides the cross-products of comparison deviations by ``n**2`` (all
    comparisons), while the estimate of a system averages only the ``n_m`` comparisons it takes part in, so
    their variances are too small by ``(n_m / n)**2`` (``(2 / k)**2`` when every pair is equally frequent). On
    the Chatbot Arena votes of 12 systems with GPT-4 as the judge, in their own design (990 human votes, equal
    counts per pair, 100 splits drawn as their scripts draw them), their 95% rank-sets held the human ranking
    in 36 of the 100 splits; these, built from the same estimates, in all 100. Here each entry is divided by
    ``n_m n_l``: the delta-method covariance of those per-system means.

    The max-t critical values are quantiles of the largest standardised difference of N(0, covariance) draws:
    2**15 scrambled Sobol points from one fixed seed (scipy.stats.qmc, so the same data give the same sets),
    whose quantile is within about 0.003-0.008 of the exact one (scipy.stats.studentized_range, k = 2-12
    independent estimates), and capped at the Bonferroni value for the hypotheses still tested (the exact
    quantile never exceeds it). The pairwise construction is narrower than the overlap of k simultaneous
    intervals for the systems themselves (Klein, Wright & Wieczorek 2020), which needs a gap of the sum of two
    half-widths where a difference needs one interval for it. On the Chatbot Arena votes (Chatzi et al.'s 12
    systems, GPT-4 as the judge, 1,000 human votes, 300 draws; ``benchmarks/bench_rank_sets.py``) the step-down
    sets held 5.52 ranks on average, against 5.64 (max-t), 5.77 (Bonferroni) and 7.17 (ellipsoid), and 5.78
    (step-down) and 6.05 (Bonferroni) from the human votes alone; every construction held the full-data human
    ranking in all 300 draws. The max-t critical value there (3.27) equals the oracle's, the quantile over the
    draws of the largest actual standardised error (3.26): the band is as narrow as its standard errors allow,
    and what is left of the sets' conservatism is the guarantee itself, which must hold when systems tie.

    Examples
    --------
    >>> from evalkit import datasets, pairwise
    >>> demo = datasets.load_demo("pairwise")
    >>> judge, human = demo["judge"], demo["comparisons"]
    >>> few = human.sample(400, random_state=0)               # humans voted on 400 of the 1,600 comparisons
    >>> pairwise.rank_sets(judge, few).round(3)
         system  estimate  rank_low  rank_high
    0  system-a     0.609         1          2
    1  system-b     0.527         1          3
    2  system-c     0.403         2          6
    3  system-d     0.387         3          6
    4  system-f     0.311         3          6
    5  system-e     0.305         3          6
    >>> {sets: round(float(pairwise.rank_sets(judge, few, sets=sets).eval("rank_high - rank_low + 1").mean()), 2)
    ...  for sets in ("stepdown", "max-t", "bonferroni", "ellipsoid")}                      # mean rank-set size
    {'stepdown': 3.67, 'max-t': 4.0, 'bonferroni': 4.0, 'ellipsoid': 4.0}
    """
    check_option(method, ["ppr", "human", "judge"], "method")
    check_option(sets, list(RANK_SET_METHODS), "sets")
    confidence_level = check_level(confidence_level)
    weights = None
    if isinstance(judge, dict):
        table, human_winner, positions, f1, f2, weights = _jury_verdicts(judge, human, method)
    else:
        table, human_winner, positions = _rank_inputs(judge, human)
        verdict = table["winner"]
        f1, f2 = (verdict == "a").to_numpy(float), (verdict == "b").to_numpy(float)
    codes, systems = pd.factorize(pd.concat([table["system_a"], table["system_b"]], ignore_index=True), sort=True)
    n_all, k = len(table), len(systems)
    first, second = codes[:n_all], codes[n_all:]
    labelled = np.zeros(n_all, dtype=bool)
    labelled[positions] = True
    h1, h2 = np.zeros(n_all), np.zeros(n_all)
    h1[positions] = (human_winner == "a").to_numpy(float)
    h2[positions] = (human_winner == "b").to_numpy(float)
    if method == "judge":
        count, estimate = _system_means(first, second, f1, f2, k)
        cov = _mean_covariance(first, second, f1, f2, estimate, count, k)
        lam, needed = 1.0, count
    elif method == "human":
        lab = labelled
        count, estimate = _system_means(first[lab], second[lab], h1[lab], h2[lab], k)
        cov = _mean_covariance(first[lab], second[lab], h1[lab], h2[lab], estimate, count, k)
        lam, needed = 0.0, count
    else:
        estimate, cov, lam, needed = _ppr_means(first, second, f1, f2, h1, h2, labelled, k)
    out = _rank_table(systems, estimate, cov, needed, confidence_level, sets, method)
    out.attrs.update(lam=lam, n_labelled=int(labelled.sum()), n_unlabelled=int((~labelled).sum()), method=method,
                     sets=sets, confidence_level=confidence_level,
                     covariance=pd.DataFrame(cov, index=list(systems), columns=list(systems)).loc[out["system"], out["system"]])
    if weights is not None:
        out.attrs["weights"] = weights
    return out


def _jury_verdicts(judges: dict, human, method: str):
    """:func:`rank_sets`' jury: the first judge's comparisons, the human winners, their positions, the combined
    "A won" and "B won" verdicts per comparison, and each judge's weight (NaN for ``method="judge"``: the average)."""
    if not judges:
        raise ValueError("`judge` is an empty dict: give one comparisons table per judge, {name: table}.")
    names = list(judges)
    table, human_winner, positions = _rank_inputs(judges[names[0]], human)
    wins = []
    for name in names:
        other = validate(judges[name], name=f"judge[{name!r}]")
        check_unique_index(other.index, f"judge[{name!r}]")
        if len(other) != len(table) or not other.index.equals(table.index):
            example = other.index.symmetric_difference(table.index)[:3].tolist()
            raise ValueError(f"`judge[{name!r}]` must hold the same comparisons as `judge[{names[0]!r}]` (the same ids "
                             f"in the same order); they differ, e.g. {example} (reindex each judge's table to one order).")
        differs = (other["system_a"].to_numpy() != table["system_a"].to_numpy()) | (
            other["system_b"].to_numpy() != table["system_b"].to_numpy())
        if differs.any():
            raise ValueError(f"`judge[{name!r}]` comparison {show(other.index[differs][0])} names other systems than "
                             f"`judge[{names[0]!r}]` (or in the other order); every judge must see the same comparisons.")
        wins.append(((other["winner"] == "a").to_numpy(float), (other["winner"] == "b").to_numpy(float)))
    a_won = np.column_stack([w[0] for w in wins])
    b_won = np.column_stack([w[1] for w in wins])
    if method == "judge" or len(positions) == 0:
        w = np.full(len(names), 1.0 / len(names))
    else:
        outcome = (human_winner == "a").to_numpy(float) - (human_winner == "b").to_numpy(float)
        w = np.linalg.lstsq(a_won[positions] - b_won[positions], outcome, rcond=None)[0]  # min-norm if collinear
    weights = pd.Series(w, index=names, name="weight")
    if method == "judge":
        weights[:] = np.nan
    return table, human_winner, positions, a_won @ w, b_won @ w, weights


def _rank_inputs(judge, human):
    """:func:`rank_sets`' checks: the judge's comparisons, the human winners, and their positions in the judge's."""
    table = validate(judge, name="judge")
    check_unique_index(table.index, "judge")
    human_winner = _winner_series(human, "human")
    check_unique_index(human_winner.index, "human")
    positions = table.index.get_indexer(human_winner.index)
    if (positions < 0).any():
        missing = human_winner.index[positions < 0]
        raise ValueError(f"`human` has {len(missing)} comparison id(s) that `judge` does not have, e.g. "
                         f"{missing[:3].tolist()}; human's index must be a subset of judge's.")
    if isinstance(human, pd.DataFrame) and {"system_a", "system_b"} <= set(human.columns):
        shown = table.iloc[positions]
        differs = (shown["system_a"].to_numpy() != human["system_a"].to_numpy()) | (
            shown["system_b"].to_numpy() != human["system_b"].to_numpy())
        if differs.any():
            raise ValueError(f"`human` comparison {show(human.index[differs][0])} names other systems than `judge` "
                             "(or in the other order); the same comparison must have the same system_a and system_b.")
    return table, human_winner, positions


def _ppr_means(first, second, f1, f2, h1, h2, labelled, k):
    """Prediction-powered win rates per system: the judge's on the unlabelled comparisons, rectified by the labelled
    ones with one weight lam (PPI++'s, pooled over systems), their covariance, and the comparisons each rests on."""
    lab, unl = labelled, ~labelled
    fl, sl, fu, su = first[lab], second[lab], first[unl], second[unl]
    count_u, mean_u = _system_means(fu, su, f1[unl], f2[unl], k)
    count_l, mean_h = _system_means(fl, sl, h1[lab], h2[lab], k)
    _, mean_f = _system_means(fl, sl, f1[lab], f2[lab], k)
    d_h = _deviations(fl, sl, h1[lab], h2[lab], mean_h, k)
    d_f = _deviations(fl, sl, f1[lab], f2[lab], mean_f, k)
    d_u = _deviations(fu, su, f1[unl], f2[unl], mean_u, k)
    with np.errstate(invalid="ignore", divide="ignore"):
        cross = np.asarray(d_h.multiply(d_f).sum(axis=1)).ravel() / count_l**2  # Cov(human, judge) / n_m, per system
        judge_var = np.asarray(d_u.multiply(d_u).sum(axis=1)).ravel() / count_u  # judge variance, unlabelled
        denominator = judge_var * (1 / count_u + 1 / count_l)
        ok = (count_l > 0) & (count_u > 0)
        lam = float(np.clip(cross[ok].sum() / denominator[ok].sum(), 0.0, 1.0)) if ok.any() and unl.any() else 0.0
    if not np.isfinite(lam):
        lam = 0.0
    r1, r2 = lam * f1[lab] - h1[lab], lam * f2[lab] - h2[lab]
    _, mean_r = _system_means(fl, sl, r1, r2, k)
    estimate = lam * np.nan_to_num(mean_u) - mean_r
    cov = lam**2 * np.nan_to_num(_mean_covariance(fu, su, f1[unl], f2[unl], mean_u, count_u, k)) + _mean_covariance(
        fl, sl, r1, r2, mean_r, count_l, k)
    needed = np.minimum(count_l, count_u if lam > 0 else count_l)
    return estimate, cov, lam, needed


def _rank_table(systems, estimate, cov, needed, confidence_level, sets, method) -> pd.DataFrame:
    """Each system's estimate and rank-set, best first; a system with nothing to rest on gets NaN and every rank."""
    k = len(systems)
    known, rankable = needed > 0, needed >= MIN_RANK_VOTES
    low, high = np.ones(k, dtype=int), np.full(k, k)
    if not known.all():
        warn(f"rank_sets: system(s) {list(map(str, systems[~known]))[:5]} have no comparison in the sample "
             f"method={method!r} needs; their estimate is NaN and their rank-set every rank.")
    if (known & ~rankable).any():
        warn(f"rank_sets: system(s) {list(map(str, systems[known & ~rankable]))[:5]} have fewer than "
             f"{MIN_RANK_VOTES} comparisons in the sample method={method!r} needs, too few to estimate their "
             "variance (a few votes that agree give 0); their rank-set is every rank.")
    critical = []
    if rankable.sum() >= 2:
        lo, hi, critical = _sets(estimate[rankable], cov[np.ix_(rankable, rankable)], confidence_level, sets)
        low[rankable], high[rankable] = lo, hi + int((~rankable).sum())
    estimate = np.where(known, estimate, np.nan)
    out = pd.DataFrame({"system": list(systems), "estimate": estimate, "rank_low": low, "rank_high": high})
    # ties broken by name: `systems` is sorted already (and names of mixed types cannot be compared with each other)
    order = np.lexsort((np.arange(k), -np.nan_to_num(out["estimate"].to_numpy(), nan=-np.inf)))
    out = out.iloc[order].reset_index(drop=True)
    out.attrs["critical_values"] = critical
    return out


# ------------------------------------------------------------------------------- judge-bias diagnostics
def _decisions(decisions, columns, by, name="decisions") -> tuple[pd.DataFrame, list]:
    table = check_dataframe(decisions, name)
    keys = [] if by is None else ([by] if isinstance(by, str) else list(by))
    check_columns(table, [*columns, *keys], name)
    winners = set(table["winner"].dropna().astype(str)) - {"1", "2"}
    if winners:
        raise ValueError(f"`{name}` column 'winner' must hold '1', '2' or missing (unparseable); got {sorted(winners)[:3]}.")
    if "order" in columns:
        orders = set(table["order"].dropna()) - {"original", "swapped"}
        if orders or table["order"].isna().any():
            raise ValueError(f"`{name}` column 'order' must be 'original' or 'swapped'; got {sorted(map(str, orders))[:3]}.")
    return table, keys


def _per_group(table: pd.DataFrame, keys: list, func, empty: dict, *, name: str, what: str, given: int = 0) -> pd.DataFrame:
    """One row per group; a group with no ``what`` to count (``n`` 0), or no row at all, is NaN with a warning
    (``given``: the rows of ``decisions`` when ``table`` holds only those that count)."""
    if table.empty:
        found = f"none of its {given} rows is a {what}" if given else "the decisions table is empty"
        warn(f"{name}: {found}: nothing to measure (NaN row).")
        return pd.DataFrame([{**{key: np.nan for key in keys}, **empty}])
    if not keys:
        rows = [func(table)]
    else:
        rows = [{**dict(zip(keys, key if isinstance(key, tuple) else (key,), strict=True)), **func(group)}
                for key, group in table.groupby(keys, sort=True)]
    nothing = [row for row in rows if row["n"] == 0]
    if nothing:
        group = f" (e.g. {', '.join(f'{key}={nothing[0][key]!r}' for key in keys)})" if keys else ""
        warn(f"{name}: {len(nothing)} of {len(rows)} group(s) have no {what}{group}: their row is NaN.")
    return pd.DataFrame(rows)


def _pairs(table: pd.DataFrame, keys: list) -> pd.DataFrame:
    """One row per (group, case_id) with the winner in each order ("unparseable" when missing)."""
    check = table.duplicated([*keys, "case_id", "order"])
    if check.any():
        raise ValueError(f"`decisions` has case_id {show(table.loc[check, 'case_id'].iloc[0])} more than once in one "
                         "order; pass `by` to separate judges or subsets.")
    return table.assign(winner=table["winner"].astype(object).fillna("unparseable"))


def _flips(original: np.ndarray, swapped: np.ndarray) -> tuple[int, int]:
    """Instances whose winner flips with the order: toward the first slot (1 then 2), toward the second."""
    return int(((original == "1") & (swapped == "2")).sum()), int(((original == "2") & (swapped == "1")).sum())


def _both_orders(group: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """The winners of the instances seen in both orders: (original, swapped) arrays, in order of first appearance."""
    codes, uniques = pd.factorize(group["case_id"])
    winner = group["winner"].to_numpy(dtype=object)
    original = (group["order"] == "original").to_numpy()
    first, second = np.full(len(uniques), None, dtype=object), np.full(len(uniques), None, dtype=object)
    first[codes[original]] = winner[original]
    second[codes[~original]] = winner[~original]
    both = np.array([a is not None and b is not None for a, b in zip(first, second, strict=True)], dtype=bool)
    return first[both].astype(str), second[both].astype(str)


def position_consistency(decisions, *, by=None, confidence_level: float = 0.95) -> pd.DataFrame:
    """How often a pairwise judge picks the same output when the two outputs swap places.

    Parameters
    ----------
    decisions : DataFrame
        One row per case and order: ``case_id``, ``order`` (``"original"``/``"swapped"``) and ``winner``
        (``"1"``/``"2"`` in the original numbering, missing when unparseable), as
        :func:`evalkit.datasets.load_llmbar` returns.
    by : str or list of str, optional
        Columns to report separately (e.g. ``["subset", "judge"]``).
    confidence_level : float, default 0.95
        For the Wilson interval of the rate (one Bernoulli outcome per instance).

    Returns
    -------
    DataFrame
        One row per group: the ``by`` columns, ``n`` (cases seen in both orders), ``consistent`` (same
        answer both times; an unparseable answer in both orders counts as the same answer, as LLMBar
        counts it), ``rate, ci_low, ci_high``, ``flips_first``, ``flips_second`` (inconsistent instances that
        picked the first slot both times, the second slot both times) and ``p_val``: the exact sign
        (McNemar) test that flips go either way equally often. A group without a case seen in both orders (or
        a table without decisions) gives a NaN row and an :class:`~evalkit.EvalkitWarning`.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.pairwise import position_consistency
    >>> d = pd.DataFrame({"case_id": [1, 1, 2, 2], "order": ["original", "swapped"] * 2, "winner": ["1", "1", "1", "2"]})
    >>> position_consistency(d)[["n", "consistent", "rate", "flips_first", "flips_second", "p_val"]]
       n  consistent  rate  flips_first  flips_second  p_val
    0  2           1   0.5            1             0    1.0
    """
    check_level(confidence_level)
    table, keys = _decisions(decisions, ["case_id", "order", "winner"], by)
    table = _pairs(table, keys)
    empty = {"n": 0, "consistent": 0, "rate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "flips_first": 0,
             "flips_second": 0, "p_val": np.nan}

    def one(group: pd.DataFrame) -> dict:
        original, swapped = _both_orders(group)
        n, same = len(original), int((original == swapped).sum())
        b, c = _flips(original, swapped)
        low, high = (float(v) for v in _stats.wilson(same, n, confidence_level))
        return {"n": n, "consistent": same, "rate": same / n if n else np.nan, "ci_low": low, "ci_high": high,
                "flips_first": b, "flips_second": c, "p_val": _stats.mcnemar_exact_p(b, c) if n else np.nan}

    return _per_group(table, keys, one, empty, name="position_consistency", what="case judged in both orders")


def first_slot_preference(decisions, *, by=None, confidence_level: float = 0.95) -> pd.DataFrame:
    """How often a pairwise judge picks whichever output it was shown first, tested on the paired instances.

    Each instance is judged in both orders. An instance whose winner does not change with the order
    contributes exactly one first-slot pick whatever the judge's bias, so only the instances whose winner
    flips carry evidence: the test is the exact sign (McNemar) test of flips toward the first slot against
    flips toward the second, and the interval for the first-slot rate is one for paired data.

    Parameters
    ----------
    decisions : DataFrame
        ``case_id``, ``order`` and ``winner`` as for :func:`position_consistency`. Only instances with a
        parsed decision in both orders count.
    by : str or list of str, optional
    confidence_level : float, default 0.95
        For the interval of the rate: Bonett & Price's adjusted Wald interval for a difference of paired
        proportions (the rate is 1/2 + (flips toward first - flips toward second) / (2 n)).

    Returns
    -------
    DataFrame
        One row per group: the ``by`` columns, ``n`` (instances), ``first`` (first-slot picks among their
        2 n decisions), ``rate`` (``first / (2 n)``), ``ci_low, ci_high``, ``flips_first``, ``flips_second``
        and ``p_val`` (the exact two-sided sign test, :func:`scipy.stats.binomtest` of ``flips_first`` in
        ``flips_first + flips_second`` at 1/2; 1.0 without flips). A group without an instance parsed in both
        orders (or a table without decisions) gives a NaN row and an :class:`~evalkit.EvalkitWarning`.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.pairwise import first_slot_preference
    >>> d = pd.DataFrame({"case_id": [1, 1, 2, 2, 3, 3], "order": ["original", "swapped"] * 3,
    ...                   "winner": ["1", "2", "1", "2", "2", "2"]})
    >>> first_slot_preference(d)[["n", "first", "rate", "flips_first", "flips_second", "p_val"]].round(3)
       n  first   rate  flips_first  flips_second  p_val
    0  3      5  0.833            2             0    0.5
    """
    check_level(confidence_level)
    table, keys = _decisions(decisions, ["case_id", "order", "winner"], by)
    table = _pairs(table, keys)
    empty = {"n": 0, "first": 0, "rate": np.nan, "ci_low": np.nan, "ci_high": np.nan, "flips_first": 0,
             "flips_second": 0, "p_val": np.nan}

    def one(group: pd.DataFrame) -> dict:
        original, swapped = _both_orders(group)
        parsed = (original != "unparseable") & (swapped != "unparseable")
        original, swapped = original[parsed], swapped[parsed]
        n = len(original)
        b, c = _flips(original, swapped)
        first = n + b - c  # each consistent instance gives one first-slot pick, a flip toward first two, toward second none
        low, high = _stats.first_slot_rate_interval(b, c, n, confidence_level)
        return {"n": n, "first": first, "rate": first / (2 * n) if n else np.nan, "ci_low": low, "ci_high": high,
                "flips_first": b, "flips_second": c, "p_val": _stats.mcnemar_exact_p(b, c) if n else np.nan}

    return _per_group(table, keys, one, empty, name="first_slot_preference",
                      what="instance with a parsed decision in both orders")


def length_bias(decisions, *, by=None, cluster="case_id", confidence_level: float = 0.95) -> pd.DataFrame:
    """Does a pairwise judge prefer the longer output beyond what the gold labels explain?

    A logistic regression per group of ``P(judge picks output 1)`` on the gold label (output 1 better),
    the position (output 1 shown first) and ``log2(length_1 / length_2)``; the length coefficient is
    the change in log-odds of picking an output per doubling of its length relative to the other,
    holding quality (gold) and position fixed. Fitted with statsmodels (the ``stats`` extra), with
    standard errors clustered by instance: the two decisions on one instance are not independent.

    Parameters
    ----------
    decisions : DataFrame
        ``order``, ``winner``, ``label`` (gold ``"1"``/``"2"``) and positive ``length_1``, ``length_2``
        (in any unit, e.g. words), and the ``cluster`` column; unparseable decisions are left out.
    by : str or list of str, optional
    cluster : str, Series or None, default "case_id"
        Each instance's cluster, a column of ``decisions`` or a Series of cluster ids by case id: cluster-robust
        standard errors (statsmodels' ``cov_type="cluster"``
        with its small-sample correction). ``None`` treats every decision as independent.
    confidence_level : float, default 0.95
        For the Wald interval of the coefficient.

    Returns
    -------
    DataFrame
        One row per group: the ``by`` columns, ``n`` (decisions), ``n_clusters``, ``coef, ci_low, ci_high,
        p_val, odds_ratio`` (odds ratio per doubling, ``exp(coef)``); NaN with an
        :class:`~evalkit.EvalkitWarning` where the fit fails (e.g. the gold label predicts every decision).
        ``attrs["cov_type"]`` names the covariance.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalkit.pairwise import length_bias
    >>> rng = np.random.default_rng(0)
    >>> n = 400
    >>> d = pd.DataFrame({"case_id": np.arange(n), "order": np.where(rng.random(n) < 0.5, "original", "swapped"),
    ...                   "label": np.where(rng.random(n) < 0.5, "1", "2"),
    ...                   "length_1": rng.integers(20, 400, n), "length_2": rng.integers(20, 400, n)})
    >>> logit = 1.5 * (d["label"] == "1") - 0.75 + 0.8 * np.log2(d["length_1"] / d["length_2"])
    >>> d["winner"] = np.where(rng.random(n) < 1 / (1 + np.exp(-logit)), "1", "2")
    >>> row = length_bias(d).iloc[0]
    >>> bool(row["ci_low"] < 0.8 < row["ci_high"])
    True
    """
    check_level(confidence_level)
    columns = ["order", "winner", "label", "length_1", "length_2"] + ([cluster] if isinstance(cluster, str) else [])
    table, keys = _decisions(decisions, columns, by)
    if table.empty:
        raise ValueError("`decisions` has no rows: length_bias needs the judge's decisions on paired outputs.")
    if cluster is not None:  # one code per decision, from a column or a Series by case id
        cases = table.index if isinstance(cluster, str) else pd.Index(table["case_id"])
        table = table.assign(_cluster=as_clusters(cluster, cases, table=table, key=None, table_name="decisions")[0])
    lengths = table[["length_1", "length_2"]]
    if not all(pd.api.types.is_numeric_dtype(t) for t in lengths.dtypes) or (lengths <= 0).any().any():
        raise ValueError("`decisions` columns 'length_1' and 'length_2' must be positive numbers (e.g. word counts).")
    sm = require("statsmodels.api", extra="stats", purpose="pairwise.length_bias")
    empty = {"n": 0, "n_clusters": 0, "coef": np.nan, "ci_low": np.nan, "ci_high": np.nan, "p_val": np.nan,
             "odds_ratio": np.nan}

    def one(group: pd.DataFrame) -> dict:
        parsed = group[group["winner"].notna()]
        y = (parsed["winner"].astype(str) == "1").to_numpy(float)
        x = np.column_stack([np.ones(len(parsed)), (parsed["label"].astype(str) == "1").to_numpy(float),
                             (parsed["order"] == "original").to_numpy(float),
                             np.log2(parsed["length_1"].to_numpy(float) / parsed["length_2"].to_numpy(float))])
        groups = pd.factorize(parsed["_cluster"])[0] if cluster is not None else None
        row = {**empty, "n": len(parsed), "n_clusters": int(groups.max()) + 1 if groups is not None and len(groups) else len(parsed)}
        if parsed.empty:
            return row  # nothing to fit: _per_group warns
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")  # separation and non-convergence become a NaN row, not a number
                model = sm.Logit(y, x)
                fit = model.fit(disp=0) if groups is None else model.fit(disp=0, cov_type="cluster",
                                                                          cov_kwds={"groups": groups})
        except Exception as exc:  # noqa: BLE001 - statsmodels raises several kinds for a degenerate fit
            warn(f"length_bias: the logistic fit failed for {len(parsed)} decisions ({type(exc).__name__}: "
                 f"{exc}); reported as NaN.")
            return row
        low, high = fit.conf_int(alpha=1 - confidence_level)[3]
        return {**row, "coef": float(fit.params[3]), "ci_low": float(low), "ci_high": float(high),
                "p_val": float(fit.pvalues[3]), "odds_ratio": float(np.exp(fit.params[3]))}

    out = _per_group(table, keys, one, empty, name="length_bias", what="parsed decision")
    out.attrs["cov_type"] = "nonrobust" if cluster is None else f"cluster ({cluster})"
    return out


def self_preference(decisions, *, by=None, confidence_level: float = 0.95) -> pd.DataFrame:
    """How much more often a judge picks its own model's output than the gold label says it should.

    Parameters
    ----------
    decisions : DataFrame
        ``judge`` (the judge's model id), ``model_1``, ``model_2`` (the model ids of the two outputs),
        ``winner`` and ``label`` (gold ``"1"``/``"2"``; without human gold, e.g. the majority of the other
        judges). Only cases where the judge's own model wrote exactly one of the two outputs count;
        unparseable decisions are left out.
    by : str or list of str, optional
        Default: one row per ``judge``.
    confidence_level : float, default 0.95
        For the Wald interval of the paired difference.

    Returns
    -------
    DataFrame
        One row per group: the ``by`` columns, ``n, own_rate, gold_rate, difference, ci_low, ci_high,
        p_val`` (``own_rate``: share of decisions for the own output; ``gold_rate``: share where gold
        favours it; ``p_val``: exact McNemar test on the cases where they differ). Where no decision counts
        (no case where the judge's own model wrote exactly one output), a NaN row and an
        :class:`~evalkit.EvalkitWarning`.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalkit.pairwise import self_preference
    >>> d = pd.DataFrame({"judge": "m1", "model_1": ["m1", "m2"] * 10, "model_2": ["m2", "m1"] * 10,
    ...                   "winner": ["1", "2"] * 8 + ["1", "1"] * 2, "label": ["1", "1"] * 10})
    >>> self_preference(d)[["judge", "n", "own_rate", "gold_rate", "difference"]]
      judge   n  own_rate  gold_rate  difference
    0    m1  20       0.9        0.5         0.4
    """
    check_level(confidence_level)
    table, keys = _decisions(decisions, ["judge", "model_1", "model_2", "winner", "label"], "judge" if by is None else by)
    own_slot = np.where(table["model_1"] == table["judge"], "1", np.where(table["model_2"] == table["judge"], "2", ""))
    table = table.assign(_own=own_slot)
    table = table[(table["_own"] != "") & (table["model_1"] != table["model_2"]) & table["winner"].notna()]
    z = z_value(confidence_level)
    empty = {"n": 0, "own_rate": np.nan, "gold_rate": np.nan, "difference": np.nan, "ci_low": np.nan,
             "ci_high": np.nan, "p_val": np.nan}

    def one(group: pd.DataFrame) -> dict:
        own = (group["winner"].astype(str) == group["_own"]).to_numpy()
        gold = (group["label"].astype(str) == group["_own"]).to_numpy()
        n = len(group)
        b, c = int((own & ~gold).sum()), int((~own & gold).sum())
        diff = (b - c) / n
        se = np.sqrt(max((b + c) / n - diff**2, 0.0) / n)
        return {"n": n, "own_rate": own.mean(), "gold_rate": gold.mean(), "difference": diff,
                "ci_low": diff - z * se, "ci_high": diff + z * se, "p_val": _stats.mcnemar_exact_p(b, c)}

    return _per_group(table, keys, one, empty, name="self_preference", given=len(decisions),
                      what="decision where the judge's own model wrote exactly one of the two outputs")
