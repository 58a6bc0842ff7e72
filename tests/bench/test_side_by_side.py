"""uniret.bench.modes.time_side_by_side: every search answers a query before the next query, after an
untimed warmup, round after round."""

from __future__ import annotations

from uniret.bench.modes import time_side_by_side


def test_searches_take_turns_query_by_query_after_an_untimed_warmup():
    calls = []
    searches = {name: (lambda batch, name=name: calls.append((name, *batch))) for name in ("lucene_bm25", "a", "b")}
    queries = {"q1": "x", "q2": "y", "q3": "z"}
    seconds = time_side_by_side(searches, queries, warmup=1, rounds=2)
    assert calls[:3] == [("lucene_bm25", "q1"), ("a", "q1"), ("b", "q1")]  # the warmup: not timed
    assert calls[3:9] == [(name, q) for q in ("q1", "q2") for name in ("lucene_bm25", "a", "b")]
    assert calls[12:15] == [("lucene_bm25", "q1"), ("a", "q1"), ("b", "q1")]  # the second round starts over
    assert len(calls) == 3 + 2 * 3 * 3 and all(len(v) == 6 and min(v) >= 0 for v in seconds.values())
