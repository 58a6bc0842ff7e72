"""dense_feedback: the static dense query moved toward BM25's top documents, on a real tiny bundle."""

from __future__ import annotations

import dataclasses
import json
import shutil

import numpy as np
import pytest

from uniret.retrieval.base import QueryBatch
from uniret.retrieval.bundle import open_bundle
from uniret.retrieval.modes import build_searchers

QUERIES = {"q1": "protein folding in cells", "q2": "vitamin D deficiency and bone density",
           "q3": "zebrafish heart regeneration"}


def _with_feedback(cfg, **changes):
    return dataclasses.replace(cfg, fusion=dataclasses.replace(cfg.fusion, **changes))


def test_feedback_query_is_the_static_vector_plus_the_mean_of_bm25s_top_documents(tiny_bundle):
    bundle = open_bundle(tiny_bundle)
    cfg = bundle.retrieval
    docs, weight = cfg.fusion.feedback_docs, cfg.fusion.feedback_weight
    found = build_searchers(bundle.index, cfg, bundle.encoder, bundle.bm25, modes=["bm25", "dense_feedback"])
    bm25 = found["bm25"].search(QUERIES, docs)  # the Lucene searcher: the reference BM25
    run = found["dense_feedback"].search(QUERIES, 10)
    vectors, docids = bundle.index.doc_vectors, bundle.index.docids
    static = bundle.index.static_query.encode(list(QUERIES.values())).dense
    for i, qid in enumerate(QUERIES):
        top = [docids.index(d) for d in sorted(bm25[qid], key=lambda d: (-bm25[qid][d], d))]
        assert len(top) == docs
        centroid = vectors[top].mean(axis=0)
        q = static[i] / np.linalg.norm(static[i]) + weight * centroid / np.linalg.norm(centroid)
        q /= np.linalg.norm(q)
        scores = vectors @ q
        want = np.argsort(-scores, kind="stable")[:10]
        assert list(run[qid]) == [docids[j] for j in want], qid
        np.testing.assert_allclose(list(run[qid].values()), scores[want], rtol=1e-5, atol=1e-6)
        # the feedback moved the query: the static route alone ranks otherwise
        assert float(q @ static[i] / np.linalg.norm(static[i])) < 0.9999


def test_weight_zero_is_the_static_dense_route(tiny_bundle):
    bundle = open_bundle(tiny_bundle)
    cfg = _with_feedback(bundle.retrieval, feedback_weight=0.0)
    found = build_searchers(bundle.index, cfg, bundle.encoder, bundle.bm25, modes=["dense_static", "dense_feedback"])
    plain, fed = found["dense_static"].search(QUERIES, 20), found["dense_feedback"].search(QUERIES, 20)
    for qid in QUERIES:
        assert list(plain[qid]) == list(fed[qid])
        np.testing.assert_allclose(list(plain[qid].values()), list(fed[qid].values()), rtol=1e-5)


def test_hybrid_fast_hands_its_bm25_hits_to_the_feedback_route(tiny_bundle):
    """BM25 is searched once per query batch (the fusion hands its hits over), and the array path
    and the dict path of the fusion give the same run."""
    bundle = open_bundle(tiny_bundle)
    fast = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, modes=["hybrid_fast"])["hybrid_fast"]
    routes = dict(zip(bundle.retrieval.fusion.fast_runs, fast.searchers, strict=True))
    assert routes["dense_feedback"].source is routes["bm25"] and fast.on_arrays
    calls = []
    source = routes["bm25"]
    original = source.search_arrays

    def counted(batch, k):
        calls.append(k)
        return original(batch, k)

    source.search_arrays = counted
    arrays = fast.search_batch(QueryBatch.from_dict(QUERIES), 10)
    assert calls == [bundle.retrieval.fusion.fast_depth]  # the fusion's own BM25 search, nothing more
    standalone = routes["dense_feedback"].search_batch(QueryBatch.from_dict(QUERIES), 10)
    assert calls[1:] == [bundle.retrieval.fusion.feedback_docs]  # alone, it searches its source itself
    fast.on_arrays = False
    dicts = fast.search_batch(QueryBatch.from_dict(QUERIES), 10)
    for qid in QUERIES:
        assert list(arrays[qid]) == list(dicts[qid])
        # the compiled feedback query (array path) and the numpy one (dict path) agree to float32 rounding
        np.testing.assert_allclose(list(arrays[qid].values()), list(dicts[qid].values()), rtol=1e-5)
        assert set(standalone[qid]) & set(arrays[qid])


def test_fusion_learning_feeds_the_route_from_a_bm25_run(tiny_bundle):
    """The index stage learns hybrid_fast's weights on a BM25 run read from the bm25 stage: the feedback
    route it scores there is the served one, given the same BM25 hits."""
    from uniret.evaluation.fusion_learning import tuning_runs

    bundle = open_bundle(tiny_bundle)
    cfg = _with_feedback(bundle.retrieval, fast_shortlist=0.0)
    found = build_searchers(bundle.index, cfg, bundle.encoder, bundle.bm25, modes=["bm25", "dense_feedback"])
    bm25_run = found["bm25"].search(QUERIES, 100)
    served = found["dense_feedback"].search(QUERIES, 50)
    from uniret.retrieval.encoding import EncodedTexts

    encoded = EncodedTexts(dense=bundle.index.doc_vectors, sparse=None)
    runs = tuning_runs(QUERIES, bundle.index.docids, encoded, bundle.encoder, cfg, ["dense_feedback"], bm25_run,
                       None, None, bundle.index.static_query)
    for qid in QUERIES:
        top = sorted(runs["dense_feedback"][qid], key=lambda d: -runs["dense_feedback"][qid][d])[:50]
        assert top == list(served[qid]), qid


def test_a_bundle_keeps_the_runs_its_weights_were_learned_for(tiny_bundle, tmp_path):
    bundle_dir = tmp_path / "bundle"
    shutil.copytree(tiny_bundle, bundle_dir)
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    learned = manifest["fusion"]["modes"]["hybrid_fast"]
    assert learned["runs"] == ["bm25", "lexical_static", "dense_feedback"]
    learned["runs"] = ["bm25", "lexical_static", "dense_static"]  # as a bundle built before dense_feedback
    (bundle_dir / "manifest.json").write_text(json.dumps(manifest))
    current = open_bundle(tiny_bundle).retrieval  # today's params: dense_feedback
    older = open_bundle(bundle_dir, current)
    assert older.retrieval.fusion.fast_runs == ["bm25", "lexical_static", "dense_static"]
    fast = build_searchers(older.index, older.retrieval, older.encoder, older.bm25, modes=["hybrid_fast"])["hybrid_fast"]
    assert [type(s).__name__ for s in fast.searchers][2] == "StaticRouteSearcher"


def test_feedback_settings_are_checked():
    from uniret.config.retrieval import FusionConfig

    for bad in ({"feedback_docs": 0}, {"feedback_weight": -0.1}):
        with pytest.raises(ValueError, match="feedback_docs must be >= 1 and feedback_weight >= 0"):
            FusionConfig(**bad).validate()
