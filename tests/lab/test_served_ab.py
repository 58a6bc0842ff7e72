"""The side-by-side figures of lab/fast_candidates_ab.py, parallel_routes_ab.py and dense_min_docs_ab.py:
ratios are to Lucene's arm, the two route arms of a parallel hybrid_fast return the same runs (one with
a worker, one without), the dense arms switch the dense form before they search."""

from __future__ import annotations

import dataclasses
import threading

import numpy as np
import scipy.sparse as sp

from uniret.config.retrieval import PruningConfig, RetrievalConfig
from uniret.retrieval.faiss_loader import faiss
from uniret.retrieval.lexical import MemoryImpactIndex
from uniret.retrieval.modes import CorpusIndex, build_searchers
from uniret.retrieval.static_query import StaticQueryEncoder


def test_figures_are_ratios_to_lucenes_arm_overall_and_per_round(lab_script):
    ab = lab_script("fast_candidates_ab")
    seconds = {"lucene_bm25": [0.002, 0.002, 0.004, 0.004], "fast": [0.003, 0.003, 0.004, 0.004]}
    figures = ab.arm_figures(seconds, rounds=2)
    assert figures["lucene_bm25"]["p50_vs_lucene_bm25"] == 1.0
    assert figures["fast"]["p50_ms"] == 3.5 and figures["fast"]["p50_vs_lucene_bm25"] == round(3.5 / 3, 3)
    assert figures["fast"]["per_round_vs_lucene_bm25"] == [1.5, 1.0]
    assert ab.paired(seconds, "fast", "lucene_bm25") == {"median_ms": 0.5, "share_faster": 0.5}


def _parallel_fast(n_docs: int = 2000, n_terms: int = 300):
    """hybrid_fast over a random in-memory corpus, built with its independent routes on the worker."""
    rng = np.random.default_rng(3)
    weights = sp.random(n_docs, n_terms, density=0.05, format="csr", random_state=4, dtype=np.float32)
    weights.data = np.ceil(weights.data * 50)  # whole-number impacts, as the bundle's
    docids = [f"d{i}" for i in range(n_docs)]
    vectors = rng.standard_normal((n_docs, 16)).astype(np.float32)
    flat = faiss.IndexFlatIP(16)
    flat.add(vectors)

    class Words:  # "t<i>" is token i
        def __call__(self, texts, **_):
            return {"input_ids": [[int(w[1:]) for w in t.split()] for t in texts]}

    static = StaticQueryEncoder(Words(), rng.standard_normal((n_terms, 16)).astype(np.float32),
                                np.ones(n_terms, dtype=np.float32), max_length=32)
    impacts = MemoryImpactIndex.from_impacts(docids, weights, 100.0)
    index = CorpusIndex(docids=docids, dense=flat, doc_vectors=vectors, lexical=impacts, impacts=impacts,
                        static_query=static)
    cfg = RetrievalConfig(pruning=PruningConfig(parallel_min_docs=0, dense_min_docs=None))
    cfg = dataclasses.replace(cfg, fusion=dataclasses.replace(cfg.fusion, fast_runs=["lexical_static", "dense_static"]))
    return build_searchers(index, cfg, None, modes=["hybrid_fast"])["hybrid_fast"]


def test_the_route_arms_rank_alike_and_only_one_uses_the_worker(lab_script):
    lab_script("fast_candidates_ab")  # parallel_routes_ab imports it by name
    script = lab_script("parallel_routes_ab")
    fast = _parallel_fast()
    assert fast.parallel and fast.away
    reference = fast.searchers[1]  # stands in for Lucene here: the arms only call its search
    arms = script.route_arms(fast, reference, 10)
    route = fast.searchers[fast.away[0]]
    search, threads = route.search_arrays, []
    route.search_arrays = lambda batch, k: (threads.append(threading.current_thread().name), search(batch, k))[1]
    batch = {"q": "t1 t5 t9 t30 t77"}
    in_turn = arms[script.IN_TURN](batch)
    assert threads == [threading.current_thread().name]
    assert arms[script.SIDE_BY_SIDE](batch) == in_turn and len(in_turn["q"]) == 10
    assert threads[1].startswith("uniret-route")


class _Forms:
    """ServedForms' surface the dense arms use: `fast`, and `use` recording each dense switch."""

    def __init__(self, fast):
        self.fast, self.switches = fast, []

    def use(self, sparse: bool, dense: bool) -> None:
        self.switches.append((sparse, dense))


def test_the_dense_arms_switch_the_dense_form_before_each_search(lab_script):
    lab_script("fast_candidates_ab")
    routes = lab_script("parallel_routes_ab")
    script = lab_script("dense_min_docs_ab")
    forms = _Forms(_parallel_fast())
    arms = script.dense_arms(forms, forms.fast.searchers[1], 10)
    names = [f"{w}, dense: {d}" for d, _ in script.DENSE_FORMS for w in (routes.IN_TURN, routes.SIDE_BY_SIDE)]
    assert list(arms) == ["lucene_bm25", *names]
    batch = {"q": "t1 t5 t9 t30 t77"}
    results = {name: arms[name](batch) for name in names}
    assert forms.switches == [(False, False), (False, False), (False, True), (False, True)]
    assert len({str(r) for r in results.values()}) == 1  # this fusion's dense route ignores the switch


def test_pairs_compare_the_dense_forms_and_the_worker_settings(lab_script):
    lab_script("fast_candidates_ab")
    lab_script("parallel_routes_ab")
    script = lab_script("dense_min_docs_ab")
    names = [f"{w}, dense: {d}" for d, _ in script.DENSE_FORMS for w in ("hybrid_fast, routes in turn",
                                                                         "hybrid_fast, lexical_static on the worker")]
    seconds = dict(zip(names, ([0.004, 0.004], [0.003, 0.005], [0.002, 0.002], [0.001, 0.003]), strict=True))
    pairs = script.pairs(seconds)
    assert pairs[f"paired: {names[0]} - {names[2]}"] == {"median_ms": 2.0, "share_faster": 1.0}  # IVF, in turn
    assert pairs[f"paired: {names[1]} - {names[3]}"] == {"median_ms": 2.0, "share_faster": 1.0}  # IVF, worker
    assert pairs[f"paired: {names[0]} - {names[1]}"] == {"median_ms": 0.0, "share_faster": 0.5}  # scan: in turn - worker
    assert len(pairs) == 4


def test_fused_agreement_compares_the_ivf_form_with_the_scan(lab_script):
    script = lab_script("dense_min_docs_ab")

    class Fast:
        dense = False

        def search(self, batch, top):
            (qid, _), = batch.items()
            shift = 1 if self.dense and qid == "b" else 0  # one query loses its 10th document to the 11th
            return {qid: {f"d{i + shift * (i == 9)}": 1.0 / (i + 1) for i in range(top)}}

    fast = Fast()
    forms = _Forms(fast)
    forms.use = lambda sparse, dense: setattr(fast, "dense", dense)
    assert script.fused_agreement(forms, [("a", "x"), ("b", "y")], 10) == 0.95


def test_a_report_opens_with_the_method_the_machine_and_the_time(lab_script):
    ab = lab_script("fast_candidates_ab")
    head = ab.report_head("Title.\n\nHow it was measured,\nover two lines.\n", rounds=3, sizes=[])
    assert head["method"] == "How it was measured,\nover two lines." and head["rounds"] == 3 and head["sizes"] == []
    assert head["machine"]["cpu_cores"] >= 1 and head["at"].endswith("Z")
    assert list(head)[:3] == ["method", "machine", "at"]
