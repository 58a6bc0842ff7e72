"""Polling of the registry pointer: reload when production.json names a new version.

With several uvicorn workers (or pods) an /admin/reload reaches one process only; watching the
pointer brings every process to the promoted bundle within one interval (plus its jitter).

Jitter: replicas restarted together (a rollout, a node drain) would otherwise poll the shared
volume in step and load a new bundle at the same moment. The first poll comes after a random
share of the interval, every later one after the interval times a factor in [1 - JITTER, 1 + JITTER],
so a change is seen within (1 + JITTER) x the interval.

Reporting: a pointer that cannot be read and a bundle that fails to load (checksums, probe query)
are logged once per replica when they appear, not on every poll, and once more when they clear;
a version that failed to load is not retried until the pointer names another version.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable

from uniret.serving.source import BundleSource, SourceError

log = logging.getLogger("uniret.serving")

JITTER = 0.2  # +- share of the interval between two polls


class PointerWatcher:
    """A daemon thread calling `reload(path, version)` when the pointer's version changes."""

    def __init__(self, source: BundleSource, live_version: Callable[[], str | None],
                 reload: Callable, interval_s: float, rng: random.Random | None = None,
                 on_tick: Callable[[], object] | None = None):
        self.source = source
        self.live_version = live_version
        self.reload = reload
        self.interval_s = interval_s
        self.on_tick = on_tick  # also run at every poll (the canary's sync: canary.json may have changed)
        self._rng = rng or random.Random()  # seeded from the OS: each process draws its own phase
        self._stop = threading.Event()
        self._failed: str | None = None  # a version that failed to load is not retried every tick
        self._problem: str | None = None  # the pointer problem last logged (logged again only when it changes)
        self._thread = threading.Thread(target=self._loop, name="uniret-pointer-watch", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self.interval_s * (1 + JITTER) + 1)

    def next_wait(self, first: bool = False) -> float:
        """Seconds until the next poll: a random phase first, then the interval with its jitter."""
        if first:
            return self.interval_s * self._rng.random()
        return self.interval_s * self._rng.uniform(1 - JITTER, 1 + JITTER)

    def _pointer_problem(self, problem: str | None) -> None:
        if problem is not None and problem != self._problem:
            log.warning("pointer watch: %s (reported once; still serving %s)", problem, self.live_version())
        elif problem is None and self._problem is not None:
            log.info("pointer watch: production.json readable again")
        self._problem = problem

    def check_once(self) -> bool:
        """Reload when the pointer names another version than the live one; True when it did."""
        try:
            found = self.source.production()
        except SourceError as exc:
            self._pointer_problem(str(exc))
            return False
        self._pointer_problem(None)
        if found is None:
            return False
        path, version = found
        if version != self._failed:
            self._failed = None  # the pointer moved on: a later return to that version is tried afresh
        if version in (self.live_version(), self._failed):
            return False
        try:
            self.reload(path, version)
        except Exception as exc:  # noqa: BLE001 - keep watching; the old bundle keeps serving
            self._failed = version
            log.error("pointer watch: reload of %s failed, still serving %s: %s (not retried until "
                      "production.json names another version)", version, self.live_version(), exc)
            return False
        return True

    def _loop(self) -> None:
        wait = self.next_wait(first=True)
        while not self._stop.wait(wait):
            self.check_once()
            if self.on_tick is not None:
                try:
                    self.on_tick()
                except Exception:  # noqa: BLE001 - the watch must outlive any one failure
                    log.exception("pointer watch: the per-poll hook failed")
            wait = self.next_wait()
