"""Serving runs a GIL-bound mode's searches on `serve.gil_searches` threads of their own, first come
first served (E43), or with 0 on the request's own event loop (E86), and the other modes on the shared pool; the static modes and hybrid_fast over a
real bundle are GIL-bound, BM25 and the transformer modes are not."""

from __future__ import annotations

import threading
import time

import pytest

from uniret.retrieval.base import QueryBatch, Searcher
from uniret.serving.app import SearchPools, run_query


class Overlap(Searcher):
    """Records the order of its searches and how many run at once (each holds on a few milliseconds)."""

    def __init__(self, gil_bound: bool):
        self.gil_bound = gil_bound
        self.running = self.most = 0
        self.order: list[str] = []
        self.lock = threading.Lock()

    def search_batch(self, batch: QueryBatch, k: int):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
            self.order.append(batch.texts[0])
        time.sleep(0.005)
        with self.lock:
            self.running -= 1
        return {qid: {"d1": 1.0} for qid in batch.ids}


@pytest.mark.parametrize(("gil_bound", "gil_threads"), [(True, 1), (True, 2), (False, 1)])
def test_gil_bound_searches_queue_for_their_own_threads(gil_bound, gil_threads):
    searcher = Overlap(gil_bound)
    pools = SearchPools(8, gil_threads)
    try:
        pool = pools.for_searcher(searcher)
        futures = [pool.submit(run_query, searcher, f"q{i}", 10) for i in range(48)]
        assert all(f.result() == [("d1", 1.0)] for f in futures)
    finally:
        pools.shutdown()
    assert searcher.most == (gil_threads if gil_bound else 8)
    if gil_bound and gil_threads == 1:
        assert searcher.order == [f"q{i}" for i in range(48)]  # first come, first served


def test_no_gil_threads_leaves_gil_bound_searches_to_the_caller():
    pools = SearchPools(8, 0)
    try:
        assert pools.for_searcher(Overlap(gil_bound=True)) is None
        assert pools.for_searcher(Overlap(gil_bound=False)) is pools.shared
    finally:
        pools.shutdown()


def test_which_modes_of_a_real_bundle_are_gil_bound(tiny_bundle):
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.modes import build_searchers

    bundle = open_bundle(tiny_bundle)
    modes = ["bm25", "dense", "lexical", "hybrid_bm25", "dense_static", "lexical_static", "hybrid_fast"]
    searchers = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, modes=modes)
    assert {m for m, s in searchers.items() if s.gil_bound} == {"dense_static", "lexical_static", "hybrid_fast"}
