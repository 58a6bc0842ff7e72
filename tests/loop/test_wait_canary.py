"""The loop waits for serving to interleave its canary before the day's users arrive (nights._wait_canary):
an answer that does not say it interleaves, or no answer at all, stops the night instead of logging a day
of production-only searches. A stand-in /admin/canary on 127.0.0.1 gives each answer."""

from __future__ import annotations

import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from uniret.loop.nights import _wait_canary


def _serve(reply: bytes):
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            ok = self.path == "/admin/canary" and self.headers.get("Authorization") == "Bearer t0k"
            self.send_response(200 if ok else 401)
            self.end_headers()
            self.wfile.write(reply if ok else b"unauthorized")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def test_an_interleaving_server_is_waited_for_and_its_answer_returned():
    server = _serve(b'{"status": "c1: interleaved in 100% of searches"}')
    try:
        assert "interleaved in 100%" in _wait_canary(server.server_address[1], "t0k", timeout_s=10)
    finally:
        server.shutdown()


def test_a_server_that_does_not_interleave_stops_the_night():
    server = _serve(b'{"status": "no canary running"}')
    try:
        with pytest.raises(RuntimeError, match="does not interleave the loop's canary: .*no canary running"):
            _wait_canary(server.server_address[1], "t0k", timeout_s=10)
        with pytest.raises(RuntimeError, match="does not interleave"):  # a wrong token: 401
            _wait_canary(server.server_address[1], "wrong", timeout_s=10)
    finally:
        server.shutdown()


def test_no_server_stops_the_night():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(RuntimeError, match="does not interleave"):
        _wait_canary(port, "t0k", timeout_s=5)
