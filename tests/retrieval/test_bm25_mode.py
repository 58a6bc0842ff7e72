"""The BM25 mode (array searcher) gives Bm25Searcher's runs, and hybrid_bm25 fused on arrays gives
exactly the runs of the dict fusion, on the tiny real SciFact slice; only its Lucene calls hold the
Java lock."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from uniret.config.retrieval import DenseIndexConfig
from uniret.config.sections import Bm25Config
from uniret.lexical.bm25 import Bm25Searcher, index_documents
from uniret.lexical.jvm import JVM_LOCK
from uniret.retrieval.base import QueryBatch, Searcher
from uniret.retrieval.bm25 import Bm25ModeSearcher
from uniret.retrieval.dense import DenseSearcher, build_faiss_index
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.fusion import FusionSearcher, interpolate
from uniret.retrieval.lexical import LexicalSearcher, MemoryImpactIndex
from uniret.serving.state import search_one

CFG = Bm25Config(top_n=1000, threads=1)


@pytest.fixture(scope="module")
def bm25_dir(tmp_path_factory, encoded_slice):
    out = tmp_path_factory.mktemp("bm25mode") / "bm25"
    index_documents(encoded_slice.dataset.iter_corpus(), out, CFG)
    return out


@pytest.fixture(scope="module")
def bm25(bm25_dir, encoded_slice):
    searcher = Bm25ModeSearcher(bm25_dir, CFG, encoded_slice.docids)
    yield searcher
    searcher.close()


def test_runs_and_arrays_equal_the_simple_searcher(bm25, bm25_dir, encoded_slice):
    batch = encoded_slice.batch
    with Bm25Searcher(bm25_dir, CFG) as reference:
        want = reference.search(dict(zip(batch.ids, batch.texts, strict=True)), 1000, progress=False)
    got = bm25.search_batch(batch, 1000)
    arrays = bm25.search_arrays(batch, 1000)
    assert sum(len(h) for h in want.values()) > 0
    for qid, (rows, scores) in zip(batch.ids, arrays, strict=True):
        assert list(got[qid].items()) == list(want.get(qid, {}).items())
        as_run = [(encoded_slice.docids[r], s) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)]
        assert as_run == list(want.get(qid, {}).items())
        assert scores.dtype == np.float64


@pytest.mark.parametrize("depths", [[1000, 1000, 1000], [40, 40, 10]])
def test_hybrid_bm25_on_arrays_equals_dict_fusion(bm25, encoded_slice, depths):
    lexical = LexicalSearcher(MemoryImpactIndex(encoded_slice.docids, encoded_slice.docs.sparse, 100.0))
    dense = DenseSearcher(build_faiss_index(encoded_slice.docs.dense, DenseIndexConfig()), encoded_slice.docids)
    parts = [lexical, dense, bm25]
    weights = [0.15, 0.45, 0.40]
    fused = FusionSearcher(parts, "hybrid", depths, weights=weights)
    assert fused.on_arrays  # BM25 with the corpus's doc ids joins the array path
    got = fused.search_batch(encoded_slice.batch, 10)
    # the reference: each part's run as a dict, fused by the dict function
    want = interpolate([p.search_batch(encoded_slice.batch, d) for p, d in zip(parts, depths, strict=True)],
                       weights, 10)
    assert set(got) == set(encoded_slice.batch.ids) and set(want) <= set(got)
    for qid in got:
        assert list(got[qid].items()) == list(want.get(qid, {}).items())  # exact


def test_without_docids_no_array_path_and_unknown_docs_rejected(bm25_dir, encoded_slice):
    assert not Bm25ModeSearcher(bm25_dir, CFG).has_arrays
    partial = Bm25ModeSearcher(bm25_dir, CFG, encoded_slice.docids[1:])
    with pytest.raises(ValueError, match="not in the corpus's doc ids"):
        partial.search_arrays(encoded_slice.batch, 10)
    partial.close()


def test_bm25_rm3_mode_answers_as_simple_searcher_set_rm3_and_feeds_hybrid_bm25(bm25_dir, encoded_slice):
    """bm25_rm3: the mode's runs and arrays are SimpleSearcher's RM3 runs; build_searchers makes it
    hybrid_bm25's third signal when retrieval.fusion.bm25_signal says so, plain BM25 otherwise."""
    import dataclasses

    from uniret.config.retrieval import RetrievalConfig
    from uniret.retrieval.modes import CorpusIndex, build_searchers, fused_runs

    batch = encoded_slice.batch
    rm3 = Bm25ModeSearcher(bm25_dir, CFG, encoded_slice.docids, rm3=True)
    assert rm3.mode == "bm25_rm3"
    with Bm25Searcher(bm25_dir, CFG) as reference:
        reference._searcher.set_rm3(CFG.rm3.fb_terms, CFG.rm3.fb_docs, float(CFG.rm3.original_query_weight))
        want = reference.search(dict(zip(batch.ids, batch.texts, strict=True)), 100, progress=False)
    got = rm3.search_batch(batch, 100)
    assert sum(len(h) for h in want.values()) > 0
    for qid, (rows, scores) in zip(batch.ids, rm3.search_arrays(batch, 100), strict=True):
        assert list(got[qid].items()) == list(want.get(qid, {}).items())
        assert [(encoded_slice.docids[r], s) for r, s in zip(rows.tolist(), scores.tolist(), strict=True)] == \
            list(want.get(qid, {}).items())
    rm3.close()

    index = CorpusIndex(docids=encoded_slice.docids, bm25_dir=bm25_dir,
                        lexical=MemoryImpactIndex(encoded_slice.docids, encoded_slice.docs.sparse, 100.0))
    index.dense = build_faiss_index(encoded_slice.docs.dense, DenseIndexConfig())
    index.doc_vectors = encoded_slice.docs.dense
    for signal in ("bm25_rm3", "bm25"):
        cfg = RetrievalConfig()
        cfg = dataclasses.replace(cfg, fusion=dataclasses.replace(cfg.fusion, bm25_signal=signal))
        assert fused_runs("hybrid_bm25", cfg) == ["lexical", "dense", signal]
        searchers = build_searchers(index, cfg, None, CFG, modes=["hybrid_bm25", "bm25_rm3"])
        assert [p.mode for p in searchers["hybrid_bm25"].searchers] == ["lexical", "dense", signal]
        assert searchers["bm25_rm3"].rm3


class LockProbe(Searcher):
    """A numpy-only route: records whether the calling thread held the Java lock while searching."""

    mode = "dense"

    def __init__(self, docids):
        self.docids, self.has_arrays, self.held = docids, True, []

    def search_batch(self, batch, k):
        raise AssertionError("the fusion takes the array path")

    def search_arrays(self, batch, k):
        self.held.append(JVM_LOCK._is_owned())
        return [(np.arange(3, dtype=np.int64), np.array([3.0, 2.0, 1.0])) for _ in batch.ids]


def test_only_the_lucene_calls_hold_the_java_lock(bm25, encoded_slice, monkeypatch):
    """search_one (serving) takes no lock itself: the BM25 route holds JVM_LOCK around its Lucene
    calls (pyjnius is not safe for concurrent calls), the fusion's numpy route runs outside it."""
    from uniret.lexical.bm25_arrays import Bm25ArraySearcher

    java_held: list[bool] = []
    real = Bm25ArraySearcher.search
    monkeypatch.setattr(Bm25ArraySearcher, "search",
                        lambda self, text, k: java_held.append(JVM_LOCK._is_owned()) or real(self, text, k))
    probe = LockProbe(encoded_slice.docids)
    fused = FusionSearcher([bm25, probe], "hybrid", 50)
    qid, text = next(iter(encoded_slice.queries.items()))
    assert search_one(fused, qid, text, 10)[qid]
    assert java_held == [True] and probe.held == [False]


def test_concurrent_requests_answer_as_serial_ones(bm25, encoded_slice):
    """Eight threads searching one fusion over the same Lucene index get the serial runs, no error."""
    lexical = LexicalSearcher(MemoryImpactIndex(encoded_slice.docids, encoded_slice.docs.sparse, 100.0))
    fused = FusionSearcher([lexical, bm25], "hybrid", 100, weights=[0.5, 0.5])
    batch = encoded_slice.batch
    items = list(zip(batch.ids, batch.texts, strict=True)) * 4
    sparse = {qid: batch.encoded.sparse[i] for i, qid in enumerate(batch.ids)}

    def one(item):
        qid, text = item
        single = QueryBatch(ids=[qid], texts=[text], encoded=EncodedTexts(sparse=sparse[qid]))
        return qid, fused.search_batch(single, 10)[qid]

    serial = dict(map(one, items))
    with ThreadPoolExecutor(8) as pool:
        for qid, hits in pool.map(one, items):
            assert list(hits.items()) == list(serial[qid].items())


@pytest.fixture(scope="module")
def bm25_memory(bm25_dir, encoded_slice):
    from uniret.retrieval.bm25_memory import MemoryBm25Searcher

    return MemoryBm25Searcher.from_lucene(bm25_dir, CFG, encoded_slice.docids)


@pytest.mark.parametrize("k", [1000, 10])
def test_memory_bm25_ranks_as_lucene(bm25, bm25_memory, encoded_slice, k):
    """Lucene's term weights summed in memory: the same documents in the same order as the Lucene
    searcher, scores within Anserini's 4-decimal rounding and tie nudges of them."""
    batch = encoded_slice.batch
    lucene, memory = bm25.search_arrays(batch, k), bm25_memory.search_arrays(batch, k)
    assert sum(len(rows) for rows, _ in memory) > 0
    for (want_rows, want), (rows, scores) in zip(lucene, memory, strict=True):
        assert rows.tolist() == want_rows.tolist()
        np.testing.assert_allclose(scores, want, rtol=0, atol=1.0001e-4)
    assert list(bm25_memory.search_batch(batch, k)) == batch.ids


def test_memory_bm25_counts_repeated_terms_and_skips_unknown_ones(bm25, bm25_memory, encoded_slice):
    """A term said twice weighs twice (Anserini's bag of words boosts a clause by its count); a query
    of terms the index lacks matches nothing."""
    text = encoded_slice.batch.texts[0]
    word = max(text.split(), key=len)
    batch = QueryBatch(["once", "twice", "none"], [word, f"{word} {word}", "qqqzzzx xxyyzq"])
    (once, s1), (twice, s2), (none, _) = bm25_memory.search_arrays(batch, 20)
    (l_twice, l2), = bm25.search_arrays(QueryBatch(["twice"], [f"{word} {word}"]), 20)
    assert len(once) and once.tolist() == twice.tolist() == l_twice.tolist()
    np.testing.assert_allclose(s2, 2 * s1, rtol=1e-6)
    np.testing.assert_allclose(s2, l2, rtol=0, atol=1.0001e-4)
    assert len(none) == 0
