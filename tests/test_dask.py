"""Dask DataFrames in, lazy dask results out, equal to the pandas path (on a LocalCluster with worker processes)."""

import numpy as np
import pandas as pd
import pytest

dask = pytest.importorskip("dask", reason="needs the dask extra: pip install \"llm-evalkit[dask]\"")
dd = pytest.importorskip("dask.dataframe", reason="needs the dask extra: pip install \"llm-evalkit[dask]\"")
distributed = pytest.importorskip("dask.distributed", reason="needs the dask extra: pip install \"llm-evalkit[dask]\"")

from evalkit import EvalkitWarning, datasets, density, retrieval, tcva, verdicts  # noqa: E402
from evalkit._dask import is_dask, qcut_levels, quantiles_from_counts  # noqa: E402
from evalkit.verdicts import LEVELS  # noqa: E402

TEMPERATURES = np.round(np.linspace(0.1, 1.0, 19), 2)


@pytest.fixture(scope="session")
def client():
    # No dashboard, and the scheduler's HTTP routes on a free port: with the default (8787), a second cluster on the
    # machine (the Dask benchmark's, run by another test worker) makes distributed warn that the port is taken.
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  scheduler_kwargs={"dashboard_address": "127.0.0.1:0"}, host="127.0.0.1") as cluster, \
            distributed.Client(cluster) as client:
        yield client


def claim_table(rng, n_items=400, max_claims=19, spellings=None):
    """Claims of n_items items (a tenth without claims) in shuffled row order, so items span partitions."""
    items = [f"item{k:04d}" for k in range(n_items)]
    sizes = rng.integers(0, max_claims + 1, n_items)
    sizes[rng.choice(n_items, n_items // 10, replace=False)] = 0
    item_id = np.repeat(items, sizes)
    claim_idx = np.concatenate([np.arange(s) for s in sizes])
    labels = np.array(spellings or LEVELS, dtype=object)[rng.integers(0, len(spellings or LEVELS), len(item_id))]
    table = pd.DataFrame({"item_id": item_id, "claim_idx": claim_idx, "verdict": labels})
    return table.iloc[rng.permutation(len(table))].reset_index(drop=True), pd.Index(items, name="item_id")


def spans_partitions(ddf, column):
    """Number of ids whose rows lie in more than one partition."""
    parts = [set(part[column]) for part in dask.compute(*ddf.to_delayed())]
    seen = pd.Series([i for part in parts for i in part]).value_counts()
    return int((seen > 1).sum())


def test_is_dask():
    frame = pd.DataFrame({"a": [1, 2]})
    assert not is_dask(frame) and not is_dask(frame["a"]) and not is_dask(None)
    assert is_dask(dd.from_pandas(frame, npartitions=1)) and is_dask(dd.from_pandas(frame, npartitions=1)["a"])


def test_quantiles_from_counts_equal_numpy_and_qcut(rng):
    for _ in range(400):
        values = rng.integers(1, int(rng.integers(2, 3000)), int(rng.integers(1, 400))).astype(float)
        levels = np.concatenate([qcut_levels(int(rng.integers(1, 9))), rng.random(3)])
        counts = pd.Series(values).value_counts()
        assert np.array_equal(quantiles_from_counts(counts, levels), np.quantile(values, levels))
    values = pd.Series(rng.integers(1, 500, 1000).astype(float))
    _, edges = pd.qcut(values, 7, retbins=True)
    assert np.array_equal(quantiles_from_counts(values.value_counts(), qcut_levels(7)), edges)


@pytest.mark.parametrize("kind", ["categorical", "strings"])
def test_level_counts_equal_pandas(client, rng, kind):
    spellings = ["None", "minor ", "PARTIALLY", "mostly", "Fully"] if kind == "strings" else None
    table, items = claim_table(rng, spellings=spellings)
    if kind == "categorical":
        table["verdict"] = table["verdict"].astype(verdicts.VERDICT_DTYPE)
    ddf = dd.from_pandas(table, npartitions=6)
    assert spans_partitions(ddf, "item_id") > 100
    whole = ddf.compute()
    for options in ({}, {"items": items}):
        counts = verdicts.level_counts(ddf, **options)
        assert is_dask(counts)
        pd.testing.assert_frame_equal(counts.compute(), verdicts.level_counts(whole, **options), check_exact=True)


SWEEP_OPTIONS = [{}, {"none_penalty": False}, {"empty": np.nan}, {"p": 1.0, "scale": "binary"},
                 {"decimals": 4, "scale": "conservative"}]


def test_sweep_equals_pandas_exactly(client, rng):
    table, items = claim_table(rng)
    ddf = dd.from_pandas(table, npartitions=5)
    whole = ddf.compute()
    lazy = [tcva.sweep(ddf, TEMPERATURES, items=items, **options) for options in SWEEP_OPTIONS]
    lazy.append(tcva.sweep(ddf, [0.3]))
    assert all(map(is_dask, lazy))
    computed = dask.compute(*lazy)
    for options, got in zip(SWEEP_OPTIONS, computed, strict=False):
        pd.testing.assert_frame_equal(got, tcva.sweep(whole, TEMPERATURES, items=items, **options), check_exact=True)
        assert got.index.equals(items)
    assert len(items.difference(whole["item_id"])) >= 40  # items without claims are scored too
    pd.testing.assert_frame_equal(computed[-1], tcva.sweep(whole, [0.3]), check_exact=True)


def test_sweep_from_partitioned_parquet(client, rng, tmp_path):
    table, items = claim_table(rng, n_items=600)
    table["verdict"] = table["verdict"].astype(str)
    for k, part in enumerate(np.array_split(np.arange(len(table)), 4)):
        table.iloc[part].to_parquet(tmp_path / f"part{k}.parquet", engine="pyarrow", index=False)
    ddf = dd.read_parquet(tmp_path)
    assert ddf.npartitions == 4
    pd.testing.assert_frame_equal(tcva.sweep(ddf, TEMPERATURES).compute(), tcva.sweep(ddf.compute(), TEMPERATURES),
                                  check_exact=True)


def test_sweep_bad_input(client, rng):
    table, items = claim_table(rng, n_items=50)
    ddf = dd.from_pandas(table, npartitions=3)
    with pytest.raises(ValueError, match="temperature"):  # options are checked before anything is computed
        tcva.sweep(ddf, [0.05])
    with pytest.raises(ValueError, match="eps"):
        tcva.sweep(ddf, [0.5], eps=2.0)
    with pytest.raises(KeyError, match=r"missing column\(s\) \['verdict'\]; it has columns \['item_id', 'claim_idx'\]"):
        tcva.sweep(ddf[["item_id", "claim_idx"]], [0.5])
    lazy = tcva.sweep(ddf, [0.5], items=items[:10])
    with pytest.raises(ValueError, match="not in `items`"):
        lazy.compute()
    bad = table.copy()
    bad.loc[7, "verdict"] = "sort of"
    with pytest.raises(ValueError, match="'sort of' is not one of"):
        tcva.sweep(dd.from_pandas(bad, npartitions=3), [0.5]).compute()
    empty = tcva.sweep(dd.from_pandas(table.iloc[:0], npartitions=1), [0.5]).compute()  # pandas would raise
    assert empty.shape == (0, 1) and list(empty.columns) == [0.5]


def sorted_claims(rng, n_items=300, kind="str"):
    """Claims in ascending order of item_id, cut into partitions of uneven length: items continue into the next
    partition, one item fills whole partitions, and some partitions are empty."""
    sizes = rng.integers(1, 12, n_items)
    sizes[[40, 200]] = [160, 75]  # longer than the partitions around them
    ids = np.array([f"id{k:05d}" for k in range(0, 3 * n_items, 3)], dtype=object)
    if kind == "int":
        ids = np.arange(0, 3 * n_items, 3) * 7 - 500
    item_id = np.repeat(ids, sizes)
    table = pd.DataFrame({"item_id": item_id, "claim_idx": np.concatenate([np.arange(s) for s in sizes]),
                          "verdict": np.array(LEVELS, dtype=object)[rng.integers(0, 5, len(item_id))]})
    if kind == "str":
        table["item_id"] = table["item_id"].astype("str")
    cuts = np.sort(rng.choice(np.arange(1, len(table)), 14, replace=False))
    cuts = np.r_[0, cuts[:6], cuts[5], cuts[6:], cuts[-1], len(table)]  # two empty partitions
    start = int(np.repeat(np.arange(n_items), sizes).tolist().index(40))
    cuts = np.sort(np.r_[cuts, start + 20, start + 60, start + 100])  # item 40 spans four partitions
    parts = [table.iloc[a:b] for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    ddf = dd.from_delayed([dask.delayed(part) for part in parts], meta=table.iloc[:0], verify_meta=False)
    return table, ddf, pd.Index(ids, name="item_id")


def graph_names(collection) -> set:
    return {key[0] if isinstance(key, tuple) else key for key in dict(collection.__dask_graph__())}


@pytest.mark.parametrize("kind", ["str", "int"])
def test_presorted_claims_are_counted_and_scored_without_a_shuffle(client, rng, kind):
    table, ddf, ids = sorted_claims(rng, kind=kind)
    assert (ddf.map_partitions(len).compute() == 0).sum() >= 2 and spans_partitions(ddf, "item_id") >= 10
    extra = ids.append(pd.Index(["zz"] if kind == "str" else [10**6], name="item_id"))  # one item without claims
    everything = extra.sort_values()
    for options in ({}, {"items": everything}, {"items": everything[::-1]}, {"items": everything[::2].append(everything[1::2])}):
        counts = verdicts.level_counts(ddf, presorted=True, **options)
        pd.testing.assert_frame_equal(counts.compute(), verdicts.level_counts(table, **options), check_exact=True)
        lazy = tcva.sweep(ddf, TEMPERATURES, presorted=True, **options)
        pd.testing.assert_frame_equal(lazy.compute(), tcva.sweep(table, TEMPERATURES, **options), check_exact=True)
        if options.get("items") is None or options["items"].is_monotonic_increasing:
            assert not any("shuffle" in str(name) or "set_index" in str(name) for name in graph_names(lazy))
    pd.testing.assert_frame_equal(verdicts.level_counts(table, presorted=True), verdicts.level_counts(table),
                                  check_exact=True)


@pytest.mark.parametrize("block", [1, 2, 3, 16])
def test_sorted_sums_equal_a_groupby_sum_whatever_the_blocks(rng, block):
    """_dask.sum_sorted against pandas' groupby sum, on partitions of a sorted table cut anywhere (empty ones, a
    value spanning several), with the carried rows worked out in blocks of any size."""
    from evalkit._dask import sum_sorted

    keys = np.sort(rng.integers(0, 60, 400))
    keys[100:180] = keys[100]
    table = pd.DataFrame({"a": rng.integers(0, 5, 400), "b": rng.integers(0, 3, 400)}, index=pd.Index(keys, name="k"))
    cuts = np.r_[0, np.sort(rng.choice(np.arange(1, 400), 20, replace=False)), 120, 150, 150, 400]
    cuts = np.sort(cuts)
    parts = [table.iloc[a:b].groupby(level=0, sort=False).sum() for a, b in zip(cuts[:-1], cuts[1:], strict=True)]
    frame = dd.from_delayed([dask.delayed(part) for part in parts], meta=parts[0].iloc[:0], verify_meta=False)
    with dask.config.set(scheduler="sync"):
        got = sum_sorted(frame, block=block).compute()
    pd.testing.assert_frame_equal(got, table.groupby(level=0).sum(), check_exact=True)


def test_presorted_claims_out_of_order_raise_naming_the_item(client, rng):
    table, ddf, _ = sorted_claims(rng)
    swapped = table.copy()
    rows = [len(table) // 2, len(table) // 2 + 40]
    swapped.iloc[rows[0], 0], swapped.iloc[rows[1], 0] = table.iloc[rows[1], 0], table.iloc[rows[0], 0]
    after, later = table.iloc[rows[0] + 1, 0], table.iloc[rows[1], 0]  # the row after the first swapped one
    with pytest.raises(ValueError, match=rf"row {rows[0] + 1}: item_id '{after}' comes after '{later}'; with presorted=True"):
        verdicts.level_counts(swapped, presorted=True)
    with pytest.raises(ValueError, match="with presorted=True"):
        tcva.sweep(dd.from_pandas(swapped, npartitions=1), [0.5], presorted=True).compute()
    # out of order across partitions only: each partition is sorted, the second starts before the first ends
    halves = [table.iloc[len(table) // 2:], table.iloc[:len(table) // 2]]
    across = dd.from_delayed([dask.delayed(h) for h in halves], meta=table.iloc[:0], verify_meta=False)
    with pytest.raises(ValueError, match=r"item ids \(presorted=True\) are not in ascending order: .* \(in an earlier "
                                         r"partition\)"):
        tcva.sweep(across, [0.5], presorted=True).compute()
    verdicts.level_counts(across).compute()  # the default plan takes any order
    with pytest.raises(TypeError, match="`presorted` must be True or False"):
        verdicts.level_counts(table, presorted="yes")


def fd_tables(rng, n_docs=1500, n_claims=5000):
    docs = pd.DataFrame({"doc_id": [f"doc{k:05d}" for k in rng.permutation(n_docs)],
                         "n_tokens": rng.integers(20, 600, n_docs),
                         "source": rng.choice(["review", "news", "blog"], n_docs)})
    claims = pd.DataFrame({"doc_id": docs["doc_id"].to_numpy()[rng.integers(0, n_docs, n_claims)],
                           "prob_fact": rng.random(n_claims)})
    return docs, claims


def write_parts(frame, folder, n_parts):
    folder.mkdir()
    for k, part in enumerate(np.array_split(np.arange(len(frame)), n_parts)):
        frame.iloc[part].to_parquet(folder / f"part{k}.parquet", engine="pyarrow", index=False)
    return dd.read_parquet(folder)


FD_OPTIONS = [{}, {"bins": 5}, {"edges": [0, 150, 300, 700], "labels": ["s", "m", "l"]},
              {"authority": {"review": 1.5, "news": 1.0, "blog": 0.5}}]


def test_fd_star_from_parquet_equals_pandas_exactly(client, rng, tmp_path):
    docs, claims = fd_tables(rng)
    ddocs, dclaims = write_parts(docs, tmp_path / "docs", 3), write_parts(claims, tmp_path / "claims", 4)
    assert spans_partitions(dclaims, "doc_id") > 500
    pdocs, pclaims = ddocs.compute(), dclaims.compute()
    raw = density.fd_raw(dclaims, ddocs)
    tables = [density.fd_star(dclaims, ddocs, **options) for options in FD_OPTIONS]
    assert is_dask(raw) and raw.npartitions == 3 and all(map(is_dask, tables))
    computed = dask.compute(raw, *tables)  # one graph: the shuffles are shared
    pd.testing.assert_frame_equal(computed[0], density.fd_raw(pclaims, pdocs), check_exact=True)
    for options, got in zip(FD_OPTIONS, computed[1:], strict=True):
        pd.testing.assert_frame_equal(got, density.fd_star(pclaims, pdocs, **options), check_exact=True)


def test_fd_star_tokenizer_and_pandas_documents(client):
    corpus = datasets.load_demo("fd")
    documents = corpus["documents"].drop(columns="n_tokens")  # tokens counted from the text
    dclaims = dd.from_pandas(corpus["claims"].sample(frac=1.0, random_state=3), npartitions=4)
    got = density.fd_star(dclaims, documents, tokenizer=str.split).compute()
    # dask stores strings as pyarrow strings: the reference is the pandas path on the tables as dask holds them
    expected = density.fd_star(dclaims.compute(), dd.from_pandas(documents, npartitions=1).compute(), tokenizer=str.split)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert np.array_equal(got["z"], density.fd_star(corpus["claims"], documents)["z"])


def test_fd_star_bad_input_and_warnings(client, rng):
    docs, claims = fd_tables(rng, n_docs=60, n_claims=200)
    ddocs, dclaims = dd.from_pandas(docs, npartitions=2), dd.from_pandas(claims, npartitions=2)
    with pytest.raises(KeyError, match=r"`doc_claims` is missing column\(s\) \['prob_fact'\]"):
        density.fd_star(dclaims[["doc_id"]], ddocs)
    with pytest.raises(ValueError, match="`edges` must be at least two increasing numbers"):
        density.fd_star(dclaims, ddocs, edges=[10, 5])
    stray = pd.concat([claims, pd.DataFrame({"doc_id": ["nowhere"], "prob_fact": [0.5]})], ignore_index=True)
    with pytest.raises(ValueError, match=r"unknown doc_id\(s\) \['nowhere'\]"):
        density.fd_raw(dd.from_pandas(stray, npartitions=3), ddocs).compute()
    flat = dd.from_pandas(docs.assign(n_tokens=50), npartitions=2)
    with pytest.raises(ValueError, match="do not split into 3 quantile bins"):
        density.fd_star(dclaims, flat).compute()
    # One document in the last bin: z = 0 and the pandas path's warning, raised by the task (so seen here with the
    # local scheduler; on a cluster it goes to the worker's log).
    edges = [0, 300, 599, 600]
    lonely = docs.assign(n_tokens=np.where(np.arange(len(docs)) == 5, 600, np.minimum(docs["n_tokens"], 590)))
    local = {"scheduler": "sync", "dataframe.shuffle.method": "tasks"}
    with dask.config.set(local), pytest.warns(EvalkitWarning, match=r"length bin\(s\) \['long'\] hold a single document"):
        got = density.fd_star(dclaims, dd.from_pandas(lonely, npartitions=2), edges=edges).compute()
    with pytest.warns(EvalkitWarning, match="single document"):
        expected = density.fd_star(dclaims.compute(), dd.from_pandas(lonely, npartitions=1).compute(), edges=edges)
    pd.testing.assert_frame_equal(got, expected, check_exact=True)
    assert got.loc[lonely["doc_id"].iloc[5], "z"] == 0.0
    with dask.config.set(local), pytest.warns(EvalkitWarning, match=r"no weight for source\(s\) \['blog'\]"):
        density.fd_star(dclaims, ddocs, authority={"review": 2.0, "news": 1.0}).compute()


def test_hybrid_search_takes_a_dask_fd_table(client):
    corpus = datasets.load_demo("fd")
    dclaims = dd.from_pandas(corpus["claims"], npartitions=3)
    ddocs = dd.from_pandas(corpus["documents"], npartitions=2)
    fd_pandas = density.fd_star(corpus["claims"], corpus["documents"])
    fd_dask = density.fd_star(dclaims, ddocs).persist()  # computed once on the cluster, then selected from
    some = corpus["documents"].iloc[::2]  # a sub-corpus: FD* is rescaled over its own documents in both paths
    for documents, embeddings in ((corpus["documents"], corpus["doc_embeddings"]), (some, corpus["doc_embeddings"][::2])):
        for fd in (fd_dask, fd_dask["fd_star"]):
            kwargs = {"condition": "hybrid", "k": 5, "doc_embeddings": embeddings,
                      "query_embeddings": corpus["query_embeddings"]}
            pd.testing.assert_frame_equal(retrieval.search(documents, corpus["queries"], fd=fd, **kwargs),
                                          retrieval.search(documents, corpus["queries"], fd=fd_pandas, **kwargs),
                                          check_exact=True)
