"""Serving is confined to the registry (issue 12, finding 3): no reload path, relative with `..` or
absolute, and no production.json entry makes the server serve a bundle that was never published;
refusals do not tell whether a path exists; /readyz and /metrics show no absolute path; a bundle
whose files no longer match the checksums recorded at publication is never served. Also /search
refuses `k: "5"` and `k: true` instead of coercing them (finding 6)."""

from __future__ import annotations

import json
import shutil

import pytest

from uniret.bench.http_client import get_json, post_json

pytestmark = pytest.mark.faults


def _live(served) -> str:
    return get_json(*served.addr, "/readyz")[1]["bundle"]["version"]


@pytest.fixture
def outside(served, tiny_bundle, tmp_path):
    """A loadable bundle that was never published: a copy outside the registry, and one beside it."""
    rogue = tmp_path / "rogue"
    shutil.copytree(tiny_bundle, rogue)
    (rogue / "manifest.json").write_text(json.dumps({**json.loads((rogue / "manifest.json").read_text()),
                                                      "version": "rogue"}))
    beside = served.registry / "unpublished"
    shutil.copytree(rogue, beside, dirs_exist_ok=True)
    yield rogue, beside
    shutil.rmtree(beside, ignore_errors=True)


def test_reload_paths_outside_the_registry_are_refused(served, outside):
    rogue, beside = outside
    before = _live(served)
    rel = f"bundles/../../{rogue.parent.name}/{rogue.name}"
    for given in (str(rogue), rel, "bundles/../unpublished", str(beside), "../" * 12 + str(rogue).lstrip("/")):
        status, reply = post_json(*served.addr, "/admin/reload", {"bundle": given}, served.auth)
        assert status == 409, (given, reply)
        assert "not a published bundle" in reply["detail"], reply
        assert _live(served) == before and _live(served) != "rogue"


def test_refusals_do_not_reveal_whether_a_path_exists(served, outside):
    rogue, _ = outside
    existing = post_json(*served.addr, "/admin/reload", {"bundle": str(rogue)}, served.auth)
    absent = post_json(*served.addr, "/admin/reload", {"bundle": str(rogue) + "-absent"}, served.auth)
    assert existing[0] == absent[0] == 409
    assert existing[1]["detail"].replace(str(rogue), "X") == absent[1]["detail"].replace(str(rogue) + "-absent", "X")


def test_production_pointer_outside_the_registry_is_not_served(served, outside):
    rogue, _ = outside
    before = _live(served)
    pointer = served.registry / "production.json"
    saved = pointer.read_bytes()
    try:
        pointer.write_text(json.dumps({"version": "rogue", "bundle": str(rogue)}))
        status, reply = post_json(*served.addr, "/admin/reload", {}, served.auth)
        assert status == 409 and "not a published bundle" in reply["detail"], reply
        pointer.write_text(json.dumps({"version": "rogue", "bundle": "bundles/../unpublished"}))
        status, reply = post_json(*served.addr, "/admin/reload", {}, served.auth)
        assert status == 409, reply
        assert _live(served) == before
    finally:
        pointer.write_bytes(saved)


def test_readyz_and_metrics_show_no_absolute_path(served):
    _, ready = get_json(*served.addr, "/readyz")
    assert not ready["bundle"]["path"].startswith("/") and ready["bundle"]["path"].startswith("bundles/")
    conn_status, text = get_json(*served.addr, "/metrics")
    assert conn_status == 200
    assert str(served.registry) not in str(text) and 'path="/' not in str(text)


def test_a_published_bundle_changed_after_publication_is_never_served(served, tiny_bundle):
    before = _live(served)
    damaged = served.publish_copy(tiny_bundle, "tampered")
    with (damaged / "docids.json").open("a") as fh:  # still valid JSON? no matter: the checksum differs
        fh.write(" ")
    status, reply = post_json(*served.addr, "/admin/reload", {"bundle": "bundles/tampered"}, served.auth)
    assert status == 422 and "failed verification" in reply["detail"] and "docids.json" in reply["detail"], reply
    assert _live(served) == before


@pytest.mark.parametrize("k", ["5", True, 5.0])
def test_search_k_of_the_wrong_type_is_refused_not_coerced(served, k):
    status, reply = post_json(*served.addr, "/search", {"query": "cells", "k": k})
    assert status == 422 and "k" in reply["detail"], reply


def test_reload_honours_the_expected_version_and_names_no_server_path(served, tiny_bundle):
    """Issue 43: a body's expected version is checked whatever else it names; 409 and 422 replies name
    paths relative to the registry; no API docs route answers (they skip the token and load a CDN)."""
    before = _live(served)
    status, reply = post_json(*served.addr, "/admin/reload", {"bundle": f"bundles/{before}", "version": "other"},
                              served.auth)
    assert status == 409 and f"is version {before!r}, the reload asked for 'other'" in reply["detail"], reply
    damaged = served.publish_copy(tiny_bundle, "tampered-2")
    with (damaged / "docids.json").open("a") as fh:
        fh.write(" ")
    for body in ({"version": "absent"}, {"bundle": "bundles/tampered-2"}):
        status, reply = post_json(*served.addr, "/admin/reload", body, served.auth)
        assert status in (409, 422) and str(served.registry) not in reply["detail"], reply
    assert _live(served) == before
    for route in ("/docs", "/redoc", "/openapi.json"):
        assert get_json(*served.addr, route)[0] == 404, route
