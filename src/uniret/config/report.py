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
    # report.md's candidate-vs-baseline intervals: paired bootstrap resamples of the test queries (0: none)
    significance_resamples: int = 10000

    def validate(self) -> None:
        if self.significance_resamples < 0:
            raise ValueError(f"significance_resamples must be >= 0, got {self.significance_resamples}")
