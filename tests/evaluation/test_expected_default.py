"""The default recipe's expected scores (expected/hybrid.yaml): they name the mode the
default serves, they sit above BM25's references on every set (the claim the file records), and the
evaluate stage's comparison flags a score outside the stated tolerance.

The scores themselves are checked by every cpu-profile evaluate (`make demo`): training the default
at cpu scale takes far longer than CI allows, as BM25's full-data run does not."""

from __future__ import annotations

import pytest

from uniret.config import load_params
from uniret.evaluation.expected import compare, load_expected
from uniret.registry.gate import resolve_gate_config


@pytest.fixture(scope="module")
def expected(repo_root):
    return load_expected(repo_root / "expected" / "hybrid.yaml")


def test_expected_file_names_the_default_served_mode_and_is_checked_by_evaluate(repo_root, expected):
    params = load_params(repo_root / "params.yaml", "cpu")
    assert expected.system == resolve_gate_config(params).candidate_system
    assert "expected/hybrid.yaml" in params.section("evaluate").expected_scores
    assert {key.partition(":")[0] for key in expected.scores} == set(params.section("data").eval_datasets)
    # subsets: the train dataset's seen / novel test queries (metrics.json `overlap`)
    train = params.section("data").train_dataset
    assert {key for key in expected.scores if ":" in key} == {f"{train}:seen", f"{train}:novel"}


def test_default_expected_scores_beat_bm25_references(repo_root, expected):
    bm25 = load_expected(repo_root / "expected" / "bm25.yaml")
    for dataset, refs in expected.scores.items():
        if ":" not in dataset:  # bm25.yaml's independent references cover whole splits only
            assert refs["ndcg@10"] > bm25.scores[dataset]["ndcg@10"] + bm25.tolerance, dataset


def test_comparison_flags_scores_beyond_the_tolerance(expected):
    def doc(shift: float) -> dict:
        scores = {d: {expected.system: {m: v + shift for m, v in refs.items()}} for d, refs in expected.scores.items()}
        overlap: dict = {}
        for key in [k for k in scores if ":" in k]:
            dataset, _, subset = key.partition(":")
            overlap.setdefault(dataset, {})[subset] = scores.pop(key)
        return {"datasets": scores, "overlap": overlap}

    assert compare(doc(expected.tolerance / 2), expected) == []
    failures = compare(doc(-2 * expected.tolerance), expected)
    assert len(failures) == sum(len(r) for r in expected.scores.values()) and "expected" in failures[0]
    assert "system not evaluated" in compare({"datasets": {d: {} for d in expected.scores if ":" not in d}}, expected)[0]
