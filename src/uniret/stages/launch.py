"""Run a training stage under torchrun when params `distributed` asks for several processes.

`uniret warmup` (the CLI, dvc and a Kubeflow task alike) calls `run_stage`; when the stage is
listed in `distributed.stages` and the job wants more than one process, and this process is
not itself one of torchrun's ranks, the stage is started again as

    python -m torch.distributed.run --nproc_per_node N --nnodes M (--standalone | --rdzv_*) \
        -m uniret <stage> --params <resolved params> --profile P --data D --artifacts A

and this process waits for it, then returns the manifest metrics rank 0 wrote. On several
machines (a PyTorchJob) every pod runs that torchrun command itself (k8s/training/).
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from uniret.config.distributed import DistributedConfig
from uniret.core.errors import StageFailed
from uniret.runtime import StageContext, read_manifest

log = logging.getLogger("uniret.stages")

PARAMS_COPY = ".train/{stage}.params.yaml"  # under artifacts/: the exact params the ranks read


def wants_torchrun(stage: str, ctx: StageContext) -> bool:
    """True when `stage` should run as several torchrun ranks and this process is not one of them."""
    cfg: DistributedConfig = ctx.params.section("distributed")
    if stage not in cfg.stages or cfg.world_size() <= 1:
        return False  # decided before importing torch, which the stages that never train do not load (E59)
    from uniret.training.distributed import launched_by_torchrun

    return not launched_by_torchrun()


def torchrun_command(stage: str, ctx: StageContext, params_file: Path, verbose: bool = True) -> list[str]:
    """The torchrun command line of `stage` (see module doc)."""
    cfg: DistributedConfig = ctx.params.section("distributed")
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", str(cfg.processes_per_node()),
           "--nnodes", str(cfg.nnodes)]
    if cfg.nnodes == 1:
        cmd.append("--standalone")  # a local rendezvous on a free port
    else:
        cmd += ["--rdzv_backend", "c10d", "--rdzv_endpoint", cfg.rdzv_endpoint]
    cmd += ["-m", "uniret", *(["-v"] if verbose else []), stage, "--params", str(params_file),
            "--profile", ctx.profile, "--data", str(ctx.data_root), "--artifacts", str(ctx.artifacts)]
    return cmd


def rank_env(nproc: int) -> dict[str, str]:
    """The ranks' environment: the machine's cores shared out (torchrun would give each one thread)."""
    env = dict(os.environ)
    env.setdefault("OMP_NUM_THREADS", str(max(1, (os.cpu_count() or 1) // nproc)))
    return env


def run_under_torchrun(stage: str, ctx: StageContext) -> dict[str, Any]:
    """Start the stage's ranks, wait, and return the metrics of the manifest rank 0 wrote."""
    cfg: DistributedConfig = ctx.params.section("distributed")
    # The ranks read the params this process holds (a caller may have changed them in memory).
    params_file = ctx.artifacts / PARAMS_COPY.format(stage=stage)
    params_file.parent.mkdir(parents=True, exist_ok=True)
    params_file.write_text(yaml.safe_dump(ctx.params.raw, sort_keys=False), encoding="utf-8")
    cmd = torchrun_command(stage, ctx, params_file, verbose=log.isEnabledFor(logging.INFO))
    log.info("stage %s: %d process(es) x %d node(s): %s", stage, cfg.processes_per_node(), cfg.nnodes, " ".join(cmd))
    manifest = ctx.stage_dir(stage) / "manifest.json"
    before = manifest.stat().st_mtime_ns if manifest.is_file() else None
    done = subprocess.run(cmd, env=rank_env(cfg.processes_per_node()), check=False)
    if done.returncode != 0:
        raise StageFailed(f"stage {stage}: torchrun exited with {done.returncode} (the ranks' logs are above)")
    if not manifest.is_file() or manifest.stat().st_mtime_ns == before:
        raise StageFailed(f"stage {stage}: torchrun succeeded but rank 0 wrote no new {manifest}")
    return read_manifest(ctx.stage_dir(stage)).get("metrics", {})
