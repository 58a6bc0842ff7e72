"""Gate and promote stages on hand-written upstream artifacts, with a registry in tmp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from uniret.config import load_params
from uniret.registry.bundles import read_manifest
from uniret.registry.pointer import read_pointer
from uniret.registry.verify import verify_registry
from uniret.runtime import make_context
from uniret.runtime import read_manifest as read_stage_manifest
from uniret.stages import gate as gate_stage
from uniret.stages import promote as promote_stage

GATE = {"candidate_system": "uni", "min_score": 0.1, "min_score_per_dataset": {"scifact": 0.5},
        "max_regression": 0.01, "bm25_margin": 0.0, "min_active_terms_doc": 1.0, "max_active_terms_doc": 1000.0,
        "max_latency_p95_ms": 100.0, "max_latency_ratio_bm25": None, "max_latency_p50_vs_production": None,
        "max_latency_p95_vs_production": None, "profiles": {},
        "max_bytes_per_doc_dense": None, "max_bytes_per_doc_sparse": None}  # (the defaults are params.yaml's)


# the validate stage's record of each eval dataset's files (its manifest's `inputs`): the data
# production's stored scores were measured on (uniret.registry.basis)
DATA_V1 = {name: f"{name}-v1" for name in load_params(Path(__file__).parents[2] / "params.yaml", "cpu")
           .section("data").eval_datasets}


def metrics_json(scifact: float, nfcorpus: float) -> dict:
    uni = {"scifact": scifact, "nfcorpus": nfcorpus}
    bm25 = {"scifact": 0.66, "nfcorpus": 0.32}
    return {
        "datasets": {ds: {"uni": {"ndcg@10": uni[ds]}, "bm25": {"ndcg@10": bm25[ds]}} for ds in uni},
        "macro": {"uni": {"ndcg@10": sum(uni.values()) / 2}, "bm25": {"ndcg@10": sum(bm25.values()) / 2}},
    }


def write_upstream(artifacts: Path, metrics: dict, active_terms: float = 80.0, payload: str = "v1",
                   uni_p95_ms: float | None = 20.0, data: dict[str, str] | None = None) -> None:
    """What validate, index, bench and evaluate leave behind, reduced to what gate/promote read."""
    for stage in ("validate", "index", "bench", "evaluate"):
        (artifacts / stage).mkdir(parents=True, exist_ok=True)
        inputs = (data or DATA_V1) if stage == "validate" else {"x": "h"}
        (artifacts / stage / "manifest.json").write_text(json.dumps({"stage": stage, "inputs": inputs}))
    (artifacts / "evaluate" / "metrics.json").write_text(json.dumps(metrics))
    modes = {"bm25": {"p95_ms": 5.0}, **({"uni": {"p95_ms": uni_p95_ms}} if uni_p95_ms is not None else {})}
    (artifacts / "bench" / "bench.json").write_text(json.dumps({"modes": modes}))
    bundle = artifacts / "index" / "bundle"
    bundle.mkdir(exist_ok=True)
    (bundle / "manifest.json").write_text(json.dumps({"metrics": {"mean_active_terms_doc": active_terms}}))
    (bundle / "dense.index").write_text(payload)


@pytest.fixture
def ctx(tmp_path, repo_root, shared_data, monkeypatch):
    """A context whose params file (hence registry and bench paths) lives in tmp_path."""
    monkeypatch.delenv("UNIRET_ADMIN_TOKEN", raising=False)
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["gate"] = GATE
    raw["registry"] = {"root": "registry", "dvc_push": False}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    return make_context(tmp_path / "params.yaml", "cpu", str(shared_data), tmp_path / "artifacts")


def decision_of(ctx) -> dict:
    return json.loads((ctx.stage_dir("gate") / "decision.json").read_text())


def test_cold_start_passes_and_promotes_with_lineage(ctx, tmp_path):
    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33))
    out = gate_stage.run(ctx)
    decision = decision_of(ctx)
    assert out["passed"] and decision["passed"] and decision["production"] is None
    checks = {(c["name"], c["dataset"]): c for c in decision["checks"]}
    assert checks[("no_regression", None)]["status"] == "skipped"
    assert "cold start" in checks[("no_regression", None)]["reason"]
    latency = checks[("latency_p95_ms", None)]
    assert latency["status"] == "pass" and latency["value"] == 20.0 and "(bench)" in latency["reason"]
    assert "# Gate decision: PASSED" in (ctx.stage_dir("gate") / "decision.md").read_text()

    result = promote_stage.run(ctx)
    assert result["promoted"] is True and result["previous"] is None and result["notify"] == "skipped"
    pointer = read_pointer(tmp_path / "registry")
    assert pointer["version"] == result["version"]
    manifest = read_manifest(tmp_path / "registry" / pointer["bundle"])
    lineage = manifest["lineage"]
    assert len(lineage["data_version"]) == 64 and len(lineage["params_hash"]) == 64 and lineage["parent"] is None
    assert manifest["gate"]["passed"] is True and manifest["evaluation"]["macro"]["uni"]["ndcg@10"] == 0.515
    assert json.loads((ctx.stage_dir("promote") / "promotion.json").read_text())["version"] == pointer["version"]


def test_regression_blocks_and_promote_skips(ctx, tmp_path):
    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33), payload="good")
    gate_stage.run(ctx)
    first = promote_stage.run(ctx)["version"]

    write_upstream(ctx.artifacts, metrics_json(0.71, 0.30), payload="worse on nfcorpus")
    out = gate_stage.run(ctx)  # blocked: no exception
    decision = decision_of(ctx)
    assert out["passed"] is False and decision["production"] == first
    failed = [c for c in decision["checks"] if c["status"] == "fail"]
    assert [(c["name"], c["dataset"]) for c in failed] == [("no_regression", "nfcorpus")]
    assert failed[0]["value"] == pytest.approx(0.30) and failed[0]["threshold"] == pytest.approx(0.32)

    result = promote_stage.run(ctx)
    assert result["promoted"] is False
    assert result["status"].startswith("skipped: gate blocked (no_regression: nfcorpus")
    assert result["outcome"] == "blocked" and result["refresh"]["status"] in ("skipped", "unchanged"), result
    assert read_stage_manifest(ctx.stage_dir("promote"))["metrics"]["promoted"] is False
    assert read_pointer(tmp_path / "registry")["version"] == first


def test_sparsity_collapse_blocks(ctx):
    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33), active_terms=0.0)
    assert gate_stage.run(ctx)["passed"] is False
    failed = [c["name"] for c in decision_of(ctx)["checks"] if c["status"] == "fail"]
    assert failed == ["sparsity_min"]


def test_gate_without_evaluate_outputs_is_an_error(ctx):
    with pytest.raises(FileNotFoundError, match="evaluate"):
        gate_stage.run(ctx)
    assert not ctx.stage_dir("gate").exists()


def test_latency_budget_reads_the_bench_stage_and_blocks_when_unmeasured(ctx):
    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33), uni_p95_ms=250.0)
    assert gate_stage.run(ctx)["passed"] is False
    failed = {c["name"]: c for c in decision_of(ctx)["checks"] if c["status"] == "fail"}
    assert set(failed) == {"latency_p95_ms"} and failed["latency_p95_ms"]["value"] == 250.0

    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33), uni_p95_ms=None)  # served mode not measured
    assert gate_stage.run(ctx)["passed"] is False
    reason = next(c["reason"] for c in decision_of(ctx)["checks"] if c["name"] == "latency_p95_ms")
    assert reason.startswith("cannot be measured: served mode 'uni' missing from the bench figures")

    (ctx.artifacts / "bench" / "bench.json").unlink()  # the bench stage never ran
    assert gate_stage.run(ctx)["passed"] is False
    reason = next(c["reason"] for c in decision_of(ctx)["checks"] if c["name"] == "latency_p95_ms")
    assert "bench stage results not found" in reason and str(ctx.stage_dir("bench")) in reason


def test_regression_is_judged_on_stored_scores_of_the_same_data(ctx, tmp_path):
    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33), payload="good")
    gate_stage.run(ctx)
    first = promote_stage.run(ctx)["version"]
    basis = read_manifest(tmp_path / "registry" / "bundles" / first)["lineage"]["evaluation_basis"]
    assert basis["datasets"] == DATA_V1 and basis["split"] == "test"

    write_upstream(ctx.artifacts, metrics_json(0.71, 0.33), payload="next")  # same data files
    assert gate_stage.run(ctx)["passed"] is True
    decision = decision_of(ctx)
    assert decision["production_scores"] == "stored at promotion" and decision["production_scores_kind"] == "stored"
    regression = [c for c in decision["checks"] if c["name"] == "no_regression"]
    assert {c["dataset"] for c in regression} == {"scifact", "nfcorpus"}
    assert all(c["status"] == "pass" and "stored at promotion" in c["reason"] for c in regression)
    assert not (ctx.stage_dir("gate") / gate_stage.PRODUCTION_METRICS_JSON).exists()


def test_changed_data_blocks_when_production_cannot_be_rescored(ctx, tmp_path):
    """Production's stored scores came from other data and its bundle cannot be scored on this run's
    (this test's bundle holds no index): blocked, never waved through on the stale figures."""
    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33), payload="good")
    gate_stage.run(ctx)
    first = promote_stage.run(ctx)["version"]

    changed = {**DATA_V1, "scifact": "scifact-v2"}
    write_upstream(ctx.artifacts, metrics_json(0.75, 0.35), payload="better", data=changed)
    out = gate_stage.run(ctx)
    decision = decision_of(ctx)
    assert out["passed"] is False
    failed = [c for c in decision["checks"] if c["status"] == "fail"]
    assert [(c["name"], c["dataset"]) for c in failed] == [("no_regression", None)]
    assert failed[0]["reason"].startswith(f"production {first} could not be re-scored on this run's data "
                                          "(scifact: its files changed since production was evaluated)")
    assert decision["production_scores"] == failed[0]["reason"] and decision["production_scores_kind"] == "unavailable"
    assert "could not be re-scored" in (ctx.stage_dir("gate") / "decision.md").read_text()
    assert promote_stage.run(ctx)["promoted"] is False
    assert read_pointer(tmp_path / "registry")["version"] == first


def test_rescore_never_keeps_the_stored_scores_and_says_what_differs(ctx, tmp_path):
    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33), payload="good")
    gate_stage.run(ctx)
    promote_stage.run(ctx)

    raw = yaml.safe_load((tmp_path / "params.yaml").read_text())
    raw["gate"]["rescore_production"] = "never"
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    never = make_context(tmp_path / "params.yaml", "cpu", str(ctx.data_root), ctx.artifacts)
    write_upstream(ctx.artifacts, metrics_json(0.75, 0.35), payload="better",
                   data={**DATA_V1, "nfcorpus": "nfcorpus-v2"})
    assert gate_stage.run(never)["passed"] is True
    decision = decision_of(never)
    note = "stored at promotion, measured on other data (nfcorpus: its files changed since production was evaluated)"
    assert decision["production_scores"] == note and decision["production_scores_kind"] == "stored_other_data"
    # per-query scores of other data cannot pair with this run's: the point rule decides, and says so
    regression = [c for c in decision["checks"] if c["name"] == "no_regression"]
    assert regression and all(c["rule"] == "threshold" and
                              "production's scores stored at promotion, measured on other data); point rule: "
                              in c["reason"] for c in regression)


def test_promote_stage_applies_registry_retention(ctx, tmp_path):
    raw = yaml.safe_load((tmp_path / "params.yaml").read_text())
    raw["registry"]["keep_history"] = 0  # production only
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    keep0 = make_context(tmp_path / "params.yaml", "cpu", str(ctx.data_root), ctx.artifacts)
    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33), payload="first")
    gate_stage.run(keep0)
    first = promote_stage.run(keep0)
    assert first["pruned"] == []
    write_upstream(ctx.artifacts, metrics_json(0.71, 0.34), payload="second")
    gate_stage.run(keep0)
    second = promote_stage.run(keep0)
    assert second["promoted"] and second["pruned"] == [first["version"]]
    assert read_stage_manifest(keep0.stage_dir("promote"))["metrics"]["retention"].startswith("kept production + 0")
    assert sorted(p.name for p in (tmp_path / "registry" / "bundles").iterdir()) == [second["version"]]


def test_promotion_publishes_the_served_systems_per_query_scores(ctx, tmp_path):
    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33))
    per_query = ctx.artifacts / "evaluate" / "per_query"
    for system in ("uni", "bm25"):
        (per_query / system).mkdir(parents=True)
        (per_query / system / "scifact.json").write_text(json.dumps({"q1": {"ndcg@10": 0.7}}))
    gate_stage.run(ctx)
    version = promote_stage.run(ctx)["version"]
    bundle = tmp_path / "registry" / "bundles" / version
    assert sorted(p.relative_to(bundle).as_posix() for p in (bundle / "evaluation").rglob("*.json")) == [
        "evaluation/per_query/uni/scifact.json"]
    assert "evaluation/per_query/uni/scifact.json" in (bundle / "SHA256SUMS").read_text()
    assert verify_registry(tmp_path / "registry").ok


def test_canary_mode_starts_a_canary_instead_of_promoting(ctx, tmp_path):
    """canary.enabled: the cold start is promoted (nothing to compare with); the next passed candidate
    starts a canary and production stays; one more waits while that canary has no evidence yet."""
    raw = yaml.safe_load((tmp_path / "params.yaml").read_text())
    raw["canary"] = {**raw["canary"], "enabled": True}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    no_log = make_context(tmp_path / "params.yaml", "cpu", str(ctx.data_root), ctx.artifacts)
    write_upstream(ctx.artifacts, metrics_json(0.70, 0.33), payload="first")
    gate_stage.run(no_log)
    first = promote_stage.run(no_log)
    assert first["promoted"] and read_pointer(tmp_path / "registry")["version"] == first["version"]
    write_upstream(ctx.artifacts, metrics_json(0.71, 0.34), payload="second")
    gate_stage.run(no_log)
    with pytest.raises(ValueError, match="feedback.log_dir is null"):
        promote_stage.run(no_log)
    raw["feedback"] = {**raw["feedback"], "log_dir": "logs"}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    canary_ctx = make_context(tmp_path / "params.yaml", "cpu", str(ctx.data_root), ctx.artifacts)
    second = promote_stage.run(canary_ctx)
    assert second["canary"] and second["status"].startswith("canary started") and second["promoted"] is False
    state = json.loads((tmp_path / "registry" / "canary.json").read_text())
    assert state["status"] == "running" and state["candidate"] == second["version"]
    assert state["production"] == first["version"] == read_pointer(tmp_path / "registry")["version"]
    write_upstream(ctx.artifacts, metrics_json(0.72, 0.35), payload="third")
    gate_stage.run(canary_ctx)
    third = promote_stage.run(canary_ctx)
    assert third["status"].startswith(f"skipped: canary of {second['version']} still running (0 of ")
    assert json.loads((tmp_path / "registry" / "canary.json").read_text())["candidate"] == second["version"]
