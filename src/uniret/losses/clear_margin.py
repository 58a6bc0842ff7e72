"""CLEAR's residual-margin hinge (DualRM Eq. 3-4).

For each query, its positive d+ and each negative d- of its group (negatives sampled from
BM25's top-N mistakes):

    m_r = xi - lambda_train * (s_lex(q, d+) - s_lex(q, d-))
    L   = [m_r - s_emb(q, d+) + s_emb(q, d-)]_+

averaged over all (query, negative) triplets. When BM25 already separates the pair, the margin
shrinks (or turns negative) and the embedding model learns little; where BM25 fails, the margin
grows and the embedding model must fix BM25's error.
"""

from __future__ import annotations

import torch

from uniret.losses.base import Loss, LossInputs


def residual_margin_hinge(emb: torch.Tensor, bm25: torch.Tensor, xi: float, lambda_train: float) -> torch.Tensor:
    """Mean hinge over [Q, G-1] triplets; emb and bm25 are [Q, G] with the positive in column 0."""
    margin = xi - lambda_train * (bm25[:, :1] - bm25[:, 1:])
    return torch.relu(margin - emb[:, :1] + emb[:, 1:]).mean()


class ClearMarginLoss(Loss):
    """Residual-margin hinge of the embedding scores against `inputs.bm25_scores`."""

    def __init__(self, channel: str = "dense", xi: float = 1.0, lambda_train: float = 0.1):
        super().__init__()
        self.channel = channel
        self.xi = xi
        self.lambda_train = lambda_train

    def forward(self, inputs: LossInputs) -> torch.Tensor:
        if inputs.bm25_scores is None:
            raise ValueError("the CLEAR margin loss needs bm25_scores [Q, G]")
        if inputs.group_size < 2:
            raise ValueError("the CLEAR margin loss needs at least one negative per query")
        return residual_margin_hinge(inputs.scores(self.channel), inputs.bm25_scores, self.xi, self.lambda_train)
