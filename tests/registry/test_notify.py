"""Reload notification against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from uniret.registry.notify import notify_reload
from uniret.registry.pointer import read_pointer
from uniret.registry.promotion import Serving, promote

TOKEN = "s3cret-token"


class _Recorder(BaseHTTPRequestHandler):
    """Accepts POST /admin/reload with the right bearer token; records every call."""

    calls: list[dict] = []
    status_override: int | None = None

    def do_POST(self):  # noqa: N802 - http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        type(self).calls.append({"path": self.path, "auth": self.headers.get("Authorization"), "body": body})
        ok = self.path == "/admin/reload" and self.headers.get("Authorization") == f"Bearer {TOKEN}"
        status = type(self).status_override or (200 if ok else 401)
        self.send_response(status)
        self.end_headers()
        self.wfile.write(b'{"reloaded": true}' if status == 200 else b'{"detail": "no"}')

    def log_message(self, *args):  # keep test output quiet
        pass


@pytest.fixture
def server():
    handler = type("Handler", (_Recorder,), {"calls": [], "status_override": None})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", handler
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_reload_call_carries_the_bearer_token(server):
    url, handler = server
    result = notify_reload(url, TOKEN, "v7", timeout_s=5)
    assert result.status == "ok" and result.http_status == 200
    assert len(handler.calls) == 1
    call = handler.calls[0]
    assert call["path"] == "/admin/reload" and call["auth"] == f"Bearer {TOKEN}"
    assert json.loads(call["body"]) == {"version": "v7"}


def test_rejected_token_is_reported_as_failed(server):
    url, handler = server
    result = notify_reload(url + "/", "wrong", "v7", timeout_s=5)
    assert result.status == "failed" and result.http_status == 401 and "401" in result.detail
    assert handler.calls[0]["path"] == "/admin/reload"  # trailing slash of the URL is not doubled


def test_missing_url_or_token_is_skipped_not_failed():
    assert notify_reload(None, TOKEN, "v1", 5).status == "skipped"
    skipped = notify_reload("http://127.0.0.1:9", None, "v1", 5)
    assert skipped.status == "skipped" and "token" in skipped.detail


def test_promotion_stands_when_the_server_fails(server, tmp_path):
    url, handler = server
    handler.status_override = 500
    src = tmp_path / "bundle"
    src.mkdir()
    (src / "manifest.json").write_text("{}")
    result = promote(tmp_path / "registry", src, evaluation=None, decision={"passed": True}, lineage={},
                     serving=Serving(url, TOKEN, 5), version="v1", dvc_push=False)
    assert result.notify.status == "failed" and result.notify.http_status == 500
    assert read_pointer(tmp_path / "registry")["version"] == "v1"
    assert handler.calls[0]["auth"] == f"Bearer {TOKEN}"


def test_unreachable_server_is_reported(tmp_path):
    # A port nobody listens on: bind one, then close it before the call.
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = notify_reload(f"http://127.0.0.1:{port}", TOKEN, "v1", timeout_s=5)
    assert result.status == "failed" and result.http_status is None and str(port) in result.detail


def test_a_reload_slower_than_the_timeout_is_pending_not_failed():
    """Issue 43: the server got the call and is still loading (a cpu bundle takes minutes under load)."""
    release = threading.Event()

    class Slow(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            release.wait(10)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    try:
        result = notify_reload(f"http://127.0.0.1:{httpd.server_address[1]}", TOKEN, "v9", timeout_s=0.3)
    finally:
        release.set()
        httpd.shutdown()
        httpd.server_close()
    assert result.status == "pending" and "no reply within 0.3 s" in result.detail and "v9" in result.detail
