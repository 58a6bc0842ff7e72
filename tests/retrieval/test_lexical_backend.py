"""The in-memory lexical backend (retrieval.lexical_backend: memory) ranks exactly like the Lucene
impact index, uni-retrieval over either backend gives the same top-10, and `auto` picks memory
below memory_max_docs and Lucene above."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from uniret.config.loader import ConfigError, build
from uniret.config.retrieval import RetrievalConfig
from uniret.core.runs import ranked
from uniret.lexical.impact import build_impact_index
from uniret.retrieval.base import QueryBatch
from uniret.retrieval.bundle import choose_lexical_backend, open_bundle
from uniret.retrieval.encoding import EncodedTexts
from uniret.retrieval.lexical import LexicalSearcher, LuceneImpactIndex, MemoryImpactIndex
from uniret.retrieval.modes import build_searchers
from uniret.retrieval.ranking import tie_ranks, top_k_ranked
from uniret.retrieval.sparse import iter_term_rows, vocab_tokens
from uniret.retrieval.uni import UniSearcher

QUANT = 100.0
TOP = 10


def test_top_k_ranked_matches_ranked_on_ties():
    docids = ["d3", "d1", "d2", "d0", "d4", "d5"]
    scores = np.array([2.0, 5.0, 2.0, 2.0, 7.0, 1.0])
    for k in range(1, len(docids) + 2):
        got = [docids[i] for i in top_k_ranked(scores, k, tie_ranks(docids))]
        want = [d for d, _ in ranked(dict(zip(docids, scores.tolist(), strict=True)), k)]
        assert got == want
    # the three docs tied at 2.0 straddle the cut at k=3: the lowest doc id wins
    assert [docids[i] for i in top_k_ranked(scores, 3, tie_ranks(docids))] == ["d4", "d1", "d0"]


@pytest.fixture(scope="module")
def backends(encoded_slice, unifier, tmp_path_factory):
    vocab = vocab_tokens(unifier[1])
    out = tmp_path_factory.mktemp("impact-backend") / "impact"
    build_impact_index(iter_term_rows(encoded_slice.docids, encoded_slice.docs.sparse, vocab), out, QUANT)
    lucene = LuceneImpactIndex(out, encoded_slice.docids, vocab, QUANT)
    yield {"lucene": lucene, "memory": MemoryImpactIndex(encoded_slice.docids, encoded_slice.docs.sparse, QUANT)}
    lucene.close()


def _untied_top(hits: dict[str, float]) -> list[str] | None:
    """The top-10 doc ids in ranked order, or None when a tie at the cut makes the set ambiguous."""
    order = ranked(hits)
    if len(order) > TOP and order[TOP - 1][1] == order[TOP][1]:
        return None
    return [d for d, _ in order[:TOP]]


def test_memory_backend_ranks_like_lucene(encoded_slice, backends):
    batch = encoded_slice.batch
    runs = {name: LexicalSearcher(index).search_batch(batch, 2 * TOP) for name, index in backends.items()}
    compared = 0
    for qid in batch.ids:
        lu, me = _untied_top(runs["lucene"][qid]), _untied_top(runs["memory"][qid])
        if lu is None:
            continue
        assert me == lu
        assert [runs["memory"][qid][d] for d in me] == pytest.approx([runs["lucene"][qid][d] for d in lu], rel=1e-6)
        compared += 1
    assert compared >= 0.8 * len(batch.ids)
    # the memory backend's own order is already `ranked` order (no re-sort needed downstream)
    for hits in runs["memory"].values():
        assert list(hits) == [d for d, _ in ranked(hits)]


def test_lucene_single_query_path_equals_batch_path(encoded_slice, backends):
    """One query goes through SimpleImpactSearcher.search, several through batch_search: same hits."""
    batch = encoded_slice.batch
    together = LexicalSearcher(backends["lucene"]).search_batch(batch, TOP)
    for i, qid in enumerate(batch.ids[:5]):
        alone = QueryBatch(ids=[qid], texts=[batch.texts[i]], encoded=EncodedTexts(sparse=batch.encoded.sparse[i]))
        got = LexicalSearcher(backends["lucene"]).search_batch(alone, TOP)[qid]
        assert got and ranked(got) == ranked(together[qid])


def test_uni_top10_is_the_same_over_both_backends(encoded_slice, backends):
    cand = len(encoded_slice.docids) // 2
    runs = {
        name: UniSearcher(index, encoded_slice.docs.dense, candidates=cand).search_batch(encoded_slice.batch, TOP)
        for name, index in backends.items()
    }
    for qid in encoded_slice.batch.ids:
        assert list(runs["memory"][qid]) == list(runs["lucene"][qid])
        assert list(runs["memory"][qid].values()) == pytest.approx(list(runs["lucene"][qid].values()), rel=1e-6)


def test_only_lucene_searchers_need_the_java_lock(encoded_slice, backends, retrieval_cfg):
    assert backends["lucene"].uses_jvm and not backends["memory"].uses_jvm
    for name, index in backends.items():
        assert UniSearcher(index, encoded_slice.docs.dense, 10).uses_jvm == (name == "lucene")
        assert LexicalSearcher(index).uses_jvm == (name == "lucene")


@pytest.mark.parametrize(
    ("backend", "n_docs", "lucene", "impacts", "want"),
    [
        ("auto", 10, True, True, "memory"),
        ("auto", 11, True, True, "lucene"),  # above memory_max_docs
        ("auto", 11, False, True, "memory"),  # only impacts.npz: memory whatever the size
        ("auto", 5, True, False, "lucene"),  # old bundle without impacts.npz
        ("auto", 5, False, False, None),
        ("lucene", 5, True, True, "lucene"),
        ("memory", 50, True, True, "memory"),
    ],
)
def test_choose_lexical_backend(backend, n_docs, lucene, impacts, want):
    cfg = RetrievalConfig(lexical_backend=backend, memory_max_docs=10)
    assert choose_lexical_backend(cfg, n_docs, lucene, impacts) == want


def test_explicit_backend_the_bundle_lacks_is_an_error():
    with pytest.raises(ValueError, match="impacts.npz"):
        choose_lexical_backend(RetrievalConfig(lexical_backend="memory"), 5, True, False)


def test_lexical_backend_param_is_typed(tiny_params):
    assert tiny_params.section("retrieval").lexical_backend in ("lucene", "memory", "auto")
    with pytest.raises(ConfigError, match="lexical_backend"):
        build(RetrievalConfig, {"lexical_backend": "disk"}, "params.yaml: retrieval")
    with pytest.raises(ConfigError, match="memory_max_docs"):
        build(RetrievalConfig, {"memory_max_docs": -1}, "params.yaml: retrieval")


@pytest.mark.slow
def test_bundle_backends_give_the_same_runs(tiny_bundle, encoded_slice):
    """A real bundle opened with each backend: same lexical and uni top-10 for the slice's queries."""
    runs = {}
    for backend in ("lucene", "memory"):
        probe = open_bundle(tiny_bundle)
        cfg = dataclasses.replace(probe.retrieval, lexical_backend=backend, modes=["lexical", "uni"])
        bundle = open_bundle(tiny_bundle, cfg)
        expected = LuceneImpactIndex if backend == "lucene" else MemoryImpactIndex
        assert isinstance(bundle.index.lexical, expected)
        searchers = build_searchers(bundle.index, cfg, bundle.encoder, bundle.bm25, bundle.has_gate)
        runs[backend] = {m: s.search(encoded_slice.queries, 2 * TOP) for m, s in searchers.items()}
        for obj in (probe.index.lexical, bundle.index.lexical):
            getattr(obj, "close", lambda: None)()
    compared = 0
    for qid in encoded_slice.queries:
        lu, me = _untied_top(runs["lucene"]["lexical"][qid]), _untied_top(runs["memory"]["lexical"][qid])
        if lu is not None:
            assert me == lu
            compared += 1
        assert list(runs["memory"]["uni"][qid])[:TOP] == list(runs["lucene"]["uni"][qid])[:TOP]
    assert compared >= 0.8 * len(encoded_slice.queries)
