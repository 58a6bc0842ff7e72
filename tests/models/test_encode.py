"""encode_texts: length-sorted batches come back in input order, as float32 dense + CSR sparse."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from uniret.models.encode import encode_texts, length_order


def test_length_order_longest_first():
    assert length_order(["ab", "abcd", "a"]) == [1, 0, 2]


def test_batched_encoding_matches_one_by_one(build, docs, queries):
    model = build("unifier", "splade-tiny", shared_layers=1, dense_layers=1)
    texts = docs + queries  # mixed lengths: sorting reorders them
    dense, sparse = encode_texts(model, model.tokenizer, texts, False, batch_size=3, max_length=32, device="cpu")
    assert dense.dtype == np.float32 and dense.shape == (6, 128)
    assert sp.isspmatrix_csr(sparse) and sparse.shape == (6, 30522) and sparse.dtype == np.float32
    for i, text in enumerate(texts):
        d1, s1 = encode_texts(model, model.tokenizer, [text], False, batch_size=1, max_length=32, device="cpu")
        assert np.allclose(dense[i], d1[0], atol=1e-4)
        assert np.allclose(sparse[i].toarray(), s1.toarray(), atol=1e-4)


def test_dense_only_model_returns_no_sparse(build, queries):
    model = build("dense", "minilm", pooling="mean")
    dense, sparse = encode_texts(model, model.tokenizer, queries, True, batch_size=8, max_length=16, device="cpu")
    assert sparse is None and dense.shape == (2, 384)
