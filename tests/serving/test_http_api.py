"""The search API over HTTP on a real uvicorn: same answers as in-process search, readiness,
metrics, and a clear 4xx for every kind of bad request."""

from __future__ import annotations

import http.client
import json

import pytest

from uniret.bench.http_client import get_json, post_json
from uniret.core.runs import ranked

QUERIES = ["cancer cells proliferation", "vitamin D deficiency", "protein misfolding"]


@pytest.fixture(scope="session")
def in_process(tiny_bundle):
    """The same bundle's searchers, opened in the test process."""
    from uniret.retrieval.bundle import load_searchers

    return load_searchers(tiny_bundle)


def test_cold_start_is_alive_but_not_ready(served):
    assert served.cold == {"readyz": 503, "search": 503, "healthz": 200}


def test_ready_after_promotion_names_the_bundle(served, in_process):
    status, body = get_json(*served.addr, "/readyz")
    assert status == 200
    assert body["bundle"]["version"] in ("v1", "v2")
    assert sorted(body["bundle"]["modes"]) == sorted(in_process)
    assert body["bundle"]["default_mode"] == "uni"


@pytest.mark.parametrize("query", QUERIES)
def test_http_top10_equals_in_process_search_in_every_mode(served, in_process, query):
    for mode, searcher in in_process.items():
        status, body = post_json(*served.addr, "/search", {"query": query, "mode": mode, "k": 10})
        assert status == 200, body
        expected = ranked(searcher.search({"q": query}, 10)["q"], 10)
        assert body["mode"] == mode and body["k"] == 10 and body["took_ms"] > 0
        assert [h["doc_id"] for h in body["results"]] == [d for d, _ in expected], mode
        assert [h["score"] for h in body["results"]] == pytest.approx([s for _, s in expected], rel=1e-5), mode


def test_mode_defaults_to_the_configured_one(served):
    status, body = post_json(*served.addr, "/search", {"query": QUERIES[0]})
    assert status == 200 and body["mode"] == "uni" and len(body["results"]) == 10  # default_k


@pytest.mark.parametrize(
    ("body", "status", "needle"),
    [
        ({"query": ""}, 422, "query"),
        ({"query": "   "}, 422, "non-whitespace"),
        ({"query": "cells", "k": 0}, 422, "k:"),
        ({"query": "cells", "k": 1001}, 422, "less than or equal to 1000"),
        ({"query": "cells", "k": "ten"}, 422, "k:"),
        ({"query": "x" * 1001}, 422, "query"),
        ({"query": "cells", "mode": "telepathy"}, 400, "this bundle offers"),
        ({"k": 5}, 422, "query"),
        ({"query": "cells", "surprise": 1}, 422, "surprise"),
        ([1, 2], 422, "body"),
    ],
)
def test_bad_search_requests_get_a_clear_4xx(served, body, status, needle):
    got, reply = post_json(*served.addr, "/search", body)
    assert got == status, reply
    assert isinstance(reply["detail"], str) and needle in reply["detail"]


def test_malformed_json_is_400(served):
    status, reply = post_json(*served.addr, "/search", raw=b'{"query": "cells",')
    assert status == 400 and "not valid JSON" in reply["detail"]


def test_oversized_body_is_413_before_parsing(served):
    # 20 kB of valid JSON: above max_body_bytes (16384) though each field alone would be judged by the model
    body = json.dumps({"query": "cells", "pad": "y" * 20_000}).encode()
    status, reply = post_json(*served.addr, "/search", raw=body)
    assert status == 413 and "16384" in reply["detail"]
    # the same without a Content-Length header (chunked transfer): counted as it arrives
    conn = http.client.HTTPConnection(*served.addr, timeout=30)
    try:
        conn.request("POST", "/search", body=iter([body[:10_000], body[10_000:]]),
                     headers={"Content-Type": "application/json"}, encode_chunked=True)
        resp = conn.getresponse()
        assert resp.status == 413 and "16384" in json.loads(resp.read())["detail"]
    finally:
        conn.close()


def test_admin_reload_needs_the_right_bearer_token(served):
    status, reply = post_json(*served.addr, "/admin/reload")
    assert status == 401 and "bearer" in reply["detail"].lower()
    status, reply = post_json(*served.addr, "/admin/reload", headers={"Authorization": "Bearer wrong"})
    assert status == 403 and "invalid admin token" in reply["detail"]
    status, reply = post_json(*served.addr, "/admin/reload", headers={"Authorization": "Basic abc"})
    assert status == 401
    # authentication comes before body validation
    status, reply = post_json(*served.addr, "/admin/reload", raw=b"{not json")
    assert status == 401
    status, reply = post_json(*served.addr, "/admin/reload", {"bundel": "typo"}, served.auth)
    assert status == 422 and "bundel" in reply["detail"]


def test_admin_reload_for_another_version_than_production_is_409(served):
    status, reply = post_json(*served.addr, "/admin/reload", {"version": "v9"}, served.auth)
    assert status == 409 and "v9" in reply["detail"] and "still serving" in reply["detail"]


def test_metrics_count_requests_and_name_the_live_version(served):
    assert post_json(*served.addr, "/search", {"query": QUERIES[1], "mode": "dense", "k": 5})[0] == 200
    conn = http.client.HTTPConnection(*served.addr, timeout=30)
    try:
        conn.request("GET", "/metrics")
        text = conn.getresponse().read().decode()
    finally:
        conn.close()
    live = get_json(*served.addr, "/readyz")[1]["bundle"]["version"]
    assert 'uniret_search_requests_total{mode="dense",status="200"}' in text
    assert 'uniret_search_latency_seconds_bucket{le="0.001",mode="dense",status="200"}' in text
    assert 'uniret_bundle_info{path="' in text and f'version="{live}"}} 1.0' in text
    assert 'uniret_reloads_total{result="ok"}' in text
