"""Kubernetes settings of one pipeline task, all from params `pipeline:` (PipelineConfig)."""

from __future__ import annotations

from kfp import kubernetes
from kfp.dsl import PipelineTask

from uniret.config.notify import NotifyConfig
from uniret.config.pipeline import PipelineConfig
from uniret.config.registry import RegistryConfig

WANDB_ENV = "WANDB_API_KEY"
# the env vars the promote stage reads (registry.token_env, registry.serve_url_env: their defaults;
# tests/kubeflow checks params.yaml keeps them) and the ConfigMap key of the serve URL
TOKEN_ENV = RegistryConfig.token_env
SERVE_URL_ENV = RegistryConfig.serve_url_env
SERVE_URL_KEY = "UNIRET_SERVE_URL"  # k8s/configmap.yaml
RELOADING_STAGES = frozenset({"promote"})  # the tasks that call serving: only they get its token
NOTIFY_ENV = NotifyConfig.url_env
EXIT_TASK = "night_end"  # the run's exit handler (uniret.kubeflow.components.night_end)
NOTIFYING_TASKS = frozenset({"promote", EXIT_TASK})  # the tasks that send the night's outcome


def configure_task(task: PipelineTask, stage: str, cfg: PipelineConfig) -> PipelineTask:
    """Image, resources, GPUs, the shared volume and the W&B secret of `stage`'s task; the promote
    task also gets serving's admin token (Secret) and address (ConfigMap), optional both: a cluster
    without them still runs, and replicas follow the promotion by their pointer watch. The promote
    task and the exit handler get the webhook URL (Secret, optional)."""
    task.set_display_name(stage)
    # Stage outputs live on the shared volume, which KFP's cache key cannot see: a cache hit
    # would skip a stage whose inputs changed on disk.
    task.set_caching_options(False)
    task.set_container_image(cfg.image)
    res = cfg.resources_for(stage)
    task.set_cpu_request(res.cpu_request).set_cpu_limit(res.cpu_limit)
    task.set_memory_request(res.memory_request).set_memory_limit(res.memory_limit)
    if stage in cfg.gpu_stages:
        task.set_accelerator_type(cfg.accelerator_type).set_accelerator_limit(cfg.gpus_per_task)
    for name, value in sorted(cfg.env.items()):
        task.set_env_variable(name, value)
    kubernetes.set_security_context(task, run_as_user=cfg.run_as_user, run_as_group=cfg.run_as_user,
                                    run_as_non_root=True)
    kubernetes.mount_pvc(task, pvc_name=cfg.pvc, mount_path=cfg.mount_path)
    kubernetes.use_secret_as_env(
        task,
        secret_name=cfg.wandb_secret,
        secret_key_to_env={cfg.wandb_secret_key: WANDB_ENV},
        optional=cfg.wandb_secret_optional,
    )
    if stage in RELOADING_STAGES:
        kubernetes.use_secret_as_env(task, secret_name=cfg.wandb_secret,
                                     secret_key_to_env={cfg.admin_token_secret_key: TOKEN_ENV}, optional=True)
        kubernetes.use_config_map_as_env(task, config_map_name=cfg.config_map,
                                         config_map_key_to_env={SERVE_URL_KEY: SERVE_URL_ENV}, optional=True)
    if stage in NOTIFYING_TASKS:
        kubernetes.use_secret_as_env(task, secret_name=cfg.wandb_secret,
                                     secret_key_to_env={cfg.notify_secret_key: NOTIFY_ENV}, optional=True)
    return task
