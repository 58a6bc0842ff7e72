"""Write a bundle (or any corpus's index structures) into a Milvus collection.

One collection per bundle, named `<prefix>_<bundle content hash prefix>`, with fields
- `row` (INT64, primary key): the document's row in the bundle's docids.json, so hits map to doc
  ids without reading any field back; `doc_id` (VARCHAR) for other clients;
- `dense` (FLOAT_VECTOR, inner product): the bundle's document vectors, under the index type the
  bundle records (FLAT, HNSW, IVF_PQ; Milvus Lite has FLAT only: the fallback is recorded);
- `sparse` (SPARSE_FLOAT_VECTOR, SPARSE_INVERTED_INDEX, inner product): the learned-sparse
  impacts as the integers the bundle's impact index scores (round(quant x w), as floats, which
  Milvus requires); a query sends its own integer impacts and the client divides by quant², so
  the scores are the in-process ones (integer sums below 2^24 are exact in float32);
- `bm25` (SPARSE_FLOAT_VECTOR, inner product): each document's Lucene BM25 weight of every term it
  holds (uniret.lexical.bm25_weights), keyed by the term's position in the BM25 index's terms: a
  query of its analysed terms' counts scores what Lucene scores.

The export is idempotent (a collection whose complete record in the catalog names the same bundle
content is left as it is) and all-or-nothing: the catalog record is written last, after every row
is in, flushed, indexed and loaded; a collection without it (an export killed midway) is dropped
and rebuilt by the next export, and neither serving nor the alias ever takes it.
"""

from __future__ import annotations

import hashlib
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

from uniret.config.milvus import MilvusConfig
from uniret.config.retrieval import DenseIndexConfig
from uniret.config.sections import Bm25Config
from uniret.core.errors import EngineError
from uniret.milvus.catalog import Catalog
from uniret.milvus.client import engine_error
from uniret.registry.integrity import SUMS, read_checksums
from uniret.utils.files import hash_path, sha256_file

if TYPE_CHECKING:  # the export itself needs no retrieval code (numpy arrays in, Milvus rows out)
    from uniret.retrieval.modes import CorpusIndex

log = logging.getLogger("uniret.milvus")

ROW, DOC_ID, DENSE, SPARSE, BM25 = "row", "doc_id", "dense", "sparse", "bm25"
HASH_CHARS = 16  # bundle content hash digits in a collection name
SPARSE_INDEX = {"index_type": "SPARSE_INVERTED_INDEX", "metric_type": "IP", "params": {"drop_ratio_build": 0.0}}
MIN_POINTS_PER_LIST = 39  # as retrieval.dense sizes faiss's IVF lists


@dataclass
class ExportSource:
    """What goes into one collection: a corpus's doc ids and the arrays its fields hold."""

    docids: list[str]
    dense: np.ndarray | None = None  # [docs, dim] float32
    impacts: sp.csr_matrix | None = None  # [docs, vocab] integer impacts (quantized), float32
    quant: float | None = None
    bm25_terms: list[str] | None = None
    bm25_weights: sp.csr_matrix | None = None  # [docs, terms] float32 Lucene BM25 term weights
    dense_cfg: DenseIndexConfig | None = None  # the index type the bundle records
    identity: dict[str, Any] = field(default_factory=dict)  # bundle_hash, bundle_version, ... (in the record)

    @property
    def fields(self) -> list[str]:
        return [f for f, v in ((DENSE, self.dense), (SPARSE, self.impacts), (BM25, self.bm25_weights)) if v is not None]


@dataclass
class ExportResult:
    """What an export did: `changed` False when the collection already held this export."""

    collection: str
    changed: bool
    record: dict[str, Any]
    seconds: float = 0.0
    rebuilt_partial: bool = False  # a partial collection (killed export) was dropped first

    def summary(self) -> dict[str, Any]:
        rows = self.record.get("num_docs", 0)
        return {"collection": self.collection, "changed": self.changed, "rebuilt_partial": self.rebuilt_partial,
                "num_docs": rows, "fields": self.record.get("fields"), "dense_index": self.record.get("dense_index"),
                "seconds": round(self.seconds, 2),
                "docs_per_s": round(rows / self.seconds, 1) if self.changed and self.seconds > 0 else None}


def terms_hash(terms: list[str]) -> str:
    """Identity of a BM25 term list (the sparse ids of the bm25 field)."""
    return hashlib.sha256("\n".join(terms).encode()).hexdigest()[:16]


# bundle files that do not change what is exported: the manifest (a published copy adds its version)
# and the evaluation scores attached at promotion
_NOT_EXPORTED = ("manifest.json", SUMS)
_NOT_EXPORTED_DIRS = ("evaluation/",)


def content_fingerprint(bundle_dir: Path) -> str:
    """sha256 over the checksums of the bundle files an export reads: from its SHA256SUMS when it has
    them (the export command verified them first), else hashed here. Two bundles with the same
    fingerprint export the same rows; a damaged copy never matches the genuine bundle."""
    bundle_dir = Path(bundle_dir)
    if (bundle_dir / SUMS).is_file():
        sums = read_checksums(bundle_dir)
    else:
        sums = {p.relative_to(bundle_dir).as_posix(): sha256_file(p) for p in bundle_dir.rglob("*") if p.is_file()}
    lines = [f"{digest}  {rel}\n" for rel, digest in sorted(sums.items())
             if rel not in _NOT_EXPORTED and not rel.startswith(_NOT_EXPORTED_DIRS)]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def bundle_identity(bundle_dir: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """{"bundle_hash", "bundle_version", "content"}: a published bundle carries the content hash it was
    published under (registry.bundles), an index-stage bundle is hashed (the same hash promotion records).
    The manifest's hash is taken only from a bundle with checksums (verified by the export command):
    a bundle without them is named by its own files, so a hand-made copy of a genuine bundle's
    manifest cannot take the genuine collection's name. `content` is content_fingerprint."""
    claimed = manifest.get("bundle_hash") if (Path(bundle_dir) / SUMS).is_file() else None
    content = claimed or hash_path(bundle_dir)
    return {"bundle_hash": content, "bundle_version": manifest.get("version") or bundle_dir.name,
            "content": content_fingerprint(bundle_dir)}


def collection_name(cfg: MilvusConfig, bundle_hash: str, dense_type: str) -> str:
    """`<prefix>_<hash prefix>`, plus `_flat` for an exact copy of a bundle built with another index."""
    suffix = "_flat" if cfg.dense_index == "flat" and dense_type != "flat" else ""
    return f"{cfg.collection_prefix}_{bundle_hash[:HASH_CHARS]}{suffix}"


def source_from_index(index: CorpusIndex, dense_cfg: DenseIndexConfig, bm25_cfg: Bm25Config | None,
                      identity: dict[str, Any], progress: bool = True) -> ExportSource:
    """The export of a corpus's in-process structures: its document vectors, its quantized impacts,
    and its Lucene BM25 index's term weights (the bundle's copy, else read through Lucene)."""
    source = ExportSource(docids=list(index.docids), dense=index.doc_vectors, dense_cfg=dense_cfg, identity=identity)
    if index.impacts is not None:
        source.impacts, source.quant = index.impacts.doc_impacts, float(index.impacts.quant)
    if index.bm25_weights is not None:  # a bundle's bm25_weights.npz: read from the same index by the index stage
        source.bm25_terms, source.bm25_weights = index.bm25_weights
    elif index.bm25_dir is not None and bm25_cfg is not None:
        from uniret.lexical.bm25_weights import Bm25TermWeights

        with Bm25TermWeights(index.bm25_dir, bm25_cfg) as bm25:
            source.bm25_terms, source.bm25_weights = bm25.doc_weights(source.docids, progress)
    return source


def dense_index_params(cfg: MilvusConfig, dense: DenseIndexConfig, n_docs: int) -> dict[str, Any]:
    """The Milvus index (and its search params) of the type the bundle records, or FLAT."""
    kind = "flat" if cfg.dense_index == "flat" else dense.type
    if kind == "hnsw":
        return {"index_type": "HNSW", "metric_type": "IP",
                "params": {"M": dense.hnsw_m, "efConstruction": dense.hnsw_ef_construction},
                "search": {"ef": dense.hnsw_ef_search}}
    if kind == "ivfpq":
        nlist = max(1, min(dense.ivf_nlist, n_docs // MIN_POINTS_PER_LIST))
        return {"index_type": "IVF_PQ", "metric_type": "IP",
                "params": {"nlist": nlist, "m": dense.pq_m, "nbits": dense.pq_nbits},
                "search": {"nprobe": min(dense.ivf_nprobe, nlist)}}
    return {"index_type": "FLAT", "metric_type": "IP", "params": {}, "search": {}}


def _sparse_row(matrix: sp.csr_matrix, i: int) -> dict[int, float]:
    start, end = matrix.indptr[i], matrix.indptr[i + 1]
    return {int(j): float(v) for j, v in zip(matrix.indices[start:end], matrix.data[start:end], strict=True) if v != 0}


def _rows(source: ExportSource, start: int, end: int) -> list[dict[str, Any]]:
    rows = []
    for i in range(start, end):
        row: dict[str, Any] = {ROW: i, DOC_ID: source.docids[i]}
        if source.dense is not None:
            row[DENSE] = source.dense[i].astype(np.float32).tolist()
        if source.impacts is not None:
            row[SPARSE] = _sparse_row(source.impacts, i)
        if source.bm25_weights is not None:
            row[BM25] = _sparse_row(source.bm25_weights, i)
        rows.append(row)
    return rows


class Exporter:
    """Exports into one Milvus database: `client` and the `milvus` params section."""

    def __init__(self, client, cfg: MilvusConfig):
        self.client = client
        self.cfg = cfg
        self.catalog = Catalog(client, cfg.catalog)

    def up_to_date(self, name: str, identity: dict[str, Any]) -> dict[str, Any] | None:
        """The complete record of `name` when it holds this export (same content), else None.
        EngineError when a complete collection of that name holds other content."""
        record = self.catalog.export_record(name)
        if record is None or not self.client.has_collection(name):
            return None
        # the files' content decides, not the name: a record of other content (a damaged copy that
        # claimed this name) is refused; records from before the fingerprint carry no "content"
        other_content = "content" in record and record.get("content") != identity.get("content")
        if record.get("bundle_hash") != identity.get("bundle_hash") or other_content:
            raise EngineError(f"{name}: this collection holds bundle {record.get('bundle_version')!r} "
                              f"(content {str(record.get('content') or record.get('bundle_hash'))[:12]}), not "
                              f"{identity.get('bundle_version')!r} (content {str(identity.get('content'))[:12]}); "
                              "drop it or choose another milvus.collection_prefix")
        return record

    def export(self, name: str, source: ExportSource, progress: bool = True) -> ExportResult:
        """Write `source` into collection `name` unless it already holds it (see the module doc)."""
        start = time.perf_counter()
        record = self.up_to_date(name, source.identity)
        if record is not None:
            log.info("milvus: %s already holds this export; nothing to do", name)
            return ExportResult(name, False, record)
        partial = bool(self.client.has_collection(name))
        try:
            if partial:
                log.warning("milvus: dropping %s, left partial by an interrupted export", name)
                self.client.drop_collection(name)
            self.catalog.forget_export(name)
            dense = self._create(name, source)
            self._insert(name, source, progress)
            self.client.flush(name)
            dense = self._index(name, source, dense)
            self.client.load_collection(name)
            count = self.count(name)
        except EngineError:
            raise
        except Exception as exc:  # noqa: BLE001 - pymilvus and gRPC raise several types
            raise engine_error(f"export into Milvus collection {name}", exc) from exc
        if count != len(source.docids):
            raise EngineError(f"{name}: {count} rows after the export, expected {len(source.docids)}; "
                              "the collection stays unrecorded (re-run the export)")
        record = {**source.identity, "num_docs": len(source.docids), "fields": source.fields,
                  "dense_dim": int(source.dense.shape[1]) if source.dense is not None else None,
                  "dense_index": dense, "sparse_quant": source.quant,
                  "bm25_terms": len(source.bm25_terms) if source.bm25_terms is not None else None,
                  "bm25_terms_hash": terms_hash(source.bm25_terms) if source.bm25_terms is not None else None}
        record = self.catalog.record_export(name, record)
        seconds = time.perf_counter() - start
        log.info("milvus: exported %d docs into %s in %.1f s", len(source.docids), name, seconds)
        return ExportResult(name, True, record, seconds, partial)

    def count(self, name: str) -> int:
        """Rows of a collection (a strongly consistent count(*))."""
        rows = self.client.query(name, filter="", output_fields=["count(*)"], consistency_level="Strong")
        return int(rows[0]["count(*)"])

    def _create(self, name: str, source: ExportSource) -> dict[str, Any] | None:
        from pymilvus import DataType

        schema = self.client.create_schema(auto_id=False, enable_dynamic_field=False,
                                           description=f"uniret bundle {source.identity.get('bundle_version')}")
        schema.add_field(ROW, DataType.INT64, is_primary=True)
        schema.add_field(DOC_ID, DataType.VARCHAR, max_length=max(64, max((len(d.encode()) for d in source.docids),
                                                                          default=1)))
        dense = None
        if source.dense is not None:
            schema.add_field(DENSE, DataType.FLOAT_VECTOR, dim=int(source.dense.shape[1]))
            dense = dense_index_params(self.cfg, source.dense_cfg or DenseIndexConfig(), len(source.docids))
        for name_, matrix in ((SPARSE, source.impacts), (BM25, source.bm25_weights)):
            if matrix is not None:
                schema.add_field(name_, DataType.SPARSE_FLOAT_VECTOR)
        self.client.create_collection(name, schema=schema)
        return dense

    def _insert(self, name: str, source: ExportSource, progress: bool) -> None:
        n, size = len(source.docids), self.cfg.insert_batch
        with tqdm(total=n, desc=f"milvus {name}", unit=" docs", disable=not progress, leave=False) as bar:
            for start in range(0, n, size):
                end = min(n, start + size)
                self.client.insert(name, _rows(source, start, end))
                bar.update(end - start)

    def _index(self, name: str, source: ExportSource, dense: dict[str, Any] | None) -> dict[str, Any] | None:
        """Index every vector field; a dense index the engine refuses (Milvus Lite: anything but
        FLAT/IVF_FLAT) falls back to FLAT, and the record says which and why."""
        for field_ in (SPARSE, BM25):
            if field_ in source.fields:
                self._add_index(name, field_, SPARSE_INDEX)
        if dense is None:
            return None
        try:
            self._add_index(name, DENSE, dense)
        except Exception as exc:  # noqa: BLE001 - the engine's refusal of an index type
            if dense["index_type"] == "FLAT":
                raise
            flat = dense_index_params(self.cfg, DenseIndexConfig(type="flat"), len(source.docids))
            log.warning("milvus: %s refused %s (%s); indexing FLAT", name, dense["index_type"], exc)
            self._add_index(name, DENSE, flat)
            return {**flat, "wanted": dense["index_type"], "why": str(getattr(exc, "message", exc))}
        return dense

    def _add_index(self, name: str, field_: str, spec: dict[str, Any]) -> None:
        params = self.client.prepare_index_params()
        params.add_index(field_, index_type=spec["index_type"], metric_type=spec["metric_type"], params=spec["params"])
        self.client.create_index(name, params)
