"""Pieces of the trained / zero-shot run sources that need no model: CLEAR fusion, the encoding cache."""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from uniret.evaluation.model_source import clear_runs
from uniret.retrieval.corpus_cache import cached_corpus_encoding
from uniret.retrieval.encoding import EncodedTexts


def test_clear_interpolates_bm25_and_embedding_scores_over_both_runs():
    dense = {"q": {"a": 0.9, "b": 0.1}}
    bm25 = {"q": {"b": 10.0, "c": 2.0}}
    fused = clear_runs(dense, bm25, bm25_weight=0.5, k=10)["q"]
    # b: 0.5*10 + 0.1; c: 0.5*2 + emb floor 0.1; a: bm25 floor 0.5*2 + 0.9
    assert list(fused) == ["b", "a", "c"]
    assert abs(fused["b"] - 5.1) < 1e-9 and abs(fused["a"] - 1.9) < 1e-9


def test_corpus_encodings_are_computed_once_per_model_and_corpus(tmp_path):
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text('{"_id": "d1", "text": "x"}\n')
    calls = []

    def encode():
        calls.append(1)
        return EncodedTexts(dense=np.ones((2, 3), dtype=np.float32), sparse=sp.csr_matrix(np.eye(2, 5, dtype=np.float32)))

    first = cached_corpus_encoding(tmp_path / "cache", "model-a", corpus, ["d1", "d2"], encode)
    again = cached_corpus_encoding(tmp_path / "cache", "model-a", corpus, ["d1", "d2"], encode)
    assert len(calls) == 1
    np.testing.assert_array_equal(first.dense, again.dense)
    assert (first.sparse != again.sparse).nnz == 0
    cached_corpus_encoding(tmp_path / "cache", "model-b", corpus, ["d1", "d2"], encode)  # another model
    corpus.write_text('{"_id": "d1", "text": "changed"}\n')
    cached_corpus_encoding(tmp_path / "cache", "model-a", corpus, ["d1", "d2"], encode)  # another corpus
    assert len(calls) == 3
