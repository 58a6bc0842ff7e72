"""Write a bundle's index structures from corpus encodings (layout: retrieval/bundle.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import scipy.sparse as sp

from uniret.config.retrieval import RetrievalConfig
from uniret.config.sections import Bm25Config
from uniret.retrieval.bundle import (
    BM25_DIR,
    BM25_TERMS_FILE,
    BM25_WEIGHTS_FILE,
    DENSE_FILE,
    DENSE_VECTORS_FILE,
    DOCIDS_FILE,
    IMPACT_DIR,
    IMPACTS_FILE,
)
from uniret.retrieval.dense import build_faiss_index, save_faiss_index, save_vectors
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.lexical import active_terms
from uniret.retrieval.sparse import iter_term_rows, keep_top_n, quantize

log = logging.getLogger("uniret.retrieval")


def dir_bytes(path: Path) -> int:
    """Total size of the files under `path` (or of the file itself)."""
    path = Path(path)
    return path.stat().st_size if path.is_file() else sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def write_index_structures(
    bundle_dir: Path, docids: list[str], encoded: EncodedTexts, vocab: list[str], cfg: RetrievalConfig,
    threads: int = 2,
) -> dict[str, float]:
    """Write docids.json, dense.faiss (with a flat index also dense.npy), impact/ and impacts.npz into
    `bundle_dir`; return size metrics."""
    from uniret.lexical.impact import build_impact_index

    bundle_dir = Path(bundle_dir)
    n = len(docids)
    (bundle_dir / DOCIDS_FILE).write_text(json.dumps(docids), encoding="utf-8")
    metrics: dict[str, float] = {"num_docs": n}
    if encoded.dense is not None:
        index = build_faiss_index(encoded.dense, cfg.dense)
        save_faiss_index(index, bundle_dir / DENSE_FILE)
        if cfg.dense.type == "flat":  # the copy serving maps, shared by its workers (E102): a flat index stores
            save_vectors(encoded.dense, bundle_dir / DENSE_VECTORS_FILE)  # the float32 rows it was given
        metrics["dense_dim"] = int(encoded.dense.shape[1])
        metrics["bytes_per_doc_dense"] = round(dir_bytes(bundle_dir / DENSE_FILE) / max(n, 1), 2)
    if encoded.sparse is not None:
        # top-N first, then Lucene's own quantization sees exactly these weights (top_n=None there)
        weights = keep_top_n(encoded.sparse, cfg.lexical.top_n)
        impacts = quantize(weights, cfg.lexical.quant)
        sp.save_npz(bundle_dir / IMPACTS_FILE, impacts)
        stats = build_impact_index(
            iter_term_rows(docids, weights, vocab), bundle_dir / IMPACT_DIR, cfg.lexical.quant, None, threads=threads,
            total=n,
        )
        metrics["impact_docs_indexed"] = stats.docs
        metrics["impact_docs_empty"] = stats.skipped
        metrics["mean_active_terms_doc"] = round(active_terms(impacts), 3)
        metrics["mean_active_terms_doc_before_top_n"] = round(active_terms(quantize(encoded.sparse, cfg.lexical.quant)), 3)
        metrics["bytes_per_doc_sparse"] = round(dir_bytes(bundle_dir / IMPACT_DIR) / max(n, 1), 2)
    return metrics


def write_bm25_weights(bundle_dir: Path, docids: list[str], cfg: Bm25Config) -> dict[str, float]:
    """Write bm25_weights.npz and bm25_terms.json, read from the bundle's bm25/ index (hybrid_fast's
    BM25 route holds them in memory, E43); return their size figures."""
    from uniret.retrieval.bm25_memory import read_bm25_weights

    bundle_dir = Path(bundle_dir)
    terms, weights = read_bm25_weights(bundle_dir / BM25_DIR, cfg, docids)
    sp.save_npz(bundle_dir / BM25_WEIGHTS_FILE, weights)
    (bundle_dir / BM25_TERMS_FILE).write_text(json.dumps(terms), encoding="utf-8")
    size = dir_bytes(bundle_dir / BM25_WEIGHTS_FILE) + dir_bytes(bundle_dir / BM25_TERMS_FILE)
    return {"bm25_terms": len(terms), "bm25_postings": int(weights.nnz),
            "bytes_per_doc_bm25_weights": round(size / max(len(docids), 1), 2)}
