"""A bundle laid out for OpenSearch: serving beyond one machine on an existing distributed engine.

Checked against the engine's documented request schemas only (tests/export/schemas/opensearch.yaml):
no OpenSearch has run this export (none installs here), so whether its results equal the served
mode's is not known. The export checked against a running engine is Milvus's (uniret.milvus,
docs/milvus.md: measured parity with the in-process searchers).

`export_bundle` writes, from a bundle's own index structures (no re-encoding):
- index.json: settings + mappings: a `knn_vector` field (faiss/lucene HNSW, inner product, the
  bundle's HNSW parameters) and a `rank_features` field for the learned-sparse weights (what the
  neural-search plugin's `neural_sparse` query scores: sum over query tokens of weight x feature);
- bulk-NNNN.ndjson: the `_bulk` API's action/source line pairs, one document per pair;
- search_pipeline.json: a normalization-processor (min_max, arithmetic_mean with weights
  alpha / 1 - alpha): the engine-side twin of uniret's `hybrid` mode (retrieval/fusion.py);
- alias_actions.json: the `_aliases` request promotion would send to move the serving alias;
- manifest.json: what was exported, and how each serving mode maps onto the engine.

Sparse values are the bundle's quantized impacts divided by `quant` (what its Lucene impact index
scores), and queries get the same quantization, so the engine's rank_features score equals the
bundle's lexical score up to Lucene's FeatureField precision (9 significant bits).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from uniret.config.export import OpenSearchExportConfig
from uniret.retrieval.bundle import (
    DENSE_FILE,
    IMPACTS_FILE,
    MANIFEST,
    load_docids,
    load_impacts,
    load_tokenizer,
    read_bundle_manifest,
)
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.sparse import quantize
from uniret.utils.files import atomic_dir
from uniret.utils.owned import OWNER_STAMP, check_output_path

STATIC = Path("static")  # the bundle's static query tables (uniret.retrieval.static_query)

MAX_HYBRID_QUERIES = 5  # the hybrid query accepts at most five sub-queries (neural-search docs)
# serving mode -> how the engine answers it ("exact": same ranking as the bundle; "approximate": a
# documented stand-in, the gate's figures do not carry over)
MODE_MAPPING = {
    "lexical": ("neural_sparse on the rank_features field", "exact"),
    "dense": ("knn on the knn_vector field (HNSW)", "exact for the bundle's HNSW/flat top-k up to graph recall"),
    "hybrid": ("hybrid query + normalization-processor (min_max, arithmetic_mean alpha/1-alpha)", "exact fusion"),
    "uni": ("hybrid query + normalization-processor", "approximate: UnifieR adds raw lexical + dense scores of "
            "the lexical top-K; the engine fuses normalized scores of both clauses"),
    "uni_gated": ("hybrid query + normalization-processor", "approximate: the per-query gate is not applied"),
    # the query side with no model (static/ tables): how OpenSearch serves doc-only sparse models
    "lexical_static": ("neural_sparse with query_tokens from the token weight table (token_weights.json, "
                       "OpenSearch's idf file of inference-free sparse models)", "exact"),
    "dense_static": ("knn with the static tower's query vector (a table look-up in the client: "
                     "uniret.retrieval.static_query over the bundle's static/tower.npy)",
                     "exact for the bundle's HNSW/flat top-k up to graph recall"),
    "dense_feedback": ("knn with the feedback vector: the client sends the BM25 match first, reads its top "
                       "documents' vectors and adds their unit mean to the static query vector "
                       "(uniret.retrieval.feedback.feedback_query)",
                       "approximate: OpenSearch's BM25 top documents may differ from the bundle's Anserini BM25"),
    "hybrid_fast": ("hybrid query: match on the text field (BM25) + neural_sparse + knn, "
                    "search_pipeline_fast.json (min_max, the bundle's learned weights)",
                    "approximate: OpenSearch's BM25 (its english analyzer, k1/b) is not the bundle's Anserini BM25"),
}
STATIC_MODES = ("lexical_static", "dense_static", "dense_feedback", "hybrid_fast")
# hybrid_fast's runs -> the clause of the hybrid query that answers each
FAST_CLAUSES = {"bm25": "bm25", "lexical_static": "lexical", "dense_static": "dense", "dense_feedback": "dense"}


def feature_key(token: str, token_id: int) -> str:
    """A rank_features key for a vocabulary token: the token itself, or `[id]` for a token the field
    cannot hold as a key (a dot would be read as an object path; empty or blank tokens)."""
    if not token.strip() or "." in token:
        return f"[{token_id}]"
    return token


def feature_keys(vocab: Sequence[str]) -> list[str]:
    """rank_features key of every vocabulary id (unique: `[id]` keys cannot clash with tokens)."""
    return [feature_key(t, i) for i, t in enumerate(vocab)]


def index_body(dim: int | None, hnsw: dict[str, Any], cfg: OpenSearchExportConfig, sparse: bool,
               text: bool = False) -> dict[str, Any]:
    """Settings + mappings of the index (PUT /<index>)."""
    properties: dict[str, Any] = {"doc_id": {"type": "keyword"}}
    settings: dict[str, Any] = {"number_of_shards": cfg.number_of_shards, "number_of_replicas": cfg.number_of_replicas}
    if dim is not None:
        settings["knn"] = True
        settings["knn.algo_param.ef_search"] = int(hnsw["hnsw_ef_search"])
        properties[cfg.dense_field] = {
            "type": "knn_vector",
            "dimension": int(dim),
            "space_type": "innerproduct",  # the bundle scores dense by inner product (faiss METRIC_INNER_PRODUCT)
            "method": {"name": "hnsw", "engine": cfg.knn_engine,
                       "parameters": {"m": int(hnsw["hnsw_m"]), "ef_construction": int(hnsw["hnsw_ef_construction"])}},
        }
    if sparse:
        properties[cfg.sparse_field] = {"type": "rank_features"}
    if text:  # hybrid_fast's BM25 clause reads the documents' text
        properties[cfg.text_field] = {"type": "text", "analyzer": "english"}
    return {"settings": {"index": settings}, "mappings": {"dynamic": "strict", "properties": properties}}


def sparse_features(row: sp.csr_matrix, keys: Sequence[str], quant: float) -> dict[str, float]:
    """{feature key: weight} of one quantized impact row (rank_features needs positive values)."""
    return {keys[int(j)]: float(v) / quant for j, v in zip(row.indices, row.data, strict=True) if v > 0}


def query_tokens(weights: sp.csr_matrix, keys: Sequence[str], quant: float) -> dict[str, float]:
    """The `query_tokens` of one encoded query: quantized like the bundle's lexical search does."""
    return sparse_features(quantize(weights, quant).tocsr(), keys, quant)


def iter_bulk_lines(index: str, docids: Sequence[str], dense: np.ndarray | None, impacts: sp.csr_matrix | None,
                    keys: Sequence[str], quant: float, cfg: OpenSearchExportConfig,
                    texts: dict[str, str] | None = None) -> Iterator[str]:
    """`_bulk` NDJSON lines: an index action, then the document, per document."""
    for i, docid in enumerate(docids):
        source: dict[str, Any] = {"doc_id": docid}
        if texts is not None:
            source[cfg.text_field] = texts.get(docid, "")
        if dense is not None:
            source[cfg.dense_field] = [float(x) for x in dense[i]]
        if impacts is not None:
            features = sparse_features(impacts[i], keys, quant)
            if features:  # an empty rank_features object is refused; the doc is then dense-only
                source[cfg.sparse_field] = features
        yield json.dumps({"index": {"_index": index, "_id": docid}})
        yield json.dumps(source)


def search_pipeline(alpha: float, weights: Sequence[float] | None = None,
                    description: str = "uniret hybrid: min-max normalised lexical and dense clauses, alpha-weighted mean"
                    ) -> dict[str, Any]:
    """A hybrid search pipeline: min-max per clause, weighted mean (lexical alpha, dense 1 - alpha,
    or `weights` in clause order)."""
    return {
        "description": description,
        "phase_results_processors": [{
            "normalization-processor": {
                "normalization": {"technique": "min_max"},
                "combination": {"technique": "arithmetic_mean",
                                "parameters": {"weights": list(weights) if weights else [alpha, 1.0 - alpha]}},
            }
        }],
    }


def token_weight_table(weights: np.ndarray, keys: Sequence[str]) -> dict[str, float]:
    """{feature key: query weight} of every token with a positive weight: the idf file an OpenSearch
    inference-free sparse model scores query tokens with (no model on the query path)."""
    return {keys[i]: float(w) for i, w in enumerate(weights) if w > 0}


def search_body(mode: str, query: EncodedTexts, keys: Sequence[str], quant: float, cfg: OpenSearchExportConfig,
                size: int, text: str | None = None, fast_runs: Sequence[str] | None = None) -> dict[str, Any]:
    """The search request of one encoded query in serving mode `mode` (MODE_MAPPING); the static
    modes take the static query encoding, hybrid_fast also the query `text` (its BM25 clause); for
    dense_feedback (alone or fused) the encoding's dense vector is the feedback query the client made
    from a first BM25 request (uniret.retrieval.feedback.feedback_query)."""
    if mode not in MODE_MAPPING:
        raise ValueError(f"mode {mode!r} has no OpenSearch query; exportable: {sorted(MODE_MAPPING)}")
    clauses = {}
    if query.sparse is not None:
        clauses["lexical"] = {"neural_sparse": {cfg.sparse_field: {"query_tokens": query_tokens(query.sparse[0], keys,
                                                                                                 quant)}}}
    if query.dense is not None:
        clauses["dense"] = {"knn": {cfg.dense_field: {"vector": [float(x) for x in query.dense[0]],
                                                      "k": max(cfg.knn_k, size)}}}
    single = {"lexical": "lexical", "dense": "dense", "lexical_static": "lexical", "dense_static": "dense",
              "dense_feedback": "dense"}
    if mode in single:
        if single[mode] not in clauses:
            raise ValueError(f"mode {mode!r}: the bundle's encoder has no {single[mode]} output")
        return {"size": size, "_source": ["doc_id"], "query": clauses[single[mode]]}
    if mode == "hybrid_fast":  # `query` is the static encoding; runs in the bundle's fast_runs order
        if text is None:
            raise ValueError("mode 'hybrid_fast' needs the query text for its BM25 clause")
        clauses["bm25"] = {"match": {cfg.text_field: text}}
        runs = list(fast_runs or FAST_CLAUSES)
        missing = [r for r in runs if FAST_CLAUSES[r] not in clauses]
        if missing:
            raise ValueError(f"mode 'hybrid_fast' needs {missing}, which this query encoding lacks")
        return {"size": size, "_source": ["doc_id"],
                "query": {"hybrid": {"queries": [clauses[FAST_CLAUSES[r]] for r in runs]}}}
    if set(clauses) != {"lexical", "dense"}:
        raise ValueError(f"mode {mode!r} needs both a dense and a sparse output")
    return {"size": size, "_source": ["doc_id"],
            "query": {"hybrid": {"queries": [clauses["lexical"], clauses["dense"]]}}}


def alias_actions(alias: str, new_index: str, old_index: str | None) -> dict[str, Any]:
    """The atomic `_aliases` request that moves `alias` to `new_index` (and off the old one)."""
    actions: list[dict[str, Any]] = []
    if old_index and old_index != new_index:
        actions.append({"remove": {"index": old_index, "alias": alias}})
    actions.append({"add": {"index": new_index, "alias": alias, "is_write_index": False}})
    return {"actions": actions}


def bundle_version(bundle_dir: Path, manifest: dict[str, Any]) -> str:
    """The bundle's name in the registry (registry/bundles/<version>/), else its checkpoint hash."""
    if bundle_dir.name != "bundle":
        return bundle_dir.name.lower()
    sha = (manifest.get("model") or {}).get("checkpoint_sha256") or "unversioned"
    return str(sha)[:12].lower()


def export_bundle(bundle_dir: str | os.PathLike, out_dir: str | os.PathLike, cfg: OpenSearchExportConfig,
                  previous_index: str | None = None, texts: dict[str, str] | None = None) -> dict[str, Any]:
    """Write the OpenSearch export of a bundle into out_dir (see module doc); returns its manifest.
    `texts` ({doc id: text}, e.g. the corpus the bundle indexed) adds the text field hybrid_fast's
    BM25 clause reads; the bundle itself holds no document text.

    An existing out_dir is replaced only when an earlier export wrote it (uniret.utils.owned).
    """
    from uniret.retrieval.dense import doc_vectors, load_faiss_index
    from uniret.retrieval.sparse import vocab_tokens

    check_output_path(out_dir)  # before the bundle is read: a refusal costs nothing
    bundle = Path(bundle_dir)
    manifest = read_bundle_manifest(bundle)
    retrieval = manifest["params"]["retrieval"]
    quant = float(retrieval["lexical"]["quant"])
    docids = load_docids(bundle)
    dense = doc_vectors(load_faiss_index(bundle / DENSE_FILE)) if (bundle / DENSE_FILE).is_file() else None
    impacts = load_impacts(bundle) if (bundle / IMPACTS_FILE).is_file() else None
    keys = feature_keys(vocab_tokens(load_tokenizer(bundle)))
    index = f"{cfg.index_prefix}-{bundle_version(bundle, manifest)}"
    alpha = float(retrieval["fusion"]["alpha"]) if retrieval["fusion"]["runs"][:2] == ["lexical", "dense"] else 0.5
    serve_mode = (manifest.get("model") or {}).get("serve_mode")

    static_weights = STATIC / "token_weights.npy"
    fast = ((manifest.get("fusion") or {}).get("modes") or {}).get("hybrid_fast")
    with atomic_dir(out_dir) as tmp:
        body = index_body(dense.shape[1] if dense is not None else None, retrieval["dense"], cfg, impacts is not None,
                          texts is not None)
        (tmp / "index.json").write_text(json.dumps(body, indent=2), encoding="utf-8")
        if (bundle / static_weights).is_file():
            table = token_weight_table(np.load(bundle / static_weights), keys)
            (tmp / "token_weights.json").write_text(json.dumps(table), encoding="utf-8")
        if fast:
            pipeline = search_pipeline(0.5, fast["weights"], "uniret hybrid_fast: min-max normalised clauses "
                                       f"({', '.join(fast['runs'])}), weights learned on dev")
            (tmp / "search_pipeline_fast.json").write_text(json.dumps(pipeline, indent=2), encoding="utf-8")
        lines = iter_bulk_lines(index, docids, dense, impacts, keys, quant, cfg, texts)
        files = _write_bulk_files(tmp, lines, len(docids), cfg.bulk_docs_per_file)
        (tmp / "search_pipeline.json").write_text(json.dumps(search_pipeline(alpha), indent=2), encoding="utf-8")
        (tmp / "alias_actions.json").write_text(json.dumps(alias_actions(cfg.alias, index, previous_index), indent=2),
                                                encoding="utf-8")
        (tmp / "feature_keys.json").write_text(json.dumps(keys), encoding="utf-8")
        exported = {
            **OWNER_STAMP,
            "bundle": str(bundle.resolve()),
            "index": index,
            "alias": cfg.alias,
            "search_pipeline": cfg.search_pipeline,
            "num_docs": len(docids),
            "dense_dim": int(dense.shape[1]) if dense is not None else None,
            "sparse_quant": quant,
            "hybrid_alpha": alpha,
            "serve_mode": serve_mode,
            "serve_mode_mapping": MODE_MAPPING.get(serve_mode) if serve_mode else None,
            "modes": {m: {"query": q, "fidelity": f} for m, (q, f) in MODE_MAPPING.items()},
            "bulk_files": files,
            "text_field": cfg.text_field if texts is not None else None,
            "static_query": ({"token_weights": "token_weights.json", "tower": str(bundle / STATIC / "tower.npy"),
                              "fast_runs": fast["runs"] if fast else None}
                             if (bundle / static_weights).is_file() else None),
            "requests": ["PUT /{index} index.json", "POST /_bulk bulk-*.ndjson",
                         "PUT /_search/pipeline/{pipeline} search_pipeline.json",
                         "POST /_aliases alias_actions.json (promotion)"],
        }
        (tmp / MANIFEST).write_text(json.dumps(exported, indent=2), encoding="utf-8")
    return exported


def _write_bulk_files(folder: Path, lines: Iterator[str], num_docs: int, per_file: int) -> list[str]:
    """Bulk NDJSON files of `per_file` documents each (two lines per document, newline-terminated)."""
    names = []
    for start in range(0, max(num_docs, 1), per_file):
        name = f"bulk-{start // per_file:04d}.ndjson"
        with (folder / name).open("w", encoding="utf-8") as fh:
            for _ in range(2 * min(per_file, num_docs - start)):
                fh.write(next(lines) + "\n")  # the _bulk API needs the final newline too
        names.append(name)
    return names
