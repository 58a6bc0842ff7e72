"""The training stages on tiny slices of the real data, run once as a DAG:
validate -> bm25 -> warmup -> mine -> reranker -> continual -> distill -> evaluate.

Every stage runs its real code (Lucene BM25, torch training, faiss / sparse mining, the trained
and zero-shot run sources). Evaluation covers two datasets (SciFact and a zero-shot set) to keep
the module to a few minutes on two cores; the full five-dataset DAG is `make`/`dvc repro`.
"""

from __future__ import annotations

import copy
import json

import pytest

from uniret.config import Params
from uniret.data.negatives import iter_negatives
from uniret.runtime import StageContext, read_manifest
from uniret.stages import run_stage

pytestmark = pytest.mark.slow

TRAINING = ["warmup", "mine", "reranker", "continual", "distill"]
EVAL_DATASETS = ["scifact", "cranfield"]


def _with(ctx: StageContext, artifacts, **sections) -> StageContext:
    """A copy of ctx with raw params sections updated (shallow per section)."""
    raw = copy.deepcopy(ctx.params.raw)
    for name, values in sections.items():
        raw.setdefault(name, {}).update(values)
    return StageContext(Params(raw=raw, profile=ctx.profile, path=ctx.params.path), ctx.data_root, artifacts)


@pytest.fixture(scope="module")
def dag(tmp_path_factory, repo_root, shared_data):
    """The tiny DAG run once; returns the context (recipe unifier) and each stage's result."""
    from uniret.runtime import make_context

    base = make_context(repo_root / "params.yaml", "tiny", str(shared_data), tmp_path_factory.mktemp("dag") / "artifacts")
    ctx = _with(base, base.artifacts, data={"eval_datasets": EVAL_DATASETS}, model={"recipe": "unifier"})
    results = {stage: run_stage(stage, ctx) for stage in ["validate", "bm25", *TRAINING, "evaluate"]}
    return ctx, results


@pytest.mark.parametrize("stage", ["warmup", "reranker", "continual", "distill"])
def test_training_stage_writes_a_loadable_checkpoint_and_its_curve(dag, stage):
    from uniret.models.factory import load_model

    ctx, results = dag
    out = ctx.stage_dir(stage)
    model, tokenizer = load_model(out / "model")
    assert tokenizer is not None and sum(p.numel() for p in model.parameters()) > 0
    rows = (out / "metrics" / "train.tsv").read_text().splitlines()
    assert rows[0].startswith("step\tlr\tloss") and len(rows) >= 2
    metrics = read_manifest(out)["metrics"]
    steps = getattr(ctx.params.section("training"), stage).train.max_steps
    assert metrics["steps"] == steps == results[stage]["steps"]
    assert metrics["final_loss"] > 0
    if stage != "reranker":  # the unifier's heads report their sparsity
        assert metrics["active_terms_q"] > 0 and metrics["active_terms_d"] > 0
    assert not (ctx.artifacts / ".train" / stage).exists()  # the resumable work folder is cleaned up


def test_mined_negatives_exclude_positives_and_come_from_both_heads(dag):
    ctx, results = dag
    cfg = ctx.params.section("training").mine
    out = ctx.stage_dir("mine")
    union = {r.query_id: r for r in iter_negatives(out / "negatives.jsonl")}
    per_head = {c: {r.query_id: r for r in iter_negatives(out / f"{c}.jsonl")} for c in ("dense", "sparse")}
    assert union and results["mine"]["queries"] == len(union)
    for qid, record in union.items():
        assert not set(record.negatives) & set(record.positives)
        for head in per_head.values():
            assert len(head[qid].negatives) <= cfg.per_channel
            assert set(head[qid].negatives) <= set(record.negatives)
    assert results["mine"]["negatives_per_query"] > cfg.per_channel  # two heads: more than one head's share


def test_mined_negatives_lie_in_the_rank_window_of_the_warmup_dense_head(dag):
    """Re-rank the corpus with the warm-up model's dense head: every dense negative sits in the window."""
    import numpy as np

    from uniret.models.factory import load_model
    from uniret.retrieval.encoding import TorchTextEncoder

    ctx, _ = dag
    cfg = ctx.params.section("training").mine
    model, tok = load_model(ctx.stage_dir("warmup") / "model")
    mcfg = model.model_config
    docs = list(ctx.dataset("scifact").iter_corpus())
    enc = TorchTextEncoder(model, tok, 32, mcfg.query_max_length, mcfg.doc_max_length)
    doc_vecs = enc.encode([d.contents for d in docs], is_query=False).dense
    records = list(iter_negatives(ctx.stage_dir("mine") / "dense.jsonl"))[:5]
    q_vecs = enc.encode([r.query for r in records], is_query=True).dense
    for record, q in zip(records, q_vecs, strict=True):
        order = [docs[i].id for i in np.argsort(-(doc_vecs @ q), kind="stable")]
        order = [d for d in order if d not in record.positives]
        window = set(order[max(0, cfg.window_start - 1) : cfg.window_end + 1])  # +-1: float ties
        assert set(record.negatives) <= window


def test_mining_through_the_onnx_twin_gives_the_negatives_torch_gives(dag, tmp_path, caplog):
    """`training.mine.encoder`: the DAG mined through the warm-up model's ONNX twin (the default);
    the torch model mines the same negatives, and the twin's graphs do not outlive the stage."""
    ctx, results = dag
    assert results["mine"]["dense_encoder"] == results["mine"]["sparse_encoder"] == "onnx"
    art = tmp_path / "artifacts"
    art.mkdir()
    for stage in ("validate", "bm25", "warmup"):
        (art / stage).symlink_to(ctx.stage_dir(stage))
    mine = {**ctx.params.raw["training"]["mine"], "encoder": "torch"}
    with caplog.at_level("INFO", logger="uniret.export"):
        torch_run = run_stage("mine", _with(ctx, art, training={"mine": mine}))
    assert torch_run["dense_encoder"] == torch_run["sparse_encoder"] == "torch"
    assert not any("ONNX parity ok" in r.message for r in caplog.records)  # no twin made
    for name in ("negatives.jsonl", "dense.jsonl", "sparse.jsonl"):
        assert (art / "mine" / name).read_bytes() == (ctx.stage_dir("mine") / name).read_bytes(), name
    assert not list(ctx.artifacts.glob(".mine-onnx-*")) and not list(art.glob(".mine-onnx-*"))


def test_the_trained_source_ranks_through_the_onnx_twin_as_through_torch(dag, tmp_path, caplog):
    """evaluate's trained source encodes its corpora through the model's ONNX twin where the index
    stage's corpus passes run ONNX (the default), and ranks as the torch model does."""
    from uniret.evaluation.model_source import TrainedModelSource

    ctx, _ = dag
    runs = {}
    for kind in ("onnx", "torch"):
        art = tmp_path / kind
        art.mkdir()
        for stage in ("validate", "bm25", *TRAINING):
            (art / stage).symlink_to(ctx.stage_dir(stage))
        caplog.clear()
        with caplog.at_level("INFO", logger="uniret.export"):
            runs[kind] = TrainedModelSource().runs(_with(ctx, art, index={"corpus_encoder": kind}))
        assert any("ONNX parity ok" in r.message for r in caplog.records) == (kind == "onnx")
        assert not list(art.glob(".eval-onnx-*"))  # the twin's graphs do not outlive the source
    assert set(runs["onnx"]) == set(runs["torch"]) and runs["torch"]
    for system, by_dataset in runs["torch"].items():
        for dataset, run in by_dataset.items():
            other = runs["onnx"][system][dataset]
            top = {q: sorted(d, key=d.get, reverse=True)[:10] for q, d in run.items()}
            differ = [q for q in run if sorted(other[q], key=other[q].get, reverse=True)[:10] != top[q]]
            assert len(differ) <= max(1, len(run) // 50), (system, dataset, differ)  # float ties at most


def test_evaluate_scores_every_trained_mode_and_the_starting_models(dag):
    ctx, _ = dag
    doc = json.loads((ctx.stage_dir("evaluate") / "metrics.json").read_text())
    expected = {"bm25", "unifier/dense", "unifier/lexical", "unifier/uni", "unifier/hybrid",
                "zeroshot-splade/lexical", "zeroshot-minilm/dense"}
    for dataset in EVAL_DATASETS:
        assert expected <= set(doc["datasets"][dataset])
        for system in expected:
            assert 0.0 <= doc["datasets"][dataset][system]["ndcg@10"] <= 1.0
    # the starting SPLADE is a real retriever: far above chance on its slice
    assert doc["datasets"]["scifact"]["zeroshot-splade/lexical"]["ndcg@10"] > 0.3
    runs = ctx.stage_dir("evaluate") / "runs" / "unifier" / "uni" / "scifact.trec"
    assert runs.is_file() and runs.stat().st_size > 0


def test_an_unchanged_model_is_not_re_encoded(dag, caplog):
    from uniret.evaluation.model_source import TrainedModelSource

    ctx, _ = dag
    cache = ctx.artifacts / ctx.params.section("encoding").cache_dir
    before = {p.name: p.stat().st_mtime_ns for p in cache.iterdir()}
    with caplog.at_level("INFO", logger="uniret.retrieval"):
        runs = TrainedModelSource().runs(ctx)
    assert {p.name: p.stat().st_mtime_ns for p in cache.iterdir()} == before
    assert sum("from cache" in r.message for r in caplog.records) == len(EVAL_DATASETS)
    assert set(runs) == {"unifier/dense", "unifier/lexical", "unifier/uni", "unifier/hybrid"}


def test_a_stage_outside_the_recipe_writes_the_skip_manifest(dag, tmp_path):
    """CLEAR trains only a warm-up model: its mine stage says so and leaves no outputs."""
    ctx, _ = dag
    clear = _with(ctx, tmp_path / "artifacts", model={"recipe": "clear"})
    for stage in ("validate", "bm25"):
        (tmp_path / "artifacts").mkdir(exist_ok=True)
        (tmp_path / "artifacts" / stage).symlink_to(ctx.stage_dir(stage))
    result = run_stage("mine", clear)
    manifest = read_manifest(clear.stage_dir("mine"))
    assert result["skipped"] is True and manifest["skipped"] is True
    assert manifest["reason"] == "skipped by recipe clear"
    assert sorted(p.name for p in clear.stage_dir("mine").iterdir()) == ["manifest.json"]


def _click_artifacts(ctx: StageContext, tmp_path, rows: list[dict] | None) -> None:
    """tmp_path/artifacts: links to the DAG's stages, and a feedback output holding `rows` as its IPS pairs
    (None: the feedback stage skipped, no logs)."""
    from uniret.runtime import MANIFEST
    from uniret.utils.files import atomic_write_json

    art = tmp_path / "artifacts"
    art.mkdir(parents=True)
    for stage in ("validate", "bm25", "warmup", "mine"):
        (art / stage).symlink_to(ctx.stage_dir(stage))
    (art / "feedback").mkdir()
    status = "ok" if rows is not None else "skipped"
    atomic_write_json(art / "feedback" / MANIFEST, {"stage": "feedback", "metrics": {"status": status}})
    if rows is not None:
        (art / "feedback" / "pairs").mkdir()
        (art / "feedback" / "pairs" / "ips.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def _click_rows(ctx: StageContext) -> list[dict]:
    docs = [d.id for d in ctx.dataset(ctx.params.section("data").train_dataset).iter_corpus()][:3]
    row = {"query_key": "k", "position": 1, "ranker": "r"}
    return [{**row, "query": "vitamin d and bone density", "doc_id": docs[0], "weight": 3.0},
            {**row, "query": "statins and memory loss", "doc_id": docs[1], "weight": 1.0},
            {**row, "query": "statins and memory loss", "doc_id": "not-in-the-corpus", "weight": 5.0}]


def test_continual_mixes_serving_clicks_into_its_labelled_examples(dag, tmp_path):
    """training.continual.clicks: share 0.5 draws as many click examples as labelled ones, from the
    pairs of known docs; the manifest says how many and from what."""
    ctx, results = dag
    _click_artifacts(ctx, tmp_path, _click_rows(ctx))
    training = copy.deepcopy(ctx.params.raw["training"])
    training["continual"]["clicks"] = {"source": "ips", "share": 0.5, "labels": True, "aggregate": "sum"}
    mixed = _with(ctx, tmp_path / "artifacts", training=training)
    result = run_stage("continual", mixed)
    clicks = read_manifest(mixed.stage_dir("continual"))["metrics"]["clicks"]
    labelled = results["continual"]["examples"]
    assert clicks["examples"] == labelled and result["examples"] == 2 * labelled
    assert clicks["pairs"] == 2 and clicks["queries"] == 2
    assert clicks["left_out"] == {"doc not in the indexed corpus": 1}
    assert "feedback" in read_manifest(mixed.stage_dir("continual"))["inputs"]


def test_continual_on_clicks_alone_warm_starts_and_refuses_a_night_without_clicks(dag, tmp_path):
    """labels false (the loop's click arms): no mined negatives read, one click example per step and batch
    row, the model taken from start_model; with no clicks to train on, a clear error and no output."""
    from uniret.utils.files import hash_path

    ctx, _ = dag
    _click_artifacts(ctx, tmp_path / "a", _click_rows(ctx))
    training = copy.deepcopy(ctx.params.raw["training"])
    start = ctx.stage_dir("continual") / "model"
    training["continual"].update(start_model=str(start), clicks={"source": "ips", "labels": False})
    alone = _with(ctx, tmp_path / "a" / "artifacts", training=training)
    result = run_stage("continual", alone)
    cfg = alone.params.section("training").continual
    manifest = read_manifest(alone.stage_dir("continual"))
    assert result["examples"] == manifest["metrics"]["clicks"]["examples"] == cfg.train.max_steps * cfg.train.batch_size
    assert "negatives" not in manifest["inputs"] and manifest["inputs"]["start_model"] == hash_path(start)

    _click_artifacts(ctx, tmp_path / "b", None)
    empty = _with(ctx, tmp_path / "b" / "artifacts", training=training)
    with pytest.raises(ValueError, match=r"training.continual.clicks: labels is false .* no logs"):
        run_stage("continual", empty)
    assert not empty.stage_dir("continual").exists()
