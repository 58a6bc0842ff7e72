"""Compiled inner loops of the in-memory query routes (numba, no GIL held): a query's posting-list sum
with its top k, the exact rescoring of a dense shortlist with its top k, the static token bag, the
BM25 feedback on the dense query, and the min-max fusion.

Each kernel returns what the numpy code beside it returns (`Postings.top_k`, `dense.shortlisted`,
`StaticQueryEncoder.encode`, `feedback.feedback_query`, `FusionSearcher._fuse_arrays`): the same documents in the same order,
ties broken the same way.
`rescore_rows_top_k` scores a pruned route's candidates exactly from the documents' own rows.
A query of `hybrid_fast` made about a hundred numpy calls, each paying Python's dispatch and a fresh
temporary; here each route is one call that releases the GIL, so serving threads overlap (why: E44).
Without numba installed (`AVAILABLE` false) the numpy paths run.
"""

from __future__ import annotations

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - numba is in requirements.txt; the numpy paths stand in
    numba = None

AVAILABLE = numba is not None

BLOCK = 65536  # docs whose sums postings_top_k holds at once: 512 KB, within a core's cache (E55)
SPARSE_BLOCK = 8  # a block with under 1/SPARSE_BLOCK of its docs' postings visits them rather than scanning


def _jit(func=None, **options):
    """Compiled without the GIL, cached on disk (numba's cache: next to this file, else the user's
    cache folder), so a new process loads the machine code instead of compiling it again."""
    if func is None:
        return lambda f: _jit(f, **options)
    return numba.njit(nogil=True, cache=True, **options)(func) if AVAILABLE else func


@_jit
def _ranked(rows, scores, ties, k):  # pragma: no cover - compiled
    """Positions of the k best of `scores`, best first, ties by ascending `ties[rows]`: the order of
    `ranking.top_k_ranked`, whose cut keeps every score equal to the k-th before it sorts."""
    n = len(scores)
    if k <= 0:
        return np.arange(0)
    if k < n:
        kth = -np.partition(-scores, k - 1)[k - 1]
        pool = np.flatnonzero(scores >= kth)
    else:
        pool = np.arange(n)
    by_tie = pool[np.argsort(ties[rows[pool]], kind="mergesort")]
    order = by_tie[np.argsort(-scores[by_tie], kind="mergesort")]  # stable: equal scores keep tie order
    return order[:k]


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


@_jit
def _seek(indices, p, end, d):  # pragma: no cover - compiled
    """The first position in [p, end) of an ascending list whose document is >= d: galloping, then bisection."""
    if p >= end or indices[p] >= d:
        return p
    lo, step = p, 1  # indices[lo] < d
    hi = lo + step
    while hi < end and indices[hi] < d:
        lo = hi
        step *= 2
        hi = lo + step
    hi = min(hi, end)
    lo += 1
    while lo < hi:
        mid = (lo + hi) >> 1
        if indices[mid] < d:
            lo = mid + 1
        else:
            hi = mid
    return lo


@_jit
def _final(raw, scale, round32):  # pragma: no cover - compiled
    """A doc's sum as its route scores it: rounded to float32 (`round32`, as Lucene keeps a BM25 score) or times `scale`."""
    return np.float64(np.float32(raw)) if round32 else raw * scale


@_jit
def _raw_bar(bar, scale, round32):  # pragma: no cover - compiled
    """A raw sum below which no doc can score `bar` or more (a little under it: float32 rounding, scale's)."""
    if round32:
        return bar * (1.0 - 1e-6)
    return bar * (1.0 - 1e-6) / scale if scale > 0 else -np.inf


@_jit
def postings_top_k(indptr, indices, data, acc, terms, weights, k, ties, scale, round32):  # pragma: no cover
    """(rows, scores) of the k best docs with a positive score for one query: each doc's sum over
    `terms` (in the given order, as the numpy path adds them) of weight x posting, times `scale`, or
    rounded to float32 (`round32`); best first, ties by `ties` (one rank a doc).

    The corpus is read in blocks of len(`acc`) docs (the caller's float64 scratch, all zero, left
    zero): every term's postings in the block are added into `acc` with no test per posting, then
    the block's sums are offered to a heap of the k best, a scan whose test almost never passes once
    k are held. Both loops run without the unpredictable branches of a seen-flag per posting, and a
    block's sums stay in the core's cache (E55). A block with few postings visits them instead."""
    k = max(k, 0)
    block, n_terms = len(acc), len(terms)
    cur, end, first = np.empty(n_terms, np.int64), np.empty(n_terms, np.int64), np.empty(n_terms, np.int64)
    n_docs = 0  # one past the last doc any of the lists holds: the blocks beyond hold nothing
    for t in range(n_terms):
        cur[t], end[t] = indptr[terms[t]], indptr[terms[t] + 1]
        if end[t] > cur[t]:
            n_docs = max(n_docs, indices[end[t] - 1] + 1)
    heap_s, heap_t, heap_r = np.empty(k, np.float64), np.empty(k, np.int64), np.empty(k, np.int64)
    size = 0
    for lo in range(0, n_docs, block):
        hi = min(lo + block, n_docs)
        m = 0
        for t in range(n_terms):
            w, first[t] = weights[t], cur[t]
            stop = _seek(indices, cur[t], end[t], hi)
            for p in range(cur[t], stop):
                acc[indices[p] - lo] += np.float64(data[p]) * w
            m += stop - cur[t]
            cur[t] = stop
        if m == 0:
            continue
        if m * SPARSE_BLOCK < hi - lo:  # few postings: visit them, each doc once (its sum cleared when read)
            for t in range(n_terms):
                for p in range(first[t], cur[t]):
                    i = indices[p] - lo
                    if acc[i] != 0.0:
                        s = _final(acc[i], scale, round32)
                        acc[i] = 0.0
                        if s > 0 and k > 0:
                            size = _push(heap_s, heap_t, heap_r, size, k, s, ties[lo + i], lo + i)
            continue
        bar = heap_s[0] if size == k else 0.0
        raw = _raw_bar(bar, scale, round32)
        for i in range(hi - lo):
            if acc[i] >= raw and acc[i] != 0.0 and k > 0:
                s = _final(acc[i], scale, round32)
                if s >= bar and s > 0:
                    size = _push(heap_s, heap_t, heap_r, size, k, s, ties[lo + i], lo + i)
                    bar = heap_s[0] if size == k else 0.0
                    raw = _raw_bar(bar, scale, round32)
        acc[: hi - lo] = 0.0
    rows, scores = heap_r[:size], heap_s[:size]
    best = _ranked(rows, scores, ties, k)
    return rows[best], scores[best]


@_jit
def rescore_rows_top_k(indptr, indices, data, rows, terms, weights, k, ties, scale, round32):  # pragma: no cover
    """(rows, scores) of the k best of `rows` with a positive score, scored exactly from the forward
    index (`indptr`/`indices`/`data`: each document's terms, ascending): the sum over the query's
    `terms` (ascending, distinct) it holds of weight x its weight, added in term order as
    `postings_top_k` adds them, times `scale` or rounded to float32 (`round32`); best first, ties by `ties`."""
    scores = np.empty(len(rows), dtype=np.float64)
    keep = np.zeros(len(rows), dtype=np.bool_)
    for i in range(len(rows)):
        d = rows[i]
        p, end = indptr[d], indptr[d + 1]
        s = 0.0
        for t in range(len(terms)):  # each query term found in the rest of the row (terms ascend)
            p = _seek(indices, p, end, terms[t])
            if p < end and indices[p] == terms[t]:
                s += np.float64(data[p]) * weights[t]
                p += 1
        scores[i] = _final(s, scale, round32)
        keep[i] = scores[i] > 0
    found, values = rows[keep], scores[keep]
    best = _ranked(found, values, ties, k)
    return found[best], values[best]


# reassociated sums: a row's products are added in SIMD lanes rather than one after another
@_jit(fastmath={"reassoc", "contract"})
def rescore_top_k(vectors, query, candidates, k):  # pragma: no cover - compiled
    """(scores, rows) of the k best `candidates` (rows of `vectors`; -1: none) by exact inner product
    with `query`, best first, ties by the lower row. The products are summed in float64 and kept
    as float32, so they equal numpy's float32 product to its rounding (about 1e-7 relative).
    Four rows are summed side by side, so their reads from memory overlap (random rows of a large
    corpus wait on memory, not on arithmetic: 0.63 -> 0.37 ms for 1,200 of 1M rows, E55)."""
    found = np.sort(candidates[candidates >= 0])
    n, dim = len(found), vectors.shape[1]
    exact = np.empty(n, dtype=np.float32)
    q = query.astype(np.float64)
    i = 0
    while i + 4 <= n:
        r0, r1, r2, r3 = vectors[found[i]], vectors[found[i + 1]], vectors[found[i + 2]], vectors[found[i + 3]]
        s0 = s1 = s2 = s3 = 0.0
        for j in range(dim):
            s0 += r0[j] * q[j]
            s1 += r1[j] * q[j]
            s2 += r2[j] * q[j]
            s3 += r3[j] * q[j]
        exact[i], exact[i + 1], exact[i + 2], exact[i + 3] = s0, s1, s2, s3
        i += 4
    for r in range(i, n):
        row, s = vectors[found[r]], 0.0
        for j in range(dim):
            s += row[j] * q[j]
        exact[r] = s
    order = np.argsort(-exact, kind="mergesort")[:k]  # rows ascending: ties by the lower row
    return exact[order], found[order]


@_jit
def token_bag(ids, tower, token_weights):  # pragma: no cover - compiled
    """One query's static encoding from its token ids: (the L2-normalised sum of the tower's rows,
    float32, added in order as numpy's row sum; the distinct ids with a positive weight, ascending,
    int32; their weights, float32)."""
    vec = np.zeros(tower.shape[1], dtype=np.float32)
    for i in range(len(ids)):
        row = tower[ids[i]]
        for j in range(len(vec)):
            vec[j] += row[j]
    norm = 0.0
    for j in range(len(vec)):
        norm += np.float64(vec[j]) * np.float64(vec[j])
    if norm > 0:
        vec /= np.float32(np.sqrt(norm))
    uniq = np.unique(ids)
    weights = token_weights[uniq]
    keep = weights > 0
    return vec, uniq[keep].astype(np.int32), weights[keep]


@_jit
def feedback_query(query, vectors, rows, scores, docs, weight):  # pragma: no cover - compiled
    """One query's dense feedback query (float32, unit length): unit(query) + weight x the unit mean of
    the vectors of the `docs` best of (rows, scores) (ties: the lower row), re-normalised; the
    arithmetic of `feedback.feedback_query`, in float64."""
    dim = len(query)
    out = np.empty(dim, dtype=np.float64)
    norm = 0.0
    for j in range(dim):
        out[j] = query[j]
        norm += out[j] * out[j]
    out /= max(np.sqrt(norm), 1e-12)
    take = min(docs, len(rows))
    if take > 0 and weight > 0:
        used = np.zeros(len(rows), dtype=np.bool_)
        centroid = np.zeros(dim, dtype=np.float64)
        for _ in range(take):  # selection of the few best: no sort of the whole route
            best = -1
            for i in range(len(rows)):
                if not used[i] and (best < 0 or scores[i] > scores[best]
                                    or (scores[i] == scores[best] and rows[i] < rows[best])):
                    best = i
            used[best] = True
            for j in range(dim):
                centroid[j] += vectors[rows[best], j]
        norm = 0.0
        for j in range(dim):
            norm += centroid[j] * centroid[j]
        scale = weight / max(np.sqrt(norm), 1e-12)  # the mean's 1/take cancels in its unit vector
        for j in range(dim):
            out[j] += scale * centroid[j]
    norm = 0.0
    for j in range(dim):
        norm += out[j] * out[j]
    return (out / max(np.sqrt(norm), 1e-12)).astype(np.float32)


@_jit
def fuse_minmax(rows, scores, bounds, weights, k, ties):  # pragma: no cover - compiled
    """(rows, fused scores) of one query's k best: route r's hits are rows/scores[bounds[r]:bounds[r + 1]];
    each route's scores min-max normalised (all equal: 1) and weighted, a doc missing from a route
    gets 0 from it; the arithmetic and order of `fusion.interpolate`. Ties by ascending `ties`.
    The hits are merged by sorting their rows, so the work is the routes' depth, not the corpus (E54)."""
    n = len(rows)
    part = np.empty(n, dtype=np.float64)
    for r in range(len(weights)):
        lo_i, hi_i = bounds[r], bounds[r + 1]
        if hi_i == lo_i:
            continue
        lo, hi = scores[lo_i:hi_i].min(), scores[lo_i:hi_i].max()
        for i in range(lo_i, hi_i):
            part[i] = weights[r] * (1.0 if hi == lo else (scores[i] - lo) / (hi - lo))
    order = np.argsort(rows, kind="mergesort")  # stable: a doc's routes stay in route order, as they are added
    cand = np.empty(n, dtype=np.int64)
    fused = np.empty(n, dtype=np.float64)
    m = -1
    for i in order:
        if m < 0 or rows[i] != cand[m]:
            m += 1
            cand[m] = rows[i]
            fused[m] = 0.0
        fused[m] += part[i]
    cand, fused = cand[: m + 1], fused[: m + 1]
    best = _ranked(cand, fused, ties, k)
    return cand[best], fused[best]


def warm() -> float:
    """Compile (or load from numba's cache) every kernel for the argument types the routes pass, so
    no query pays for it; seconds taken (about 20 the first time, under 1 from the cache). The image
    build runs it (`python -m uniret.retrieval.kernels`)."""
    if not AVAILABLE:
        return 0.0
    import time

    start = time.perf_counter()
    rows, ties = np.arange(3, dtype=np.int64), np.arange(3, dtype=np.int64)
    indptr, indices = np.array([0, 2, 3], dtype=np.int64), np.array([0, 2, 1], dtype=np.int32)
    data, weights = np.ones(3, dtype=np.float32), np.ones(1, dtype=np.float64)
    acc = np.zeros(3, dtype=np.float64)
    for round32 in (False, True):
        postings_top_k(indptr, indices, data, acc, np.array([0], dtype=np.int64), weights, 2, ties, 1.0, round32)
        rescore_rows_top_k(indptr, indices, data, rows[:2], np.array([0], dtype=np.int64), weights, 2, ties, 1.0,
                           round32)
    vectors = np.eye(3, dtype=np.float32)
    rescore_top_k(vectors, vectors[0], rows, 2)
    token_bag(rows, vectors, data)
    feedback_query(vectors[0], vectors, rows, np.ones(3, dtype=np.float64), 2, 0.5)
    fuse_minmax(rows, np.ones(3, dtype=np.float64), rows[:2], weights, 2, ties)
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"numba kernels ready in {warm():.1f} s" if AVAILABLE else "numba is not installed: the numpy paths run")
