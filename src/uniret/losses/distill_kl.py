"""Reranker-taught distillation (UnifieR 4.4 / Fig. 8, LED w/ RT): KL over candidate lists.

L = KL( softmax(t / T_t) || softmax(s / T) ) over each query's group, t the cross-encoder's
scores and s the student's channel scores; the teacher is a fixed target (no gradient).
T_t defaults to T; a separate teacher temperature matters when the two score scales differ
(e.g. a cosine student with T = 0.05 against raw cross-encoder logits).
"""

from __future__ import annotations

import torch

from uniret.losses.agreement import kl_from_scores
from uniret.losses.base import Loss, LossInputs


class DistillKLLoss(Loss):
    """KL(teacher || student) over candidate lists, with a temperature."""

    def __init__(
        self,
        channel: str = "dense",
        temperature: float = 1.0,
        teacher: str = "reranker",
        teacher_temperature: float | None = None,
    ):
        super().__init__()
        self.channel = channel
        self.temperature = temperature
        self.teacher = teacher
        self.teacher_temperature = temperature if teacher_temperature is None else teacher_temperature

    def forward(self, inputs: LossInputs) -> torch.Tensor:
        target = inputs.teacher(self.teacher) / self.teacher_temperature
        student = inputs.scores(self.channel) / self.temperature
        return kl_from_scores(target, student)
