"""Serving's side of the UBI log: query records of answers, and events checked at the door.

Per search the cost is building one small dict and a queue put (`LogWriter.submit`); JSON encoding
and disk writes happen on the writer thread. Events are checked here for what needs no state beyond
a bounded memory of recent answers (schema, sizes, batch limit, per-client rate, timestamp skew, and
for a query_id still remembered: the object was shown at that position). Events naming a query
not in that memory (older, or served by another worker process) are accepted and left to the
feedback stage's ingestion checks.
"""

from __future__ import annotations

import json
import logging
import random
import threading
from collections import Counter, OrderedDict
from typing import Any, TypeVar

from uniret.clicks.randpair import rand_pair
from uniret.config.feedback import FeedbackConfig
from uniret.serving.limits import ClientRateLimiter
from uniret.serving.metrics import ServingMetrics
from uniret.ubi import EVENTS, QUERIES, LogWriter, RecordError, query_record, validate_event
from uniret.ubi.records import check_shown

log = logging.getLogger("uniret.serving")
T = TypeVar("T")


class EventRejected(Exception):
    """A POST /events body refused: HTTP `status`, metrics `reason`, a `detail` naming the field."""

    def __init__(self, status: int, reason: str, detail: str, count: int = 1):
        super().__init__(detail)
        self.status, self.reason, self.detail, self.count = status, reason, detail, count


class RecentQueries:
    """query_id -> the hit ids shown, for the `capacity` most recent answers (0: remembers nothing)."""

    def __init__(self, capacity: int):
        self.capacity = capacity
        self._hits: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, query_id: str, hit_ids: list[str]) -> None:
        if self.capacity <= 0:
            return
        with self._lock:
            self._hits[query_id] = tuple(hit_ids)
            self._hits.move_to_end(query_id)
            while len(self._hits) > self.capacity:
                self._hits.popitem(last=False)

    def get(self, query_id: str) -> tuple[str, ...] | None:
        with self._lock:
            return self._hits.get(query_id)


class ServingLog:
    """The writer (None when feedback.log_dir is null), the recent answers and the event rate limiter."""

    def __init__(self, cfg: FeedbackConfig | None, metrics: ServingMetrics):
        self.cfg = cfg or FeedbackConfig()
        self.metrics = metrics
        self.writer: LogWriter | None = None
        if self.cfg.log_dir:
            self.writer = LogWriter(
                self.cfg.log_dir, self.cfg.queue_capacity, retention_days=self.cfg.retention_days,
                on_write=lambda kind, n: metrics.ubi_logged.labels(kind=kind).inc(n),
                on_drop=lambda kind, cause, n: metrics.ubi_dropped.labels(kind=kind, cause=cause).inc(n),
            )
        self.recent = RecentQueries(self.cfg.recent_queries if self.writer else 0)
        self.limiter = ClientRateLimiter(self.cfg.events_per_s, self.cfg.events_burst)
        self._rng = random.Random(self.cfg.randpair_seed)
        self._rng_lock = threading.Lock()

    @property
    def enabled(self) -> bool:
        return self.writer is not None

    def start(self) -> None:
        if self.writer is not None:
            self.writer.start()
            log.info("UBI logging on: %s (writer %s)", self.cfg.log_dir, self.writer.writer_id)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()

    def shown_order(self, hits: list[T]) -> tuple[list[T], tuple[int, int] | None]:
        """The order to show: with logging on, two adjacent results swapped on feedback.randpair_share
        of answers (the 1-based ranks swapped, else None), so the logs identify the propensities."""
        if self.writer is None or self.cfg.randpair_share <= 0:
            return hits, None
        with self._rng_lock:
            return rand_pair(hits, self.cfg.randpair_share, self._rng, depth=len(hits))

    def log_query(self, query_id: str, client_id: str, query: str, hit_ids: list[str],
                  attributes: dict[str, Any]) -> None:
        """Enqueue the query record of one answer (no-op when logging is off). Never raises."""
        if self.writer is None:
            return
        try:
            self.recent.add(query_id, hit_ids)
            self.writer.submit(QUERIES, query_record(query_id, client_id, query, hit_ids, attributes))
        except Exception:  # the log must never fail a search
            log.exception("UBI: could not enqueue the query record of %s", query_id)

    def accept_events(self, raw: bytes) -> int:
        """Check one POST /events body (one event or {"events": [...]}) and enqueue its events.

        A batch is taken whole or refused whole; returns how many events were accepted, raises
        `EventRejected` otherwise (also counted in uniret_events_rejected_total).
        """
        try:
            accepted = self._accept(raw)
        except EventRejected as exc:
            self.metrics.events_rejected.labels(reason=exc.reason).inc(exc.count)
            raise
        self.metrics.events_accepted.inc(accepted)
        return accepted

    def _accept(self, raw: bytes) -> int:
        if self.writer is None:
            raise EventRejected(503, "logging_off", "event logging is off on this server (feedback.log_dir is null)")
        try:
            body = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise EventRejected(400, "malformed_json", f"request body is not valid JSON: {exc}") from exc
        if isinstance(body, dict) and "events" in body:
            extra = sorted(set(body) - {"events"})
            if extra:
                raise EventRejected(422, "schema", f"{extra[0]}: unknown field beside `events`")
            items, prefix = body["events"], "events"
            if not isinstance(items, list):
                raise EventRejected(422, "schema", "events: must be a list of events")
            if not items:
                raise EventRejected(422, "schema", "events: must not be empty")
        else:
            items, prefix = [body], None
        limit = self.cfg.max_events_per_batch
        if len(items) > limit:
            raise EventRejected(413, "batch_too_large", f"events: {len(items)} events in one request; "
                                f"the limit is {limit} (feedback.max_events_per_batch)", len(items))
        events = []
        for i, item in enumerate(items):
            try:
                events.append(validate_event(item, max_skew_s=self.cfg.max_clock_skew_s))
            except RecordError as exc:
                where = f"{prefix}[{i}]." if prefix else ""
                raise EventRejected(422, "schema", f"{where}{exc}", len(items)) from exc
        per_client = Counter(e["client_id"] for e in events)
        for client, n in per_client.items():
            if not self.limiter.allow(client, n):
                raise EventRejected(429, "rate_limited", f"client_id {client!r}: over {self.cfg.events_per_s:g} "
                                    f"events/s (burst {self.cfg.events_burst}); slow down and retry", len(items))
        for i, event in enumerate(events):
            shown = self.recent.get(event["query_id"])
            if shown is None:
                continue  # unknown here: the feedback stage's ingestion checks it against the query log
            try:
                check_shown(event, list(shown))
            except RecordError as exc:
                where = f"{prefix}[{i}]." if prefix else ""
                raise EventRejected(422, "not_shown", f"{where}{exc}", len(items)) from exc
        for event in events:
            self.writer.submit(EVENTS, event)
        return len(events)
