"""The feedback stage's pieces on hand-made sessions: the window, the propensities it uses and the pairs."""

from __future__ import annotations

from datetime import date

from uniret.clicks.sessions import Impression, Sessions, query_key
from uniret.feedback.derive import derive
from uniret.feedback.spans import choose_window, closed


def test_window_holds_out_the_newest_closed_day_and_never_trains_on_it():
    days = ["2026-11-01", "2026-11-25", "2026-11-28", "2026-12-01", "2026-12-03", "2026-12-05"]
    done = closed(days, date(2026, 12, 5))
    assert done == days[:-1]  # today's span is still being written
    window = choose_window(done, window_days=7)
    assert window.heldout == "2026-12-03" and window.train == ("2026-11-28", "2026-12-01")
    assert window.heldout not in window.train
    assert choose_window(["2026-12-01"], 7).train == () and choose_window([], 7).heldout is None


def _imp(query: str, hits: str, clicked: set[int], ranker: str = "r1", day: str = "2026-12-01") -> Impression:
    return Impression(query_key(query), query, tuple(hits), frozenset(clicked), ranker, client_id="c", day=day)


def test_swaps_are_harvested_and_a_rank_no_swap_links_gets_no_ips_weight():
    # ranks 1 and 2 swap their docs across two rankers (an intervention); rank 3 never moves
    train = Sessions([_imp("q", "abc", {1}, "r1"), _imp("q", "bac", {1}, "r2")] * 20 +
                     [_imp("q", "abc", {2}, "r1"), _imp("q", "bac", set(), "r2")] * 10 + [_imp("q", "abc", {3})])
    got = derive(train, Sessions([_imp("q", "abc", {1})]), depth=3, em_iterations=50, clip=10.0,
                 coec_min_impressions=1, within="all")
    assert got.estimators == ["harvest", "harvest", None]
    assert "ranks [3]" in got.propensity_note and got.table()[2]["em_relative"] is not None
    ips = {p.position: p.weight for p in got.ips.pairs}
    assert ips[1] == 1.0 and ips[2] == min(1 / got.propensities.at(2), 10.0) and 3 not in ips
    assert sum(got.ips.left_out.values()) == 1  # the rank-3 click: counted, never weighted by a guess
    assert {p.weight for p in got.naive.pairs} == {1.0} and len(got.naive.pairs) == len(got.ips.pairs) + 1
    assert {p.client_id for p in got.ips.pairs} == {"c"}
    assert got.heldout_coec is not None and got.heldout_coec.ratings  # the held-out day is judged


def test_within_rankers_only_a_swap_inside_one_ranker_identifies_a_rank():
    # a move between rankers (r1 -> r2) is not an intervention (r2 may have learned from r1's clicks, E68);
    # a RandPair swap inside r1 ("bac" shown by r1) is
    moved = Sessions([_imp("q", "abc", {1}, "r1", "2026-12-01"), _imp("q", "bac", {1}, "r2", "2026-12-01")] * 20)
    got = derive(moved, Sessions([]), depth=3, em_iterations=50, clip=10.0, coec_min_impressions=1, within="ranker")
    assert got.estimators == ["harvest", None, None] and not [p for p in got.ips.pairs if p.position > 1]
    swapped = Sessions([_imp("q", "abc", {1}, "r1")] * 20 + [_imp("q", "bac", {1}, "r1")] * 20
                       + [_imp("q", "abc", {2}, "r1")] * 10)
    got = derive(swapped, Sessions([]), depth=3, em_iterations=50, clip=10.0, coec_min_impressions=1,
                 within="ranker")
    assert got.estimators == ["harvest", "harvest", None]
    assert got.propensities.method.endswith("-within-rankers")


def test_within_days_two_rankers_of_one_day_identify_a_rank_and_two_days_do_not():
    # the default (E79): every list of one day comes from bundles trained on earlier days, so a move between
    # two rankers shown the same day (a canary's interleaving beside production) is an intervention; the
    # same move across two days (r2 may have learned from day 1's clicks) is not
    same_day = Sessions([_imp("q", "abc", {1}, "r1"), _imp("q", "bac", {1}, "r2")] * 20
                        + [_imp("q", "abc", {2}, "r1")] * 10)
    got = derive(same_day, Sessions([]), depth=3, em_iterations=50, clip=10.0, coec_min_impressions=1,
                 bootstrap_rounds=5)
    assert got.estimators == ["harvest", "harvest", None]
    assert got.propensities.method.endswith("-within-days")
    rows = got.table()  # with resamples, each estimated rank carries its interval; rank 3 has neither
    assert all(r["low"] <= r["relative"] <= r["high"] for r in rows[:2]) and "low" not in rows[2]
    assert "95% interval up to" in got.propensity_note
    two_days = Sessions([_imp("q", "abc", {1}, "r1", "2026-12-01"), _imp("q", "bac", {1}, "r2", "2026-12-02")] * 20
                        + [_imp("q", "abc", {2}, "r1", "2026-12-01")] * 10)
    got = derive(two_days, Sessions([]), depth=3, em_iterations=50, clip=10.0, coec_min_impressions=1)
    assert got.estimators == ["harvest", None, None] and not [p for p in got.ips.pairs if p.position > 1]


def test_within_days_refuses_an_impression_with_no_day():
    undated = Sessions([_imp("q", "abc", {1}, "r1", ""), _imp("q", "bac", {1}, "r2", "")] * 5)
    got = derive(undated, Sessions([]), depth=3, em_iterations=50, clip=10.0, coec_min_impressions=1)
    assert got.propensities is None and "has no UTC day" in got.propensity_note and not got.ips.pairs


def test_no_training_clicks_means_no_pairs_and_says_why():
    got = derive(Sessions([_imp("q", "abc", set())]), Sessions([]), 3, 10, 10.0, 1)
    assert got.propensities is None and not got.ips.pairs and "no click" in got.propensity_note
    assert got.heldout_coec is None and got.table()[0]["relative"] is None
