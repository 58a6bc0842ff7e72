"""Uni-retrieval (UnifieR §3.4): K = whole corpus equals exhaustive scoring; small K re-scores
only lexical candidates; the gated score is the one the model trains with."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from uniret.retrieval.base import QueryBatch
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.exhaustive import ExhaustiveSearcher
from uniret.retrieval.lexical import LexicalSearcher, MemoryImpactIndex
from uniret.retrieval.uni import UniSearcher

QUANT = 100.0


@pytest.fixture(scope="module")
def impacts(encoded_slice):
    return MemoryImpactIndex(encoded_slice.docids, encoded_slice.docs.sparse, QUANT)


def test_uni_with_k_all_equals_exhaustive(encoded_slice, impacts):
    n = len(encoded_slice.docids)
    uni = UniSearcher(impacts, encoded_slice.docs.dense, candidates=n).search_batch(encoded_slice.batch, 50)
    exh = ExhaustiveSearcher(impacts, encoded_slice.docs.dense).search_batch(encoded_slice.batch, 50)
    for qid in encoded_slice.batch.ids:
        assert list(uni[qid].values()) == pytest.approx(list(exh[qid].values()), rel=1e-5, abs=1e-5)
        same = set(uni[qid]) & set(exh[qid])
        assert len(same) >= 48  # only exact ties at the cut may differ
        for did in same:
            assert uni[qid][did] == pytest.approx(exh[qid][did], rel=1e-5, abs=1e-5)


def test_exhaustive_is_lexical_plus_dense_by_hand(encoded_slice, impacts):
    exh = ExhaustiveSearcher(impacts, encoded_slice.docs.dense).search_batch(encoded_slice.batch, 3)
    qid = encoded_slice.batch.ids[0]
    q = encoded_slice.batch.encoded
    qi = np.rint(q.sparse[0].toarray()[0].astype(np.float64) * QUANT)
    for did, score in exh[qid].items():
        row = encoded_slice.docids.index(did)
        lex = float(qi @ impacts.doc_impacts[row].toarray()[0]) / QUANT**2
        dense = float(q.dense[0] @ encoded_slice.docs.dense[row])
        assert score == pytest.approx(lex + dense, rel=1e-5)


def test_uni_small_k_rescores_only_lexical_candidates(encoded_slice, impacts):
    k_cand = 5
    lex = LexicalSearcher(impacts).search_batch(encoded_slice.batch, k_cand)
    uni = UniSearcher(impacts, encoded_slice.docs.dense, candidates=k_cand).search_batch(encoded_slice.batch, 10)
    for qid in encoded_slice.batch.ids:
        assert set(uni[qid]) == set(lex[qid])
        for did, score in uni[qid].items():
            row = encoded_slice.docids.index(did)
            dense = float(encoded_slice.batch.encoded.dense[encoded_slice.batch.ids.index(qid)] @ encoded_slice.docs.dense[row])
            assert score == pytest.approx(lex[qid][did] + dense, rel=1e-5)


def test_gated_score_matches_the_models_training_formula(encoded_slice, impacts):
    from uniret.models.unifier import combine_uni

    enc = encoded_slice.batch.encoded
    gate = np.linspace(0.1, 0.9, len(enc)).astype(np.float32)
    gated_batch = QueryBatch(encoded_slice.batch.ids, encoded_slice.batch.texts,
                             EncodedTexts(dense=enc.dense, sparse=enc.sparse, gate=gate))
    n = len(encoded_slice.docids)
    run = UniSearcher(impacts, encoded_slice.docs.dense, candidates=n, gated=True).search_batch(gated_batch, 5)
    lex = impacts.scores(enc.sparse).toarray()
    dense = enc.dense @ encoded_slice.docs.dense.T
    expected = combine_uni(torch.tensor(dense, dtype=torch.float64), torch.tensor(lex), torch.tensor(gate, dtype=torch.float64))
    for i, qid in enumerate(gated_batch.ids):
        for did, score in run[qid].items():
            assert score == pytest.approx(float(expected[i, encoded_slice.docids.index(did)]), rel=1e-5)


def test_gated_mode_needs_a_gate(encoded_slice, impacts):
    uni = UniSearcher(impacts, encoded_slice.docs.dense, candidates=10, gated=True)
    with pytest.raises(ValueError, match="query-side gate"):
        uni.search_batch(encoded_slice.batch, 5)


@pytest.mark.parametrize("max_rows", [7, 10_000])  # candidates of several queries per gather, or one group
def test_vectorised_rescoring_equals_exhaustive_scoring_of_both_heads(encoded_slice, impacts, max_rows):
    """The gather + matvec rescoring and the posting-array lexical scores equal full [queries, docs]
    scoring of each head, read at every query's candidates."""
    from uniret.retrieval.uni import rescore

    enc = encoded_slice.batch.encoded
    candidates = impacts.top_k_arrays(enc.sparse, 8)
    dense = rescore(impacts_vectors := np.ascontiguousarray(encoded_slice.docs.dense, dtype=np.float32),
                    [rows for rows, _ in candidates], np.ascontiguousarray(enc.dense, dtype=np.float32), max_rows)
    full_dense = enc.dense.astype(np.float64) @ impacts_vectors.T.astype(np.float64)
    full_lex = impacts.scores(enc.sparse).toarray()
    assert sum(len(r) for r, _ in candidates) > 8  # several queries with candidates
    for i, (rows, lex) in enumerate(candidates):
        np.testing.assert_allclose(dense[i], full_dense[i, rows], rtol=1e-5, atol=1e-6)
        np.testing.assert_array_equal(lex, full_lex[i, rows])  # integer impacts: exact in float64
        touched = np.flatnonzero(full_lex[i] > 0)
        assert set(rows.tolist()) <= set(touched.tolist())


def test_posting_arrays_touch_exactly_the_docs_with_a_score(encoded_slice, impacts):
    from uniret.retrieval.sparse import quantize

    q = quantize(encoded_slice.batch.encoded.sparse, QUANT)
    full = impacts.scores(encoded_slice.batch.encoded.sparse).toarray()
    for i in range(q.shape[0]):
        lo, hi = q.indptr[i], q.indptr[i + 1]
        rows, scores = impacts.postings.top_k(q.indices[lo:hi].astype(np.int64), q.data[lo:hi].astype(np.float64),
                                              len(impacts.docids), impacts.ties, scale=impacts.scale)
        order = np.argsort(rows)  # top_k ranks best first; `scores` holds docs by row
        rows, scores = rows[order], scores[order]
        nonzero = scores != 0
        np.testing.assert_array_equal(rows[nonzero], np.flatnonzero(full[i]))
        np.testing.assert_array_equal(scores[nonzero], full[i][full[i] != 0])
