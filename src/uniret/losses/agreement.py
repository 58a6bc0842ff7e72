"""UnifieR's agreement-based self-regularization (Eq. 9).

L_reg = KL( P(d | q, {d+} U N; Theta_den) || P(d | q, {d+} U N; Theta_lex) ), where each P is
the softmax of a head's scores over the query's candidates (its group). The paper writes the
dense distribution first and applies no stop-gradient: both heads move towards agreement (the
lexicon side's scores reach theta_den only through the dense term, since the lexicon module sees
u through a stop-gradient). `stop_gradient` can freeze either side for ablations.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from uniret.losses.base import Loss, LossInputs


def kl_from_scores(p_scores: torch.Tensor, q_scores: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
    """Mean over rows of KL(softmax(p_scores / T) || softmax(q_scores / T))."""
    log_p = F.log_softmax(p_scores / temperature, dim=-1)
    log_q = F.log_softmax(q_scores / temperature, dim=-1)
    return (log_p.exp() * (log_p - log_q)).sum(dim=-1).mean()


class AgreementLoss(Loss):
    """KL(P_first || P_second) between two channels' candidate distributions (default dense || sparse)."""

    def __init__(
        self, first: str = "dense", second: str = "sparse", temperature: float = 1.0, stop_gradient: str = "none"
    ):
        super().__init__()
        if stop_gradient not in ("none", "first", "second"):
            raise ValueError(f"stop_gradient must be none, first or second, got {stop_gradient!r}")
        self.first = first
        self.second = second
        self.temperature = temperature
        self.stop_gradient = stop_gradient

    def forward(self, inputs: LossInputs) -> torch.Tensor:
        p = inputs.scores(self.first)
        q = inputs.scores(self.second)
        if self.stop_gradient == "first":
            p = p.detach()
        elif self.stop_gradient == "second":
            q = q.detach()
        return kl_from_scores(p, q, self.temperature)
