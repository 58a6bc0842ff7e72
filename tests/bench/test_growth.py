"""Synthetic corpora for the growth curve: shapes, scales and term statistics of the real vectors."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from uniret.bench.growth import choose_dense, synthesise
from uniret.config.serving import GrowthConfig


def _real(n=60, dim=16, vocab=500, seed=0):
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((n, dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    impacts = sp.random(n, vocab, density=0.05, format="csr", random_state=seed, dtype=np.float32)
    impacts.data = np.rint(impacts.data * 200 + 1).astype(np.float32)
    return vectors, impacts


def test_synthetic_documents_keep_norms_integer_impacts_and_term_counts():
    vectors, impacts = _real()
    cfg = GrowthConfig(noise=0.1, swap_terms=0.2)
    dense, sparse = synthesise(vectors, impacts, 1000, cfg, np.random.default_rng(3))
    assert dense.shape == (1000, 16) and dense.dtype == np.float32 and sparse.shape == (1000, 500)
    np.testing.assert_allclose(np.linalg.norm(dense, axis=1), 1.0, rtol=1e-5)  # real vectors are unit norm
    assert np.all(sparse.data >= 1) and np.array_equal(sparse.data, np.rint(sparse.data))
    real_terms, synth_terms = np.diff(impacts.indptr).mean(), np.diff(sparse.indptr).mean()
    assert 0.9 * real_terms <= synth_terms <= real_terms  # duplicates after a swap merge, never grow
    # perturbed, not copied: every synthetic vector is close to, but not equal to, some real one
    best = (dense @ vectors.T).max(axis=1)
    assert best.min() > 0.8 and np.mean(best > 0.9999) < 0.01


def test_dense_choice_is_the_fastest_index_with_enough_recall():
    row = {"modes": {"dense_flat": {"p50_ms": 5.0}, "dense_hnsw": {"p50_ms": 0.5}, "dense_ivfpq": {"p50_ms": 0.2}},
           "recall@10_vs_flat": {"hnsw": 0.99, "ivfpq": 0.7}}
    assert choose_dense(row, GrowthConfig(min_recall=0.95)) == "hnsw"
    assert choose_dense(row, GrowthConfig(min_recall=0.999)) == "flat"
