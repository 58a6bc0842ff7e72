"""The simulator's Zipf-like query stream (its click protocol: tests/clicks/test_protocol.py)."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from uniret.simulation.traffic import zipf_stream


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
