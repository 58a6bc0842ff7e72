"""Build the static query tables of a bundle from a trained model (no transformer at query time).

1. Token weights: the BM25 IDF of every vocabulary token over the indexed corpus's tokenized
   documents (special tokens 0). A query's sparse vector is the IDF of its distinct tokens, scored
   against the document impacts the model wrote: OpenSearch's inference-free sparse query.
2. Token vectors: each vocabulary token passed alone through the trained query encoder's dense
   head ([CLS] t [SEP]), scaled by its IDF (model2vec's initialisation with an IDF weighting).
3. Distillation: the tower's query vector, the normalised sum of its token vectors, is trained
   toward the query encoder's own output on pseudo-queries (uniret.data.pseudo_queries) with a
   cosine loss (NIFE/LightRetriever). The document vectors and their faiss index do not change.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from uniret.config.retrieval import StaticQueryConfig

log = logging.getLogger("uniret.training.static_tower")


@dataclass
class StaticTables:
    """What the index stage writes into the bundle's static/ folder, and how it was made."""

    tower: np.ndarray  # [vocab, dim] float32
    token_weights: np.ndarray  # [vocab] float32
    meta: dict


def special_mask(tokenizer, vocab_size: int) -> np.ndarray:
    """True for the tokenizer's special tokens ([CLS], [SEP], [PAD], ...): never a query term."""
    mask = np.zeros(vocab_size, dtype=bool)
    for tid in tokenizer.all_special_ids:
        if 0 <= tid < vocab_size:
            mask[tid] = True
    return mask


def idf_weights(tokenizer, documents: Sequence[str], max_length: int, batch: int = 512) -> np.ndarray:
    """BM25's IDF, log(1 + (N - df + 0.5) / (df + 0.5)), of every vocabulary token over `documents`
    (each cut at `max_length` tokens, as the document encoder sees it); special tokens get 0."""
    vocab = len(tokenizer)
    df = np.zeros(vocab, dtype=np.int64)
    for start in range(0, len(documents), batch):
        enc = tokenizer(list(documents[start:start + batch]), add_special_tokens=False, truncation=True,
                        max_length=max_length)
        for ids in enc["input_ids"]:
            df[np.unique(np.asarray(ids, dtype=np.int64))] += 1
    n = len(documents)
    idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
    idf[special_mask(tokenizer, vocab)] = 0.0
    return idf


def _dense_part(model: torch.nn.Module) -> torch.nn.Module:
    """The module that computes the dense vector: a pair model's dense encoder alone (its lexicon
    encoder's 30k-wide MLM head would be computed for nothing), else the whole model."""
    from uniret.models.pair import PairEncoder

    return model.dense if isinstance(model, PairEncoder) else model


@torch.inference_mode()
def _query_vectors(dense: torch.nn.Module, input_ids: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    device = next(dense.parameters()).device  # the GPU when the index stage moved the model there
    out = dense(input_ids.to(device), mask.to(device), is_query=True).dense
    if out is None:
        raise ValueError("the static dense tower needs a model with a dense head")
    return F.normalize(out.float(), dim=-1).cpu().numpy()


def token_vectors(model: torch.nn.Module, tokenizer, batch: int) -> np.ndarray:
    """[vocab, dim]: each token's normalised query vector, encoded alone as [CLS] t [SEP]."""
    dense = _dense_part(model).eval()
    vocab = len(tokenizer)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    parts = []
    for start in tqdm(range(0, vocab, batch), desc="static tower: token vectors", leave=False):
        ids = torch.arange(start, min(start + batch, vocab), dtype=torch.long).unsqueeze(1)
        columns = [ids]
        if cls is not None:
            columns.insert(0, torch.full_like(ids, cls))
        if sep is not None:
            columns.append(torch.full_like(ids, sep))
        input_ids = torch.cat(columns, dim=1)
        parts.append(_query_vectors(dense, input_ids, torch.ones_like(input_ids)))
    return np.concatenate(parts).astype(np.float32)


def teacher_vectors(model: torch.nn.Module, tokenizer, texts: Sequence[str], max_length: int,
                    batch: int = 128) -> np.ndarray:
    """[n, dim]: the trained query encoder's normalised dense output for each text."""
    dense = _dense_part(model).eval()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad little
    out: np.ndarray | None = None
    for start in tqdm(range(0, len(order), batch), desc="static tower: teacher queries", leave=False):
        rows = order[start:start + batch]
        enc = tokenizer([texts[i] for i in rows], padding=True, truncation=True, max_length=max_length,
                        return_tensors="pt")
        vecs = _query_vectors(dense, enc["input_ids"], enc["attention_mask"])
        if out is None:
            out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
        out[rows] = vecs
    return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def _bags(tokenizer, texts: Sequence[str], max_length: int, special: np.ndarray) -> tuple[list[np.ndarray], list[int]]:
    """(token ids without specials, rows kept): texts with no ordinary token are dropped."""
    enc = tokenizer(list(texts), add_special_tokens=False, truncation=True, max_length=max_length)
    bags, kept = [], []
    for i, ids in enumerate(enc["input_ids"]):
        arr = np.asarray(ids, dtype=np.int64)
        arr = arr[~special[arr]] if len(arr) else arr
        if len(arr):
            bags.append(arr)
            kept.append(i)
    return bags, kept


def distill_tower(init: np.ndarray, bags: list[np.ndarray], targets: np.ndarray, cfg: StaticQueryConfig
                  ) -> tuple[np.ndarray, list[float]]:
    """Train the token vectors so that normalise(sum of a bag's vectors) meets its target (cosine);
    returns the tower and the mean loss of each epoch."""
    if not bags:
        return init, []
    gen = torch.Generator().manual_seed(cfg.seed)
    table = torch.nn.EmbeddingBag(init.shape[0], init.shape[1], mode="sum")
    with torch.no_grad():
        table.weight.copy_(torch.from_numpy(init))
    opt = torch.optim.Adam(table.parameters(), lr=cfg.lr)
    target = torch.from_numpy(np.ascontiguousarray(targets))
    losses: list[float] = []
    for _ in range(cfg.epochs):
        perm = torch.randperm(len(bags), generator=gen).tolist()
        total = 0.0
        for start in range(0, len(perm), cfg.batch_size):
            rows = perm[start:start + cfg.batch_size]
            flat = torch.from_numpy(np.concatenate([bags[r] for r in rows]))
            offsets = torch.tensor([0, *np.cumsum([len(bags[r]) for r in rows])[:-1]], dtype=torch.long)
            pred = F.normalize(table(flat, offsets), dim=-1)
            loss = (1.0 - (pred * target[rows]).sum(dim=-1)).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(rows)
        losses.append(total / len(bags))
    return table.weight.detach().numpy().astype(np.float32), losses


def build_static_tables(model: torch.nn.Module, tokenizer, documents: Sequence[str], texts: Sequence[str],
                        query_max_length: int, doc_max_length: int, cfg: StaticQueryConfig,
                        text_counts: dict[str, int] | None = None) -> StaticTables:
    """The bundle's static query tables: IDF weights over `documents`, a tower distilled on `texts`."""
    torch.manual_seed(cfg.seed)
    times: dict[str, float] = {}
    start = time.perf_counter()
    weights = idf_weights(tokenizer, documents, doc_max_length)
    times["idf_s"] = time.perf_counter() - start
    start = time.perf_counter()
    vectors = token_vectors(model, tokenizer, cfg.init_batch)
    # IDF scaling: in the sum a frequent token (the, of, ##s) weighs little, a rare one much
    positive = weights[weights > 0]
    scale = weights / (float(positive.mean()) if len(positive) else 1.0)
    init = vectors * scale[:, None]
    times["init_s"] = time.perf_counter() - start
    special = special_mask(tokenizer, len(weights))
    bags, kept = _bags(tokenizer, texts, query_max_length, special)
    start = time.perf_counter()
    targets = teacher_vectors(model, tokenizer, [texts[i] for i in kept], query_max_length)
    times["teacher_s"] = time.perf_counter() - start
    start = time.perf_counter()
    tower, losses = distill_tower(init, bags, targets, cfg)
    times["distill_s"] = time.perf_counter() - start
    log.info("static tower: %d texts, cosine loss by epoch %s, %s", len(bags),
             [round(x, 4) for x in losses], {k: round(v, 1) for k, v in times.items()})
    meta = {
        "token_weights": "idf",
        "idf_documents": len(documents),
        "texts": len(bags),
        "text_sources": dict(text_counts or {}),
        "epochs": cfg.epochs,
        "loss_by_epoch": [round(x, 5) for x in losses],
        "seconds": {k: round(v, 2) for k, v in times.items()},
        "dim": int(tower.shape[1]),
        "vocab": int(tower.shape[0]),
        "finite": bool(np.isfinite(tower).all() and math.isfinite(float(weights.sum()))),
    }
    return StaticTables(tower=tower, token_weights=weights, meta=meta)
