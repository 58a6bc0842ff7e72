"""The checkpoint a bundle was built from, published with it: the promote stage attaches it, corpus
refreshes carry it, `production_checkpoint` follows the pointer (promotions and rollbacks) and refuses
a damaged one (uniret.registry.checkpoints)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from uniret.registry.checkpoints import CHECKPOINT_DIR, checkpoint_attachment, production_checkpoint
from uniret.registry.integrity import IntegrityError
from uniret.registry.promotion import rollback
from uniret.registry.verify import verify_registry
from uniret.runtime import make_context
from uniret.stages import gate as gate_stage
from uniret.stages import promote as promote_stage
from uniret.utils.files import hash_path

METRICS = {"datasets": {"scifact": {"uni": {"ndcg@10": 0.7}, "bm25": {"ndcg@10": 0.66}}},
           "macro": {"uni": {"ndcg@10": 0.7}, "bm25": {"ndcg@10": 0.66}}}
GATE = {"candidate_system": "uni", "min_score": 0.1, "min_score_per_dataset": {}, "max_regression": 0.5,
        "bm25_margin": 0.0, "min_active_terms_doc": 1.0, "max_active_terms_doc": 1000.0, "max_latency_p95_ms": None,
        "max_latency_ratio_bm25": None, "max_latency_p50_vs_production": None,
        "max_latency_p95_vs_production": None, "profiles": {}, "max_bytes_per_doc_dense": None,
        "max_bytes_per_doc_sparse": None}


def night(ctx, weights: str, indexed: str | None = None) -> Path:
    """What a night's training and index stages leave: artifacts/continual/model holding `weights`, and
    a bundle whose manifest records the sha256 of the model it was built from (`indexed`: another
    model's weights, as when training ran again after the index stage)."""
    artifacts = ctx.artifacts
    model = artifacts / "continual" / "model"
    model.mkdir(parents=True, exist_ok=True)
    (model / "weights.pt").write_text(indexed or weights)
    built_from = hash_path(model)
    (model / "weights.pt").write_text(weights)
    for stage in ("validate", "index", "bench", "evaluate"):
        (artifacts / stage).mkdir(parents=True, exist_ok=True)
        # the validate stage's record of the eval data: the same every night, so production's stored scores pair
        inputs = {ds: f"{ds}-v1" for ds in ctx.params.section("data").eval_datasets} if stage == "validate" else {}
        (artifacts / stage / "manifest.json").write_text(json.dumps({"stage": stage, "inputs": inputs}))
    (artifacts / "evaluate" / "metrics.json").write_text(json.dumps(METRICS))
    (artifacts / "bench" / "bench.json").write_text(json.dumps({"modes": {}}))
    bundle = artifacts / "index" / "bundle"
    bundle.mkdir(exist_ok=True)
    (bundle / "dense.index").write_text(weights)
    manifest = {"metrics": {"mean_active_terms_doc": 80.0},
                "model": {"source_stage": "continual", "checkpoint_sha256": built_from}}
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    return model


@pytest.fixture
def ctx(tmp_path, repo_root, shared_data, monkeypatch):
    monkeypatch.delenv("UNIRET_ADMIN_TOKEN", raising=False)
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw.update(gate=GATE, registry={"root": "registry", "dvc_push": False})
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    return make_context(tmp_path / "params.yaml", "cpu", str(shared_data), tmp_path / "artifacts")


def promote(ctx) -> dict:
    gate_stage.run(ctx)
    return promote_stage.run(ctx)


def test_promotion_publishes_the_checkpoint_and_the_warm_start_follows_the_pointer(ctx, tmp_path):
    registry = tmp_path / "registry"
    assert production_checkpoint(registry) == (None, f"no production bundle in {registry}")  # a cold start
    model = night(ctx, "first")
    first = promote(ctx)
    assert first["promoted"] and first["checkpoint"] is True
    published = registry / "bundles" / first["version"] / CHECKPOINT_DIR
    assert hash_path(published) == hash_path(model)
    assert f"{CHECKPOINT_DIR}/weights.pt" in (published.parent / "SHA256SUMS").read_text()
    assert production_checkpoint(registry) == (published, first["version"])

    night(ctx, "second")
    second = promote(ctx)
    assert production_checkpoint(registry)[1] == second["version"]
    assert (registry / "bundles" / second["version"] / CHECKPOINT_DIR / "weights.pt").read_text() == "second"
    rollback(registry, dvc_push=False, reason="test")  # the next night continues the restored model
    assert production_checkpoint(registry) == (published, first["version"])
    assert verify_registry(registry).ok


def test_a_model_trained_after_the_index_stage_is_not_published_as_the_bundle_s(ctx, tmp_path, caplog):
    model = night(ctx, "retrained", indexed="indexed")
    built = json.loads((ctx.artifacts / "index" / "bundle" / "manifest.json").read_text())["model"]
    assert checkpoint_attachment(built, model)[1] == (
        f"{model} is not the checkpoint the bundle was built from (its sha256 differs)")
    result = promote(ctx)
    assert result["promoted"] and result["checkpoint"] is False  # the bundle is still published
    assert "is published without its checkpoint" in caplog.text
    assert not (tmp_path / "registry" / "bundles" / result["version"] / CHECKPOINT_DIR).exists()
    assert production_checkpoint(tmp_path / "registry") == (
        None, f"production {result['version']} was published without its checkpoint")


def test_a_damaged_production_checkpoint_is_refused(ctx, tmp_path):
    night(ctx, "first")
    version = promote(ctx)["version"]
    (tmp_path / "registry" / "bundles" / version / CHECKPOINT_DIR / "weights.pt").write_text("tampered")
    with pytest.raises(IntegrityError, match=r"checkpoint/weights.pt.*not warm-started from"):
        production_checkpoint(tmp_path / "registry")


def test_start_model_production_is_the_pointer_s_checkpoint_or_says_why_not(ctx, tmp_path):
    """What a training stage starts from with training.<stage>.start_model (the loop's test trains from it)."""
    from uniret.stages.biencoder import start_model

    registry = tmp_path / "registry"
    assert start_model(ctx, "continual", None) == (None, None)
    assert start_model(ctx, "continual", "production") == (  # a cold start: as without the setting
        None, {"asked": "production", "from": None, "why_not": f"no production bundle in {registry}"})
    night(ctx, "first")
    version = promote(ctx)["version"]
    published = registry / "bundles" / version / CHECKPOINT_DIR
    assert start_model(ctx, "continual", "production") == (
        published, {"asked": "production", "from": str(published), "version": version})
    with pytest.raises(FileNotFoundError, match=r"training.warmup.start_model: .*nowhere is not a checkpoint folder"):
        start_model(ctx, "warmup", str(tmp_path / "nowhere"))
