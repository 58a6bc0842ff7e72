"""What every loss sees: one encoded training batch, scored per channel.

Batch layout (Tevatron-style groups): Q queries; for each query a group of G documents, the
positive first then G-1 negatives, flattened to Q*G rows in query order. Scores come in two
shapes: `group` [Q, G] (each query vs its own group; positive at column 0) and `in_batch`
[Q, Q*G] (each query vs every document of the batch; query i's positive at column i*G).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from uniret.models.base import Encoded
from uniret.models.unifier import combine_uni


@dataclass
class LossInputs:
    """Encoded queries and grouped documents plus optional external scores over each group.

    teachers:       name -> [Q, G] scores of a teacher on each group ("reranker": the
                    cross-encoder; "lexical": LED's lexical teacher).
    bm25_scores:    [Q, G] BM25 scores of each group (CLEAR's residual margin).
    bm25_minmax:    the same, min-max normalised over each query's BM25 run (residual contrastive).
    dense_parts:    named column ranges of the dense vector (Aggretriever: cls, agg).
    query_idf:      [Q, vocab] each query's distinct tokens weighted by their corpus IDF: the
                    inference-free sparse query (no model), scored against the documents' sparse
                    output by the `sparse_idf` channel.
    step:           the optimizer step (1-based), for weight schedules.
    """

    query: Encoded
    docs: Encoded
    group_size: int
    teachers: dict[str, torch.Tensor] = field(default_factory=dict)
    bm25_scores: torch.Tensor | None = None
    bm25_minmax: torch.Tensor | None = None
    dense_parts: dict[str, tuple[int, int]] = field(default_factory=dict)
    query_idf: torch.Tensor | None = None
    step: int = 1
    _cache: dict = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        nq = self._rows(self.query)
        nd = self._rows(self.docs)
        if self.group_size < 1 or nd != nq * self.group_size:
            raise ValueError(f"{nd} documents do not form {nq} groups of {self.group_size}")

    @staticmethod
    def _rows(enc: Encoded) -> int:
        for t in (enc.dense, enc.sparse):
            if t is not None:
                return t.shape[0]
        raise ValueError("Encoded has neither a dense nor a sparse channel")

    def teacher(self, name: str) -> torch.Tensor:
        """[Q, G] scores of teacher `name`, detached (a teacher is a fixed target)."""
        if name not in self.teachers:
            raise ValueError(f"this loss needs scores of teacher {name!r}; batch has {sorted(self.teachers) or 'none'}")
        return self.teachers[name].detach()

    @property
    def num_queries(self) -> int:
        return self._rows(self.query)

    def _vectors(self, enc: Encoded, channel: str) -> torch.Tensor:
        if channel == "dense" or channel in self.dense_parts:
            if enc.dense is None:
                raise ValueError(f"channel {channel!r} needs a dense output, the model has none")
            if channel == "dense":
                return enc.dense
            lo, hi = self.dense_parts[channel]
            return enc.dense[:, lo:hi]
        if channel == "sparse":
            if enc.sparse is None:
                raise ValueError("channel 'sparse' needs a sparse output, the model has none")
            return enc.sparse
        known = ["dense", "sparse", "sparse_idf", "uni", *self.dense_parts]
        raise ValueError(f"unknown score channel {channel!r}; known: {known}")

    def _idf_queries(self) -> torch.Tensor:
        if self.query_idf is None:
            raise ValueError("channel 'sparse_idf' needs the batch's IDF query bags (the trainer computes them "
                             "when a loss term names the channel)")
        return self.query_idf

    def scores(self, channel: str, in_batch: bool = False) -> torch.Tensor:
        """Dot-product scores of `channel` (dense | sparse | uni | a dense part), [Q, G] or [Q, Q*G]."""
        key = (channel, in_batch)
        if key not in self._cache:
            if channel == "uni":
                value = combine_uni(self.scores("dense", in_batch), self.scores("sparse", in_batch), self.query.gate)
            else:
                q = self._idf_queries() if channel == "sparse_idf" else self._vectors(self.query, channel)
                d = self._vectors(self.docs, "sparse" if channel == "sparse_idf" else channel)
                if in_batch:
                    value = q @ d.T
                else:
                    value = torch.einsum("qh,qgh->qg", q, d.view(q.shape[0], self.group_size, -1))
            self._cache[key] = value
        return self._cache[key]

    def positive_index(self, in_batch: bool) -> torch.Tensor:
        """[Q] column of each query's positive in `scores(..., in_batch)`."""
        device = self._device()
        idx = torch.arange(self.num_queries, device=device)
        return idx * self.group_size if in_batch else torch.zeros_like(idx)

    def _device(self) -> torch.device:
        for t in (self.query.dense, self.query.sparse):
            if t is not None:
                return t.device
        return torch.device("cpu")


class Loss(torch.nn.Module):
    """A training objective: LossInputs -> scalar tensor. Composed by `CompositeLoss`."""

    def forward(self, inputs: LossInputs) -> torch.Tensor:  # type: ignore[override]
        raise NotImplementedError


def forward_inputs(
    model,
    queries: dict[str, torch.Tensor],
    docs: dict[str, torch.Tensor],
    group_size: int,
    step: int = 1,
    teachers: dict[str, torch.Tensor] | None = None,
    bm25_scores: torch.Tensor | None = None,
    bm25_minmax: torch.Tensor | None = None,
) -> LossInputs:
    """Run `model` on tokenized queries and grouped documents (input_ids, attention_mask) -> LossInputs."""
    return LossInputs(
        query=model(queries["input_ids"], queries["attention_mask"], is_query=True),
        docs=model(docs["input_ids"], docs["attention_mask"], is_query=False),
        group_size=group_size,
        teachers=dict(teachers or {}),
        bm25_scores=bm25_scores,
        bm25_minmax=bm25_minmax,
        dense_parts=dict(getattr(model, "dense_parts", {}) or {}),
        step=step,
    )
