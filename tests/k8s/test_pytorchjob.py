"""k8s/training/pytorchjob.yaml: valid against the PyTorchJob CRD fields (schemas/, transcribed from
the Training Operator's published CRD) with its pod templates valid Kubernetes (strict, offline),
and running the DAG's own entry point under torchrun on the pipeline's image, volume and user."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml
from kubernetes_validate import utils as kv

from uniret.config import load_params
from uniret.config.distributed import TRAINING_STAGES

K8S = Path(__file__).resolve().parents[2] / "k8s"
JOB = K8S / "training" / "pytorchjob.yaml"
SCHEMA = Path(__file__).parent / "schemas" / "pytorchjob-kubeflow-v1.yaml"


@pytest.fixture(scope="module")
def job() -> dict:
    (doc,) = [d for d in yaml.safe_load_all(JOB.read_text()) if d]
    return doc


@pytest.fixture(scope="module")
def schema() -> dict:
    return yaml.safe_load(SCHEMA.read_text())


def _validate(doc: dict, schema: dict) -> None:
    """The CRD schema, then every replica's pod template as a core/v1 PodTemplate."""
    jsonschema.Draft202012Validator(schema).validate(doc)
    for kind, replica in doc["spec"]["pytorchReplicaSpecs"].items():
        pod_template = {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": f"check-{kind.lower()}"},
                        "template": replica["template"]}
        kv.validate(pod_template, kv.latest_version(), strict=True)


def test_pytorchjob_is_valid(job, schema):
    _validate(job, schema)


@pytest.mark.parametrize("mutate", [
    lambda d: d["spec"].__setitem__("nprocPerNode", 8),  # an int: the CRD field is a string
    lambda d: d["spec"]["pytorchReplicaSpecs"].__setitem__("Chief", d["spec"]["pytorchReplicaSpecs"]["Worker"]),
    lambda d: d["spec"]["pytorchReplicaSpecs"]["Worker"].__setitem__("restartPolicy", "Sometimes"),
    lambda d: d["spec"].__setitem__("replicaSpecs", {}),
    lambda d: d["spec"]["pytorchReplicaSpecs"]["Master"]["template"]["spec"]["containers"][0].__setitem__("cmd", ["x"]),
    lambda d: d["spec"]["pytorchReplicaSpecs"].pop("Master"),
], ids=["nproc-int", "unknown-replica-type", "bad-restart-policy", "unknown-spec-field", "bad-container-field",
        "no-master"])
def test_the_checks_can_fail(job, schema, mutate):
    bad = copy.deepcopy(job)
    mutate(bad)
    with pytest.raises((jsonschema.ValidationError, kv.ValidationError)):
        _validate(bad, schema)


def test_every_pod_runs_the_stage_entry_point_under_torchrun(job, repo_root):
    cfg = load_params(repo_root / "params.yaml").section("pipeline")
    replicas = job["spec"]["pytorchReplicaSpecs"]
    assert replicas["Master"]["replicas"] == 1 and replicas["Worker"]["replicas"] >= 1
    commands = set()
    for replica in replicas.values():
        spec = replica["template"]["spec"]
        (container,) = spec["containers"]
        assert container["name"] == "pytorch"  # the operator injects its env into this container
        assert container["image"] == cfg.image
        assert container["command"] == ["python", "-m", "torch.distributed.run"]
        args = container["args"]
        assert args[:2] == ["-m", "uniret"] and args[2] in TRAINING_STAGES
        assert args[args.index("--artifacts") + 1].startswith(cfg.mount_path)
        gpus = container["resources"]["limits"][cfg.accelerator_type]
        assert gpus == container["resources"]["requests"][cfg.accelerator_type]
        assert spec["securityContext"]["runAsUser"] == cfg.run_as_user
        claims = {v["persistentVolumeClaim"]["claimName"] for v in spec["volumes"] if "persistentVolumeClaim" in v}
        assert claims == {cfg.pvc}
        commands.add(tuple(args))
    assert len(commands) == 1  # master and workers run the same stage with the same arguments
    assert job["spec"]["nprocPerNode"] == "gpu"  # one rank per GPU the pod requests
