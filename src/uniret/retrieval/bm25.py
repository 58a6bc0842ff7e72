"""BM25 (Lucene, via uniret.lexical.bm25) behind the Searcher interface: the reference mode."""

from __future__ import annotations

import threading
from pathlib import Path

from uniret.config.sections import Bm25Config
from uniret.core.runs import Run
from uniret.retrieval.base import QueryBatch, Searcher


class Bm25ModeSearcher(Searcher):
    """BM25 over a Lucene index; reads query text, needs no encoder. The Java searcher opens lazily."""

    mode = "bm25"
    encoder = None
    uses_jvm = True

    def __init__(self, index_dir: str | Path, cfg: Bm25Config):
        self.index_dir = Path(index_dir)
        if not self.index_dir.is_dir():
            raise FileNotFoundError(f"{self.index_dir}: BM25 index not found")
        self.cfg = cfg
        self._searcher = None
        self._lock = threading.Lock()  # serving searches from several threads

    def _open(self):
        with self._lock:
            if self._searcher is None:
                from uniret.lexical.bm25 import Bm25Searcher

                self._searcher = Bm25Searcher(self.index_dir, self.cfg)
            return self._searcher

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        run = self._open().search(dict(zip(batch.ids, batch.texts, strict=True)), k, progress=False)
        for qid in batch.ids:
            run.setdefault(qid, {})
        return run

    def close(self) -> None:
        """Release the Java searcher."""
        with self._lock:
            if self._searcher is not None:
                self._searcher.close()
                self._searcher = None
