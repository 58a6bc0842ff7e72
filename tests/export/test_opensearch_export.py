"""`uniret export opensearch` on the tiny bundle: every request validates against the engine's
documented fields (schemas/opensearch.yaml), the files agree with each other (dimensions, fields,
ids, weights), and scoring the exported documents as the engine documents it (rank_features:
sum of query weight x feature; knn innerproduct: dot product) gives the bundle's own top-10."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jsonschema
import numpy as np
import pytest
import yaml

from uniret.config.export import OpenSearchExportConfig
from uniret.export.opensearch import MAX_HYBRID_QUERIES, feature_key, search_body

SCHEMAS = yaml.safe_load((Path(__file__).parent / "schemas" / "opensearch.yaml").read_text())
TOP_K = 10


def _check(kind: str, doc) -> None:
    jsonschema.Draft202012Validator({**SCHEMAS[kind], "$defs": SCHEMAS["$defs"]}).validate(doc)


@pytest.fixture(scope="module")
def exported(tiny_bundle, tmp_path_factory, repo_root):
    from uniret.cli import main

    out = tmp_path_factory.mktemp("opensearch") / "export"
    cfg = OpenSearchExportConfig(bulk_docs_per_file=40)
    code = main(["export", "opensearch", "--params", str(repo_root / "params.yaml"), "--bundle", str(tiny_bundle),
                 "--out", str(out), "--previous-index", "uniret-old"])
    assert code == 0
    return out, cfg


def _bulk_docs(out: Path) -> list[tuple[dict, dict]]:
    pairs = []
    manifest = json.loads((out / "manifest.json").read_text())
    for name in manifest["bulk_files"]:
        text = (out / name).read_text()
        assert text.endswith("\n")  # the _bulk API needs the last line terminated
        lines = text.splitlines()
        assert len(lines) % 2 == 0
        pairs += [(json.loads(a), json.loads(b)) for a, b in zip(lines[::2], lines[1::2], strict=True)]
    return pairs


def test_requests_validate_against_the_documented_schemas(exported, tiny_bundle):
    out, _ = exported
    body = json.loads((out / "index.json").read_text())
    _check("index", body)
    _check("pipeline", json.loads((out / "search_pipeline.json").read_text()))
    _check("aliases", json.loads((out / "alias_actions.json").read_text()))
    manifest = json.loads((out / "manifest.json").read_text())
    props = body["mappings"]["properties"]
    dim = props["dense"]["dimension"]
    assert body["settings"]["index"]["knn"] is True and props["sparse"]["type"] == "rank_features"
    assert props["dense"]["space_type"] == "innerproduct"
    docs = _bulk_docs(out)
    bundle_ids = json.loads((tiny_bundle / "docids.json").read_text())
    assert [a["index"]["_id"] for a, _ in docs] == bundle_ids
    for action, source in docs:
        _check("bulk_action", action)
        assert action["index"]["_index"] == manifest["index"]
        assert set(source) <= set(props)  # the mapping is dynamic: strict
        assert len(source["dense"]) == dim
        for key, value in source.get("sparse", {}).items():
            assert "." not in key and value > 0 and math.isfinite(value)
    assert sum("sparse" in s for _, s in docs) > 0.9 * len(docs)
    aliases = json.loads((out / "alias_actions.json").read_text())["actions"]
    assert aliases == [{"remove": {"index": "uniret-old", "alias": manifest["alias"]}},
                       {"add": {"index": manifest["index"], "alias": manifest["alias"], "is_write_index": False}}]


def test_schemas_reject_what_the_engine_would(exported):
    out, _ = exported
    body = json.loads((out / "index.json").read_text())
    body["mappings"]["properties"]["dense"]["method"]["engine"] = "annoy"
    with pytest.raises(jsonschema.ValidationError):
        _check("index", body)
    pipeline = json.loads((out / "search_pipeline.json").read_text())
    pipeline["phase_results_processors"][0]["normalization-processor"]["combination"]["technique"] = "sum"
    with pytest.raises(jsonschema.ValidationError):
        _check("pipeline", pipeline)
    too_many = {"query": {"hybrid": {"queries": [{"knn": {"dense": {"vector": [1.0], "k": 1}}}] * 6}}}
    with pytest.raises(jsonschema.ValidationError):
        _check("query", too_many)


def test_feature_keys_never_hold_a_dot():
    assert feature_key("vitamin", 7) == "vitamin"
    assert feature_key(".", 1012) == "[1012]" and feature_key(" ", 3) == "[3]"


def test_queries_of_each_mode_validate_and_score_like_the_bundle(exported, tiny_bundle):
    """Scored as the engine scores them, the exported docs give the bundle's lexical and dense top-10."""
    from uniret.data.beir import BeirDataset
    from uniret.retrieval.base import encode_queries
    from uniret.retrieval.bundle import open_bundle, read_bundle_manifest
    from uniret.retrieval.modes import build_searchers

    out, cfg = exported
    manifest = json.loads((out / "manifest.json").read_text())
    keys = json.loads((out / "feature_keys.json").read_text())
    pipeline = json.loads((out / "search_pipeline.json").read_text())
    weights = pipeline["phase_results_processors"][0]["normalization-processor"]["combination"]["parameters"]["weights"]
    assert sum(weights) == pytest.approx(1.0) and weights[0] == manifest["hybrid_alpha"]

    docs = _bulk_docs(out)
    ids = [a["index"]["_id"] for a, _ in docs]
    dense = np.array([s["dense"] for _, s in docs])
    sparse = [s.get("sparse", {}) for _, s in docs]

    bundle = open_bundle(tiny_bundle)
    searchers = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, bundle.has_gate,
                                ["lexical", "dense"])
    data = read_bundle_manifest(tiny_bundle)["train_dataset"]
    queries = BeirDataset(tiny_bundle.parents[1] / "validate" / "datasets" / data).split_queries("test")
    batch = encode_queries(queries, bundle.encoder)
    runs = {mode: s.search_batch(batch, TOP_K) for mode, s in searchers.items()}
    quant = manifest["sparse_quant"]
    for i, qid in enumerate(batch.ids):
        one = type(batch.encoded)(dense=batch.encoded.dense[i : i + 1], sparse=batch.encoded.sparse[i : i + 1])
        bodies = {mode: search_body(mode, one, keys, quant, cfg, TOP_K) for mode in ("lexical", "dense", "hybrid")}
        for body in bodies.values():
            _check("query", body)
        assert len(bodies["hybrid"]["query"]["hybrid"]["queries"]) == len(weights) <= MAX_HYBRID_QUERIES
        tokens = bodies["lexical"]["query"]["neural_sparse"]["sparse"]["query_tokens"]
        lexical = np.array([sum(w * d.get(t, 0.0) for t, w in tokens.items()) for d in sparse])
        vector = np.array(bodies["dense"]["query"]["knn"]["dense"]["vector"])
        for mode, scores in (("lexical", lexical), ("dense", dense @ vector)):
            want = runs[mode][qid]
            got = {ids[j]: float(scores[j]) for j in np.argsort(-scores, kind="stable")[:TOP_K] if scores[j] > 0 or
                   mode == "dense"}
            # same documents and the same scores (ties may list in another order)
            assert set(got) == set(want) or list(want.values())[-1] == pytest.approx(
                sorted(got.values())[0], rel=1e-5), f"{mode} {qid}"
            assert sorted(got.values(), reverse=True) == pytest.approx(list(want.values()), rel=1e-4, abs=1e-6)


def test_fast_mode_maps_onto_the_token_weight_table_and_the_static_vector(tiny_bundle, tmp_path, repo_root):
    """hybrid_fast: the exported token weight table scores like the bundle's lexical_static, the static
    tower's vector is the knn clause, and the corpus text feeds the BM25 clause."""
    from uniret.cli import main
    from uniret.retrieval.bundle import open_bundle
    from uniret.retrieval.modes import build_searchers

    corpus = tiny_bundle.parents[1] / "validate" / "datasets" / "scifact" / "corpus.jsonl"
    out = tmp_path / "export"
    assert main(["export", "opensearch", "--params", str(repo_root / "params.yaml"), "--bundle", str(tiny_bundle),
                 "--out", str(out), "--corpus", str(corpus)]) == 0
    cfg = OpenSearchExportConfig()
    manifest = json.loads((out / "manifest.json").read_text())
    keys = json.loads((out / "feature_keys.json").read_text())
    table = json.loads((out / "token_weights.json").read_text())
    index = json.loads((out / "index.json").read_text())
    _check("index", index)
    assert index["mappings"]["properties"]["text"]["type"] == "text"
    runs = manifest["static_query"]["fast_runs"]
    fast = json.loads((out / "search_pipeline_fast.json").read_text())
    _check("pipeline", fast)
    weights = fast["phase_results_processors"][0]["normalization-processor"]["combination"]["parameters"]["weights"]
    assert len(weights) == len(runs) and sum(weights) == pytest.approx(1.0)

    docs = _bulk_docs(out)
    assert all(s["text"] for _, s in docs)
    ids = [a["index"]["_id"] for a, _ in docs]
    sparse = [s.get("sparse", {}) for _, s in docs]
    bundle = open_bundle(tiny_bundle)
    static = bundle.index.static_query
    searcher = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25,
                               modes=["lexical_static"])["lexical_static"]
    query = "protein folding in cells"
    one = static.encode([query])
    if "dense_feedback" in runs:  # as a client does: the BM25 match first, then the feedback query
        from uniret.retrieval.encoding import EncodedTexts
        from uniret.retrieval.feedback import feedback_query

        bm25 = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, modes=["bm25"])["bm25"]
        top = bm25.search({"q": query}, bundle.retrieval.fusion.feedback_docs)["q"]
        rows = np.array([bundle.index.docids.index(d) for d in sorted(top, key=lambda d: (-top[d], d))])
        vector = feedback_query(one.dense[0], lambda r: bundle.index.doc_vectors[r], rows,
                                bundle.retrieval.fusion.feedback_weight)
        one = EncodedTexts(dense=vector[None, :], sparse=one.sparse)
    body = search_body("hybrid_fast", one, keys, manifest["sparse_quant"], cfg, TOP_K, text=query, fast_runs=runs)
    _check("query", body)
    clauses = body["query"]["hybrid"]["queries"]
    assert clauses[runs.index("bm25")] == {"match": {"text": query}}
    tokens = clauses[runs.index("lexical_static")]["neural_sparse"]["sparse"]["query_tokens"]
    # the client's query tokens are the exported table's weights of the query's tokens (quantized)
    for token, weight in tokens.items():
        assert weight == pytest.approx(round(table[token] * manifest["sparse_quant"]) / manifest["sparse_quant"])
    scores = np.array([sum(w * d.get(t, 0.0) for t, w in tokens.items()) for d in sparse])
    want = searcher.search({"q": query}, TOP_K)["q"]
    got = sorted(scores, reverse=True)[:len(want)]
    assert got == pytest.approx(list(want.values()), rel=1e-4, abs=1e-6)
    assert {ids[j] for j in np.argsort(-scores, kind="stable")[:len(want)]} <= set(want) | {
        ids[j] for j in range(len(ids)) if scores[j] == pytest.approx(min(want.values()))}
    dense_run = next(r for r in runs if r.startswith("dense"))
    vector = clauses[runs.index(dense_run)]["knn"]["dense"]["vector"]
    assert vector == pytest.approx([float(x) for x in one.dense[0]])
    # the client's knn vector, scored against the exported documents, ranks as the bundle's route does
    route = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, modes=[dense_run])[dense_run]
    want = route.search({"q": query}, TOP_K)["q"]
    engine = np.array([s["dense"] for _, s in docs]) @ np.array(vector)
    got = [ids[j] for j in np.argsort(-engine, kind="stable")[:TOP_K]]
    assert got[:5] == list(want)[:5] and engine.max() == pytest.approx(max(want.values()), rel=1e-4)
