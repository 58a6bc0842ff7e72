"""The pipeline (uniret.kubeflow.pipeline): the committed YAML is current; GPUs, PVC, Secrets, promote after the
gate whatever it decided, and the exit handler compile in."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from uniret.config import load_params
from uniret.config.loader import ConfigError
from uniret.kubeflow.pipeline import build_pipeline
from uniret.kubeflow.project import COMPILED, compile_pipeline
from uniret.stages import STAGES

GPU_STAGES = {"warmup", "mine", "reranker", "continual", "distill", "index"}


@pytest.fixture(scope="module")
def cfg(repo_root):
    return load_params(repo_root / "params.yaml").section("pipeline")


@pytest.fixture(scope="module")
def compiled(repo_root, cfg, tmp_path_factory):
    path = compile_pipeline(cfg, tmp_path_factory.mktemp("kfp") / "retrain.yaml")
    spec, platform = yaml.safe_load_all(path.read_text())
    return path, spec, platform


def _task_executors(spec: dict) -> dict[str, str]:
    """Task name -> executor label, through the root DAG and nested (condition) DAGs."""
    out: dict[str, str] = {}

    def walk(tasks: dict) -> None:
        for name, task in tasks.items():
            comp = spec["components"][task["componentRef"]["name"]]
            if "dag" in comp:
                walk(comp["dag"]["tasks"])
            else:
                out[name] = comp["executorLabel"]

    walk(spec["root"]["dag"]["tasks"])
    return out


def test_committed_yaml_is_current(repo_root, compiled):
    path, _, _ = compiled
    assert (repo_root / COMPILED).read_text() == path.read_text(), (
        "pipelines/retrain.yaml is stale: run `uniret pipeline compile`"
    )


def test_the_entry_point_recompiles_the_committed_yaml(repo_root, tmp_path):
    """`python pipelines/retrain.py` (no sys.path tricks, run from elsewhere) writes the committed YAML."""
    out = subprocess.run([sys.executable, str(repo_root / "pipelines" / "retrain.py"), str(tmp_path / "r.yaml")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert (tmp_path / "r.yaml").read_text() == (repo_root / COMPILED).read_text()
    assert "sys.path" not in (repo_root / "pipelines" / "retrain.py").read_text()


def test_every_stage_is_a_task_on_the_one_image(compiled, cfg):
    _, spec, _ = compiled
    executors = _task_executors(spec)
    assert set(executors) == {*STAGES, "night-end"}
    images = {spec["deploymentSpec"]["executors"][label]["container"]["image"] for label in executors.values()}
    assert images == {cfg.image}


def test_gpus_requested_exactly_on_training_and_encoding_stages(compiled):
    _, spec, _ = compiled
    for stage, label in _task_executors(spec).items():
        resources = spec["deploymentSpec"]["executors"][label]["container"]["resources"]
        accel = resources.get("accelerator")
        if stage in GPU_STAGES:
            assert accel == {"count": "1", "resourceCount": "1", "resourceType": "nvidia.com/gpu",
                             "type": "nvidia.com/gpu"}, stage
        else:
            assert accel is None, stage
        for key in ("resourceCpuRequest", "resourceCpuLimit", "resourceMemoryRequest", "resourceMemoryLimit"):
            assert resources.get(key), f"{stage}: {key} missing"
    warmup = spec["deploymentSpec"]["executors"]["exec-warmup"]["container"]["resources"]
    assert warmup["resourceMemoryLimit"] == "32Gi"  # the per-stage override of params.yaml


def test_every_task_mounts_the_pvc_and_reads_the_wandb_secret(compiled):
    _, spec, platform = compiled
    k8s = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"]
    for stage, label in _task_executors(spec).items():
        (mount,) = k8s[label]["pvcMount"]
        assert mount["mountPath"] == "/workdir" and mount["pvcNameParameter"]["runtimeValue"]["constant"] == "uniret-workdir"
        secret, *admin = k8s[label]["secretAsEnv"]
        assert secret["secretNameParameter"]["runtimeValue"]["constant"] == "uniret-secrets", stage
        assert secret["keyToEnv"] == [{"envVar": "WANDB_API_KEY", "secretKey": "wandb-api-key"}], stage
        assert k8s[label]["securityContext"] == {"runAsUser": "10001", "runAsGroup": "10001",
                                                 "runAsNonRoot": True}, stage
        keys = [a["keyToEnv"][0]["secretKey"] for a in admin]
        if stage != "promote":  # serving's admin token and address go to the one task that calls it
            assert "admin-token" not in keys and "configMapAsEnv" not in k8s[label], stage
        # the webhook URL goes to the two tasks that send the night's outcome
        assert ("notify-url" in keys) == (stage in ("promote", "night-end")), (stage, keys)


def test_the_promote_task_gets_the_admin_token_and_the_serve_url_when_the_cluster_has_them(compiled, repo_root):
    """The reload call after a promotion needs both (issue 55): from the Secret and the ConfigMap of
    k8s/, optional, under the env names the registry section reads."""
    _, spec, platform = compiled
    label = _task_executors(spec)["promote"]
    k8s = platform["platforms"]["kubernetes"]["deploymentSpec"]["executors"][label]
    registry = load_params(repo_root / "params.yaml").section("registry")
    (admin,) = [s for s in k8s["secretAsEnv"] if s["keyToEnv"][0]["secretKey"] == "admin-token"]
    assert admin["keyToEnv"] == [{"envVar": registry.token_env, "secretKey": "admin-token"}] and admin["optional"]
    assert admin["secretNameParameter"]["runtimeValue"]["constant"] == "uniret-secrets"
    (config,) = k8s["configMapAsEnv"]
    assert config["configMapNameParameter"]["runtimeValue"]["constant"] == "uniret-config" and config["optional"]
    assert config["keyToEnv"] == [{"configMapKey": "UNIRET_SERVE_URL", "envVar": registry.serve_url_env}]
    # the Secret and ConfigMap of k8s/ hold those keys
    secret = yaml.safe_load((repo_root / "k8s" / "secret.template.yaml").read_text())
    configmap = yaml.safe_load((repo_root / "k8s" / "configmap.yaml").read_text())
    assert "admin-token" in secret["stringData"] and configmap["data"]["UNIRET_SERVE_URL"].startswith("http://")


def test_promote_runs_after_the_gate_whatever_it_decided_and_the_report_after_promote(compiled):
    """No condition: a blocked or paused night still runs promote, which refreshes the corpus (issue 55);
    the report follows it, so it shows what promote did. Every stage runs inside the exit handler,
    whose task records a failed run as a failed night."""
    _, spec, _ = compiled
    root = spec["root"]["dag"]["tasks"]
    assert set(root) == {"exit-handler-1", "night-end"}
    assert root["night-end"]["triggerPolicy"]["strategy"] == "ALL_UPSTREAM_TASKS_COMPLETED"
    assert root["night-end"]["inputs"]["parameters"]["status"] == {"taskFinalStatus": {"producerTask": "exit-handler-1"}}
    body = spec["components"][root["exit-handler-1"]["componentRef"]["name"]]["dag"]["tasks"]
    assert set(body) == set(STAGES)
    assert not [t for t in body.values() if t.get("triggerPolicy", {}).get("condition")]
    assert set(body["promote"]["dependentTasks"]) == {"gate"}
    assert set(body["report"]["dependentTasks"]) == {"promote"}
    assert spec["root"]["inputDefinitions"]["parameters"].keys() == {
        "recipe", "profile", "data_version", "gate_overrides", "workdir"}


def test_a_prefix_assembles_as_a_chain(repo_root, cfg, tmp_path):
    path = compile_pipeline(cfg, tmp_path / "prefix.yaml", ["evaluate", "validate", "bm25"])
    spec, _ = yaml.safe_load_all(path.read_text())
    tasks = spec["root"]["dag"]["tasks"]
    assert set(tasks) == {"validate", "bm25", "evaluate"}
    upstream = {name: t["inputs"].get("artifacts", {}).get("upstream", {}).get("taskOutputArtifact")
                for name, t in tasks.items()}
    assert upstream == {"validate": None,
                        "bm25": {"outputArtifactKey": "manifest", "producerTask": "validate"},
                        "evaluate": {"outputArtifactKey": "manifest", "producerTask": "bm25"}}


@pytest.mark.parametrize(("stages", "message"), [
    (["validate", "train"], "unknown train"),
    (["evaluate", "promote"], "promote needs gate"),
])
def test_bad_stage_lists_are_config_errors(cfg, stages, message):
    with pytest.raises(ConfigError, match=message):
        build_pipeline(cfg, stages=stages)
