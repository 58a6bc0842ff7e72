"""lab/maxscore.py (E55's MaxScore, not adopted) is rank-safe: the rows and scores of summing every
posting, bit for bit, ties included, on Zipf-like integer impacts that tie often."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from uniret.retrieval import kernels
from uniret.retrieval.postings import Postings
from uniret.retrieval.ranking import tie_ranks

pytestmark = pytest.mark.skipif(not kernels.AVAILABLE, reason="MaxScore runs compiled only")


def _corpus(seed: int, n_docs: int = 3000, n_terms: int = 300) -> tuple[sp.csr_matrix, list[str]]:
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_terms + 1) ** 0.8
    rows = np.repeat(np.arange(n_docs), 25)
    cols = rng.choice(n_terms, size=len(rows), p=p / p.sum())
    weights = sp.csr_matrix((rng.integers(1, 40, len(rows)).astype(np.float32), (rows, cols)), shape=(n_docs, n_terms))
    weights.sum_duplicates()
    return weights, [f"d{rng.integers(10**6)}-{i}" for i in range(n_docs)]  # tie order is not row order


@pytest.mark.parametrize("seed", [0, 1])
def test_maxscore_returns_what_summing_every_posting_returns(lab_script, seed):
    maxscore = lab_script("maxscore")
    weights, docids = _corpus(seed)
    ties = tie_ranks(docids)
    full = Postings(weights)
    bounded = maxscore.MaxScorePostings(full)
    rng = np.random.default_rng(seed + 5)
    compared = 0
    for _ in range(30):
        terms = rng.choice(weights.shape[1], size=rng.integers(1, 12), replace=False).astype(np.int64)
        query = rng.integers(1, 5, len(terms)).astype(np.float64)
        for k in (1, 10, 150, 5000):  # 5000: more than match, nothing pruned
            for options in ({"scale": 1.0 / 7.0}, {"round32": True}):
                rows, scores = full.top_k(terms, query, k, ties, **options)
                got = bounded.top_k(terms, query, k, ties, **options)
                assert got[0].tolist() == rows.tolist() and got[1].tolist() == scores.tolist()
                compared += len(rows)
    assert compared > 30 * 1000


def test_maxscore_refuses_what_its_bounds_cannot_hold(lab_script):
    maxscore = lab_script("maxscore")
    weights, docids = _corpus(0)
    bounded = maxscore.MaxScorePostings(Postings(weights))
    with pytest.raises(ValueError, match="query weights >= 0"):
        bounded.top_k(np.array([1, 2]), np.array([1.0, -1.0]), 10, tie_ranks(docids))
    weights.data[::7] *= -1
    with pytest.raises(ValueError, match="non-negative"):
        maxscore.MaxScorePostings(Postings(weights))
