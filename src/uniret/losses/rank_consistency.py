"""LED's pair-wise rank-consistent regularization (Eq. 9-10).

The teacher orders every pair of the query's candidates D^q = {p+} U N_mix:
K^q = {(p_i, p_j) : R(p_i; teacher) > R(p_j; teacher)}, and the student pays a hinge when it
orders such a pair the other way:

    L = 1/|K^q| sum_{(p_i, p_j) in K^q} max(0, R(p_j; student) - R(p_i; student))

NOTE: the printed Eq. 10 reads max[0, R(p_i) - R(p_j)], which would penalise the student for
AGREEING with the teacher. The text says the student is not punished "as long as its ranking of
a given pair is the same as the teacher", so we implement the hinge on R(p_j) - R(p_i).
No margin: the paper stresses a weak signal, without Margin-MSE's score-gap matching.
"""

from __future__ import annotations

import torch

from uniret.losses.base import Loss, LossInputs


def rank_consistency(student: torch.Tensor, teacher: torch.Tensor) -> torch.Tensor:
    """Mean over queries of the mean hinge over teacher-ordered pairs; [Q, G] scores each.

    Queries whose teacher scores are all tied have no pairs and contribute 0.
    """
    # pairs[q, i, j] is True when the teacher ranks candidate i above candidate j
    pairs = teacher.unsqueeze(2) > teacher.unsqueeze(1)
    violation = torch.relu(student.unsqueeze(1) - student.unsqueeze(2))  # [q, i, j] = s_j - s_i
    pairs_f = pairs.to(student.dtype)
    per_query = (violation * pairs_f).sum(dim=(1, 2)) / pairs_f.sum(dim=(1, 2)).clamp(min=1.0)
    return per_query.mean()


class RankConsistencyLoss(Loss):
    """Rank-consistent hinge of the student's `channel` scores against teacher `teacher`'s orders."""

    def __init__(self, channel: str = "dense", teacher: str = "lexical"):
        super().__init__()
        self.channel = channel
        self.teacher = teacher

    def forward(self, inputs: LossInputs) -> torch.Tensor:
        return rank_consistency(inputs.scores(self.channel), inputs.teacher(self.teacher))
