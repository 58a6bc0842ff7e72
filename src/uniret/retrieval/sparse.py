"""Sparse term-weight arithmetic shared by the Lucene impact index and its in-memory twin.

Lucene impact indexes store integer impacts, so document weights are quantized as
round(quant * w) (STACK.md: floats are silently truncated) and query weights the same way; the
impact score sum_t q_t * d_t is therefore `quant**2` times the float dot product. Every lexical
score uniret hands out is divided back by `quant**2`, so lexical and dense scores share a scale
and uni-retrieval can add them (UnifieR §3.4).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import scipy.sparse as sp


def vocab_tokens(tokenizer) -> list[str]:
    """Token string of every vocabulary id (the sparse vectors' column names)."""
    size = len(tokenizer)
    return tokenizer.convert_ids_to_tokens(list(range(size)))


def keep_top_n(matrix: sp.csr_matrix, n: int | None) -> sp.csr_matrix:
    """Keep the `n` largest weights of each row (UnifieR Table 6 top-N sparsifying); None keeps all."""
    matrix = sp.csr_matrix(matrix, dtype=np.float32, copy=True)
    if n is None:
        return matrix
    for i in range(matrix.shape[0]):
        start, end = matrix.indptr[i], matrix.indptr[i + 1]
        if end - start <= n:
            continue
        row = matrix.data[start:end]
        # stable: among equal weights the lower term id survives
        drop = np.argsort(-row, kind="stable")[n:]
        row[drop] = 0.0
    matrix.eliminate_zeros()
    return matrix


def integer_impacts(weights: np.ndarray, quant: float) -> np.ndarray:
    """round(quant * w) of float32 weights, in float64; negatives become 0."""
    return np.maximum(np.rint(np.asarray(weights, dtype=np.float32).astype(np.float64) * quant), 0.0)


def quantize(matrix: sp.csr_matrix, quant: float) -> sp.csr_matrix:
    """Integer impacts round(quant * w) as float32 CSR; terms that round to 0 are dropped."""
    out = sp.csr_matrix(matrix, dtype=np.float32, copy=True)
    out.data = integer_impacts(out.data, quant).astype(np.float32)
    out.eliminate_zeros()
    return out


def row_terms(matrix: sp.csr_matrix, i: int, vocab: Sequence[str]) -> dict[str, float]:
    """Row `i` as {token: weight}."""
    start, end = matrix.indptr[i], matrix.indptr[i + 1]
    return {vocab[j]: float(w) for j, w in zip(matrix.indices[start:end], matrix.data[start:end], strict=True)}


def iter_term_rows(
    ids: Sequence[str], matrix: sp.csr_matrix, vocab: Sequence[str]
) -> Iterator[tuple[str, dict[str, float]]]:
    """(id, {token: weight}) per row: the input format of the Lucene impact index builder."""
    for i, doc_id in enumerate(ids):
        yield doc_id, row_terms(matrix, i, vocab)
