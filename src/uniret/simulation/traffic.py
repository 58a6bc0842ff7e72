"""A Zipf-like query stream: head queries repeat, as in real logs."""

from __future__ import annotations

import random
from collections.abc import Iterator


def zipf_stream(queries: list[str], exponent: float, seed: int) -> Iterator[str]:
    """Endless draws from `queries`: a seeded shuffle gives each query a rank r (1-based), drawn with
    probability proportional to 1 / r^exponent (exponent 0: uniform)."""
    if not queries:
        raise ValueError("no queries to draw traffic from")
    rng = random.Random(seed)
    order = sorted(queries)
    rng.shuffle(order)
    weights = [1.0 / (rank ** exponent) for rank in range(1, len(order) + 1)]
    while True:
        yield from rng.choices(order, weights=weights, k=256)
