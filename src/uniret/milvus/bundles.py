"""A bundle in Milvus: export it, move the alias onto it, and build its searchers over Milvus.

A bundle's collection is named by its content hash (export.collection_name), so the index stage's
bundle and the same bundle once published share one collection, and promotion can export before
the registry gives the bundle a version. The searchers need the bundle folder too: its query
encoders (ONNX graphs, static tables), doc ids, learned fusion weights and BM25 analyzer.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from uniret.config.milvus import MilvusConfig
from uniret.config.retrieval import RetrievalConfig
from uniret.milvus.catalog import Catalog
from uniret.milvus.export import Exporter, ExportResult, bundle_identity, collection_name, source_from_index
from uniret.milvus.native import NativeHybridSearcher
from uniret.milvus.search import milvus_corpus_index, open_collection
from uniret.retrieval.base import Searcher
from uniret.retrieval.bundle import Bundle, built_retrieval, open_bundle, read_bundle_manifest
from uniret.retrieval.fusion import FusionSearcher
from uniret.retrieval.modes import build_searchers

log = logging.getLogger("uniret.milvus")


def bundle_collection(cfg: MilvusConfig, bundle_dir: str | Path) -> tuple[str, dict[str, Any]]:
    """(collection name, identity) of a bundle folder, from its manifest (and content hash)."""
    path = Path(bundle_dir)
    manifest = read_bundle_manifest(path)
    identity = bundle_identity(path, manifest)
    dense_type = built_retrieval(manifest, path).dense.type
    return collection_name(cfg, identity["bundle_hash"], dense_type), identity


def export_bundle(client, cfg: MilvusConfig, bundle_dir: str | Path, progress: bool = True) -> ExportResult:
    """Export a bundle into its collection (nothing to do when it already holds it)."""
    exporter = Exporter(client, cfg)
    name, identity = bundle_collection(cfg, bundle_dir)
    record = exporter.up_to_date(name, identity)
    if record is not None:  # the idempotent re-run: decided before opening the bundle
        return ExportResult(name, False, record)
    bundle = open_bundle(bundle_dir)
    built = built_retrieval(bundle.manifest, bundle.path)
    source = source_from_index(bundle.index, built.dense, bundle.bm25, identity, progress)
    return exporter.export(name, source, progress)


def switch_alias(client, cfg: MilvusConfig, bundle_dir: str | Path) -> dict[str, Any]:
    """Point the serving alias at the bundle's collection (which must be a complete export)."""
    name, _ = bundle_collection(cfg, bundle_dir)
    return Catalog(client, cfg.catalog).switch_alias(cfg.alias, name)


def publish_bundle(client, cfg: MilvusConfig, bundle_dir: str | Path, progress: bool = True) -> dict[str, Any]:
    """Export the bundle (if needed), then move the alias onto it: what promotion and rollback do."""
    exported = export_bundle(client, cfg, bundle_dir, progress)
    return {"export": exported.summary(), "alias": switch_alias(client, cfg, bundle_dir)}


def expectation(bundle: Bundle, identity: dict[str, Any]) -> dict[str, Any]:
    """What the bundle's collection must hold (open_collection's checks)."""
    return {**identity, "dense_dim": (bundle.manifest.get("metrics") or {}).get("dense_dim"),
            "sparse_quant": built_retrieval(bundle.manifest, bundle.path).lexical.quant}


def milvus_searchers(client, cfg: MilvusConfig, bundle_dir: str | Path, retrieval: RetrievalConfig | None = None,
                     modes: list[str] | None = None, collection: str | None = None, threads: int | None = None,
                     encoder=None) -> dict[str, Searcher]:
    """{mode: Searcher} of a bundle whose structures live in Milvus (`collection`: its own by default).

    `encoder` wraps the bundle's query encoder (serving's micro-batcher) when given as a callable.
    Modes needing document vectors in the client (uni, exhaustive) or a Lucene index (bm25_rm3) are
    skipped; `cfg.native_rankers` adds `<fusion mode>_native_<ranker>` modes (Milvus's hybrid_search).
    """
    bundle = open_bundle(bundle_dir, retrieval, threads, structures=False)
    name, identity = bundle_collection(cfg, bundle_dir)
    coll = open_collection(client, cfg, collection or name, bundle.index.docids, expectation(bundle, identity))
    index = milvus_corpus_index(coll, bundle.index, bundle.bm25)
    query_encoder = encoder(bundle.encoder) if encoder is not None else bundle.encoder
    searchers = build_searchers(index, bundle.retrieval, query_encoder, bundle.bm25, bundle.has_gate, modes)
    for mode, searcher in list(searchers.items()):
        if isinstance(searcher, FusionSearcher) and searcher.method == "hybrid":
            for ranker in cfg.native_rankers:
                native = NativeHybridSearcher(searcher, coll, ranker, mode)
                searchers[native.mode] = native
    return searchers

