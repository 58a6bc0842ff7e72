"""Learning-rate schedules (multipliers of the base LR, driven by torch's LambdaLR)."""

from __future__ import annotations

import functools

import torch
from torch.optim.lr_scheduler import LambdaLR


def warmup_linear_factor(step: int, warmup_steps: int, total_steps: int) -> float:
    """LR multiplier for optimizer step `step` (1-based): linear warmup, then linear decay.

    Warmup: step/warmup for step <= warmup (the first update is not wasted at LR 0).
    Decay: (total - step + 1) / (total - warmup) afterwards, so step warmup+1 runs at the full
    LR and the last step at 1/(total - warmup) of it; 0 beyond total_steps.
    """
    if step < 1:
        raise ValueError(f"steps are 1-based, got {step}")
    if warmup_steps and step <= warmup_steps:
        return step / warmup_steps
    remaining = total_steps - step + 1
    if remaining <= 0:
        return 0.0
    return remaining / (total_steps - warmup_steps)


def _factor_for_epoch(epoch: int, warmup_steps: int, total_steps: int) -> float:
    # LambdaLR counts from 0 and the LR of "epoch" e is used by optimizer step e + 1.
    return warmup_linear_factor(epoch + 1, warmup_steps, total_steps)


def warmup_linear_schedule(optimizer: torch.optim.Optimizer, warmup_steps: int, total_steps: int) -> LambdaLR:
    """LambdaLR with linear warmup and decay; call `.step()` after each optimizer step."""
    if not 0 <= warmup_steps <= total_steps:
        raise ValueError(f"warmup_steps must be in [0, {total_steps}], got {warmup_steps}")
    # A partial keeps no state of its own in LambdaLR.state_dict(): on resume the schedule comes
    # from the current config, and only the step counter from the checkpoint.
    factor = functools.partial(_factor_for_epoch, warmup_steps=warmup_steps, total_steps=total_steps)
    return LambdaLR(optimizer, factor)
