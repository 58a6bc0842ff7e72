"""Loss-weight schedules: multiplier in [0, 1] of a term's weight as a function of the step.

SPLADE ramps the FLOPS weight up quadratically over the first steps: a strong sparsity pressure
from step 1 collapses the representations before the ranking loss has shaped them.
"""

from __future__ import annotations

from collections.abc import Callable

from uniret.config.models import ScheduleConfig


class Schedule:
    """Weight multiplier at a (1-based) optimizer step."""

    def __call__(self, step: int) -> float:
        raise NotImplementedError


class Constant(Schedule):
    def __call__(self, step: int) -> float:
        return 1.0


class LinearRamp(Schedule):
    """min(1, step / ramp_steps)."""

    def __init__(self, ramp_steps: int):
        self.ramp_steps = ramp_steps

    def __call__(self, step: int) -> float:
        if self.ramp_steps <= 0:
            return 1.0
        return min(1.0, step / self.ramp_steps)


class QuadraticRamp(Schedule):
    """min(1, (step / ramp_steps)^2) (SPLADE's FLOPS warm-up)."""

    def __init__(self, ramp_steps: int):
        self.ramp_steps = ramp_steps

    def __call__(self, step: int) -> float:
        if self.ramp_steps <= 0:
            return 1.0
        return min(1.0, (step / self.ramp_steps) ** 2)


SCHEDULES: dict[str, Callable[[int], Schedule]] = {
    "constant": lambda ramp_steps: Constant(),
    "linear": LinearRamp,
    "quadratic": QuadraticRamp,
}


def build_schedule(cfg: ScheduleConfig) -> Schedule:
    """The Schedule of a ScheduleConfig."""
    try:
        return SCHEDULES[cfg.kind](cfg.ramp_steps)
    except KeyError as exc:
        raise ValueError(f"unknown schedule {cfg.kind!r}; known: {sorted(SCHEDULES)}") from exc
