"""The feedback stage's pieces on hand-made sessions: the window, COEC, the pairs and their IPS weights."""

from __future__ import annotations

from datetime import date

import pytest

from uniret.feedback.derive import ClickModel, Session, coec, pairs
from uniret.feedback.spans import choose_window, closed


def test_window_holds_out_the_newest_closed_day_and_never_trains_on_it():
    days = ["2026-11-01", "2026-11-25", "2026-11-28", "2026-12-01", "2026-12-03", "2026-12-05"]
    done = closed(days, date(2026, 12, 5))
    assert done == days[:-1]  # today's span is still being written
    window = choose_window(done, window_days=7)
    assert window.heldout == "2026-12-03" and window.train == ("2026-11-28", "2026-12-01")
    assert window.heldout not in window.train
    assert choose_window(["2026-12-01"], 7).train == () and choose_window([], 7).heldout is None


def _session(query: str, hits: str, shown: int, clicked: set[int]) -> Session:
    return Session("id", "client", query, list(hits), set(range(1, shown + 1)), clicked)


def test_coec_divides_clicks_by_impressions_times_the_ctr_of_the_best_rank():
    sessions = [_session("a", "xyz", 3, {1}), _session("a", "yxz", 3, set()), _session("b", "zxy", 3, {2})]
    # CTR per position over all traffic: rank 1: 1/3, rank 2: 1/3, rank 3: 0
    got = coec(sessions, depth=3, min_impressions=1)
    key_a = sessions[0].key
    assert got[(key_a, "x")] == pytest.approx(1 / (2 * (1 / 3)))  # best rank 1, shown twice, clicked once
    assert got[(key_a, "y")] == 0.0
    assert got[(sessions[2].key, "x")] == pytest.approx(1 / (1 * (1 / 3)))
    assert (key_a, "z") not in got  # its best rank (3) was never clicked: no expected clicks to divide by
    assert coec(sessions, depth=3, min_impressions=2).keys() == {(key_a, "x"), (key_a, "y")}


def test_pairs_put_each_click_over_each_skipped_result_with_clipped_ips_weights():
    model = ClickModel(theta={1: 0.8, 2: 0.4, 3: 0.04}, gamma={}, iterations=1)
    sessions = [_session("q", "abc", 3, {2, 3})]
    got = {(p["positive"], p["negative"]): p["weight"] for p in pairs(sessions, 3, model, clip=10.0)}
    assert got == {("b", "a"): 2.0, ("c", "a"): 10.0}  # 0.8/0.04 = 20, clipped at 10
    naive = pairs(sessions, 3, None, clip=10.0)
    assert {p["weight"] for p in naive} == {1.0} and len(naive) == 2
    # no impression logged: the results down to the deepest click count as seen
    assert pairs([Session("i", "c", "q", list("abc"), set(), {2})], 3, None, 10.0)[0]["negative"] == "a"
