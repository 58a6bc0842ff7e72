"""Typed config of the `encoding` section: how every stage encodes texts with a model.

One place for what mine, index, evaluate and bench each configured before: texts per forward
pass and the cache of corpus encodings (per model hash and corpus, under the artifacts root).
Maximum lengths are the model's own (its recipe's `model:`), so a model encodes corpora at the
length it was trained for.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class EncodingConfig:
    """Texts per forward pass and the corpus-encoding cache."""

    batch_size: int = 32  # texts per forward pass (mine, index, evaluate, bench, doc-length study)
    cache_dir: str = "cache/encoded"  # under artifacts/: corpus encodings per (model hash, corpus); not a DVC output

    def validate(self) -> None:
        if self.batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {self.batch_size}")
        if not self.cache_dir:
            raise ValueError("cache_dir must name a folder under the artifacts root")
