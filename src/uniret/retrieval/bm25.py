"""BM25 (Lucene, via uniret.lexical) behind the Searcher interface: the reference mode, and
bm25_rm3 (the same with RM3 query expansion).

Searches go through `Bm25ArraySearcher` (one query at a time, hits as arrays), which returns
exactly what Anserini's SimpleSearcher returns, without a Python object per hit. Given the
corpus's doc id list, the searcher also offers `search_arrays`, so fusions over BM25 (hybrid_bm25)
take FusionSearcher's array path.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from uniret.config.sections import Bm25Config
from uniret.core.runs import Run
from uniret.lexical.jvm import JVM_LOCK
from uniret.retrieval.base import QueryBatch, Searcher


class Bm25ModeSearcher(Searcher):
    """BM25 over a Lucene index; reads query text, needs no encoder. The Java searcher opens lazily.

    `docids`: the corpus's doc ids (a bundle's docids.json); when given, `search_arrays` returns
    rows into it. Every document of the Lucene index must be in it.
    """

    mode = "bm25"
    encoder = None
    uses_jvm = True  # every Java call below holds JVM_LOCK (pyjnius is not safe for concurrent calls)

    def __init__(self, index_dir: str | Path, cfg: Bm25Config, docids: Sequence[str] | None = None,
                 rm3: bool = False):
        self.index_dir = Path(index_dir)
        if not self.index_dir.is_dir():
            raise FileNotFoundError(f"{self.index_dir}: BM25 index not found")
        self.cfg = cfg
        self.rm3 = rm3  # expand each query by RM3 feedback (cfg.rm3): the bm25_rm3 mode
        self.mode = "bm25_rm3" if rm3 else "bm25"
        self.docids = list(docids) if docids is not None else None
        self.has_arrays = self.docids is not None
        self._searcher = None
        self._names: list[str | None] = []  # external id per Lucene doc id
        self._rows = np.zeros(0, dtype=np.int64)  # row in `docids` per Lucene doc id
        self._lock = threading.Lock()  # serving searches from several threads

    def _open(self):
        with self._lock:
            if self._searcher is None:
                from uniret.lexical.bm25_arrays import Bm25ArraySearcher, docid_rows

                searcher = Bm25ArraySearcher(self.index_dir, self.cfg, rm3=self.rm3)
                self._names = searcher.docids
                if self.docids is not None:
                    self._rows = docid_rows(self.index_dir, searcher.docids, self.docids)
                self._searcher = searcher
            return self._searcher

    def _search(self, texts: Sequence[str], k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """(Lucene doc ids, scores) per text; only these Java calls hold JVM_LOCK, so the numpy work
        of a fusion (and of other requests) runs beside them."""
        with JVM_LOCK:
            searcher = self._open()
            return [searcher.search(text, k) for text in texts]

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        hits = self._search(batch.texts, k)  # opens the searcher, which reads the id table
        names = self._names
        run: Run = {}
        for qid, (ids, scores) in zip(batch.ids, hits, strict=True):
            # insertion order = Lucene's rank order, as Bm25Searcher builds it
            run[qid] = {names[i]: s for i, s in zip(ids.tolist(), scores.tolist(), strict=True)}
        return run

    def search_arrays(self, batch: QueryBatch, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        if not self.has_arrays:
            raise NotImplementedError("Bm25ModeSearcher without the corpus's doc ids has no array search")
        return [(self._rows[ids], scores.astype(np.float64)) for ids, scores in self._search(batch.texts, k)]

    def close(self) -> None:
        """Release the Java searcher."""
        with self._lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None
