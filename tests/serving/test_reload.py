"""Hot reload on a real uvicorn: no failed request while the bundle is swapped under load, and a
corrupt bundle is refused while the old one keeps serving."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from uniret.bench.http_client import get_json, post_json, run_load
from uniret.registry.integrity import write_checksums

CLIENTS = 16
RELOADS = 4  # v2, v1, v2, v1 ... alternating production versions
MAX_REQUESTS = 5000  # bound of the load run (it normally stops earlier: when the reloads are done)
MAX_SECONDS = 240.0
QUERY = "cancer cells proliferation"


def _live_version(served) -> str:
    return get_json(*served.addr, "/readyz")[1]["bundle"]["version"]


def _answers(served, modes=("uni", "bm25", "dense")) -> dict:
    out = {}
    for mode in modes:
        status, body = post_json(*served.addr, "/search", {"query": QUERY, "mode": mode, "k": 10})
        assert status == 200, body
        out[mode] = [(h["doc_id"], h["score"]) for h in body["results"]]
    return out


@pytest.mark.slow
def test_reloads_under_16_clients_fail_no_request(served):
    start_version = _live_version(served)
    other = "v2" if start_version == "v1" else "v1"
    stop = threading.Event()
    result_box = {}
    modes = ["uni", "bm25", "dense", "lexical", "hybrid"]

    def load() -> None:
        result_box["r"] = run_load(
            *served.addr, CLIENTS, lambda i: {"query": f"{QUERY} {i % 7}", "mode": modes[i % len(modes)], "k": 10},
            MAX_REQUESTS, MAX_SECONDS, stop=stop, after_stop=1,
        )

    loader = threading.Thread(target=load)
    loader.start()
    reloads = []
    try:
        version = start_version
        for _ in range(RELOADS):
            version = other if version == start_version else start_version
            served.promote(version)
            reloads.append(post_json(*served.addr, "/admin/reload", {"version": version}, served.auth))
    finally:
        stop.set()
        loader.join()
    result = result_box["r"]

    assert [s for s, _ in reloads] == [200] * RELOADS, reloads
    assert result.errors == []
    assert result.failed == 0 and len(result.statuses) >= CLIENTS
    assert set(result.versions) <= {"v1", "v2"}
    # every client's last request began after the last swap: all of them see the final version
    assert result.per_client_last_version == [version] * CLIENTS
    assert _live_version(served) == version


def _corrupt_copies(served, tiny_bundle) -> dict[str, Path]:
    """Bundles that look like bundles but cannot serve: a garbage ONNX graph, a truncated doc-id map.

    Their checksums are recorded after the damage (as if published broken), so it is the load and
    the probe that must refuse them; tests/serving/test_confinement.py covers damage after publishing.
    """
    bad_onnx = served.publish_copy(tiny_bundle, "bad-onnx")
    (bad_onnx / "onnx" / "query.onnx").write_bytes(b"this is not an onnx graph")
    bad_ids = served.publish_copy(tiny_bundle, "bad-docids")
    (bad_ids / "docids.json").write_text('["only-half-a-list", ')
    for path in (bad_onnx, bad_ids):
        write_checksums(path)
    return {"bad-onnx": bad_onnx, "bad-docids": bad_ids}


def test_corrupt_bundle_reload_is_refused_and_the_old_bundle_keeps_serving(served, tiny_bundle):
    before_version = _live_version(served)
    before = _answers(served)
    for name, path in _corrupt_copies(served, tiny_bundle).items():
        status, reply = post_json(*served.addr, "/admin/reload", {"bundle": str(path)}, served.auth)
        assert status == 422, reply
        # the bundle named relative to the registry, never where the server keeps it (issue 43)
        relative = path.relative_to(served.registry).as_posix()
        assert "reload failed" in reply["detail"] and relative in reply["detail"], (name, reply)
        assert str(served.registry) not in reply["detail"], reply
        assert f"still serving {before_version}" in reply["detail"]
        assert _live_version(served) == before_version
        assert _answers(served) == before
    missing = served.registry / "bundles" / "does-not-exist"
    status, reply = post_json(*served.addr, "/admin/reload", {"bundle": str(missing)}, served.auth)
    assert status == 409 and "does-not-exist" in reply["detail"]
    assert _live_version(served) == before_version
