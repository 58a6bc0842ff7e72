"""Prometheus metrics of one serving app (own registry, so several apps can live in one process).

With several uvicorn workers (`serve.workers`), `uniret serve` points $PROMETHEUS_MULTIPROC_DIR at a
fresh folder before they start: prometheus_client then keeps counters, histograms and the in-flight
gauge in memory-mapped files there, and a scrape, whichever worker it reaches, sums every worker's
(prometheus_client's multiprocess mode). The info gauges and the operations gauges are computed at
scrape time by the process that answers.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import GaugeMetricFamily, Metric

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"  # prometheus_client reads it once, at import

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
        self._info = InfoGauges()  # per process, at scrape time: no stale series of an earlier version
        self._info.declare("uniret_bundle_info", "The live bundle (value 1 on the live version)", ("version", "path"))
        self.registry.register(self._info)
        self._process_collectors: list = [self._info]  # what a multiprocess scrape adds to the summed files
        # livesum: the workers alive now, summed (a dead worker's searches are not in flight)
        self.inflight = Gauge("uniret_search_inflight", "Search requests being served", registry=self.registry,
                              multiprocess_mode="livesum")
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
        self._info.declare("uniret_canary_info", "The last canary of the registry (value 1): candidate, the "
                           "production it is compared with, status (running, promoted, rolled_back, abandoned)",
                           ("candidate", "production", "status"))
        self.canary_answers = Counter("uniret_canary_interleaved_answers", "Searches answered with the canary's "
                                      "interleaved list", registry=self.registry)

    def set_canary(self, state: dict[str, Any] | None) -> None:
        """Point the canary gauge at the registry's last canary (none: no series)."""
        self._info.set("uniret_canary_info", None if state is None else
                       (state["candidate"], state["production"], state["status"]))

    def observe(self, mode: str, status: int, seconds: float) -> None:
        """Count one search request and its latency."""
        self.requests.labels(mode=mode, status=str(status)).inc()
        self.latency.labels(mode=mode, status=str(status)).observe(seconds)

    def set_bundle(self, version: str, path: str) -> None:
        """Point the info gauge at the live bundle only."""
        self._info.set("uniret_bundle_info", (version, path))

    # --- operations: the gauges the alert rules read (serving/ops_metrics.py, docs/monitoring.md) ---

    def track(self, live: Callable[[], Any], registry_root: Path | None) -> None:
        """Export, at each scrape, the live bundle's published time and bench p95 and (with a registry)
        whether it is production and the nightly's outcomes. `live` returns the
        live bundle or None."""
        from uniret.serving.ops_metrics import OperationsCollector

        collector = OperationsCollector(live, registry_root)
        self.registry.register(collector)
        self._process_collectors.append(collector)

    def exposition_registry(self) -> CollectorRegistry:
        """What /metrics writes: this process's registry, or, in multiprocess mode, every worker's
        counters, histograms and in-flight gauge summed, plus this process's scrape-time gauges."""
        path = os.environ.get(MULTIPROC_ENV)
        if not path:
            return self.registry
        from prometheus_client.multiprocess import MultiProcessCollector

        drop_dead_workers(path)  # a worker that replaces a crashed one clears its in-flight count
        registry = CollectorRegistry()
        MultiProcessCollector(registry, path)
        for collector in self._process_collectors:
            registry.register(collector)
        return registry

    @staticmethod
    def close_process() -> None:
        """In multiprocess mode, drop this worker's live gauges from the summed files (it is exiting)."""
        if path := os.environ.get(MULTIPROC_ENV):
            from prometheus_client.multiprocess import mark_process_dead

            mark_process_dead(os.getpid(), path)


def drop_dead_workers(path: str | Path) -> list[int]:
    """Remove the live gauges of worker processes that no longer exist (killed, so never marked dead
    at shutdown) from the multiprocess folder `path`; returns their pids. Their counters stay."""
    from prometheus_client.multiprocess import mark_process_dead

    dead = []
    for pid in sorted({int(f.stem.rsplit("_", 1)[1]) for f in Path(path).glob("gauge_live*_*.db")}):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            mark_process_dead(pid, str(path))
            dead.append(pid)
        except PermissionError:  # alive, another user's
            pass
    return dead


class InfoGauges:
    """Info gauges (value 1 on one label set, or no series) computed at scrape time by this process.

    A label set that changes (a new bundle version) replaces the old series instead of leaving it in
    the multiprocess files, where prometheus_client cannot remove one.
    """

    def __init__(self) -> None:
        self._families: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._values: dict[str, tuple[str, ...] | None] = {}

    def declare(self, name: str, doc: str, labels: tuple[str, ...]) -> None:
        """Add gauge `name` with these label names, with no series yet."""
        self._families[name] = (doc, labels)
        self._values[name] = None

    def set(self, name: str, values: tuple[str, ...] | None) -> None:
        """Point gauge `name` at one label set (None: no series)."""
        self._values[name] = values  # one reference swap: a scrape sees the old or the new set

    def describe(self) -> Iterator[Metric]:
        """Every family, no sample: what `register` checks names against."""
        for name, (doc, labels) in self._families.items():
            yield GaugeMetricFamily(name, doc, labels=list(labels))

    def collect(self) -> Iterator[Metric]:
        for name, (doc, labels) in self._families.items():
            family = GaugeMetricFamily(name, doc, labels=list(labels))
            if (values := self._values[name]) is not None:
                family.add_metric(list(values), 1)
            yield family
