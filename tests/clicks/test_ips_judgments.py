"""The IPS click rate (the counterfactual judgments): a case by hand, what it leaves out, and on simulated
clicks the unbiased estimate of a ranking the logs never showed."""

from __future__ import annotations

import numpy as np
import pytest

from uniret.clicks.judgments import CLICK_UNWEIGHTED, ips_judgments
from uniret.clicks.propensity import Propensities
from uniret.clicks.protocol import ClickProtocol
from uniret.clicks.sessions import Impression, Sessions
from uniret.clicks.synthetic import Collection, make_collection, make_rankers, simulate


def _imp(query: str, docs: str, clicks: set[int]) -> Impression:
    return Impression(query, query, tuple(docs), frozenset(clicks), "b1")


PROPENSITIES = Propensities((1.0, 0.5, 0.04, float("nan")), (True, True, True, False), "test")


def test_ips_click_rate_weights_each_click_at_its_rank_over_the_querys_impressions():
    sessions = Sessions([_imp("a", "xyzw", {1, 2}), _imp("a", "yxzw", {1}), _imp("a", "xyzw", set()),
                         _imp("b", "xyzw", {3}), _imp("b", "xyzw", {4})])
    got = ips_judgments(sessions, PROPENSITIES, depth=4, clip=10.0)
    # a: x clicked at 1 (weight 1), y at 2 (weight 2) and at 1 (weight 1), over 3 impressions of a
    assert got.ratings[("a", "x")] == pytest.approx(1 / 3) and got.ratings[("a", "y")] == pytest.approx(3 / 3)
    assert got.ratings[("a", "z")] == 0.0 and got.ratings[("a", "w")] == 0.0  # shown, never clicked: judged 0
    # b: z clicked at rank 3 (1 / 0.04 = 25, clipped to 10), over 2 impressions
    assert got.ratings[("b", "z")] == pytest.approx(10 / 2) and got.ratings[("b", "x")] == 0.0
    # w of b was clicked at rank 4, which the propensities do not identify: unjudged, never a guessed weight
    assert ("b", "w") not in got.ratings and got.left_out == {CLICK_UNWEIGHTED: 1} and got.reason is None
    assert ips_judgments(sessions, PROPENSITIES, depth=4, clip=30.0).ratings[("b", "z")] == pytest.approx(12.5)
    # a shallower depth drops what lies below it: b's click at 4 is then outside, not left out
    shallow = ips_judgments(sessions, PROPENSITIES, depth=3, clip=10.0)
    assert shallow.left_out == {} and ("b", "w") not in shallow.ratings and shallow.summary()["judgments"] == 6


def test_ips_click_rate_says_why_when_there_is_none():
    sessions = Sessions([_imp("a", "xy", {1})])
    assert "no propensities" in ips_judgments(sessions, None, depth=2, clip=10.0).reason
    none_clicked = ips_judgments(Sessions([_imp("a", "xy", set())]), PROPENSITIES, depth=2, clip=10.0)
    assert none_clicked.ratings == {} and "no clicks in 2 impressions" in none_clicked.reason
    only_unweighted = ips_judgments(Sessions([_imp("a", "wxyz", {4})]), PROPENSITIES, depth=4, clip=10.0)
    assert only_unweighted.ratings == {("a", "w"): 0.0, ("a", "x"): 0.0, ("a", "y"): 0.0}
    with pytest.raises(ValueError, match="depth"):
        ips_judgments(sessions, PROPENSITIES, depth=0, clip=10.0)


def _dcg(gain: dict[str, float], ranking: list[str], k: int = 10) -> float:
    return sum(gain.get(d, 0.0) / np.log2(r + 1) for r, d in enumerate(ranking[:k], 1))


def test_ips_dcg_estimates_the_discounted_clicks_of_a_ranking_the_logs_never_showed():
    """One ranker shows one ordering per query; the estimate of the reversed top 10 is held against the expected
    clicks the simulator's users would give it (examination at rank 1 x click probability of the grade)."""
    rng = np.random.default_rng(3)
    protocol = ClickProtocol()
    collection = make_collection(40, 10, rng, grade_shares=(0.5, 0.3, 0.2))
    order = make_rankers(collection, 1, rng)
    sessions = simulate(collection, order, protocol, 40_000, 10, rng, zipf_exponent=0.0)
    truth = Propensities(tuple(protocol.relative_examination(10)), (True,) * 10, "simulator")
    ips = ips_judgments(sessions, truth, depth=10, clip=100.0).ratings
    naive = ips_judgments(sessions, Propensities((1.0,) * 10, (True,) * 10, "none"), depth=10, clip=1.0).ratings
    estimated, biased, expected = [], [], []
    for q in range(collection.queries):
        key = sessions.impressions[[imp.query == Collection.query(q) for imp in sessions].index(True)].query_key
        reversed_ = [Collection.doc_id(q, int(j)) for j in order[0, q, ::-1]]
        gain = {Collection.doc_id(q, j): protocol.examination(1) * protocol.click_probability(int(g))
                for j, g in enumerate(collection.grades[q])}
        estimated.append(_dcg({d: r for (k, d), r in ips.items() if k == key}, reversed_))
        biased.append(_dcg({d: r for (k, d), r in naive.items() if k == key}, reversed_))
        expected.append(_dcg(gain, reversed_))
    # the mean over 40 queries of ~1,000 impressions each: within 3% of the truth; clicks as labels miss it by far
    assert np.mean(estimated) == pytest.approx(np.mean(expected), rel=0.03)
    assert np.mean(biased) < 0.8 * np.mean(expected)
