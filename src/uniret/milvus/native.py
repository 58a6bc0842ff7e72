"""Milvus's own hybrid_search as a retrieval mode, for comparison with uniret's fusion.

`NativeHybridSearcher` sends the same per-route requests uniret's fusion sends (each leaf of a
FusionSearcher over Milvus routes says what it would search) as one `hybrid_search` with Milvus's
RRFRanker(k) or WeightedRanker(weights). Milvus's weighted ranker normalises each route's scores
with arctan (inner product: 0.5 + atan(s)/pi), not min-max, so its ranking differs from uniret's
`hybrid`; docs/milvus.md reports the measured difference.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from uniret.core.runs import Run
from uniret.milvus.search import (
    MilvusBm25Searcher,
    MilvusDenseIndex,
    MilvusImpactIndex,
    OpenCollection,
    hit_arrays,
)
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.dense import DenseSearcher
from uniret.retrieval.feedback import FeedbackDenseSearcher
from uniret.retrieval.fusion import FusionSearcher
from uniret.retrieval.lexical import LexicalSearcher
from uniret.retrieval.ranking import hits_dict
from uniret.retrieval.static_query import StaticRouteSearcher


def is_milvus_route(leaf: Searcher) -> bool:
    """Whether `leaf` searches a Milvus field (so `leaf_request` can say what it sends)."""
    if isinstance(leaf, FeedbackDenseSearcher):
        return is_milvus_route(leaf.route)
    if isinstance(leaf, StaticRouteSearcher):
        return is_milvus_route(leaf.inner)
    return (isinstance(leaf, MilvusBm25Searcher)
            or isinstance(leaf, DenseSearcher) and isinstance(leaf.index, MilvusDenseIndex)
            or isinstance(leaf, LexicalSearcher) and isinstance(leaf.index, MilvusImpactIndex))


def leaf_request(leaf: Searcher, batch: QueryBatch) -> tuple[str, list[Any], dict[str, Any]] | None:
    """(field, per-query data, search params) a Milvus route would send for `batch`; None when the
    leaf is not a Milvus route (e.g. an in-process searcher)."""
    if isinstance(leaf, FeedbackDenseSearcher):  # its BM25 source is searched first, for the feedback query
        return leaf_request(leaf.route.inner, leaf._feedback_batch(batch))
    if isinstance(leaf, StaticRouteSearcher):
        return leaf_request(leaf.inner, leaf._static_batch(batch))
    if isinstance(leaf, DenseSearcher) and isinstance(leaf.index, MilvusDenseIndex):
        return "dense", leaf.index.request(batch.require_encoded(leaf.mode).dense), leaf.index.params
    if isinstance(leaf, LexicalSearcher) and isinstance(leaf.index, MilvusImpactIndex):
        return "sparse", leaf.index.request(batch.require_encoded(leaf.mode).sparse), {}
    if isinstance(leaf, MilvusBm25Searcher):
        return "bm25", leaf.request(batch.texts), {}
    return None


class NativeHybridSearcher(Searcher):
    """A fusion mode answered by Milvus's hybrid_search (`ranker`: rrf or weighted)."""

    def __init__(self, fusion: FusionSearcher, coll: OpenCollection, ranker: str, base_mode: str):
        if not all(is_milvus_route(s) for s in fusion.searchers):
            raise ValueError(f"{base_mode}: every fused route must be a Milvus route")
        self.fusion = fusion
        self.coll = coll
        self.ranker = ranker
        self.mode = f"{base_mode}_native_{ranker}"
        self.encoder = fusion.encoder
        self.uses_jvm = fusion.uses_jvm
        self.docids = coll.docids

    def _ranker(self):
        from pymilvus import RRFRanker, WeightedRanker

        return RRFRanker(self.fusion.rrf_k) if self.ranker == "rrf" else WeightedRanker(*self.fusion.weights)

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        from pymilvus import AnnSearchRequest

        requests = [leaf_request(s, batch) for s in self.fusion.searchers]
        depths = [max(d, k) for d in self.fusion.depths]
        run: Run = {}
        for i, qid in enumerate(batch.ids):
            reqs = [AnnSearchRequest(data=[data[i]], anns_field=field, param={"metric_type": "IP", "params": params},
                                     limit=depth)
                    for (field, data, params), depth in zip(requests, depths, strict=True)]
            rows, scores = hit_arrays(self.coll.client.hybrid_search(self.coll.name, reqs, self._ranker(), limit=k)[0])
            run[qid] = hits_dict(self.docids, rows, scores.astype(np.float64))
        return run
