"""CLEAR / DualRM test-time retrieval (Eq. 5) as a serving mode: BM25 + the residual embedding.

Both channels retrieve their own top-`depth`; the union is scored lambda_test * BM25 + embedding
(uniret.models.clear.dualrm_fuse), where lambda_test is the weight the model was trained for
(the bundle records it). This is what the evaluate stage scores as "<recipe>/clear", served from
the bundle's BM25 and faiss indexes.
"""

from __future__ import annotations

from uniret.core.runs import Run
from uniret.models.clear import dualrm_fuse
from uniret.retrieval.base import QueryBatch, Searcher


def clear_runs(dense: Run, bm25: Run, bm25_weight: float, k: int) -> Run:
    """Eq. 5 per query of `dense`: its hits and the query's BM25 hits, fused, top k."""
    return {q: dict(dualrm_fuse(bm25.get(q, {}), hits, bm25_weight, k)) for q, hits in dense.items()}


class ClearSearcher(Searcher):
    """Fuses a BM25 searcher and a dense searcher with DualRM Eq. 5."""

    mode = "clear"
    uses_jvm = True  # the BM25 half calls Lucene

    def __init__(self, bm25: Searcher, dense: Searcher, bm25_weight: float, depth: int):
        if depth < 1:
            raise ValueError(f"clear: depth must be >= 1, got {depth}")
        self.bm25 = bm25
        self.dense = dense
        self.bm25_weight = bm25_weight
        self.depth = depth
        self.encoder = dense.encoder

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        depth = max(self.depth, k)
        return clear_runs(self.dense.search_batch(batch, depth), self.bm25.search_batch(batch, depth),
                          self.bm25_weight, k)
