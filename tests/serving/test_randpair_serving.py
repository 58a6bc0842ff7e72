"""RandPair in serving: with logging on, `feedback.randpair_share` of answers show two adjacent results swapped."""

from __future__ import annotations

from uniret.config.feedback import FeedbackConfig
from uniret.serving.metrics import ServingMetrics
from uniret.serving.ubi_log import ServingLog

HITS = [(f"d{i}", 10.0 - i) for i in range(10)]


def _log(tmp_path, **cfg) -> ServingLog:
    return ServingLog(FeedbackConfig(**cfg), ServingMetrics())


def test_every_answer_swaps_one_adjacent_pair_at_share_one(tmp_path):
    log = _log(tmp_path, log_dir=str(tmp_path / "logs"), randpair_share=1.0)
    ranks = set()
    for _ in range(200):
        shown, swapped = log.shown_order(HITS)
        i, j = swapped
        assert j == i + 1 and shown[i - 1] == HITS[j - 1] and shown[j - 1] == HITS[i - 1]
        assert sorted(shown) == sorted(HITS) and shown[:i - 1] == HITS[:i - 1] and shown[j:] == HITS[j:]
        ranks.add(i)
    assert ranks == set(range(1, 10))  # every adjacent pair of the ten gets swapped sometimes


def test_no_swap_when_the_share_is_zero_or_logging_is_off(tmp_path):
    assert _log(tmp_path, log_dir=str(tmp_path / "logs")).shown_order(HITS) == (HITS, None)
    assert _log(tmp_path, randpair_share=1.0).shown_order(HITS) == (HITS, None)  # no log: nothing learns from it
    share = _log(tmp_path, log_dir=str(tmp_path / "logs"), randpair_share=0.2)
    swapped = sum(share.shown_order(HITS)[1] is not None for _ in range(2000))
    assert 300 < swapped < 500  # about 20% of 2,000


def test_a_seed_replays_the_same_swaps(tmp_path):
    def swaps(seed):
        log = _log(tmp_path, log_dir=str(tmp_path / "logs"), randpair_share=0.3, randpair_seed=seed)
        return [log.shown_order(HITS)[1] for _ in range(300)]

    first = swaps(8)
    assert first == swaps(8) and any(first) and None in first  # a rerun of a simulation logs the same swaps
    assert first != swaps(9)
