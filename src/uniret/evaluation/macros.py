"""The macro averages over datasets: their keys in metrics.json and which datasets the zero-shot one covers."""

from __future__ import annotations

from collections.abc import Sequence

MACRO = "macro"  # unweighted mean over every eval dataset (BEIR's average)
ZERO_SHOT_MACRO = "zero_shot_macro"  # the same over the datasets the model was not trained on


def zero_shot_datasets(datasets: Sequence[str], train_dataset: str) -> list[str]:
    """The datasets of the zero-shot macro: all but the training dataset."""
    return [d for d in datasets if d != train_dataset]
