"""`uniret nightly` as it runs in production (issue 12): a real `dvc repro` (the tiny profile's
spine: validate and bm25, in a temp git + dvc repo), the real gate, promote and report stages, and
the report's failure branch (the decision and the promotion stand, the run exits 1)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

REPRO = "dvc repro validate bm25"  # evaluate's inputs (index, metrics) are written by the test: see _upstream


def _upstream(repo: Path) -> None:
    """What the training half of the DAG leaves: an index bundle, its bench figures and evaluate
    metrics in which the configured candidate (the recipe's served mode) beats BM25."""
    from uniret.config import load_params
    from uniret.registry.gate import resolve_gate_config

    artifacts = repo / "artifacts"
    cand = resolve_gate_config(load_params(repo / "params.yaml", None)).candidate_system
    metrics = {"datasets": {"scifact": {cand: {"ndcg@10": 0.70}, "bm25": {"ndcg@10": 0.66}}},
               "macro": {cand: {"ndcg@10": 0.70}, "bm25": {"ndcg@10": 0.66}}}
    for stage in ("index", "bench", "evaluate"):
        (artifacts / stage).mkdir(parents=True, exist_ok=True)
        (artifacts / stage / "manifest.json").write_text(json.dumps({"inputs": {"x": "h"}}))
    (artifacts / "evaluate" / "metrics.json").write_text(json.dumps(metrics))
    (artifacts / "bench" / "bench.json").write_text(json.dumps(
        {"modes": {"bm25": {"p50_ms": 1.0, "p95_ms": 5.0}, cand: {"p50_ms": 2.0, "p95_ms": 20.0}}}))
    (artifacts / "index" / "bundle").mkdir()
    (artifacts / "index" / "bundle" / "manifest.json").write_text(json.dumps(
        {"metrics": {"mean_active_terms_doc": 50, "bytes_per_doc_dense": 1536.0, "bytes_per_doc_sparse": 400.0}}))


@pytest.fixture
def project(tmp_path, dvc_project):
    def edit(raw):
        raw["data"]["eval_datasets"] = ["scifact"]
        raw["registry"] = {**raw["registry"], "root": "registry", "dvc_push": False, "serve_url": None}
        raw["nightly"]["repro_command"] = REPRO

    repo = dvc_project(tmp_path / "repo", edit)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    env.pop("UNIRET_ARTIFACTS", None)
    env.pop("UNIRET_ADMIN_TOKEN", None)
    _upstream(repo)
    return repo, env


def _nightly(repo: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "uniret", "nightly"], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=1200)


def test_nightly_runs_dvc_repro_gate_promote_report_and_the_report_failure_branch(project):
    from uniret.registry.pointer import read_pointer
    from uniret.registry.verify import verify_registry

    repo, env = project
    first = _nightly(repo, env)
    assert first.returncode == 0, first.stdout + first.stderr[-4000:]
    assert f"{REPRO}: exit 0" in first.stdout and "promote: promoted" in first.stdout and "report: written" in first.stdout
    assert "Running stage 'validate'" in first.stdout + first.stderr  # dvc really reproduced the spine
    assert (repo / "artifacts" / "bm25" / "manifest.json").is_file() and (repo / "dvc.lock").is_file()
    assert (repo / "artifacts" / "report" / "manifest.json").is_file()
    pointer = read_pointer(repo / "registry")
    assert verify_registry(repo / "registry").ok

    # failure branch: the report cannot be built (a value its section's checks refuse when it is read;
    # a wrong type would be refused when params.yaml is loaded, before any work); dvc has nothing to
    # redo, the gate still decides, the promotion stands, and the run is reported failed
    raw = yaml.safe_load((repo / "params.yaml").read_text())
    raw["report"]["significance_resamples"] = -1
    (repo / "params.yaml").write_text(yaml.safe_dump(raw, sort_keys=False))
    second = _nightly(repo, env)
    assert second.returncode == 1, second.stdout + second.stderr[-4000:]
    assert "report failed" in second.stderr and "significance_resamples" in second.stderr, second.stderr[-4000:]
    assert "Running stage" not in second.stdout + second.stderr  # dvc: up to date
    assert read_pointer(repo / "registry")["version"] == pointer["version"]
    assert not [p for p in (repo / "artifacts").iterdir() if ".tmp-" in p.name]
