"""COEC on a case computed by hand, its failure modes, the click model's judgments, IPS and naive pairs."""

from __future__ import annotations

import numpy as np
import pytest

from uniret.clicks.harvest import harvest_propensities
from uniret.clicks.judgments import (
    BEST_RANK_UNCLICKED,
    FEW_IMPRESSIONS,
    NO_IMPRESSIONS,
    click_model_judgments,
    coec,
)
from uniret.clicks.pairs import DEEPER, ips_pairs, naive_pairs
from uniret.clicks.pbm import fit_pbm
from uniret.clicks.propensity import Propensities
from uniret.clicks.protocol import ClickProtocol
from uniret.clicks.sessions import Impression, Sessions
from uniret.clicks.synthetic import Collection, make_collection, make_rankers, simulate


def _imp(query: str, docs: str, clicks: set[int], ranker: str = "b1") -> Impression:
    return Impression(query, query, tuple(docs), frozenset(clicks), ranker)


HAND = Sessions([_imp("a", "xyz", {1}), _imp("a", "yxz", set()), _imp("b", "zxy", {2})])


def test_coec_divides_clicks_by_impressions_times_the_ctr_of_the_best_rank():
    got = coec(HAND, depth=3, min_impressions=1)
    # CTR over all traffic: rank 1: 1/3, rank 2: 1/3, rank 3: 0/3
    assert got.ctr == pytest.approx((1 / 3, 1 / 3, 0.0)) and got.impressions == (3, 3, 3)
    assert got.ratings[("a", "x")] == pytest.approx(1 / (2 * (1 / 3)))  # clicked once in 2, best rank 1
    assert got.ratings[("a", "y")] == 0.0  # shown twice (best rank 1), never clicked
    assert got.ratings[("b", "x")] == pytest.approx(1 / (1 * (1 / 3)))  # best rank 2
    assert got.ratings[("b", "z")] == 0.0
    # z for a and y for b were only ever at rank 3, which no list's user clicked: no expected clicks
    assert ("a", "z") not in got.ratings and ("b", "y") not in got.ratings
    assert got.left_out == {BEST_RANK_UNCLICKED: 2} and got.reason is None
    fewer = coec(HAND, depth=3, min_impressions=2)
    assert fewer.ratings.keys() == {("a", "x"), ("a", "y")} and fewer.left_out[FEW_IMPRESSIONS] == 3
    shallow = coec(HAND, depth=1)  # only rank 1 counts
    assert shallow.ratings == {("a", "x"): pytest.approx(3.0), ("a", "y"): 0.0, ("b", "z"): 0.0}  # 1 / (1 x 1/3)


def test_coec_says_why_when_there_is_no_judgment_instead_of_all_zeros():
    empty = coec(Sessions([]), depth=10)
    assert empty.ratings == {} and empty.reason == NO_IMPRESSIONS and empty.impressions == (0,) * 10
    no_clicks = coec(Sessions([_imp("a", "xy", set()), _imp("b", "yx", set())]), depth=10)
    assert no_clicks.ratings == {} and "no clicks in 4 impressions" in no_clicks.reason
    assert no_clicks.summary()["judgments"] == 0
    only_rare = coec(HAND, depth=3, min_impressions=5)
    assert only_rare.ratings == {} and "no pair passed" in only_rare.reason
    with pytest.raises(ValueError):
        coec(HAND, depth=0)
    with pytest.raises(ValueError):
        coec(HAND, depth=3, min_impressions=0)


def test_click_model_judgments_are_the_fits_relevance_of_pairs_shown_often_enough():
    fit = fit_pbm(HAND, depth=3, iterations=50)
    every = click_model_judgments(fit)
    assert every.keys() == fit.relevance.keys() and all(0 < g < 1 for g in every.values())
    assert every[("a", "x")] > every[("a", "y")]  # clicked vs never clicked at the same ranks
    assert click_model_judgments(fit, min_impressions=2).keys() == {("a", "x"), ("a", "y"), ("a", "z")}


PROPENSITIES = Propensities((1.0, 0.5, 0.04, float("nan")), (True, True, True, False), "test")


def test_ips_pairs_weight_each_click_by_its_clipped_inverse_propensity():
    sessions = Sessions([_imp("q", "abcde", {1, 2, 3}, "b1"), _imp("r", "edcba", {4, 5}, "b2")])
    got = ips_pairs(sessions, PROPENSITIES, clip=10.0)
    assert [(p.query_key, p.doc_id, p.position, p.weight, p.ranker) for p in got.pairs] == [
        ("q", "a", 1, 1.0, "b1"), ("q", "b", 2, 2.0, "b1"), ("q", "c", 3, 10.0, "b1")]  # 1 / 0.04 = 25 -> 10
    assert got.left_out == {"rank 4: propensity not identified by the logs": 1, DEEPER: 1}
    assert ips_pairs(sessions, PROPENSITIES, clip=30.0).pairs[2].weight == pytest.approx(25.0)
    assert got.summary() == {"pairs": 3, "left_out": got.left_out, "weight_sum": 13.0, "weight_max": 10.0}
    with pytest.raises(ValueError, match="clip must be at least 1"):
        ips_pairs(sessions, PROPENSITIES, clip=0.9)


def test_naive_pairs_take_every_click_within_the_depth_at_weight_one():
    sessions = Sessions([_imp("q", "abcde", {1, 3}), _imp("r", "edcba", {5})])
    got = naive_pairs(sessions, depth=4)
    assert [(p.doc_id, p.position, p.weight) for p in got.pairs] == [("a", 1, 1.0), ("c", 3, 1.0)]
    assert got.left_out == {DEEPER: 1}
    assert naive_pairs(Sessions([]), depth=4).pairs == []
    assert got.pairs[0].to_json()["query"] == "q"


def test_pairs_and_judgments_from_simulated_logs_favour_relevant_documents():
    rng = np.random.default_rng(8)
    collection = make_collection(100, 20, rng)
    sessions = simulate(collection, make_rankers(collection, 3, rng), ClickProtocol(), 8000, 10, rng)
    propensities = harvest_propensities(sessions, 10)
    grade = {(imp.query_key, doc): int(collection.grades[int(imp.query.rsplit(" ", 1)[1]), int(doc.split("-d")[1])])
             for imp in sessions for doc in imp.doc_ids}
    ips = ips_pairs(sessions, propensities, clip=10.0)
    naive = naive_pairs(sessions, 10)
    assert len(ips.pairs) == len(naive.pairs) > 0 and ips.left_out == {}
    # IPS puts more weight per click deep in the list than the naive arm, where relevant documents hide
    deep = [p.weight for p in ips.pairs if p.position >= 5]
    assert deep and min(deep) > 1.0
    ratings = coec(sessions, 10).ratings
    mean = {g: np.mean([r for pair, r in ratings.items() if grade[pair] == g]) for g in (0, 1, 2)}
    assert mean[0] < mean[1] < mean[2]
    assert Collection.doc_id(1, 2) == "q1-d2"
