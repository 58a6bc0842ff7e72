"""Experiment tracking (Weights & Biases, offline by default) behind a small Tracker interface."""

from uniret.tracking.base import NullTracker, Tracker
from uniret.tracking.wandb_logger import WandbLogger, open_tracker

__all__ = ["NullTracker", "Tracker", "WandbLogger", "open_tracker"]
