"""`serve.request_timeout_s` over the app itself (FastAPI's TestClient, lifespan run): a search on a pool
slower than the timeout answers 504 naming it, and the server keeps answering; a GIL-bound mode's search on
the event loop (`serve.gil_searches: 0`, E86) is not cut (its fixed depths bound it: docs/serving.md), on a
thread of its own (`gil_searches: 1`) it is. The searchers are stand-ins that sleep; the bundle is the real
tiny bundle, whose checksums the source verifies before the stand-in loader runs."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest
from fastapi.testclient import TestClient

from uniret.config.serving import ServeConfig
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.serving.app import create_app
from uniret.serving.settings import ServingSettings
from uniret.serving.source import BundleSource

TIMEOUT_S = 0.2
SLOW_S = 0.6  # three times the timeout: never mistaken for a slow machine
READY_TIMEOUT_S = 120.0  # hang guard, not a claimed bound


class Sleeper(Searcher):
    """Answers d1 after `delay` seconds (the load's probe too)."""

    def __init__(self, gil_bound: bool, delay: float):
        self.gil_bound, self.delay = gil_bound, delay

    def search_batch(self, batch: QueryBatch, k: int):
        time.sleep(self.delay)
        return {qid: {"d1": 1.0} for qid in batch.ids}


def _client(tiny_bundle, gil_searches: int) -> TestClient:
    serve = replace(ServeConfig(), workers=1, watch_interval_s=0.0, request_timeout_s=TIMEOUT_S,
                    gil_searches=gil_searches)
    settings = ServingSettings(serve=serve, source=BundleSource(bundle=tiny_bundle))
    loader = lambda path: {"bm25": Sleeper(False, SLOW_S), "hybrid_fast": Sleeper(True, SLOW_S)}  # noqa: E731
    return TestClient(create_app(settings, loader=loader))


def _wait_ready(client: TestClient) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while client.get("/readyz").status_code != 200:
        assert time.monotonic() < deadline, "the stand-in bundle never became ready"
        time.sleep(0.05)


@pytest.mark.parametrize(("gil_searches", "fast_status"), [(0, 200), (1, 504)])
def test_a_pool_search_past_the_timeout_answers_504_and_an_event_loop_search_is_not_cut(tiny_bundle, gil_searches,
                                                                                      fast_status):
    with _client(tiny_bundle, gil_searches) as client:
        _wait_ready(client)
        slow = client.post("/search", json={"query": "cells", "mode": "bm25", "k": 1})
        assert slow.status_code == 504 and slow.json()["detail"] == f"search took longer than {TIMEOUT_S:g} s"
        fast = client.post("/search", json={"query": "cells", "mode": "hybrid_fast", "k": 1})
        assert fast.status_code == fast_status, fast.text
        if fast_status == 200:
            assert [hit["doc_id"] for hit in fast.json()["results"]] == ["d1"]
        assert client.get("/healthz").json() == {"status": "ok"}  # still answering after the timeouts
