"""A recipe's objective for one stage -> the `compute_loss(model, batch, step)` the loop calls.

The loss terms come from `losses.<stage>` of recipes/<recipe>.yaml (uniret.losses.compose); the
external scores they need (a cross-encoder's, LED's lexical teacher's, BM25's) are computed here
per batch, without gradient. Logs carry every term and the sparsity monitors
active_terms_q / active_terms_d (mean non-zero terms of the sparse vectors) when the model has a
sparse head.

Data-parallel (torchrun): the encodings of every rank are gathered with gradient and the
external scores without, so each rank scores the global batch: in-batch negatives span all ranks
and every term (FLOPS, agreement, KL...) sees the same batch a one-process run sees.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import torch
import torch.nn.functional as F

from uniret.losses.base import LossInputs
from uniret.losses.compose import CompositeLoss
from uniret.models.base import Encoded
from uniret.models.led import teacher_group_scores
from uniret.training.distributed import gather_detached, gather_with_grad

# batch -> [Q, G] scores of a teacher over each query's group
TeacherFn = Callable[[dict[str, Any]], torch.Tensor]


def active_terms(enc: Encoded) -> float | None:
    """Mean number of non-zero sparse weights per row, or None for a dense-only model."""
    if enc.sparse is None:
        return None
    return float((enc.sparse.detach() > 0).sum(dim=1).float().mean())


def reranker_teacher(reranker: torch.nn.Module, batch_size: int) -> TeacherFn:
    """Scores of a (frozen) cross-encoder on the batch's (query, document) texts."""

    def scores(batch: dict[str, Any]) -> torch.Tensor:
        group = batch["group_size"]
        pairs = [(q, d) for i, q in enumerate(batch["query_text"]) for d in batch["doc_text"][i * group : (i + 1) * group]]
        values = reranker.score(pairs, batch_size=batch_size)
        return torch.as_tensor(values).view(len(batch["query_text"]), group)

    return scores


def lexical_teacher(teacher: torch.nn.Module) -> TeacherFn:
    """Sparse-channel scores of LED's frozen lexical teacher (its own tokenization when present)."""

    def scores(batch: dict[str, Any]) -> torch.Tensor:
        q = batch.get("teacher_query", batch["query"])
        d = batch.get("teacher_docs", batch["docs"])
        device = next(teacher.parameters()).device
        q = {k: v.to(device) for k, v in q.items()}
        d = {k: v.to(device) for k, v in d.items()}
        return teacher_group_scores(teacher, q, d, batch["group_size"])

    return scores


def gather_encoded(enc: Encoded) -> Encoded:
    """Every rank's rows of `enc` in rank order, differentiable (unchanged in one process)."""
    return Encoded(dense=gather_with_grad(enc.dense), sparse=gather_with_grad(enc.sparse),
                   gate=gather_with_grad(enc.gate))


def idf_bags(input_ids: torch.Tensor, idf: torch.Tensor) -> torch.Tensor:
    """[Q, vocab]: each query's distinct tokens weighted by `idf` (special and padding tokens have
    IDF 0), the inference-free sparse query the static query encoder serves."""
    ids = input_ids.to(idf.device)
    return torch.zeros(ids.shape[0], idf.shape[0], dtype=idf.dtype, device=idf.device).scatter_(1, ids, idf[ids])


def make_compute_loss(loss: CompositeLoss, teachers: Mapping[str, TeacherFn] | None = None,
                      idf: torch.Tensor | None = None):
    """compute_loss(model, batch, step) for a bi-encoder trained with `loss` (see module doc);
    `idf` ([vocab], the train corpus's token IDF) feeds the sparse_idf channel."""
    teachers = dict(teachers or {})

    def compute_loss(model: torch.nn.Module, batch: dict[str, Any], step: int) -> tuple[torch.Tensor, dict[str, float]]:
        query = model(batch["query"]["input_ids"], batch["query"]["attention_mask"], is_query=True)
        docs = model(batch["docs"]["input_ids"], batch["docs"]["attention_mask"], is_query=False)
        device = (query.dense if query.dense is not None else query.sparse).device
        with torch.no_grad():
            scores = {name: gather_detached(fn(batch).to(device)) for name, fn in teachers.items()}
        query, docs = gather_encoded(query), gather_encoded(docs)
        inner = getattr(model, "module", model)  # DDP wraps the model: its attributes live on .module
        bm25, bm25_minmax = batch.get("bm25"), batch.get("bm25_minmax")
        inputs = LossInputs(
            query=query,
            docs=docs,
            group_size=batch["group_size"],
            teachers=scores,
            bm25_scores=gather_detached(bm25.to(device)) if bm25 is not None else None,
            bm25_minmax=gather_detached(bm25_minmax.to(device)) if bm25_minmax is not None else None,
            dense_parts=getattr(inner, "dense_parts", {}),
            query_idf=gather_detached(idf_bags(batch["query"]["input_ids"], idf.to(device))) if idf is not None else None,
            step=step,
        )
        total, logs = loss(inputs)
        for name, enc in (("active_terms_q", query), ("active_terms_d", docs)):
            value = active_terms(enc)
            if value is not None:
                logs[name] = value
        return total, logs

    return compute_loss


def listwise_ce_loss(model: torch.nn.Module, batch: dict[str, Any], step: int) -> tuple[torch.Tensor, dict[str, float]]:
    """Cross-encoder listwise softmax cross-entropy: the positive (column 0) against its group."""
    scores = model(**batch["pairs"]).view(-1, batch["group_size"])
    target = torch.zeros(scores.shape[0], dtype=torch.long, device=scores.device)
    loss = F.cross_entropy(scores, target)
    accuracy = float((scores.argmax(dim=1) == 0).float().mean())
    return loss, {"listwise_ce": float(loss.detach()), "top1_accuracy": accuracy}
