"""The report's W&B run: metrics, a per-dataset table, figures and the bundle manifest as an artifact.

Offline by default: the run is written under `<dir>/wandb/offline-run-*` and uploaded later with
`wandb sync`. wandb's data, cache, config and artifact folders are pointed inside the same folder
for the duration of the run (then restored), so nothing lands in HOME. A W&B Report
(wandb-workspaces) is published only in online mode, where the run itself proves a login; the
local report.md is always written.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uniret.tracking.wandb_logger import wandb_dirs
from uniret.utils.envvars import temporary_env

log = logging.getLogger("uniret.tracking")


@dataclass
class RunContent:
    """What the run records."""

    name: str
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, float | int | str | bool | None] = field(default_factory=dict)
    tables: dict[str, tuple[list[str], list[list[Any]]]] = field(default_factory=dict)  # name -> (columns, rows)
    images: dict[str, Path] = field(default_factory=dict)
    manifest: Path | None = None  # bundle manifest.json logged as an artifact
    report_markdown: str = ""  # body of the online W&B Report


@dataclass
class WandbOutcome:
    """Where the run went (run_dir: the offline run folder to `wandb sync`)."""

    mode: str
    status: str
    run_dir: str | None = None
    report_url: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def resolve_mode(configured: str) -> str:
    """$WANDB_MODE wins over params (CI and tests force offline)."""
    return os.environ.get("WANDB_MODE") or configured


@contextmanager
def contained_env(base: Path) -> Iterator[dict[str, str]]:
    """Point every wandb folder inside `base` for the block; restore the environment after."""
    env = wandb_dirs(base)
    for path in env.values():
        Path(path).mkdir(parents=True, exist_ok=True)
    with temporary_env(env):
        yield env


def _publish_report(run, content: RunContent, project: str, entity: str | None) -> str | None:
    """Online only: a W&B Report with the report text and the project's runs."""
    try:
        import wandb_workspaces.reports.v2 as wr

        owner = entity or run.entity
        report = wr.Report(
            project=project,
            entity=owner,
            title=f"uniret regression report: {content.name}",
            blocks=[wr.MarkdownBlock(text=content.report_markdown),
                    wr.PanelGrid(runsets=[wr.Runset(entity=owner, project=project)])],
        )
        report.save()
        return report.url
    except Exception as exc:  # noqa: BLE001 - the run and the local report stand without it
        log.warning("W&B Report not published: %s", exc)
        return None


def _record(wandb, run, content: RunContent) -> None:
    run.summary.update(dict(content.summary))
    logged: dict[str, Any] = {name: wandb.Table(columns=cols, data=rows) for name, (cols, rows) in content.tables.items()}
    logged.update({name: wandb.Image(str(path)) for name, path in content.images.items()})
    if logged:
        run.log(logged)
    if content.manifest is not None and content.manifest.is_file():
        artifact = wandb.Artifact("bundle-manifest", type="bundle-manifest")
        artifact.add_file(str(content.manifest), name="manifest.json")
        run.log_artifact(artifact)


def log_run(content: RunContent, *, project: str, entity: str | None, mode: str, base_dir: Path) -> WandbOutcome:
    """Write one W&B run with `content`; returns where it went. `mode` disabled: nothing is written."""
    mode = resolve_mode(mode)
    if mode == "disabled":
        return WandbOutcome(mode, "skipped: W&B disabled (report.wandb_mode / $WANDB_MODE)")
    with contained_env(base_dir) as env:
        import wandb  # lazy: importing wandb costs seconds and most commands do not need it

        settings = wandb.Settings(console="off", silent=True, x_disable_stats=True, disable_git=True,
                                  reinit="create_new")
        run = wandb.init(project=project, entity=entity, dir=env["WANDB_DIR"], mode=mode, name=content.name,
                         job_type="report", config=content.config, settings=settings)
        try:
            _record(wandb, run, content)
            run_dir = str(run.settings.sync_dir)
        finally:
            run.finish()
        url = _publish_report(run, content, project, entity) if mode == "online" else None
    status = "offline: upload later with `wandb sync`" if mode == "offline" else "online"
    log.info("W&B run (%s) at %s", mode, run_dir)
    return WandbOutcome(mode, status, run_dir, url)
