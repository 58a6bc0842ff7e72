"""BM25 from Lucene's own term weights held in memory: hybrid_fast's BM25 route.

Anserini's BM25 score of a document is a sum over the query's distinct analysed terms of count x
the term's BM25 weight in that document (uniret.lexical.bm25_weights). The weights are read once
from the Lucene index (each term's one-term query: Lucene's idf, its one-byte length norms, the
index's k1 and b), so a query costs Lucene's analysis (one short Java call under JVM_LOCK) and a sum
of posting rows (retrieval/postings.py): no Java search, no JNI call per hit, no worker thread.

Scores are Lucene's raw BM25 sums (added in double, rounded to float, as Lucene's disjunctions
do) and hits come in Anserini's order (score, then doc id). Anserini's post-processing (scores
rounded to 4 decimals, tied ones nudged by 1e-6: `adjust_ties`) is left out: it moves no hit and
no score by more than 1e-4, and costs more than the search (E43). The `bm25` mode itself stays
the Lucene searcher: the reference every figure is compared with.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from uniret.config.retrieval import PruningConfig
from uniret.config.sections import Bm25Config
from uniret.core.runs import Run
from uniret.lexical.jvm import JVM_LOCK
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.postings import Postings, PrunedPostings, index_postings
from uniret.retrieval.ranking import hits_dict, tie_ranks

log = logging.getLogger("uniret.retrieval")


def read_bm25_weights(index_dir: str | Path, cfg: Bm25Config, docids: Sequence[str]) -> tuple[list[str], sp.csr_matrix]:
    """(terms, [docs, terms] float32 CSR) of the Lucene BM25 index at `index_dir`, rows in `docids` order."""
    from uniret.lexical.bm25_weights import Bm25TermWeights

    with JVM_LOCK, Bm25TermWeights(index_dir, cfg) as index:
        return index.doc_weights(docids, progress=False)


class MemoryBm25Searcher(Searcher):
    """BM25 over a [docs, terms] matrix of Lucene's BM25 term weights, queries analysed by Lucene."""

    mode = "bm25"
    encoder = None
    uses_jvm = False  # the Java analysis is one short call under JVM_LOCK; the scoring is numpy
    gil_bound = True
    has_arrays = True

    def __init__(self, docids: Sequence[str], terms: Sequence[str], doc_weights: sp.csr_matrix,
                 analyzer: Callable[[str], dict[str, int]], pruning: PruningConfig | None = None):
        """`analyzer`: text -> {term: count} (Lucene's analysis of a query); `pruning`: the posting lists
        are cut as it says for a corpus of this size (E52); None: never."""
        if doc_weights.shape != (len(docids), len(terms)):
            raise ValueError(f"BM25 weights of shape {doc_weights.shape} for {len(docids)} docs and {len(terms)} terms")
        self.docids = list(docids)
        self.ties = tie_ranks(self.docids)
        self.term_ids = {t: i for i, t in enumerate(terms)}
        self.doc_weights = doc_weights  # the forward index a pruned route rescores from (retrieval.pruning)
        self.postings: Postings | PrunedPostings = index_postings(doc_weights, pruning)
        self.analyze = analyzer

    @classmethod
    def from_weights(cls, docids: Sequence[str], terms: Sequence[str], doc_weights: sp.csr_matrix,
                     cfg: Bm25Config, pruning: PruningConfig | None = None) -> MemoryBm25Searcher:
        """Over term weights read before (a bundle's bm25_weights.npz), queries analysed as the BM25
        index was built (`cfg`: its stemmer and stop words)."""
        from uniret.lexical.bm25_arrays import query_analyzer
        from uniret.lexical.bm25_weights import query_counts

        with JVM_LOCK:
            java_analyzer = query_analyzer(cfg)

        def analyze(text: str) -> dict[str, int]:
            with JVM_LOCK:
                return query_counts(java_analyzer, text)

        return cls(docids, terms, doc_weights, analyze, pruning)

    @classmethod
    def from_lucene(cls, index_dir: str | Path, cfg: Bm25Config, docids: Sequence[str],
                    pruning: PruningConfig | None = None) -> MemoryBm25Searcher:
        """Read the term weights of the Lucene BM25 index at `index_dir` now (every document must be
        in `docids`): one one-term query per term, seconds per 10k documents."""
        start = time.perf_counter()
        terms, weights = read_bm25_weights(index_dir, cfg, docids)
        log.info("BM25 term weights of %s read into memory: %d docs, %d terms, %d postings (%.1f s)", index_dir,
                 len(docids), len(terms), weights.nnz, time.perf_counter() - start)
        return cls.from_weights(docids, terms, weights, cfg, pruning)

    def query(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        """(term ids, counts) of a query's analysed terms that the index holds, term ids ascending."""
        ids = self.term_ids
        pairs = sorted((ids[t], c) for t, c in self.analyze(text).items() if t in ids)
        if not pairs:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        terms, counts = zip(*pairs, strict=True)
        return np.asarray(terms, dtype=np.int64), np.asarray(counts, dtype=np.float64)

    def search_arrays(self, batch: QueryBatch, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        out = []
        for text in batch.texts:
            # Lucene sums a doc's clauses in double and keeps the score as a float
            out.append(self.postings.top_k(*self.query(text), k, self.ties, round32=True))
        return out

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        return {qid: hits_dict(self.docids, rows, scores)
                for qid, (rows, scores) in zip(batch.ids, self.search_arrays(batch, k), strict=True)}
