"""Pooling of token states into one vector: [CLS], mean, and SPLADE's saturated max over the vocabulary."""

from __future__ import annotations

import torch


def cls_pool(hidden: torch.Tensor) -> torch.Tensor:
    """[B, L, H] -> [B, H]: the first ([CLS]) position."""
    return hidden[:, 0]


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """[B, L, H] -> [B, H]: mean over non-padding positions (special tokens included)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)


def saturated_max_pool(logits: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """SPLADE-max / UnifieR Eq. 5: v = max_i log(1 + relu(logits_i)) over non-padding positions.

    log(1 + relu(.)) is monotone non-decreasing, so it commutes with the max: we take the max of
    the raw logits first and saturate the [B, V] result, not the [B, L, V] tensor (same values and
    gradients, far fewer elementwise ops on a 30522-wide vocabulary).
    """
    masked = logits.masked_fill(~attention_mask.bool().unsqueeze(-1), float("-inf"))
    pooled = masked.max(dim=1).values
    return torch.log1p(torch.relu(pooled))
