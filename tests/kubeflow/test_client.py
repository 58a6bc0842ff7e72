"""`uniret pipeline submit|schedule` against the fake KFP API server (conftest.fake_kfp)."""

from __future__ import annotations

import json
import logging

import pytest
import yaml

from uniret.cli import main
from uniret.config import load_params
from uniret.config.loader import ConfigError
from uniret.kubeflow.client import normalize_cron
from uniret.kubeflow.project import compile_pipeline

STAGES = "validate,bm25,evaluate,gate,promote"


def _compiled(repo_root, tmp_path, stages=STAGES) -> list[dict]:
    cfg = load_params(repo_root / "params.yaml").section("pipeline")
    path = compile_pipeline(cfg, tmp_path / "expected.yaml", stages.split(","))
    return list(yaml.safe_load_all(path.read_text()))


def test_five_field_cron_gets_seconds_prepended(caplog):
    with caplog.at_level(logging.INFO, logger="uniret.kubeflow"):
        assert normalize_cron("30 2 * * 1-5") == "0 30 2 * * 1-5"
    assert "5 fields" in caplog.text
    assert normalize_cron(" 0 0 2 * * * ") == "0 0 2 * * *"
    with pytest.raises(ConfigError, match="expected 6 fields"):
        normalize_cron("0 2 * *")


def test_schedule_uploads_our_pipeline_and_creates_a_nightly_recurring_run(fake_kfp, repo_root, tmp_path):
    code = main(["pipeline", "schedule", "--params", str(repo_root / "params.yaml"), "--host", fake_kfp.url,
                 "--cron", "0 2 * * *", "--stages", STAGES, "--profile", "cpu", "--data-version", "v7",
                 "--gate-overrides", '{"min_score": 0.3}'])
    assert code == 0

    uploads = fake_kfp.calls("POST", "/pipelines/upload")
    versions = fake_kfp.calls("POST", "/pipelines/upload_version")
    assert len(uploads) == 1 and uploads[0].query["name"] == "uniret-retrain"
    assert len(versions) == 1
    sent = list(yaml.safe_load_all(versions[0].files["uploadfile"]))
    assert sent == _compiled(repo_root, tmp_path)  # exactly the pipeline this code compiles

    (job,) = fake_kfp.calls("POST", "/recurringruns")
    body = job.json
    assert body["trigger"]["cron_schedule"]["cron"] == "0 0 2 * * *"  # seconds field prepended
    assert int(body["max_concurrency"]) == 1
    assert body["no_catchup"] is True
    assert body["mode"] == "ENABLE"
    ref = body["pipeline_version_reference"]
    assert ref["pipeline_id"] == fake_kfp.pipelines["uniret-retrain"]["pipeline_id"]
    assert ref["pipeline_version_id"].startswith("ver-")
    params = body["runtime_config"]["parameters"]
    assert params["profile"] == "cpu" and params["data_version"] == "v7"
    assert json.loads(params["gate_overrides"]) == {"min_score": 0.3}
    assert params["workdir"] == "/workdir"
    assert body["experiment_id"] == fake_kfp.experiments["uniret"]["experiment_id"]


def test_submit_sends_our_spec_and_run_parameters(fake_kfp, repo_root, tmp_path):
    code = main(["pipeline", "submit", "--params", str(repo_root / "params.yaml"), "--host", fake_kfp.url,
                 "--stages", STAGES, "--recipe", "led", "--experiment", "nightly-tests", "--run-name", "r1"])
    assert code == 0
    (run,) = fake_kfp.calls("POST", "/runs")
    body = run.json
    assert body["display_name"] == "r1"
    assert body["experiment_id"] == fake_kfp.experiments["nightly-tests"]["experiment_id"]
    expected = _compiled(repo_root, tmp_path)
    assert body["pipeline_spec"]["pipeline_spec"] == expected[0]
    assert body["pipeline_spec"]["platform_spec"] == expected[1]  # PVC, GPUs, Secret travel with the run
    params = body["runtime_config"]["parameters"]
    assert params == {"recipe": "led", "profile": "gpu", "data_version": "", "gate_overrides": "{}",
                      "workdir": "/workdir"}
    assert not fake_kfp.calls("POST", "/recurringruns")


def test_bad_gate_overrides_fail_before_contacting_the_server(fake_kfp, repo_root, capsys):
    code = main(["pipeline", "submit", "--params", str(repo_root / "params.yaml"), "--host", fake_kfp.url,
                 "--stages", STAGES, "--gate-overrides", "[0.3]"])
    assert code == 1
    assert "gate_overrides: expected a JSON object" in capsys.readouterr().err
    assert fake_kfp.requests == []


def test_schedule_rejects_a_malformed_cron_before_contacting_the_server(fake_kfp, repo_root, capsys):
    code = main(["pipeline", "schedule", "--params", str(repo_root / "params.yaml"), "--host", fake_kfp.url,
                 "--cron", "every night"])
    assert code == 1
    assert "expected 6 fields" in capsys.readouterr().err
    assert fake_kfp.requests == []


def test_rescheduling_adds_a_version_to_the_existing_pipeline(fake_kfp, repo_root):
    argv = ["pipeline", "schedule", "--params", str(repo_root / "params.yaml"), "--host", fake_kfp.url,
            "--stages", STAGES]
    assert main(argv) == 0 and main(argv) == 0
    assert len(fake_kfp.calls("POST", "/pipelines/upload")) == 1  # created once
    versions = fake_kfp.calls("POST", "/pipelines/upload_version")
    assert len(versions) == 2
    assert {v.query["pipelineid"] for v in versions} == {fake_kfp.pipelines["uniret-retrain"]["pipeline_id"]}
    jobs = [r.json for r in fake_kfp.calls("POST", "/recurringruns")]
    assert [j["trigger"]["cron_schedule"]["cron"] for j in jobs] == ["0 0 2 * * *"] * 2  # params pipeline.cron
    assert len(fake_kfp.calls("POST", "/experiments")) == 1  # the experiment is reused
