"""The generic training loop, its batch sources, checkpoints, schedules and seeding."""

from uniret.training.batches import BatchSource, ShuffledBatches, batches_for
from uniret.training.checkpoint import latest_checkpoint, load_checkpoint, load_model_weights
from uniret.training.errors import TrainingDiverged
from uniret.training.loop import TrainResult, train

__all__ = [
    "BatchSource",
    "ShuffledBatches",
    "TrainResult",
    "TrainingDiverged",
    "batches_for",
    "latest_checkpoint",
    "load_checkpoint",
    "load_model_weights",
    "train",
]
