"""The simulation protocol of unbiased learning to rank, exactly as ULTRA's click_models.py specifies it."""

from __future__ import annotations

import numpy as np
import pytest

from uniret.clicks.protocol import ULTRA_EXAMINATION, ClickProtocol

BASE = [0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06]


def test_examination_is_ultras_curve_to_the_power_eta_and_the_tenth_value_beyond():
    assert list(ULTRA_EXAMINATION) == BASE
    assert [ClickProtocol().examination(r) for r in range(1, 11)] == BASE
    assert ClickProtocol(eta=2.0).examination(3) == pytest.approx(0.48 ** 2)
    assert ClickProtocol(eta=0.5).examination_curve(10) == pytest.approx(np.sqrt(BASE))
    assert ClickProtocol().examination(11) == ClickProtocol().examination(50) == 0.06
    assert ClickProtocol(eta=0.0).examination(7) == 1.0  # eta 0: no position bias
    assert ClickProtocol().relative_examination(3) == pytest.approx([1.0, 0.61 / 0.68, 0.48 / 0.68])
    with pytest.raises(ValueError, match="1-based"):
        ClickProtocol().examination(0)


def test_click_probability_is_graded_between_e_minus_and_e_plus():
    two = ClickProtocol(click_noise=0.1, click_max=1.0, max_grade=2)
    # e- + (e+ - e-) (2^y - 1) / (2^ymax - 1)
    assert [two.click_probability(y) for y in (0, 1, 2)] == pytest.approx([0.1, 0.1 + 0.9 / 3, 1.0])
    four = ClickProtocol(click_noise=0.1, click_max=0.9, max_grade=4)
    assert [four.click_probability(y) for y in range(5)] == pytest.approx([0.1 + 0.8 * (2**y - 1) / 15 for y in range(5)])
    assert two.click_probability(7) == two.click_probability(2) and two.click_probability(-1) == 0.1  # clamped
    with pytest.raises(ValueError, match="integers"):
        two.click_probabilities([0.5])
    for bad in ({"click_noise": 0.5, "click_max": 0.4}, {"max_grade": 0}, {"eta": -1.0}, {"base": (0.0,)}):
        with pytest.raises(ValueError):
            ClickProtocol(**bad)


def test_sampled_clicks_follow_examination_times_click_probability_and_replay_from_the_seed():
    protocol = ClickProtocol()
    grades = np.tile([2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 2, 0], (40_000, 1))
    clicks = protocol.click_matrix(grades, np.random.default_rng(5))
    expected = [protocol.examination(r + 1) * protocol.click_probability(int(g)) for r, g in enumerate(grades[0])]
    rate = clicks.mean(axis=0)
    # 5 standard errors of a binomial share at 40,000 draws
    assert np.all(np.abs(rate - expected) < 5 * np.sqrt(np.multiply(expected, np.subtract(1, expected)) / 40_000))
    one = protocol.sample_clicks([2, 2, 2, 0, 1], np.random.default_rng(9))
    assert one == protocol.sample_clicks([2, 2, 2, 0, 1], np.random.default_rng(9))
    assert all(1 <= p <= 5 for p in one) and protocol.sample_clicks([], np.random.default_rng(1)) == []
    # a never-clicking and an always-examining, always-clicking protocol
    never = ClickProtocol(click_noise=0.0, click_max=0.0)
    assert never.sample_clicks([2] * 10, np.random.default_rng(1)) == []
    always = ClickProtocol(eta=0.0, click_noise=1.0, click_max=1.0)
    assert always.sample_clicks([0, 1, 2], np.random.default_rng(1)) == [1, 2, 3]
