"""Config of the Kubeflow pipeline: image, shared volume, secrets, per-stage resources, schedule."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from uniret.core.dag import STAGES

# Kubernetes quantity syntax as kfp validates it (cpu: "2" / "500m"; memory: "4Gi", "512M", ...).
_CPU = re.compile(r"^([0-9]*\.?[0-9]+m?)$")
_MEMORY = re.compile(r"^[0-9]+(E|Ei|P|Pi|T|Ti|G|Gi|M|Mi|K|Ki)?$")


@dataclass
class ResourceSpec:
    """CPU/memory requests and limits of one task's container."""

    cpu_request: str = "1"
    cpu_limit: str = "2"
    memory_request: str = "2Gi"
    memory_limit: str = "4Gi"

    def validate(self) -> None:
        for name in ("cpu_request", "cpu_limit"):
            if not _CPU.match(getattr(self, name)):
                raise ValueError(f"{name}: {getattr(self, name)!r} is not a CPU quantity (e.g. '2', '500m')")
        for name in ("memory_request", "memory_limit"):
            if not _MEMORY.match(getattr(self, name)):
                raise ValueError(f"{name}: {getattr(self, name)!r} is not a memory quantity (e.g. '4Gi')")


@dataclass(kw_only=True)
class PipelineConfig:
    """How the DAG runs as a Kubeflow pipeline (compile-time settings plus run defaults)."""

    name: str = "uniret-retrain"
    description: str = "Retrain, evaluate, gate and promote the hybrid retriever"
    # The ONE image every component runs on, and the CPU variant (docker/Dockerfile: serving,
    # CPU-only runs). Tags are written in params.yaml alone: the compiled YAML, `make image` and
    # k8s/kustomization.yaml `images:` take them from there.
    image: str
    serving_image: str
    pvc: str = "uniret-workdir"  # shared PersistentVolumeClaim holding artifacts/, data/, registry/
    mount_path: str = "/workdir"  # where every task mounts it; the default `workdir` parameter
    run_as_user: int = 10001  # the images' non-root user (docker/Dockerfile*); must own the volume
    wandb_secret: str = "uniret-secrets"  # Kubernetes Secret with the W&B API key
    wandb_secret_key: str = "wandb-api-key"  # its data key, exposed as $WANDB_API_KEY
    wandb_secret_optional: bool = True  # runs without a W&B key (offline tracking) still start
    # the promote task's reload call: this key of the same Secret as $UNIRET_ADMIN_TOKEN (registry.token_env)
    # and the ConfigMap's UNIRET_SERVE_URL (registry.serve_url_env), each only when the cluster has it
    admin_token_secret_key: str = "admin-token"
    config_map: str = "uniret-config"
    # the webhook of the night's outcome (params notify): this key of the same Secret as $UNIRET_NOTIFY_URL
    # (notify.url_env), for the promote task and the run's exit handler, only when the cluster has it
    notify_secret_key: str = "notify-url"
    # a task waits this long for the nightly lock (nightly.lock_file on the volume), held by another
    # task (report and promote run at once) or a `uniret nightly` of the CronJob, then fails
    lock_wait_s: float = 1800.0
    accelerator_type: str = "nvidia.com/gpu"
    gpus_per_task: int = 1
    gpu_stages: list[str] = field(
        default_factory=lambda: ["warmup", "mine", "reranker", "continual", "distill", "index"]
    )
    default_resources: ResourceSpec = field(default_factory=ResourceSpec)
    resources: dict[str, ResourceSpec] = field(default_factory=dict)  # per stage; others use the default
    env: dict[str, str] = field(default_factory=dict)  # extra environment of every task
    ui_metrics: list[str] = field(default_factory=lambda: ["ndcg@10"])  # logged per dataset/system
    # Defaults of the pipeline's run parameters (the recipe defaults to params `model.recipe`).
    profile: str = "gpu"
    experiment: str = "uniret"
    cron: str = "0 0 2 * * *"  # nightly recurring run (6 fields: seconds first)
    local_root: str = ".cache/kfp"  # kfp.local outputs and temp folders (relative to the project)
    container_start_timeout_s: float = 60.0  # podman's API socket must answer within (DockerRunner runs)

    def validate(self) -> None:
        for name in ("image", "serving_image", "pvc", "mount_path", "wandb_secret", "wandb_secret_key", "name",
                     "admin_token_secret_key", "config_map", "notify_secret_key"):
            if not getattr(self, name).strip():
                raise ValueError(f"{name} must not be empty")
        if not self.mount_path.startswith("/"):
            raise ValueError(f"mount_path must be absolute, got {self.mount_path!r}")
        if self.run_as_user < 1:
            raise ValueError(f"run_as_user must be a non-root uid (>= 1), got {self.run_as_user}")
        if self.lock_wait_s < 0:
            raise ValueError(f"lock_wait_s must be >= 0, got {self.lock_wait_s}")
        if self.container_start_timeout_s <= 0:
            raise ValueError(f"container_start_timeout_s must be > 0, got {self.container_start_timeout_s}")
        if self.gpus_per_task < 1:
            raise ValueError(f"gpus_per_task must be >= 1, got {self.gpus_per_task}")
        for label, names in (("gpu_stages", self.gpu_stages), ("resources", list(self.resources))):
            unknown = sorted(set(names) - set(STAGES))
            if unknown:
                raise ValueError(f"{label}: unknown stage(s) {', '.join(unknown)}; known: {', '.join(STAGES)}")

    def resources_for(self, stage: str) -> ResourceSpec:
        """The container resources of `stage`'s task."""
        return self.resources.get(stage, self.default_resources)
