"""The UBI 1.3.0 record shapes uniret writes and accepts (docs/learning-loop.md).

A query record is built by serving (`query_record`); an event comes from a client and is checked
by `validate_event`, which returns it normalised (timestamp in UTC with a `Z`) or raises
`RecordError` naming the field. Positions are 1-based (ordinal 1 = top hit).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

APPLICATION = "uniret"
OBJECT_ID_FIELD = "doc_id"
MAX_ID_CHARS = 128  # query_id, client_id, session_id, action_name
MAX_OBJECT_ID_CHARS = 512
MAX_QUERY_CHARS = 10_000
POSITIONED_ACTIONS = ("impression", "click")  # these must name the object and its position
EVENT_FIELDS = {"application", "action_name", "query_id", "client_id", "session_id", "timestamp",
                "event_attributes", "message_type", "message", "user_id"}  # the last three: optional UBI fields
QUERY_FIELDS = {"application", "query_id", "client_id", "user_query", "timestamp", "object_id_field",
                "query_response_id", "query_response_hit_ids", "query_attributes"}


class RecordError(ValueError):
    """A record breaks the contract; `field` is the dotted path of the offending field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def utc_timestamp(when: datetime | float | None = None) -> str:
    """ISO 8601 in UTC with milliseconds and a `Z` (e.g. 2026-12-05T01:02:03.456Z); None: now."""
    if when is None:
        when = datetime.now(UTC)
    elif isinstance(when, int | float):
        when = datetime.fromtimestamp(when, UTC)
    return when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def parse_timestamp(value: Any, field: str = "timestamp") -> datetime:
    """An aware datetime from an ISO 8601 string with a zone (`Z` or an offset)."""
    if not isinstance(value, str) or not value:
        raise RecordError(field, "must be an ISO 8601 string with a time zone, e.g. 2026-12-05T01:02:03.456Z")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError as exc:
        raise RecordError(field, f"not ISO 8601: {value[:64]!r}") from exc
    if parsed.tzinfo is None:
        raise RecordError(field, f"has no time zone: {value[:64]!r} (add Z for UTC)")
    return parsed


def query_record(query_id: str, client_id: str, user_query: str, hit_ids: list[str],
                 attributes: dict[str, Any], timestamp: str | None = None) -> dict[str, Any]:
    """The query record of one answer: `hit_ids` in the order shown (position 1 first)."""
    return {
        "application": APPLICATION, "query_id": query_id, "client_id": client_id, "user_query": user_query,
        "timestamp": timestamp or utc_timestamp(), "object_id_field": OBJECT_ID_FIELD,
        "query_response_id": query_id, "query_response_hit_ids": list(hit_ids), "query_attributes": attributes,
    }


def _text(obj: dict, field: str, limit: int, required: bool = True, prefix: str = "") -> str | None:
    value = obj.get(field)
    name = prefix + field
    if value is None:
        if required:
            raise RecordError(name, "is required")
        return None
    if not isinstance(value, str):
        raise RecordError(name, f"must be a string, got {type(value).__name__}")
    if not value.strip():
        raise RecordError(name, "must not be blank")
    if len(value) > limit:
        raise RecordError(name, f"longer than {limit} characters")
    return value


def _ordinal(value: Any, field: str, depth: int | None) -> int:
    # bool is an int in Python; 1.0 or "1" is a client bug, not a position
    if isinstance(value, bool) or not isinstance(value, int):
        raise RecordError(field, f"must be an integer (1 = top hit), got {type(value).__name__}")
    if value < 1:
        raise RecordError(field, f"must be 1 or more (positions are 1-based), got {value}")
    if depth is not None and value > depth:
        raise RecordError(field, f"{value} is beyond the {depth} hits shown for this query")
    return value


def validate_event(obj: Any, now: datetime | None = None, max_skew_s: float = 300.0) -> dict[str, Any]:
    """The event, checked against the contract and normalised; raises `RecordError` naming the field.

    Checks: a JSON object with known top-level fields; action_name, query_id, client_id (and
    session_id if given) non-blank strings of bounded length; timestamp ISO 8601 with a zone and not
    more than `max_skew_s` in the future; for impressions and clicks, event_attributes.object.object_id
    and event_attributes.position.ordinal (an integer >= 1). `application` defaults to uniret.
    """
    if not isinstance(obj, dict):
        raise RecordError("event", f"must be a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - EVENT_FIELDS)
    if unknown:
        raise RecordError(unknown[0], f"unknown field (allowed: {', '.join(sorted(EVENT_FIELDS))})")
    event = dict(obj)
    event["application"] = _text(obj, "application", MAX_ID_CHARS, required=False) or APPLICATION
    action = _text(obj, "action_name", MAX_ID_CHARS)
    _text(obj, "query_id", MAX_ID_CHARS)
    _text(obj, "client_id", MAX_ID_CHARS)
    _text(obj, "session_id", MAX_ID_CHARS, required=False)
    when = parse_timestamp(obj.get("timestamp"))
    now = now or datetime.now(UTC)
    if (when - now).total_seconds() > max_skew_s:
        raise RecordError("timestamp", f"{obj['timestamp']} is in the future (more than {max_skew_s:g} s ahead of "
                                       f"the server's clock {utc_timestamp(now)})")
    event["timestamp"] = utc_timestamp(when)
    attrs = obj.get("event_attributes")
    positioned = action in POSITIONED_ACTIONS
    if attrs is None and not positioned:
        return event
    if not isinstance(attrs, dict):
        raise RecordError("event_attributes", "must be an object with `object` and `position`")
    attrs = dict(attrs)
    target = attrs.get("object")
    if target is not None or positioned:
        if not isinstance(target, dict):
            raise RecordError("event_attributes.object", "must be an object with object_id")
        _text(target, "object_id", MAX_OBJECT_ID_CHARS, prefix="event_attributes.object.")
        field = target.get("object_id_field", OBJECT_ID_FIELD)
        if field != OBJECT_ID_FIELD:
            raise RecordError("event_attributes.object.object_id_field", f"must be {OBJECT_ID_FIELD!r}, got {field!r}")
        attrs["object"] = {**target, "object_id_field": OBJECT_ID_FIELD}
    position = attrs.get("position")
    if position is not None or positioned:
        if not isinstance(position, dict) or "ordinal" not in position:
            raise RecordError("event_attributes.position.ordinal", "is required (1 = top hit)")
        _ordinal(position["ordinal"], "event_attributes.position.ordinal", None)
    event["event_attributes"] = attrs
    return event


def check_shown(event: dict[str, Any], hit_ids: list[str]) -> None:
    """Raise `RecordError` when a positioned event does not match the answer that showed `hit_ids`."""
    attrs = event.get("event_attributes") or {}
    if "position" not in attrs:
        return
    ordinal = _ordinal(attrs["position"]["ordinal"], "event_attributes.position.ordinal", len(hit_ids))
    object_id = attrs["object"]["object_id"]
    if object_id not in hit_ids:
        raise RecordError("event_attributes.object.object_id", f"{object_id!r} is not among the hits of query "
                                                               f"{event['query_id']!r}")
    if hit_ids[ordinal - 1] != object_id:
        raise RecordError("event_attributes.position.ordinal",
                          f"{object_id!r} was shown at position {hit_ids.index(object_id) + 1}, not {ordinal}")


def validate_query_record(obj: Any) -> dict[str, Any]:
    """The query record, checked against the contract (e.g. one read from an OpenSearch/Solr export)."""
    if not isinstance(obj, dict):
        raise RecordError("query", f"must be a JSON object, got {type(obj).__name__}")
    unknown = sorted(set(obj) - QUERY_FIELDS)
    if unknown:
        raise RecordError(unknown[0], f"unknown field (allowed: {', '.join(sorted(QUERY_FIELDS))})")
    for field in ("query_id", "client_id"):
        _text(obj, field, MAX_ID_CHARS)
    _text(obj, "user_query", MAX_QUERY_CHARS)
    parse_timestamp(obj.get("timestamp"))
    hits = obj.get("query_response_hit_ids")
    if not isinstance(hits, list) or not all(isinstance(h, str) and h for h in hits):
        raise RecordError("query_response_hit_ids", "must be a list of doc id strings, in the order shown")
    attrs = obj.get("query_attributes", {})
    if not isinstance(attrs, dict):
        raise RecordError("query_attributes", "must be an object")
    k = attrs.get("k")
    if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 1):
        raise RecordError("query_attributes.k", f"must be a positive integer, got {k!r}")
    return obj
