"""Lucene BM25 through Anserini: index a BEIR corpus, batch-search queries into a Run.

Documents are indexed as `title + " " + text` (Document.contents), analysed by Anserini's default
English analyzer (Lucene's English stopwords, the configured stemmer: Porter by default); doc
ids are stored. Queries go through the same analyzer.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from pathlib import Path

from tqdm import tqdm

from uniret.config.sections import Bm25Config
from uniret.core.errors import reading
from uniret.core.runs import Run
from uniret.data.beir import BeirDataset, Document
from uniret.lexical.indexing import IndexStats, write_lucene_index
from uniret.lexical.jvm import java_class

log = logging.getLogger("uniret.lexical")


def _analyzer_args(cfg: Bm25Config) -> list[str]:
    # document vectors: RM3 (the bm25_rm3 mode) reads the feedback documents' terms from them
    args = ["-stemmer", cfg.stemmer, "-storeDocvectors"]
    if cfg.keep_stopwords:
        args.append("-keepStopwords")
    return args


def index_documents(
    docs: Iterable[Document], out_dir: str | os.PathLike, cfg: Bm25Config, total: int | None = None
) -> IndexStats:
    """Build a BM25 index of `docs` (contents = title + text) in `out_dir`, atomically."""
    pairs = ((doc.id, doc.contents) for doc in docs)
    return write_lucene_index(
        pairs,
        out_dir,
        _analyzer_args(cfg),
        threads=cfg.threads,
        batch_size=cfg.index_batch_size,
        total=total,
        desc=f"bm25 index {Path(out_dir).name}",
    )


def build_bm25_index(dataset: BeirDataset, out_dir: str | os.PathLike, cfg: Bm25Config) -> IndexStats:
    """Build the BM25 index of a BEIR dataset's corpus in `out_dir`."""
    log.info("indexing %s (%s) for BM25", dataset.name, dataset.corpus_path)
    return index_documents(dataset.iter_corpus(), out_dir, cfg)


def _to_run(results) -> Run:
    """Anserini's Map<qid, ScoredDoc[]> as a Run."""
    run: Run = {}
    for entry in results.entrySet().toArray():
        run[entry.getKey()] = {hit.docid: float(hit.score) for hit in entry.getValue()}
    return run


class Bm25Searcher:
    """An open BM25 searcher over one index (Anserini SimpleSearcher); close it when done.

    We call Anserini's Java searcher directly rather than pyserini's LuceneSearcher: the Python
    wrapper adds nothing for batch search, and importing it loads torch and transformers (~10 s).
    """

    def __init__(self, index_dir: str | os.PathLike, cfg: Bm25Config):
        index_dir = Path(index_dir)
        if not index_dir.is_dir():
            raise FileNotFoundError(f"{index_dir}: BM25 index not found")
        analyzer_cls = java_class("io.anserini.analysis.DefaultEnglishAnalyzer")
        analyzer = analyzer_cls.fromArguments(cfg.stemmer, cfg.keep_stopwords, None)
        with reading(index_dir, "Lucene BM25 index"):
            self._searcher = java_class("io.anserini.search.SimpleSearcher")(str(index_dir), analyzer)
        self._searcher.set_bm25(float(cfg.k1), float(cfg.b))
        self.cfg = cfg
        self.index_dir = index_dir

    def search(self, queries: dict[str, str], k: int | None = None, progress: bool = True) -> Run:
        """Top-`k` (default cfg.top_n) docs per query, {qid: {docid: score}}, in batches on cfg.threads."""
        k = k or self.cfg.top_n
        array_list = java_class("java.util.ArrayList")
        qids = list(queries)
        run: Run = {}
        size = self.cfg.search_batch_size
        with tqdm(
            total=len(qids),
            desc=f"bm25 search {self.index_dir.name}",
            unit="q",
            disable=None if progress else True,
        ) as bar:
            for start in range(0, len(qids), size):
                chunk = qids[start : start + size]
                jtexts, jqids = array_list(), array_list()
                for qid in chunk:
                    jtexts.add(queries[qid])
                    jqids.add(qid)
                run.update(_to_run(self._searcher.batch_search(jtexts, jqids, int(k), int(self.cfg.threads))))
                bar.update(len(chunk))
        return run

    def close(self) -> None:
        self._searcher.close()

    def __enter__(self) -> Bm25Searcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def bm25_search(
    index_dir: str | os.PathLike, queries: dict[str, str], cfg: Bm25Config, k: int | None = None
) -> Run:
    """Open the index at `index_dir`, search `queries` (top `k`, default cfg.top_n), close it."""
    with Bm25Searcher(index_dir, cfg) as searcher:
        return searcher.search(queries, k)
