"""Hard-negative sampling from a head's ranking: window, positive exclusion, false-negative filter."""

from __future__ import annotations

from uniret.training.mining import merge_negatives, positive_recall, sample_window, window_candidates


def _run(n: int) -> dict[str, float]:
    """d0 best ... d{n-1} worst."""
    return {f"d{i}": float(n - i) for i in range(n)}


def test_window_drops_positives_before_cutting_ranks():
    hits = _run(10)
    # positives d1 and d3 are removed first, so ranks 2..5 of the rest are d4, d5, d6
    assert window_candidates(hits, {"d1", "d3"}, (2, 5)) == ["d4", "d5", "d6"]


def test_sampled_negatives_come_from_the_window_and_exclude_positives():
    run = {f"q{i}": _run(40) for i in range(20)}
    positives = {f"q{i}": [f"d{i}"] for i in range(20)}
    mined = sample_window(run, positives, (5, 15), per_query=4, seed=3, channel="dense")
    for qid, negs in mined.items():
        order = [d for d in run[qid] if d not in positives[qid]]
        window = set(order[5:15])
        assert len(negs) == 4
        assert set(negs) <= window
        assert not set(negs) & set(positives[qid])
        assert negs == sorted(negs, key=order.index)  # rank order kept


def test_sampling_is_seeded_per_query():
    run = {"a": _run(30), "b": _run(30)}
    both = sample_window(run, {"a": [], "b": []}, (0, 20), 5, seed=1, channel="sparse")
    alone = sample_window(run, {"a": []}, (0, 20), 5, seed=1, channel="sparse")
    other_seed = sample_window(run, {"a": []}, (0, 20), 5, seed=2, channel="sparse")
    assert both["a"] == alone["a"]
    assert other_seed["a"] != alone["a"]


def test_false_negative_filter_drops_candidates_near_the_positive_score():
    hits = {"p": 10.0, "x": 9.9, "y": 5.0, "z": 1.0}
    kept = window_candidates(hits, {"p"}, (0, 3), positive_floor=10.0, ratio=0.9)
    assert kept == ["y", "z"]  # x scores 99% of the positive: likely an unjudged relevant doc


def test_merge_interleaves_without_duplicates_and_recall_counts_found_positives():
    assert merge_negatives(["a", "b", "c"], ["b", "d"]) == ["a", "b", "d", "c"]
    run = {"q1": {"d1": 1.0}, "q2": {"d9": 1.0}}
    assert positive_recall(run, {"q1": ["d1"], "q2": ["d2"]}) == 0.5
