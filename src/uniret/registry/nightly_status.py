"""The nightly's recent outcomes, kept in the registry for serving to export: <registry>/nightly.json.

    {"last_run": {"finished_at", "outcome", "code", "summary"[, "refresh"]}, "last_success_at",
     "blocked_in_row", "failed_in_row", "runs": {outcome: count}}

Why a file in the registry rather than a Prometheus textfile or a Pushgateway: the nightly's pods are
short-lived and land on any node, while every serving replica already mounts the registry and is
scraped; serving reads this file at each scrape (uniret.serving.ops_metrics), so the alert rules
see the nightly's state with no extra component. Rewritten atomically (temp file + rename) under
the registry lock after each run; readers see the old or the new file, never half of one.
"""

from __future__ import annotations

import calendar
import logging
import time
from pathlib import Path
from typing import Any

from uniret.config.notify import NIGHTLY_OUTCOMES
from uniret.registry.errors import RegistryError
from uniret.registry.json_files import read_registry_json
from uniret.registry.pointer import now_iso, registry_lock
from uniret.utils.files import atomic_write_json

log = logging.getLogger("uniret.registry")

NIGHTLY_STATUS = "nightly.json"
OUTCOMES = NIGHTLY_OUTCOMES


def iso_seconds(stamp: str) -> float:
    """Seconds since the epoch of a `now_iso()` stamp (YYYY-MM-DDTHH:MM:SSZ, UTC); ValueError otherwise."""
    return float(calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")))


def read_status(root: str | Path) -> dict[str, Any] | None:
    """The recorded outcomes, or None before the first recorded run; RegistryError names a damaged file."""
    path = Path(root) / NIGHTLY_STATUS
    data = read_registry_json(path)
    if data is None:
        return None
    if not isinstance(data, dict) or not isinstance(data.get("last_run"), dict):
        raise RegistryError(f"{path}: field 'last_run' missing or not an object")
    return data


def next_status(previous: dict[str, Any] | None, outcome: str, code: int, summary: str, finished_at: str,
                refresh: dict[str, Any] | None = None) -> dict[str, Any]:
    """The status after one more run: streaks grow on a repeat and restart on any other outcome.
    `refresh`: what the night's corpus refresh did (last_run.refresh; absent when none ran)."""
    if outcome not in OUTCOMES:
        raise ValueError(f"unknown nightly outcome {outcome!r}; known: {', '.join(OUTCOMES)}")
    prev = previous or {}
    runs = {name: int((prev.get("runs") or {}).get(name, 0)) for name in OUTCOMES}
    runs[outcome] += 1
    last_run: dict[str, Any] = {"finished_at": finished_at, "outcome": outcome, "code": code, "summary": summary}
    if refresh is not None:
        last_run["refresh"] = refresh
    return {
        "last_run": last_run,
        "last_success_at": finished_at if outcome == "ok" else prev.get("last_success_at"),
        "blocked_in_row": int(prev.get("blocked_in_row", 0)) + 1 if outcome == "blocked" else 0,
        "failed_in_row": int(prev.get("failed_in_row", 0)) + 1 if outcome == "failed" else 0,
        "runs": runs,
    }


def record_outcome(root: str | Path, outcome: str, code: int, summary: str,
                   refresh: dict[str, Any] | None = None) -> dict[str, Any]:
    """Add one finished run to <root>/nightly.json (created with the registry folder when absent);
    `refresh`: what its corpus refresh did, if one ran."""
    root = Path(root)
    root.mkdir(parents=True, exist_ok=True)
    with registry_lock(root):
        try:
            previous = read_status(root)
        except RegistryError as exc:  # restart the streaks rather than stop recording every later run
            log.warning("%s; starting it afresh", exc)
            previous = None
        status = next_status(previous, outcome, code, summary, now_iso(), refresh)
        atomic_write_json(root / NIGHTLY_STATUS, status)
    return status
