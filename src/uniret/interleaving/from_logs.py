"""A canary's interleaved impressions, read back from the UBI log serving wrote.

Serving logs each interleaved answer as a query record whose query_attributes carry
{"canary": {"id", "teams"}}; the clicks arrive as UBI events. This joins the two (the feedback
stage's join, uniret.clicks.sessions) for the days since the canary began, the open day included:
a canary is decided on today's traffic, unlike training, which waits for closed days.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uniret.clicks.sessions import sessions_from_ubi
from uniret.interleaving.credit import Outcome, credit
from uniret.ubi import EVENTS, QUERIES, iter_records, list_days


@dataclass
class CanaryTraffic:
    """The outcomes of one canary's impressions, and what was read to get them."""

    outcomes: list[Outcome] = field(default_factory=list)
    query_records: int = 0  # interleaved answers logged for this canary
    events: int = 0  # events naming one of them
    damaged_lines: int = 0  # lines that are not JSON objects (the feedback stage reports them by file and line)

    def to_dict(self) -> dict[str, Any]:
        return {"impressions": len(self.outcomes), "query_records": self.query_records, "events": self.events,
                "damaged_lines": self.damaged_lines}


def canary_traffic(log_dir: str | Path, canary_id: str, since_day: str) -> CanaryTraffic:
    """Outcomes of every logged answer of canary `canary_id` on days from `since_day` (YYYY-MM-DD) on."""
    out = CanaryTraffic()
    days = [d for d in list_days(log_dir) if d >= since_day]
    queries: list[dict[str, Any]] = []
    teams: dict[str, str] = {}
    for day in days:
        for line in iter_records(log_dir, QUERIES, day):
            rec = line.record
            if rec is None:
                out.damaged_lines += 1
                continue
            mark = (rec.get("query_attributes") or {}).get("canary")
            if isinstance(mark, dict) and mark.get("id") == canary_id and isinstance(mark.get("teams"), str):
                queries.append(rec)
                teams[str(rec.get("query_id"))] = mark["teams"]
    events: list[dict[str, Any]] = []
    for day in days:
        for line in iter_records(log_dir, EVENTS, day):
            if line.record is None:
                out.damaged_lines += 1
            elif line.record.get("query_id") in teams:
                events.append(line.record)
    out.query_records, out.events = len(queries), len(events)
    join = sessions_from_ubi(queries, events, source=f"{log_dir} (canary {canary_id})")
    for imp in join.sessions:
        out.outcomes.append(credit(imp.query_key, teams[imp.query_id][: imp.depth], imp.clicks))
    return out
