"""The dev split carved from the train qrels: deterministic, disjoint, and held out of training."""

from __future__ import annotations

import pytest

from uniret.config.sections import DevSplitConfig
from uniret.data.dev_split import dev_query_ids, split_qrels


def test_dev_carve_is_seeded_sized_and_order_free():
    ids = [f"q{i}" for i in range(100)]
    cfg = DevSplitConfig(fraction=0.2, seed=29)
    dev = dev_query_ids(ids, cfg)
    assert len(dev) == 20 and dev <= set(ids)
    assert dev_query_ids(reversed(ids), cfg) == dev  # input order does not matter
    assert dev_query_ids(ids, DevSplitConfig(fraction=0.2, seed=30)) != dev
    assert dev_query_ids(ids, DevSplitConfig(fraction=0.0)) == set()


def test_split_qrels_partitions_the_judged_queries():
    qrels = {f"q{i}": {f"d{i}": 1} for i in range(10)}
    train, dev = split_qrels(qrels, DevSplitConfig(fraction=0.3, seed=1))
    assert len(dev) == 3 and not set(train) & set(dev) and {**train, **dev} == qrels


def test_dev_names_are_plain_names():
    from uniret.config.loader import ConfigError, build
    from uniret.config.sections import DataConfig

    for bad in ({"datasets": ["../etc"]}, {"split": "/tmp/x"}):
        with pytest.raises(ConfigError, match="dev"):
            build(DataConfig, {"dev": bad}, "params.yaml: data")
