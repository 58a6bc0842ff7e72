"""Serving's side of a canary: the candidate loaded beside production, and which searches it shares.

The candidate lives in a second `ServingState` (the same load, checksum check, probe and lease rules
as production). `sync()` makes it match the registry's canary.json: load the running canary's
candidate, drop it when the canary ends. A search is interleaved when a canary runs, its candidate
is loaded, production is still the version the canary compares with, and a draw falls under the
canary's share; any other search is production's alone, so a candidate that fails to load (or a
damaged canary file) costs the canary its evidence, never a user their answer.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from uniret.interleaving import Interleaved, team_draft
from uniret.registry.canary import read_canary
from uniret.registry.errors import RegistryError
from uniret.serving.metrics import ServingMetrics
from uniret.serving.state import BundleLoadError, LiveBundle, Loader, NotReady, ServingState

log = logging.getLogger("uniret.serving")


class CanaryServing:
    """The candidate of the running canary (if any) and the interleaving draw."""

    def __init__(self, registry_root: Path | None, loader: Loader, probe_query: str, default_mode: str | None,
                 metrics: ServingMetrics, rng: random.Random | None = None):
        self.root = registry_root
        self.metrics = metrics
        self.candidate = ServingState(loader, probe_query, default_mode)
        self.plan: dict[str, Any] | None = None  # the running canary, once its candidate is loaded
        self._problem: str | None = None
        self._failed: str | None = None  # a candidate that failed to load: not retried at every poll
        self._sync_lock = threading.Lock()
        self._rng = rng or random.Random()
        self._rng_lock = threading.Lock()

    def sync(self, retry: bool = False) -> str:
        """Load or drop the candidate to match canary.json; returns what it did (for logs and /admin/canary).
        A candidate that failed to load is tried again only with `retry` (POST /admin/canary) or once
        canary.json names another one, not at every poll of the pointer watch."""
        if self.root is None:
            return "no registry: canaries need `uniret serve --registry`"
        with self._sync_lock:
            try:
                state = read_canary(self.root)
            except RegistryError as exc:
                self._report(str(exc))
                return f"canary file unreadable, no interleaving: {exc}"
            self._report(None)
            self.metrics.set_canary(state)
            if state is None or state["status"] != "running":
                self.plan = None
                if self.candidate.current is not None:
                    dropped = self.candidate.current.version
                    self.candidate.close()
                    log.info("canary: candidate %s dropped (%s)", dropped, state["status"] if state else "no canary")
                    return f"candidate {dropped} dropped"
                return "no canary running"
            live = self.candidate.current
            if live is None or live.version != state["candidate"]:
                self.plan = None
                if state["candidate"] == self._failed and not retry:
                    return f"candidate {self._failed} failed to load: production serves every search"
                try:
                    self.candidate.reload(self.root / state["candidate_bundle"], state["candidate"])
                except BundleLoadError as exc:
                    self._failed = state["candidate"]
                    log.error("canary: candidate %s failed to load, production serves every search: %s",
                              state["candidate"], exc)
                    return f"candidate {state['candidate']} failed to load: {exc}"
                self._failed = None
            self.plan = state
            return f"canary {state['id']}: candidate {state['candidate']} interleaved in {state['share']:.0%} of searches"

    def _report(self, problem: str | None) -> None:
        if problem is not None and problem != self._problem:
            log.error("canary: %s (reported once; production serves every search)", problem)
        self._problem = problem

    def draw(self, production_version: str) -> dict[str, Any] | None:
        """The running canary when this search is to be interleaved, else None."""
        plan = self.plan
        if plan is None or plan["production"] != production_version:
            return None
        with self._rng_lock:
            return plan if self._rng.random() < plan["share"] else None

    @contextmanager
    def lease(self) -> Iterator[LiveBundle | None]:
        """The loaded candidate for one search (None when it was dropped meanwhile)."""
        with ExitStack() as stack:
            try:
                live = stack.enter_context(self.candidate.lease())
            except NotReady:
                live = None
            yield live

    def interleave(self, production: list[tuple[str, float]], candidate: list[tuple[str, float]],
                   k: int) -> tuple[list[tuple[str, float]], Interleaved]:
        """The interleaved answer (each document with the score its team's list gave it) and its teams."""
        with self._rng_lock:
            mixed = team_draft([d for d, _ in production], [d for d, _ in candidate], k, self._rng)
        scores = {"p": dict(production), "c": dict(candidate)}
        return [(d, scores[t][d]) for d, t in zip(mixed.docs, mixed.teams, strict=True)], mixed

    def close(self) -> None:
        self.candidate.close()
