"""The compiled inner loops (retrieval/kernels.py) give what the numpy paths beside them give: the same
documents in the same order, ties included, on synthetic data built to tie and on a real tiny bundle."""

from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.sparse as sp

from uniret.retrieval import kernels
from uniret.retrieval.bundle import open_bundle
from uniret.retrieval.dense import build_fast_scan, shortlisted
from uniret.retrieval.fusion import interpolate
from uniret.retrieval.modes import build_searchers
from uniret.retrieval.postings import Postings
from uniret.retrieval.ranking import tie_ranks

pytestmark = pytest.mark.skipif(not kernels.AVAILABLE, reason="numba is not installed")


def _both(monkeypatch, call):
    """`call()` through the compiled kernels, then through the numpy paths."""
    compiled = call()
    monkeypatch.setattr(kernels, "AVAILABLE", False)
    plain = call()
    monkeypatch.setattr(kernels, "AVAILABLE", True)
    return compiled, plain


def test_postings_top_k_equals_numpy_with_ties(monkeypatch):
    rng = np.random.default_rng(3)
    n_docs, n_terms = 400, 60
    # small integer weights: many documents tie, so the cut and the order lean on the tie-break
    doc_weights = sp.random(n_docs, n_terms, density=0.08, random_state=4, format="csr",
                            data_rvs=lambda n: rng.integers(1, 4, n).astype(np.float64))
    postings = Postings(doc_weights)
    docids = [f"doc{rng.integers(0, 10**6)}-{i}" for i in range(n_docs)]  # tie order is not row order
    ties = tie_ranks(docids)
    checked = 0
    for _ in range(40):
        terms = np.sort(rng.choice(n_terms, size=rng.integers(1, 6), replace=False)).astype(np.int64)
        weights = rng.integers(1, 5, len(terms)).astype(np.float64)
        for k in (1, 7, 50, n_docs):
            for options in ({"scale": 1.0 / 9.0}, {"round32": True}):
                (rows_c, scores_c), (rows_n, scores_n) = _both(
                    monkeypatch, functools.partial(postings.top_k, terms, weights, k, ties, **options))
                assert rows_c.tolist() == rows_n.tolist()
                assert scores_c.tolist() == scores_n.tolist()  # bit for bit: the same sums in the same order
                checked += len(rows_c)
    assert checked > 1000
    empty = postings.top_k(np.zeros(0, dtype=np.int64), np.zeros(0), 10, ties)
    assert len(empty[0]) == 0 and postings.top_k(np.array([0]), np.array([1.0]), 0, ties)[0].tolist() == []


def test_postings_scratch_is_cleared_and_each_thread_has_its_own():
    """The accumulators a query sums into are zero again after it, and threads searching at once each
    sum into their own: every thread gets the one-thread answer."""
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(8)
    doc_weights = sp.random(3000, 200, density=0.05, random_state=2, format="csr", dtype=np.float64)
    postings = Postings(doc_weights)
    ties = np.arange(3000, dtype=np.int64)
    queries = [(np.sort(rng.choice(200, size=8, replace=False)).astype(np.int64), rng.random(8)) for _ in range(60)]
    alone = [postings.top_k(t, w, 20, ties)[0].tolist() for t, w in queries]
    assert not postings._accumulator().any()
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(lambda q: postings.top_k(q[0], q[1], 20, ties)[0].tolist(), queries * 4))
    assert together == alone * 4 and sum(map(len, alone)) == 20 * len(queries)


@pytest.mark.parametrize("block", [1, 7, 64, 500, 5000])
def test_postings_top_k_in_blocks_equals_numpy_across_block_sizes(block, monkeypatch):
    """The kernel reads the corpus a block of len(acc) docs at a time, each block scanned or its
    postings visited (under 1/SPARSE_BLOCK of its docs hit): every block size, from one doc to more
    than the corpus, gives the numpy path's rows and scores bit for bit and leaves the scratch zero."""
    rng = np.random.default_rng(11)
    n_docs, n_terms = 2000, 80
    df = 1.0 / np.arange(1, n_terms + 1)  # a few long lists (scanned blocks), many short (visited)
    doc_weights = sp.random(n_docs, n_terms, density=0.1, random_state=6, format="csr",
                            data_rvs=lambda n: rng.integers(1, 4, n).astype(np.float64))
    doc_weights = sp.csr_matrix(doc_weights.multiply(sp.csr_matrix(df * 5 > rng.random(n_terms))))
    doc_weights.eliminate_zeros()
    postings = Postings(doc_weights)
    ties = tie_ranks([f"doc{rng.integers(0, 10**6)}-{i}" for i in range(n_docs)])
    acc = np.zeros(block)
    for _ in range(30):
        terms = rng.choice(n_terms, size=rng.integers(1, 8), replace=False).astype(np.int64)
        weights = rng.integers(1, 5, len(terms)).astype(np.float64)
        for k, options in ((10, {"scale": 0.3}), (150, {"round32": True}), (0, {})):
            rows, scores = kernels.postings_top_k(postings.indptr, postings.indices, postings.data, acc, terms,
                                                  weights, k, ties, options.get("scale", 1.0),
                                                  options.get("round32", False))
            with monkeypatch.context() as plain:
                plain.setattr(kernels, "AVAILABLE", False)
                rows_n, scores_n = postings.top_k(terms, weights, k, ties, **options)
            assert rows.tolist() == rows_n.tolist() and scores.tolist() == scores_n.tolist()
            assert not acc.any()


def test_postings_top_k_bars_exactly_under_skewed_and_tied_sums():
    """The first bar (`_block_floor`, a bisection between 0 and the largest sum) and the cut at 2k
    never lose a hit: sums spread over 40 orders of magnitude, every sum equal, one doc far above the
    rest: the kernel gives a full sort's k best, ties by rank."""
    n_docs = 3000
    rng = np.random.default_rng(21)
    ties = tie_ranks([f"doc{rng.integers(0, 10**6)}-{i}" for i in range(n_docs)])
    cases = {
        "skewed": 10.0 ** rng.uniform(-20, 20, n_docs),
        "equal": np.full(n_docs, 2.5),
        "one_above": np.r_[1e9, rng.integers(1, 3, n_docs - 1).astype(np.float64)],
    }
    for name, weights in cases.items():
        postings = Postings(sp.csr_matrix(weights[:, None]))  # one term whose posting is each doc's sum
        for k in (1, 5, 150, 1499, 1500, 1501, n_docs + 5):
            for acc in (np.zeros(n_docs), np.zeros(64)):
                rows, scores = kernels.postings_top_k(postings.indptr, postings.indices, postings.data, acc,
                                                      np.array([0]), np.array([1.0]), k, ties, 1.0, False)
                order = np.lexsort((ties, -weights.astype(np.float32).astype(np.float64)))[:k]
                assert rows.tolist() == order.tolist(), (name, k, len(acc))
                assert not acc.any()


def test_dense_top_k_kernel_ranks_ties_by_the_lower_row():
    """`top_k_scores` (the flat scan's top k, one query) and `base.top_k_rows` give the same rows and
    scores, exact ties (duplicate documents, constant and negative scores) ranked by the lower row,
    including at the cut, where argpartition alone may keep either of two equal rows."""
    from uniret.retrieval.base import top_k_rows

    rng = np.random.default_rng(2)
    docs = rng.standard_normal((2000, 24)).astype(np.float32)
    docs[[100, 1500]] = docs[40]
    docs[7] = docs[1900]
    queries = np.vstack([docs[[40, 1900, 7]], rng.standard_normal((30, 24)).astype(np.float32)])
    cases = [docs @ q for q in queries] + [np.zeros(40, np.float32), -np.ones(9, np.float32),
                                           (np.arange(60) % 4).astype(np.float32), np.array([3.0], np.float32)]
    for scores in cases:
        for k in (0, 1, 2, 3, 10, 150, len(scores), len(scores) + 3):
            rows, values = kernels.top_k_scores(scores, k)
            want = np.lexsort((np.arange(len(scores)), -scores))[:k]
            assert rows.tolist() == want.tolist()
            assert values.tolist() == scores[want].tolist()
            idx, top = top_k_rows(scores[None, :], k)
            assert idx[0].tolist() == want.tolist() and top[0].tolist() == scores[want].tolist()
    assert kernels.top_k_scores(docs @ docs[40], 1)[0].tolist() == [40]  # not 100 or 1500, its copies


def test_shortlist_rescoring_equals_numpy(monkeypatch):
    rng = np.random.default_rng(5)
    docs = rng.standard_normal((2000, 32)).astype(np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    fast_scan = build_fast_scan(docs)
    queries = docs[:25] + 0.2 * rng.standard_normal((25, 32)).astype(np.float32)
    (scores_c, rows_c), (scores_n, rows_n) = _both(monkeypatch, lambda: shortlisted(fast_scan, docs, queries, 50, 120))
    assert rows_c.tolist() == rows_n.tolist()
    np.testing.assert_allclose(scores_c, scores_n, rtol=1e-6, atol=1e-7)


def test_fusion_kernel_equals_the_dict_interpolation():
    rng = np.random.default_rng(9)
    n_docs = 300
    docids = [f"d{rng.integers(0, 10**6)}-{i}" for i in range(n_docs)]
    ties = tie_ranks(docids)
    slot = np.full(n_docs, -1, dtype=np.int64)
    for _ in range(30):
        parts = []
        for size in rng.integers(0, 80, 3):
            rows = rng.choice(n_docs, size=size, replace=False).astype(np.int64)
            parts.append((rows, rng.integers(0, 4, size).astype(np.float64)))  # ties, and routes all equal
        weights = rng.random(3)
        bounds = np.cumsum([0] + [len(r) for r, _ in parts])
        rows, fused = kernels.fuse_minmax(np.concatenate([r for r, _ in parts]), np.concatenate([s for _, s in parts]),
                                          bounds, weights, 10, ties, slot)
        assert (slot == -1).all()  # the scratch is left as found, for the next query
        runs = [{"q": {docids[r]: s for r, s in zip(rows_, scores_, strict=True)}} for rows_, scores_ in parts]
        want = interpolate(runs, list(weights), 10).get("q", {})
        assert [docids[r] for r in rows] == list(want)
        assert fused.tolist() == list(want.values())


def test_fast_modes_of_a_bundle_rank_alike_compiled_or_not(tiny_bundle, monkeypatch):
    """hybrid_fast and its routes on a real bundle (Lucene's BM25 weights, the static tables): the
    compiled path returns the numpy path's runs."""
    bundle = open_bundle(tiny_bundle)
    queries = {"q1": "protein folding in cells", "q2": "vitamin D deficiency and bone density",
               "q3": "the the of and", "q4": "zebrafish heart regeneration after injury"}
    modes = ["hybrid_fast", "lexical_static", "dense_static"]
    searchers = build_searchers(bundle.index, bundle.retrieval, None, bundle.bm25, modes=modes)
    for mode in modes:
        compiled, plain = _both(monkeypatch, lambda m=mode: searchers[m].search(queries, 20))
        assert any(compiled.values())
        for qid in queries:
            assert list(compiled[qid]) == list(plain[qid]), (mode, qid)
            # dense scores agree to float32 rounding; min-max normalisation divides by a route's range
            np.testing.assert_allclose(list(compiled[qid].values()), list(plain[qid].values()), rtol=1e-5, atol=1e-6)


def test_feedback_query_equals_numpy_with_ties(monkeypatch):
    """The compiled feedback query takes the same documents (ties: the lower row) and gives the numpy
    path's vector; through a fusion the dense route's hits are then the same."""
    from uniret.retrieval.feedback import feedback_query, top_rows

    rng = np.random.default_rng(11)
    vectors = rng.standard_normal((300, 24)).astype(np.float32)
    for _ in range(30):
        rows = rng.choice(300, size=rng.integers(0, 40), replace=False).astype(np.int64)
        scores = rng.integers(0, 4, len(rows)).astype(np.float64)  # small integers: ties at the cut
        query = rng.standard_normal(24).astype(np.float32)
        for docs, weight in ((3, 0.5), (1, 2.0), (50, 0.25), (3, 0.0)):
            compiled = kernels.feedback_query(query, vectors, rows, scores, docs, weight)
            plain = feedback_query(query, lambda r: vectors[r], top_rows(rows, scores, docs), weight)
            np.testing.assert_allclose(compiled, plain, rtol=1e-6, atol=1e-7)
            assert compiled.dtype == np.float32 and abs(float(np.linalg.norm(compiled)) - 1.0) < 1e-5


def test_hybrid_fast_with_feedback_ranks_alike_compiled_or_not(tiny_bundle, monkeypatch):
    bundle = open_bundle(tiny_bundle)
    assert "dense_feedback" in bundle.retrieval.fusion.fast_runs
    fast = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, modes=["hybrid_fast"])["hybrid_fast"]
    queries = {"a": "protein folding in cells", "b": "vitamin D deficiency", "c": "heart regeneration in zebrafish"}
    compiled, plain = _both(monkeypatch, lambda: fast.search(queries, 20))
    for qid in queries:
        assert list(compiled[qid]) == list(plain[qid])
        np.testing.assert_allclose(list(compiled[qid].values()), list(plain[qid].values()), rtol=1e-5)
