"""Cross-encoder reranker teacher: (query, document) -> relevance score.

No trained cross-encoder ships offline, so it is initialised from a bi-encoder backbone
(all-MiniLM-L6-v2) plus a linear head on the [CLS] state, and trained on mined negatives.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch
from torch import nn
from tqdm.auto import tqdm

from uniret.models.backbones import load_backbone


class CrossEncoderReranker(nn.Module):
    """AutoModel + Linear(hidden, 1) on [CLS]; `score(pairs)` batches text pairs."""

    def __init__(self, backbone: str, max_length: int, tokenizer=None, dropout: float | None = None, pretrained: bool = True):
        super().__init__()
        self.encoder = load_backbone(backbone, with_mlm_head=False, dropout=dropout, pretrained=pretrained)
        self.head = nn.Linear(self.encoder.config.hidden_size, 1)
        self.max_length = max_length
        self.tokenizer = tokenizer

    def forward(
        self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor | None = None
    ) -> torch.Tensor:
        """[B] scores of tokenized (query, document) pairs."""
        hidden = self.encoder(
            input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids
        ).last_hidden_state
        return self.head(hidden[:, 0]).squeeze(-1)

    def tokenize(self, pairs: Sequence[tuple[str, str]]) -> dict[str, torch.Tensor]:
        """Tokenize (query, document) pairs; only the document is truncated."""
        if self.tokenizer is None:
            raise RuntimeError("CrossEncoderReranker has no tokenizer: build it with uniret.models.factory")
        queries = [q for q, _ in pairs]
        docs = [d for _, d in pairs]
        return dict(
            self.tokenizer(
                queries, docs, padding=True, truncation="only_second", max_length=self.max_length, return_tensors="pt"
            )
        )

    @torch.no_grad()
    def score(self, pairs: Sequence[tuple[str, str]], batch_size: int = 32, progress: bool = False) -> np.ndarray:
        """Scores of (query, document) text pairs, in input order (float32 [n])."""
        was_training = self.training
        self.eval()
        device = next(self.parameters()).device
        # sort by length so each padded batch is tight; restore the input order at the end
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        out = np.empty(len(pairs), dtype=np.float32)
        starts = range(0, len(order), batch_size)
        for start in tqdm(starts, desc="rerank", disable=not progress, leave=False):
            idx = order[start : start + batch_size]
            enc = {k: v.to(device) for k, v in self.tokenize([pairs[i] for i in idx]).items()}
            out[idx] = self(**enc).float().cpu().numpy()
        self.train(was_training)
        return out
