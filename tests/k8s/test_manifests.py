"""k8s/: every manifest validates against the Kubernetes JSON schemas (strict, offline) and agrees
with params.yaml `pipeline:`; kustomization.yaml lists exactly the manifests."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from kubernetes_validate import utils as kv

from uniret.config import load_params
from uniret.kubeflow.images import kustomize_images, split_image, write_kustomization_images

K8S = Path(__file__).resolve().parents[2] / "k8s"
MANIFESTS = sorted(p.name for p in K8S.glob("*.yaml") if p.name != "kustomization.yaml")


def _docs(name: str) -> list[dict]:
    return [d for d in yaml.safe_load_all((K8S / name).read_text()) if d]


def _all() -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for n in MANIFESTS for d in _docs(n)}


@pytest.fixture(scope="module")
def cfg(repo_root):
    return load_params(repo_root / "params.yaml").section("pipeline")


@pytest.mark.parametrize("name", MANIFESTS)
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


def test_kustomization_lists_every_manifest_and_nothing_else():
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert kust["kind"] == "Kustomization" and kust["namespace"] == "uniret"
    assert sorted(kust["resources"]) == MANIFESTS
    assert len(kust["resources"]) == len(set(kust["resources"]))


def _rendered(image: str) -> str:
    """What kustomize renders for a manifest's image name, from kustomization.yaml `images:`."""
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    (entry,) = [e for e in kust["images"] if e["name"] == image]
    return f"{entry['newName']}:{entry['newTag']}"


def test_image_tags_come_from_params_alone(cfg, tmp_path):
    """kustomization.yaml `images:` is what `uniret pipeline image --kustomize` writes from params.yaml."""
    kust = yaml.safe_load((K8S / "kustomization.yaml").read_text())
    assert kust["images"] == kustomize_images(cfg)
    copy = tmp_path / "kustomization.yaml"
    copy.write_text((K8S / "kustomization.yaml").read_text())
    assert write_kustomization_images(copy, cfg) is False  # committed file is current
    for name in MANIFESTS:
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
    assert _rendered(container["image"]) == cfg.image
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
