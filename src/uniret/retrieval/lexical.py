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
from typing import TYPE_CHECKING, Protocol

import numpy as np
import scipy.sparse as sp

from uniret.core.errors import reading
from uniret.core.runs import Run
from uniret.lexical.jvm import JVM_LOCK
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.encoding import TextEncoder
from uniret.retrieval.postings import Postings, PrunedPostings, index_postings
from uniret.retrieval.ranking import hits_dict, tie_ranks
from uniret.retrieval.sparse import integer_impacts, keep_top_n, quantize, row_terms

if TYPE_CHECKING:
    from uniret.config.retrieval import PruningConfig

log = logging.getLogger("uniret.retrieval")


class ImpactIndex(Protocol):
    """Top-k lexical search from float query weights; scores on the float (de-quantized) scale."""

    docids: list[str]
    uses_jvm: bool  # True: calls go through pyjnius (they hold uniret.lexical.jvm.JVM_LOCK themselves)

    def top_k(self, qids: Sequence[str], query_weights: sp.csr_matrix, k: int) -> Run: ...


class MemoryImpactIndex:
    """Quantized document impacts held in memory; exact search by one sparse product per batch.

    The impacts are kept twice: `doc_impacts` (docs x vocab, what bundles store and exhaustive
    scoring reads) and `postings` (retrieval/postings.py, the inverted index): a query's scores
    are the sum of its terms' posting rows. Sums of integer impacts are exact in float64, as in
    Lucene.
    """

    uses_jvm = False  # pure numpy/scipy: safe to call from several threads at once

    def __init__(self, docids: list[str], doc_weights: sp.csr_matrix, quant: float, top_n: int | None = None,
                 pruning: PruningConfig | None = None):
        """`pruning`: the posting lists are cut as it says for a corpus of this size (E52); None: never."""
        if doc_weights.shape[0] != len(docids):
            raise ValueError(f"{doc_weights.shape[0]} sparse rows but {len(docids)} doc ids")
        self.docids = list(docids)
        self.quant = quant
        # integer sums times the reciprocal, as scipy divides a sparse matrix by a scalar: the search
        # path's scores are bit-identical to `scores`
        self.scale = 1.0 / (quant * quant)
        self.ties = tie_ranks(self.docids)
        self.pruning = pruning
        self._set_impacts(quantize(keep_top_n(doc_weights, top_n), quant))

    @classmethod
    def from_impacts(cls, docids: list[str], doc_impacts: sp.csr_matrix, quant: float,
                     pruning: PruningConfig | None = None) -> MemoryImpactIndex:
        """Wrap already quantized (and sparsified) document impacts, e.g. a bundle's impacts.npz."""
        index = cls(docids, sp.csr_matrix((len(docids), doc_impacts.shape[1]), dtype=np.float32), quant,
                    pruning=pruning)
        index._set_impacts(sp.csr_matrix(doc_impacts, dtype=np.float32))
        return index

    def _set_impacts(self, doc_impacts: sp.csr_matrix) -> None:
        self.doc_impacts = doc_impacts
        self.postings: Postings | PrunedPostings = index_postings(doc_impacts, self.pruning)
        self._by_term: sp.csr_matrix | None = None  # float64 vocab x docs, built on the first `scores`

    def scores(self, query_weights: sp.csr_matrix) -> sp.csr_matrix:
        """Lexical scores [queries, docs] (sparse: docs sharing no term with a query are absent)."""
        if self._by_term is None:
            self._by_term = sp.csr_matrix(self.doc_impacts.T, dtype=np.float64)
        raw = quantize(query_weights, self.quant).astype(np.float64) @ self._by_term
        return sp.csr_matrix(raw / (self.quant * self.quant))

    def top_k_arrays(self, query_weights: sp.csr_matrix, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query: (doc rows, scores) of its k best docs with a positive score, best first
        (ties by doc id, like `runs.ranked`); the scores equal `scores`' bit for bit. A query's terms'
        posting rows are summed with no sparse-matrix object per query (serving's batch of 1)."""
        impacts = integer_impacts(query_weights.data, self.quant)  # `quantize`'s, without a matrix
        terms, indptr = query_weights.indices.astype(np.int64), query_weights.indptr
        out = []
        for i in range(query_weights.shape[0]):
            start, end = indptr[i], indptr[i + 1]
            keep = impacts[start:end] > 0
            out.append(self.postings.top_k(terms[start:end][keep], impacts[start:end][keep], k, self.ties,
                                           scale=self.scale))
        return out

    def top_k(self, qids: Sequence[str], query_weights: sp.csr_matrix, k: int) -> Run:
        hits = self.top_k_arrays(query_weights, k)
        return {qid: hits_dict(self.docids, rows, vals) for qid, (rows, vals) in zip(qids, hits, strict=True)}


class LuceneImpactIndex:
    """A Lucene impact index written by uniret.lexical.impact.build_impact_index (opened lazily).

    Lucene returns integer dot products of the quantized weights; scores are divided by quant²
    here so they match MemoryImpactIndex and can be added to dense scores.
    """

    uses_jvm = True  # pyjnius: each search holds JVM_LOCK for its Java calls

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

                with reading(self.index_dir, "Lucene impact index"):
                    self._searcher = ImpactSearcher(self.index_dir, self.quant, threads=self.threads)
            return self._searcher

    def top_k(self, qids: Sequence[str], query_weights: sp.csr_matrix, k: int) -> Run:
        with JVM_LOCK:  # opened first: a damaged index is the error, whatever the queries
            searcher = self._open()
        query_impacts = quantize(query_weights, self.quant)
        # a query with no impact left matches nothing (and Lucene rejects an empty query)
        queries = {
            qid: row_terms(query_weights, i, self.vocab)
            for i, qid in enumerate(qids)
            if query_impacts.indptr[i + 1] > query_impacts.indptr[i]
        }
        raw = {}
        if queries:
            with JVM_LOCK:
                raw = searcher.search(queries, k, progress=False)
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
        self.uses_jvm = index.uses_jvm
        self.gil_bound = isinstance(index, MemoryImpactIndex) and encoder is None  # numpy, no query encoder
        self.docids = index.docids
        self.has_arrays = hasattr(index, "top_k_arrays")  # the in-memory backend

    def _sparse(self, batch: QueryBatch) -> sp.csr_matrix:
        enc = batch.require_encoded(self.mode)
        if enc.sparse is None:
            raise ValueError("lexical retrieval needs a model with a sparse (lexicon) head")
        return enc.sparse

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        return self.index.top_k(batch.ids, self._sparse(batch), k)

    def search_arrays(self, batch: QueryBatch, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        if not self.has_arrays:
            return super().search_arrays(batch, k)
        return self.index.top_k_arrays(self._sparse(batch), k)


def active_terms(doc_impacts: sp.csr_matrix) -> float:
    """Mean number of non-zero impacts per document."""
    return float(np.diff(doc_impacts.indptr).mean()) if doc_impacts.shape[0] else 0.0
