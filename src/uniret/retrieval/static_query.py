"""The query side with no transformer: a token weight table and a static dense tower.

A query becomes its tokenizer ids, then
- sparse: each distinct token weighted by `token_weights[id]` (an inference-free learned-sparse
  query, as OpenSearch's doc-only neural sparse models serve it: IDF-initialised), scored against
  the bundle's document impacts by the same impact index the transformer query uses;
- dense: the L2-normalised sum of the tower's token vectors (an embedding bag whose rows were
  initialised by passing each token through the query encoder and then distilled toward its
  output, model2vec/NIFE style), searched in the bundle's faiss index of transformer documents.

Documents stay on the transformer side (encoded offline). A bundle stores the two tables under
`static/` (written by uniret.training.static_tower through `save_static_query`).
`StaticRouteSearcher` runs any searcher (dense, lexical) on these query encodings, so the fusion
of BM25 + both static routes (`hybrid_fast`) never touches ONNX Runtime.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from uniret.core.runs import Run
from uniret.data.token_stats import idf_weights
from uniret.retrieval import kernels
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.query_tokens import AsciiWordPiece

STATIC_DIR = "static"
TOWER_FILE = "tower.npy"  # float16 [vocab, dim]: half the bytes, cosine to float32 > 0.9999
WEIGHTS_FILE = "token_weights.npy"  # float32 [vocab]
META_FILE = "static.json"


@dataclass
class StaticQueryEncoder:
    """Queries -> (dense, sparse) by table look-ups; the `TextEncoder` of the static routes."""

    tokenizer: object
    tower: np.ndarray  # [vocab, dim] float32 token vectors (None rows: zero)
    token_weights: np.ndarray  # [vocab] float32 query weight of each token (0: never a query term)
    max_length: int
    meta: dict | None = None

    def __post_init__(self) -> None:
        if self.tower.shape[0] != self.token_weights.shape[0]:
            raise ValueError(f"static query tables disagree: tower has {self.tower.shape[0]} rows, "
                             f"token weights {self.token_weights.shape[0]}")
        self.tower = np.ascontiguousarray(self.tower, dtype=np.float32)
        self.token_weights = np.asarray(self.token_weights, dtype=np.float32)
        self.special = np.zeros(len(self.token_weights), dtype=bool)
        for tid in getattr(self.tokenizer, "all_special_ids", []):
            if 0 <= tid < len(self.special):
                self.special[tid] = True
        # a fast tokenizer's Rust backend, called directly: half the per-query cost of the transformers
        # wrapper; a copy, so the cut at max_length below is the only truncation and nothing pads
        self._backend = copy.deepcopy(getattr(self.tokenizer, "backend_tokenizer", None))
        if self._backend is not None:
            self._backend.no_truncation()
            self._backend.no_padding()
        self._ascii = AsciiWordPiece.of(self._backend) if self._backend is not None else None  # E104

    def for_corpus(self, documents: Sequence[str], doc_max_length: int) -> StaticQueryEncoder:
        """The same tower with the token weights of another corpus: the IDF of `documents`, the
        table the index stage would write for a bundle of that corpus."""
        weights = idf_weights(self.tokenizer, documents, doc_max_length)
        meta = {**(self.meta or {}), "token_weights": f"idf of the searched corpus ({len(documents)} documents)"}
        return StaticQueryEncoder(self.tokenizer, self.tower, weights, self.max_length, meta)

    @property
    def vocab_size(self) -> int:
        return len(self.token_weights)

    def token_ids(self, texts: Sequence[str]) -> list[np.ndarray]:
        """Each text's token ids, no special tokens, cut at the query length the model was trained with."""
        if self._ascii is not None:
            rows = [self._ascii.ids(text)[:self.max_length] for text in texts]
        elif self._backend is not None:
            rows = [e.ids[:self.max_length] for e in self._backend.encode_batch(list(texts), add_special_tokens=False)]
        else:
            rows = self.tokenizer(list(texts), add_special_tokens=False, truncation=True,
                                  max_length=self.max_length)["input_ids"]
        out = []
        for ids in rows:
            arr = np.asarray(ids, dtype=np.int64)
            out.append(arr[~self.special[arr]] if len(arr) else arr)
        return out

    def encode(self, texts: Sequence[str], is_query: bool = True) -> EncodedTexts:
        """Encode queries (documents are the transformer's job: is_query=False is refused)."""
        if not is_query:
            raise ValueError("the static query encoder encodes queries only; documents go through the "
                             "bundle's document encoder")
        ids = self.token_ids(texts)
        dense = np.zeros((len(ids), self.tower.shape[1]), dtype=np.float32)
        # the CSR is built from its own int32 arrays: no COO conversion and no index-width scan per
        # query (serving encodes one at a time)
        indptr = np.zeros(len(ids) + 1, dtype=np.int32)
        cols: list[np.ndarray] = []
        vals: list[np.ndarray] = []
        for i, tok in enumerate(ids):
            if len(tok) and kernels.AVAILABLE:  # one compiled call (E44)
                dense[i], kept, weights = kernels.token_bag(tok, self.tower, self.token_weights)
                cols.append(kept)
                vals.append(weights)
            elif len(tok):
                vec = self.tower[tok].sum(axis=0)
                norm = float(np.linalg.norm(vec))
                dense[i] = vec / norm if norm > 0 else vec
                uniq = np.unique(tok)  # sorted: CSR column order
                weights = self.token_weights[uniq]
                keep = weights > 0
                cols.append(uniq[keep].astype(np.int32))
                vals.append(weights[keep])
            indptr[i + 1] = indptr[i] + (len(cols[-1]) if len(tok) else 0)
        data = np.concatenate(vals) if vals else np.zeros(0, dtype=np.float32)
        indices = np.concatenate(cols) if cols else np.zeros(0, dtype=np.int32)
        sparse = sp.csr_matrix((data, indices, indptr), shape=(len(ids), self.vocab_size), copy=False)
        return EncodedTexts(dense=dense, sparse=sparse)


def save_static_query(folder: Path, tower: np.ndarray, token_weights: np.ndarray, meta: dict) -> None:
    """Write the static query tables into `folder` (a bundle's static/ being built in a temp dir)."""
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / TOWER_FILE, np.asarray(tower, dtype=np.float16))
    np.save(folder / WEIGHTS_FILE, np.asarray(token_weights, dtype=np.float32))
    (folder / META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n", encoding="utf-8")


def load_static_query(folder: Path, tokenizer, max_length: int) -> StaticQueryEncoder | None:
    """The bundle's static query encoder, or None when the bundle has no static/ folder."""
    if not (folder / TOWER_FILE).is_file():
        return None
    for name in (WEIGHTS_FILE, META_FILE):
        if not (folder / name).is_file():
            raise FileNotFoundError(f"{folder / name}: static query table missing (the bundle is incomplete)")
    try:
        tower = np.load(folder / TOWER_FILE)
        weights = np.load(folder / WEIGHTS_FILE)
        meta = json.loads((folder / META_FILE).read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:
        raise ValueError(f"{folder}: static query tables unreadable ({exc})") from exc
    if tower.ndim != 2 or weights.ndim != 1:
        raise ValueError(f"{folder}: static query tables have shapes {tower.shape} and {weights.shape}")
    if len(tokenizer) != tower.shape[0]:
        raise ValueError(f"{folder / TOWER_FILE}: {tower.shape[0]} rows but the tokenizer has {len(tokenizer)} tokens")
    return StaticQueryEncoder(tokenizer, tower, weights, max_length, meta)


class StaticRouteSearcher(Searcher):
    """A dense or lexical searcher fed by the static query encoder instead of the transformer.

    It has no `encoder` of its own as far as callers see (so a fusion of static routes and BM25 never
    runs the ONNX query graph); the static encodings are made once per batch and shared by every
    static route of that batch.
    """

    def __init__(self, inner: Searcher, static: StaticQueryEncoder, mode: str):
        self.inner = inner
        self.static = static
        self.mode = mode
        self.encoder = None
        self.uses_jvm = inner.uses_jvm
        self.gil_bound = inner.gil_bound
        self.has_arrays = inner.has_arrays
        self.docids = getattr(inner, "docids", None)

    def _static_batch(self, batch: QueryBatch) -> QueryBatch:
        """`batch` with its static encoding, made once per batch by the first route that needs it and
        shared through `batch.extra` (on a fusion's worker thread while the caller runs BM25, E55; two
        threads that race make the same values)."""
        key = ("static", id(self.static))
        if key not in batch.extra:
            batch.extra[key] = self.static.encode(batch.texts, is_query=True)
        return QueryBatch(ids=batch.ids, texts=batch.texts, encoded=batch.extra[key])

    def search_batch(self, batch: QueryBatch, k: int) -> Run:
        return self.inner.search_batch(self._static_batch(batch), k)

    def search_arrays(self, batch: QueryBatch, k: int) -> list[tuple[np.ndarray, np.ndarray]]:
        return self.inner.search_arrays(self._static_batch(batch), k)
