"""Run the pipeline on this machine with kfp.local: SubprocessRunner, or DockerRunner in the image.

Tasks run as subprocesses of the current interpreter (`use_venv=False`), or each in a container
of the built image (uniret.kubeflow.containers); the components skip kfp's `pip install`
(install_kfp_package=False), so a local run stays offline. kfp's temp
folders (one per task, from `mktemp -d`) and its workspace go to a per-run folder under
params `pipeline.local_root`, removed at the end; task outputs stay under <local_root>/outputs.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import re
import shutil
import tempfile
import time
import warnings
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uniret.config.pipeline import PipelineConfig
from uniret.core.errors import StageFailed
from uniret.core.jsonio import read_json
from uniret.kubeflow.containers import (
    DOCKER_HOST_ENV,
    ContainerRun,
    docker_host,
    docker_runner,
    gone_is_not_found,
    run_binds,
)
from uniret.kubeflow.pipeline import build_pipeline, plan_stages
from uniret.kubeflow.task import PARAMS_ENV, WORKDIR_ARTIFACTS, parse_overrides
from uniret.runtime import MANIFEST
from uniret.utils.envvars import temporary_env

log = logging.getLogger("uniret.kubeflow")

DATA_ENV = "UNIRET_DATA"
ANSI = re.compile(r"\x1b\[[0-9;]*m")
# kfp.local's message when a downstream task asks for an output its upstream task never wrote
LOST_OUTPUT = re.compile(r"Tried to get output '[^']+' from task '[^']+'")


@dataclass
class LocalRun:
    """Where a local run wrote its outputs, and the manifests of the stages that ran."""

    outputs: Path  # kfp.local's folder of this run (task artifacts: manifests, metrics, markdown)
    workdir: Path
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)


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
    image: str | None = None,
) -> LocalRun:
    """Run `stages` (default: the whole DAG) through kfp.local; StageFailed names the failed task.

    Tasks run as subprocesses of this interpreter, or with `image` each in a container of that
    image (kfp.local's DockerRunner on $DOCKER_HOST, else on a podman service started for the run).
    """
    parse_overrides(gate_overrides, "gate_overrides")  # a typo fails now, not in the gate task
    from kfp import local

    if image:
        config = dataclasses.replace(config, image=image)
    pipeline = build_pipeline(config, stages)
    base = local_root(root, config)
    (base / "tmp").mkdir(parents=True, exist_ok=True)
    run_tmp = Path(tempfile.mkdtemp(prefix="run-", dir=base / "tmp"))
    outputs = base / "outputs"
    workdir = Path(workdir).resolve()
    before = set(outputs.glob("*")) if outputs.is_dir() else set()
    started = time.time()
    lost = ""  # kfp's message when a container task exited "0" but wrote no outputs
    env = {
        "TMPDIR": str(run_tmp),  # mktemp -d of every task lands here, not in /tmp
        PARAMS_ENV: str(Path(params_path).resolve()) if params_path else None,
        DATA_ENV: str(Path(data).resolve()) if data else None,
    }
    try:
        with ExitStack() as stack:
            runner = local.SubprocessRunner(use_venv=False)
            if image:
                workdir.mkdir(parents=True, exist_ok=True)
                socket_dir = Path(tempfile.mkdtemp(prefix="uniret-podman-"))  # short: a unix socket path
                stack.callback(shutil.rmtree, socket_dir, True)
                env[DOCKER_HOST_ENV] = stack.enter_context(docker_host(socket_dir, root, config.container_start_timeout_s))
                stack.enter_context(gone_is_not_found())
                inside = {k: v for k, v in env.items() if v and k in (PARAMS_ENV, DATA_ENV)}
                runner = docker_runner(ContainerRun(image, run_binds(workdir, [params_path, data]), inside,
                                                    working_dir=str(workdir)))
            stack.enter_context(temporary_env(env))
            stack.enter_context(warnings.catch_warnings())
            # Expected here by design: Kubernetes settings are no-ops locally, and the image
            # name has no "python" in it (the tasks run in this interpreter instead).
            warnings.filterwarnings("ignore", message=".*no effect in the current local runner")
            warnings.filterwarnings("ignore", message=".*non-Python base image")
            local.init(
                runner=runner,
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
    except ValueError as exc:
        # In a container a failed task can look like exit 0 to kfp (see task.check_upstream): kfp
        # then fails on the first downstream input. The manifest check below names the stages.
        if not image or not LOST_OUTPUT.search(str(exc)):
            raise
        lost = ANSI.sub("", str(exc))
    except (RuntimeError, OSError) as exc:  # kfp colours task names in its message
        # OSError: the docker SDK's errors (requests'), e.g. podman refusing to create a container.
        raise StageFailed(f"kfp local run failed: {ANSI.sub('', str(exc))}") from exc
    finally:
        shutil.rmtree(run_tmp, ignore_errors=True)
    created = sorted(set(outputs.glob("*")) - before, key=lambda p: p.stat().st_mtime)
    run = LocalRun(outputs=created[-1] if created else outputs, workdir=workdir)
    for path in sorted((workdir / WORKDIR_ARTIFACTS).glob(f"*/{MANIFEST}")):
        if path.stat().st_mtime >= started:  # written by this run, not left by an earlier one
            run.manifests[path.parent.name] = read_json(path)
    if image:  # containers' exit statuses do not reach kfp (see task.check_upstream): check outputs
        unfinished = unfinished_stages(plan_stages(stages), run)
        if unfinished or lost:
            raise StageFailed(f"kfp local run in {image}: task(s) {', '.join(unfinished) or '?'} wrote no manifest "
                              f"(failed; their logs are above){f'; kfp: {lost}' if lost else ''}")
    log.info("local run done: outputs in %s, stages with outputs: %s", run.outputs, ", ".join(run.manifests))
    return run


def unfinished_stages(plan: Sequence[str], run: LocalRun) -> list[str]:
    """Planned stages that wrote no manifest in `run` (promote too: it runs whatever the gate decided)."""
    return [s for s in plan if s not in run.manifests]
