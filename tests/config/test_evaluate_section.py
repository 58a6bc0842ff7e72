"""The evaluate params section: readable metric names are checked when params load."""

from __future__ import annotations

import pytest

from uniret.config import Params
from uniret.config.loader import ConfigError


def _section(values: dict):
    return Params(raw={"evaluate": values}, profile="tiny").section("evaluate")


def test_repo_params_use_readable_metric_names(repo_root):
    from uniret.config import load_params

    cfg = load_params(repo_root / "params.yaml", "cpu").section("evaluate")
    assert cfg.metrics == ["ndcg@10", "mrr@10", "recall@100", "recall@1000", "map"]
    assert cfg.expected_scores == ["expected/bm25.yaml", "expected/hybrid.yaml", "expected/hybrid_bm25.yaml"]
    assert cfg.strict_expected is False


@pytest.mark.parametrize(
    "values, message",
    [
        ({"metrics": ["ndcg@10", "ndcg_cut_10"]}, r"evaluate: metrics\[1\]: unknown metric 'ndcg_cut_10'"),
        ({"metrics": ["map", "map"]}, "duplicate"),
        ({"metrics": []}, "at least one metric"),
        ({"strict_expected": "yes"}, "strict_expected: expected true/false"),
    ],
)
def test_bad_evaluate_section_names_the_key(values, message):
    with pytest.raises(ConfigError, match=message):
        _section(values)
