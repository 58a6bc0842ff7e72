"""Submit and schedule the compiled pipeline on a Kubeflow Pipelines server (kfp.Client)."""

from __future__ import annotations

import hashlib
import logging
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from uniret.config.loader import ConfigError

log = logging.getLogger("uniret.kubeflow")

CRON_FIELDS = 6  # KFP's scheduler (robfig/cron) reads seconds first


def normalize_cron(expr: str) -> str:
    """A 6-field cron for KFP; a classic 5-field cron gets a `0` seconds field prepended."""
    fields = expr.split()
    if len(fields) == CRON_FIELDS - 1:
        fixed = " ".join(["0", *fields])
        log.info("cron %r has 5 fields; KFP expects seconds first: using %r", expr, fixed)
        return fixed
    if len(fields) != CRON_FIELDS:
        raise ConfigError(f"cron {expr!r}: expected 6 fields (sec min hour day month weekday) or 5, got {len(fields)}")
    return " ".join(fields)


@dataclass
class Submitted:
    """What the server created: ids to find the run / recurring run in the Kubeflow UI."""

    experiment_id: str
    run_id: str | None = None
    recurring_run_id: str | None = None
    pipeline_id: str | None = None
    pipeline_version_id: str | None = None


def connect(host: str, namespace: str | None = None) -> Any:
    """A kfp.Client for `host` (it contacts the server's healthz endpoint right away)."""
    import kfp

    kwargs = {"namespace": namespace} if namespace else {}
    return kfp.Client(host=host, **kwargs)


def submit(client: Any, package: Path, arguments: dict[str, Any], experiment: str, run_name: str) -> Submitted:
    """Start one run of the compiled pipeline `package` in `experiment`."""
    exp = client.create_experiment(experiment)  # get-or-create
    result = client.create_run_from_pipeline_package(
        str(package), arguments=arguments, run_name=run_name, experiment_id=exp.experiment_id
    )
    log.info("submitted run %s in experiment %s", result.run_id, experiment)
    return Submitted(experiment_id=exp.experiment_id, run_id=result.run_id)


def upload_version(client: Any, package: Path, pipeline_name: str) -> tuple[str, str]:
    """Upload `package` as a new version of pipeline `pipeline_name` (created on first use)."""
    digest = hashlib.sha256(package.read_bytes()).hexdigest()[:12]
    version_name = f"{pipeline_name}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}-{digest}"
    pipeline_id = client.get_pipeline_id(pipeline_name)
    if pipeline_id is None:
        pipeline_id = client.upload_pipeline(str(package), pipeline_name=pipeline_name).pipeline_id
        log.info("created pipeline %s (%s)", pipeline_name, pipeline_id)
    version = client.upload_pipeline_version(str(package), version_name, pipeline_id=pipeline_id)
    return pipeline_id, version.pipeline_version_id


def schedule(
    client: Any,
    package: Path,
    arguments: dict[str, Any],
    experiment: str,
    job_name: str,
    cron: str,
    pipeline_name: str,
) -> Submitted:
    """A recurring run of a freshly uploaded pipeline version: one at a time, no backfill."""
    cron = normalize_cron(cron)
    pipeline_id, version_id = upload_version(client, package, pipeline_name)
    exp = client.create_experiment(experiment)
    job = client.create_recurring_run(
        experiment_id=exp.experiment_id,
        job_name=job_name,
        cron_expression=cron,
        max_concurrency=1,  # a nightly retrain must never overlap the previous one
        no_catchup=True,  # after downtime run once, not once per missed night
        params=arguments,
        pipeline_id=pipeline_id,
        version_id=version_id,
        enabled=True,
    )
    log.info("scheduled %s (%s) with cron %r", job_name, job.recurring_run_id, cron)
    return Submitted(experiment_id=exp.experiment_id, recurring_run_id=job.recurring_run_id,
                     pipeline_id=pipeline_id, pipeline_version_id=version_id)


def run_arguments(recipe: str, profile: str, data_version: str, gate_overrides: str, workdir: str) -> dict[str, str]:
    """The pipeline's run parameters, by name."""
    return {"recipe": recipe, "profile": profile, "data_version": data_version,
            "gate_overrides": gate_overrides, "workdir": workdir}


def package_exists(path: str | os.PathLike) -> Path:
    """`path` as a Path; ConfigError when the compiled package is missing."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: compiled pipeline not found; run `uniret pipeline compile`")
    return path
