"""Dense bi-encoder: [CLS] or mean pooling over a transformer (LED student, CLEAR embedding model).

CLEAR (DualRM 3.2) prepends [QRY] / [DOC] to queries / documents in place of [CLS]; with
`query_marker` / `doc_marker` set, the first token id is replaced inside `forward`, so every
caller (training, encoding, ONNX export) gets the same inputs from a plain tokenizer.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from uniret.models.backbones import BackboneError, load_backbone
from uniret.models.base import Encoded, RetrievalEncoder
from uniret.models.pooling import cls_pool, mean_pool


class DenseEncoder(RetrievalEncoder):
    """Bi-encoder with shared query/document weights; produces only the dense channel."""

    channels = ("dense",)

    def __init__(
        self,
        backbone: str,
        pooling: str = "cls",
        normalize: bool = False,
        query_marker_id: int | None = None,
        doc_marker_id: int | None = None,
        query_scale: float | None = None,
        dropout: float | None = None,
        pretrained: bool = True,
    ):
        super().__init__()
        if pooling not in ("cls", "mean"):
            raise BackboneError(f"pooling must be cls or mean, got {pooling!r}")
        self.encoder = load_backbone(backbone, with_mlm_head=False, dropout=dropout, pretrained=pretrained)
        self.pooling = pooling
        self.normalize = normalize
        self.query_scale = query_scale
        self.marker_ids = {True: query_marker_id, False: doc_marker_id}

    def _mark(self, input_ids: torch.Tensor, is_query: bool) -> torch.Tensor:
        marker = self.marker_ids[is_query]
        if marker is None:
            return input_ids
        marked = input_ids.clone()
        marked[:, 0] = marker
        return marked

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, is_query: bool = False) -> Encoded:
        hidden = self.encoder(
            input_ids=self._mark(input_ids, is_query), attention_mask=attention_mask
        ).last_hidden_state
        vec = cls_pool(hidden) if self.pooling == "cls" else mean_pool(hidden, attention_mask)
        if self.normalize:
            vec = F.normalize(vec, dim=-1)
        if is_query and self.query_scale is not None:
            vec = vec * self.query_scale  # scores = scale * <q, d>; rankings per query are unchanged
        return Encoded(dense=vec)


def marker_id(tokenizer, token: str | None) -> int | None:
    """The vocabulary id of a marker token ([unusedN] in BERT vocabularies); error if unknown."""
    if token is None:
        return None
    ids = tokenizer.convert_tokens_to_ids([token])
    if not ids or ids[0] is None or ids[0] == tokenizer.unk_token_id:
        raise BackboneError(f"marker token {token!r} is not in the tokenizer's vocabulary")
    return int(ids[0])
