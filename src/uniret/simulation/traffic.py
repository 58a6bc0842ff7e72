"""A Zipf-like query stream: head queries repeat, as in real logs."""

from __future__ import annotations

import random
from collections.abc import Iterator


def zipf_order(queries: list[str], exponent: float, seed: int) -> tuple[list[str], list[float]]:
    """The queries by popularity rank (a seeded shuffle) and each one's share of the traffic (1 / r^exponent)."""
    if not queries:
        raise ValueError("no queries to draw traffic from")
    order = sorted(queries)
    random.Random(seed).shuffle(order)
    weights = [1.0 / (rank ** exponent) for rank in range(1, len(order) + 1)]
    total = sum(weights)
    return order, [w / total for w in weights]


def zipf_stream(queries: list[str], exponent: float, seed: int, order_seed: int | None = None) -> Iterator[str]:
    """Endless draws from `queries`: a seeded shuffle gives each query a rank r (1-based), drawn with
    probability proportional to 1 / r^exponent (exponent 0: uniform). `order_seed` (default `seed`)
    fixes which queries are the head apart from the draws: repeated samples of one traffic."""
    if not queries:
        raise ValueError("no queries to draw traffic from")
    if order_seed is None:
        rng = random.Random(seed)
        order = sorted(queries)
        rng.shuffle(order)  # the draws continue this generator: the stream `uniret simulate` always sent
    else:
        order = zipf_order(queries, exponent, order_seed)[0]
        rng = random.Random(seed)
    weights = [1.0 / (rank ** exponent) for rank in range(1, len(order) + 1)]
    while True:
        yield from rng.choices(order, weights=weights, k=256)
