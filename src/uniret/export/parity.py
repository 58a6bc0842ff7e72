"""Parity of the exported encoders with the torch model: per-text cosine and top-10 agreement.

Two checks, each per channel (dense, sparse) and side (query, document):
- cosine between the torch and the ONNX Runtime output of every text >= `min_cosine`;
- on real queries against real documents, the mean overlap of the top-10 lists ranked with
  torch encodings and with ORT encodings >= `min_top10_overlap`.
A failure raises StageFailed naming every failing check, so a broken export never ships.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp

from uniret.config.retrieval import ParityConfig
from uniret.core.errors import StageFailed
from uniret.retrieval.base import top_k_rows
from uniret.retrieval.encoding import EncodedTexts, TextEncoder, concat_encoded, split_encoded

log = logging.getLogger("uniret.export")

TOP = 10


def _dense(x: np.ndarray | sp.csr_matrix) -> np.ndarray:
    return (x.toarray() if sp.issparse(x) else np.asarray(x)).astype(np.float64)


def row_cosines(a: np.ndarray | sp.csr_matrix, b: np.ndarray | sp.csr_matrix) -> np.ndarray:
    """Cosine of each row pair; two all-zero rows count as identical (1), one zero row as 0."""
    a, b = _dense(a), _dense(b)
    na, nb = np.linalg.norm(a, axis=1), np.linalg.norm(b, axis=1)
    both_zero = (na == 0) & (nb == 0)
    denom = np.where(na * nb == 0, 1.0, na * nb)
    cos = (a * b).sum(axis=1) / denom
    return np.where(both_zero, 1.0, cos)


def top10_overlap(q_ref, d_ref, q_new, d_new) -> float:
    """Mean |top10(ref) ∩ top10(new)| / 10 over queries, ranking docs by dot product."""
    k = min(TOP, d_ref.shape[0])
    ref_idx, _ = top_k_rows(_dense(q_ref @ d_ref.T), k)
    new_idx, _ = top_k_rows(_dense(q_new @ d_new.T), k)
    return float(np.mean([len(set(r) & set(n)) / k for r, n in zip(ref_idx, new_idx, strict=True)]))


class RememberingEncoder:
    """A TextEncoder that encodes each (side, text) once and answers repeats from memory.

    The index stage compares several graphs with the same fp32 ONNX reference on the same texts
    (export parity, then the int8 query and document graphs); encoding those documents again took
    about 20 s of every run. `docs_per_s` is the speed of the documents it did encode. Other
    attributes are the wrapped encoder's.
    """

    def __init__(self, inner: TextEncoder):
        self.inner = inner
        self._rows: dict[tuple[bool, str], EncodedTexts] = {}
        self._doc_count = 0
        self._doc_seconds = 0.0

    def __getattr__(self, name: str):
        if name == "inner":  # not set yet (e.g. while unpickling): never recurse
            raise AttributeError(name)
        return getattr(self.inner, name)

    def encode(self, texts: Sequence[str], is_query: bool) -> EncodedTexts:
        """`texts` encoded as queries or documents, each text through the wrapped encoder at most once."""
        missing = list(dict.fromkeys(t for t in texts if (is_query, t) not in self._rows))
        if missing:
            start = time.perf_counter()
            fresh = self.inner.encode(missing, is_query=is_query)
            if not is_query:
                self._doc_count += len(missing)
                self._doc_seconds += time.perf_counter() - start
            self._rows.update(((is_query, text), row) for text, row in zip(missing, split_encoded(fresh), strict=True))
        return concat_encoded([self._rows[(is_query, t)] for t in texts])

    @property
    def docs_per_s(self) -> float | None:
        """Documents per second of what it encoded (None before any document)."""
        return round(self._doc_count / max(self._doc_seconds, 1e-9), 2) if self._doc_count else None


def _timed(encoder: TextEncoder, texts: Sequence[str], is_query: bool) -> tuple[EncodedTexts, float]:
    start = time.perf_counter()
    out = encoder.encode(texts, is_query=is_query)
    return out, time.perf_counter() - start


def measure_parity(reference: TextEncoder, candidate: TextEncoder, queries: Sequence[str], docs: Sequence[str]) -> dict:
    """Parity figures of `candidate` (ORT) against `reference` (torch), plus docs/s of each."""
    q_ref, _ = _timed(reference, queries, True)
    q_new, _ = _timed(candidate, queries, True)
    d_ref, t_ref = _timed(reference, docs, False)
    d_new, t_new = _timed(candidate, docs, False)
    figures: dict = {"queries": len(queries), "docs": len(docs)}
    for channel in ("dense", "sparse", "gate"):
        parts = [getattr(x, channel) for x in (q_ref, q_new, d_ref, d_new)]
        if parts[0] is None and parts[1] is None:
            continue
        if (parts[0] is None) != (parts[1] is None):
            figures[f"{channel}_missing"] = True
            continue
        if channel == "gate":
            figures["gate_max_abs_diff"] = float(np.abs(parts[0] - parts[1]).max()) if len(parts[0]) else 0.0
            continue
        figures[f"query_{channel}_min_cosine"] = float(row_cosines(parts[0], parts[1]).min())
        figures[f"doc_{channel}_min_cosine"] = float(row_cosines(parts[2], parts[3]).min())
        figures[f"{channel}_top10_overlap"] = top10_overlap(parts[0], parts[2], parts[1], parts[3])
    figures["torch_docs_per_s"] = round(len(docs) / max(t_ref, 1e-9), 2)
    figures["onnx_docs_per_s"] = round(len(docs) / max(t_new, 1e-9), 2)
    return figures


def failed_checks(figures: dict, cfg: ParityConfig) -> list[str]:
    """Names (with values) of the checks `figures` fail."""
    failures = [f"{k}: output missing from one side" for k, v in figures.items() if k.endswith("_missing") and v]
    for key, value in figures.items():
        if key.endswith("_min_cosine") and not value >= cfg.min_cosine:
            failures.append(f"{key} = {value:.6f} < {cfg.min_cosine}")
        if key.endswith("_top10_overlap") and not value >= cfg.min_top10_overlap:
            failures.append(f"{key} = {value:.4f} < {cfg.min_top10_overlap}")
        # the gate is a weight in [0, 1]: hold it to the same tolerance as a cosine
        if key == "gate_max_abs_diff" and not value <= 1.0 - cfg.min_cosine:
            failures.append(f"{key} = {value:.6f} > {1.0 - cfg.min_cosine:.6f}")
    return failures


def check_parity(
    reference: TextEncoder, candidate: TextEncoder, queries: Sequence[str], docs: Sequence[str], cfg: ParityConfig
) -> dict:
    """Measure parity; raise StageFailed naming each failing check, else return the figures."""
    if not queries or not docs:
        raise StageFailed("ONNX parity: need at least one query and one document to compare")
    figures = measure_parity(reference, candidate, queries, docs)
    failures = failed_checks(figures, cfg)
    if failures:
        raise StageFailed("ONNX parity check failed:\n" + "\n".join(failures))
    log.info("ONNX parity ok: %s", {k: v for k, v in figures.items() if "cosine" in k or "overlap" in k})
    return figures
