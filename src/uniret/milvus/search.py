"""Searching a bundle's Milvus collection behind uniret's own Searcher classes.

Each route is an index object the in-process searchers already know how to drive:
- `MilvusDenseIndex` answers faiss's `search(x, k)`, so `DenseSearcher` (and the fast mode's
  `StaticRouteSearcher` around it) searches Milvus with whatever query encoder that route uses;
- `MilvusImpactIndex` is an `ImpactIndex` (top_k / top_k_arrays over float query weights), so
  `LexicalSearcher` and the static lexical route do the same;
- `MilvusBm25Searcher` is the bm25 mode: the query analysed by the bundle's own Anserini analyzer,
  scored by the exported Lucene term weights, post-processed as Anserini does.
`milvus_corpus_index` puts them in a `CorpusIndex`, and `uniret.retrieval.modes.build_searchers`
builds every mode over it, the fusions included (uniret's FusionSearcher: min-max, the bundle's
learned weights), exactly as it does over the bundle's own structures.

Ties: Milvus orders equal scores arbitrarily; every route fetches `tie_slack` hits beyond k and
ranks them by (score, doc id), as the in-process searchers do, before cutting at k.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from uniret.config.sections import Bm25Config
from uniret.core.errors import EngineError
from uniret.core.runs import Run
from uniret.milvus.catalog import Catalog
from uniret.milvus.export import BM25, DENSE, ROW, SPARSE, terms_hash
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.modes import CorpusIndex
from uniret.retrieval.ranking import hits_dict, tie_ranks, top_k_ranked
from uniret.retrieval.sparse import quantize

log = logging.getLogger("uniret.milvus")

MAX_LIMIT = 16384  # Milvus's largest topk
Hits = list[tuple[np.ndarray, np.ndarray]]  # per query: (rows, float64 scores), best first


@dataclass
class OpenCollection:
    """A complete, verified, loaded export: the client, its catalog record and the corpus's doc ids."""

    client: Any
    name: str
    record: dict[str, Any]
    docids: list[str]
    search_batch: int = 64
    tie_slack: int = 64

    def __post_init__(self) -> None:
        self.ties = tie_ranks(self.docids)

    def search(self, field: str, data: Sequence[Any], k: int, params: dict[str, Any] | None = None) -> Hits:
        """Per query: its top k rows and raw scores on `field` (inner product), ties by doc id."""
        limit = min(k + self.tie_slack, MAX_LIMIT, len(self.docids))
        out: Hits = []
        for start in range(0, len(data), self.search_batch):
            part = list(data[start:start + self.search_batch])
            res = self.client.search(self.name, data=part, anns_field=field, limit=max(limit, 1),
                                     search_params={"metric_type": "IP", "params": params or {}})
            for hits in res:
                rows, scores = hit_arrays(hits)
                best = top_k_ranked(scores.astype(np.float64), k, self.ties[rows])
                out.append((rows[best], scores[best]))
        return out


def hit_arrays(hits) -> tuple[np.ndarray, np.ndarray]:
    """(primary keys int64, scores float32) of one query's hits: pymilvus keeps both as lists beside
    its per-hit dicts (reading those costs more than the search at depth 1000)."""
    ids, distances = getattr(hits, "ids", None), getattr(hits, "distances", None)
    if ids is None or distances is None:
        ids, distances = [h["id"] for h in hits], [h["distance"] for h in hits]
    return np.asarray(ids, dtype=np.int64), np.asarray(distances, dtype=np.float32)


def open_collection(client, cfg, name: str, docids: list[str], expect: dict[str, Any]) -> OpenCollection:
    """Collection `name`, checked against what the bundle needs; EngineError naming the mismatch.

    `expect`: bundle_hash, bundle_version, dense_dim, sparse_quant (None skips a check).
    """
    if not client.has_collection(name):
        raise EngineError(f"{name}: no such Milvus collection; run `uniret export milvus` for this bundle")
    record = Catalog(client, cfg.catalog).export_record(name)
    if record is None:
        raise EngineError(f"{name}: a partial export (no complete record in {cfg.catalog}; an export killed "
                          "midway?); re-run `uniret export milvus`, which rebuilds it")
    theirs = f"bundle {record.get('bundle_version')!r} (dim {record.get('dense_dim')}, {record.get('num_docs')} docs)"
    ours = f"bundle {expect.get('bundle_version')!r} (dim {expect.get('dense_dim')}, {len(docids)} docs)"
    other_content = "content" in record and expect.get("content") is not None and record["content"] != expect["content"]
    if record.get("bundle_hash") != expect.get("bundle_hash") or other_content:
        raise EngineError(f"{name}: holds {theirs}, not this {ours}: another bundle's export")
    dim_differs = expect.get("dense_dim") is not None and record.get("dense_dim") != expect["dense_dim"]
    if record.get("num_docs") != len(docids) or dim_differs:
        raise EngineError(f"{name}: holds {theirs}, but this {ours}: export the bundle again")
    if expect.get("sparse_quant") is not None and record.get("sparse_quant") not in (None, expect["sparse_quant"]):
        raise EngineError(f"{name}: impacts quantized with {record.get('sparse_quant')}, the bundle with "
                          f"{expect['sparse_quant']}")
    client.load_collection(name)  # a reopened Milvus Lite file serves nothing until loaded
    return OpenCollection(client, name, record, docids, cfg.search_batch, cfg.tie_slack)


class MilvusDenseIndex:
    """The collection's dense field behind faiss's interface (`ntotal`, `d`, `search(x, k)`)."""

    def __init__(self, coll: OpenCollection):
        self.coll = coll
        self.ntotal = len(coll.docids)
        self.d = int(coll.record["dense_dim"])
        self.params = (coll.record.get("dense_index") or {}).get("search") or {}

    def request(self, vectors: np.ndarray) -> list[list[float]]:
        return [row.tolist() for row in np.asarray(vectors, dtype=np.float32)]

    def vectors_of(self, rows: np.ndarray) -> np.ndarray:
        """The stored vectors of `rows` (dense_feedback reads its feedback documents' vectors here)."""
        found = {int(r[ROW]): r[DENSE] for r in self.coll.client.get(self.coll.name, ids=[int(i) for i in rows],
                                                                     output_fields=[ROW, DENSE])}
        missing = [int(i) for i in rows if int(i) not in found]
        if missing:
            raise EngineError(f"{self.coll.name}: rows {missing[:5]} have no stored vector")
        return np.asarray([found[int(i)] for i in rows], dtype=np.float32)

    def search(self, x: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """(scores [n, k] float32, rows [n, k] int64, -1 where fewer than k hits), as faiss returns."""
        params = dict(self.params)
        if "ef" in params:  # HNSW needs ef >= k
            params["ef"] = max(params["ef"], k)
        hits = self.coll.search(DENSE, self.request(x), k, params)
        scores = np.full((len(hits), k), -np.inf, dtype=np.float32)
        rows = np.full((len(hits), k), -1, dtype=np.int64)
        for i, (r, s) in enumerate(hits):
            rows[i, :len(r)], scores[i, :len(s)] = r, s
        return scores, rows


class MilvusImpactIndex:
    """The collection's sparse field as an `ImpactIndex`: integer impacts, scores / quant²."""

    uses_jvm = False

    def __init__(self, coll: OpenCollection, quant: float):
        self.coll = coll
        self.docids = coll.docids
        self.quant = quant
        self.scale = 1.0 / (quant * quant)  # times the reciprocal, as MemoryImpactIndex.scale

    def request(self, query_weights: sp.csr_matrix) -> list[dict[int, float]]:
        """Each query's integer impacts, as the in-process index quantizes them."""
        q = quantize(query_weights, self.quant)
        return [{int(j): float(v) for j, v in zip(q.indices[q.indptr[i]:q.indptr[i + 1]],
                                                    q.data[q.indptr[i]:q.indptr[i + 1]], strict=True)}
                for i in range(q.shape[0])]

    def top_k_arrays(self, query_weights: sp.csr_matrix, k: int) -> Hits:
        out = []
        for rows, raw in self.coll.search(SPARSE, self.request(query_weights), k):
            vals = raw.astype(np.float64) * self.scale
            keep = vals > 0
            out.append((rows[keep], vals[keep]))
        return out

    def top_k(self, qids: Sequence[str], query_weights: sp.csr_matrix, k: int) -> Run:
        hits = self.top_k_arrays(query_weights, k)
        return {qid: hits_dict(self.docids, rows, vals) for qid, (rows, vals) in zip(qids, hits, strict=True)}


class MilvusBm25Searcher(Searcher):
    """BM25 from the collection's bm25 field; the query analysed by the bundle's Lucene analyzer."""

    mode = "bm25"
    encoder = None
    # the analyzer runs in the JVM, under the JVM lock here: the Milvus search itself runs unlocked
    uses_jvm = False
    has_arrays = True

    def __init__(self, coll: OpenCollection, bm25_dir: Path, cfg: Bm25Config):
        self.coll = coll
        self.docids = coll.docids
        self.bm25_dir = Path(bm25_dir)
        self.cfg = cfg
        self._terms = None
        self._ids: dict[str, int] = {}
        self._lock = threading.Lock()

    def _open(self):
        """The bundle's BM25 index, opened for its analyzer and its term list (the sparse ids)."""
        from uniret.lexical.jvm import JVM_LOCK

        with self._lock, JVM_LOCK:
            if self._terms is None:
                from uniret.lexical.bm25_weights import Bm25TermWeights

                terms = Bm25TermWeights(self.bm25_dir, self.cfg)
                names = terms.terms()
                if terms_hash(names) != self.coll.record.get("bm25_terms_hash"):
                    terms.close()
                    raise EngineError(f"{self.coll.name}: its bm25 field was exported from another BM25 index than "
                                      f"{self.bm25_dir}")
                self._ids = {t: i for i, t in enumerate(names)}
                self._terms = terms
            return self._terms

    def request(self, texts: Sequence[str]) -> list[dict[int, float]]:
        """Each query's {term id: count}: Anserini's bag of words over the index's terms."""
        from uniret.lexical.bm25_weights import query_vectors
        from uniret.lexical.jvm import JVM_LOCK

        terms = self._open()
        with JVM_LOCK:
            counts = [terms.query_terms(t) for t in texts]
        return query_vectors(counts, self._ids)

    def search_arrays(self, batch: QueryBatch, k: int) -> Hits:
        from uniret.lexical.bm25_weights import adjust_ties

        out = []
        for rows, raw in self.coll.search(BM25, self.request(batch.texts), k):
            keep = raw > 0
            out.append((rows[keep], adjust_ties(raw[keep]).astype(np.float64)))
        return out

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        return {qid: hits_dict(self.docids, rows, vals)
                for qid, (rows, vals) in zip(batch.ids, self.search_arrays(batch, k), strict=True)}

    def close(self) -> None:
        with self._lock:
            if self._terms is not None:
                self._terms.close()
                self._terms = None


def milvus_corpus_index(coll: OpenCollection, query_side: CorpusIndex, bm25_cfg: Bm25Config | None) -> CorpusIndex:
    """A CorpusIndex whose routes are the collection's fields; the query side (learned fusion
    weights, static query tables, BM25's analyzer folder) comes from the bundle."""
    fields = coll.record.get("fields") or []
    index = CorpusIndex(docids=coll.docids, bm25_weight=query_side.bm25_weight,
                        fusion_weights=dict(query_side.fusion_weights), static_query=query_side.static_query)
    where = f"Milvus collection {coll.name}"
    if DENSE in fields:
        index.dense = MilvusDenseIndex(coll)
        index.provenance["dense"] = f"{where}, field {DENSE} ({(coll.record.get('dense_index') or {}).get('index_type')})"
    if SPARSE in fields:
        index.lexical = MilvusImpactIndex(coll, float(coll.record["sparse_quant"]))
        index.provenance["lexical"] = f"{where}, field {SPARSE} (integer impacts, inner product)"
    if BM25 in fields and query_side.bm25_dir is not None and bm25_cfg is not None:
        index.bm25_searcher = MilvusBm25Searcher(coll, query_side.bm25_dir, bm25_cfg)
        index.provenance["bm25"] = f"{where}, field {BM25} (Lucene BM25 term weights, inner product)"
    if query_side.static_query is not None:
        index.provenance["static"] = query_side.provenance.get("static", "static query tables")
    return index
