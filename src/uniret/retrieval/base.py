"""The one Searcher interface every retrieval mode implements.

`search(queries, k)` takes raw text. `search_batch(batch, k)` takes a `QueryBatch` whose queries
were encoded once, so evaluation and serving can run dense, lexical, uni and fused modes over the
same encodings without re-running the query encoder per mode.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from uniret.core.runs import Run
from uniret.retrieval.encoding import EncodedTexts, TextEncoder
from uniret.retrieval.ranking import top_k_ranked


@dataclass
class QueryBatch:
    """Queries in a fixed order, with their encodings when a searcher needs them."""

    ids: list[str]
    texts: list[str]
    encoded: EncodedTexts | None = None
    # encodings by other query encoders of the same batch (the static routes'), keyed by their owner
    extra: dict = field(default_factory=dict)

    @classmethod
    def from_dict(cls, queries: dict[str, str]) -> QueryBatch:
        ids = list(queries)
        return cls(ids=ids, texts=[queries[q] for q in ids])

    def require_encoded(self, who: str) -> EncodedTexts:
        if self.encoded is None:
            raise ValueError(f"{who}: this query batch was not encoded; call encode_queries first")
        return self.encoded


def encode_queries(queries: dict[str, str], encoder: TextEncoder) -> QueryBatch:
    """Encode `queries` once for every searcher that needs encodings."""
    batch = QueryBatch.from_dict(queries)
    batch.encoded = encoder.encode(batch.texts, is_query=True)
    return batch


class Searcher(ABC):
    """A retrieval mode: queries in, a Run ({qid: {docid: score}}) out, at most k docs per query."""

    mode: str = ""
    #: the query encoder, for searchers that need encoded queries (None for BM25)
    encoder: TextEncoder | None = None
    #: True when searching calls Java (Lucene through pyjnius): those calls hold JVM_LOCK, and run with
    #: the GIL released, so a fusion runs such a route on a worker thread beside its other routes
    uses_jvm: bool = False
    #: True when a search is in-process Python, numpy and compiled work (no query encoder, no Java
    #: search, no remote engine): serving runs few of them at once, as more only queue for the GIL
    gil_bound: bool = False

    def search(self, queries: dict[str, str], k: int) -> Run:
        """Search raw-text queries (encoding them first when this mode needs it)."""
        batch = QueryBatch.from_dict(queries)
        if self.encoder is not None:
            batch.encoded = self.encoder.encode(batch.texts, is_query=True)
        return self.search_batch(batch, k)

    @abstractmethod
    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        """Search a batch of (possibly pre-encoded) queries."""

    #: True when `search_arrays` is implemented (fusion then works on arrays, not dicts)
    has_arrays: bool = False

    def search_arrays(self, batch: QueryBatch, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per query: (rows into `self.docids`, float64 scores) of the same hits `search_batch` returns."""
        raise NotImplementedError(f"{type(self).__name__} has no array search")


def top_k_rows(scores: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a [n, m] score matrix: indices and scores of the k best, best first.

    Ties are broken by the lower column index, so results are deterministic: a row whose k-th score
    is shared beyond the cut (argpartition keeps any of the equal columns) is ranked in full.
    """
    k = min(k, scores.shape[1])
    if k <= 0:
        return np.zeros((scores.shape[0], 0), dtype=np.int64), np.zeros((scores.shape[0], 0), dtype=scores.dtype)
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k] if k < scores.shape[1] else np.tile(
        np.arange(scores.shape[1]), (scores.shape[0], 1)
    )
    part_scores = np.take_along_axis(scores, part, axis=1)
    order = np.lexsort((part, -part_scores), axis=1)
    idx = np.take_along_axis(part, order, axis=1)
    if k < scores.shape[1]:
        columns = np.arange(scores.shape[1])
        for row in np.flatnonzero((scores >= part_scores.min(axis=1)[:, None]).sum(axis=1) > k):
            idx[row] = top_k_ranked(scores[row], k, columns)
    return idx, np.take_along_axis(scores, idx, axis=1)


def rows_to_run(qids: Sequence[str], docids: Sequence[str], idx: np.ndarray, scores: np.ndarray) -> Run:
    """Turn per-query index/score rows into a Run (negative indices, faiss' 'no result', are skipped)."""
    run: Run = {}
    for qid, row_idx, row_scores in zip(qids, idx, scores, strict=True):
        run[qid] = {docids[int(i)]: float(s) for i, s in zip(row_idx, row_scores, strict=True) if i >= 0}
    return run
