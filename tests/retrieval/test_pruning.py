"""Large-corpus routes (retrieval.pruning): the cut posting lists with exact rescoring and the dense
IVF shortlist against their exhaustive forms, and the size switch that picks them in build_searchers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

from uniret.config.retrieval import PruningConfig, RetrievalConfig
from uniret.retrieval import kernels
from uniret.retrieval.base import QueryBatch
from uniret.retrieval.dense import DenseSearcher, build_ivf_shortlist
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.faiss_loader import faiss
from uniret.retrieval.lexical import MemoryImpactIndex
from uniret.retrieval.modes import CorpusIndex, build_searchers
from uniret.retrieval.postings import Postings, PrunedPostings
from uniret.retrieval.ranking import tie_ranks
from uniret.retrieval.static_query import StaticQueryEncoder


def _corpus(n_docs=3000, n_terms=400, seed=0):
    """Integer impacts with a Zipf-like spread of document frequencies (a few long lists, many short)."""
    rng = np.random.default_rng(seed)
    df_weight = 1.0 / np.arange(1, n_terms + 1) ** 0.8
    rows, cols = [], []
    for d in range(n_docs):
        terms = np.unique(rng.choice(n_terms, size=30, p=df_weight / df_weight.sum()))
        rows += [d] * len(terms)
        cols += terms.tolist()
    data = rng.integers(1, 60, len(rows)).astype(np.float32)  # integer impacts: many ties
    docids = [f"d{rng.integers(10**6)}-{i}" for i in range(n_docs)]  # tie order is not row order
    return sp.csr_matrix((data, (rows, cols)), shape=(n_docs, n_terms)), docids


def _queries(n_terms, count=40, seed=1):
    rng = np.random.default_rng(seed)
    return [(np.sort(rng.choice(n_terms, size=rng.integers(2, 12), replace=False)).astype(np.int64),
             rng.integers(1, 5, 12).astype(np.float64)) for _ in range(count)]


def _overlap(a: np.ndarray, b: np.ndarray) -> float:
    return len(set(a[:10].tolist()) & set(b[:10].tolist())) / max(len(b[:10]), 1)


def test_cut_lists_with_exact_rescoring_return_the_exhaustive_top_10_on_a_small_corpus():
    weights, docids = _corpus()
    ties = tie_ranks(docids)
    full = Postings(weights)
    pruned = PrunedPostings(weights, keep=300, candidates=300)  # 10% of the corpus per list, 30 x the depth
    assert len(pruned.lists.data) < 0.75 * weights.nnz  # the long lists were cut
    for terms, w in _queries(weights.shape[1]):
        w = w[: len(terms)]
        for round32 in (False, True):
            want = full.top_k(terms, w, 10, ties, scale=1e-4, round32=round32)
            got = pruned.top_k(terms, w, 10, ties, scale=1e-4, round32=round32)
            np.testing.assert_array_equal(got[0], want[0])  # same documents, same order (ties by doc id)
            np.testing.assert_array_equal(got[1], want[1])  # and the exhaustive scores, bit for bit


def test_a_tight_cut_loses_documents_but_every_score_it_returns_is_exact():
    weights, docids = _corpus(seed=2)
    ties = tie_ranks(docids)
    full = Postings(weights)
    pruned = PrunedPostings(weights, keep=5, candidates=10)
    overlaps = []
    for terms, w in _queries(weights.shape[1], seed=3):
        w = w[: len(terms)]
        rows, scores = pruned.top_k(terms, w, 10, ties)
        every_row, every_score = full.top_k(terms, w, weights.shape[0], ties)
        exact = dict(zip(every_row.tolist(), every_score.tolist(), strict=True))
        assert all(exact[r] == s for r, s in zip(rows.tolist(), scores.tolist(), strict=True))
        overlaps.append(_overlap(rows, every_row))
    assert np.mean(overlaps) < 1.0  # what the bench's agreement figure measures can fall below 1


@pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")
def test_rescoring_kernel_equals_the_numpy_path(monkeypatch):
    weights, docids = _corpus(n_docs=800, seed=4)
    ties = tie_ranks(docids)
    pruned = PrunedPostings(weights, keep=40, candidates=60)
    for terms, w in _queries(weights.shape[1], count=15, seed=5):
        w = w[: len(terms)]
        compiled = pruned.top_k(terms[::-1], w[::-1], 10, ties, round32=True)  # any term order
        monkeypatch.setattr(kernels, "AVAILABLE", False)
        plain = pruned.top_k(terms, w, 10, ties, round32=True)
        monkeypatch.setattr(kernels, "AVAILABLE", True)
        np.testing.assert_array_equal(compiled[0], plain[0])
        np.testing.assert_array_equal(compiled[1], plain[1])


def test_ivf_shortlist_scores_its_candidates_exactly_and_finds_the_scans_top_10():
    rng = np.random.default_rng(6)
    # clustered, as embeddings are (i.i.d. Gaussian vectors defeat any 4-bit code)
    vectors = (rng.standard_normal((50, 32))[rng.integers(0, 50, 4000)]
               + 0.3 * rng.standard_normal((4000, 32))).astype(np.float32)
    docids = [f"v{i}" for i in range(len(vectors))]
    flat = faiss.IndexFlatIP(32)
    flat.add(vectors)
    ivf = build_ivf_shortlist(vectors, points_per_list=100, nprobe=10_000, train_points=40, seed=1)
    assert ivf.nlist == 40 and ivf.nprobe == 40 and ivf.ntotal == 4000
    queries = vectors[rng.integers(0, 4000, 20)] + 0.3 * rng.standard_normal((20, 32)).astype(np.float32)
    batch = QueryBatch([f"q{i}" for i in range(20)], [""] * 20)
    batch.encoded = EncodedTexts(dense=queries, sparse=None)
    exact = DenseSearcher(flat, docids, vectors=vectors).search_arrays(batch, 10)
    # every list probed, 30 x 10 candidates named by the codes: the scan's top 10 among them
    listed = DenseSearcher(flat, docids, vectors=vectors, shortlist=30, fast_scan=ivf)
    assert listed.fast_scan is ivf
    for query, (rows, scores), (want_rows, _) in zip(queries, listed.search_arrays(batch, 10), exact, strict=True):
        assert rows.tolist() == want_rows.tolist()
        np.testing.assert_allclose(scores, vectors[rows] @ query, rtol=1e-5)


def _static(n_terms: int, dim: int) -> StaticQueryEncoder:
    """Static query tables whose tokenizer maps words "t<i>" to token i."""
    class Words:
        def __call__(self, texts, **_):
            return {"input_ids": [[int(w[1:]) for w in t.split()] for t in texts]}

    rng = np.random.default_rng(7)
    return StaticQueryEncoder(Words(), rng.standard_normal((n_terms, dim)).astype(np.float32),
                              np.ones(n_terms, dtype=np.float32), max_length=32)


@pytest.mark.parametrize(("n_docs", "sparse_min", "dense_min", "pruned_sparse", "ivf"), [
    (3000, 3001, 3001, False, False),  # below both sizes: the exhaustive routes
    (3000, 3000, None, True, False),   # at the sparse size; dense never
    (3000, None, 2000, False, True),   # sparse never; above the dense size
])
def test_the_size_switch_picks_the_routes(n_docs, sparse_min, dense_min, pruned_sparse, ivf):
    weights, docids = _corpus(n_docs=n_docs)
    vectors = np.random.default_rng(8).standard_normal((n_docs, 16)).astype(np.float32)
    flat = faiss.IndexFlatIP(16)
    flat.add(vectors)
    cfg = RetrievalConfig(pruning=PruningConfig(sparse_min_docs=sparse_min, dense_min_docs=dense_min,
                                                ivf_points_per_list=100, ivf_train_points=40))
    # the impact index takes the switch where it is built (a bundle's: open_bundle; in memory: memory_corpus_index)
    impacts = MemoryImpactIndex.from_impacts(docids, weights, 100.0, cfg.pruning)
    index = CorpusIndex(docids=docids, dense=flat, doc_vectors=vectors, lexical=impacts, impacts=impacts,
                        static_query=_static(weights.shape[1], 16))
    cfg = dataclasses.replace(cfg, fusion=dataclasses.replace(cfg.fusion, fast_runs=["lexical_static", "dense_static"]))
    fast = build_searchers(index, cfg, None, modes=["hybrid_fast"])["hybrid_fast"]
    assert isinstance(impacts.postings, PrunedPostings) == pruned_sparse
    dense_route = fast.searchers[1].inner
    assert isinstance(dense_route.fast_scan, faiss.IndexIVFPQFastScan) == ivf
    run = fast.search({"q": "t1 t5 t9 t30"}, 10)
    assert len(run["q"]) == 10


def test_a_large_corpus_runs_its_independent_routes_on_a_worker_with_the_same_results():
    """From parallel_min_docs, hybrid_fast's routes that no other route reads run on the route pool's
    threads beside the caller's route; the fused runs are those of the one-thread fusion."""
    import threading

    weights, docids = _corpus(n_docs=3000)
    vectors = np.random.default_rng(8).standard_normal((3000, 16)).astype(np.float32)
    flat = faiss.IndexFlatIP(16)
    flat.add(vectors)
    impacts = MemoryImpactIndex.from_impacts(docids, weights, 100.0)
    index = CorpusIndex(docids=docids, dense=flat, doc_vectors=vectors, lexical=impacts, impacts=impacts,
                        static_query=_static(weights.shape[1], 16))
    fast = {}
    for parallel_min in (3000, None):
        cfg = RetrievalConfig(pruning=PruningConfig(parallel_min_docs=parallel_min, dense_min_docs=None))
        cfg = dataclasses.replace(cfg, fusion=dataclasses.replace(cfg.fusion, fast_runs=["lexical_static", "dense_static"]))
        fast[parallel_min] = build_searchers(index, cfg, None, modes=["hybrid_fast"])["hybrid_fast"]
    assert fast[3000].parallel and not fast[None].parallel
    threads = []
    route = fast[3000].searchers[0]
    search = route.search_arrays
    route.search_arrays = lambda batch, k: (threads.append(threading.current_thread().name), search(batch, k))[1]
    queries = {f"q{i}": " ".join(f"t{t}" for t in terms) for i, (terms, _) in enumerate(_queries(400, count=20))}
    assert fast[3000].search(queries, 10) == fast[None].search(queries, 10)
    assert threads and all(name.startswith("uniret-route") for name in threads)
