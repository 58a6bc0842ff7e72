"""The propensity estimators recover the simulator's examination curve from seeded synthetic logs, and say
when the logs cannot identify it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from uniret.clicks.harvest import harvest, harvest_propensities
from uniret.clicks.pbm import fit_pbm
from uniret.clicks.propensity import Propensities, connected_to_first, overlap_support
from uniret.clicks.protocol import ClickProtocol
from uniret.clicks.sessions import ClickDataError, Impression, Sessions
from uniret.clicks.synthetic import make_collection, make_rankers, simulate

PROTOCOL = ClickProtocol(eta=1.0, click_noise=0.1, click_max=1.0, max_grade=2)
TRUTH = PROTOCOL.relative_examination(10)
DEPTH = 10


def _logs(rankers: int, sessions: int, seed: int, randpair_share: float = 0.0, queries: int = 200) -> Sessions:
    rng = np.random.default_rng(seed)
    collection = make_collection(queries, 30, rng)
    return simulate(collection, make_rankers(collection, rankers, rng, agreement=0.8), PROTOCOL, sessions, DEPTH,
                    rng, randpair_share=randpair_share)


@pytest.fixture(scope="module")
def three_rankers():
    return _logs(rankers=3, sessions=30_000, seed=11).counts(DEPTH)


def test_em_recovers_the_simulators_propensities_from_several_rankers(three_rankers):
    fit = fit_pbm(three_rankers, DEPTH, iterations=1000)
    est = fit.propensities
    assert est.relative[0] == 1.0 and all(est.identified)
    assert np.max(est.errors(TRUTH)) < 0.05, np.round(est.relative, 3)
    assert fit.convergence.log_likelihood < 0 and fit.convergence.iterations > 1
    # the absolute scale: theta at rank 1 lands near the simulator's 0.68 only up to the PBM's scale freedom
    assert 0 < fit.theta[0] <= 1 and np.allclose(fit.theta / fit.theta[0], est.relative)
    # relevance: the simulator's top-grade pairs are clicked when examined far more often than grade-0 ones
    assert np.median(list(fit.relevance.values())) < 0.5


def test_em_from_harvested_propensities_fits_relevance_with_theta_held(three_rankers):
    harvested = harvest_propensities(three_rankers, DEPTH)
    fit = fit_pbm(three_rankers, DEPTH, iterations=300, init=harvested.absolute(0.68), fix_theta=True)
    assert fit.propensities.relative == pytest.approx(harvested.relative)
    assert fit.convergence.method == "pbm-em-fixed-theta"
    with pytest.raises(ValueError, match="fix_theta needs init"):
        fit_pbm(three_rankers, DEPTH, iterations=10, fix_theta=True)


@pytest.mark.parametrize("rankers", [2, 3])
def test_intervention_harvesting_recovers_them_from_two_or_three_rankers(rankers):
    est = harvest_propensities(_logs(rankers=rankers, sessions=20_000, seed=3 + rankers), DEPTH)
    assert all(est.identified) and est.convergence.converged
    assert np.max(est.errors(TRUTH)) < 0.05, np.round(est.relative, 3)


def test_one_ranker_identifies_nothing_and_both_estimators_say_so():
    logs = _logs(rankers=1, sessions=5_000, seed=2)
    harvested = harvest_propensities(logs, DEPTH)
    assert harvested.identified == (True,) + (False,) * 9
    assert harvested.relative[0] == 1.0 and all(math.isnan(v) for v in harvested.relative[1:])
    assert any("no chain" in note for note in harvested.convergence.notes)
    fit = fit_pbm(logs, DEPTH, iterations=50)
    assert not any(fit.propensities.identified[1:]) and "not identified" in fit.convergence.notes[0]
    assert not np.any(overlap_support(logs.counts(DEPTH)))


def test_randpair_swaps_identify_every_rank_of_one_ranker():
    logs = _logs(rankers=1, sessions=20_000, seed=4, randpair_share=0.2)
    support = overlap_support(logs.counts(DEPTH))
    assert all(support[k, k + 1] > 0 for k in range(DEPTH - 1))  # every adjacent pair of ranks met
    est = harvest_propensities(logs, DEPTH)
    assert all(est.identified)
    assert np.max(est.errors(TRUTH)) < 0.1, np.round(est.relative, 3)


def test_harvest_sums_ctrs_of_pairs_seen_at_two_ranks_with_their_weights():
    sessions = Sessions([Impression("q", "q", ("a", "b"), frozenset({1})), Impression("q", "q", ("a", "b")),
                         Impression("q", "q", ("b", "a"), frozenset({2}))])
    counts = sessions.counts(2)
    pairs = harvest(counts, "pairs")
    # a: CTR 1/2 at rank 1, 1/1 at rank 2; b: 0/2 at rank 2, 0/1 at rank 1
    assert pairs.clicks.tolist() == [[0.0, 0.5], [1.0, 0.0]] and pairs.weight.tolist() == [[0, 2], [2, 0]]
    weighted = harvest(counts, "harmonic")  # each pair weighs n_k n_k' / (n_k + n_k') = 2/3
    assert weighted.weight == pytest.approx(np.array([[0, 4 / 3], [4 / 3, 0]]))
    assert weighted.clicks == pytest.approx(np.array([[0, 2 / 3 * 0.5], [2 / 3 * 1.0, 0]]))
    with pytest.raises(ValueError, match="weighting"):
        harvest(counts, "uniform")


def test_identification_follows_chains_of_ranks():
    support = np.zeros((4, 4), dtype=int)
    support[0, 1] = support[1, 0] = support[1, 2] = support[2, 1] = 3
    assert connected_to_first(support).tolist() == [True, True, True, False]


def test_estimators_refuse_logs_with_nothing_to_fit():
    nothing = Sessions([])
    shown_only = Sessions([Impression("q", "q", ("a", "b"))])
    for estimate in (lambda s: fit_pbm(s, 2, 10), lambda s: harvest_propensities(s, 2)):
        with pytest.raises(ClickDataError, match="no impression"):
            estimate(nothing)
        with pytest.raises(ClickDataError, match="no click in 2 impressions"):
            estimate(shown_only)


def test_propensities_give_clipped_weights_only_where_identified():
    est = Propensities((1.0, 0.5, 0.05, float("nan")), (True, True, True, False), "test")
    assert est.weight(1, clip=10.0) == 1.0 and est.weight(2, clip=10.0) == 2.0
    assert est.weight(3, clip=10.0) == 10.0  # 1 / 0.05 = 20, clipped
    assert est.weight(3, clip=25.0) == pytest.approx(20.0)
    assert not est.usable(4) and not est.usable(5)
    with pytest.raises(ValueError, match="no usable propensity at rank 4"):
        est.weight(4, clip=10.0)
    with pytest.raises(ValueError, match="clip must be at least 1"):
        est.weight(1, clip=0.5)
    assert est.to_json()["relative"] == [1.0, 0.5, 0.05, None]
