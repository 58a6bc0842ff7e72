"""Token statistics of a corpus under a model's tokenizer: the IDF table of inference-free queries.

Numpy and a tokenizer only (no torch), so serving and evaluation can compute the table of any
corpus they search (uniret.retrieval.static_query), and training the table its loss uses.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def special_mask(tokenizer, vocab_size: int) -> np.ndarray:
    """True for the tokenizer's special tokens ([CLS], [SEP], [PAD], ...): never a query term."""
    mask = np.zeros(vocab_size, dtype=bool)
    for tid in tokenizer.all_special_ids:
        if 0 <= tid < vocab_size:
            mask[tid] = True
    return mask


def document_frequencies(tokenizer, documents: Sequence[str], max_length: int, batch: int = 512) -> np.ndarray:
    """[vocab] int64: in how many of `documents` (each cut at `max_length` tokens) each token occurs."""
    df = np.zeros(len(tokenizer), dtype=np.int64)
    for start in range(0, len(documents), batch):
        enc = tokenizer(list(documents[start:start + batch]), add_special_tokens=False, truncation=True,
                        max_length=max_length)
        for ids in enc["input_ids"]:
            df[np.unique(np.asarray(ids, dtype=np.int64))] += 1
    return df


def idf_from_frequencies(tokenizer, df: np.ndarray, n: int) -> np.ndarray:
    """BM25's IDF, log(1 + (N - df + 0.5) / (df + 0.5)), of each token of `df` over `n` documents;
    special tokens get 0."""
    idf = np.log1p((n - df + 0.5) / (df + 0.5)).astype(np.float32)
    idf[special_mask(tokenizer, len(df))] = 0.0
    return idf


def idf_weights(tokenizer, documents: Sequence[str], max_length: int, batch: int = 512) -> np.ndarray:
    """BM25's IDF of every vocabulary token over `documents` (each cut at `max_length` tokens, as the
    document encoder sees it); special tokens get 0."""
    return idf_from_frequencies(tokenizer, document_frequencies(tokenizer, documents, max_length, batch),
                                len(documents))
