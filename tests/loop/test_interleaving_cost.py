"""The loop report's cost of a canary's interleaving: within (day, query) strata, interleaved answers
against production's own, weighted by the interleaved answers; strata answered one way only are left out."""

from __future__ import annotations

import pytest

from uniret.loop.report import interleaving_cost, randpair_cost


def _answer(day: str, query: str, interleaved: bool, shown: float, ranked: float | None = None) -> dict:
    return {"day": day, "query": query, "interleaved": interleaved, "swapped": ranked is not None,
            "shown": shown, "ranked": shown if ranked is None else ranked}


def test_interleaving_cost_compares_within_day_and_query_and_weights_by_interleaved_answers():
    answers = [
        _answer("d1", "q1", True, 0.5), _answer("d1", "q1", True, 0.7), _answer("d1", "q1", False, 0.8),
        # production's own answer counts as ranked: RandPair's swap undone
        _answer("d1", "q2", True, 0.4), _answer("d1", "q2", False, 0.1, ranked=0.6),
        _answer("d2", "q1", True, 0.9),  # no production answer that day: not compared
        _answer("d2", "q3", False, 0.3),
    ]
    cost = interleaving_cost(answers)
    # q1 on d1: 2 x (0.6 - 0.8); q2 on d1: 1 x (0.4 - 0.6); over 3 interleaved answers compared
    assert cost["ndcg10_interleaved_minus_production"] == pytest.approx((2 * -0.2 + 1 * -0.2) / 3)
    assert (cost["interleaved"], cost["compared"], cost["strata"]) == (4, 3, 2)
    assert interleaving_cost([a for a in answers if not a["interleaved"]]) is None
    only_mixed = interleaving_cost([_answer("d1", "q1", True, 0.5)])
    assert only_mixed["ndcg10_interleaved_minus_production"] is None and only_mixed["interleaved"] == 1
    rp = randpair_cost(answers)
    assert rp["answers"] == 7 and rp["swapped"] == 1 and rp["ndcg10_shown_minus_ranked"] == pytest.approx(-0.5 / 7, abs=1e-5)
    assert randpair_cost([]) is None
