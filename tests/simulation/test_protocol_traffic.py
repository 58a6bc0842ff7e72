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


def test_a_fixed_order_seed_keeps_the_head_and_redraws_the_stream():
    """Repeated samples of one traffic (the canary study): the same queries are the head, the draws differ."""
    import itertools
    from collections import Counter

    from uniret.simulation.traffic import zipf_order, zipf_stream

    queries = [f"q{i}" for i in range(50)]
    order, shares = zipf_order(queries, 1.0, 7)
    assert sorted(order) == sorted(queries) and abs(sum(shares) - 1.0) < 1e-9 and shares == sorted(shares, reverse=True)
    a = list(itertools.islice(zipf_stream(queries, 1.0, 1, order_seed=7), 5000))
    b = list(itertools.islice(zipf_stream(queries, 1.0, 2, order_seed=7), 5000))
    assert a != b and Counter(a).most_common(1)[0][0] == Counter(b).most_common(1)[0][0] == order[0]
    # without order_seed the stream is the one `uniret simulate` always sent for that seed
    plain = list(itertools.islice(zipf_stream(queries, 1.0, 7), 5000))
    assert Counter(plain).most_common(1)[0][0] == order[0]
