"""Lucene impact index for learned-sparse vectors (SPLADE-style term weights).

Documents and queries are {token: weight} maps over a model vocabulary (WordPiece tokens such as
"##ing" or ","). Weights are quantized to integers (round(quant * w)), because Lucene stores a
term's weight as its frequency: a document is indexed as each token repeated `weight` times
(what Anserini's JsonVectorCollection does), analysed by whitespace only (`-pretokenized`), so
tokens reach the index verbatim. At search time Anserini's impact similarity scores a document
as sum(query weight * document weight) over shared tokens: the integer dot product.

Float32 scores are exact while the dot product stays below 2**24 (16.7M); with quant=100 and
weights below ~5 that holds for queries of up to several hundred tokens.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from tqdm import tqdm

from uniret.core.runs import Run
from uniret.lexical.indexing import IndexStats, write_lucene_index
from uniret.lexical.jvm import java_class

log = logging.getLogger("uniret.lexical")

SparseVector = dict[str, float]


def quantize(
    vector: SparseVector, quant: float, top_n: int | None = None, what: str = "vector"
) -> dict[str, int]:
    """Integer weights round(quant * w) of the `top_n` largest positive weights (all when None).

    Non-positive weights (and those that round to 0) are dropped: an impact index cannot hold
    them. Ties at the top-N cut are broken by token so the result is deterministic. Raises
    ValueError naming `what` for a NaN/infinite weight or a token Lucene would split or lose.
    """
    kept: list[tuple[str, float]] = []
    for token, weight in vector.items():
        w = float(weight)
        if not math.isfinite(w):
            raise ValueError(f"{what}: weight of token {token!r} is {w}")
        if not token or token != token.strip() or any(c.isspace() for c in token):
            raise ValueError(f"{what}: token {token!r} is empty or contains whitespace")
        if w > 0:
            kept.append((token, w))
    if top_n is not None:
        kept = sorted(kept, key=lambda tw: (-tw[1], tw[0]))[:top_n]
    out = {}
    for token, w in kept:
        q = round(quant * w)
        if q > 0:
            out[token] = q
    return out


def _pretokenized(weights: dict[str, int]) -> str:
    """A document as its tokens repeated `weight` times, so Lucene's term frequency is the weight."""
    return " ".join(" ".join([token] * w) for token, w in sorted(weights.items()))


def build_impact_index(
    docs: Iterable[tuple[str, SparseVector]],
    out_dir: str | os.PathLike,
    quant: float,
    top_n: int | None = None,
    threads: int = 2,
    batch_size: int = 500,
    total: int | None = None,
) -> IndexStats:
    """Build a Lucene impact index of (doc id, {token: weight}) pairs in `out_dir`, atomically.

    Weights are quantized with `quant` after keeping each document's `top_n` largest weights
    (see `quantize`). Documents left empty are not indexed and are counted in `skipped`.
    """
    if quant <= 0:
        raise ValueError(f"quant must be positive, got {quant}")
    if top_n is not None and top_n <= 0:
        raise ValueError(f"top_n must be positive or None, got {top_n}")

    def contents() -> Iterator[tuple[str, str]]:
        for doc_id, vector in docs:
            # empty strings are skipped (and counted) by the indexer
            yield doc_id, _pretokenized(quantize(vector, quant, top_n, what=f"document {doc_id!r}"))

    return write_lucene_index(
        contents(),
        out_dir,
        ["-impact", "-pretokenized"],
        threads=threads,
        batch_size=batch_size,
        total=total,
        desc=f"impact index {Path(out_dir).name}",
    )


class ImpactSearcher:
    """An open impact index (Anserini SimpleImpactSearcher); query with {token: weight} maps.

    The Java searcher is used directly: pyserini's LuceneImpactSearcher wraps it for text queries
    (it wants a query encoder and reads the whole vocabulary's idf when opened), while uniret's
    queries arrive already encoded.
    """

    def __init__(self, index_dir: str | os.PathLike, quant: float, threads: int = 2, batch_size: int = 500):
        index_dir = Path(index_dir)
        if not index_dir.is_dir():
            raise FileNotFoundError(f"{index_dir}: impact index not found")
        self._searcher = java_class("io.anserini.search.SimpleImpactSearcher")(str(index_dir))
        self.index_dir = index_dir
        self.quant = quant
        self.threads = threads
        self.batch_size = batch_size

    def search(self, queries: dict[str, SparseVector], k: int, progress: bool = True) -> Run:
        """Top-`k` docs per query; scores are integer dot products of the quantized weights."""
        array_list = java_class("java.util.ArrayList")
        hash_map = java_class("java.util.HashMap")
        integer = java_class("java.lang.Integer")
        qids = list(queries)
        run: Run = {qid: {} for qid in qids}
        with tqdm(
            total=len(qids),
            desc=f"impact search {self.index_dir.name}",
            unit="q",
            disable=None if progress else True,
        ) as bar:
            for start in range(0, len(qids), self.batch_size):
                chunk = qids[start : start + self.batch_size]
                jqueries, jqids = array_list(), array_list()
                for qid in chunk:
                    jquery = hash_map()
                    # Integer objects: the Java side casts each weight to Integer (a float fails)
                    for token, w in quantize(queries[qid], self.quant, what=f"query {qid!r}").items():
                        jquery.put(token, integer(w))
                    jqueries.add(jquery)
                    jqids.add(qid)
                if len(chunk) == 1:
                    # one query (serving, the bench): batch_search would start a Java thread pool
                    # per call, which costs more than the search itself at small k
                    hits = self._searcher.search(jqueries.get(0), int(k))
                    run[chunk[0]] = {hit.docid: float(hit.score) for hit in hits}
                else:
                    results = self._searcher.batch_search(jqueries, jqids, int(k), int(self.threads))
                    for entry in results.entrySet().toArray():
                        run[entry.getKey()] = {hit.docid: float(hit.score) for hit in entry.getValue()}
                bar.update(len(chunk))
        return run

    def close(self) -> None:
        self._searcher.close()

    def __enter__(self) -> ImpactSearcher:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def search_impact(
    index_dir: str | os.PathLike,
    queries: dict[str, SparseVector],
    k: int,
    quant: float,
    threads: int = 2,
) -> Run:
    """Open the impact index at `index_dir`, search `queries` (quantized with `quant`), close it."""
    with ImpactSearcher(index_dir, quant, threads) as searcher:
        return searcher.search(queries, k)
