"""A night that promotes no new model re-indexes today's corpus with production's model (issue 55):
real bundles of the tiny profile, a real `uniret serve`, and the promote stage (what `uniret nightly`
and the Kubeflow pipeline run after the gate) on a blocked decision."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from uniret.registry.bundles import read_manifest
from uniret.registry.pointer import read_pointer
from uniret.runtime import MANIFEST, VALIDATED_DATA, make_context
from uniret.stages import run_stage
from uniret.stages.corpus_refresh import refresh_corpus
from uniret.utils.files import hash_path

ADDED, REMOVED = 50, 20
STARTUP_TIMEOUT_S = 300.0


def _read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


@pytest.fixture
def project(tmp_path, repo_root, shared_data, tiny_bundle):
    """A params file in tmp (registry there, no dvc push), the tiny profile on SciFact, and production A:
    the session's tiny bundle (built on the validated slice C) promoted into the registry."""
    from uniret.config import load_params
    from uniret.registry.gate import resolve_gate_config
    from uniret.registry.promotion import promote
    from uniret.stages.promote import candidate_checkpoint

    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["registry"] = {"root": "registry", "dvc_push": False}
    raw["data"]["root"] = str(shared_data)
    raw["data"]["eval_datasets"] = ["scifact"]
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump(raw))
    ctx = make_context(params, "tiny", str(shared_data), tmp_path / "artifacts")
    system = resolve_gate_config(load_params(params, "tiny")).candidate_system
    root = tmp_path / "registry"
    checkpoint = candidate_checkpoint(lambda stage: tiny_bundle.parents[1] / stage, tiny_bundle)
    assert checkpoint  # published with its checkpoint, as the promote stage publishes a candidate
    first = promote(root, tiny_bundle, evaluation=None, decision={"passed": True, "candidate": system},
                    lineage={"profile": "tiny"}, dvc_push=False, attachments=checkpoint)
    return ctx, root, first.version


def _today(ctx, tiny_bundle: Path, shared_data: Path, change: bool) -> tuple[list[dict], list[str]]:
    """artifacts/validate for tonight: the slice C production was built on, or C' = C + ADDED documents
    of the full SciFact corpus - REMOVED of C (a copy: the shared data is never edited); then the real
    bm25 stage on it. (added documents, removed ids)."""
    from uniret.stages import bm25

    source = tiny_bundle.parents[1] / "validate" / VALIDATED_DATA / "scifact"
    dest = ctx.stage_dir("validate") / VALIDATED_DATA / "scifact"
    shutil.copytree(source, dest)
    (ctx.stage_dir("validate") / MANIFEST).write_text(json.dumps({"stage": "validate", "fixture": True}))
    added, removed = [], []
    if change:
        docs = _read_jsonl(dest / "corpus.jsonl")
        ids = {d["_id"] for d in docs}
        judged = set()
        for qrels in (dest / "qrels").glob("*.tsv"):
            judged |= {line.split("\t")[1] for line in qrels.read_text().splitlines()[1:] if line.strip()}
        removed = [d["_id"] for d in docs if d["_id"] not in judged][-REMOVED:]
        with open(shared_data / "scifact" / "corpus.jsonl", encoding="utf-8") as fh:
            for line in fh:
                doc = json.loads(line)
                if doc["_id"] not in ids and len(doc.get("title", "").split()) >= 6:
                    added.append(doc)
                if len(added) == ADDED:
                    break
        kept = [d for d in docs if d["_id"] not in set(removed)]
        (dest / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in kept + added), encoding="utf-8")
    bm25.run(ctx)
    return added, removed


def _blocked_night(ctx) -> dict:
    """Tonight's gate blocked the candidate; the promote stage runs as the nightly and Kubeflow run it."""
    gate = ctx.stage_dir("gate")
    gate.mkdir(parents=True, exist_ok=True)
    (gate / "decision.json").write_text(json.dumps({"passed": False, "candidate": "hybrid_fast", "checks": [
        {"name": "beats_baseline", "status": "fail", "reason": "below bm25"}]}))
    (gate / MANIFEST).write_text(json.dumps({"stage": "gate", "fixture": True}))
    return run_stage("promote", ctx)


def test_blocked_night_serves_added_documents_and_drops_removed_ones_but_never_a_rolled_back_model(
        project, tiny_bundle, shared_data, tmp_path):
    from uniret.bench.http_client import post_json
    from uniret.bench.server import LOOPBACK, LocalServer
    from uniret.registry.integrity import verify_bundle
    from uniret.registry.promotion import rollback

    ctx, root, first = project
    added, removed = _today(ctx, tiny_bundle, shared_data, change=True)
    cfg = ctx.params.section("nightly")
    assert cfg.refresh_corpus == "blocked_or_paused"
    night = _blocked_night(ctx)
    assert night["outcome"] == "blocked" and "beats_baseline: below bm25" in night["summary"], night
    assert night["refresh"]["status"] == "promoted" and "error" not in night, night
    assert f"+{ADDED} -{REMOVED} documents" in night["refresh"]["summary"]
    recorded = json.loads((ctx.stage_dir("promote") / "promotion.json").read_text())
    assert recorded["refresh"] == night["refresh"] and len(recorded["decision_sha256"]) == 64
    pointer = read_pointer(root)
    refreshed = pointer["version"]
    assert refreshed != first and pointer["reason"] == f"corpus refresh of {first}"
    bundle = root / pointer["bundle"]
    verify_bundle(bundle)
    served_ids = set(json.loads((bundle / "docids.json").read_text()))
    production_ids = set(json.loads((tiny_bundle / "docids.json").read_text()))
    assert served_ids == (production_ids - set(removed)) | {d["_id"] for d in added}
    manifest = read_manifest(bundle)
    assert manifest["lineage"]["refresh_of"] == first and manifest["refresh"]["added"] == ADDED
    assert manifest["model"]["checkpoint_sha256"] == read_manifest(root / "bundles" / first)["model"]["checkpoint_sha256"]
    # production's checkpoint goes with its model: the next nightly's warm start continues it
    assert hash_path(bundle / "checkpoint") == hash_path(root / "bundles" / first / "checkpoint")
    assert {c["name"] for c in manifest["gate"]["checks"]} >= {"integrity", "min_score", "sparsity_min"}
    assert (bundle / "onnx" / "query.onnx").read_bytes() == (root / "bundles" / first / "onnx" / "query.onnx").read_bytes()

    (tmp_path / "serve-log").mkdir()
    server = LocalServer(["--registry", str(root)], ctx.params.path, "tiny", log_dir=tmp_path / "serve-log")
    server.start(STARTUP_TIMEOUT_S)
    try:
        hits = {}
        for doc in added[:3]:
            status, body = post_json(LOOPBACK, server.port, "/search", {"query": doc["title"], "k": 10})
            assert status == 200 and body["version"] == refreshed, body
            hits[doc["_id"]] = [h["doc_id"] for h in body["results"]]
        assert any(doc_id in ids for doc_id, ids in hits.items()), hits
        assert not {h for ids in hits.values() for h in ids} & set(removed)
    finally:
        server.stop()

    # the refreshed bundle answered worse: rolled back, and the next blocked night must not bring the
    # rolled-back model back on (again) new documents
    rollback(root, dvc_push=False, reason="refreshed answers got worse")
    assert read_pointer(root)["version"] == first
    again = _blocked_night(ctx)
    assert again["outcome"] == "blocked" and again["refresh"]["status"] == "refused", again
    assert f"bundle {refreshed}" in again["refresh"]["summary"]
    assert "refreshed answers got worse" in again["refresh"]["summary"]
    assert read_pointer(root)["version"] == first


def test_unchanged_corpus_does_nothing_and_a_pause_is_respected_when_configured(project, tiny_bundle, shared_data):
    from uniret.registry.control import pause

    ctx, root, first = project
    _today(ctx, tiny_bundle, shared_data, change=False)
    result = refresh_corpus(ctx, "blocked_or_paused", paused=False)
    assert result.status == "unchanged" and f"unchanged since production {first}" in result.summary
    assert read_pointer(root)["version"] == first and not ctx.stage_dir("corpus_refresh").exists()

    pause(root, "data audit")
    held = refresh_corpus(ctx, "blocked", paused=True)
    assert held.status == "skipped" and "while paused" in held.summary
    assert refresh_corpus(ctx, "off", paused=False).status == "skipped"


def test_a_refresh_that_fails_is_recorded_as_the_night_s_error(project, tiny_bundle, shared_data):
    ctx, root, first = project
    (ctx.stage_dir("validate") / VALIDATED_DATA).mkdir(parents=True)  # no dataset validated tonight
    (ctx.stage_dir("validate") / MANIFEST).write_text(json.dumps({"stage": "validate"}))
    night = _blocked_night(ctx)  # the nightly exits 1 on `error`, the Kubeflow task fails
    assert night["refresh"]["status"] == "failed" and "corpus refresh failed" in night["error"]
    assert "scifact" in night["error"]
    assert read_pointer(root)["version"] == first
    assert os.path.isdir(root / "bundles" / first)


def test_a_refresh_below_the_gate_floor_is_not_promoted(project, tiny_bundle, shared_data, monkeypatch):
    import dataclasses

    from uniret.stages import corpus_refresh

    ctx, root, first = project
    _today(ctx, tiny_bundle, shared_data, change=True)
    real = corpus_refresh.resolve_gate_config
    monkeypatch.setattr(corpus_refresh, "resolve_gate_config",
                        lambda params: dataclasses.replace(real(params), min_score=0.99, min_score_per_dataset={}))
    result = refresh_corpus(ctx, "blocked_or_paused", paused=False)
    assert result.status == "blocked" and "min_score" in result.summary and "0.99" in result.summary, result.summary
    assert read_pointer(root)["version"] == first
    recorded = json.loads((ctx.stage_dir("corpus_refresh") / "refresh.json").read_text())
    assert recorded["passed"] is False and any(c["status"] == "fail" for c in recorded["checks"])
