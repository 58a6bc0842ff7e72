"""Lexical (impact) retrieval: Lucene impact index and its in-memory twin rank identically."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from uniret.lexical.impact import build_impact_index
from uniret.retrieval.lexical import LexicalSearcher, LuceneImpactIndex, MemoryImpactIndex, active_terms
from uniret.retrieval.sparse import iter_term_rows, keep_top_n, quantize, vocab_tokens

QUANT = 100.0


def test_quantize_and_top_n_by_hand():
    m = sp.csr_matrix(np.array([[0.004, 0.5, 1.234, 0.2], [0.0, 0.3, 0.0, 0.0]], dtype=np.float32))
    q = quantize(m, QUANT)
    assert q.toarray().tolist() == [[0.0, 50.0, 123.0, 20.0], [0.0, 30.0, 0.0, 0.0]]  # 0.4 rounds to 0
    top = keep_top_n(m, 2).toarray()
    assert top[0].tolist() == pytest.approx([0.0, 0.5, 1.234, 0.0])
    assert top[1].tolist() == pytest.approx([0.0, 0.3, 0.0, 0.0])


@pytest.fixture(scope="module")
def lucene_index(encoded_slice, unifier, tmp_path_factory):
    vocab = vocab_tokens(unifier[1])
    out = tmp_path_factory.mktemp("impact") / "impact"
    build_impact_index(iter_term_rows(encoded_slice.docids, encoded_slice.docs.sparse, vocab), out, QUANT)
    return LuceneImpactIndex(out, encoded_slice.docids, vocab, QUANT)


def test_lucene_and_memory_impact_indexes_agree(encoded_slice, lucene_index):
    memory = MemoryImpactIndex(encoded_slice.docids, encoded_slice.docs.sparse, QUANT)
    batch = encoded_slice.batch
    lucene_run = LexicalSearcher(lucene_index).search_batch(batch, 20)
    memory_run = LexicalSearcher(memory).search_batch(batch, 20)
    assert set(lucene_run) == set(memory_run) == set(batch.ids)
    compared = 0
    for qid in batch.ids:
        lu, me = lucene_run[qid], memory_run[qid]
        assert len(lu) == len(me) > 0
        # identical score lists; ids identical wherever scores are not tied
        assert list(lu.values()) == pytest.approx(list(me.values()), rel=1e-6)
        for did in set(lu) & set(me):
            assert lu[did] == pytest.approx(me[did], rel=1e-6)
            compared += 1
    assert compared > 0.9 * 20 * len(batch.ids)


def test_lexical_scores_are_dequantized_dot_products(encoded_slice):
    memory = MemoryImpactIndex(encoded_slice.docids, encoded_slice.docs.sparse, QUANT)
    run = LexicalSearcher(memory).search_batch(encoded_slice.batch, 5)
    q = encoded_slice.batch.encoded.sparse.toarray()
    d = encoded_slice.docs.sparse.toarray()
    qid = encoded_slice.batch.ids[0]
    did, score = next(iter(run[qid].items()))
    float_dot = float(q[0] @ d[encoded_slice.docids.index(did)])
    # quantization error only: a few % of the float score
    assert score == pytest.approx(float_dot, rel=0.05)


def test_top_n_sparsifies_documents(encoded_slice):
    full = MemoryImpactIndex(encoded_slice.docids, encoded_slice.docs.sparse, QUANT)
    top8 = MemoryImpactIndex(encoded_slice.docids, encoded_slice.docs.sparse, QUANT, top_n=8)
    assert active_terms(top8.doc_impacts) <= 8 < active_terms(full.doc_impacts)
    run = LexicalSearcher(top8).search_batch(encoded_slice.batch, 10)
    assert all(len(h) > 0 for h in run.values())
