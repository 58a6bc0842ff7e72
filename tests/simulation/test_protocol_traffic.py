"""The simulator's click protocol (ULTRA's) and its Zipf-like query stream."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from uniret.simulation.protocol import ULTRA_EXAMINATION, ClickProtocol
from uniret.simulation.traffic import zipf_stream


def test_protocol_is_ultras_position_based_model_with_graded_noise():
    p = ClickProtocol(eta=1.0, click_noise=0.1, click_max=1.0, max_grade=2)
    assert [p.examination(r) for r in range(1, 11)] == list(ULTRA_EXAMINATION)
    assert p.examination(25) == ULTRA_EXAMINATION[-1]
    assert ClickProtocol(eta=2.0).examination(3) == pytest.approx(0.48 ** 2)
    assert (p.click_probability(0), p.click_probability(1), p.click_probability(2)) == pytest.approx((0.1, 0.4, 1.0))
    assert p.click_probability(7) == p.click_probability(2)  # above ymax counts as ymax


def test_drawn_clicks_follow_the_protocol():
    p = ClickProtocol(max_grade=2)
    rng = random.Random(3)
    grades = [2, 0, 1, 2, 0, 0, 2, 0, 0, 1]
    n = 20_000
    counts = Counter(r for _ in range(n) for r in p.clicks(grades, rng))
    for rank, grade in enumerate(grades, 1):
        expected = p.examination(rank) * p.click_probability(grade)
        assert abs(counts[rank] / n - expected) < 0.015, (rank, counts[rank] / n, expected)


def test_zipf_stream_repeats_head_queries():
    queries = [f"q{i}" for i in range(200)]
    draws = Counter(itertools.islice(zipf_stream(queries, 1.0, seed=5), 5000))
    ranked = [n for _, n in draws.most_common()]
    harmonic = sum(1 / r for r in range(1, 201))
    assert abs(ranked[0] / 5000 - 1 / harmonic) < 0.03  # the head query: ~17% of the traffic
    assert ranked[0] > 5 * ranked[9] / 2 and len(draws) < 200  # a long tail, some queries never drawn
    uniform = Counter(itertools.islice(zipf_stream(queries, 0.0, seed=5), 5000))
    assert max(uniform.values()) < 60  # exponent 0: no head
    assert list(itertools.islice(zipf_stream(queries, 1.0, seed=5), 50)) == \
        list(itertools.islice(zipf_stream(queries, 1.0, seed=5), 50))  # seeded
    with pytest.raises(ValueError, match="no queries"):
        next(zipf_stream([], 1.0, seed=1))
