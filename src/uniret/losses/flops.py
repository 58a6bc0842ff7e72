"""FLOPS regularizer (Paria et al. 2020), as used by SPLADE and UnifieR for sparsity.

FLOPS(W) = sum_j ( (1/N) sum_i |w_ij| )^2 over the vocabulary j and the N rows of a batch:
the squared mean activation of each term, a smooth proxy of the number of floating-point
operations of a sparse dot product. Queries and documents are regularised separately.
"""

from __future__ import annotations

import torch

from uniret.losses.base import Loss, LossInputs


def flops(weights: torch.Tensor) -> torch.Tensor:
    """FLOPS of a [N, V] batch of term weights."""
    return weights.abs().mean(dim=0).pow(2).sum()


class FlopsLoss(Loss):
    """query_weight * FLOPS(queries) + doc_weight * FLOPS(documents) on the sparse channel."""

    def __init__(self, query_weight: float = 1.0, doc_weight: float = 1.0):
        super().__init__()
        self.query_weight = query_weight
        self.doc_weight = doc_weight

    def forward(self, inputs: LossInputs) -> torch.Tensor:
        if inputs.query.sparse is None or inputs.docs.sparse is None:
            raise ValueError("the FLOPS regularizer needs a sparse channel")
        return self.query_weight * flops(inputs.query.sparse) + self.doc_weight * flops(inputs.docs.sparse)
