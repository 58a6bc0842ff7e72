"""TrackingConfig: whether and how runs are logged to Weights & Biases."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal


@dataclass
class TrackingConfig:
    """W&B settings of a training run; offline unless $WANDB_MODE or `mode` say otherwise."""

    enabled: bool = True
    project: str = "uniret"
    entity: str | None = None
    # $WANDB_MODE overrides this; None means "offline" (runs are written locally; `wandb sync` uploads them).
    mode: Literal["offline", "online", "disabled"] | None = None
    group: str | None = None
    tags: list[str] = field(default_factory=list)
