"""The gate judges production on the candidate's data. A real bundle (the tiny SciFact slice) is
published with a score measured on other data; the gate re-scores it on this run's data exactly as
the evaluate stage scores the candidate, while `rescore_production: never` keeps the stale figure and
is blocked by it."""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from uniret.config import Params
from uniret.registry.promotion import promote
from uniret.runtime import StageContext, make_context
from uniret.stages import evaluate as evaluate_stage
from uniret.stages import gate as gate_stage

SYSTEM = "uni"  # the bundle mode production was promoted as
STALE_NDCG = 0.99  # production's nDCG@10 stored at promotion, measured on other data


def _params(base: Params, tmp_path, rescore: str) -> Params:
    raw = copy.deepcopy(base.raw)
    raw["data"]["eval_datasets"] = ["scifact"]
    raw["evaluate"]["sources"] = ["bm25", "bundle"]
    # quality and budgets out of the way: this test is about which production scores are compared
    raw["gate"].update(candidate_system=SYSTEM, rescore_production=rescore, min_score=0.0,
                       min_score_per_dataset={}, bm25_margin=-1.0, max_regression=0.01,
                       max_latency_p95_ms=None, max_latency_ratio_bm25=None, max_latency_p50_vs_production=None,
                       max_latency_p95_vs_production=None, max_bytes_per_doc_dense=None,
                       max_bytes_per_doc_sparse=None,
                       profiles={})
    raw["registry"] = {"root": str(tmp_path / "registry"), "dvc_push": False}
    return Params(raw=raw, profile="tiny", path=base.path)


@pytest.fixture
def artifacts(gate_artifacts):
    """The tiny bundle's artifacts with SciFact's files today's (_publish_stale then makes that bundle
    production, with a score from yesterday's files)."""
    return gate_artifacts


def _context(repo_root, shared_data, tmp_path, artifacts, rescore: str) -> StageContext:
    base = make_context(repo_root / "params.yaml", "tiny", str(shared_data), artifacts)
    return StageContext(_params(base.params, tmp_path, rescore), base.data_root, artifacts)


def _publish_stale(ctx: StageContext, bundle) -> str:
    data = ctx.params.section("data")
    basis = {"split": data.eval_split, "slice": dataclasses.asdict(data.slice), "ignore_identical_ids": True,
             "datasets": {"scifact": "yesterday"}}
    stale = {"datasets": {"scifact": {SYSTEM: {"ndcg@10": STALE_NDCG}}}, "macro": {SYSTEM: {"ndcg@10": STALE_NDCG}}}
    result = promote(ctx.params.raw["registry"]["root"], bundle, evaluation=stale,
                     decision={"passed": True, "candidate": SYSTEM}, lineage={"evaluation_basis": basis},
                     dvc_push=False)
    return result.version


def test_gate_rescores_production_on_changed_data_as_evaluate_scores_the_candidate(
        repo_root, shared_data, tmp_path, artifacts, tiny_bundle):
    ctx = _context(repo_root, shared_data, tmp_path, artifacts, "auto")
    candidate = evaluate_stage.run(ctx)["datasets"]["scifact"][SYSTEM]
    version = _publish_stale(ctx, tiny_bundle)

    out = gate_stage.run(ctx)
    decision = json.loads((ctx.stage_dir("gate") / gate_stage.DECISION_JSON).read_text())
    why = "scifact: its files changed since production was evaluated"
    assert decision["production"] == version
    assert decision["production_scores"] == f"re-scored on this run's data ({why})"
    assert decision["production_scores_kind"] == "rescored"
    rescored = json.loads((ctx.stage_dir("gate") / gate_stage.PRODUCTION_METRICS_JSON).read_text())
    assert rescored["version"] == version and rescored["system"] == SYSTEM and rescored["why"] == why
    # the same bundle on the same data: production's re-scoring equals the candidate's evaluation
    production = rescored["metrics"]["datasets"]["scifact"][SYSTEM]
    assert production.keys() == candidate.keys()
    assert all(production[m] == pytest.approx(candidate[m], abs=1e-6) for m in candidate)
    assert 0.0 < candidate["ndcg@10"] < STALE_NDCG - 0.01  # the stale figure would have blocked it
    per_query = ("per_query", SYSTEM, "scifact.json")  # per query too, in the evaluate stage's layout (report)
    assert json.loads(ctx.stage_dir("gate").joinpath(gate_stage.PRODUCTION_DIR, *per_query).read_text()) \
        == json.loads(ctx.stage_dir("evaluate").joinpath(*per_query).read_text())
    [check] = [c for c in decision["checks"] if c["name"] == "no_regression"]
    assert check["reason"].endswith("production's scores re-scored on this run's data)")
    # the same bundle on the same queries: the paired rule sees a difference of exactly 0 on every query
    assert check["status"] == "pass" and check["rule"] == "paired"
    assert check["value"] == pytest.approx(0.0, abs=1e-12) and check["interval"] == pytest.approx([0.0, 0.0], abs=1e-12)
    assert check["threshold"] == pytest.approx(-ctx.params.section("gate").margin("scifact"))
    assert out["passed"] is True


def test_rescore_never_judges_by_the_stale_scores(repo_root, shared_data, tmp_path, artifacts, tiny_bundle):
    ctx = _context(repo_root, shared_data, tmp_path, artifacts, "never")
    evaluate_stage.run(ctx)
    _publish_stale(ctx, tiny_bundle)

    assert gate_stage.run(ctx)["passed"] is False
    decision = json.loads((ctx.stage_dir("gate") / gate_stage.DECISION_JSON).read_text())
    [check] = [c for c in decision["checks"] if c["status"] == "fail"]
    assert (check["name"], check["dataset"]) == ("no_regression", "scifact")
    assert check["threshold"] == pytest.approx(STALE_NDCG - 0.01)
    # per-query scores from other data cannot pair with this run's: the point rule decides, and says why
    assert check["rule"] == "threshold"
    assert check["reason"].endswith("production's scores stored at promotion, measured on other data); "
                                    "point rule: production's stored per-query scores were measured on other data")
    assert decision["production_scores"] == ("stored at promotion, measured on other data "
                                             "(scifact: its files changed since production was evaluated)")
    assert not (ctx.stage_dir("gate") / gate_stage.PRODUCTION_METRICS_JSON).exists()
