"""UBI logging on a real `uniret serve` (uvicorn on 127.0.0.1) with a real HTTP client: query
records in the right day file, events accepted and written, every hostile request a clear 4xx with
no valid record lost, and searches that never fail when the log folder is unwritable."""

from __future__ import annotations

import http.client
import json
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import yaml

from uniret.bench.http_client import get_json, post_json
from uniret.bench.server import LOOPBACK, LocalServer
from uniret.ubi import EVENTS, QUERIES, iter_records, utc_timestamp

STARTUP_TIMEOUT_S = 300.0
RATE = {"events_per_s": 1.0, "events_burst": 20, "max_events_per_batch": 5, "max_clock_skew_s": 60.0}


def _params(repo_root: Path, folder: Path, log_dir: Path) -> Path:
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["feedback"] = {**raw["feedback"], "log_dir": str(log_dir), **RATE}
    path = folder / "params.yaml"
    path.write_text(yaml.safe_dump(raw, sort_keys=False))
    return path


def _server(tiny_bundle, repo_root, tmp_path_factory, log_dir_of):
    folder = tmp_path_factory.mktemp("ubi-serve")
    log_dir = log_dir_of(folder)
    server = LocalServer(["--bundle", str(tiny_bundle)], _params(repo_root, folder, log_dir), "tiny", log_dir=folder)
    server.start(STARTUP_TIMEOUT_S)
    return server, log_dir


@pytest.fixture(scope="module")
def logged(tiny_bundle, repo_root, tmp_path_factory):
    server, log_dir = _server(tiny_bundle, repo_root, tmp_path_factory, lambda f: f / "logs")
    try:
        yield server, log_dir
    finally:
        server.stop()


def _today() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%d")


def _lines(log_dir: Path, kind: str) -> list[dict]:
    days = sorted(p.name for p in (log_dir / kind).iterdir()) if (log_dir / kind).is_dir() else []
    return [ln.record for d in days for ln in iter_records(log_dir, kind, d)]


def _logged(server: LocalServer, kind: str) -> float:
    """Records of `kind` the server's writer has written so far (/metrics; the module's tests share it)."""
    text = get_json(LOOPBACK, server.port, "/metrics")[1]
    m = re.search(rf'uniret_ubi_records_logged_total{{kind="{kind}"}} (\S+)', str(text))
    return float(m.group(1)) if m else 0.0


def _wait_written(server: LocalServer, kind: str, at_least: int, since: float = 0.0) -> None:
    """The writer thread works in the background: wait until /metrics counts `at_least` records written
    after `since` (the count before this test's records: the server is shared by the module)."""
    import time

    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if _logged(server, kind) - since >= at_least:
            return
        time.sleep(0.05)
    raise AssertionError(f"fewer than {at_least} {kind} records written in 30 s")


def _event(query_id, client, doc, ordinal, action="click", **over) -> dict:
    return {"action_name": action, "query_id": query_id, "client_id": client, "timestamp": utc_timestamp(),
            "event_attributes": {"object": {"object_id": doc, "object_id_field": "doc_id"},
                                 "position": {"ordinal": ordinal}}, **over}


def _search(server, **body) -> dict:
    status, answer = post_json(LOOPBACK, server.port, "/search", {"query": "cancer cells proliferation", "k": 5, **body})
    assert status == 200, answer
    return answer


def test_search_record_lands_in_today_file_with_hits_in_order(logged):
    server, log_dir = logged
    before = _logged(server, QUERIES)
    mine = _search(server, query_id="qid-fixed-1", client_id="alice")
    generated = _search(server)
    assert mine["query_id"] == "qid-fixed-1"
    assert re.fullmatch(r"[0-9a-f-]{36}", generated["query_id"])
    _wait_written(server, QUERIES, 2, since=before)
    files = list((log_dir / QUERIES / _today()).glob("*.jsonl"))
    assert len(files) == 1
    by_id = {r["query_id"]: r for r in _lines(log_dir, QUERIES)}
    rec = by_id["qid-fixed-1"]
    assert rec["client_id"] == "alice" and rec["user_query"] == "cancer cells proliferation"
    assert rec["query_response_hit_ids"] == [h["doc_id"] for h in mine["results"]]
    assert rec["query_attributes"] == {"bundle_version": mine["version"], "mode": mine["mode"], "k": 5}
    assert rec["timestamp"].startswith(_today()) and rec["timestamp"].endswith("Z")
    assert by_id[generated["query_id"]]["client_id"] == "anonymous"


def test_events_single_and_batch_are_written(logged):
    server, log_dir = logged
    before = _logged(server, EVENTS)
    answer = _search(server, client_id="bob")
    hits = [h["doc_id"] for h in answer["results"]]
    status, body = post_json(LOOPBACK, server.port, "/events", _event(answer["query_id"], "bob", hits[0], 1))
    assert (status, body) == (200, {"accepted": 1})
    batch = [_event(answer["query_id"], "bob", d, r, "impression") for r, d in enumerate(hits[:4], 1)]
    status, body = post_json(LOOPBACK, server.port, "/events", {"events": batch})
    assert (status, body) == (200, {"accepted": 4})
    _wait_written(server, EVENTS, 5, since=before)
    mine = [e for e in _lines(log_dir, EVENTS) if e["query_id"] == answer["query_id"]]
    assert [(e["action_name"], e["event_attributes"]["position"]["ordinal"]) for e in mine] == \
        [("click", 1)] + [("impression", r) for r in range(1, 5)]


def _raw_post(server, body: bytes) -> tuple[int, dict]:
    conn = http.client.HTTPConnection(LOOPBACK, server.port, timeout=30)
    try:
        conn.request("POST", "/events", body=body, headers={"content-type": "application/json"})
        resp = conn.getresponse()
        return resp.status, json.loads(resp.read() or b"{}")
    finally:
        conn.close()


def test_hostile_input_gets_clear_4xx_and_valid_records_survive(logged):
    server, log_dir = logged
    before = _logged(server, EVENTS)
    answer = _search(server, client_id="carol")
    qid, hits = answer["query_id"], [h["doc_id"] for h in answer["results"]]
    future = utc_timestamp(datetime.now(UTC) + timedelta(hours=2))
    hostile = [
        (b'{"action_name": "click", ', 400, "not valid JSON"),
        (json.dumps(_event(qid, "carol", hits[0], 0)).encode(), 422, "event_attributes.position.ordinal"),
        (json.dumps(_event(qid, "carol", hits[0], "1")).encode(), 422, "event_attributes.position.ordinal"),
        (json.dumps(_event(qid, "carol", hits[0], 99)).encode(), 422, "beyond the 5 hits"),
        (json.dumps(_event(qid, "carol", "no-such-doc", 1)).encode(), 422, "not among the hits"),
        (json.dumps(_event(qid, "carol", hits[0], 1, timestamp=future)).encode(), 422, "in the future"),
        (json.dumps(_event(qid, "carol", hits[0], 1, colour="red")).encode(), 422, "colour: unknown field"),
        (json.dumps({"events": [_event(qid, "carol", hits[0], 1)] * 6}).encode(), 413, "the limit is 5"),
        (json.dumps({"events": []}).encode(), 422, "events: must not be empty"),
        (b"x" * (10 * 1024 * 1024), 413, "request body too large"),
    ]
    valid = []
    for i, (body, status, needle) in enumerate(hostile):
        got, answer_body = _raw_post(server, body)
        assert got == status and needle in answer_body["detail"], (i, got, answer_body)
        ok = _event(qid, "carol", hits[i % len(hits)], i % len(hits) + 1, session_id=f"s{i}")
        assert post_json(LOOPBACK, server.port, "/events", ok)[0] == 200  # interleaved valid events
        valid.append(f"s{i}")
    _wait_written(server, EVENTS, len(valid), since=before)
    written = [e["session_id"] for e in _lines(log_dir, EVENTS) if e.get("session_id", "").startswith("s")
               and e["client_id"] == "carol"]
    assert written == valid  # every valid event, in order; none of the hostile ones
    metrics = get_json(LOOPBACK, server.port, "/metrics")[1]
    assert 'uniret_events_rejected_total{reason="schema"}' in metrics
    assert 'uniret_events_rejected_total{reason="not_shown"}' in metrics


def test_a_flooding_client_gets_429_and_others_do_not(logged):
    server, _ = logged
    answer = _search(server, client_id="flood")
    doc = answer["results"][0]["doc_id"]
    statuses = [post_json(LOOPBACK, server.port, "/events", _event(answer["query_id"], "flood", doc, 1))[0]
                for _ in range(RATE["events_burst"] + 20)]
    assert statuses[0] == 200 and 429 in statuses and set(statuses) == {200, 429}
    status, body = post_json(LOOPBACK, server.port, "/events", _event(answer["query_id"], "flood", doc, 1))
    assert status == 429 and "client_id 'flood'" in body["detail"]
    other = _search(server, client_id="calm")
    assert post_json(LOOPBACK, server.port, "/events", _event(other["query_id"], "calm", other["results"][0]["doc_id"], 1))[0] == 200


def test_unwritable_log_folder_never_fails_a_search(tiny_bundle, repo_root, tmp_path_factory):
    def blocked(folder: Path) -> Path:
        (folder / "file").write_text("a regular file where the log folder's parent should be")
        return folder / "file" / "logs"

    server, _ = _server(tiny_bundle, repo_root, tmp_path_factory, blocked)
    try:
        for i in range(20):
            assert post_json(LOOPBACK, server.port, "/search", {"query": f"cells {i}", "k": 3})[0] == 200
        import time

        deadline, dropped = time.monotonic() + 30, 0.0
        while time.monotonic() < deadline and dropped < 20:
            text = get_json(LOOPBACK, server.port, "/metrics")[1]
            m = re.search(r'uniret_ubi_records_dropped_total{cause="unwritable",kind="ubi_queries"} (\S+)', text)
            dropped = float(m.group(1)) if m else 0.0
            time.sleep(0.05)
        assert dropped == 20
        log_text = server.log_path.read_text()
        assert log_text.count("dropping records (unwritable)") == 1  # logged once, not per record
    finally:
        server.stop()


def test_sigterm_ends_the_server_gracefully_and_every_queued_record_is_written(tiny_bundle, repo_root,
                                                                                tmp_path_factory):
    # the JVM (-Xrs) leaves SIGTERM to uvicorn, whose graceful shutdown closes the writer, which writes what
    # is queued; the JVM's own handler ended the process at once and lost what the writer still held
    server, log_dir = _server(tiny_bundle, repo_root, tmp_path_factory, lambda f: f / "logs")
    ids = []
    try:
        for i in range(20):
            status, answer = post_json(LOOPBACK, server.port, "/search", {"query": f"cells {i}", "k": 3})
            assert status == 200
            ids.append(answer["query_id"])
    finally:
        server.stop()  # SIGTERM right after the last answer, within the writer's linger
    # -15: uvicorn re-raised the signal after its graceful shutdown; 143 was the JVM's handler exiting at once
    assert server.proc.returncode == -15
    assert {r["query_id"] for r in _lines(log_dir, QUERIES)} == set(ids)
