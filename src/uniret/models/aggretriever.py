"""Aggretriever (Lin et al., 3): [CLS] projected, concatenated with the agg* lexical vector.

    p_i   = softmax(MLM(e_i))                        token distribution over the vocabulary (Eq. 2)
    w_i   = |W e_i + b|                              learned term importance (scalar)
    v[t]  = max_i w_i * p_i[t]                       weighted max pooling, [CLS]/[SEP] excluded (Eq. 3)
    agg+  = slice max of v over d random vocabulary slices   (Eq. 4)
    agg*  = agg+ with the sign flipped when the slice's argmax falls in its S- half (Eq. 7)
    dense = proj([CLS]) (+) agg*

Losses see the parts through `dense_parts` ("cls", "agg"), so the paper's objective
L + 0.5 L_agg + 0.5 L_cls is three contrastive terms on channels dense, agg and cls.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from uniret.models.backbones import base_model, load_backbone, mlm_head
from uniret.models.base import Encoded, RetrievalEncoder
from uniret.models.pooling import cls_pool, vocab_max


def slice_index(vocab_size: int, slices: int, seed: int) -> torch.Tensor:
    """[slices, slice_size] vocabulary ids: a seeded random, even partition of the vocabulary.

    The vocabulary is padded to slices * slice_size with the id `vocab_size`, which points at a
    zero column appended before pooling (weights are >= 0, so padding never wins a max).
    """
    size = math.ceil(vocab_size / slices)
    gen = torch.Generator().manual_seed(seed)
    perm = torch.randperm(vocab_size, generator=gen)
    pad = torch.full((slices * size - vocab_size,), vocab_size, dtype=perm.dtype)
    return torch.cat([perm, pad]).view(slices, size)


def slice_max_signed(v: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """agg* of [B, V] weights: per slice, the max weight, negated when its argmax is in S- (second half)."""
    padded = torch.cat([v, v.new_zeros(v.shape[0], 1)], dim=1)
    grouped = padded[:, index]  # [B, d, slice_size]
    values, arg = grouped.max(dim=-1)
    half = index.shape[1] // 2
    sign = torch.where(arg < half, 1.0, -1.0).to(values.dtype)
    return values * sign


def lexical_token_mask(attention_mask: torch.Tensor) -> torch.Tensor:
    """Non-padding positions minus [CLS] (first) and [SEP] (last non-padding position)."""
    mask = attention_mask.bool().clone()
    mask[:, 0] = False
    last = attention_mask.long().sum(1) - 1
    mask[torch.arange(mask.shape[0], device=mask.device), last.clamp(min=0)] = False
    return mask


class AggretrieverEncoder(RetrievalEncoder):
    """Single dense vector [proj(CLS) ; agg*] over a masked-LM backbone."""

    channels = ("dense",)

    def __init__(
        self, backbone: str, cls_dim: int = 128, agg_dim: int = 640, slice_seed: int = 0, dropout: float | None = None,
        pretrained: bool = True,
    ):
        super().__init__()
        self.mlm = load_backbone(backbone, with_mlm_head=True, dropout=dropout, pretrained=pretrained)
        hidden = self.mlm.config.hidden_size
        self.cls_proj = nn.Linear(hidden, cls_dim)
        self.term_weight = nn.Linear(hidden, 1)
        self.register_buffer("slice_index", slice_index(self.mlm.config.vocab_size, agg_dim, slice_seed))
        self.dense_parts = {"cls": (0, cls_dim), "agg": (cls_dim, cls_dim + agg_dim)}

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, is_query: bool = False) -> Encoded:
        hidden = base_model(self.mlm)(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        head = mlm_head(self.mlm)

        def weighted_probs(h: torch.Tensor) -> torch.Tensor:  # w_i * softmax(MLM(e_i)) per token
            return self.term_weight(h).abs() * torch.softmax(head(h), dim=-1)

        v = vocab_max(weighted_probs, hidden, lexical_token_mask(attention_mask))
        agg = slice_max_signed(v, self.slice_index)
        return Encoded(dense=torch.cat([self.cls_proj(cls_pool(hidden)), agg], dim=-1))
