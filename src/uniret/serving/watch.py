"""Optional polling of the registry pointer: reload when production.json names a new version.

With several uvicorn workers (or pods) an /admin/reload reaches one process only; watching the
pointer brings every process to the promoted bundle within one interval.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from uniret.serving.source import BundleSource, SourceError

log = logging.getLogger("uniret.serving")


class PointerWatcher:
    """A daemon thread calling `reload(path, version)` when the pointer's version changes."""

    def __init__(self, source: BundleSource, live_version: Callable[[], str | None],
                 reload: Callable, interval_s: float):
        self.source = source
        self.live_version = live_version
        self.reload = reload
        self.interval_s = interval_s
        self._stop = threading.Event()
        self._failed: str | None = None  # a version that failed to load is not retried every tick
        self._thread = threading.Thread(target=self._loop, name="uniret-pointer-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval_s + 1)

    def check_once(self) -> bool:
        """Reload when the pointer names another version than the live one; True when it did."""
        try:
            found = self.source.production()
        except SourceError as exc:
            log.warning("pointer watch: %s", exc)
            return False
        if found is None:
            return False
        path, version = found
        if version in (self.live_version(), self._failed):
            return False
        try:
            self.reload(path, version)
        except Exception as exc:  # noqa: BLE001 - keep watching; the old bundle keeps serving
            self._failed = version
            log.error("pointer watch: reload of %s failed, still serving %s: %s", version, self.live_version(), exc)
            return False
        return True

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.check_once()
