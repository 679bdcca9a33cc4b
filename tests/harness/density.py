"""FD* length bias: density.length_bias."""

from __future__ import annotations

import functools
import warnings

import numpy as np
import pandas as pd

from tests.harness.core import (
    SHARED_DATA,
    Design,
    Entry,
    _pairs_design,
    _population_rng,
    _slow,
)


# ---- FD* length bias: Spearman (default) or Pearson between length and density
@functools.cache
def _fd_demo() -> pd.DataFrame:
    from evalkit import datasets, density

    corpus = datasets.load_demo("fd")
    return density.fd_star(corpus["claims"], corpus["documents"])[["n_tokens", "fd_raw"]].astype(float)


@functools.cache
def _fd_healthfc() -> pd.DataFrame:
    from evalkit import density

    hfc = pd.read_csv(SHARED_DATA / "healthfc" / "Datensatz.csv", encoding="utf-8-sig")
    passages = pd.DataFrame({"doc_id": [f"h{i:03d}" for i in range(len(hfc))],
                             "text": (hfc["en_top_sentences"].fillna("") + " " + hfc["en_explanation"].fillna("")).str.strip(),
                             "source": "medizin-transparent"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = density.fd_star(density.claims_from_text(passages), passages)
    return table[["n_tokens", "fd_raw"]].astype(float)


@functools.cache
def _fd_synthetic() -> pd.DataFrame:
    rng = _population_rng("fd synthetic")
    length = np.round(np.exp(rng.normal(5.0, 0.8, 20_000)))
    fd = np.exp(-0.35 * np.log(length) + 0.6 * rng.normal(size=20_000))
    return pd.DataFrame({"n_tokens": length, "fd_raw": fd})


@functools.cache
def _fd_synthetic_zeros(scale: float) -> pd.DataFrame:
    """The log-normal population where some documents have no claim (fd_raw = 0), short ones more often."""
    table = _fd_synthetic()
    rng = _population_rng(f"fd synthetic zeros {scale}")
    none = rng.random(len(table)) < scale / (1 + np.exp(1.5 * (np.log(table["n_tokens"].to_numpy()) - 4.3)))
    return table.assign(fd_raw=np.where(none, 0.0, table["fd_raw"].to_numpy()))


def _length_designs(method: str = "spearman", *, null: bool = False) -> tuple[Design, ...]:
    """Length and fd_raw pairs; the fast suite checks the demo corpus, log-normal lengths and 15% zeros."""
    zeros = [_pairs_design(f"lognormal-zeros{share}", f"the log-normal population with {share}% of documents at "
                           "fd_raw = 0 (no claim; short ones more often): ties",
                           functools.partial(_fd_synthetic_zeros, share / 30), "n_tokens", "fd_raw", method, null=null)
             for share in (15, 30)]
    return (
        _pairs_design("fd-demo", "the demo corpus: 600 segments of three evidence tiers", _fd_demo, "n_tokens", "fd_raw",
                      method, null=null),
        _pairs_design("healthfc", "HealthFC: 750 evidence passages, prob_fact by the offline heuristic", _fd_healthfc,
                      "n_tokens", "fd_raw", method, null=null, data="healthfc"),
        _pairs_design("lognormal-length", "log-normal lengths, density falling with length and heavy-tailed",
                      _fd_synthetic, "n_tokens", "fd_raw", method, null=null),
        zeros[0],
        _slow(zeros[1]),
    )


def _fd_length_bias(sample, level, *, p_value=False, **options):
    from evalkit import density

    table = pd.DataFrame({"n_tokens": sample["x"], "fd_raw": sample["y"]})
    row = density.length_bias(table, columns=("fd_raw",), **({"n_resamples": 0} if p_value else {"confidence_level": level}),
                              **options).loc["fd_raw"]
    return row["p_val"] if p_value else (row["ci_low"], row["ci_high"], row["r"])


ENTRIES = [
    Entry("density.length_bias", "Spearman, studentized bootstrap on Fisher z (default)", "interval", _fd_length_bias,
          _length_designs(), default=True),
    Entry("density.length_bias", "Spearman, Fisher z with the Bonett-Wright variance", "interval",
          functools.partial(_fd_length_bias, interval="fisher"), _length_designs()),
    Entry("density.length_bias", "Spearman p-value (default)", "test", functools.partial(_fd_length_bias, p_value=True),
          _length_designs(null=True), default=True),
    Entry("density.length_bias", "method='pearson', studentized bootstrap on Fisher z", "interval",
          functools.partial(_fd_length_bias, method="pearson"), _length_designs("pearson"),
          notes="note and a warning say it may not hold (0.91-0.93 at 20-100 log-normal lengths)"),
    Entry("density.length_bias", "method='pearson', Fisher-z interval (normal theory)", "interval",
          functools.partial(_fd_length_bias, method="pearson", interval="fisher"), _length_designs("pearson"),
          notes="note and a warning say it may not hold (0.90-0.92 on the demo corpus)"),
    Entry("density.length_bias", "method='pearson' p-value", "test",
          functools.partial(_fd_length_bias, p_value=True, method="pearson"), _length_designs("pearson", null=True),
          notes="0.076 at 50 log-normal lengths; the note of a Pearson row says so"),
]
