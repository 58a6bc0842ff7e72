"""Sparse-only lexical encoder (SPLADE-max): MLM logits -> log(1 + relu) -> max over tokens.

Used as LED's frozen lexical teacher and as a lexical baseline.
"""

from __future__ import annotations

import torch

from uniret.models.backbones import base_model, load_backbone, mlm_head
from uniret.models.base import Encoded, RetrievalEncoder
from uniret.models.pooling import splade_pool


class SpladeEncoder(RetrievalEncoder):
    """SPLADE-max over a masked-LM backbone; produces only the sparse channel."""

    channels = ("sparse",)

    def __init__(self, backbone: str, dropout: float | None = None, pretrained: bool = True):
        super().__init__()
        self.mlm = load_backbone(backbone, with_mlm_head=True, dropout=dropout, pretrained=pretrained)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, is_query: bool = False) -> Encoded:
        hidden = base_model(self.mlm)(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        return Encoded(sparse=splade_pool(mlm_head(self.mlm), hidden, attention_mask))


def freeze(model: torch.nn.Module) -> torch.nn.Module:
    """Eval mode and no gradients: a teacher that training cannot change."""
    model.eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return model
