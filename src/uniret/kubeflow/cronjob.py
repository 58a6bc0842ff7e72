"""The opt-in CronJob (k8s/overlays/cronjob/cronjob.yaml) takes its schedule and profile from params.yaml
`pipeline:` (one scheduler setting).

`pipeline.cron` (6 fields, seconds first, as KFP's recurring run reads it) is the one nightly
schedule: `uniret pipeline schedule` passes it to Kubeflow, and `uniret pipeline cronjob --write`
renders it (minus the seconds field, which Kubernetes lacks) into the CronJob, with the profile
of cluster runs (`pipeline.profile`). tests/k8s checks that the committed file equals the render.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from uniret.config.loader import ConfigError
from uniret.config.pipeline import PipelineConfig
from uniret.kubeflow.client import normalize_cron
from uniret.utils.files import atomic_write_text

SCHEDULE = re.compile(r'^(  schedule: )"[^"]*"( *#.*)?$', re.M)
PROFILE = re.compile(r"^( +- name: UNIRET_PROFILE\n +value: )\S+$", re.M)


def k8s_schedule(cron: str) -> str:
    """KFP's 6-field cron as Kubernetes' 5-field one (Kubernetes runs on whole minutes)."""
    seconds, *rest = normalize_cron(cron).split()
    if seconds != "0":
        raise ConfigError(f"pipeline.cron {cron!r}: the CronJob runs on whole minutes; the seconds field must be 0")
    return " ".join(rest)


def render_cronjob(text: str, cfg: PipelineConfig, where: str = "cronjob.yaml") -> str:
    """`text` (a CronJob manifest) with its schedule and UNIRET_PROFILE taken from `cfg`."""
    for pattern, name in ((SCHEDULE, "spec.schedule"), (PROFILE, "the UNIRET_PROFILE env entry")):
        if len(pattern.findall(text)) != 1:
            raise ConfigError(f"{where}: expected one {name} line to render")
    text = SCHEDULE.sub(lambda m: f'{m.group(1)}"{k8s_schedule(cfg.cron)}"{m.group(2) or ""}', text)
    return PROFILE.sub(lambda m: f"{m.group(1)}{cfg.profile}", text)


def write_cronjob(path: str | os.PathLike, cfg: PipelineConfig) -> bool:
    """Render the CronJob at `path` in place; True if it changed."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: CronJob manifest not found")
    text = path.read_text(encoding="utf-8")
    rendered = render_cronjob(text, cfg, str(path))
    if rendered == text:
        return False
    atomic_write_text(path, rendered)
    return True
