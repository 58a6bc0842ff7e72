"""Report stage: PNGs, report.md and an offline W&B run folder, all inside tmp."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from uniret.registry.promotion import promote
from uniret.runtime import make_context
from uniret.stages import report as report_stage

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _metrics(uni_sci: float, uni_nf: float) -> dict:
    uni, bm25 = {"scifact": uni_sci, "nfcorpus": uni_nf}, {"scifact": 0.66, "nfcorpus": 0.32}
    return {
        "datasets": {ds: {"uni": {"ndcg@10": uni[ds], "recall@100": 0.9}, "bm25": {"ndcg@10": bm25[ds]}} for ds in uni},
        "macro": {"uni": {"ndcg@10": sum(uni.values()) / 2}, "bm25": {"ndcg@10": sum(bm25.values()) / 2}},
    }


def _write_train_tsv(path: Path, sparsity: bool) -> None:
    path.parent.mkdir(parents=True)
    head = ["step", "lr", "loss"] + (["active_terms_q", "active_terms_d"] if sparsity else [])
    rows = ["\t".join(head)]
    for step in range(1, 11):
        row = [str(step), "1e-4", str(2.0 / step)] + ([str(30 - step), ""] if sparsity and step % 2 else
                                                     [str(30 - step), str(200 - step)] if sparsity else [])
        rows.append("\t".join(row))
    path.write_text("\n".join(rows) + "\n")


@pytest.fixture
def ctx(tmp_path, repo_root, shared_data, monkeypatch):
    monkeypatch.setenv("WANDB_DIR", str(tmp_path / "wandb"))
    monkeypatch.setenv("WANDB_MODE", "offline")
    raw = yaml.safe_load((repo_root / "params.yaml").read_text())
    raw["registry"] = {"root": "registry", "dvc_push": False}
    raw["model"]["recipe"] = "unifier"  # the metrics below name its served mode, uni
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    return make_context(tmp_path / "params.yaml", "tiny", str(shared_data), tmp_path / "artifacts")


def test_report_writes_pngs_markdown_and_offline_wandb_run(ctx, tmp_path):
    art = ctx.artifacts
    # production: a bundle promoted earlier with its own stored metrics
    prod_src = tmp_path / "prod-bundle"
    prod_src.mkdir()
    (prod_src / "manifest.json").write_text("{}")
    promote(tmp_path / "registry", prod_src, evaluation=_metrics(0.69, 0.35),
            decision={"passed": True, "candidate": "uni"}, lineage={}, version="v1", dvc_push=False)
    for stage, seconds in (("evaluate", 300.0), ("gate", 1.0), ("index", 120.0)):
        (art / stage).mkdir(parents=True)
        (art / stage / "manifest.json").write_text(json.dumps({"seconds": seconds}))
    (art / "evaluate" / "metrics.json").write_text(json.dumps(_metrics(0.70, 0.30)))
    decision = {"passed": False, "candidate": "uni", "production": "v1", "checks": [
        {"name": "no_regression", "dataset": "nfcorpus", "value": 0.30, "threshold": 0.34, "passed": False,
         "status": "fail", "reason": "nfcorpus: regressed"}]}
    (art / "gate" / "decision.json").write_text(json.dumps(decision))
    (art / "index" / "bundle").mkdir()
    (art / "index" / "bundle" / "manifest.json").write_text(json.dumps({"metrics": {"mean_active_terms_doc": 7}}))
    _write_train_tsv(art / "warmup" / "metrics" / "train.tsv", sparsity=True)
    # per-query scores: uni beats bm25 by 0.1 on every scifact query, ties on nfcorpus
    for system, sci, nf in (("uni", [0.8, 0.6, 0.7], [0.3, 0.3]), ("bm25", [0.7, 0.5, 0.6], [0.3, 0.3])):
        for ds, values in (("scifact", sci), ("nfcorpus", nf)):
            path = art / "evaluate" / "per_query" / system / f"{ds}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps({f"q{i}": {"ndcg@10": v} for i, v in enumerate(values)}))
    _write_train_tsv(art / "reranker" / "metrics" / "train.tsv", sparsity=False)

    out = report_stage.run(ctx)

    report_dir = ctx.stage_dir("report")
    pngs = sorted(p.name for p in report_dir.glob("*.png"))
    assert pngs == ["metric_by_dataset.png", "sparsity.png", "training_loss.png"]
    for name in pngs:
        data = (report_dir / name).read_bytes()
        assert data[:8] == PNG_MAGIC and len(data) > 1000, name
    text = (report_dir / "report.md").read_text()
    assert "**BLOCKED**" in text and "nfcorpus: regressed" in text
    assert "| nfcorpus | 0.3000 | 0.3500 | -0.0500 | 0.3200 | -0.0200 |" in text
    assert "### uni - bm25: 95% bootstrap intervals over the queries" in text
    assert "| scifact | 3 | 0.6000 | 0.7000 | +0.1000 | +0.1000 .. +0.1000 | 0.0% |" in text
    assert "| nfcorpus | 2 | 0.3000 | 0.3000 | +0.0000 | +0.0000 .. +0.0000 | 100.0% |" in text
    assert "| macro | 5 |" in text  # scifact is the tiny profile's train dataset too: no zero-shot row of one
    assert "continual: no training log" in text  # absent logs are named, not silently dropped
    assert "![training loss](training_loss.png)" in text
    # stage wall times from the manifests, in DAG order, with their total
    assert "| index | 120 |\n| evaluate | 300 |\n| gate | 1 |\n| **total** | **421** |" in text

    run_dir = Path(out["wandb"]["run_dir"])
    assert out["wandb"]["mode"] == "offline"
    assert run_dir.is_relative_to(tmp_path / "wandb") and run_dir.name.startswith("offline-run-")
    assert list(run_dir.glob("run-*.wandb")), "no offline run file"
    assert f"wandb sync {run_dir}" in text


def test_report_without_gate_or_logs_says_so(ctx, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "disabled")
    (ctx.artifacts / "evaluate").mkdir(parents=True)
    (ctx.artifacts / "evaluate" / "manifest.json").write_text("{}")
    (ctx.artifacts / "evaluate" / "metrics.json").write_text(json.dumps(_metrics(0.7, 0.3)))
    out = report_stage.run(ctx)
    text = (ctx.stage_dir("report") / "report.md").read_text()
    assert "No gate decision: gate decision not found at" in text
    assert "(none: no per-query scores of uni under" in text  # an evaluate output without per_query/
    assert out["figures"] == ["metric_by_dataset.png"] and out["wandb"]["status"].startswith("skipped")
    assert "production column: no production bundle in the registry" in text


def test_report_says_when_promotion_is_paused(ctx, tmp_path, monkeypatch):
    """`uniret registry pause` (with its time, author and reason) and params nightly.promote: false put
    a paused line under the gate's; no pause, no line."""
    from uniret.registry.control import pause, resume

    monkeypatch.setenv("WANDB_MODE", "disabled")
    (ctx.artifacts / "evaluate").mkdir(parents=True)
    (ctx.artifacts / "evaluate" / "manifest.json").write_text("{}")
    (ctx.artifacts / "evaluate" / "metrics.json").write_text(json.dumps(_metrics(0.7, 0.3)))
    registry = tmp_path / "registry"
    registry.mkdir()
    report = ctx.stage_dir("report") / "report.md"

    assert report_stage.run(ctx)["paused"] is None
    assert "**paused**" not in report.read_text()

    pause(registry, reason="label audit")
    out = report_stage.run(ctx)
    line = next(x for x in report.read_text().splitlines() if x.startswith("- **paused**"))
    assert "promotion paused since" in line and "(label audit)" in line and "uniret registry resume" in line
    assert out["paused"] in line

    resume(registry)
    assert report_stage.run(ctx)["paused"] is None
    raw = yaml.safe_load((tmp_path / "params.yaml").read_text())
    raw["nightly"]["promote"] = False
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(raw))
    report_stage.run(make_context(tmp_path / "params.yaml", "tiny", str(ctx.data_root), ctx.artifacts))
    assert "- **paused**: params nightly.promote is false" in report.read_text()


def _per_query(folder: Path, system: str, values: dict[str, list[float]]) -> None:
    for ds, scores in values.items():
        path = folder / "per_query" / system / f"{ds}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({f"q{i}": {"ndcg@10": v} for i, v in enumerate(scores)}))


def test_report_compares_with_productions_scores_on_this_runs_data(ctx, tmp_path, monkeypatch):
    """The production column and the candidate - production intervals use production's scores on this
    run's data: the gate's re-scoring when it made one, else those published with the bundle when the
    gate found them measured on this run's data, else none (with the reason)."""
    monkeypatch.setenv("WANDB_MODE", "disabled")
    prod_src = tmp_path / "prod-bundle"
    prod_src.mkdir()
    (prod_src / "manifest.json").write_text("{}")
    stored_per_query = tmp_path / "stored"
    _per_query(stored_per_query, "uni", {"scifact": [0.5, 0.5, 0.5], "nfcorpus": [0.4, 0.2]})
    promote(tmp_path / "registry", prod_src, evaluation=_metrics(0.69, 0.35),
            decision={"passed": True, "candidate": "uni"}, lineage={}, version="v1", dvc_push=False,
            attachments={"evaluation/per_query/uni": stored_per_query / "per_query" / "uni"})
    art = ctx.artifacts
    for stage in ("evaluate", "gate"):
        (art / stage).mkdir(parents=True)
        (art / stage / "manifest.json").write_text("{}")
    (art / "evaluate" / "metrics.json").write_text(json.dumps(_metrics(0.70, 0.30)))
    _per_query(art / "evaluate", "uni", {"scifact": [0.8, 0.6, 0.7], "nfcorpus": [0.3, 0.3]})

    def report_with(kind: str, production_scores: str, rescoring: dict | None) -> str:
        (art / "gate" / "decision.json").write_text(json.dumps(
            {"passed": True, "candidate": "uni", "production": "v1", "production_scores": production_scores,
             "production_scores_kind": kind, "checks": []}))
        path = art / "gate" / "production_metrics.json"
        path.unlink(missing_ok=True)
        if rescoring is not None:
            path.write_text(json.dumps(rescoring))
        report_stage.run(ctx)
        return (ctx.stage_dir("report") / "report.md").read_text()

    _per_query(art / "gate" / "production", "uni", {"scifact": [0.6, 0.6, 0.6], "nfcorpus": [0.3, 0.3]})
    text = report_with("rescored", "re-scored on this run's data (nfcorpus: its files changed)",
                       {"version": "v1", "system": "uni", "why": "nfcorpus: its files changed",
                        "metrics": _metrics(0.60, 0.31)})
    assert "production: `v1` (scores re-scored on this run's data by the gate)" in text
    assert "| nfcorpus | 0.3000 | 0.3100 | -0.0100 | 0.3200 | -0.0200 |" in text
    assert "### uni - production: 95% bootstrap intervals over the queries" in text
    assert "| scifact | 3 | 0.6000 | 0.7000 | +0.1000 |" in text  # the gate's per-query scores, not the stored

    # the gate used the stored scores (same data): the bundle's own per-query files
    text = report_with("stored", "stored at promotion", {"version": "v0", "system": "uni", "why": "x", "metrics": {}})
    assert "production: `v1` (scores stored at its promotion)" in text
    assert "| nfcorpus | 0.3000 | 0.3500 | -0.0500 | 0.3200 | -0.0200 |" in text
    assert "| scifact | 3 | 0.5000 | 0.7000 | +0.2000 |" in text and "| nfcorpus | 2 | 0.3000 | 0.3000 |" in text

    # stored scores from other data (rescore_production: never): no intervals, and why
    text = report_with("stored_other_data", "stored at promotion, measured on other data (scifact: its files changed)",
                       None)
    assert "(none: production's scores: stored at promotion, measured on other data" in text


def test_report_shows_what_promote_did_with_this_decision_and_never_an_earlier_night_s(ctx, tmp_path, monkeypatch):
    """The promote stage's promotion.json (its outcome and the corpus refresh) goes under the gate's
    lines only when it records this decision's sha256: tomorrow's report before promote shows none."""
    from uniret.stages import promote as promote_stage

    monkeypatch.setenv("WANDB_MODE", "disabled")
    for stage in ("evaluate", "gate"):
        (ctx.artifacts / stage).mkdir(parents=True)
        (ctx.artifacts / stage / "manifest.json").write_text("{}")
    (ctx.artifacts / "evaluate" / "metrics.json").write_text(json.dumps(_metrics(0.7, 0.3)))
    decision = {"passed": False, "candidate": "uni", "checks": [
        {"name": "beats_baseline", "status": "fail", "reason": "0.50 below bm25"}]}
    (ctx.artifacts / "gate" / "decision.json").write_text(json.dumps(decision))
    (tmp_path / "registry").mkdir()
    done = promote_stage.run(ctx)  # blocked: nothing promoted; no production, so nothing to refresh
    assert done["outcome"] == "blocked" and done["refresh"]["status"] == "skipped"

    out = report_stage.run(ctx)
    line = next(x for x in (ctx.stage_dir("report") / "report.md").read_text().splitlines()
                if x.startswith("- **tonight**"))
    assert "blocked: gate blocked (beats_baseline: 0.50 below bm25)" in line
    assert "corpus not refreshed: nothing is in production" in line and out["tonight"] in line

    decision["checks"][0]["reason"] = "0.49 below bm25"  # the next night's decision; promote not run yet
    (ctx.artifacts / "gate" / "decision.json").write_text(json.dumps(decision))
    assert report_stage.run(ctx)["tonight"] is None
    assert "**tonight**" not in (ctx.stage_dir("report") / "report.md").read_text()
