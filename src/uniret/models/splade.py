"""Sparse-only lexical encoder (SPLADE-max): MLM logits -> log(1 + relu) -> max over tokens.

Used as LED's frozen lexical teacher and as a lexical baseline.
"""

from __future__ import annotations

import torch

from uniret.models.backbones import load_backbone
from uniret.models.base import Encoded, RetrievalEncoder
from uniret.models.pooling import saturated_max_pool


class SpladeEncoder(RetrievalEncoder):
    """SPLADE-max over a masked-LM backbone; produces only the sparse channel."""

    channels = ("sparse",)

    def __init__(self, backbone: str, dropout: float | None = None, pretrained: bool = True):
        super().__init__()
        self.mlm = load_backbone(backbone, with_mlm_head=True, dropout=dropout, pretrained=pretrained)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, is_query: bool = False) -> Encoded:
        logits = self.mlm(input_ids=input_ids, attention_mask=attention_mask).logits
        return Encoded(sparse=saturated_max_pool(logits, attention_mask))


def freeze(model: torch.nn.Module) -> torch.nn.Module:
    """Eval mode and no gradients: a teacher that training cannot change."""
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model
