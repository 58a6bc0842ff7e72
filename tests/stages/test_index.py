"""index stage on tiny real data: a warmup checkpoint from the models factory in, a loadable bundle
out; its searchers, the evaluate run source, and the failure modes (no checkpoint)."""

from __future__ import annotations

import copy
import json

import pytest
import scipy.sparse as sp

from uniret.config.models import ModelConfig
from uniret.config.params import Params
from uniret.data.beir import BeirDataset
from uniret.data.slicing import write_slice
from uniret.retrieval.base import encode_queries
from uniret.retrieval.bundle import open_bundle
from uniret.retrieval.lexical import LexicalSearcher, MemoryImpactIndex
from uniret.runtime import MANIFEST, VALIDATED_DATA, StageContext
from uniret.stages import index as index_stage
from uniret.utils.files import atomic_write_json

EVAL = ["scifact", "nfcorpus"]
BUNDLE_FILES = ["manifest.json", "onnx/query.onnx", "onnx/doc.onnx", "tokenizer", "dense.faiss", "dense.npy", "impact",
                "impacts.npz", "bm25", "docids.json"]


def _small_ctx(tiny_ctx, bm25_signal: str | None = None) -> StageContext:
    """tiny_ctx with two eval datasets (keeps the bm25 stage and the run source short), and
    hybrid_bm25's BM25 signal set to `bm25_signal` when given."""
    raw = copy.deepcopy(tiny_ctx.params.raw)
    raw["data"]["eval_datasets"] = EVAL
    if bm25_signal is not None:
        raw["retrieval"]["fusion"]["bm25_signal"] = bm25_signal
    params = Params(raw=raw, profile=tiny_ctx.profile, path=tiny_ctx.params.path)
    return StageContext(params=params, data_root=tiny_ctx.data_root, artifacts=tiny_ctx.artifacts)


def _validated(ctx, shared_data):
    """Stand-in for the validate stage's outputs: tiny slices plus a manifest."""
    data = ctx.params.section("data")
    out = ctx.stage_dir("validate")
    for name in dict.fromkeys([data.train_dataset, *data.eval_datasets]):
        write_slice(BeirDataset(shared_data / name, name), out / VALIDATED_DATA / name, data.slice)
    atomic_write_json(out / MANIFEST, {"stage": "validate", "fixture": True})


@pytest.fixture(scope="module")
def built(tmp_path_factory, shared_data, repo_root):
    """Run validate (fixture), bm25 (real), a factory checkpoint as warmup, then the index stage."""
    from uniret.models.factory import build_model, save_model
    from uniret.runtime import make_context
    from uniret.stages import bm25

    tmp = tmp_path_factory.mktemp("index-stage")
    # the RM3 signal (not the default): the index stage then searches the dev sets with RM3 itself
    ctx = _small_ctx(make_context(repo_root / "params.yaml", "tiny", str(shared_data), tmp / "artifacts"),
                     bm25_signal="bm25_rm3")
    _validated(ctx, shared_data)
    bm25.run(ctx)
    model = build_model(ModelConfig(arch="unifier", backbone="splade-tiny", query_max_length=32, doc_max_length=128))
    save_model(model, ctx.stage_dir("warmup") / "model")
    atomic_write_json(ctx.stage_dir("warmup") / MANIFEST, {"stage": "warmup", "fixture": True})
    metrics = index_stage.run(ctx)
    return ctx, metrics


@pytest.mark.slow
def test_index_stage_writes_a_complete_bundle(built):
    ctx, metrics = built
    bundle = ctx.stage_dir("index") / "bundle"
    for name in BUNDLE_FILES:
        assert (bundle / name).exists(), name
    manifest = json.loads((bundle / "manifest.json").read_text())
    corpus = list(ctx.dataset("scifact").iter_corpus())
    assert manifest["metrics"]["num_docs"] == len(corpus) == len(json.loads((bundle / "docids.json").read_text()))
    assert manifest["model"]["source_stage"] == "warmup"
    assert manifest["model"]["config"]["arch"] == "unifier"
    assert manifest["index_types"] == {"dense": "faiss-flat", "lexical": "lucene-impact", "bm25": "lucene-bm25"}
    m = manifest["metrics"]
    assert m["mean_active_terms_doc"] > 1 and m["bytes_per_doc_dense"] >= 4 * m["dense_dim"]
    assert m["bytes_per_doc_sparse"] > 0 and m["impact_docs_indexed"] + m["impact_docs_empty"] == len(corpus)
    for key in ("query_dense_min_cosine", "doc_dense_min_cosine", "query_sparse_min_cosine", "doc_sparse_min_cosine"):
        assert manifest["parity"][key] >= 0.9999
    assert metrics["parity"] == manifest["parity"]
    assert (ctx.stage_dir("index") / MANIFEST).is_file()
    assert not list(ctx.stage_dir("index").glob(".teacher-*"))  # the distillation's dense graph is not an output
    # hybrid_bm25's weights were learned over the RM3-expanded BM25 signal the params chose
    entry = manifest["fusion"]["modes"]["hybrid_bm25"]
    assert entry["runs"] == ["lexical", "dense", "bm25_rm3"] and 0.0 <= entry["dev_single"]["bm25_rm3"] <= 1.0
    # another corpus gets weights learned on the other corpora's dev sets alone (NFCorpus dev here)
    assert entry["zero_shot_sets"] == ["nfcorpus/dev"] and len(entry["zero_shot_weights"]) == 3
    assert sum(entry["zero_shot_weights"]) == pytest.approx(1.0)
    from uniret.retrieval.bundle import fusion_weights_of

    assert fusion_weights_of(manifest, other_corpus=True)["hybrid_bm25"] == entry["zero_shot_weights"]
    assert fusion_weights_of(manifest)["hybrid_bm25"] == entry["weights"]
    # the static tower was fine-tuned on the train queries outside the dev carve
    static = manifest["static_query"]
    assert static["finetune_queries"] > 0 and len(static["finetune_loss_by_epoch"]) == 2


@pytest.mark.slow
def test_a_bundle_built_before_the_bm25_signal_setting_keeps_plain_bm25(built, tmp_path):
    """Its learned hybrid_bm25 weights fuse plain BM25 (and its BM25 index may lack the document
    vectors RM3 reads), so opening it must not take the signal from anywhere but its manifest."""
    import shutil

    ctx, _ = built
    old = tmp_path / "bundle"
    shutil.copytree(ctx.stage_dir("index") / "bundle", old)
    manifest = json.loads((old / "manifest.json").read_text())
    del manifest["params"]["retrieval"]["fusion"]["bm25_signal"]
    (old / "manifest.json").write_text(json.dumps(manifest))
    assert open_bundle(old).retrieval.fusion.bm25_signal == "bm25"
    assert open_bundle(ctx.stage_dir("index") / "bundle").retrieval.fusion.bm25_signal == "bm25_rm3"


@pytest.mark.slow
def test_bundle_loads_into_searchers_that_work(built):
    ctx, _ = built
    bundle = open_bundle(ctx.stage_dir("index") / "bundle")
    from uniret.retrieval.modes import build_searchers

    searchers = build_searchers(bundle.index, bundle.retrieval, bundle.encoder, bundle.bm25, bundle.has_gate)
    # every configured mode but clear: a UnifieR bundle records no CLEAR weight (bm25_weight)
    assert bundle.index.bm25_weight is None
    assert sorted(searchers) == sorted(m for m in ctx.params.section("retrieval").modes if m != "clear")
    queries = ctx.dataset("scifact").split_queries("test")
    batch = encode_queries(queries, bundle.encoder)
    docids = set(bundle.index.docids)
    for mode, searcher in searchers.items():
        run = searcher.search_batch(batch, 10)
        assert set(run) == set(queries), mode
        assert all(set(h) <= docids and len(h) <= 10 for h in run.values()), mode
        assert sum(len(h) for h in run.values()) > 0, mode
    # the bundle's Lucene impact index ranks exactly as its impacts.npz twin
    twin = MemoryImpactIndex.from_impacts(bundle.index.docids, sp.load_npz(bundle.path / "impacts.npz"),
                                          bundle.retrieval.lexical.quant)
    lucene_run = searchers["lexical"].search_batch(batch, 10)
    memory_run = LexicalSearcher(twin).search_batch(batch, 10)
    for qid in queries:
        assert list(lucene_run[qid].values()) == pytest.approx(list(memory_run[qid].values()), rel=1e-6)


@pytest.mark.slow
def test_load_searchers_and_the_evaluate_run_source(built):
    from uniret.evaluation.bundle_source import BundleSource
    from uniret.retrieval.bundle import load_searchers

    ctx, _ = built
    searchers = load_searchers(ctx.stage_dir("index") / "bundle", modes=["uni"])
    run = searchers["uni"].search({"q": "vitamin D and bone density"}, 5)
    assert len(run["q"]) == 5

    source = BundleSource()
    runs = source.runs(ctx)
    expected_systems = [m for m in ctx.params.section("retrieval").modes if m not in ("bm25", "clear")]
    assert sorted(runs) == sorted(expected_systems)
    for system in expected_systems:
        assert sorted(runs[system]) == sorted(EVAL)
        nf_queries = ctx.dataset("nfcorpus").split_queries("test")
        assert set(runs[system]["nfcorpus"]) == set(nf_queries)
    # the bundle's own corpus is searched from the bundle (Lucene or, under lexical_backend auto on a
    # small corpus, its impacts.npz twin), never re-encoded
    assert source.provenance["scifact"]["lexical"].startswith("bundle ")
    assert "in-memory" in source.provenance["nfcorpus"]["lexical"]
    # the ONNX encodings of the zero-shot corpus are cached for the next evaluate run
    cache = ctx.artifacts / ctx.params.section("encoding").cache_dir
    labels = [json.loads(p.read_text()).get("label") for p in cache.glob("*/meta.json")]
    # the index stage encodes its train corpus and the dev corpora it tunes fusion on (NFCorpus dev);
    # evaluate finds those in the cache and encodes nothing again, so no bundle/ entry is added
    assert labels.count("index/scifact") == 1 and labels.count("index/nfcorpus") == 1
    assert not any(label.startswith("bundle/") for label in labels)
    again = BundleSource().runs(ctx)
    assert again["uni"]["nfcorpus"] == runs["uni"]["nfcorpus"]


@pytest.mark.slow
def test_the_evaluate_source_encodes_corpora_at_the_corpus_pass_batch_size(built, monkeypatch):
    """Like the index stage, not at the bundle's query batch size: an int8 document graph's encodings
    depend on the batch (one activation scale per batch), and the cache key says which batch made them."""
    import uniret.retrieval.corpus_cache as corpus_cache
    import uniret.retrieval.sharded as sharded
    from uniret.evaluation.bundle_source import BundleSource, bundle_encoder_key
    from uniret.retrieval.bundle import ONNX_DIR

    ctx, _ = built
    batch = ctx.params.section("encoding").batch_size
    assert batch != ctx.params.section("retrieval").query_batch_size  # else this test shows nothing
    keys, batches = [], []
    monkeypatch.setattr(corpus_cache, "cached_corpus_encoding",  # no cache: encode every corpus
                        lambda root, key, path, ids, encode, label: keys.append(key) or encode())
    real = sharded.encode_corpus

    def spy(encoder, spec, *args, **kwargs):
        batches.append((encoder.batch_size, spec.batch_size))
        return real(encoder, spec, *args, **kwargs)

    monkeypatch.setattr(sharded, "encode_corpus", spy)
    source = BundleSource()
    source.runs(ctx)
    bundle = ctx.stage_dir("index") / "bundle"
    manifest = json.loads((bundle / "manifest.json").read_text())
    assert batches == [(batch, batch)]  # nfcorpus (scifact is the bundle's own corpus)
    assert keys == [bundle_encoder_key(manifest, bundle / ONNX_DIR, batch)]


def test_find_checkpoint_prefers_the_most_trained_stage(tiny_ctx):
    for stage in ("warmup", "continual"):
        (tiny_ctx.stage_dir(stage) / "model").mkdir(parents=True)
    assert index_stage.find_checkpoint(tiny_ctx, "auto")[0] == "continual"
    assert index_stage.find_checkpoint(tiny_ctx, "warmup")[0] == "warmup"
    with pytest.raises(FileNotFoundError, match="distill"):
        index_stage.find_checkpoint(tiny_ctx, "distill")


def test_bundle_records_the_clear_weight_of_the_recipe_that_trained_the_model(tiny_ctx):
    from uniret.runtime import MANIFEST as STAGE_MANIFEST
    from uniret.utils.files import atomic_write_json

    model_dir = tiny_ctx.stage_dir("warmup") / "model"
    model_dir.mkdir(parents=True)
    (model_dir / "weights.bin").write_bytes(b"w")
    clear_weight = tiny_ctx.params.section("model").recipes["clear"].bm25_weight
    for recipe, weight, mode in (("clear", clear_weight, "clear"), ("unifier", None, "uni")):
        atomic_write_json(tiny_ctx.stage_dir("warmup") / STAGE_MANIFEST, {"stage": "warmup", "recipe": recipe})
        info = index_stage._model_info(tiny_ctx, object(), "warmup", model_dir)
        assert (info["recipe"], info["bm25_weight"], info["serve_mode"]) == (recipe, weight, mode)
    assert weight is None and tiny_ctx.params.section("model").recipes["clear"].bm25_weight == 0.5


def test_index_without_checkpoint_fails_and_writes_nothing(tiny_ctx):
    with pytest.raises(FileNotFoundError, match="no checkpoint found"):
        index_stage.run(tiny_ctx)
    assert not tiny_ctx.stage_dir("index").exists()


@pytest.mark.slow
def test_evaluate_stage_scores_every_bundle_mode(built, monkeypatch):
    from uniret.evaluation import sources
    from uniret.stages import evaluate

    ctx, _ = built
    # only the sources this test is about (the torch-model sources re-encode every corpus)
    monkeypatch.setattr(evaluate, "RUN_SOURCES", {k: sources.RUN_SOURCES[k] for k in ("bm25", "bundle")})
    evaluate.run(ctx)
    doc = json.loads((ctx.stage_dir("evaluate") / "metrics.json").read_text())
    modes = [m for m in ctx.params.section("retrieval").modes if m not in ("bm25", "clear")]
    for dataset in EVAL:
        systems = doc["datasets"][dataset]
        assert {"bm25", *modes} <= set(systems)
        assert 0.0 <= systems["uni"]["ndcg@10"] <= 1.0
    # SPLADE-tiny's lexicon head is trained: on a 300-doc SciFact slice it ranks far above chance
    assert doc["datasets"]["scifact"]["lexical"]["ndcg@10"] > 0.4
    assert (ctx.stage_dir("evaluate") / "runs" / "uni" / "nfcorpus.trec").is_file()


@pytest.mark.slow
def test_a_rerun_reads_the_corpus_encodings_of_the_same_checkpoint_from_the_cache(built, monkeypatch):
    """The corpus encodings and the static tower's token vectors (a pass over the whole vocabulary)."""
    from uniret.retrieval.static_query import STATIC_DIR, TOWER_FILE
    from uniret.training import static_tower

    ctx, first = built
    assert first["corpus_encode_docs_per_s"] > 0  # the first run encoded
    bundle = ctx.stage_dir("index") / "bundle"
    before = {name: (bundle / name).read_bytes() for name in ("dense.faiss", f"{STATIC_DIR}/{TOWER_FILE}")}

    def no_encoding(*args, **kwargs):
        raise AssertionError("the index stage encoded what its cache holds")

    monkeypatch.setattr(index_stage, "encode_corpus", no_encoding)
    monkeypatch.setattr(static_tower, "token_vectors", no_encoding)
    again = index_stage.run(ctx)
    assert again["corpus_encode_docs_per_s"] is None
    assert {name: (bundle / name).read_bytes() for name in before} == before


def test_a_folder_without_manifest_is_not_a_bundle(tmp_path):
    from uniret.retrieval.bundle import load_searchers

    with pytest.raises(FileNotFoundError, match="not an index bundle"):
        load_searchers(tmp_path)


@pytest.mark.slow
def test_the_bundle_records_every_files_checksum(built):
    from uniret.registry.integrity import SUMS, read_checksums, verify_bundle

    ctx, _ = built
    bundle = ctx.stage_dir("index") / "bundle"
    files = sorted(p.relative_to(bundle).as_posix() for p in bundle.rglob("*") if p.is_file() and p.name != SUMS)
    assert sorted(read_checksums(bundle)) == files and "onnx/query.onnx" in files
    assert verify_bundle(bundle) == len(files)
