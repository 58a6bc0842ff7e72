"""The real pipeline under kfp.local (SubprocessRunner): validate -> bm25 -> evaluate -> gate -> promote -> report."""

from __future__ import annotations

import dataclasses
import json

import pytest
import yaml

from uniret.config import load_params
from uniret.core.errors import StageFailed
from uniret.kubeflow.local import run_local


@pytest.fixture
def local_cfg(repo_root, tmp_path):
    cfg = load_params(repo_root / "params.yaml").section("pipeline")
    return dataclasses.replace(cfg, local_root=str(tmp_path / "kfp"))  # kfp outputs and temp dirs in tmp


def _executor_output(run, task: str) -> dict:
    return json.loads((run.outputs / task / "executor_output.json").read_text())


@pytest.fixture
def scifact_params(tmp_path, tiny_dag_params):
    """The repo's params evaluating SciFact only, as the whole-DAG tests run them (tests/conftest.py)."""
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(tiny_dag_params(), sort_keys=False))
    return path


@pytest.mark.slow
def test_tiny_prefix_runs_and_a_blocked_gate_promotes_nothing(repo_root, shared_data, tmp_path, local_cfg, scifact_params):
    workdir = tmp_path / "wd"
    run = run_local(
        repo_root, local_cfg, workdir=workdir, profile="tiny",
        stages=["validate", "bm25", "evaluate", "gate", "promote", "report"],
        params_path=scifact_params, data=shared_data,
        gate_overrides='{"candidate_system": "bm25", "min_score": 0.99}',  # nothing reaches 0.99
    )
    assert set(run.manifests) == {"validate", "bm25", "evaluate", "gate", "promote", "report"}
    # promote runs on a blocked night too: it promotes nothing and refreshes production's corpus (none here)
    promotion = json.loads((workdir / "artifacts" / "promote" / "promotion.json").read_text())
    assert promotion["outcome"] == "blocked" and promotion["promoted"] is False, promotion
    assert promotion["refresh"]["status"] == "skipped" and "nothing is in production" in promotion["refresh"]["summary"]
    assert "min_score" in promotion["summary"]
    assert "blocked" in (workdir / "artifacts" / "report" / "report.md").read_text()
    # and the night is recorded where monitoring reads it, as `uniret nightly` records it (exit 3: blocked)
    last = json.loads((workdir / "registry" / "nightly.json").read_text())["last_run"]
    assert last["outcome"] == "blocked" and last["code"] == 3 and "min_score" in last["summary"], last
    assert (workdir / "params.yaml").is_file()  # the workdir was seeded with the project's params

    metrics = json.loads((workdir / "artifacts" / "evaluate" / "metrics.json").read_text())
    logged = _executor_output(run, "evaluate")["artifacts"]["metrics"]["artifacts"][0]["metadata"]
    assert logged["scifact/bm25/ndcg@10"] == pytest.approx(metrics["datasets"]["scifact"]["bm25"]["ndcg@10"])
    assert logged["macro/bm25/ndcg@10"] == pytest.approx(metrics["macro"]["bm25"]["ndcg@10"])
    assert 0.0 < logged["scifact/bm25/ndcg@10"] <= 1.0
    report = (run.outputs / "evaluate" / "report").read_text()
    assert report == (workdir / "artifacts" / "evaluate" / "metrics.md").read_text()

    decision = json.loads((workdir / "artifacts" / "gate" / "decision.json").read_text())
    assert decision["passed"] is False
    assert _executor_output(run, "gate")["parameterValues"]["Output"] is False
    figures = (run.outputs / "report" / "figures").read_text()
    assert figures.count("data:image/png;base64,") == len(list((workdir / "artifacts" / "report").glob("*.png"))) > 0
    assert list((tmp_path / "kfp" / "tmp").iterdir()) == []  # kfp's per-task temp folders are gone

    # Same workdir, gate passing this time: promote fails because no index bundle was built in this
    # prefix - and the failure names the task.
    with pytest.raises(StageFailed, match="promote"):
        run_local(repo_root, local_cfg, workdir=workdir, profile="tiny", stages=["gate", "promote"],
                  params_path=scifact_params, data=shared_data,
                  # no bench or index stage in this prefix: budgets off (unmeasurable budgets block)
                  gate_overrides='{"candidate_system": "bm25", "max_latency_p95_ms": null, "max_latency_ratio_bm25": null, '
                                 '"max_bytes_per_doc_dense": null, "max_bytes_per_doc_sparse": null}')
    assert json.loads((workdir / "artifacts" / "gate" / "decision.json").read_text())["passed"] is True
    # the exit handler recorded the failed run as a failed night, where monitoring reads it
    last = json.loads((workdir / "registry" / "nightly.json").read_text())["last_run"]
    assert last["outcome"] == "failed" and last["code"] == 1 and "Kubeflow run" in last["summary"], last
    assert "FAILED" in last["summary"], last
