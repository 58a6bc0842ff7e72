"""Encode many texts with a RetrievalEncoder: length-sorted batches, no grad, CUDA when present."""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import scipy.sparse as sp
import torch
from tqdm.auto import tqdm

from uniret.models.base import RetrievalEncoder

log = logging.getLogger("uniret.models")


def default_device() -> torch.device:
    """CUDA when available, else CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def length_order(texts: Sequence[str]) -> list[int]:
    """Indices of `texts` from longest to shortest (batches then pad little; the first batch
    is the biggest, so an out-of-memory shows up at once)."""
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


@torch.inference_mode()  # no autograd bookkeeping at all (cheaper than no_grad)
def encode_texts(
    model: RetrievalEncoder,
    tokenizer,
    texts: Sequence[str],
    is_query: bool,
    batch_size: int,
    max_length: int,
    device: str | torch.device | None = None,
    progress: bool = True,
) -> tuple[np.ndarray | None, sp.csr_matrix | None]:
    """(dense [n, dim] float32 or None, sparse CSR [n, vocab] float32 or None) in input order."""
    device = torch.device(device) if device is not None else default_device()
    was_training = model.training
    model.eval().to(device)
    order = length_order(texts)
    dense_parts: list[np.ndarray] = []
    sparse_parts: list[sp.csr_matrix] = []
    starts = range(0, len(order), batch_size)
    what = "queries" if is_query else "docs"
    for start in tqdm(starts, desc=f"encode {what}", disable=not progress or len(starts) < 2, leave=False):
        idx = order[start : start + batch_size]
        enc = tokenizer(
            [texts[i] for i in idx], padding=True, truncation=True, max_length=max_length, return_tensors="pt"
        )
        out = model(enc["input_ids"].to(device), enc["attention_mask"].to(device), is_query=is_query)
        if out.dense is not None:
            dense_parts.append(out.dense.float().cpu().numpy())
        if out.sparse is not None:
            # keep only the non-zero weights on the GPU side of the copy: CSR from indices
            sparse_parts.append(_to_csr(out.sparse.float()))
    model.train(was_training)
    inverse = np.empty(len(order), dtype=np.int64)
    inverse[np.asarray(order, dtype=np.int64)] = np.arange(len(order))
    dense = np.concatenate(dense_parts)[inverse] if dense_parts else None
    sparse = sp.vstack(sparse_parts, format="csr")[inverse] if sparse_parts else None
    return dense, sparse


def _to_csr(weights: torch.Tensor) -> sp.csr_matrix:
    """[b, V] tensor with mostly zeros -> float32 CSR, copying only the non-zeros off the device."""
    rows, cols = torch.nonzero(weights, as_tuple=True)
    values = weights[rows, cols]
    return sp.csr_matrix(
        (values.cpu().numpy(), (rows.cpu().numpy(), cols.cpu().numpy())), shape=tuple(weights.shape), dtype=np.float32
    )
