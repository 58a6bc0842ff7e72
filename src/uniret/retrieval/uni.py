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

from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.encoding import EncodedTexts, TextEncoder
from uniret.retrieval.lexical import ImpactIndex
from uniret.retrieval.runs import Run, ranked

# Same scale as uniret.models.unifier.combine_uni (checked by a test): g = 0.5 -> plain addition.
GATE_SCALE = 2.0


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
    """Lexical top-K candidates re-scored by lexical + dense."""

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
        self.doc_vectors = np.ascontiguousarray(doc_vectors, dtype=np.float32)
        self.candidates = candidates
        self.gated = gated
        self.mode = "uni_gated" if gated else "uni"
        self.encoder = encoder

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        enc = batch.require_encoded(self.mode)
        require_both(enc, self.mode)
        w_lex, w_den = channel_weights(enc, self.gated, self.mode)
        n_docs = len(self.docids)
        lex_run = self.lexical.top_k(batch.ids, enc.sparse, min(self.candidates, n_docs))
        everything = self.candidates >= n_docs
        run: Run = {}
        for i, qid in enumerate(batch.ids):
            lex = lex_run.get(qid, {})
            if everything:
                rows = np.arange(n_docs)
                lex_scores = np.zeros(n_docs, dtype=np.float64)
                for did, s in lex.items():
                    lex_scores[self.row[did]] = s
            else:
                rows = np.fromiter((self.row[d] for d in lex), dtype=np.int64, count=len(lex))
                lex_scores = np.fromiter(lex.values(), dtype=np.float64, count=len(lex))
            dense_scores = self.doc_vectors[rows] @ enc.dense[i].astype(np.float32)
            total = w_lex[i] * lex_scores + w_den[i] * dense_scores.astype(np.float64)
            best = np.argsort(-total, kind="stable")[:k]
            run[qid] = dict(ranked({self.docids[rows[j]]: float(total[j]) for j in best}, k))
        return run
