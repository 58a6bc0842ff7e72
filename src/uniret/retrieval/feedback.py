"""The static dense query moved toward BM25's top documents: `dense_feedback` (E46).

The static tower is a bag of token vectors: out of domain, words its training texts never held keep
their untrained vectors, while BM25 still finds the right documents there and those documents have
transformer vectors in the bundle's index. Rocchio feedback with BM25 as the first pass turns that
into a better dense query at the cost of a few vector reads, no model and no second search:

    q' = normalise(q / |q| + weight * c / |c|),  c = the mean vector of BM25's top `docs` documents

In `hybrid_fast` the BM25 route has already run when the dense route starts (the fusion hands each
route's hits to the routes that read them under `feedback_key`), so the feedback costs the reads alone;
as a mode of its own it runs its BM25 source first.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from uniret.core.runs import Run
from uniret.retrieval import kernels
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.static_query import StaticRouteSearcher

Hits = list[tuple[np.ndarray, np.ndarray]]  # per query: (rows, scores)


def feedback_key(source: Searcher | None) -> tuple:
    """The `QueryBatch.extra` key of `source`'s hits (None: hits the caller put there, e.g. a BM25
    run read from a file while the fusion weights are learned)."""
    return ("feedback_hits", id(source) if source is not None else None)


def top_rows(rows: np.ndarray, scores: np.ndarray, k: int) -> np.ndarray:
    """The `k` best rows of one query's hits (ties: the lower row)."""
    return rows[np.lexsort((rows, -scores))[:k]]


def feedback_query(query: np.ndarray, vectors_of: Callable[[np.ndarray], np.ndarray], rows: np.ndarray,
                   weight: float) -> np.ndarray:
    """unit(query) + `weight` x the unit mean of the vectors of `rows`, unit length (float32); with no
    rows the query's own unit vector."""
    q = query.astype(np.float64) / max(float(np.linalg.norm(query)), 1e-12)
    if len(rows) and weight > 0:
        centroid = vectors_of(rows).astype(np.float64).sum(axis=0)  # the mean's 1/n cancels in its unit vector
        q = q + weight * centroid / max(float(np.linalg.norm(centroid)), 1e-12)
    return (q / max(float(np.linalg.norm(q)), 1e-12)).astype(np.float32)


class FeedbackDenseSearcher(Searcher):
    """The static dense route searched with the feedback query of `source`'s (BM25's) top documents."""

    def __init__(self, route: StaticRouteSearcher, source: Searcher | None,
                 vectors: np.ndarray | Callable[[np.ndarray], np.ndarray], docs: int, weight: float,
                 mode: str = "dense_feedback"):
        """`route`: the static dense route (its dense searcher and static encoder); `source`: the
        searcher whose top `docs` documents give the feedback (None: the caller puts its hits into
        each batch under `feedback_key(None)`); `vectors`: every document's vector in memory (the
        compiled path reads them there), or a function giving the vectors of some rows (an engine
        that holds them)."""
        if docs < 1 or weight < 0:
            raise ValueError(f"dense_feedback needs docs >= 1 and weight >= 0, got {docs} and {weight}")
        self.route, self.source = route, source
        self.docs, self.weight, self.mode = docs, weight, mode
        self.vectors = None if callable(vectors) else np.ascontiguousarray(vectors, dtype=np.float32)
        self.vectors_of = vectors if callable(vectors) else self.vectors.__getitem__
        self.encoder = None
        self.docids = route.docids
        self.has_arrays = route.has_arrays
        self.uses_jvm = route.uses_jvm or (source is not None and source.uses_jvm)
        self.gil_bound = route.gil_bound and (source is None or source.gil_bound)
        self._rows: dict[str, int] | None = None

    def _source_hits(self, batch: QueryBatch) -> Hits:
        """Each query's (rows, scores) of the source: handed over in `batch` (arrays, or a Run read
        from a file), else searched here."""
        hits = batch.extra.get(feedback_key(self.source))
        if hits is None:
            if self.source is None:
                raise ValueError("dense_feedback: no feedback hits in this batch and no source searcher")
            hits = (self.source.search_arrays(batch, self.docs) if self.source.has_arrays
                    else self.source.search_batch(batch, self.docs))
        if not isinstance(hits, dict):
            return hits
        if self._rows is None:
            self._rows = {d: i for i, d in enumerate(self.docids)}
        out = []
        for qid in batch.ids:
            known = {d: s for d, s in hits.get(qid, {}).items() if d in self._rows}
            out.append((np.fromiter((self._rows[d] for d in known), dtype=np.int64, count=len(known)),
                        np.fromiter(known.values(), dtype=np.float64, count=len(known))))
        return out

    def _feedback_batch(self, batch: QueryBatch) -> QueryBatch:
        static = self.route._static_batch(batch).encoded.dense
        hits = self._source_hits(batch)
        if kernels.AVAILABLE and self.vectors is not None:  # one compiled call (E46)
            dense = [kernels.feedback_query(q, self.vectors, rows.astype(np.int64), scores.astype(np.float64),
                                            self.docs, self.weight) for q, (rows, scores) in zip(static, hits, strict=True)]
        else:
            dense = [feedback_query(q, self.vectors_of, top_rows(rows, scores, self.docs), self.weight)
                     for q, (rows, scores) in zip(static, hits, strict=True)]
        return QueryBatch(ids=batch.ids, texts=batch.texts, encoded=EncodedTexts(dense=np.stack(dense), sparse=None))

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        return self.route.inner.search_batch(self._feedback_batch(batch), k)

    def search_arrays(self, batch: QueryBatch, k: int) -> Hits:
        return self.route.inner.search_arrays(self._feedback_batch(batch), k)
