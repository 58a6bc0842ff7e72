"""bench.http.rounds: between 1 and the level's requests (each round sends at least one); warmup_requests >= 0."""

from __future__ import annotations

import pytest

from uniret.config.serving import HttpBenchConfig


def _cfg(rounds: int) -> HttpBenchConfig:
    return HttpBenchConfig(concurrency=[1, 16], requests_per_level=10, max_seconds=5.0, startup_timeout_s=60.0,
                           rounds=rounds, warmup_requests=0)


@pytest.mark.parametrize("rounds", [0, -1, 11])
def test_rounds_outside_one_to_the_requests_are_refused(rounds):
    with pytest.raises(ValueError, match="rounds must be between 1 and requests_per_level"):
        _cfg(rounds).validate()


def test_one_round_and_as_many_as_requests_are_taken():
    _cfg(1).validate()
    _cfg(10).validate()


def test_a_negative_warmup_is_refused():
    with pytest.raises(ValueError, match="warmup_requests must be >= 0"):
        HttpBenchConfig(concurrency=[1], requests_per_level=10, max_seconds=5.0, startup_timeout_s=60.0, rounds=1,
                        warmup_requests=-1).validate()
