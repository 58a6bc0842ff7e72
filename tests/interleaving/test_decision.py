"""The canary's statistic and rule: counts, the interval, wait / rollback / promote under both rules,
and an equal candidate rolled back about alpha of the time."""

from __future__ import annotations

import math
import random

import pytest

from uniret.interleaving import Outcome, credit, decide, preference, team_draft
from uniret.interleaving.decision import mean_interval, one_sided_z


def _outcomes(wins: int, losses: int, ties: int, unclicked: int = 0) -> list[Outcome]:
    return ([Outcome(f"q{i % 7}", 0, 1) for i in range(wins)] + [Outcome(f"q{i % 7}", 1, 0) for i in range(losses)]
            + [Outcome("q", 1, 1) for _ in range(ties)] + [Outcome("q", 0, 0) for _ in range(unclicked)])


def test_counts_and_interval():
    pref = preference(_outcomes(60, 40, 20, unclicked=30), alpha=0.05)
    assert (pref.impressions, pref.clicked, pref.wins, pref.losses, pref.ties) == (150, 120, 60, 40, 20)
    assert pref.delta == pytest.approx(20 / 120)
    var = (100 / 120 - (20 / 120) ** 2) * 120 / 119
    assert pref.lower == pytest.approx(20 / 120 - one_sided_z(0.05) * math.sqrt(var / 120))
    assert pref.upper - pref.delta == pytest.approx(pref.delta - pref.lower)
    assert mean_interval(1.0, 1.0, 1, 1.64)[1:] == (-math.inf, math.inf)


def test_rules():
    better, worse, even = (preference(_outcomes(*c), 0.05) for c in ((300, 200, 50), (200, 300, 50), (250, 250, 50)))
    assert decide(better, "non_inferior", 500, expired=False).action == "promote"
    assert decide(even, "non_inferior", 500, expired=False).action == "promote"
    assert decide(worse, "non_inferior", 500, expired=False).action == "rollback"
    assert decide(better, "superior", 500, expired=False).action == "promote"
    assert decide(even, "superior", 500, expired=False).action == "rollback"
    waiting = decide(better, "non_inferior", 10_000, expired=False)
    assert waiting.action == "wait" and "550 of 10000" in waiting.reason
    late = decide(better, "non_inferior", 10_000, expired=True)
    assert late.action == "rollback" and "not enough evidence" in late.reason
    assert "significantly worse" in decide(worse, "non_inferior", 500, expired=False).reason
    with pytest.raises(ValueError, match="rule must be one of"):
        decide(better, "coin", 1, expired=False)
    with pytest.raises(ValueError, match="alpha"):
        preference([], alpha=0.7)


def test_an_equal_candidate_is_rolled_back_about_alpha_of_the_time():
    """A/A canaries through team draft with position-biased clicks: the non-inferiority rule's false
    rollbacks stay near alpha (binomial bounds over 400 canaries)."""
    alpha, canaries, rolled = 0.05, 400, 0
    rng = random.Random(11)
    docs = [f"d{i}" for i in range(10)]
    for _ in range(canaries):
        outs = []
        for _ in range(300):
            mixed = team_draft(docs, docs, 10, rng)
            outs.append(credit("q", mixed.teams, [r for r in range(1, 11) if rng.random() < 0.6 / r]))
        rolled += decide(preference(outs, alpha), "non_inferior", 1, expired=False).action == "rollback"
    sd = math.sqrt(alpha * (1 - alpha) / canaries)
    assert abs(rolled / canaries - alpha) < 4 * sd, f"{rolled} of {canaries} equal candidates rolled back"
