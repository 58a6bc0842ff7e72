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
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from uniret.config.retrieval import StaticQueryConfig
from uniret.data.token_stats import document_frequencies, idf_from_frequencies, special_mask

log = logging.getLogger("uniret.training.static_tower")


@dataclass
class StaticTables:
    """What the index stage writes into the bundle's static/ folder, and how it was made."""

    tower: np.ndarray  # [vocab, dim] float32
    token_weights: np.ndarray  # [vocab] float32
    meta: dict


def _dense_part(model: torch.nn.Module) -> torch.nn.Module:
    """The module that computes the dense vector: a pair model's dense encoder alone (its lexicon
    encoder's 30k-wide MLM head would be computed for nothing), else the whole model."""
    from uniret.models.pair import PairEncoder

    return model.dense if isinstance(model, PairEncoder) else model


@torch.inference_mode()
def _query_vectors(dense: torch.nn.Module, input_ids: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    device = next(dense.parameters()).device  # the GPU when the index stage moved the model there
    encode_dense = getattr(dense, "encode_dense", None)  # a shared encoder's dense output without its lexicon
    if encode_dense is not None:
        out = encode_dense(input_ids.to(device), mask.to(device))
    else:
        out = dense(input_ids.to(device), mask.to(device), is_query=True).dense
    if out is None:
        raise ValueError("the static dense tower needs a model with a dense head")
    return F.normalize(out.float(), dim=-1).cpu().numpy()


def token_vectors(model: torch.nn.Module, tokenizer, batch: int, ids: np.ndarray | None = None) -> np.ndarray:
    """[vocab, dim]: each token's normalised query vector, encoded alone as [CLS] t [SEP]. `ids`: only
    these tokens are encoded, the other rows stay zero (static_query.init_vocab: seen)."""
    dense = _dense_part(model).eval()
    vocab = len(tokenizer)
    todo = torch.arange(vocab, dtype=torch.long) if ids is None else torch.as_tensor(ids, dtype=torch.long)
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    out: np.ndarray | None = None
    for start in tqdm(range(0, len(todo), batch), desc="static tower: token vectors", leave=False):
        rows = todo[start:start + batch].unsqueeze(1)
        columns = [rows]
        if cls is not None:
            columns.insert(0, torch.full_like(rows, cls))
        if sep is not None:
            columns.append(torch.full_like(rows, sep))
        input_ids = torch.cat(columns, dim=1)
        vecs = _query_vectors(dense, input_ids, torch.ones_like(input_ids))
        if out is None:
            out = np.zeros((vocab, vecs.shape[1]), dtype=np.float32)
        out[rows.squeeze(1).numpy()] = vecs
    if out is None:
        raise ValueError("no token to encode for the static tower's initialisation")
    return out


def teacher_vectors(model: torch.nn.Module, tokenizer, texts: Sequence[str], max_length: int,
                    batch: int = 128, dense: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None
                    ) -> np.ndarray:
    """[n, dim]: the trained query encoder's normalised dense output for each text. `dense`: another
    runner of that output, (input_ids, attention_mask) -> [batch, dim], used instead of the torch
    model: the query graph cut to it (uniret.export.subgraph.DenseGraph) gives the same vectors,
    1.7-1.8x faster on 2 CPU cores (E105)."""
    if dense is None:
        module = _dense_part(model).eval()
        vectors = lambda ids, mask: _query_vectors(module, torch.from_numpy(ids), torch.from_numpy(mask))  # noqa: E731
    else:
        vectors = lambda ids, mask: _normalised(dense(ids, mask))  # noqa: E731
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths pad little
    out: np.ndarray | None = None
    for start in tqdm(range(0, len(order), batch), desc="static tower: teacher queries", leave=False):
        rows = order[start:start + batch]
        enc = tokenizer([texts[i] for i in rows], padding=True, truncation=True, max_length=max_length,
                        return_tensors="np")
        vecs = vectors(enc["input_ids"].astype(np.int64), enc["attention_mask"].astype(np.int64))
        if out is None:
            out = np.zeros((len(texts), vecs.shape[1]), dtype=np.float32)
        out[rows] = vecs
    return out if out is not None else np.zeros((0, 0), dtype=np.float32)


def _normalised(vectors: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length, as torch.nn.functional.normalize (a zero row stays zero)."""
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


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


def _seen_tokens(df: np.ndarray, bags: list[np.ndarray], special: np.ndarray) -> np.ndarray:
    """The ordinary tokens of the indexed documents (df > 0) and of `bags` (the distillation texts'
    and the fine-tuning queries'): the rows init_vocab seen encodes."""
    seen = df > 0
    for bag in bags:
        seen[bag] = True
    return np.flatnonzero(seen & ~special)


def _bag_batch(bags: list[np.ndarray], rows: Sequence[int]) -> tuple[torch.Tensor, torch.Tensor]:
    """EmbeddingBag inputs of `rows`: (all their token ids, each bag's start offset)."""
    flat = torch.from_numpy(np.concatenate([bags[r] for r in rows]))
    offsets = torch.tensor([0, *np.cumsum([len(bags[r]) for r in rows])[:-1]], dtype=torch.long)
    return flat, offsets


def _table(init: np.ndarray) -> torch.nn.EmbeddingBag:
    table = torch.nn.EmbeddingBag(init.shape[0], init.shape[1], mode="sum")
    with torch.no_grad():
        table.weight.copy_(torch.from_numpy(init))
    return table


def _cosine_loss(table: torch.nn.EmbeddingBag, bags: list[np.ndarray], rows: Sequence[int],
                 target: torch.Tensor) -> torch.Tensor:
    """Mean (1 - cosine) between the tower's vectors of `rows` and their teacher vectors."""
    pred = F.normalize(table(*_bag_batch(bags, rows)), dim=-1)
    return (1.0 - (pred * target[list(rows)]).sum(dim=-1)).mean()


def _epochs(table: torch.nn.EmbeddingBag, n_items: int, epochs: int, batch_size: int, lr: float,
            gen: torch.Generator, batch_loss: Callable[[list[int]], torch.Tensor]) -> list[float]:
    """Adam over `epochs` shuffled passes of `n_items` in batches; the mean loss of each epoch."""
    opt = torch.optim.Adam(table.parameters(), lr=lr)
    losses: list[float] = []
    for _ in range(epochs):
        perm = torch.randperm(n_items, generator=gen).tolist()
        total = 0.0
        for start in range(0, n_items, batch_size):
            rows = perm[start:start + batch_size]
            loss = batch_loss(rows)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss.detach()) * len(rows)
        losses.append(total / n_items)
    return losses


def distill_tower(init: np.ndarray, bags: list[np.ndarray], targets: np.ndarray, cfg: StaticQueryConfig
                  ) -> tuple[np.ndarray, list[float]]:
    """Train the token vectors so that normalise(sum of a bag's vectors) meets its target (cosine);
    returns the tower and the mean loss of each epoch."""
    if not bags:
        return init, []
    table = _table(init)
    target = torch.from_numpy(np.ascontiguousarray(targets))
    losses = _epochs(table, len(bags), cfg.epochs, cfg.batch_size, cfg.lr, torch.Generator().manual_seed(cfg.seed),
                     lambda rows: _cosine_loss(table, bags, rows, target))
    return table.weight.detach().numpy().astype(np.float32), losses


@dataclass
class TrainPairs:
    """Fine-tuning data: train query texts and, per query, the rows of its relevant documents in
    the frozen document matrix."""

    texts: list[str]
    positives: list[list[int]]
    # per query, its weight in the fine-tuning loss (None: 1 each): a click example's IPS weight x clicks_weight
    weights: list[float] | None = None


def finetune_tower(tower: np.ndarray, query_bags: list[np.ndarray], positives: list[list[int]],
                   doc_vectors: np.ndarray, anchor_bags: list[np.ndarray], anchor_targets: np.ndarray,
                   cfg: StaticQueryConfig, weights: list[float] | None = None) -> tuple[np.ndarray, list[float]]:
    """Fine-tune the tower against frozen document vectors: per train query, softmax over the whole
    corpus (q . d / temperature) with its relevant documents as positives, plus `finetune_anchor`
    times the distillation loss on a batch of pseudo-queries, so tokens the train queries share
    with other text stay near the teacher. `weights`: each query's weight in the batch's weighted
    mean (IPS-weighted clicks). Returns the tower and the mean loss of each epoch."""
    if cfg.finetune_epochs == 0 or not query_bags:
        return tower, []
    gen = torch.Generator().manual_seed(cfg.seed + 1)
    table = _table(tower)
    docs = torch.from_numpy(np.ascontiguousarray(doc_vectors, dtype=np.float32))
    anchor = torch.from_numpy(np.ascontiguousarray(anchor_targets)) if anchor_bags else None
    weight = torch.tensor(weights, dtype=torch.float32) if weights is not None else None

    def batch_loss(rows: list[int]) -> torch.Tensor:
        logits = F.normalize(table(*_bag_batch(query_bags, rows)), dim=-1) @ docs.T / cfg.finetune_temperature
        positive = torch.zeros_like(logits, dtype=torch.bool)
        for i, r in enumerate(rows):
            positive[i, positives[r]] = True
        # -log of the probability mass on the relevant documents
        per_query = logits.logsumexp(dim=-1) - logits.masked_fill(~positive, float("-inf")).logsumexp(dim=-1)
        if weight is None:
            loss = per_query.mean()
        else:
            w = weight[rows]
            loss = (per_query * w).sum() / w.sum().clamp_min(1e-12)
        if anchor is not None and cfg.finetune_anchor > 0:
            picked = torch.randint(len(anchor_bags), (cfg.batch_size,), generator=gen).tolist()
            loss = loss + cfg.finetune_anchor * _cosine_loss(table, anchor_bags, picked, anchor)
        return loss

    losses = _epochs(table, len(query_bags), cfg.finetune_epochs, cfg.finetune_batch_size, cfg.finetune_lr, gen,
                     batch_loss)
    return table.weight.detach().numpy().astype(np.float32), losses


def build_static_tables(model: torch.nn.Module, tokenizer, documents: Sequence[str], texts: Sequence[str],
                        query_max_length: int, doc_max_length: int, cfg: StaticQueryConfig,
                        text_counts: dict[str, int] | None = None, pairs: TrainPairs | None = None,
                        doc_vectors: np.ndarray | None = None,
                        vectors: Callable[[np.ndarray | None], np.ndarray] | None = None,
                        teacher: Callable[[list[str]], np.ndarray] | None = None) -> StaticTables:
    """The bundle's static query tables: IDF weights over `documents`, a tower distilled on `texts`,
    then (cfg.finetune_epochs > 0) fine-tuned on `pairs` against `doc_vectors`, the rows of the
    documents' frozen dense vectors. `vectors(ids)`: where the model's `token_vectors` of those token
    ids (None: all) come from (the index stage's encoding cache), else they are computed here;
    `teacher`: where the distillation targets of a list of texts come from (the same cache), else
    `teacher_vectors`."""
    torch.manual_seed(cfg.seed)
    times: dict[str, float] = {}
    start = time.perf_counter()
    df = document_frequencies(tokenizer, documents, doc_max_length)
    weights = idf_from_frequencies(tokenizer, df, len(documents))
    times["idf_s"] = time.perf_counter() - start
    special = special_mask(tokenizer, len(weights))
    bags, kept = _bags(tokenizer, texts, query_max_length, special)
    finetune = bool(cfg.finetune_epochs and pairs is not None and pairs.texts and doc_vectors is not None)
    query_bags, kept_pairs = _bags(tokenizer, pairs.texts, query_max_length, special) if finetune else ([], [])
    start = time.perf_counter()
    ids = _seen_tokens(df, bags + query_bags, special) if cfg.init_vocab == "seen" else None
    tokens = vectors(ids) if vectors is not None else token_vectors(model, tokenizer, cfg.init_batch, ids)
    # IDF scaling: in the sum a frequent token (the, of, ##s) weighs little, a rare one much
    positive = weights[weights > 0]
    scale = weights / (float(positive.mean()) if len(positive) else 1.0)
    init = tokens * scale[:, None]
    times["init_s"] = time.perf_counter() - start
    start = time.perf_counter()
    kept_texts = [texts[i] for i in kept]
    targets = (teacher(kept_texts) if teacher is not None
               else teacher_vectors(model, tokenizer, kept_texts, query_max_length))
    times["teacher_s"] = time.perf_counter() - start
    start = time.perf_counter()
    tower, losses = distill_tower(init, bags, targets, cfg)
    times["distill_s"] = time.perf_counter() - start
    tuned: list[float] = []
    if finetune:
        start = time.perf_counter()
        kept_weights = [pairs.weights[i] for i in kept_pairs] if pairs.weights is not None else None
        tower, tuned = finetune_tower(tower, query_bags, [pairs.positives[i] for i in kept_pairs], doc_vectors,
                                      bags, targets, cfg, kept_weights)
        times["finetune_s"] = time.perf_counter() - start
    log.info("static tower: %d texts, cosine loss by epoch %s, fine-tuning loss by epoch %s, %s", len(bags),
             [round(x, 4) for x in losses], [round(x, 4) for x in tuned], {k: round(v, 1) for k, v in times.items()})
    meta = {
        "token_weights": "idf",
        "idf_documents": len(documents),
        "texts": len(bags),
        "text_sources": dict(text_counts or {}),
        "epochs": cfg.epochs,
        "loss_by_epoch": [round(x, 5) for x in losses],
        "finetune_queries": len(pairs.texts) if pairs is not None and tuned else 0,
        "finetune_loss_by_epoch": [round(x, 5) for x in tuned],
        "seconds": {k: round(v, 2) for k, v in times.items()},
        "dim": int(tower.shape[1]),
        "vocab": int(tower.shape[0]),
        "init_vocab": cfg.init_vocab,
        "init_tokens": len(ids) if ids is not None else int(tokens.shape[0]),
        "finite": bool(np.isfinite(tower).all() and math.isfinite(float(weights.sum()))),
    }
    return StaticTables(tower=tower, token_weights=weights, meta=meta)
