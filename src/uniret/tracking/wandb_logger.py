"""A thin Weights & Biases wrapper: offline by default, every W&B folder inside one given folder.

`wandb` is imported only when a run is opened (the import takes seconds), so importing this
module, or running with tracking disabled, costs nothing.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from uniret.config.tracking import TrackingConfig
from uniret.tracking.base import NullTracker

log = logging.getLogger("uniret.tracking")

DEFAULT_MODE = "offline"


def resolve_mode(mode: str | None) -> str:
    """The W&B mode: $WANDB_MODE (the operator's override, as in the report stage), else `mode`, else offline."""
    chosen = os.environ.get("WANDB_MODE") or mode or DEFAULT_MODE
    if chosen not in ("offline", "online", "disabled"):
        raise ValueError(f"W&B mode must be offline, online or disabled, got {chosen!r}")
    return chosen


def wandb_dirs(folder: str | os.PathLike) -> dict[str, str]:
    """The W&B environment variables that keep its runs, data, cache and config out of HOME."""
    folder = Path(folder).resolve()
    return {
        "WANDB_DIR": str(folder),
        "WANDB_DATA_DIR": str(folder / "data"),
        "WANDB_CACHE_DIR": str(folder / "cache"),
        "WANDB_CONFIG_DIR": str(folder / "config"),
        "WANDB_ARTIFACT_DIR": str(folder / "artifacts"),
    }


class WandbLogger:
    """One W&B run whose files all live under `folder` (runs land in <folder>/wandb/<mode>-run-*)."""

    enabled = True

    def __init__(
        self,
        folder: str | os.PathLike,
        project: str = "uniret",
        name: str | None = None,
        config: Mapping[str, Any] | None = None,
        mode: str | None = None,
        entity: str | None = None,
        group: str | None = None,
        tags: list[str] | tuple[str, ...] = (),
        job_type: str | None = None,
    ) -> None:
        self.mode = resolve_mode(mode)
        if self.mode == "disabled":
            raise ValueError("W&B mode is 'disabled': use open_tracker(), which returns a NullTracker")
        env = wandb_dirs(folder)
        for path in env.values():
            Path(path).mkdir(parents=True, exist_ok=True)
        # W&B reads these from the environment (there is no init argument for most of them);
        # the previous values come back in finish().
        self._saved_env = {key: os.environ.get(key) for key in env}
        os.environ.update(env)
        import wandb  # lazy: slow import

        try:
            self._run = wandb.init(
                project=project,
                entity=entity,
                name=name,
                group=group,
                tags=list(tags) or None,
                job_type=job_type,
                config=dict(config or {}),
                dir=env["WANDB_DIR"],
                mode=self.mode,
                settings=wandb.Settings(
                    silent=True, console="off", x_disable_stats=True, disable_git=True, reinit="create_new"
                ),
            )
        except BaseException:
            self._restore_env()
            raise
        self.run_dir = Path(self._run.settings.sync_dir)
        self._finished = False
        log.info("W&B %s run %s in %s", self.mode, self._run.id, self.run_dir)

    def log(self, step: int, values: Mapping[str, Any]) -> None:
        """Log `values` at `step` (steps must not decrease within a run)."""
        self._run.log(dict(values), step=step)

    def summary(self, values: Mapping[str, Any]) -> None:
        """Set final values shown in the run's summary (e.g. evaluation metrics)."""
        self._run.summary.update(dict(values))

    def finish(self) -> None:
        """Close the run (idempotent); offline runs stay in run_dir for `wandb sync`.

        When no other W&B run is active in this process, the W&B service is shut down too: its
        writer flushes the run file asynchronously after `run.finish()`, so only then is the
        offline run complete on disk (for `wandb sync` or a report read right after).
        """
        if self._finished:
            return
        self._finished = True
        try:
            self._run.finish()
            _teardown_if_idle()
        finally:
            self._restore_env()

    def _restore_env(self) -> None:
        for key, value in self._saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value

    def __enter__(self) -> WandbLogger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.finish()


def _teardown_if_idle() -> None:
    import wandb
    from wandb.sdk import wandb_setup

    setup = getattr(wandb_setup, "_singleton", None)
    # Unknown W&B internals: do not risk finishing someone else's run.
    idle = setup is None or getattr(setup, "most_recent_active_run", "unknown") is None
    if idle and wandb.run is None:
        wandb.teardown()


def open_tracker(
    cfg: TrackingConfig,
    folder: str | os.PathLike,
    name: str | None = None,
    config: Mapping[str, Any] | None = None,
    job_type: str | None = None,
) -> WandbLogger | NullTracker:
    """A W&B run under `folder`, or a NullTracker when tracking is disabled (config or $WANDB_MODE)."""
    if not cfg.enabled or resolve_mode(cfg.mode) == "disabled":
        return NullTracker()
    return WandbLogger(
        folder,
        project=cfg.project,
        name=name,
        config=config,
        mode=cfg.mode,
        entity=cfg.entity,
        group=cfg.group,
        tags=cfg.tags,
        job_type=job_type,
    )
