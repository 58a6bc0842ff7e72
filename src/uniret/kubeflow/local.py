"""Run the pipeline on this machine with kfp.local's SubprocessRunner (no Docker, no cluster).

Tasks run as subprocesses of the current interpreter (`use_venv=False`) and the components skip
kfp's `pip install` (install_kfp_package=False), so a local run stays offline. kfp's temp
folders (one per task, from `mktemp -d`) and its workspace go to a per-run folder under
params `pipeline.local_root`, removed at the end; task outputs stay under <local_root>/outputs.
"""

from __future__ import annotations

import importlib
import logging
import os
import re
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uniret.config.pipeline import PipelineConfig
from uniret.errors import StageFailed
from uniret.kubeflow.project import build
from uniret.kubeflow.task import PARAMS_ENV, WORKDIR_ARTIFACTS, parse_overrides
from uniret.stages.runtime import MANIFEST
from uniret.utils.envvars import temporary_env
from uniret.utils.jsonio import read_json

log = logging.getLogger("uniret.kubeflow")

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@dataclass
class LocalRun:
    """Where a local run wrote its outputs, and the manifests of the stages that ran."""

    outputs: Path  # kfp.local's folder of this run (task artifacts: manifests, metrics, markdown)
    workdir: Path
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)


def import_kfp_local() -> Any:
    """kfp.local, imported so that the project's docker/ folder cannot pass for the docker SDK.

    kfp.local imports `docker` inside try/except ImportError. With the project folder on sys.path
    (`python -m ...` from it, or the pipeline loader) `docker/` (the Dockerfiles) imports as an
    empty namespace package instead, and kfp then fails on `docker.DockerClient`.
    """
    shadow = sys.modules.get("docker")
    if shadow is not None and getattr(shadow, "__file__", None) is None:  # a namespace package
        del sys.modules["docker"]
    saved = list(sys.path)
    sys.path[:] = [p for p in saved if not (Path(p or os.getcwd()) / "docker" / "Dockerfile").is_file()]
    try:
        importlib.import_module("kfp.local.task_dispatcher")
        from kfp import local
    finally:
        sys.path[:] = saved
    return local


def local_root(root: Path, config: PipelineConfig) -> Path:
    """params `pipeline.local_root`, relative to the project folder unless absolute."""
    path = Path(config.local_root).expanduser()
    return path if path.is_absolute() else root / path


def run_local(
    root: Path,
    config: PipelineConfig,
    *,
    workdir: str | os.PathLike,
    profile: str,
    stages: Sequence[str] | None = None,
    recipe: str = "",
    data_version: str = "",
    gate_overrides: str = "{}",
    params_path: str | os.PathLike | None = None,
    data: str | os.PathLike | None = None,
) -> LocalRun:
    """Run `stages` (default: the whole DAG) through kfp.local; StageFailed names the failed task."""
    parse_overrides(gate_overrides, "gate_overrides")  # a typo fails now, not in the gate task
    local = import_kfp_local()
    pipeline = build(root, config, stages)
    base = local_root(root, config)
    (base / "tmp").mkdir(parents=True, exist_ok=True)
    run_tmp = Path(tempfile.mkdtemp(prefix="run-", dir=base / "tmp"))
    outputs = base / "outputs"
    workdir = Path(workdir).resolve()
    before = set(outputs.glob("*")) if outputs.is_dir() else set()
    started = time.time()
    env = {
        "TMPDIR": str(run_tmp),  # mktemp -d of every task lands here, not in /tmp
        PARAMS_ENV: str(Path(params_path).resolve()) if params_path else None,
        "UNIRET_DATA": str(Path(data).resolve()) if data else None,
    }
    try:
        with temporary_env(env), warnings.catch_warnings():
            # Expected here by design: Kubernetes settings are no-ops locally, and the image
            # name has no "python" in it (the tasks run in this interpreter instead).
            warnings.filterwarnings("ignore", message=".*no effect in the current local runner")
            warnings.filterwarnings("ignore", message=".*non-Python base image")
            local.init(
                runner=local.SubprocessRunner(use_venv=False),
                pipeline_root=str(outputs),
                workspace_root=str(run_tmp / "workspace"),
                raise_on_error=True,
            )
            pipeline(
                recipe=recipe,
                profile=profile,
                data_version=data_version,
                gate_overrides=gate_overrides,
                workdir=str(workdir),
            )
    except RuntimeError as exc:  # kfp colours task names in its message
        raise StageFailed(f"kfp local run failed: {ANSI.sub('', str(exc))}") from exc
    finally:
        shutil.rmtree(run_tmp, ignore_errors=True)
    created = sorted(set(outputs.glob("*")) - before, key=lambda p: p.stat().st_mtime)
    run = LocalRun(outputs=created[-1] if created else outputs, workdir=workdir)
    for path in sorted((workdir / WORKDIR_ARTIFACTS).glob(f"*/{MANIFEST}")):
        if path.stat().st_mtime >= started:  # written by this run, not left by an earlier one
            run.manifests[path.parent.name] = read_json(path)
    log.info("local run done: outputs in %s, stages with outputs: %s", run.outputs, ", ".join(run.manifests))
    return run
