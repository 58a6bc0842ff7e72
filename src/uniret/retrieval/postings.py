"""An inverted index held in numpy arrays: one query's scores summed term by term, a block of documents at a time.

The learned-sparse impacts (retrieval/lexical.py) and Lucene's BM25 term weights
(retrieval/bm25_memory.py) are both a [docs, terms] matrix of per-document term weights, and a
query is a few (term, weight) pairs: a query's scores are the weighted sum of its terms' posting
rows. Work is proportional to the postings the query touches, plus one pass over the sums of each
block of documents its postings fill densely (kernels.postings_top_k, E55).
"""

from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from uniret.retrieval import kernels
from uniret.retrieval.ranking import top_k_ranked

if TYPE_CHECKING:
    from uniret.config.retrieval import PruningConfig

log = logging.getLogger("uniret.retrieval")

# `accumulate` sums postings by sorting them when they number under 1/SPARSE_ACCUMULATE of the
# corpus, else in a corpus-wide accumulator (O(postings + docs), no sort)
SPARSE_ACCUMULATE = 8


class Postings:
    """The transpose of a [docs, terms] weight matrix as CSR (one row of postings per term)."""

    def __init__(self, doc_weights: sp.csr_matrix):
        self.n_docs, self.n_terms = doc_weights.shape
        postings = sp.csr_matrix(doc_weights.T, dtype=np.float32)
        postings.sort_indices()
        # float32 weights and int32 doc rows: half the bytes a query's gather reads; the products and
        # sums are float64, so integer impacts still sum exactly
        self.indptr = postings.indptr.astype(np.int64)
        self.indices = postings.indices.astype(np.int32)
        self.data = postings.data
        self._scratch = threading.local()  # each serving thread's accumulators (kernels.postings_top_k)

    def accumulate(self, terms: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(doc rows, sum over `terms` of weight x posting) of the docs holding one of `terms`, rows
        ascending (a doc whose products sum to exactly 0 may be left out). `terms` must be distinct.

        The terms' posting lists are gathered at once and summed per doc, with no Python loop over
        the terms and no sparse-matrix object per query.
        """
        starts = self.indptr[terms]
        lengths = self.indptr[terms + 1] - starts
        total = int(lengths.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        # positions of every posting of every term
        pos = np.arange(total, dtype=np.int64) + np.repeat(starts - (np.cumsum(lengths) - lengths), lengths)
        products = self.data[pos] * np.repeat(np.asarray(weights, dtype=np.float64), lengths)
        docs = self.indices[pos]
        if total * SPARSE_ACCUMULATE < self.n_docs:  # few postings: sort them, never touch the whole corpus
            rows, inverse = np.unique(docs, return_inverse=True)
            return rows.astype(np.int64), np.bincount(inverse, weights=products)
        acc = np.bincount(docs, weights=products, minlength=self.n_docs)  # one pass over a corpus-wide accumulator
        rows = np.flatnonzero(acc)
        return rows, acc[rows]

    def top_k(self, terms: np.ndarray, weights: np.ndarray, k: int, ties: np.ndarray, scale: float = 1.0,
              round32: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """(doc rows, scores) of the k best docs with a positive score, best first, ties by ascending
        `ties[row]`: `accumulate`'s sums times `scale`, or rounded to float32 (`round32`). `terms`
        must be distinct. One numba call (retrieval/kernels.py) where numba is installed, else ~15 numpy
        calls."""
        if kernels.AVAILABLE:
            return kernels.postings_top_k(self.indptr, self.indices, self.data, self._accumulator(),
                                          np.asarray(terms, dtype=np.int64), np.asarray(weights, dtype=np.float64),
                                          k, ties, scale, round32)
        rows, sums = self.accumulate(terms, weights)
        scores = sums.astype(np.float32).astype(np.float64) if round32 else sums * scale
        keep = scores > 0
        rows, scores = rows[keep], scores[keep]
        best = top_k_ranked(scores, k, ties[rows])
        return rows[best], scores[best]

    def _accumulator(self) -> np.ndarray:
        """This thread's float64 sums of one block of docs (kernels.BLOCK, 512 KB) for kernels.postings_top_k:
        made once a thread, not once a query (E54), and no larger than one block however large the corpus (E55)."""
        scratch = self._scratch
        if getattr(scratch, "acc", None) is None:
            scratch.acc = np.zeros(max(1, min(self.n_docs, kernels.BLOCK)), dtype=np.float64)
        return scratch.acc


class PrunedPostings:
    """A large corpus's posting lists, statically pruned, with exact scores for what they find.

    Each term's posting list keeps only its `keep` largest weights (term-centric static pruning, as
    Seismic cuts its lists: Bruch et al. 2024); a query sums those shortened lists term at a time
    for its `candidates` best documents, then scores each candidate exactly from the forward index
    (the documents' own rows, which the corpus holds anyway) and returns the k best. A document can
    be missed only when it is not among the `candidates` best by its pruned sums; every score
    returned is the exhaustive score. `retrieval.pruning` switches it on by corpus size (E52); params
    leave it off, as every posting summed block-wise is exact and faster at 1M (E55), so it serves a
    deployment short of memory (about 1 KB a document less).
    """

    def __init__(self, doc_weights: sp.csr_matrix, keep: int, candidates: int):
        if keep <= 0 or candidates <= 0:
            raise ValueError(f"keep and candidates must be positive, got {keep} and {candidates}")
        doc_weights = sp.csr_matrix(doc_weights)
        doc_weights.sort_indices()
        self.n_docs, self.n_terms = doc_weights.shape
        self.keep, self.candidates = keep, candidates
        # the forward index: the documents' rows as they are (no copy for int32 indices, float32 data)
        self.fwd_indptr = doc_weights.indptr.astype(np.int64)
        self.fwd_indices = doc_weights.indices.astype(np.int32, copy=False)
        self.fwd_data = doc_weights.data.astype(np.float32, copy=False)
        self.lists = Postings(_cut_columns(doc_weights, keep))

    def top_k(self, terms: np.ndarray, weights: np.ndarray, k: int, ties: np.ndarray, scale: float = 1.0,
              round32: bool = False) -> tuple[np.ndarray, np.ndarray]:
        """`Postings.top_k`'s contract; the rows found are the pruned lists' `candidates` best,
        ranked by their exact scores."""
        terms, weights = np.asarray(terms, dtype=np.int64), np.asarray(weights, dtype=np.float64)
        order = np.argsort(terms, kind="stable")
        terms, weights = terms[order], weights[order]
        found, _ = self.lists.top_k(terms, weights, max(k, self.candidates), ties, scale, round32)
        if kernels.AVAILABLE:
            return kernels.rescore_rows_top_k(self.fwd_indptr, self.fwd_indices, self.fwd_data, found, terms,
                                              weights, k, ties, scale, round32)
        exact = _exact_sums(self, found, terms, weights)
        scores = exact.astype(np.float32).astype(np.float64) if round32 else exact * scale
        keep = scores > 0
        found, scores = found[keep], scores[keep]
        best = top_k_ranked(scores, k, ties[found])
        return found[best], scores[best]


def _cut_columns(doc_weights: sp.csr_matrix, keep: int) -> sp.csr_matrix:
    """`doc_weights` with each column (term) cut to its `keep` largest entries (ties: the lower row)."""
    by_term = sp.csc_matrix(doc_weights)
    by_term.sort_indices()
    lengths = np.diff(by_term.indptr)
    mask = np.ones(by_term.nnz, dtype=bool)
    for term in np.flatnonzero(lengths > keep):
        lo, hi = by_term.indptr[term], by_term.indptr[term + 1]
        # stable on rows ascending: among equal weights the lower rows stay
        drop = np.argsort(-by_term.data[lo:hi], kind="stable")[keep:]
        mask[lo + drop] = False
    rows = by_term.indices[mask]
    cols = np.repeat(np.arange(by_term.shape[1]), lengths)[mask]
    return sp.csr_matrix((by_term.data[mask], (rows, cols)), shape=doc_weights.shape, dtype=np.float32)


def _exact_sums(pruned: PrunedPostings, rows: np.ndarray, terms: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Each row's sum over `terms` of weight x its weight, in term order (numpy path of the rescoring)."""
    out = np.zeros(len(rows), dtype=np.float64)
    for i, row in enumerate(rows):
        lo, hi = pruned.fwd_indptr[row], pruned.fwd_indptr[row + 1]
        held = np.searchsorted(pruned.fwd_indices[lo:hi], terms)
        held = np.minimum(held, hi - lo - 1) if hi > lo else held
        for t, pos in enumerate(held):
            if hi > lo and pruned.fwd_indices[lo + pos] == terms[t]:
                out[i] += float(pruned.fwd_data[lo + pos]) * weights[t]
    return out


def pruned_postings(doc_weights: sp.csr_matrix, keep: int, candidates: int) -> PrunedPostings:
    """`PrunedPostings` of `doc_weights`, with a log line of what the cut kept and took."""
    start = time.perf_counter()
    out = PrunedPostings(doc_weights, keep, candidates)
    log.info("posting lists of %d docs cut to %d postings per term: %d of %d kept (%.1f s)", doc_weights.shape[0],
             keep, len(out.lists.data), doc_weights.nnz, time.perf_counter() - start)
    return out


def index_postings(doc_weights: sp.csr_matrix, pruning: PruningConfig | None = None) -> Postings | PrunedPostings:
    """The inverted index of a [docs, terms] weight matrix: every posting, or the lists cut as `pruning`
    says for a corpus of this size (retrieval.pruning, E52). Only the chosen one is built."""
    n = doc_weights.shape[0]
    if pruning is None or not pruning.sparse(n):
        return Postings(doc_weights)
    return pruned_postings(doc_weights, pruning.posting_keep(n), pruning.candidates(n))
