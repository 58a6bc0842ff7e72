"""Gauges the alert rules read, computed at each scrape of /metrics (docs/monitoring.md).

From the live bundle's manifest (read once per bundle): when it was published, its bench p95 (the
gate's `latency_p95_ms` check of the served mode). From the registry, when serving reads one
(a few small JSON files, read at each scrape; Prometheus scrapes every 15-60 s): production.json
(is this process on production, when was it promoted), the nightly's outcomes
(registry/nightly_status.py) and control.json (is promotion paused by `uniret registry pause`, since
when). A file that cannot be read leaves its gauges out and sets `uniret_registry_read_ok` to 0; it
never fails the scrape.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

log = logging.getLogger("uniret.serving")

P95_CHECK = "latency_p95_ms"  # the gate check holding the bench p95 (uniret.registry.gate.budget_checks)
_MODE_IN_REASON = re.compile(r"of mode '([^']+)'")


@dataclass(frozen=True)
class BundleFigures:
    """What the alerts need from one bundle's manifest."""

    published_at: float | None  # seconds since the epoch; None: not published by a registry
    bench_mode: str | None
    bench_p95_s: float | None


def bench_p95(manifest: dict[str, Any]) -> tuple[str, float] | None:
    """(mode, p95 seconds) the gate measured on the bench stage for this bundle, or None.

    The gate's decision is stored in the published manifest ("gate"); its `latency_p95_ms` check
    holds the value and names the mode in its reason ("p95 latency (ms) of mode 'x' ...").
    """
    decision = manifest.get("gate")
    checks = decision.get("checks") if isinstance(decision, dict) else None
    for check in checks if isinstance(checks, list) else []:
        if not isinstance(check, dict) or check.get("name") != P95_CHECK or not isinstance(check.get("value"), int | float):
            continue
        found = _MODE_IN_REASON.search(str(check.get("reason") or ""))
        mode = found.group(1) if found else str(decision.get("candidate") or "").rsplit("/", 1)[-1]
        if mode:
            return mode, float(check["value"]) / 1000.0
    return None


def bundle_figures(path: Path) -> BundleFigures:
    """The figures of the bundle folder `path` (all None when its manifest cannot be read)."""
    from uniret.registry.nightly_status import iso_seconds
    from uniret.retrieval.bundle import read_bundle_manifest

    try:
        manifest = read_bundle_manifest(path)
    except (OSError, ValueError) as exc:
        log.warning("metrics: cannot read the live bundle's manifest: %s", exc)
        return BundleFigures(None, None, None)
    try:
        published = iso_seconds(manifest["published_at"]) if isinstance(manifest.get("published_at"), str) else None
    except ValueError:
        published = None
    bench = bench_p95(manifest)
    return BundleFigures(published, *(bench or (None, None)))


def _gauge(name: str, doc: str, labels: tuple[str, ...] = ()) -> GaugeMetricFamily:
    return GaugeMetricFamily(name, doc, labels=list(labels))


class OperationsCollector:
    """A prometheus_client collector: the live bundle's figures and the registry's state, at scrape time.

    `live` returns the live bundle (an object with .version, .path, .loaded_at) or None;
    `registry_root` is None when serving a fixed bundle folder (no registry gauges then).
    """

    def __init__(self, live: Callable[[], Any], registry_root: Path | None):
        self.live = live
        self.registry_root = registry_root
        self._figures: tuple[tuple[str, Path], BundleFigures] | None = None  # cache: one bundle's figures

    def describe(self) -> Iterator[Metric]:
        """Every family this collector may yield (no sample read): what `register` checks names against."""
        yield from self._families().values()

    def collect(self) -> Iterator[Metric]:
        families = self._families()
        self._collect_bundle(families)
        if self.registry_root is not None:
            self._collect_registry(families)
        yield from (f for f in families.values() if f.samples)

    @staticmethod
    def _families() -> dict[str, Metric]:
        return {f.name: f for f in (
            _gauge("uniret_bundle_published_timestamp_seconds",
                   "When the live bundle was published to the registry (its manifest's published_at)"),
            _gauge("uniret_bundle_loaded_timestamp_seconds", "When this process loaded the live bundle"),
            _gauge("uniret_bundle_bench_p95_seconds",
                   "The live bundle's p95 search latency measured by the bench stage (gate check latency_p95_ms)",
                   ("mode",)),
            _gauge("uniret_bundle_is_production",
                   "1 when the live bundle is the version production.json names, 0 when not (or none is loaded)"),
            _gauge("uniret_production_promoted_timestamp_seconds",
                   "When production.json last changed (a promotion or a rollback)"),
            _gauge("uniret_registry_read_ok", "1 when every registry file read at this scrape was readable"),
            _gauge("uniret_registry_paused", "1 while `uniret registry pause` is in force (no promotion), 0 otherwise"),
            _gauge("uniret_registry_paused_since_timestamp_seconds",
                   "When the pause in force began (control.json's paused.at); absent when not paused"),
            _gauge("uniret_nightly_last_run_timestamp_seconds", "When the last recorded nightly run finished"),
            _gauge("uniret_nightly_last_success_timestamp_seconds", "When the last nightly run that ended ok finished"),
            _gauge("uniret_nightly_blocked_in_row", "Nightly runs in a row blocked by the gate (the latest included)"),
            _gauge("uniret_nightly_failed_in_row", "Nightly runs in a row that failed (the latest included)"),
            _gauge("uniret_nightly_last_outcome", "1 on the outcome of the last nightly run", ("outcome",)),
            CounterMetricFamily("uniret_nightly_runs", "Nightly runs recorded in the registry by outcome", labels=["outcome"]),
            _gauge("uniret_nightly_last_refresh", "1 on what the last nightly's corpus refresh did (promoted, "
                   "unchanged, skipped, refused, blocked, failed); absent when that night ran none", ("status",)),
            _gauge("uniret_nightly_last_refresh_documents", "Documents the last corpus refresh found added to or "
                   "removed from today's corpus against production's bundle", ("change",)),
        )}

    def _collect_bundle(self, families: dict[str, Metric]) -> None:
        live = self.live()
        if live is None:
            return
        key = (live.version, Path(live.path))
        if self._figures is None or self._figures[0] != key:
            self._figures = (key, bundle_figures(key[1]))
        figures = self._figures[1]
        from uniret.registry.nightly_status import iso_seconds

        try:
            families["uniret_bundle_loaded_timestamp_seconds"].add_metric([], iso_seconds(live.loaded_at))
        except (TypeError, ValueError):
            pass
        if figures.published_at is not None:
            families["uniret_bundle_published_timestamp_seconds"].add_metric([], figures.published_at)
        if figures.bench_p95_s is not None:
            families["uniret_bundle_bench_p95_seconds"].add_metric([figures.bench_mode], figures.bench_p95_s)

    def _collect_registry(self, families: dict[str, Metric]) -> None:
        from uniret.registry.errors import RegistryError
        from uniret.registry.nightly_status import OUTCOMES, iso_seconds, read_status
        from uniret.registry.pointer import read_pointer

        ok = True
        try:
            pointer = read_pointer(self.registry_root)
        except (RegistryError, OSError) as exc:
            log.warning("metrics: %s", exc)
            pointer, ok = None, False
        if pointer is not None:
            live = self.live()
            families["uniret_bundle_is_production"].add_metric(
                [], float(live is not None and live.version == pointer["version"]))
            try:
                families["uniret_production_promoted_timestamp_seconds"].add_metric([], iso_seconds(pointer["promoted_at"]))
            except (KeyError, TypeError, ValueError):
                pass
        try:
            status = read_status(self.registry_root)
        except (RegistryError, OSError) as exc:
            log.warning("metrics: %s", exc)
            status, ok = None, False
        if status is not None:
            last = status["last_run"]
            for name, stamp in (("last_run", last.get("finished_at")), ("last_success", status.get("last_success_at"))):
                try:
                    families[f"uniret_nightly_{name}_timestamp_seconds"].add_metric([], iso_seconds(stamp))
                except (TypeError, ValueError):
                    pass
            for name in ("blocked_in_row", "failed_in_row"):
                families[f"uniret_nightly_{name}"].add_metric([], float(status.get(name) or 0))
            for outcome in OUTCOMES:
                families["uniret_nightly_last_outcome"].add_metric([outcome], float(last.get("outcome") == outcome))
                families["uniret_nightly_runs"].add_metric([outcome], float((status.get("runs") or {}).get(outcome, 0)))
            refresh = last.get("refresh")
            if isinstance(refresh, dict) and isinstance(refresh.get("status"), str):
                families["uniret_nightly_last_refresh"].add_metric([refresh["status"]], 1.0)
                for change in ("added", "removed"):
                    if isinstance(refresh.get(change), int):
                        families["uniret_nightly_last_refresh_documents"].add_metric([change], float(refresh[change]))
        ok = self._collect_control(families) and ok
        families["uniret_registry_read_ok"].add_metric([], float(ok))

    def _collect_control(self, families: dict[str, Metric]) -> bool:
        """The pause gauges from control.json; False (gauges left out) when it cannot be read."""
        from uniret.registry.control import read_control
        from uniret.registry.errors import RegistryError
        from uniret.registry.nightly_status import iso_seconds

        try:
            control = read_control(self.registry_root)
        except (RegistryError, OSError) as exc:
            log.warning("metrics: %s", exc)
            return False
        families["uniret_registry_paused"].add_metric([], float(control.paused))
        if control.paused:
            try:
                families["uniret_registry_paused_since_timestamp_seconds"].add_metric([], iso_seconds(control.paused_at))
            except (TypeError, ValueError):
                pass  # a pause without a readable time still shows as paused
        return True
