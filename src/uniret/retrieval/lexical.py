"""Learned-sparse (lexical) retrieval over integer impacts: a Lucene impact index or its in-memory twin.

Both backends score sum_t round(quant*q_t) * round(quant*d_t) / quant**2 (see retrieval/sparse.py),
so a bundle's Lucene index and an in-memory index built from the same encodings rank identically.
The in-memory one serves corpora that have no bundle (zero-shot eval sets) and exhaustive scoring.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Protocol

import numpy as np
import scipy.sparse as sp

from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.encoding import TextEncoder
from uniret.retrieval.runs import Run, ranked
from uniret.retrieval.sparse import impact_scores, keep_top_n, quantize, row_terms

log = logging.getLogger("uniret.retrieval")


class ImpactIndex(Protocol):
    """Top-k lexical search from float query weights; scores on the float (de-quantized) scale."""

    docids: list[str]

    def top_k(self, qids: Sequence[str], query_weights: sp.csr_matrix, k: int) -> Run: ...


class MemoryImpactIndex:
    """Quantized document impacts held as a CSR matrix; exact search by sparse products."""

    def __init__(self, docids: list[str], doc_weights: sp.csr_matrix, quant: float, top_n: int | None = None):
        if doc_weights.shape[0] != len(docids):
            raise ValueError(f"{doc_weights.shape[0]} sparse rows but {len(docids)} doc ids")
        self.docids = list(docids)
        self.quant = quant
        self.doc_impacts = quantize(keep_top_n(doc_weights, top_n), quant)

    @classmethod
    def from_impacts(cls, docids: list[str], doc_impacts: sp.csr_matrix, quant: float) -> MemoryImpactIndex:
        """Wrap already quantized (and sparsified) document impacts, e.g. a bundle's impacts.npz."""
        index = cls(docids, sp.csr_matrix((len(docids), doc_impacts.shape[1]), dtype=np.float32), quant)
        index.doc_impacts = sp.csr_matrix(doc_impacts, dtype=np.float32)
        return index

    def scores(self, query_weights: sp.csr_matrix) -> sp.csr_matrix:
        """Lexical scores [queries, docs] (sparse: docs sharing no term with a query are absent)."""
        return impact_scores(quantize(query_weights, self.quant), self.doc_impacts, self.quant)

    def top_k(self, qids: Sequence[str], query_weights: sp.csr_matrix, k: int) -> Run:
        scores = self.scores(query_weights)
        run: Run = {}
        for i, qid in enumerate(qids):
            start, end = scores.indptr[i], scores.indptr[i + 1]
            hits = {self.docids[j]: float(s) for j, s in zip(scores.indices[start:end], scores.data[start:end], strict=True) if s > 0}
            run[qid] = dict(ranked(hits, k))
        return run


class LuceneImpactIndex:
    """A Lucene impact index written by uniret.lexical.impact.build_impact_index (opened lazily).

    Lucene returns integer dot products of the quantized weights; scores are divided by quant²
    here so they match MemoryImpactIndex and can be added to dense scores.
    """

    def __init__(self, index_dir: str | Path, docids: list[str], vocab: Sequence[str], quant: float, threads: int = 2):
        self.index_dir = Path(index_dir)
        if not self.index_dir.is_dir():
            raise FileNotFoundError(f"{self.index_dir}: impact index not found")
        self.docids = list(docids)
        self.vocab = vocab
        self.quant = quant
        self.threads = threads
        self._searcher = None
        self._lock = threading.Lock()  # serving searches from several threads

    def _open(self):
        with self._lock:
            if self._searcher is None:
                from uniret.lexical.impact import ImpactSearcher

                self._searcher = ImpactSearcher(self.index_dir, self.quant, threads=self.threads)
            return self._searcher

    def top_k(self, qids: Sequence[str], query_weights: sp.csr_matrix, k: int) -> Run:
        searcher = self._open()
        query_impacts = quantize(query_weights, self.quant)
        # a query with no impact left matches nothing (and Lucene rejects an empty query)
        queries = {
            qid: row_terms(query_weights, i, self.vocab)
            for i, qid in enumerate(qids)
            if query_impacts.indptr[i + 1] > query_impacts.indptr[i]
        }
        raw = searcher.search(queries, k, progress=False) if queries else {}
        scale = self.quant * self.quant
        return {qid: {d: s / scale for d, s in raw.get(qid, {}).items()} for qid in qids}

    def close(self) -> None:
        """Release the Java searcher."""
        with self._lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None


class LexicalSearcher(Searcher):
    """Top-k by the impact score of the query's sparse weights."""

    mode = "lexical"

    def __init__(self, index: ImpactIndex, encoder: TextEncoder | None = None):
        self.index = index
        self.encoder = encoder

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        enc = batch.require_encoded(self.mode)
        if enc.sparse is None:
            raise ValueError("lexical retrieval needs a model with a sparse (lexicon) head")
        return self.index.top_k(batch.ids, enc.sparse, k)


def active_terms(doc_impacts: sp.csr_matrix) -> float:
    """Mean number of non-zero impacts per document."""
    return float(np.diff(doc_impacts.indptr).mean()) if doc_impacts.shape[0] else 0.0
