"""Top-k selection on numpy score arrays, in exactly the order `runs.ranked` gives a dict.

`runs.ranked` sorts by score descending and breaks ties by doc id (string order). Searchers that
keep scores as arrays (in-memory lexical, uni, exhaustive) select with `top_k_ranked`, passing
each row's `tie_ranks` (its doc id's position in sorted id order), so they return the same
documents in the same order as building a {doc id: score} dict and calling `ranked` on it,
without building the dict for every candidate.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def tie_ranks(docids: Sequence[str]) -> np.ndarray:
    """Position of each doc id in sorted (string) order: the tie-break key of `runs.ranked`."""
    order = sorted(range(len(docids)), key=docids.__getitem__)
    ranks = np.empty(len(docids), dtype=np.int64)
    ranks[np.asarray(order, dtype=np.int64)] = np.arange(len(docids), dtype=np.int64)
    return ranks


def top_k_ranked(scores: np.ndarray, k: int, ties: np.ndarray) -> np.ndarray:
    """Positions of the k best entries of 1-d `scores`, best first, ties broken by ascending `ties`.

    argpartition finds the k-th best score; every entry at least that good is kept (ties at the
    cut included) and sorted, so the cut is the same as a full sort's.
    """
    n = scores.shape[0]
    if k <= 0 or n == 0:
        return np.zeros(0, dtype=np.int64)
    if k < n:
        kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
        pool = np.flatnonzero(scores >= kth)
    else:
        pool = np.arange(n)
    order = np.lexsort((ties[pool], -scores[pool]))
    return pool[order[:k]]


def hits_dict(docids: Sequence[str], rows: np.ndarray, scores: np.ndarray) -> dict[str, float]:
    """{doc id: score} of already ranked rows (insertion order = rank order)."""
    return {docids[r]: s for r, s in zip(rows.tolist(), scores.tolist(), strict=True)}
