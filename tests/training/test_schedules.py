"""Linear warmup + linear decay LR schedule."""

from __future__ import annotations

import pytest
import torch

from uniret.training.schedules import warmup_linear_factor, warmup_linear_schedule


@pytest.mark.parametrize(
    ("step", "expected"),
    [(1, 0.25), (2, 0.5), (4, 1.0), (5, 1.0), (6, 5 / 6), (9, 2 / 6), (10, 1 / 6), (11, 0.0), (50, 0.0)],
)
def test_factor_at_given_steps(step, expected):
    # warmup 4 of 10 steps: 1/4..4/4, then (10 - step + 1) / 6 down to 1/6 at the last step.
    assert warmup_linear_factor(step, warmup_steps=4, total_steps=10) == pytest.approx(expected)


def test_no_warmup_starts_at_full_lr():
    assert warmup_linear_factor(1, 0, 5) == 1.0
    assert warmup_linear_factor(5, 0, 5) == pytest.approx(0.2)


def test_steps_are_one_based():
    with pytest.raises(ValueError, match="1-based"):
        warmup_linear_factor(0, 2, 10)


def test_lambda_lr_gives_the_factor_of_each_optimizer_step():
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([param], lr=0.1)
    sched = warmup_linear_schedule(opt, warmup_steps=3, total_steps=8)
    used = []
    for _ in range(8):
        used.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    assert used == pytest.approx([0.1 * warmup_linear_factor(s, 3, 8) for s in range(1, 9)])
    assert used[2] == pytest.approx(0.1) and used[-1] == pytest.approx(0.1 / 5)


def test_schedule_state_resumes_from_the_current_config():
    param = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.AdamW([param], lr=1.0)
    sched = warmup_linear_schedule(opt, 0, 10)
    for _ in range(4):
        opt.step()
        sched.step()
    saved = sched.state_dict()
    # Longer run resumed from that state: the counter comes from the state, the horizon from config.
    opt2 = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    longer = warmup_linear_schedule(opt2, 0, 20)
    longer.load_state_dict(saved)
    assert longer.last_epoch == 4
    assert longer.lr_lambdas[0](4) == pytest.approx(warmup_linear_factor(5, 0, 20))


def test_warmup_longer_than_run_is_refused():
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=1.0)
    with pytest.raises(ValueError, match="warmup_steps"):
        warmup_linear_schedule(opt, 11, 10)
