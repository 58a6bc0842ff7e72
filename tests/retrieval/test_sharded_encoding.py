"""Sharded corpus encoding: the plan, the per-shard + merge functions a kfp ParallelFor calls, and
the index stage with 2 shards giving the same top-10 as the unsharded bundle for every test query."""

from __future__ import annotations

import copy
import shutil

import numpy as np
import pytest

from uniret.config import Params
from uniret.core.runs import ranking_differences
from uniret.data.beir import BeirDataset
from uniret.retrieval.bundle import MANIFEST, ONNX_DIR, TOKENIZER_DIR, open_bundle, read_bundle_manifest
from uniret.retrieval.sharded import EncoderSpec, encode_corpus_shard, merge_shard_dirs, shard_plan
from uniret.runtime import StageContext

TOP_K = 10
# Scores may differ by float noise between the two encodings (other SIMD kernels, thread counts):
# rankings must agree except for documents tied within this share of the query's best score.
SCORE_RTOL = 1e-4


def score_tolerance(searcher, best: float) -> float:
    """How far two equal rankings' scores may differ: float noise, or for reciprocal-rank fusion
    (scores made of ranks) one adjacent swap inside each of two fused routes."""
    if getattr(searcher, "method", None) == "rrf":
        c = searcher.rrf_k
        return 2 * (1.0 / (c + 1) - 1.0 / (c + 2))
    return SCORE_RTOL * max(abs(best), 1.0)


def test_shard_plan_covers_every_row_once_in_whole_batches():
    texts = [("x" * n) for n in (5, 1, 9, 3, 3, 7, 2, 8, 6, 4, 10)]
    plan = shard_plan(texts, batch_size=3, num_shards=2)
    assert sorted(i for rows in plan for i in rows) == list(range(len(texts)))
    # batches of the longest-first order alternate between the shards: both get long and short texts
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    assert plan[0] == order[0:3] + order[6:9] and plan[1] == order[3:6] + order[9:]
    assert shard_plan(texts, 3, 1) == [order]
    with pytest.raises(ValueError):
        shard_plan(texts, 3, 0)


@pytest.fixture(scope="module")
def bundle_parts(tiny_bundle):
    """(bundle dir, its corpus dataset, the ONNX encoder spec the index stage used)."""
    manifest = read_bundle_manifest(tiny_bundle)
    artifacts = tiny_bundle.parents[1]
    dataset = BeirDataset(artifacts / "validate" / "datasets" / manifest["train_dataset"])
    encoding = manifest["params"]["encoding"]
    spec = EncoderSpec("onnx", str(tiny_bundle / ONNX_DIR), encoding["batch_size"],
                       manifest["query_max_length"], manifest["doc_max_length"], tokenizer=str(tiny_bundle / TOKENIZER_DIR))
    return tiny_bundle, dataset, spec


def test_per_shard_function_and_merge_reproduce_the_unsharded_encoding(bundle_parts, tmp_path):
    _, dataset, spec = bundle_parts
    docs = list(dataset.iter_corpus())
    ids = [d.id for d in docs]
    whole = spec.build(threads=1).encode([d.contents for d in docs], is_query=False)
    folders = [encode_corpus_shard(spec, dataset.root, k, 2, tmp_path / f"shard-{k}", threads=1) for k in range(2)]
    merged = merge_shard_dirs(folders, ids)
    assert len(merged) == len(ids)
    np.testing.assert_allclose(merged.dense, whole.dense, rtol=1e-5, atol=1e-6)
    assert merged.sparse.shape == whole.sparse.shape
    np.testing.assert_allclose(merged.sparse.toarray(), whole.sparse.toarray(), rtol=1e-5, atol=1e-6)
    # a missing shard, or shards of another corpus, are refused
    with pytest.raises(ValueError, match="complete set"):
        merge_shard_dirs(folders[:1], ids)
    with pytest.raises(ValueError, match="exactly once"):
        merge_shard_dirs(folders, ids[:-1] + ["not-a-doc"])


@pytest.mark.slow
def test_index_stage_with_two_shards_gives_the_same_top10_as_unsharded(bundle_parts, tmp_path, repo_root, shared_data):
    from uniret.retrieval.base import encode_queries
    from uniret.retrieval.modes import build_searchers
    from uniret.runtime import make_context
    from uniret.stages import index as index_stage

    unsharded, dataset, _ = bundle_parts
    artifacts = tmp_path / "artifacts"
    for stage in ("validate", "bm25", "warmup"):
        shutil.copytree(unsharded.parents[1] / stage, artifacts / stage)
    base = make_context(repo_root / "params.yaml", "tiny", str(shared_data), artifacts)
    raw = copy.deepcopy(base.params.raw)
    raw["data"]["eval_datasets"] = [dataset.name]
    raw["distributed"] = {"encode_shards": 2}
    ctx = StageContext(Params(raw=raw, profile="tiny", path=base.params.path), base.data_root, artifacts)
    metrics = index_stage.run(ctx)
    assert metrics["encode_shards"] == 2
    sharded = ctx.stage_dir("index") / "bundle"
    assert (sharded / MANIFEST).is_file()

    queries = dataset.split_queries("test")
    assert queries
    runs, searchers = {}, {}
    for name, path in (("unsharded", unsharded), ("sharded", sharded)):
        b = open_bundle(path)
        searchers[name] = build_searchers(b.index, b.retrieval, b.encoder, b.bm25, b.has_gate)
        batch = encode_queries(queries, b.encoder)
        # twice the depth compared: a document just below the cut still has its score to compare
        runs[name] = {mode: s.search_batch(batch, 2 * TOP_K) for mode, s in searchers[name].items() if mode != "bm25"}
    assert runs["unsharded"].keys() == runs["sharded"].keys() and runs["sharded"]
    exact = 0
    for mode, run in runs["unsharded"].items():
        for qid in queries:
            want, got = run[qid], runs["sharded"][mode][qid]
            tol = score_tolerance(searchers["unsharded"][mode], max(want.values(), default=0.0))
            problems = ranking_differences(want, got, TOP_K, tol)
            assert not problems, f"{mode} query {qid}: sharded top-{TOP_K} differs: {problems}"
            exact += list(want)[:TOP_K] == list(got)[:TOP_K]
    # near-ties are rare: almost every list is the same to the letter
    assert exact >= 0.95 * len(queries) * len(runs["unsharded"])


@pytest.mark.slow
def test_mine_corpus_pass_shards_a_checkpoint_model_in_worker_processes(bundle_parts):
    """mine's corpus pass: 2 torch workers rebuilt from the checkpoint give the in-process encodings;
    a model that is not the checkpoint's whole model (a teacher's channel) stays in process."""
    from uniret.config.models import ModelConfig
    from uniret.models.factory import build_model, load_model
    from uniret.retrieval.encoding import TorchTextEncoder
    from uniret.retrieval.sharded import encode_corpus
    from uniret.stages.mine import _shard_spec

    bundle, dataset, _ = bundle_parts
    checkpoint = bundle.parents[1] / "warmup" / "model"
    model, tokenizer = load_model(checkpoint)
    cfg = model.model_config
    encoder = TorchTextEncoder(model, tokenizer, 16, cfg.query_max_length, cfg.doc_max_length)
    spec = _shard_spec(checkpoint, encoder)
    assert spec is not None and spec.kind == "torch" and spec.batch_size == 16
    other = build_model(ModelConfig(arch="splade", backbone="splade-tiny", query_max_length=16, doc_max_length=32))
    assert _shard_spec(checkpoint, TorchTextEncoder(other, other.tokenizer, 16, 16, 32)) is None

    docs = list(dataset.iter_corpus())[:120]
    texts, ids = [d.contents for d in docs], [d.id for d in docs]
    local = encoder.encode(texts, is_query=False)
    sharded = encode_corpus(encoder, spec, texts, ids, shards=2, threads=1)
    np.testing.assert_allclose(sharded.dense, local.dense, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(sharded.sparse.toarray(), local.sparse.toarray(), rtol=1e-4, atol=1e-5)
