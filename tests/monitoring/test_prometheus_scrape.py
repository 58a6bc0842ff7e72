"""A real Prometheus (Debian's binary, on 127.0.0.1 with a temp config and storage, 1 s scrapes) scrapes a
real `uniret serve` over a registry holding the tiny bundle, loads the alert rules, and its HTTP API
returns the uniret series, evaluates every rule without error and fires the blocked-nightly alert."""

from __future__ import annotations

import json
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest
import yaml

from uniret.bench.http_client import get_json, post_json
from uniret.bench.server import LOOPBACK, LocalServer, free_port
from uniret.config.gate import GateConfig
from uniret.registry.bundles import publish
from uniret.registry.gate import GateInputs, budget_checks
from uniret.registry.nightly_status import record_outcome
from uniret.registry.pointer import point_to, registry_lock
from uniret.serving.state import bundle_serve_mode

RULES = Path(__file__).resolve().parents[2] / "k8s" / "monitoring" / "uniret-alerts.rules.yml"
STARTUP_TIMEOUT_S = 300.0  # hang guards on a loaded machine, not timing assertions
SERIES_TIMEOUT_S = 120.0
BENCH_P95_MS = 7.5


def _decision(mode: str) -> dict:
    """A passed gate decision with the bench p95 of `mode` (the gate's own check), as promote stores it."""
    cfg = GateConfig(candidate_system=mode, latency_mode=mode, max_latency_p95_ms=500.0)
    bench = {"modes": {mode: {"p50_ms": 2.0, "p95_ms": BENCH_P95_MS}, "bm25": {"p50_ms": 1.0, "p95_ms": 3.0}}}
    checks = budget_checks(cfg, GateInputs(metrics={}, bench=bench))
    return {"passed": True, "candidate": mode, "checks": [c.to_dict() for c in checks]}


def _api(port: int, path: str, **query) -> dict:
    status, body = get_json(LOOPBACK, port, f"/api/v1/{path}?{urllib.parse.urlencode(query)}")
    assert status == 200 and body["status"] == "success", body
    return body["data"]


def _wait(what: str, probe, proc: subprocess.Popen, log: Path):
    """Poll `probe()` until it returns something truthy (a hang guard, not a timed assertion)."""
    deadline = time.monotonic() + SERIES_TIMEOUT_S
    while time.monotonic() < deadline:
        assert proc.poll() is None, f"prometheus exited with {proc.returncode}:\n{log.read_text()[-3000:]}"
        try:
            found = probe()
        except OSError:
            found = None
        if found:
            return found
        time.sleep(0.5)
    pytest.fail(f"prometheus: {what} not seen within {SERIES_TIMEOUT_S:g} s:\n{log.read_text()[-3000:]}")


@pytest.fixture
def serving(tiny_bundle, tmp_path, repo_root):
    """`uniret serve` on a registry whose production is the tiny bundle, published with a gate decision,
    after two nightly runs the gate blocked."""
    registry = tmp_path / "registry"
    mode = bundle_serve_mode(tiny_bundle)
    version = publish(registry, tiny_bundle, evaluation=None, decision=_decision(mode), lineage={})
    with registry_lock(registry):
        point_to(registry, version)
    for _ in range(2):
        record_outcome(registry, "blocked", 3, "blocked: beats_baseline: below bm25")
    server = LocalServer(["--registry", str(registry)], repo_root / "params.yaml", "tiny", log_dir=tmp_path)
    with server.start(STARTUP_TIMEOUT_S):
        yield server, version, mode


def test_prometheus_scrapes_uniret_serve(serving, prometheus, tmp_path):
    server, version, mode = serving
    for query in ("cells", "bone density", "vitamin"):
        status, body = post_json(LOOPBACK, server.port, "/search", {"query": query, "k": 3})
        assert status == 200, body
    port = free_port()
    config = {"global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
              "rule_files": [str(RULES)],
              "scrape_configs": [{"job_name": "uniret-serving", "static_configs": [{"targets": [f"{LOOPBACK}:{server.port}"]}]}]}
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    log = tmp_path / "prometheus.log"
    with log.open("w") as out:
        proc = subprocess.Popen([prometheus, f"--config.file={tmp_path / 'prometheus.yml'}",
                                 f"--storage.tsdb.path={tmp_path / 'tsdb'}", f"--web.listen-address={LOOPBACK}:{port}"],
                                stdout=out, stderr=subprocess.STDOUT)
    try:
        _wait("uniret series", lambda: _api(port, "query", query="uniret_search_requests_total")["result"], proc, log)
        names = set(_wait("the operations gauges", lambda: (lambda n: n if "uniret_nightly_blocked_in_row" in n else None)(
            {s["__name__"] for s in _api(port, "series", **{"match[]": '{__name__=~"uniret_.+"}'})}), proc, log))
        assert {"uniret_search_requests_total", "uniret_search_latency_seconds_bucket", "uniret_reloads_total",
                "uniret_bundle_info", "uniret_bundle_is_production", "uniret_bundle_bench_p95_seconds",
                "uniret_bundle_published_timestamp_seconds", "uniret_production_promoted_timestamp_seconds",
                "uniret_nightly_blocked_in_row", "uniret_nightly_last_outcome", "uniret_nightly_runs_total",
                "uniret_registry_read_ok", "uniret_registry_paused", "uniret_search_inflight"} <= names

        def value(query: str) -> dict[str, float]:
            return {json.dumps(r["metric"], sort_keys=True): float(r["value"][1])
                    for r in _api(port, "query", query=query)["result"]}

        assert list(value('up{job="uniret-serving"}').values()) == [1.0]
        assert list(value("uniret_bundle_is_production").values()) == [1.0]
        (labels,) = value("uniret_bundle_info")
        assert json.loads(labels)["version"] == version
        assert list(value(f'uniret_bundle_bench_p95_seconds{{mode="{mode}"}}').values()) == [BENCH_P95_MS / 1000]
        assert sum(value(f'uniret_search_requests_total{{mode="{mode}", status="200"}}').values()) == 3.0
        assert list(value("uniret_nightly_blocked_in_row").values()) == [2.0]
        assert list(value("uniret_registry_paused").values()) == [0.0]  # no pause recorded

        firing = _wait("UniretNightlyBlocked firing", lambda: [
            a for a in _api(port, "alerts")["alerts"] if a["labels"]["alertname"] == "UniretNightlyBlocked"
            and a["state"] == "firing"], proc, log)
        assert firing[0]["labels"]["job"] == "uniret-serving" and firing[0]["labels"]["severity"] == "warning"
        rules = [r for g in _api(port, "rules")["groups"] for r in g["rules"]]
        assert len(rules) == 10 and all(r["health"] != "err" for r in rules), [r.get("lastError") for r in rules]
        others = {a["labels"]["alertname"] for a in _api(port, "alerts")["alerts"]} - {"UniretNightlyBlocked"}
        assert others == set(), f"alerts on a healthy server: {others}"
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
