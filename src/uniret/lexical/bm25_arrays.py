"""BM25 top-k of one query as two arrays (Lucene doc ids, scores): the serving path.

`Bm25Searcher.search` (Anserini's SimpleSearcher) returns one ScoredDoc per hit; pyjnius wraps
each in a Python object and reads its docid and score over JNI, several microseconds per hit, so
a top-1000 search costs more in Python than in Lucene. This searcher makes the same Lucene calls
as SimpleSearcher.search(text, k) in Anserini 1.7 (the jar pyserini 1.6 ships):

1. BagOfWordsQueryGenerator builds the query over `contents` with the same analyzer;
2. IndexSearcher (BM25Similarity(k1, b)) searches top k sorted by score, ties by the stored `id`
   (Anserini's BREAK_SCORE_TIES_BY_DOCID);
3. ScoredDocs.fromTopDocs, then ScoreTiesAdjusterReranker rounds scores to 4 decimals and nudges
   tied scores apart (-1e-6 per tie, in rank order), as SimpleSearcher's reranker cascade does;

then reads the result's `int[] lucene_docids` and `float[] scores` in one JNI call each.
ScoredDocs.fromTopDocs also loads every hit's stored document (about 5 of the 6 ms of a top-1000
search on SciFact): where uniret's Java helpers compiled (uniret.lexical.java_helpers),
`uniret.TopDocsArrays` takes the TopDocs' ids and scores as arrays instead and applies the same
tie adjustment in the same float arithmetic. With the helpers, step 2 also runs without Lucene's
sorted collector: `uniret.IdOrder` orders the top k + TIE_SLACK hits collected by score alone by
(score, id), and the sorted search runs only when a tie with the k-th hit may reach past them.
tests/lexical/test_bm25_arrays.py checks ids, scores and order of every path against Bm25Searcher.

With `rm3=True` the searcher answers as SimpleSearcher after `set_rm3(fb_terms, fb_docs, weight)`
(cfg.rm3): Anserini's own Rm3Reranker expands the query from the term vectors of the first
search's top `fb_docs` hits, and the expanded query (the same weighted terms) runs on the path
above, tie adjustment included. The index must store document vectors (the bm25 stage's indexes
do); tests/lexical/test_bm25_arrays.py checks ids and scores against SimpleSearcher's.

Lucene doc ids are mapped to external doc ids through a table read once when the index is opened.
That is sound because a Lucene doc id is stable for one open reader of an unchanging index: the
bundle's BM25 index is written once (lexical.indexing, atomically) and never modified, and this
class holds one reader for its whole life.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from uniret.config.sections import Bm25Config
from uniret.lexical.jvm import helpers_loaded, java_cast, java_class

# Anserini's field names (io.anserini.index.Constants): analysed text, stored external id
CONTENTS_FIELD = "contents"
ID_FIELD = "id"
# hits collected beyond k when collecting by score alone, so that the documents tied with the k-th
# are all in hand (else the sorted search decides). Lucene's one-byte length norms make tails of
# equal scores: at top 1000, 16 left 45 of the five test sets' 971 queries to the sorted search,
# 64 none (E20)
TIE_SLACK = 64


def docid_rows(index_dir: str | os.PathLike, names: list[str | None], docids: list[str]) -> np.ndarray:
    """Row in `docids` of each Lucene doc named `names[i]` (-1 for a deleted one, None); a clear error
    naming the index when one of its documents is not in `docids` (it belongs to another corpus)."""
    row = {d: i for i, d in enumerate(docids)}
    unknown = [d for d in names if d is not None and d not in row]
    if unknown:
        raise ValueError(f"{index_dir}: {len(unknown)} BM25 documents are not in the corpus's doc ids "
                         f"(first: {unknown[0]!r})")
    return np.asarray([row[d] if d is not None else -1 for d in names], dtype=np.int64)


def query_analyzer(cfg: Bm25Config) -> Any:
    """Anserini's DefaultEnglishAnalyzer with the bm25 stage's stemmer and stop words (a Java object,
    safe to use from several threads): the analysis of the indexed text and of a BM25 query."""
    return java_class("io.anserini.analysis.DefaultEnglishAnalyzer").fromArguments(cfg.stemmer, cfg.keep_stopwords, None)


class Bm25ArraySearcher:
    """An open BM25 index answering one query at a time with (Lucene doc ids, float32 scores).

    `docids[i]` is the external id of Lucene doc i (None for a deleted doc: never a hit).
    Close it when done. Safe to call from several threads (Lucene's IndexSearcher is).
    """

    def __init__(self, index_dir: str | os.PathLike, cfg: Bm25Config, use_helpers: bool = True,
                 by_score: bool = True, rm3: bool = False):
        """`use_helpers`: take uniret.TopDocsArrays when it is on the classpath (same results, faster);
        `by_score`: with them, collect hits by score and order them by uniret.IdOrder instead of
        Lucene's sorted collector (same results, faster; False measures the difference);
        `rm3`: expand each query by RM3 feedback (cfg.rm3) and search again."""
        self.index_dir = Path(index_dir)
        if not self.index_dir.is_dir():
            raise FileNotFoundError(f"{self.index_dir}: BM25 index not found")
        directory = java_class("org.apache.lucene.store.FSDirectory").open(
            java_class("java.io.File")(str(self.index_dir)).toPath()
        )
        self._reader = java_class("org.apache.lucene.index.DirectoryReader").open(directory)
        version = str(self._reader.toString())
        if "lucene.version=9" not in version and "lucene.version=10" not in version:
            # SimpleSearcher breaks ties arbitrarily on Lucene 8 indexes; uniret never builds those
            self.close()
            raise ValueError(f"{self.index_dir}: not a Lucene 9/10 index ({version[:200]})")
        self._searcher = java_class("org.apache.lucene.search.IndexSearcher")(
            java_cast("org.apache.lucene.index.IndexReader", self._reader)
        )
        self._searcher.setSimilarity(
            java_class("org.apache.lucene.search.similarities.BM25Similarity")(float(cfg.k1), float(cfg.b))
        )
        self._analyzer = query_analyzer(cfg)
        self._generator = java_class("io.anserini.search.query.BagOfWordsQueryGenerator")()
        sort_field = java_class("org.apache.lucene.search.SortField")
        string_val = java_class("org.apache.lucene.search.SortField$Type").STRING_VAL
        self._sort = java_class("org.apache.lucene.search.Sort")(
            sort_field.FIELD_SCORE, sort_field(ID_FIELD, string_val)
        )
        self._scored_docs = java_class("io.anserini.search.ScoredDocs")
        self._ties = java_class("io.anserini.rerank.lib.ScoreTiesAdjusterReranker")()
        self._arrays = java_class("uniret.TopDocsArrays") if use_helpers and helpers_loaded() else None
        self.cfg = cfg
        self.rm3 = rm3
        if rm3:
            self._require_term_vectors()
        self.docids = self._read_docids()
        self._order = self._id_order() if self._arrays is not None and by_score else None

    def _require_term_vectors(self) -> None:
        """Refuse (and close) an index whose `contents` field has no stored term vectors."""
        infos = java_class("org.apache.lucene.index.FieldInfos").getMergedFieldInfos(self._reader)
        field_info = infos.fieldInfo(CONTENTS_FIELD)
        if self._reader.maxDoc() > 0 and (field_info is None or not field_info.hasVectors()):
            self.close()
            raise ValueError(f"{self.index_dir}: the BM25 index stores no document vectors, which RM3 reads; "
                             "rebuild it with `uniret bm25` (its indexes store them)")

    def _read_docids(self) -> list[str | None]:
        """External id per Lucene doc id, read in one Java call (a match-all search of every doc)."""
        n = int(self._reader.maxDoc())
        table: list[str | None] = [None] * n
        if n == 0:
            return table
        every = self._searcher.search(java_class("org.apache.lucene.search.MatchAllDocsQuery")(), n)
        docs = self._scored_docs.fromTopDocs(every, self._searcher)
        for lucene_id, docid in zip(docs.lucene_docids, docs.docids, strict=True):
            table[lucene_id] = docid
        return table

    def _id_order(self) -> Any:
        """uniret.IdOrder over this index: each Lucene doc's rank in stored-id order. Python's str
        order (code points) is the byte order of the ids' UTF-8, which Lucene's id sort uses."""
        n = len(self.docids)
        # deleted docs (None) last: they are never hits
        order = sorted(range(n), key=lambda i: (self.docids[i] is None, self.docids[i] or ""))
        rank = [0] * n
        for r, doc in enumerate(order):
            rank[doc] = r
        return java_class("uniret.IdOrder")(rank, order)

    @property
    def uses_helpers(self) -> bool:
        """Whether hits are read through uniret.TopDocsArrays (else Anserini's ScoredDocs)."""
        return self._arrays is not None

    def _query(self, text: str) -> Any:
        """The bag-of-words BM25 query of `text`, as SimpleSearcher builds it."""
        return self._generator.buildQuery(CONTENTS_FIELD, self._analyzer, text)

    def _top(self, query: Any, k: int) -> Any:
        """Lucene's TopDocs of the query's top k, ties broken by the stored id as Anserini does."""
        return self._searcher.search(query, k, self._sort, True)

    def _by_score(self, query: Any, k: int) -> Any:
        """The top k as uniret.TopDocsArrays in Anserini's order, collected by score alone (no
        sorted collector) plus TIE_SLACK more hits; None when a tie may have been cut off (or the
        searcher was opened with by_score=False)."""
        if self._order is None:
            return None
        requested = k + TIE_SLACK
        return self._order.top(self._searcher.search(query, requested), requested, k)

    def _hits(self, query: Any, k: int) -> Any:
        """Anserini's ScoredDocs of the query's top k, scores tie-adjusted as SimpleSearcher does."""
        # a null context: the adjuster's only use of it is to skip adjusting on Lucene 8 indexes
        return self._ties.rerank(self._scored_docs.fromTopDocs(self._top(query, k), self._searcher), None)

    def _rm3_query(self, text: str) -> Any:
        """The RM3 feedback query of `text`, as SimpleSearcher.set_rm3 (outputQuery off, filterTerms
        on) builds it: Anserini's Rm3Reranker runs on the first search's top `rerankcutoff` hits and
        leaves its expanded query's term weights in the context; its own second search is cut to
        one hit, since the caller searches the rebuilt query on the fast path."""
        query = self._query(text)
        tokens = java_class("io.anserini.analysis.AnalyzerUtils").analyze(self._analyzer, text)
        args = java_class("io.anserini.search.SearchCollection$Args")()
        args.arbitraryScoreTieBreak = False
        args.hits = 1
        first = self._searcher.search(query, int(args.rerankcutoff), self._sort, True)
        context = java_class("io.anserini.rerank.RerankerContext")(
            self._searcher, None, query, None, text, tokens, None, args)
        rm3 = self.cfg.rm3
        # a reranker per call: searches run on several threads
        reranker = java_class("io.anserini.rerank.lib.Rm3Reranker")(
            self._analyzer, None, CONTENTS_FIELD, int(rm3.fb_terms), int(rm3.fb_docs),
            float(rm3.original_query_weight), False, True)
        reranker.rerank(self._scored_docs.fromTopDocs(first, self._searcher), context)
        builder = java_class("org.apache.lucene.search.BooleanQuery$Builder")()
        should = java_class("org.apache.lucene.search.BooleanClause$Occur").SHOULD
        term_query, boost_query = java_class("org.apache.lucene.search.TermQuery"), java_class("org.apache.lucene.search.BoostQuery")
        term = java_class("org.apache.lucene.index.Term")
        for entry in context.feedbackTerms.entrySet().toArray():
            builder.add(boost_query(term_query(term(CONTENTS_FIELD, entry.getKey())), float(entry.getValue())), should)
        return builder.build()

    def search(self, text: str, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Top-`k` hits of `text`, best first: (Lucene doc ids int32, BM25 scores float32)."""
        if k <= 0 or not self.docids:
            return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.float32)
        query = self._rm3_query(text) if self.rm3 else self._query(text)
        if self._arrays is not None:
            hits = self._by_score(query, int(k))
            if hits is None:  # a tie may run past the hits collected by score: search sorted
                hits = self._arrays(self._top(query, int(k)))
            hits = hits.adjustTies()
            ids, scores = hits.docs, hits.scores
        else:
            hits = self._hits(query, int(k))
            ids, scores = hits.lucene_docids, hits.scores
        return np.asarray(ids, dtype=np.int32), np.asarray(scores, dtype=np.float32)

    def close(self) -> None:
        """Close the index reader."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    def __enter__(self) -> Bm25ArraySearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
