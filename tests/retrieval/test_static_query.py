"""The query side with no transformer, on a real tiny bundle (the index stage built its static/ tables)."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
import scipy.sparse as sp

from uniret.config.modes import QUERY_FREE_MODES
from uniret.core.errors import InputFileError
from uniret.retrieval import onnx_encoder
from uniret.retrieval.bundle import IMPACTS_FILE, open_bundle
from uniret.retrieval.modes import build_searchers
from uniret.retrieval.static_query import STATIC_DIR, TOWER_FILE, WEIGHTS_FILE, load_static_query
from uniret.serving.source import bundle_loader

QUERIES = {"q1": "protein folding in cells", "q2": "vitamin D deficiency and bone density",
           "q3": "the the of and"}


def _hand_scores(static, impacts: sp.csr_matrix, text: str, quant: float) -> dict[int, float]:
    """sum over the query's distinct tokens of round(quant * weight) * impact / quant**2, by doc row."""
    tokens = np.unique(static.token_ids([text])[0])
    q = np.rint(static.token_weights[tokens].astype(np.float64) * quant)
    dense_impacts = impacts[:, tokens].toarray().astype(np.float64)
    scores = dense_impacts @ q / (quant * quant)
    return {i: s for i, s in enumerate(scores) if s > 0}


@pytest.mark.parametrize("backend", ["memory", "lucene"])
def test_weight_table_query_equals_sparse_scoring_of_its_token_bag(tiny_bundle, backend):
    import dataclasses

    bundle = open_bundle(tiny_bundle)
    cfg = dataclasses.replace(bundle.retrieval, lexical_backend=backend)
    bundle = open_bundle(tiny_bundle, cfg)
    static = bundle.index.static_query
    assert static is not None, "the index stage wrote no static/ tables"
    quant = bundle.retrieval.lexical.quant
    impacts = sp.load_npz(tiny_bundle / IMPACTS_FILE).tocsr()  # quantized: round(quant * w)
    searcher = build_searchers(bundle.index, cfg, bundle.encoder, bundle.bm25, modes=["lexical_static"])["lexical_static"]
    run = searcher.search(QUERIES, 1000)
    for qid, text in QUERIES.items():
        expected = _hand_scores(static, impacts, text, quant)
        got = {bundle.index.docids.index(d): s for d, s in run.get(qid, {}).items()}
        assert set(got) == set(expected), qid
        for row, score in got.items():
            assert score == pytest.approx(expected[row], rel=1e-6, abs=1e-9), (qid, row)
    # a stopword-only query carries (almost) no IDF weight: the table, not a model, decides
    assert static.token_weights[static.token_ids(["the"])[0]].max() < 0.1


def test_static_tower_in_the_bundle_gives_the_trained_vectors(tiny_bundle):
    from transformers import AutoTokenizer

    tower = np.load(tiny_bundle / STATIC_DIR / TOWER_FILE).astype(np.float32)
    weights = np.load(tiny_bundle / STATIC_DIR / WEIGHTS_FILE)
    tokenizer = AutoTokenizer.from_pretrained(str(tiny_bundle / "tokenizer"))
    meta = json.loads((tiny_bundle / STATIC_DIR / "static.json").read_text())
    assert tower.shape == (len(tokenizer), meta["dim"]) and weights.shape == (len(tokenizer),)
    assert meta["texts"] > 0 and len(meta["loss_by_epoch"]) == meta["epochs"]
    static = load_static_query(tiny_bundle / STATIC_DIR, tokenizer, 32)
    encoded = static.encode(list(QUERIES.values()))
    for row, text in enumerate(QUERIES.values()):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"][:32]
        expected = tower[ids].sum(axis=0)
        expected /= np.linalg.norm(expected)
        assert float(encoded.dense[row] @ expected) > 0.9999
        assert set(encoded.sparse[row].indices) == {i for i in set(ids) if weights[i] > 0}
    with pytest.raises(ValueError, match="queries only"):
        static.encode(["a document"], is_query=False)
    # the Rust backend path cuts as the transformers call truncates, long texts included
    long = " ".join(["regeneration of zebrafish cardiomyocytes after injury"] * 20)
    for text in [*QUERIES.values(), long, ""]:
        want = tokenizer(text, add_special_tokens=False, truncation=True, max_length=32)["input_ids"]
        assert static.token_ids([text])[0].tolist() == [i for i in want if i not in tokenizer.all_special_ids]


def test_distillation_moved_the_tower_toward_the_query_encoder(tiny_bundle):
    meta = json.loads((tiny_bundle / STATIC_DIR / "static.json").read_text())
    losses = meta["loss_by_epoch"]
    assert losses[-1] < losses[0], losses
    assert meta["text_sources"]["dropped_as_held_out_query"] >= 0 and meta["finite"]


def test_server_answers_the_fast_mode_without_an_onnx_session(tiny_bundle, tmp_path, monkeypatch):
    bundle_dir = tmp_path / "bundle"
    shutil.copytree(tiny_bundle, bundle_dir)
    manifest = json.loads((bundle_dir / "manifest.json").read_text())
    manifest["model"]["serve_mode"] = "hybrid_fast"
    (bundle_dir / "manifest.json").write_text(json.dumps(manifest))
    expected = open_bundle(bundle_dir)
    reference = build_searchers(expected.index, expected.retrieval, expected.encoder, expected.bm25,
                                modes=["hybrid_fast"])["hybrid_fast"].search(QUERIES, 10)

    def no_onnx(*args, **kwargs):
        raise AssertionError("an ONNX Runtime session was created")

    monkeypatch.setattr(onnx_encoder, "inference_session", no_onnx)
    searchers = bundle_loader(None, modes="served")(bundle_dir)
    assert "hybrid_fast" in searchers and set(searchers) <= set(QUERY_FREE_MODES)
    assert "dense" not in searchers and "lexical" not in searchers
    assert searchers["hybrid_fast"].search(QUERIES, 10) == reference
    # a transformer mode needs the query graph: that one loads it, and here trips the guard (reported,
    # as any failure to open the graph, as one error naming the file)
    with pytest.raises(InputFileError, match="query.onnx: .*an ONNX Runtime session was created"):
        bundle_loader(None, modes="all")(bundle_dir)["dense"].search(QUERIES, 10)


def test_another_corpus_is_searched_with_its_own_idf(tiny_bundle):
    """for_corpus: the same tower (same dense query vectors), token weights = BM25 IDF over the new
    documents, worked out by hand for a word only one of them contains."""
    import math

    bundle = open_bundle(tiny_bundle)
    static = bundle.index.static_query
    docs = ["the zebrafish heart regenerates", "the heart of the matter", "the mouse heart", "a fourth text"]
    other = static.for_corpus(docs, 64)
    tok = static.tokenizer
    zebra = tok("zebrafish", add_special_tokens=False)["input_ids"]
    the = tok("the", add_special_tokens=False)["input_ids"][0]
    n = len(docs)
    assert other.token_weights[zebra[0]] == pytest.approx(math.log1p((n - 1 + 0.5) / 1.5), rel=1e-6)
    assert other.token_weights[the] == pytest.approx(math.log1p((n - 3 + 0.5) / 3.5), rel=1e-6)
    assert other.token_weights[tok.cls_token_id] == 0.0
    assert not np.array_equal(other.token_weights, static.token_weights)
    texts = list(QUERIES.values())
    assert np.array_equal(other.encode(texts).dense, static.encode(texts).dense)


def test_fast_routes_search_bm25_in_memory_and_shortlist_dense(tiny_bundle):
    """hybrid_fast's BM25 route holds Lucene's term weights in memory (no Java search), its dense route
    the fast-scan shortlist setting; `fast_bm25: lucene` searches the index, and both rank alike."""
    import dataclasses

    from uniret.retrieval.bm25 import Bm25ModeSearcher
    from uniret.retrieval.bm25_memory import MemoryBm25Searcher, read_bm25_weights

    bundle = open_bundle(tiny_bundle)
    terms, weights = bundle.index.bm25_weights  # written by the index stage, read back at open
    want_terms, want = read_bm25_weights(bundle.index.bm25_dir, bundle.bm25, bundle.index.docids)
    assert terms == want_terms and (weights != want).nnz == 0 and weights.nnz > 0
    runs = {}
    for choice in ("memory", "lucene"):
        cfg = dataclasses.replace(bundle.retrieval, fusion=dataclasses.replace(bundle.retrieval.fusion, fast_bm25=choice,
                                                                               fast_shortlist=1.5))
        fast = build_searchers(bundle.index, cfg, bundle.encoder, bundle.bm25, modes=["hybrid_fast"])["hybrid_fast"]
        routes = dict(zip(cfg.fusion.fast_runs, fast.searchers, strict=True))
        want = MemoryBm25Searcher if choice == "memory" else Bm25ModeSearcher
        assert type(routes["bm25"]) is want and fast.uses_jvm == (choice == "lucene")
        assert routes["dense_feedback"].route.inner.shortlist == cfg.fusion.fast_shortlist > 0
        runs[choice] = fast.search(QUERIES, 10)
    for qid in QUERIES:
        assert list(runs["memory"][qid]) == list(runs["lucene"][qid])
        np.testing.assert_allclose(list(runs["memory"][qid].values()), list(runs["lucene"][qid].values()), atol=1e-4)


def test_bm25_weights_that_disagree_with_the_bundle_are_refused(tiny_bundle, tmp_path):
    from uniret.retrieval.bundle import BM25_TERMS_FILE

    bundle_dir = tmp_path / "bundle"
    shutil.copytree(tiny_bundle, bundle_dir)
    terms = json.loads((bundle_dir / BM25_TERMS_FILE).read_text())
    (bundle_dir / BM25_TERMS_FILE).write_text(json.dumps(terms[:-1]))
    with pytest.raises(InputFileError, match="bm25_weights.npz: shape .* terms"):
        open_bundle(bundle_dir)
