"""Team-draft interleaving: no document twice, balanced teams, each pick its team's best remaining
document, clicks credited to the team that placed the document, and no preference between equal rankers."""

from __future__ import annotations

import random

import numpy as np
import pytest

from uniret.interleaving import CANDIDATE, PRODUCTION, credit, team_draft


def _check(prod: list[str], cand: list[str], k: int, seed: int) -> None:
    mixed = team_draft(prod, cand, k, random.Random(seed))
    assert len(mixed.docs) == len(set(mixed.docs)) == len(mixed.teams)
    assert len(mixed.docs) == min(k, len(set(prod) | set(cand)))
    for i, (doc, team) in enumerate(zip(mixed.docs, mixed.teams, strict=True)):
        own = prod if team == PRODUCTION else cand
        remaining = [d for d in own if d not in mixed.docs[:i]]
        other = cand if team == PRODUCTION else prod
        if remaining:
            assert doc == remaining[0], f"position {i + 1}: {team} did not pick its best remaining document"
        else:  # its list ran out: the other team fills
            assert doc == [d for d in other if d not in mixed.docs[:i]][0]


@pytest.mark.parametrize("seed", range(30))
def test_random_rankings_hold_every_property(seed):
    rng = random.Random(seed)
    pool = [f"d{i}" for i in range(25)]
    prod = rng.sample(pool, rng.randint(1, 15))
    cand = rng.sample(pool, rng.randint(1, 15))
    _check(prod, cand, rng.randint(1, 20), seed)


def test_identical_rankings_show_that_ranking():
    docs = [f"d{i}" for i in range(10)]
    for seed in range(20):
        assert team_draft(docs, docs, 10, random.Random(seed)).docs == tuple(docs)


def test_a_short_list_does_not_cut_the_answer():
    mixed = team_draft(["a"], ["b", "c", "d", "e"], 4, random.Random(1))
    assert len(mixed.docs) == 4 and "a" in mixed.docs
    assert mixed.teams.count(PRODUCTION) == 1


def test_teams_are_balanced_when_lists_differ():
    prod, cand = [f"p{i}" for i in range(10)], [f"c{i}" for i in range(10)]
    for seed in range(20):
        teams = team_draft(prod, cand, 10, random.Random(seed)).teams
        assert teams.count(PRODUCTION) == teams.count(CANDIDATE) == 5
        assert all(d.startswith(t) for d, t in zip(team_draft(prod, cand, 10, random.Random(seed)).docs, teams,
                                                   strict=True))


def test_k_must_be_positive():
    with pytest.raises(ValueError, match="k must be at least 1"):
        team_draft(["a"], ["b"], 0, random.Random(0))


def test_clicks_credit_the_team_that_placed_the_document():
    outcome = credit("q", "pcpc", [2, 4, 1])
    assert (outcome.production_clicks, outcome.candidate_clicks, outcome.score) == (1, 2, 1)
    assert credit("q", "pcpc", []).clicked is False
    assert credit("q", "pc", [1, 2]).score == 0
    with pytest.raises(ValueError, match="click at rank 5"):
        credit("q", "pcpc", [5])
    with pytest.raises(ValueError, match="unknown team"):
        credit("q", "px", [2])


def test_equal_rankers_get_no_preference():
    """A/A: the same ranking on both sides, position-biased clicks; candidate wins as often as production."""
    rng, np_rng = random.Random(3), np.random.default_rng(3)
    docs = [f"d{i}" for i in range(10)]
    scores = []
    for _ in range(4000):
        mixed = team_draft(docs, docs, 10, rng)
        clicked = [r for r in range(1, 11) if np_rng.random() < 0.5 / r]
        o = credit("q", mixed.teams, clicked)
        if o.clicked:
            scores.append(o.score)
    mean, se = np.mean(scores), np.std(scores) / np.sqrt(len(scores))
    assert abs(mean) < 4 * se, f"A/A preference {mean:+.4f} (se {se:.4f})"
