"""The one encoder interface every recipe implements (after Tevatron's shared encoder).

A retrieval encoder maps tokenized text to an `Encoded` pair: a dense vector and/or sparse
term weights over the tokenizer's vocabulary. Losses, mining, indexing, ONNX export and serving
only see this interface, so a new recipe plugs in by implementing `forward`.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class Encoded:
    """Encoder output for a batch.

    dense:  [batch, dim] float, or None for sparse-only models.
    sparse: [batch, vocab] non-negative term weights, or None for dense-only models.
    gate:   [batch] in [0, 1], weight of the lexical channel (query-side gating), or None.
    """

    dense: torch.Tensor | None = None
    sparse: torch.Tensor | None = None
    gate: torch.Tensor | None = None


class RetrievalEncoder(nn.Module):
    """Base class: subclasses implement `forward(input_ids, attention_mask, is_query)`."""

    #: which channels this model produces: subset of {"dense", "sparse"}
    channels: tuple[str, ...] = ("dense", "sparse")

    def forward(  # type: ignore[override]
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, is_query: bool = False
    ) -> Encoded:
        raise NotImplementedError
