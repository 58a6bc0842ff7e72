"""The generic training loop, its batch sources, checkpoints, schedules and seeding."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "batches_for": "batches",
    "BatchSource": "batches",
    "ShuffledBatches": "batches",
    "latest_checkpoint": "checkpoint",
    "load_checkpoint": "checkpoint",
    "load_model_weights": "checkpoint",
    "barrier": "distributed",
    "current": "distributed",
    "launched_by_torchrun": "distributed",
    "TrainingDiverged": "errors",
    "build_examples": "examples",
    "GroupCollator": "examples",
    "PairCollator": "examples",
    "train": "loop",
    "TrainResult": "loop",
    "merge_negatives": "mining",
    "positive_recall": "mining",
    "sample_window": "mining",
    "lexical_teacher": "objectives",
    "listwise_ce_loss": "objectives",
    "make_compute_loss": "objectives",
    "reranker_teacher": "objectives",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
