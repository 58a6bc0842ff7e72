"""CLEAR / DualRM (Gao et al.): an embedding model trained on BM25's residual, interpolated with BM25.

Training: a `DenseEncoder` (mean pooling, [QRY]/[DOC] markers) with the residual-margin hinge
(`uniret.losses.clear_margin`) on negatives sampled from BM25's top-N mistakes (the bm25 stage).
Test time (Eq. 5): s(q, d) = lambda_test * s_lex(q, d) + s_emb(q, d) over the union of the BM25
and embedding candidates; a candidate missing from one list scores that list's floor.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np


def dualrm_score(bm25, emb, bm25_weight: float):
    """Eq. 5: lambda_test * bm25 + emb (tensors, arrays or floats)."""
    return bm25_weight * bm25 + emb


def dualrm_fuse(
    bm25: Mapping[str, float], emb: Mapping[str, float], bm25_weight: float, k: int | None = None
) -> list[tuple[str, float]]:
    """Fuse one query's BM25 and embedding hits (doc id -> score) with Eq. 5, best first.

    A document retrieved by one side only gets the other side's lowest retrieved score: it
    ranked below everything that side returned, and the floor keeps the union comparable.
    """
    if not bm25 and not emb:
        return []
    bm25_floor = min(bm25.values()) if bm25 else 0.0
    emb_floor = min(emb.values()) if emb else 0.0
    ids = list(dict.fromkeys([*bm25, *emb]))
    scores = dualrm_score(
        np.array([bm25.get(d, bm25_floor) for d in ids]), np.array([emb.get(d, emb_floor) for d in ids]), bm25_weight
    )
    order = np.argsort(-scores, kind="stable")[: k or len(ids)]
    return [(ids[i], float(scores[i])) for i in order]
