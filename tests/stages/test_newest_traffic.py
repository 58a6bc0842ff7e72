"""The gate's "newest traffic" check on real parts: the tiny SciFact bundle is production, the evaluate
stage scores the candidate's served mode and production's on a held-out day written in the feedback
stage's format, and the gate pairs them per query. A candidate the day's clicks rank clearly worse is
blocked, naming the check; an equal one passes; without logs the check is skipped with the reason."""

from __future__ import annotations

import copy
import json
import shutil

import pytest

from uniret.clicks.sessions import query_key
from uniret.config import Params
from uniret.core.runs import read_run
from uniret.evaluation import heldout
from uniret.evaluation import newest_traffic as traffic
from uniret.registry.integrity import write_checksums
from uniret.registry.promotion import promote
from uniret.runtime import StageContext, make_context, stage_output
from uniret.stages import evaluate as evaluate_stage
from uniret.stages import feedback as feedback_stage
from uniret.stages import gate as gate_stage

PRODUCTION_MODE = "uni"  # the mode production serves (its promotion's gate candidate)
OTHER_MODE = "dense"  # a different served mode of the same bundle: the "worse" candidate
DAY = "2026-12-04"


def _context(repo_root, shared_data, tmp_path, artifacts, candidate: str) -> StageContext:
    base = make_context(repo_root / "params.yaml", "tiny", str(shared_data), artifacts)
    raw = copy.deepcopy(base.params.raw)
    raw["data"]["eval_datasets"] = ["scifact"]
    raw["evaluate"]["sources"] = ["bm25", "bundle"]
    raw["retrieval"]["modes"] = [PRODUCTION_MODE, OTHER_MODE]
    # every other check out of the way: this test is about the newest traffic
    raw["gate"].update(candidate_system=candidate, regression_rule="threshold", max_regression=1.0, min_score=0.0,
                       min_score_per_dataset={}, bm25_margin=-1.0, rescore_production="never",
                       max_latency_p95_ms=None, max_latency_ratio_bm25=None, max_latency_p50_vs_production=None,
                       max_latency_p95_vs_production=None, max_bytes_per_doc_dense=None,
                       max_bytes_per_doc_sparse=None, profiles={},
                       newest_traffic={"enabled": True, "judgments": "click_model", "metric": "ndcg@10",
                                       "margin": 0.01})
    raw["registry"] = {"root": str(tmp_path / "registry"), "dvc_push": False}
    return StageContext(Params(raw=raw, profile="tiny", path=base.params.path), base.data_root, artifacts)


def _publish(ctx: StageContext, bundle) -> str:
    evaluation = {"datasets": {"scifact": {PRODUCTION_MODE: {"ndcg@10": 0.0}, OTHER_MODE: {"ndcg@10": 0.0}}}}
    return promote(ctx.params.raw["registry"]["root"], bundle, evaluation=evaluation,
                   decision={"passed": True, "candidate": PRODUCTION_MODE}, lineage={}, dvc_push=False).version


def _queries(ctx: StageContext) -> dict[str, str]:
    """The slice's test queries as a logged day would key them."""
    texts = ctx.dataset("scifact").split_queries("test").values()
    return {query_key(t): t for t in texts}


def _write_heldout(ctx: StageContext, queries: dict[str, str], judgments: dict[tuple[str, str], float]) -> None:
    """artifacts/feedback as the feedback stage writes it for a window with a held-out day."""
    with stage_output(ctx, feedback_stage.STAGE, sections=feedback_stage.SECTIONS) as (out, manifest):
        feedback_stage.write_jsonl(out / feedback_stage.HELDOUT_QUERIES,
                                   [{"_id": k, "text": t} for k, t in sorted(queries.items())])
        feedback_stage.write_qrels(out / feedback_stage.CLICK_MODEL_QRELS, judgments)
        feedback_stage.write_qrels(out / feedback_stage.COEC_QRELS, {k: 2.0 * v for k, v in judgments.items()})
        feedback_stage.write_qrels(out / feedback_stage.IPS_QRELS, {k: 3.0 * v for k, v in judgments.items()})
        manifest["metrics"] = {"status": "ok", "window": {"train": ["2026-12-03"], "heldout": DAY}}


def _judgments_against(ctx, bundle, queries) -> dict[tuple[str, str], float]:
    """Clicks on what production ranks in its top 3 and the other mode leaves out of its top 10:
    production finds them, the other mode cannot."""
    prod = traffic.bundle_run(ctx, bundle, PRODUCTION_MODE, queries)
    other = traffic.bundle_run(ctx, bundle, OTHER_MODE, queries)
    out = {}
    for q in queries:
        top_other = {d for d, _ in sorted(other[q].items(), key=lambda kv: -kv[1])[:10]}
        for rank, (doc, _) in enumerate(sorted(prod[q].items(), key=lambda kv: -kv[1])[:3]):
            if doc not in top_other:
                out[(q, doc)] = 1.0 - 0.2 * rank
    return out


def _decision(ctx) -> tuple[dict, dict, str]:
    out = gate_stage.run(ctx)
    decision = json.loads((ctx.stage_dir("gate") / gate_stage.DECISION_JSON).read_text())
    [check] = [c for c in decision["checks"] if c["name"] == "newest_traffic"]
    return out, check, (ctx.stage_dir("gate") / gate_stage.DECISION_MD).read_text()


@pytest.fixture
def worse_world(repo_root, shared_data, tmp_path, gate_artifacts, tiny_bundle):
    ctx = _context(repo_root, shared_data, tmp_path, gate_artifacts, OTHER_MODE)
    queries = _queries(ctx)
    judgments = _judgments_against(ctx, tiny_bundle, queries)
    assert len({q for q, _ in judgments}) >= 5, "too few queries where the two modes differ"
    _write_heldout(ctx, queries, judgments)
    return ctx, _publish(ctx, tiny_bundle)


def test_a_candidate_the_newest_clicks_rank_worse_is_blocked_naming_the_check(worse_world):
    ctx, version = worse_world
    doc = evaluate_stage.run(ctx)
    section = doc[traffic.NEWEST_TRAFFIC]
    assert section["status"] == "scored" and section["day"] == DAY
    assert section["production"]["status"] == "scored" and section["production"]["version"] == version
    cand = section["candidate"]["scores"]["click_model"]
    prod = section["production"]["scores"]["click_model"]
    assert cand["ndcg@10"] == 0.0 and prod["ndcg@10"] > 0.5 and cand["queries"] == prod["queries"] >= 5
    # none of the clicked documents in the candidate's top 10; its condensed list finds them further down
    assert cand["judged@10"] == 0.0 < prod["judged@10"] and cand["condensed_ndcg@10"] > cand["ndcg@10"]
    assert section["metrics"] == [*traffic.METRICS, traffic.JUDGED]
    folder = traffic.scores_dir(ctx.stage_dir("evaluate")) / "per_query"
    assert {p.name for p in (folder / OTHER_MODE).iterdir()} == {"click_model.json", "coec.json", "ips.json"}
    assert (folder / traffic.PRODUCTION_SYSTEM / "coec.json").is_file()
    runs = traffic.scores_dir(ctx.stage_dir("evaluate")) / traffic.RUNS_DIR  # what each side returned
    for system in (OTHER_MODE, traffic.PRODUCTION_SYSTEM):
        ranked = read_run(runs / f"{system}.trec")
        assert set(ranked) == set(_queries(ctx)) and max(map(len, ranked.values())) <= traffic.RUN_DEPTH

    out, check, markdown = _decision(ctx)
    assert out["passed"] is False
    assert check["status"] == "fail" and check["rule"] == "paired" and check["value"] < -0.5
    assert check["interval"][1] < -0.01 and check["threshold"] == pytest.approx(-0.01)
    assert f"held-out day {DAY}, click_model judgments, ndcg@10: candidate - production {version}" in check["reason"]
    assert "worse beyond margin 0.01" in check["reason"]
    assert "## Why blocked" in markdown and "- newest_traffic: held-out day" in markdown


def test_an_equal_candidate_passes(repo_root, shared_data, tmp_path, gate_artifacts, tiny_bundle):
    ctx = _context(repo_root, shared_data, tmp_path, gate_artifacts, PRODUCTION_MODE)
    queries = _queries(ctx)
    _write_heldout(ctx, queries, _judgments_against(ctx, tiny_bundle, queries))
    _publish(ctx, tiny_bundle)
    evaluate_stage.run(ctx)

    out, check, markdown = _decision(ctx)
    assert out["passed"] is True
    assert check["status"] == "pass" and check["value"] == pytest.approx(0.0, abs=1e-12)
    assert check["interval"] == pytest.approx([0.0, 0.0], abs=1e-12)
    assert "not worse beyond margin 0.01" in check["reason"]
    assert "| newest_traffic |" in markdown


def test_no_feedback_logs_skip_the_check_with_the_reason(repo_root, shared_data, tmp_path, gate_artifacts,
                                                         tiny_bundle):
    ctx = _context(repo_root, shared_data, tmp_path, gate_artifacts, PRODUCTION_MODE)
    feedback_stage.run(ctx)  # the real stage: no logs, only its manifest saying so
    _publish(ctx, tiny_bundle)
    doc = evaluate_stage.run(ctx)
    assert doc[traffic.NEWEST_TRAFFIC] == {
        "status": "skipped", "reason": "feedback stage skipped: no logs (feedback.log_dir is null)"}
    assert not traffic.scores_dir(ctx.stage_dir("evaluate")).exists()

    out, check, markdown = _decision(ctx)
    assert out["passed"] is True and check["status"] == "skipped"
    assert check["reason"] == "no newest traffic: feedback stage skipped: no logs (feedback.log_dir is null)"
    assert "| skipped | no newest traffic: feedback stage skipped: no logs" in markdown


def test_the_evaluate_stage_reads_the_files_the_feedback_stage_writes():
    assert heldout.HELDOUT_QUERIES == feedback_stage.HELDOUT_QUERIES
    assert heldout.JUDGMENTS == {"click_model": feedback_stage.CLICK_MODEL_QRELS, "coec": feedback_stage.COEC_QRELS,
                                 "ips": feedback_stage.IPS_QRELS}


def test_production_on_another_corpus_skips_and_a_damaged_one_blocks(repo_root, shared_data, tmp_path,
                                                                     gate_artifacts, tiny_bundle):
    ctx = _context(repo_root, shared_data, tmp_path, gate_artifacts, PRODUCTION_MODE)
    queries = _queries(ctx)
    _write_heldout(ctx, queries, _judgments_against(ctx, tiny_bundle, queries))
    other = tmp_path / "other-corpus-bundle"
    shutil.copytree(tiny_bundle, other)
    manifest = json.loads((other / "manifest.json").read_text())
    (other / "manifest.json").write_text(json.dumps({**manifest, "train_dataset": "nfcorpus"}))
    write_checksums(other)  # as the index stage writes them: this bundle verifies
    version = _publish(ctx, other)

    section = evaluate_stage.run(ctx)[traffic.NEWEST_TRAFFIC]
    assert section["status"] == "scored" and section["production"]["status"] == "other_corpus"
    reason = (f"production {version} indexes 'nfcorpus', the candidate 'scifact': the held-out day's judgments "
              "name the candidate's corpus only")
    assert section["production"]["reason"] == reason
    _, check, _ = _decision(ctx)
    assert (check["status"], check["reason"]) == ("skipped", reason)

    version = _publish(ctx, tiny_bundle)
    registry = tmp_path / "registry" / "bundles" / version
    damaged = next(p for p in sorted(registry.rglob("*")) if p.is_file() and p.name not in ("manifest.json",
                                                                                            "SHA256SUMS"))
    damaged.write_bytes(damaged.read_bytes() + b"tampered")
    section = evaluate_stage.run(ctx)[traffic.NEWEST_TRAFFIC]
    assert section["production"]["status"] == "unavailable"
    assert section["production"]["reason"].startswith(f"production {version} fails verification")
    out, check, _ = _decision(ctx)
    assert out["passed"] is False and check["status"] == "fail"
    assert check["reason"].startswith(f"production {version} fails verification")
