"""Hybrid retrieval by fusing runs: min-max normalised interpolation, and reciprocal rank fusion.

- interpolation: per query, each run's scores are min-max normalised to [0, 1]; a document
  missing from a run gets 0 from it; score = sum_i w_i * norm_i(d). With two runs the weights are
  (alpha, 1 - alpha); with more, equal.
- RRF (Cormack et al. 2009): score = sum_i 1 / (k + rank_i(d)), rank starting at 1; a document
  missing from a run gets nothing from it.

A fusion with fixed depths (hybrid_fast: its cut is its latency budget) asked for more documents
than its cut fuses the cut as always for the head of its list, then continues it with the same
fusion of the runs taken to k (`extend_below`): the head, and so nDCG@10, is unchanged, and a
reranker reading the top 1,000 gets 1,000 documents (issue 58: recall@1000 was below BM25's).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from uniret.core.runs import Run, ranked
from uniret.retrieval import kernels
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.feedback import feedback_key
from uniret.retrieval.ranking import hits_dict, tie_ranks, top_k_ranked

TAIL_GAP = 1e-6  # a deep list's tail starts this far below its head's lowest score


def minmax(scores: dict[str, float]) -> dict[str, float]:
    """Scores rescaled to [0, 1]; when all scores are equal every document gets 1."""
    if not scores:
        return {}
    lo, hi = min(scores.values()), max(scores.values())
    if hi == lo:
        return dict.fromkeys(scores, 1.0)
    return {d: (s - lo) / (hi - lo) for d, s in scores.items()}


def interpolate(runs: Sequence[Run], weights: Sequence[float], k: int | None = None) -> Run:
    """Weighted sum of min-max normalised runs, top-k per query."""
    if len(runs) != len(weights):
        raise ValueError(f"{len(runs)} runs but {len(weights)} weights")
    out: Run = {}
    for qid in sorted({q for run in runs for q in run}):
        fused: dict[str, float] = {}
        for run, weight in zip(runs, weights, strict=True):
            for did, s in minmax(run.get(qid, {})).items():
                fused[did] = fused.get(did, 0.0) + weight * s
        out[qid] = dict(ranked(fused, k))
    return out


def extend_below(head: dict[str, float], tail: dict[str, float], k: int) -> dict[str, float]:
    """`head` (doc -> score, best first) continued to k documents by `tail`'s others, in `tail`'s
    order, their scores shifted below the head's lowest so that the list stays sorted (a tail score
    compares with other tail scores only)."""
    rest = [(d, s) for d, s in ranked(tail) if d not in head][: max(k - len(head), 0)]
    if not rest:
        return dict(head)
    shift = min(head.values(), default=rest[0][1]) - rest[0][1] - TAIL_GAP
    return {**head, **{d: s + shift for d, s in rest}}


def _cut(run: Run, depth: int) -> Run:
    """Each query's best `depth` documents of `run`."""
    return {qid: dict(ranked(hits, depth)) for qid, hits in run.items()}


def reciprocal_rank(runs: Sequence[Run], rrf_k: int, k: int | None = None) -> Run:
    """Reciprocal rank fusion of `runs`, top-k per query."""
    out: Run = {}
    for qid in sorted({q for run in runs for q in run}):
        fused: dict[str, float] = {}
        for run in runs:
            for rank, (did, _) in enumerate(ranked(run.get(qid, {})), start=1):
                fused[did] = fused.get(did, 0.0) + 1.0 / (rrf_k + rank)
        out[qid] = dict(ranked(fused, k))
    return out


# The Lucene routes of an array fusion (`Searcher.uses_jvm`: pyjnius releases the GIL during a Java
# call) run here, beside the caller's in-process routes, so a fusion's latency is about its slowest
# route, not the sum; a faiss/numpy route on a worker was slower (E38). Workers only run leaf
# searches, never work waiting on this pool.
_ROUTES = ThreadPoolExecutor(max_workers=2, thread_name_prefix="uniret-route")


def fusion_weights(n_runs: int, alpha: float) -> list[float]:
    """(alpha, 1 - alpha) for two runs, equal weights otherwise."""
    return [alpha, 1.0 - alpha] if n_runs == 2 else [1.0 / n_runs] * n_runs


class FusionSearcher(Searcher):
    """Fuses the runs of other searchers (each taken to `depth`): `hybrid` or `rrf`."""

    def __init__(self, searchers: Sequence[Searcher], method: str, depth: int | Sequence[int], alpha: float = 0.5,
                 rrf_k: int = 60, weights: Sequence[float] | None = None, fixed_depths: bool = False,
                 parallel: bool = False):
        """`depth`: docs taken from every run, or one depth per run (e.g. a shorter BM25 run); `parallel`:
        an array fusion runs every route that no other route reads on a worker thread too, not only
        the Lucene ones (a large corpus, whose compiled routes hold no GIL: retrieval.pruning, E54)."""
        if method not in ("hybrid", "rrf"):
            raise ValueError(f"unknown fusion method {method!r}; use hybrid or rrf")
        if weights is not None and len(weights) != len(searchers):
            raise ValueError(f"{len(searchers)} runs to fuse but {len(weights)} weights")
        self.searchers = list(searchers)
        self.mode = method
        self.method = method
        self.depths = [depth] * len(self.searchers) if isinstance(depth, int) else list(depth)
        if len(self.depths) != len(self.searchers):
            raise ValueError(f"{len(searchers)} runs to fuse but {len(self.depths)} depths")
        self.fixed_depths = fixed_depths
        self.parallel = parallel
        self.alpha = alpha
        self.rrf_k = rrf_k
        # learned weights (index stage, dev split) win over params' alpha / equal weights
        self.weights = list(weights) if weights is not None else fusion_weights(len(self.searchers), alpha)
        # encode once for all parts: take the first encoder any part needs
        self.encoder = next((s.encoder for s in self.searchers if s.encoder is not None), None)
        self.uses_jvm = any(s.uses_jvm for s in self.searchers)
        self.gil_bound = all(s.gil_bound for s in self.searchers)
        # array path: every part returns rows into the same doc id list (dense + in-memory lexical)
        first = self.searchers[0]
        self.docids = getattr(first, "docids", None)
        self.on_arrays = self.docids is not None and all(
            s.has_arrays and getattr(s, "docids", None) == self.docids for s in self.searchers
        )
        self.ties = tie_ranks(self.docids) if self.on_arrays else None
        self._scratch = threading.local()  # each serving thread's fusion slots (_slots)
        # the routes an array fusion hands to worker threads: the Lucene ones (with `parallel`, every one
        # no other route reads) that read no other's hits, the last route always left to the caller
        read = [self._reads_route(s) for s in self.searchers]
        self.away = [i for i, s in enumerate(self.searchers) if read[i] is None
                     and (s.uses_jvm or parallel and all(r is not s for r in read))][: len(self.searchers) - 1]

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        # each run to its own depth, so a fused top-10 is the prefix of the fused top-1000 that
        # evaluation scores; only when no run reaches k are they all taken to k. Fixed depths
        # (hybrid_fast's cut is its latency budget): the cut's fusion heads the list whatever k, and
        # a k beyond every cut continues it with the fusion of the runs taken to k (extend_below)
        deeper = max(self.depths) < k
        depths = [max(d, k) for d in self.depths] if deeper else self.depths
        tail = deeper and self.fixed_depths
        if self.on_arrays:
            hits = self._route_arrays(batch, depths)
            out = {}
            for i, qid in enumerate(batch.ids):
                parts = [h[i] for h in hits]
                if not tail:
                    out[qid] = self._fuse_arrays(parts, k)
                    continue
                cut = [self._best(rows, scores, d) for (rows, scores), d in zip(parts, self.depths, strict=True)]
                out[qid] = extend_below(self._fuse_arrays(cut, k), self._fuse_arrays(parts, k), k)
            return out
        runs = []
        for searcher, depth in zip(self.searchers, depths, strict=True):
            source = self._reads_route(searcher)
            if source is not None:
                batch.extra[feedback_key(source)] = runs[self.searchers.index(source)]
            runs.append(searcher.search_batch(batch, depth))
        if not tail:
            return self._fuse_runs(runs, k)
        head = self._fuse_runs([_cut(run, d) for run, d in zip(runs, self.depths, strict=True)], k)
        deep = self._fuse_runs(runs, k)
        return {qid: extend_below(head.get(qid, {}), deep.get(qid, {}), k) for qid in deep.keys() | head.keys()}

    def _best(self, rows: np.ndarray, scores: np.ndarray, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """A route's best `depth` hits, in `ranked` order (score, then doc id)."""
        order = np.lexsort((self.ties[rows], -scores))[:depth]
        return rows[order], scores[order]

    def _fuse_runs(self, runs: Sequence[Run], k: int) -> Run:
        """The fusion of whole runs (the dict path)."""
        if self.method == "rrf":
            return reciprocal_rank(runs, self.rrf_k, k)
        return interpolate(runs, self.weights, k)

    def _route_arrays(self, batch: QueryBatch, depths: list[int]) -> list[list[tuple[np.ndarray, np.ndarray]]]:
        """Every route's hits as arrays: the Lucene routes (with `parallel`, every route no other reads)
        on worker threads while the caller runs the others, each route with its encodings (the
        last route stays with the caller when all would go). Same results, in the same order, as running
        them one after the other. A route that reads another's hits (`dense_feedback` reads BM25's)
        finds them in the batch."""
        pairs = list(zip(self.searchers, depths, strict=True))
        # no encoding ahead of the routes: each encodes when it first needs to, so the static encoding
        # is made on the worker while the caller's BM25 route, which needs none, runs (E55)
        pending = {i: _ROUTES.submit(pairs[i][0].search_arrays, batch, pairs[i][1]) for i in self.away}
        hits: dict[int, list[tuple[np.ndarray, np.ndarray]]] = {}
        for i, (searcher, depth) in enumerate(pairs):
            source = self._reads_route(searcher)
            if source is not None:  # hand the source route's hits over (waiting for a worker's)
                j = self.searchers.index(source)
                batch.extra[feedback_key(source)] = hits[j] if j in hits else pending[j].result()
            if i not in pending:
                hits[i] = searcher.search_arrays(batch, depth)
        return [pending[i].result() if i in pending else hits[i] for i in range(len(pairs))]

    def _reads_route(self, searcher: Searcher) -> Searcher | None:
        """The fused route whose hits `searcher` reads, when it runs before it; else None."""
        source = getattr(searcher, "source", None)
        if source is None or source not in self.searchers:
            return None
        return source if self.searchers.index(source) < self.searchers.index(searcher) else None

    def _slots(self) -> np.ndarray:
        """This thread's scratch for kernels.fuse_minmax: one entry a doc (8 MB a thread at 1M docs), all -1 between queries."""
        slots = getattr(self._scratch, "slots", None)
        if slots is None:
            slots = self._scratch.slots = np.full(len(self.docids), -1, dtype=np.int64)
        return slots

    def _fuse_arrays(self, parts: list[tuple[np.ndarray, np.ndarray]], k: int) -> dict[str, float]:
        """One query's fusion on arrays: the same arithmetic, in the same order, as `interpolate` /
        `reciprocal_rank` on dicts, so both paths give identical runs."""
        if self.method == "hybrid" and kernels.AVAILABLE:  # one compiled call (E44)
            bounds = np.cumsum([0] + [len(rows) for rows, _ in parts])
            best, fused = kernels.fuse_minmax(
                np.concatenate([rows for rows, _ in parts]).astype(np.int64),
                np.concatenate([scores for _, scores in parts]).astype(np.float64),
                bounds, np.asarray(self.weights, dtype=np.float64), k, self.ties, self._slots())
            return hits_dict(self.docids, best, fused)
        total = np.zeros(len(self.docids), dtype=np.float64)
        seen = np.zeros(len(self.docids), dtype=bool)
        for (rows, scores), weight in zip(parts, self.weights, strict=True):
            if self.method == "rrf":
                order = np.lexsort((self.ties[rows], -scores))  # `ranked` order: score, then doc id
                ranks = np.empty(len(rows), dtype=np.float64)
                ranks[order] = np.arange(1, len(rows) + 1)
                total[rows] += 1.0 / (self.rrf_k + ranks)
            elif len(rows):
                lo, hi = scores.min(), scores.max()
                norm = np.ones_like(scores) if hi == lo else (scores - lo) / (hi - lo)
                total[rows] += weight * norm
            seen[rows] = True
        cand = np.flatnonzero(seen)
        best = cand[top_k_ranked(total[cand], k, self.ties[cand])]
        return hits_dict(self.docids, best, total[best])
