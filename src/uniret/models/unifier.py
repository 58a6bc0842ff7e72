"""UnifieR encoder (UnifieR 3.2): one transformer, a dense and a lexicon representing module.

    H   = Transformer([CLS] x [SEP]; theta_ctx)                 shared lower layers   (Eq. 3)
    u   = CLS-Pool(Transformer(H; theta_den))                   dense module          (Eq. 4)
    v   = log(1 + MaxPool(ReLU(W_e Transformer([u, h_1..h_n]; theta_mlm))))   lexicon (Eq. 5)

The lexicon module sees the global dense vector u in place of h_[CLS] ("global-aware lexicon
weighting"); W_e is the MLM head tied to the word embeddings. The paper states that theta_den
is not optimised by the losses on top of the lexicon module (3.3), so u enters the lexicon module
through a stop-gradient. With gating on, a query-side gate g = sigmoid(w^T u_q + b) (4.4, Fig. 7)
weighs the lexicon channel against the dense one in uni-retrieval; documents get no gate, so
indexing is unaffected.
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from uniret.models.backbones import (
    BackboneError,
    base_model,
    encoder_layers,
    layer_mask,
    load_backbone,
    mlm_head,
    run_layers,
)
from uniret.models.base import Encoded, RetrievalEncoder
from uniret.models.pooling import cls_pool, splade_pool

# An undecided gate (g = 0.5) reproduces the paper's plain addition of the two scores.
_GATE_SCALE = 2.0


def split_layers(total: int, shared: int | None, dense: int | None, lexicon: int) -> tuple[int, int]:
    """Resolve the (shared, dense) layer counts of a `total`-layer backbone; errors name the field."""
    shared = total // 2 if shared is None else shared
    dense = total - shared if dense is None else dense
    if dense < 1:
        raise BackboneError(f"dense_layers must be >= 1 (theta_den is untied from theta_ctx), got {dense}")
    if shared + dense > total:
        raise BackboneError(f"shared_layers ({shared}) + dense_layers ({dense}) exceed the backbone's {total} layers")
    if lexicon > total:
        raise BackboneError(f"lexicon_layers ({lexicon}) exceeds the backbone's {total} layers")
    return shared, dense


class UnifierEncoder(RetrievalEncoder):
    """Shared lower layers, a dense module ([CLS] of the upper layers) and a lexicon module."""

    channels = ("dense", "sparse")

    def __init__(
        self,
        backbone: str,
        shared_layers: int | None = None,
        dense_layers: int | None = None,
        lexicon_layers: int = 1,
        gating: bool = False,
        dropout: float | None = None,
        pretrained: bool = True,
    ):
        super().__init__()
        mlm = load_backbone(backbone, with_mlm_head=True, dropout=dropout, pretrained=pretrained)
        layers = encoder_layers(mlm)
        shared, dense = split_layers(len(layers), shared_layers, dense_layers, lexicon_layers)
        self.config = mlm.config
        self.embeddings = base_model(mlm).embeddings
        self.ctx_layers = nn.ModuleList(layers[:shared])  # theta_ctx
        self.den_layers = nn.ModuleList(layers[shared : shared + dense])  # theta_den
        # theta_mlm starts as a copy of the backbone's top layers: for SPLADE-tiny that keeps the
        # lexicon path close to the trained SPLADE model it comes from.
        self.lex_layers = nn.ModuleList(copy.deepcopy(layers[len(layers) - lexicon_layers :]))
        # the MLM head (BertOnlyMLMHead): its decoder is W_e, tied to the input word embeddings
        self.mlm_head = mlm_head(mlm)
        self.gate = None
        if gating:
            self.gate = nn.Linear(self.config.hidden_size, 1)
            # zero init: training starts from g = 0.5, i.e. the paper's plain score addition
            nn.init.zeros_(self.gate.weight)
            nn.init.zeros_(self.gate.bias)

    def module_states(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(u, the lexicon module's token states before the MLM head): [B, H] and [B, L, H]."""
        emb = self.embeddings(input_ids=input_ids)
        mask = layer_mask(self.config, emb, attention_mask)
        h = run_layers(self.ctx_layers, emb, mask)
        u = cls_pool(run_layers(self.den_layers, h, mask))
        # Stop-gradient: losses on the lexicon channel must not update theta_den (UnifieR 3.3).
        lex_in = torch.cat([u.detach().unsqueeze(1), h[:, 1:]], dim=1)
        return u, run_layers(self.lex_layers, lex_in, mask)

    def encode_dense(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        """u alone ([B, H]), as forward computes it, without the lexicon module and its 30k-wide MLM
        head: the static tower encodes every vocabulary token and many texts this way."""
        emb = self.embeddings(input_ids=input_ids)
        mask = layer_mask(self.config, emb, attention_mask)
        return cls_pool(run_layers(self.den_layers, run_layers(self.ctx_layers, emb, mask), mask))

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, is_query: bool = False) -> Encoded:
        u, lexicon_states = self.module_states(input_ids, attention_mask)
        v = splade_pool(self.mlm_head, lexicon_states, attention_mask)
        gate = torch.sigmoid(self.gate(u)).squeeze(-1) if (self.gate is not None and is_query) else None
        return Encoded(dense=u, sparse=v, gate=gate)


def combine_uni(dense_scores: torch.Tensor, lex_scores: torch.Tensor, gate: torch.Tensor | None = None):
    """Uni-retrieval score (UnifieR 3.4): dense + lexicon, or gated by the query-side gate (4.4).

    Scores are [Q, C]; gate is [Q] (weight of the lexicon channel). Gated: 2 * (g * lex + (1 - g)
    * dense), equal to the plain addition when g = 0.5. Works on torch tensors and numpy arrays.
    """
    if gate is None:
        return dense_scores + lex_scores
    g = gate.reshape(-1, 1)
    return _GATE_SCALE * (g * lex_scores + (1 - g) * dense_scores)
