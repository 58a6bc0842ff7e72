"""The bounded background writer: serving enqueues small dicts, one thread appends them as JSON lines.

A search never waits on the disk and never fails because of the log: `submit` only puts a dict on
a queue of fixed capacity (a full queue drops the record). The writer thread encodes, appends and
flushes; a full disk (ENOSPC), an unwritable folder or a record that does not encode drops the
records concerned. Every drop is counted by cause (`dropped`, and the `on_drop` callback feeding
/metrics) and logged once per cause, not once per record.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import queue
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO

from uniret.ubi.layout import KINDS, day_of, span_dir
from uniret.ubi.retention import delete_expired

log = logging.getLogger("uniret.ubi")

DROP_CAUSES = ("queue_full", "disk_full", "unwritable", "unencodable")
_STOP = object()
BATCH = 512  # records written per wake-up at most, so a busy queue still gets flushed regularly
# the writer waits this long after a record arrives before it writes what has gathered: its wake-ups
# and GIL hand-overs per record cost the served mode 8.7% of its HTTP throughput (E67)
LINGER_S = 0.05


def default_writer_id() -> str:
    """host-pid-starttime: unique per writing process, so processes never share a file."""
    host = socket.gethostname().split(".")[0] or "host"
    return f"{host}-{os.getpid()}-{datetime.now(UTC):%Y%m%dT%H%M%S}"


def _open_append(path: Path) -> BinaryIO:
    return open(path, "ab", buffering=0)  # unbuffered: each batch is one write per file, errors surface at once


class LogWriter:
    """One writer thread over a queue of `capacity` (kind, record) pairs.

    `opener` opens a span file for appending (a test can point it at /dev/full); `on_write(kind, n)`
    and `on_drop(kind, cause, n)` are called from the writer thread (and `on_drop` from `submit` for a
    full queue). `retention_days` (None: off) deletes old spans at start and when the UTC day changes.
    """

    def __init__(self, log_dir: str | Path, capacity: int, writer_id: str | None = None,
                 opener: Callable[[Path], BinaryIO] = _open_append, retention_days: int | None = None,
                 on_write: Callable[[str, int], None] | None = None,
                 on_drop: Callable[[str, str, int], None] | None = None):
        if capacity <= 0:
            raise ValueError(f"capacity must be positive, got {capacity}")
        self.log_dir = Path(log_dir)
        self.writer_id = writer_id
        self.retention_days = retention_days
        self._queue: queue.Queue = queue.Queue(maxsize=capacity)
        self._opener = opener
        self._on_write = on_write or (lambda kind, n: None)
        self._on_drop = on_drop or (lambda kind, cause, n: None)
        self._files: dict[Path, BinaryIO] = {}
        self._day: str | None = None
        self._logged_causes: set[str] = set()
        self._lock = threading.Lock()
        self.written: Counter[str] = Counter()
        self.dropped: Counter[str] = Counter()  # by cause
        self._thread: threading.Thread | None = None

    # --- the request side: never blocks, never raises ---

    def submit(self, kind: str, record: dict[str, Any]) -> bool:
        """Enqueue one record of `kind` (ubi_queries or ubi_events); False when it was dropped."""
        try:
            self._queue.put_nowait((kind, record))
            return True
        except queue.Full:
            self._drop(kind, "queue_full", 1, "the log queue is full (the writer cannot keep up)")
            return False

    # --- lifecycle ---

    def start(self) -> LogWriter:
        """Start the writer thread (after a fork: the writer id names this process)."""
        self.writer_id = self.writer_id or default_writer_id()
        self._thread = threading.Thread(target=self._run, name="uniret-ubi-writer", daemon=True)
        self._thread.start()
        return self

    def close(self, timeout_s: float = 10.0) -> None:
        """Write what is queued, then stop the thread and close the files."""
        if self._thread is None:
            return
        try:
            self._queue.put(_STOP, timeout=timeout_s)
        except queue.Full:
            log.error("UBI writer: queue still full after %.0f s at shutdown; queued records are lost", timeout_s)
        self._thread.join(timeout_s)
        self._thread = None

    def flush(self, timeout_s: float = 10.0) -> bool:
        """Wait until every record submitted so far is written or dropped (tests, shutdown); True if so."""
        deadline = time.monotonic() + timeout_s
        while self._queue.unfinished_tasks and time.monotonic() < deadline:
            time.sleep(0.01)
        return not self._queue.unfinished_tasks

    # --- the writer thread ---

    def _drop(self, kind: str, cause: str, n: int, why: str) -> None:
        with self._lock:
            self.dropped[cause] += n
            first = cause not in self._logged_causes
            self._logged_causes.add(cause)
        self._on_drop(kind, cause, n)
        if first:  # once per cause: a full disk must not flood the log with one line per record
            log.error("UBI log: dropping records (%s): %s; further drops of this cause are only counted "
                      "(uniret_ubi_records_dropped_total)", cause, why)

    def _run(self) -> None:
        self._retain(datetime.now(UTC).strftime("%Y-%m-%d"))
        stop = False
        while not stop:
            items = [self._queue.get()]
            if items[0] is not _STOP:
                time.sleep(LINGER_S)  # let a batch gather: one wake-up per batch, not per search (E67)
            while len(items) < BATCH:
                try:
                    items.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            batch = [i for i in items if i is not _STOP]
            stop = len(batch) < len(items)
            try:
                self._write(batch)
            except Exception as exc:  # never let the thread die: the queue would fill and drop everything
                self._drop("unknown", "unwritable", len(batch), f"unexpected {type(exc).__name__}: {exc}")
            finally:
                for _ in items:
                    self._queue.task_done()
        for fh in self._files.values():
            try:
                fh.close()
            except OSError:
                pass
        self._files.clear()

    def _write(self, batch: list[tuple[str, dict]]) -> None:
        lines: dict[tuple[str, str], list[bytes]] = {}
        for kind, record in batch:
            try:
                text = json.dumps(record, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
                day = day_of(record["timestamp"])
                if kind not in KINDS:
                    raise ValueError(f"unknown kind {kind!r}")
            except (TypeError, ValueError, KeyError) as exc:
                self._drop(str(kind), "unencodable", 1, f"{type(exc).__name__}: {exc}")
                continue
            lines.setdefault((kind, day), []).append(text.encode("utf-8") + b"\n")
        for (kind, day), chunk in lines.items():
            if day != self._day and day > (self._day or ""):
                self._retain(day)
            path = span_dir(self.log_dir, kind, day) / f"{self.writer_id}.jsonl"
            try:
                fh = self._files.get(path)
                if fh is None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    fh = self._files[path] = self._opener(path)
                data = b"".join(chunk)
                view = memoryview(data)
                while view:  # a raw write may be short; a full disk then raises on the next one
                    written = fh.write(view)
                    if not written:
                        raise OSError(errno.ENOSPC, "no byte written")
                    view = view[written:]
            except OSError as exc:
                stale = self._files.pop(path, None)
                if stale is not None:
                    try:
                        stale.close()
                    except OSError:
                        pass
                cause = "disk_full" if exc.errno in (errno.ENOSPC, errno.EDQUOT) else "unwritable"
                self._drop(kind, cause, len(chunk), f"{path}: {exc}")
                continue
            self.written[kind] += len(chunk)
            self._on_write(kind, len(chunk))

    def _retain(self, day: str) -> None:
        """On a new UTC day: close the files of older days and apply retention."""
        self._day = day
        for path in [p for p in self._files if p.parent.name < day]:
            try:
                self._files.pop(path).close()
            except OSError:
                pass
        if self.retention_days is None:
            return
        try:
            deleted = delete_expired(self.log_dir, self.retention_days, datetime.fromisoformat(day).date())
        except OSError as exc:
            log.warning("UBI retention failed under %s: %s", self.log_dir, exc)
            return
        if deleted:
            log.info("UBI retention: deleted spans %s (older than %d days)", ", ".join(deleted), self.retention_days)
