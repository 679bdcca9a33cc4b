"""evalkit.pairwise against reference code (choix, statsmodels, scikit-learn as FastChat fits it, a loop
reimplementation of the prediction-powered ranking authors' code) and hand counts."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalkit import EvalkitWarning, agreement, datasets, labels, pairwise
from tests.conftest import shared_dataset

ELO = 400 / np.log(10)


def simulate(rng, n, strengths, *, tie=0.0, first_slot=0.0, weights=None, questions=None):
    """n comparisons of systems with known log-strengths: uneven pair counts (``weights``), ties, a first-slot term."""
    k = len(strengths)
    pairs = np.array([(i, j) for i in range(k) for j in range(k) if i != j])
    w = np.ones(len(pairs)) if weights is None else np.asarray(weights, float)
    pick = pairs[rng.choice(len(pairs), n, p=w / w.sum())]
    a, b = pick[:, 0], pick[:, 1]
    p = 1 / (1 + np.exp(-(strengths[a] - strengths[b] + first_slot)))
    u = rng.random(n)
    winner = np.where(rng.random(n) < tie, "tie", np.where(u < p, "a", "b"))
    names = np.array([f"s{i}" for i in range(k)])
    table = pd.DataFrame({"system_a": names[a], "system_b": names[b], "winner": winner})
    if questions is not None:
        table["question_id"] = rng.integers(0, questions, n)
    return table


def fastchat_lr(table: pd.DataFrame) -> pd.Series:
    """FastChat's logistic-regression Bradley-Terry (compute_elo_mle_with_tie): win counts doubled, a tie one
    win each way, unpenalised sklearn LogisticRegression without intercept on +/-ln(10) rows, 400 x coef + 1000."""
    from sklearn.linear_model import LogisticRegression

    systems = sorted(set(table["system_a"]) | set(table["system_b"]))
    idx = {s: i for i, s in enumerate(systems)}
    wins = np.zeros((len(systems), len(systems)))
    for a, b, w in zip(table["system_a"], table["system_b"], table["winner"], strict=True):
        if w == "a":
            wins[idx[a], idx[b]] += 2
        elif w == "b":
            wins[idx[b], idx[a]] += 2
        else:
            wins[idx[a], idx[b]] += 1
            wins[idx[b], idx[a]] += 1
    x, y, weight = [], [], []
    for i in range(len(systems)):
        for j in range(len(systems)):
            if i != j and wins[i, j] + wins[j, i] > 0:
                row = np.zeros(len(systems))
                row[i], row[j] = np.log(10), -np.log(10)
                x += [row, row]
                y += [1.0, 0.0]
                weight += [wins[i, j], wins[j, i]]
    lr = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-10, max_iter=10_000)  # unpenalised
    lr.fit(np.array(x), np.array(y), sample_weight=np.array(weight))
    return pd.Series(400 * lr.coef_[0] + 1000, index=systems)


@pytest.fixture(scope="module")
def arena():
    return datasets.load_arena(shared_dataset("arena"))


# ------------------------------------------------------------------------------------------- the table
def test_validate_names_the_row_and_what_was_expected():
    good = pd.DataFrame({"system_a": ["x", "y"], "system_b": ["y", "z"], "winner": ["a", "tie"]})
    assert pairwise.validate(good).equals(good)
    with pytest.raises(TypeError, match="`comparisons` must be a pandas DataFrame"):
        pairwise.validate("votes.csv")
    with pytest.raises(KeyError, match=r"missing column\(s\) \['winner'\]; it has columns \['system_a', 'system_b'\]"):
        pairwise.validate(good.drop(columns="winner"))
    with pytest.raises(ValueError, match="row 1: winner 'B' is not one of"):
        pairwise.validate(good.assign(winner=["a", "B"]))
    with pytest.raises(ValueError, match="row 0: system 'x' is compared with itself"):
        pairwise.validate(good.assign(system_b=["x", "z"]))
    with pytest.raises(ValueError, match="row 1: system_b is missing"):
        pairwise.validate(good.assign(system_b=["y", None]))
    before = good.copy()
    pairwise.bradley_terry(pd.concat([good, good.assign(winner=["b", "a"])], ignore_index=True))
    pd.testing.assert_frame_equal(good, before)


def test_win_rates_by_hand():
    c = pd.DataFrame({"system_a": ["x", "y", "x", "x"], "system_b": ["y", "x", "z", "y"], "winner": ["a", "tie", "b", "b"]})
    m = pairwise.win_rates(c)
    assert m.loc["x", "y"] == pytest.approx((1 + 0.5 + 0) / 3) and m.loc["y", "x"] == pytest.approx(1 - (1.5 / 3))
    assert m.loc["z", "x"] == 1.0 and np.isnan(m.loc["y", "z"])
    assert pairwise.win_rates(c, ties="drop").loc["x", "y"] == pytest.approx(1 / 2)
    with pytest.raises(ValueError, match="`ties` must be one of"):
        pairwise.win_rates(c, ties="davidson")


# ------------------------------------------------------------------------------------- Bradley-Terry
def test_bradley_terry_equals_choix_without_ties(rng):
    choix = pytest.importorskip("choix", reason="the reference needs the 'test' extra")
    table = simulate(rng, 3000, np.array([0.8, 0.3, 0.0, -0.2, -0.9]), weights=np.arange(1, 21))
    ours = pairwise.bradley_terry(table, ties="drop").set_index("system")
    systems = sorted(ours.index)
    idx = {s: i for i, s in enumerate(systems)}
    data = [(idx[a], idx[b]) if w == "a" else (idx[b], idx[a]) for a, b, w in table.itertuples(index=False)]
    params = choix.ilsr_pairwise(len(systems), data, alpha=0.0, tol=1e-12)
    expected = ELO * (params - params.mean()) + 1000
    np.testing.assert_allclose(ours.loc[systems, "rating"], expected, atol=1e-8)
    assert ours["rating"].mean() == pytest.approx(1000)
    assert ours.loc[systems, "n"].sum() == 2 * len(table)


def test_bradley_terry_equals_fastchats_logistic_regression_with_ties_as_half(rng):
    pytest.importorskip("sklearn", reason="the reference needs the 'test' extra")
    table = simulate(rng, 2000, np.array([0.5, 0.1, -0.1, -0.5]), tie=0.25)
    ours = pairwise.bradley_terry(table).set_index("system")["rating"]
    theirs = fastchat_lr(table)
    np.testing.assert_allclose(ours.loc[theirs.index], theirs - theirs.mean() + 1000, atol=1e-4)


@pytest.mark.slow
def test_arena_human_votes_equal_choix_and_fastchat(arena):
    choix = pytest.importorskip("choix", reason="the reference needs the 'test' extra")
    pytest.importorskip("sklearn", reason="the reference needs the 'test' extra")
    human = arena[arena["rater"] == "human"]
    ours = pairwise.bradley_terry(human).set_index("system")["rating"]
    theirs = fastchat_lr(human)
    assert np.abs(ours.loc[theirs.index] - (theirs - theirs.mean() + 1000)).max() < 0.05
    decided = human[human["winner"] != "tie"]
    ours = pairwise.bradley_terry(decided, ties="drop").set_index("system")["rating"]
    systems = sorted(ours.index)
    idx = {s: i for i, s in enumerate(systems)}
    data = [(idx[a], idx[b]) if w == "a" else (idx[b], idx[a])
            for a, b, w in decided[["system_a", "system_b", "winner"]].itertuples(index=False)]
    params = choix.ilsr_pairwise(len(systems), data, alpha=0.0, tol=1e-12)
    assert np.abs(ours.loc[systems].to_numpy() - (ELO * (params - params.mean()) + 1000)).max() < 0.05


def _statsmodels_design(table, systems, *, position=False, covariates=()):
    idx = {s: i for i, s in enumerate(systems)}
    x = np.zeros((len(table), len(systems)))
    x[np.arange(len(table)), table["system_a"].map(idx)] = 1.0
    x[np.arange(len(table)), table["system_b"].map(idx)] = -1.0
    x = x[:, 1:]  # the first system is the reference
    extra = ([np.ones(len(table))] if position else []) + [table[c].to_numpy(float) for c in covariates]
    return np.column_stack([x, *extra]) if extra else x


def _centred_se(cov, k, p=0):
    full = np.zeros((k + p, k + p))
    full[1:, 1:] = cov
    transform = np.zeros((k + p, k + p))
    transform[:k, :k] = ELO * (np.eye(k) - 1 / k)
    transform[k:, k:] = np.eye(p)
    return np.sqrt(np.diag(transform @ full @ transform.T))


@pytest.mark.parametrize("cluster", [None, "question_id"])
def test_sandwich_equals_statsmodels(rng, cluster):
    sm = pytest.importorskip("statsmodels.api", reason="the reference needs the 'stats' extra")
    table = simulate(rng, 1500, np.array([0.6, 0.2, 0.0, -0.7]), first_slot=0.3, questions=400,
                     weights=np.arange(1, 13)).assign(length=lambda t: rng.normal(size=len(t)))
    table["winner"] = np.where(table["winner"] == "tie", "a", table["winner"])
    systems = sorted(set(table["system_a"]) | set(table["system_b"]))
    for position, covariates in ((False, ()), (True, ()), (True, ("length",))):
        x = _statsmodels_design(table, systems, position=position, covariates=covariates)
        model = sm.Logit((table["winner"] == "a").to_numpy(float), x)
        fit = model.fit(disp=0, cov_type="HC0") if cluster is None else model.fit(
            disp=0, cov_type="cluster", cov_kwds={"groups": pd.factorize(table[cluster])[0]})
        p = int(position) + len(covariates)
        se = _centred_se(fit.cov_params(), len(systems), p)
        ours = pairwise.bradley_terry(table, ties="drop", position=position, covariates=list(covariates) or None,
                                      cluster=cluster).set_index("system").loc[systems]
        # clustered: Student's t with (clusters - 1) degrees of freedom for the interval and the test
        df = None if cluster is None else table[cluster].nunique() - 1
        z = stats.norm.ppf(0.975) if df is None else stats.t.ppf(0.975, df)
        np.testing.assert_allclose((ours["ci_high"] - ours["rating"]) / z, se[:len(systems)], rtol=1e-8)
        beta = np.r_[0.0, fit.params[:len(systems) - 1]]
        np.testing.assert_allclose(ours["rating"], ELO * (beta - beta.mean()) + 1000, atol=1e-8)
        if p:
            effects = pairwise.bradley_terry_effects(table, ties="drop", position=position,
                                                     covariates=list(covariates) or None, cluster=cluster)
            np.testing.assert_allclose(effects["coef"], fit.params[len(systems) - 1:], atol=1e-9)
            tail = stats.norm if df is None else stats.t(df)
            wald = 2 * tail.sf(np.abs(fit.params[len(systems) - 1:] / fit.bse[len(systems) - 1:]))
            np.testing.assert_allclose(effects["p_val"], wald, rtol=1e-6)
            assert effects["term"].tolist() == (["first_slot"] if position else []) + list(covariates)


def test_cluster_of_duplicates_gives_the_original_sandwich_and_bootstrap(rng):
    table = simulate(rng, 800, np.array([0.4, 0.0, -0.4]), tie=0.2)
    doubled = pd.concat([table, table]).assign(question_id=np.tile(np.arange(len(table)), 2))
    once = pairwise.bradley_terry(table).set_index("system")
    twice = pairwise.bradley_terry(doubled, cluster="question_id").set_index("system")
    g, n, k = len(table), len(doubled), 2  # clusters, comparisons, free parameters
    factor = np.sqrt(g / (g - 1) * (n - 1) / (n - k)) * stats.t.ppf(0.975, g - 1) / stats.norm.ppf(0.975)
    np.testing.assert_allclose(twice["ci_high"] - twice["rating"], (once["ci_high"] - once["rating"]) * factor, rtol=1e-10)
    naive = pairwise.bradley_terry(doubled).set_index("system")
    assert ((naive["ci_high"] - naive["rating"]) < 0.75 * (once["ci_high"] - once["rating"])).all()
    boot = pairwise.bradley_terry(doubled, interval="bootstrap", cluster="question_id", n_resamples=400, rng=1)
    boot = boot.set_index("system")
    width, reference = boot["ci_high"] - boot["ci_low"], 2 * (once["ci_high"] - once["rating"])
    assert ((width / reference).between(0.8, 1.25)).all(), (width / reference).tolist()


def test_bootstrap_is_reproducible_and_close_to_the_sandwich(rng):
    table = simulate(rng, 4000, np.array([0.5, 0.2, 0.0, -0.3, -0.6]), tie=0.15)
    a = pairwise.bradley_terry(table, interval="bootstrap", n_resamples=500, rng=7)
    b = pairwise.bradley_terry(table, interval="bootstrap", n_resamples=500, rng=7)
    pd.testing.assert_frame_equal(a, b)
    sandwich = pairwise.bradley_terry(table).set_index("system")
    a = a.set_index("system")
    ratio = (a["ci_high"] - a["ci_low"]) / (sandwich["ci_high"] - sandwich["ci_low"])
    assert ratio.between(0.85, 1.15).all(), ratio.tolist()
    assert (a["rating"] == sandwich["rating"]).all() and a.attrs["interval"] == "bootstrap"


def _refit_resampled(table, rows_drawn, ties="half"):
    """The reference resampler: each resample's comparisons drawn by row (``rows_drawn``: (B, n) row numbers),
    counted in the design's ordered cells and refitted from zero, as every resample of the comparisons is."""
    _, systems, _, cells, _ = pairwise._design(table, ties, False, None, None, None)
    free = np.arange(1, cells.k)
    flat = cells.rows * 3 + cells.outcome
    counts = np.stack([np.bincount(flat[rows], minlength=3 * len(cells.first)) for rows in rows_drawn])
    theta, converged = pairwise._fit(cells, counts.reshape(len(counts), -1, 3).astype(float), ties, free)
    return ELO * (theta - theta.mean(axis=1, keepdims=True)) + 1000, converged, systems


@pytest.mark.parametrize("clustered", [False, True], ids=["comparisons", "clusters"])
def test_bootstrap_of_counts_is_the_bootstrap_of_comparisons(rng, clustered):
    """Resampling the collapsed counts (a multinomial draw over pair-outcome categories, both orders of a pair
    as one) has the law of resampling comparisons (or whole clusters) with replacement and refitting each: on a
    seeded design the percentile ends agree within Monte Carlo error and each system's draws pass a two-sample
    Kolmogorov-Smirnov test."""
    strengths = np.array([0.6, 0.3, 0.0, -0.2, -0.7])
    table = simulate(rng, 900, strengths, tie=0.15, questions=150 if clustered else None,
                     weights=rng.uniform(0.2, 1.0, 20))
    cluster = "question_id" if clustered else None
    b = 3000
    out = pairwise.bradley_terry(table, interval="bootstrap", cluster=cluster, n_resamples=b, rng=5).set_index("system")
    n = len(table)
    if clustered:
        codes = pd.factorize(table["question_id"])[0]
        members = [np.flatnonzero(codes == g) for g in range(codes.max() + 1)]
        drawn = [np.concatenate([members[g] for g in rng.integers(0, len(members), len(members))]) for _ in range(b)]
    else:
        drawn = rng.integers(0, n, (b, n))
    reference, converged, systems = _refit_resampled(table, drawn)
    assert converged.all()
    for rows in drawn[:3]:  # the reference's refit is the public fit of the resampled table
        once = pairwise.bradley_terry(table.iloc[np.sort(rows)]).set_index("system")["rating"]
        np.testing.assert_allclose(once[systems].to_numpy(), _refit_resampled(table, [rows])[0][0], atol=1e-8)
    low, high = np.percentile(reference, [2.5, 97.5], axis=0)
    sigma = reference.std(axis=0)
    # each end's Monte Carlo sd is sigma * sqrt(q (1 - q) / B) / phi(z_q) on either side
    mc = np.sqrt(2) * sigma * np.sqrt(0.025 * 0.975 / b) / stats.norm.pdf(stats.norm.ppf(0.975))
    assert (np.abs(out.loc[systems, "ci_low"].to_numpy() - low) < 4 * mc).all()
    assert (np.abs(out.loc[systems, "ci_high"].to_numpy() - high) < 4 * mc).all()
    _, _, _, cells, groups = pairwise._design(table, "half", False, None, None, cluster)
    free = np.arange(1, cells.k)
    start, _ = pairwise._fit(cells, cells.counts[None], "half", free)
    draws, failed = pairwise._bootstrap(cells, "half", free, groups, b, np.random.default_rng(6), start[0])
    assert failed == 0
    ours = ELO * (draws - draws.mean(axis=1, keepdims=True)) + 1000
    for j in range(len(systems)):
        assert stats.ks_2samp(ours[:, j], reference[:, j]).pvalue > 1e-3 / len(systems)


def test_bootstrap_counts_every_resample_without_a_finite_maximum():
    """Four comparisons, resampled: a resample has a finite maximum exactly when its wins link the three systems
    both ways, which 96 of the 4**4 equally likely draws do. The share the bootstrap reports is that one, within
    Monte Carlo error (resamples where all of one pair's wins fall in one cell stall once the logistic saturates;
    they are counted)."""
    import itertools

    from scipy.sparse.csgraph import connected_components

    table = pd.DataFrame({"system_a": ["x", "x", "y", "z"], "system_b": ["y", "z", "z", "y"], "winner": ["a", "b", "a", "b"]})
    code = {"x": 0, "y": 1, "z": 2}
    beats = [(code[a], code[b]) if w == "a" else (code[b], code[a]) for a, b, w in table.itertuples(index=False)]
    separated = 0
    for draw in itertools.product(range(4), repeat=4):
        rows, cols = zip(*(beats[r] for r in draw), strict=True)
        graph = np.zeros((3, 3))
        graph[list(rows), list(cols)] = 1
        separated += connected_components(graph, directed=True, connection="strong")[0] != 1
    share = separated / 4**4
    assert share == 0.625
    b = 4000
    with pytest.warns(EvalkitWarning, match="bootstrap resamples have no finite maximum") as record:
        pairwise.bradley_terry(table, ties="drop", interval="bootstrap", n_resamples=b, rng=0)
    failed = int(str(record[0].message).split("bradley_terry: ")[1].split(" of ")[0])
    assert abs(failed - share * b) < 4 * np.sqrt(b * share * (1 - share)), failed


def test_anchor_position_and_covariates_recover_what_was_simulated(rng):
    strengths = np.array([0.5, 0.0, -0.5])
    table = simulate(rng, 6000, strengths, first_slot=0.4)
    anchored = pairwise.bradley_terry(table, anchor="s1", position=True).set_index("system")
    assert anchored.loc["s1", "rating"] == 1000 and anchored.loc["s1", "ci_low"] == anchored.loc["s1", "ci_high"] == 1000
    centred = pairwise.bradley_terry(table, position=True).set_index("system")
    np.testing.assert_allclose(anchored["rating"] - anchored["rating"].mean(), centred["rating"] - 1000, atol=1e-9)
    for s, truth in zip(["s0", "s2"], ELO * strengths[[0, 2]], strict=True):
        assert anchored.loc[s, "ci_low"] < 1000 + truth < anchored.loc[s, "ci_high"]
    effect = pairwise.bradley_terry_effects(table).iloc[0]
    assert effect["term"] == "first_slot" and effect["ci_low"] < 0.4 < effect["ci_high"] and effect["p_val"] < 1e-6
    assert effect["elo"] == pytest.approx(effect["coef"] * ELO)
    # a style covariate: the longer answer wins more often; controlling for it moves a long-winded system down
    n = 6000
    length = rng.normal(size=n)
    table = simulate(rng, n, np.array([0.2, 0.0, -0.2]))
    system_bonus = np.where(table["system_a"] == "s2", 1.0, 0.0) - np.where(table["system_b"] == "s2", 1.0, 0.0)
    diff = length + system_bonus  # s2 writes longer answers
    p = 1 / (1 + np.exp(-((table["system_a"].map({"s0": 0.2, "s1": 0.0, "s2": -0.2}) -
                           table["system_b"].map({"s0": 0.2, "s1": 0.0, "s2": -0.2})) + 0.6 * diff)))
    table = table.assign(winner=np.where(rng.random(n) < p, "a", "b"), length_diff=diff)
    plain = pairwise.bradley_terry(table).set_index("system")
    controlled = pairwise.bradley_terry(table, covariates="length_diff").set_index("system")
    assert plain.loc["s2", "rank"] == 1 and controlled.loc["s2", "rank"] == 3
    coef = pairwise.bradley_terry_effects(table, position=False, covariates=["length_diff"]).iloc[0]
    assert coef["ci_low"] < 0.6 < coef["ci_high"]


def test_no_finite_maximum_is_nan_with_a_warning():
    table = pd.DataFrame({"system_a": ["x", "x", "y", "z"], "system_b": ["y", "z", "z", "y"], "winner": ["a", "a", "a", "tie"]})
    with pytest.warns(EvalkitWarning, match="no finite rating separates them"):
        out = pairwise.bradley_terry(table)
    assert out["rating"].isna().all() and out.set_index("system").loc["x", "wins"] == 2
    with pytest.warns(EvalkitWarning, match=r"\d+ of 20 bootstrap resamples have no finite maximum"):
        out = pairwise.bradley_terry(table.assign(winner=["a", "b", "a", "b"]), ties="drop", interval="bootstrap",
                                     n_resamples=20, rng=0)  # connected, but most of its resamples are not
    assert out["rating"].notna().all() and out["ci_low"].isna().all() and out["ci_high"].isna().all()
    rng = np.random.default_rng(0)
    small = simulate(rng, 12, np.array([2.0, 0.0, -2.0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", EvalkitWarning)
        out = pairwise.bradley_terry(small, interval="bootstrap", n_resamples=200, rng=0)
    assert out["ci_low"].isna().all() or np.isfinite(out["ci_low"]).all()


def test_bradley_terry_bad_input():
    table = pd.DataFrame({"system_a": ["x", "y"], "system_b": ["y", "x"], "winner": ["a", "a"]})
    with pytest.raises(ValueError, match="`ties` must be one of"):
        pairwise.bradley_terry(table, ties="davidson")
    with pytest.raises(ValueError, match="`interval` must be one of"):
        pairwise.bradley_terry(table, interval="hessian")
    with pytest.raises(ValueError, match="`anchor` 'w' is not a system"):
        pairwise.bradley_terry(table, anchor="w")
    with pytest.raises(KeyError, match=r"missing column\(s\) \['question_id'\]"):
        pairwise.bradley_terry(table, cluster="question_id")
    with pytest.raises(ValueError, match="'length' \\(a covariate\\) must hold finite numbers"):
        pairwise.bradley_terry(table.assign(length=["long", "short"]), covariates="length")
    with pytest.raises(ValueError, match="no comparison to rate once ties are dropped"):
        pairwise.bradley_terry(table.assign(winner="tie"), ties="drop")
    with pytest.raises(TypeError, match="`position` must be True or False"):
        pairwise.bradley_terry(table, position="yes")
    with pytest.raises(ValueError, match="needs `position=True` or `covariates`"):
        pairwise.bradley_terry_effects(table, position=False)
    with pytest.raises(ValueError, match="`confidence_level` must be in"):
        pairwise.bradley_terry(table, confidence_level=95)


# ----------------------------------------------------------------------------------------- rank-sets
def authors_loop(first, second, human_a, human_b, judge_a, judge_b, labelled, k, alpha):
    """The authors' estimate.lhat_opt / estimate.estimate / ranksets.find_ranksets, written as plain loops
    (their covariance: cross-products over n**2). Returns thetahat, lambda, their Sigma, and find_ranksets."""

    def means(idx, wa, wb):
        num, den = np.zeros(k), np.zeros(k)
        for i in idx:
            num[first[i]] += wa[i]
            num[second[i]] += wb[i]
            den[first[i]] += 1
            den[second[i]] += 1
        return num / den

    def cross(idx, xa, xb, mx, ya, yb, my):
        out = np.zeros((k, k))
        for i in idx:
            dx, dy = np.zeros(k), np.zeros(k)
            dx[first[i]] += xa[i] - mx[first[i]]
            dx[second[i]] += xb[i] - mx[second[i]]
            dy[first[i]] += ya[i] - my[first[i]]
            dy[second[i]] += yb[i] - my[second[i]]
            out += np.outer(dx, dy)
        return out

    lab, unl = np.flatnonzero(labelled), np.flatnonzero(~labelled)
    n, big_n = len(lab), len(unl)
    mu = means(unl, judge_a, judge_b)
    cov_big = cross(unl, judge_a, judge_b, mu, judge_a, judge_b, mu) / big_n**2 * big_n
    mf, mh = means(lab, judge_a, judge_b), means(lab, human_a, human_b)
    cov_small = cross(lab, human_a, human_b, mh, judge_a, judge_b, mf) / n
    lam = min(max(np.trace(cov_small) / ((1 + n / big_n) * np.trace(cov_big)), 0.0), 1.0)
    ra, rb = lam * judge_a - human_a, lam * judge_b - human_b
    b = means(lab, ra, rb)
    theta = lam * mu - b
    sigma = lam**2 * cross(unl, judge_a, judge_b, mu, judge_a, judge_b, mu) / big_n**2 + cross(lab, ra, rb, b, ra, rb, b) / n**2
    return theta, lam, sigma


def find_ranksets(theta, sigma, alpha):
    """The authors' ranksets.find_ranksets, as written there."""
    k = len(theta)
    low, up = np.ones(k, dtype=int), np.full(k, k)
    for m1 in range(k):
        for m2 in range(k):
            if m1 == m2:
                continue
            d = abs(theta[m1] - theta[m2]) / np.sqrt(2) - np.sqrt(
                (sigma[m1, m1] + sigma[m2, m2] - 2 * sigma[m1, m2]) * stats.chi2.ppf(1 - alpha, k) / 2)
            if d > 0 and theta[m1] < theta[m2]:
                low[m1] += 1
            elif d > 0 and theta[m1] > theta[m2]:
                up[m1] -= 1
    return low, up


def balanced(rng, k, per_pair_labelled, per_pair):
    """Comparisons with every pair equally often among the labelled and among the unlabelled (the authors' design)."""
    strengths = np.linspace(0.8, -0.8, k)
    rows = []
    for i in range(k):
        for j in range(i + 1, k):
            for r in range(per_pair):
                a, b = (i, j) if rng.random() < 0.5 else (j, i)
                p = 1 / (1 + np.exp(-(strengths[a] - strengths[b])))
                u = rng.random()
                human = "tie" if u < 0.2 else ("a" if rng.random() < p else "b")
                judge = human if rng.random() < 0.6 else ("a" if rng.random() < 0.55 else ("tie" if rng.random() < 0.3 else "b"))
                rows.append((f"m{a}", f"m{b}", human, judge, r < per_pair_labelled))
    table = pd.DataFrame(rows, columns=["system_a", "system_b", "human", "judge", "labelled"])
    return table.sample(frac=1.0, random_state=int(rng.integers(1 << 30))).reset_index(drop=True)


def test_rank_sets_equal_the_authors_estimates_and_rank_set_rule(rng):
    k = 6
    table = balanced(rng, k, 12, 60)
    judge = table[["system_a", "system_b"]].assign(winner=table["judge"])
    human = table.loc[table["labelled"], ["system_a", "system_b"]].assign(winner=table["human"])
    ours = pairwise.rank_sets(judge, human, sets="ellipsoid", confidence_level=0.9)
    systems = sorted(set(table["system_a"]))
    idx = {s: i for i, s in enumerate(systems)}
    first, second = table["system_a"].map(idx).to_numpy(), table["system_b"].map(idx).to_numpy()
    ind = {who: ((table[who] == "a").to_numpy(float), (table[who] == "b").to_numpy(float)) for who in ("human", "judge")}
    theta, lam, sigma = authors_loop(first, second, *ind["human"], *ind["judge"], table["labelled"].to_numpy(), k, 0.1)
    by_system = ours.set_index("system").loc[systems]
    np.testing.assert_allclose(by_system["estimate"], theta, atol=1e-9)
    assert ours.attrs["lam"] == pytest.approx(lam, abs=1e-12)
    cov = ours.attrs["covariance"].loc[systems, systems].to_numpy()
    # each system takes part in 2 / k of the comparisons: their covariance is (2 / k)**2 of the per-system one
    np.testing.assert_allclose(sigma, cov * (2 / k) ** 2, rtol=1e-9, atol=1e-15)
    low, up = find_ranksets(theta, cov, 0.1)
    assert by_system["rank_low"].tolist() == low.tolist() and by_system["rank_high"].tolist() == up.tolist()
    # the authors' own covariance through the same rule: tighter sets, the same rule
    low_theirs, up_theirs = find_ranksets(theta, sigma, 0.1)
    assert ((up_theirs - low_theirs) <= (up - low)).all()


def test_rank_sets_cover_at_the_stated_level_where_the_authors_covariance_does_not(rng):
    k = 8
    strengths = 0.1 * np.arange(4, -4, -1)  # decreasing: system s0 ranks first
    hits = {"ppr": 0, "authors": 0}
    draws = 100
    for _ in range(draws):
        n_all = 2000
        table = simulate(rng, n_all, strengths, tie=0.2)
        judge = table.assign(winner=np.where(rng.random(n_all) < 0.7, table["winner"], "a"))
        labelled = rng.choice(n_all, 300, replace=False)
        out = pairwise.rank_sets(judge, table.iloc[labelled], confidence_level=0.9, sets="ellipsoid")
        truth = {f"s{i}": i + 1 for i in range(k)}
        ranks = out["system"].map(truth)
        hits["ppr"] += bool(((out["rank_low"] <= ranks) & (ranks <= out["rank_high"])).all())
        cov = out.attrs["covariance"].to_numpy() * (2 / k) ** 2  # the authors' scaling
        low, up, _ = pairwise._sets(out["estimate"].to_numpy(), cov, 0.9, "ellipsoid")
        hits["authors"] += bool(((low <= ranks) & (ranks <= up)).all())
    assert hits["ppr"] / draws >= 0.9 - 3 * np.sqrt(0.09 / draws)
    assert hits["authors"] / draws < 0.6  # standard errors (2 / k) of the right size: 0.3-0.4 here


def test_rank_sets_methods_and_bad_input(rng):
    demo = datasets.load_demo("pairwise")
    judge, human = demo["judge"], demo["comparisons"]
    few = human.sample(300, random_state=1)
    ppr = pairwise.rank_sets(judge, few)
    alone = pairwise.rank_sets(judge, few, method="human")
    assert alone.attrs["lam"] == 0 and 0 < ppr.attrs["lam"] <= 1 and pairwise.rank_sets(judge, few, method="judge").attrs["lam"] == 1
    assert list(ppr.columns) == ["system", "estimate", "rank_low", "rank_high"]
    assert (ppr["estimate"].diff().dropna() <= 0).all()
    manual = (few["winner"].eq("a").groupby(few["system_a"]).sum() + few["winner"].eq("b").groupby(few["system_b"]).sum()) / (
        few["system_a"].value_counts() + few["system_b"].value_counts())
    np.testing.assert_allclose(alone.set_index("system")["estimate"], manual.loc[alone["system"]], atol=1e-12)
    ellipsoid = pairwise.rank_sets(judge, few, sets="ellipsoid")
    assert ((ellipsoid["rank_high"] - ellipsoid["rank_low"]).to_numpy() >= (ppr["rank_high"] - ppr["rank_low"]).to_numpy()).all()
    assert pairwise.rank_sets(judge, few["winner"]).equals(ppr)  # a Series of winners
    with pytest.raises(ValueError, match="comparison id\\(s\\) that `judge` does not have"):
        pairwise.rank_sets(judge, few.rename(index=lambda i: i + "x"))
    with pytest.raises(ValueError, match="names other systems than `judge`"):
        pairwise.rank_sets(judge, few.assign(system_a=few["system_b"], system_b=few["system_a"]))
    with pytest.raises(ValueError, match="`method` must be one of"):
        pairwise.rank_sets(judge, few, method="ppi++")
    with pytest.raises(ValueError, match="`human` comparison .* winner 'A' is not one of"):
        pairwise.rank_sets(judge, few.assign(winner="A"))
    with pytest.raises(ValueError, match="unique index"):
        pairwise.rank_sets(pd.concat([judge, judge]), few)
    with pytest.raises(ValueError, match=r"must be in \(0.0, 1.0\)"):
        pairwise.rank_sets(judge, few, confidence_level=1.0)
    only_some = few[(few["system_a"] != "system-f") & (few["system_b"] != "system-f")]
    with pytest.warns(EvalkitWarning, match=r"\['system-f'\] have no comparison"):
        out = pairwise.rank_sets(judge, only_some, method="human").set_index("system")
    assert np.isnan(out.loc["system-f", "estimate"]) and (out.loc["system-f", ["rank_low", "rank_high"]] == [1, 6]).all()


def _max_t_quantile_all_pairs(cov, level):
    k = len(cov)
    i, j = np.triu_indices(k, 1)
    sd = np.sqrt(cov[i, i] + cov[j, j] - 2 * cov[i, j])
    every = np.ones(len(i), dtype=bool)
    return pairwise._max_t_quantile(pairwise._max_t_draws(cov), i, j, 1 / sd, every, every, level)


@pytest.mark.parametrize("k", [2, 3, 5, 8])
@pytest.mark.parametrize("level", [0.9, 0.95])
def test_max_t_critical_value_is_the_studentized_range_for_independent_estimates(k, level):
    """k independent estimates of equal variance: the largest |difference| / (sigma sqrt 2) is the range of k standard
    normals over sqrt 2, whose quantile scipy computes exactly (the studentized range with infinite df; k = 2: the
    two-sided normal quantile)."""
    exact = stats.studentized_range.ppf(level, k, np.inf) / np.sqrt(2) if k > 2 else stats.norm.ppf((1 + level) / 2)
    assert _max_t_quantile_all_pairs(np.eye(k) * 0.01, level) == pytest.approx(exact, abs=0.01)


def test_max_t_critical_value_for_correlated_unequal_estimates_equals_numerical_integration():
    """Three correlated estimates of unequal variances: P(every |D_p| <= c sd_p) integrated over D_12 with the
    conditional normal law of D_13 (scipy.integrate.quad), solved for c, against the simulated quantile."""
    from scipy import integrate, optimize

    cov = np.array([[1.0, 0.5, 0.2], [0.5, 2.0, -0.3], [0.2, -0.3, 0.6]]) * 1e-3
    a = np.array([[1, -1, 0], [1, 0, -1]])  # D1 = Z1 - Z2, D2 = Z1 - Z3; Z2 - Z3 = D2 - D1
    (v1, c12), (_, v2) = a @ cov @ a.T
    s1, s2 = np.sqrt(v1), np.sqrt(v2)
    s3 = np.sqrt(cov[1, 1] + cov[2, 2] - 2 * cov[1, 2])
    slope, cond_sd = c12 / v1, np.sqrt(v2 - c12**2 / v1)

    def inside(c):
        def density(x):
            low, high = max(-c * s2, x - c * s3), min(c * s2, x + c * s3)
            if high <= low:
                return 0.0
            mu = slope * x
            return stats.norm.pdf(x, scale=s1) * (stats.norm.cdf((high - mu) / cond_sd) - stats.norm.cdf((low - mu) / cond_sd))

        return integrate.quad(density, -c * s1, c * s1, epsabs=1e-12, epsrel=1e-10, limit=200)[0]

    for level in (0.9, 0.95):
        exact = optimize.brentq(lambda c, level=level: inside(c) - level, 1.0, 5.0, xtol=1e-10)
        assert _max_t_quantile_all_pairs(cov, level) == pytest.approx(exact, abs=0.01)


def test_stepdown_orders_a_pair_the_single_step_bands_leave_open_on_a_hand_computed_case():
    """Three independent estimates (variance 1 each; differences have sd sqrt 2) with standardised gaps 4.0 (s0 - s2),
    2.3 (s0 - s1) and 1.7 (s1 - s2). Bonferroni over 3 pairs needs 2.394, the max-t band the studentized range's
    2.344 (the ellipsoid 2.795): all order only s0 > s2. The step-down then tests the five one-sided hypotheses left, whose largest statistic
    has a smaller 95% quantile (2.28, brute force below), and orders s0 > s1 too; s1 - s2 stays open."""
    root2 = np.sqrt(2)
    estimate = np.array([0.0, -2.3 * root2, -4.0 * root2])
    cov = np.eye(3)
    z = np.random.default_rng(7).standard_normal((1_000_000, 3))  # brute force, plain Monte Carlo
    x, y, w = (z[:, 0] - z[:, 1]) / root2, (z[:, 1] - z[:, 2]) / root2, (z[:, 2] - z[:, 0]) / root2
    second_round = np.quantile(np.maximum.reduce([np.abs(x), np.abs(y), w]), 0.95)
    first_round = stats.studentized_range.ppf(0.95, 3, np.inf) / root2
    assert 1.7 < second_round < 2.3 < first_round < stats.norm.ppf(1 - 0.05 / 6)  # the case separates the rules
    i, j = np.triu_indices(3, 1)  # pairs (0, 1), (0, 2), (1, 2); "s0 not above s2" rejected in the first round
    simulated = pairwise._max_t_quantile(pairwise._max_t_draws(cov), i, j, np.full(3, 1 / root2),
                                         np.array([True, False, True]), np.ones(3, dtype=bool), 0.95)
    assert simulated == pytest.approx(second_round, abs=0.01)
    hand = {"bonferroni": ([1, 1, 2], [2, 3, 3]), "max-t": ([1, 1, 2], [2, 3, 3]), "stepdown": ([1, 2, 2], [1, 3, 3]),
            "ellipsoid": ([1, 1, 2], [2, 3, 3])}  # sqrt(chi2_3(0.95)) = 2.80: s0 > s2 only
    critical = {}
    for how, expected in hand.items():
        low, high, critical[how] = pairwise._sets(estimate, cov, 0.95, how)
        assert (low.tolist(), high.tolist()) == expected, how
    assert critical["bonferroni"] == [pytest.approx(stats.norm.ppf(1 - 0.05 / 6), abs=1e-12)]
    assert critical["ellipsoid"] == [pytest.approx(np.sqrt(stats.chi2.ppf(0.95, 3)), abs=1e-12)]
    assert critical["max-t"] == [pytest.approx(first_round, abs=0.01)]
    assert critical["stepdown"][:2] == [pytest.approx(first_round, abs=0.01), pytest.approx(second_round, abs=0.01)]


def test_rank_set_constructions_are_nested(rng):
    """On random estimates and covariances: step-down sets within the max-t ones, within Bonferroni's, within the
    ellipsoid's; every set holds the estimates' own order."""
    for _ in range(30):
        k = int(rng.integers(2, 9))
        root = rng.normal(size=(k, k)) * rng.uniform(0.2, 1.0, k)
        cov = (root @ root.T + np.diag(rng.uniform(0.1, 1.0, k))) * 1e-3
        estimate = rng.normal(scale=0.15, size=k)
        sets = {how: pairwise._sets(estimate, cov, 0.9, how) for how in pairwise.RANK_SET_METHODS}
        order = (-estimate).argsort().argsort() + 1
        for inner, outer in (("stepdown", "max-t"), ("max-t", "bonferroni"), ("bonferroni", "ellipsoid")):
            assert (sets[inner][0] >= sets[outer][0]).all() and (sets[inner][1] <= sets[outer][1]).all(), (inner, outer)
        assert ((sets["stepdown"][0] <= order) & (order <= sets["stepdown"][1])).all()


def test_rank_sets_default_is_the_stepdown_and_names_it(rng):
    demo = datasets.load_demo("pairwise")
    few = demo["comparisons"].sample(400, random_state=3)
    out = pairwise.rank_sets(demo["judge"], few)
    assert out.attrs["sets"] == "stepdown"
    assert out.equals(pairwise.rank_sets(demo["judge"], few, sets="stepdown"))  # the same sets every time: a fixed seed
    size = {how: (pairwise.rank_sets(demo["judge"], few, sets=how).eval("rank_high - rank_low")).sum()
            for how in pairwise.RANK_SET_METHODS}
    assert size["stepdown"] <= size["max-t"] <= size["bonferroni"] <= size["ellipsoid"]
    with pytest.raises(ValueError, match="`sets` must be one of"):
        pairwise.rank_sets(demo["judge"], few, sets="holm")


def test_a_system_with_too_few_votes_to_estimate_its_variance_gets_every_rank():
    demo = datasets.load_demo("pairwise")
    few = demo["comparisons"].sample(400, random_state=3)
    with_f = (few["system_a"] == "system-f") | (few["system_b"] == "system-f")
    # system-f keeps 3 of its comparisons, all of which it wins: a variance of 0 from the human votes
    wins = few[with_f & (((few["system_a"] == "system-f") & (few["winner"] == "a"))
                         | ((few["system_b"] == "system-f") & (few["winner"] == "b")))].iloc[:3]
    human = pd.concat([few[~with_f], wins])
    for method in ("ppr", "human"):
        with pytest.warns(EvalkitWarning, match=r"\['system-f'\] have fewer than 5 comparisons"):
            out = pairwise.rank_sets(demo["judge"], human, method=method).set_index("system")
        assert out.loc["system-f", ["rank_low", "rank_high"]].tolist() == [1, 6]
        assert np.isfinite(out.loc["system-f", "estimate"])
        others = out.drop(index="system-f")
        assert (others["rank_high"] >= 2).all() and (others["rank_low"] <= 5).all()


@pytest.mark.slow
def test_rank_sets_on_the_arena_equal_the_authors_loop_on_their_design(arena):
    """A split as the authors' filter_data makes it (equal counts per pair), GPT-4 as the judge."""
    models = ["vicuna-13b", "koala-13b", "gpt-3.5-turbo", "gpt-4", "oasst-pythia-12b", "alpaca-13b", "claude-v1",
              "RWKV-4-Raven-14B", "chatglm-6b", "fastchat-t5-3b", "palm-2", "claude-instant-v1"]
    human = arena[arena["rater"] == "human"].set_index("comparison_id")
    judge = arena[arena["rater"] == "gpt-4"].set_index("comparison_id")
    keep = human["system_a"].isin(models) & human["system_b"].isin(models)
    human, judge = human[keep], judge[keep]
    pair = human[["system_a", "system_b"]].apply(lambda r: tuple(sorted(r)), axis=1)
    per_pair = pair.value_counts().min()
    rng = np.random.default_rng(12345678)
    chosen = pair.groupby(pair).sample(per_pair, random_state=1).index
    labelled = pd.Series(False, index=chosen)
    labelled[pair.loc[chosen].groupby(pair.loc[chosen]).sample(1000 // 66, random_state=int(rng.integers(1 << 30))).index] = True
    ours = pairwise.rank_sets(judge.loc[chosen], human.loc[labelled[labelled].index], sets="ellipsoid")
    systems = sorted(models)
    idx = {s: i for i, s in enumerate(systems)}
    j, h = judge.loc[chosen], human.loc[chosen]
    theta, lam, sigma = authors_loop(j["system_a"].map(idx).to_numpy(), j["system_b"].map(idx).to_numpy(),
                                     (h["winner"] == "a").to_numpy(float), (h["winner"] == "b").to_numpy(float),
                                     (j["winner"] == "a").to_numpy(float), (j["winner"] == "b").to_numpy(float),
                                     labelled.to_numpy(), len(systems), 0.05)
    by_system = ours.set_index("system").loc[systems]
    np.testing.assert_allclose(by_system["estimate"], theta, atol=1e-9)
    assert ours.attrs["lam"] == pytest.approx(lam, abs=1e-12)
    low, up = find_ranksets(theta, ours.attrs["covariance"].loc[systems, systems].to_numpy(), 0.05)
    assert by_system["rank_low"].tolist() == low.tolist() and by_system["rank_high"].tolist() == up.tolist()


# ------------------------------------------------------------------------------ judge-bias diagnostics
def paired_decisions(rng, n, *, p_flip_first, p_flip_second):
    """n instances judged in both orders: consistent, flipping toward the first slot, or toward the second."""
    u = rng.random(n)
    kind = np.where(u < p_flip_first, "first", np.where(u < p_flip_first + p_flip_second, "second", "same"))
    gold = np.where(rng.random(n) < 0.5, "1", "2")
    original = np.where(kind == "first", "1", np.where(kind == "second", "2", gold))
    swapped = np.where(kind == "first", "2", np.where(kind == "second", "1", gold))
    return pd.DataFrame({"case_id": np.repeat(np.arange(n), 2), "order": np.tile(["original", "swapped"], n),
                         "winner": np.ravel(np.column_stack([original, swapped])), "label": np.repeat(gold, 2)})


def test_first_slot_preference_is_the_sign_test_on_flips(rng):
    d = paired_decisions(rng, 200, p_flip_first=0.2, p_flip_second=0.08)
    d.loc[0, "winner"] = None  # instance 0 loses its pair
    row = pairwise.first_slot_preference(d).iloc[0]
    wide = d.pivot(index="case_id", columns="order", values="winner").dropna()
    b = int(((wide["original"] == "1") & (wide["swapped"] == "2")).sum())
    c = int(((wide["original"] == "2") & (wide["swapped"] == "1")).sum())
    assert (row["n"], row["flips_first"], row["flips_second"]) == (199, b, c)
    assert row["p_val"] == pytest.approx(stats.binomtest(b, b + c, 0.5).pvalue, abs=1e-15)
    picks = ((d["order"] == "original") & (d["winner"] == "1")) | ((d["order"] == "swapped") & (d["winner"] == "2"))
    assert row["first"] == int(picks[d["case_id"] != 0].sum()) and row["rate"] == pytest.approx(row["first"] / 398)
    assert row["ci_low"] < row["rate"] < row["ci_high"]
    # Bonett-Price: the adjusted Wald interval for p_b - p_c, mapped to 1/2 + diff / 2
    pb, pc = (b + 1) / 201, (c + 1) / 201
    half = stats.norm.ppf(0.975) * np.sqrt((pb + pc - (pb - pc) ** 2) / 201)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((0.5 + (pb - pc - half) / 2, 0.5 + (pb - pc + half) / 2))
    with pytest.raises(ValueError, match="'winner' must hold '1', '2' or missing"):
        pairwise.first_slot_preference(d.assign(winner="A"))
    with pytest.raises(KeyError, match=r"missing column\(s\) \['case_id'\]"):
        pairwise.first_slot_preference(d.drop(columns="case_id"))
    with pytest.warns(EvalkitWarning, match="decisions table is empty"):
        empty = pairwise.first_slot_preference(d.iloc[:0])
    assert empty["n"].iloc[0] == 0 and np.isnan(empty["rate"].iloc[0]) and np.isnan(empty["p_val"].iloc[0])
    with pytest.warns(EvalkitWarning, match="decisions table is empty"):
        assert np.isnan(pairwise.position_consistency(d.iloc[:0])["rate"].iloc[0])


def test_position_consistency_counts_and_flips(rng):
    d = paired_decisions(rng, 120, p_flip_first=0.1, p_flip_second=0.1)
    row = pairwise.position_consistency(d).iloc[0]
    wide = d.pivot(index="case_id", columns="order", values="winner")
    assert row["consistent"] == int((wide["original"] == wide["swapped"]).sum()) and row["n"] == 120
    ci = stats.binomtest(int(row["consistent"]), 120).proportion_ci(method="wilson")
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high))
    assert row["p_val"] == pytest.approx(stats.binomtest(int(row["flips_first"]), int(row["flips_first"] + row["flips_second"])).pvalue)


def test_length_bias_clusters_by_instance_as_statsmodels(rng):
    sm = pytest.importorskip("statsmodels.api", reason="length_bias needs the 'stats' extra")
    n = 800
    base = pd.DataFrame({"case_id": np.arange(n), "label": np.where(rng.random(n) < 0.5, "1", "2"),
                         "length_1": rng.integers(20, 400, n), "length_2": rng.integers(20, 400, n)})
    d = pd.concat([base.assign(order="original"), base.assign(order="swapped")], ignore_index=True)
    instance = rng.normal(0, 1.5, n)[d["case_id"]]  # what both decisions on one instance share
    logit = (2.0 * (d["label"] == "1") - 1.0 + 0.3 * (d["order"] == "original")
             + 0.5 * np.log2(d["length_1"] / d["length_2"]) + instance)
    d["winner"] = np.where(rng.random(len(d)) < 1 / (1 + np.exp(-logit)), "1", "2")
    d["judge"] = "j"
    row = pairwise.length_bias(d, by="judge").iloc[0]
    x = sm.add_constant(np.column_stack([(d["label"] == "1"), (d["order"] == "original"),
                                         np.log2(d["length_1"] / d["length_2"])]).astype(float))
    fit = sm.Logit((d["winner"] == "1").astype(float), x).fit(disp=0, cov_type="cluster", cov_kwds={"groups": d["case_id"]})
    assert (row["n"], row["n_clusters"]) == (2 * n, n)
    assert row["coef"] == pytest.approx(fit.params.iloc[3], abs=1e-10)
    low, high = fit.conf_int().iloc[3]
    assert (row["ci_low"], row["ci_high"], row["p_val"]) == pytest.approx((low, high, fit.pvalues.iloc[3]), rel=1e-9)
    naive = pairwise.length_bias(d, cluster=None).iloc[0]
    assert naive["ci_high"] - naive["ci_low"] < row["ci_high"] - row["ci_low"]
    assert pairwise.length_bias(d).attrs["cov_type"] == "cluster (case_id)"
    perfect = d.assign(winner=d["label"])
    with pytest.warns(EvalkitWarning, match="logistic fit failed"):
        assert np.isnan(pairwise.length_bias(perfect).iloc[0]["coef"])
    with pytest.raises(ValueError, match="positive numbers"):
        pairwise.length_bias(d.assign(length_1=0))
    with pytest.raises(KeyError, match=r"missing column\(s\) \['case_id'\]"):
        pairwise.length_bias(d.drop(columns="case_id"))


def test_self_preference_counts_by_hand():
    d = pd.DataFrame({
        "judge": ["m1"] * 6 + ["m2"] * 2,
        "model_1": ["m1", "m2", "m1", "m3", "m1", "m1", "m2", "m1"],
        "model_2": ["m2", "m1", "m3", "m2", "m2", "m1", "m3", "m2"],
        "winner": ["1", "2", "2", "1", None, "1", "1", "1"],
        "label": ["1", "1", "1", "1", "1", "1", "2", "2"],
    })
    out = pairwise.self_preference(d).set_index("judge")
    # m1: rows 0-2 count (row 3 has no m1 output, row 4 is unparseable, row 5 is m1 vs m1).
    # own picks: row 0 yes, row 1 yes, row 2 no -> 2/3; gold own: row 0 yes, 1 no, 2 yes -> 2/3.
    assert out.loc["m1", ["n", "own_rate", "gold_rate", "difference"]].tolist() == pytest.approx([3, 2 / 3, 2 / 3, 0])
    assert out.loc["m1", "p_val"] == pytest.approx(1.0)
    # m2: row 6 (own slot 1, picked, gold says 2) and row 7 (own slot 2, not picked, gold says 2).
    assert out.loc["m2", ["n", "own_rate", "gold_rate"]].tolist() == pytest.approx([2, 0.5, 0.5])


def test_the_pairwise_diagnostics_have_one_home():
    for name in ("position_consistency", "first_slot_preference", "length_bias", "self_preference"):
        assert callable(getattr(pairwise, name)) and not hasattr(agreement, name)


@pytest.mark.slow
def test_llmbar_published_positional_agreement_and_the_sign_test_on_flips():
    root = shared_dataset("llmbar")
    decisions = datasets.load_llmbar(root)
    table = pairwise.position_consistency(decisions, by=["subset", "judge"])
    assert len(table) == 15
    for row in table.itertuples():
        published = json.loads((root / row.subset / "evaluators" / row.judge / "Vanilla" / "statistics.json").read_text())
        counts, percent = published["equal"].split("=")  # e.g. "57 / 92 = 61.95652173913043%"
        equal, total = (int(x) for x in counts.split("/"))
        assert (row.consistent, row.n) == (equal, total), (row.subset, row.judge)
        assert 100 * row.rate == pytest.approx(float(percent.strip().rstrip("%")), abs=1e-9)
    first = pairwise.first_slot_preference(decisions, by="judge").set_index("judge")
    gpt4 = first.loc["GPT-4"]
    assert (gpt4["flips_first"], gpt4["flips_first"] + gpt4["flips_second"]) == (20, 30)
    assert gpt4["p_val"] == pytest.approx(0.0987, abs=5e-5)
    assert first["n"].sum() == 3 * 419 - 2  # LLaMA-2 left two instances without a parsed pair
    pytest.importorskip("statsmodels.api", reason="length_bias needs the 'stats' extra")
    words = lambda s: s.str.split().str.len().clip(lower=1)  # noqa: E731
    lengths = decisions.assign(length_1=words(decisions["output_1"]), length_2=words(decisions["output_2"]))
    bias = pairwise.length_bias(lengths, by="judge")
    assert len(bias) == 3 and (bias["n_clusters"] <= 419).all()


# ------------------------------------------------------------------------------------------- readers
def test_comparisons_from_labels_latest_label_per_labeller_undo_and_several_files(tmp_path):
    ann, bob = tmp_path / "ann.jsonl", tmp_path / "bob.jsonl"
    record = {"mode": "label", "rubric_version": "v1"}
    labels.append_label(ann, {**record, "case_id": "c1", "label": "A", "labeller": "ann", "system_left": "x", "system_right": "y"})
    labels.append_label(ann, {**record, "case_id": "c1", "label": "TIE", "labeller": "ann", "system_left": "x", "system_right": "y"})
    labels.append_label(ann, {**record, "case_id": "c2", "label": "B", "labeller": "ann", "system_left": "z", "system_right": "x"})
    labels.append_label(ann, {**record, "case_id": "c2", "label": None, "labeller": "ann", "system_left": "z", "system_right": "x"})
    labels.append_label(bob, {**record, "case_id": "c1", "label": "B", "labeller": "bob", "system_left": "y", "system_right": "x"})
    labels.append_label(bob, {**record, "case_id": "c1", "label": "A", "labeller": "bob", "system_left": "y",
                              "system_right": "x", "mode": "relabel"})
    out = pairwise.comparisons_from_labels([ann, bob])
    assert out.to_dict("records") == [
        {"system_a": "x", "system_b": "y", "winner": "tie", "rater": "ann", "comparison_id": "c1"},
        {"system_a": "y", "system_b": "x", "winner": "b", "rater": "bob", "comparison_id": "c1"}]
    assert pairwise.comparisons_from_labels(labels.read_labels([ann, bob])).equals(out)
    with pytest.warns(EvalkitWarning, match=r"the votes of 2 raters \(ann, bob\) are pooled .* comparison_id 'c1' is in 2"):
        ratings = pairwise.bradley_terry(out)  # two annotators' votes on one comparison: pooled, and said so
    assert ratings.set_index("system").loc["x", "wins"] == 1 and ratings["ties"].sum() == 2
    with pytest.raises(FileNotFoundError, match="no such labels file"):
        pairwise.comparisons_from_labels(tmp_path / "nobody.jsonl")
    with pytest.raises(KeyError, match=r"missing column\(s\) \['system_left', 'system_right'\]"):
        pairwise.comparisons_from_labels(pd.DataFrame({"case_id": ["c"], "label": ["A"], "labeller": ["a"]}))
    bad = tmp_path / "bad.jsonl"
    labels.append_label(bad, {**record, "case_id": "c9", "label": "PASS", "labeller": "cy", "system_left": "x", "system_right": "y"})
    with pytest.raises(ValueError, match="case 'c9' by 'cy' has label 'PASS'; a pairwise label is 'A'"):
        pairwise.comparisons_from_labels(bad)
    with pytest.raises(TypeError, match="`labels` must be a labels file path"):
        pairwise.comparisons_from_labels(5)


def test_comparisons_from_llmbar_orients_by_what_was_shown_first():
    d = pd.DataFrame({"case_id": ["N/0"] * 4 + ["N/1"] * 2, "judge": ["A", "A", "B", "B", "A", "A"],
                      "order": ["original", "swapped"] * 3, "winner": ["1", "1", "2", None, "2", "1"], "label": "1"})
    out = pairwise.comparisons_from_llmbar(d)
    assert len(out) == 5 and out["rater"].tolist() == ["A", "A", "B", "A", "A"]
    assert out["winner"].tolist() == ["a", "b", "b", "b", "b"]  # N/1 flips toward the second slot
    assert out["system_a"].tolist()[:2] == ["N/0/1", "N/0/2"] and out["gold"].tolist()[:2] == ["a", "b"]
    with pytest.raises(KeyError, match=r"missing column\(s\) \['judge'\]"):
        pairwise.comparisons_from_llmbar(d.drop(columns="judge"))


def test_load_arena_matches_its_readme(arena):
    counts = arena.groupby("rater")["winner"].value_counts().unstack()
    assert len(arena) == 4 * 26919 and arena["comparison_id"].nunique() == 26919
    assert counts.loc["human"].tolist() == [9516, 9391, 5132 + 2880]
    assert counts.loc["gpt-4"].tolist() == [10732, 8734, 7453]
    assert (arena[arena["rater"] == "human"]["tie_kind"] == "tie (bothbad)").sum() == 5132
    assert len(set(arena["system_a"]) | set(arena["system_b"])) == 20


def test_load_arena_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="no human.json"):
        datasets.load_arena(tmp_path)
    row = {"num": 0, "question_id": "q", "model_a": "x", "model_b": "y", "winner": "model_a"}
    (tmp_path / "human.json").write_text(json.dumps(row) + "\n")
    (tmp_path / "gpt-3.5-turbo.json").write_text(json.dumps({**row, "model_b": "z"}) + "\n")
    with pytest.raises(ValueError, match=r"gpt-3.5-turbo.json, line 1: not the comparison of human.json's line 1"):
        datasets.load_arena(tmp_path)
    (tmp_path / "gpt-3.5-turbo.json").write_text(json.dumps({**row, "winner": "draw"}) + "\n")
    with pytest.raises(ValueError, match="line 1: winner 'draw' is not one of"):
        datasets.load_arena(tmp_path)


def test_pairwise_demo_is_what_its_readme_says():
    demo = datasets.load_demo("pairwise")
    votes, judge = demo["comparisons"], demo["judge"]
    assert len(votes) == 1600 and votes["question_id"].nunique() == 800 and votes.index.is_unique
    assert votes.index.equals(judge.index) and (votes["system_a"] == judge["system_a"]).all()
    assert (votes["winner"] == judge["winner"]).mean() > 0.6
    first = pairwise.bradley_terry_effects(judge.reset_index()).iloc[0]
    assert first["ci_low"] > 0.2  # the simulated judge favours the first slot


def test_bradley_terry_warns_before_pooling_raters_or_repeated_comparisons(rng):
    table = simulate(rng, 300, np.array([0.4, 0.0, -0.4]))
    votes = table.assign(comparison_id=[f"c{i}" for i in range(len(table))])
    judged = votes.assign(winner=np.where(rng.random(len(votes)) < 0.8, votes["winner"], "tie"))
    both = pd.concat([votes.assign(rater="human"), judged.assign(rater="gpt-4")], ignore_index=True)
    with pytest.warns(EvalkitWarning, match=r"bradley_terry: the votes of 2 raters \(human, gpt-4\) are pooled into one "
                                            r"rating.*; and comparison_id 'c0' is in 2 rows \(300 repeated rows in all\)"):
        pairwise.bradley_terry(both)
    with pytest.warns(EvalkitWarning) as caught:  # the votes of a comparison counted together: only the raters remain
        pairwise.bradley_terry_effects(both, cluster="comparison_id")
    assert len(caught) == 1 and "2 raters" in str(caught[0].message) and "comparison_id" not in str(caught[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EvalkitWarning)
        one = pairwise.bradley_terry(both[both["rater"] == "human"])  # one rater, each comparison once: no warning
        repeats = pd.concat([votes, votes], ignore_index=True).assign(question=lambda t: t["comparison_id"].str[1:])
        pairwise.bradley_terry(repeats, cluster="question")  # repeats held within one cluster each
    assert (one["n"] > 0).all()


@pytest.mark.slow
def test_the_whole_arena_table_is_not_pooled_quietly(arena):
    with pytest.warns(EvalkitWarning, match=r"the votes of 4 raters .* pooled .*; and comparison_id \d+ is in 4 rows"):
        pairwise.bradley_terry(arena)
