"""Fusion weights learned on a dev split: the grid, and a choice checked against hand-made runs."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from uniret.evaluation.fusion_tuning import TuningSet, learn_fusion_weights, simplex_grid


def test_simplex_grid_points_sum_to_one():
    grid = simplex_grid(3, 0.05)
    assert len(grid) == 231  # C(22, 2)
    assert all(abs(sum(w) - 1) < 1e-9 and min(w) >= 0 for w in grid)
    assert simplex_grid(2, 0.5) == [(0.0, 1.0), (0.5, 0.5), (1.0, 0.0)]
    with pytest.raises(ValueError, match="divide"):
        simplex_grid(2, 0.3)


def test_learned_weights_follow_the_informative_run():
    # run A ranks the relevant doc first for every query, run B last: all weight goes to A
    qrels = {f"q{i}": {"rel": 1} for i in range(5)}
    good = {q: {"rel": 3.0, "x": 2.0, "y": 1.0} for q in qrels}
    bad = {q: {"rel": 0.1, "x": 0.9, "y": 0.5} for q in qrels}
    choice = learn_fusion_weights([TuningSet("dev", [bad, good], qrels)], step=0.25)
    assert choice.single_scores[1] == pytest.approx(1.0) and choice.single_scores[0] < 1.0
    assert choice.score == pytest.approx(1.0)
    assert choice.weights[1] > choice.weights[0]


def test_fusion_beats_both_runs_when_they_complement():
    # each run finds the relevant doc for half the queries: only a mix ranks it first everywhere
    qrels = {"q1": {"r1": 1}, "q2": {"r2": 1}}
    a = {"q1": {"r1": 1.0, "n": 0.0}, "q2": {"n": 1.0, "r2": 0.9}}
    b = {"q1": {"n": 1.0, "r1": 0.9}, "q2": {"r2": 1.0, "n": 0.0}}
    choice = learn_fusion_weights([TuningSet("dev", [a, b], qrels)], step=0.5)
    assert choice.weights == [0.5, 0.5] and choice.score == pytest.approx(1.0)
    assert max(choice.single_scores) < 1.0


def test_sets_count_equally_whatever_their_size():
    # set "big" (4 queries) prefers run 0, set "small" (1 query) run 1; equal weights make both perfect
    big_q = {f"q{i}": {"r": 1} for i in range(4)}
    big = TuningSet("big", [{q: {"r": 1.0, "n": 0.0} for q in big_q}, {q: {"n": 1.0, "r": 0.6} for q in big_q}], big_q)
    small_q = {"s": {"r": 1}}
    small = TuningSet("small", [{"s": {"n": 1.0, "r": 0.6}}, {"s": {"r": 1.0, "n": 0.0}}], small_q)
    choice = learn_fusion_weights([big, small], step=0.5)
    assert choice.weights == [0.5, 0.5] and choice.score == pytest.approx(1.0)
    with pytest.raises(ValueError, match="same runs"):
        learn_fusion_weights([big, TuningSet("x", [{}], small_q)], step=0.5)


def test_the_train_datasets_own_dev_split_is_not_away_from_it():
    """The loop's dev set is its traffic domain's dev split: no set to learn the other corpora's weights on."""
    from uniret.evaluation.fusion_learning import away_sets

    sets = [SimpleNamespace(name=n) for n in ("scifact", "nfcorpus/dev")]
    assert [t.name for t in away_sets(sets, "scifact")] == ["nfcorpus/dev"]
    assert away_sets(sets[1:], "nfcorpus") == []


def test_configured_zero_shot_weights_are_normalised_and_must_match_the_runs():
    from uniret.core.errors import ConfigError
    from uniret.evaluation.fusion_learning import fixed_weights

    assert fixed_weights([0.7, 0.2, 1.1], ["bm25", "lexical_static", "dense_feedback"], "hybrid_fast") == [0.35, 0.1, 0.55]
    with pytest.raises(ConfigError, match=r"zero_shot_weights.hybrid_fast: 2 weights for the 3 runs"):
        fixed_weights([0.5, 0.5], ["bm25", "lexical_static", "dense_feedback"], "hybrid_fast")
