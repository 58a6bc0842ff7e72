"""What the click estimators read: impressions (one shown list each) and their clicks, built from UBI records.

An `Impression` is one answer as the user met it: the query (its text and a stable key), the doc ids
shown in order (position p, 1-based, is `doc_ids[p - 1]`; the tuple's length is the shown depth),
the positions clicked, the ranker that produced the list (the bundle version and mode, or an
arm label) and the UTC day it was shown. `Sessions` holds many and aggregates them into
per-(query, doc, position) counts, the form every estimator works on.

`sessions_from_ubi` joins UBI 1.3.0 query records and events (docs/learning-loop.md; positions
1-based). The rule: an answer's shown depth is the deepest `impression` event's ordinal when the
answer has impression events, else every hit of the query record (`query_response_hit_ids`: what
serving returned is what the client rendered); a click deeper than that extends it (a click proves
the result was shown). Clicks are `click` events; their ordinal gives the position. An answer with
no click still counts: it is an impression whose results were all skipped, the evidence CTRs and
the click model need. Structurally malformed records raise `ClickDataError` naming the record and
field; events that cannot be placed (unknown query_id, an object not shown at that ordinal) are
counted in the `JoinReport` and left out.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from uniret.core.errors import DataError, DataProblem

IMPRESSION = "impression"
CLICK = "click"
UNKNOWN_RANKER = "unknown"
RANKER_ATTRIBUTES = ("bundle_version", "mode", "interleaved_with")  # query_attributes naming the list's producer (a canary's lists: their own)


class ClickDataError(DataError):
    """Click data that cannot be read as sessions: names the source, the record (1-based) and the field."""

    def __init__(self, message: str, *, source: str = "click sessions", line: int | None = None,
                 field: str | None = None):
        super().__init__(DataProblem(Path(source), line, field, message))


def query_key(text: str) -> str:
    """A stable id for a query text (lower-cased, spaces collapsed): one judged query per distinct text."""
    norm = " ".join(text.lower().split())
    return "q" + hashlib.sha1(norm.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class Impression:
    """One shown list and what the user clicked in it; positions are 1-based."""

    query_key: str
    query: str
    doc_ids: tuple[str, ...]  # in the order shown; len(doc_ids) is the shown depth
    clicks: frozenset[int] = frozenset()  # positions clicked
    ranker: str = UNKNOWN_RANKER  # what produced the list: bundle version/mode, or an arm label
    query_id: str = ""
    client_id: str = ""
    day: str = ""  # the UTC day shown (YYYY-MM-DD), from the query record's timestamp; "": unknown

    def __post_init__(self) -> None:
        if not self.doc_ids:
            raise ClickDataError("an impression must show at least one document", source=self.query_id or "impression",
                                 field="doc_ids")
        if len(set(self.doc_ids)) != len(self.doc_ids):
            raise ClickDataError("a document is shown twice in one list", source=self.query_id or "impression",
                                 field="doc_ids")
        bad = sorted(p for p in self.clicks if not 1 <= p <= len(self.doc_ids))
        if bad:
            raise ClickDataError(f"clicked positions {bad} outside the {len(self.doc_ids)} shown (1-based)",
                                 source=self.query_id or "impression", field="clicks")

    @property
    def depth(self) -> int:
        return len(self.doc_ids)


@dataclass(frozen=True)
class PairCounts:
    """Impressions and clicks per (query key, doc) pair and 1-based position, over positions 1..depth.

    Row i: pair `pairs[pair[i]]` was shown `shown[i]` times at `position[i]` and clicked `clicked[i]`
    times there. Rows are unique per (pair, position) and sorted by pair, then position.
    """

    depth: int
    pairs: tuple[tuple[str, str], ...]
    pair: np.ndarray
    position: np.ndarray
    shown: np.ndarray
    clicked: np.ndarray

    @property
    def impressions(self) -> int:
        return int(self.shown.sum())

    @property
    def clicks(self) -> int:
        return int(self.clicked.sum())

    def per_position(self) -> tuple[np.ndarray, np.ndarray]:
        """(impressions, clicks) at positions 1..depth (index 0 is position 1)."""
        at = self.position - 1
        return (np.bincount(at, self.shown, self.depth).astype(np.int64),
                np.bincount(at, self.clicked, self.depth).astype(np.int64))


class Sessions:
    """Impressions in log order, with the aggregate counts the estimators read."""

    def __init__(self, impressions: Iterable[Impression]):
        self.impressions: tuple[Impression, ...] = tuple(impressions)
        self._texts: dict[str, str] = {}
        for imp in self.impressions:
            self._texts.setdefault(imp.query_key, imp.query)

    def __len__(self) -> int:
        return len(self.impressions)

    def __iter__(self) -> Iterator[Impression]:
        return iter(self.impressions)

    def query_text(self, key: str) -> str:
        """The first logged text of a query key."""
        return self._texts[key]

    def rankers(self) -> dict[str, int]:
        """{ranker label: impressions}, most frequent first."""
        return dict(Counter(imp.ranker for imp in self.impressions).most_common())

    def only(self, rankers: Iterable[str]) -> Sessions:
        """The impressions produced by these rankers."""
        keep = set(rankers)
        return Sessions(imp for imp in self.impressions if imp.ranker in keep)

    def groups(self, by: str) -> dict[str, Sessions]:
        """{label: its impressions}, grouped by `ranker` or by `day` (raises when a day is unknown)."""
        if by not in ("ranker", "day"):
            raise ValueError(f"group by 'ranker' or 'day', got {by!r}")
        grouped: dict[str, list[Impression]] = {}
        for imp in self.impressions:
            label = getattr(imp, by)
            if by == "day" and not label:
                raise ClickDataError("has no UTC day (the query record's timestamp): it cannot be grouped by day",
                                     source=imp.query_id or "impression", field="timestamp")
            grouped.setdefault(label, []).append(imp)
        return {label: Sessions(imps) for label, imps in grouped.items()}

    def counts(self, depth: int) -> PairCounts:
        """Aggregate impressions and clicks per (pair, position) over positions 1..depth."""
        if depth < 1:
            raise ValueError(f"depth must be at least 1, got {depth}")
        index: dict[tuple[str, str], int] = {}
        pair_ids: list[int] = []
        positions: list[int] = []
        clicked: list[bool] = []
        for imp in self.impressions:
            for p, doc in enumerate(imp.doc_ids[:depth], 1):
                pair_ids.append(index.setdefault((imp.query_key, doc), len(index)))
                positions.append(p)
                clicked.append(p in imp.clicks)
        pairs = tuple(index)
        if not pair_ids:
            empty = np.zeros(0, dtype=np.int64)
            return PairCounts(depth, pairs, empty, empty, empty, empty)
        code = np.asarray(pair_ids, dtype=np.int64) * depth + (np.asarray(positions, dtype=np.int64) - 1)
        cells, inverse = np.unique(code, return_inverse=True)
        shown = np.bincount(inverse).astype(np.int64)
        clicks = np.bincount(inverse, np.asarray(clicked, dtype=float)).astype(np.int64)
        return PairCounts(depth, pairs, cells // depth, cells % depth + 1, shown, clicks)


@dataclass
class JoinReport:
    """What joining UBI records found: counts of what was used and what was left out, and why."""

    queries: int = 0  # query records read
    impressions: int = 0  # answers turned into impressions
    shown_from_impressions: int = 0  # of which the shown depth came from impression events
    shown_from_hits: int = 0  # ... from the query record's hits (no impression event)
    empty_answers: int = 0  # query records that showed no hit
    events: int = 0  # events read
    clicks: int = 0  # click events placed
    duplicate_clicks: int = 0  # a second click on the same position of the same answer (counted once)
    impression_events: int = 0  # impression events placed
    unknown_query: int = 0  # events whose query_id has no query record here (another span, or lost)
    not_shown: int = 0  # events naming an object not shown at their ordinal (or an ordinal past the hits)
    ignored_actions: dict[str, int] = field(default_factory=dict)  # other action_names, not used

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class UbiJoin:
    sessions: Sessions
    report: JoinReport


def _need_text(obj: Mapping[str, Any], name: str, source: str, line: int, prefix: str = "") -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value.strip():
        raise ClickDataError(f"must be a non-empty string, got {type(value).__name__}", source=source, line=line,
                             field=prefix + name)
    return value


def _need_dict(value: Any, name: str, source: str, line: int) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ClickDataError(f"must be an object, got {type(value).__name__}", source=source, line=line, field=name)
    return value


def _utc_day(value: Any) -> str:
    """The UTC date of an ISO 8601 timestamp with a zone, or "" (the ingestion's checks refuse such records)."""
    if not isinstance(value, str) or not value:
        return ""
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        return ""
    return when.astimezone(UTC).date().isoformat() if when.tzinfo is not None else ""


def _ranker(attributes: Mapping[str, Any], fields: tuple[str, ...]) -> str:
    parts = [str(attributes[f]) for f in fields if attributes.get(f) not in (None, "")]
    return "/".join(parts) if parts else UNKNOWN_RANKER


def sessions_from_ubi(queries: Iterable[Mapping[str, Any]], events: Iterable[Mapping[str, Any]], *,
                      ranker_attributes: tuple[str, ...] = RANKER_ATTRIBUTES,
                      source: str = "UBI records") -> UbiJoin:
    """Join UBI query records and events into impressions (the module docstring states the rule).

    `ranker_attributes`: the query_attributes whose values, joined by "/", label the list's producer
    (default bundle_version/mode; absent: "unknown"). `source` names the input in errors, which give
    the 1-based record number within the queries or the events.
    """
    report = JoinReport()
    answers: dict[str, dict[str, Any]] = {}
    for line, rec in enumerate(queries, 1):
        where = f"{source} (query records)"
        rec = _need_dict(rec, "query record", where, line)
        qid = _need_text(rec, "query_id", where, line)
        text = _need_text(rec, "user_query", where, line)
        hits = rec.get("query_response_hit_ids")
        if not isinstance(hits, list) or not all(isinstance(h, str) and h for h in hits):
            raise ClickDataError("must be a list of doc ids (strings) in the order shown", source=where, line=line,
                                 field="query_response_hit_ids")
        if len(set(hits)) != len(hits):
            raise ClickDataError("a doc id appears twice in one answer", source=where, line=line,
                                 field="query_response_hit_ids")
        if qid in answers:
            raise ClickDataError(f"query_id {qid!r} logged twice", source=where, line=line, field="query_id")
        attrs = rec.get("query_attributes") or {}
        attrs = _need_dict(attrs, "query_attributes", where, line)
        client = rec.get("client_id") if isinstance(rec.get("client_id"), str) else ""
        answers[qid] = {"text": text, "hits": hits, "ranker": _ranker(attrs, ranker_attributes), "client": client,
                        "day": _utc_day(rec.get("timestamp")), "impressions": set(), "clicks": set()}
        report.queries += 1

    ignored: Counter = Counter()
    for line, ev in enumerate(events, 1):
        where = f"{source} (events)"
        ev = _need_dict(ev, "event", where, line)
        report.events += 1
        action = _need_text(ev, "action_name", where, line)
        if action not in (IMPRESSION, CLICK):
            ignored[action] += 1
            continue
        qid = _need_text(ev, "query_id", where, line)
        attrs = _need_dict(ev.get("event_attributes"), "event_attributes", where, line)
        obj = _need_dict(attrs.get("object"), "event_attributes.object", where, line)
        object_id = _need_text(obj, "object_id", where, line, prefix="event_attributes.object.")
        position = _need_dict(attrs.get("position"), "event_attributes.position", where, line)
        ordinal = position.get("ordinal")
        if isinstance(ordinal, bool) or not isinstance(ordinal, int) or ordinal < 1:
            raise ClickDataError(f"must be an integer of 1 or more (1 = top hit), got {ordinal!r}", source=where,
                                 line=line, field="event_attributes.position.ordinal")
        answer = answers.get(qid)
        if answer is None:
            report.unknown_query += 1
            continue
        hits = answer["hits"]
        if ordinal > len(hits) or hits[ordinal - 1] != object_id:
            report.not_shown += 1
            continue
        if action == CLICK:
            if ordinal in answer["clicks"]:
                report.duplicate_clicks += 1
            else:
                answer["clicks"].add(ordinal)
                report.clicks += 1
        else:
            answer["impressions"].add(ordinal)
            report.impression_events += 1
    report.ignored_actions = dict(ignored.most_common())

    impressions = []
    for qid, answer in answers.items():
        hits = answer["hits"]
        if not hits:
            report.empty_answers += 1
            continue
        if answer["impressions"]:
            depth = max(max(answer["impressions"]), max(answer["clicks"], default=0))
            report.shown_from_impressions += 1
        else:
            depth = len(hits)
            report.shown_from_hits += 1
        impressions.append(Impression(query_key(answer["text"]), answer["text"], tuple(hits[:depth]),
                                      frozenset(answer["clicks"]), answer["ranker"], qid, answer["client"],
                                      answer["day"]))
    report.impressions = len(impressions)
    return UbiJoin(Sessions(impressions), report)
