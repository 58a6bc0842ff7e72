"""Forget a client: rewrite every raw span file without that client's records."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from uniret.ubi.layout import EVENTS, QUERIES, list_days, span_dir
from uniret.utils.files import atomic_open


@dataclass(frozen=True)
class Forgotten:
    """What `forget_client` removed."""

    files_rewritten: int
    queries_removed: int
    events_removed: int

    @property
    def records_removed(self) -> int:
        return self.queries_removed + self.events_removed


def _names_client(text: str, client_id: str) -> bool:
    try:
        record = json.loads(text)
    except ValueError:
        return client_id in text  # a damaged line naming the client is still the client's
    return isinstance(record, dict) and record.get("client_id") == client_id


def forget_client(log_dir: str | Path, client_id: str) -> Forgotten:
    """Rewrite every span file (every day, both kinds) without `client_id`'s records.

    Each file is replaced atomically (temp file renamed over it), so a crash leaves it whole, old or
    new. A live writer appending to a file while it is rewritten could lose those appends: run it
    with serving's logging stopped, or on closed spans.
    """
    if not isinstance(client_id, str) or not client_id.strip():
        raise ValueError("client_id must be a non-blank string")
    files = 0
    removed = {QUERIES: 0, EVENTS: 0}
    for kind in (QUERIES, EVENTS):
        for day in list_days(log_dir, kind):
            for path in sorted(span_dir(log_dir, kind, day).glob("*.jsonl")):
                lines = path.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True)
                keep = [t for t in lines if not (t.strip() and _names_client(t, client_id))]
                if len(keep) == len(lines):
                    continue
                with atomic_open(path) as fh:
                    fh.writelines(keep)
                files += 1
                removed[kind] += len(lines) - len(keep)
    return Forgotten(files, removed[QUERIES], removed[EVENTS])
