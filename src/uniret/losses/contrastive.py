"""InfoNCE contrastive loss (UnifieR Eq. 1-2, LED Eq. 3/8, Aggretriever's NLL).

L = -log( exp(s(q, d+) / tau) / sum_{d in candidates} exp(s(q, d) / tau) ), averaged over queries.
Candidates are the query's own group (positive + hard negatives) or, with in-batch negatives,
every document of the batch (other queries' positives and negatives too).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from uniret.losses.base import Loss, LossInputs


class ContrastiveLoss(Loss):
    """InfoNCE over one score channel, with a temperature and optional in-batch negatives."""

    def __init__(self, channel: str = "dense", temperature: float = 1.0, in_batch: bool = True):
        super().__init__()
        self.channel = channel
        self.temperature = temperature
        self.in_batch = in_batch

    def forward(self, inputs: LossInputs) -> torch.Tensor:
        scores = inputs.scores(self.channel, in_batch=self.in_batch) / self.temperature
        return F.cross_entropy(scores, inputs.positive_index(self.in_batch))
