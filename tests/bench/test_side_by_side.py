"""uniret.bench.modes.time_side_by_side: every search answers a query before the next query, after an
untimed warmup, round after round."""

from __future__ import annotations

from uniret.bench.modes import side_by_side_figures, time_side_by_side


def test_searches_take_turns_query_by_query_after_an_untimed_warmup():
    calls = []
    searches = {name: (lambda batch, name=name: calls.append((name, *batch))) for name in ("lucene_bm25", "a", "b")}
    queries = {"q1": "x", "q2": "y", "q3": "z"}
    seconds = time_side_by_side(searches, queries, warmup=1, rounds=2)
    assert calls[:3] == [("lucene_bm25", "q1"), ("a", "q1"), ("b", "q1")]  # the warmup: not timed
    assert calls[3:9] == [(name, q) for q in ("q1", "q2") for name in ("lucene_bm25", "a", "b")]
    assert calls[12:15] == [("lucene_bm25", "q1"), ("a", "q1"), ("b", "q1")]  # the second round starts over
    assert len(calls) == 3 + 2 * 3 * 3 and all(len(v) == 6 and min(v) >= 0 for v in seconds.values())


def test_figures_are_ratios_to_the_reference_overall_and_per_round():
    seconds = {"lucene_bm25": [0.002, 0.002, 0.004, 0.004], "fast": [0.003, 0.003, 0.004, 0.004]}
    figures = side_by_side_figures(seconds, rounds=2, reference="lucene_bm25")
    assert figures["lucene_bm25"]["p50_vs_lucene_bm25"] == 1.0
    assert figures["fast"]["p50_ms"] == 3.5 and figures["fast"]["p50_vs_lucene_bm25"] == round(3.5 / 3, 3)
    assert figures["fast"]["per_round_vs_lucene_bm25"] == [1.5, 1.0]
    assert figures["fast"]["p95_ms"] >= figures["fast"]["p50_ms"]
