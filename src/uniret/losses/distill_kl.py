"""Reranker-taught distillation (UnifieR 4.4 / Fig. 8, LED w/ RT): KL over candidate lists.

L = KL( softmax(t / T) || softmax(s / T) ) over each query's group, t the cross-encoder's
scores and s the student's channel scores; the teacher is a fixed target (no gradient).
"""

from __future__ import annotations

import torch

from uniret.losses.agreement import kl_from_scores
from uniret.losses.base import Loss, LossInputs


class DistillKLLoss(Loss):
    """KL(teacher || student) over candidate lists, with a temperature."""

    def __init__(self, channel: str = "dense", temperature: float = 1.0, teacher: str = "reranker"):
        super().__init__()
        self.channel = channel
        self.temperature = temperature
        self.teacher = teacher

    def forward(self, inputs: LossInputs) -> torch.Tensor:
        return kl_from_scores(inputs.teacher(self.teacher), inputs.scores(self.channel), self.temperature)
