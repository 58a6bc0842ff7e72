"""uniret.kubeflow.task: workdir resolution, run overrides, and what components publish to KFP."""

from __future__ import annotations

import json

import pytest
from kfp import dsl

from uniret.config.loader import ConfigError
from uniret.core.errors import DataError
from uniret.kubeflow import task as kt


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_fresh_workdir_is_seeded_with_params(tmp_path, repo_root, monkeypatch):
    monkeypatch.setenv(kt.PARAMS_ENV, str(repo_root / "params.yaml"))
    workdir = tmp_path / "wd"
    path = kt.workdir_params(workdir)
    assert path == workdir / "params.yaml"
    assert path.read_text() == (repo_root / "params.yaml").read_text()
    path.write_text("profile: tiny\n")  # an existing workdir copy wins over the image's
    assert kt.workdir_params(workdir).read_text() == "profile: tiny\n"


def test_missing_params_is_a_config_error(tmp_path, monkeypatch):
    monkeypatch.setenv(kt.PARAMS_ENV, str(tmp_path / "nowhere.yaml"))
    with pytest.raises(ConfigError, match="no params.yaml in the workdir"):
        kt.workdir_params(tmp_path / "wd")


def test_data_root_follows_the_data_version(tmp_path, monkeypatch):
    monkeypatch.delenv("UNIRET_DATA", raising=False)
    assert kt.data_root(tmp_path, "v2") is None  # no data/ in the workdir: params decide
    (tmp_path / "data" / "v2").mkdir(parents=True)
    assert kt.data_root(tmp_path, "v2") == str(tmp_path / "data" / "v2")
    assert kt.data_root(tmp_path, "") == str(tmp_path / "data")
    with pytest.raises(DataError, match="data version 'v3' not found"):
        kt.data_root(tmp_path, "v3")
    monkeypatch.setenv("UNIRET_DATA", str(tmp_path))
    assert kt.data_root(tmp_path, "v3") is None  # $UNIRET_DATA wins (make_context reads it)


@pytest.mark.parametrize(("text", "message"), [
    ("{min_score: 1}", "invalid JSON at column 2"),
    ("[1]", "expected a JSON object, got list"),
])
def test_bad_gate_overrides(text, message):
    with pytest.raises(ConfigError, match=message):
        kt.parse_overrides(text, "gate_overrides")


def test_gate_overrides_reach_the_gate_section(tmp_path, repo_root, shared_data, monkeypatch):
    monkeypatch.setenv(kt.PARAMS_ENV, str(repo_root / "params.yaml"))
    monkeypatch.setenv("UNIRET_DATA", str(shared_data))
    req = kt.TaskRequest("gate", str(tmp_path), "tiny", gate_overrides='{"min_score": 0.42}')
    ctx = kt.task_context(req)
    assert ctx.params.section("gate").min_score == 0.42
    assert ctx.artifacts == tmp_path / "artifacts"
    # the file itself is untouched: the copy in the workdir is the repo's params.yaml, byte for byte
    assert (tmp_path / "params.yaml").read_bytes() == (repo_root / "params.yaml").read_bytes()
    bad = kt.TaskRequest("gate", str(tmp_path), "tiny", gate_overrides='{"min_scor": 0.42}')
    with pytest.raises(ConfigError, match="unknown key.*min_scor"):
        kt.task_context(bad)


def test_evaluation_metrics_are_logged_per_dataset_and_system(tiny_ctx, tmp_path):
    out = tiny_ctx.stage_dir("evaluate")
    doc = {"datasets": {"scifact": {"bm25": {"ndcg@10": 0.66, "map": 0.6}, "uni": {"ndcg@10": 0.7}},
                        "npl": {"bm25": {"ndcg@10": 0.3}}},
           "macro": {"bm25": {"ndcg@10": 0.48}, "uni": {"ndcg@10": 0.7}}}
    _write(out / "metrics.json", json.dumps(doc))
    _write(out / "metrics.md", "| dataset | ndcg@10 |\n")
    metrics = dsl.Metrics(name="metrics", uri=str(tmp_path / "kfp" / "metrics"))
    report = dsl.Markdown(name="report", uri=str(tmp_path / "kfp" / "report"))
    assert kt.publish_evaluation(tiny_ctx, metrics, report) == 5
    assert metrics.metadata == {"scifact/bm25/ndcg@10": 0.66, "scifact/uni/ndcg@10": 0.7,
                                "npl/bm25/ndcg@10": 0.3, "macro/bm25/ndcg@10": 0.48, "macro/uni/ndcg@10": 0.7}
    assert (tmp_path / "kfp" / "report").read_text() == "| dataset | ndcg@10 |\n"


@pytest.mark.parametrize("passed", [True, False])
def test_gate_decision_becomes_the_output(tiny_ctx, tmp_path, passed):
    out = tiny_ctx.stage_dir("gate")
    _write(out / "decision.json", json.dumps({"passed": passed, "checks": []}))
    _write(out / "decision.md", "# Gate\n")
    md = dsl.Markdown(name="decision", uri=str(tmp_path / "kfp" / "decision"))
    assert kt.publish_gate(tiny_ctx, md) is passed
    assert (tmp_path / "kfp" / "decision").read_text() == "# Gate\n"


def test_gate_decision_without_a_boolean_is_a_data_error(tiny_ctx, tmp_path):
    out = tiny_ctx.stage_dir("gate")
    _write(out / "decision.json", json.dumps({"passed": "yes"}))
    _write(out / "decision.md", "# Gate\n")
    with pytest.raises(DataError, match="passed"):
        kt.publish_gate(tiny_ctx, dsl.Markdown(name="d", uri=str(tmp_path / "d")))


def test_recipe_parameter_overrides_model_recipe(tmp_path, repo_root, shared_data, monkeypatch):
    monkeypatch.setenv(kt.PARAMS_ENV, str(repo_root / "params.yaml"))
    monkeypatch.setenv("UNIRET_DATA", str(shared_data))
    default = kt.task_context(kt.TaskRequest("warmup", str(tmp_path), "tiny"))
    assert kt.active_recipe(default) == default.params.raw["model"]["recipe"]  # "": params decide
    led = kt.task_context(kt.TaskRequest("warmup", str(tmp_path), "tiny", recipe="led"))
    assert kt.active_recipe(led) == "led" and led.params.section("model").recipe == "led"
    with pytest.raises(ConfigError, match="recipe"):
        kt.task_context(kt.TaskRequest("warmup", str(tmp_path), "tiny", recipe="bert"))


def test_report_figures_are_inlined_in_one_html_page(tiny_ctx, tmp_path):
    import base64

    out = tiny_ctx.stage_dir("report")
    png = b"\x89PNG\r\n\x1a\nfake-plot-bytes"
    _write(out / "report.md", "# Regression report\n")
    (out / "metric_by_dataset.png").write_bytes(png)
    summary = dsl.Markdown(name="summary", uri=str(tmp_path / "kfp" / "summary"))
    figures = dsl.HTML(name="figures", uri=str(tmp_path / "kfp" / "figures"))
    assert kt.publish_report(tiny_ctx, summary, figures) == 1
    page = (tmp_path / "kfp" / "figures").read_text()
    assert f"data:image/png;base64,{base64.b64encode(png).decode()}" in page
    assert "metric_by_dataset.png" in page
    assert (tmp_path / "kfp" / "summary").read_text() == "# Regression report\n"


def test_a_task_takes_the_nightly_lock_and_waits_for_a_running_nightly(tmp_path, repo_root, shared_data, monkeypatch):
    """A Kubeflow task and `uniret nightly` share nightly.lock_file on the volume (issue 55): while
    another process holds it, a task waits `pipeline.lock_wait_s`, then fails naming the holder,
    without running its stage; once it is free, the task takes it."""
    import os
    import subprocess
    import sys
    import time

    import yaml

    from uniret.core.errors import StageFailed

    monkeypatch.setenv("UNIRET_DATA", str(shared_data))
    workdir = tmp_path / "wd"
    params = yaml.safe_load((repo_root / "params.yaml").read_text())
    params["pipeline"]["lock_wait_s"] = 1
    _write(workdir / "params.yaml", yaml.safe_dump(params))
    lock, marker = workdir / ".cache" / "nightly.lock", tmp_path / "holding"
    code = (f"import pathlib, time; from uniret.utils.locks import file_lock\n"
            f"with file_lock({str(lock)!r}):\n    pathlib.Path({str(marker)!r}).touch(); time.sleep(600)")
    holder = subprocess.Popen([sys.executable, "-c", code])
    try:
        deadline = time.monotonic() + 60  # hang guard while the holder starts
        while not marker.exists():
            assert holder.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        with pytest.raises(StageFailed, match=rf"nightly lock stayed held for 1 s .*pid {holder.pid}"):
            kt.run_task(kt.TaskRequest("validate", str(workdir), "tiny"))
        assert not (workdir / "artifacts" / "validate").exists()  # the stage never ran
    finally:
        holder.kill()
        holder.wait()
    ctx = kt.task_context(kt.TaskRequest("validate", str(workdir), "tiny"))
    with kt.nightly_lock(ctx, 0) as path:
        assert path == lock and lock.read_text().strip() == str(os.getpid())
