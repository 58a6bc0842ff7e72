"""Issue 57 item 1: the gate verifies production's bundle before it reads the scores stored there.

A real bundle (the tiny SciFact slice) is promoted with this run's evaluation and per-query scores
as production; its stored per-query file is then lowered by 0.2 (which, unverified, would let a
worse candidate pass). The gate must block, and decision.json/decision.md say production failed
verification; the same registry with the files untouched passes."""

from __future__ import annotations

import copy
import json

import pytest

from uniret.config import Params
from uniret.registry.basis import evaluation_basis
from uniret.registry.bundles import EVALUATION_DIR
from uniret.registry.promotion import promote
from uniret.runtime import StageContext, make_context
from uniret.stages import evaluate as evaluate_stage
from uniret.stages import gate as gate_stage

SYSTEM = "uni"


@pytest.fixture
def gate_ctx(repo_root, shared_data, tmp_path, tiny_bundle, gate_artifacts):
    out = gate_artifacts
    base = make_context(repo_root / "params.yaml", "tiny", str(shared_data), out)
    raw = copy.deepcopy(base.params.raw)
    raw["data"]["eval_datasets"] = ["scifact"]
    raw["evaluate"]["sources"] = ["bm25", "bundle"]
    raw["gate"].update(candidate_system=SYSTEM, rescore_production="auto", min_score=0.0,
                       min_score_per_dataset={}, bm25_margin=-1.0, max_regression=0.01,
                       max_latency_p95_ms=None, max_latency_ratio_bm25=None, max_bytes_per_doc_dense=None,
                       max_bytes_per_doc_sparse=None, max_latency_p50_vs_production=None,
                       max_latency_p95_vs_production=None, profiles={})
    raw["registry"] = {"root": str(tmp_path / "registry"), "dvc_push": False}
    ctx = StageContext(Params(raw=raw, profile="tiny", path=base.params.path), base.data_root, out)
    metrics = evaluate_stage.run(ctx)
    basis = evaluation_basis(ctx.params, ctx.stage_dir("validate"))
    served = ctx.stage_dir("evaluate") / "per_query" / SYSTEM
    result = promote(raw["registry"]["root"], tiny_bundle, evaluation=metrics,
                     decision={"passed": True, "candidate": SYSTEM}, lineage={"evaluation_basis": basis},
                     dvc_push=False, attachments={f"{EVALUATION_DIR}/per_query/{SYSTEM}": served})
    bundle = tmp_path / "registry" / "bundles" / result.version
    return ctx, bundle, result.version


def _decision(ctx):
    gate_stage.run(ctx)
    folder = ctx.stage_dir("gate")
    return json.loads((folder / gate_stage.DECISION_JSON).read_text()), (folder / gate_stage.DECISION_MD).read_text()


def test_gate_refuses_production_scores_that_fail_verification(gate_ctx):
    ctx, bundle, version = gate_ctx
    decision, _ = _decision(ctx)
    assert decision["passed"] is True and decision["production_scores_kind"] == "stored", [(c["name"], c["reason"]) for c in decision["checks"] if c["status"] == "fail"]

    stored = bundle / EVALUATION_DIR / "per_query" / SYSTEM / "scifact.json"
    rows = json.loads(stored.read_text())
    for row in rows.values():
        row["ndcg@10"] = row["ndcg@10"] - 0.2
    stored.write_text(json.dumps(rows))

    decision, md = _decision(ctx)
    assert decision["passed"] is False
    assert decision["production_scores_kind"] == "unavailable"
    [check] = [c for c in decision["checks"] if c["status"] == "fail"]
    assert check["name"] == "no_regression"
    assert f"production {version} fails verification" in check["reason"]
    assert "changed: evaluation/per_query/uni/scifact.json" in check["reason"]
    assert "fails verification" in md and "BLOCKED" in md


def test_gate_refuses_a_changed_production_manifest(gate_ctx):
    ctx, bundle, version = gate_ctx
    manifest = json.loads((bundle / "manifest.json").read_text())
    manifest["evaluation"]["datasets"]["scifact"][SYSTEM]["ndcg@10"] = 0.0
    (bundle / "manifest.json").write_text(json.dumps(manifest))
    decision, md = _decision(ctx)
    assert decision["passed"] is False and decision["production_scores_kind"] == "unavailable"
    assert "changed: manifest.json" in md
