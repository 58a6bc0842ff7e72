"""Where UBI records live: <log_dir>/ubi_queries|ubi_events/<YYYY-MM-DD>/<writer-id>.jsonl.

A day folder is a span: the UTC day of its records' timestamps. A span is closed once its UTC day
is over. Each writing process has its own file (its writer id), so processes never share a file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

QUERIES = "ubi_queries"
EVENTS = "ubi_events"
KINDS = (QUERIES, EVENTS)
DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def _kind(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown log kind {kind!r} (one of {', '.join(KINDS)})")
    return kind


def span_dir(log_dir: str | Path, kind: str, day: str) -> Path:
    """The folder of one kind's records for one UTC day (YYYY-MM-DD)."""
    return Path(log_dir) / _kind(kind) / day


def day_of(timestamp: str) -> str:
    """The span (YYYY-MM-DD) of a record's UTC timestamp as uniret writes it (…Z)."""
    return timestamp[:10]


def list_days(log_dir: str | Path, kind: str | None = None) -> list[str]:
    """Days with a span folder (of `kind`, or of either kind), oldest first."""
    days: set[str] = set()
    for k in (kind,) if kind else KINDS:
        folder = Path(log_dir) / _kind(k)
        if folder.is_dir():
            days.update(p.name for p in folder.iterdir() if p.is_dir() and DAY.match(p.name))
    return sorted(days)


def closed_days(log_dir: str | Path, today: date | None = None) -> list[str]:
    """Days whose UTC day is over (before `today`, default the current UTC day), oldest first."""
    today = today or datetime.now(UTC).date()
    return [d for d in list_days(log_dir) if date.fromisoformat(d) < today]


@dataclass(frozen=True)
class LogLine:
    """One line of a span file: `record` is the parsed JSON object, None when the line is not one."""

    path: Path
    line: int  # 1-based
    text: str
    record: dict[str, Any] | None


def iter_records(log_dir: str | Path, kind: str, day: str) -> Iterator[LogLine]:
    """Every non-empty line of one kind's span files for `day`, file by file (sorted), in order.

    A damaged line (not JSON, or not an object) comes with `record` None so a reader can reject
    it with its file and line instead of stopping.
    """
    folder = span_dir(log_dir, kind, day)
    if not folder.is_dir():
        return
    for path in sorted(folder.glob("*.jsonl")):
        with path.open(encoding="utf-8", errors="replace") as fh:
            for number, text in enumerate(fh, 1):
                text = text.rstrip("\n")
                if not text.strip():
                    continue
                try:
                    parsed = json.loads(text)
                except ValueError:
                    parsed = None
                yield LogLine(path, number, text, parsed if isinstance(parsed, dict) else None)
