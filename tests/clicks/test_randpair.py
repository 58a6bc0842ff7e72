"""RandPair: a seeded swap of one pair of results (neighbours, or rank 1 and another) on a share of answers."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from uniret.clicks.randpair import rand_pair

HITS = [f"d{i}" for i in range(1, 13)]


def test_share_zero_never_swaps_and_share_one_always_swaps_two_neighbours_within_the_depth():
    rng = random.Random(1)
    assert all(rand_pair(HITS, 0.0, rng) == (HITS, None) for _ in range(100))
    ranks = Counter()
    for _ in range(4000):
        shown, (k, below) = rand_pair(HITS, 1.0, rng, depth=10)
        assert 1 <= k <= 9 and below == k + 1 and shown[k - 1] == HITS[k] and shown[k] == HITS[k - 1]
        assert [d for i, d in enumerate(shown) if i not in (k - 1, k)] == [d for i, d in enumerate(HITS)
                                                                           if i not in (k - 1, k)]
        ranks[k] += 1
    assert set(ranks) == set(range(1, 10))  # every adjacent pair within the depth, none below it
    assert max(ranks.values()) < 1.3 * min(ranks.values())  # uniform: ~444 each
    assert HITS == [f"d{i}" for i in range(1, 13)]  # the input is never changed


def test_top_swaps_rank_one_with_a_uniform_rank_within_the_depth():
    rng = random.Random(2)
    ranks = Counter()
    for _ in range(4500):
        shown, (top, k) = rand_pair(HITS, 1.0, rng, depth=10, kind="top")
        assert top == 1 and 2 <= k <= 10 and shown[0] == HITS[k - 1] and shown[k - 1] == HITS[0]
        assert shown[1:k - 1] + shown[k:] == HITS[1:k - 1] + HITS[k:]
        ranks[k] += 1
    assert set(ranks) == set(range(2, 11)) and max(ranks.values()) < 1.3 * min(ranks.values())


def test_the_share_is_respected_and_a_seed_replays_the_same_swaps():
    first, second = random.Random(7), random.Random(7)
    replay = [rand_pair(HITS, 0.3, first)[1] for _ in range(50)]
    assert replay == [rand_pair(HITS, 0.3, second)[1] for _ in range(50)] and set(replay) - {None}
    rng = random.Random(3)
    swapped = sum(rand_pair(HITS, 0.1, rng)[1] is not None for _ in range(20_000))
    assert 1800 < swapped < 2200  # 10% of 20,000 (sd 42)


def test_short_lists_and_bad_settings():
    assert rand_pair(["only"], 1.0, random.Random(1)) == (["only"], None)
    assert rand_pair(["a", "b"], 1.0, random.Random(1)) == (["b", "a"], (1, 2))
    assert rand_pair(["a", "b"], 1.0, random.Random(1), kind="top") == (["b", "a"], (1, 2))
    for share, depth, kind in ((-0.1, 10, "top"), (1.5, 10, "adjacent"), (0.5, 1, "adjacent"), (0.5, 10, "any")):
        with pytest.raises(ValueError):
            rand_pair(HITS, share, random.Random(1), depth=depth, kind=kind)
