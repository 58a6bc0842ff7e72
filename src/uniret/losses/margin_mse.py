"""Margin-MSE (Hofstaetter et al.): match the student's positive-negative margins to the teacher's.

L = mean over (query, negative) of ((s+ - s-) - (t+ - t-))^2, positive in column 0 of each group.
"""

from __future__ import annotations

import torch

from uniret.losses.base import Loss, LossInputs


def margin_mse(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """Mean squared difference of [Q, G-1] margins."""
    s_margin = student[:, :1] - student[:, 1:]
    t_margin = teacher[:, :1] - teacher[:, 1:]
    return (s_margin - t_margin).pow(2).mean()


class MarginMSELoss(Loss):
    """Margin-MSE of `channel` scores against teacher `teacher`'s scores."""

    def __init__(self, channel: str = "dense", teacher: str = "reranker"):
        super().__init__()
        self.channel = channel
        self.teacher = teacher

    def forward(self, inputs: LossInputs) -> torch.Tensor:
        return margin_mse(inputs.scores(self.channel), inputs.teacher(self.teacher))
