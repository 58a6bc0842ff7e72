"""Retention: spans older than `feedback.retention_days` are deleted."""

from __future__ import annotations

import shutil
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from uniret.ubi.layout import KINDS, list_days, span_dir


def delete_expired(log_dir: str | Path, retention_days: int, today: date | None = None) -> list[str]:
    """Delete the span folders of both kinds whose day is more than `retention_days` before `today`
    (UTC; default now); returns the deleted days, oldest first. Day `today - retention_days` is kept."""
    if retention_days <= 0:
        raise ValueError(f"retention_days must be positive, got {retention_days}")
    today = today or datetime.now(UTC).date()
    oldest_kept = today - timedelta(days=retention_days)
    deleted = [d for d in list_days(log_dir) if date.fromisoformat(d) < oldest_kept]
    for day in deleted:
        for kind in KINDS:
            shutil.rmtree(span_dir(log_dir, kind, day), ignore_errors=True)
    return deleted
