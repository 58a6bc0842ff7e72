"""A fake Kubeflow Pipelines API server (KFP v2beta1 REST) on 127.0.0.1 for submit/schedule tests.

It implements just what kfp.Client calls: healthz, experiments (list by name, create), pipelines
(list by name, upload, upload_version), runs and recurringruns (create), and records every
request so tests can assert what reached the server. No Kubeflow can run here; this is the
only mock of the Kubeflow tests.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from email import policy
from email.parser import BytesParser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

API = "/apis/v2beta1"


@dataclass
class Recorded:
    method: str
    path: str
    query: dict[str, str]
    json: Any = None
    files: dict[str, bytes] = field(default_factory=dict)


@dataclass
class FakeKfp:
    url: str
    requests: list[Recorded] = field(default_factory=list)
    experiments: dict[str, dict] = field(default_factory=dict)  # by display name
    pipelines: dict[str, dict] = field(default_factory=dict)  # by display name

    def calls(self, method: str, path: str) -> list[Recorded]:
        return [r for r in self.requests if r.method == method and r.path == API + path]


def _multipart(content_type: str, body: bytes) -> dict[str, bytes]:
    msg = BytesParser(policy=policy.default).parsebytes(b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body)
    return {part.get_param("name", header="content-disposition"): part.get_payload(decode=True)
            for part in msg.iter_parts()}


def _by_name(query: dict[str, str], store: dict[str, dict], key: str) -> dict:
    predicates = json.loads(query.get("filter") or "{}").get("predicates") or []
    names = [p.get("stringValue") for p in predicates if p.get("key") == "display_name"]
    found = [store[n] for n in names if n in store]
    return {key: found, "total_size": len(found)} if found else {}


def _handler(state: FakeKfp) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:  # keep test output clean
            pass

        def _reply(self, payload: dict, status: int = 200) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _record(self) -> Recorded:
            url = urlparse(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            rec = Recorded(self.command, url.path, query)
            ctype = self.headers.get("Content-Type") or ""
            if ctype.startswith("multipart/"):
                rec.files = _multipart(ctype, body)
            elif body:
                rec.json = json.loads(body)
            state.requests.append(rec)
            return rec

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            rec = self._record()
            if rec.path == f"{API}/healthz":
                return self._reply({"multi_user": False, "commit_sha": "fake", "tag_name": "2.5.0"})
            if rec.path == f"{API}/experiments":
                return self._reply(_by_name(rec.query, state.experiments, "experiments"))
            if rec.path == f"{API}/pipelines":
                return self._reply(_by_name(rec.query, state.pipelines, "pipelines"))
            return self._reply({"error": f"not faked: GET {rec.path}"}, 404)

        def do_POST(self) -> None:  # noqa: N802
            rec = self._record()
            n = len(state.requests)
            if rec.path == f"{API}/experiments":
                exp = {**rec.json, "experiment_id": f"exp-{n}"}
                state.experiments[exp["display_name"]] = exp
                return self._reply(exp)
            if rec.path == f"{API}/pipelines/upload":
                pipe = {"pipeline_id": f"pipe-{n}", "display_name": rec.query["name"]}
                state.pipelines[pipe["display_name"]] = pipe
                return self._reply(pipe)
            if rec.path == f"{API}/pipelines/upload_version":
                return self._reply({"pipeline_id": rec.query["pipelineid"], "pipeline_version_id": f"ver-{n}",
                                    "display_name": rec.query["name"]})
            if rec.path == f"{API}/runs":
                return self._reply({**rec.json, "run_id": f"run-{n}", "state": "PENDING"})
            if rec.path == f"{API}/recurringruns":
                return self._reply({**rec.json, "recurring_run_id": f"job-{n}", "status": "ENABLED"})
            return self._reply({"error": f"not faked: POST {rec.path}"}, 404)

    return Handler


@pytest.fixture
def fake_kfp():
    """A running fake KFP API server on a random 127.0.0.1 port; yields its state."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state := FakeKfp(url="")))
    state.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
