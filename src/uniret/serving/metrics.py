"""Prometheus metrics of one serving app (own registry, so several apps can live in one process)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Search latencies on CPU range from sub-millisecond (cached BM25) to seconds (cold ONNX sessions).
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)
RELOAD_RESULTS = ("ok", "failed")


class ServingMetrics:
    """Request count and latency per mode and status, reloads, and the live bundle's version."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "uniret_search_requests", "Search requests by mode and HTTP status", ["mode", "status"],
            registry=self.registry,
        )
        self.latency = Histogram(
            "uniret_search_latency_seconds", "Search latency (query encoding included) by mode and HTTP status",
            ["mode", "status"], buckets=LATENCY_BUCKETS, registry=self.registry,
        )
        self.reloads = Counter("uniret_reloads", "Bundle reloads by result", ["result"], registry=self.registry)
        for result in RELOAD_RESULTS:  # at 0 from the start: increase() then sees a process's first failure
            self.reloads.labels(result=result)
        self.bundle_info = Gauge(
            "uniret_bundle_info", "The live bundle (value 1 on the live version)", ["version", "path"],
            registry=self.registry,
        )
        self.inflight = Gauge("uniret_search_inflight", "Search requests being served", registry=self.registry)
        # --- UBI logging (uniret.ubi; docs/learning-loop.md "Logging") ---
        self.ubi_logged = Counter("uniret_ubi_records_logged", "UBI records written by kind (ubi_queries, ubi_events)",
                                  ["kind"], registry=self.registry)
        self.ubi_dropped = Counter("uniret_ubi_records_dropped", "UBI records dropped by kind and cause "
                                   "(queue_full, disk_full, unwritable, unencodable)", ["kind", "cause"],
                                   registry=self.registry)
        self.events_accepted = Counter("uniret_events_accepted", "Events accepted by POST /events",
                                       registry=self.registry)
        self.events_rejected = Counter("uniret_events_rejected", "Events refused by POST /events by reason",
                                       ["reason"], registry=self.registry)

        # --- the canary (uniret.serving.canary; docs/gate-registry.md#canary) ---
        self.canary_info = Gauge("uniret_canary_info", "The last canary of the registry (value 1): candidate, the "
                                 "production it is compared with, status (running, promoted, rolled_back, abandoned)",
                                 ["candidate", "production", "status"], registry=self.registry)
        self.canary_answers = Counter("uniret_canary_interleaved_answers", "Searches answered with the canary's "
                                      "interleaved list", registry=self.registry)

    def set_canary(self, state: dict[str, Any] | None) -> None:
        """Point the canary gauge at the registry's last canary (none: no series)."""
        self.canary_info.clear()
        if state is not None:
            self.canary_info.labels(candidate=state["candidate"], production=state["production"],
                                    status=state["status"]).set(1)

    def observe(self, mode: str, status: int, seconds: float) -> None:
        """Count one search request and its latency."""
        self.requests.labels(mode=mode, status=str(status)).inc()
        self.latency.labels(mode=mode, status=str(status)).observe(seconds)

    def set_bundle(self, version: str, path: str) -> None:
        """Point the info gauge at the live bundle only."""
        self.bundle_info.clear()
        self.bundle_info.labels(version=version, path=path).set(1)

    # --- operations: the gauges the alert rules read (serving/ops_metrics.py, docs/monitoring.md) ---

    def track(self, live: Callable[[], Any], registry_root: Path | None) -> None:
        """Export, at each scrape, the live bundle's published time and bench p95 and (with a registry)
        whether it is production and the nightly's outcomes. `live` returns the
        live bundle or None."""
        from uniret.serving.ops_metrics import OperationsCollector

        self.registry.register(OperationsCollector(live, registry_root))
