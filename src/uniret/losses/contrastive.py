"""InfoNCE contrastive loss (UnifieR Eq. 1-2, LED Eq. 3/8, Aggretriever's NLL).

L = -log( exp(s(q, d+) / tau) / sum_{d in candidates} exp(s(q, d) / tau) ), averaged over queries.
Candidates are the query's own group (positive + hard negatives) or, with in-batch negatives,
every document of the batch (other queries' positives and negatives too).

With `bm25_residual` = lambda > 0 the logits are s(q, d) / tau + lambda * bm25(q, d), BM25 min-max
normalised over the query's run (0 for other queries' documents: below its run). The channel is
then trained on BM25's residual, as CLEAR trains its embedding (DualRM Eq. 3-4), but in a softmax:
pairs BM25 already ranks right give small gradients, so training goes to what the fusion with
BM25 still gets wrong.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from uniret.losses.base import Loss, LossInputs


def residual_logits(bm25_minmax: torch.Tensor, in_batch: bool) -> torch.Tensor:
    """[Q, G] normalised BM25 scores laid out as the score matrix: [Q, G], or [Q, Q*G] with each
    query's own group on its block and 0 elsewhere."""
    if not in_batch:
        return bm25_minmax
    nq, group = bm25_minmax.shape
    out = bm25_minmax.new_zeros(nq, nq, group)
    idx = torch.arange(nq, device=bm25_minmax.device)
    out[idx, idx] = bm25_minmax
    return out.view(nq, nq * group)


class ContrastiveLoss(Loss):
    """InfoNCE over one score channel, with a temperature, optional in-batch negatives and an
    optional BM25 prior on the logits (training on BM25's residual)."""

    def __init__(self, channel: str = "dense", temperature: float = 1.0, in_batch: bool = True,
                 bm25_residual: float = 0.0):
        super().__init__()
        self.channel = channel
        self.temperature = temperature
        self.in_batch = in_batch
        self.bm25_residual = bm25_residual

    def forward(self, inputs: LossInputs) -> torch.Tensor:
        scores = inputs.scores(self.channel, in_batch=self.in_batch) / self.temperature
        if self.bm25_residual > 0:
            if inputs.bm25_minmax is None:
                raise ValueError("a contrastive term with bm25_residual needs the batch's normalised BM25 scores")
            scores = scores + self.bm25_residual * residual_logits(inputs.bm25_minmax.to(scores.dtype), self.in_batch)
        return F.cross_entropy(scores, inputs.positive_index(self.in_batch))
