"""Errors of the training loop."""

from __future__ import annotations

from pathlib import Path

from uniret.core.errors import StageFailed


class TrainingDiverged(StageFailed):
    """The loss (or the gradient norm) became NaN/inf: training stops before any update is saved.

    Carries the step, the offending values and the last good checkpoint (which stays intact).
    """

    def __init__(
        self,
        step: int,
        what: str,
        value: float,
        terms: dict[str, float],
        last_checkpoint: Path | None,
    ) -> None:
        self.step = step
        self.what = what
        self.value = value
        self.terms = dict(terms)
        self.last_checkpoint = last_checkpoint
        shown = ", ".join(f"{k}={v:.6g}" for k, v in sorted(self.terms.items())) or "(none logged)"
        kept = f"last good checkpoint: {last_checkpoint}" if last_checkpoint else "no checkpoint was written yet"
        super().__init__(
            f"training diverged at step {step}: {what} is {value} (not finite); "
            f"loss terms: {shown}; {kept}. Lower the learning rate or check the inputs of this batch."
        )
