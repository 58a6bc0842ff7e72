"""The tiny bundle exported into a real Milvus Lite and searched there: every route returns the
in-process searcher's ids and scores, every fused mode its top 10 and nDCG; a re-export changes
nothing."""

from __future__ import annotations

import numpy as np
import pytest

from uniret.bench.engine_parity import agreement, compare_modes
from uniret.data.beir import BeirDataset
from uniret.milvus.bundles import export_bundle, milvus_searchers
from uniret.milvus.catalog import Catalog
from uniret.milvus.export import Exporter
from uniret.retrieval.base import encode_queries
from uniret.retrieval.bundle import load_searchers, read_bundle_manifest

# scores agree to float32 precision; Anserini rounds BM25 scores to 4 decimals, so a raw score a
# float ulp away from a rounding boundary lands 1e-4 away (Milvus sums the products in float)
# (the static routes are the fast mode's: the same fields, queried by the static query tables)
TOLERANCE = {"dense": 2e-6, "lexical": 1e-9, "bm25": 1.0001e-4, "dense_static": 2e-6, "lexical_static": 1e-9}
N_QUERIES = 60


@pytest.fixture(scope="module")
def queries(shared_data):
    dataset = BeirDataset(shared_data / "scifact", "scifact")
    test = dataset.split_queries("test")
    return dict(list(test.items())[:N_QUERIES]), dataset.qrels("test")


@pytest.fixture(scope="module")
def both(lite, exported, tiny_bundle):
    """(in-process searchers, searchers over Milvus) of the tiny bundle, every mode it builds."""
    local = load_searchers(tiny_bundle)
    remote = milvus_searchers(lite.client, lite.cfg, tiny_bundle)
    return local, remote


def test_export_writes_every_document_and_records_it_last(lite, exported, tiny_bundle):
    manifest = read_bundle_manifest(tiny_bundle)
    record = Catalog(lite.client, lite.cfg.catalog).export_record(exported.collection)
    assert exported.changed and record is not None and record["complete"] is True
    assert record["num_docs"] == manifest["metrics"]["num_docs"]
    assert Exporter(lite.client, lite.cfg).count(exported.collection) == record["num_docs"]
    assert set(record["fields"]) == {"dense", "sparse", "bm25"}
    assert record["dense_index"]["index_type"] == "FLAT"


def test_a_second_export_of_the_same_bundle_changes_nothing(lite, exported, tiny_bundle):
    catalog = Catalog(lite.client, lite.cfg.catalog)
    before = catalog.export_record(exported.collection)
    again = export_bundle(lite.client, lite.cfg, tiny_bundle, progress=False)
    assert not again.changed and again.collection == exported.collection
    assert catalog.export_record(exported.collection) == before  # not even the time stamp moved
    assert Exporter(lite.client, lite.cfg).count(exported.collection) == before["num_docs"]


@pytest.mark.parametrize("mode", sorted(TOLERANCE))
def test_each_route_returns_the_in_process_ids_and_scores(both, queries, mode):
    local, remote = both
    assert mode in local and mode in remote
    batch = encode_queries(queries[0], local["dense"].encoder)
    ours = local[mode].search_batch(batch, 100)
    theirs = remote[mode].search_batch(batch, 100)
    tol = TOLERANCE[mode]
    for qid in ours:
        mine, other = list(ours[qid].items()), list(theirs[qid].items())
        assert len(other) == len(mine), (mode, qid)
        # rank by rank the same score (numpy's allclose rule, as below), so documents may trade places
        # only where their scores tie within the engines' float rounding (the in-process flat search is a
        # numpy product, E38: its last bit may differ from Milvus's)
        for (d_mine, s_mine), (d_other, s_other) in zip(mine, other, strict=True):
            assert abs(s_mine - s_other) <= tol + 1e-6 * abs(s_mine), (mode, qid, d_mine, d_other, s_mine, s_other)
        common = set(ours[qid]) & set(theirs[qid])
        np.testing.assert_allclose([theirs[qid][d] for d in common], [ours[qid][d] for d in common], rtol=1e-6,
                                   atol=tol, err_msg=f"{mode} {qid}")


def test_every_mode_over_milvus_ranks_as_in_process(both, queries, tiny_bundle):
    local, remote = both
    served = read_bundle_manifest(tiny_bundle)["model"].get("serve_mode")
    fused = [m for m in ("hybrid", "hybrid_bm25", "rrf", "clear", "hybrid_fast", served) if m in local]
    assert "hybrid_bm25" in fused and set(fused) <= set(remote)
    batch = encode_queries(queries[0], local["dense"].encoder)
    table = compare_modes(local, remote, batch, queries[1], fused, depth=100)
    for mode, row in table.items():
        assert row["same_top10"] >= 0.99, (mode, row)
        assert row["ndcg@10_diff"] <= 0.001, (mode, row)


def test_modes_needing_local_vectors_are_not_offered_over_milvus(both):
    local, remote = both
    assert {"uni", "exhaustive"} <= set(local)
    assert not {"uni", "exhaustive", "bm25_rm3"} & set(remote)


def test_agreement_counts_a_swapped_pair_as_different():
    local = {"q": {"a": 3.0, "b": 2.0, "c": 1.0}}
    swapped = {"q": {"a": 3.0, "b": 1.0, "c": 2.0}}
    row = agreement(local, swapped, 3)
    assert row["same_top3"] == 0.0 and row["same_top3_set"] == 1.0 and row["max_abs_score_diff"] == 1.0


def test_milvus_native_hybrid_search_is_offered_as_extra_modes(lite, exported, tiny_bundle, queries):
    from dataclasses import replace

    remote = milvus_searchers(lite.client, replace(lite.cfg, native_rankers=["rrf", "weighted"]), tiny_bundle)
    native = sorted(m for m in remote if "_native_" in m)
    assert "hybrid_bm25_native_weighted" in native and "hybrid_bm25_native_rrf" in native
    run = remote["hybrid_bm25_native_weighted"].search(dict(list(queries[0].items())[:3]), 10)
    assert all(0 < len(hits) <= 10 for hits in run.values())
    assert all(0.0 <= s <= 1.0 for hits in run.values() for s in hits.values())  # arctan-normalised, weights sum to 1


def test_the_parity_command_writes_its_figures(tmp_path, repo_root, shared_data, tiny_bundle, capsys):
    import json

    from uniret.cli import main

    out = tmp_path / "parity"
    code = main(["export", "milvus-parity", "--params", str(repo_root / "params.yaml"), "--profile", "tiny",
                 "--artifacts", str(tiny_bundle.parent.parent), "--data", str(shared_data), "--bundle", str(tiny_bundle),
                 "--uri", str(tmp_path / "parity.db"), "--out", str(out), "--datasets", "scifact",
                 "--max-queries", "20", "--latency-queries", "5", "--clients", "2"])
    assert code == 0, capsys.readouterr().err
    report = json.loads((out / "milvus_parity.json").read_text())
    rows = report["datasets"]["scifact"]["modes"]
    assert {"dense", "lexical", "bm25", "hybrid_bm25", "hybrid_fast"} <= set(rows)
    assert all(row["same_top10"] >= 0.99 for mode, row in rows.items() if "_native_" not in mode), rows
    assert set(report["speed"]["modes"]["bm25"]) == {"in_process", "milvus"}
    assert "| scifact | hybrid_bm25 |" in (out / "milvus_parity.md").read_text()
