"""uniret.evaluation.significance: the paired bootstrap behind dev comparisons."""

from __future__ import annotations

import numpy as np
import pytest

from uniret.evaluation.significance import paired_bootstrap, per_query_pairs


def test_a_clear_gain_has_an_interval_above_zero():
    rng = np.random.default_rng(1)
    a = rng.uniform(0.2, 0.8, size=200)
    b = a + 0.05 + rng.normal(0.0, 0.02, size=200)  # better on almost every query
    result = paired_bootstrap({"dev": (a, b)}, resamples=2000, seed=3)
    assert result.diff == pytest.approx(float(np.mean(b - a)))
    assert 0.0 < result.ci_low < result.diff < result.ci_high
    assert result.share_not_better == 0.0


def test_a_small_gain_on_noisy_queries_is_not_resolved():
    rng = np.random.default_rng(2)
    a = rng.uniform(0.0, 1.0, size=150)
    b = a + rng.normal(0.002, 0.15, size=150)  # a mean gain far below the per-query spread
    result = paired_bootstrap({"dev": (a, b)}, resamples=2000, seed=3)
    assert result.ci_low < 0.0 < result.ci_high
    assert 0.05 < result.share_not_better < 0.95


def test_sets_count_equally_whatever_their_size():
    small = (np.zeros(10), np.ones(10))  # +1 on every query
    large = (np.zeros(1000), np.zeros(1000))  # no change
    result = paired_bootstrap({"small": small, "large": large}, resamples=500, seed=0)
    assert result.diff == pytest.approx(0.5)  # mean of the sets' means, not of all 1,010 queries
    assert result.ci_low == pytest.approx(0.5) and result.ci_high == pytest.approx(0.5)  # no spread anywhere
    assert result.per_set["small"] == {"queries": 10, "a": 0.0, "b": 1.0, "diff": 1.0}


def test_identical_systems_differ_by_nothing_and_the_seed_repeats():
    a = np.linspace(0.0, 1.0, 50)
    same = paired_bootstrap({"dev": (a, a.copy())}, resamples=100)
    assert (same.diff, same.ci_low, same.ci_high, same.share_not_better) == (0.0, 0.0, 0.0, 1.0)
    b = a[::-1].copy()
    first = paired_bootstrap({"dev": (a, b)}, resamples=300, seed=7).as_dict()
    assert first == paired_bootstrap({"dev": (a, b)}, resamples=300, seed=7).as_dict()


def test_bad_inputs_are_refused_with_the_set_named():
    with pytest.raises(ValueError, match="nfcorpus/dev"):
        paired_bootstrap({"nfcorpus/dev": (np.zeros(3), np.zeros(4))})
    with pytest.raises(ValueError, match="no dev sets"):
        paired_bootstrap({})
    with pytest.raises(ValueError, match="different queries"):
        per_query_pairs({"q1": 0.1, "q2": 0.2}, {"q1": 0.3, "q3": 0.0}, "scifact/dev")
    a, b = per_query_pairs({"q2": 0.2, "q1": 0.1}, {"q1": 0.3, "q2": 0.0}, "scifact/dev")
    assert a.tolist() == [0.1, 0.2] and b.tolist() == [0.3, 0.0]  # one query order for both
