"""`uniret serve --engine milvus` on 127.0.0.1 against Milvus Lite on a TCP port (how a cluster is
reached): the same answers as the in-process server, and hot reload by the alias that promotion and
rollback move."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from uniret.bench.http_client import get_json, post_json
from uniret.bench.server import LOOPBACK, LocalServer, free_port
from uniret.config.milvus import MilvusConfig
from uniret.core.errors import EngineError
from uniret.milvus.client import connect
from uniret.milvus.promotion import engine_hook
from uniret.registry.promotion import promote, rollback
from uniret.retrieval.bundle import load_searchers

TOKEN = "milvus-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
STARTUP_TIMEOUT_S = 300.0
QUERY = "cancer cells proliferation"


@pytest.fixture(scope="module")
def lite_server(tmp_path_factory, repo_root):
    """`python -m uniret.milvus.lite_server` on a free port; yields its http URI."""
    port = free_port()
    db = tmp_path_factory.mktemp("lite-server") / "served.db"
    env = {**os.environ, "PYTHONPATH": str(repo_root / "src")}
    proc = subprocess.Popen([sys.executable, "-m", "uniret.milvus.lite_server", "--db", str(db), "--port", str(port)],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    uri = f"http://{LOOPBACK}:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                connect(uri, timeout_s=5).close()
                break
            except EngineError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise
                time.sleep(1)
        yield uri
    finally:
        proc.terminate()
        proc.wait(60)


@pytest.fixture(scope="module")
def served(lite_server, tiny_bundle, second_bundle, tmp_path_factory, repo_root):
    """A registry with the tiny bundle promoted (alias on it), and a Milvus-backed server over it."""
    registry = tmp_path_factory.mktemp("milvus-registry")
    cfg = MilvusConfig(uri=lite_server, export_on_promote=True, insert_batch=64)
    client, on_change = engine_hook(cfg)
    first = promote(registry, tiny_bundle, evaluation=None, decision=None, lineage={}, dvc_push=False,
                    on_change=on_change)
    assert first.engine.startswith("milvus alias"), first.engine
    server = LocalServer(["--registry", str(registry), "--engine", "milvus", "--uri", lite_server],
                         repo_root / "params.yaml", "tiny", env={"UNIRET_ADMIN_TOKEN": TOKEN},
                         log_dir=tmp_path_factory.mktemp("milvus-serve-log"))
    server.start(STARTUP_TIMEOUT_S)
    try:
        yield {"server": server, "registry": registry, "on_change": on_change, "first": first.version,
               "second_bundle": second_bundle}
    finally:
        server.stop()
        client.close()


def _search(port: int, mode: str) -> list[tuple[str, float]]:
    status, body = post_json(LOOPBACK, port, "/search", {"query": QUERY, "mode": mode, "k": 10})
    assert status == 200, body
    return [(h["doc_id"], h["score"]) for h in body["results"]]


def test_the_milvus_server_answers_as_the_in_process_searchers(served, tiny_bundle):
    port = served["server"].port
    status, ready = get_json(LOOPBACK, port, "/readyz")
    assert status == 200 and ready["bundle"]["version"] == served["first"]
    local = load_searchers(tiny_bundle)
    for mode in ("dense", "lexical", "bm25", "hybrid_bm25"):
        ours = sorted(local[mode].search({"q": QUERY}, 10)["q"].items(), key=lambda h: (-h[1], h[0]))
        theirs = _search(port, mode)
        assert [d for d, _ in theirs] == [d for d, _ in ours], mode
        assert all(abs(a - b) <= 1.0001e-4 for (_, a), (_, b) in zip(theirs, ours, strict=True)), mode


def test_promotion_and_rollback_move_the_server_through_the_alias(served):
    port, registry, on_change = served["server"].port, served["registry"], served["on_change"]
    second = promote(registry, served["second_bundle"], evaluation=None, decision=None, lineage={}, dvc_push=False,
                     on_change=on_change)
    status, body = post_json(LOOPBACK, port, "/admin/reload", {}, AUTH)
    assert status == 200 and body["bundle"]["version"] == second.version, body
    assert _search(port, "hybrid_bm25")
    back = rollback(registry, dvc_push=False, on_change=on_change)
    status, body = post_json(LOOPBACK, port, "/admin/reload", {}, AUTH)
    assert status == 200 and body["bundle"]["version"] == back.version == served["first"], body


def test_serve_refuses_an_unreachable_milvus(repo_root, tiny_bundle, tmp_path):
    uri = f"http://{LOOPBACK}:{free_port()}"
    done = subprocess.run([sys.executable, "-m", "uniret", "serve", "--params", str(repo_root / "params.yaml"),
                           "--profile", "tiny", "--bundle", str(tiny_bundle), "--engine", "milvus", "--uri", uri,
                           "--port", str(free_port())],
                          env={**os.environ, "PYTHONPATH": str(repo_root / "src")}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 1, done.stderr[-2000:]
    assert f"uniret serve: error: {uri}: cannot reach Milvus" in done.stderr
