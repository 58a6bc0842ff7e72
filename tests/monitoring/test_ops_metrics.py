"""Serving's operations gauges, read at scrape time from a real registry folder: the live bundle's
published time and bench p95 (the gate's stored decision), production.json and the nightly's outcomes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from uniret.config.gate import GateConfig
from uniret.registry.gate import GateInputs, budget_checks
from uniret.registry.integrity import write_checksums
from uniret.registry.nightly_status import (
    NIGHTLY_STATUS,
    iso_seconds,
    next_status,
    read_status,
    record_outcome,
)
from uniret.registry.pointer import point_to, registry_lock
from uniret.retrieval.bundle import FORMAT_VERSION
from uniret.serving.metrics import ServingMetrics
from uniret.serving.ops_metrics import bench_p95
from uniret.serving.state import LiveBundle

PUBLISHED = "2026-12-04T02:30:00Z"
BENCH = {"modes": {"hybrid_fast": {"p50_ms": 1.5, "p95_ms": 12.5}, "bm25": {"p50_ms": 1.2, "p95_ms": 3.0}}}


def _decision(bench: dict | None) -> dict:
    """The gate's own budget checks, as a published manifest stores them (Decision.to_dict's "checks")."""
    cfg = GateConfig(candidate_system="uni", latency_mode="hybrid_fast", max_latency_p95_ms=500.0)
    checks = budget_checks(cfg, GateInputs(metrics={}, bench=bench, absent={} if bench else {"bench": "no bench"}))
    return {"passed": True, "candidate": "uni", "checks": [c.to_dict() for c in checks]}


def _publish(registry: Path, version: str, decision: dict | None) -> Path:
    folder = registry / "bundles" / version
    folder.mkdir(parents=True)
    (folder / "manifest.json").write_text(json.dumps({"format": FORMAT_VERSION, "version": version,
                                                      "published_at": PUBLISHED, "gate": decision}))
    write_checksums(folder)
    return folder


def _live(folder: Path, version: str) -> LiveBundle:
    return LiveBundle(version=version, path=folder, searchers={}, default_mode="hybrid_fast",
                      loaded_at="2026-12-04T03:00:00Z")


def _scrape(metrics: ServingMetrics) -> dict[tuple[str, tuple], float]:
    """{(sample name, sorted labels): value} of one /metrics text."""
    text = generate_latest(metrics.registry).decode()
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


@pytest.fixture
def registry(tmp_path) -> Path:
    root = tmp_path / "registry"
    _publish(root, "v1", _decision(BENCH))
    _publish(root, "v2", _decision(None))
    with registry_lock(root):
        point_to(root, "v1")
    return root


def test_bench_p95_comes_from_the_gate_decision():
    assert bench_p95({"gate": _decision(BENCH)}) == ("hybrid_fast", 0.0125)
    assert bench_p95({"gate": _decision(None)}) is None  # the check was not measured: no figure
    assert bench_p95({}) is None and bench_p95({"gate": {"checks": "x"}}) is None


def test_gauges_of_the_live_bundle_and_the_registry(registry):
    live = {"bundle": _live(registry / "bundles" / "v1", "v1")}
    metrics = ServingMetrics()
    metrics.track(lambda: live["bundle"], registry)
    record_outcome(registry, "blocked", 3, "blocked: beats_baseline")
    record_outcome(registry, "blocked", 3, "blocked: beats_baseline")
    got = _scrape(metrics)
    assert got[("uniret_bundle_is_production", ())] == 1.0
    assert got[("uniret_bundle_published_timestamp_seconds", ())] == iso_seconds(PUBLISHED)
    assert got[("uniret_bundle_loaded_timestamp_seconds", ())] == iso_seconds("2026-12-04T03:00:00Z")
    assert got[("uniret_bundle_bench_p95_seconds", (("mode", "hybrid_fast"),))] == 0.0125
    assert got[("uniret_production_promoted_timestamp_seconds", ())] == pytest.approx(time.time(), abs=120)
    assert got[("uniret_nightly_blocked_in_row", ())] == 2.0 and got[("uniret_nightly_failed_in_row", ())] == 0.0
    assert got[("uniret_nightly_last_outcome", (("outcome", "blocked"),))] == 1.0
    assert got[("uniret_nightly_last_outcome", (("outcome", "ok"),))] == 0.0
    assert got[("uniret_nightly_runs_total", (("outcome", "blocked"),))] == 2.0
    assert ("uniret_nightly_last_success_timestamp_seconds", ()) not in got  # no night ended ok yet
    assert got[("uniret_registry_read_ok", ())] == 1.0
    assert got[("uniret_reloads_total", (("result", "failed"),))] == 0.0  # at 0 before any reload

    live["bundle"] = _live(registry / "bundles" / "v2", "v2")  # a replica left on another version
    record_outcome(registry, "ok", 0, "promoted")
    got = _scrape(metrics)
    assert got[("uniret_bundle_is_production", ())] == 0.0
    assert not any(name == "uniret_bundle_bench_p95_seconds" for name, _ in got)  # v2 has no bench figure
    assert got[("uniret_nightly_blocked_in_row", ())] == 0.0
    assert got[("uniret_nightly_last_success_timestamp_seconds", ())] == pytest.approx(time.time(), abs=120)

    assert not any(name == "uniret_nightly_last_refresh" for name, _ in got)  # that night refreshed nothing
    record_outcome(registry, "blocked", 3, "blocked: ...; corpus refresh promoted",
                   refresh={"status": "promoted", "added": 50, "removed": 20, "version": "v3"})
    got = _scrape(metrics)
    assert got[("uniret_nightly_last_refresh", (("status", "promoted"),))] == 1.0
    assert got[("uniret_nightly_last_refresh_documents", (("change", "added"),))] == 50.0
    assert got[("uniret_nightly_last_refresh_documents", (("change", "removed"),))] == 20.0

    live["bundle"] = None  # nothing loaded (start-up failed): not on production
    assert _scrape(metrics)[("uniret_bundle_is_production", ())] == 0.0


def test_a_damaged_registry_file_never_breaks_the_scrape(registry):
    metrics = ServingMetrics()
    metrics.track(lambda: _live(registry / "bundles" / "v1", "v1"), registry)
    (registry / "production.json").write_text("{not json")
    (registry / NIGHTLY_STATUS).write_text("[]")
    got = _scrape(metrics)
    assert got[("uniret_registry_read_ok", ())] == 0.0
    assert ("uniret_bundle_is_production", ()) not in got
    assert got[("uniret_bundle_bench_p95_seconds", (("mode", "hybrid_fast"),))] == 0.0125  # the bundle's own


def test_a_pause_is_exported_until_it_is_resumed(registry):
    """`uniret registry pause` -> uniret_registry_paused 1 and the pause's start; resume -> 0, no start."""
    from uniret.registry.control import CONTROL, pause, read_control, resume

    metrics = ServingMetrics()
    metrics.track(lambda: _live(registry / "bundles" / "v1", "v1"), registry)
    got = _scrape(metrics)
    assert got[("uniret_registry_paused", ())] == 0.0  # no control.json: not paused
    assert ("uniret_registry_paused_since_timestamp_seconds", ()) not in got

    pause(registry, reason="bad labels upstream")
    got = _scrape(metrics)
    assert got[("uniret_registry_paused", ())] == 1.0
    assert got[("uniret_registry_paused_since_timestamp_seconds", ())] == iso_seconds(read_control(registry).paused_at)
    assert got[("uniret_registry_read_ok", ())] == 1.0

    resume(registry)
    got = _scrape(metrics)
    assert got[("uniret_registry_paused", ())] == 0.0
    assert ("uniret_registry_paused_since_timestamp_seconds", ()) not in got

    (registry / CONTROL).write_text('{"paused": "yes"}')  # damaged: no guess either way
    got = _scrape(metrics)
    assert ("uniret_registry_paused", ()) not in got and got[("uniret_registry_read_ok", ())] == 0.0
    assert got[("uniret_bundle_is_production", ())] == 1.0  # the other registry files still count


def test_a_fixed_bundle_server_exports_no_registry_gauges(registry):
    metrics = ServingMetrics()
    metrics.track(lambda: _live(registry / "bundles" / "v1", "v1"), None)
    names = {name for name, _ in _scrape(metrics)}
    assert "uniret_bundle_bench_p95_seconds" in names
    assert not {n for n in names if n.startswith(("uniret_nightly_", "uniret_registry_", "uniret_production_"))}
    assert "uniret_bundle_is_production" not in names


def test_streaks_grow_on_a_repeat_and_restart_otherwise(tmp_path):
    status = None
    for outcome in ("blocked", "blocked", "failed", "blocked", "ok", "failed", "failed"):
        status = next_status(status, outcome, 0, outcome, PUBLISHED)
    assert (status["blocked_in_row"], status["failed_in_row"]) == (0, 2)
    assert status["runs"] == {"ok": 1, "blocked": 3, "failed": 3, "paused": 0}
    assert status["last_success_at"] == PUBLISHED and status["last_run"]["outcome"] == "failed"
    with pytest.raises(ValueError, match="unknown nightly outcome 'great'"):
        next_status(None, "great", 0, "", PUBLISHED)
    (tmp_path / NIGHTLY_STATUS).write_text("{")  # a damaged file: recording starts afresh, reading names it
    assert record_outcome(tmp_path, "blocked", 3, "x")["blocked_in_row"] == 1
    assert read_status(tmp_path)["blocked_in_row"] == 1
    (tmp_path / NIGHTLY_STATUS).write_text("{")
    with pytest.raises(Exception, match="nightly.json: invalid JSON"):
        read_status(tmp_path)
