"""faiss dense retrieval: Flat equals brute-force numpy; HNSW and IVF-PQ build and search."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from uniret.config.retrieval import DenseIndexConfig
from uniret.core.runs import ranking_differences
from uniret.retrieval.dense import (
    DenseSearcher,
    build_faiss_index,
    doc_vectors,
    load_faiss_index,
    save_faiss_index,
    to_search_device,
)


def test_flat_equals_brute_force_numpy(encoded_slice):
    docs, queries = encoded_slice.docs.dense, encoded_slice.batch.encoded.dense
    searcher = DenseSearcher(build_faiss_index(docs, DenseIndexConfig(type="flat")), encoded_slice.docids)
    run = searcher.search_batch(encoded_slice.batch, 10)
    brute = queries @ docs.T
    for i, qid in enumerate(encoded_slice.batch.ids):
        order = np.argsort(-brute[i], kind="stable")[:10]
        got = run[qid]
        assert len(got) == 10
        # same scores, in the same order (ids may only differ among exactly tied scores)
        assert list(got.values()) == pytest.approx(brute[i][order].tolist(), rel=1e-5, abs=1e-5)
        for did, score in got.items():
            assert score == pytest.approx(brute[i][encoded_slice.docids.index(did)], rel=1e-5, abs=1e-5)


def test_flat_with_its_vectors_searches_by_numpy_and_ranks_as_faiss(encoded_slice):
    """The batch-1 serving path: a flat index given its vectors answers by one numpy product; same
    documents in the same order as faiss (scores equal to float rounding), batch 1 and batched."""
    from uniret.retrieval.base import QueryBatch

    docs = encoded_slice.docs.dense
    index = build_faiss_index(docs, DenseIndexConfig(type="flat"))
    by_faiss = DenseSearcher(index, encoded_slice.docids)
    by_numpy = DenseSearcher(index, encoded_slice.docids, vectors=docs)
    assert by_numpy.vectors is not None and by_faiss.vectors is None
    batch = encoded_slice.batch
    singles = [QueryBatch(ids=[q], texts=[t], encoded=dataclasses.replace(batch.encoded, dense=batch.encoded.dense[i:i + 1]))
               for i, (q, t) in enumerate(zip(batch.ids, batch.texts, strict=True))]
    for part in [batch, *singles]:
        for (rows_f, scores_f), (rows_n, scores_n) in zip(by_faiss.search_arrays(part, 50), by_numpy.search_arrays(part, 50),
                                                          strict=True):
            assert rows_n.tolist() == rows_f.tolist()
            np.testing.assert_allclose(scores_n, scores_f, rtol=1e-5, atol=1e-5)
    hnsw = build_faiss_index(docs, DenseIndexConfig(type="hnsw"))
    assert DenseSearcher(hnsw, encoded_slice.docids, vectors=docs).vectors is None  # approximate: faiss searches


def test_hnsw_recovers_flat_top10(encoded_slice):
    flat = DenseSearcher(build_faiss_index(encoded_slice.docs.dense, DenseIndexConfig()), encoded_slice.docids)
    hnsw = DenseSearcher(build_faiss_index(encoded_slice.docs.dense, DenseIndexConfig(type="hnsw")), encoded_slice.docids)
    exact, approx = flat.search_batch(encoded_slice.batch, 10), hnsw.search_batch(encoded_slice.batch, 10)
    recall = np.mean([len(set(exact[q]) & set(approx[q])) / 10 for q in exact])
    assert recall >= 0.9  # 300 vectors, efSearch 128: HNSW should be (nearly) exact


def test_ivfpq_clamps_to_small_corpus_and_returns_wellformed_runs(encoded_slice, tmp_path):
    cfg = DenseIndexConfig(type="ivfpq", pq_m=16)
    index = build_faiss_index(encoded_slice.docs.dense, cfg)
    assert index.nlist <= len(encoded_slice.docids) // 39  # clamped from 1024
    path = save_faiss_index(index, tmp_path / "dense.faiss")
    reloaded = to_search_device(load_faiss_index(path), cfg)
    run = DenseSearcher(reloaded, encoded_slice.docids).search_batch(encoded_slice.batch, 20)
    assert set(run) == set(encoded_slice.batch.ids)
    for hits in run.values():
        assert 0 < len(hits) <= 20 and set(hits) <= set(encoded_slice.docids)
        scores = list(hits.values())
        assert scores == sorted(scores, reverse=True)
    # reconstructed vectors are PQ approximations of the originals, aligned by row
    approx = doc_vectors(reloaded)
    cos = (approx * encoded_slice.docs.dense).sum(1) / (
        np.linalg.norm(approx, axis=1) * np.linalg.norm(encoded_slice.docs.dense, axis=1)
    )
    assert np.median(cos) > 0.8


def test_pq_m_must_divide_dimension(encoded_slice):
    cfg = dataclasses.replace(DenseIndexConfig(type="ivfpq"), pq_m=7)
    with pytest.raises(ValueError, match="pq_m=7"):
        build_faiss_index(encoded_slice.docs.dense, cfg)


def test_searcher_rejects_misaligned_docids(encoded_slice):
    with pytest.raises(ValueError, match="doc ids"):
        DenseSearcher(build_faiss_index(encoded_slice.docs.dense, DenseIndexConfig()), encoded_slice.docids[:-1])


def test_gpu_placement_when_faiss_sees_a_gpu(monkeypatch, encoded_slice):
    # No GPU here: fake faiss-gpu's two entry points to check the placement decision only.
    import faiss

    moved = []
    monkeypatch.setattr(faiss, "get_num_gpus", lambda: 2)
    monkeypatch.setattr(faiss, "index_cpu_to_all_gpus", lambda index: moved.append(index) or index, raising=False)
    index = build_faiss_index(encoded_slice.docs.dense, DenseIndexConfig())
    assert to_search_device(index, DenseIndexConfig()) is index and moved == [index]
    assert to_search_device(index, DenseIndexConfig(use_gpu=False)) is index and len(moved) == 1
    hnsw = build_faiss_index(encoded_slice.docs.dense, DenseIndexConfig(type="hnsw"))
    assert to_search_device(hnsw, DenseIndexConfig(type="hnsw")) is hnsw and len(moved) == 1  # no GPU HNSW


def _clustered(rng, centres: int, n: int, spread: float) -> tuple[np.ndarray, list[str]]:
    """n unit vectors (64-d) around `centres` random centres, as embeddings cluster, and their doc ids."""
    points = rng.standard_normal((centres, 64))
    docs = (points[rng.integers(0, centres, n)] + spread * rng.standard_normal((n, 64))).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    return docs, [f"d{i}" for i in range(n)]


def test_fast_scan_shortlist_ranks_its_candidates_exactly():
    """The shortlist's hits carry exact scores in exact order; with every document a candidate it is
    the exact search; at 2x a depth of 100 it keeps the exact top 10 (clustered vectors, as
    embeddings are); a corpus too small to be worth it, or a dimension that does not split, scans every vector."""
    from uniret.retrieval.base import QueryBatch
    from uniret.retrieval.dense import SHORTLIST_MIN_DOCS, build_fast_scan
    from uniret.retrieval.encoding import EncodedTexts

    rng = np.random.default_rng(7)
    docs, docids = _clustered(rng, 30, 3000, 0.5)
    index = build_faiss_index(docs, DenseIndexConfig(type="flat"))
    exact = DenseSearcher(index, docids, vectors=docs)
    listed = DenseSearcher(index, docids, vectors=docs, shortlist=2)
    assert listed.fast_scan is not None
    assert build_fast_scan(docs[:, :-1]) is None and build_fast_scan(docs[:SHORTLIST_MIN_DOCS - 1]) is None
    queries = docs[:40] + 0.3 * rng.standard_normal((40, 64)).astype(np.float32)
    overlap = []
    for i, query in enumerate(queries):
        part = QueryBatch([f"q{i}"], [""], EncodedTexts(dense=query[None, :]))
        (rows_e, _), = exact.search_arrays(part, 10)
        (rows, scores), = listed.search_arrays(part, 100)  # 200 candidates of 3000
        np.testing.assert_allclose(scores, docs[rows] @ query, rtol=1e-5, atol=1e-6)
        assert len(rows) == 100 and np.all(np.diff(scores) <= 0)
        overlap.append(len(set(rows[:10].tolist()) & set(rows_e.tolist())) / 10)
    assert np.mean(overlap) >= 0.95
    part = QueryBatch(["all"], [""], EncodedTexts(dense=queries[:1]))
    assert listed.search_arrays(part, 2000)[0][0].tolist() == exact.search_arrays(part, 2000)[0][0].tolist()
    # a batch of several queries, and of none, through the exact scan's compiled top k (E104)
    many = exact.search_arrays(QueryBatch([f"q{i}" for i in range(5)], [""] * 5, EncodedTexts(dense=queries[:5])), 10)
    assert [rows.tolist() for rows, _ in many] == [
        exact.search_arrays(QueryBatch(["q"], [""], EncodedTexts(dense=queries[i:i + 1])), 10)[0][0].tolist()
        for i in range(5)]
    assert exact.search_arrays(QueryBatch([], [], EncodedTexts(dense=queries[:0])), 10) == []


def test_the_configured_fast_dense_route_is_the_exact_one_milvus_serves(repo_root):
    """hybrid_fast's min-max fusion takes each route's scale from its last document at `fast_depth`, so a
    shortlist that misses even tail documents reorders the fused top 10; Milvus's FLAT index is exact.
    With the served params (cpu profile), the in-process dense route returns the exact top fast_depth
    (E51: a 1.5x fast-scan shortlist kept the same fused top 10 on 66% of NFCorpus's test queries)."""
    from uniret.config.params import load_params
    from uniret.retrieval.base import QueryBatch
    from uniret.retrieval.encoding import EncodedTexts

    fusion = load_params(repo_root / "params.yaml", "cpu").section("retrieval").fusion
    rng = np.random.default_rng(3)
    docs, docids = _clustered(rng, 40, 4000, 0.6)
    index = build_faiss_index(docs, DenseIndexConfig(type="flat"))
    served = DenseSearcher(index, docids, vectors=docs, shortlist=fusion.fast_shortlist)
    queries = docs[:20] + 0.3 * rng.standard_normal((20, 64)).astype(np.float32)
    for i, query in enumerate(queries):
        part = QueryBatch([f"q{i}"], [""], EncodedTexts(dense=query[None, :]))
        (rows, scores), = served.search_arrays(part, fusion.fast_depth)
        exact = docs @ query
        want = np.argsort(-exact, kind="stable")[: fusion.fast_depth + 1]
        # faiss and numpy sum in other orders: equal rankings up to ties within float noise
        problems = ranking_differences({str(r): float(exact[r]) for r in want},
                                       {str(r): float(v) for r, v in zip(rows, scores, strict=True)},
                                       fusion.fast_depth, 1e-5 * float(np.abs(exact).max()))
        assert not problems, (i, problems)
