"""A canary on a real `uniret serve` (uvicorn on 127.0.0.1) over a registry with two bundles, a real
HTTP client posting clicks: team draft never shows a document twice and each team's pick is its own
ranking's best remaining document, clicks are credited to the right team, a crash mid-canary leaves
production serving and the canary resumes, `uniret canary decide` promotes (every reply reloads)
and rolls back (production stays, the candidate is dropped and rejected)."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml

from uniret.bench.http_client import get_json, post_json
from uniret.bench.server import LOOPBACK, LocalServer
from uniret.config.canary import CanaryConfig
from uniret.interleaving.from_logs import canary_traffic
from uniret.registry import canary
from uniret.registry.control import read_control
from uniret.registry.integrity import write_checksums
from uniret.registry.pointer import read_pointer
from uniret.registry.promotion import promote
from uniret.ubi import QUERIES, iter_records, utc_timestamp

STARTUP_TIMEOUT_S = 300.0
TOKEN = "canary-admin-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _candidate(tiny_bundle: Path, folder: Path, serve_mode: str, tag: str) -> Path:
    """The tiny bundle whose recipe serves another mode: another ranking by default (same content otherwise)."""
    dest = folder / f"candidate-{tag}"
    shutil.copytree(tiny_bundle, dest)
    manifest = json.loads((dest / "manifest.json").read_text())
    manifest["model"] = {**(manifest.get("model") or {}), "serve_mode": serve_mode}
    manifest["canary_test"] = tag
    (dest / "manifest.json").write_text(json.dumps(manifest))
    write_checksums(dest)
    return dest


class Canary:
    def __init__(self, tiny_bundle: Path, repo_root: Path, folder: Path):
        self.folder = folder
        self.registry = folder / "registry"
        self.log_dir = folder / "logs"
        promote(self.registry, tiny_bundle, evaluation=None, decision=None, lineage={}, version="v1", dvc_push=False)
        raw = yaml.safe_load((repo_root / "params.yaml").read_text())
        raw["feedback"] = {**raw["feedback"], "log_dir": str(self.log_dir), "randpair_share": 0.0}
        raw["serve"] = {**raw["serve"], "watch_interval_s": 0.0}
        raw["registry"] = {**raw["registry"], "root": str(self.registry)}
        self.params = folder / "params.yaml"
        self.params.write_text(yaml.safe_dump(raw, sort_keys=False))
        self.server: LocalServer | None = None

    def start_server(self) -> None:
        self.server = LocalServer(["--registry", str(self.registry)], self.params, "tiny", env={"UNIRET_ADMIN_TOKEN": TOKEN},
                                  log_dir=self.folder)
        self.server.start(STARTUP_TIMEOUT_S)

    def search(self, **body) -> tuple[dict, bool]:
        """The answer and whether the server says it was interleaved."""
        conn = http.client.HTTPConnection(LOOPBACK, self.server.port, timeout=60)
        try:
            conn.request("POST", "/search", json.dumps({"k": 10, **body}), {"Content-Type": "application/json"})
            resp = conn.getresponse()
            answer = json.loads(resp.read())
            assert resp.status == 200, answer
            return answer, resp.getheader("X-Uniret-Canary") == "interleaved"
        finally:
            conn.close()

    def click(self, answer: dict, ranks: list[int]) -> None:
        events = [{"action_name": action, "query_id": answer["query_id"], "client_id": "tester",
                   "timestamp": utc_timestamp(),
                   "event_attributes": {"object": {"object_id": answer["results"][r - 1]["doc_id"],
                                                   "object_id_field": "doc_id"}, "position": {"ordinal": r}}}
                  for action, rs in (("impression", range(1, len(answer["results"]) + 1)), ("click", ranks))
                  for r in rs]
        status, body = post_json(LOOPBACK, self.server.port, "/events", {"events": events})
        assert status == 200, body

    def record(self, query_id: str) -> dict:
        """The UBI query record of an answer (the writer is a background thread: wait for it)."""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            for day in sorted(p.name for p in (self.log_dir / QUERIES).iterdir()) if (self.log_dir / QUERIES).is_dir() else []:
                for line in iter_records(self.log_dir, QUERIES, day):
                    if line.record and line.record.get("query_id") == query_id:
                        return line.record
            time.sleep(0.1)
        raise AssertionError(f"no query record for {query_id} in 30 s")

    def notify(self) -> dict:
        status, body = post_json(LOOPBACK, self.server.port, "/admin/canary", {}, AUTH)
        assert status == 200, body
        return body

    def cli(self, *args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "uniret", "canary", *args, "--params", str(self.params),
                               "--profile", "tiny", "--serve-url", self.server.base_url],
                              env={**os.environ, "UNIRET_ADMIN_TOKEN": TOKEN}, capture_output=True,
                              text=True, timeout=300, cwd=self.folder)


@pytest.fixture(scope="module")
def setup(tiny_bundle, repo_root, tmp_path_factory):
    folder = tmp_path_factory.mktemp("canary")
    c = Canary(tiny_bundle, repo_root, folder)
    c.state = canary.start(c.registry, _candidate(tiny_bundle, folder, "bm25", "a"),
                           CanaryConfig(share=1.0, min_impressions=3, max_hours=1.0), evaluation=None, decision=None,
                           lineage={})
    c.start_server()
    try:
        yield c
    finally:
        c.server.stop()


QUERY = "protein folding in cells"


def _first_unshown(ranking: list[str], shown: list[str]) -> str:
    return next(d for d in ranking if d not in shown)


def test_team_draft_on_the_server_and_clicks_credited_to_teams(setup):
    c = setup
    assert "interleaved in 100% of searches" in c.notify()["status"]
    prod_mode = get_json(LOOPBACK, c.server.port, "/readyz")[1]["bundle"]["default_mode"]
    assert prod_mode != "bm25"
    # a mode named explicitly is that mode on both sides: the same ranking, so the answer is that ranking
    prod = [h["doc_id"] for h in c.search(query=QUERY, mode=prod_mode)[0]["results"]]
    cand = [h["doc_id"] for h in c.search(query=QUERY, mode="bm25")[0]["results"]]
    assert prod != cand
    answer, interleaved = c.search(query=QUERY, query_id="canary-q1", client_id="tester")
    assert interleaved and answer["version"] == "v1"
    docs = [h["doc_id"] for h in answer["results"]]
    assert len(docs) == len(set(docs)) == 10
    mark = c.record("canary-q1")["query_attributes"]
    teams = mark["canary"]["teams"]
    assert mark["interleaved_with"] == c.state["candidate"] and mark["canary"]["id"] == c.state["id"]
    assert sorted(teams) == sorted("p" * 5 + "c" * 5)
    for i, (doc, team) in enumerate(zip(docs, teams, strict=True)):
        assert doc == _first_unshown(prod if team == "p" else cand, docs[:i]), f"position {i + 1}"
    c.click(answer, [1, 2, 3])
    time.sleep(1.0)  # the events reach the log on the writer thread
    (outcome,) = [o for o in canary_traffic(c.log_dir, c.state["id"], c.state["started_at"][:10]).outcomes
                  if o.production_clicks + o.candidate_clicks == 3]
    assert outcome.candidate_clicks == teams[:3].count("c") and outcome.production_clicks == teams[:3].count("p")


def test_a_crash_mid_canary_leaves_production_serving_and_the_canary_resumes(setup):
    c = setup
    c.server.proc.kill()  # no graceful shutdown
    c.server.proc.wait()
    c.server.stop()
    c.start_server()
    answer, _ = c.search(query=QUERY)
    assert answer["version"] == "v1"  # production serves as soon as it is ready, the candidate loading or not
    deadline = time.monotonic() + 120
    while not c.search(query=QUERY)[1]:  # canary.json read again at start-up: the candidate loads after production
        assert time.monotonic() < deadline, "the canary did not resume after the restart"
        time.sleep(0.5)
    assert canary.running(c.registry)["id"] == c.state["id"]


def test_decide_promotes_a_candidate_that_is_not_worse(setup):
    c = setup
    for n in range(4):  # every shown result clicked: each team 5 clicks, a tie, so not worse
        answer, interleaved = c.search(query=f"{QUERY} {n}", client_id="tester")
        assert interleaved
        c.click(answer, list(range(1, 11)))
    time.sleep(1.0)
    done = c.cli("decide", "--out", str(c.folder / "decision"))
    assert done.returncode == 0, done.stdout + done.stderr
    decision = json.loads(done.stdout)
    assert decision["status"] == "promoted" and decision["preference"]["ties"] >= 3
    assert decision["notify"]["status"] == "ok"
    assert read_pointer(c.registry)["version"] == c.state["candidate"]
    assert get_json(LOOPBACK, c.server.port, "/readyz")[1]["bundle"]["version"] == c.state["candidate"]
    assert "promoted" in (c.folder / "decision" / "decision.md").read_text()
    answer, interleaved = c.search(query=QUERY)
    assert not interleaved and answer["version"] == c.state["candidate"]
    metrics = get_json(LOOPBACK, c.server.port, "/metrics")[1]
    assert 'status="promoted"' in str(metrics)


def test_decide_rolls_back_a_candidate_without_evidence_by_its_deadline(setup, tiny_bundle):
    c = setup
    production = read_pointer(c.registry)["version"]
    state = canary.start(c.registry, _candidate(tiny_bundle, c.folder, "bm25", "b"),
                         CanaryConfig(share=1.0, min_impressions=1000, max_hours=1e-6), evaluation=None,
                         decision=None, lineage={})
    assert "interleaved" in c.notify()["status"]
    assert c.search(query=QUERY)[1]
    time.sleep(0.1)
    assert canary.expired(state, datetime.now(UTC))
    done = c.cli("decide")
    assert done.returncode == 3, done.stdout + done.stderr
    decision = json.loads(done.stdout)
    assert decision["status"] == "rolled_back" and "not enough evidence" in decision["reason"]
    assert read_pointer(c.registry)["version"] == production
    assert [r.version for r in read_control(c.registry).rejected.values()] == [state["candidate"]]
    answer, interleaved = c.search(query=QUERY)
    assert not interleaved and answer["version"] == production


def test_a_candidate_that_fails_to_load_leaves_every_search_to_production(setup, tiny_bundle):
    c = setup
    production = read_pointer(c.registry)["version"]
    state = canary.start(c.registry, _candidate(tiny_bundle, c.folder, "bm25", "c"),
                         CanaryConfig(share=1.0, min_impressions=10, max_hours=1.0), evaluation=None, decision=None,
                         lineage={})
    (c.registry / state["candidate_bundle"] / "docids.json").write_text("[]")  # damaged after publication
    assert "failed to load" in c.notify()["status"]
    answer, interleaved = c.search(query=QUERY)
    assert not interleaved and answer["version"] == production and len(answer["results"]) == 10
    assert c.cli("stop", "--reason", "damaged candidate").returncode == 0
    assert canary.read_canary(c.registry)["status"] == "abandoned"


def test_a_failed_candidate_is_not_reloaded_at_every_poll(tmp_path):
    """The pointer watch calls sync() every few seconds: a candidate that failed to load is tried again
    only when asked (POST /admin/canary) or when canary.json names another one."""
    from uniret.serving.canary import CanaryServing
    from uniret.serving.metrics import ServingMetrics

    calls = []

    def loader(path):
        calls.append(path)
        raise OSError("damaged")

    registry = tmp_path / "registry"
    registry.mkdir()
    (registry / "canary.json").write_text(json.dumps({
        "status": "running", "id": "c1", "candidate": "v2", "candidate_bundle": "bundles/v2", "production": "v1",
        "share": 1.0}))
    serving = CanaryServing(registry, loader, "q", None, ServingMetrics())
    assert "failed to load" in serving.sync()
    assert "failed to load" in serving.sync() and len(calls) == 1
    assert serving.draw("v1") is None
    serving.sync(retry=True)
    assert len(calls) == 2


def test_canary_seed_replays_the_interleaving_draws_of_every_app(tiny_bundle, repo_root, tmp_path):
    """canary.seed seeds the draws of each serving process alike (which searches, team draft's coin), so a
    simulation's rerun interleaves the same searches; null leaves them to the OS."""
    from uniret.config import load_params
    from uniret.serving.app import create_app
    from uniret.serving.settings import settings_from_params

    params = tmp_path / "params.yaml"
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    draws = {}
    for name, seed in (("a", 8), ("b", 8), ("c", 9), ("os", None)):
        raw["canary"]["seed"] = seed
        params.write_text(yaml.safe_dump(raw))
        settings = settings_from_params(load_params(params, "tiny"), bundle=str(tiny_bundle))
        assert settings.canary_seed == seed
        serving = create_app(settings, loader=lambda path: {}).state.canary
        serving.plan = {"production": "v1", "share": 0.5}
        docs = [f"d{i}" for i in range(10)]
        draws[name] = [(serving.draw("v1") is not None, serving.interleave([(d, 1.0) for d in docs],
                                                                           [(d, 1.0) for d in docs[::-1]], 10)[1].teams)
                       for _ in range(50)]
    assert draws["a"] == draws["b"] and draws["a"] != draws["c"]
    assert any(d for d, _ in draws["a"]) and not all(d for d, _ in draws["a"])
