"""Event and query record checks: each bad field is named."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from uniret.ubi import RecordError, query_record, utc_timestamp, validate_event, validate_query_record
from uniret.ubi.records import check_shown

NOW = datetime(2026, 12, 5, 1, 2, 3, tzinfo=UTC)


def event(**over) -> dict:
    base = {"action_name": "click", "query_id": "q1", "client_id": "c1", "timestamp": "2026-12-05T01:00:00.000Z",
            "event_attributes": {"object": {"object_id": "d2", "object_id_field": "doc_id"}, "position": {"ordinal": 2}}}
    return {**base, **over}


def test_valid_event_is_normalised():
    out = validate_event(event(timestamp="2026-12-05T02:00:00+01:00"), now=NOW)
    assert out["timestamp"] == "2026-12-05T01:00:00.000Z" and out["application"] == "uniret"


@pytest.mark.parametrize(("bad", "field"), [
    ({"query_id": None}, "query_id"),
    ({"client_id": 7}, "client_id"),
    ({"colour": "red"}, "colour"),
    ({"timestamp": "yesterday"}, "timestamp"),
    ({"timestamp": "2026-12-05T01:00:00"}, "timestamp"),
    ({"timestamp": utc_timestamp(NOW + timedelta(hours=1))}, "timestamp"),
    ({"event_attributes": {"object": {"object_id": "d2"}, "position": {"ordinal": 0}}}, "event_attributes.position.ordinal"),
    ({"event_attributes": {"object": {"object_id": "d2"}, "position": {"ordinal": "2"}}}, "event_attributes.position.ordinal"),
    ({"event_attributes": {"object": {"object_id": "d2"}, "position": {"ordinal": True}}}, "event_attributes.position.ordinal"),
    ({"event_attributes": {"position": {"ordinal": 1}}}, "event_attributes.object"),
])
def test_bad_event_names_the_field(bad, field):
    with pytest.raises(RecordError) as err:
        validate_event(event(**bad), now=NOW)
    assert err.value.field == field


def test_check_shown_position_and_object():
    ok = validate_event(event(), now=NOW)
    check_shown(ok, ["d1", "d2", "d3"])
    with pytest.raises(RecordError, match="not among the hits"):
        check_shown(ok, ["d1", "d3"])
    with pytest.raises(RecordError, match="beyond the 1 hits"):
        check_shown(ok, ["d2"])
    with pytest.raises(RecordError, match="shown at position 1"):
        check_shown(ok, ["d2", "d1"])


def test_query_record_round_trip():
    rec = query_record("q1", "c1", "cells", ["d1", "d2"], {"bundle_version": "v1", "mode": "uni", "k": 2})
    assert validate_query_record(rec) is rec and rec["query_response_hit_ids"] == ["d1", "d2"]
    with pytest.raises(RecordError, match="query_response_hit_ids"):
        validate_query_record({**rec, "query_response_hit_ids": "d1"})
