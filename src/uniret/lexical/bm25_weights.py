"""BM25 as a sparse dot product: each document's term weights as Lucene scores them, and queries as
Anserini's bag of words, so an engine with sparse inner-product search (Milvus) ranks as the
bundle's Lucene BM25 index does.

A BM25 query is Anserini's BagOfWordsQueryGenerator: one clause per distinct analysed term, boosted
by its count; a document's score is the sum over the query's terms of count x the term's BM25
weight in that document. The weight is read from Lucene itself (a one-term query's score, Lucene's
BM25Similarity with the bundle's k1 and b: its idf, its one-byte length norms), never recomputed.
The only differences left are float rounding (Lucene multiplies the boost inside the idf and sums
in double) and Anserini's score post-processing, which `adjust_ties` applies to the sparse scores.
"""

from __future__ import annotations

import collections
from collections.abc import Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from uniret.lexical.bm25_arrays import CONTENTS_FIELD, Bm25ArraySearcher, docid_rows
from uniret.lexical.jvm import helpers_loaded, java_cast, java_class


def adjust_ties(scores: np.ndarray) -> np.ndarray:
    """Anserini SimpleSearcher's score post-processing (ScoreTiesAdjusterReranker; uniret's
    TopDocsArrays.adjustTies), in float32 as Java does it: scores in rank order rounded to 4
    decimals, and a score within 1e-4 of the adjusted one above it lowered by 1e-6 per tie."""
    out = np.asarray(scores, dtype=np.float32).copy()
    tie = 0
    gap, step = np.float32(1e-4), np.float32(1e-6)
    for i in range(len(out)):
        out[i] = np.float32(np.floor(float(out[i]) * 10000.0 + 0.5) / 10000.0)  # Java's Math.round
        if i == 0 or out[i - 1] - out[i] > gap:
            tie = 0
        else:
            tie += 1
            out[i] = out[i] - step * np.float32(tie)
    return out


class Bm25TermWeights(Bm25ArraySearcher):
    """A BM25 index read as per-document term weights, and its analyzer as query term counts."""

    def terms(self) -> list[str]:
        """The `contents` field's terms in Lucene's order (their position is their sparse id)."""
        return [term for term, _ in self._iter_terms()]

    def _iter_terms(self):
        """(term, doc freq) of every term of the contents field, in index order."""
        terms = java_class("org.apache.lucene.index.MultiTerms").getTerms(
            java_cast("org.apache.lucene.index.IndexReader", self._reader), CONTENTS_FIELD)
        if terms is None:  # an empty index
            return
        it = terms.iterator()
        while (ref := it.next()) is not None:
            yield ref.utf8ToString(), int(it.docFreq())

    def _term_hits(self, term: str, doc_freq: int) -> tuple[np.ndarray, np.ndarray]:
        """(Lucene doc ids, scores) of every document holding `term`, scored by a one-term query."""
        query = java_class("org.apache.lucene.search.TermQuery")(java_class("org.apache.lucene.index.Term")(
            CONTENTS_FIELD, term))
        top = self._searcher.search(query, max(doc_freq, 1))
        if helpers_loaded():  # two JNI calls instead of two per hit
            arrays = java_class("uniret.TopDocsArrays")(top)
            return np.asarray(arrays.docs, dtype=np.int64), np.asarray(arrays.scores, dtype=np.float32)
        hits = top.scoreDocs
        return (np.asarray([h.doc for h in hits], dtype=np.int64),
                np.asarray([h.score for h in hits], dtype=np.float32))

    def doc_weights(self, docids: Sequence[str], progress: bool = True) -> tuple[list[str], sp.csr_matrix]:
        """(terms, [len(docids), len(terms)] float32 CSR): row i holds document docids[i]'s BM25 weight
        of every term it contains (an all-zero row for a doc the BM25 index lacks, e.g. an empty one).
        A BM25 document that is not in `docids` is an error (the index belongs to another corpus)."""
        rows_of = docid_rows(self.index_dir, self.docids, list(docids))
        terms: list[str] = []
        rows, cols, vals = [], [], []
        for term, doc_freq in tqdm(self._iter_terms(), desc="BM25 term weights", unit=" terms", disable=not progress,
                                   leave=False):
            docs, scores = self._term_hits(term, doc_freq)
            rows.append(rows_of[docs])
            cols.append(np.full(len(docs), len(terms), dtype=np.int64))
            vals.append(scores)
            terms.append(term)
        shape = (len(docids), len(terms))
        if not terms:
            return terms, sp.csr_matrix(shape, dtype=np.float32)
        matrix = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=shape,
                               dtype=np.float32)
        matrix.sort_indices()
        return terms, matrix

    def query_terms(self, text: str) -> collections.Counter:
        """{analysed term: count} of a query, as Anserini's BagOfWordsQueryGenerator builds its clauses."""
        return query_counts(self._analyzer, text)


def query_counts(analyzer: Any, text: str) -> collections.Counter:
    """{analysed term: count} of `text` by a Lucene `analyzer`: the clauses (term, boost) of Anserini's
    BagOfWordsQueryGenerator. The caller holds JVM_LOCK."""
    if helpers_loaded():  # one JNI call instead of one per term (E103)
        joined = java_class("uniret.QueryTerms").analyze(analyzer, text)
        return collections.Counter(joined.split("\n") if joined else ())
    tokens = java_class("io.anserini.analysis.AnalyzerUtils").analyze(analyzer, text)
    return collections.Counter(str(t) for t in tokens.toArray())


def query_vectors(counts: Sequence[collections.Counter], term_ids: dict[str, int]) -> list[dict[int, float]]:
    """Each query's {term id: count} over the index's terms (a term the index lacks matches nothing)."""
    return [{term_ids[t]: float(c) for t, c in q.items() if t in term_ids} for q in counts]
