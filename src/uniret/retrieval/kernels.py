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
FLOOR_STEPS = 24  # most bisection steps of postings_top_k's first bar (E104)
TIE_RUN = 16  # equal scores in a run longer than this are ordered by a sort, not by insertion


def _jit(func=None, **options):
    """Compiled without the GIL, cached on disk (numba's cache: next to this file, else the user's
    cache folder), so a new process loads the machine code instead of compiling it again."""
    if func is None:
        return lambda f: _jit(f, **options)
    return numba.njit(nogil=True, cache=True, **options)(func) if AVAILABLE else func


@_jit
def _ranked(rows, scores, ties, k):  # pragma: no cover - compiled
    """Positions of the k best of `scores`, best first, ties by ascending `ties[rows]`: the order of
    `ranking.top_k_ranked`, whose cut keeps every score equal to the k-th before it sorts. One sort
    by score, then each run of equal scores by tie (numba's sorts cost ~35 ns an element, E104)."""
    n = len(scores)
    if k <= 0:
        return np.arange(0)
    if k < n:
        kth = -np.partition(-scores, k - 1)[k - 1]
        pool = np.flatnonzero(scores >= kth)
    else:
        pool = np.arange(n)
    order = pool[np.argsort(-scores[pool])]
    i = 0
    while i < len(order):
        j = i + 1
        while j < len(order) and scores[order[j]] == scores[order[i]]:
            j += 1
        if j - i > TIE_RUN:
            run = order[i:j]
            order[i:j] = run[np.argsort(ties[rows[run]], kind="mergesort")]
        else:  # a short run: insertion sort by tie
            for a in range(i + 1, j):
                pos, tie = order[a], ties[rows[order[a]]]
                b = a
                while b > i and ties[rows[order[b - 1]]] > tie:
                    order[b] = order[b - 1]
                    b -= 1
                order[b] = pos
        i = j
    return order[:k]


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
def _count_at_least(acc, n, bar):  # pragma: no cover - compiled
    """How many of acc[:n] are >= bar (a loop the compiler vectorises)."""
    c = 0
    for i in range(n):
        c += acc[i] >= bar
    return c


@_jit
def _bisect_floor(x, n, k, lo, hi):  # pragma: no cover - compiled
    """A value in [lo, hi] that at least k of x[:n] reach (lo must be one), held by at most about 2k
    of them where a few bisection steps find it, each one vectorised count."""
    if _count_at_least(x, n, hi) >= k:
        return hi
    for _ in range(FLOOR_STEPS):  # at least k reach lo; fewer than k reach hi
        mid = 0.5 * (lo + hi)
        held = _count_at_least(x, n, mid)
        if held >= k:
            lo = mid
            if held <= 2 * k:
                break
        else:
            hi = mid
    return lo


@_jit
def _block_floor(acc, n, k):  # pragma: no cover - compiled
    """A raw sum that at least k of the positive `acc[:n]` reach, held by at most about 2k of them
    where `_bisect_floor` finds it (0.0, no bar, when k or fewer are positive). Collecting the docs
    above it and sorting them replaces a heap of the k best offered every doc, whose unpredictable
    branches took about 45 us for 5,000 docs at k = 150 (E104)."""
    positives, top = 0, 0.0
    for i in range(n):
        positives += acc[i] > 0.0
        top = max(top, acc[i])
    if positives <= k or k <= 0:
        return 0.0
    return _bisect_floor(acc, n, k, 0.0, top)


@_jit
def top_k_scores(scores, k):  # pragma: no cover - compiled
    """(rows, scores) of the k best of one query's scores over every row (a flat dense scan), best
    first, ties by the lower row: `base.top_k_rows` for one row, whose partition and three sorts
    cost about 32 us at 5,000 rows and k = 150 (E104)."""
    n = len(scores)
    k = min(k, n)
    if k <= 0:
        return np.arange(0), scores[:0].copy()
    lo, hi = scores[0], scores[0]
    for i in range(n):
        lo = min(lo, scores[i])
        hi = max(hi, scores[i])
    cand = np.flatnonzero(scores >= _bisect_floor(scores, n, k, np.float64(lo), np.float64(hi)))
    best = cand[_ranked(np.arange(len(cand)), scores[cand], cand, k)]  # ties: the rows themselves
    return best, scores[best]


@_jit
def _keep_best(rows, scores, size, k, ties):  # pragma: no cover - compiled
    """Cut the first `size` (> k) collected hits to the k best, best first, in place; the k-th score,
    the bar every later hit must reach."""
    best = _ranked(rows[:size], scores[:size], ties, k)
    kept_rows, kept_scores = rows[best], scores[best]
    rows[:k], scores[:k] = kept_rows, kept_scores
    return kept_scores[k - 1]


@_jit
def postings_top_k(indptr, indices, data, acc, terms, weights, k, ties, scale, round32):  # pragma: no cover
    """(rows, scores) of the k best docs with a positive score for one query: each doc's sum over
    `terms` (in the given order, as the numpy path adds them) of weight x posting, times `scale`, or
    rounded to float32 (`round32`); best first, ties by `ties` (one rank a doc).

    The corpus is read in blocks of len(`acc`) docs (the caller's float64 scratch, all zero, left
    zero): every term's postings in the block are added into `acc` with no test per posting (E55),
    a block's sums staying in the core's cache. A block's hits are collected above a bar: while fewer
    than k are held, the bar is what k of the block's own sums reach (`_block_floor`); once 2k are
    held they are cut to the k best, whose k-th score is the bar for the blocks after (E104).
    A block with few postings visits them instead of scanning."""
    k = max(k, 0)
    block, n_terms = len(acc), len(terms)
    cur, end, first = np.empty(n_terms, np.int64), np.empty(n_terms, np.int64), np.empty(n_terms, np.int64)
    n_docs = 0  # one past the last doc any of the lists holds: the blocks beyond hold nothing
    for t in range(n_terms):
        cur[t], end[t] = indptr[terms[t]], indptr[terms[t] + 1]
        if end[t] > cur[t]:
            n_docs = max(n_docs, indices[end[t] - 1] + 1)
    # the hits held: under 2k so far, then what a block adds (at most its docs)
    room = 2 * k + min(block, n_docs)
    rows, scores = np.empty(room, np.int64), np.empty(room, np.float64)
    size, bar, ordered = 0, 0.0, False
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
                        if s > 0 and s >= bar and k > 0:
                            rows[size], scores[size] = lo + i, s
                            size += 1
        else:
            if size < k:  # too few held to bar anything: what k of this block's sums reach
                bar = max(bar, _final(_block_floor(acc, hi - lo, k), scale, round32))
            raw = _raw_bar(bar, scale, round32)
            for i in range(hi - lo):
                if acc[i] >= raw and acc[i] != 0.0 and k > 0:
                    s = _final(acc[i], scale, round32)
                    if s >= bar and s > 0:
                        rows[size], scores[size] = lo + i, s
                        size += 1
            acc[: hi - lo] = 0.0
        ordered = size >= 2 * k > 0
        if ordered:  # cut to the k best: their k-th score bars the blocks after
            bar, size = _keep_best(rows, scores, size, k, ties), k
    rows, scores = rows[:size], scores[:size]
    if ordered:
        return rows.copy(), scores.copy()
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
def fuse_minmax(rows, scores, bounds, weights, k, ties, slot):  # pragma: no cover - compiled
    """(rows, fused scores) of one query's k best: route r's hits are rows/scores[bounds[r]:bounds[r + 1]];
    each route's scores min-max normalised (all equal: 1) and weighted, a doc missing from a route
    gets 0 from it; the arithmetic and order of `fusion.interpolate`. Ties by ascending `ties`.
    The hits are merged through `slot` (the caller's scratch, one entry a corpus row, all -1, left
    -1): a doc's position among the candidates, so the work is the routes' depth, not the corpus
    (E54), and no sort of the hits (E104). A doc's parts are added in route order."""
    n = len(rows)
    cand = np.empty(n, dtype=np.int64)
    fused = np.empty(n, dtype=np.float64)
    m = 0
    for r in range(len(weights)):
        lo_i, hi_i = bounds[r], bounds[r + 1]
        if hi_i == lo_i:
            continue
        lo, hi = scores[lo_i:hi_i].min(), scores[lo_i:hi_i].max()
        for i in range(lo_i, hi_i):
            j = slot[rows[i]]
            if j < 0:
                j = m
                slot[rows[i]] = m
                cand[m], fused[m] = rows[i], 0.0
                m += 1
            fused[j] += weights[r] * (1.0 if hi == lo else (scores[i] - lo) / (hi - lo))
    for j in range(m):
        slot[cand[j]] = -1
    cand, fused = cand[:m], fused[:m]
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
    fuse_minmax(rows, np.ones(3, dtype=np.float64), rows[:2], weights, 2, ties, np.full(3, -1, dtype=np.int64))
    return time.perf_counter() - start


if __name__ == "__main__":
    print(f"numba kernels ready in {warm():.1f} s" if AVAILABLE else "numba is not installed: the numpy paths run")
