"""ranking_differences: equal rankings up to ties within a tolerance, and nothing more."""

from __future__ import annotations

from uniret.core.runs import ranking_differences

WANT = {"a": 0.90, "b": 0.80, "c": 0.7000, "d": 0.69995, "e": 0.50}


def test_identical_rankings_agree():
    assert ranking_differences(WANT, dict(WANT), 4, 1e-4) == []


def test_a_swap_of_scores_tied_within_the_tolerance_is_allowed():
    got = dict(WANT, c=0.69994, d=0.70001)  # c and d trade places by float noise
    assert ranking_differences(WANT, got, 4, 1e-4) == []
    assert ranking_differences(WANT, got, 4, 1e-6)  # not at a stricter tolerance


def test_a_tie_at_the_cut_may_end_the_list_on_either_document():
    got = {d: s for d, s in WANT.items() if d != "c"} | {"c": 0.69990}
    assert ranking_differences(WANT, got, 3, 1e-4) == []


def test_a_real_swap_is_reported_with_its_rank():
    got = dict(WANT, b=0.70, c=0.80)
    problems = ranking_differences(WANT, got, 4, 1e-4)
    assert problems and problems[0].startswith("rank 2: c in place of b")


def test_a_document_from_beyond_the_other_lists_depth_needs_a_tie_with_its_end():
    want = {"a": 0.9, "b": 0.8}  # the reference list stops at depth 2
    near = {"a": 0.9, "x": 0.80001}  # x could be b's twin just below the cut
    far = {"a": 0.9, "x": 0.80001, "b": 0.5}
    assert ranking_differences(want, near, 2, 1e-4) == []
    assert ranking_differences(want | {"c": 0.1}, near | {"b": 0.5}, 2, 1e-4)
    assert ranking_differences(want, far, 3, 1e-4)  # different lengths


def test_scores_must_agree_position_by_position():
    got = dict(WANT, a=0.95)
    assert ranking_differences(WANT, got, 2, 1e-4) == ["rank 1: score 0.95 where 0.9 was expected (a vs a)"]
