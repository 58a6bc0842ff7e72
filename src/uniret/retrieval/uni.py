"""UnifieR §3.4 uni-retrieval: lexical top-K from the inverted index, then dense scores of those
candidates only, added to their lexical scores (optionally weighted by the query-side gate).

Scores: lexical scores are de-quantized (÷ quant²) so both channels are on the model's own scale,
as in training. Ungated the score is lexical + dense. With the gate g (the weight of the lexical
channel, UnifieR §4.4/§E.4) it is 2 * (g * lexical + (1 - g) * dense), the formula the model is
trained with (uniret.models.unifier.combine_uni): an undecided gate (0.5) gives plain addition.

When K covers the whole corpus every document is a candidate (those sharing no term with the query
have lexical score 0), which makes uni-retrieval equal to exhaustive scoring: the check in tests.
"""

from __future__ import annotations

import numpy as np

from uniret.core.runs import Run
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.encoding import EncodedTexts, TextEncoder
from uniret.retrieval.lexical import ImpactIndex
from uniret.retrieval.ranking import hits_dict, tie_ranks, top_k_ranked

# Same scale as uniret.models.unifier.combine_uni (checked by a test): g = 0.5 -> plain addition.
GATE_SCALE = 2.0
# candidate rows gathered at once by `rescore` (x dim x 4 bytes: 16k x 384 = 25 MB)
RESCORE_ROWS = 16384


def channel_weights(enc: EncodedTexts, gated: bool, who: str) -> tuple[np.ndarray, np.ndarray]:
    """(lexical weight, dense weight) per query: gate-derived when gated, else 1 and 1."""
    n = len(enc)
    if not gated:
        return np.ones(n, dtype=np.float64), np.ones(n, dtype=np.float64)
    if enc.gate is None:
        raise ValueError(f"{who}: gated mode needs a model with a query-side gate (this one has none)")
    gate = enc.gate.astype(np.float64)
    return GATE_SCALE * gate, GATE_SCALE * (1.0 - gate)


def require_both(enc: EncodedTexts, who: str) -> None:
    if enc.dense is None or enc.sparse is None:
        raise ValueError(f"{who} needs a model with both a dense and a sparse head")


class UniSearcher(Searcher):
    """Lexical top-K candidates re-scored by lexical + dense, with numpy arrays end to end."""

    def __init__(
        self,
        lexical: ImpactIndex,
        doc_vectors: np.ndarray,
        candidates: int,
        gated: bool = False,
        encoder: TextEncoder | None = None,
    ):
        if doc_vectors.shape[0] != len(lexical.docids):
            raise ValueError(f"{doc_vectors.shape[0]} dense vectors but {len(lexical.docids)} doc ids")
        self.lexical = lexical
        self.docids = lexical.docids
        self.row = {d: i for i, d in enumerate(self.docids)}
        self.ties = tie_ranks(self.docids)
        self.doc_vectors = np.ascontiguousarray(doc_vectors, dtype=np.float32)
        self.candidates = candidates
        self.gated = gated
        self.mode = "uni_gated" if gated else "uni"
        self.encoder = encoder
        self.uses_jvm = lexical.uses_jvm

    def _lexical_candidates(self, qids: list[str], sparse, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """(doc rows, lexical scores) of each query's top-k lexical candidates."""
        if hasattr(self.lexical, "top_k_arrays"):  # in-memory impacts: arrays already
            return self.lexical.top_k_arrays(sparse, k)
        run = self.lexical.top_k(qids, sparse, k)  # Lucene: doc ids -> rows
        out = []
        for qid in qids:
            hits = run.get(qid, {})
            rows = np.fromiter((self.row[d] for d in hits), dtype=np.int64, count=len(hits))
            out.append((rows, np.fromiter(hits.values(), dtype=np.float64, count=len(hits))))
        return out

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        enc = batch.require_encoded(self.mode)
        require_both(enc, self.mode)
        w_lex, w_den = channel_weights(enc, self.gated, self.mode)
        n_docs = len(self.docids)
        candidates = self._lexical_candidates(batch.ids, enc.sparse, min(self.candidates, n_docs))
        if self.candidates >= n_docs:  # every document is a candidate; non-matching ones score 0 lexically
            candidates = [_everything(rows, scores, n_docs) for rows, scores in candidates]
        queries = np.ascontiguousarray(enc.dense, dtype=np.float32)
        dense = rescore(self.doc_vectors, [rows for rows, _ in candidates], queries)
        run: Run = {}
        for i, qid in enumerate(batch.ids):
            rows, lex_scores = candidates[i]
            total = w_lex[i] * lex_scores + w_den[i] * dense[i].astype(np.float64)
            best = top_k_ranked(total, k, self.ties[rows])
            run[qid] = hits_dict(self.docids, rows[best], total[best])
        return run


def _everything(rows: np.ndarray, scores: np.ndarray, n_docs: int) -> tuple[np.ndarray, np.ndarray]:
    full = np.zeros(n_docs, dtype=np.float64)
    full[rows] = scores
    return np.arange(n_docs), full


def rescore(doc_vectors: np.ndarray, rows: list[np.ndarray], queries: np.ndarray,
            max_rows: int = RESCORE_ROWS) -> list[np.ndarray]:
    """Dense scores of each query's candidate rows: the candidates of a group of queries gathered
    from the contiguous float32 matrix at once, then one matrix-vector product per query on its
    contiguous slice of the gathered block (groups hold at most `max_rows` rows, bounding memory)."""
    out: list[np.ndarray] = []
    start = 0
    while start < len(rows):
        end, size = start, 0
        while end < len(rows) and (end == start or size + len(rows[end]) <= max_rows):
            size += len(rows[end])
            end += 1
        block = doc_vectors[np.concatenate(rows[start:end])] if size else doc_vectors[:0]
        offset = 0
        for i in range(start, end):
            n = len(rows[i])
            out.append(block[offset:offset + n] @ queries[i])
            offset += n
        start = end
    return out
