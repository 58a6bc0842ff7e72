"""Exhaustive scoring: both heads over the whole corpus (lexical + dense, optionally gated).

It is uni-retrieval without the candidate cut, so it bounds what uni-retrieval can reach; the
evaluation checks that uni with K=1000 stays within a small nDCG@10 distance of it.
"""

from __future__ import annotations

import numpy as np

from uniret.core.runs import Run
from uniret.retrieval.base import QueryBatch, Searcher, rows_to_run, top_k_rows
from uniret.retrieval.encoding import TextEncoder
from uniret.retrieval.lexical import MemoryImpactIndex
from uniret.retrieval.uni import channel_weights, require_both

# queries scored at once: bounds the [queries, docs] score matrices held in memory
QUERY_CHUNK = 256


class ExhaustiveSearcher(Searcher):
    """lexical(q, d) + dense(q, d) for every document d, top-k."""

    def __init__(
        self, impacts: MemoryImpactIndex, doc_vectors: np.ndarray, gated: bool = False, encoder: TextEncoder | None = None
    ):
        if doc_vectors.shape[0] != len(impacts.docids):
            raise ValueError(f"{doc_vectors.shape[0]} dense vectors but {len(impacts.docids)} doc ids")
        self.impacts = impacts
        self.docids = impacts.docids
        self.doc_vectors = np.ascontiguousarray(doc_vectors, dtype=np.float32)
        self.gated = gated
        self.mode = "exhaustive_gated" if gated else "exhaustive"
        self.encoder = encoder

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        enc = batch.require_encoded(self.mode)
        require_both(enc, self.mode)
        w_lex, w_den = channel_weights(enc, self.gated, self.mode)
        run: Run = {}
        for start in range(0, len(batch.ids), QUERY_CHUNK):
            sl = slice(start, start + QUERY_CHUNK)
            lex = self.impacts.scores(enc.sparse[sl]).toarray()
            dense = (enc.dense[sl].astype(np.float32) @ self.doc_vectors.T).astype(np.float64)
            total = w_lex[sl, None] * lex + w_den[sl, None] * dense
            idx, scores = top_k_rows(total, k)
            run.update(rows_to_run(batch.ids[sl], self.docids, idx, scores))
        return run
