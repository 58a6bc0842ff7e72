"""Text -> (dense, sparse, gate) arrays: the encoder side every searcher consumes.

Searchers never touch torch or onnxruntime directly: they take a `TextEncoder`, either the torch
model (`TorchTextEncoder`) or the exported graphs (`uniret.retrieval.onnx_encoder.OnnxEncoder`), so the same
searcher code runs in training-time mining, evaluation and serving.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np
import scipy.sparse as sp
from tqdm.auto import tqdm

log = logging.getLogger("uniret.retrieval")


@dataclass
class EncodedTexts:
    """Encoded texts as arrays: dense [n, dim] float32, sparse CSR [n, vocab] float32, gate [n]."""

    dense: np.ndarray | None = None
    sparse: sp.csr_matrix | None = None
    gate: np.ndarray | None = None

    def __len__(self) -> int:
        for part in (self.dense, self.sparse, self.gate):
            if part is not None:
                return part.shape[0]
        return 0


def concat_encoded(parts: Sequence[EncodedTexts]) -> EncodedTexts:
    """Stack batches of EncodedTexts in order."""
    if not parts:
        return EncodedTexts()
    first = parts[0]
    return EncodedTexts(
        dense=np.concatenate([p.dense for p in parts]) if first.dense is not None else None,
        sparse=sp.vstack([p.sparse for p in parts], format="csr") if first.sparse is not None else None,
        gate=np.concatenate([p.gate for p in parts]) if first.gate is not None else None,
    )


def split_encoded(enc: EncodedTexts) -> list[EncodedTexts]:
    """One EncodedTexts per row (a batched encoding handed back text by text)."""
    return [EncodedTexts(dense=None if enc.dense is None else enc.dense[i : i + 1],
                         sparse=None if enc.sparse is None else enc.sparse[i : i + 1],
                         gate=None if enc.gate is None else np.asarray(enc.gate[i : i + 1]))
            for i in range(len(enc))]


class TextEncoder(Protocol):
    """What searchers need from an encoder."""

    def encode(self, texts: Sequence[str], is_query: bool) -> EncodedTexts:
        """Encode `texts` as queries or documents."""
        ...


def to_csr(weights: np.ndarray) -> sp.csr_matrix:
    """[n, vocab] pooled weights (zeros where inactive) -> float32 CSR."""
    return sp.csr_matrix(np.asarray(weights, dtype=np.float32))


def batches(items: Sequence, size: int) -> list[Sequence]:
    """Consecutive slices of at most `size` items."""
    return [items[i : i + size] for i in range(0, len(items), size)]


def length_order(texts: Sequence[str]) -> list[int]:
    """Row indices longest text first (stable: equal lengths keep their input order)."""
    return sorted(range(len(texts)), key=lambda i: -len(texts[i]))


def encode_in_batches(
    encode_batch, texts: Sequence[str], batch_size: int, desc: str, progress: bool | None = None
) -> EncodedTexts:
    """Run `encode_batch(list_of_texts) -> EncodedTexts` over `texts`, results in input order.

    Texts are batched longest first, so batches hold texts of similar length and pad little.
    """
    texts = list(texts)
    order = length_order(texts)
    chunks = batches(order, batch_size)
    show = progress if progress is not None else len(chunks) > 4
    if len(chunks) == 1 and order == sorted(order):  # one batch already in input order (serving)
        return encode_batch(texts)
    parts = [encode_batch([texts[i] for i in chunk]) for chunk in tqdm(chunks, desc=desc, disable=not show, leave=False)]
    return scatter_rows(concat_encoded(parts), order)


def scatter_rows(encoded: EncodedTexts, rows: Sequence[int]) -> EncodedTexts:
    """Row i of `encoded` moved to position rows[i] (rows is a permutation of range(n))."""
    inverse = np.empty(len(rows), dtype=np.int64)
    inverse[np.asarray(rows, dtype=np.int64)] = np.arange(len(rows))
    return EncodedTexts(
        dense=encoded.dense[inverse] if encoded.dense is not None else None,
        sparse=encoded.sparse[inverse] if encoded.sparse is not None else None,
        gate=encoded.gate[inverse] if encoded.gate is not None else None,
    )


def save_encoded(folder: Path, encoded: EncodedTexts) -> None:
    """Write the present parts as dense.npy, sparse.npz (CSR) and gate.npy into `folder`."""
    if encoded.dense is not None:
        np.save(folder / "dense.npy", encoded.dense)
    if encoded.sparse is not None:
        sp.save_npz(folder / "sparse.npz", encoded.sparse)
    if encoded.gate is not None:
        np.save(folder / "gate.npy", encoded.gate)


def load_encoded(folder: Path) -> EncodedTexts:
    """Read what `save_encoded` wrote (absent files are absent parts)."""
    return EncodedTexts(
        dense=np.load(folder / "dense.npy") if (folder / "dense.npy").is_file() else None,
        sparse=sp.load_npz(folder / "sparse.npz").tocsr() if (folder / "sparse.npz").is_file() else None,
        gate=np.load(folder / "gate.npy") if (folder / "gate.npy").is_file() else None,
    )


class TorchTextEncoder:
    """A RetrievalEncoder plus its tokenizer, behind the TextEncoder interface."""

    def __init__(self, model, tokenizer, batch_size: int, query_max_length: int, doc_max_length: int,
                 amp: str = "off"):
        from uniret.training.device import autocast_dtype

        self.model = model.eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.max_length = {True: query_max_length, False: doc_max_length}
        self.device = next(model.parameters()).device
        self.amp = amp  # training.device.autocast_dtype's setting: "off" encodes in fp32
        self.autocast_dtype = autocast_dtype(amp, self.device)

    def variant_key(self) -> str:
        """What sets these encodings apart from the model's own (fp32, its document length), for a
        corpus-cache key: "" when nothing does, else e.g. "-len128" and/or "-bfloat16"."""
        cfg = getattr(self.model, "model_config", None)
        key = ""
        if cfg is not None and self.max_length[False] != cfg.doc_max_length:
            key += f"-len{self.max_length[False]}"
        if self.autocast_dtype is not None:
            key += "-" + str(self.autocast_dtype).removeprefix("torch.")
        return key

    def _encode_batch(self, texts: Sequence[str], is_query: bool) -> EncodedTexts:
        import torch  # here, not at import: serving (ONNX and static tables) never loads torch

        enc = self.tokenizer(
            list(texts), padding=True, truncation=True, max_length=self.max_length[is_query], return_tensors="pt"
        )
        dtype = self.autocast_dtype
        autocast = torch.autocast(self.device.type, dtype=dtype) if dtype is not None else contextlib.nullcontext()
        with torch.inference_mode(), autocast:
            out = self.model(enc["input_ids"].to(self.device), enc["attention_mask"].to(self.device),
                             is_query=is_query)
        return EncodedTexts(
            dense=out.dense.float().cpu().numpy() if out.dense is not None else None,
            sparse=to_csr(out.sparse.float().cpu().numpy()) if out.sparse is not None else None,
            gate=out.gate.float().cpu().numpy().reshape(-1) if out.gate is not None else None,
        )

    def encode(self, texts: Sequence[str], is_query: bool) -> EncodedTexts:
        """Encode texts in batches of `batch_size` (queries or documents)."""
        desc = "torch encode " + ("queries" if is_query else "docs")
        return encode_in_batches(lambda b: self._encode_batch(b, is_query), texts, self.batch_size, desc)
