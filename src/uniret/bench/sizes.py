"""Index sizes of a bundle: bytes per document of each structure."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy.sparse as sp

# bundle part -> what it is (layout: uniret.retrieval.bundle)
PARTS = {
    "dense.faiss": "dense",
    "dense.npy": "dense (the flat vectors again, mapped by serving: E102)",
    "impact": "sparse (Lucene impact index)",
    "impacts.npz": "sparse (CSR copy, exhaustive scoring)",
    "bm25": "BM25 (Lucene)",
    "onnx": "ONNX encoders",
    "tokenizer": "tokenizer",
}


def path_bytes(path: Path) -> int:
    """Size of a file, or of every file under a folder."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.is_dir() else 0


def index_sizes(bundle_dir: Path) -> dict:
    """{part: {bytes, bytes_per_doc}} plus docs, total and mean active terms per document."""
    bundle_dir = Path(bundle_dir)
    docs = len(json.loads((bundle_dir / "docids.json").read_text(encoding="utf-8")))
    parts = {}
    for name, what in PARTS.items():
        path = bundle_dir / name
        if path.exists():
            size = path_bytes(path)
            parts[name] = {"what": what, "bytes": size, "bytes_per_doc": round(size / max(docs, 1), 2)}
    out = {"docs": docs, "parts": parts, "total_bytes": path_bytes(bundle_dir)}
    if (bundle_dir / "impacts.npz").is_file():
        impacts = sp.load_npz(bundle_dir / "impacts.npz")
        out["mean_active_terms_doc"] = round(float(np.diff(impacts.indptr).mean()), 2) if docs else 0.0
    return out
