"""Impressions joined from UBI records: which positions were shown, which clicked, by which ranker."""

from __future__ import annotations

import pytest

from uniret.clicks.sessions import ClickDataError, Impression, Sessions, query_key, sessions_from_ubi
from uniret.core.errors import DataError


def _query(qid: str, hits: list[str], text: str = "Vitamin D", bundle: str = "b1", mode: str = "hybrid_fast") -> dict:
    return {"application": "uniret", "query_id": qid, "client_id": "c1", "user_query": text,
            "timestamp": "2026-12-04T10:00:00.000Z", "object_id_field": "doc_id", "query_response_id": qid,
            "query_response_hit_ids": hits, "query_attributes": {"bundle_version": bundle, "mode": mode, "k": len(hits)}}


def _event(action: str, qid: str, doc: str, ordinal, **extra) -> dict:
    return {"application": "uniret", "action_name": action, "query_id": qid, "client_id": "c1",
            "timestamp": "2026-12-04T10:00:01.000Z",
            "event_attributes": {"object": {"object_id": doc, "object_id_field": "doc_id"},
                                 "position": {"ordinal": ordinal}}, **extra}


def test_join_takes_the_shown_depth_from_impressions_else_from_the_hits_and_clicks_by_ordinal():
    queries = [_query("a", ["d1", "d2", "d3", "d4"]), _query("b", ["d3", "d1", "d2"], bundle="b2"),
               _query("c", ["d5", "d6"], text="  vitamin   d ")]
    events = [
        _event("impression", "a", "d1", 1), _event("impression", "a", "d2", 2), _event("click", "a", "d2", 2),
        _event("click", "a", "d2", 2),  # a double click counts once
        _event("click", "b", "d2", 3),  # no impressions logged for b: every hit counts as shown
        _event("click", "a", "d4", 3),  # d4 was at 4, not 3: not placed
        _event("click", "zzz", "d1", 1),  # a query outside these records
        _event("add_to_cart", "a", "d1", 1),
    ]
    join = sessions_from_ubi(queries, events)
    by_id = {imp.query_id: imp for imp in join.sessions}
    assert by_id["a"].doc_ids == ("d1", "d2") and by_id["a"].clicks == {2}  # deepest impression: 2
    assert by_id["b"].doc_ids == ("d3", "d1", "d2") and by_id["b"].clicks == {3}
    assert by_id["c"].doc_ids == ("d5", "d6") and by_id["c"].clicks == frozenset()  # no click: still an impression
    assert by_id["a"].ranker == "b1/hybrid_fast" and by_id["b"].ranker == "b2/hybrid_fast"
    assert by_id["a"].query_key == by_id["c"].query_key == query_key("vitamin d")  # one key per normalised text
    r = join.report
    assert (r.queries, r.impressions, r.clicks, r.duplicate_clicks, r.impression_events) == (3, 3, 2, 1, 2)
    assert (r.unknown_query, r.not_shown, r.ignored_actions) == (1, 1, {"add_to_cart": 1})
    assert (r.shown_from_impressions, r.shown_from_hits, r.events) == (1, 2, 8)
    assert join.sessions.rankers() == {"b1/hybrid_fast": 2, "b2/hybrid_fast": 1}
    assert len(join.sessions.only(["b2/hybrid_fast"])) == 1


def test_each_impression_carries_its_utc_day_and_sessions_group_by_it():
    late = _query("b", ["d1"]) | {"timestamp": "2026-12-04T23:30:00-02:00"}  # 01:30 UTC on the 5th
    undated = _query("c", ["d1"]) | {"timestamp": "yesterday"}
    sessions = sessions_from_ubi([_query("a", ["d1"]), late, undated], []).sessions
    assert [imp.day for imp in sessions] == ["2026-12-04", "2026-12-05", ""]
    assert {day: len(s) for day, s in Sessions(list(sessions)[:2]).groups("day").items()} == {
        "2026-12-04": 1, "2026-12-05": 1}
    with pytest.raises(ClickDataError, match=r"c \[timestamp\]: has no UTC day"):
        sessions.groups("day")
    assert set(sessions.groups("ranker")) == {"b1/hybrid_fast"}


def test_a_click_below_the_deepest_impression_extends_the_shown_depth():
    join = sessions_from_ubi([_query("a", ["d1", "d2", "d3", "d4"])],
                             [_event("impression", "a", "d1", 1), _event("click", "a", "d3", 3)])
    (imp,) = join.sessions
    assert imp.doc_ids == ("d1", "d2", "d3") and imp.clicks == {3}


def test_ranker_attributes_choose_the_arm_label():
    rec = _query("a", ["d1"])
    rec["query_attributes"]["arm"] = "canary"
    assert next(iter(sessions_from_ubi([rec], [], ranker_attributes=("arm",)).sessions)).ranker == "canary"
    del rec["query_attributes"]
    assert next(iter(sessions_from_ubi([rec], []).sessions)).ranker == "unknown"


@pytest.mark.parametrize(("queries", "events", "where", "field"), [
    (["not a record"], [], "(query records):1", "query record"),
    ([_query("a", ["d1"]) | {"query_id": ""}], [], "(query records):1", "query_id"),
    ([_query("a", "d1 d2")], [], "(query records):1", "query_response_hit_ids"),
    ([_query("a", ["d1", "d1"])], [], "(query records):1", "query_response_hit_ids"),
    ([_query("a", ["d1"]), _query("a", ["d2"])], [], "(query records):2", "query_id"),
    ([_query("a", ["d1"])], [_event("click", "a", "d1", 0)], "(events):1", "event_attributes.position.ordinal"),
    ([_query("a", ["d1"])], [_event("click", "a", "d1", True)], "(events):1", "event_attributes.position.ordinal"),
    ([_query("a", ["d1"])], [_event("click", "a", "d1", "1")], "(events):1", "event_attributes.position.ordinal"),
    ([_query("a", ["d1"])], [_event("impression", "a", "d1", 1), {"action_name": "click", "query_id": "a"}],
     "(events):2", "event_attributes"),
    ([_query("a", ["d1"])], [{"query_id": "a"}], "(events):1", "action_name"),
])
def test_malformed_records_raise_naming_the_record_and_the_field(queries, events, where, field):
    with pytest.raises(ClickDataError) as caught:
        sessions_from_ubi(queries, events, source="day 2026-12-04")
    assert isinstance(caught.value, DataError)  # a user error: the CLI prints it without a traceback
    text = str(caught.value)
    assert f"day 2026-12-04 {where}" in text and f"[{field}]" in text


def test_empty_records_give_empty_sessions_and_counts():
    join = sessions_from_ubi([], [])
    assert len(join.sessions) == 0 and join.report.queries == 0
    counts = join.sessions.counts(10)
    assert counts.impressions == counts.clicks == 0 and counts.pairs == ()
    empty_answer = sessions_from_ubi([_query("a", [])], [])
    assert len(empty_answer.sessions) == 0 and empty_answer.report.empty_answers == 1


def test_impressions_refuse_clicks_outside_the_list_and_repeated_documents():
    with pytest.raises(ClickDataError, match="outside the 2 shown"):
        Impression("k", "q", ("a", "b"), frozenset({3}))
    with pytest.raises(ClickDataError, match="twice"):
        Impression("k", "q", ("a", "a"))
    with pytest.raises(ClickDataError, match="at least one"):
        Impression("k", "q", ())


def test_counts_aggregate_per_pair_and_position_within_the_depth():
    sessions = Sessions([Impression("q", "q", ("x", "y", "z"), frozenset({1})),
                         Impression("q", "q", ("y", "x", "z"), frozenset({1, 3})),
                         Impression("q", "q", ("x", "y"), frozenset())])
    counts = sessions.counts(2)  # z sits at 3: outside
    got = {(counts.pairs[p], int(k)): (int(n), int(c))
           for p, k, n, c in zip(counts.pair, counts.position, counts.shown, counts.clicked, strict=True)}
    assert got == {(("q", "x"), 1): (2, 1), (("q", "y"), 2): (2, 0), (("q", "y"), 1): (1, 1), (("q", "x"), 2): (1, 0)}
    shown, clicked = counts.per_position()
    assert shown.tolist() == [3, 3] and clicked.tolist() == [2, 0]
    with pytest.raises(ValueError):
        sessions.counts(0)
