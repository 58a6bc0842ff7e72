"""The seeded, resumable batch source."""

from __future__ import annotations

import pytest

from uniret.config.training import TrainConfig
from uniret.training.batches import ShuffledBatches, batches_for


def _take(source, n):
    return [source.next_batch() for _ in range(n)]


def test_each_epoch_is_a_permutation_and_epochs_differ():
    source = ShuffledBatches(list(range(10)), batch_size=5, seed=3)
    epoch0 = sum(_take(source, 2), [])
    epoch1 = sum(_take(source, 2), [])
    assert sorted(epoch0) == list(range(10)) and sorted(epoch1) == list(range(10))
    assert epoch0 != epoch1
    assert source.state_dict()["epoch"] == 1


def test_order_depends_on_the_seed_only():
    a = _take(ShuffledBatches(list(range(12)), 4, seed=1), 6)
    b = _take(ShuffledBatches(list(range(12)), 4, seed=1), 6)
    c = _take(ShuffledBatches(list(range(12)), 4, seed=2), 6)
    assert a == b
    assert a != c


def test_order_is_independent_of_batch_size():
    small = sum(_take(ShuffledBatches(list(range(12)), 3, seed=5), 8), [])
    large = sum(_take(ShuffledBatches(list(range(12)), 6, seed=5), 4), [])
    assert small == large


def test_resume_continues_with_exactly_the_next_batch():
    straight = ShuffledBatches(list(range(11)), 4, seed=9)
    expected = _take(straight, 9)
    first = ShuffledBatches(list(range(11)), 4, seed=9)
    head = _take(first, 4)
    state = first.state_dict()
    second = ShuffledBatches(list(range(11)), 4, seed=9)
    second.load_state_dict(state)
    assert head + _take(second, 5) == expected


def test_drop_last_keeps_batch_size_and_keep_last_does_not():
    dropped = _take(ShuffledBatches(list(range(7)), 3, seed=0), 3)
    assert [len(b) for b in dropped] == [3, 3, 3]
    kept = _take(ShuffledBatches(list(range(7)), 3, seed=0, drop_last=False), 3)
    assert [len(b) for b in kept] == [3, 3, 1]


def test_collate_is_applied():
    source = ShuffledBatches(list(range(6)), 2, collate=sum, seed=0, shuffle=False)
    assert _take(source, 3) == [1, 5, 9]


def test_state_of_other_data_is_refused():
    state = ShuffledBatches(list(range(10)), 2, seed=1).state_dict()
    with pytest.raises(ValueError, match="data changed"):
        ShuffledBatches(list(range(12)), 2, seed=1).load_state_dict(state)


def test_too_few_examples_for_one_batch_is_a_clear_error():
    with pytest.raises(ValueError, match="cannot fill one batch"):
        ShuffledBatches([1, 2], 3)


def test_batches_for_uses_the_train_config():
    cfg = TrainConfig(lr=2e-5, max_steps=1000, warmup_steps=100, checkpoint_every=500, batch_size=3, seed=4, drop_last=False)
    source = batches_for(list(range(7)), list, cfg)
    assert source.batch_size == 3 and source.seed == 4 and source.drop_last is False
