"""Dynamic pruning of a query's posting lists: MaxScore, document at a time (Turtle & Flood 1995, as
PISA and Lucene run it), compiled with numba. Measured against summing every posting in E55 and not
adopted (slower at 1M for both sparse routes than the block-wise sum of `kernels.postings_top_k`);
kept here so `sparse_kernel_ab.py time` reproduces that figure.

The query's terms are ordered by their largest possible contribution (weight x the largest posting of
their list). Once k documents are held, the terms whose bounds sum below the k-th score cannot bring a
document in on their own: they are read only for the documents the other lists name, by a forward
search, and a document is dropped as soon as its partial sum plus the bounds of the terms not yet
read falls below the k-th score. The rankings and scores are those of summing every posting
(`kernels.postings_top_k`), bit for bit: a document's products are added in the query's term order,
and a bound drops a document only when even a small margin above it stays below the k-th score.
"""

from __future__ import annotations

import numpy as np

from uniret.retrieval.kernels import _final, _jit, _ranked, _seek
from uniret.retrieval.postings import Postings

_MARGIN = 1e-9  # relative slack on a bound: sums added in another order differ by a few ulps


# the k best held in a heap, the worst on top (the product's kernel collects above a bar instead, E104)
@_jit
def _worse(score_a, tie_a, score_b, tie_b):  # pragma: no cover - compiled
    """Whether hit a ranks below hit b: a lower score, or an equal score and a later tie rank."""
    return score_a < score_b or (score_a == score_b and tie_a > tie_b)


@_jit
def _sift_down(heap_s, heap_t, heap_r, i, size):  # pragma: no cover - compiled
    """Restore the heap below `i`: every entry ranks at or below its children (the worst hit on top)."""
    while True:
        worst, left, right = i, 2 * i + 1, 2 * i + 2
        if left < size and _worse(heap_s[left], heap_t[left], heap_s[worst], heap_t[worst]):
            worst = left
        if right < size and _worse(heap_s[right], heap_t[right], heap_s[worst], heap_t[worst]):
            worst = right
        if worst == i:
            return
        heap_s[i], heap_s[worst] = heap_s[worst], heap_s[i]
        heap_t[i], heap_t[worst] = heap_t[worst], heap_t[i]
        heap_r[i], heap_r[worst] = heap_r[worst], heap_r[i]
        i = worst


@_jit
def _push(heap_s, heap_t, heap_r, size, k, s, tie, row):  # pragma: no cover - compiled
    """Offer one hit to the heap of the k best (the worst on top); the heap's new size."""
    if size < k:  # sift the new hit up from the bottom
        j = size
        size += 1
        while j > 0 and _worse(s, tie, heap_s[(j - 1) // 2], heap_t[(j - 1) // 2]):
            parent = (j - 1) // 2
            heap_s[j], heap_t[j], heap_r[j] = heap_s[parent], heap_t[parent], heap_r[parent]
            j = parent
        heap_s[j], heap_t[j], heap_r[j] = s, tie, row
    elif _worse(heap_s[0], heap_t[0], s, tie):  # better than the worst kept: it takes its place
        heap_s[0], heap_t[0], heap_r[0] = s, tie, row
        _sift_down(heap_s, heap_t, heap_r, 0, size)
    return size



def list_maxima(indptr: np.ndarray, data: np.ndarray) -> np.ndarray:
    """Each posting list's largest weight (float32; 0 for an empty list): the terms' bounds."""
    out = np.zeros(len(indptr) - 1, dtype=np.float32)
    full = np.flatnonzero(np.diff(indptr) > 0)
    if len(full):
        out[full] = np.maximum.reduceat(data, indptr[:-1][full])
    return out


@_jit
def _below(bound, theta, scale, round32):  # pragma: no cover - compiled
    """Whether a document whose raw sum is at most `bound` scores strictly below `theta`."""
    return _final(bound * (1.0 + _MARGIN) + 1e-300, scale, round32) < theta


@_jit
def maxscore_top_k(indptr, indices, data, maxima, terms, weights, k, ties, scale, round32):  # pragma: no cover
    """`kernels.postings_top_k`'s (rows, scores) for one query, by MaxScore: the same documents in the
    same order with the same scores. `maxima`: each list's largest posting (`list_maxima`); postings
    and `weights` must be >= 0 (the caller checks). No scratch the size of the corpus."""
    n_terms = len(terms)
    k = max(k, 0)
    heap_s = np.empty(k, dtype=np.float64)
    heap_t = np.empty(k, dtype=np.int64)
    heap_r = np.empty(k, dtype=np.int64)
    size = 0
    bounds = np.empty(n_terms, dtype=np.float64)
    pos = np.empty(n_terms, dtype=np.int64)
    end = np.empty(n_terms, dtype=np.int64)
    for t in range(n_terms):
        bounds[t] = np.float64(maxima[terms[t]]) * weights[t]
        pos[t], end[t] = indptr[terms[t]], indptr[terms[t] + 1]
    order = np.argsort(bounds, kind="mergesort")  # smallest bound first
    cum = np.cumsum(bounds[order])  # cum[i]: the bounds of order[0..i] together
    contrib = np.zeros(n_terms, dtype=np.float64)
    theta = 0.0  # the k-th score once k are held
    lazy = 0  # order[:lazy] are read only for documents the others name
    none = np.iinfo(np.int64).max
    while k > 0:
        d = none
        for i in range(lazy, n_terms):
            t = order[i]
            if pos[t] < end[t] and indices[pos[t]] < d:
                d = indices[pos[t]]
        if d == none:
            break
        partial = 0.0
        for i in range(lazy, n_terms):
            t = order[i]
            if pos[t] < end[t] and indices[pos[t]] == d:
                contrib[t] = np.float64(data[pos[t]]) * weights[t]
                partial += contrib[t]
                pos[t] += 1
        alive = True
        for i in range(lazy - 1, -1, -1):  # the larger bounds first: the sooner a hopeless doc is dropped
            if _below(partial + cum[i], theta, scale, round32):
                alive = False
                break
            t = order[i]
            pos[t] = _seek(indices, pos[t], end[t], d)
            if pos[t] < end[t] and indices[pos[t]] == d:
                contrib[t] = np.float64(data[pos[t]]) * weights[t]
                partial += contrib[t]
        if alive:
            raw = 0.0
            for t in range(n_terms):  # in the query's term order, as every posting summed adds them
                raw += contrib[t]
            s = _final(raw, scale, round32)
            if s > 0:
                size = _push(heap_s, heap_t, heap_r, size, k, s, ties[d], d)
                if size == k:
                    theta = heap_s[0]
                    while lazy < n_terms and _below(cum[lazy], theta, scale, round32):
                        lazy += 1
        for t in range(n_terms):
            contrib[t] = 0.0
    rows, scores = heap_r[:size], heap_s[:size]
    best = _ranked(rows, scores, ties, k)
    return rows[best], scores[best]


class MaxScorePostings:
    """`Postings.top_k`'s contract over the same lists, read by MaxScore (query weights >= 0, scale > 0)."""

    def __init__(self, postings: Postings):
        if len(postings.data) and float(postings.data.min()) < 0:
            raise ValueError("MaxScore needs non-negative postings: a list's largest weight bounds it")
        self.postings, self.maxima = postings, list_maxima(postings.indptr, postings.data)

    def top_k(self, terms, weights, k, ties, scale=1.0, round32=False):
        """(rows, scores) as `Postings.top_k` returns them."""
        if (len(weights) and np.min(weights) < 0) or (not round32 and scale <= 0):
            raise ValueError("MaxScore needs query weights >= 0 and a positive scale: its bounds assume both")
        p = self.postings
        return maxscore_top_k(p.indptr, p.indices, p.data, self.maxima, np.asarray(terms, dtype=np.int64),
                              np.asarray(weights, dtype=np.float64), k, ties, scale, round32)
