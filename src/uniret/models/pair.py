"""Two-backbone hybrid encoder: a dense module and a lexicon module, one tokenizer, one interface.

UnifieR (3.2) shares the lower transformer layers between its dense and lexicon modules. On a
CPU budget the shared 2-layer SPLADE-tiny backbone leaves the dense head untrained ([CLS] of a
model never trained for it: 0.25 nDCG@10 on SciFact after the whole cpu DAG: E01, E04), while two
pretrained retrievers exist: all-MiniLM-L6-v2 (dense, mean pooling, cosine) and SPLADE-tiny
(lexicon, MLM head over the BERT vocabulary). Both use the same bert-base-uncased WordPiece
vocabulary, so one tokenizer feeds both and the pair is one RetrievalEncoder: everything built
on `Encoded(dense, sparse)` (dual-consistency losses, mining from both heads, reranker
distillation, ONNX export, uni-retrieval and fusion) works unchanged. theta_ctx is simply not
shared (UnifieR's "w/o shared" ablation direction, traded for two pretrained starting points).
The other way round, a vocabulary head on MiniLM's own layers distilled from SPLADE-tiny, was
measured too: its fusion with MiniLM starts 0.017 below the pair's on dev, and it encodes no faster
(E31).
"""

from __future__ import annotations

import torch

from uniret.models.base import Encoded, RetrievalEncoder
from uniret.models.dense import DenseEncoder
from uniret.models.splade import SpladeEncoder


class PairEncoder(RetrievalEncoder):
    """Dense module (a DenseEncoder) + lexicon module (a SpladeEncoder) over the same token ids."""

    channels = ("dense", "sparse")

    def __init__(self, dense: DenseEncoder, lexicon: SpladeEncoder):
        super().__init__()
        self.dense = dense
        self.lexicon = lexicon

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, is_query: bool = False) -> Encoded:
        vec = self.dense(input_ids, attention_mask, is_query=is_query).dense
        weights = self.lexicon(input_ids, attention_mask, is_query=is_query).sparse
        return Encoded(dense=vec, sparse=weights)


def same_vocabulary(first, second) -> bool:
    """True when two tokenizers map every token to the same id (the pair shares one tokenizer)."""
    return first.get_vocab() == second.get_vocab() and type(first).__name__ == type(second).__name__
