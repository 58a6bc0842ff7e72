"""Config of the report stage (W&B run + local regression report)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass
class ReportConfig:
    """What the report shows and where the W&B run goes."""

    wandb_project: str = "uniret"
    wandb_entity: str | None = None
    wandb_mode: Literal["offline", "online", "disabled"] = "offline"  # $WANDB_MODE overrides
    wandb_dir: str = ".cache/wandb"  # relative to the params file's folder; $WANDB_DIR overrides
    training_stages: list[str] = field(default_factory=lambda: ["warmup", "continual", "distill", "reranker"])
    figure_dpi: int = 100
