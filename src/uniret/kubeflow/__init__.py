"""Kubeflow Pipelines: what components run, task settings, local runs, submit and schedule."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "connect": "client",
    "normalize_cron": "client",
    "package_exists": "client",
    "run_arguments": "client",
    "schedule": "client",
    "submit": "client",
    "PUBLISHERS": "components",
    "load_components": "components",
    "stage_task": "components",
    "write_kustomization_images": "images",
    "run_local": "local",
    "build_pipeline": "pipeline",
    "plan_stages": "pipeline",
    "COMPILED": "project",
    "compile_pipeline": "project",
    "project_root": "project",
    "parse_overrides": "task",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
