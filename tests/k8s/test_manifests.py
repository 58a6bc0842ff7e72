"""k8s/ and its opt-in CronJob overlays (the nightly, the canary's decision): every manifest validates against the Kubernetes JSON schemas
(strict, offline) and agrees with params.yaml; each kustomization lists exactly its manifests; the
base renders no scheduler; serving replicas follow production; the CronJob's paths are on the volume."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from kubernetes_validate import utils as kv

from uniret.config import load_params
from uniret.kubeflow.images import kustomize_images, split_image, write_kustomization_images

K8S = Path(__file__).resolve().parents[2] / "k8s"
CRONJOB_OVERLAY = K8S / "overlays" / "cronjob"  # opt-in: one scheduler at a time (issue 55)
CANARY_OVERLAY = K8S / "overlays" / "canary"  # opt-in with canary.enabled: the hourly decision (issue 59)
KUSTOMIZATIONS = (K8S, CRONJOB_OVERLAY, CANARY_OVERLAY)
MANIFESTS = sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")
ALL_MANIFESTS = sorted(p.relative_to(K8S).as_posix() for folder in KUSTOMIZATIONS for p in folder.glob("*.yaml")
                       if p.name != "kustomization.yaml")


def _docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def _all() -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for n in ALL_MANIFESTS for d in _docs(n)}


@pytest.fixture(scope="module")
def cfg(repo_root):
    return load_params(repo_root / "params.yaml").section("pipeline")


@pytest.mark.parametrize("name", ALL_MANIFESTS)
def test_manifest_is_valid_kubernetes(name):
    docs = _docs(name)
    assert docs, f"{name} is empty"
    for doc in docs:
        kv.validate(doc, kv.latest_version(), strict=True)  # raises ValidationError / SchemaNotFoundError


def test_validation_is_strict_and_offline():
    """The bundled schemas reject an unknown field (so the check above can fail)."""
    bad = _docs("service.yaml")[0]
    bad["spec"]["portz"] = bad["spec"].pop("ports")
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, kv.latest_version(), strict=True)


@pytest.mark.parametrize("folder", KUSTOMIZATIONS, ids=lambda f: f.relative_to(K8S.parent).as_posix())
def test_kustomization_lists_every_manifest_and_nothing_else(folder):
    kust = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert kust["kind"] == "Kustomization" and kust["namespace"] == "uniret"
    assert sorted(kust["resources"]) == sorted(p.name for p in folder.glob("*.yaml") if p.name != "kustomization.yaml")
    assert len(kust["resources"]) == len(set(kust["resources"]))


def _rendered(image: str, folder: Path = K8S) -> str:
    """What kustomize renders for a manifest's image name, from its kustomization.yaml `images:`."""
    kust = yaml.safe_load((folder / "kustomization.yaml").read_text())
    (entry,) = [e for e in kust["images"] if e["name"] == image]
    return f"{entry['newName']}:{entry['newTag']}"


@pytest.mark.parametrize("folder", KUSTOMIZATIONS, ids=lambda f: f.relative_to(K8S.parent).as_posix())
def test_image_tags_come_from_params_alone(cfg, tmp_path, folder):
    """Each kustomization's `images:` is what `uniret pipeline image --kustomize` writes from params.yaml."""
    kust = yaml.safe_load((folder / "kustomization.yaml").read_text())
    assert kust["images"] == kustomize_images(cfg)
    copy = tmp_path / "kustomization.yaml"
    copy.write_text((folder / "kustomization.yaml").read_text())
    assert write_kustomization_images(copy, cfg) is False  # committed file is current
    for name in ALL_MANIFESTS:
        assert "ghcr.io" not in (K8S / name).read_text(), f"{name}: a tag outside params.yaml"
    assert split_image("localhost:5000/a/b:1.2") == ("localhost:5000/a/b", "1.2")
    assert split_image("localhost:5000/a/b") == ("localhost:5000/a/b", "latest")


def test_serving_deployment(cfg):
    objs = _all()
    dep = objs[("Deployment", "uniret-serving")]
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert _rendered(container["image"]) == cfg.serving_image
    assert container["command"] == ["uniret"] and container["args"][0] == "serve"
    assert container["ports"][0]["containerPort"] == 8000
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert set(container["resources"]) == {"requests", "limits"}
    svc = objs[("Service", "uniret-serving")]
    assert svc["spec"]["selector"].items() <= dep["spec"]["template"]["metadata"]["labels"].items()
    hpa = objs[("HorizontalPodAutoscaler", "uniret-serving")]
    assert hpa["spec"]["scaleTargetRef"]["name"] == "uniret-serving"


def test_shared_volume_and_secret_match_the_pipeline(cfg):
    objs = _all()
    assert ("PersistentVolumeClaim", cfg.pvc) in objs
    secret = objs[("Secret", cfg.wandb_secret)]
    assert cfg.wandb_secret_key in secret["stringData"]
    cron = objs[("CronJob", "uniret-nightly")]
    pod = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert _rendered(container["image"], CRONJOB_OVERLAY) == cfg.image
    assert container["args"][0] == "nightly" and container["command"] == ["uniret"]
    assert cron["spec"]["concurrencyPolicy"] == "Forbid"
    keys = {e["valueFrom"]["secretKeyRef"]["key"] for e in container["env"] if "valueFrom" in e}
    assert keys <= set(secret["stringData"]) and cfg.wandb_secret_key in keys
    for workload in (pod, objs[("Deployment", "uniret-serving")]["spec"]["template"]["spec"]):
        claims = {v["persistentVolumeClaim"]["claimName"] for v in workload["volumes"] if "persistentVolumeClaim" in v}
        assert claims == {cfg.pvc}
        mounts = {m["mountPath"] for m in workload["containers"][0]["volumeMounts"]}
        assert cfg.mount_path in mounts


def test_rbac_binds_the_job_account_to_its_role():
    objs = _all()
    binding = objs[("RoleBinding", "uniret-pipeline-serving-operator")]
    assert ("Role", binding["roleRef"]["name"]) in objs
    (subject,) = binding["subjects"]
    assert ("ServiceAccount", subject["name"]) in objs
    cron = objs[("CronJob", "uniret-nightly")]
    assert cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["serviceAccountName"] == subject["name"]


def _kustomize(folder: Path) -> list[dict]:
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed (the render check needs its built-in kustomize)")
    out = subprocess.run([kubectl, "kustomize", str(folder)], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [d for d in yaml.safe_load_all(out.stdout) if d]


def test_the_base_renders_no_scheduler_and_the_overlay_adds_the_cronjob_alone(cfg):
    """`kubectl kustomize k8s/` has no CronJob (the Kubeflow recurring run may be the scheduler); the
    opt-in overlay renders exactly the CronJob, in the namespace, with params.yaml's image; each
    rendered object validates."""
    base = _kustomize(K8S)
    assert "CronJob" not in {d["kind"] for d in base}
    assert {d["kind"] for d in base} >= {"Deployment", "Service", "PersistentVolumeClaim", "ConfigMap", "Secret"}
    overlay = _kustomize(CRONJOB_OVERLAY)
    assert [(d["kind"], d["metadata"]["name"], d["metadata"]["namespace"]) for d in overlay] == [
        ("CronJob", "uniret-nightly", "uniret")]
    (container,) = overlay[0]["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == cfg.image
    for doc in base + overlay:
        kv.validate(doc, kv.latest_version(), strict=True)


def test_every_serving_replica_watches_the_pointer(repo_root):
    """The Deployment serves the workdir's params.yaml (seeded from this one) with its default profile:
    the pointer watch must be on there, or a reload call reaches one replica of the HPA's 2..8."""
    dep = _all()[("Deployment", "uniret-serving")]
    (container,) = dep["spec"]["template"]["spec"]["containers"]
    assert "--profile" not in container["args"]
    assert "UNIRET_PROFILE" not in {e["name"] for e in container.get("env", [])}
    params = load_params(repo_root / "params.yaml")
    assert params.section("serve").watch_interval_s > 0
    assert _all()[("HorizontalPodAutoscaler", "uniret-serving")]["spec"]["minReplicas"] > 1


def test_the_cronjob_reads_its_data_and_takes_its_lock_on_the_volume(repo_root, cfg):
    """A fresh volume holds what the documented steps put there; the CronJob must not fall back on
    params data.root (../shared/data, outside the volume) nor lock outside it."""
    from uniret.config.paths import resolve_path

    cron = _all()[("CronJob", "uniret-nightly")]
    (container,) = cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert Path(env["UNIRET_DATA"]).is_relative_to(cfg.mount_path)
    params_path = Path(container["args"][container["args"].index("--params") + 1])
    assert params_path.parent == Path(cfg.mount_path) == Path(container["workingDir"])
    params = load_params(repo_root / "params.yaml")
    lock = resolve_path(params, params.section("nightly").lock_file).relative_to(repo_root)
    assert not lock.is_absolute() and ".." not in lock.parts  # on the volume, beside params.yaml
    assert env["UNIRET_DATA"] in (repo_root / "docs" / "deployment.md").read_text()  # the documented folder


def test_the_canary_overlay_decides_on_the_volume_with_the_cpu_image(repo_root, cfg):
    """The canary overlay renders one CronJob: `uniret canary decide` on the workdir's params, the
    serving (CPU) image from params.yaml, the admin token for the reload it sends; no GPU."""
    (job,) = _kustomize(CANARY_OVERLAY)
    assert (job["kind"], job["metadata"]["name"], job["metadata"]["namespace"]) == (
        "CronJob", "uniret-canary-decide", "uniret")
    (container,) = job["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"]
    assert container["image"] == cfg.serving_image
    assert container["args"][:2] == ["canary", "decide"]
    params_path = Path(container["args"][container["args"].index("--params") + 1])
    assert params_path.parent == Path(cfg.mount_path) == Path(container["workingDir"])
    assert "admin-token" in {e["valueFrom"]["secretKeyRef"]["key"] for e in container["env"] if "valueFrom" in e}
    assert "nvidia.com/gpu" not in container["resources"]["limits"]
    kv.validate(job, kv.latest_version(), strict=True)
