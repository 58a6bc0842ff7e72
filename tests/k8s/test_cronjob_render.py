"""One scheduler setting: the opt-in CronJob (k8s/overlays/cronjob/cronjob.yaml) is the render of
params.yaml pipeline.cron / pipeline.profile."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest
import yaml

from uniret.config import load_params
from uniret.config.loader import ConfigError
from uniret.kubeflow.cronjob import k8s_schedule, render_cronjob, write_cronjob

CRONJOB = ("k8s", "overlays", "cronjob", "cronjob.yaml")


@pytest.fixture(scope="module")
def cfg(repo_root):
    return load_params(repo_root / "params.yaml").section("pipeline")


def test_the_committed_cronjob_is_the_render_of_params(repo_root, cfg):
    text = repo_root.joinpath(*CRONJOB).read_text()
    assert render_cronjob(text, cfg) == text, "the CronJob is stale: run `uniret pipeline cronjob --write`"
    doc = yaml.safe_load(text)
    assert doc["spec"]["schedule"] == " ".join(cfg.cron.split()[1:])  # KFP's seconds field dropped
    env = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "UNIRET_PROFILE", "value": cfg.profile} in env


def test_a_changed_cron_is_rendered_into_the_file(tmp_path, repo_root, cfg):
    path = tmp_path / "cronjob.yaml"
    path.write_text(repo_root.joinpath(*CRONJOB).read_text())
    assert write_cronjob(path, dataclasses.replace(cfg, cron="0 30 4 * * 1-5", profile="cpu")) is True
    doc = yaml.safe_load(path.read_text())
    assert doc["spec"]["schedule"] == "30 4 * * 1-5"
    env = doc["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "UNIRET_PROFILE", "value": "cpu"} in env
    assert write_cronjob(path, dataclasses.replace(cfg, cron="0 30 4 * * 1-5", profile="cpu")) is False


def test_the_cli_renders_the_committed_file(repo_root):
    out = subprocess.run([sys.executable, "-m", "uniret", "pipeline", "cronjob", "--params",
                          str(repo_root / "params.yaml"), "--path", str(repo_root.joinpath(*CRONJOB))],
                         capture_output=True, text=True, check=True).stdout
    assert out == repo_root.joinpath(*CRONJOB).read_text()


def test_a_seconds_field_kubernetes_cannot_run_is_refused():
    assert k8s_schedule("0 2 * * *") == "0 2 * * *"  # a 5-field cron gets seconds 0 first
    with pytest.raises(ConfigError, match="seconds field must be 0"):
        k8s_schedule("30 0 2 * * *")
