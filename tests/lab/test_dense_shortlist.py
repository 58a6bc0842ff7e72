"""lab/dense_shortlist.py on clustered vectors: the feedback queries, the grid's figures, the HNSW quantizer."""

from __future__ import annotations

import numpy as np

from uniret.config.retrieval import PruningConfig
from uniret.retrieval.faiss_loader import faiss


def _clustered(n: int, dim: int = 32, seed: int = 5) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((40, dim))[rng.integers(0, 40, n)]
    return (centres + 0.3 * rng.standard_normal((n, dim))).astype(np.float32)


def test_feedback_queries_move_toward_their_best_documents_and_stay_unit(lab_script):
    script = lab_script("dense_shortlist")
    vectors = _clustered(2000)
    queries = vectors[:5] + 0.5 * np.random.default_rng(1).standard_normal((5, 32)).astype(np.float32)
    moved = script.feedback_queries(vectors, queries, docs=3, weight=0.5)
    np.testing.assert_allclose(np.linalg.norm(moved, axis=1), 1.0, rtol=1e-5)
    best = script.exact_top(vectors, queries, 3)
    centroid = vectors[best].sum(axis=1)
    before = np.sum(queries / np.linalg.norm(queries, axis=1, keepdims=True) * centroid, axis=1)
    assert np.all(np.sum(moved * centroid, axis=1) > before)  # closer to the mean of their best documents


def test_every_list_probed_finds_the_scans_lists_whichever_quantizer(lab_script):
    script = lab_script("dense_shortlist")
    vectors = _clustered(3000)
    queries = script.feedback_queries(vectors, vectors[:12] + 0.1, docs=3, weight=0.5)
    pruning = PruningConfig(ivf_points_per_list=100, ivf_train_points=40)
    rows = script.measure(vectors, queries, 20, pruning, links=8, rounds=1, grid=[(64, 8), (2, 1)])
    assert [(r["quantizer"], r["nprobe"], r["candidates"]) for r in rows] == [
        (script.SCAN, 0, 3000), ("every centroid", 30, 160), ("every centroid", 2, 20), ("HNSW, 8 links", 30, 160), ("HNSW, 8 links", 2, 20)]
    rows = rows[1:]  # after the scan's own row
    everything = [r for r in rows if r["nprobe"] == 30]
    # every list probed, 8 x the depth rescored: the scan's top 10 and (nearly) its whole list
    assert all(r["top10_agreement"] >= 0.95 and r["depth_agreement"] >= 0.9 for r in everything)
    few = [r for r in rows if r["nprobe"] == 2]
    assert all(f["depth_agreement"] <= e["depth_agreement"] for f, e in zip(few, everything, strict=True))
    assert all(r["p50_ms"] > 0 for r in rows)


def test_the_hnsw_quantizer_follows_nprobe(lab_script):
    from uniret.retrieval.dense import build_ivf_shortlist

    script = lab_script("dense_shortlist")
    index = script.hnsw_quantizer(build_ivf_shortlist(_clustered(3000), 100, 10, 40, 1), links=8)
    graph = faiss.downcast_index(index.quantizer)
    assert isinstance(graph, faiss.IndexHNSWFlat) and graph.ntotal == index.nlist == 30
    script.set_nprobe(index, 5)
    assert index.nprobe == 5 and graph.hnsw.efSearch == 5 * script.EF_PER_PROBE
    script.set_nprobe(index, 1000)
    assert index.nprobe == 30
