"""lab/dev_levers.py: the fusion normalisations it compares, on hand-made scores."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest


@pytest.fixture(scope="module")
def levers(repo_root):
    spec = importlib.util.spec_from_file_location("dev_levers", repo_root / "lab" / "dev_levers.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclass looks its module up there
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


FLOOR = {"lexical": 0.0, "bm25": 0.0, "dense": -20.0}


def test_minmax_spans_the_query_and_misses_get_zero(levers):
    values, missing = levers.normalise("minmax", "bm25", np.array([9.0, 5.0, 1.0]), FLOOR)
    assert values.tolist() == [1.0, 0.5, 0.0] and missing == 0.0


def test_theoretical_minmax_measures_from_the_floor(levers):
    # dense = 20 x cosine: 10 and 5 over the floor -20 are 1 and 25/30, not min-max's 1 and 0
    values, missing = levers.normalise("theoretical_minmax", "dense", np.array([10.0, 5.0]), FLOOR)
    assert values == pytest.approx([1.0, 25 / 30]) and missing == 0.0


def test_zscore_gives_a_missing_doc_the_lowest_retrieved_value(levers):
    values, missing = levers.normalise("zscore", "lexical", np.array([3.0, 2.0, 1.0]), FLOOR)
    assert values.mean() == pytest.approx(0.0) and values.std() == pytest.approx(1.0)
    assert missing == pytest.approx(values.min())


def test_rrf_reads_ranks_only(levers):
    a, _ = levers.normalise("rrf", "bm25", np.array([100.0, 1.0]), FLOOR)
    b, _ = levers.normalise("rrf", "bm25", np.array([2.0, 1.9]), FLOOR)
    assert a.tolist() == b.tolist() == [1 / (levers.RRF_K + 1), 1 / (levers.RRF_K + 2)]


def test_fused_ndcg_ranks_by_the_weighted_sum(levers):
    ds = levers.DevSet("toy/dev", {"q": {"d2": 1}}, {"q": "x"}, ["d1", "d2"], np.zeros((2, 2)),
                       {"lexical": {"q": {"d1": 2.0, "d2": 1.0}}, "dense": {"q": {"d1": 1.0, "d2": 3.0}},
                        "bm25": {"q": {"d1": 5.0, "d2": 4.0}}})
    matrices = levers._matrices("minmax", ds, FLOOR)
    assert levers._fused_ndcg(matrices, ds.qrels, (0.0, 1.0, 0.0)) == pytest.approx(1.0)  # dense puts d2 first
    assert levers._fused_ndcg(matrices, ds.qrels, (0.5, 0.0, 0.5)) < 1.0  # lexical and BM25 put d1 first


def test_wise_checkpoint_interpolates_trained_and_pretrained_weights(levers, tmp_path):
    import torch

    from uniret.config.models import ModelConfig
    from uniret.models.factory import build_model, load_model, save_model

    start = build_model(ModelConfig(arch="splade", backbone="splade-tiny"))
    pretrained = {k: v.clone() for k, v in start.state_dict().items()}
    with torch.no_grad():  # stands for training: every weight moves by +1
        for p in start.parameters():
            p.add_(1.0)
    save_model(start, tmp_path / "trained")
    trained_names = dict(start.named_parameters())  # the weights that moved (buffers did not)
    for alpha in (0.0, 0.25, 1.0):
        levers.wise_checkpoint(tmp_path / "trained", alpha, tmp_path / f"a{alpha}")
        mixed, _ = load_model(tmp_path / f"a{alpha}")
        for name, value in mixed.state_dict().items():
            if value.is_floating_point() and name in trained_names:
                assert torch.allclose(value, pretrained[name] + alpha, atol=1e-6), (alpha, name)
    with pytest.raises(SystemExit, match="alpha must be in"):
        levers.wise_checkpoint(tmp_path / "trained", 1.5, tmp_path / "bad")


def _prf_set(levers):
    import scipy.sparse as sp

    from uniret.retrieval.encoding import EncodedTexts

    dense = np.array([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], dtype=np.float32)
    sparse = sp.csr_matrix(np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0], [0.0, 1.0, 1.0]], dtype=np.float32))
    query = EncodedTexts(dense=np.array([[1.0, 0.0]], dtype=np.float32),
                         sparse=sp.csr_matrix(np.array([[1.0, 0.0, 0.0]], dtype=np.float32)))
    runs = {"lexical": {"q": {"a": 1.0}}, "dense": {"q": {"a": 1.0, "c": 0.6, "b": 0.0}},
            "bm25": {"q": {"c": 3.0, "a": 2.0, "b": 1.0}}}
    return levers.DevSet("toy/dev", {"q": {"b": 1}}, {"q": "x"}, ["a", "b", "c"], dense, runs, sparse, query)


def test_feedback_moves_each_head_toward_the_fused_top_documents(levers):
    ds = _prf_set(levers)
    bm25_only = (0.0, 0.0, 1.0)  # the fused top 1 is c
    fused_top = levers.fused_top_rows(ds, bm25_only)
    assert fused_top == {"q": [2, 0, 1]}  # c, a, b
    plain = levers.feedback_runs(ds, fused_top, 1, 0.0, 0.0, 0)
    assert plain["dense"]["q"] == pytest.approx({"a": 1.0, "b": 0.0, "c": 0.6})
    assert plain["lexical"]["q"] == pytest.approx({"a": 1.0, "b": 0.0, "c": 0.0})
    fed = levers.feedback_runs(ds, fused_top, 1, 0.5, 1.0, 1)
    # dense: q + 0.5 c = (1.3, 0.4), rescaled to |q| = 1; b now scores 0.4 / |(1.3, 0.4)|
    norm = np.hypot(1.3, 0.4)
    assert fed["dense"]["q"] == pytest.approx({"a": 1.3 / norm, "b": 0.4 / norm, "c": (0.78 + 0.32) / norm})
    # lexicon: c's feedback (0, 1, 1) kept to its top term (entry 1), scaled to the query's mass 1
    assert fed["lexical"]["q"] == pytest.approx({"b": 2.0, "a": 1.0, "c": 1.0})
    assert list(fed["lexical"]["q"])[0] == "b"  # the judged document rises to the top


def test_prf_reports_each_setting_against_no_feedback(levers):
    # served weights: half dense, half BM25. Without feedback: dense a 1, c 0.6, b 0 and BM25 c 1,
    # a 0.5, b 0 (min-max) fuse to c 0.8, a 0.75, b 0: the judged b is third, nDCG@10 1 / log2(4)
    settings = [(1, 0.5, 0.0, 0), (1, 0.0, 1.0, 1)]
    out = levers.prf([_prf_set(levers)], (0.0, 0.5, 0.5), settings=settings)
    assert out["no_feedback"]["dev_ndcg@10"] == pytest.approx(0.5)
    assert [(r["k"], r["beta_dense"], r["beta_lex"], r["terms"]) for r in out["settings"]] == settings
    # dense feedback from c lifts b to 0.29 but not past a and c; the lexicon has weight 0 here
    assert [r["dev_ndcg@10"] for r in out["settings"]] == pytest.approx([0.5, 0.5])
    assert out["best_gain"] == pytest.approx(0.0)


def test_bm25_signal_swaps_the_fusions_bm25_run_and_indexes_again_for_rm3(levers, shared_data, tmp_path):
    """On a SciFact slice whose stage index has no document vectors: the default variant reproduces
    the stage run's scores exactly, RM3 runs on a temporary index with vectors and ranks differently."""
    import json
    from itertools import islice

    from uniret.config.sections import Bm25Config
    from uniret.data.beir import BeirDataset, read_qrels
    from uniret.lexical.bm25 import Bm25Searcher
    from uniret.lexical.indexing import write_lucene_index

    scifact = BeirDataset(shared_data / "scifact")
    qrels_all = read_qrels(shared_data / "scifact" / "qrels" / "test.tsv")
    qids = sorted(qrels_all)[:30]
    qrels = {q: qrels_all[q] for q in qids}
    wanted = {d for q in qids for d in qrels[q]}
    docs = [d for d in scifact.iter_corpus() if d.id in wanted]
    docs += list(islice((d for d in scifact.iter_corpus() if d.id not in wanted), 400))
    root = tmp_path / "data" / "mini"
    root.mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps({"_id": d.id, "title": d.title, "text": d.text}) + "\n"
                                               for d in docs))
    queries = {q: t for q, t in scifact.split_queries("test").items() if q in qrels}
    stage_index = tmp_path / "artifacts" / "bm25" / "indexes" / "mini"
    write_lucene_index(((d.id, d.contents) for d in docs), stage_index, ["-stemmer", "porter"], 1, 500)
    cfg = Bm25Config(threads=1)
    with Bm25Searcher(stage_index, cfg) as searcher:
        stage_run = searcher.search(queries, 1000, progress=False)
    empty = {q: {} for q in queries}
    ds = levers.DevSet("mini/dev", qrels, queries, [d.id for d in docs], np.zeros((len(docs), 2)),
                       {"lexical": empty, "dense": empty, "bm25": stage_run})
    variants = [(0.9, 0.4, None), (0.9, 0.4, (10, 10, 0.5))]
    out = levers.bm25_signal([ds], tmp_path / "artifacts", tmp_path / "data", cfg, 0.5, variants=variants)
    plain, rm3 = out["variants"]
    stage_alone = levers.evaluate_run(qrels, stage_run, ["ndcg@10"], True)[1]["ndcg@10"]
    assert plain["alone"]["mini/dev"] == pytest.approx(stage_alone, abs=1e-5)
    assert plain["dev_ndcg@10"] == out["stage_run"]["dev_ndcg@10"]
    assert rm3["rm3"] == {"fb_terms": 10, "fb_docs": 10, "original_query_weight": 0.5}
    assert rm3["alone"]["mini/dev"] != plain["alone"]["mini/dev"]  # the expansion changed the rankings
    assert out["best"] in out["variants"]


def test_paired_scores_the_served_fusion_per_query_and_compares_the_bundles(levers):
    # the toy set: with half dense, half BM25 the fusion ranks c, a, b (b judged: 1 / log2(4));
    # BM25 alone ranks c, a, b too; dense alone a, c, b; the lexicon returns only a (b missed: 0)
    ds = _prf_set(levers)
    scores = levers.served_per_query([ds], (0.0, 0.5, 0.5))
    assert scores["toy/dev"]["hybrid_bm25"] == pytest.approx({"q": 0.5})
    assert scores["toy/dev"]["bm25"] == pytest.approx({"q": 0.5})
    assert scores["toy/dev"]["lexical"] == {"q": 0.0}
    # another bundle whose dense head ranks b first, served with all weight on it
    better = levers.DevSet("toy/dev", ds.qrels, ds.queries, ds.docids, ds.dense,
                           {**ds.runs, "dense": {"q": {"b": 2.0, "a": 1.0, "c": 0.0}}}, ds.sparse, ds.query_vectors)
    out = levers.paired(scores, levers.served_per_query([better], (0.0, 1.0, 0.0)), resamples=50, seed=0)
    assert out["hybrid_bm25"]["diff"] == pytest.approx(0.5)  # 0.5 -> 1.0 on the one query
    assert out["dense"]["diff"] == pytest.approx(0.5)
    assert out["lexical"]["diff"] == 0.0
    with pytest.raises(SystemExit, match="different dev sets"):
        levers.paired(scores, {"other/dev": scores["toy/dev"]}, resamples=10, seed=0)
