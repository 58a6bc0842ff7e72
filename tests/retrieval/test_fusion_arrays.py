"""Fusion of dense + in-memory lexical runs on numpy arrays gives exactly the runs of the dict
functions (`interpolate`, `reciprocal_rank`): same documents, same order, same scores."""

from __future__ import annotations

import pytest

from uniret.config.retrieval import DenseIndexConfig
from uniret.retrieval.dense import DenseSearcher, build_faiss_index
from uniret.retrieval.fusion import FusionSearcher
from uniret.retrieval.lexical import LexicalSearcher, LuceneImpactIndex, MemoryImpactIndex

QUANT = 100.0


@pytest.fixture(scope="module")
def parts(encoded_slice):
    lexical = LexicalSearcher(MemoryImpactIndex(encoded_slice.docids, encoded_slice.docs.sparse, QUANT))
    dense = DenseSearcher(build_faiss_index(encoded_slice.docs.dense, DenseIndexConfig()), encoded_slice.docids)
    return [lexical, dense]


@pytest.mark.parametrize("method", ["hybrid", "rrf"])
@pytest.mark.parametrize(("depth", "fixed"), [(5, False), (40, False), (5, True)])
def test_array_fusion_equals_dict_fusion(encoded_slice, parts, method, depth, fixed):
    """fixed: hybrid_fast's fixed cut with a k beyond it, the head fused at the cut and the tail deeper."""
    on_arrays = FusionSearcher(parts, method, depth=depth, alpha=0.3, fixed_depths=fixed)
    on_dicts = FusionSearcher(parts, method, depth=depth, alpha=0.3, fixed_depths=fixed)
    on_dicts.on_arrays = False
    assert on_arrays.on_arrays
    got = on_arrays.search_batch(encoded_slice.batch, 10)
    want = on_dicts.search_batch(encoded_slice.batch, 10)
    assert all(len(hits) == 10 for hits in got.values())
    assert set(got) == set(want) == set(encoded_slice.batch.ids)
    for qid in want:
        assert list(got[qid].items()) == list(want[qid].items())  # exact: same arithmetic, same order


def test_lucene_parts_keep_the_dict_path(encoded_slice, parts, tmp_path):
    lucene = LexicalSearcher(LuceneImpactIndex(tmp_path, encoded_slice.docids, [], QUANT))  # never searched
    assert not FusionSearcher([lucene, parts[1]], "hybrid", depth=5).on_arrays
